"""In-place rectangular transpose by square blocks and a cycle-following permutation of chunks.

:func:`fsstgpu.kernels.transpose.transpose` (``inplace=True``) sends an R x C matrix here when
:func:`block_shape` accepts it; other rectangular shapes take the Catanzaro-Keller-Garland passes
of ``transpose.py``.  With ``g = gcd(R, C)``, ``R = a*g`` and ``C = b*g`` the matrix is an
a x b grid of g x g blocks, and its row-major memory is ``a*g*b`` *chunks* of g elements (chunk
``(I*g + x)*b + J`` is row x of block (I, J)).  The transpose takes two full read+write passes:

1. every g x g block transposed in place: the square kernel of ``transpose.cu`` (batched, the
   ~90%-of-copy path) when the blocks are contiguous (``b == 1``), else :func:`square_blocks`
   (the same tile-pair swap with the matrix's row stride);
2. a permutation of whole chunks, :func:`permute_chunks`: result chunk ``(J*g + x)*a + I`` is
   chunk ``(I*g + x)*b + J`` (:func:`chunk_source`).  When ``a == 1`` (R divides C) the launcher
   runs this step first: the same permutation then makes every block contiguous for step 1.

Step 2 follows the permutation's cycles, planned once per shape on the host (:func:`chunk_plan`,
NumPy pointer doubling, cached) and applied by ``chunk_cycles`` in ``transpose_inplace.cu``: a
warp moves 32 consecutive words of a chunk along a cycle with D = 8 chain steps in flight per
thread and no synchronisation, so a pass is a stream of coalesced chunk-sized copies.  Cycles
longer than the segment length ``seg`` (:func:`segment_length`) are cut into segments whose head
chunks are first saved to device scratch.

Shapes accepted (:func:`block_shape`): a chunk of at least :data:`MIN_CHUNK_BYTES` bytes
(coalesced runs that DRAM streams well, and a plan of at most 12 bytes per 1 KiB of matrix), and
fewer than 2**31 chunks.  Device memory besides the matrix: the plan (8 bytes per short cycle, 16
per segment; tens of bytes for the benchmark shapes, at most 1/85 of the matrix for pathological
cycle structures) and the segment heads (at most ``2 * SEG_SCRATCH`` bytes, 0 when no cycle is
longer than ``seg``).
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np

from fsstgpu.device import get_cupy, on_arrays_device
from fsstgpu.kernels.loader import get_function

SOURCE = "transpose_inplace.cu"
ELEMENT_SIZES = (1, 2, 4, 8, 16)
WORD_SIZES = (16, 8, 4, 2, 1)   # chunk words, widest first (must divide chunk bytes and pointer)
MIN_CHUNK_BYTES = 1024          # block path only for chunks (g elements) of at least this
SEG_SCRATCH = 2 << 20           # segment heads: <= 2 * this many bytes of device scratch
TARGET_WARPS = 32768            # enough chain-walking warps to keep an H200's DRAM busy
MIN_SEG, MAX_SEG = 4, 64        # bounds of the segment length (scratch bound aside)
SQUARE_V = {1: 4, 2: 4, 4: 2, 8: 2, 16: 1}   # square_blocks word width V per element size
SQ_SIDE, SQ_ROWS = 32, 8                     # square_blocks tile side (in V-blocks), blockDim.y
CHAIN_THREADS = 256

KERNEL_NAMES = tuple(sorted(
    {f"chunk_save<{w}>" for w in WORD_SIZES} | {f"chunk_cycles<{w}>" for w in WORD_SIZES}
    | {f"square_blocks<{es},{v}>" for es in ELEMENT_SIZES for v in {SQUARE_V[es], 1}}))


class ChunkPlan(NamedTuple):
    """Cycles of the chunk permutation of an (a*g) x (b*g) matrix, as work items.

    ``singles`` (int32, n x 2): whole cycles ``(start, length)``; ``longs`` (int32, n x 4):
    segments ``(start, steps, slot, next_slot)`` of cycles longer than ``seg``.  Fixed points
    are left out.
    """

    a: int
    g: int
    b: int
    seg: int
    singles: np.ndarray
    longs: np.ndarray


def block_shape(rows: int, cols: int, es: int) -> tuple[int, int, int] | None:
    """``(a, g, b)`` with ``g = gcd(rows, cols)`` when the block path takes this shape, else None.

    Examples
    --------
    >>> from fsstgpu.kernels.transpose_inplace import block_shape
    >>> block_shape(8192, 32768, 4), block_shape(5003, 53636, 4), block_shape(300, 400, 4)
    ((1, 8192, 4), None, None)
    """
    g = math.gcd(rows, cols)
    if rows == cols or g * es < MIN_CHUNK_BYTES or rows * cols // g >= 2**31:
        return None
    return rows // g, g, cols // g


def fast_divisor(d: int) -> tuple[int, int]:
    """``(mul, shift)`` with ``n // d == (n * mul >> 32) >> shift`` for ``0 <= n < 2**31`` (the
    kernels' division by multiply-high; ``mul == 0`` means ``d == 1``).

    Examples
    --------
    >>> from fsstgpu.kernels.transpose_inplace import fast_divisor
    >>> mul, shift = fast_divisor(7)
    >>> ((1000 * mul) >> 32) >> shift
    142
    """
    if not 1 <= d < 2**31:
        raise ValueError(f"divisor {d} out of range")
    if d == 1:
        return 0, 0
    p = 31 + (d - 1).bit_length()
    return -(-(1 << p) // d), p - 32


def chunk_source(q, a: int, g: int, b: int):
    """The chunk that result chunk ``q`` comes from: ``(I*g + x)*b + J`` for
    ``q = (J*g + x)*a + I`` (NumPy twin of the kernel's index map).

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.kernels.transpose_inplace import chunk_source
    >>> chunk_source(np.arange(6), 1, 2, 3).tolist()   # a 2 x 3 transpose of chunks
    [0, 3, 1, 4, 2, 5]
    """
    i, t = q % a, q // a
    x, j = t % g, t // g
    return (i * g + x) * b + j


def segment_length(n_chunks: int, chunk_bytes: int, words_per_chunk: int) -> int:
    """Longest chain one warp walks: short enough for :data:`TARGET_WARPS` warps of work (at most
    :data:`MAX_SEG`), long enough to keep the segment heads under :data:`SEG_SCRATCH`.

    Examples
    --------
    >>> from fsstgpu.kernels.transpose_inplace import segment_length
    >>> segment_length(32768, 32768, 2048), segment_length(3000, 4000, 250)
    (512, 6)
    """
    warps = -(-words_per_chunk // 32)
    by_mem = -(-n_chunks * chunk_bytes // SEG_SCRATCH)
    by_par = n_chunks * warps // TARGET_WARPS
    return max(MIN_SEG, by_mem, min(by_par, MAX_SEG))


@functools.lru_cache(maxsize=16)
def chunk_plan(a: int, g: int, b: int, seg: int) -> ChunkPlan:
    """Plan the cycles of :func:`chunk_source` over ``a*g*b`` chunks (NumPy, O(N log N)).

    Cycle leaders (least position) and every position's distance to its leader along the
    cycle come from pointer doubling.  A cycle of length ``2..seg`` is one item; a longer one is
    cut at the positions whose distance is a multiple of ``seg`` (segments of ``<= seg`` steps;
    each segment's slot holds its head chunk, and its last write takes the next segment's).

    Examples
    --------
    >>> from fsstgpu.kernels.transpose_inplace import chunk_plan
    >>> plan = chunk_plan(1, 2, 3, 4)      # 2 x 3 chunks: one cycle 1 -> 3 -> 4 -> 2 -> 1
    >>> plan.singles.tolist(), plan.longs.shape
    ([[1, 4]], (0, 4))
    """
    n = a * g * b
    pos = np.arange(n, dtype=np.int64)
    src = chunk_source(pos, a, g, b)
    label, f = pos.copy(), src.copy()
    rounds = max(1, (n - 1).bit_length())
    for _ in range(rounds):             # label: least position over 2^k steps, then the cycle
        np.minimum(label, label[f], out=label)
        f = f[f]
    lengths = np.bincount(label, minlength=n)[label]
    lead = label == pos
    short = lead & (lengths > 1) & (lengths <= seg)
    singles = np.stack([pos[short], lengths[short]], axis=1).astype(np.int32).reshape(-1, 2)
    long_pos = lengths > seg
    if not long_pos.any():
        return ChunkPlan(a, g, b, seg, singles, np.zeros((0, 4), np.int32))
    # distance to the leader along src: pointer jumping with the leader as a sink
    dist = np.where(lead, 0, 1).astype(np.int64)
    f = np.where(lead, pos, src)
    for _ in range(rounds):
        dist += dist[f]
        f = f[f]
    heads = np.flatnonzero(long_pos & (dist % seg == 0))
    order = np.lexsort((dist[heads], label[heads]))          # by cycle, then distance
    heads = heads[order]
    k = dist[heads] // seg
    size = (lengths[heads] - 1) // seg + 1                    # segments in this cycle
    slot = np.arange(heads.size, dtype=np.int64)
    steps = np.where(k > 0, seg, (lengths[heads] - 1) % seg + 1)
    nxt = np.where(k > 0, slot - 1, slot + size - 1)
    longs = np.stack([heads, steps, slot, nxt], axis=1).astype(np.int32)
    return ChunkPlan(a, g, b, seg, singles, longs)


# ------------------------------------------------------------------------------------------------
# Launchers
# ------------------------------------------------------------------------------------------------

_DEVICE_PLANS: dict = {}   # (device, a, g, b, seg) -> (singles, longs) on that device


def _function(name: str, smem: int = 0):
    fn = get_function(SOURCE, name, name_expressions=KERNEL_NAMES)
    if smem > 48 * 1024:
        fn.max_dynamic_shared_size_bytes = smem
    return fn


def _device_plan(plan: ChunkPlan):
    cupy = get_cupy()
    key = (cupy.cuda.Device().id, plan.a, plan.g, plan.b, plan.seg)
    if key not in _DEVICE_PLANS:
        if len(_DEVICE_PLANS) >= 16:
            _DEVICE_PLANS.clear()
        _DEVICE_PLANS[key] = (cupy.asarray(plan.singles), cupy.asarray(plan.longs))
    return _DEVICE_PLANS[key]


def _check_flat(flat, a: int, g: int, b: int, what: str) -> None:
    """ValueError unless ``flat`` holds the (a*g) x (b*g) matrix as the kernels read it: 1-D,
    C-contiguous, exactly ``a*g*b*g`` elements of a size they move, fewer than 2**31 chunks
    (their 32-bit chunk indices); the kernels write by address and these sizes alone."""
    if any(isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1
           for v in (a, g, b)):
        raise ValueError(f"{what}: a, g and b must be positive integers, not {(a, g, b)}")
    if a * g * b >= 2**31:
        raise ValueError(f"{what}: {a * g * b} chunks; at most 2**31 - 1")
    if flat.ndim != 1 or not flat.flags.c_contiguous:
        raise ValueError(f"{what} needs a 1-D C-contiguous array, not shape {flat.shape}")
    if flat.dtype.itemsize not in ELEMENT_SIZES or flat.dtype.hasobject:
        raise ValueError(f"{what} moves elements of {ELEMENT_SIZES} bytes, not {flat.dtype}")
    if flat.size != a * g * b * g:
        raise ValueError(f"{what}: an ({a}*{g}) x ({b}*{g}) matrix is {a * g * b * g} elements, "
                         f"the array holds {flat.size}")


def permute_chunks(flat, a: int, g: int, b: int) -> None:
    """Step 2 on the device: chunk ``(J*g + x)*a + I`` of ``flat`` <- chunk ``(I*g + x)*b + J``.

    Parameters
    ----------
    flat : cupy.ndarray
        C-contiguous 1-D array of ``a*g*b*g`` elements, aligned to its element size.
    a, g, b : int
        The shape's block decomposition (:func:`block_shape`).

    Examples
    --------
    >>> import cupy as cp  # doctest: +SKIP
    >>> from fsstgpu.kernels.transpose_inplace import permute_chunks
    >>> a, g, b = 1, 256, 3             # a (1*256) x (3*256) matrix: 768 chunks of 256 floats
    >>> x = cp.arange(a * g * b * g, dtype=cp.float32)  # doctest: +SKIP
    >>> permute_chunks(x, a, g, b)  # chunk 1 <- chunk 3 (J = 0, x = 1)  # doctest: +SKIP
    >>> int(x[g])  # doctest: +SKIP
    768
    """
    _check_flat(flat, a, g, b, "permute_chunks")
    with on_arrays_device("permute_chunks", flat=flat):
        cupy = get_cupy()
        es = flat.dtype.itemsize
        if flat.data.ptr % es:
            raise ValueError(f"permute_chunks needs memory aligned to its {es}-byte elements")
        chunk = g * es
        width = next(w for w in WORD_SIZES if chunk % w == 0 and flat.data.ptr % w == 0)
        wpc = chunk // width
        slices = -(-wpc // 32)
        n = a * g * b
        plan = chunk_plan(a, g, b, segment_length(n, chunk, wpc))
        singles, longs = _device_plan(plan)
        n_single, n_long = len(plan.singles), len(plan.longs)
        if n_single + n_long == 0:
            return
        # the kernels take flat's address as an array of width-byte words (no view needed)
        per_block = CHAIN_THREADS // 32
        if n_long:
            scratch = cupy.empty(n_long * chunk, dtype=cupy.uint8)   # allocations: 256-B aligned
            grid = min(-(-n_long * slices // per_block), 2**31 - 1)
            _function(f"chunk_save<{width}>")((grid,), (CHAIN_THREADS,), (
                flat, scratch, longs, np.uint32(n_long), np.uint32(wpc), np.uint32(slices)))
        else:
            scratch = flat   # never read: no item takes its tail from scratch
        ma, sa = fast_divisor(a)
        mg, sg = fast_divisor(g)
        grid = min(-(-(n_single + n_long) * slices // per_block), 2**31 - 1)
        _function(f"chunk_cycles<{width}>")((grid,), (CHAIN_THREADS,), (
            flat, scratch, singles, np.uint32(n_single), longs, np.uint32(n_long), np.uint32(wpc),
            np.uint32(slices), np.uint32(a), np.uint32(ma), np.uint32(sa), np.uint32(g),
            np.uint32(mg), np.uint32(sg), np.uint32(b)))


def square_blocks(flat, a: int, g: int, b: int) -> None:
    """Step 1 for strided blocks: transpose every g x g block of the (a*g) x (b*g) matrix
    ``flat`` in place (one thread block per tile pair of a block).

    Examples
    --------
    >>> import cupy as cp  # doctest: +SKIP
    >>> from fsstgpu.kernels.transpose_inplace import square_blocks
    >>> x = cp.arange(2 * 3 * 256 * 256, dtype=cp.float32)  # doctest: +SKIP
    >>> square_blocks(x, 2, 256, 3)  # doctest: +SKIP
    """
    _check_flat(flat, a, g, b, "square_blocks")
    with on_arrays_device("square_blocks", flat=flat):
        es = flat.dtype.itemsize
        if flat.data.ptr % es:
            raise ValueError(f"square_blocks needs memory aligned to its {es}-byte elements")
        v = SQUARE_V[es]
        if g % v or flat.data.ptr % (v * es):
            v = 1
        tiles = -(-g // (SQ_SIDE * v))
        total = a * b * tiles * (tiles + 1) // 2
        smem = 2 * (SQ_SIDE * v) ** 2 * es
        _function(f"square_blocks<{es},{v}>", smem)(
            (min(total, 2**31 - 1),), (SQ_SIDE, SQ_ROWS),
            (flat, np.int64(g), np.int64(b * g), np.int64(a * b), np.int64(b), np.int64(tiles)),
            shared_mem=smem)
