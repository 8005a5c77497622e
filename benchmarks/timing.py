"""Timing shared by the benchmarks: CUDA events, medians and the copy yardstick for the GPU
ones, best-of wall clock for the CPU ones.

Throughput figures are logical bytes over device time measured with CUDA events; every figure is
printed beside the same run's device-to-device copy bandwidth (bytes read plus bytes written).
Benchmark code: this folder is not part of the installed package (run it from a checkout).
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from fsstgpu.device import get_cupy


def time_device(fn, *, repeat: int = 10, warmup: int = 2, stream=None) -> float:
    """Median device time of ``fn()`` in seconds, measured with CUDA events on ``stream``.

    ``fn`` must enqueue its work on ``stream`` (default: the current stream) without host syncs.

    Examples
    --------
    >>> import cupy as cp  # doctest: +SKIP
    >>> from benchmarks.timing import time_device
    >>> x = cp.ones(1 << 20)  # doctest: +SKIP
    >>> seconds = time_device(lambda: x.sum())  # doctest: +SKIP
    """
    cupy = get_cupy()
    stream = stream or cupy.cuda.get_current_stream()
    for _ in range(warmup):
        fn()
    stream.synchronize()
    times = []
    for _ in range(repeat):
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record(stream)
        fn()
        stop.record(stream)
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop) / 1e3)
    return statistics.median(times)


def time_decode(dev, out, *, repeat: int) -> float:
    """Median device time of decoding the device column or batch ``dev`` into the uint8 buffer
    ``out`` (:func:`fsstgpu.gpu.decode.decode_async`); the timed decodes are checked after.

    Examples
    --------
    >>> import fsstgpu, pyarrow as pa  # doctest: +SKIP
    >>> from benchmarks.timing import time_decode
    >>> dev = fsstgpu.to_device(fsstgpu.compress(pa.array(["a"] * 1000)))  # doctest: +SKIP
    >>> seconds = time_decode(dev, get_cupy().empty(dev.total, "uint8"), repeat=5)  # doctest: +SKIP
    """
    from fsstgpu.gpu.decode import decode_async

    jobs = []

    def decode():
        jobs.append(decode_async(dev, out=out))
        # Keep only the last two results: retaining every one would make each repeat
        # cudaMalloc fresh offsets instead of reusing the pool's blocks.
        del jobs[:-2]

    seconds = time_device(decode, repeat=repeat)
    for job in jobs:
        job.check()
    return seconds


def best_of(fn, repeats: int) -> tuple[float, object]:
    """The least wall-clock seconds of ``repeats`` calls of ``fn()`` (no warm-up call), and the
    last call's result: the CPU benches' measure.

    Examples
    --------
    >>> from benchmarks.timing import best_of
    >>> seconds, result = best_of(lambda: sum(range(100)), 3)
    >>> seconds >= 0, result
    (True, 4950)
    """
    best, result = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - t0)
    return best, result


def time_wall(fn, *, repeat: int) -> float:
    """Median host wall-clock seconds of ``fn()`` (which returns with the GPU done), after one
    untimed call: the measure of host paths, end to end.

    Examples
    --------
    >>> from benchmarks.timing import time_wall
    >>> time_wall(lambda: sum(range(100)), repeat=3) >= 0
    True
    """
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def upload_seconds(host, device, *, repeat: int = 5) -> float:
    """Median wall-clock seconds of a plain host-to-device copy of ``host`` (a NumPy array, in
    pageable or pinned memory) into ``device`` (a CuPy array of its size), synchronised: the
    same run's upload yardstick (:func:`time_wall`'s measure).

    Examples
    --------
    >>> import numpy as np, cupy as cp  # doctest: +SKIP
    >>> from benchmarks.timing import pinned_like, upload_seconds
    >>> host = pinned_like(np.ones(1 << 20, np.uint8))  # doctest: +SKIP
    >>> seconds = upload_seconds(host, cp.empty(1 << 20, cp.uint8))  # doctest: +SKIP
    """
    cupy = get_cupy()

    def upload():
        device.set(host)
        cupy.cuda.get_current_stream().synchronize()

    return time_wall(upload, repeat=repeat)


def pinned_like(host):
    """A copy of the NumPy array ``host`` in pinned host memory (uploads from it are DMA)."""
    cupy = get_cupy()
    out = np.frombuffer(cupy.cuda.alloc_pinned_memory(host.nbytes), host.dtype, host.size)
    out[...] = host.reshape(-1)
    return out.reshape(host.shape)


def copy_bandwidth(nbytes: int = 1 << 30, *, repeat: int = 10) -> float:
    """Device-to-device copy bandwidth in bytes/s, counting bytes read plus bytes written.

    Examples
    --------
    >>> from benchmarks.timing import copy_bandwidth
    >>> gbps = copy_bandwidth(1 << 28) / 1e9  # doctest: +SKIP
    """
    cupy = get_cupy()
    src = cupy.empty(nbytes, dtype=cupy.uint8)
    src[:] = 1  # touch it: never time on unwritten memory
    dst = cupy.empty_like(src)

    def copy():
        dst[...] = src

    seconds = time_device(copy, repeat=repeat)
    return 2 * nbytes / seconds


def bench_row(op, variant, dtype, shape, moved, seconds, copy_bps, **extra) -> dict:
    """One benchmark result row: throughput of ``moved`` bytes in ``seconds`` beside the copy.

    Parameters
    ----------
    op, variant, dtype : str
        What ran.
    shape : sequence of int
        The logical shape of the data.
    moved : int
        Logical bytes moved (read plus written).
    seconds : float
        Device time.
    copy_bps : float
        The same run's device-to-device copy bandwidth in bytes/s (:func:`copy_bandwidth`).
    **extra
        More fields, appended after the standard ones.

    Returns
    -------
    dict
        ``op``, ``variant``, ``dtype``, ``shape`` (a list), ``bytes_moved``, ``ms``, ``gbps``,
        ``copy_gbps``, ``pct_copy`` (throughput as a percentage of the copy), then ``extra``.

    Examples
    --------
    >>> from benchmarks.timing import bench_row
    >>> row = bench_row("rotate", "v", "uint8", (10,), 2e9, 0.5, 8e9, verified=True)
    >>> row["shape"], row["gbps"], row["pct_copy"], row["verified"]
    ([10], 4.0, 50.0, True)
    """
    bps = moved / seconds
    return {"op": op, "variant": variant, "dtype": dtype, "shape": list(shape),
            "bytes_moved": moved, "ms": seconds * 1e3, "gbps": bps / 1e9,
            "copy_gbps": copy_bps / 1e9, "pct_copy": 100.0 * bps / copy_bps, **extra}
