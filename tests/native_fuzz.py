"""Fuzz of the compiled codec's entry points, run by tests/test_native_codec.py in a subprocess
against a sanitizer build (AddressSanitizer + UBSan): random and forged codes, offsets, split
points and tables. Every call must return or raise ValueError/TypeError; the sanitizers turn
any out-of-bounds access or undefined behaviour into a failed exit.

Usage: ``python native_fuzz.py BUILD_DIR ROUNDS``. Imports the extension from BUILD_DIR as the
top-level module ``_native`` and nothing of fsstgpu (so CorruptData arrives as ValueError).
"""

from __future__ import annotations

import sys

import numpy as np

sys.path.insert(0, sys.argv[1])
import _native  # noqa: E402

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
    out = _native.decode_all(codes, code_offsets, offsets, owner.astype(np.int64), packed, lens,
                             int(offsets[-1]), threads)
    assert np.array_equal(out, data)
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
        _native.decode_all(forged, splits, souts, stab, packed, flens, total, threads)
    except ValueError:
        pass
    expect_error(_native.decode_all, forged, splits, souts, stab, packed,
                 np.full_like(lens, 9), total, threads)
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


for _ in range(ROUNDS):
    fuzz_round()
print("fuzz ok")


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


for _ in range(ROUNDS):
    fuzz_train()
