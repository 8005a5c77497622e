"""Tests of fsstgpu.kernels.bitshuffle: compatibility with the bitshuffle package, the GPU paths.

Golden vectors below were produced by the real ``bitshuffle`` package (0.5.2) from the inputs of
``_golden_input``; the package itself, when installed, is compared against on random data too.
GPU tests use a fresh seed from os.urandom (named in failures) and poison the memory pool first
so that unwritten output bytes show up.
"""

from __future__ import annotations

import sys
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import fsstgpu.kernels.bitshuffle as bitshuffle_module
from fsstgpu.errors import CorruptDataError
from fsstgpu.kernels.bitshuffle import bitshuffle, bitshuffle_cpu, bitunshuffle, bitunshuffle_cpu

sys.path.insert(0, str(Path(__file__).parent))
from gpu_poison import MAX_ELEMENTS, poison_pool, small_enough  # noqa: E402
from seeds import fresh_seed  # noqa: E402

SHUFFLE_DTYPES = ["u1", "u2", "f4", "i8", "V16"]


def _golden_input(n, dtype, seed):
    isz = np.dtype(dtype).itemsize
    i = np.arange(n * isz, dtype=np.int64)
    return ((((i * i * 31 + i * 7 + seed * 13) % 251) ^ (i >> 3)).astype(np.uint8)).view(dtype)


GOLDEN = [  # (dtype, n, block_size (0 = default), seed, bitshuffle.bitshuffle(x, block_size))
    ("uint8", 37, 0, 1,
     "d728d793fe5401836d0bc732893f6dc30e0023a95a554a32a0aa400f444404bb6c72c6551a"),
    ("uint16", 21, 0, 2,
     "f0a011be0a1a718bfdeefe590038aa52966696f9c0cfba107c1a00b6ff7100f07187cb5a2f327b0fd5dd"),
    ("uint32", 45, 16, 3,
     "f350a5d93fcb227e728e538acc8cc02519fabc62258b41b0b0012e849f86802d3354f088ccac7873494599c4"
     "46393faba6557c1156ab49bb89c6e6455f39c054585a29e813efaa97a0492ecc356439dc32f35a5aab952362"
     "3636d085e5d3f94f78587cbd049bf4aac98219ba13d61d4ecbb4f708334ce699c6d8efbdf52b069840ffe567"
     "ae914e6a7ad417063f10b0dad0ba163fc72898d26a918ab7a7e8a7ca491fe6359d200950bc44224ea8775073"
     "d3715173"),
    ("uint64", 19, 8, 4,
     "3abc6f70c32126303ae9a65dff2227301a4395f9673dda170d06f1585e1bffe8f20b68edc2849b680d065b6b"
     "d8839f68fa0335937c8863f7f2a18c8e699f6308b3678e4a5f2227652bb28eff995affbd32198e52fa44e4a6"
     "94cc9b723db95d40c97a026d418b60a2224c07dda2d59436c97a575bc1e88322144c9ba75e4edd815b010547"
     "c78a8bca4d0d0b47c19c99d02fe0f8378b42576a"),
    ("V16", 13, 0, 6,
     "544937777afc33b454b681e24f3f33b460a2f4d5cb580b83635d5533bd2babdc9c3e63042cc99708635d5566"
     "9a9c06099c3e9c014e3f990f6c5e59c7dc4c5ab193a107bf32a901105321ed7926cac0d153de33e1e4f9cdd3"
     "805eb5af3e00cc2dad8ccf492867d3de52de98d3fa5602dfaf8ecf1ea0355fdd0dd33c22e6049ea3753b3f61"
     "e1a4a5e467272561fbb6b3ca45031b2da1784d801ba4baca5febf40a90260a5ca44f507fc56d4b97f19c7998"
     "fa98789afe917269cf635971ab423b568c32e10878f6a7d639b2609cd6453e29"),
    ("uint16", 77, 24, 7,
     "0f4f3211eed10a4a08719b44fdee93fe59e5ffc7acaa6ac969e976f00f16c6b920ba56ba7c1ad600b6e4008e"
     "adff81633bc33cd1e12d2fd9f81043e8b07e1a70aa1ca5cce0c6f00075aef1144eef35b0a1f842b658810c38"
     "2bf1adcd01645babfc0304d2dedd3819c285f082965fbc4e95c3c14c69c0c3d8a0dfc441111a4f9e6a4d08a3"
     "26509c919ae370b6b65adbc4760c045ed2657e8d06d7"),
    ("int8", 8, 0, 8, "68d6d21b1cb515ae"),
    ("uint32", 7, 0, 9, "759b04a68bae14b394b419b592b111a8879df5906980d56d465aa843"),
]


