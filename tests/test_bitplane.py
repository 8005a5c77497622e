"""Tests of fsstgpu.kernels.bitplane: the bit-plane integer codec, its CPU twin and GPU path.

GPU tests use a fresh seed from os.urandom (named in failures) and poison the memory pool first
so that unwritten output bytes show up.
"""

from __future__ import annotations

import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

from fsstgpu.errors import CorruptDataError
from fsstgpu.kernels.bitplane import (
    SUPERBLOCK,
    _raise_offsets_flags,
    bitplane_pack,
    bitplane_pack_cpu,
    bitplane_unpack,
    bitplane_unpack_cpu,
    bitplane_unpack_offsets,
    bitplane_unpack_offsets_cpu,
)
from fsstgpu.kernels.bitplane_cpu import Layout

sys.path.insert(0, str(Path(__file__).parent))
from gpu_poison import poison_pool, small_enough  # noqa: E402
from seeds import fresh_seed  # noqa: E402

INT_DTYPES = ["u1", "u2", "u4", "u8", "i1", "i2", "i4", "i8"]


# ------------------------------------------------------------------------------------------------
# CPU twin
# ------------------------------------------------------------------------------------------------

def _edge_values(dtype, n, rng):
    info = np.iinfo(dtype)
    pool = np.array([0, 1, info.max, info.min, info.max - 1, info.min + 1], dtype=dtype)
    out = rng.choice(pool, size=n)
    return out.astype(dtype)


def _case_seed(*case) -> int:
    """A fixed seed for each parametrisation: hash() of its str dtype changes with each
    process's PYTHONHASHSEED, so those seeds were fresh each run and named nowhere."""
    return zlib.crc32(repr(case).encode())


@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("delta", [False, True])
def test_bitplane_round_trip(dtype, delta):
    rng = np.random.default_rng(_case_seed(dtype, delta))
    info = np.iinfo(dtype)
    cases = [np.zeros(0, dtype), np.zeros(1, dtype), np.zeros(100, dtype),
             np.full(33, info.max, dtype), np.full(31, info.min, dtype),
             rng.integers(info.min, info.max, 1000, dtype=dtype, endpoint=True),
             rng.integers(0, 5, 777).astype(dtype),
             np.sort(rng.integers(0, min(info.max, 10 ** 6), 500)).astype(dtype),
             _edge_values(dtype, 257, rng)]
    for v in cases:
        buf = bitplane_pack_cpu(v, delta=delta)
        assert buf.dtype == np.uint8
        out = bitplane_unpack_cpu(buf)
        assert out.dtype == np.dtype(dtype) and np.array_equal(out, v), (dtype, delta, v[:5])
        assert np.array_equal(bitplane_unpack(buf.tobytes()), v)


# FBP1 bytes committed 2026-11 (the layout the blob codec stores): they must decode forever
FBP1_GOLDEN = "4642503101000000050000000000000003000000150000000600000010000000"
FBP2_GOLDEN = ("4642503201000000050000000000000003000000000000000000000000000000"
               "00000000000000000300000000000000" "0b00000000000000" "150000000600000010000000")


def test_bitplane_layout_golden():
    v = np.array([1, 2, 3, 0, 5], dtype=np.uint16)
    # FBP1 header: magic, code 1 (uint16), flags 0, n = 5; one group of width 3; 3 plane words
    assert bitplane_pack_cpu(v, version=1).tobytes().hex() == FBP1_GOLDEN
    assert bitplane_unpack_cpu(bytes.fromhex(FBP1_GOLDEN)).tolist() == [1, 2, 3, 0, 5]
    # FBP2: the count, padding to 24, index entries (0, 0) and totals (3 words, sum 11), words
    assert bitplane_pack_cpu(v).tobytes().hex() == FBP2_GOLDEN
    assert bitplane_unpack_cpu(bytes.fromhex(FBP2_GOLDEN)).tolist() == [1, 2, 3, 0, 5]
    d = bitplane_pack_cpu(np.array([5, 4, 6], dtype=np.int8), delta=True)
    # deltas 5, -1, 2 -> zigzag 10, 1, 4 -> width 4
    assert d[4] == 4 and d[5] == 3 and d[16] == 4
    assert bitplane_unpack_cpu(d).tolist() == [5, 4, 6]


