"""Tests of fsstgpu.kernels.transpose: the NumPy twin against plain NumPy, the kernel choice, and
every GPU path against the twin.

GPU tests draw a fresh seed per test from os.urandom and name it in every failure message; outputs
are poisoned (0xAB bytes) before the kernel writes them, and results are compared byte for byte.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import numpy as np
import pytest

from fsstgpu.kernels import transpose as tmod, transpose_inplace as tin
from fsstgpu.kernels.transpose import transpose, transpose_cpu

sys.path.insert(0, str(Path(__file__).parent))
from seeds import fresh_seed  # noqa: E402

DTYPES = [np.uint8, np.float16, np.float32, np.int64, np.complex128]   # 1, 2, 4, 8, 16 bytes
DTYPE_OF_SIZE = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64, 16: np.complex128}


def _random(shape, dtype, seed) -> np.ndarray:
    """Random bytes of any dtype (NaN patterns included: comparisons are on bytes)."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    raw = rng.integers(0, 256, size=math.prod(shape) * dtype.itemsize, dtype=np.uint8)
    return raw.view(dtype).reshape(shape)


def _bytes(a) -> np.ndarray:
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


def _reference(x: np.ndarray) -> np.ndarray:
    """Each matrix of the batch through ``.T`` (plain NumPy, not the twin's swapaxes)."""
    *batch, rows, cols = x.shape
    mats = [m.T for m in x.reshape(math.prod(batch), rows, cols)]
    return np.array(mats, dtype=x.dtype).reshape(*batch, cols, rows)


# ------------------------------------------------------------------------------------------------
# CPU twin (runs in CI)
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [*DTYPES, "V16", "V8"])
@pytest.mark.parametrize("shape", [(1, 1), (1, 7), (7, 1), (3, 5), (33, 65), (4, 0), (0, 4),
                                   (2, 3, 4), (3, 0, 2), (2, 2, 3, 5)])
def test_cpu_matches_numpy(dtype, shape):
    x = _random(shape, dtype, 1234)
    y = transpose_cpu(x)
    assert y.shape == shape[:-2] + (shape[-1], shape[-2])
    assert y.dtype == x.dtype and y.flags.c_contiguous
    assert np.array_equal(_bytes(y), _bytes(_reference(x)))
    assert transpose(x).tobytes() == y.tobytes()   # NumPy input goes to the twin


def test_cpu_noncontiguous_input():
    base = _random((20, 30), np.int32, 7)
    x = base[::2, 1::3]
    assert np.array_equal(transpose_cpu(x), _reference(np.ascontiguousarray(x)))


def test_cpu_out_argument():
    x = _random((5, 9), np.uint16, 3)
    out = np.full((9, 5), 0xABAB, dtype=np.uint16)
    assert transpose_cpu(x, out) is out
    assert np.array_equal(out, _reference(x))


@pytest.mark.parametrize("shape", [(1, 1), (4, 4), (3, 5), (5, 3), (1, 9), (9, 1), (0, 3),
                                   (2, 6, 4), (3, 4, 4)])
@pytest.mark.parametrize("dtype", [np.uint8, np.float64, "V16"])
def test_cpu_inplace_semantics(shape, dtype):
    x = _random(shape, dtype, 11)
    want = _reference(x.copy())
    y = transpose_cpu(x, inplace=True)
    assert y.shape == want.shape
    assert np.shares_memory(x, y) or x.size == 0
    assert np.array_equal(_bytes(y), _bytes(want))
    assert np.array_equal(_bytes(x), _bytes(want))   # x's own buffer now holds the transpose


@pytest.mark.parametrize("call, error", [
    (lambda: transpose_cpu(np.arange(4)), ValueError),
    (lambda: transpose_cpu(np.zeros((2, 2), dtype="V3")), TypeError),
    (lambda: transpose_cpu(np.zeros((2, 2), dtype=object)), TypeError),
    (lambda: transpose_cpu([[1, 2]]), TypeError),
    (lambda: transpose([[1, 2]]), TypeError),
    (lambda: transpose_cpu(np.zeros((2, 3)), np.zeros((2, 3))), ValueError),
    (lambda: transpose_cpu(np.zeros((2, 3)), np.zeros((3, 2), np.float32)), ValueError),
    (lambda: transpose_cpu(np.zeros((2, 3)), np.zeros((2, 3)).T), ValueError),
    (lambda: transpose_cpu(np.zeros((2, 3)), np.zeros((3, 2)), inplace=True), ValueError),
    (lambda: transpose_cpu(np.zeros((4, 6))[:, ::2], inplace=True), ValueError),
])
def test_cpu_rejects_bad_arguments(call, error):
    with pytest.raises(error):
        call()


