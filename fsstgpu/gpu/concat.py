"""Joining device string columns end to end: by copy, or in place with the GPU rotate.

:func:`concat_device_arrays` gives one :class:`~fsstgpu.DeviceStringArray` whose chunks are the
parts. The general path copies data and offsets into new buffers (one pass at copy speed, and
twice the column's memory at the peak). When the parts are the consecutive outputs of one batch
decode (:func:`fsstgpu.decompress_device` on a list: data end to end in one allocation, each
part's offsets in its own 8-byte aligned slot of one offsets buffer, each part's strings running
on from the previous part's last byte), ``consume=True`` joins them where they lie instead:

* the data already are one buffer: the result's data is a view spanning the parts, no byte moves;
* the offsets are compacted in place: part ``k``'s offsets after its leading 0 move down to
  follow part ``k - 1``'s, closing the gap of its slot padding and its own leading 0. That is a
  move within one buffer whose source and destination overlap, done with
  :func:`fsstgpu.kernels.rotate.rotate` (rotating ``[destination, source end)`` left by the gap
  brings the offsets down and parks the gap's stale bytes past them), then the sum of the
  earlier parts' bytes is added to the moved offsets.

So a file's row groups become one column without a second copy of the data: the peak device
memory of :func:`fsstgpu.formats.device_reader.read_to_device` stays that of the decode.
"""

from __future__ import annotations

import numpy as np

from fsstgpu.device import get_cupy, on_arrays_device
from fsstgpu.errors import CorruptDataError
from fsstgpu.gpu.strings import DeviceStringArray, host_copy
from fsstgpu.kernels.loader import on_stream
from fsstgpu.kernels.rotate import rotate
from fsstgpu.limits import flag
from fsstgpu.types import INT32_MAX

__all__ = ["concat_device_arrays", "joinable_in_place"]


