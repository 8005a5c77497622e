"""Fuzz of the compiled codec's entry points, run by tests/test_native_codec.py in a subprocess
against a sanitizer build (AddressSanitizer + UBSan): random and forged codes, offsets, split
points and tables; and (native_fuzz_args.py) every entry point's arguments misaligned, strided,
cut, re-typed or poked with extreme values. Every call must return or raise ValueError/TypeError;
the sanitizers turn any out-of-bounds access or undefined behaviour into a failed exit.

Usage: ``python native_fuzz.py BUILD_DIR ROUNDS``. Imports the extension from BUILD_DIR as the
top-level module ``_native`` and nothing of fsstgpu (so CorruptData arrives as ValueError).
"""

from __future__ import annotations

import sys
import tempfile
import zlib

import numpy as np

sys.path.insert(0, sys.argv[1])
import _native  # noqa: E402
from native_fuzz_args import fuzz_args  # noqa: E402  (this folder: the script's own)
from parquet_model import delta_encode, page_header, rle_encode  # noqa: E402

ROUNDS = int(sys.argv[2])
rng = np.random.default_rng(2026)
ALPHABET = np.frombuffer(b"ab\x00\xff\x80\xc3\xa9e ", np.uint8)


def symbols(count):
    """Distinct random symbols from a small alphabet (so they match often and chain)."""
    found = {}
    while len(found) < count:
        s = bytes(rng.choice(ALPHABET, int(rng.integers(1, 9))))
        found[s] = None
    syms = sorted(found, key=lambda s: (len(s), s))
    packed = np.array([int.from_bytes(s.ljust(8, b"\0"), "little") for s in syms], np.uint64)
    return packed, np.array([len(s) for s in syms], np.uint8)


def strings(n):
    lengths = rng.integers(0, 40, n)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    data = rng.choice(ALPHABET, int(offsets[-1])).astype(np.uint8)
    return data, offsets


def expect_error(fn, *args):
    try:
        fn(*args)
    except (ValueError, TypeError):
        return
    raise AssertionError(f"{fn.__name__} accepted forged input")


def tables_of(matchers):
    """pack_tables' layout for the matchers' symbol sets."""
    packed = np.zeros((len(matchers), 256), np.uint64)
    lens = np.zeros((len(matchers), 256), np.uint8)
    for t, (p, ln) in enumerate(matchers):
        packed[t, : len(p)] = p
        lens[t, : len(ln)] = ln
    return packed, lens


def compact_of(matchers):
    """fsstgpu.native.compact_tables' layout for the matchers' symbol sets."""
    first = np.zeros(len(matchers) + 1, np.int64)
    np.cumsum([len(p) for p, _ in matchers], out=first[1:])
    packed = np.zeros(int(first[-1]) + 255, np.uint64)
    lens = np.zeros((max(len(matchers), 1), 256), np.uint8)
    for t, (p, ln) in enumerate(matchers):
        packed[first[t] : first[t + 1]] = p
        lens[t, : len(ln)] = ln
    return packed, first, lens


NO_ENDS = np.zeros(0, np.int64)


def decode_all(codes, splits, souts, stab, compact, total, threads, ends=NO_ENDS, check=False,
               code_offsets=NO_ENDS, utf8=False):
    """_native.decode_all's column decode: the bytes (a UTF-8 answer is checked in range)."""
    out, bad = _native.decode_all(codes, splits, souts, stab, *compact, total, ends, check,
                                  code_offsets, utf8, threads)
    assert -1 <= bad < max(len(ends) - 1, 0) and len(out) == total
    return out


