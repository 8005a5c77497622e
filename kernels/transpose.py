"""Matrix transpose on the GPU (tiled, out of place or in place) and its NumPy twin.

:func:`transpose` swaps the last two axes of a 2-D or batched (N-D) array and returns a
C-contiguous result.  NumPy input runs :func:`transpose_cpu`; CuPy input runs the kernels of
``transpose.cu``.  Elements are moved as raw bytes, so any dtype of 1, 2, 4, 8 or 16 bytes works
(``uint8`` ... ``complex128``, ``V16`` on the CPU) and the two paths agree byte for byte.

GPU paths (all offsets 64-bit, no host synchronisation, optional ``stream``):

* out of place: 32V x 32V-element shared-memory tiles, XOR-swizzled, with V x V element blocks
  transposed in registers so that 1- to 8-byte elements move as 4- to 16-byte words (V > 1 when
  both dimensions are multiples of V and both pointers are aligned; otherwise V = 1);
* in place, square: one block swaps tile (i, j) with tile (j, i); no device scratch;
* in place, rectangular: the decomposition of Catanzaro, Keller and Garland (PPoPP 2014) into
  column rotations, row permutations and column permutations (see ``transpose.cu``); three passes
  over the matrix (two when the dimensions are coprime).  Rows and column panels that fit in
  shared memory need no device scratch; larger ones go through a scratch buffer of at most
  ``32 * max(rows, cols)`` elements.  The result is a view of the input's memory.

Kernel choice (defaults measured on an NVIDIA H200, 2026-11-29, one run, 1 GiB matrices, % of
the same run's device-to-device copy bandwidth; BENCHMARKS.md, section 3):
the default is picked per element size from :data:`TILE_DEFAULT` (out of place) and
:data:`SQUARE_DEFAULT` (in place, square):

* out of place, 1-byte (uint8 32768 x 32768): ``tiles_pf`` V=8 TR=32 MINB=1, 87.9% (``tiles``
  V=4: 78.3%; ``tiles_pf`` V=8 TR=16 MINB=2: 85.1%, V=8 TR=8 MINB=2: 83.9%, V=4 TR=8 MINB=4:
  63.8%);
* out of place, 16-byte (complex128 8192 x 8192): ``tiles_pf`` V=1 TR=8 MINB=4, 87.8% (``tiles``
  V=1: 80.2%; ``tiles_pf`` V=1 TR=4 MINB=8: 81.9%, V=1 TR=16 MINB=2: 82.2%);
* in place square, 1-byte (uint8 32768 x 32768): ``square_pf`` V=8 TR=32 MINB=1, 89.2%
  (``square`` V=4: 59.3%; ``square_pf`` V=8 TR=16 MINB=1: 87.3%, V=4 TR=16 MINB=2: 62.8%,
  V=4 TR=8 MINB=2: 51.2%);
* every other element size (2, 4, 8 bytes; 16 bytes in place) keeps ``tiles`` / ``square``: the
  variants were not re-measured against them;
* in place rectangular keeps ``panel`` / ``row``: every cluster variant measured slower.

A ``*_pf`` default applies only where its V fits the shape and pointers; otherwise the next
listed config (measured better than the old kernel) or the old kernel runs.  The old kernels stay
selectable (``TILE_KERNEL`` / ``SQUARE_KERNEL`` force one kernel for every element size).
"""

from __future__ import annotations

import contextlib
import math

import numpy as np

from fsstgpu.device import get_cupy
from fsstgpu.kernels._loader import get_function

SOURCE = "transpose.cu"
ELEMENT_SIZES = (1, 2, 4, 8, 16)

# Register-block width V per element size, in order of preference (V * size bytes per word).
TILE_V = {1: (4, 1), 2: (4, 2, 1), 4: (2, 1), 8: (2, 1), 16: (1,)}
SQUARE_V = {1: (4, 1), 2: (4, 2, 1), 4: (2, 1), 8: (2, 1), 16: (1,)}
_ALL_V = {1: (1, 4), 2: (1, 2, 4), 4: (1, 2, 4), 8: (1, 2), 16: (1,)}

PANEL_BYTES = 32        # bytes of one row of a column panel (one DRAM sector)
SCRATCH_FACTOR = 32     # device scratch of the rectangular fallbacks: <= this * max(rows, cols)
ROW_THREADS = 1024      # block size of the row and panel kernels
_SMEM_LIMIT_OVERRIDE = None   # tests lower it to force the scratch fallbacks

