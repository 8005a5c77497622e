"""Bitshuffle: bit-plane transposition byte-compatible with the ``bitshuffle`` package (HDF5/Blosc).

It comes as a NumPy twin (vectorised, runs everywhere) and CUDA kernels (``bitshuffle.cu``) that
produce the same bytes; the public functions dispatch on NumPy versus CuPy input.

Layout (byte-compatible with the ``bitshuffle`` package, kiyo-masui/bitshuffle)
    The ``n`` elements of ``e`` bytes are cut into blocks of ``B`` elements (default
    :func:`default_block_size`: ``max(128, 8192 // e // 8 * 8)``).  Every full block, then the
    final partial block rounded down to a multiple of 8 elements, is stored as ``8 * e`` bit planes
    of ``B / 8`` bytes: plane ``p = 8 * j + k`` holds bit ``k`` (0 = least significant) of byte
    ``j`` of every element, element ``i`` at bit ``i % 8`` of byte ``i // 8``.  The last
    ``n % 8`` elements are copied verbatim.  The output has exactly the input's size.

GPU kernels
    One CUDA block per chunk of one bitshuffle block; for 4- and 8-byte elements
    (:data:`FLAT_ELEMENT_SIZES`) with a block size that is a multiple of 32, the full blocks go
    through the "flat" kernels, which treat them as one run of 32-element rows; 1- and 2-byte
    elements (:data:`DIRECT_ELEMENT_SIZES`) shuffle their full blocks through the "direct"
    kernel, each thread loading its row into registers (no shared memory, no barrier).  The
    measurements behind these choices are in BENCHMARKS.md.
"""

from __future__ import annotations

import ctypes

import numpy as np

from fsstgpu.device import array_device, get_cupy, on_arrays_device
from fsstgpu.errors import CorruptDataError
from fsstgpu.kernels.driver import MAX_GRID, launch_kept
from fsstgpu.kernels.loader import get_function
from fsstgpu.limits import whole_number

SOURCE = "bitshuffle.cu"
ELEMENT_SIZES = (1, 2, 4, 8, 16)
FLAT_ELEMENT_SIZES = (4, 8)   # element sizes whose full bitshuffle blocks run the flat kernels
# element sizes whose full blocks shuffle without shared memory (H200, whole call, % of copy:
# 1 byte 70-79 -> 86-95, 2 bytes 72-75 -> 88-94; unshuffling that way lost: 1 / 2 / 4 bytes
# 80-85 / 85-93 / 72-78 staged against 77-82 / 72-75 / 45-47, BENCHMARKS.md section 18)
DIRECT_ELEMENT_SIZES = (1, 2)
_DIRECT_NT = 128
_CPU_CHUNK = 1 << 22      # input bytes per vectorised step of the bitshuffle twin (bounds memory)
# Threads per block of the kernels, per direction and element size: the best of 32-512 in a
# sweep on an H200 (2026-11-30, 1 GiB, % of copy; BENCHMARKS.md): shuffle 64 / 32 / 32 / 128
# and unshuffle 64 / 64 / 32 / 32 for 1 / 2 / 4 / 8-byte elements (16 bytes: not swept).
_NT = {False: {1: 64, 2: 32, 4: 32, 8: 128, 16: 64},    # bitshuffle
       True: {1: 64, 2: 64, 4: 32, 8: 32, 16: 64}}      # bitunshuffle
_NAME = {False: "bitshuffle", True: "bitunshuffle"}
# every kernel instantiation the launchers can run, compiled as one NVRTC module
KERNEL_NAMES = (
    tuple(f"{_NAME[inv]}_kernel<{e},{nt}>" for inv in (False, True)
          for e, nt in _NT[inv].items())
    + tuple(f"{_NAME[inv]}_flat<{e},{_NT[inv][e]}>" for inv in (False, True)
            for e in FLAT_ELEMENT_SIZES)
    + tuple(f"bitshuffle_direct<{e},{_DIRECT_NT}>" for e in DIRECT_ELEMENT_SIZES))


