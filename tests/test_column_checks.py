"""The compiled O(strings) loops of fsstgpu.checks and fsstgpu.arrow_layout against plain
Python / NumPy references, on random and forged arrays, whatever the thread count (arrays of
over 2**21 entries are searched in parallel chunks)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from fsstgpu import CorruptDataError, native
from fsstgpu.arrow_layout import first_decrease, offsets_from_lengths
from fsstgpu.bitmaps import count_set_bits
from fsstgpu.checks import length_sums

THREADS = (1, 2, 5)


def reference_length_sums(lengths, ncodes, positions):
    """checks.length_sums' loop in plain Python: (total, prefix) or the error message."""
    limit, total, k, prefix = 8 * ncodes, 0, 0, [0] * len(positions)
    for i, v in enumerate(int(x) for x in lengths):
        while k < len(positions) and positions[k] <= i:
            prefix[k], k = total, k + 1
        if v < 0:
            return f"lengths must be non-negative (string {i}: {v})"
        if v > limit or total + v > limit:
            return (f"the lengths' total exceeds the {limit} bytes {ncodes} codes can hold "
                    f"(by string {i})")
        total += v
    prefix[k:] = [total] * (len(positions) - k)
    return total, prefix


def sums_outcome(lengths, ncodes, positions, threads):
    try:
        total, prefix = native.length_sums(lengths, ncodes, positions, threads)
    except CorruptDataError as exc:
        return str(exc)
    return total, prefix.tolist()


@pytest.mark.parametrize("seed", range(10))
def test_length_sums_match_the_plain_loop(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.choice([0, 5, 3000, 2_200_000]))
    lengths = rng.integers(0, 30, n)
    ncodes = int(lengths.sum() // int(rng.choice([2, 6, 9]))) + 1
    if n and seed % 3 == 1:
        lengths[rng.integers(0, n, 2)] = -int(rng.integers(1, 5))
    if n and seed % 3 == 2:
        lengths[rng.integers(0, n)] = 2**62
    positions = np.sort(rng.integers(0, n + 1, int(rng.integers(0, 30))))
    if seed % 4 == 3:  # out of order and out of range: the loop's reading of them
        positions = rng.integers(-3, n + 4, 12)
    want = reference_length_sums(lengths, ncodes, positions) if n < 5000 else None
    results = {t: sums_outcome(lengths, ncodes, positions, t) for t in THREADS}
    assert results[2] == results[1] and results[5] == results[1]
    if want is not None:
        assert results[1] == want
    elif not isinstance(results[1], str):
        assert results[1][0] == int(lengths.sum())


def test_length_sums_name_the_first_bad_string():
    lengths = np.ones(2_500_000, np.int64)
    lengths[[400_000, 2_000_000]] = -1
    for t in THREADS:
        with pytest.raises(CorruptDataError, match=r"\(string 400000: -1\)"):
            native.length_sums(lengths, 10**6, np.zeros(0, np.int64), t)
    lengths[:] = 8
    for t in THREADS:  # 8 bytes a code, 500,000 codes: string 499,999 is the last that fits
        with pytest.raises(CorruptDataError, match=r"\(by string 500000\)$"):
            length_sums(lengths, 500_000) if t == 1 else native.length_sums(
                lengths, 500_000, np.zeros(0, np.int64), t)


@pytest.mark.parametrize("seed", range(6))
def test_misfit_and_filled_null_match_numpy(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.choice([1, 100, 2_200_000]))
    counts = rng.integers(1, 4, n)
    lengths = counts * rng.integers(1, 9, n) // 2 + 1
    lengths = np.minimum(lengths, 8 * counts)
    co = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=co[1:])
    bad = rng.integers(0, n, 3)
    if seed % 2:
        lengths[bad] = 8 * counts[bad] + 1
    c = np.diff(co)
    misfit = np.flatnonzero((c > 2 * lengths) | (lengths > 8 * c))
    valid = rng.random(n) < 0.9
    validity = np.packbits(valid, bitorder="little")
    empty = np.where(valid | (rng.random(n) < 0.999), lengths, 0)
    empty[~valid] = np.where(rng.random(int((~valid).sum())) < 0.9995, 0, 1)
    filled = np.flatnonzero(~valid & (empty != 0))
    filled_codes = np.flatnonzero(~valid & ((empty != 0) | (c != 0)))
    for t in THREADS:
        assert native.first_misfit(co, lengths, t) == (misfit[0] if len(misfit) else -1)
        assert native.first_filled_null(validity, empty, None, t) == (
            filled[0] if len(filled) else -1)
        assert native.first_filled_null(validity, empty, co, t) == (
            filled_codes[0] if len(filled_codes) else -1)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint16])
