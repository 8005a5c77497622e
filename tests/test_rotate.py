"""Tests of fsstgpu.kernels.rotate: the plan and the short pass's scratch layout (product code
both paths run), the NumPy twin against numpy.roll, and the GPU kernels against the twin.

GPU tests draw a fresh seed from os.urandom and name it in failure messages.
"""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from fsstgpu.kernels import rotate as rmod
from fsstgpu.kernels.rotate import plan, rotate, rotate_cpu

sys.path.insert(0, str(Path(__file__).parent))
from seeds import fresh_seed  # noqa: E402

DTYPES = [np.uint8, np.uint16, np.int32, np.float64, np.complex128]


def _random(n, dtype, seed):
    raw = np.random.default_rng(seed).integers(0, 256, size=n * np.dtype(dtype).itemsize,
                                               dtype=np.uint8)
    return raw.view(dtype)


def _adversarial_ks(n: int, tile: int = rmod.SHORT_TILE, es: int = 1) -> list[int]:
    """Shifts (elements) around the edges the kernels care about: tiny, halves, thirds, tile and
    16-byte boundaries, the short/column threshold SHORT_DMAX and the scratch size."""
    dmax, s = rmod.SHORT_DMAX // es, rmod.SCRATCH_BYTES // es
    ks = {0, 1, 2, 15, 16, 17, n - 1, n - 2, n // 2, n // 2 + 1, n // 3, n // 3 + 1, 2 * n // 3,
          n, n + 3, -1, -n // 3, 3 * n + 7, 1000, 4096 * 3 + 5, 7919, tile - 1, tile, tile + 1,
          2 * tile - 1, 2 * tile + 1, dmax - 1, dmax, dmax + 1, -dmax, -dmax - 1, s, s + 1,
          n - dmax, n - dmax - 1, n // 5 + 3, 2 * n // 5 + 1}
    return sorted(ks)


def _kinds(steps) -> list[str]:
    """Pass kinds of a plan: short, stash (column with saved lane 0), chain (column)."""
    return [s[0] if s[0] == "short" else ("stash" if rmod.column_stash(s[3], s[6]) else "chain")
            for s in steps]


# ------------------------------------------------------------------------------------------------
# Plan
# ------------------------------------------------------------------------------------------------

SMEM_PER_BLOCK = 227 * 1024          # sm_90 opt-in shared memory of one block


def _check_step(step, n):
    """What the kernels assume of a pass (scratch bounds, shared memory, lanes, layout)."""
    _, off, length, d, left = step[:5]
    assert 0 <= off and off + length <= n and 0 < d and 2 * d <= length
    if step[0] == "short":
        assert d <= rmod.SHORT_DMAX
        ns = rmod.PREFETCH + 1 + -(-d // rmod.SHORT_TILE)
        assert ns * rmod.SHORT_TILE + 16 <= SMEM_PER_BLOCK
        assert 16 + d + 32 <= rmod.SCRATCH_BYTES + 64
        return
    assert step[0] == "column"
    lanes, rem = step[5], step[6]
    assert d > rmod.SHORT_DMAX and lanes >= 2 and length == lanes * d + rem
    assert rem <= rmod.SCRATCH_BYTES
    for blocks in (1, 7, 132 * 4, 10 ** 6):
        w, g = rmod.column_layout(d, lanes, rem, blocks)
        ncols = -(-d // w)
        assert w % 16 == 0 and 16 <= w <= rmod.LANE_W and (ncols - 1) * w < d
        assert rmod.column_smem(w, lanes) <= rmod.LANE_SMEM <= 48 * 1024 - 256
        assert 1 <= g <= max(1, (lanes - 1) // rmod.LANE_MIN_SEG)
        if not rmod.column_stash(d, rem):
            assert g == 1
        if g > 1:
            assert ncols * g <= blocks


def _apply_plan(n, shift):
    """Run the plan's passes with numpy.roll on their byte ranges, checking each pass's shape."""
    buf = np.arange(n, dtype=np.int64)
    for step in plan(n, shift):
        _check_step(step, n)
        _, off, length, d, left = step[:5]
        part = buf[off:off + length]
        part[:] = np.roll(part, -d if left else d)
    return buf


@pytest.mark.parametrize("n", [2, 3, 17, 1000, 10 ** 6 + 3, 5 * 10 ** 6 + 1, (1 << 30) + 1,
                               1 << 34])
def test_plan_is_a_rotation(n):
    S, M = rmod.SCRATCH_BYTES, rmod.SHORT_DMAX
    ks = {1, n - 1, n // 2, n // 3, n // 3 + 1, S, S + 1, M, M + 1, n - M, n - M - 1, n // 7,
          n // 200 + 1, 2 * n // 5 + 3, (n * 5) // 8 + 1, n // 2 - S - 77, n // 17 + 5}
    for k in sorted(k for k in ks if 0 < k < n):
        steps = plan(n, k)
        # Gries-Mills steps only while the remainder exceeds the scratch: a handful
        assert 1 <= len(steps) <= 2 + 2 * max(1, n // S).bit_length(), (n, k, steps)
        for step in steps:
            _check_step(step, n)
        if n <= 10 ** 7:
            assert np.array_equal(_apply_plan(n, k), np.roll(np.arange(n), -k)), (n, k)
        assert sum(s[2] for s in steps) <= 3 * n


def test_plan_single_pass_for_benchmark_shifts():
    for es, n in ((4, 1 << 28), (1, 1 << 30)):
        for k in (1, 1000, 4096 * 3 + 5, n // 3, n // 2, n - 1):
            assert len(plan(n * es, k * es)) == 1, (es, k)


def test_plan_one_pass_whenever_the_remainder_fits():
    rng = np.random.default_rng(5)
    for _ in range(2000):
        n = int(rng.integers(2, 1 << 40))
        k = int(rng.integers(1, n))
        d = min(k, n - k)
        steps = plan(n, k)
        if d <= rmod.SHORT_DMAX or n % d <= rmod.SCRATCH_BYTES:
            assert len(steps) == 1, (n, k)
        for step in steps:
            _check_step(step, n)


def test_plan_trivial():
    assert plan(0, 5) == [] and plan(1, 5) == [] and plan(10, 0) == [] and plan(10, 30) == []


def test_column_layout_spreads_work():
    # stash mode: few columns get split into segments so that every SM has work
    w, g = rmod.column_layout(rmod.SHORT_DMAX + 1, 10_000, 5, 528)
    assert -(-(rmod.SHORT_DMAX + 1) // w) * g >= 528 // 2
    # chain mode: no segments, but narrower columns
    d = rmod.SCRATCH_BYTES
    w, g = rmod.column_layout(d, 1000, 100, 528)
    assert g == 1 and -(-d // w) >= 528 // 2
    # huge lanes: the widest columns
    w, g = rmod.column_layout(1 << 33, 2, 0, 528)
    assert g == 1 and rmod.column_smem(w, 2) <= rmod.LANE_SMEM < rmod.column_smem(w + 128, 2)


@pytest.mark.parametrize("left", [True, False])
def test_short_scratch_layout(left):
    """The copy of old bytes the short kernel reads instead of the array: inside the scratch
    buffer, aligned like the array, and holding old byte (v mod nb) at virtual position v."""
    rng = np.random.default_rng(17)
    for _ in range(500):
        nb = int(rng.integers(2, 1 << 24))
        d = int(rng.integers(1, min(nb - 1, rmod.SHORT_DMAX) + 1))
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
@pytest.mark.parametrize("n", [1, 2, 3, 7, 100, 4096, 4097, 3 * 4096 - 1, 10007, 65537, 140_009])
def test_rotate_cpu_matches_roll(dtype, n):
    x0 = _random(n, dtype, 7 + n)
    es = np.dtype(dtype).itemsize
    for k in _adversarial_ks(n, rmod.SHORT_TILE // es, es):
        x = x0.copy()
        out = rotate_cpu(x, k)
        assert out is x
        assert np.array_equal(x.view(np.uint8), np.roll(x0, -k).view(np.uint8)), (n, k)


def test_rotate_cpu_unaligned_views():
    buf = _random(300_017, np.uint8, 11)
    for off in (1, 3, 15):
        for k in (1, 5000, rmod.SHORT_DMAX + 3, 100_000, 140_000):
            x = buf[off:].copy()[: 300_000]
            x0 = x.copy()
            rotate_cpu(x, k)
            assert np.array_equal(x, np.roll(x0, -k)), (off, k)


def test_rotate_cpu_every_pass_kind():
    # short, stash and chain column passes and Gries-Mills multi-pass plans, a few MB of bytes
    S = rmod.SCRATCH_BYTES
    n = 3 * S * 4 + 12345
    x0 = _random(n, np.uint8, 3)
    cases = {"short": [1, -7, rmod.SHORT_DMAX], "stash": [rmod.SHORT_DMAX + 1, n // 40 + 3],
             "chain": [n // 3, -(n // 3), n // 2, (n - 500_000) // 5, -((n - 700_000) // 6)],
             "multi": [n // 2 - S - 77, 2 * n // 5 + 1, -(2 * n // 5)]}
    for kind, ks in cases.items():
        for k in ks:
            kinds = _kinds(plan(n, k))
            assert kinds == [kind] if kind != "multi" else len(kinds) >= 2, (kind, k, kinds)
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
        rotate(np.arange(4), True)                         # a bool is no shift (was 1)
    assert rotate(np.arange(4), np.int8(-1)).tolist() == [3, 0, 1, 2]
    with pytest.raises(TypeError):
        rotate(np.array([None, 1], dtype=object), 1)


@pytest.mark.parametrize("timeout", [float("nan"), float("inf"), -float("inf"), 0, 0.0, -1,
                                     -1e-9, 2.0**64 / 1e9, 1e300])
def test_rotate_timeout_must_be_finite_and_positive(timeout):
    # NaN and inf failed only at the kernels' int(timeout * 1e9) (OverflowError, or an unclear
    # ValueError), 0 and negatives became a 1 ns bound, and NumPy input took any of them
    x = np.arange(5, dtype=np.uint8)
    with pytest.raises(ValueError, match="timeout must be a finite number of seconds above 0"):
        rotate(x, 1, timeout=timeout)
    assert x.tolist() == [0, 1, 2, 3, 4]                   # refused before any work


@pytest.mark.parametrize("timeout", ["2", None, True, 1j])
def test_rotate_timeout_must_be_a_real_number(timeout):
    with pytest.raises(TypeError, match="timeout is a number of seconds"):
        rotate(np.arange(5, dtype=np.uint8), 1, timeout=timeout)


@pytest.mark.parametrize("timeout", [1e-12, 1e-9, 2, np.float32(0.5), 10**9])
def test_rotate_takes_small_and_large_timeouts(timeout):
    assert rotate(np.arange(5, dtype=np.uint8), 2, timeout=timeout).tolist() == [2, 3, 4, 0, 1]
    assert rmod._timeout_ns(timeout) == max(1, int(float(timeout) * 1e9))


# ------------------------------------------------------------------------------------------------
# GPU against the twin
# ------------------------------------------------------------------------------------------------

def _gpu_check(x0, k, seed, what=""):
    """Rotate a device copy of x0 and compare it byte for byte with the CPU twin."""
    import cupy as cp

    x = cp.asarray(x0)
    assert rotate(x, k) is x
    expect = rotate_cpu(x0.copy(), k)
    got = cp.asnumpy(x)
    assert np.array_equal(got.view(np.uint8), expect.view(np.uint8)), \
        (what, x0.dtype, x0.size, k, _kinds(plan(x0.nbytes, k * x0.dtype.itemsize)), seed)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_gpu_rotate_adversarial(dtype):
    seed = fresh_seed()
    es = np.dtype(dtype).itemsize
    tile_elems = rmod.SHORT_TILE // es
    for n in (1, 2, 3, 100, tile_elems, tile_elems + 1, 3 * tile_elems - 1, 5 * tile_elems + 7,
              100003, 1 << 20):
        x0 = _random(n, dtype, seed + n)
        for k in _adversarial_ks(n, tile_elems, es):
            _gpu_check(x0, k, seed)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.uint8, np.int32])
def test_gpu_rotate_every_pass_kind(dtype):
    """Short, stash (with segments), chain and multi-pass plans on a few MB."""
    seed = fresh_seed()
    es = np.dtype(dtype).itemsize
    S = rmod.SCRATCH_BYTES // es
    n = 12 * S + 12347
    x0 = _random(n, dtype, seed)
    ks = [1, -3, rmod.SHORT_DMAX // es, rmod.SHORT_DMAX // es + 1, n // 40 + 3, -(n // 40),
          n // 3, n // 2, -(n // 3), (n - 500_000 // es) // 5, n // 2 - S - 77, 2 * n // 5 + 1,
          -(2 * n // 5), n - 1]
    seen = set()
    for k in ks:
        seen.update(_kinds(plan(n * es, k * es)))
        _gpu_check(x0, k, seed)
    assert seen == {"short", "stash", "chain"}


@pytest.mark.gpu
@pytest.mark.parametrize("dtype,n", [(np.uint8, 100_000_007), (np.int32, 25_000_003)])
def test_gpu_rotate_larger_than_l2(dtype, n):
    """Every pass kind on arrays larger than the L2 cache."""
    import cupy as cp

    seed = fresh_seed()
    x0 = _random(n, dtype, seed)
    for k in (1, 1000, 4096 * 3 + 5, n // 3, n // 2, n - 1, 2 * n // 5 + 1,
              rmod.SHORT_DMAX + 9, rmod.SCRATCH_BYTES + 9, -(n // 7), n // 60 + 1, n // 1500):
        x = cp.asarray(x0)
        rotate(x, k)
        assert np.array_equal(cp.asnumpy(x), np.roll(x0, -k)), (dtype, n, k, seed)


@pytest.mark.gpu
def test_gpu_rotate_offset_views_stream_and_neighbours():
    import cupy as cp

    seed = fresh_seed()
    n = 2_000_000
    host = _random(n + 100, np.uint8, seed)
    # short left and right, stash left and right, chain left (lanes 2, remainder 6) and right
    for k in (12_345, -7, 70_001, -(n // 20), 999_997, 1_200_000):
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
def test_gpu_rotate_replayed_with_new_pointers():
    """From a pass geometry's second call on, its two launches are a replayed CUDA graph: every
    call must move its own array through its own scratch on its own stream (a pointer left from
    the call before would rotate that array again), also from several threads at once."""
    import cupy as cp

    seed = fresh_seed()
    n = 3_000_001
    for k in (12_345, -7, 70_001, -(n // 20), 999_997, 2 * n // 5 + 1):
        hosts = [_random(n, np.uint8, seed + i) for i in range(8)]
        arrays = [cp.asarray(h) for h in hosts]
        streams = [cp.cuda.Stream() for _ in range(4)]
        for i in range(4):   # one after the other, alternating streams
            rotate(arrays[i], k, stream=streams[i % 2])
        with ThreadPoolExecutor(4) as pool:   # four threads, a stream each
            list(pool.map(lambda x, s, k=k: rotate(x, k, stream=s), arrays[4:], streams))
        for i, (x, h) in enumerate(zip(arrays, hosts, strict=True)):
            assert np.array_equal(cp.asnumpy(x), np.roll(h, -k)), (i, k, seed)


@pytest.mark.gpu
@pytest.mark.parametrize("k", [1, 70_001, (1 << 24) // 3])
def test_gpu_rotate_wait_timeout_raises(k):
    """A 1 ns bound makes every wait that is not already satisfied give up: the kernel must
    finish and rotate raise DeviceError (or, if no wait ever spun, return the right answer); it
    must never hang or return garbage silently."""
    import cupy as cp

    from fsstgpu.errors import DeviceError

    seed = fresh_seed()
    x0 = _random(1 << 24, np.uint8, seed)
    x = cp.asarray(x0)
    try:
        rotate(x, k, timeout=1e-9)
    except DeviceError:
        return
    assert np.array_equal(cp.asnumpy(x), np.roll(x0, -k)), (k, seed)


@pytest.mark.gpu
def test_gpu_rotate_runs_on_the_arrays_device():
    """An array on another device than the current one: the kernels and their scratch ran on
    the current device, addressing the other's memory (an illegal address without peer
    access, a sticky error that ends the process's CUDA). They now run on the array's device.
    Skipped with fewer than two GPUs."""
    import cupy as cp

    if cp.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("needs two GPUs")
    seed = fresh_seed()
    host = np.random.default_rng(seed).integers(0, 256, 3_000_017, dtype=np.uint8)
    for k in (1, 70_001, 1_000_003):
        with cp.cuda.Device(1):
            x = cp.asarray(host)
        with cp.cuda.Device(0):
            assert rotate(x, k) is x
        with cp.cuda.Device(1):
            assert np.array_equal(cp.asnumpy(x), np.roll(host, -k)), (k, seed)