def _kernel(name: str):
    return get_function(SOURCE, name, name_expressions=KERNEL_NAMES)


# ---- shared checks -------------------------------------------------------------------------------

def default_block_size(itemsize: int) -> int:
    """Elements per bitshuffle block for ``itemsize``-byte elements (the package's default).

    Examples
    --------
    >>> from fsstgpu.kernels.bitshuffle import default_block_size
    >>> [default_block_size(e) for e in (1, 2, 4, 8, 16)]
    [8192, 4096, 2048, 1024, 512]
    """
    return max(128, (8192 // itemsize) // 8 * 8)


def _block_size(block_size, itemsize: int) -> int:
    if block_size is None:
        return default_block_size(itemsize)
    b = whole_number(block_size)   # int() took 16.0 and False (the default) as block sizes
    if b == 0:                     # the bitshuffle package's "default"
        return default_block_size(itemsize)
    if b < 0 or b % 8:
        raise ValueError(f"block_size must be a positive multiple of 8, not {block_size!r}")
    return b


def _geometry(n: int, b: int) -> tuple[int, int, int]:
    """(full blocks, elements of the final partial block, verbatim elements)."""
    nfull = n // b
    rest = n - nfull * b
    return nfull, rest - rest % 8, rest % 8


def _elem_dtype(dtype) -> np.dtype:
    dt = np.dtype(dtype)
    if dt.hasobject or dt.itemsize == 0:
        raise TypeError(f"bitshuffle needs a fixed-size dtype, not {dt}")
    return dt


# ---- CPU twin ------------------------------------------------------------------------------------

def _shuffle_parts(raw: np.ndarray, out: np.ndarray, m: int, e: int, inverse: bool) -> None:
    """Bit-transpose blocks too big for one step by element ranges: elements [i0, i1) are bytes
    [i0 / 8, i1 / 8) of each of a block's 8e planes (m and the range are multiples of 8)."""
    step = max(8, _CPU_CHUNK // e // 8 * 8)
    for src, dst in zip(raw, out, strict=True):
        planes = (src if inverse else dst).reshape(8 * e, m // 8)
        for i0 in range(0, m, step):
            i1 = min(m, i0 + step)
            if not inverse:
                bits = np.unpackbits(src[i0 * e:i1 * e].reshape(i1 - i0, e), axis=1,
                                     bitorder="little")
                planes[:, i0 // 8:i1 // 8] = np.packbits(bits.T, axis=1, bitorder="little")
            else:
                bits = np.unpackbits(planes[:, i0 // 8:i1 // 8], axis=1, bitorder="little")
                dst[i0 * e:i1 * e] = np.packbits(bits.T, axis=1, bitorder="little").reshape(-1)


def _shuffle_rows(raw: np.ndarray, m: int, e: int, inverse: bool) -> np.ndarray:
    """Bit-transpose blocks of m elements: raw is (blocks, m * e) bytes."""
    nblk = raw.shape[0]
    out = np.empty_like(raw)
    if m * e > _CPU_CHUNK:
        # a whole block per step took 16 bytes of bits per input byte (a 256 MiB block: 4 GiB)
        _shuffle_parts(raw, out, m, e, inverse)
        return out
    per = max(1, _CPU_CHUNK // max(1, m * e))
    for s in range(0, nblk, per):
        part = raw[s:s + per]
        k = part.shape[0]
        if not inverse:
            bits = np.unpackbits(part.reshape(k, m, e), axis=2, bitorder="little")  # (k, m, 8e)
            planes = np.packbits(bits.transpose(0, 2, 1), axis=2, bitorder="little")
            out[s:s + k] = planes.reshape(k, m * e)
        else:
            bits = np.unpackbits(part.reshape(k, 8 * e, m // 8), axis=2, bitorder="little")
            elems = np.packbits(bits.transpose(0, 2, 1), axis=2, bitorder="little")
            out[s:s + k] = elems.reshape(k, m * e)
    return out


def _bitshuffle_bytes(raw: np.ndarray, n: int, e: int, b: int, inverse: bool) -> np.ndarray:
    nfull, mlast, tail = _geometry(n, b)
    out = np.empty(n * e, dtype=np.uint8)
    if nfull:
        out[:nfull * b * e] = _shuffle_rows(raw[:nfull * b * e].reshape(nfull, b * e), b, e,
                                            inverse).reshape(-1)
    p = nfull * b * e
    if mlast:
        out[p:p + mlast * e] = _shuffle_rows(raw[p:p + mlast * e].reshape(1, mlast * e), mlast, e,
                                             inverse).reshape(-1)
    p += mlast * e
    out[p:] = raw[p:]
    return out


def bitshuffle_cpu(x: np.ndarray, block_size: int | None = None) -> np.ndarray:
    """Bitshuffle a NumPy array (the GPU path's twin); returns ``x.nbytes`` bytes (uint8).

    Parameters
    ----------
    x : numpy.ndarray
        Any fixed-size dtype; read in C order.
    block_size : int, optional
        Elements per block, a positive multiple of 8 (default :func:`default_block_size`).

    Returns
    -------
    numpy.ndarray
        uint8 array of ``x.nbytes`` bytes, identical to ``bitshuffle.bitshuffle(x, block_size)``.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.kernels.bitshuffle import bitshuffle_cpu
    >>> bitshuffle_cpu(np.arange(8, dtype=np.uint8)).tolist()
    [170, 204, 240, 0, 0, 0, 0, 0]
    """
    dt = _elem_dtype(x.dtype)
    e = dt.itemsize
    b = _block_size(block_size, e)
    raw = np.ascontiguousarray(x).reshape(-1).view(np.uint8)
    return _bitshuffle_bytes(raw, raw.size // e, e, b, inverse=False)


def _unshuffle_input(buf, dtype, count):
    dt = _elem_dtype(dtype)
    e = dt.itemsize
    if buf.ndim != 1 or buf.dtype != np.uint8:
        raise TypeError(f"bitunshuffle needs a 1-D uint8 buffer, not {buf.dtype} {buf.shape}")
    if buf.size % e:
        raise CorruptDataError(
            f"bitshuffled buffer of {buf.size} bytes is not a whole number of {e}-byte elements")
    n = buf.size // e
    # a whole number: a str or float count never equalled n and was reported as corrupt data
    # ("holds 16 elements, expected 16"), and True passed for one element
    if count is not None and whole_number(count) != n:
        raise CorruptDataError(f"bitshuffled buffer holds {n} elements, expected {count}")
    return dt, e, n


def bitunshuffle_cpu(buf: np.ndarray, dtype, block_size: int | None = None, *,
                     count: int | None = None) -> np.ndarray:
    """Invert :func:`bitshuffle_cpu`: rebuild the 1-D array of ``dtype`` from its bytes.

    Parameters
    ----------
    buf : numpy.ndarray
        1-D uint8 buffer made by bitshuffle with the same ``block_size``.
    dtype : numpy dtype
        Element type; ``buf.size`` must be a multiple of its size.
    block_size : int, optional
        Elements per block used when shuffling.
    count : int, optional
        Expected number of elements (checked).

    Raises
    ------
    CorruptDataError
        When the buffer size does not fit ``dtype`` or ``count``.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.kernels.bitshuffle import bitshuffle_cpu, bitunshuffle_cpu
    >>> x = np.arange(20, dtype=np.uint16)
    >>> bool((bitunshuffle_cpu(bitshuffle_cpu(x), np.uint16) == x).all())
    True
    """
    dt, e, n = _unshuffle_input(np.asarray(buf), dtype, count)
    b = _block_size(block_size, e)
    return _bitshuffle_bytes(np.ascontiguousarray(buf), n, e, b, inverse=True).view(dt)


# ---- GPU path and dispatch -----------------------------------------------------------------------

_PTR, _I64, _I32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32


def _run(name: str, grid: int, nt: int, src, dst, sizes: tuple, stream_ptr: int) -> None:
    """Kernel ``name`` on (src, dst, *sizes) through the driver, its launch kept for the geometry
    (``driver.launch_kept``): CuPy's call converted every argument on every launch, 16-21 us of
    host time before these kernels started (BENCHMARKS.md section 34)."""
    launch_kept(_kernel, name, grid, nt, ((_PTR, 0), (_PTR, 0), *sizes),
                ((0, src.data.ptr), (1, dst.data.ptr)), stream_ptr)


def _launch_blocks(src, dst, n, e, b, inverse, stream_ptr) -> None:
    """Every block (full, final partial, verbatim tail) through the per-block kernels: a CUDA
    block per chunk, so the full blocks go in runs of at most :data:`MAX_GRID` chunks (8-element
    blocks of bytes: a 32 GiB array is 2**32 of them)."""
    nfull, mlast, tail = _geometry(n, b)
    nt = _NT[inverse][e]
    ch = 32 * nt
    cpb = -(-b // ch)
    run = max(1, MAX_GRID // cpb)
    done = 0
    while nfull - done > run:
        p = done * b * e
        _blocks_kernel(src[p:], dst[p:], e, b, run, 0, cpb, nt, inverse, stream_ptr)
        done += run
    p = done * b * e
    _blocks_kernel(src[p:], dst[p:], e, b, nfull - done, mlast, cpb, nt, inverse, stream_ptr)
    if tail:
        p = (n - tail) * e
        dst[p:] = src[p:]


def _blocks_kernel(src, dst, e, b, nfull, mlast, cpb, nt, inverse, stream_ptr) -> None:
    """The per-block kernel over ``nfull`` full blocks and a final partial one of ``mlast``
    elements at ``src`` / ``dst``."""
    grid = nfull * cpb + -(-mlast // (32 * nt))
    if grid:
        vec16 = int(src.data.ptr % 16 == 0 and dst.data.ptr % 16 == 0 and (b * e) % 16 == 0)
        w4 = int((dst if not inverse else src).data.ptr % 4 == 0 and (b * e) % 4 == 0)
        _run(f"{'bitunshuffle' if inverse else 'bitshuffle'}_kernel<{e},{nt}>", grid, nt, src,
             dst, ((_I64, b), (_I64, nfull), (_I64, mlast), (_I64, cpb), (_I32, vec16),
                   (_I32, w4)), stream_ptr)


def _launch(src, dst, n, e, b, inverse, stream_ptr) -> None:
    direct = not inverse and e in DIRECT_ELEMENT_SIZES and src.data.ptr % 16 == 0
    if b % 32 or not (direct or e in FLAT_ELEMENT_SIZES):
        _launch_blocks(src, dst, n, e, b, inverse, stream_ptr)
        return
    # the full blocks as one run of 32-element rows (straight from registers, or flat through
    # shared memory), the rest through the per-block kernels
    total = (n // b) * b
    if total and direct:
        _run(f"bitshuffle_direct<{e},{_DIRECT_NT}>", -(-total // (32 * _DIRECT_NT)), _DIRECT_NT,
             src, dst, ((_I64, b), (_I64, total), (_I32, int(dst.data.ptr % 4 == 0))),
             stream_ptr)
    elif total:
        nt = _NT[inverse][e]
        vec16 = int(src.data.ptr % 16 == 0 and dst.data.ptr % 16 == 0)
        w4 = int((dst if not inverse else src).data.ptr % 4 == 0)
        _run(f"{'bitunshuffle' if inverse else 'bitshuffle'}_flat<{e},{nt}>",
             -(-total // (32 * nt)), nt, src, dst,
             ((_I64, b), (_I64, total), (_I32, vec16), (_I32, w4)), stream_ptr)
    if n - total:
        p = total * e
        _launch_blocks(src[p:], dst[p:], n - total, e, b, inverse, stream_ptr)


def _bitshuffle_gpu(x, n, e, b, inverse, stream):
    """The GPU path of both directions: ``n`` elements of ``e`` bytes, ``x`` read in C order."""
    if e not in ELEMENT_SIZES:
        raise TypeError(f"the GPU bitshuffle handles elements of {ELEMENT_SIZES} bytes, not {e}")
    cp = get_cupy()
    with on_arrays_device("bitunshuffle" if inverse else "bitshuffle", x=x):
        stream = stream or cp.cuda.get_current_stream()
        with stream:
            src = cp.ascontiguousarray(x).reshape(-1).view(cp.uint8)
            dst = cp.empty(src.size, dtype=cp.uint8)
            _launch(src, dst, n, e, b, inverse, stream.ptr)
    return dst


def bitshuffle(x, block_size: int | None = None, *, stream=None):
    """Bitshuffle ``x`` (NumPy: CPU twin; CuPy: GPU kernels); returns ``x.nbytes`` uint8 bytes.

    Parameters
    ----------
    x : numpy.ndarray or cupy.ndarray
        Elements of 1, 2, 4, 8 or 16 bytes on the GPU (any fixed size on the CPU), C order.
    block_size : int, optional
        Elements per block, a positive multiple of 8 (default :func:`default_block_size`).
    stream : cupy.cuda.Stream, optional
        Stream for the GPU work; nothing synchronises.

    Returns
    -------
    numpy.ndarray or cupy.ndarray
        1-D uint8, byte-compatible with the ``bitshuffle`` package.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.kernels.bitshuffle import bitshuffle, bitunshuffle
    >>> x = np.arange(100, dtype=np.int32)
    >>> bool((bitunshuffle(bitshuffle(x), np.int32) == x).all())
    True
    >>> import cupy as cp  # doctest: +SKIP
    >>> bitshuffle(cp.arange(8, dtype=cp.uint8)).tolist()  # doctest: +SKIP
    [170, 204, 240, 0, 0, 0, 0, 0]
    """
    if array_device(x, "bitshuffle") == "cpu":
        return bitshuffle_cpu(x, block_size)
    e = _elem_dtype(x.dtype).itemsize
    return _bitshuffle_gpu(x, x.size, e, _block_size(block_size, e), False, stream)


def bitunshuffle(buf, dtype, block_size: int | None = None, *, count: int | None = None,
                 stream=None):
    """Invert :func:`bitshuffle`: a 1-D array of ``dtype`` from the shuffled bytes.

    Parameters
    ----------
    buf : numpy.ndarray or cupy.ndarray
        1-D uint8 bytes produced by bitshuffle with the same ``block_size``.
    dtype : numpy dtype
        Element type.
    block_size : int, optional
        Elements per block used when shuffling.
    count : int, optional
        Expected number of elements (checked).
    stream : cupy.cuda.Stream, optional
        Stream for the GPU work; nothing synchronises.

    Returns
    -------
    numpy.ndarray or cupy.ndarray
        The elements, 1-D, of ``dtype``.

    Raises
    ------
    CorruptDataError
        When the buffer is not a whole number of elements, or not ``count`` of them.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.kernels.bitshuffle import bitunshuffle
    >>> bitunshuffle(np.array([170, 204, 240, 0, 0, 0, 0, 0], np.uint8), np.uint8).tolist()
    [0, 1, 2, 3, 4, 5, 6, 7]
    """
    if array_device(buf, "bitunshuffle") == "cpu":
        return bitunshuffle_cpu(buf, dtype, block_size, count=count)
    dt, e, n = _unshuffle_input(buf, dtype, count)
    return _bitshuffle_gpu(buf, n, e, _block_size(block_size, e), True, stream).view(dt)
