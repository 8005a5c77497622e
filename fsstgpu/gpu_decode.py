"""Decompression on the GPU, straight into Arrow layout in device memory.

:func:`decompress_device` takes a column already on the device (:func:`fsstgpu.to_device`) or one
in host memory. A host column is uploaded chunk by chunk and each chunk decoded as soon as it
lands: chunk ``j`` of the codes (whole splits, about ``chunk_bytes``) is copied into pinned
staging memory (skipped when the codes are pinned already), uploaded asynchronously on stream
``j % nstreams`` and decoded on that stream right after, so the copy engine uploads chunk ``j + 1``
while the SMs decode chunk ``j``. Only compressed bytes cross the bus.

A decode is one launch of the split-balanced kernel (``kernels/fsst_decode.cu``) and the offsets
scan; the host waits once, at the end, to read the kernel's error flag, because corrupt data must
raise :class:`~fsstgpu.CorruptDataError` rather than return garbage. Callers that pipeline many
decodes use :func:`decode_async` and :meth:`DecodeJob.check` instead. Staging memory comes from
CuPy's pinned memory pool (``cupy.get_default_pinned_memory_pool()``; ``free_all_blocks()``
releases it).
"""

from __future__ import annotations

import numpy as np

from fsstgpu.device import get_cupy
from fsstgpu.device_arrays import (
    DeviceCompressedStringArray,
    DeviceStringArray,
    HostPrepared,
    on_stream,
    upload,
)
from fsstgpu.errors import CorruptDataError
from fsstgpu.types import offsets_dtype

__all__ = ["DecodeJob", "chunk_bounds", "decode_async", "decompress_device"]

DEFAULT_CHUNK_BYTES = 32 << 20
DEFAULT_STREAMS = 3


class DecodeJob:
    """A decode enqueued on a stream: its result and the device error flag not yet read."""

    def __init__(self, result: DeviceStringArray, err, stream):
        self.result = result
        self.err = err
        self.stream = stream

    def check(self) -> DeviceStringArray:
        """Wait for the decode (on its stream only), raise CorruptDataError if it found any."""
        from fsstgpu.kernels.fsst_decode import error_message

        bits = int(self.err.get(stream=self.stream)[0])  # the one host sync of a decode
        if bits:
            raise CorruptDataError(error_message(bits))
        return self.result


def decode_async(dev: DeviceCompressedStringArray, stream=None, *, fill: int | None = None,
                 out=None) -> DecodeJob:
    """Enqueue a decode of ``dev`` on ``stream`` without waiting; :meth:`DecodeJob.check` it.

    ``fill`` fills the output with that byte first (tests: bytes the kernel misses show);
    ``out`` reuses a uint8 buffer of at least ``dev.total`` bytes (benchmarks).

    Examples
    --------
    >>> import fsstgpu, pyarrow as pa
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     from fsstgpu.gpu_decode import decode_async
    ...     job = decode_async(fsstgpu.to_device(fsstgpu.compress(pa.array(["a", "b"]))))
    ...     assert job.check().to_arrow().to_pylist() == ["a", "b"]
    """
    from fsstgpu.kernels.fsst_decode import launch_decode, launch_offsets

    cp = get_cupy()
    with on_stream(stream):
        offsets = cp.empty(dev.length + 1, dtype=offsets_dtype(dev.type, dev.total))
        launch_offsets(dev.lengths, offsets, stream=stream)
        data = cp.empty(dev.total, dtype=cp.uint8) if out is None else out[: dev.total]
        if fill is not None:
            data.fill(fill)
        err = cp.zeros(1, dtype=cp.int32)
        launch_decode(dev.codes, dev.ncodes, dev.split_codes, dev.split_out, dev.split_table,
                      dev.tab_sym, dev.tab_len, dev.ntables, data, dev.total, err, stream=stream)
        validity = None if dev.validity is None else dev.validity.copy()
    result = DeviceStringArray(dev.type, dev.length, offsets, data, validity, dev.null_count,
                               dev.chunk_lengths)
    return DecodeJob(result, err, stream)


def decompress_device(carr, stream=None, *, chunk_bytes: int = DEFAULT_CHUNK_BYTES,
                      nstreams: int = DEFAULT_STREAMS, fill: int | None = None
                      ) -> DeviceStringArray:
    """Decompress into Arrow layout in device memory.

    Parameters
    ----------
    carr : CompressedStringArray or DeviceCompressedStringArray
        A host column is uploaded with the upload overlapped with decoding; a device column
        (:func:`fsstgpu.to_device`) is decoded in place.
    stream : cupy.cuda.Stream, optional
        The result is ready on this stream (default: the current stream) when this returns.
    chunk_bytes, nstreams : int
        Host columns: codes per upload chunk (whole splits), and streams in flight.
    fill : int, optional
        Fill the output with this byte before decoding (tests).

    Returns
    -------
    DeviceStringArray

    Raises
    ------
    CorruptDataError
        When the host checks or the kernel find the data inconsistent.
    DeviceError
        Without a usable GPU.

    Examples
    --------
    >>> import fsstgpu, pyarrow as pa
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     col = pa.array(["x", None, "yz"], pa.large_string())
    ...     assert fsstgpu.decompress_device(fsstgpu.compress(col)).to_arrow().equals(col)
    """
    if isinstance(carr, DeviceCompressedStringArray):
        return decode_async(carr, stream, fill=fill).check()
    return _ingest(HostPrepared(carr), stream, chunk_bytes, nstreams, fill)