# ------------------------------------------------------------------------------------------------
# CPU twin
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype,n,block,seed,hexout", GOLDEN)
def test_bitshuffle_golden_vectors(dtype, n, block, seed, hexout):
    x = _golden_input(n, dtype, seed)
    out = bitshuffle_cpu(x, block or None)
    assert out.dtype == np.uint8 and out.tobytes().hex() == hexout
    back = bitunshuffle_cpu(out, dtype, block or None)
    assert back.tobytes() == x.tobytes()


def test_bitshuffle_matches_package():
    pkg = pytest.importorskip("bitshuffle")
    rng = np.random.default_rng(11)
    for dtype in ["u1", "u2", "i4", "u8", "V16", "f8"]:
        isz = np.dtype(dtype).itemsize
        for n in [0, 1, 7, 8, 9, 31, 64, 127, 129, 1000, 4099, 20000]:
            for block in [0, 8, 24, 64, 2048]:
                x = rng.integers(0, 256, n * isz, dtype=np.uint8).view(dtype)
                ref = pkg.bitshuffle(x, block).view(np.uint8).reshape(-1)
                assert np.array_equal(bitshuffle_cpu(x, block or None), ref), (dtype, n, block)


def test_bitshuffle_layout_by_hand():
    # 8 elements: plane k is the byte of bit k of elements 0..7, LSB first
    x = np.arange(8, dtype=np.uint8)
    assert bitshuffle_cpu(x).tolist() == [0b10101010, 0b11001100, 0b11110000, 0, 0, 0, 0, 0]
    # n % 8 trailing elements are copied verbatim, a final partial block is rounded down to 8
    y = np.arange(20, dtype=np.uint16)
    out = bitshuffle_cpu(y)
    assert out[32:].view(np.uint16).tolist() == [16, 17, 18, 19]
    assert out[:2].tolist() == [0b10101010, 0b10101010]


@pytest.mark.parametrize("dtype", SHUFFLE_DTYPES)
def test_bitshuffle_round_trip_blocks(dtype):
    rng = np.random.default_rng(5)
    isz = np.dtype(dtype).itemsize
    for n in (0, 1, 8, 33, 1000, 10007):
        x = rng.integers(0, 256, n * isz, dtype=np.uint8).view(dtype)
        for block in (None, 8, 16, 128, 4096):
            out = bitshuffle_cpu(x, block)
            assert out.size == x.nbytes
            assert bitunshuffle_cpu(out, dtype, block, count=n).tobytes() == x.tobytes()


def test_bitshuffle_errors():
    with pytest.raises(ValueError):
        bitshuffle(np.arange(10), block_size=12)
    with pytest.raises(ValueError):
        bitshuffle(np.arange(10), block_size=-8)
    with pytest.raises(CorruptDataError):
        bitunshuffle(np.zeros(10, np.uint8), np.uint32)
    with pytest.raises(CorruptDataError):
        bitunshuffle(np.zeros(16, np.uint8), np.uint32, count=5)
    with pytest.raises(TypeError):
        bitshuffle([1, 2, 3])
    with pytest.raises(TypeError):
        bitunshuffle(np.zeros(8, np.uint16), np.uint8)


def test_bitshuffle_cpu_cuts_big_blocks(monkeypatch):
    # a block larger than one vectorised step is cut by element ranges: same bytes
    rng = np.random.default_rng(21)
    for dtype, n, block in (("u1", 1000, 512), ("u4", 333, 128), ("V3", 200, 64), ("i8", 77, 24)):
        x = rng.integers(0, 256, n * np.dtype(dtype).itemsize, dtype=np.uint8).view(dtype)
        want = bitshuffle_cpu(x, block)
        monkeypatch.setattr(bitshuffle_module, "_CPU_CHUNK", 40)
        got = bitshuffle_cpu(x, block)
        back = bitunshuffle_cpu(got, dtype, block)
        monkeypatch.undo()
        assert np.array_equal(got, want), (dtype, n, block)
        assert back.tobytes() == x.tobytes(), (dtype, n, block)


def _peak_bytes(fn, *args) -> int:
    tracemalloc.start()
    try:
        fn(*args)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_bitshuffle_cpu_memory_bounded_for_one_big_block():
    # one 16 MiB block took 16 bytes of bits per input byte at once (192 MiB at the peak)
    x = np.random.default_rng(22).integers(0, 2**63, 2 << 20, dtype=np.uint64)
    buf = bitshuffle_cpu(x, x.size)
    limit = 4 * x.nbytes + (80 << 20)
    assert _peak_bytes(bitshuffle_cpu, x, x.size) < limit
    assert _peak_bytes(bitunshuffle_cpu, buf, np.uint64, x.size) < limit


