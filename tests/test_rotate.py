"""Tests of fsstgpu.kernels.rotate: the plan and the short pass's scratch layout (product code
both paths run), the NumPy twin against numpy.roll, and the GPU kernels against the twin.

GPU tests draw a fresh seed from os.urandom and name it in failure messages.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from fsstgpu.kernels import rotate as rmod
from fsstgpu.kernels.rotate import plan, rotate, rotate_cpu

DTYPES = [np.uint8, np.uint16, np.int32, np.float64, np.complex128]


def _seed() -> int:
    return int.from_bytes(os.urandom(8), "little")


def _random(n, dtype, seed):
    raw = np.random.default_rng(seed).integers(0, 256, size=n * np.dtype(dtype).itemsize,
                                               dtype=np.uint8)
    return raw.view(dtype)


def _adversarial_ks(n: int, tile: int = 4096) -> list[int]:
    ks = {0, 1, 2, n - 1, n - 2, n // 2, n // 2 + 1, n // 3, n // 3 + 1, 2 * n // 3, n, n + 3,
          -1, -n // 3, 3 * n + 7, 1000, 4096 * 3 + 5, 7919, tile - 1, tile, tile + 1,
          2 * tile - 1, 2 * tile + 1}
    return sorted(k for k in ks)


# ------------------------------------------------------------------------------------------------
# Plan
# ------------------------------------------------------------------------------------------------

def _apply_plan(n, shift):
    """Run the plan's passes with numpy.roll on their byte ranges, checking each pass's shape:
    what the kernels may assume (scratch bounds, lanes, shared memory of a column block)."""
    buf = np.arange(n, dtype=np.int64)
    for step in plan(n, shift):
        _, off, length, d, left = step[:5]
        assert 0 <= off and off + length <= n and 0 < d < length
        if step[0] == "short":
            assert d <= rmod.SCRATCH_BYTES
        else:
            lanes, rem = step[5], step[6]
            assert length == lanes * d + rem and lanes <= rmod.LMAX and rem <= rmod.SCRATCH_BYTES
            width = rmod.column_width(lanes)
            assert width >= rmod.COLUMN_MIN_W and width % 16 == 0
            assert (lanes + 1) * (width + 48) <= rmod.COLUMN_SMEM
        part = buf[off:off + length]
        part[:] = np.roll(part, -d if left else d)
    return buf


@pytest.mark.parametrize("n", [2, 3, 17, 1000, 10 ** 6 + 3, (1 << 30) + 1, 1 << 34])
def test_plan_is_a_rotation(n):
    S = rmod.SCRATCH_BYTES
    ks = {1, n - 1, n // 2, n // 3, n // 3 + 1, S, S + 1, n // 7, n // 200 + 1, 2 * n // 5 + 3,
          n // (rmod.LMAX + 5) + 11, (n * 5) // 8 + 1}
    for k in sorted(k for k in ks if 0 < k < n):
        steps = plan(n, k)
        # one pass per LMAX - 1 lanes, plus a Euclid-like tail
        assert len(steps) <= 64 + n // ((rmod.LMAX - 1) * min(k, n - k)), (n, k, len(steps))
        if n <= 10 ** 7:
            assert np.array_equal(_apply_plan(n, k), np.roll(np.arange(n), -k)), (n, k)
        # traffic bound: within LMAX/(LMAX-1) of one pass plus a geometric tail
        assert sum(s[2] for s in steps) <= 3 * n


def test_plan_single_pass_for_benchmark_shifts():
    for es, n in ((4, 1 << 28), (1, 1 << 30)):
        for k in (1, 1000, 4096 * 3 + 5, n // 3, n // 2, n - 1):
            assert len(plan(n * es, k * es)) == 1, (es, k)


def test_plan_trivial():
    assert plan(0, 5) == [] and plan(1, 5) == [] and plan(10, 0) == [] and plan(10, 30) == []


@pytest.mark.parametrize("left", [True, False])
def test_short_scratch_layout(left):
    """The copy of old bytes the short kernel reads instead of the array: inside the scratch
    buffer, aligned like the array, and holding old byte (v mod nb) at virtual position v."""
    rng = np.random.default_rng(17)
    for _ in range(500):
        nb = int(rng.integers(2, 1 << 24))
        d = int(rng.integers(1, min(nb - 1, rmod.SCRATCH_BYTES) + 1))
        base = int(rng.integers(0, 1 << 40))
        scratch_ptr = int(rng.integers(0, 1 << 40)) & ~0xFF          # allocations: 256-aligned
        pad, sbase, fills = rmod.short_scratch(nb, d, left, base, scratch_ptr)
        v0 = nb - 16 if left else -d - 16
        assert 0 <= pad < 16 and pad + d + 32 <= rmod.SCRATCH_BYTES + 64
        assert (sbase + v0) % (1 << 64) == scratch_ptr + pad
        assert (sbase - base) % 16 == 0
        for s_off, a_off, ln in fills:
            assert pad <= s_off and s_off + ln <= pad + d + 32 and 0 <= a_off <= nb - ln
            assert (s_off - pad + v0) % nb == a_off
        # the d wrapped bytes, plus the (up to) 16 bytes across the array's edge that share
        # aligned words with them
        covered = sum(ln for _, _, ln in fills)
        assert covered == d + min(16, nb)


# ------------------------------------------------------------------------------------------------
# CPU twin
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 2, 3, 7, 100, 4096, 4097, 3 * 4096 - 1, 10007])
def test_rotate_cpu_matches_roll(dtype, n):
    x0 = _random(n, dtype, 7 + n)
    for k in _adversarial_ks(n):
        x = x0.copy()
        out = rotate_cpu(x, k)
        assert out is x
        assert np.array_equal(x.view(np.uint8), np.roll(x0, -k).view(np.uint8)), (n, k)


def test_rotate_cpu_multi_pass_plan():
    # shifts that need several passes (lanes > LMAX, remainder > scratch) on a few MB of bytes
    n = 3 * rmod.SCRATCH_BYTES * 4 + 12345
    x0 = _random(n, np.uint8, 3)
    assert len(plan(n, n // 2 - rmod.SCRATCH_BYTES - 77)) >= 2
    assert len(plan(n, 2 * n // 5 + 1)) >= 2
    for k in (rmod.SCRATCH_BYTES + 1, n // 2 - rmod.SCRATCH_BYTES - 77, 2 * n // 5 + 1, -n // 3):
        x = x0.copy()
        rotate_cpu(x, k)
        assert np.array_equal(x, np.roll(x0, -k)), k


def test_rotate_dispatch_and_errors():
    x = np.arange(10, dtype=np.int16)
    assert rotate(x, 3) is x and x[0] == 3
    rotate(np.zeros(0, np.int8), 5)                        # empty: no-op
    with pytest.raises(ValueError):
        rotate(np.zeros((2, 2)), 1)
    with pytest.raises(ValueError):
        rotate(np.arange(10)[::2], 1)
    with pytest.raises(TypeError):
        rotate([1, 2, 3], 1)
    with pytest.raises(TypeError):
        rotate(np.arange(4), 1.5)
    with pytest.raises(TypeError):
        rotate(np.array([None, 1], dtype=object), 1)


# ------------------------------------------------------------------------------------------------
# GPU against the twin
# ------------------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_gpu_rotate_adversarial(dtype):
    import cupy as cp

    seed = _seed()
    es = np.dtype(dtype).itemsize
    tile_elems = rmod.SHORT_TILE // es
    for n in (1, 2, 3, 100, tile_elems, tile_elems + 1, 3 * tile_elems - 1, 5 * tile_elems + 7,
              100003, 1 << 20):
        x0 = _random(n, dtype, seed + n)
        ks = _adversarial_ks(n, tile_elems) + [rmod.SCRATCH_BYTES // es + 1, n // 5 + 3]
        for k in ks:
            x = cp.asarray(x0)
            assert rotate(x, k) is x
            expect = rotate_cpu(x0.copy(), k)
            assert np.array_equal(cp.asnumpy(x).view(np.uint8), expect.view(np.uint8)), \
                (dtype, n, k, seed)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype,n", [(np.uint8, 100_000_007), (np.int32, 25_000_003)])
def test_gpu_rotate_larger_than_l2(dtype, n):
    """Short, column and multi-pass plans on arrays larger than the L2 cache."""
    import cupy as cp

    seed = _seed()
    x0 = _random(n, dtype, seed)
    for k in (1, 1000, 4096 * 3 + 5, n // 3, n // 2, n - 1, 2 * n // 5 + 1,
              rmod.SCRATCH_BYTES + 9, -(n // 7), n // 60 + 1):
        x = cp.asarray(x0)
        rotate(x, k)
        assert np.array_equal(cp.asnumpy(x), np.roll(x0, -k)), (dtype, n, k, seed)


@pytest.mark.gpu
def test_gpu_rotate_offset_views_stream_and_neighbours():
    import cupy as cp

    seed = _seed()
    n = 2_000_000
    host = _random(n + 100, np.uint8, seed)
    # short pass left and right, column pass left (2 lanes, remainder 6) and right
    for k in (12_345, -7, 999_997, 1_200_000):
        assert len(plan(n, k)) == 1
        for off in (1, 3, 7, 15):
            base = cp.asarray(host)
            x = base[off:off + n]
            x0 = cp.asnumpy(x)
            s = cp.cuda.Stream()
            rotate(x, k, stream=s)
            s.synchronize()
            assert np.array_equal(cp.asnumpy(x), np.roll(x0, -k)), (off, k, seed)
            # the bytes around the view are untouched (aligned-word loads never write)
            whole = cp.asnumpy(base)
            assert np.array_equal(whole[:off], host[:off]), (off, k, seed)
            assert np.array_equal(whole[off + n:], host[off + n:]), (off, k, seed)


@pytest.mark.gpu
def test_gpu_rotate_wait_timeout_raises():
    """A 1 ns bound on the short pass's waits makes every wait that is not already satisfied give
    up: the kernel must finish and rotate raise DeviceError (or, if no wait ever spun, return
    the right answer); it must never hang or return garbage silently."""
    import cupy as cp

    from fsstgpu.errors import DeviceError

    x0 = _random(1 << 24, np.uint8, _seed())
    x = cp.asarray(x0)
    try:
        rotate(x, 1, timeout=1e-9)
    except DeviceError:
        return
    assert np.array_equal(cp.asnumpy(x), np.roll(x0, -1))