def chunk_bounds(split_codes: np.ndarray, chunk_bytes: int) -> np.ndarray:
    """Split indices where upload chunks start: whole splits, about ``chunk_bytes`` codes each.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.gpu_decode import chunk_bounds
    >>> chunk_bounds(np.array([0, 10, 20, 30, 40]), 20).tolist()
    [0, 2, 4]
    """
    nsplits = len(split_codes) - 1
    if nsplits <= 0:
        return np.zeros(1, np.int64)
    marks = np.arange(chunk_bytes, int(split_codes[-1]), chunk_bytes, dtype=np.int64)
    idx = np.searchsorted(split_codes, marks, side="left")
    return np.unique(np.concatenate(([0], idx, [nsplits]))).astype(np.int64)


def _is_pinned(arr: np.ndarray) -> bool:
    cp = get_cupy()
    if arr.size == 0:
        return False
    try:
        attrs = cp.cuda.runtime.pointerGetAttributes(arr.ctypes.data)
    except Exception:  # pageable memory unknown to CUDA: older runtimes raise
        return False
    return getattr(attrs, "type", 0) in (1, 3)  # cudaMemoryTypeHost, cudaMemoryTypeManaged


def _ingest(prep: HostPrepared, stream, chunk_bytes: int, nstreams: int, fill) -> DeviceStringArray:
    """Upload a prepared host column chunk by chunk, decoding each chunk as it lands."""
    import cupyx

    from fsstgpu.kernels.fsst_decode import (
        error_message,
        launch_decode,
        launch_offsets,
        padded_size,
    )

    cp = get_cupy()
    if chunk_bytes < 1 or nstreams < 1:
        raise ValueError("chunk_bytes and nstreams must be positive")
    main = stream if stream is not None else cp.cuda.get_current_stream()
    ncodes = len(prep.codes)
    with on_stream(main):
        d_sc = upload(cp, prep.split_codes, main)
        d_so = upload(cp, prep.split_out, main)
        d_st = upload(cp, prep.split_table, main)
        d_sym = upload(cp, prep.tab_sym, main)
        d_len = upload(cp, prep.tab_len, main)
        d_lengths = upload(cp, prep.lengths, main)
        validity = None if prep.validity is None else upload(cp, prep.validity, main)
        d_codes = cp.empty(padded_size(ncodes), dtype=cp.uint8)
        d_codes[ncodes:].fill(0)  # the padding the kernel's loads may reach
        offsets = cp.empty(prep.length + 1, dtype=offsets_dtype(prep.type, prep.total))
        launch_offsets(d_lengths, offsets, stream=main)
        data = cp.empty(prep.total, dtype=cp.uint8)
        if fill is not None:
            data.fill(fill)
        err = cp.zeros(1, dtype=cp.int32)
        ready = cp.cuda.Event(disable_timing=True)
        ready.record(main)

    bounds = chunk_bounds(prep.split_codes, chunk_bytes)
    spans = [(int(prep.split_codes[a]), int(prep.split_codes[b]))
             for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
    staged = not _is_pinned(prep.codes)
    streams = [cp.cuda.Stream(non_blocking=True) for _ in range(min(nstreams, max(len(spans), 1)))]
    staging, reuse = [], [None] * len(streams)
    if staged and spans:
        biggest = max(max(e - s for s, e in spans), 1)
        staging = [cupyx.empty_pinned((biggest,), dtype=np.uint8) for _ in streams]
    for s in streams:
        s.wait_event(ready)
    src_base = prep.codes.ctypes.data if ncodes else 0
    for j, ((a, b), (c0, c1)) in enumerate(zip(zip(bounds[:-1], bounds[1:], strict=True), spans,
                                                 strict=True)):
        i = j % len(streams)
        s = streams[i]
        n = c1 - c0
        if n:
            if staged:
                if reuse[i] is not None:
                    reuse[i].synchronize()  # the copy that last read this staging buffer is done
                np.copyto(staging[i][:n], prep.codes[c0:c1])
                src = staging[i].ctypes.data
            else:
                src = src_base + c0
            cp.cuda.runtime.memcpyAsync(d_codes.data.ptr + c0, src, n,
                                        cp.cuda.runtime.memcpyHostToDevice, s.ptr)
            if staged:
                reuse[i] = cp.cuda.Event(disable_timing=True)
                reuse[i].record(s)
        launch_decode(d_codes, ncodes, d_sc[a : b + 1], d_so[a : b + 1], d_st[a:b], d_sym, d_len,
                      prep.ntables, data, prep.total, err, stream=s)
    for s in streams:
        done = cp.cuda.Event(disable_timing=True)
        done.record(s)
        main.wait_event(done)
    bits = int(err.get(stream=main)[0])  # the one wait for the GPU: corrupt data must raise
    if bits:
        raise CorruptDataError(error_message(bits))
    return DeviceStringArray(prep.type, prep.length, offsets, data, validity, prep.null_count,
                             prep.chunk_lengths)
