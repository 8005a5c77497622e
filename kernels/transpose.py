"""Matrix transpose on the GPU (tiled, out of place or in place) and its NumPy twin.

:func:`transpose` swaps the last two axes of a 2-D or batched (N-D) array and returns a
C-contiguous result.  NumPy input runs :func:`transpose_cpu`; CuPy input runs the kernels of
``transpose.cu``.  Elements are moved as raw bytes, so any dtype of 1, 2, 4, 8 or 16 bytes works
(``uint8`` ... ``complex128``, ``V16`` on the CPU) and the two paths agree byte for byte.

GPU paths (all offsets 64-bit, no host synchronisation, optional ``stream``):

* out of place: 32V x 32V-element shared-memory tiles, XOR-swizzled, with V x V element blocks
  transposed in registers so that 1- to 8-byte elements move as 4- to 16-byte words (V > 1 when
  both dimensions are multiples of V and the pointers are aligned to V elements);
* in place, square: one block swaps tile (i, j) with tile (j, i); no device scratch;
* in place, rectangular, ``g = gcd(rows, cols)`` with ``g * itemsize >= 1024`` bytes (e.g. one
  dimension a multiple of the other): g x g blocks transposed in place, then a cycle-following
  permutation of g-element chunks (:mod:`fsstgpu.kernels.transpose_inplace`); two passes at
  square-kernel and near-copy speed, device scratch at most a few MiB;
* in place, other rectangular shapes (coprime or small g): the decomposition of Catanzaro, Keller
  and Garland (PPoPP 2014) into column rotations, row permutations and column permutations (see
  ``transpose.cu``); three passes over the matrix (two when the dimensions are coprime).  Rows
  and column panels that fit in shared memory need no device scratch; larger ones go through a
  scratch buffer of at most ``32 * max(rows, cols)`` elements.
  The in-place result is a view of the input's memory.

The tile kernel of each case is listed per element size in :data:`OUT_OF_PLACE` and
:data:`IN_PLACE_SQUARE` and picked by :func:`choose_kernel`: the persistent prefetching kernels
(``tiles_pf`` / ``square_pf``) for 1-byte elements (and 16-byte ones out of place), the
one-tile-per-block kernels (``tiles`` / ``square``) otherwise.  The measurements behind these
choices are in BENCHMARKS.md (data-movement kernels).
"""

from __future__ import annotations

import contextlib
import math

import numpy as np

from fsstgpu.device import array_device, get_cupy, on_arrays_device
from fsstgpu.kernels.loader import device_limits, get_function
from fsstgpu.kernels.transpose_inplace import block_shape, permute_chunks, square_blocks

SOURCE = "transpose.cu"
ELEMENT_SIZES = (1, 2, 4, 8, 16)

# Tile kernels per element size, in order of preference: ("tiles_pf", V, TR, MINB) is the
# persistent prefetching kernel (V x V register blocks, blockDim 32 x TR, MINB blocks per SM),
# ("tiles", V) the one-tile-per-block kernel; "square_pf" / "square" likewise in place.  The
# first whose V divides both dimensions and aligns every pointer runs; the last has V = 1.
OUT_OF_PLACE = {
    1: (("tiles_pf", 8, 32, 1), ("tiles", 4), ("tiles", 1)),
    2: (("tiles", 4), ("tiles", 2), ("tiles", 1)),
    4: (("tiles", 2), ("tiles", 1)),
    8: (("tiles", 2), ("tiles", 1)),
    16: (("tiles_pf", 1, 8, 4),),
}
IN_PLACE_SQUARE = {
    1: (("square_pf", 8, 32, 1), ("square_pf", 4, 16, 2), ("square", 1)),
    2: (("square", 4), ("square", 2), ("square", 1)),
    4: (("square", 2), ("square", 1)),
    8: (("square", 2), ("square", 1)),
    16: (("square", 1),),
}
_KERNELS = {"tiles": "transpose_tiles", "tiles_pf": "transpose_tiles_pf",
            "square": "transpose_square_inplace", "square_pf": "transpose_square_pf"}