def test_bitplane_sizes_follow_bit_widths():
    v = np.zeros(64, np.uint32)
    v[:32] = 7                                # group 0: 3 planes, group 1: none
    buf = bitplane_pack_cpu(v)
    assert buf[16:18].tolist() == [3, 0] and buf.size == 24 + 32 + 3 * 4
    assert bitplane_pack_cpu(v, version=1).size == 20 + 3 * 4
    lengths = np.random.default_rng(0).integers(0, 200, 10_000).astype(np.uint32)
    assert bitplane_pack_cpu(lengths).size < lengths.nbytes / 3.5


SIZES = [0, 1, 31, 32, 33, 4095, 4096, 4097, 3 * 4096 + 77]


@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("delta", [False, True])
def test_fbp2_round_trip_and_index(dtype, delta):
    rng = np.random.default_rng(_case_seed(dtype, delta, 2))
    info = np.iinfo(dtype)
    for n in SIZES:
        for v in (rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True),
                  rng.integers(0, 9, n).astype(dtype)):
            buf = bitplane_pack_cpu(v, delta=delta)
            assert np.array_equal(bitplane_unpack_cpu(buf), v), (dtype, delta, n)
            lay = Layout(n)
            index = buf[lay.index_start:lay.words_start].view("<u8").reshape(-1, 2)
            counts = buf[16:16 + lay.groups].astype(np.int64)
            uu = v.view(f"u{v.itemsize}")
            u = uu.astype(np.uint64)
            stored = np.diff(uu, prepend=uu.dtype.type(0)).astype(np.uint64) if delta else u
            for s in range(lay.sblocks + 1):
                assert int(index[s, 0]) == int(counts[:128 * s].sum())
                assert int(index[s, 1]) == int(stored[:SUPERBLOCK * s].sum(dtype=np.uint64))
                if delta and 0 < s and SUPERBLOCK * s <= n:
                    assert int(index[s, 1]) % 2 ** (8 * v.itemsize) == int(u[SUPERBLOCK * s - 1])
            assert buf.size == lay.words_start + 4 * int(index[-1, 0])


def test_fbp2_large_round_trip():
    rng = np.random.default_rng(7)
    v = np.sort(rng.integers(0, 10 ** 12, 1_000_003)).astype(np.int64)
    assert np.array_equal(bitplane_unpack_cpu(bitplane_pack_cpu(v, delta=True)), v)
    lengths = rng.integers(0, 300, 1_000_003).astype(np.uint16)
    buf = bitplane_pack_cpu(lengths)
    offs = bitplane_unpack_offsets_cpu(buf, wide=True)
    assert offs.dtype == np.int64 and offs[0] == 0 and np.array_equal(np.diff(offs), lengths)


