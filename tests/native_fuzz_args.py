"""Hostile arguments for every entry point of the compiled extension, for tests/native_fuzz.py
(imported from there, so under the sanitizer build): each entry point's valid call, then one or
two of its arguments replaced by a misaligned, strided, truncated, extended, emptied, reversed,
re-typed, 2-D or poked (an entry set to a negative or huge value) copy, or a scalar by an
extreme value. Every call must return or raise ValueError/TypeError; a misaligned or strided
copy of an argument holds the same values, so the call must then give the clean call's answer
and write its in-place outputs into the very arrays it was given (or refuse them).
"""

from __future__ import annotations

import types

import numpy as np

EXTREMES = (-1, 0, 1, 7, 255, 256, 2**31 - 1, 2**31, 2**32, 2**62, 2**63 - 1, -(2**62),
            -(2**63))


def misaligned(a):
    """a's values in an array whose data starts one byte past an aligned address."""
    raw = np.zeros(a.nbytes + a.itemsize + 1, np.uint8)
    start = (-raw.ctypes.data) % a.itemsize + 1 if a.itemsize > 1 else 0
    out = raw[start : start + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    return out


def strided(a):
    """a's values as a view of every other element of a larger array."""
    big = np.zeros((2 * a.shape[0],) + a.shape[1:], a.dtype) if a.ndim else a.copy()
    if not a.ndim:
        return big
    big[::2] = a
    return big[::2]


def poked(a, rng):
    if not a.size or a.dtype.kind not in "iu":
        return a[:0]
    a = a.copy()
    info = np.iinfo(a.dtype)
    flat = a.reshape(-1)
    for _ in range(int(rng.integers(1, 3))):
        v = int(rng.choice([info.min, info.max, -1, 0, 1, info.max // 2 + 1, len(flat) + 1]))
        flat[int(rng.integers(0, len(flat)))] = max(info.min, min(info.max, v))
    return a


def hostile(a, rng):
    """A damaged copy of array a (any transform, values kept or not)."""
    kind = int(rng.integers(0, 9))
    if kind == 0:
        return a[: int(rng.integers(0, len(a)))] if a.ndim and len(a) else a
    if kind == 1:
        return np.concatenate([a, a[-1:] if a.ndim and len(a) else np.zeros((1,) + a.shape[1:],
                                                                            a.dtype)])
    if kind == 2:
        return a[:0] if a.ndim else a
    if kind == 3:
        return a[::-1].copy() if a.ndim else a
    if kind == 4:
        dtype = rng.choice([np.int8, np.int16, np.int32, np.int64, np.uint16, np.uint32,
                            np.uint64, np.float64, np.bool_])
        return a.astype(dtype)
    if kind == 5:
        return a.reshape(1, -1) if a.ndim == 1 else a.reshape(-1)
    if kind == 6:
        return np.asarray(int(a.reshape(-1)[0]) if a.size else 0, a.dtype)  # 0-D
    return poked(a, rng)


def same(x, y):
    if hasattr(x, "nsymbols"):  # a Matcher
        return x.nsymbols == y.nsymbols
    if isinstance(x, (tuple, list)):
        return len(x) == len(y) and all(same(a, b) for a, b in zip(x, y, strict=True))
    if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
        return np.array_equal(np.asarray(x), np.asarray(y))
    return x == y


class Case:
    """One entry point's valid call: fn(*args), args rebuilt fresh for every call (outputs are
    written in place); ``outs`` the positions of in-place outputs, ``sizes`` those of scalars
    that size an allocation (never set huge: that is a MemoryError, not a fault)."""

    def __init__(self, fn, args, outs=(), sizes=()):
        self.fn, self.base, self.outs, self.sizes = fn, args, set(outs), set(sizes)

    def fresh(self):
        return [a.copy() if isinstance(a, np.ndarray) else a for a in self.base]

    def call(self, args):
        got = self.fn(*args)
        return got, [args[i] for i in sorted(self.outs)]


def cases(native, rng, symbols, strings):
    """A valid call of every entry point that reads arrays, on random data."""
    nt = int(rng.integers(1, 3))
    sets = [symbols(int(rng.integers(1, 256))) for _ in range(nt)]
    n = int(rng.integers(1, 60))
    data, offsets = strings(n)
    bs = np.array([0] + sorted(rng.integers(0, n + 1, nt - 1).tolist()) + [n], np.int64)
    matchers = [native.Matcher(p, ln) for p, ln in sets]
    codes, co = native.encode_blocks(data, offsets, bs, matchers, 2)
    values = np.concatenate([p for p, _ in sets])
    lengths8 = np.concatenate([ln for _, ln in sets])
    counts = np.array([len(p) for p, _ in sets], np.int64)
    first = np.zeros(nt + 1, np.int64)
    np.cumsum(counts, out=first[1:])
    packed = np.zeros(int(first[-1]) + 255, np.uint64)
    lens = np.zeros((nt, 256), np.uint8)
    row_p, row_l = np.zeros(256, np.uint64), np.zeros(256, np.uint8)
    for t, (p, ln) in enumerate(sets):
        packed[first[t] : first[t + 1]] = p
        lens[t, : len(ln)] = ln
    row_p[: len(sets[0][0])], row_l[: len(sets[0][1])] = sets[0]
    owner = (np.searchsorted(bs, np.arange(n), side="right") - 1).astype(np.int64)
    symlen = lens.copy()
    slen = np.diff(offsets)
    total = int(offsets[-1])
    bits = rng.integers(0, 256, (n + 7) // 8 + 1).astype(np.uint8)
    v512 = rng.integers(0, 1 << 63, 512, dtype=np.uint64)
    # two samples laid end to end (native.train_samples): the whole column's, then its first half's
    halves = [native.sample_of(data, offsets, 0, hi, 100, 5) for hi in (n, n // 2)]
    sample2 = (np.concatenate([h[0] for h in halves]), np.concatenate([h[1] for h in halves]),
               np.cumsum([0] + [len(h[1]) for h in halves]).astype(np.int64),
               np.cumsum([0] + [len(h[0]) for h in halves]).astype(np.int64))
    l512 = rng.integers(1, 9, 512).astype(np.int64)
    c512 = rng.integers(0, 50, 512).astype(np.int64)
    tables = [types.SimpleNamespace(packed=p.copy(), lengths=ln.copy()) for p, ln in sets]
    ends32 = offsets.astype(np.int32)
    return [
        Case(native.Matcher, [sets[0][0], sets[0][1]]),
        Case(native.encode_blocks, [data, offsets, bs, matchers, 2]),
        Case(native.encode_symbols, [data, offsets, bs, values, lengths8, counts, 2]),
        Case(native.decode_range, [codes, 0, len(codes), row_p, row_l,
                                   np.zeros(total + 8, np.uint8), 0, total + 8], outs=[5]),
        Case(native.decode_all, [codes, co, offsets, owner, packed, first, lens, total, offsets,
                                 True, co, True, 2], sizes=[7]),
        Case(native.decode_all, [codes, co, offsets, owner.astype(np.uint16), packed, first,
                                 lens, total, ends32, True, co, False, 1], sizes=[7]),
        Case(native.check_splits, [co, offsets, owner, len(codes), total, nt]),
        Case(native.first_invalid_string, [data, offsets, 2]),
        Case(native.first_invalid_string, [data, ends32, 1]),
        Case(native.train_range, [data, offsets, 0, n, 100, 3, 0, 0], sizes=[4]),
        Case(native.train_sample, [data, offsets, 0, 0]),
        Case(native.sample_of, [data, offsets, 0, n, 100, 5], sizes=[4]),
        Case(native.rank_symbols, [v512, l512, 200, c512, 5, 4]),
        Case(native.train_samples, [*sample2, 1, 2]),
        Case(native.table_lookups, [values, lengths8, first, 2]),
        # (a run of 5 threes and a bit-packed group; a DELTA_BINARY_PACKED run of 3 values)
        Case(native.rle_hybrid, [np.array([10, 3, 3, 0x88, 0xC6, 0xFA], np.uint8), 3, 13],
             sizes=[2]),
        Case(native.delta_binary_packed,
             [np.array([128, 1, 4, 3, 20, 2, 1, 0, 0, 0, 2, 0, 0, 0], np.uint8), 3], sizes=[1]),
        Case(native.delta_length_byte_arrays,
             [np.frombuffer(bytes([128, 1, 4, 2, 4, 2, 0, 0, 0, 0]) + b"abcde", np.uint8), 2],
             sizes=[1]),
        Case(native.plain_byte_arrays, [np.frombuffer(b"\2\0\0\0ab\0\0\0\0", np.uint8), 2],
             sizes=[1]),
        Case(native.decode_leaf, [[np.frombuffer(b"\2\0\0\0\3\5\1\0\0\0a\2\0\0\0bc",
                                                  np.uint8)],
                                   np.array([[0, 0, 3, 3, 0, 0]], np.int64), 0, 1, False, 3],
             sizes=[5]),
        # (the same rows DELTA_LENGTH_BYTE_ARRAY-coded, left in place, the body at byte 100)
        Case(native.decode_leaf, [[np.frombuffer(b"\2\0\0\0\3\5" + bytes(
                                      [128, 1, 4, 2, 2, 2, 0, 0, 0, 0]) + b"abc", np.uint8)],
                                   np.array([[0, 6, 3, 3, 0, 0]], np.int64), 0, 1, False, 3,
                                   True, np.array([100], np.int64)],
             sizes=[5]),
        Case(native.delta_byte_arrays,
             [np.frombuffer(bytes([128, 1, 4, 2, 0, 0, 0, 0, 0, 0, 128, 1, 4, 2, 4, 2, 0, 0, 0,
                                   0]) + b"abcde", np.uint8), 2], sizes=[1]),
        Case(native.plan_blocks, [data, offsets, 100, 64, 1000, 0.1, True, 2, True, 1],
             sizes=[2, 3, 4]),
        Case(native.walk_codes, [codes, bs, symlen, co, slen, 0, 8, len(codes) + 1, None, None,
                                 2], sizes=[6, 7]),
        Case(native.walk_codes, [codes, bs, symlen, None, slen, 1, 0, 0, co, offsets, 1],
             sizes=[6, 7]),
        Case(native.walk_codes, [codes, bs, symlen, co, None, 2, 0, 0, None, None, 2],
             sizes=[6, 7]),
        Case(native.length_sums, [slen, len(codes), np.array([0, n // 2, n], np.int64), 2]),
        Case(native.first_misfit, [co, slen, 2]),
        Case(native.first_filled_null, [bits, slen, co, 2]),
        Case(native.count_set_bits, [bits]),
        Case(native.mark_code_starts, [co, 3, np.zeros((len(codes) + 11) // 8 + 1, np.uint8)],
             outs=[2]),
        Case(native.or_bits, [bits, 8 * len(bits) - 3, np.zeros(len(bits) + 2, np.uint8), 5],
             outs=[2]),
        Case(native.gather, [data, offsets[:-1].copy(), slen, offsets[:-1].copy(),
                             np.zeros(total, np.uint8), 2], outs=[4]),
        Case(native.running_sum, [slen, np.zeros(n + 1, np.int64), 2], outs=[1]),
        Case(native.running_sum, [slen, np.zeros(n + 1, np.int32), 1], outs=[1]),
        Case(native.narrow_lengths, [slen, np.zeros(n, np.uint16), 2], outs=[1]),
        Case(native.narrow_lengths, [slen, np.zeros(n, np.uint8), 1], outs=[1]),
        Case(native.differences, [offsets, 2]),
        Case(native.first_at_or_after, [offsets, 7, 5, 2], sizes=[2]),
        Case(native.assemble_splits, [bs, np.r_[bs[:-1], np.arange(n)].astype(np.int64), co,
                                      offsets, True, co[1:2].copy(),
                                      offsets[1:2].copy(), np.zeros(1, np.int64), len(codes),
                                      total, 2]),
        Case(native.first_decrease, [offsets, 2]),
        Case(native.first_decrease, [ends32, 1]),
        Case(native.string_bounds, [data, offsets, bits, 2]),
        Case(native.distinct_upto, [data, offsets, bits, 5]),
        Case(native.stored_rows, [n, bits, 3, None, 0, co, len(codes), bits, 0,
                                  slen.astype(np.uint32), None, 0, owner.astype(np.uint16),
                                  np.arange(nt, dtype=np.int32), np.zeros(n, np.int64),
                                  np.zeros(n + 1, np.int64)], outs=[14, 15]),
        Case(native.stored_rows, [n, None, 0, None, 0, co + 2, len(codes) + 2, None, 0,
                                  slen.astype(np.uint64), bits, 1, owner.astype(np.uint16),
                                  np.arange(nt, dtype=np.int32), np.zeros(n, np.int64),
                                  np.zeros(n + 1, np.int64)], outs=[14, 15]),
        Case(native.compact_tables, [tables]),
        Case(native.symbol_slots, [np.frombuffer(b"abxyz", np.uint8), np.array([0, 2], np.int64),
                                   np.array([[2] + [0] * 7, [1, 1] + [0] * 6], np.uint8)]),
        Case(native.crc32, [data, 2**31 + 5]),
        Case(native.page_headers, [np.frombuffer(bytes([0x15, 0, 0x15, 8, 0x15, 8, 0x2C, 0x15,
                                                        2, 0x15, 0, 0x15, 6, 0x15, 6, 0, 0]) +
                                                 b"\0\0\0\0", np.uint8), 5]),
        Case(native.crc32_many, [data, offsets[:-1].copy(), slen]),
        Case(native.plan_chunks, [np.zeros(42, np.uint8), _chunks_file(),
                                  np.array([[0, 21, 0, 0, 1, 0, 0, 1, 0],
                                            [21, 21, 21, 21, 1, 1, 1, 2, 0]], np.int64),
                                  True, 2], outs=[0]),
    ]


_CHUNKS = []


def _chunks_file() -> int:
    """An open file of two chunks of one data page each (a value, PLAIN, no levels: the
    page_headers case's page) for plan_chunks' case, opened once a process."""
    if not _CHUNKS:
        import tempfile

        page = bytes([0x15, 0, 0x15, 8, 0x15, 8, 0x2C, 0x15, 2, 0x15, 0, 0x15, 6, 0x15, 6, 0,
                      0]) + bytes(4)
        f = tempfile.TemporaryFile()
        f.write(page * 2)
        f.flush()
        _CHUNKS.append(f)
    return _CHUNKS[0].fileno()


def expect_fine(case, args):
    """The call returns or raises ValueError/TypeError (its answer, or None)."""
    try:
        return case.call(args)
    except (ValueError, TypeError):
        return None


def fuzz_args(native, rng, symbols, strings):
    """Every case with its arguments damaged, a few ways each."""
    for case in cases(native, rng, symbols, strings):
        clean = case.call(case.fresh())
        arrays = [i for i, a in enumerate(case.base) if isinstance(a, np.ndarray)]
        scalars = [i for i, a in enumerate(case.base) if isinstance(a, (int, np.integer))
                   and not isinstance(a, bool) and i not in case.sizes]
        for i in arrays:  # same values, other layouts: the same answer, or refused
            for layout in (misaligned, strided):
                args = case.fresh()
                args[i] = layout(args[i])
                got = expect_fine(case, args)
                assert got is None or same(got, clean), (case.fn.__name__, i, layout.__name__)
        for i in case.outs:  # a read-only output: never written (refused, or not needed)
            args = case.fresh()
            args[i].flags.writeable = False
            before = args[i].copy()
            expect_fine(case, args)
            assert np.array_equal(args[i], before), (case.fn.__name__, i, "read-only")
        if case.fn is native.compact_tables:
            fuzz_tables(native, rng, case.base[0])
            continue
        if case.fn is native.decode_all:
            fuzz_alloc(case, clean[0][0])
        for _ in range(6):
            args = case.fresh()
            for i in rng.choice(arrays, min(len(arrays), int(rng.integers(1, 3))), False):
                args[i] = hostile(args[i], rng)
            expect_fine(case, args)
        for i in scalars:
            args = case.fresh()
            args[i] = int(rng.choice(EXTREMES))
            expect_fine(case, args)


def fuzz_tables(native, rng, tables):
    """compact_tables on tables whose arrays are damaged, missing or not arrays."""
    for _ in range(6):
        bad = [types.SimpleNamespace(**vars(t)) for t in tables]
        t = bad[int(rng.integers(0, len(bad)))]
        name = str(rng.choice(["packed", "lengths"]))
        kind = int(rng.integers(0, 4))
        if kind == 0:
            setattr(t, name, hostile(getattr(t, name), rng))
        elif kind == 1:
            setattr(t, name, misaligned(getattr(t, name)))
        elif kind == 2:
            setattr(t, name, getattr(t, name).tolist())
        else:
            delattr(t, name)
        try:
            packed, first, lens = native.compact_tables(bad)
        except (ValueError, TypeError, AttributeError):
            continue
        assert len(first) == len(bad) + 1 and len(packed) == first[-1] + 255


def _read_only(n):
    out = np.zeros(n, np.uint8)
    out.flags.writeable = False
    return out


def _raising(n):
    raise ValueError(f"no {n} bytes here")


# decode_all's alloc(size) callbacks that break its contract: a size off by one or two, another
# dtype, 2-D, strided (not C order), read-only, not an array, none, a raised error
BAD_ALLOCS = (lambda n: np.zeros(n + 1, np.uint8), lambda n: np.zeros(max(n - 1, 0), np.uint8),
              lambda n: np.zeros(2 * n + 2, np.uint8)[1::2], lambda n: np.zeros(n, np.int8),
              lambda n: np.zeros((1, n), np.uint8), lambda n: np.zeros(n, np.uint16),
              _read_only, lambda n: bytearray(n), lambda n: None, _raising)


def fuzz_alloc(case, clean_out):
    """decode_all with an alloc callback: a good one's array (exact, or a C-ordered view into a
    larger buffer) is the output, written in place; a bad one's is refused."""
    for view in (False, True):
        given = []

        def good(n, view=view, given=given):
            given.append(np.zeros(n + 16, np.uint8)[8 : 8 + n] if view else np.zeros(n, np.uint8))
            return given[-1]

        out, _ = case.fn(*case.fresh(), good)
        assert out is given[0] and np.array_equal(out, clean_out), ("alloc", view)
    for alloc in BAD_ALLOCS:
        expect_fine(case, case.fresh() + [alloc])