def test_first_decrease_matches_numpy(dtype):
    rng = np.random.default_rng(1)
    for n in (0, 1, 2, 1000, 2_200_000):
        a = np.sort(rng.integers(0, 30_000, n)).astype(dtype)
        if n > 2:
            a[rng.integers(1, n, 3)] = 0
        d = np.flatnonzero(a[1:].astype(np.int64) < a[:-1].astype(np.int64))
        assert first_decrease(a) == (d[0] if len(d) else -1)
        for t in THREADS:
            assert native.first_decrease(a, t) == (d[0] if len(d) else -1)


def test_running_sum_and_popcount_match_numpy():
    rng = np.random.default_rng(2)
    for n in (0, 7, 2_200_000):
        lengths = rng.integers(0, 100, n)
        want = np.concatenate(([0], np.cumsum(lengths)))
        for type_ in (pa.string(), pa.large_binary()):
            assert np.array_equal(offsets_from_lengths(lengths, type_), want)
        for t in THREADS:
            out = np.empty(n + 1, np.int32)
            native.running_sum(lengths, out, t)
            assert np.array_equal(out, want)
            assert np.array_equal(native.differences(want, t), lengths)  # and back
        bits = rng.integers(0, 256, n // 8 + 1).astype(np.uint8)
        assert count_set_bits(bits) == int(np.unpackbits(bits).sum())


def test_differences_wrap_as_numpy_and_refuse_no_offsets():
    forged = np.array([0, 2**63 - 1, -(2**63), 5, 5, -7], np.int64)  # wraps, as numpy's diff
    with np.errstate(over="ignore"):
        want = np.diff(forged)
    for t in THREADS:
        assert np.array_equal(native.differences(forged, t), want)
        assert native.differences(forged[:1], t).tolist() == []
    with pytest.raises(ValueError, match="n \\+ 1"):
        native.differences(np.zeros(0, np.int64))


def test_first_at_or_after_is_searchsorted_of_the_split_targets():
    """rule2_rows' native search: numpy's searchsorted(offsets, targets, "left") for targets
    step, 2 step, ... (gaps of 0 to thousands of strings between targets, runs of equal
    offsets, targets past the end), at any thread count; forged offsets stay in range."""
    rng = np.random.default_rng(21)
    for lengths in (rng.integers(0, 8, 2_500_000),  # past 2**21 offsets: several tasks
                    rng.integers(0, 40, 300_000), rng.integers(0, 2, 1000),
                    np.r_[np.zeros(500, int), 10**6, np.zeros(500, int)],
                    rng.integers(0, 3000, 20_000), np.zeros(0, int)):
        offsets = np.r_[0, np.cumsum(lengths)].astype(np.int64)
        for step in (1, 7, 4096, 10**5):
            count = max(0, (int(offsets[-1]) - 1) // step) + 3  # three past the end too
            want = np.searchsorted(offsets, step * np.arange(1, count + 1), side="left")
            for t in THREADS:
                assert np.array_equal(native.first_at_or_after(offsets, step, count, t), want)
    forged = rng.integers(-100, 100, 5000).astype(np.int64)
    got = native.first_at_or_after(forged, 3, 50)
    assert got.min() >= 0 and got.max() <= len(forged)
    assert native.first_at_or_after(forged, 3, 0).tolist() == []
    for args, message in (((forged, 0, 5), "step must be positive"),
                          ((forged, 2**62, 4), "must fit in int64"),
                          ((np.zeros(0, np.int64), 1, 1), "n \\+ 1")):
        with pytest.raises(ValueError, match=message):
            native.first_at_or_after(*args)


def test_gather_copies_and_checks_every_range():
    rng = np.random.default_rng(3)
    data = rng.integers(0, 256, 5000).astype(np.uint8)
    n = 2_200_000
    starts = rng.integers(0, 4990, n)
    lengths = rng.integers(0, 10, n)
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    want = np.concatenate([data[s:s + ln]
                           for s, ln in zip(starts[:2000], lengths[:2000], strict=True)])
    for t in THREADS:
        out = np.zeros(int(offsets[-1]), np.uint8)
        native.gather(data, starts, lengths, offsets, out, t)
        assert np.array_equal(out[: len(want)], want)
        bad = starts.copy()
        bad[[1_500_000, 100_000]] = 4999
        with pytest.raises(ValueError, match="^string 100000 "):
            native.gather(data, bad, lengths + (bad == 4999) * 5, offsets, out, t)
    with pytest.raises(ValueError):
        native.gather(data, starts, lengths, offsets, np.zeros(3, np.uint8))
