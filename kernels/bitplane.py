"""The bit-plane integer codec: integers packed as bit planes of groups of 32 values.

It comes as a NumPy twin (vectorised, runs everywhere) and CUDA kernels (``bitplane.cu``) that
produce the same bytes; the public functions dispatch on NumPy versus CuPy input.

Layout (``bitplane_pack``; all integers little-endian)
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

GPU kernels
    A plane-count kernel, a CuPy scan and one host synchronisation to size the output, then the
    plane kernel; decoding is one kernel (plus a CuPy scan for delta) that flags corrupt input for
    the host to raise.  The measurements behind these choices are in BENCHMARKS.md.
"""

from __future__ import annotations

import numpy as np

from fsstgpu.device import array_device, get_cupy
from fsstgpu.errors import CorruptDataError
from fsstgpu.kernels.loader import get_function

SOURCE = "bitplane.cu"
MAGIC = b"FBP1"
HEADER_BYTES = 16
GROUP = 32
FLAG_DELTA, FLAG_ZIGZAG = 1, 2
_CODES = [np.dtype(t).newbyteorder("<") for t in
          ("u1", "u2", "u4", "u8", "i1", "i2", "i4", "i8")]
_THREADS = 256
_CTYPE = {1: "unsigned char", 2: "unsigned short", 4: "unsigned int", 8: "unsigned long long"}
# every kernel instantiation the launchers can run, compiled as one NVRTC module
KERNEL_NAMES = tuple(f"{k}<{t}>" for k in ("bitplane_counts", "bitplane_planes", "bitplane_decode")
                     for t in _CTYPE.values())


def _kernel(name: str):
    return get_function(SOURCE, name, name_expressions=KERNEL_NAMES)


# ---- shared pieces -------------------------------------------------------------------------------

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


# ---- CPU twin ------------------------------------------------------------------------------------

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


# ---- GPU path and dispatch -----------------------------------------------------------------------

def bitplane_pack(values, *, delta: bool = False, stream=None):
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

    Returns
    -------
    numpy.ndarray or cupy.ndarray
        The packed uint8 buffer (layout in the module docstring).

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.kernels.bitplane import bitplane_pack, bitplane_unpack
    >>> v = np.arange(1000, dtype=np.int64) * 3
    >>> buf = bitplane_pack(v, delta=True)
    >>> int(buf.size), bool((bitplane_unpack(buf) == v).all())
    (432, True)
    >>> import cupy as cp  # doctest: +SKIP
    >>> int(bitplane_pack(cp.asarray(v), delta=True).size)  # doctest: +SKIP
    432
    """
    if array_device(values, "bitplane_pack") == "cpu":
        return bitplane_pack_cpu(values, delta=delta)
    cp = get_cupy()
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
            _kernel(f"bitplane_counts<{_CTYPE[ut.itemsize]}>")(
                (blocks,), (_THREADS,), (*args, counts, np.int64(groups)))
        ends = cp.cumsum(counts, dtype=cp.int64)
        total = int(ends[-1]) if groups else 0        # the one host synchronisation
        out = cp.zeros(start + 4 * total, dtype=cp.uint8)
        out[:HEADER_BYTES] = cp.asarray(np.frombuffer(_header(code, flags, n), np.uint8))
        out[HEADER_BYTES:HEADER_BYTES + groups] = counts
        if total:
            words = out[start:].view(cp.uint32)
            _kernel(f"bitplane_planes<{_CTYPE[ut.itemsize]}>")(
                (blocks,), (_THREADS,), (*args, counts, ends, words, np.int64(groups)))
    return out


def bitplane_unpack(buf, *, stream=None, check: bool = True):
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
    >>> from fsstgpu.kernels.bitplane import bitplane_pack, bitplane_unpack
    >>> bitplane_unpack(bitplane_pack(np.array([7, 0, 255], np.uint8))).tolist()
    [7, 0, 255]
    """
    if isinstance(buf, (bytes, bytearray, memoryview)) or \
            array_device(buf, "bitplane_unpack") == "cpu":
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
        if groups:
            if buf.data.ptr % 4:
                buf = buf.copy()                       # words must be 4-byte aligned
            counts = buf[HEADER_BYTES:HEADER_BYTES + groups]
            ends = cp.cumsum(counts, dtype=cp.int64)
            nwords = (buf.size - start) // 4
            words = buf[start:].view(cp.uint32) if nwords else cp.zeros(1, cp.uint32)
            err = cp.zeros(1, dtype=cp.int32)
            blocks = -(-groups * 32 // _THREADS)
            _kernel(f"bitplane_decode<{_CTYPE[ut.itemsize]}>")(
                (blocks,), (_THREADS,),
                (words, np.int64(nwords), counts, ends, np.int64(n),
                 np.int32(bool(flags & FLAG_ZIGZAG)), out, np.int64(groups), err))
            if flags & FLAG_DELTA:
                out = cp.cumsum(out, dtype=ut)
            if check:
                _raise_decode_error(int(err.get(stream=stream)[0]), ut, dt)
    return out.view(dt)


def _raise_decode_error(bad: int, ut, dt) -> None:
    if bad:
        what = []
        if bad & 1:
            what.append(f"plane counts above the {8 * ut.itemsize} bits of {dt}")
        if bad & 2:
            what.append("plane words missing (truncated)")
        if bad & 4:
            what.append("plane words left over (length does not match the counts)")
        raise CorruptDataError("bit-plane buffer is corrupt: " + "; ".join(what))
