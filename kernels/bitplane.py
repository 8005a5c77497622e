"""The bit-plane integer codec: integers packed as bit planes of groups of 32 values.

It comes as a NumPy twin (:mod:`fsstgpu.kernels.bitplane_cpu`, vectorised, runs everywhere) and
CUDA kernels (``bitplane.cu``, one kernel per direction, no host synchronisation) that produce the
same bytes; the public functions dispatch on NumPy versus CuPy input.

Layout FBP2 (written by ``bitplane_pack``; all integers little-endian)
    ========  =======  ==========================================================================
    offset    size     content
    ========  =======  ==========================================================================
    0         4        magic ``b"FBP2"``
    4         1        dtype code: 0-3 = uint8/16/32/64, 4-7 = int8/16/32/64
    5         1        flags: bit 0 = delta, bit 1 = zigzag (set exactly when signed or delta)
    6         2        zero
    8         8        ``n``, the number of values
    16        G        plane count of each group of 32 values, ``G = ceil(n / 32)``
    16 + G    0-7      zero padding to a multiple of 8 (``I`` = this multiple)
    I         16(S+1)  superblock index, ``S = ceil(G / 128)``: entry ``s`` is two uint64,
                       ``word_start[s]`` (index of superblock ``s``'s first plane word) and
                       ``prefix[s]``; entry ``S`` holds the totals (the number of plane words, and
                       the sum over all values)
    I+16(S+1) 4 * sum  for each group in order, ``count`` words of 32 bits: word ``b`` holds bit
                       ``b`` of the group's 32 transformed values (value ``i`` at bit ``i``)
    ========  =======  ==========================================================================

    A superblock is :data:`SUPERBLOCK_GROUPS` = 128 groups (:data:`SUPERBLOCK` = 4096 values).
    ``word_start[s] = sum(counts of groups < 128 s)``, so ``word_start[0] = 0`` and
    ``word_start[S]`` is the number of plane words.  ``prefix[s]`` is the wrapping (mod 2**64) sum,
    over all values before the superblock, of the *stored* values (after un-zigzag), each
    zero-extended from its width: without delta the values themselves (their unsigned view), so
    for lengths ``prefix[s]`` is the Arrow offset of value ``4096 s`` and ``prefix[S]`` the total;
    with delta the wrapped differences, so ``prefix[s] mod 2**w`` is the unsigned view of value
    ``4096 s - 1`` (0 for ``s = 0``).  Every superblock can thus be decoded on its own.

    Transform before packing: optional wrapping delta (``v[i] - v[i-1]``, ``v[-1] = 0``), then
    zigzag (``(x << 1) ^ (x >> (w - 1))`` on the signed view) for signed dtypes and whenever delta
    is on.  A group's plane count is the bit width of the OR of its transformed values; values
    past ``n`` in the last group are zero.  The layout is canonical: a reader rejects a buffer
    whose padding is not zero, whose groups' top planes are zero, with bits past ``n``, or whose
    index or length disagrees with the counts and values.

Layout FBP1 (older; still read, and written with ``bitplane_pack_cpu(version=1)`` for the blob
format's bit-plane codec): the same header with magic ``b"FBP1"``, the counts, zero padding to a
multiple of 4, then the plane words; no index.  The GPU reads FBP1 by copying the buffer to the
host, decoding it with the CPU twin and uploading the values (a synchronisation, documented
slowness).

GPU kernels
    ``bitplane_pack``: one block per superblock, claimed in ticket order, single-pass decoupled
    look-back for both running sums (words, values), worst-case output plus the exact size as a
    device scalar.  ``bitplane_unpack`` / ``bitplane_unpack_offsets``: one independent block per
    superblock; corrupt input sets bits of a device flag that ``check=True`` reads back once.
    Design and occupancy notes are in ``bitplane.cu``.
"""

from __future__ import annotations

import ctypes

import numpy as np

from fsstgpu.device import array_device, get_cupy, on_arrays_device
from fsstgpu.errors import CorruptDataError, DeviceError
from fsstgpu.kernels.bitplane_cpu import (
    CODES,
    FLAG_DELTA,
    FLAG_ZIGZAG,
    GROUP,
    HEADER_BYTES,
    MAGIC,
    MAGIC_V1,
    SUPERBLOCK,
    SUPERBLOCK_GROUPS,
    Layout,
    bitplane_pack_cpu,
    bitplane_unpack_cpu,
    bitplane_unpack_offsets_cpu,
    header,
    offsets_target,
    parse_header,
    value_dtype,
)
from fsstgpu.kernels.driver import launch_kept, memset_d8, read_int32s
from fsstgpu.kernels.loader import get_function
from fsstgpu.limits import whole_number

