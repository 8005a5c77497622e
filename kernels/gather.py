"""Launcher of the segment gather kernel (``gather.cu``) and its CPU twin.

A file -> GPU read (issue #24 item 2) uploads an fsst column's pages as they are; each row's
codes then lie where the pages hold them (a DELTA_LENGTH_BYTE_ARRAY page's in long runs, a
dictionary-encoded page's in its dictionary page, a run a row: the runs
:func:`~fsstgpu.formats.raw_columns.read_fsst_chunk` returns with ``codes_in_place``).
:func:`gather_segments` lays such segments end to end on the device in one launch, balanced by
output bytes; :func:`gather_segments_cpu` is its twin. The direct readers that used it, a
segment a row with the row starts found on the host, lost to ``read_table_device`` three times
and were removed (BENCHMARKS.md sections 67-69); the reader whose pages are decoded on the
device (:mod:`fsstgpu.kernels.page_decode`) is to gather its codes with it.

A segment is ``out[out_offsets[i] : out_offsets[i + 1]]``, copied from ``src[starts[i]:]``
where ``starts[i] >= 0`` and from ``extra[-1 - starts[i]:]`` where it is negative (the bytes
the host had to decode).

>>> import numpy as np
>>> from fsstgpu.kernels.gather import gather_segments_cpu
>>> src, extra = np.frombuffer(b"abcdef", np.uint8), np.frombuffer(b"XY", np.uint8)
>>> bytes(gather_segments_cpu(src, extra, np.array([4, -2, 0]), np.array([0, 2, 3, 5])))
b'efYab'
"""

from __future__ import annotations

import numpy as np

from fsstgpu import native
from fsstgpu.device import get_cupy
from fsstgpu.errors import CorruptDataError
from fsstgpu.kernels.loader import get_function, on_stream

__all__ = ["check_gathered", "gather_segments", "gather_segments_cpu"]

SOURCE = "gather.cu"
THREADS = 256
#: output bytes a thread writes (gather.cu's GATHER_BYTES)
PER_THREAD = 16


def _out_size(out_offsets) -> int:
    return int(out_offsets[-1]) if len(out_offsets) else 0


def gather_segments_cpu(src, extra, starts, out_offsets) -> np.ndarray:
    """The segments laid end to end on the host (uint8): the device kernel's twin.

    Raises
    ------
    fsstgpu.CorruptDataError
        For a segment outside its source, or offsets that do not start at 0 and grow.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.kernels.gather import gather_segments_cpu
    >>> src = np.frombuffer(b"hello", np.uint8)
    >>> bytes(gather_segments_cpu(src, src[:0], np.array([1, 0]), np.array([0, 2, 3])))
    b'elh'
    """
    src = np.ascontiguousarray(src, np.uint8)
    extra = np.ascontiguousarray(extra, np.uint8)
    starts = np.ascontiguousarray(starts, np.int64)
    offsets = np.ascontiguousarray(out_offsets, np.int64)
    if len(offsets) != len(starts) + 1 or (len(offsets) and offsets[0] != 0):
        raise CorruptDataError("segment offsets must be one more than the segments, from 0")
    lengths = np.diff(offsets)
    if (lengths < 0).any():
        raise CorruptDataError("segment offsets decrease")
    joined = np.concatenate([src, extra])  # (extra's bytes after src's: one source)
    at = np.where(starts >= 0, starts, len(src) + (-1 - starts))
    bad = np.where(starts >= 0, starts + lengths > len(src), -1 - starts + lengths > len(extra))
    if bad.any():
        i = int(np.argmax(bad))
        raise CorruptDataError(f"segment {i} ({int(starts[i])}, {int(lengths[i])} bytes) lies "
                               "outside its source")
    out = np.empty(_out_size(offsets), np.uint8)
    native.gather(joined, at, lengths, offsets[:-1], out)
    return out


def gather_segments(src, extra, starts, out_offsets, out=None, *, size=None, stream=None):
    """The segments laid end to end on the device, in one launch on ``stream``: ``(out,
    error)``, ``error`` a device int32 array of one flag that is non-zero where a segment lay
    outside its source (its bytes written as zeros): check it (:func:`check_gathered`) before
    using ``out``.

    ``src``, ``extra`` (device uint8), ``starts`` and ``out_offsets`` (int64, host or device;
    the offsets the host's running sum of the segments' sizes) as
    :func:`gather_segments_cpu` takes them; ``out``: a device uint8 array of
    ``out_offsets[-1]`` bytes, 16-byte aligned (CuPy's are), or None to allocate one.
    ``size``: ``out_offsets[-1]``, where the caller has read it back already (device offsets'
    last is a wait otherwise).

    Examples
    --------
    >>> import fsstgpu
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     import cupy as cp
    ...     import numpy as np
    ...     from fsstgpu.kernels.gather import check_gathered, gather_segments
    ...     src = cp.asarray(np.frombuffer(b"hello", np.uint8))
    ...     out, error = gather_segments(src, src[:0], np.array([1, 0]), np.array([0, 2, 3]))
    ...     check_gathered(error)
    ...     assert bytes(out.get()) == b"elh"
    """
    cp = get_cupy()
    with on_stream(stream):
        d_starts = cp.asarray(starts, dtype=cp.int64)
        d_offsets = cp.asarray(out_offsets, dtype=cp.int64)
        n = len(d_starts)
        if len(d_offsets) != n + 1:
            raise ValueError(f"{len(d_offsets)} segment offsets for {n} segments")
        if size is None:
            size = _out_size(out_offsets) if isinstance(out_offsets, np.ndarray) else \
                int(d_offsets[-1].get()) if n else 0
        if out is None:
            out = cp.empty(size, cp.uint8)
        elif out.size != size or out.data.ptr % 16:
            raise ValueError(f"out must be {size} bytes, 16-byte aligned")
        error = cp.zeros(1, cp.int32)
        if size and n:
            threads = -(-size // PER_THREAD)
            grid = (max(1, min(-(-threads // THREADS), 65535 * 8)),)
            fn = get_function(SOURCE, "gather_segments")
            fn(grid, (THREADS,), (src, np.int64(src.size), extra, np.int64(extra.size),
                                  d_starts, d_offsets, np.int64(n), out, np.int64(size),
                                  error))
        elif size:
            error.fill(1)  # (bytes but no segment to fill them)
    return out, error


def check_gathered(error) -> None:
    """Raise :class:`~fsstgpu.errors.CorruptDataError` where :func:`gather_segments`'s
    ``error`` flag is set (a sync with its stream).

    Examples
    --------
    >>> import fsstgpu
    >>> from fsstgpu.kernels.gather import check_gathered
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     import cupy as cp
    ...     check_gathered(cp.zeros(1, cp.int32))  # (nothing to raise)
    """
    if int(error.get()[0]):
        raise CorruptDataError("a gathered segment lies outside its source")