TILE_ROWS = 8           # blockDim.y of "tiles" / "square" (TROWS in transpose.cu)
PANEL_BYTES = 32        # bytes of one row of a column panel (one DRAM sector)
SCRATCH_FACTOR = 32     # device scratch of the rectangular fallbacks: <= this * max(rows, cols)
ROW_THREADS = 1024      # block size of the row and panel kernels
RECT_KERNELS = ("row_permute", "panel_permute", "row_permute_global", "panel_permute_global")


def _kernel_name(choice: tuple, es: int) -> str:
    kind, *params = choice
    return f"{_KERNELS[kind]}<{es},{','.join(map(str, params))}>"


# Every kernel instantiation the launchers can run, compiled as one NVRTC module.
KERNEL_NAMES = tuple(sorted(
    {_kernel_name(c, es) for table in (OUT_OF_PLACE, IN_PLACE_SQUARE)
     for es, choices in table.items() for c in choices}
    | {f"{k}<{es}>" for k in RECT_KERNELS for es in ELEMENT_SIZES}))
_LARGE_SMEM_SET: set = set()   # (kernel, device) pairs opted in to > 48 KiB of shared memory


def choose_kernel(es: int, rows: int, cols: int, *ptrs: int, inplace: bool = False) -> tuple:
    """The tile kernel :func:`transpose` runs for a ``rows`` x ``cols`` matrix of ``es``-byte
    elements at device addresses ``ptrs``.

    Parameters
    ----------
    es : int
        Element size in bytes (1, 2, 4, 8 or 16).
    rows, cols : int
        The matrix's dimensions (``rows == cols`` for ``inplace``).
    *ptrs : int
        Device addresses of the input and output (in place: the one array).
    inplace : bool, default False
        Choose from :data:`IN_PLACE_SQUARE` instead of :data:`OUT_OF_PLACE`.

    Returns
    -------
    tuple
        The first entry of the table for ``es`` whose V (its second item) divides ``rows`` and
        ``cols`` and every pointer's address in units of ``es`` bytes: ``(kind, V)`` or
        ``(kind, V, TR, MINB)``; the last entry (V = 1) when none does.

    Examples
    --------
    >>> from fsstgpu.kernels.transpose import choose_kernel
    >>> choose_kernel(1, 512, 768, 0, 0), choose_kernel(1, 36, 44, 0, 0)
    (('tiles_pf', 8, 32, 1), ('tiles', 4))
    >>> choose_kernel(1, 260, 260, 0x1000, inplace=True)
    ('square_pf', 4, 16, 2)
    """
    choices = (IN_PLACE_SQUARE if inplace else OUT_OF_PLACE)[es]
    for choice in choices:
        width = es * choice[1]
        if rows % choice[1] == 0 and cols % choice[1] == 0 and all(p % width == 0 for p in ptrs):
            return choice
    return choices[-1]


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
    if array_device(x, "transpose_cpu") != "cpu":   # (which refuses a masked array: its mask)
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


def _check_aligned(*arrays) -> None:
    # the kernels load whole elements (up to 16-byte words): a view that starts inside an
    # element would fault on the device
    for a in arrays:
        if a.data.ptr % a.dtype.itemsize:
            raise ValueError(f"transpose needs device memory aligned to its {a.dtype.itemsize}-"
                             f"byte elements, not address {a.data.ptr:#x}")


def _function(name: str, smem: int):
    fn = get_function(SOURCE, name, name_expressions=KERNEL_NAMES)
    if smem > 48 * 1024:
        key = (name, get_cupy().cuda.Device().id)
        if key not in _LARGE_SMEM_SET:
            fn.max_dynamic_shared_size_bytes = device_limits(get_cupy().cuda.Device().id).smem_optin
            _LARGE_SMEM_SET.add(key)
    return fn