__all__ = ["CODES", "FLAG_DELTA", "FLAG_ZIGZAG", "GROUP", "HEADER_BYTES", "MAGIC", "MAGIC_V1",
           "SUPERBLOCK", "SUPERBLOCK_GROUPS", "bitplane_pack", "bitplane_pack_cpu",
           "bitplane_unpack", "bitplane_unpack_cpu", "bitplane_unpack_offsets",
           "bitplane_unpack_offsets_cpu", "error_message"]

SOURCE = "bitplane.cu"
THREADS = 256                                  # bitplane.cu NT (8 warps of 16 groups each)
#: a look-back spin gives up (DeviceError) after this long; never reached by a working GPU
LOOKBACK_TIMEOUT_NS = 5_000_000_000
_CTYPE = {1: "unsigned char", 2: "unsigned short", 4: "unsigned int", 8: "unsigned long long"}
# every kernel instantiation the launchers can run, compiled as one NVRTC module
# (pack's delta and zigzag: delta values are always zigzagged, so (1, 0) is never launched)
KERNEL_NAMES = (tuple(f"bitplane_pack<{t}, {d}, {z}>" for t in _CTYPE.values()
                      for d, z in ((0, 0), (0, 1), (1, 1)))
                + tuple(f"bitplane_unpack<{t}>" for t in _CTYPE.values())
                + tuple(f"bitplane_unpack_offsets<{t}, {o}>" for t in _CTYPE.values()
                        for o in ("int", "long long")))
_ERRORS = {1: "plane counts above the value width", 2: "word index does not match the plane counts",
           4: "length does not match the index total (truncated or trailing bytes)",
           8: "prefix sums do not match the values",
           16: "header does not match (magic, dtype, count or flags)",
           32: "not the writer's layout (top plane zero, bits past n, or padding not zero)"}


def _kernel(name: str):
    return get_function(SOURCE, name, name_expressions=KERNEL_NAMES)


_PTR, _I64, _U64, _I32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_uint64, ctypes.c_int32


def _launch(name: str, blocks: int, cells: tuple, pointers, stream) -> None:
    """Kernel ``name`` through the driver, its geometry's launch kept (``driver.launch_kept``):
    ``cells`` every argument, pointers 0; ``pointers`` this call's (index, address) pairs."""
    launch_kept(_kernel, name, blocks, THREADS, cells, pointers, stream.ptr)


def error_message(bad: int) -> str:
    """Words for the error bits a kernel of this module set (``bad`` non-zero).

    Examples
    --------
    >>> from fsstgpu.kernels.bitplane import error_message
    >>> error_message(1)
    'plane counts above the value width'
    """
    what = [m for b, m in _ERRORS.items() if bad & b]
    if bad & 64:
        what.append("the running sum overflows the offsets")
    if bad & 128:
        what.append("a look-back timed out")
    return "; ".join(what) or f"unknown error bits {bad:#x}"


def _raise_flags(bad: int, what: str, wide: bool = False) -> None:
    if bad & 127 & ~64:
        raise CorruptDataError(f"bit-plane buffer is corrupt ({what}): "
                               + error_message(bad & 127 & ~64))
    if bad & 64:
        raise ValueError(f"bit-plane lengths overflow {'int64' if wide else 'int32'} offsets"
                         + ("" if wide else " (use wide=True)"))
    if bad & 128:
        raise DeviceError("bitplane_pack: the look-back timed out (a GPU scheduling fault)")