def test_kernels_refuse_masked_arrays():
    """The kernels move plain arrays: a masked array's mask was dropped without a word by
    transpose and bitshuffle (its hidden values moved as data), and rotate failed with
    NumPy's reshape message."""
    from fsstgpu.kernels.bitplane import bitplane_pack
    from fsstgpu.kernels.rotate import rotate
    from fsstgpu.kernels.transpose import transpose

    m = np.ma.masked_array(np.arange(16, dtype=np.int32).reshape(4, 4), mask=np.eye(4, dtype=bool))
    raw = np.ma.masked_array(np.zeros(64, np.uint8))
    for call in (lambda: bitshuffle(m), lambda: bitunshuffle(raw, np.int32),
                 lambda: transpose(m), lambda: rotate(m.ravel(), 1),
                 lambda: bitplane_pack(m.ravel())):
        with pytest.raises(TypeError, match="masked"):
            call()


def test_bitshuffle_whole_number_arguments():
    # block_size and count are ints: int() took 16.0 and False (as the default), and a str or
    # float count was reported as corrupt data that matched it ("16 elements, expected 16")
    x = np.arange(16, dtype=np.uint16)
    buf = bitshuffle(x, np.int64(16))
    assert np.array_equal(bitunshuffle(buf, np.uint16, np.uint8(16), count=np.int32(16)), x)
    assert np.array_equal(bitshuffle(x, 0), bitshuffle(x))    # the package's default
    for block in (16.0, False, True, "16"):
        with pytest.raises(TypeError):
            bitshuffle(x, block)
        with pytest.raises(TypeError):
            bitunshuffle(buf, np.uint16, block)
    for count in (16.0, "16", True):
        with pytest.raises(TypeError):
            bitunshuffle(buf, np.uint16, count=count)
    with pytest.raises(TypeError):
        bitunshuffle(bitshuffle(x[:1]), np.uint16, count=True)


# ------------------------------------------------------------------------------------------------
# GPU against the twin
# ------------------------------------------------------------------------------------------------

def _shuffle_inputs(dtype, rng):
    """``(n, x)``: random arrays of ``n`` ``dtype`` elements, n from 0 to past a million."""
    isz = np.dtype(dtype).itemsize
    for n in (0, 1, 7, 8, 31, 32, 33, 100, 1000, 4097, 65_543, 1_000_003):
        if small_enough(n):
            yield n, rng.integers(0, 256, n * isz, dtype=np.uint8).view(dtype)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", SHUFFLE_DTYPES + ["i4", "u8"])
def test_gpu_bitshuffle_matches_cpu(dtype):
    """Block sizes of multiples of 32 (4- and 8-byte elements: full blocks through the flat
    kernels) and not (every block through the per-block kernels), with partial blocks and
    verbatim tails."""
    import cupy as cp

    seed = fresh_seed()
    for n, x in _shuffle_inputs(dtype, np.random.default_rng(seed)):
        for block in (None, 8, 24, 32, 96, 160, 4096):
            if n > 100_000 and block not in (None, 24, 160):
                continue                          # keep the CPU twin's share of the time small
            poison_pool(cp)
            ref = bitshuffle_cpu(x, block)
            got = bitshuffle(cp.asarray(x), block)
            assert np.array_equal(cp.asnumpy(got), ref), (dtype, n, block, seed)
            poison_pool(cp)
            back = bitunshuffle(cp.asarray(ref), dtype, block)
            assert cp.asnumpy(back).tobytes() == x.tobytes(), (dtype, n, block, seed)