def fuzz_round():
    nt = int(rng.integers(1, 4))
    sets = [symbols(int(rng.integers(0, 256))) for _ in range(nt)]
    matchers = [_native.Matcher(p, ln) for p, ln in sets]
    n = int(rng.integers(0, 300))
    data, offsets = strings(n)
    starts = np.sort(rng.integers(0, n + 1, nt - 1))
    block_starts = np.concatenate(([0], starts, [n])).astype(np.int64)
    threads = int(rng.integers(1, 4))
    codes, code_offsets = _native.encode_blocks(data, offsets, block_starts, matchers, threads)
    # decode back: one split per string, table of its block
    owner = np.searchsorted(block_starts, np.arange(n), side="right") - 1
    packed, lens = tables_of(sets)
    compact = compact_of(sets)
    out = decode_all(codes, code_offsets, offsets, owner.astype(np.int64), compact,
                     int(offsets[-1]), threads)
    assert np.array_equal(out, data)
    # the same tables given as symbols: the same codes; forged counts and symbols refused
    values = np.concatenate([p for p, _ in sets]).astype(np.uint64)
    lengths = np.concatenate([ln for _, ln in sets]).astype(np.uint8)
    counts = np.array([len(p) for p, _ in sets], np.int64)
    got = _native.encode_symbols(data, offsets, block_starts, values, lengths, counts, threads)
    assert np.array_equal(got[0], codes) and np.array_equal(got[1], code_offsets)
    for bad_counts in (counts + 1, counts[:-1], -counts - 1, np.full(nt, 256, np.int64)):
        expect_error(_native.encode_symbols, data, offsets, block_starts, values, lengths,
                     bad_counts, threads)
    if len(values):
        bad_lengths = lengths.copy()
        bad_lengths[int(rng.integers(0, len(values)))] = rng.choice([0, 9])
        expect_error(_native.encode_symbols, data, offsets, block_starts, values, bad_lengths,
                     counts, threads)
        expect_error(_native.encode_symbols, data, offsets, block_starts, values,
                     np.ones(len(values), np.uint8) if values.max() > 255 else lengths[:-1],
                     counts, threads)
    # forged encoder inputs
    if n:
        bad = offsets.copy()
        bad[int(rng.integers(1, n + 1))] = -5
        expect_error(_native.encode_blocks, data, bad, block_starts, matchers, threads)
        bad = offsets.copy()
        bad[-1] = len(data) + 1
        expect_error(_native.encode_blocks, data, bad, block_starts, matchers, threads)
    if block_starts[0] != block_starts[-1]:
        expect_error(_native.encode_blocks, data, offsets, block_starts[::-1].copy(), matchers,
                     1)
    expect_error(_native.encode_blocks, data, offsets[:0], block_starts, matchers, 1)
    expect_error(_native.Matcher, np.array([1], np.uint64), np.array([9], np.uint8))
    expect_error(_native.Matcher, np.array([0x101], np.uint64), np.array([1], np.uint8))
    expect_error(_native.Matcher, np.zeros(256, np.uint64), np.ones(256, np.uint8))
    # forged codes and split points: decode must report or succeed, never stray
    forged = codes.copy()
    if len(forged):
        flips = rng.integers(0, len(forged), 1 + len(forged) // 20)
        forged[flips] = rng.integers(0, 256, len(flips))
    splits = np.unique(np.concatenate(([0], rng.integers(0, len(forged) + 1, 5),
                                       [len(forged)]))).astype(np.int64)
    total = int(rng.integers(0, 2 * len(data) + 2))
    souts = np.sort(rng.integers(0, total + 1, len(splits))).astype(np.int64)
    souts[0], souts[-1] = 0, total
    stab = rng.integers(-1, nt + 1, len(splits) - 1).astype(np.int64)
    flens = lens.copy()
    flens[rng.integers(0, nt), rng.integers(0, 256, 20)] = 0
    try:
        decode_all(forged, splits, souts, stab, (compact[0], compact[1], flens), total, threads)
    except ValueError:
        pass
    expect_error(decode_all, forged, splits, souts, stab,
                 (compact[0], compact[1], np.full_like(lens, 9)), total, threads)
    buf = np.zeros(int(rng.integers(0, 64)), np.uint8)
    for _ in range(20):
        a, b = np.sort(rng.integers(-2, len(forged) + 3, 2))
        c, d = np.sort(rng.integers(-2, len(buf) + 3, 2))
        try:
            _native.decode_range(forged, int(a), int(b), packed[0], flens[0], buf, int(c),
                                 int(d))
        except ValueError:
            pass
    # UTF-8: random bytes, offsets of both widths, forged offsets
    text = rng.integers(0, 256, int(rng.integers(0, 3000))).astype(np.uint8)
    text[rng.random(len(text)) < 0.7] = ord("x")
    cuts = np.sort(rng.integers(0, len(text) + 1, int(rng.integers(1, 50))))
    for dtype in (np.int32, np.int64):
        _native.first_invalid_string(text, cuts.astype(dtype), threads)
        bad = cuts[::-1].astype(dtype)
        if len(bad) > 1 and bad[0] != bad[-1]:
            expect_error(_native.first_invalid_string, text, bad, threads)
        expect_error(_native.first_invalid_string, text,
                     np.array([0, len(text) + 1], dtype), threads)


def fuzz_decode():
    """The column decode's string-end, code-offset and UTF-8 checks on forged ends, offsets,
    codes and tables: every answer in range, or ValueError."""
    nt = int(rng.integers(1, 3))
    sets = [symbols(int(rng.integers(0, 256))) for _ in range(nt)]
    compact = compact_of(sets)
    n = int(rng.integers(0, 200))
    data, offsets = strings(n)
    block_starts = np.array([0] + sorted(rng.integers(0, n + 1, nt - 1)) + [n], np.int64)
    threads = int(rng.integers(1, 4))
    codes, code_offsets = _native.encode_blocks(data, offsets, block_starts,
                                                [_native.Matcher(*m) for m in sets], threads)
    # splits cut anywhere in the strings' codes, each with the table of its first string
    cut = np.unique(np.r_[0, rng.integers(0, n + 1, 4), block_starts, n])
    owner = (np.searchsorted(block_starts, cut[:-1], side="right") - 1).astype(np.int64)
    splits, souts, total = code_offsets[cut], offsets[cut], int(offsets[-1])
    for dtype in (np.int32, np.int64):
        ends = offsets.astype(dtype)
        out = decode_all(codes, splits, souts, owner, compact, total, threads, ends, True,
                         code_offsets, True)
        assert np.array_equal(out, data)
        forged = codes.copy()
        if len(forged):
            forged[rng.integers(0, len(forged), 3)] = rng.integers(0, 256, 3)
        fends = ends.copy()
        if n > 1:
            fends[rng.integers(1, n)] += dtype(rng.integers(-3, 4))
        foffs = code_offsets.copy()
        if n > 1:
            foffs[rng.integers(1, n)] += int(rng.integers(-3, 4))
        for args in ((forged, ends, code_offsets), (codes, fends, code_offsets),
                     (codes, ends, foffs), (forged, fends, foffs), (forged, ends, NO_ENDS),
                     (codes, fends[:-1], code_offsets), (codes, ends, foffs[1:]),
                     (forged, fends[::-1].copy(), NO_ENDS),
                     (codes, fends, NO_ENDS), (forged, fends, NO_ENDS)):  # (the walk's marks)
            c, e, o = args
            for check in (False, True):
                try:
                    decode_all(c, splits, souts, owner, compact, total, threads,
                               e, check, o, bool(rng.integers(0, 2)))
                except ValueError:
                    pass
    # tables not in compact_tables' form
    packed, first, lens = compact
    bad_tables = [(packed[: max(len(packed) - 255, 0)], first, lens), (packed, first - 1, lens),
                  (packed, first, lens[:, :255].copy())]
    if first[0] != first[-1]:
        bad_tables.append((packed, first[::-1].copy(), lens))
    for bad in bad_tables:
        expect_error(decode_all, codes, splits, souts, owner, bad, total, threads)
    if int(first[1]) < 256:
        wrong = lens.copy()
        wrong[0, int(first[1]) :] = 1
        if int(first[1]) < 255:
            expect_error(decode_all, codes, splits, souts, owner, (packed, first, wrong),
                         total, threads)


def maybe_forge(a, rng_):
    """a, or a copy with a few entries moved (possibly out of range)."""
    if a is None or not len(a) or rng_.random() < 0.3:
        return a
    a = a.copy()
    idx = rng_.integers(0, len(a), int(rng_.integers(1, 4)))
    a[idx] += rng_.integers(-3, 4, len(idx))
    if rng_.random() < 0.1:
        a[idx[0]] = rng_.choice([-(2**62), 2**62, 2**63 - 1])
    return a


def fuzz_scan(big):
    """The codes walk, the column checks and the layout loops on forged input; a big column
    (over 2**21 codes) is walked in parallel chunks."""
    nt = int(rng.integers(1, 4))
    sets = [symbols(int(rng.integers(1, 256))) for _ in range(nt)]
    matchers = [_native.Matcher(p, ln) for p, ln in sets]
    n = 250_000 if big else int(rng.choice([0, 1, 50, 300, 3000]))
    data, offsets = strings(n)
    starts = np.sort(rng.integers(0, n + 1, nt - 1))
    block_starts = np.concatenate(([0], starts, [n])).astype(np.int64)
    threads = int(rng.integers(1, 5))
    codes, code_offsets = _native.encode_blocks(data, offsets, block_starts, matchers, threads)
    _, symlen = tables_of(sets)
    lengths = np.diff(offsets)
    # splits: every string start, and some points inside strings (found by a clean walk)
    cut = int(rng.integers(1, 64))
    _, _, cc, co_, _ = _native.walk_codes(codes, block_starts, symlen, code_offsets, lengths,
                                          3, cut, len(codes) + 1, None, None, threads)
    sc = np.concatenate((code_offsets, cc))
    so = np.concatenate((offsets, co_))
    order = np.lexsort((so, sc))
    sc, so = sc[order], so[order]
    for _ in range(6):
        fc = codes.copy()
        if len(fc) and rng.random() < 0.5:
            flips = rng.integers(0, len(fc), 2)
            fc[flips] = rng.integers(0, 256, 2)
        fl = symlen.copy()
        if rng.random() < 0.2:
            fl[rng.integers(0, nt), rng.integers(0, 256, 5)] = 0
        args = (maybe_forge(code_offsets, rng), maybe_forge(lengths, rng))
        splits = (maybe_forge(sc, rng), maybe_forge(so, rng)) if rng.random() < 0.7 else (
            None, None)
        for mode in range(4):
            try:
                _native.walk_codes(fc, block_starts, fl, *args, mode,
                                   int(rng.choice([0, -1, cut, 2**62])),
                                   int(rng.choice([0, -5, 10, len(fc) + 1])), *splits,
                                   threads)
            except ValueError:
                pass
    if n:
        expect_error(_native.walk_codes, codes, block_starts[::-1].copy(), symlen,
                     code_offsets, lengths, 0, 0, 0, None, None, 1)
    expect_error(_native.walk_codes, codes, block_starts, symlen[:0], code_offsets, lengths,
                 0, 0, 0, None, None, 1)
    expect_error(_native.walk_codes, codes, block_starts, symlen, code_offsets[:-1], lengths,
                 0, 0, 0, None, None, 1)
    expect_error(_native.walk_codes, codes, block_starts, symlen, code_offsets, lengths, 9, 0,
                 0, None, None, 1)
    if len(sc) > 1:
        expect_error(_native.walk_codes, codes, block_starts, symlen, code_offsets, lengths, 0,
                     0, 0, sc, so[:-1], 1)
    # the column checks and the layout loops
    fl_ = maybe_forge(lengths, rng)
    pos = rng.integers(-3, n + 4, int(rng.integers(0, 9)))
    for ncodes in (len(codes), int(rng.integers(0, len(codes) + 2))):
        try:
            _native.length_sums(fl_, ncodes, pos, threads)
        except ValueError:
            pass
    expect_error(_native.length_sums, lengths, -1, pos, threads)
    fco = maybe_forge(code_offsets, rng)
    _native.first_misfit(fco, fl_, threads)
    expect_error(_native.first_misfit, fco[:-1], fl_, threads)
    validity = rng.integers(0, 256, (n + 7) // 8).astype(np.uint8)
    _native.first_filled_null(validity, fl_, fco, threads)
    _native.first_filled_null(validity, fl_, None, threads)
    if n > 8:
        expect_error(_native.first_filled_null, validity[:-1], fl_, None, threads)
        expect_error(_native.first_filled_null, validity, fl_, fco[:-1], threads)
    _native.count_set_bits(validity)
    for dtype in (np.int32, np.int64):
        _native.first_decrease(maybe_forge(offsets, rng).astype(dtype), threads)
    out32, out64 = np.empty(n + 1, np.int32), np.empty(n + 1, np.int64)
    _native.running_sum(fl_, out32, threads)
    _native.running_sum(fl_, out64, threads)
    expect_error(_native.running_sum, fl_, out64[:-1], threads)
    _native.differences(maybe_forge(offsets, rng), threads)
    for dtype in (np.uint8, np.uint16, np.uint32, np.uint64):  # forged lengths kept low bytes
        narrow = np.empty(n, dtype)
        assert _native.narrow_lengths(fl_, narrow, threads) == (
            int(np.bitwise_or.reduce(fl_.view(np.uint64))) if n else 0)
        assert np.array_equal(narrow, fl_.astype(dtype))
        expect_error(_native.narrow_lengths, fl_, narrow[:-1] if n else np.empty(1, dtype),
                     threads)
    found = _native.first_at_or_after(maybe_forge(offsets, rng), int(rng.integers(1, 50)),
                                      int(rng.integers(0, 300)), threads)
    assert found.size == 0 or (found.min() >= 0 and found.max() <= len(offsets))
    if big:  # past 2**21 offsets: the targets in several tasks, on offsets that go up and down
        wavy = np.cumsum(rng.integers(-5, 9, 2_200_000)).astype(np.int64)
        narrow = np.empty(len(wavy), np.uint16)  # and narrowed in several tasks
        assert _native.narrow_lengths(wavy, narrow, 3) == int(
            np.bitwise_or.reduce(wavy.view(np.uint64)))
        assert np.array_equal(narrow, wavy.astype(np.uint16))
        found = _native.first_at_or_after(wavy, 7, 3000, threads)
        assert found.min() >= 0 and found.max() <= len(wavy)
    out = np.zeros(len(data), np.uint8)
    try:
        _native.gather(data, maybe_forge(offsets[:-1], rng), fl_, maybe_forge(offsets, rng), out,
                       threads)
    except ValueError:
        pass
    if n:
        expect_error(_native.gather, data, offsets[:-1], lengths + 1, offsets, out, threads)


def fuzz_train():
    """The trainer's entry points: random strings and ranges, forged offsets and ranges, sample
    sizes around the 16-bit counter limit, and random rank_symbols inputs."""
    # now and then over 64 KB: the 32-bit pair counters
    data, offsets = strings(int(rng.integers(3500, 4000) if rng.random() < 0.1 else
                                rng.integers(0, 400)))
    if rng.random() < 0.3:
        data = rng.integers(0, 256, len(data)).astype(np.uint8)  # escapes everywhere
    n = len(offsets) - 1
    lo, hi = sorted(int(x) for x in rng.integers(0, n + 1, 2))
    target = int(rng.choice([1, 2, 7, 100, 4096, 1 << 16, 1 << 20]))
    rounds = int(rng.integers(0, 4))
    for fn, args in ((_native.train_range, (data, offsets, lo, hi, target, 3, rounds)),
                     (_native.sample_of, (data, offsets, lo, hi, target, 3))):
        fn(*args)
        for bad_lo, bad_hi in ((hi, lo - 1), (-1, hi), (lo, n + 1)):
            expect_error(fn, data, offsets, bad_lo, bad_hi, *args[4:])
        expect_error(fn, data, offsets, lo, hi, 0, *args[5:])
        if hi > lo and offsets[hi] > offsets[lo]:
            forged = offsets.copy()
            forged[hi] = len(data) + 1
            expect_error(fn, data, forged, lo, hi, *args[4:])
            forged = offsets.copy()
            forged[lo], forged[hi] = offsets[hi], offsets[lo]
            expect_error(fn, data, forged, lo, hi, *args[4:])
    sample, soffs = _native.sample_of(data, offsets, 0, n, target, int(rng.integers(0, 99)))
    for bits in (0, 16, 32, 8):
        try:
            _native.train_sample(sample, soffs, rounds, counter_bits=bits)
        except ValueError:
            pass
    expect_error(_native.train_sample, sample, soffs[::-1].copy() if len(soffs) > 2 and
                 soffs[-1] > 0 else np.array([0, len(sample) + 1]), rounds)
    expect_error(_native.train_range, data, offsets, lo, hi, target, 3, -1)
    # several samples laid end to end (the GPU's blocks'), each trained as train_sample trains
    # it; forged firsts and offsets refused
    cuts = np.sort(rng.integers(0, n + 1, int(rng.integers(0, 4))))
    bounds = [0, *cuts.tolist(), n]
    parts = [_native.sample_of(data, offsets, a, b, target, 3)
             for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    sbytes = np.concatenate([p[0] for p in parts])
    soffs = np.concatenate([p[1] for p in parts])
    pfirst = np.cumsum([0] + [len(p[1]) for p in parts]).astype(np.int64)
    bfirst = np.cumsum([0] + [len(p[0]) for p in parts]).astype(np.int64)
    packed, lens, tfirst = _native.train_samples(sbytes, soffs, pfirst, bfirst, rounds, 2)
    for k, (sb, so) in enumerate(parts):
        want = _native.train_sample(sb, so, rounds)[0] if len(sb) else np.zeros(0, np.uint64)
        assert sorted(packed[tfirst[k] : tfirst[k + 1]].tolist()) == sorted(want.tolist())
    for forged in (pfirst[::-1].copy(), pfirst + 1, pfirst - 1):
        expect_error(_native.train_samples, sbytes, soffs, forged, bfirst, rounds, 2)
    if len(bfirst) > 2 and (bfirst[::-1] != bfirst).any():  # (samples all empty: bfirst is
        # all zeros, and reversed it is no forgery)
        expect_error(_native.train_samples, sbytes, soffs, pfirst, bfirst[::-1].copy(), rounds, 2)
    if len(soffs) > 1 and soffs[-1] > 0:
        bad = soffs.copy()
        bad[-1] += 1
        expect_error(_native.train_samples, sbytes, bad, pfirst, bfirst, rounds, 2)
    # one selection step from random counts (some forged: negative, huge, bad lengths)
    values = rng.integers(0, 1 << 63, 512, dtype=np.uint64)
    lengths = rng.integers(1, 9, 512).astype(np.int64)
    counts = rng.integers(0, 50, 512).astype(np.int64)
    _native.rank_symbols(values, lengths, int(rng.integers(0, 257)), counts, 5, 4)
    for bad in ((values, lengths, 257, counts), (values[:5], lengths, 3, counts),
                (values, np.zeros(512, np.int64), 3, counts),
                (values, lengths, 3, np.full(512, -1, np.int64)),
                (values, lengths, 3, np.full(512, 1 << 62, np.int64))):
        expect_error(_native.rank_symbols, *bad, 5, 4)



def fuzz_plan():
    """The block planner: columns of a few segments with changes of alphabet (so blocks are
    cut and located), tiny segments and blocks, forged offsets and options; the same plan at
    every thread count."""
    n = int(rng.integers(0, 3000))
    lengths = rng.integers(0, int(rng.choice([4, 40, 400])), n)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    data = rng.choice(ALPHABET, int(offsets[-1])).astype(np.uint8)
    if len(data) > 10:
        cut = int(rng.integers(0, len(data)))
        data[cut:] = rng.integers(0, 256, len(data) - cut).astype(np.uint8)  # escapes
    segment = int(rng.choice([1, 64, 512, 4096, 1 << 16]))
    largest = int(rng.choice([1, 1000, 1 << 14, 1 << 26]))
    tolerance = float(rng.choice([0.0, 0.05, 0.15, 3.0]))
    target = int(rng.choice([1, 100, 4096, 1 << 16]))
    first = None
    for threads in (1, 2, 3):
        got = _native.plan_blocks(data, offsets, target, segment, largest, tolerance,
                                  bool(rng.random() < 0.5), threads)
        if first is None:
            first = got
        assert all(np.array_equal(a, b) for a, b in zip(got, first, strict=True))
    starts, packed, lengths, bounds = first
    assert starts[0] == 0 and starts[-1] == n and np.all(np.diff(starts) >= 0)
    assert len(bounds) == len(starts) and bounds[0] == 0 and bounds[-1] == len(packed)
    assert len(lengths) == len(packed) and np.all(np.diff(bounds) <= 255)
    assert np.all((lengths >= 1) & (lengths <= 8))
    expect_error(_native.plan_blocks, data, offsets, 0, segment, largest, tolerance, True, 2)
    expect_error(_native.plan_blocks, data, offsets, target, segment, largest, float("nan"),
                 True, 2)
    if n and offsets[-1] > 0:
        forged = offsets.copy()
        forged[-1] = len(data) + 1
        expect_error(_native.plan_blocks, data, forged, target, segment, largest, tolerance,
                     True, 2)
        forged = offsets[::-1].copy()
        expect_error(_native.plan_blocks, data, forged, target, segment, largest, tolerance,
                     True, 2)


def fuzz_lookups():
    """The GPU encoder's lookups of many tables: random canonical tables (some empty, some of
    255 symbols), the same at every thread count and consistent with their symbols; forged
    firsts, lengths, orders and values refused."""
    sets = [symbols(int(rng.choice([0, 1, 30, 255]))) for _ in range(int(rng.integers(0, 40)))]
    values = np.concatenate([p for p, _ in sets] + [np.zeros(0, np.uint64)])
    lengths = np.concatenate([ln for _, ln in sets] + [np.zeros(0, np.uint8)])
    first = np.cumsum([0] + [len(p) for p, _ in sets]).astype(np.int64)
    got = [_native.table_lookups(values, lengths, first, threads) for threads in (1, 3)]
    assert all(np.array_equal(a, b) for a, b in zip(*got, strict=True))
    one, two_at, two_value, ranges, vm, lc = got[0]
    for t, (p, ln) in enumerate(sets):
        longs = int((ln >= 3).sum())
        assert int(ranges[t, -1]) >> 16 == longs and not lc[t, longs:].any()
        assert sorted((lc[t, :longs] >> 8).tolist()) == np.flatnonzero(ln >= 3).tolist()
        singles = np.flatnonzero(ln == 1)
        assert (one[t, p[singles].astype(np.int64)] == (256 | singles)).all()
    assert len(two_at) == int((lengths == 2).sum())
    assert np.all((two_value >> 8) == 2)
    if len(values):
        k = int(rng.integers(0, len(values)))
        for forged in (lengths.copy(), lengths.copy()):
            forged[k] = int(rng.choice([0, 9, 255]))
            expect_error(_native.table_lookups, values, forged, first, 2)
        if lengths[k] < 8:  # a byte past the symbol's length
            bad = values.copy()
            bad[k] |= np.uint64(1) << np.uint64(8 * int(lengths[k]))
            expect_error(_native.table_lookups, bad, lengths, first, 2)
        if len(sets) == 1 and len(values) > 1:  # out of canonical order
            expect_error(_native.table_lookups, values[::-1].copy(), lengths[::-1].copy(),
                         first, 2)
    for forged in (first + 1, first[::-1].copy(), np.r_[first, first[-1] + 1]):
        if len(first) > 1 and not np.array_equal(forged, first):
            expect_error(_native.table_lookups, values, lengths, forged.astype(np.int64), 2)
    big = symbols(60)
    many = (np.concatenate([big[0]] * 5), np.concatenate([big[1]] * 5))
    expect_error(_native.table_lookups, *many, np.array([0, 300], np.int64), 2)


def fuzz_pages():
    """Parquet's value decoders on runs a model encoder made (the same values back, then the
    same run cut, extended or with a byte changed: values back or CorruptData, never a fault),
    and random bytes."""
    width = int(rng.integers(0, 33))
    n = int(rng.integers(0, 300))
    values = [int(v) for v in rng.integers(0, 1 << width, n, dtype=np.uint64)] if width else \
        [0] * n
    if width and rng.random() < 0.5:  # long repeats
        values = sorted(values)
    run = np.frombuffer(rle_encode(values, width, rng), np.uint8)
    got, end = _native.rle_hybrid(run, width, n)
    assert got.tolist() == values and end == len(run)
    kind = int(rng.integers(0, 4))
    ints = rng.integers(-(1 << 63), (1 << 63) - 1, n, dtype=np.int64, endpoint=True) \
        if kind == 0 else np.cumsum(rng.integers(-3, 50, n)).astype(np.int64)
    per, minis = ((32, 4), (64, 2), (128, 1), (32, 8))[int(rng.integers(0, 4))]
    drun = np.frombuffer(delta_encode(ints.tolist(), per, minis), np.uint8)
    got, end = _native.delta_binary_packed(drun, n)
    assert np.array_equal(got, ints) and end == len(drun)
    # byte arrays: PLAIN, DELTA_LENGTH_BYTE_ARRAY and DELTA_BYTE_ARRAY of sorted strings
    strs = sorted(bytes(rng.choice(ALPHABET, int(rng.integers(0, 12)))) for _ in range(n))
    plain = np.frombuffer(b"".join(len(v).to_bytes(4, "little") + v for v in strs), np.uint8)
    got, offs, end = _native.plain_byte_arrays(plain, n)
    assert end == len(plain) and got.tobytes() == b"".join(strs)
    none, offs2, end2 = _native.plain_byte_arrays(plain, n, False)
    assert not none.size and np.array_equal(offs, offs2) and end2 == end
    dl = np.frombuffer(delta_encode([len(v) for v in strs]) + b"".join(strs), np.uint8)
    offs, start = _native.delta_length_byte_arrays(dl, n)
    assert dl[start:].tobytes() == b"".join(strs) and offs[-1] == len(dl) - start
    keep = [0] + [next((k for k in range(min(len(a), len(b))) if a[k] != b[k]),
                       min(len(a), len(b))) for a, b in zip(strs[:-1], strs[1:], strict=True)]
    keep = keep[:n]
    tails = [v[k:] for v, k in zip(strs, keep, strict=True)]
    db = np.frombuffer(delta_encode(keep) + delta_encode([len(t) for t in tails]) +
                       b"".join(tails), np.uint8)
    got, offs, end = _native.delta_byte_arrays(db, n)
    assert end == len(db) and got.tobytes() == b"".join(strs)
    assert [got[a:b].tobytes() for a, b in zip(offs[:-1], offs[1:], strict=True)] == strs
    for data, fn, args in ((run, _native.rle_hybrid, (width, n)),
                           (drun, _native.delta_binary_packed, (n,)),
                           (plain, _native.plain_byte_arrays, (n,)),
                           (plain, lambda d, c: _native.plain_byte_arrays(d, c, False), (n,)),
                           (dl, _native.delta_length_byte_arrays, (n,)),
                           (db, _native.delta_byte_arrays, (n,))):
        for _ in range(4):
            bad = data.copy()
            how = int(rng.integers(0, 3))
            if how == 0 and len(bad):
                bad = bad[: int(rng.integers(0, len(bad)))]
            elif how == 1 and len(bad):
                bad[int(rng.integers(0, len(bad)))] = int(rng.integers(0, 256))
            else:
                bad = rng.integers(0, 256, int(rng.integers(0, 40))).astype(np.uint8)
            try:
                fn(bad, *args)
            except ValueError:
                pass
        try:
            fn(data, *args[:-1], args[-1] + int(rng.integers(1, 1000)))
        except ValueError:
            pass


def fuzz_tables():
    """symbol_slots on tables of random symbols (their slots back, in order), then with the
    symbols reordered, the counts or starts forged, or the bytes cut short: each table read or
    refused as a model says, never a fault."""
    tables = [symbols(int(rng.integers(0, 256))) for _ in range(int(rng.integers(1, 6)))]
    blob, starts, counts = [], [], []
    for packed, lens in tables:
        starts.append(sum(len(b) for b in blob))
        blob.append(b"".join(int(v).to_bytes(8, "little")[:ln]
                             for v, ln in zip(packed.tolist(), lens.tolist(), strict=True)))
        counts.append(np.bincount(lens, minlength=9)[1:].astype(np.uint8))
    data = np.frombuffer(b"".join(blob), np.uint8)
    starts, counts = np.array(starts, np.int64), np.array(counts, np.uint8).reshape(-1, 8)
    packed, lens, ok = _native.symbol_slots(data, starts, counts)
    assert ok.tolist() == [1] * len(tables)
    assert np.array_equal(packed, np.concatenate([p for p, _ in tables]))
    assert np.array_equal(lens, np.concatenate([ln for _, ln in tables]))
    how = int(rng.integers(0, 4))
    if how == 0 and len(data) > 1:  # two symbols swapped: out of order (or equal)
        bad = data.copy()
        i, j = sorted(rng.integers(0, len(data), 2).tolist())
        bad[i], bad[j] = bad[j], bad[i]
        data = bad
    elif how == 1:
        counts = counts.copy()
        counts[int(rng.integers(0, len(counts))), int(rng.integers(0, 8))] = \
            int(rng.integers(0, 256))
    elif how == 2:
        starts = starts.copy()
        starts[int(rng.integers(0, len(starts)))] = int(rng.choice(
            [-1, len(data), len(data) + 1, -(1 << 62), 1 << 62, int(rng.integers(0, 50))]))
    else:
        data = data[: int(rng.integers(0, len(data) + 1))]
    packed, lens, ok = _native.symbol_slots(data, starts, counts)
    pos = 0
    for t in range(len(starts)):  # the model: inside, at most 255, each length increasing
        c = counts[t].astype(np.int64)
        size = int(c @ np.arange(1, 9))
        want = 0 <= starts[t] <= len(data) and size <= len(data) - starts[t] and c.sum() <= 255
        keys, p = [], int(starts[t])
        for ln in range(1, 9) if want else ():
            run = [int.from_bytes(data[p + k * ln : p + (k + 1) * ln].tobytes().ljust(8, b"\0"),
                                  "big") for k in range(int(c[ln - 1]))]
            want &= all(a < b for a, b in zip(run[:-1], run[1:], strict=True))
            keys += run
            p += ln * int(c[ln - 1])
        assert ok[t] == want, (t, how)
        if want:
            got = [int(v).to_bytes(8, "little")[:ln] for v, ln in
                   zip(packed[pos : pos + len(keys)].tolist(), lens[pos : pos + len(keys)]
                       .tolist(), strict=True)]
            assert [int.from_bytes(g.ljust(8, b"\0"), "big") for g in got] == keys
            pos += len(keys)
    assert pos == len(packed) == len(lens)


def fuzz_page_headers():
    """page_headers on chunks of headers a model wrote (read back as written), then cut, with
    bytes inserted or changed: rows inside the chunk or CorruptData, never a fault."""
    pages, chunk = [], bytearray()
    for k in range(int(rng.integers(1, 5))):
        kind = 2 if k == 0 and rng.random() < 0.5 else int(rng.choice([0, 3]))
        size, values = int(rng.integers(0, 40)), int(rng.integers(0, 100))
        crc = int(rng.integers(0, 1 << 32)) if rng.random() < 0.5 else None
        head = page_header(rng, kind, size, values, crc)
        pages.append((kind, values, len(chunk) + len(head), size, crc))
        chunk += head + bytes(rng.integers(0, 256, size, dtype=np.uint8))
    rows = _native.page_headers(bytes(chunk), 1 << 20)
    assert [(r[0], r[2], r[3], r[4], None if r[6] < 0 else r[6]) for r in rows.tolist()] == \
        pages
    for _ in range(20):
        bad = bytearray(chunk)
        how = int(rng.integers(0, 3))
        if how == 0:
            bad = bad[: int(rng.integers(0, len(bad) + 1))]
        elif how == 1:
            at = int(rng.integers(0, len(bad) + 1))
            bad[at:at] = bytes(rng.integers(0, 256, int(rng.integers(1, 12)), dtype=np.uint8))
        else:
            for _ in range(int(rng.integers(1, 5))):
                bad[int(rng.integers(0, len(bad)))] = int(rng.integers(0, 256))
        try:
            rows = _native.page_headers(np.frombuffer(bytes(bad), np.uint8), int(rng.choice(
                [0, 1, 1 << 20])))
        except ValueError:
            continue
        for r in rows.tolist():
            assert 0 <= r[3] and 0 <= r[4] and r[3] + r[4] <= len(bad) and r[11] < r[3]


def fuzz_plan_chunks():
    """plan_chunks on a file of chunks of model-written headers (a dictionary page or not,
    version 1 and 2 data pages, payloads whose first bytes are small level sizes and bit
    widths or random), then with bytes cut, inserted or changed: rows inside each chunk's
    range, or a refusal, never a fault; every thread count gives the same answer."""
    takes = {0: [6, 7, 2, 8], 1: [0, 2, 8], 2: [0], 3: [2, 8]}
    raws, specs, at = [], [], 0
    for c in range(int(rng.integers(1, 5))):
        chunk, values, leaf = bytearray(), 0, int(rng.integers(0, 4))
        for k in range(int(rng.integers(1, 4))):
            kind = 2 if k == 0 and rng.random() < 0.5 else int(rng.choice([0, 3]))
            size, count = int(rng.integers(0, 30)), int(rng.integers(0, 50))
            body = bytearray(rng.integers(0, 256, size, dtype=np.uint8).tobytes())
            if kind == 2 and rng.random() < 0.7:  # PLAIN byte arrays (or 4-byte values)
                words = [bytes(rng.choice(ALPHABET, int(rng.integers(0, 4))))
                         for _ in range(int(rng.integers(0, 6)))]
                body = bytearray(b"".join(len(w).to_bytes(4, "little") + w for w in words))
                size, count = len(body), len(words)
            elif size >= 6 and rng.random() < 0.7:  # (a level size, then a bit width)
                body[:5] = bytes([int(rng.integers(0, 3)), 0, 0, 0, int(rng.integers(0, 40))])
            crc = None if rng.random() < 0.5 else zlib.crc32(body) if rng.random() < 0.8 \
                else int(rng.integers(0, 1 << 32))
            encoding = None if rng.random() < 0.15 else int(rng.choice(
                [0, 2] if kind == 2 else takes[leaf]))
            chunk += page_header(rng, kind, size, count, crc, encoding) + body
            values += count if kind != 2 else 0
        if rng.random() < 0.1:
            chunk = bytearray(chunk[: int(rng.integers(0, len(chunk) + 1))])
        elif rng.random() < 0.1:
            for _ in range(int(rng.integers(1, 4))):
                chunk[int(rng.integers(0, len(chunk)))] = int(rng.integers(0, 256))
        raws.append(bytes(chunk))
        nvals = values if rng.random() < 0.9 else int(rng.integers(0, 60))
        specs.append([at, len(chunk), at, 500 + at, nvals, 10 * c, c, leaf,
                      int(rng.integers(0, 2))])
        at += len(chunk)
    specs = np.array(specs, np.int64)
    with tempfile.TemporaryFile() as f:
        f.write(b"".join(raws))
        f.flush()
        fd = f.fileno()
        check = bool(rng.random() < 0.5)
        answers = [_native.plan_chunks(np.zeros(at + 1, np.uint8), fd, specs, check, t)
                   for t in (1, 3)]
    rows, dicts, entries, entry_at, crcs, error = answers[0]
    for x, y in zip(answers[0][:5], answers[1][:5], strict=True):
        assert np.array_equal(x, y)
    assert answers[0][5] == answers[1][5]
    done = len(specs) if error is None else error[0]
    assert len(dicts) == done and len(entry_at) == done + 1
    for r in rows.tolist():
        s = specs[r[9]]
        assert s[3] <= r[0] <= r[0] + r[1] <= r[2] <= r[3] <= s[3] + s[1]
    for c, start, size, _ in crcs.tolist():
        assert 0 <= start <= start + size <= specs[c][1]


def leaf_page_values(strs, encoding, width_dict=None):
    """A data page's values: byte arrays in ``encoding`` (0 PLAIN, 6 DELTA_LENGTH, 7 DELTA,
    8 dictionary indices into width_dict's dictionary)."""
    if encoding == 0:
        return b"".join(len(v).to_bytes(4, "little") + v for v in strs)
    if encoding == 6:
        return delta_encode([len(v) for v in strs]) + b"".join(strs)
    if encoding == 7:
        keep = [0] + [next((k for k in range(min(len(a), len(b))) if a[k] != b[k]),
                           min(len(a), len(b))) for a, b in zip(strs[:-1], strs[1:],
                                                                 strict=True)]
        keep = keep[: len(strs)]
        tails = [v[k:] for v, k in zip(strs, keep, strict=True)]
        return delta_encode(keep) + delta_encode([len(t) for t in tails]) + b"".join(tails)
    words, width = width_dict
    return bytes([width]) + rle_encode([words.index(v) for v in strs], width, rng)


def fuzz_leaf():
    """A leaf chunk of a few model-encoded pages (levels up to 2, each page's values in a
    random encoding, a dictionary page or not) decoded as the model says; then damaged pages:
    a result or a clean error, never a fault."""
    rows = int(rng.integers(0, 200))
    max_def = int(rng.integers(0, 3))
    levels = rng.integers(0, max_def + 1, rows) if max_def else np.zeros(rows, np.int64)
    words = sorted({bytes(rng.choice(ALPHABET, int(rng.integers(0, 6)))) for _ in range(8)})
    width = max(1, (len(words) - 1).bit_length())
    strs = [words[int(rng.integers(0, len(words)))] for _ in range(rows)]
    cuts = sorted(rng.integers(0, rows + 1, int(rng.integers(0, 3))).tolist())
    bounds = [0, *cuts, rows]
    dict_page = b"".join(len(w).to_bytes(4, "little") + w for w in words)
    bodies, meta, keep = [dict_page], [[2, 0, 3, len(words), 0, 0]], rng.random() < 0.3
    for a, b in zip(bounds[:-1], bounds[1:], strict=True):
        lv = levels[a:b]
        present = [strs[r] for r in range(a, b) if lv[r - a] == max_def]
        enc = 8 if keep else int(rng.choice([0, 6, 7, 8]))
        values = leaf_page_values(present, enc, (words, width))
        levels_run = rle_encode([int(v) for v in lv], max_def.bit_length(), rng) if max_def else b""
        body = (len(levels_run).to_bytes(4, "little") + levels_run if max_def else b"") + values
        bodies.append(body)
        meta.append([0, enc, 3, b - a, 0, 0])
    pages = np.array(meta, np.int64)
    arrays = [np.frombuffer(x, np.uint8) for x in bodies]
    out = _native.decode_leaf(arrays, pages, 0, max_def, keep, rows)
    assert out[0].tolist() == [int(v) for v in levels] and out[1] == int((levels == max_def).sum())
    if keep:
        got = [words[int(i)] for i, v in zip(out[5], levels, strict=True) if v == max_def]
    else:
        data, offs = out[3].tobytes(), out[2]
        got = [data[offs[r]:offs[r + 1]] for r in range(rows) if levels[r] == max_def]
        assert all(offs[r] == offs[r + 1] for r in range(rows) if levels[r] != max_def)
    assert got == [s for s, v in zip(strs, levels, strict=True) if v == max_def]
    if not keep:  # the bytes left in place: the same values from the bodies' runs
        placed = _native.decode_leaf(arrays, pages, 0, max_def, keep, rows, True)
        assert np.array_equal(placed[2], out[2])
        runs = [(placed[3] if b < 0 else arrays[b])[st : st + n] for b, st, n in placed[8]]
        assert b"".join(r.tobytes() for r in runs) == out[3].tobytes()
        # each row's start in a chunk holding the bodies (with gaps), or in the decoded bytes
        gaps = rng.integers(0, 5, len(arrays))
        at = np.cumsum(gaps + [len(a) for a in arrays]) - [len(a) for a in arrays]
        chunk = np.zeros(int(at[-1]) + len(arrays[-1]) if len(arrays) else 0, np.uint8)
        for a, k in zip(arrays, at.tolist(), strict=True):
            chunk[k : k + len(a)] = a
        starts = _native.decode_leaf(arrays, pages, 0, max_def, keep, rows, True, at)[9]
        offs = out[2]
        for r in range(rows):
            n = int(offs[r + 1] - offs[r])
            src, st = (placed[3], -1 - starts[r]) if starts[r] < 0 else (chunk, starts[r])
            assert src[st : st + n].tobytes() == out[3][offs[r] : offs[r] + n].tobytes()
    for _ in range(6):
        bad = [a.copy() for a in arrays]
        k = int(rng.integers(0, len(bad)))
        if len(bad[k]):
            if rng.random() < 0.5:
                bad[k][int(rng.integers(0, len(bad[k])))] = int(rng.integers(0, 256))
            else:
                bad[k] = bad[k][: int(rng.integers(0, len(bad[k])))]
        meta_bad = pages.copy()
        if rng.random() < 0.3:
            meta_bad[int(rng.integers(0, len(meta_bad))), int(rng.integers(0, 6))] = \
                int(rng.choice([-1, 0, 1, 3, 7, 1 << 40]))
        try:
            in_place = bool(rng.random() < 0.5)
            starts = rng.integers(-1, 1000, len(bad)) if in_place and rng.random() < 0.5 \
                else None
            _native.decode_leaf(bad, meta_bad, int(rng.integers(0, 3)), max_def, keep, rows,
                                in_place, starts)
        except ValueError:
            pass


def slot_of(packed):
    p = (int(packed) & 0xFFFFFF) * 2971215073
    return (p ^ (p >> 15)) & 4095


def unchained(packed, lengths):
    """The symbols without those whose hash slot an earlier 3+ byte one took (trained tables
    have one per slot: the lane kernels' case)."""
    keep, taken = [], set()
    for i, (p, ln) in enumerate(zip(packed, lengths, strict=True)):
        if ln >= 3:
            if slot_of(p) in taken:
                continue
            taken.add(slot_of(p))
        keep.append(i)
    return packed[keep], lengths[keep]


def same_codes_on_every_loop(p, ln, data, offsets, runs):
    """Encode data/offsets (one block) with the table p/ln under each instruction set's copy and
    each (FSSTGPU_ENCODER loop, threads) of runs: all give the same codes, and they decode back."""
    import os

    matcher = _native.Matcher(p, ln)
    n = len(offsets) - 1
    block_starts = np.array([0, n], np.int64)
    first = None
    for isa in ("scalar", "avx2", "avx512"):
        os.environ["FSSTGPU_ISA"] = isa
        for loop, threads in runs:
            os.environ["FSSTGPU_ENCODER"] = loop
            got = _native.encode_blocks(data, offsets, block_starts, [matcher], threads)
            if first is None:
                first = got
            assert np.array_equal(got[0], first[0]) and np.array_equal(got[1], first[1])
    os.environ.pop("FSSTGPU_ISA")
    os.environ.pop("FSSTGPU_ENCODER")
    out = decode_all(first[0], first[1], offsets, np.zeros(n, np.int64),
                     compact_of([(p, ln)]), int(offsets[-1]), 2)
    assert np.array_equal(out, data)


def fuzz_encode_simd():
    """The encoder's loops (FSSTGPU_ENCODER: chained, lanes, vector, gather, or timed on the first
    strings, which needs chunks of 128 KB or more) in each instruction set's copy: all give
    the same codes at every thread count, and they decode back; tables with and without
    chained slots, empty and long strings, strings at the data's end."""
    for _ in range(max(1, ROUNDS // 25)):
        p, ln = symbols(int(rng.integers(1, 256)))
        if rng.random() < 0.7:
            p, ln = unchained(p, ln)
        n = int(rng.integers(1, 12000))
        lengths = rng.integers(0, 60, n)
        lengths[rng.random(n) < 0.1] = 0
        if rng.random() < 0.3:
            lengths[int(rng.integers(0, n))] = int(rng.integers(60_000, 140_000))
        offsets = np.zeros(n + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        data = rng.choice(ALPHABET, int(offsets[-1])).astype(np.uint8)
        same_codes_on_every_loop(p, ln, data, offsets,
                                 (("auto", 1), ("auto", 3), ("chained", 1), ("lanes", 2),
                                  ("vector", 1), ("gather", 2)))


def fuzz_encode_jobs():
    """The AVX-512 job kernel at its edges (csrc/encode_jobs_impl.h): batches cut by string
    count (8191) and bytes (64 KB), strings around its 1 KB limit and runs of them, empty
    runs, strings ending at the data's very end, and tables whose 2-byte symbols leave one
    second byte free (a string's last byte is looked up with it). Every loop and instruction
    set gives the same codes, and they decode back."""
    for _ in range(max(1, ROUNDS // 25)):
        if rng.random() < 0.3:  # 255 two-byte symbols, all second bytes but one
            free = int(rng.integers(0, 256))
            syms = sorted({bytes([int(rng.integers(0, 256)), b]) for b in range(256) if b != free})
            p = np.array([int.from_bytes(s, "little") for s in syms], np.uint64)
            ln = np.full(len(syms), 2, np.uint8)
        else:
            p, ln = unchained(*symbols(int(rng.integers(1, 256))))
        n = int(rng.integers(1, 30000))
        kind = rng.random(n)
        lengths = np.where(kind < 0.4, rng.integers(0, 3, n), rng.integers(1, 8, n))
        lengths[kind > 0.97] = rng.integers(1000, 1050, int((kind > 0.97).sum()))
        lengths[(kind > 0.96) & (kind <= 0.97)] = 0
        offsets = np.zeros(n + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        alphabet = ALPHABET if rng.random() < 0.7 else np.arange(256, dtype=np.uint8)
        data = rng.choice(alphabet, int(offsets[-1])).astype(np.uint8)
        same_codes_on_every_loop(p, ln, data, offsets,
                                 (("auto", 1), ("chained", 1), ("lanes", 1), ("vector", 2),
                                  ("gather", 1)))


def fuzz_check_splits():
    """The split points' check alone (validate's, the decoder's): forged arrays of any
    lengths, orders and table indices must raise (CorruptData: a ValueError here) or pass,
    never read past them."""
    n = int(rng.integers(0, 6))
    sc = np.sort(rng.integers(-2, 20, int(rng.integers(0, 7))))
    so = rng.integers(-2, 20, int(rng.choice([n + 1, int(rng.integers(0, 7))])))
    st = rng.integers(-3, 4, int(rng.choice([n, int(rng.integers(0, 7))])))
    try:
        _native.check_splits(sc.astype(np.int64), so.astype(np.int64), st.astype(np.int64),
                             int(rng.integers(-1, 20)), int(rng.integers(-1, 20)),
                             int(rng.integers(0, 4)))
    except ValueError:
        pass


def fuzz_assemble_splits():
    """The split starts' merge (splits.plan_splits' last step) on forged block starts, rows,
    positions and cuts of any lengths and orders: a ValueError or an answer, never a read past
    the arrays (by row: every row is an index into the positions)."""
    def ints(lo, hi, size):
        return rng.integers(lo, hi, size).astype(np.int64)
    nb = int(rng.integers(0, 5))
    bs = ints(-3, 20, nb + int(rng.integers(0, 2)))
    row = ints(-3, 25, int(rng.integers(0, 30)))
    if rng.random() < 0.5:
        row = np.sort(row)
    npos = int(rng.choice([len(row), int(rng.integers(0, 30))]))
    code, out = ints(-3, 40, npos), ints(-3, 40, int(rng.choice([npos, int(rng.integers(0, 30))])))
    ncut = int(rng.integers(0, 6))
    cuts = [np.sort(ints(-3, 40, int(rng.choice([ncut, int(rng.integers(0, 6))]))))
            for _ in range(3)]
    try:
        sc, so, st = _native.assemble_splits(bs, row, code, out, bool(rng.random() < 0.5),
                                             *cuts, int(rng.integers(-1, 40)), 99,
                                             int(rng.integers(1, 4)))
    except ValueError:
        return
    assert len(sc) == len(so) == len(st) + 1


def fuzz_string_bounds():
    """The strings' bounds (formats/pruning.py) over forged offsets and bitmaps: raise
    ValueError or give indices of valid strings, the least and greatest bytewise."""
    size = int(rng.integers(0, 12))
    data = rng.integers(0, 256, size).astype(np.uint8)
    n = int(rng.integers(0, 7))
    offsets = np.sort(rng.integers(-1, size + 2, n + 1)).astype(np.int64)
    if rng.random() < 0.3:
        offsets = rng.integers(-2, size + 3, int(rng.integers(0, 8))).astype(np.int64)
    bits = None
    if rng.random() < 0.5:
        bits = rng.integers(0, 256, int(rng.integers(0, 3))).astype(np.uint8)
    try:
        lo, hi = _native.string_bounds(data, offsets, bits, int(rng.integers(1, 4)))
    except ValueError:
        return
    count = len(offsets) - 1
    valid = [i for i in range(count) if bits is None or (bits[i >> 3] >> (i & 7)) & 1]
    strings = [data[offsets[i] : offsets[i + 1]].tobytes() for i in valid]
    if not valid:
        assert (lo, hi) == (-1, -1)
    else:
        assert data[offsets[lo] : offsets[lo + 1]].tobytes() == min(strings)
        assert data[offsets[hi] : offsets[hi + 1]].tobytes() == max(strings)


def fuzz_code_starts():
    """The code starts a batch marks (fsstgpu/gpu/layout.py) over forged code offsets and bit
    positions: raise ValueError or set exactly the bits a Python model sets; the bit copies
    OR exactly their bits in, never a byte past the output."""
    co = np.sort(rng.integers(-3, 40, int(rng.integers(1, 9)))).astype(np.int64)
    if rng.random() < 0.3:  # not sorted, or far past the map
        co = rng.integers(-(2**62), 2**62, int(rng.integers(1, 6))).astype(np.int64)
    out = rng.integers(0, 256, int(rng.integers(0, 7))).astype(np.uint8)
    bit = int(rng.integers(-2, 8 * out.size + 3))
    want = out.copy()
    inside = 0 <= bit <= 8 * out.size
    for i in range(len(co) - 1):
        if not inside or co[i + 1] <= co[i]:
            continue
        p = bit + int(co[i])
        if not 0 <= p < 8 * out.size:
            inside = False
            break
        want[p >> 3] |= 1 << (p & 7)
    try:
        _native.mark_code_starts(co, bit, out)
        assert inside and np.array_equal(out, want)
    except ValueError:
        assert not inside
    src = rng.integers(0, 256, int(rng.integers(0, 40))).astype(np.uint8)  # words and tails
    nbits, bit = int(rng.integers(-1, 8 * src.size + 3)), int(rng.integers(-1, 20))
    out = rng.integers(0, 256, int(rng.integers(0, src.size + 5))).astype(np.uint8)
    fits = nbits >= 0 and bit >= 0 and -(-nbits // 8) <= src.size and -(-(bit + nbits) // 8) \
        <= out.size
    want = out.copy()
    if fits:
        for k in range(nbits):
            if (src[k >> 3] >> (k & 7)) & 1:
                want[(bit + k) >> 3] |= 1 << ((bit + k) & 7)
    try:
        _native.or_bits(src, nbits, out, bit)
        assert fits and np.array_equal(out, want)
    except ValueError:
        assert not fits


def distinct_upto_model(data, offsets, bits, limit):
    """distinct_upto in Python: ValueError where it must raise, else the count of the valid
    strings (limit + 1 once passed; offsets past that point are not read)."""
    n = len(offsets) - 1
    if n < 0 or limit < 0 or (bits is not None and len(bits) < (n + 7) // 8):
        raise ValueError
    if n == 0:
        return 0
    if not 0 <= offsets[0] <= len(data):
        raise ValueError
    seen = set()
    for i in range(n):
        begin, end = offsets[i], offsets[i + 1]
        if end < begin or end > len(data):
            raise ValueError
        if bits is not None and not (bits[i >> 3] >> (i & 7)) & 1:
            continue
        seen.add(data[begin:end].tobytes())
        if len(seen) > limit:
            return limit + 1
    return len(seen)


def fuzz_distinct_upto():
    """The distinct count of compress_file's dictionary choice (formats/files.py) over forged
    offsets and limits, against the model: the same count, or ValueError where it raises."""
    size = int(rng.integers(0, 12))
    data = rng.integers(0, 3, size).astype(np.uint8)  # few byte values: strings repeat
    n = int(rng.integers(0, 9))
    offsets = np.sort(rng.integers(-1, size + 2, n + 1)).astype(np.int64)
    if rng.random() < 0.3:
        offsets = rng.integers(-2, size + 3, int(rng.integers(0, 8))).astype(np.int64)
    limit = int(rng.integers(-1, 6))
    bits = None
    if rng.random() < 0.5:
        bits = rng.integers(0, 256, int(rng.integers(0, 3))).astype(np.uint8)
    try:
        want = distinct_upto_model(data, offsets, bits, limit)
    except ValueError:
        want = ValueError
    try:
        got = _native.distinct_upto(data, offsets, bits, limit)
    except ValueError:
        got = ValueError
    assert got == want, (data.tolist(), offsets.tolist(), limit, got, want)


def stored_rows_model(n, bits, co, size, lengths, index, table_of):
    """stored_rows in Python: (status, nulls, code offsets, lengths, run starts, tables)."""
    def bit(b, i):
        return b is None or (b[0][(b[1] + i) >> 3] >> ((b[1] + i) & 7)) & 1
    if co[0] < 0 or co[n] > size:
        return 1, None
    nulls, lens, starts, tables, current = [0] * 4, [], [0], [], -1
    for i in range(n):
        if co[i + 1] < co[i]:
            return 1, None
        valid = [bit(b, i) for b in bits]
        for k in range(1, 4):
            nulls[k] += not valid[k]
        if not valid[0]:
            nulls[0] += 1
            if co[i + 1] != co[i]:
                return 5, None
            lens.append(0)
            continue
        if not all(valid[1:]):
            return 2, None
        if lengths.dtype == np.uint64 and int(lengths[i]) >> 62:
            return 3, None
        c = int(co[i + 1] - co[i])
        if c > 2 * int(lengths[i]) or int(lengths[i]) > 8 * c:
            return 6, None
        lens.append(int(lengths[i]))
        t = table_of[index[i]] if index[i] < len(table_of) else -1
        if t < 0:
            return 4, None
        if t != current:
            if current >= 0:
                starts.append(i)
            tables.append(int(t))
            current = t
    return 0, (nulls, [int(c - co[0]) for c in co], lens, starts + [n], tables or [0])


def fuzz_stored_rows():
    """The one pass over a stored struct's rows (formats/arrow_read.py's quick read): forged
    offsets, bitmaps at any bit offset, lengths of either width, table indices past the map;
    the statuses and outputs of the Python model, and never a read outside the arrays."""
    n = int(rng.choice([0, 1, 7, 64, 300]))
    size = int(rng.integers(0, 50))
    co = np.sort(rng.integers(-1, size + 2, n + 1)).astype(np.int64)
    if rng.random() < 0.2:
        co = rng.integers(-2, size + 3, n + 1).astype(np.int64)

    def bitmap():
        if rng.random() < 0.4:
            return None
        first = int(rng.integers(0, 20))
        dense = rng.random() < 0.7
        nbytes = (first + n + 7) // 8 + int(rng.integers(0, 2))
        raw = rng.integers(0, 256, nbytes) | (0xFF if dense and rng.random() < 0.8 else 0)
        return raw.astype(np.uint8), first

    bits = [bitmap() for _ in range(4)]
    wide = rng.random() < 0.5
    lengths = rng.integers(0, 9, n).astype(np.uint64 if wide else np.uint32)
    if wide and n and rng.random() < 0.2:
        lengths[int(rng.integers(0, n))] = 2**62 + int(rng.integers(0, 3))
    index = rng.integers(0, 4, n).astype(np.uint16)
    table_of = rng.integers(-1, 3, int(rng.integers(0, 5))).astype(np.int32)
    args = (n, bits[0][0] if bits[0] else None, bits[0][1] if bits[0] else 0,
            bits[1][0] if bits[1] else None, bits[1][1] if bits[1] else 0, co, size,
            bits[2][0] if bits[2] else None, bits[2][1] if bits[2] else 0, lengths,
            bits[3][0] if bits[3] else None, bits[3][1] if bits[3] else 0, index, table_of,
            np.full(n, -7, np.int64), np.full(n + 1, -7, np.int64) if rng.random() < 0.9
            else None)
    if rng.random() < 0.1:  # a bitmap too short for its rows
        short = np.zeros(max(0, (n + 7) // 8 - 1), np.uint8)
        try:
            _native.stored_rows(*args[:1], short, 0, *args[3:])
            assert n == 0
        except ValueError:
            pass
        return
    try:
        status, nulls, out_co, starts, tables = _native.stored_rows(*args)
    except ValueError:  # offsets not from 0 without an array for them
        assert args[-1] is None and len(co) and co[0]
        return
    out_len = args[-2]
    want_status, want = stored_rows_model(n, bits, co, size, lengths, index, table_of)
    # with two faults in one 64-row word either may be named: only "none" must agree
    assert (status == 0) == (want_status == 0), (status, want_status)
    if status == 0:
        assert list(nulls) == want[0] and out_co.tolist() == want[1]
        assert out_len.tolist() == want[2] and starts.tolist() == want[3]
        assert tables.tolist() == want[4]


for r in range(ROUNDS):
    fuzz_check_splits()
    fuzz_assemble_splits()
    fuzz_stored_rows()
    fuzz_string_bounds()
    fuzz_code_starts()
    fuzz_distinct_upto()
    fuzz_round()
    fuzz_decode()
    fuzz_scan(big=r % 25 == 0)
    fuzz_train()
    fuzz_lookups()
    fuzz_pages()
    fuzz_tables()
    fuzz_page_headers()
    fuzz_plan_chunks()
    fuzz_leaf()
    if r % 5 == 0:
        fuzz_plan()
        fuzz_args(_native, rng, symbols, strings)
fuzz_encode_simd()
fuzz_encode_jobs()
print("fuzz ok")