# ---- kernel variants (helper H3d) and the default per element size ---------------------------
# Out of place: "tiles" (32V x 32V tiles, one per block) or "tiles_pf" (persistent, prefetching,
# prmt byte transposes).  (V, TR, MINB) of "tiles_pf": V x V register blocks, blockDim 32 x TR,
# __launch_bounds__(32 * TR, MINB); TILE_PF_ALL is every compiled config, TILE_PF the best
# measured one per size (used when TILE_KERNEL forces "tiles_pf" or no cfg is given).
TILE_PF = {1: (8, 32, 1), 2: (4, 8, 4), 4: (2, 8, 4), 8: (2, 8, 4), 16: (1, 8, 4)}
TILE_PF_ALL = {1: ((8, 8, 2), (8, 16, 2), (8, 32, 1), (4, 8, 4)), 2: ((4, 8, 4),),
               4: ((2, 8, 4),), 8: ((2, 8, 4),), 16: ((1, 4, 8), (1, 8, 4), (1, 16, 2))}
# In place square: "square" (one block swaps a tile pair) or "square_pf" (both tiles of a pair
# and the next pair in flight).
SQUARE_PF = {1: (8, 32, 1), 2: (4, 8, 2), 4: (2, 8, 2), 8: (2, 8, 2), 16: (1, 8, 2)}
SQUARE_PF_ALL = {1: ((4, 16, 2), (4, 8, 2), (8, 32, 1), (8, 16, 1)), 2: ((4, 8, 2),),
                 4: ((2, 8, 2),), 8: ((2, 8, 2),), 16: ((1, 8, 2), (1, 4, 4))}
# Defaults per element size: (kernel, configs in order of preference).  The first config whose V
# fits the shape and the pointers runs; when none does, the old kernel ("tiles" / "square" with
# TILE_V / SQUARE_V) runs.  Measured on an H200, 2026-11-29, 1 GiB, % of device copy (module
# docstring has every variant):
#   1 B out of place: tiles_pf V=8 TR=32 MINB=1 87.9% vs tiles V=4 78.3%; for shapes where V=8
#     does not fit, tiles V=4 (78.3%) beats tiles_pf V=4 TR=8 MINB=4 (63.8%): no second config.
#   16 B out of place: tiles_pf V=1 TR=8 MINB=4 87.8% vs tiles V=1 80.2%.
#   1 B in place square: square_pf V=8 TR=32 MINB=1 89.2% vs square V=4 59.3%; where V=8 does not
#     fit, square_pf V=4 TR=16 MINB=2 (62.8%) still beats square V=4 (59.3%).
#   2, 4, 8 B: the variants were not re-measured against the old kernels: those stay.
TILE_DEFAULT = {1: ("tiles_pf", ((8, 32, 1),)), 2: ("tiles", ()), 4: ("tiles", ()),
                8: ("tiles", ()), 16: ("tiles_pf", ((1, 8, 4),))}
SQUARE_DEFAULT = {1: ("square_pf", ((8, 32, 1), (4, 16, 2))), 2: ("square", ()),
                  4: ("square", ()), 8: ("square", ()), 16: ("square", ())}
# None: the per-size defaults above.  "tiles" / "tiles_pf" (TILE_KERNEL) and "square" /
# "square_pf" (SQUARE_KERNEL) force one kernel for every element size (tests, benchmarks).
TILE_KERNEL = None
SQUARE_KERNEL = None
# In place rectangular: column steps "panel" (default) or "panel_cluster"; row step "row"
# (default) or "row_cluster" (the panel / row split over a thread-block cluster of K CTAs).
RECT_PANEL_KERNEL = "panel"
RECT_ROW_KERNEL = "row"
CLUSTER_SIZES = (2, 4, 8)         # compiled cluster sizes K (8 = the portable maximum)
CLUSTER_PANEL_BYTES = 64          # panel width of "panel_cluster" (halved until a panel fits)
CLUSTER_SMEM = 72 * 1024          # shared memory per CTA aimed at (72 KiB: 3 CTAs per SM)
CLUSTER_THREADS = 512             # block size of the cluster kernels
_CLUSTER_GRID_OVERRIDE = None     # tests set a cluster count to force panel / row striding

