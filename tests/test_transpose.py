"""Tests of fsstgpu.kernels.transpose: the NumPy twin (everywhere) and the GPU kernels against it.

GPU tests draw a fresh seed per test from os.urandom and name it in every failure message; outputs
are poisoned (0xAB bytes) before the kernel writes them, and results are compared byte for byte.
"""

from __future__ import annotations

import importlib
import math
import os

import numpy as np
import pytest

from fsstgpu.kernels.transpose import transpose, transpose_cpu

# the module itself: fsstgpu.kernels exports the function under the same name
tmod = importlib.import_module("fsstgpu.kernels.transpose")

DTYPES = [np.uint8, np.float16, np.float32, np.int64, np.complex128]   # 1, 2, 4, 8, 16 bytes


def _seed() -> int:
    return int.from_bytes(os.urandom(8), "little")


def _random(shape, dtype, seed) -> np.ndarray:
    """Random bytes of any dtype (NaN patterns included: comparisons are on bytes)."""
    rng = np.random.default_rng(seed)
    dtype = np.dtype(dtype)
    raw = rng.integers(0, 256, size=math.prod(shape) * dtype.itemsize, dtype=np.uint8)
    return raw.view(dtype).reshape(shape)


def _bytes(a) -> np.ndarray:
    return np.ascontiguousarray(a).reshape(-1).view(np.uint8)


def _reference(x: np.ndarray) -> np.ndarray:
    """Element-by-element transpose of the last two axes, independent of numpy.swapaxes."""
    *batch, rows, cols = x.shape
    flat = x.reshape(math.prod(batch), rows, cols)
    out = np.empty((flat.shape[0], cols, rows), dtype=x.dtype)
    for b in range(flat.shape[0]):
        for i in range(rows):
            out[b, :, i] = flat[b, i, :]
    return out.reshape(*batch, cols, rows)


# ------------------------------------------------------------------------------------------------
# CPU twin (runs in CI)
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", [*DTYPES, "V16", "V8"])
@pytest.mark.parametrize("shape", [(1, 1), (1, 7), (7, 1), (3, 5), (33, 65), (4, 0), (0, 4),
                                   (2, 3, 4), (3, 0, 2), (2, 2, 3, 5)])
def test_cpu_matches_elementwise_reference(dtype, shape):
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