def _corruptions(buf: np.ndarray, version: int = 2):
    b = buf.copy()
    n = int.from_bytes(b[8:16].tobytes(), "little")
    lay = Layout(n, version)
    yield "empty", b[:0]
    yield "short header", b[:10]
    bad = b.copy()
    bad[0] ^= 1
    yield "magic", bad
    bad = b.copy()
    bad[4] = 9
    yield "dtype code", bad
    bad = b.copy()
    bad[5] = 0x80
    yield "flags", bad
    bad = b.copy()
    bad[8:16] = np.frombuffer((10 ** 15).to_bytes(8, "little"), np.uint8)
    yield "huge n", bad
    yield "truncated words", b[:-4]
    yield "truncated byte", b[:-1]
    yield "trailing", np.concatenate([b, np.zeros(4, np.uint8)])
    bad = b.copy()
    bad[16] = 40                               # more planes than uint32 has
    yield "count too wide", bad
    bad = b.copy()
    bad[17] = bad[17] + 1                      # counts no longer match the length
    yield "count mismatch", bad
    if version == 2:
        for k in range(lay.index_start, lay.words_start, 3):   # every index byte region
            bad = b.copy()
            bad[k] ^= 0x10
            yield f"index byte {k}", bad
        bad = b.copy()
        bad[5] = 0                                 # uint32 with a zigzag flag dropped: fine
        yield from () if b[5] == 0 else [("zigzag flag", bad)]
        if lay.index_start > 16 + lay.groups:
            bad = b.copy()
            bad[16 + lay.groups] = 1
            yield "padding", bad
        bad = b.copy()
        # the whole word: a group's top plane is never zero, so this always changes the buffer
        # (zeroing only its last byte left it as it was when values 24-31 lacked the top bit)
        bad[lay.words_start + 4 * int(b[16]) - 4 : lay.words_start + 4 * int(b[16])] = 0
        yield "top plane zero", bad
        for k in range(lay.words_start, b.size, max(1, (b.size - lay.words_start) // 7)):
            bad = b.copy()
            bad[k] ^= 0x40                            # a value changes: the prefix sums see it
            yield f"word byte {k}", bad


def _corrupt_inputs(rng):
    return (rng.integers(1, 1000, 100).astype(np.uint32),
            rng.integers(1, 1000, 3 * 4096 + 5).astype(np.uint32))


def test_bitplane_corrupt_buffers_raise():
    for v in _corrupt_inputs(np.random.default_rng(3)):
        for version in (1, 2):
            buf = bitplane_pack_cpu(v, version=version)
            for what, bad in _corruptions(buf, version):
                try:
                    got = bitplane_unpack_cpu(bad)
                except CorruptDataError:
                    continue
                # a flipped word bit may still be a valid buffer only if the values moved by the
                # same amount elsewhere: never for one flip
                pytest.fail(f"{what} (v{version}, n={v.size}) decoded to {got[:4]}")


def test_bitplane_bits_past_n_rejected():
    buf = bitplane_pack_cpu(np.full(5, 3, np.uint8))
    lay = Layout(5)
    buf[lay.words_start + 3] |= 0x80            # value 31 of the group, past n = 5
    with pytest.raises(CorruptDataError, match="past"):
        bitplane_unpack_cpu(buf)


def test_offsets_twin():
    rng = np.random.default_rng(11)
    for n in SIZES:
        for dtype in ("u1", "u2", "u4", "u8"):
            lengths = rng.integers(0, 200, n).astype(dtype)
            buf = bitplane_pack_cpu(lengths)
            want = np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)])
            for wide in (False, True):
                got = bitplane_unpack_offsets_cpu(buf, wide=wide)
                assert got.dtype == (np.int64 if wide else np.int32)
                assert np.array_equal(got, want), (n, dtype, wide)
                out = np.full(8 * n + 40, 0xAB, np.uint8)
                got = bitplane_unpack_offsets_cpu(buf, out, byte_offset=16, wide=wide)
                end = 16 + got.nbytes
                assert np.array_equal(got, want)
                assert (out[:16] == 0xAB).all() and (out[end:] == 0xAB).all()
            assert np.array_equal(bitplane_unpack_offsets_cpu(
                bitplane_pack_cpu(lengths, version=1)), want)


def test_offsets_twin_errors():
    big = np.full(3, 2 ** 30, np.uint32)
    with pytest.raises(ValueError, match="wide=True"):
        bitplane_unpack_offsets_cpu(bitplane_pack_cpu(big))
    assert bitplane_unpack_offsets_cpu(bitplane_pack_cpu(big), wide=True)[-1] == 3 * 2 ** 30
    huge = np.full(3, 2 ** 63 - 1, np.uint64)
    with pytest.raises(ValueError) as info:
        bitplane_unpack_offsets_cpu(bitplane_pack_cpu(huge), wide=True)
    assert "use wide=True" not in str(info.value)   # it is on (the GPU path words it so too)
    with pytest.raises(CorruptDataError, match="without delta"):
        bitplane_unpack_offsets_cpu(bitplane_pack_cpu(np.arange(5, dtype=np.uint8), delta=True))
    with pytest.raises(CorruptDataError, match="without delta"):
        bitplane_unpack_offsets_cpu(bitplane_pack_cpu(np.arange(5, dtype=np.int8)))
    buf = bitplane_pack_cpu(np.arange(5, dtype=np.uint8))
    with pytest.raises(ValueError, match="do not fit"):
        bitplane_unpack_offsets_cpu(buf, np.zeros(20, np.uint8), byte_offset=4)
    with pytest.raises(ValueError, match="multiple of 8"):
        bitplane_unpack_offsets_cpu(buf, np.zeros(100, np.uint8), byte_offset=4, wide=True)
    for what, bad in _corruptions(bitplane_pack_cpu(np.arange(1, 101, dtype=np.uint32))):
        with pytest.raises(CorruptDataError):
            bitplane_unpack_offsets_cpu(bad)
            pytest.fail(what)