def test_cpu_rejects_overlapping_out():
    buf = np.zeros(12)
    with pytest.raises(ValueError, match="overlaps"):
        transpose_cpu(buf.reshape(3, 4), buf.reshape(4, 3))


def test_cpu_rejects_readonly_inplace():
    x = np.zeros((2, 3))
    x.flags.writeable = False
    with pytest.raises(ValueError):
        transpose_cpu(x, inplace=True)


@pytest.mark.parametrize("family", ["transpose", "rotate", "bitshuffle", "bitplane"])
def test_kernel_families_are_modules(family):
    """``import fsstgpu.kernels.<family> as m`` gives the module (it reads the package attribute,
    which must not be a function of the same name)."""
    import importlib

    import fsstgpu.kernels

    module = importlib.import_module(f"fsstgpu.kernels.{family}")
    assert getattr(fsstgpu.kernels, family) is module


# ------------------------------------------------------------------------------------------------
# The kernel choice and the persistent grid (product code the GPU path runs; checked in CI)
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("inplace", [False, True])
@pytest.mark.parametrize("es", tmod.ELEMENT_SIZES)
def test_choose_kernel_fits_its_shape_and_pointers(es, inplace):
    """The chosen kernel's V divides both dimensions and aligns every pointer (the kernels load
    V-element words and assume whole V x V blocks), and V = 1 is always on offer."""
    table = tmod.IN_PLACE_SQUARE if inplace else tmod.OUT_OF_PLACE
    for rows in (1, 2, 3, 4, 8, 12, 36, 260, 512, 515):
        for cols in ((rows,) if inplace else (1, 4, 44, 768, 771)):
            for ptrs in ((0, 0), (es, 0), (0, 4 * es), (2 * es, 8 * es), (1 << 20, 1 << 21)):
                ptrs = ptrs[:1] if inplace else ptrs
                choice = tmod.choose_kernel(es, rows, cols, *ptrs, inplace=inplace)
                v = choice[1]
                assert choice in table[es]
                assert rows % v == 0 and cols % v == 0, (es, rows, cols, choice)
                assert all(p % (es * v) == 0 for p in ptrs), (es, ptrs, choice)
                # no entry listed before it would also have fitted
                for earlier in table[es][:table[es].index(choice)]:
                    w = earlier[1]
                    assert rows % w or cols % w or any(p % (es * w) for p in ptrs)
    assert table[es][-1][1] == 1


@pytest.mark.parametrize("threads,smem,regs", [(256, 16 * 1024, 32), (256, 64 * 1024, 128),
                                               (512, 32 * 1024, 64), (1024, 128 * 1024, 64),
                                               (1024, 1024, 255), (64, 0, 16)])
