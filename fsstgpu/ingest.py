"""Host-to-device ingestion of a compressed column, with the upload overlapped with decoding.

The codes are cut into chunks of whole splits (about ``chunk_bytes`` each). Chunk ``j`` is copied
into a pinned staging buffer (skipped when the codes already live in pinned memory, see
:func:`pin`), uploaded with an asynchronous copy on stream ``j % nstreams``, and decoded by the
split-balanced kernel on that same stream right after its copy, so the copy engine uploads chunk
``j + 1`` while the SMs decode chunk ``j``. Only compressed bytes cross the bus: at a compression
ratio ``r`` the column arrives ``r`` times faster than its uncompressed strings would, as long as
decoding keeps up with the bus (it is far faster, see ``bench_notes/gpu.md``).

Small arrays (split points, tables, narrowed lengths, validity) are uploaded first on the caller's
stream, which also computes the offsets; the chunk streams wait for them through an event, and the
caller's stream waits for every chunk stream at the end. The host waits on the GPU only to reuse a
staging buffer (when staging) and once at the end to read the kernel's error flag.
"""

from __future__ import annotations

import numpy as np

from fsstgpu.device import get_cupy
from fsstgpu.device_array import (
    DeviceStringArray,
    HostPrepared,
    _offsets_dtype,
    _on,
    _upload,
)
from fsstgpu.errors import CorruptDataError

DEFAULT_CHUNK_BYTES = 32 << 20
DEFAULT_STREAMS = 3


def _pinned_empty(nbytes: int) -> np.ndarray:
    import cupyx

    return cupyx.empty_pinned((nbytes,), dtype=np.uint8)


_STAGING: list = []  # pinned staging buffers kept between calls: pinning memory is slow


def _staging(count: int, nbytes: int) -> list:
    while len(_STAGING) < count:
        _STAGING.append(_pinned_empty(0))
    for i in range(count):
        if _STAGING[i].nbytes < nbytes:
            _STAGING[i] = _pinned_empty(nbytes)
    return _STAGING[:count]


def _pinned_copy(a: np.ndarray) -> np.ndarray:
    out = _pinned_empty(a.nbytes).view(a.dtype).reshape(a.shape)
    out[...] = a
    return out


def pin(carr_or_prep) -> HostPrepared:
    """Prepare a column for ingestion with its arrays copied once into pinned host memory.

    A reader that fills pinned buffers directly gets this for free; ingesting a pinned column
    skips the staging copy and uploads every array asynchronously.
    """
    prep = carr_or_prep if isinstance(carr_or_prep, HostPrepared) else HostPrepared(carr_or_prep)
    get_cupy()
    for name in ("codes", "lengths", "split_codes", "split_out", "split_table", "validity"):
        a = getattr(prep, name)
        if a is not None and a.size:
            setattr(prep, name, _pinned_copy(a))
    return prep


def _upload_async(cp, host: np.ndarray, stream):
    """Like device_array._upload, but a truly asynchronous copy when ``host`` is pinned."""
    if not _is_pinned(host):
        return _upload(cp, host, stream)
    dev = cp.empty(host.shape, dtype=host.dtype)
    cp.cuda.runtime.memcpyAsync(dev.data.ptr, host.ctypes.data, host.nbytes,
                                cp.cuda.runtime.memcpyHostToDevice, stream.ptr)
    return dev


def _is_pinned(arr: np.ndarray) -> bool:
    cp = get_cupy()
    if arr.size == 0:
        return False
    try:
        attrs = cp.cuda.runtime.pointerGetAttributes(arr.ctypes.data)
    except Exception:  # pageable memory unknown to CUDA: older runtimes raise
        return False
    return getattr(attrs, "type", 0) in (1, 3)  # cudaMemoryTypeHost, cudaMemoryTypeManaged


