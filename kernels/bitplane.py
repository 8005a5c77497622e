"""Bit-plane transposition: bitshuffle (HDF5/Blosc compatible) and a bit-plane integer codec.

Both come as a NumPy twin (vectorised, runs everywhere) and CUDA kernels (``bitplane.cu``) that
produce the same bytes; the public functions dispatch on NumPy versus CuPy input.

bitshuffle layout (byte-compatible with the ``bitshuffle`` package, kiyo-masui/bitshuffle)
    The ``n`` elements of ``e`` bytes are cut into blocks of ``B`` elements (default
    :func:`default_block_size`: ``max(128, 8192 // e // 8 * 8)``).  Every full block, then the
    final partial block rounded down to a multiple of 8 elements, is stored as ``8 * e`` bit planes
    of ``B / 8`` bytes: plane ``p = 8 * j + k`` holds bit ``k`` (0 = least significant) of byte
    ``j`` of every element, element ``i`` at bit ``i % 8`` of byte ``i // 8``.  The last
    ``n % 8`` elements are copied verbatim.  The output has exactly the input's size.

bit-plane codec layout (``bitplane_pack``; all integers little-endian)
    ========  =======  ==========================================================================
    offset    size     content
    ========  =======  ==========================================================================
    0         4        magic ``b"FBP1"``
    4         1        dtype code: 0-3 = uint8/16/32/64, 4-7 = int8/16/32/64
    5         1        flags: bit 0 = delta, bit 1 = zigzag (other bits 0)
    6         2        zero
    8         8        ``n``, the number of values
    16        G        plane count of each group of 32 values, ``G = ceil(n / 32)``
    ...       0-3      zero padding to a multiple of 4
    ...       4 * sum  for each group in order, ``count`` words of 32 bits: word ``b`` holds bit
                       ``b`` of the group's 32 transformed values (value ``i`` at bit ``i``)
    ========  =======  ==========================================================================

    Transform before packing: optional wrapping delta (``v[i] - v[i-1]``, ``v[-1] = 0``), then
    zigzag (``(x << 1) ^ (x >> (w - 1))`` on the signed view) for signed dtypes and whenever delta
    is on (so that small negative steps stay small).  A group's plane count is the bit width of
    the OR of its transformed values; values past ``n`` in the last group are zero.

GPU kernel variants (same bytes; ``variant=`` picks one, None the default)
    bitshuffle / bitunshuffle: ``"tile"`` or ``"flat"``; the default depends on the element size
    (:data:`DEFAULT_BITSHUFFLE_VARIANT`): ``"flat"`` for 4 and 8 bytes (H200, 2026-11-29, % of
    device copy, shuffle / unshuffle: uint32 73 / 69% vs tile 63 / 54%; uint64 82 / 76% vs
    48 / 33%), ``"tile"`` for 1 byte (77 / 84% vs flat 72 / 70%) and for the unmeasured 2 and
    16 bytes.  Codec: ``"split"`` (default) or ``"fused"`` (14-16% vs 10-14% of copy, but its
    unpack raises ``DeviceError`` instead of ``CorruptDataError`` on corrupt input).
"""

from __future__ import annotations

import numpy as np

from fsstgpu.device import get_cupy
from fsstgpu.errors import CorruptDataError, DeviceError
from fsstgpu.kernels._loader import get_function

SOURCE = "bitplane.cu"
ELEMENT_SIZES = (1, 2, 4, 8, 16)
MAGIC = b"FBP1"
HEADER_BYTES = 16
GROUP = 32
FLAG_DELTA, FLAG_ZIGZAG = 1, 2
_CODES = [np.dtype(t).newbyteorder("<") for t in
          ("u1", "u2", "u4", "u8", "i1", "i2", "i4", "i8")]
_CPU_CHUNK = 1 << 22      # input bytes per vectorised step of the bitshuffle twin (bounds memory)
_NT = {1: 128, 2: 128, 4: 128, 8: 128, 16: 64}   # threads per block of the bitshuffle kernels
_THREADS = 256

# GPU kernel variants (same bytes).  Defaults measured on an NVIDIA H200, 2026-11-29, one run,
# 1 GiB, % of the same run's device-to-device copy bandwidth (bitshuffle / bitunshuffle;
# BENCHMARKS.md, section 3):
#   uint8:  tile 77 / 84%  vs flat 72 / 70%  -> tile
#   uint32: tile 63 / 54%  vs flat 73 / 69%  -> flat
#   uint64: tile 48 / 33%  vs flat 82 / 76%  -> flat
# 2- and 16-byte elements were not measured: they keep "tile" (the older default).
BITSHUFFLE_VARIANTS = ("tile", "flat")   # flat: full blocks as one run of 32-element rows
DEFAULT_BITSHUFFLE_VARIANT = {1: "tile", 2: "tile", 4: "flat", 8: "flat", 16: "tile"}
# bit-plane codec: fused 14-16% of copy vs split 10-14% on the same run, but the fused unpack
# raises DeviceError (a look-back timeout) instead of CorruptDataError on corrupt input (see
# tests/test_bitplane.py), so "split" stays the default.
CODEC_VARIANTS = ("split", "fused")      # fused: one kernel per direction, decoupled look-back
DEFAULT_CODEC_VARIANT = "split"
FUSED_TIMEOUT_NS = 2_000_000_000         # a look-back wait longer than this aborts the kernel
_FUSED_GPW = {1: 16, 2: 16, 4: 16, 8: 8}   # groups per warp of the fused kernels, by itemsize