def bitplane_pack(values, *, delta: bool = False, stream=None, trim: bool = True):
    """Pack integers into bit planes (NumPy: CPU twin; CuPy: one GPU kernel, same bytes).

    Parameters
    ----------
    values : numpy.ndarray or cupy.ndarray
        1-D uint8..uint64 or int8..int64.
    delta : bool, default False
        Store wrapping, zigzagged differences of consecutive values.
    stream : cupy.cuda.Stream, optional
        Stream for the GPU work.
    trim : bool, default True
        GPU only.  True: synchronise once, check the kernel's flag and return the exact buffer.
        False: no synchronisation; return ``(buffer, nbytes)`` where ``buffer`` has the worst-case
        size (its first ``nbytes`` bytes are the result) and ``nbytes`` a 0-d int64 device array
        (-1 if the look-back failed, which a working GPU never does).

    Returns
    -------
    numpy.ndarray or cupy.ndarray, or (cupy.ndarray, cupy.ndarray)
        The packed uint8 buffer (layout in the module docstring).

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.kernels.bitplane import bitplane_pack, bitplane_unpack
    >>> v = np.arange(1000, dtype=np.int64) * 3
    >>> buf = bitplane_pack(v, delta=True)
    >>> int(buf.size), bool((bitplane_unpack(buf) == v).all())
    (464, True)
    >>> import cupy as cp  # doctest: +SKIP
    >>> big, nbytes = bitplane_pack(cp.asarray(v), delta=True, trim=False)  # doctest: +SKIP
    >>> int(nbytes)  # doctest: +SKIP
    464
    """
    if array_device(values, "bitplane_pack") == "cpu":
        return bitplane_pack_cpu(values, delta=delta)
    cp = get_cupy()
    with on_arrays_device("bitplane_pack", values=values):
        if values.ndim != 1:
            raise ValueError(f"bitplane_pack needs a 1-D array, got shape {values.shape}")
        code, ut, signed = value_dtype(values.dtype)
        n = values.size
        zig = signed or delta
        flags = (FLAG_DELTA if delta else 0) | (FLAG_ZIGZAG if zig else 0)
        lay = Layout(n)
        head = header(code, flags, n)
        stream = stream or cp.cuda.get_current_stream()
        with stream:
            if n == 0:
                out = cp.asarray(bitplane_pack_cpu(np.zeros(0, values.dtype), delta=delta))
                nbytes = cp.array(out.size, dtype=cp.int64)
                return out if trim else (out, nbytes)
            src = cp.ascontiguousarray(values).view(ut)
            out = cp.empty(lay.max_bytes(ut.itemsize), dtype=cp.uint8)
            # zeroed scratch: look-back status (4 u64 per superblock), then ticket and error flag
            # (one u64), then the size (int64)
            scratch = cp.empty(4 * lay.sblocks + 2, dtype=cp.uint64)
            memset_d8(scratch.data.ptr, 0, scratch.nbytes, stream.ptr)
            tail = scratch.data.ptr + 32 * lay.sblocks
            _launch(f"bitplane_pack<{_CTYPE[ut.itemsize]}, {int(delta)}, {int(zig)}>",
                    lay.sblocks,
                    ((_PTR, 0), (_I64, n), (_I64, lay.groups), (_I64, lay.sblocks), (_PTR, 0),
                     (_I64, lay.index_start), (_I64, lay.words_start),
                     (_U64, int.from_bytes(head[:8], "little")),
                     (_U64, int.from_bytes(head[8:], "little")), (_PTR, 0), (_PTR, 0), (_PTR, 0),
                     (_PTR, 0), (_U64, LOOKBACK_TIMEOUT_NS)),
                    ((0, src.data.ptr), (4, out.data.ptr), (9, scratch.data.ptr), (10, tail),
                     (11, tail + 8), (12, tail + 4)), stream)
            if not trim:
                size = scratch.data + 32 * lay.sblocks + 8
                return out, cp.ndarray((), dtype=cp.int64, memptr=size)
            # the one synchronisation: the error flag and the size in one copy
            _, bad, size_lo, size_hi = read_int32s(tail, 4, stream.ptr)
            _raise_flags(bad, "pack")
            return out[:(size_lo & 0xFFFFFFFF) | (size_hi << 32)].copy()   # frees the worst case


def _device_buffer(cp, buf, what: str):
    if buf.dtype != cp.uint8 or buf.ndim != 1:
        raise TypeError(f"{what} needs a 1-D uint8 buffer, not {buf.dtype} {buf.shape}")
    # the kernels read buf.size bytes from its address in 16-byte words: a strided view was
    # read as the bytes under it (a reversed one, [::-1], past its allocation)
    return buf.copy() if buf.data.ptr % 16 or not buf.flags.c_contiguous else buf


def _gpu_header(cp, buf, stream, count, dtype):
    """(version, dtype, unsigned dtype, flags, layout) from the host header (one small copy), or
    from ``count`` and ``dtype`` without a copy (the kernel then checks the header)."""
    if count is None or dtype is None:
        head = cp.asnumpy(buf[:HEADER_BYTES], stream=stream).tobytes()
        return parse_header(head, buf.size)
    count = whole_number(count)   # a caller's argument: cp.empty(-1) or a float count failed late
    if count < 0:
        raise ValueError(f"count must be >= 0, not {count}")
    code, ut, _ = value_dtype(dtype)
    lay = Layout(count)
    if buf.size < lay.words_start or (buf.size - lay.words_start) % 4:
        raise CorruptDataError(f"bit-plane buffer of {buf.size} bytes does not fit {count} values "
                               "(truncated or padded)")
    return 2, CODES[code], ut, -1, lay