def test_resident_blocks_fit_an_sm(threads, smem, regs):
    sm = {"sm_smem": 233472, "sm_regs": 65536, "sm_threads": 2048}
    k = tmod.resident_blocks(threads, smem, regs, **sm)

    def fits(blocks):
        warp_regs = -(-regs * 32 // 256) * 256
        return (blocks <= 32 and blocks * threads <= sm["sm_threads"]
                and blocks * (smem + 1024) <= sm["sm_smem"]
                and blocks * -(-threads // 32) * warp_regs <= sm["sm_regs"])

    assert k >= 0 and fits(k) and not fits(k + 1)


# ------------------------------------------------------------------------------------------------
# In-place block path: shape choice, the kernels' division, and the host's cycle plan, applied
# with NumPy exactly as chunk_save / chunk_cycles apply it (runs in CI)
# ------------------------------------------------------------------------------------------------

def test_block_shape_choice():
    assert tin.block_shape(8192, 32768, 4) == (1, 8192, 4)
    assert tin.block_shape(32768, 8192, 4) == (4, 8192, 1)
    assert tin.block_shape(6000, 8000, 1) == (3, 2000, 4)
    assert tin.block_shape(5003, 53636, 4) is None            # coprime
    assert tin.block_shape(4096, 4096, 4) is None             # square: the square kernels
    assert tin.block_shape(255, 510, 4) is None               # 1020-byte chunks
    assert tin.block_shape(256, 510 * 256, 4) == (1, 256, 510)
    assert tin.block_shape(64, 192, 16) == (1, 64, 3)
    assert tin.block_shape(1, 4096, 16) is None


def test_fast_divisor_matches_division():
    rng = np.random.default_rng(5)
    ns = np.concatenate([np.arange(4096), rng.integers(0, 2**31, 200_000), [2**31 - 1]])
    ns = ns.astype(np.uint64)
    for d in [*range(1, 200), 255, 256, 257, 4095, 8192, 12345677, 2**30, 2**30 + 1, 2**31 - 1,
              *rng.integers(2, 2**31, 50).tolist()]:
        mul, shift = tin.fast_divisor(int(d))
        got = ns if mul == 0 else ((ns * np.uint64(mul)) >> np.uint64(32)) >> np.uint64(shift)
        assert mul < 2**32 and np.array_equal(got, ns // np.uint64(d)), d
    with pytest.raises(ValueError):
        tin.fast_divisor(0)


def _apply_plan(chunks: np.ndarray, plan) -> np.ndarray:
    """chunk_save then chunk_cycles on the rows of ``chunks`` (in place), item by item."""
    a, g, b = plan.a, plan.g, plan.b
    scratch = {int(slot): chunks[start].copy() for start, _, slot, _ in plan.longs}
    items = [(int(s), int(n), None) for s, n in plan.singles]
    items += [(int(s), int(n), int(nxt)) for s, n, _, nxt in plan.longs]
    for start, steps, nxt in items:
        head = chunks[start].copy()
        cur = start
        for s in range(steps):
            q = int(tin.chunk_source(cur, a, g, b))
            last = head if nxt is None else scratch[nxt]
            chunks[cur] = last if s + 1 == steps else chunks[q]
            cur = q
    return chunks


@pytest.mark.parametrize("a,g,b", [(1, 5, 3), (3, 5, 1), (2, 3, 5), (4, 7, 3), (1, 64, 3),
                                   (1, 1000, 3), (5, 16, 9), (7, 100, 11), (1, 8192, 4),
                                   (4, 8192, 1), (1, 97, 2), (2, 1, 3)])
@pytest.mark.parametrize("seg", [4, 5, 64])
def test_chunk_plan_is_the_permutation(a, g, b, seg):
    n = a * g * b
    plan = tin.chunk_plan(a, g, b, seg)
    chunks = np.arange(n, dtype=np.int64)[:, None] * 3 + np.arange(2)
    want = chunks[tin.chunk_source(np.arange(n), a, g, b)]
    assert np.array_equal(_apply_plan(chunks.copy(), plan), want), (a, g, b, seg)
    # the items write every moved chunk once; segments are at most seg steps, slots distinct
    src = tin.chunk_source(np.arange(n), a, g, b)
    moved = np.count_nonzero(src != np.arange(n))
    assert plan.singles[:, 1].sum() + plan.longs[:, 1].sum() == moved
    assert (plan.singles[:, 1] <= seg).all() and (plan.longs[:, 1] <= seg).all()
    assert np.array_equal(np.sort(plan.longs[:, 2]), np.arange(len(plan.longs)))
    assert sorted(plan.longs[:, 3].tolist()) == list(range(len(plan.longs)))


def test_segment_length_bounds_scratch_and_work():
    for n, chunk, wpc in [(32768, 32768, 2048), (3000, 4000, 250), (1 << 20, 1024, 64),
                          (8, 1 << 20, 65536), (1 << 24, 4096, 256)]:
        seg = tin.segment_length(n, chunk, wpc)
        assert seg >= tin.MIN_SEG
        # at most 2n/seg segments (each long cycle has more than seg chunks): heads fit
        assert 2 * n // seg * chunk <= 2 * tin.SEG_SCRATCH + 2 * chunk
    # a plan whose cycles are long: segments, and the scratch they need stays in the bound
    a, g, b = 1, 1000, 3
    seg = tin.segment_length(a * g * b, 4 * g, g // 4)
    plan = tin.chunk_plan(a, g, b, seg)
    assert len(plan.longs) and len(plan.longs) * 4 * g <= 2 * tin.SEG_SCRATCH


@pytest.mark.parametrize("rows,cols", [(256, 768), (768, 256), (512, 768), (600, 900),
                                       (300, 300 * 7), (1024, 4096), (4096, 1024)])
def test_block_decomposition_with_numpy(rows, cols):
    """The launcher's two steps (transpose._block_inplace) replayed with NumPy: blocks
    transposed in place, chunks permuted by the plan, in the order the launcher runs them."""
    x = np.arange(rows * cols, dtype=np.int64).reshape(rows, cols)
    a, g, b = tin.block_shape(rows, cols, 4)
    plan = tin.chunk_plan(a, g, b, 4)
    buf = x.copy().reshape(-1)

    def squares():
        if a == 1:    # after the permutation: b contiguous g x g matrices (the square kernel)
            grid = buf.reshape(b, g, g)
            grid[...] = grid.transpose(0, 2, 1).copy()
        else:         # blocks (I, J) at row stride b*g (square_blocks; contiguous when b == 1)
            grid = buf.reshape(a, g, b, g)
            grid[...] = grid.transpose(0, 3, 2, 1).copy()

    def permute():
        buf[...] = _apply_plan(buf.reshape(-1, g).copy(), plan).reshape(-1)

    steps = (permute, squares) if a == 1 else (squares, permute)
    for step in steps:
        step()
    assert np.array_equal(buf.reshape(cols, rows), x.T)


# ------------------------------------------------------------------------------------------------
# GPU vs twin
# ------------------------------------------------------------------------------------------------

@pytest.fixture
def cp():
    from fsstgpu.device import get_cupy
    return get_cupy()


def _poisoned(cp, shape, dtype):
    out = cp.empty(shape, dtype=dtype)
    out.reshape(-1).view(cp.uint8).fill(0xAB)
    return out


def _check_gpu(cp, x_host, seed, want_kernel=None, **kw):
    """transpose(x, out) with a poisoned out, against the twin; x must stay untouched."""
    want = transpose_cpu(x_host)
    x = cp.asarray(x_host)
    out = _poisoned(cp, want.shape, x_host.dtype)
    if want_kernel is not None:   # the shape was built to reach this kernel
        rows, cols = x_host.shape[-2:]
        got = tmod.choose_kernel(x.dtype.itemsize, rows, cols, x.data.ptr, out.data.ptr)
        assert got == want_kernel, (x_host.shape, got, want_kernel)
    got = transpose(x, out, **kw)
    assert got is out
    assert np.array_equal(_bytes(cp.asnumpy(got)), _bytes(want)), \
        f"shape {x_host.shape} dtype {x_host.dtype} seed {seed}"
    assert np.array_equal(_bytes(cp.asnumpy(x)), _bytes(x_host)), f"input modified, seed {seed}"


def _check_inplace(cp, x_host, seed, want_kernel=None, **kw):
    want = transpose_cpu(x_host)
    x = cp.asarray(x_host)
    if want_kernel is not None:
        n = x_host.shape[-1]
        got = tmod.choose_kernel(x.dtype.itemsize, n, n, x.data.ptr, inplace=True)
        assert got == want_kernel, (x_host.shape, got, want_kernel)
    got = transpose(x, inplace=True, **kw)
    assert got.shape == want.shape
    assert got.data.ptr == x.data.ptr
    assert np.array_equal(_bytes(cp.asnumpy(got)), _bytes(want)), \
        f"in place shape {x_host.shape} dtype {x_host.dtype} seed {seed}"


def _shapes_for(choice):
    """Shapes whose dimensions are multiples of V = choice[1] but of no larger V (the tables
    list V in decreasing order), ragged against the 32V tile and square ones."""
    v = choice[1]
    return [(33 * v, 65 * v), (95 * v, 3 * v), (v, 33 * v), (64 * v + v, 64 * v + v)]


SHAPES = [(1, 1), (1, 257), (257, 1), (1, 1000), (1000, 1), (33, 65), (65, 33), (1000, 3),
          (3, 1000), (31, 33), (32, 32), (63, 65), (64, 64), (127, 129), (128, 128), (129, 127),
          (255, 256), (256, 257), (384, 130), (68, 520)]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_gpu_out_of_place(cp, dtype):
    seed = fresh_seed()
    for i, shape in enumerate(SHAPES):
        _check_gpu(cp, _random(shape, dtype, seed + i), seed)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_gpu_batched_and_empty(cp, dtype):
    seed = fresh_seed()
    for i, shape in enumerate([(3, 33, 65), (2, 128, 256), (4, 1, 9), (2, 2, 5, 7), (0, 3, 4),
                               (2, 0, 4), (2, 4, 0)]):
        _check_gpu(cp, _random(shape, dtype, seed + i), seed)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_gpu_every_out_of_place_kernel(cp, dtype):
    """Each entry of OUT_OF_PLACE for this element size, reached through transpose(x, out)."""
    seed = fresh_seed()
    for choice in tmod.OUT_OF_PLACE[np.dtype(dtype).itemsize]:
        for i, shape in enumerate(_shapes_for(choice)):
            _check_gpu(cp, _random(shape, dtype, seed + i), seed, want_kernel=choice)
            _check_gpu(cp, _random((3, *shape), dtype, seed + i), seed, want_kernel=choice)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_gpu_every_square_kernel(cp, dtype):
    """Each entry of IN_PLACE_SQUARE for this element size, reached through transpose(x,
    inplace=True), single and batched."""
    seed = fresh_seed()
    for choice in tmod.IN_PLACE_SQUARE[np.dtype(dtype).itemsize]:
        v = choice[1]
        for i, n in enumerate((v, 33 * v, 65 * v, 95 * v)):
            _check_inplace(cp, _random((n, n), dtype, seed + i), seed, want_kernel=choice)
            _check_inplace(cp, _random((3, n, n), dtype, seed + i), seed, want_kernel=choice)


def _persistent_batch(cp, choice, per_matrix):
    """Matrices needed for more work items than the persistent grid can hold at once (an upper
    bound: every SM full of blocks of 32 x TR threads), so that blocks stride and prefetch."""
    at = cp.cuda.Device().attributes
    bound = at["MultiProcessorCount"] * (at["MaxThreadsPerMultiProcessor"] // (32 * choice[2]))
    return bound // per_matrix + 2


@pytest.mark.gpu
def test_gpu_persistent_kernels_stride(cp):
    seed = fresh_seed()
    for es, choices in tmod.OUT_OF_PLACE.items():
        for choice in (c for c in choices if len(c) == 4):
            side = 32 * choice[1]
            shape = (4 * side + choice[1], 4 * side)              # 5 x 4 tiles, ragged
            batch = _persistent_batch(cp, choice, 20)
            dtype = DTYPE_OF_SIZE[es]
            _check_gpu(cp, _random((batch, *shape), dtype, seed), seed, want_kernel=choice)
    for es, choices in tmod.IN_PLACE_SQUARE.items():
        for choice in (c for c in choices if len(c) == 4):
            n = 8 * 32 * choice[1] + choice[1]                    # 9 tiles a side: 45 pairs
            batch = _persistent_batch(cp, choice, 45)
            dtype = DTYPE_OF_SIZE[es]
            _check_inplace(cp, _random((batch, n, n), dtype, seed), seed, want_kernel=choice)


@pytest.mark.gpu
def test_gpu_misaligned_and_noncontiguous(cp):
    seed = fresh_seed()
    for k, dtype in enumerate(DTYPES):
        host = _random((129 * 260 + 1,), dtype, seed + k)
        flat = cp.asarray(host)
        x = flat[1:].reshape(129 * 2, 130)             # pointer off by one element
        _check_gpu(cp, host[1:].reshape(258, 130), seed)
        got = transpose(x)
        assert np.array_equal(_bytes(cp.asnumpy(got)), _bytes(transpose_cpu(cp.asnumpy(x)))), \
            f"misaligned dtype {np.dtype(dtype)} seed {seed}"
        y = x[::2, 3:]                                  # not contiguous
        got = transpose(y)
        assert np.array_equal(_bytes(cp.asnumpy(got)), _bytes(transpose_cpu(cp.asnumpy(y)))), \
            f"strided dtype {np.dtype(dtype)} seed {seed}"


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES[1:])
def test_gpu_rejects_memory_inside_an_element(cp, dtype):
    """A view starting inside an element cannot be loaded as whole elements: a clear error, not
    a device fault."""
    base = cp.zeros(64 * 16 + 16, dtype=cp.uint8)
    x = cp.ndarray((8, 8), dtype=dtype, memptr=base.data + 1)
    with pytest.raises(ValueError, match="aligned"):
        transpose(x)
    with pytest.raises(ValueError, match="aligned"):
        transpose(x, inplace=True)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_gpu_inplace_square(cp, dtype):
    seed = fresh_seed()
    for i, n in enumerate([1, 2, 3, 31, 32, 33, 64, 127, 128, 129, 131, 256, 300]):
        _check_inplace(cp, _random((n, n), dtype, seed + i), seed)
    _check_inplace(cp, _random((3, 65, 65), dtype, seed), seed)
    _check_inplace(cp, _random((2, 128, 128), dtype, seed), seed)


RECT = [(2, 3), (3, 2), (1, 7), (7, 1), (7, 13), (13, 7), (64, 96), (96, 64), (100, 1000),
        (1000, 100), (127, 131), (131, 127), (509, 1021), (1021, 509), (256, 1024), (1024, 256),
        (33, 65), (3, 5000), (5000, 3), (360, 1440)]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_gpu_inplace_rectangular(cp, dtype):
    seed = fresh_seed()
    for i, shape in enumerate(RECT):
        _check_inplace(cp, _random(shape, dtype, seed + i), seed)
    _check_inplace(cp, _random((3, 20, 50), dtype, seed), seed)
    _check_inplace(cp, _random((2, 50, 20), dtype, seed), seed)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.uint8, np.float32, np.complex128])
def test_gpu_inplace_rectangular_scratch_fallbacks(cp, dtype):
    """Rows and column panels too large for the shared-memory limit go through device scratch:
    both passes (limit 16 elements), then rows in shared memory but panels not (200)."""
    seed = fresh_seed()
    es = np.dtype(dtype).itemsize
    for limit in (16 * es, 200 * es):
        for i, shape in enumerate([(37, 91), (91, 37), (64, 96), (96, 64), (5, 300), (300, 5),
                                   (3, 40, 70)]):
            _check_inplace(cp, _random(shape, dtype, seed + i), seed, smem_limit=limit)


@pytest.mark.gpu
def test_gpu_inplace_rectangular_large_prime(cp):
    seed = fresh_seed()
    _check_inplace(cp, _random((1009, 4099), np.float32, seed), seed)
    _check_inplace(cp, _random((4099, 1009), np.uint8, seed), seed)
    _check_inplace(cp, _random((2048, 6144), np.uint16, seed), seed)


@pytest.mark.gpu
def test_gpu_stream_and_errors(cp):
    seed = fresh_seed()
    x_host = _random((300, 200), np.float32, seed)
    stream = cp.cuda.Stream(non_blocking=True)
    x = cp.asarray(x_host)
    cp.cuda.Device().synchronize()   # x is written on the default stream
    y = transpose(x, stream=stream)
    stream.synchronize()
    assert np.array_equal(_bytes(cp.asnumpy(y)), _bytes(transpose_cpu(x_host))), f"seed {seed}"
    with pytest.raises(ValueError, match="overlaps"):
        transpose(x, x.reshape(200, 300))
    with pytest.raises(ValueError):
        transpose(x, cp.empty((300, 200), cp.float32))
    with pytest.raises(ValueError):
        transpose(x[:, ::2], inplace=True)
    with pytest.raises(TypeError):
        transpose(cp.zeros((2, 2)), np.zeros((2, 2)))
    with pytest.raises(ValueError):
        transpose(cp.zeros(5))


# shapes of the block path: a = 1 (wide), b = 1 (tall), both > 1 (strided blocks), ragged tiles,
# and the benchmark shapes scaled down (8192 x 32768 -> 1024 x 4096)
BLOCK_RECT = {1: [(1024, 3072), (3072, 1024), (2048, 3072), (1100, 2200)],
              2: [(512, 1536), (1536, 512), (1024, 1536), (600, 1800)],
              4: [(256, 768), (768, 256), (512, 768), (600, 900), (300, 2100), (1024, 4096),
                  (4096, 1024), (256, 256 * 37)],
              8: [(128, 384), (384, 128), (256, 384), (130, 390)],
              16: [(64, 192), (192, 64), (128, 192), (65, 195), (64, 64 * 37)]}


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_gpu_inplace_blocks(cp, dtype):
    """Shapes the block path takes (squares + chunk cycles), single and batched."""
    seed = fresh_seed()
    es = np.dtype(dtype).itemsize
    for i, shape in enumerate(BLOCK_RECT[es]):
        assert tin.block_shape(*shape, es) is not None, shape
        _check_inplace(cp, _random(shape, dtype, seed + i), seed)
    _check_inplace(cp, _random((3, *BLOCK_RECT[es][0]), dtype, seed), seed)
    _check_inplace(cp, _random((2, *BLOCK_RECT[es][2]), dtype, seed), seed)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.uint8, np.float32, np.complex128])
def test_gpu_inplace_blocks_misaligned(cp, dtype):
    """A matrix starting one element into an allocation: narrower chunk words (and V = 1
    square blocks), the same result."""
    seed = fresh_seed()
    es = np.dtype(dtype).itemsize
    for i, (rows, cols) in enumerate(BLOCK_RECT[es][:3]):
        host = _random((rows * cols + 1,), dtype, seed + i)
        flat = cp.asarray(host)
        x = flat[1:].reshape(rows, cols)
        got = transpose(x, inplace=True)
        assert got.data.ptr == x.data.ptr
        assert np.array_equal(_bytes(cp.asnumpy(got)),
                              _bytes(transpose_cpu(host[1:].reshape(rows, cols)))), \
            f"misaligned in place {rows}x{cols} dtype {np.dtype(dtype)} seed {seed}"
        assert np.array_equal(_bytes(cp.asnumpy(flat[:1])), _bytes(host[:1])), f"seed {seed}"


@pytest.mark.gpu
def test_gpu_inplace_blocks_long_cycles_and_bench_shapes(cp):
    """Cycles cut into segments through scratch (asserted from the plan), then the benchmark
    shapes scaled down (8192 x 32768 and the coprime 5003 x 53636), float32, both directions."""
    seed = fresh_seed()
    for i, (rows, cols) in enumerate([(1000, 3000), (3000, 1000), (1000, 1000 * 29)]):
        a, g, b = tin.block_shape(rows, cols, 4)
        n = a * g * b
        plan = tin.chunk_plan(a, g, b, tin.segment_length(n, 4 * g, g // 4))
        assert len(plan.longs), (rows, cols)
        _check_inplace(cp, _random((rows, cols), np.float32, seed + i), seed)
    for i, shape in enumerate([(2048, 8192), (8192, 2048), (1251, 13409), (13409, 1251)]):
        _check_inplace(cp, _random(shape, np.float32, seed + i), seed)


@pytest.mark.parametrize("step", [tin.permute_chunks, tin.square_blocks])
@pytest.mark.parametrize(("make", "abg"), [
    (lambda: np.zeros(2 * 3 * 256 * 256 - 1, np.float32), (2, 256, 3)),   # one element short
    (lambda: np.zeros(2 * 3 * 256 * 256 + 8, np.float32), (2, 256, 3)),   # too long
    (lambda: np.zeros(2 * 2 * 3 * 256 * 256, np.float32)[::2], (2, 256, 3)),   # strided
    (lambda: np.zeros(2 * 3 * 256 * 256, np.float32)[::-1], (2, 256, 3)),      # reversed
    (lambda: np.zeros((2 * 256, 3 * 256), np.float32), (2, 256, 3)),           # 2-D
    (lambda: np.zeros(2 * 3 * 256 * 256, "V3"), (2, 256, 3)),                  # 3-byte elements
    (lambda: np.zeros(0, np.float32), (0, 256, 3)),
    (lambda: np.zeros(2 * 3 * 256 * 256, np.float32), (2.0, 256, 3)),
    (lambda: np.zeros(2 * 3 * 256 * 256, np.float32), (True, 256, 3)),
    (lambda: np.zeros(1, np.float32), (2**16, 2**15, 1)),                     # 2**31 chunks
])
def test_block_steps_refuse_arrays_their_kernels_would_overrun(step, make, abg):
    """The block path's public steps write a*g*b*g elements from the array's address and index
    chunks with 32 bits: a short, strided, reversed or N-D array, or a shape of 2**31 chunks, was
    written past its memory (or over the wrong bytes). Refused on the host, before any device
    work (no GPU needed)."""
    with pytest.raises(ValueError):
        step(make(), *abg)


@pytest.mark.gpu
def test_gpu_out_on_another_device_is_refused():
    """The kernel runs on x's device: an ``out`` on another one was written through an address
    of that device (an illegal address without peer access). Refused. Skipped with fewer than
    two GPUs."""
    import cupy

    if cupy.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("needs two GPUs")
    with cupy.cuda.Device(0):
        x = cupy.arange(64 * 48, dtype=cupy.float32).reshape(64, 48)
    with cupy.cuda.Device(1):
        out = cupy.empty((48, 64), dtype=cupy.float32)
    with pytest.raises(ValueError, match="device"):
        transpose(x, out)