def _past_2_64(where: int) -> np.ndarray:
    """uint64 lengths of a writer's buffer whose running sum passes 2**64 in superblock
    ``where`` (small lengths before it): the offsets kernel's saturating sum then differs from
    the wrapping prefix the writer stored."""
    v = np.full(where * SUPERBLOCK + 5, 3, np.uint64)
    v[-5:] = 2 ** 63 - 1
    return v


def _wrong_prefix(buf: np.ndarray) -> np.ndarray:
    """``buf`` with its last stored prefix sum (the index's last u64) changed: corrupt."""
    n = int.from_bytes(buf[8:16].tobytes(), "little")
    bad = buf.copy()
    bad[Layout(n).words_start - 8] ^= 1
    return bad


def _error(f) -> tuple:
    try:
        f()
    except ValueError as exc:
        return type(exc), str(exc)
    return None, None


@pytest.mark.parametrize("where", [0, 2])
@pytest.mark.parametrize("wide", [True, False])
def test_offsets_flags_of_a_sum_past_2_64_are_settled_by_the_twin(where, wide):
    # bits 8 | 64 are what the offsets kernel sets for a writer's lengths summing past 2**64
    # (its saturating sum differs from the wrapped prefix) and for a wrong prefix of lengths
    # that overflow too: they raised CorruptDataError for both, where the twin raises the
    # overflow ValueError for the first
    good = bitplane_pack_cpu(_past_2_64(where))
    bad = _wrong_prefix(good)
    for buf in (good, bad):
        expected = _error(lambda b=buf: bitplane_unpack_offsets_cpu(b, wide=wide))
        got = _error(lambda b=buf: _raise_offsets_flags(8 | 64, lambda b=b: b, wide))
        assert got == expected, (where, wide)
    assert _error(lambda: bitplane_unpack_offsets_cpu(good, wide=wide))[0] is ValueError
    assert _error(lambda: bitplane_unpack_offsets_cpu(bad, wide=wide))[0] is CorruptDataError


def test_offsets_flags_that_say_enough_read_nothing_back():
    def nothing():
        raise AssertionError("the buffer was read back")

    for bits, error in [(64, ValueError), (8, CorruptDataError), (8 | 64 | 1, CorruptDataError),
                        (4 | 64, CorruptDataError), (16, CorruptDataError)]:
        assert _error(lambda b=bits: _raise_offsets_flags(b, nothing, True))[0] is error, bits
    _raise_offsets_flags(0, nothing, False)


def test_offsets_twin_refuses_strided_out_untouched():
    # a strided out used to be written, then refused by the view (a bare numpy message)
    buf = bitplane_pack_cpu(np.array([3, 0, 2], np.uint8))
    base = np.full(41, 0xAB, np.uint8)
    for out in (base[::2], base[::-1]):
        with pytest.raises(ValueError, match="contiguous"):
            bitplane_unpack_offsets_cpu(buf, out)
        assert (base == 0xAB).all()


def test_bitplane_whole_number_arguments():
    # a bool version was layout 1 (True == 1), a bool byte_offset byte 0 or 1
    v = np.array([3, 0, 2], np.uint8)
    with pytest.raises(ValueError, match="version"):
        bitplane_pack_cpu(v, version=True)
    buf = bitplane_pack_cpu(v)
    for offset in (True, False, 8.0):
        with pytest.raises(TypeError):
            bitplane_unpack_offsets_cpu(buf, np.zeros(64, np.uint8), byte_offset=offset)
    got = bitplane_unpack_offsets_cpu(buf, np.zeros(64, np.uint8), byte_offset=np.int64(8))
    assert got.tolist() == [0, 3, 3, 5]