def _sizes(lay: Layout, dt, nbytes: int) -> tuple:
    """The decoders' size arguments after the buffer, as (ctype, value) cells."""
    code = CODES.index(np.dtype(dt).newbyteorder("<"))
    head = header(code, 0, lay.n)
    mask = (1 << 64) - 1 - (0xFF << 40)                  # flags are checked separately
    return ((_I64, lay.n), (_I64, lay.groups), (_I64, lay.sblocks), (_I64, lay.index_start),
            (_I64, lay.words_start), (_I64, (nbytes - lay.words_start) // 4),
            (_U64, int.from_bytes(head[:8], "little")), (_U64, int.from_bytes(head[8:], "little")),
            (_U64, mask), (_I32, int(code >= 4)))


def bitplane_unpack(buf, *, count: int | None = None, dtype=None, stream=None,
                    check: bool = True):
    """Decode a :func:`bitplane_pack` buffer (NumPy: CPU twin; CuPy: one GPU kernel).

    On the GPU the 16-byte header is read back to size the output unless ``count`` and ``dtype``
    are given (then the kernel checks the header against them).  The kernel never reads outside
    the buffer and flags every inconsistency, which ``check=True`` reads back once at the end.
    An FBP1 buffer is decoded on the host (copy, CPU twin, upload).

    Parameters
    ----------
    buf : numpy.ndarray, bytes or cupy.ndarray
        The packed 1-D uint8 buffer (exactly its bytes: no trailing bytes).
    count, dtype : int and dtype, optional
        GPU only: the expected number of values and dtype; with both and ``check=False`` nothing
        synchronises.
    stream : cupy.cuda.Stream, optional
        Stream for the GPU work.
    check : bool, default True
        GPU only: synchronise at the end and raise on a corrupt buffer.  With False the result of
        a corrupt buffer is garbage (but nothing is read or written out of bounds).

    Returns
    -------
    numpy.ndarray or cupy.ndarray
        The values, with the dtype recorded in the header.

    Raises
    ------
    CorruptDataError
        For any buffer that is not exactly what :func:`bitplane_pack` writes (the message names
        what is wrong).

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
    with on_arrays_device("bitplane_unpack", buf=buf):
        buf = _device_buffer(cp, buf, "bitplane_unpack")
        stream = stream or cp.cuda.get_current_stream()
        with stream:
            version, dt, ut, _, lay = _gpu_header(cp, buf, stream, count, dtype)
            if version == 1 or lay.n == 0:
                return cp.asarray(bitplane_unpack_cpu(cp.asnumpy(buf, stream=stream)))
            out = cp.empty(lay.n, dtype=ut)
            err = cp.empty(1, dtype=cp.int32)
            memset_d8(err.data.ptr, 0, 4, stream.ptr)
            _launch(f"bitplane_unpack<{_CTYPE[ut.itemsize]}>", lay.sblocks,
                    ((_PTR, 0), *_sizes(lay, dt, buf.size), (_PTR, 0), (_PTR, 0)),
                    ((0, buf.data.ptr), (11, out.data.ptr), (12, err.data.ptr)), stream)
            if check:
                _raise_flags(read_int32s(err.data.ptr, 1, stream.ptr)[0], "unpack")
        return out.view(dt)


def bitplane_unpack_offsets(buf, out=None, *, byte_offset: int = 0, wide: bool = False,
                            count: int | None = None, dtype=None, stream=None,
                            check: bool = True, err=None):
    """Decode packed lengths straight into Arrow offsets (``0``, then the running sum).

    The fused use by the codec: one kernel, no lengths array in between.  ``buf`` must hold
    unsigned lengths without delta (``bitplane_pack`` of uint8..uint64 lengths).

    Parameters
    ----------
    buf : numpy.ndarray, bytes or cupy.ndarray
        The packed 1-D uint8 buffer (NumPy/bytes: the CPU twin, same bytes).
    out : numpy.ndarray or cupy.ndarray, optional
        1-D contiguous uint8 buffer to write the ``n + 1`` offsets into, at ``byte_offset`` (an
        address that is a multiple of the offset size; 8-byte aligned is recommended).  Other
        bytes of ``out`` are left alone.  Default: a new buffer.
    byte_offset : int, default 0
        Where in ``out`` the offsets start.
    wide : bool, default False
        int64 offsets (Arrow large_string) instead of int32.
    count, dtype : int and unsigned dtype, optional
        GPU only: the number of lengths and their dtype, so that the header is not read back
        (no synchronisation with ``check=False``; the kernel checks the header).
    stream : cupy.cuda.Stream, optional
        Stream for the GPU work.
    check : bool, default True
        GPU only: synchronise once at the end and raise on a corrupt buffer or an overflow.
    err : cupy.ndarray, optional
        GPU only: a 1-element int32 device array the kernel ORs its error bits into instead
        (``check`` is then not done; :func:`error_message` words the bits), so that a caller
        unpacking many buffers reads every flag in one synchronisation.

    Returns
    -------
    numpy.ndarray or cupy.ndarray
        The offsets (int32 or int64), a view into ``out`` when given.

    Raises
    ------
    CorruptDataError
        For a corrupt buffer, or one holding signed or delta-coded values.
    ValueError
        When the offsets overflow int32 (int64 for ``wide``), or ``out`` is too small or
        misaligned.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.kernels.bitplane import bitplane_pack, bitplane_unpack_offsets
    >>> buf = bitplane_pack(np.array([5, 0, 2, 7], np.uint32))
    >>> bitplane_unpack_offsets(buf).tolist()
    [0, 5, 5, 7, 14]
    >>> import cupy as cp  # doctest: +SKIP
    >>> dst = cp.zeros(64, cp.uint8)  # doctest: +SKIP
    >>> offs = bitplane_unpack_offsets(cp.asarray(buf), dst, byte_offset=16)  # doctest: +SKIP
    >>> offs.tolist()  # doctest: +SKIP
    [0, 5, 5, 7, 14]
    """
    if isinstance(buf, (bytes, bytearray, memoryview)) or \
            array_device(buf, "bitplane_unpack_offsets") == "cpu":
        return bitplane_unpack_offsets_cpu(buf, out, byte_offset=byte_offset, wide=wide)
    cp = get_cupy()
    with on_arrays_device("bitplane_unpack_offsets", buf=buf, out=out, err=err):
        buf = _device_buffer(cp, buf, "bitplane_unpack_offsets")
        stream = stream or cp.cuda.get_current_stream()
        otype = cp.int64 if wide else cp.int32
        with stream:
            version, dt, ut, flags, lay = _gpu_header(cp, buf, stream, count, dtype)
            if dt.kind != "u" or flags > 0:
                raise CorruptDataError(f"bit-plane offsets need unsigned lengths without delta, "
                                       f"the buffer holds {dt} with flags {flags}")
            target = offsets_target(out, byte_offset, lay.n, wide, xp=cp)
            view = target[byte_offset:byte_offset + (lay.n + 1) * np.dtype(otype).itemsize]
            if version == 1 or lay.n == 0:
                host = bitplane_unpack_offsets_cpu(cp.asnumpy(buf, stream=stream), wide=wide)
                view[:] = cp.asarray(host.view(np.uint8))
                return view.view(otype)
            flags_given = err is not None
            if flags_given and (err.dtype != cp.int32 or err.size < 1):
                # the kernel ORs 4 bytes at its address
                raise TypeError(f"err must be an int32 device array, not {err.dtype} {err.shape}")
            if not flags_given:
                err = cp.empty(1, dtype=cp.int32)
                memset_d8(err.data.ptr, 0, 4, stream.ptr)
            _launch(f"bitplane_unpack_offsets<{_CTYPE[ut.itemsize]}, "
                    f"{'long long' if wide else 'int'}>", lay.sblocks,
                    ((_PTR, 0), *_sizes(lay, dt, buf.size), (_PTR, 0), (_PTR, 0)),
                    ((0, buf.data.ptr), (11, view.data.ptr), (12, err.data.ptr)), stream)
            if check and not flags_given:
                bad = read_int32s(err.data.ptr, 1, stream.ptr)[0]
                _raise_offsets_flags(bad, lambda: cp.asnumpy(buf, stream=stream), wide)
        return view.view(otype)


def _raise_offsets_flags(bad: int, host_buffer, wide: bool) -> None:
    """:func:`_raise_flags` for the offsets kernel, whose sums saturate at 2**64 - 1.

    A sum past 2**64 saturates, so it differs from the writer's wrapping prefix: the kernel
    sets "prefix sums do not match" (8) with the overflow bit (64) for lengths that are only
    too large, which came out as CorruptDataError where the CPU twin raises the overflow
    ValueError. Those two bits alone cannot tell this from a wrong prefix in a buffer whose
    lengths overflow too, so that rare case is settled by the twin on the host copy
    (``host_buffer()``): its error, the CPU's, is raised."""
    if bad & 127 == 8 | 64:
        bitplane_unpack_offsets_cpu(host_buffer(), wide=wide)
    _raise_flags(bad, "offsets", wide)