def resident_blocks(threads: int, smem: int, regs: int, sm_smem: int, sm_regs: int,
                    sm_threads: int, max_blocks: int = 32) -> int:
    """Blocks of one kernel resident on an SM at once (sm_90 rules).

    Registers are allocated per warp in units of 256; every block reserves 1 KiB of shared
    memory beyond its own.  The persistent kernels launch this many blocks per SM.

    Parameters
    ----------
    threads, smem, regs : int
        Block size, dynamic shared memory per block (bytes) and registers per thread.
    sm_smem, sm_regs, sm_threads : int
        Shared memory (bytes), registers and threads of one SM.
    max_blocks : int, default 32
        The hardware's limit of resident blocks per SM.

    Examples
    --------
    >>> from fsstgpu.kernels.transpose import resident_blocks
    >>> resident_blocks(1024, 64 * 1024, 64, sm_smem=233472, sm_regs=65536, sm_threads=2048)
    1
    """
    warps = -(-threads // 32)
    per_warp = -(-max(regs, 1) * 32 // 256) * 256
    by_regs = (sm_regs // per_warp) // warps
    by_smem = sm_smem // (smem + 1024)
    by_threads = sm_threads // threads
    return max(0, min(max_blocks, by_regs, by_smem, by_threads))


def _persistent_grid(fn, threads: int, smem: int, total: int) -> int:
    """Grid of a persistent kernel: every block resident at once (at most one per work item)."""
    sms, sm_smem, sm_regs, sm_threads, _ = device_limits(get_cupy().cuda.Device().id)
    per_sm = resident_blocks(threads, smem, int(fn.num_regs), sm_smem, sm_regs, sm_threads)
    return max(1, min(total, sms * max(per_sm, 1), 2**31 - 1))


def _launch_tile_kernel(choice: tuple, es: int, total: int, smem: int, args: tuple) -> None:
    """Launch a tile kernel over ``total`` tiles (tile pairs in place)."""
    fn = _function(_kernel_name(choice, es), smem)
    if len(choice) == 4:          # persistent: (kind, V, TR, MINB)
        tr = choice[2]
        grid, block = _persistent_grid(fn, 32 * tr, smem, total), (32, tr)
    else:
        grid, block = min(total, 2**31 - 1), (32, TILE_ROWS)
    fn((grid,), block, args, shared_mem=smem)


def _tiles(src, dst, batch, rows, cols) -> None:
    es = src.dtype.itemsize
    choice = choose_kernel(es, rows, cols, src.data.ptr, dst.data.ptr)
    side = 32 * choice[1]
    tiles_r, tiles_c = -(-rows // side), -(-cols // side)
    _launch_tile_kernel(choice, es, batch * tiles_r * tiles_c, 1024 * choice[1] ** 2 * es,
                        (src, dst, np.int64(rows), np.int64(cols), np.int64(batch),
                         np.int64(tiles_r), np.int64(tiles_c)))


def _square(x, batch, n) -> None:
    es = x.dtype.itemsize
    choice = choose_kernel(es, n, n, x.data.ptr, inplace=True)
    tiles = -(-n // (32 * choice[1]))
    _launch_tile_kernel(choice, es, batch * tiles * (tiles + 1) // 2,
                        2 * 1024 * choice[1] ** 2 * es,
                        (x, np.int64(n), np.int64(batch), np.int64(tiles)))


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


def _panel_step(flat, m, n, a, b, mode, limit) -> None:
    """Permute every column (mode 0/3: rotate up/down by j/b; 1: gather p(i)+j; 2: scatter)."""
    cupy = get_cupy()
    es = flat.dtype.itemsize
    w = max(1, PANEL_BYTES // es)
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


def _block_inplace(flat, a, g, b) -> None:
    """The (a*g) x (b*g) transpose by g x g blocks and a chunk permutation (two passes): the
    batched square kernel wherever the blocks are contiguous, ``square_blocks`` otherwise."""
    if a == 1:     # the permutation first makes block J the J-th contiguous g x g matrix
        permute_chunks(flat, a, g, b)
        _square(flat, b, g)
    elif b == 1:   # blocks contiguous already
        _square(flat, a, g)
        permute_chunks(flat, a, g, b)
    else:
        square_blocks(flat, a, g, b)
        permute_chunks(flat, a, g, b)


def _rect_inplace(flat, rows, cols, limit) -> None:
    """Transpose the rows x cols matrix held by the contiguous 1-D device array ``flat``, with
    at most ``limit`` bytes of shared memory per block (Catanzaro-Keller-Garland passes)."""
    blocks = block_shape(rows, cols, flat.dtype.itemsize)
    if blocks is not None:
        _block_inplace(flat, *blocks)
        return
    m, n = min(rows, cols), max(rows, cols)
    c = math.gcd(m, n)
    a, b = m // c, n // c
    if rows < cols:   # C2R on the rows x cols view
        if c > 1:
            _panel_step(flat, m, n, a, b, 0, limit)
        _row_step(flat, m, n, c, a, b, 0, limit)
        _panel_step(flat, m, n, a, b, 1, limit)
    else:             # R2C on the cols x rows view of the result
        _panel_step(flat, m, n, a, b, 2, limit)
        _row_step(flat, m, n, c, a, b, 1, limit)
        if c > 1:
            _panel_step(flat, m, n, a, b, 3, limit)


def transpose(x, out=None, *, inplace: bool = False, stream=None, smem_limit: int | None = None):
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
        the transposed shape.  Square matrices swap tile pairs; rectangular ones whose
        ``gcd(rows, cols)`` elements fill 1 KiB transpose g x g blocks and permute g-element
        chunks (:mod:`fsstgpu.kernels.transpose_inplace`); the others use the
        Catanzaro-Keller-Garland decomposition (device scratch: none when a row and a 32-byte
        column panel fit in shared memory, else at most ``32 * max(rows, cols)`` elements).
    stream : cupy.cuda.Stream, optional
        Stream for the GPU work (default: the current stream); ignored for NumPy input.
    smem_limit : int, optional
        GPU, in place, Catanzaro-Keller-Garland shapes only: the most shared memory (bytes) a
        row or column-panel pass may use per block; default (None) the device's opt-in
        maximum.  Rows and panels that do not fit go through device scratch (a small limit
        forces that path).

    Returns
    -------
    numpy.ndarray or cupy.ndarray
        The transposed array: ``out``, a new array, or a view of x's memory when ``inplace``.

    Raises
    ------
    ValueError
        For fewer than 2 dimensions, an unusable ``out`` / in-place request, or (GPU) device
        memory not aligned to the element size.
    TypeError
        For an element size other than 1, 2, 4, 8 or 16 bytes, or an input that is neither a
        NumPy nor a CuPy array.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.kernels.transpose import transpose
    >>> transpose(np.arange(6, dtype=np.float32).reshape(2, 3)).shape
    (3, 2)
    >>> import cupy as cp  # doctest: +SKIP
    >>> x = cp.arange(6, dtype=cp.uint8).reshape(2, 3)  # doctest: +SKIP
    >>> transpose(x, inplace=True).tolist()  # doctest: +SKIP
    [[0, 3], [1, 4], [2, 5]]
    """
    if isinstance(x, np.ndarray):
        return transpose_cpu(x, out, inplace=inplace)
    if not _is_cupy_array(x):
        raise TypeError(f"transpose needs a numpy or cupy array, not {type(x).__name__}")
    cupy = get_cupy()
    rows, cols, shape = _check_input(x)
    batch = math.prod(x.shape[:-2])
    ctx = stream if stream is not None else contextlib.nullcontext()
    with on_arrays_device("transpose", x=x), ctx:  # (out elsewhere: _check_out names both)
        if inplace:
            _check_inplace(x, out)
            _check_aligned(x)
            flat = x.reshape(-1)
            if flat.size and rows > 1 and cols > 1:
                if rows == cols:
                    _square(flat, batch, rows)
                else:
                    optin = device_limits(get_cupy().cuda.Device().id).smem_optin
                    limit = optin if smem_limit is None else min(max(0, int(smem_limit)), optin)
                    size = rows * cols
                    for i in range(batch):
                        _rect_inplace(flat[i * size:(i + 1) * size], rows, cols, limit)
            return flat.reshape(shape)
        src = cupy.ascontiguousarray(x)
        if out is None:
            out = cupy.empty(shape, dtype=x.dtype)
        else:
            _check_out(out, x, shape, cupy.ndarray, cupy.may_share_memory)
            if out.device.id != x.device.id:   # the kernel runs on x's device
                raise ValueError(f"out is on device {out.device.id}, x on {x.device.id}")
        if out.size:
            _check_aligned(src, out)
            _tiles(src, out, batch, rows, cols)
        return out