def chunk_bounds(split_codes: np.ndarray, chunk_bytes: int) -> np.ndarray:
    """Split indices where chunks start: whole splits, about ``chunk_bytes`` codes per chunk.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.ingest import chunk_bounds
    >>> chunk_bounds(np.array([0, 10, 20, 30, 40]), 20).tolist()
    [0, 2, 4]
    """
    nsplits = len(split_codes) - 1
    if nsplits <= 0:
        return np.zeros(1, np.int64)
    ncodes = int(split_codes[-1])
    marks = np.arange(chunk_bytes, ncodes, chunk_bytes, dtype=np.int64)
    idx = np.searchsorted(split_codes, marks, side="left")
    bounds = np.unique(np.concatenate(([0], idx, [nsplits])))
    return bounds[(bounds >= 0) & (bounds <= nsplits)].astype(np.int64)


def ingest(carr, stream=None, *, chunk_bytes: int = DEFAULT_CHUNK_BYTES,
           nstreams: int = DEFAULT_STREAMS, variant: str | None = None,
           fill: int | None = None) -> DeviceStringArray:
    """Upload a host CompressedStringArray (or :func:`pin`'s result) and decode it, overlapped.

    Parameters
    ----------
    carr : CompressedStringArray or HostPrepared
    stream : cupy.cuda.Stream, optional
        The result is ready on this stream (default: the current stream) when this returns.
    chunk_bytes : int
        Codes per upload chunk (whole splits).
    nstreams : int
        Streams (and staging buffers) in flight.
    variant, fill
        Kernel variant and output fill byte (benchmarks and tests).

    Raises
    ------
    CorruptDataError
        When the host checks or the kernel find the data inconsistent.

    Examples
    --------
    >>> import fsstgpu, pyarrow as pa
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     from fsstgpu.ingest import ingest
    ...     out = ingest(fsstgpu.compress(pa.array(["a", "b"])))
    ...     assert out.to_arrow().to_pylist() == ["a", "b"]
    """
    from fsstgpu.kernels.fsst_decode import (
        DEFAULT_VARIANT,
        error_message,
        launch_decode,
        launch_offsets,
        padded_size,
    )

    cp = get_cupy()
    if chunk_bytes < 1 or nstreams < 1:
        raise ValueError("chunk_bytes and nstreams must be positive")
    prep = carr if isinstance(carr, HostPrepared) else HostPrepared(carr)
    main = stream if stream is not None else cp.cuda.get_current_stream()
    ncodes = len(prep.codes)
    with _on(main):
        d_sc = _upload_async(cp, prep.split_codes, main)
        d_so = _upload_async(cp, prep.split_out, main)
        d_st = _upload_async(cp, prep.split_table, main)
        d_sym = _upload(cp, prep.tab_sym, main)
        d_len = _upload(cp, prep.tab_len, main)
        d_lengths = _upload_async(cp, prep.lengths, main)
        validity = None if prep.validity is None else _upload_async(cp, prep.validity, main)
        d_codes = cp.empty(padded_size(ncodes), dtype=cp.uint8)
        d_codes[ncodes:] = 0
        odt = _offsets_dtype(prep.type, prep.total)
        offsets = cp.empty(prep.length + 1, dtype=odt)
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
    staging, reuse = [], []
    if staged and spans:
        biggest = max(e - s for s, e in spans)
        staging = _staging(len(streams), max(biggest, 1))
        reuse = [None] * len(streams)
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
                ev = cp.cuda.Event(disable_timing=True)
                ev.record(s)
                reuse[i] = ev
        launch_decode(d_codes, ncodes, d_sc[a : b + 1], d_so[a : b + 1], d_st[a:b], d_sym, d_len,
                      prep.ntables, data, prep.total, err, variant=variant or DEFAULT_VARIANT,
                      stream=s)
    for s in streams:
        done = cp.cuda.Event(disable_timing=True)
        done.record(s)
        main.wait_event(done)
    bits = int(err.get(stream=main)[0])  # the one wait for the GPU: corrupt data must raise
    if bits:
        raise CorruptDataError(error_message(bits))
    return DeviceStringArray(prep.type, prep.length, offsets, data, validity, prep.null_count,
                             prep.chunk_lengths)