def concat_device_arrays(parts, stream=None, *, consume: bool = False) -> DeviceStringArray:
    """The device columns ``parts`` (of one type) end to end, as one column.

    The chunks of the result are the parts' (their chunks, or each part as one), so
    :meth:`DeviceStringArray.to_arrow` gives them back as a ChunkedArray. Validity bitmaps are
    re-packed (a new bitmap of ``length / 8`` bytes).

    Parameters
    ----------
    parts : sequence of DeviceStringArray
        On one device (the result's; not necessarily the current one). Each part's offsets may
        start inside its data (``offsets[0] > 0``) and end before its end: only the bytes they
        span are joined.
    stream : cupy.cuda.Stream, optional
        The result is ready on this stream (default: the current stream).
    consume : bool, default False
        The parts may be used up: when they lie as one batch decode left them
        (:func:`joinable_in_place`), the result reuses their buffers (no data copy; the
        offsets are compacted in place with the GPU rotate) and the parts' offsets are no
        longer valid afterwards. Otherwise (or when they do not lie so) the buffers are copied
        and the parts stay as they were.

    Raises
    ------
    ValueError
        When the parts' buffers lie on more than one device.
    CorruptDataError
        When a part's buffers do not hold what its length says
        (:meth:`DeviceStringArray.check_buffers`), or its first and last offsets lie outside
        its data or decrease.

    Examples
    --------
    >>> import fsstgpu, pyarrow as pa
    >>> from fsstgpu.gpu.concat import concat_device_arrays
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     a, b = (fsstgpu.decompress_device(fsstgpu.compress(pa.array(s)))
    ...             for s in (["x", None], ["yz"]))
    ...     assert concat_device_arrays([a, b]).to_arrow().to_pylist() == ["x", None, "yz"]
    ...     a, b = fsstgpu.decompress_device([fsstgpu.compress(pa.array(s))
    ...                                       for s in (["x", None], ["yz"])])
    ...     assert concat_device_arrays([a, b], consume=True).to_arrow().to_pylist() == [
    ...         "x", None, "yz"]
    """
    consume = flag(consume, "consume")
    cp = get_cupy()
    parts = list(parts)
    if not parts:
        raise ValueError("concat_device_arrays needs at least one column")
    type_ = parts[0].type
    if any(p.type != type_ for p in parts):
        raise TypeError(f"columns of different types: {sorted({str(p.type) for p in parts})}")
    for p in parts:  # the joins build views by pointer and size
        p.check_buffers()
    sizes = [int(p.data.nbytes) for p in parts]
    n = sum(p.length for p in parts)
    buffers = {f"part {k}'s {name}": buf for k, p in enumerate(parts)
               for name, buf in zip(("validity", "offsets", "data"), p.buffers(), strict=True)}
    with on_arrays_device("concat_device_arrays", **buffers), on_stream(stream):
        spans = _spans(cp, parts)
        if consume and joinable_in_place(parts) and _abutting(spans, sizes):
            offsets, data = _join_in_place(cp, parts, sizes, stream)
        else:
            offsets, data = _join_by_copy(cp, parts, spans, n)
        validity = None
        null_count = sum(p.null_count for p in parts)
        if null_count:
            valid = cp.concatenate([_valid_bits(cp, p) for p in parts])
            padded = cp.zeros(-(-n // 8) * 8, dtype=cp.uint8)
            padded[:n] = valid
            weights = (1 << cp.arange(8, dtype=cp.uint8)).astype(cp.uint8)
            validity = (padded.reshape(-1, 8) * weights).sum(axis=1, dtype=cp.uint8)
    chunks = np.concatenate([np.asarray(p.chunk_lengths, dtype=np.int64)
                             if p.chunk_lengths is not None else np.array([p.length])
                             for p in parts])
    return DeviceStringArray(type_, n, offsets, data, validity, null_count, chunks)


def joinable_in_place(parts) -> bool:
    """Whether ``parts`` lie as one batch decode leaves consecutive columns: data end to end in
    one allocation, offsets of one dtype in increasing, non-overlapping slots of one allocation,
    and the joined offsets still fit their dtype.

    Examples
    --------
    >>> from fsstgpu.gpu.concat import joinable_in_place
    >>> joinable_in_place([])
    False
    """

    if not parts:
        return False
    first = parts[0]
    dtype = first.offsets.dtype
    if any(p.offsets.dtype != dtype or p.offsets.data.mem is not first.offsets.data.mem
           or p.data.data.mem is not first.data.data.mem or not p.offsets.flags.c_contiguous
           for p in parts):
        return False
    total = sum(int(p.data.nbytes) for p in parts)
    if dtype == np.int32 and total > INT32_MAX:
        return False
    for a, b in zip(parts[:-1], parts[1:], strict=True):
        if a.data.data.ptr + a.data.nbytes != b.data.data.ptr:
            return False
        if a.offsets.data.ptr + a.offsets.nbytes > b.offsets.data.ptr:
            return False
    return True


def _spans(cp, parts) -> np.ndarray:
    """Each part's first and last offset, int64 of shape (len(parts), 2), read in one wait.

    A hand-built column's offsets may start inside its data and end before its end (Arrow
    allows both; :func:`fsstgpu.compress_device` takes them): the joins must not take the data
    buffer's bytes for the strings' (they did: string 0 of such a part gained the bytes before
    it, and every later part's strings moved by as many)."""
    ends = cp.concatenate([end for p in parts for end in (p.offsets[:1], p.offsets[-1:])])
    spans = host_copy(ends.astype(cp.int64, copy=False)).reshape(-1, 2)
    for k, ((first, last), p) in enumerate(zip(spans.tolist(), parts, strict=True)):
        if not 0 <= first <= last <= int(p.data.size):
            raise CorruptDataError(f"part {k}: its offsets run from {first} to {last}, outside "
                                   f"its {int(p.data.size)} data bytes or decreasing")
    return spans


def _abutting(spans: np.ndarray, sizes) -> bool:
    """Whether each part's strings run on from the last byte of the previous part's: what the
    in-place join (which keeps the data where it is) needs of data that lie end to end."""
    return all(last == size and first == 0 for (_, last), (first, _), size
               in zip(spans[:-1].tolist(), spans[1:].tolist(), sizes[:-1], strict=True))


def _join_by_copy(cp, parts, spans, n):
    """New offsets (from 0) and data: the bytes each part's offsets span, end to end."""
    total = int((spans[:, 1] - spans[:, 0]).sum())
    wide = total > INT32_MAX or any(p.offsets.dtype == np.int64 for p in parts)
    offsets = cp.empty(n + 1, dtype=cp.int64 if wide else cp.int32)
    offsets[0] = 0
    row, base = 1, 0
    for p, (first, last) in zip(parts, spans.tolist(), strict=True):
        piece = offsets[row : row + p.length]
        piece[...] = p.offsets[1:]
        piece += base - first  # within the dtype: the result runs from base to base + size
        row, base = row + p.length, base + last - first
    data = (cp.concatenate([p.data[first:last] for p, (first, last)
                            in zip(parts, spans.tolist(), strict=True)])
            if total else cp.empty(0, cp.uint8))
    return offsets, data


def _join_in_place(cp, parts, sizes, stream):
    """Compact the parts' offsets slots into one offsets array where the first slot starts
    (module docstring); the data is a view over the parts' data."""

    first = parts[0]
    dtype = first.offsets.dtype
    width = dtype.itemsize
    start = first.offsets.data.ptr
    last = parts[-1].offsets
    span = last.data.ptr + last.nbytes - start
    raw = cp.ndarray((span,), dtype=cp.uint8, memptr=first.offsets.data)
    row, base = 1, 0
    for p, size in zip(parts, sizes, strict=True):
        if p.length:
            dst = row * width                                    # after the rows so far
            src = p.offsets.data.ptr - start + width             # past the slot's leading 0
            end = src + p.length * width
            if src > dst:
                rotate(raw[dst:end], src - dst, stream=stream)
            if base:
                moved = raw[dst : dst + p.length * width].view(dtype)
                moved += dtype.type(base)
        row, base = row + p.length, base + size
    offsets = raw[: row * width].view(dtype)
    data = cp.ndarray((base,), dtype=cp.uint8, memptr=first.data.data)
    return offsets, data


def _valid_bits(cp, part: DeviceStringArray):
    """One uint8 (0 or 1) per row of ``part``: its validity bitmap unpacked, LSB first."""
    if part.validity is None or part.null_count == 0:
        return cp.ones(part.length, dtype=cp.uint8)
    i = cp.arange(part.length, dtype=cp.int64)
    return ((part.validity[i >> 3] >> (i & 7).astype(cp.uint8)) & 1).astype(cp.uint8)