def test_bitplane_type_errors():
    with pytest.raises(TypeError):
        bitplane_pack(np.zeros(3, np.float32))
    with pytest.raises(TypeError):
        bitplane_pack(np.zeros(3, bool))
    with pytest.raises(ValueError):
        bitplane_pack(np.zeros((2, 2), np.int32))
    with pytest.raises(TypeError):
        bitplane_unpack(np.zeros(20, np.int32))


# ------------------------------------------------------------------------------------------------
# GPU against the twin
# ------------------------------------------------------------------------------------------------

def _codec_inputs(dtype, rng):
    """Bit-plane codec inputs: empty, zeros, full range, small, edge values, sorted."""
    info = np.iinfo(dtype)
    return (np.zeros(0, dtype), np.zeros(5, dtype),
            rng.integers(info.min, info.max, 100_003, dtype=dtype, endpoint=True),
            rng.integers(0, 300, 70_001).astype(dtype), _edge_values(dtype, 4099, rng),
            np.sort(rng.integers(0, min(info.max, 10 ** 6), 9_999)).astype(dtype))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("delta", [False, True])
def test_gpu_bitplane_matches_cpu(dtype, delta):
    import cupy as cp

    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    for v in (*_codec_inputs(dtype, rng), rng.integers(0, 3, 1_000_003).astype(dtype),
              np.sort(rng.integers(0, min(info.max, 10 ** 6), 2_000_001)).astype(dtype)):
        if not small_enough(v.size):
            continue
        poison_pool(cp)
        ref = bitplane_pack_cpu(v, delta=delta)
        got = bitplane_pack(cp.asarray(v), delta=delta)
        assert np.array_equal(cp.asnumpy(got), ref), (dtype, delta, v.size, seed)
        poison_pool(cp)
        back = bitplane_unpack(cp.asarray(ref))
        assert back.dtype == np.dtype(dtype)
        assert np.array_equal(cp.asnumpy(back), v), (dtype, delta, v.size, seed)


@pytest.mark.gpu
def test_gpu_bitplane_corrupt_buffers_raise():
    import cupy as cp

    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    for v in (*_corrupt_inputs(rng), rng.integers(1, 1000, 50_000).astype(np.uint32)):
        for version in (1, 2):
            buf = bitplane_pack_cpu(v, version=version)
            for what, bad in _corruptions(buf, version):
                with pytest.raises(CorruptDataError):
                    bitplane_unpack(cp.asarray(bad))
                    pytest.fail(f"{what} (v{version}, n={v.size}, seed {seed})")
                if version == 2 and bad.size >= 16 and what not in ("magic", "dtype code"):
                    with pytest.raises((CorruptDataError, ValueError)):
                        bitplane_unpack(cp.asarray(bad), count=v.size, dtype=v.dtype)
                        pytest.fail(f"{what} with count (n={v.size}, seed {seed})")
                    with pytest.raises((CorruptDataError, ValueError)):
                        bitplane_unpack_offsets(cp.asarray(bad))
                        pytest.fail(f"{what} offsets (n={v.size}, seed {seed})")


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("delta", [False, True])
def test_gpu_bitplane_sizes_and_no_sync_paths(dtype, delta):
    import cupy as cp

    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    for n in (*SIZES, 1 << 20):
        v = rng.integers(info.min, info.max, n, dtype=dtype, endpoint=True) if n % 2 else \
            rng.integers(0, 40, n).astype(dtype)
        ref = bitplane_pack_cpu(v, delta=delta)
        poison_pool(cp)
        big, nbytes = bitplane_pack(cp.asarray(v), delta=delta, trim=False)
        assert isinstance(nbytes, cp.ndarray) and nbytes.shape == () and nbytes.dtype == cp.int64
        size = int(nbytes)
        assert size == ref.size and big.size >= size, (dtype, delta, n, seed)
        assert np.array_equal(cp.asnumpy(big[:size]), ref), (dtype, delta, n, seed)
        poison_pool(cp)
        back = bitplane_unpack(cp.asarray(ref), count=n, dtype=v.dtype, check=False)
        assert np.array_equal(cp.asnumpy(back), v), (dtype, delta, n, seed)
        back = bitplane_unpack(cp.asarray(bitplane_pack_cpu(v, delta=delta, version=1)))
        assert np.array_equal(cp.asnumpy(back), v), ("FBP1", dtype, delta, n, seed)