def _is_cupy(x) -> bool:
    return type(x).__module__.split(".")[0] == "cupy"


def _check_array(x, what: str):
    if isinstance(x, np.ndarray):
        return "cpu"
    if _is_cupy(x):
        return "gpu"
    raise TypeError(f"{what} needs a numpy or cupy array, not {type(x).__name__}")


# ------------------------------------------------------------------------------------------------
# bitshuffle: shared checks
# ------------------------------------------------------------------------------------------------

def default_block_size(itemsize: int) -> int:
    """Elements per bitshuffle block for ``itemsize``-byte elements (the package's default).

    Examples
    --------
    >>> from fsstgpu.kernels.bitplane import default_block_size
    >>> [default_block_size(e) for e in (1, 2, 4, 8, 16)]
    [8192, 4096, 2048, 1024, 512]
    """
    return max(128, (8192 // itemsize) // 8 * 8)


def _block_size(block_size, itemsize: int) -> int:
    if block_size is None or block_size == 0:
        return default_block_size(itemsize)
    b = int(block_size)
    if b != block_size or b <= 0 or b % 8:
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


# ------------------------------------------------------------------------------------------------
# bitshuffle: CPU twin
# ------------------------------------------------------------------------------------------------

def _shuffle_rows(raw: np.ndarray, m: int, e: int, inverse: bool) -> np.ndarray:
    """Bit-transpose blocks of m elements: raw is (blocks, m * e) bytes."""
    nblk = raw.shape[0]
    out = np.empty_like(raw)
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
    >>> from fsstgpu.kernels.bitplane import bitshuffle_cpu
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
    if count is not None and count != n:
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
    >>> from fsstgpu.kernels.bitplane import bitshuffle_cpu, bitunshuffle_cpu
    >>> x = np.arange(20, dtype=np.uint16)
    >>> bool((bitunshuffle_cpu(bitshuffle_cpu(x), np.uint16) == x).all())
    True
    """
    dt, e, n = _unshuffle_input(np.asarray(buf), dtype, count)
    b = _block_size(block_size, e)
    return _bitshuffle_bytes(np.ascontiguousarray(buf), n, e, b, inverse=True).view(dt)


# ------------------------------------------------------------------------------------------------
# bitshuffle: GPU path and dispatch
# ------------------------------------------------------------------------------------------------

def _flat_names():
    names = []
    for k in ("bitshuffle_flat", "bitunshuffle_flat"):
        names += [f"{k}<{e},{nt}>" for e, nt in _NT.items()]
    for k in ("bitplane_pack_fused", "bitplane_unpack_fused"):
        names += [f"{k}<{t},{_FUSED_GPW[i]}>" for i, t in _CTYPE.items()]
    return tuple(names)


def _bitshuffle_gpu_flat(cp, src, dst, n, e, b, inverse, stream) -> None:
    """Variant "flat": full blocks through the flat kernels, the rest as in "tile"."""
    if e not in ELEMENT_SIZES:
        raise TypeError(f"the GPU bitshuffle handles elements of {ELEMENT_SIZES} bytes, not {e}")
    if b % 32:
        _bitshuffle_gpu(cp, src, dst, n, e, b, inverse, stream)
        return
    nfull, mlast, tail = _geometry(n, b)
    nt = _NT[e]
    ch = 32 * nt
    total = nfull * b
    if total:
        vec16 = int(src.data.ptr % 16 == 0 and dst.data.ptr % 16 == 0)
        w4 = int((dst if not inverse else src).data.ptr % 4 == 0)
        name = f"{'bitunshuffle' if inverse else 'bitshuffle'}_flat<{e},{nt}>"
        fn = get_function(SOURCE, name, name_expressions=_flat_names())
        fn((-(-total // ch),), (nt,), (src, dst, np.int64(b), np.int64(total), np.int32(vec16),
                                       np.int32(w4)), stream=stream)
    rest = n - total
    if rest:
        p = total * e
        _bitshuffle_gpu(cp, src[p:], dst[p:], rest, e, b, inverse, stream)


def _bitshuffle_gpu(cp, src, dst, n, e, b, inverse, stream) -> None:
    if e not in ELEMENT_SIZES:
        raise TypeError(f"the GPU bitshuffle handles elements of {ELEMENT_SIZES} bytes, not {e}")
    nfull, mlast, tail = _geometry(n, b)
    nt = _NT[e]
    ch = 32 * nt
    cpb = -(-b // ch)
    grid = nfull * cpb + -(-mlast // ch)
    name = f"{'bitunshuffle' if inverse else 'bitshuffle'}_kernel<{e},{nt}>"
    if grid:
        vec16 = int(src.data.ptr % 16 == 0 and dst.data.ptr % 16 == 0 and (b * e) % 16 == 0)
        w4 = int((dst if not inverse else src).data.ptr % 4 == 0 and (b * e) % 4 == 0)
        fn = get_function(SOURCE, name, name_expressions=_ALL_NAMES)
        fn((grid,), (nt,), (src, dst, np.int64(b), np.int64(nfull), np.int64(mlast),
                            np.int64(cpb), np.int32(vec16), np.int32(w4)), stream=stream)
    if tail:
        p = (n - tail) * e
        dst[p:] = src[p:]


def _check_shuffle_variant(variant) -> None:
    if variant is not None and variant not in BITSHUFFLE_VARIANTS:
        raise ValueError(f"bitshuffle variant must be one of {BITSHUFFLE_VARIANTS}, "
                         f"not {variant!r}")


def shuffle_variant(itemsize: int, variant: str | None = None) -> str:
    """GPU bitshuffle kernel variant for ``itemsize``-byte elements (None: the measured default).

    Examples
    --------
    >>> from fsstgpu.kernels.bitplane import shuffle_variant
    >>> [shuffle_variant(e) for e in (1, 2, 4, 8, 16)], shuffle_variant(4, "tile")
    (['tile', 'tile', 'flat', 'flat', 'tile'], 'tile')
    """
    _check_shuffle_variant(variant)
    if variant is None:
        return DEFAULT_BITSHUFFLE_VARIANT.get(itemsize, "tile")
    return variant


def _shuffle_kernel(itemsize: int, variant):
    return _bitshuffle_gpu_flat if shuffle_variant(itemsize, variant) == "flat" else \
        _bitshuffle_gpu


def bitshuffle(x, block_size: int | None = None, *, stream=None, variant: str | None = None):
    """Bitshuffle ``x`` (NumPy: CPU twin; CuPy: GPU kernel); returns ``x.nbytes`` uint8 bytes.

    Parameters
    ----------
    x : numpy.ndarray or cupy.ndarray
        Elements of 1, 2, 4, 8 or 16 bytes on the GPU (any fixed size on the CPU), C order.
    block_size : int, optional
        Elements per block, a positive multiple of 8 (default :func:`default_block_size`).
    stream : cupy.cuda.Stream, optional
        Stream for the GPU work; nothing synchronises.
    variant : str, optional
        GPU kernel variant, one of :data:`BITSHUFFLE_VARIANTS`; ignored on the CPU.  None
        (default) picks by element size from :data:`DEFAULT_BITSHUFFLE_VARIANT`: ``"flat"`` for
        4- and 8-byte elements, ``"tile"`` otherwise (H200 measurements, 2026-11-29).

    Returns
    -------
    numpy.ndarray or cupy.ndarray
        1-D uint8, byte-compatible with the ``bitshuffle`` package.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.kernels import bitshuffle, bitunshuffle
    >>> x = np.arange(100, dtype=np.int32)
    >>> bool((bitunshuffle(bitshuffle(x), np.int32) == x).all())
    True
    """
    _check_shuffle_variant(variant)
    if _check_array(x, "bitshuffle") == "cpu":
        return bitshuffle_cpu(x, block_size)
    cp = get_cupy()
    dt = _elem_dtype(x.dtype)
    e = dt.itemsize
    b = _block_size(block_size, e)
    run = _shuffle_kernel(e, variant)
    stream = stream or cp.cuda.get_current_stream()
    with stream:
        src = cp.ascontiguousarray(x).reshape(-1).view(cp.uint8)
        dst = cp.empty(src.size, dtype=cp.uint8)
        run(cp, src, dst, src.size // e, e, b, False, stream)
    return dst


def bitunshuffle(buf, dtype, block_size: int | None = None, *, count: int | None = None,
                 stream=None, variant: str | None = None):
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
    variant : str, optional
        GPU kernel variant, one of :data:`BITSHUFFLE_VARIANTS`; ignored on the CPU.  None
        (default) picks by element size as :func:`bitshuffle` does.

    Raises
    ------
    CorruptDataError
        When the buffer is not a whole number of elements, or not ``count`` of them.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.kernels import bitunshuffle
    >>> bitunshuffle(np.array([170, 204, 240, 0, 0, 0, 0, 0], np.uint8), np.uint8).tolist()
    [0, 1, 2, 3, 4, 5, 6, 7]
    """
    _check_shuffle_variant(variant)
    if _check_array(buf, "bitunshuffle") == "cpu":
        return bitunshuffle_cpu(buf, dtype, block_size, count=count)
    cp = get_cupy()
    dt, e, n = _unshuffle_input(buf, dtype, count)
    b = _block_size(block_size, e)
    run = _shuffle_kernel(e, variant)
    stream = stream or cp.cuda.get_current_stream()
    with stream:
        src = cp.ascontiguousarray(buf)
        dst = cp.empty(src.size, dtype=cp.uint8)
        run(cp, src, dst, n, e, b, True, stream)
    return dst.view(dt)


# ------------------------------------------------------------------------------------------------
# bit-plane codec: shared pieces
# ------------------------------------------------------------------------------------------------

def _value_dtype(dtype) -> tuple[int, np.dtype, np.dtype, bool]:
    dt = np.dtype(dtype)
    if dt.kind not in "ui" or dt.itemsize not in (1, 2, 4, 8):
        raise TypeError(f"bitplane_pack handles uint8..uint64 and int8..int64, not {dt}")
    signed = dt.kind == "i"
    code = {1: 0, 2: 1, 4: 2, 8: 3}[dt.itemsize] + (4 if signed else 0)
    return code, _CODES[code], np.dtype(f"<u{dt.itemsize}"), signed


def _header(code: int, flags: int, n: int) -> bytes:
    return MAGIC + bytes([code, flags, 0, 0]) + int(n).to_bytes(8, "little")


def _data_start(groups: int) -> int:
    return (HEADER_BYTES + groups + 3) // 4 * 4


def _parse_header(head: bytes, size: int) -> tuple[np.dtype, np.dtype, int, int, int, int]:
    """Validate the fixed header against the buffer size; return
    (dtype, unsigned dtype, flags, n, groups, data start)."""
    if size < HEADER_BYTES:
        raise CorruptDataError(f"bit-plane buffer of {size} bytes is shorter than its "
                               f"{HEADER_BYTES}-byte header")
    if head[:4] != MAGIC:
        raise CorruptDataError(f"bit-plane buffer has magic {head[:4]!r}, expected {MAGIC!r}")
    code, flags = head[4], head[5]
    if code >= len(_CODES):
        raise CorruptDataError(f"bit-plane buffer has unknown dtype code {code}")
    if flags & ~(FLAG_DELTA | FLAG_ZIGZAG) or head[6] or head[7]:
        raise CorruptDataError(f"bit-plane buffer has unknown flags {head[5:8].hex()}")
    n = int.from_bytes(head[8:16], "little")
    groups = -(-n // GROUP)
    start = _data_start(groups)
    if start > size:
        raise CorruptDataError(f"bit-plane buffer of {size} bytes is truncated: {n} values need "
                               f"{groups} plane counts")
    if (size - start) % 4:
        raise CorruptDataError(f"bit-plane buffer has {size - start} bytes of plane words, not a "
                               "multiple of 4 (truncated or padded)")
    dt = _CODES[code]
    return dt, np.dtype(f"<u{dt.itemsize}"), flags, n, groups, start


# ------------------------------------------------------------------------------------------------
# bit-plane codec: CPU twin
# ------------------------------------------------------------------------------------------------

def _transform_cpu(values: np.ndarray, ut: np.dtype, signed: bool, delta: bool):
    u = values.astype(values.dtype.newbyteorder("<"), copy=False).view(ut)
    zig = signed or delta
    if delta:
        u = np.diff(u, prepend=ut.type(0))              # wraps in the unsigned type
    if zig:
        w = 8 * ut.itemsize
        s = u.view(f"<i{ut.itemsize}")
        u = (u << ut.type(1)) ^ (s >> (w - 1)).view(ut)
    return np.asarray(u, dtype=ut), (FLAG_DELTA if delta else 0) | (FLAG_ZIGZAG if zig else 0)


def bitplane_pack_cpu(values: np.ndarray, *, delta: bool = False) -> np.ndarray:
    """Pack integers into the bit-plane layout (the GPU path's twin).

    Parameters
    ----------
    values : numpy.ndarray
        1-D uint8..uint64 or int8..int64.
    delta : bool, default False
        Store wrapping differences of consecutive values (zigzagged): small for sorted or
        slowly varying data.

    Returns
    -------
    numpy.ndarray
        uint8 buffer in the layout of the module docstring, readable by :func:`bitplane_unpack`.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.kernels.bitplane import bitplane_pack_cpu, bitplane_unpack_cpu
    >>> v = np.array([3, 1, 4, 1, 5, 9, 2, 6], dtype=np.uint32)
    >>> buf = bitplane_pack_cpu(v)
    >>> buf.size, bitplane_unpack_cpu(buf).tolist()
    (36, [3, 1, 4, 1, 5, 9, 2, 6])
    """
    values = np.asarray(values)
    if values.ndim != 1:
        raise ValueError(f"bitplane_pack needs a 1-D array, got shape {values.shape}")
    code, _, ut, signed = _value_dtype(values.dtype)
    n = values.size
    u, flags = _transform_cpu(values, ut, signed, delta)
    groups = -(-n // GROUP)
    w = 8 * ut.itemsize
    padded = np.zeros(groups * GROUP, dtype=ut)
    padded[:n] = u
    grid = padded.reshape(groups, GROUP)
    ors = np.bitwise_or.reduce(grid, axis=1) if groups else np.zeros(0, ut)
    counts = np.zeros(groups, dtype=np.uint8)
    for b in range(w):
        counts += (ors >> ut.type(b)) != 0                  # bit width = number of b with or>>b
    top = int(counts.max()) if groups else 0
    words = np.zeros((groups, max(top, 1)), dtype="<u4")
    for b in range(top):
        bits = ((grid >> ut.type(b)) & ut.type(1)).astype(np.uint8)
        words[:, b] = np.packbits(bits, axis=1, bitorder="little").view("<u4")[:, 0]
    keep = np.arange(words.shape[1])[None, :] < counts[:, None]
    start = _data_start(groups)
    out = np.zeros(start + 4 * int(counts.sum(dtype=np.int64)), dtype=np.uint8)
    out[:HEADER_BYTES] = np.frombuffer(_header(code, flags, n), dtype=np.uint8)
    out[HEADER_BYTES:HEADER_BYTES + groups] = counts
    out[start:] = words[keep].view(np.uint8)
    return out


def _as_buffer(buf) -> np.ndarray:
    if isinstance(buf, (bytes, bytearray, memoryview)):
        return np.frombuffer(buf, dtype=np.uint8)
    buf = np.asarray(buf)
    if buf.dtype != np.uint8 or buf.ndim != 1:
        raise TypeError(f"bitplane_unpack needs a 1-D uint8 buffer, not {buf.dtype} {buf.shape}")
    return buf


def bitplane_unpack_cpu(buf) -> np.ndarray:
    """Decode a :func:`bitplane_pack` buffer on the CPU.

    Parameters
    ----------
    buf : numpy.ndarray or bytes
        The packed buffer (1-D uint8).

    Returns
    -------
    numpy.ndarray
        The values, with the dtype recorded in the header.

    Raises
    ------
    CorruptDataError
        For a bad header, plane counts wider than the dtype, or a buffer whose length does not
        match its plane counts (truncated or with trailing bytes).

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.kernels.bitplane import bitplane_pack_cpu, bitplane_unpack_cpu
    >>> v = np.array([-2, 5, 7, 7], dtype=np.int16)
    >>> bitplane_unpack_cpu(bitplane_pack_cpu(v, delta=True)).tolist()
    [-2, 5, 7, 7]
    """
    buf = _as_buffer(buf)
    dt, ut, flags, n, groups, start = _parse_header(buf[:HEADER_BYTES].tobytes(), buf.size)
    w = 8 * ut.itemsize
    counts = buf[HEADER_BYTES:HEADER_BYTES + groups]
    if groups and int(counts.max()) > w:
        g = int(np.argmax(counts > w))
        raise CorruptDataError(f"bit-plane group {g} claims {int(counts[g])} planes, more than "
                               f"the {w} bits of {dt}")
    ends = np.cumsum(counts, dtype=np.int64)
    total = int(ends[-1]) if groups else 0
    have = (buf.size - start) // 4
    if have != total:
        raise CorruptDataError(f"bit-plane buffer has {have} plane words, its counts say {total} "
                               f"({'truncated' if have < total else 'trailing bytes'})")
    words = buf[start:].view("<u4") if start % 4 == 0 else buf[start:].copy().view("<u4")
    begins = ends - counts
    grid = np.zeros((groups, GROUP), dtype=ut)
    top = int(counts.max()) if groups else 0
    for b in range(top):
        sel = counts > b
        wv = np.ascontiguousarray(words[begins[sel] + b])
        bits = np.unpackbits(wv.view(np.uint8).reshape(-1, 4), axis=1, bitorder="little")
        grid[sel] |= bits.astype(ut) << ut.type(b)
    u = grid.reshape(-1)[:n]
    if flags & FLAG_ZIGZAG:
        u = (u >> ut.type(1)) ^ (ut.type(0) - (u & ut.type(1)))
    if flags & FLAG_DELTA:
        u = np.cumsum(u, dtype=ut)
    return np.ascontiguousarray(u).view(dt).astype(dt.newbyteorder("="), copy=False)


# ------------------------------------------------------------------------------------------------
# bit-plane codec: GPU path and dispatch
# ------------------------------------------------------------------------------------------------

_CTYPE = {1: "unsigned char", 2: "unsigned short", 4: "unsigned int", 8: "unsigned long long"}


_CODEC_NAMES = tuple(f"{k}<{t}>" for k in ("bitplane_counts", "bitplane_planes", "bitplane_decode")
                     for t in _CTYPE.values())
_SHUFFLE_NAMES = tuple(f"{k}<{e},{nt}>" for k in ("bitshuffle_kernel", "bitunshuffle_kernel")
                       for e, nt in _NT.items())
_ALL_NAMES = _SHUFFLE_NAMES + _CODEC_NAMES      # one NVRTC compile for every instantiation


def _kernel(kind: str, itemsize: int):
    return get_function(SOURCE, f"{kind}<{_CTYPE[itemsize]}>", name_expressions=_ALL_NAMES)


def _codec_variant(variant):
    variant = DEFAULT_CODEC_VARIANT if variant is None else variant
    if variant not in CODEC_VARIANTS:
        raise ValueError(f"bit-plane codec variant must be one of {CODEC_VARIANTS}, "
                         f"not {variant!r}")
    return variant


def bitplane_pack_bound(n: int, dtype) -> int:
    """Most bytes :func:`bitplane_pack` can produce for ``n`` values of ``dtype``.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.kernels.bitplane import bitplane_pack_bound
    >>> bitplane_pack_bound(100, np.uint32)
    532
    """
    _, _, ut, _ = _value_dtype(dtype)
    groups = -(-int(n) // GROUP)
    return _data_start(groups) + 4 * groups * 8 * ut.itemsize


def bitplane_pack_into(values, out, *, delta: bool = False, stream=None):
    """Pack CuPy integers into a preallocated buffer with one kernel and no synchronisation.

    Parameters
    ----------
    values : cupy.ndarray
        1-D uint8..uint64 or int8..int64 on the GPU.
    out : cupy.ndarray
        1-D uint8, at least :func:`bitplane_pack_bound` bytes, 8-byte aligned.
    delta : bool, default False
        As in :func:`bitplane_pack`.
    stream : cupy.cuda.Stream, optional
        Stream for the GPU work.

    Returns
    -------
    cupy.ndarray
        int64 array of 2 on the device: the packed size in bytes (``out[:size]`` is exactly
        :func:`bitplane_pack`'s result once the stream reaches it) and an error word (nonzero:
        a look-back wait timed out, the bytes are garbage).

    Examples
    --------
    >>> import cupy as cp  # doctest: +SKIP
    >>> from fsstgpu.kernels.bitplane import bitplane_pack_bound, bitplane_pack_into
    >>> v = cp.arange(1000, dtype=cp.uint32)  # doctest: +SKIP
    >>> out = cp.empty(bitplane_pack_bound(v.size, v.dtype), cp.uint8)  # doctest: +SKIP
    >>> size, err = bitplane_pack_into(v, out).get()  # doctest: +SKIP
    """
    cp = get_cupy()
    if not _is_cupy(values):
        raise TypeError(f"bitplane_pack_into needs a cupy array, not {type(values).__name__}")
    if values.ndim != 1:
        raise ValueError(f"bitplane_pack needs a 1-D array, got shape {values.shape}")
    code, _, ut, signed = _value_dtype(values.dtype)
    n = values.size
    if (not _is_cupy(out) or out.dtype != cp.uint8 or out.ndim != 1
            or out.size < bitplane_pack_bound(n, values.dtype) or out.data.ptr % 8):
        raise ValueError("bitplane_pack_into needs a 1-D, 8-byte aligned cupy uint8 buffer of at "
                         f"least {bitplane_pack_bound(n, values.dtype)} bytes")
    groups = -(-n // GROUP)
    zig = signed or delta
    flags = (FLAG_DELTA if delta else 0) | (FLAG_ZIGZAG if zig else 0)
    start = _data_start(groups)
    head = _header(code, flags, n)
    stream = stream or cp.cuda.get_current_stream()
    with stream:
        info = cp.zeros(2, dtype=cp.int64)         # [total words, error word]
        if not groups:
            out[:HEADER_BYTES] = cp.asarray(np.frombuffer(head, np.uint8))
        else:
            src = cp.ascontiguousarray(values).view(ut)
            gpw = _FUSED_GPW[ut.itemsize]
            ntiles = -(-groups // (8 * gpw))
            stat = cp.zeros(3 * ntiles, dtype=cp.uint64)
            ticket = cp.zeros(1, dtype=cp.uint32)
            fn = get_function(SOURCE, f"bitplane_pack_fused<{_CTYPE[ut.itemsize]},{gpw}>",
                              name_expressions=_flat_names())
            fn((ntiles,), (_THREADS,),
               (src, np.int64(n), np.int32(bool(delta)), np.int32(zig), out, np.int64(groups),
                np.int64(start), np.uint64(int.from_bytes(head[:8], "little")),
                np.uint64(int.from_bytes(head[8:], "little")), stat, ticket, info,
                info[1:].view(cp.int32), np.uint64(FUSED_TIMEOUT_NS)))
        info[0] = info[0] * 4 + start
    return info


def _pack_fused(cp, values, delta, stream):
    out = cp.empty(bitplane_pack_bound(values.size, values.dtype), dtype=cp.uint8)
    size, err = (int(v) for v in bitplane_pack_into(values, out, delta=delta,
                                                    stream=stream).get(stream=stream))
    if err:
        raise DeviceError(f"bitplane_pack (fused): a look-back wait timed out after "
                          f"{FUSED_TIMEOUT_NS / 1e9:g} s; error word {err}")
    return out[:size]


def bitplane_pack(values, *, delta: bool = False, stream=None, variant: str | None = None):
    """Pack integers into bit planes (NumPy: CPU twin; CuPy: GPU kernels, same bytes).

    The GPU path reads the total size back once (to allocate the exact output), so it
    synchronises ``stream`` once.

    Parameters
    ----------
    values : numpy.ndarray or cupy.ndarray
        1-D uint8..uint64 or int8..int64.
    delta : bool, default False
        Store wrapping, zigzagged differences of consecutive values.
    stream : cupy.cuda.Stream, optional
        Stream for the GPU work.
    variant : str, optional
        GPU variant, one of :data:`CODEC_VARIANTS` (default :data:`DEFAULT_CODEC_VARIANT`).
        ``"fused"`` runs one kernel into an upper-bound buffer and returns a view of its first
        bytes (one synchronisation; :func:`bitplane_pack_into` has none).

    Returns
    -------
    numpy.ndarray or cupy.ndarray
        The packed uint8 buffer (layout in the module docstring).

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.kernels import bitplane_pack, bitplane_unpack
    >>> v = np.arange(1000, dtype=np.int64) * 3
    >>> buf = bitplane_pack(v, delta=True)
    >>> int(buf.size), bool((bitplane_unpack(buf) == v).all())
    (432, True)
    """
    variant = _codec_variant(variant)
    if _check_array(values, "bitplane_pack") == "cpu":
        return bitplane_pack_cpu(values, delta=delta)
    cp = get_cupy()
    if variant == "fused":
        return _pack_fused(cp, values, delta, stream or cp.cuda.get_current_stream())
    if values.ndim != 1:
        raise ValueError(f"bitplane_pack needs a 1-D array, got shape {values.shape}")
    code, _, ut, signed = _value_dtype(values.dtype)
    n = values.size
    groups = -(-n // GROUP)
    zig = signed or delta
    flags = (FLAG_DELTA if delta else 0) | (FLAG_ZIGZAG if zig else 0)
    start = _data_start(groups)
    stream = stream or cp.cuda.get_current_stream()
    with stream:
        src = cp.ascontiguousarray(values).view(ut)
        counts = cp.empty(groups, dtype=cp.uint8)
        blocks = -(-groups * 32 // _THREADS)
        args = (src, np.int64(n), np.int32(bool(delta)), np.int32(zig))
        if groups:
            _kernel("bitplane_counts", ut.itemsize)((blocks,), (_THREADS,),
                                                    (*args, counts, np.int64(groups)))
        ends = cp.cumsum(counts, dtype=cp.int64)
        total = int(ends[-1]) if groups else 0        # the one host synchronisation
        out = cp.zeros(start + 4 * total, dtype=cp.uint8)
        out[:HEADER_BYTES] = cp.asarray(np.frombuffer(_header(code, flags, n), np.uint8))
        out[HEADER_BYTES:HEADER_BYTES + groups] = counts
        if total:
            words = out[start:].view(cp.uint32)
            _kernel("bitplane_planes", ut.itemsize)((blocks,), (_THREADS,),
                                                    (*args, counts, ends, words,
                                                     np.int64(groups)))
    return out


def bitplane_unpack(buf, *, stream=None, check: bool = True, variant: str | None = None):
    """Decode a :func:`bitplane_pack` buffer (NumPy: CPU twin; CuPy: on the GPU).

    On the GPU the 16-byte header is read back to size the output; plane counts are scanned into
    word offsets on the device; the decode kernel never reads outside the buffer and flags
    inconsistencies, which ``check=True`` reads back once at the end (one synchronisation).

    Parameters
    ----------
    buf : numpy.ndarray, bytes or cupy.ndarray
        The packed 1-D uint8 buffer.
    stream : cupy.cuda.Stream, optional
        Stream for the GPU work.
    check : bool, default True
        GPU only: synchronise at the end and raise on inconsistent plane counts.  With False the
        result of a corrupt buffer is garbage (but nothing is read or written out of bounds).
    variant : str, optional
        GPU variant, one of :data:`CODEC_VARIANTS` (default :data:`DEFAULT_CODEC_VARIANT`);
        ``"fused"`` decodes (and undoes the delta) in one kernel.

    Returns
    -------
    numpy.ndarray or cupy.ndarray
        The values, with the dtype recorded in the header.

    Raises
    ------
    CorruptDataError
        For a bad header, plane counts wider than the dtype, or a length that does not match
        the plane counts.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.kernels import bitplane_pack, bitplane_unpack
    >>> bitplane_unpack(bitplane_pack(np.array([7, 0, 255], np.uint8))).tolist()
    [7, 0, 255]
    """
    variant = _codec_variant(variant)
    if isinstance(buf, (bytes, bytearray, memoryview)) or \
            _check_array(buf, "bitplane_unpack") == "cpu":
        return bitplane_unpack_cpu(buf)
    cp = get_cupy()
    if buf.dtype != cp.uint8 or buf.ndim != 1:
        raise TypeError(f"bitplane_unpack needs a 1-D uint8 buffer, not {buf.dtype} {buf.shape}")
    stream = stream or cp.cuda.get_current_stream()
    with stream:
        if buf.size < HEADER_BYTES:
            _parse_header(b"", buf.size)
        head = cp.asnumpy(buf[:HEADER_BYTES], stream=stream).tobytes()
        dt, ut, flags, n, groups, start = _parse_header(head, buf.size)
        out = cp.empty(n, dtype=ut)
        if groups and variant == "fused":
            _unpack_fused(cp, buf, ut, dt, flags, n, groups, start, out, stream, check)
        elif groups:
            if buf.data.ptr % 4:
                buf = buf.copy()                       # words must be 4-byte aligned
            counts = buf[HEADER_BYTES:HEADER_BYTES + groups]
            ends = cp.cumsum(counts, dtype=cp.int64)
            nwords = (buf.size - start) // 4
            words = buf[start:].view(cp.uint32) if nwords else cp.zeros(1, cp.uint32)
            err = cp.zeros(1, dtype=cp.int32)
            blocks = -(-groups * 32 // _THREADS)
            _kernel("bitplane_decode", ut.itemsize)(
                (blocks,), (_THREADS,),
                (words, np.int64(nwords), counts, ends, np.int64(n),
                 np.int32(bool(flags & FLAG_ZIGZAG)), out, np.int64(groups), err))
            if flags & FLAG_DELTA:
                out = cp.cumsum(out, dtype=ut)
            if check:
                _raise_decode_error(int(err.get(stream=stream)[0]), ut, dt)
    return out.view(dt)


def _raise_decode_error(bad: int, ut, dt) -> None:
    if bad & 8:
        raise DeviceError(f"bitplane_unpack (fused): a look-back wait timed out after "
                          f"{FUSED_TIMEOUT_NS / 1e9:g} s; the output is garbage")
    if bad:
        what = []
        if bad & 1:
            what.append(f"plane counts above the {8 * ut.itemsize} bits of {dt}")
        if bad & 2:
            what.append("plane words missing (truncated)")
        if bad & 4:
            what.append("plane words left over (length does not match the counts)")
        raise CorruptDataError("bit-plane buffer is corrupt: " + "; ".join(what))


def _unpack_fused(cp, buf, ut, dt, flags, n, groups, start, out, stream, check) -> None:
    if buf.data.ptr % 4:
        buf = buf.copy()                       # words must be 4-byte aligned
    nwords = (buf.size - start) // 4
    gpw = _FUSED_GPW[ut.itemsize]
    ntiles = -(-groups // (8 * gpw))
    delta = bool(flags & FLAG_DELTA)
    stat_w = cp.zeros(3 * ntiles, dtype=cp.uint64)
    stat_v = cp.zeros(3 * ntiles, dtype=cp.uint64) if delta else stat_w
    ticket = cp.zeros(1, dtype=cp.uint32)
    err = cp.zeros(1, dtype=cp.int32)
    fn = get_function(SOURCE, f"bitplane_unpack_fused<{_CTYPE[ut.itemsize]},{gpw}>",
                      name_expressions=_flat_names())
    fn((ntiles,), (_THREADS,),
       (buf, np.int64(start), np.int64(nwords), np.int64(n),
        np.int32(bool(flags & FLAG_ZIGZAG)), np.int32(delta), out, np.int64(groups), stat_w,
        stat_v, ticket, err, np.uint64(FUSED_TIMEOUT_NS)))
    if check:
        _raise_decode_error(int(err.get(stream=stream)[0]), ut, dt)
