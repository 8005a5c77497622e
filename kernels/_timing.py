"""Device timing shared by every GPU benchmark: CUDA events, medians, and the copy yardstick.

Throughput figures are logical bytes over device time measured with CUDA events; every figure is
printed beside the same run's device-to-device copy bandwidth (bytes read plus bytes written).
"""

from __future__ import annotations

import statistics

from fsstgpu.device import get_cupy


def time_device(fn, *, repeat: int = 10, warmup: int = 2, stream=None) -> float:
    """Median device time of ``fn()`` in seconds, measured with CUDA events on ``stream``.

    ``fn`` must enqueue its work on ``stream`` (default: the current stream) without host syncs.
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


def copy_bandwidth(nbytes: int = 1 << 30, *, repeat: int = 10) -> float:
    """Device-to-device copy bandwidth in bytes/s, counting bytes read plus bytes written."""
    cupy = get_cupy()
    src = cupy.empty(nbytes, dtype=cupy.uint8)
    src[:] = 1  # touch it: never time on unwritten memory
    dst = cupy.empty_like(src)

    def copy():
        dst[...] = src

    seconds = time_device(copy, repeat=repeat)
    return 2 * nbytes / seconds
