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


def _check_inplace_rect_set(cp, dtype, seed):
    """In place: every shape of RECT, then two batched ones."""
    for i, shape in enumerate(RECT):
        _check_inplace(cp, _random(shape, dtype, seed + i), seed)
    _check_inplace(cp, _random((3, 20, 50), dtype, seed), seed)
    _check_inplace(cp, _random((2, 50, 20), dtype, seed), seed)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_gpu_inplace_rectangular(cp, dtype):
    seed = _seed()
    _check_inplace_rect_set(cp, dtype, seed)


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


# ------------------------------------------------------------------------------------------------
# Variants (tiles_pf, square_pf, cluster panels / rows): CPU models of their index arithmetic
# ------------------------------------------------------------------------------------------------

def _byte_perm(x, y, sel):
    """NumPy model of CUDA __byte_perm(x, y, sel) on uint32 arrays (selector nibbles 0-7)."""
    both = [(x >> (8 * k)) & 0xFF for k in range(4)] + [(y >> (8 * k)) & 0xFF for k in range(4)]
    out = np.zeros_like(x)
    for n in range(4):
        out |= both[(sel >> (4 * n)) & 7] << (8 * n)
    return out


def _bt4(r0, r1, r2, r3):
    """Model of bt4() in transpose.cu (same selectors)."""
    x0, x1 = _byte_perm(r0, r1, 0x5140), _byte_perm(r0, r1, 0x7362)
    y0, y1 = _byte_perm(r2, r3, 0x5140), _byte_perm(r2, r3, 0x7362)
    return (_byte_perm(x0, y0, 0x5410), _byte_perm(x0, y0, 0x7632),
            _byte_perm(x1, y1, 0x5410), _byte_perm(x1, y1, 0x7632))


def test_register_block_transposes_model():
    """The prmt selectors of RegT<1,4>, RegT<1,8>, RegT<2,2>, RegT<2,4> transpose their blocks."""
    rng = np.random.default_rng(5)
    blocks = rng.integers(0, 256, size=(64, 8, 8), dtype=np.uint8)   # 64 random 8x8 byte blocks
    # RegT<1,4>: word e = row e of a 4x4 byte block
    b4 = np.ascontiguousarray(blocks[:, :4, :4])
    words = b4.view("<u4").reshape(64, 4).astype(np.uint64)
    out = np.stack(_bt4(*[words[:, e] for e in range(4)]), axis=1).astype("<u4")
    assert np.array_equal(out.view(np.uint8).reshape(64, 4, 4), b4.transpose(0, 2, 1))
    # RegT<1,8>: row e = (lo word, hi word)
    w = np.ascontiguousarray(blocks).view("<u4").reshape(64, 8, 2).astype(np.uint64)
    lo, hi = w[:, :, 0], w[:, :, 1]
    a = _bt4(*[lo[:, e] for e in range(4)])
    b = _bt4(*[lo[:, e] for e in range(4, 8)])
    c = _bt4(*[hi[:, e] for e in range(4)])
    d = _bt4(*[hi[:, e] for e in range(4, 8)])
    cols = [(a[f], b[f]) for f in range(4)] + [(c[f], d[f]) for f in range(4)]
    out = np.stack([np.stack(p, axis=1) for p in cols], axis=1).astype("<u4")
    assert np.array_equal(out.view(np.uint8).reshape(64, 8, 8), blocks.transpose(0, 2, 1))
    # RegT<2,2> and RegT<2,4> on halfwords
    h = rng.integers(0, 65536, size=(64, 4, 4), dtype=np.uint16)
    hw = np.ascontiguousarray(h).view("<u4").reshape(64, 4, 2).astype(np.uint64)  # row e: 2 words
    out = []
    for hh in range(2):
        r = [hw[:, e, hh] for e in range(4)]
        out.append((_byte_perm(r[0], r[1], 0x5410), _byte_perm(r[2], r[3], 0x5410)))
        out.append((_byte_perm(r[0], r[1], 0x7632), _byte_perm(r[2], r[3], 0x7632)))
    out = np.stack([np.stack(p, axis=1) for p in out], axis=1).astype("<u4")
    assert np.array_equal(out.view("<u2").reshape(64, 4, 4), h.transpose(0, 2, 1))