@pytest.mark.gpu
def test_gpu_bitshuffle_unaligned_views():
    """Views at every alignment: the kernels fall back from 16- and 4-byte words to bytes."""
    import cupy as cp

    seed = fresh_seed()
    raw = np.random.default_rng(seed).integers(0, 256, 400_001, dtype=np.uint8)
    dev = cp.asarray(raw)
    for off in (1, 2, 3, 4, 8):
        x = dev[off:off + 400_000 - 64]
        assert np.array_equal(cp.asnumpy(bitshuffle(x)), bitshuffle_cpu(cp.asnumpy(x))), \
            (off, seed)
        assert np.array_equal(cp.asnumpy(bitunshuffle(x, np.uint8, 64)),
                              bitunshuffle_cpu(cp.asnumpy(x), np.uint8, 64)), (off, seed)
        for dtype in (np.uint32, np.uint64):          # the flat kernels' sizes
            if off % np.dtype(dtype).itemsize == 0:
                xs = x[:x.size // 8 * 8].view(dtype)
                assert np.array_equal(cp.asnumpy(bitshuffle(xs)),
                                      bitshuffle_cpu(cp.asnumpy(xs))), (off, dtype, seed)
                assert np.array_equal(cp.asnumpy(bitunshuffle(x[:xs.nbytes], dtype)),
                                      bitunshuffle_cpu(cp.asnumpy(x[:xs.nbytes]), dtype)), \
                    (off, dtype, seed)


class _FakeDevice:
    """A device buffer's address and size only (slices move the address), for the launchers'
    host-side geometry: nothing is read or written."""

    def __init__(self, ptr: int, size: int):
        self.data = type("Pointer", (), {"ptr": ptr})()
        self.size = size

    def __getitem__(self, key):
        start = key.start or 0
        return _FakeDevice(self.data.ptr + start, self.size - start)

    def __setitem__(self, key, value):
        pass   # the verbatim tail's copy


@pytest.mark.parametrize("inverse", [False, True])
@pytest.mark.parametrize(("e", "block", "n"), [
    (1, 8, 2**35 + 45),            # 2**32 + 5 full blocks of 8 bytes, 5 verbatim bytes
    (1, 8, 8 * (2**31 - 1) + 3),   # exactly the largest grid, then a verbatim tail
    (1, 16, 2**36 + 24),           # a final partial block too
    (2, 8, 2**35 + 8)])
def test_per_block_kernels_never_launch_more_blocks_than_a_grid_holds(monkeypatch, inverse, e,
                                                                      block, n):
    """Blocks of fewer elements than a CUDA block's chunk take one CUDA block each: a 32 GiB
    array of bytes in 8-element blocks was one grid of 2**32 + 5 blocks, which the driver's
    unsigned int took as 5 (the rest of the output never written). Every launch now fits a grid,
    and the launches together cover every block once, in order."""
    launches = []
    monkeypatch.setattr(bitshuffle_module, "_run", lambda name, grid, nt, src, dst, sizes, sp:
                        launches.append((grid, src.data.ptr, dst.data.ptr,
                                         [v for _, v in sizes])))
    src, dst = _FakeDevice(0, n * e), _FakeDevice(2**44, n * e)
    bitshuffle_module._launch(src, dst, n, e, block, inverse, 0)
    nfull, mlast, _ = bitshuffle_module._geometry(n, block)
    at = 0   # the next full block
    for k, (grid, sp, dp, (b, full, last, cpb, _, _)) in enumerate(launches):
        assert 0 < grid <= 2**31 - 1
        assert (b, sp, dp - 2**44) == (block, at * block * e, at * block * e)
        assert grid == full * cpb + (1 if last else 0)
        assert last == (mlast if k == len(launches) - 1 else 0)
        at += full
    assert at == nfull


@pytest.mark.gpu
def test_gpu_bitshuffle_of_more_blocks_than_a_grid_holds():
    """32 GiB of bytes in 8-byte blocks (2**32 + 5 of them): the head and the tail of both
    directions against the twin (the middle is whatever the pool held; every byte of it is
    shuffled the same way). Skipped where the device lacks the memory for input and output."""
    import cupy as cp

    if MAX_ELEMENTS is not None:
        pytest.skip("FSSTGPU_GPU_TEST_MAX_ELEMENTS is set")
    n, edge = 2**35 + 45, 1 << 20
    cp.get_default_memory_pool().free_all_blocks()   # (earlier tests' cached blocks)
    if cp.cuda.runtime.memGetInfo()[0] < 2 * n + (1 << 30):
        pytest.skip("needs 65 GiB of free device memory")
    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    head = rng.integers(0, 256, edge, dtype=np.uint8)
    tail = rng.integers(0, 256, edge + 5, dtype=np.uint8)   # from a block boundary
    x = cp.empty(n, cp.uint8)
    x[:edge] = cp.asarray(head)
    x[n - tail.size:] = cp.asarray(tail)
    got = bitshuffle(x, 8)
    x.fill(0xAB)   # the unshuffle's output takes this memory: unwritten bytes show
    del x
    assert np.array_equal(cp.asnumpy(got[:edge]), bitshuffle_cpu(head, 8)), seed
    assert np.array_equal(cp.asnumpy(got[n - tail.size:]), bitshuffle_cpu(tail, 8)), seed
    back = bitunshuffle(got, np.uint8, 8)
    del got
    assert np.array_equal(cp.asnumpy(back[:edge]), head), seed
    assert np.array_equal(cp.asnumpy(back[n - tail.size:]), tail), seed
