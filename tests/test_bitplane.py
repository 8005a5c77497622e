"""Tests of fsstgpu.kernels.bitplane: the bit-plane integer codec, its CPU twin and GPU path.

GPU tests use a fresh seed from os.urandom (named in failures) and poison the memory pool first
so that unwritten output bytes show up.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from fsstgpu.errors import CorruptDataError
from fsstgpu.kernels.bitplane import (
    bitplane_pack,
    bitplane_pack_cpu,
    bitplane_unpack,
    bitplane_unpack_cpu,
)

INT_DTYPES = ["u1", "u2", "u4", "u8", "i1", "i2", "i4", "i8"]


def _seed() -> int:
    return int.from_bytes(os.urandom(8), "little")


# ------------------------------------------------------------------------------------------------
# CPU twin
# ------------------------------------------------------------------------------------------------

def _edge_values(dtype, n, rng):
    info = np.iinfo(dtype)
    pool = np.array([0, 1, info.max, info.min, info.max - 1, info.min + 1], dtype=dtype)
    out = rng.choice(pool, size=n)
    return out.astype(dtype)


@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("delta", [False, True])
def test_bitplane_round_trip(dtype, delta):
    rng = np.random.default_rng(abs(hash((dtype, delta))) % 2 ** 32)
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


def test_bitplane_layout_golden():
    v = np.array([1, 2, 3, 0, 5], dtype=np.uint16)
    buf = bitplane_pack_cpu(v)
    # header: magic, code 1 (uint16), flags 0, n = 5; one group of width 3; 3 plane words
    assert buf.tobytes().hex() == (
        "46425031" "01000000" "0500000000000000" "03000000"
        "15000000" "06000000" "10000000")
    d = bitplane_pack_cpu(np.array([5, 4, 6], dtype=np.int8), delta=True)
    # deltas 5, -1, 2 -> zigzag 10, 1, 4 -> width 4
    assert d[4] == 4 and d[5] == 3 and d[16] == 4
    assert bitplane_unpack_cpu(d).tolist() == [5, 4, 6]


def test_bitplane_sizes_follow_bit_widths():
    v = np.zeros(64, np.uint32)
    v[:32] = 7                                # group 0: 3 planes, group 1: none
    buf = bitplane_pack_cpu(v)
    assert buf[16:18].tolist() == [3, 0] and buf.size == 20 + 3 * 4
    lengths = np.random.default_rng(0).integers(0, 200, 10_000).astype(np.uint32)
    assert bitplane_pack_cpu(lengths).size < lengths.nbytes / 3.5


def _corruptions(buf: np.ndarray):
    b = buf.copy()
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


def test_bitplane_corrupt_buffers_raise():
    v = np.random.default_rng(3).integers(0, 1000, 100).astype(np.uint32)
    buf = bitplane_pack_cpu(v)
    for what, bad in _corruptions(buf):
        with pytest.raises(CorruptDataError):
            bitplane_unpack_cpu(bad)
            pytest.fail(what)


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

def _poison_pool(cp, nbytes=64 << 20):
    """Fill the pool's free memory with 0xAB so that bytes a kernel forgot to write show up."""
    junk = cp.full(nbytes, 0xAB, dtype=cp.uint8)
    del junk


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

    seed = _seed()
    rng = np.random.default_rng(seed)
    info = np.iinfo(dtype)
    for v in (*_codec_inputs(dtype, rng), rng.integers(0, 3, 1_000_003).astype(dtype),
              np.sort(rng.integers(0, min(info.max, 10 ** 6), 2_000_001)).astype(dtype)):
        _poison_pool(cp)
        ref = bitplane_pack_cpu(v, delta=delta)
        got = bitplane_pack(cp.asarray(v), delta=delta)
        assert np.array_equal(cp.asnumpy(got), ref), (dtype, delta, v.size, seed)
        _poison_pool(cp)
        back = bitplane_unpack(cp.asarray(ref))
        assert back.dtype == np.dtype(dtype)
        assert np.array_equal(cp.asnumpy(back), v), (dtype, delta, v.size, seed)


@pytest.mark.gpu
def test_gpu_bitplane_corrupt_buffers_raise():
    import cupy as cp

    rng = np.random.default_rng(_seed())
    for v in (rng.integers(0, 1000, 100).astype(np.uint32),
              rng.integers(0, 1000, 50_000).astype(np.uint32)):
        buf = bitplane_pack_cpu(v)
        for what, bad in _corruptions(buf):
            with pytest.raises(CorruptDataError):
                bitplane_unpack(cp.asarray(bad))
                pytest.fail(what)