@pytest.mark.gpu
def test_gpu_unpack_count_is_a_whole_number():
    """``count`` (with ``dtype``, the no-copy path) is a caller's argument: a negative, float or
    bool count is refused as one, before any allocation."""
    import cupy as cp

    buf = cp.asarray(bitplane_pack_cpu(np.arange(100, dtype=np.uint32)))
    for bad, error in ((-1, ValueError), (100.0, TypeError), (True, TypeError)):
        for unpack in (bitplane_unpack, bitplane_unpack_offsets):
            with pytest.raises(error):
                unpack(buf, count=bad, dtype=np.uint32)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["u1", "u2", "u4", "u8"])
def test_gpu_offsets_match_twin_and_keep_poison(dtype):
    import cupy as cp

    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    for n in (*SIZES, 1_000_003):
        lengths = rng.integers(0, 250, n).astype(dtype)
        buf = bitplane_pack_cpu(lengths)
        for wide in (False, True):
            for byte_offset in (0, 8, 24):
                ref = np.full(8 * n + 64, 0xAB, np.uint8)
                bitplane_unpack_offsets_cpu(buf, ref, byte_offset=byte_offset, wide=wide)
                out = cp.full(ref.size, 0xAB, cp.uint8)
                got = bitplane_unpack_offsets(cp.asarray(buf), out, byte_offset=byte_offset,
                                              wide=wide)
                assert got.dtype == (np.int64 if wide else np.int32)
                assert np.array_equal(cp.asnumpy(out), ref), (dtype, n, wide, byte_offset, seed)
                fast = bitplane_unpack_offsets(cp.asarray(buf), count=n, dtype=lengths.dtype,
                                               wide=wide, check=False)
                assert np.array_equal(cp.asnumpy(fast), cp.asnumpy(got)), (dtype, n, seed)


@pytest.mark.gpu
def test_gpu_offsets_overflow():
    import cupy as cp

    big = bitplane_pack_cpu(np.full(5000, 2 ** 20, np.uint32))
    with pytest.raises(ValueError, match="wide=True"):
        bitplane_unpack_offsets(cp.asarray(big))
    assert int(bitplane_unpack_offsets(cp.asarray(big), wide=True)[-1]) == 5000 * 2 ** 20
    huge = bitplane_pack_cpu(np.full(9000, 2 ** 62, np.uint64))
    with pytest.raises(ValueError):
        bitplane_unpack_offsets(cp.asarray(huge), wide=True)
    with pytest.raises(CorruptDataError):
        bitplane_unpack_offsets(cp.asarray(bitplane_pack_cpu(np.arange(9, dtype=np.uint8),
                                                             delta=True)))


@pytest.mark.gpu
@pytest.mark.parametrize("where", [0, 2])
@pytest.mark.parametrize("wide", [True, False])
def test_gpu_offsets_sum_past_2_64_raises_as_the_twin(where, wide):
    # the writer's lengths summing past 2**64 came out as CorruptDataError ("prefix sums do
    # not match") where the twin raises the overflow ValueError; a wrong prefix stays corrupt
    import cupy as cp

    good = bitplane_pack_cpu(_past_2_64(where))
    for buf in (good, _wrong_prefix(good)):
        expected = _error(lambda b=buf: bitplane_unpack_offsets_cpu(b, wide=wide))
        assert expected[0] is not None
        for count in (None, len(_past_2_64(where))):   # header read back, or checked by the kernel
            got = _error(lambda b=buf, c=count: bitplane_unpack_offsets(
                cp.asarray(b), wide=wide, count=c, dtype=None if c is None else np.uint64))
            assert got == expected, (where, wide, count)