def _cl_owner(f, r, k):
    """Model of cl_owner<K>: K-1 compares instead of f / R."""
    return sum(int(f >= q * r) for q in range(1, k))


@pytest.mark.parametrize("m", [1, 2, 7, 31, 32, 100, 5003, 8192])
def test_cluster_partition_model(m):
    for k in tmod.CLUSTER_SIZES:
        r = -(-m // k)
        owners = [_cl_owner(f, r, k) for f in range(m)]
        assert owners == [f // r for f in range(m)]
        assert max(owners) < k


@pytest.mark.parametrize("es", tmod.ELEMENT_SIZES)
@pytest.mark.parametrize("m", [1, 3, 37, 1000, 5003, 8192, 60000])
def test_cluster_plans(es, m):
    for pb, nt, budget in [(64, 512, 100 * 1024), (128, 1024, 227 * 1024), (64, 256, 72 * 1024),
                           (32, 128, 4096), (64, 512, 64)]:
        plan = tmod.cluster_panel_plan(m, es, pb, budget, nt)
        if plan is not None:
            k, w, r = plan
            assert k in tmod.CLUSTER_SIZES and k * r >= m
            assert r * w * es <= budget and nt % w == 0 and w & (w - 1) == 0
            assert w <= max(1, pb // es)
        else:
            assert -(-m // max(tmod.CLUSTER_SIZES)) * es > budget
        rplan = tmod.cluster_row_plan(m, es, budget)
        if rplan is not None:
            k, r = rplan
            assert r % 32 == 0 and k * r >= m and r * es <= budget
        else:
            per = -(-m // max(tmod.CLUSTER_SIZES))
            assert -(-per // 32) * 32 * es > budget


def _swz(p):
    h = p >> 5
    h ^= h >> 5
    h ^= h >> 10
    return p ^ (h & 31)


def test_row_swizzle_stays_in_its_chunk():
    """row_permute_cluster keeps R (a multiple of 32) slots per CTA: swz must permute [0, R)."""
    for r in (32, 64, 96, 16384, 13440):
        p = np.arange(r, dtype=np.int64)
        s = _swz(p)
        assert np.array_equal(np.sort(s), p)


class _ColPerm:
    """Python port of ColPerm (transpose.cu), to check it from any first row (cluster CTAs start
    at row k * R, not at a row below the stride)."""

    def __init__(self, mode, i0, j, m, a, b, nmm, s):
        self.mode, self.m, self.a, self.s = mode, m, a, s
        self.sn, self.sq, self.sr = s * nmm % m, s // a, s % a
        if mode in (0, 3):
            r = j // b
            self.rot = r if (mode == 0 or r == 0) else m - r
            self.x = i0 % m
        else:
            self.jm = j % m
            self.x = i0 * nmm % m
            self.y = i0 // a
            self.z = i0 - self.y * a

    def at(self):
        m = self.m
        if self.mode in (0, 3):
            f = self.x + self.rot
            return f - m if f >= m else f
        p = self.x - self.y if self.x >= self.y else self.x + m - self.y
        f = p + self.jm
        return f - m if f >= m else f

    def next(self):
        if self.mode in (0, 3):
            self.x += self.s
            return
        self.x += self.sn
        if self.x >= self.m:
            self.x -= self.m
        self.y += self.sq
        self.z += self.sr
        if self.z >= self.a:
            self.z -= self.a
            self.y += 1


@pytest.mark.parametrize("shape", [(8, 32), (30, 45), (37, 91), (64, 96), (100, 1000)])
def test_colperm_from_any_first_row(shape):
    m, n = shape
    c = math.gcd(m, n)
    a, b = m // c, n // c
    i = np.arange(m)
    for j in (0, 1, b - 1, b, n - 1):
        rot = (j // b) % m
        want = {0: (i + rot) % m, 3: (i - rot) % m,
                1: ((i * n - i // a) % m + j) % m, 2: ((i * n - i // a) % m + j) % m}
        for mode in range(4):
            for k in (2, 4, 8):
                r = -(-m // k)
                for s in (1, 2, 16):
                    for il in range(min(s, 3)):
                        for lo in range(0, m, r):
                            f = _ColPerm(mode, lo + il, j, m, a, b, n % m, s)
                            for row in range(lo + il, min(m, lo + r), s):
                                assert f.at() == want[mode][row], (mode, j, lo, il, s, row)
                                f.next()


def test_row_perm_from_any_first_element():
    """RowPerm.init at lo + threadIdx (row_permute_cluster) then steps of blockDim."""
    for m, n in [(8, 32), (30, 45), (5, 300), (64, 96)]:
        c = math.gcd(m, n)
        a, b = m // c, n // c
        for nt in (32, 64):
            for lo in (0, 32, 96):
                for i in (0, m - 1):
                    for t in (0, 5, nt - 1):
                        q, r = divmod(lo + t, b)
                        u = r * a % b
                        sq, sr = nt // b, nt % b
                        su = sr * a % b
                        for j in range(lo + t, n, nt):
                            d = ((i + j // b) % m + c * ((j % b) * a % b)) % n
                            tt = (i + q) % m
                            dd = tt + c * u
                            assert (dd - n if dd >= n else dd) == d
                            q, r, u = q + sq, r + sr, u + su
                            if r >= b:
                                r, q = r - b, q + 1
                            if u >= b:
                                u -= b


def test_resident_blocks_model():
    h200 = dict(sm_smem=233472, sm_regs=65536, sm_threads=2048)
    assert tmod.resident_blocks(256, 64 * 1024, 128, **h200) == 2     # tiles_pf<1,8,8,2>
    assert tmod.resident_blocks(1024, 128 * 1024, 64, **h200) == 1    # square_pf<1,8,32,1>
    assert tmod.resident_blocks(256, 16 * 1024, 32, **h200) == 8
    assert tmod.resident_blocks(512, 64 * 1024, 56, **h200) == 2


def test_variant_tables_are_compiled():
    for es in tmod.ELEMENT_SIZES:
        assert tmod.TILE_PF[es] in tmod.TILE_PF_ALL[es]
        assert tmod.SQUARE_PF[es] in tmod.SQUARE_PF_ALL[es]
        for v, tr, mb in tmod.TILE_PF_ALL[es]:
            assert f"transpose_tiles_pf<{es},{v},{tr},{mb}>" in tmod._NAMES_X and 32 % tr == 0
        for v, tr, mb in tmod.SQUARE_PF_ALL[es]:
            assert f"transpose_square_pf<{es},{v},{tr},{mb}>" in tmod._NAMES_X and 32 % tr == 0
    for es in tmod.ELEMENT_SIZES:   # every default config is compiled for its element size
        kernel, cfgs = tmod.TILE_DEFAULT[es]
        assert kernel in ("tiles", "tiles_pf") and set(cfgs) <= set(tmod.TILE_PF_ALL[es])
        assert (kernel == "tiles") == (cfgs == ())
        kernel, cfgs = tmod.SQUARE_DEFAULT[es]
        assert kernel in ("square", "square_pf") and set(cfgs) <= set(tmod.SQUARE_PF_ALL[es])
        assert (kernel == "square") == (cfgs == ())
    assert tmod.TILE_KERNEL is None and tmod.SQUARE_KERNEL is None   # per-size defaults
    assert tmod.RECT_PANEL_KERNEL == "panel" and tmod.RECT_ROW_KERNEL == "row"
    with pytest.raises(ValueError):
        tmod._pick_cfg((3, 8, 1), tmod.TILE_PF_ALL, 1, 32, 32, 0)
    assert tmod._pick_cfg(None, tmod.TILE_PF_ALL, 1, 36, 36, 0) == (4, 8, 4)   # V=8 cannot
    assert tmod._pick_cfg(None, tmod.TILE_PF_ALL, 1, 33, 36, 0) is None        # default kernel
    with pytest.raises(ValueError):
        tmod._rect_inplace(None, 2, 3, panel_kernel="bogus")


def test_default_kernels_per_element_size(monkeypatch):
    """The measured defaults (H200, 2026-11-29): *_pf for 1-byte (both) and 16-byte (out of
    place) elements, the older kernels elsewhere; TILE_KERNEL / SQUARE_KERNEL force one."""
    assert tmod.default_kernels(1) == ("tiles_pf", ((8, 32, 1),))
    assert tmod.default_kernels(16) == ("tiles_pf", ((1, 8, 4),))
    assert tmod.default_kernels(1, inplace=True) == ("square_pf", ((8, 32, 1), (4, 16, 2)))
    for es in (2, 4, 8):
        assert tmod.default_kernels(es) == ("tiles", ())
        assert tmod.default_kernels(es, inplace=True) == ("square", ())
    assert tmod.default_kernels(16, inplace=True) == ("square", ())
    monkeypatch.setattr(tmod, "TILE_KERNEL", "tiles")
    monkeypatch.setattr(tmod, "SQUARE_KERNEL", "square")
    assert tmod.default_kernels(1) == ("tiles", ())
    assert tmod.default_kernels(1, inplace=True) == ("square", ())
    monkeypatch.setattr(tmod, "TILE_KERNEL", "tiles_pf")
    monkeypatch.setattr(tmod, "SQUARE_KERNEL", "square_pf")
    kernel, cfgs = tmod.default_kernels(1)
    assert kernel == "tiles_pf" and cfgs[0] == tmod.TILE_PF[1]
    assert sorted(cfgs) == sorted(tmod.TILE_PF_ALL[1])
    kernel, cfgs = tmod.default_kernels(4, inplace=True)
    assert kernel == "square_pf" and sorted(cfgs) == sorted(tmod.SQUARE_PF_ALL[4])
    monkeypatch.setattr(tmod, "TILE_KERNEL", "bogus")
    with pytest.raises(ValueError, match="bogus"):
        tmod.default_kernels(1)


class _FakeDeviceArray:
    """Just what the dispatchers read: dtype and data.ptr."""

    class _Data:
        def __init__(self, ptr):
            self.ptr = ptr

    def __init__(self, dtype, ptr=1 << 20):
        self.dtype = np.dtype(dtype)
        self.data = self._Data(ptr)


def _record_launches(monkeypatch):
    calls = []
    for name in ("_launch_tiles", "_launch_tiles_pf", "_launch_square", "_launch_square_pf"):
        monkeypatch.setattr(tmod, name, lambda *a, _n=name, **kw: calls.append(
            (_n, kw.get("cfg"))))
    return calls


@pytest.mark.parametrize("dtype,rows,cols,ptr,want", [
    (np.uint8, 256, 512, 1 << 20, ("_launch_tiles_pf", (8, 32, 1))),
    (np.uint8, 36, 44, 1 << 20, ("_launch_tiles", None)),        # V=8 does not fit: tiles V=4
    (np.uint8, 256, 512, (1 << 20) + 4, ("_launch_tiles", None)),  # pointer not 8-B aligned
    (np.complex128, 33, 65, 1 << 20, ("_launch_tiles_pf", (1, 8, 4))),
    (np.uint16, 256, 512, 1 << 20, ("_launch_tiles", None)),
    (np.float32, 256, 512, 1 << 20, ("_launch_tiles", None)),
    (np.float64, 256, 512, 1 << 20, ("_launch_tiles", None)),
])
def test_out_of_place_dispatch(monkeypatch, dtype, rows, cols, ptr, want):
    calls = _record_launches(monkeypatch)
    tmod._tiles_default(_FakeDeviceArray(dtype, ptr), _FakeDeviceArray(dtype), 1, rows, cols)
    assert calls == [want]


@pytest.mark.parametrize("dtype,n,ptr,want", [
    (np.uint8, 256, 1 << 20, ("_launch_square_pf", (8, 32, 1))),
    (np.uint8, 260, 1 << 20, ("_launch_square_pf", (4, 16, 2))),   # V=8 does not fit, V=4 does
    (np.uint8, 256, (1 << 20) + 4, ("_launch_square_pf", (4, 16, 2))),
    (np.uint8, 33, 1 << 20, ("_launch_square", None)),
    (np.float32, 256, 1 << 20, ("_launch_square", None)),
    (np.complex128, 256, 1 << 20, ("_launch_square", None)),
])
def test_inplace_square_dispatch(monkeypatch, dtype, n, ptr, want):
    calls = _record_launches(monkeypatch)
    tmod._square_default(_FakeDeviceArray(dtype, ptr), 1, n)
    assert calls == [want]


# ------------------------------------------------------------------------------------------------
# Variants on the GPU vs the twin
# ------------------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_gpu_tiles_pf_every_config(cp, dtype):
    seed = _seed()
    es = np.dtype(dtype).itemsize
    for cfg in tmod.TILE_PF_ALL[es]:
        v = cfg[0]
        for k, (rows, cols) in enumerate([(32 * v * 2, 32 * v * 3), (4 * v, 32 * v + 4 * v),
                                          (32 * v * 3 + v, 32 * v - v), (v, v)]):
            for grid in (None, 1, 3):
                x_host = _random((2, rows, cols), dtype, seed + k)
                x = cp.asarray(x_host)
                out = _poisoned(cp, (2, cols, rows), dtype)
                tmod._launch_tiles_pf(x, out, 2, rows, cols, cfg=cfg, grid=grid)
                assert np.array_equal(_bytes(cp.asnumpy(out)), _bytes(transpose_cpu(x_host))), \
                    f"tiles_pf {cfg} grid {grid} shape {(rows, cols)} {np.dtype(dtype)} seed {seed}"


@pytest.mark.gpu
@pytest.mark.parametrize("kernel", ["tiles", "tiles_pf"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_gpu_forced_tile_kernel_public_path(cp, dtype, kernel, monkeypatch):
    """TILE_KERNEL forces one kernel for every size through transpose(): odd, batched, misaligned
    shapes (the default picks per element size; this keeps both kernels covered for all)."""
    monkeypatch.setattr(tmod, "TILE_KERNEL", kernel)
    seed = _seed()
    for i, shape in enumerate(SHAPES + [(3, 33, 65), (2, 256, 512), (0, 3, 4), (2, 512, 264)]):
        _check_gpu(cp, _random(shape, dtype, seed + i), seed)
    host = _random((257 * 520 + 1,), dtype, seed)
    x = cp.asarray(host)[1:].reshape(514, 260)          # misaligned by one element
    want = transpose_cpu(host[1:].reshape(514, 260))
    assert np.array_equal(_bytes(cp.asnumpy(transpose(x))), _bytes(want)), \
        f"misaligned {kernel} {np.dtype(dtype)} seed {seed}"


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_gpu_square_pf_every_config(cp, dtype):
    seed = _seed()
    es = np.dtype(dtype).itemsize
    for cfg in tmod.SQUARE_PF_ALL[es]:
        v = cfg[0]
        for n in (v, 32 * v, 32 * v * 2, 32 * v * 3 - v, 32 * v * 4 + v):
            for batch, grid in ((1, None), (2, None), (2, 1), (3, 5)):
                x_host = _random((batch, n, n), dtype, seed + n)
                x = cp.asarray(x_host)
                tmod._launch_square_pf(x.reshape(-1), batch, n, cfg=cfg, grid=grid)
                assert np.array_equal(_bytes(cp.asnumpy(x)), _bytes(transpose_cpu(x_host))), \
                    f"square_pf {cfg} n={n} batch={batch} grid={grid} {np.dtype(dtype)} seed {seed}"


@pytest.mark.gpu
@pytest.mark.parametrize("kernel", ["square", "square_pf"])
@pytest.mark.parametrize("dtype", DTYPES)
def test_gpu_forced_square_kernel_public_path(cp, dtype, kernel, monkeypatch):
    monkeypatch.setattr(tmod, "SQUARE_KERNEL", kernel)
    seed = _seed()
    for i, n in enumerate([1, 2, 3, 31, 32, 33, 64, 127, 128, 129, 131, 256, 264, 300, 512]):
        _check_inplace(cp, _random((n, n), dtype, seed + i), seed)
    _check_inplace(cp, _random((3, 65, 65), dtype, seed), seed)
    _check_inplace(cp, _random((2, 256, 256), dtype, seed), seed)


def _spy_launches(monkeypatch):
    """Record (launcher, cfg) of every launch while still running it."""
    calls = []
    for name in ("_launch_tiles", "_launch_tiles_pf", "_launch_square", "_launch_square_pf"):
        real = getattr(tmod, name)

        def spy(*a, _real=real, _n=name, **kw):
            calls.append((_n, kw.get("cfg")))
            return _real(*a, **kw)
        monkeypatch.setattr(tmod, name, spy)
    return calls


@pytest.mark.gpu
def test_gpu_public_defaults_run_the_measured_kernels(cp, monkeypatch):
    """transpose(x) / transpose(x, inplace=True) on the dtypes whose default changed run the
    chosen kernel (and its fallbacks) and match the twin byte for byte."""
    calls = _spy_launches(monkeypatch)
    seed = _seed()
    for i, (shape, dtype, want) in enumerate([
            ((512, 768), np.uint8, ("_launch_tiles_pf", (8, 32, 1))),
            ((2, 264, 520), np.uint8, ("_launch_tiles_pf", (8, 32, 1))),
            ((36, 44), np.uint8, ("_launch_tiles", None)),
            ((300, 257), np.complex128, ("_launch_tiles_pf", (1, 8, 4))),
            ((2, 64, 96), np.complex128, ("_launch_tiles_pf", (1, 8, 4))),
            ((256, 512), np.float32, ("_launch_tiles", None))]):
        calls.clear()
        _check_gpu(cp, _random(shape, dtype, seed + i), seed)
        assert calls[0] == want, (shape, np.dtype(dtype), calls)
    for i, (shape, dtype, want) in enumerate([
            ((512, 512), np.uint8, ("_launch_square_pf", (8, 32, 1))),
            ((3, 264, 264), np.uint8, ("_launch_square_pf", (8, 32, 1))),
            ((260, 260), np.uint8, ("_launch_square_pf", (4, 16, 2))),
            ((257, 257), np.uint8, ("_launch_square", None)),
            ((256, 256), np.complex128, ("_launch_square", None))]):
        calls.clear()
        _check_inplace(cp, _random(shape, dtype, seed + i), seed)
        assert calls[0] == want, (shape, np.dtype(dtype), calls)


# (CLUSTER_PANEL_BYTES, CLUSTER_THREADS, CLUSTER_SMEM, cluster count override)
CLUSTER_SETTINGS = [(64, 512, 100 * 1024, None), (128, 1024, 227 * 1024, None),
                    (32, 256, 72 * 1024, 1), (64, 128, 512, 3), (16, 64, 96, 2)]


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kernels", [("panel_cluster", "row_cluster"), ("panel_cluster", "row"),
                                     ("panel", "row_cluster")])
def test_gpu_inplace_rectangular_cluster(cp, dtype, kernels, monkeypatch):
    """Cluster panel / row steps: big and tiny shared-memory budgets (K = 8, fallbacks), a single
    cluster striding over every panel and row, panels of 16-128 bytes."""
    monkeypatch.setattr(tmod, "RECT_PANEL_KERNEL", kernels[0])
    monkeypatch.setattr(tmod, "RECT_ROW_KERNEL", kernels[1])
    seed = _seed()
    for pb, nt, sm, grid in CLUSTER_SETTINGS:
        monkeypatch.setattr(tmod, "CLUSTER_PANEL_BYTES", pb)
        monkeypatch.setattr(tmod, "CLUSTER_THREADS", nt)
        monkeypatch.setattr(tmod, "CLUSTER_SMEM", sm)
        monkeypatch.setattr(tmod, "_CLUSTER_GRID_OVERRIDE", grid)
        _check_inplace_rect_set(cp, dtype, seed)


@pytest.mark.gpu
def test_gpu_inplace_rectangular_cluster_large(cp, monkeypatch):
    monkeypatch.setattr(tmod, "RECT_PANEL_KERNEL", "panel_cluster")
    monkeypatch.setattr(tmod, "RECT_ROW_KERNEL", "row_cluster")
    seed = _seed()
    _check_inplace(cp, _random((1009, 4099), np.float32, seed), seed)
    _check_inplace(cp, _random((4099, 1009), np.uint8, seed), seed)
    _check_inplace(cp, _random((2048, 6144), np.uint16, seed), seed)
    _check_inplace(cp, _random((6144, 2048), np.complex128, seed), seed)
    _check_inplace(cp, _random((500, 3000), np.float64, seed), seed)