_NAMES_X = tuple(
    [f"transpose_tiles_pf<{es},{v},{tr},{mb}>" for es in ELEMENT_SIZES
     for v, tr, mb in TILE_PF_ALL[es]]
    + [f"transpose_square_pf<{es},{v},{tr},{mb}>" for es in ELEMENT_SIZES
       for v, tr, mb in SQUARE_PF_ALL[es]]
    + [f"{k}<{es},{K}>" for k in ("panel_permute_cluster", "row_permute_cluster")
       for es in ELEMENT_SIZES for K in CLUSTER_SIZES]
)

_NAMES = tuple(
    [f"transpose_tiles<{es},{v}>" for es in ELEMENT_SIZES for v in _ALL_V[es]]
    + [f"transpose_square_inplace<{es},{v}>" for es in ELEMENT_SIZES for v in _ALL_V[es]]
    + [f"{k}<{es}>" for k in ("row_permute", "panel_permute", "row_permute_global",
                              "panel_permute_global") for es in ELEMENT_SIZES]
)
_ATTR_SET: set = set()


# ------------------------------------------------------------------------------------------------
# Argument checks shared by both paths
# ------------------------------------------------------------------------------------------------

def _check_input(x) -> tuple[int, int, tuple]:
    if x.ndim < 2:
        raise ValueError(f"transpose needs an array of 2 or more dimensions, got shape {x.shape}")
    if x.dtype.hasobject or x.dtype.itemsize not in ELEMENT_SIZES:
        raise TypeError(
            f"transpose supports elements of {ELEMENT_SIZES} bytes, not dtype {x.dtype} "
            f"({x.dtype.itemsize} bytes)")
    rows, cols = x.shape[-2], x.shape[-1]
    return rows, cols, x.shape[:-2] + (cols, rows)


def _check_out(out, x, shape, array_type, may_share) -> None:
    if not isinstance(out, array_type):
        raise TypeError(f"out must be a {array_type.__module__}.ndarray like x, "
                        f"not {type(out).__name__}")
    if out.dtype != x.dtype:
        raise ValueError(f"out has dtype {out.dtype}, expected {x.dtype}")
    if tuple(out.shape) != tuple(shape):
        raise ValueError(f"out has shape {out.shape}, expected {shape}")
    if not out.flags.c_contiguous:
        raise ValueError("out must be C-contiguous")
    if out.size and may_share(out, x):
        raise ValueError("out overlaps x; use inplace=True to transpose in place")


def _check_inplace(x, out) -> None:
    if out is not None:
        raise ValueError("out cannot be given with inplace=True")
    if not x.flags.c_contiguous:
        raise ValueError("inplace=True needs a C-contiguous array")


# ------------------------------------------------------------------------------------------------
# CPU twin
# ------------------------------------------------------------------------------------------------

def transpose_cpu(x: np.ndarray, out: np.ndarray | None = None, *, inplace: bool = False):
    """Swap the last two axes of a NumPy array into C-contiguous memory (the GPU path's twin).

    Parameters
    ----------
    x : numpy.ndarray
        Array of 2 or more dimensions (leading axes are a batch) with 1-, 2-, 4-, 8- or 16-byte
        elements.
    out : numpy.ndarray, optional
        C-contiguous array of shape ``x.shape[:-2] + (cols, rows)`` and x's dtype, not
        overlapping x; receives the result.
    inplace : bool, default False
        Transpose inside x's own buffer (x must be C-contiguous and writeable) and return a view
        of that buffer with the transposed shape.

    Returns
    -------
    numpy.ndarray
        The transposed array: ``out``, a new array, or a view of x's memory when ``inplace``.

    Raises
    ------
    ValueError
        For fewer than 2 dimensions or an unusable ``out`` / in-place request.
    TypeError
        For an element size other than 1, 2, 4, 8 or 16 bytes.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.kernels.transpose import transpose_cpu
    >>> transpose_cpu(np.arange(6, dtype=np.uint8).reshape(2, 3)).tolist()
    [[0, 3], [1, 4], [2, 5]]
    >>> x = np.arange(6, dtype=np.uint8).reshape(2, 3)
    >>> y = transpose_cpu(x, inplace=True)
    >>> y.shape, np.shares_memory(x, y), x.ravel().tolist()
    ((3, 2), True, [0, 3, 1, 4, 2, 5])
    """
    if not isinstance(x, np.ndarray):
        raise TypeError(f"transpose_cpu needs a numpy.ndarray, not {type(x).__name__}")
    _, _, shape = _check_input(x)
    result = np.ascontiguousarray(np.swapaxes(x, -1, -2))
    if inplace:
        _check_inplace(x, out)
        if not x.flags.writeable:
            raise ValueError("inplace=True needs a writeable array")
        flat = x.reshape(-1)
        flat[...] = result.reshape(-1)
        return flat.reshape(shape)
    if out is None:
        return result
    _check_out(out, x, shape, np.ndarray, np.may_share_memory)
    if not out.flags.writeable:
        raise ValueError("out must be writeable")
    out[...] = result
    return out