@pytest.mark.parametrize("width", [1, 2, 4, 8])
def test_planes_to_values_matches_bit_by_bit(width):
    """The CPU unpack's byte-lookup decode of plane words, against the definition (value i's
    bit b is bit i of its group's plane b) on random words and plane counts 0..8 * width."""
    from fsstgpu.kernels.bitplane_cpu import _planes_to_values

    rng = np.random.default_rng(width)
    ut = np.dtype(f"<u{width}")
    counts = rng.integers(0, 8 * width + 1, 300)
    begins = np.concatenate(([0], np.cumsum(counts)[:-1]))
    words = rng.integers(0, 2**32, int(counts.sum()), dtype=np.uint64).astype("<u4")
    want = np.zeros((counts.size, 32), np.uint64)
    for g, (b0, c) in enumerate(zip(begins, counts, strict=True)):
        for b in range(c):
            bits = (int(words[b0 + b]) >> np.arange(32)) & 1
            want[g] |= bits.astype(np.uint64) << np.uint64(b)
    got = _planes_to_values(words, begins, counts, ut)
    assert got.dtype == ut and np.array_equal(got.astype(np.uint64), want)


class _StridedDevice:
    """What ``_device_buffer`` sees of a strided 1-D uint8 device view at an aligned address."""

    dtype, ndim, shape, size = np.dtype(np.uint8), 1, (64,), 64
    flags = type("Flags", (), {"c_contiguous": False})()
    data = type("Pointer", (), {"ptr": 4096})()

    def copy(self):
        return "contiguous copy"


def test_device_buffers_the_kernels_read_whole_are_contiguous():
    """The unpack kernels read ``buf.size`` bytes from the buffer's address: a strided view
    (``buf[::2]``) was read as the bytes under it, a reversed one (``buf[::-1]``) past its
    allocation. Such a view is now copied first (host metadata only: no GPU needed)."""
    from fsstgpu.kernels.bitplane import _device_buffer

    assert _device_buffer(np, _StridedDevice(), "bitplane_unpack") == "contiguous copy"


@pytest.mark.gpu
def test_gpu_unpack_strided_and_reversed_views():
    """A packed buffer held by a strided or reversed view decodes as its contiguous copy does
    (both decoders, with the header read back and with ``count``/``dtype``), and the output is
    never read from the memory under the view."""
    import cupy as cp

    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    lengths = rng.integers(0, 300, 70_001).astype(np.uint16)
    buf = bitplane_pack_cpu(lengths)
    offsets = bitplane_unpack_offsets_cpu(buf)
    spaced = cp.full(2 * buf.size, 0xAB, cp.uint8)
    spaced[::2] = cp.asarray(buf)
    reversed_ = cp.asarray(buf[::-1].copy())[::-1]
    for what, view in (("strided", spaced[::2]), ("reversed", reversed_)):
        assert not view.flags.c_contiguous and np.array_equal(cp.asnumpy(view), buf)
        for given in ({}, {"count": lengths.size, "dtype": lengths.dtype}):
            poison_pool(cp)
            got = bitplane_unpack(view, **given)
            assert np.array_equal(cp.asnumpy(got), lengths), (what, given, seed)
            got = bitplane_unpack_offsets(view, **given)
            assert np.array_equal(cp.asnumpy(got), offsets), (what, given, seed)


@pytest.mark.gpu
def test_gpu_offsets_err_flag_must_be_int32():
    """``err`` gets 4 bytes ORed at its address: a narrower array (uint8) had 3 bytes past it
    written; it is refused, as an empty one is."""
    import cupy as cp

    buf = cp.asarray(bitplane_pack_cpu(np.arange(100, dtype=np.uint32)))
    for bad in (cp.zeros(1, cp.uint8), cp.zeros(1, cp.int16), cp.zeros(0, cp.int32)):
        with pytest.raises(TypeError):
            bitplane_unpack_offsets(buf, count=100, dtype=np.uint32, check=False, err=bad)
    err = cp.zeros(1, cp.int32)
    got = bitplane_unpack_offsets(buf, count=100, dtype=np.uint32, check=False, err=err)
    assert int(err[0]) == 0 and int(got[-1]) == sum(range(100))
