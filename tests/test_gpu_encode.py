"""GPU FSST encoding (issue #25's first step): byte for byte the CPU encoder's codes with the same
table, on fresh random columns and on real text, the codes buffer poisoned first; bad device
input refused with CorruptDataError. The CPU twin is ``fsstgpu.compress(column, table=t)``. The
lookup tests at the top run everywhere."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import fsstgpu
from fsstgpu import SymbolTable
from fsstgpu.datasets import load_lines
from fsstgpu.gpu import encoded
from fsstgpu.kernels.fsst_encode import (
    BUCKETS,
    CACHED_TABLES,
    bucket_of,
    device_lookups,
    encode_lookups,
)
from fsstgpu.testing import greedy_encode

POISON = 0xAB


# ---------------------------------------------------------------- CPU (run everywhere)
def _lookup_encode(table, s: bytes) -> list[int]:
    """The kernel's algorithm over encode_lookups, in Python (the lookups' own check)."""
    look = encode_lookups(table)
    out, i = [], 0
    while i < len(s):
        rem = len(s) - i
        w = int.from_bytes(s[i:i + 8].ljust(8, b"\0"), "little")
        best = int(look["short_best"][w & 0xFFFF if rem >= 2 else 65536 + (w & 0xFF)])
        code, length = best & 0xFF, best >> 8
        if rem >= 3:
            r = int(look["bucket_range"][bucket_of(w)])
            for j in range(r & 0xFFFF, r >> 16):
                lc = int(look["cand_lc"][j])
                val, mask = (int(v) for v in look["cand_vm"][2 * j : 2 * j + 2])
                if lc & 0xFF <= rem and w & mask == val:
                    code, length = lc >> 8, lc & 0xFF
                    break
        if length == 0:
            out += [255, s[i]]
            i += 1
        else:
            out.append(code)
            i += length
    return out


def _prefix_table(rng) -> SymbolTable:
    """Symbols sharing prefixes (several 3-8 byte ones per bucket) and bytes 0 and 255."""
    syms = set()
    stems = [bytes(rng.integers(0, 256, 3, dtype=np.uint8)) for _ in range(12)]
    stems += [b"htt", b"\0\0\0"]
    for stem in stems:
        for ln in range(3, 9):
            if rng.random() < 0.6:
                syms.add(stem + bytes(rng.integers(0, 256, ln - 3, dtype=np.uint8)))
    while len(syms) < 255:
        syms.add(bytes(rng.integers(0, 256, int(rng.integers(1, 3)), dtype=np.uint8)))
    return SymbolTable(sorted(syms)[:255])


def test_lookups_encode_greedily(fresh_rng):
    rng = fresh_rng
    for _ in range(20):
        table = _prefix_table(rng)
        look = encode_lookups(table)
        assert int(look["bucket_range"][-1]) >> 16 == int((table.lengths >= 3).sum())
        assert len(look["bucket_range"]) == BUCKETS
        assert len(look["cand_vm"]) == 2 * len(look["cand_lc"])
        syms = list(table.symbols)
        for _ in range(20):
            pieces = [syms[int(k)] for k in rng.integers(0, len(syms), 8)]
            s = b"".join(p[: int(rng.integers(1, len(p) + 1))] for p in pieces)
            s += bytes(rng.integers(0, 256, int(rng.integers(0, 4)), dtype=np.uint8))
            assert _lookup_encode(table, s) == greedy_encode(table, s)


# ---------------------------------------------------------------- GPU
def _random_column(rng, n: int, type_, long_share: float = 0.005):
    alphabet = np.frombuffer(b"abcdefgh \0\xff\xc3\xa9/.:", np.uint8)
    values = []
    for _ in range(n):
        k = (int(rng.integers(0, 40)) if rng.random() >= long_share
             else int(rng.integers(5000, 20000)))
        values.append(bytes(rng.choice(alphabet, k)))
    if pa.types.is_string(type_) or pa.types.is_large_string(type_):
        values = [v.decode("utf-8", "replace").encode() for v in values]
        values = [v.decode() for v in values]
    values = [None if rng.random() < 0.05 else v for v in values]
    return pa.array(values, type_)


def _same(dev, want) -> None:
    """compress_device's column against the CPU encoder's: on the host, equal in every array
    (codes, code offsets, split points, lengths, validity); decoded on the GPU, the strings."""
    got = dev.to_host()
    assert np.array_equal(np.asarray(got.codes), np.asarray(want.codes))
    assert np.array_equal(np.asarray(got.code_offsets), np.asarray(want.code_offsets))
    for name in ("split_codes", "split_out", "split_table", "lengths"):
        assert np.array_equal(getattr(got, name), getattr(want, name)), name
    assert got.equals(want)
    decoded = fsstgpu.decompress_device(dev).to_arrow()
    assert decoded.equals(fsstgpu.decompress(want, device="cpu"))


@pytest.mark.gpu
@pytest.mark.parametrize("type_", [pa.binary(), pa.large_string()], ids=str)
def test_gpu_codes_equal_the_cpu_encoders(type_, monkeypatch, fresh_rng):
    rng = fresh_rng
    for round_ in range(6):  # (rounds 4 and 5 without long strings, whose split points round
        # 4 plans on the device: fsstgpu.splits.one_block_starts)
        monkeypatch.setattr(encoded, "DEVICE_PLAN_ROWS", 0 if round_ == 4 else 16384)
        col = _random_column(rng, int(rng.integers(0, 4000)), type_,
                             long_share=0.005 if round_ < 4 else 0.0)
        table = fsstgpu.train(col) if round_ % 2 else _prefix_table(rng)
        got = fsstgpu.compress_device(col, table, fill=POISON,
                                      split_size=int(rng.choice([64, 4096])))
        _same(got, fsstgpu.compress(col, table=table, split_size=got.encoded["split_size"]))
        assert fsstgpu.decompress(got.to_host(), device="cpu").equals(col)


@pytest.mark.gpu
@pytest.mark.parametrize("type_", [pa.binary(), pa.large_string()], ids=str)
def test_gpu_split_rows_read_back_with_the_codes_size(type_, fresh_rng):
    """Columns without nulls, whose split rows' offsets come back in the encode's wait (those
    of a column with long strings change after it and are planned again): host columns and
    device strings, sliced, with a table and trained, against the CPU encoder."""
    rng = fresh_rng
    for round_ in range(8):
        col = _random_column(rng, int(rng.integers(1, 4000)), type_,
                             long_share=0.01 if round_ % 2 else 0.0).drop_null()
        col = col.slice(int(rng.integers(0, 3)))
        table = fsstgpu.train(col) if round_ % 4 < 2 else _prefix_table(rng)
        size = int(rng.choice([64, 300, 4096]))
        want = fsstgpu.compress(col, table=table, split_size=size)
        _same(fsstgpu.compress_device(col, table, fill=POISON, split_size=size), want)
        dev = fsstgpu.decompress_device(fsstgpu.compress(col))
        _same(fsstgpu.compress_device(dev, table, split_size=size), want)
        trained = fsstgpu.compress_device(dev, split_size=size)  # (checked before the sample)
        _same(trained, fsstgpu.compress(col, table=trained.encoded["tables"][0],
                                        split_size=size))


@pytest.mark.gpu
def test_gpu_encodes_device_strings(dbtext_paths, monkeypatch):
    """Real text, given as device strings (a decode's result, then a slice of one); every
    other file's split points planned on the device whatever their count."""
    for k, path in enumerate(dbtext_paths[:6]):
        monkeypatch.setattr(encoded, "DEVICE_PLAN_ROWS", 0 if k % 2 else 16384)
        col = load_lines(path)
        table = fsstgpu.train(col)
        dev = fsstgpu.decompress_device(fsstgpu.compress(col))
        _same(fsstgpu.compress_device(dev, table, fill=POISON), fsstgpu.compress(col, table=table))
        part = fsstgpu.DeviceStringArray(dev.type, 100, dev.offsets[7:108], dev.data, None, 0)
        _same(fsstgpu.compress_device(part, table), fsstgpu.compress(col[7:107], table=table))
        trained = fsstgpu.compress_device(dev)  # a table from a sample brought back
        assert fsstgpu.decompress_device(trained).to_arrow().equals(col)
        assert trained.ncodes < 0.95 * trained.total


@pytest.mark.gpu
def test_gpu_encode_a_string_4_gib_past_its_warps_first(fresh_rng):
    """A warp's strings: one of 1,000 bytes, a null over 4 GiB of bytes, one more: the third
    ends past the first's shared-memory window, and its place (4 GiB + 100 bytes past the
    first's) was cut to 32 bits (100) before the window's copy-out was stopped there, so all
    but the first 100 bytes of the first string's codes were lost. Codes as the CPU encoder's
    for the column without the null's bytes."""
    import cupy as cp

    free, _ = cp.cuda.Device().mem_info
    if free < 12 << 30:
        pytest.skip(f"needs 12 GiB of free GPU memory (4 GiB of strings, 4 GiB of stage): "
                    f"{free >> 30} GiB free")
    rng = fresh_rng
    words = [b"the ", b"stage ", b"window ", b"of ", b"codes ", b"x"]
    first, third = (b"".join(words[j] for j in rng.integers(0, len(words), k))
                    for k in (250, 300))
    gap = (1 << 32) + 100 - len(first)
    data = cp.empty(len(first) + gap + len(third), cp.uint8)  # (the null's bytes never read)
    data[: len(first)] = cp.frombuffer(first, cp.uint8)
    data[len(first) + gap :] = cp.frombuffer(third, cp.uint8)
    offsets = cp.array([0, len(first), len(first) + gap, int(data.size)], cp.int64)
    table = fsstgpu.train(pa.array([first, third]))
    dev = fsstgpu.DeviceStringArray(pa.large_binary(), 3, offsets, data,
                                    cp.array([0b101], cp.uint8), 1)
    col = pa.array([first, None, third], pa.large_binary())
    _same(fsstgpu.compress_device(dev, table, fill=POISON), fsstgpu.compress(col, table=table))


@pytest.mark.gpu
def test_gpu_encode_a_2_gib_string_with_long_min_past_the_column():
    """encode_on_device with long_min at or above the column's bytes left every string to the
    stage kernel, which counts a string's bytes and codes in 32 bits: a string of 2 GiB + 11
    bytes had its count cut to a negative number (no codes, code offsets [0, 0], no error). The
    launcher now puts such strings in chunks, as for long_min=None. Codes as the CPU encoder's:
    the table's one 8-byte symbol (code 0) 2**28 + 1 times, then the tail's three escapes."""
    import cupy as cp

    from fsstgpu.kernels.fsst_encode import encode_on_device

    free, _ = cp.cuda.Device().mem_info
    if free < 8 << 30:
        pytest.skip(f"needs 8 GiB of free GPU memory (2 GiB of strings, 2 GiB of stage): "
                    f"{free >> 30} GiB free")
    reps = (1 << 28) + 1
    data = cp.empty(8 * reps + 3, cp.uint8)
    data[: 8 * reps].reshape(reps, 8)[...] = cp.frombuffer(b"abcdefgh", cp.uint8)
    data[8 * reps :] = cp.frombuffer(b"xyz", cp.uint8)
    codes, code_offsets = encode_on_device(SymbolTable([b"abcdefgh"]), data,
                                           cp.array([0, int(data.size)], cp.int64),
                                           fill=POISON, long_min=1 << 40)
    assert code_offsets.get().tolist() == [0, reps + 6]
    assert int(cp.count_nonzero(codes[:reps])) == 0
    assert codes[reps:].get().tolist() == [255, ord("x"), 255, ord("y"), 255, ord("z")]


@pytest.mark.gpu
def test_gpu_encoded_column_edges():
    """Empty columns, all-null and all-empty columns, one string longer than many splits:
    each equal to the CPU encoder's and decoded on the GPU; to_host() refused for an uploaded
    column."""
    table = SymbolTable([b"ab", b"abc", b"x"])
    cases = [pa.array([], pa.string()), pa.array([None, None], pa.binary()),
             pa.array(["", "", ""]), pa.array(["abc" * 5000, None, "x", "ab" * 3000]),
             pa.array(["abc" * 5000], pa.large_binary())]
    for col in cases:
        _same(fsstgpu.compress_device(col, table, fill=POISON), fsstgpu.compress(col, table=table))
    with pytest.raises(TypeError, match="to_host"):
        fsstgpu.to_device(fsstgpu.compress(pa.array(["ab"]))).to_host()


@pytest.mark.gpu
def test_gpu_encode_refuses_bad_device_strings():
    import cupy as cp

    data = cp.asarray(np.frombuffer(b"abc\xffdef", np.uint8))
    cases = [cp.array([0, 3, 2], cp.int64), cp.array([0, 3, 9], cp.int64),
             cp.array([-1, 3, 5], cp.int64)]
    for offsets in cases:
        bad = fsstgpu.DeviceStringArray(pa.binary(), 2, offsets, data, None, 0)
        with pytest.raises(fsstgpu.CorruptDataError, match="offsets"):
            fsstgpu.compress_device(bad, SymbolTable([b"ab"]))
    text = fsstgpu.DeviceStringArray(pa.string(), 2, cp.array([0, 3, 7], cp.int64), data, None,
                                     0)
    with pytest.raises(fsstgpu.CorruptDataError, match="string 1 .* not UTF-8"):
        fsstgpu.compress_device(text, SymbolTable([b"ab"]))
    short = fsstgpu.DeviceStringArray(pa.binary(), 20, cp.zeros(21, cp.int64), data,
                                      cp.zeros(1, cp.uint8), 20)
    with pytest.raises(fsstgpu.CorruptDataError, match="validity"):
        fsstgpu.compress_device(short, SymbolTable([b"ab"]))


@pytest.mark.gpu
@pytest.mark.parametrize("trained", [False, True], ids=["table", "trained"])
def test_gpu_encode_refuses_offsets_out_of_bounds_inside_the_column(trained, fresh_rng):
    """Fresh random columns with one offset inside them forged (far past the data, negative,
    or decreasing) whose first and last offsets stay sound: CorruptDataError with a table
    (the encode's first kernel leaves before reading by them; its results come back in the
    encode's wait) and when trained (checked before the sample is gathered)."""
    import cupy as cp

    rng = fresh_rng
    table = None if trained else SymbolTable([b"ab", b"abc", b"x"])
    for _ in range(12):
        n = int(rng.integers(3, 5000))
        col = _random_column(rng, n, [pa.binary(), pa.large_string()][int(rng.integers(2))], 0)
        plain = fsstgpu.decompress_device(fsstgpu.compress(col))
        offsets = plain.offsets.astype(cp.int64)
        k = int(rng.integers(1, n))
        offsets[k] = int(rng.choice([2**40, -(2**40), -1, int(offsets[k + 1]) + 1,
                                     int(offsets[-1]) + 7]))
        if int(offsets[k]) <= int(offsets[k + 1]) and int(offsets[k]) >= int(offsets[k - 1]):
            continue
        bad = fsstgpu.DeviceStringArray(col.type, n, offsets, plain.data, plain.validity,
                                        plain.null_count)
        with pytest.raises(fsstgpu.CorruptDataError, match="offsets lie outside"):
            fsstgpu.compress_device(bad, table, fill=POISON)


@pytest.mark.gpu
def test_gpu_check_finds_lengths_most_and_bytes(fresh_rng):
    """launch_check against NumPy on fresh random columns with nulls: each string's length (0
    for nulls), the most and the sum of the valid ones, nothing flagged for sound UTF-8."""
    import cupy as cp

    from fsstgpu.kernels.fsst_encode import check_results, launch_check

    rng = fresh_rng
    for _ in range(8):
        col = _random_column(rng, int(rng.integers(1, 40_000)), pa.large_string(), 0.01)
        offsets = np.frombuffer(col.buffers()[1], np.int64)[: len(col) + 1]
        data = bytes(col.buffers()[2])
        valid = np.asarray(col.is_valid())
        want = np.where(valid, np.diff(offsets), 0)
        d_valid = cp.asarray(np.frombuffer(col.buffers()[0], np.uint8)) \
            if col.null_count else None
        lengths, status = launch_check(cp.asarray(np.frombuffer(data, np.uint8)),
                                       cp.asarray(offsets), d_valid,
                                       text_span=(0, int(offsets[-1])))
        assert lengths.get().tolist() == want.tolist()
        assert check_results(status.get()) == (False, int(want.max()), int(want.sum()), False)


@pytest.mark.gpu
def test_gpu_encode_device_strings_from_inside_their_data(fresh_rng):
    """Device text whose offsets start past the data's start, at an odd byte, with bytes
    that are not UTF-8 before and after the strings: the strings' own bytes encoded, equal to
    the CPU encoder's."""
    import cupy as cp

    rng = fresh_rng
    col = _random_column(rng, 3000, pa.large_string(), 0.01)
    offsets = np.frombuffer(col.buffers()[1], np.int64)[: len(col) + 1]
    lead = 1 + int(rng.integers(0, 7)) + 8 * int(rng.integers(0, 3))
    raw = b"\xff" * lead + bytes(col.buffers()[2])[: int(offsets[-1])] + b"\xfe\xff"
    validity = None if not col.null_count else \
        cp.asarray(np.frombuffer(col.buffers()[0], np.uint8))
    dev = fsstgpu.DeviceStringArray(col.type, len(col), cp.asarray(offsets + lead),
                                    cp.asarray(np.frombuffer(raw, np.uint8)), validity,
                                    col.null_count)
    table = fsstgpu.train(col)
    _same(fsstgpu.compress_device(dev, table, fill=POISON), fsstgpu.compress(col, table=table))
    trained = fsstgpu.compress_device(dev)  # (the sample gathered from the strings' bytes)
    _same(trained, fsstgpu.compress(col, table=trained.encoded["tables"][0]))


@pytest.mark.gpu
def test_codec_encodes_on_the_device_and_decompress_takes_the_result(fresh_rng):
    """Codec.encode_device / decode_device on a list, and fsstgpu.decompress of a device
    result on either device, each equal to the input and to the CPU encoder's column."""
    rng = fresh_rng
    cols = [_random_column(rng, int(rng.integers(1, 2000)), t)
            for t in (pa.string(), pa.large_binary())]
    table = fsstgpu.train(cols[0])
    codec = fsstgpu.Codec(device="gpu", table=table)
    devs = codec.encode_device(cols)
    outs = codec.decode_device(devs)
    for col, dev, out in zip(cols, devs, outs, strict=True):
        assert out.to_arrow().equals(col)
        assert fsstgpu.decompress(dev, device="cpu").equals(col)
        assert fsstgpu.decompress(dev, device="gpu").equals(col)
        _same(dev, fsstgpu.compress(col, table=table))


# ---------------------------------------------------------------- GPU: long strings in chunks
@pytest.mark.gpu
def test_gpu_compress_device_long_text(dbtext_paths, fresh_rng):
    """dbtext as long strings (lines joined, 5-200 KB a string) through compress_device's
    default chunks, as a host column and as device strings, against the CPU encoder."""
    rng = fresh_rng
    for path in dbtext_paths[:6]:
        lines = load_lines(path)
        raw = bytes(lines.buffers()[2])[: 2_000_000]
        cuts = [0]
        while cuts[-1] < len(raw):
            cuts.append(min(len(raw), cuts[-1] + int(rng.integers(5_000, 200_000))))
        values = [raw[a:b] for a, b in zip(cuts, cuts[1:], strict=False)]
        col = pa.array(values, pa.large_binary())
        table = fsstgpu.train(lines)
        _same(fsstgpu.compress_device(col, table, fill=POISON), fsstgpu.compress(col, table=table))
        dev = fsstgpu.decompress_device(fsstgpu.compress(col))
        _same(fsstgpu.compress_device(dev, table), fsstgpu.compress(col, table=table))


@pytest.mark.gpu
def test_gpu_encode_checks_long_text_as_utf8():
    """Device text checked as one UTF-8 stream: a bad byte inside a long string, a string
    ending inside a character that a null's bytes complete, and a null's bytes that are not
    UTF-8 (taken: nulls have no text)."""
    import cupy as cp

    good = ("é" * 3000).encode()
    table = SymbolTable([b"\xc3\xa9"])

    def device(data: bytes, offsets, validity=None):
        return fsstgpu.DeviceStringArray(
            pa.large_string(), len(offsets) - 1, cp.array(offsets, cp.int64),
            cp.asarray(np.frombuffer(data, np.uint8)),
            None if validity is None else cp.array([validity], cp.uint8),
            0 if validity is None else (len(offsets) - 1) - bin(validity).count("1"))

    bad = device(good + good[:3001] + b"x" + good, [0, 6000, 9002, 15002])
    with pytest.raises(fsstgpu.CorruptDataError, match="string 1 .* not UTF-8"):
        fsstgpu.compress_device(bad, table)
    cut = device(b"ab\xc3\xa9cd" + good, [0, 3, 6, 6006], 0b101)
    with pytest.raises(fsstgpu.CorruptDataError, match="string 0 .* not UTF-8"):
        fsstgpu.compress_device(cut, table)
    nulls = device(good + b"\xff\xfe" + good, [0, 6000, 6002, 12002], 0b101)
    col = pa.array([good.decode(), None, good.decode()], pa.large_string())
    _same(fsstgpu.compress_device(nulls, table, fill=POISON), fsstgpu.compress(col, table=table))


@pytest.mark.gpu
def test_gpu_lookups_are_kept_per_table_and_rebuilt_once_dropped():
    """device_lookups keeps a table's lookups on the device (the same arrays for the same
    table object, others for another); once more tables have been used than it keeps, the
    first is built again, equal to encode_lookups; an encode with it equals the CPU's."""
    first, other = SymbolTable([b"ab", b"abc"]), SymbolTable([b"xy"])
    kept = device_lookups(first)
    assert device_lookups(first) is kept and device_lookups(other) is not kept
    for k in range(CACHED_TABLES + 1):
        device_lookups(SymbolTable([bytes([97 + k % 26, 65 + k])]))
    again = device_lookups(first)
    assert again is not kept
    for name, want in encode_lookups(first).items():
        assert np.array_equal(again[name].get(), want), name
    col = pa.array(["abcab", None, "xyab"] * 50)
    _same(fsstgpu.compress_device(col, first, fill=POISON), fsstgpu.compress(col, table=first))


@pytest.mark.gpu
def test_gpu_lookups_live_outside_the_pool_until_the_device_is_done():
    """A table's device lookups are not CuPy pool memory (the pool hands freed bytes out again
    at once, while a kernel on another stream may still read them): the pool does not grow by
    them. A caller that still holds a table's lookups after the cache let them go reads them
    whole, and an encode with them equals the CPU's."""
    cp = pytest.importorskip("cupy")
    pool = cp.get_default_memory_pool()
    table = SymbolTable([b"qz", b"qzq", b"zzzz"])
    before = pool.used_bytes()
    held = device_lookups(table)
    assert pool.used_bytes() == before
    for k in range(CACHED_TABLES + 1):  # the cache lets `table` go; `held` keeps its lookups
        device_lookups(SymbolTable([bytes([98 + k % 24, 66 + k, 67])]))
    for name, want in encode_lookups(table).items():
        assert np.array_equal(held[name].get(), want), name
    col = pa.array(["qzqzzzz", None, "zzqz"] * 40)
    _same(fsstgpu.compress_device(col, table, fill=POISON), fsstgpu.compress(col, table=table))