# ------------------------------------------------------------------------------------------------
# GPU path
# ------------------------------------------------------------------------------------------------

def _is_cupy_array(x) -> bool:
    return type(x).__module__.split(".")[0] == "cupy" and hasattr(x, "data")


def _function(name: str, smem: int, names: tuple = _NAMES):
    fn = get_function(SOURCE, name, name_expressions=names)
    if smem > 48 * 1024:
        key = (name, get_cupy().cuda.Device().id)
        if key not in _ATTR_SET:
            fn.max_dynamic_shared_size_bytes = _smem_optin()
            _ATTR_SET.add(key)
    return fn


def _smem_optin() -> int:
    cupy = get_cupy()
    return int(cupy.cuda.Device().attributes["MaxSharedMemoryPerBlockOptin"])


def _smem_limit() -> int:
    if _SMEM_LIMIT_OVERRIDE is not None:
        return _SMEM_LIMIT_OVERRIDE
    return _smem_optin()


def _pick_v(prefs, es, rows, cols, *ptrs) -> int:
    for v in prefs:
        width = es * v
        if rows % v == 0 and cols % v == 0 and all(p % width == 0 for p in ptrs):
            return v
    return 1


def _launch_tiles(src, dst, batch, rows, cols, v=None) -> None:
    es = src.dtype.itemsize
    if v is None or rows % v or cols % v or src.data.ptr % (es * v) or dst.data.ptr % (es * v):
        v = _pick_v(TILE_V[es], es, rows, cols, src.data.ptr, dst.data.ptr)
    side = 32 * v
    tiles_r, tiles_c = -(-rows // side), -(-cols // side)
    total = batch * tiles_r * tiles_c
    smem = 1024 * v * v * es
    fn = _function(f"transpose_tiles<{es},{v}>", smem)
    fn((min(total, 2**31 - 1),), (32, 8),
       (src, dst, np.int64(rows), np.int64(cols), np.int64(batch), np.int64(tiles_r),
        np.int64(tiles_c)), shared_mem=smem)


def _launch_square(x, batch, n, v=None) -> None:
    es = x.dtype.itemsize
    if v is None or n % v or x.data.ptr % (es * v):
        v = _pick_v(SQUARE_V[es], es, n, n, x.data.ptr)
    side = 32 * v
    tiles = -(-n // side)
    total = batch * tiles * (tiles + 1) // 2
    smem = 2 * 1024 * v * v * es
    fn = _function(f"transpose_square_inplace<{es},{v}>", smem)
    fn((min(total, 2**31 - 1),), (32, 8), (x, np.int64(n), np.int64(batch), np.int64(tiles)),
       shared_mem=smem)


# ---- variants (helper H3d) ----------------------------------------------------------------------

_DEVICE_LIMITS: dict = {}


def _device_limits() -> tuple[int, int, int, int]:
    """(SMs, shared memory per SM, registers per SM, threads per SM) of the current device."""
    cupy = get_cupy()
    dev = cupy.cuda.Device()
    if dev.id not in _DEVICE_LIMITS:
        at = dev.attributes
        _DEVICE_LIMITS[dev.id] = (int(at["MultiProcessorCount"]),
                                  int(at["MaxSharedMemoryPerMultiprocessor"]),
                                  int(at["MaxRegistersPerMultiprocessor"]),
                                  int(at["MaxThreadsPerMultiProcessor"]))
    return _DEVICE_LIMITS[dev.id]


def resident_blocks(threads: int, smem: int, regs: int, sm_smem: int, sm_regs: int,
                    sm_threads: int, max_blocks: int = 32) -> int:
    """Blocks of one kernel resident on an SM (sm_90 rules: 256-register warp allocation units,
    1 KiB of shared memory reserved per block)."""
    warps = -(-threads // 32)
    per_warp = -(-max(regs, 1) * 32 // 256) * 256
    by_regs = (sm_regs // per_warp) // warps
    by_smem = sm_smem // (smem + 1024)
    by_threads = sm_threads // threads
    return max(0, min(max_blocks, by_regs, by_smem, by_threads))


def _persistent_grid(fn, threads: int, smem: int, total: int) -> int:
    """Grid of a persistent kernel: every block resident at once (at most one per work item)."""
    sms, sm_smem, sm_regs, sm_threads = _device_limits()
    per_sm = resident_blocks(threads, smem, int(fn.num_regs), sm_smem, sm_regs, sm_threads)
    return max(1, min(total, sms * max(per_sm, 1), 2**31 - 1))


def _fitting_cfg(cfgs, es, n_rows, n_cols, *ptrs):
    """First (V, TR, MINB) of cfgs whose V divides both dimensions and aligns every pointer."""
    for v, tr, mb in cfgs:
        width = es * v
        if n_rows % v == 0 and n_cols % v == 0 and all(p % width == 0 for p in ptrs):
            return v, tr, mb
    return None


def _pick_cfg(cfg, table, es, n_rows, n_cols, *ptrs):
    """First of cfg and then table[es] (compiled configs) whose V fits the shape and pointers."""
    if cfg is not None and cfg not in table[es]:
        raise ValueError(f"config {cfg} is not compiled for {es}-byte elements: {table[es]}")
    return _fitting_cfg(([cfg] if cfg else []) + list(table[es]), es, n_rows, n_cols, *ptrs)


def _launch_tiles_pf(src, dst, batch, rows, cols, cfg=None, grid=None) -> None:
    """Out of place through transpose_tiles_pf (falls back to transpose_tiles when no V fits)."""
    es = src.dtype.itemsize
    picked = _pick_cfg(cfg or TILE_PF[es], TILE_PF_ALL, es, rows, cols, src.data.ptr,
                       dst.data.ptr)
    if picked is None:
        _launch_tiles(src, dst, batch, rows, cols)
        return
    v, tr, mb = picked
    side = 32 * v
    tiles_r, tiles_c = -(-rows // side), -(-cols // side)
    total = batch * tiles_r * tiles_c
    smem = 1024 * v * v * es
    fn = _function(f"transpose_tiles_pf<{es},{v},{tr},{mb}>", smem, _NAMES_X)
    g = min(grid or _persistent_grid(fn, 32 * tr, smem, total), total, 2**31 - 1)
    fn((g,), (32, tr),
       (src, dst, np.int64(rows), np.int64(cols), np.int64(batch), np.int64(tiles_r),
        np.int64(tiles_c)), shared_mem=smem)


def _launch_square_pf(x, batch, n, cfg=None, grid=None) -> None:
    """In place square through transpose_square_pf (falls back to the default kernel)."""
    es = x.dtype.itemsize
    picked = _pick_cfg(cfg or SQUARE_PF[es], SQUARE_PF_ALL, es, n, n, x.data.ptr)
    if picked is None:
        _launch_square(x, batch, n)
        return
    v, tr, mb = picked
    side = 32 * v
    tiles = -(-n // side)
    total = batch * tiles * (tiles + 1) // 2
    smem = 2 * 1024 * v * v * es
    fn = _function(f"transpose_square_pf<{es},{v},{tr},{mb}>", smem, _NAMES_X)
    g = min(grid or _persistent_grid(fn, 32 * tr, smem, total), total, 2**31 - 1)
    fn((g,), (32, tr), (x, np.int64(n), np.int64(batch), np.int64(tiles)), shared_mem=smem)


def default_kernels(es: int, *, inplace: bool = False) -> tuple[str, tuple]:
    """(kernel, configs) that :func:`transpose` uses for ``es``-byte elements.

    ``TILE_KERNEL`` / ``SQUARE_KERNEL`` (when set) force one kernel for every size, else
    :data:`TILE_DEFAULT` / :data:`SQUARE_DEFAULT` decide.

    Examples
    --------
    >>> from fsstgpu.kernels.transpose import default_kernels
    >>> default_kernels(1), default_kernels(4)
    (('tiles_pf', ((8, 32, 1),)), ('tiles', ()))
    >>> default_kernels(1, inplace=True)
    ('square_pf', ((8, 32, 1), (4, 16, 2)))
    """
    if inplace:
        forced, table, old, pf, best, compiled = (SQUARE_KERNEL, SQUARE_DEFAULT, "square",
                                                  "square_pf", SQUARE_PF, SQUARE_PF_ALL)
    else:
        forced, table, old, pf, best, compiled = (TILE_KERNEL, TILE_DEFAULT, "tiles",
                                                  "tiles_pf", TILE_PF, TILE_PF_ALL)
    if forced is None:
        return table[es]
    if forced == old:
        return old, ()
    if forced == pf:   # the preferred config, then every other compiled one
        return pf, (best[es],) + tuple(c for c in compiled[es] if c != best[es])
    raise ValueError(f"unknown transpose kernel {forced!r}: expected None, {old!r} or {pf!r}")


def _tiles_default(src, dst, batch, rows, cols) -> None:
    es = src.dtype.itemsize
    kernel, cfgs = default_kernels(es)
    cfg = _fitting_cfg(cfgs, es, rows, cols, src.data.ptr, dst.data.ptr)
    if kernel == "tiles_pf" and cfg is not None:
        _launch_tiles_pf(src, dst, batch, rows, cols, cfg=cfg)
    else:
        _launch_tiles(src, dst, batch, rows, cols)


def _square_default(x, batch, n) -> None:
    es = x.dtype.itemsize
    kernel, cfgs = default_kernels(es, inplace=True)
    cfg = _fitting_cfg(cfgs, es, n, n, x.data.ptr)
    if kernel == "square_pf" and cfg is not None:
        _launch_square_pf(x, batch, n, cfg=cfg)
    else:
        _launch_square(x, batch, n)


def cluster_panel_plan(m: int, es: int, panel_bytes: int, budget: int, threads: int,
                       sizes=CLUSTER_SIZES):
    """(K, w, R) for a column panel of m rows split over a cluster of K CTAs, or None.

    The panel is w elements wide (panel_bytes // es, halved until it fits); CTA k holds panel rows
    [k * R, (k + 1) * R), R = ceil(m / K), in R * w * es <= budget bytes of shared memory.  The
    widest panel wins, then the smallest cluster.
    """
    w = max(1, min(panel_bytes // es, threads))
    w = 1 << (w.bit_length() - 1)          # a power of two ...
    while threads % w:                      # ... dividing the block size (whole rows per sweep)
        w //= 2
    while w >= 1:
        for k in sizes:
            r = -(-m // k)
            if r * w * es <= budget:
                return k, w, r
        w //= 2
    return None


def cluster_row_plan(n: int, es: int, budget: int, sizes=CLUSTER_SIZES):
    """(K, R) for a row of n elements split over K CTAs (R a multiple of 32), or None."""
    for k in sizes:
        per = -(-n // k)
        r = -(-per // 32) * 32
        if r * es <= budget:
            return k, r
    return None


def _cluster_count(fn, k, threads, smem, work) -> int:
    if _CLUSTER_GRID_OVERRIDE is not None:
        return max(1, min(work, _CLUSTER_GRID_OVERRIDE))
    sms, sm_smem, sm_regs, sm_threads = _device_limits()
    per_sm = resident_blocks(threads, smem, int(fn.num_regs), sm_smem, sm_regs, sm_threads)
    return max(1, min(work, sms * max(per_sm, 1) // k, (2**31 - 1) // k))


def _panel_step_cluster(flat, m, n, a, b, mode, limit) -> None:
    """_panel_step with each panel split over a thread-block cluster (falls back to it)."""
    es = flat.dtype.itemsize
    plan = cluster_panel_plan(m, es, CLUSTER_PANEL_BYTES, min(limit, CLUSTER_SMEM),
                              CLUSTER_THREADS)
    if plan is None or m >= 2**31:
        _panel_step(flat, m, n, a, b, mode, limit, PANEL_BYTES)
        return
    k, w, r = plan
    nt = CLUSTER_THREADS
    s = nt // w
    npanels = -(-n // w)
    smem = r * w * es
    fn = _function(f"panel_permute_cluster<{es},{k}>", smem, _NAMES_X)
    clusters = _cluster_count(fn, k, nt, smem, npanels)
    fn((clusters * k,), (nt,),
       (flat, np.uint32(m), np.uint64(n), np.uint32(w), np.int32(mode), np.uint32(a),
        np.uint64(b), np.uint32(n % m), np.uint32(s * n % m), np.uint32(s // a),
        np.uint32(s % a), np.uint64(npanels), np.uint32(r)),
       shared_mem=smem)


def _row_step_cluster(flat, m, n, c, a, b, gather, limit) -> None:
    """_row_step with each row split over a thread-block cluster (falls back to it)."""
    es = flat.dtype.itemsize
    plan = cluster_row_plan(n, es, min(limit, CLUSTER_SMEM))
    if plan is None or n >= 2**31:
        _row_step(flat, m, n, c, a, b, gather, limit)
        return
    k, r = plan
    nt = min(CLUSTER_THREADS, r)
    sr = nt % b
    smem = r * es
    fn = _function(f"row_permute_cluster<{es},{k}>", smem, _NAMES_X)
    clusters = _cluster_count(fn, k, nt, smem, m)
    fn((clusters * k,), (nt,),
       (flat, np.uint32(m), np.uint32(n), np.uint32(c), np.uint32(a), np.uint32(b),
        np.uint32(nt // b), np.uint32(sr), np.uint32(sr * a % b), np.int32(gather),
        np.uint32(r)),
       shared_mem=smem)


def _words(buf):
    """1-D unsigned-integer view of a contiguous buffer, one or two words per element."""
    cupy = get_cupy()
    es = buf.dtype.itemsize
    word = {1: cupy.uint8, 2: cupy.uint16, 4: cupy.uint32}.get(es, cupy.uint64)
    return buf.reshape(-1).view(word)


def _row_step(flat, m, n, c, a, b, gather, limit) -> None:
    """Permute every row: A[i][d_i(j)] <- A[i][j] (gather=0) or A[i][j] <- A[i][d_i(j)]."""
    cupy = get_cupy()
    es = flat.dtype.itemsize
    smem = -(-n // 32) * 32 * es
    if smem <= limit and n < 2**31:
        nt = min(ROW_THREADS, -(-n // 32) * 32)
        sr = nt % b
        fn = _function(f"row_permute<{es}>", smem)
        fn((min(m, 2**31 - 1),), (nt,),
           (flat, np.uint32(m), np.uint32(n), np.uint32(c), np.uint32(a), np.uint32(b),
            np.uint32(nt // b), np.uint32(sr), np.uint32(sr * a % b), np.int32(gather)),
           shared_mem=smem)
        return
    group = max(1, min(m, SCRATCH_FACTOR))   # g rows of n: scratch <= SCRATCH_FACTOR * n
    scratch = cupy.empty(group * n, dtype=flat.dtype)
    words, swords = _words(flat), _words(scratch)
    k = words.size // flat.size
    fn = _function(f"row_permute_global<{es}>", 0)
    for row0 in range(0, m, group):
        g = min(group, m - row0)
        total = g * n
        fn((min(-(-total // 256), 2**31 - 1),), (256,),
           (flat, scratch, np.uint64(m), np.uint64(n), np.uint64(c), np.uint64(a), np.uint64(b),
            np.uint64(row0), np.uint64(g), np.int32(gather)))
        words[row0 * n * k:(row0 + g) * n * k] = swords[:g * n * k]


def _panel_step(flat, m, n, a, b, mode, limit, panel_bytes) -> None:
    """Permute every column (mode 0/3: rotate up/down by j/b; 1: gather p(i)+j; 2: scatter)."""
    cupy = get_cupy()
    es = flat.dtype.itemsize
    w = max(1, panel_bytes // es)
    while w > 1 and m * w * es > limit:
        w //= 2
    if m * w * es <= limit and m < 2**31:
        nt = ROW_THREADS
        s = nt // w
        npanels = -(-n // w)
        fn = _function(f"panel_permute<{es}>", m * w * es)
        fn((min(npanels, 2**31 - 1),), (nt,),
           (flat, np.uint32(m), np.uint64(n), np.uint32(w), np.int32(mode), np.uint32(a),
            np.uint64(b), np.uint32(n % m), np.uint32(s * n % m), np.uint32(s // a),
            np.uint32(s % a), np.uint64(npanels)),
           shared_mem=m * w * es)
        return
    group = max(1, min(n, SCRATCH_FACTOR * n // m))
    scratch = cupy.empty(m * group, dtype=flat.dtype)
    words, swords = _words(flat), _words(scratch)
    k = words.size // flat.size
    grid2 = words.reshape(m, n * k)
    fn = _function(f"panel_permute_global<{es}>", 0)
    for j0 in range(0, n, group):
        g = min(group, n - j0)
        total = m * g
        fn((min(-(-total // 256), 2**31 - 1),), (256,),
           (flat, scratch, np.uint64(m), np.uint64(n), np.uint64(a), np.uint64(b),
            np.uint64(j0), np.uint64(g), np.int32(mode)))
        grid2[:, j0 * k:(j0 + g) * k] = swords[:m * g * k].reshape(m, g * k)


def _rect_inplace(flat, rows, cols, *, panel_bytes=None, panel_kernel=None,
                  row_kernel=None) -> None:
    """Transpose the rows x cols matrix held by the contiguous 1-D device array ``flat``.

    panel_kernel / row_kernel: "panel" / "row" (defaults) or "panel_cluster" / "row_cluster";
    None means RECT_PANEL_KERNEL / RECT_ROW_KERNEL.
    """
    pk = panel_kernel or RECT_PANEL_KERNEL
    rk = row_kernel or RECT_ROW_KERNEL
    if pk not in ("panel", "panel_cluster") or rk not in ("row", "row_cluster"):
        raise ValueError(f"unknown rectangular kernels {pk!r}, {rk!r}")
    limit = _smem_limit()
    panel_bytes = panel_bytes or PANEL_BYTES
    m, n = min(rows, cols), max(rows, cols)
    c = math.gcd(m, n)
    a, b = m // c, n // c

    def panel(mode):
        if pk == "panel_cluster":
            _panel_step_cluster(flat, m, n, a, b, mode, limit)
        else:
            _panel_step(flat, m, n, a, b, mode, limit, panel_bytes)

    def row(gather):
        if rk == "row_cluster":
            _row_step_cluster(flat, m, n, c, a, b, gather, limit)
        else:
            _row_step(flat, m, n, c, a, b, gather, limit)

    if rows < cols:   # C2R on the rows x cols view
        if c > 1:
            panel(0)
        row(0)
        panel(1)
    else:             # R2C on the cols x rows view of the result
        panel(2)
        row(1)
        if c > 1:
            panel(3)


def transpose(x, out=None, *, inplace: bool = False, stream=None):
    """Swap the last two axes of an array into C-contiguous memory, on the GPU for CuPy input.

    Parameters
    ----------
    x : numpy.ndarray or cupy.ndarray
        Array of 2 or more dimensions (leading axes are a batch) with 1-, 2-, 4-, 8- or 16-byte
        elements.  NumPy input runs :func:`transpose_cpu`.
    out : array of x's kind, optional
        C-contiguous array of shape ``x.shape[:-2] + (cols, rows)`` and x's dtype, not
        overlapping x; receives the result.
    inplace : bool, default False
        Transpose inside x's own memory (x must be C-contiguous) and return a view of it with
        the transposed shape.  Square matrices swap tile pairs; rectangular ones use the
        Catanzaro-Keller-Garland decomposition (device scratch: none when a row and a 32-byte
        column panel fit in shared memory, else at most ``32 * max(rows, cols)`` elements).
        The kernel of each case is chosen per element size (:func:`default_kernels`; the module
        docstring has the measurements behind each choice).
    stream : cupy.cuda.Stream, optional
        Stream for the GPU work (default: the current stream); ignored for NumPy input.

    Returns
    -------
    numpy.ndarray or cupy.ndarray
        The transposed array: ``out``, a new array, or a view of x's memory when ``inplace``.

    Raises
    ------
    ValueError
        For fewer than 2 dimensions or an unusable ``out`` / in-place request.
    TypeError
        For an element size other than 1, 2, 4, 8 or 16 bytes, or an input that is neither a
        NumPy nor a CuPy array.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.kernels.transpose import transpose
    >>> transpose(np.arange(6, dtype=np.float32).reshape(2, 3)).shape
    (3, 2)
    """
    if isinstance(x, np.ndarray):
        return transpose_cpu(x, out, inplace=inplace)
    if not _is_cupy_array(x):
        raise TypeError(f"transpose needs a numpy or cupy array, not {type(x).__name__}")
    cupy = get_cupy()
    rows, cols, shape = _check_input(x)
    batch = math.prod(x.shape[:-2])
    ctx = stream if stream is not None else contextlib.nullcontext()
    with cupy.cuda.Device(x.device.id), ctx:
        if inplace:
            _check_inplace(x, out)
            flat = x.reshape(-1)
            if flat.size and rows > 1 and cols > 1:
                if rows == cols:
                    _square_default(flat, batch, rows)
                else:
                    for i in range(batch):
                        _rect_inplace(flat[i * rows * cols:(i + 1) * rows * cols], rows, cols)
            return flat.reshape(shape)
        src = cupy.ascontiguousarray(x)
        if out is None:
            out = cupy.empty(shape, dtype=x.dtype)
        else:
            _check_out(out, x, shape, cupy.ndarray, cupy.may_share_memory)
        if out.size:
            _tiles_default(src, out, batch, rows, cols)
        return out