def _decomposition_model(x: np.ndarray) -> np.ndarray:
    """NumPy model of the in-place rectangular algorithm of transpose.cu (C2R / R2C)."""
    rows, cols = x.shape
    m, n = min(rows, cols), max(rows, cols)
    c = math.gcd(m, n)
    a, b = m // c, n // c
    A = x.copy().reshape(-1).reshape(m, n)
    i = np.arange(m)[:, None]
    j = np.arange(n)[None, :]
    rot = (j // b) % m
    d = ((i + j // b) % m + c * ((j % b) * a % b)) % n
    s = ((i * n - i // a) % m + j) % m
    if rows < cols:
        if c > 1:
            A[:] = A[(i + rot) % m, j]
        T = np.empty_like(A)
        T[i, d] = A
        A[:] = T[s, j]
    else:
        T = np.empty_like(A)
        T[s, j] = A
        A[:] = T[i, d]
        if c > 1:
            A[:] = A[(i - rot) % m, j]
    return A.reshape(-1).reshape(cols, rows)


@pytest.mark.parametrize("shape", [(2, 3), (3, 2), (4, 6), (6, 4), (7, 13), (13, 7), (16, 64),
                                   (64, 16), (30, 45), (45, 30), (31, 37), (37, 31), (3, 200),
                                   (200, 3), (96, 64)])
def test_decomposition_model_is_a_transpose(shape):
    """The index formulas the rectangular kernels use do transpose (checked without a GPU)."""
    x = np.arange(math.prod(shape)).reshape(shape)
    assert np.array_equal(_decomposition_model(x), transpose_cpu(x))


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


def _check_gpu(cp, x_host, seed, **kw):
    want = transpose_cpu(x_host)
    x = cp.asarray(x_host)
    out = _poisoned(cp, want.shape, x_host.dtype)
    got = transpose(x, out, **kw)
    assert got is out
    got_host = cp.asnumpy(got)
    assert np.array_equal(_bytes(got_host), _bytes(want)), \
        f"shape {x_host.shape} dtype {x_host.dtype} seed {seed}"
    # x must be untouched
    assert np.array_equal(_bytes(cp.asnumpy(x)), _bytes(x_host)), f"input modified, seed {seed}"


SHAPES = [(1, 1), (1, 257), (257, 1), (1, 1000), (1000, 1), (33, 65), (65, 33), (1000, 3),
          (3, 1000), (31, 33), (32, 32), (63, 65), (64, 64), (127, 129), (128, 128), (129, 127),
          (255, 256), (256, 257), (384, 130), (68, 520)]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_gpu_out_of_place(cp, dtype):
    seed = _seed()
    for i, shape in enumerate(SHAPES):
        _check_gpu(cp, _random(shape, dtype, seed + i), seed)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_gpu_batched_and_empty(cp, dtype):
    seed = _seed()
    for i, shape in enumerate([(3, 33, 65), (2, 128, 256), (4, 1, 9), (2, 2, 5, 7), (0, 3, 4),
                               (2, 0, 4), (2, 4, 0)]):
        _check_gpu(cp, _random(shape, dtype, seed + i), seed)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_gpu_every_tile_width(cp, dtype):
    """Force each register-block width V (and the misaligned / odd fallbacks to V = 1)."""
    seed = _seed()
    es = np.dtype(dtype).itemsize
    for v in tmod._ALL_V[es]:
        for k, (rows, cols) in enumerate([(32 * v * 2, 32 * v * 3), (4 * v, 32 * v + 4 * v),
                                          (32 * v * 3 + v, 32 * v - v)]):
            x_host = _random((2, rows, cols), dtype, seed + k)
            x = cp.asarray(x_host)
            out = _poisoned(cp, (2, cols, rows), dtype)
            tmod._launch_tiles(x, out, 2, rows, cols, v=v)
            assert np.array_equal(_bytes(cp.asnumpy(out)), _bytes(transpose_cpu(x_host))), \
                f"V={v} shape {(rows, cols)} dtype {np.dtype(dtype)} seed {seed}"


@pytest.mark.gpu
def test_gpu_misaligned_and_noncontiguous(cp):
    seed = _seed()
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


def _check_inplace(cp, x_host, seed):
    want = transpose_cpu(x_host)
    x = cp.asarray(x_host)
    got = transpose(x, inplace=True)
    assert got.shape == want.shape
    assert got.data.ptr == x.data.ptr
    assert np.array_equal(_bytes(cp.asnumpy(got)), _bytes(want)), \
        f"in place shape {x_host.shape} dtype {x_host.dtype} seed {seed}"


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_gpu_inplace_square(cp, dtype):
    seed = _seed()
    for i, n in enumerate([1, 2, 3, 31, 32, 33, 64, 127, 128, 129, 131, 256, 300]):
        _check_inplace(cp, _random((n, n), dtype, seed + i), seed)
    _check_inplace(cp, _random((3, 65, 65), dtype, seed), seed)
    _check_inplace(cp, _random((2, 128, 128), dtype, seed), seed)
    es = np.dtype(dtype).itemsize
    for v in tmod._ALL_V[es]:
        for n in (32 * v * 2, 32 * v * 3 - v):
            x_host = _random((n, n), dtype, seed + v)
            x = cp.asarray(x_host)
            tmod._launch_square(x, 1, n, v=v)
            assert np.array_equal(_bytes(cp.asnumpy(x)), _bytes(transpose_cpu(x_host))), \
                f"square V={v} n={n} dtype {np.dtype(dtype)} seed {seed}"


RECT = [(2, 3), (3, 2), (1, 7), (7, 1), (7, 13), (13, 7), (64, 96), (96, 64), (100, 1000),
        (1000, 100), (127, 131), (131, 127), (509, 1021), (1021, 509), (256, 1024), (1024, 256),
        (33, 65), (3, 5000), (5000, 3), (360, 1440)]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_gpu_inplace_rectangular(cp, dtype):
    seed = _seed()
    for i, shape in enumerate(RECT):
        _check_inplace(cp, _random(shape, dtype, seed + i), seed)
    _check_inplace(cp, _random((3, 20, 50), dtype, seed), seed)
    _check_inplace(cp, _random((2, 50, 20), dtype, seed), seed)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.uint8, np.float32, np.complex128])
def test_gpu_inplace_rectangular_scratch_fallbacks(cp, dtype, monkeypatch):
    """Rows and column panels too large for shared memory go through device scratch."""
    seed = _seed()
    es = np.dtype(dtype).itemsize
    for limit in (16 * es, 200 * es):   # both fallbacks; then rows in smem, panels not
        monkeypatch.setattr(tmod, "_SMEM_LIMIT_OVERRIDE", limit)
        for i, shape in enumerate([(37, 91), (91, 37), (64, 96), (96, 64), (5, 300), (300, 5)]):
            _check_inplace(cp, _random(shape, dtype, seed + i), seed)


@pytest.mark.gpu
def test_gpu_inplace_rectangular_large_prime(cp):
    seed = _seed()
    _check_inplace(cp, _random((1009, 4099), np.float32, seed), seed)
    _check_inplace(cp, _random((4099, 1009), np.uint8, seed), seed)
    _check_inplace(cp, _random((2048, 6144), np.uint16, seed), seed)


@pytest.mark.gpu
def test_gpu_stream_and_errors(cp):
    seed = _seed()
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
