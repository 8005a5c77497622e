"""Benchmark of the in-place rotate on ~1 GiB arrays, beside cupy.roll and the copy yardstick.

Every row counts bytes read plus bytes written (2 x the array), is timed with CUDA events
(median) and carries the same run's device-to-device copy bandwidth and the percentage of it.
"""

from __future__ import annotations

from fsstgpu.device import get_cupy
from fsstgpu.kernels._timing import copy_bandwidth, time_device
from fsstgpu.kernels.rotate import plan, rotate

GIB = 1 << 30


def shifts(n: int) -> list[tuple[str, int]]:
    """The benchmark's shifts: small, tile-ragged, thirds, halves and n - 1."""
    return [("1", 1), ("1000", 1000), ("4096*3+5", 4096 * 3 + 5), ("n/3", n // 3),
            ("n/2", n // 2), ("n-1", n - 1)]


def _row(variant, dtype, n, nbytes, seconds, copy_bps, **extra):
    bps = 2 * nbytes / seconds
    return {"op": "rotate", "variant": variant, "dtype": dtype, "shape": [n],
            "bytes_moved": 2 * nbytes, "ms": seconds * 1e3, "gbps": bps / 1e9,
            "copy_gbps": copy_bps / 1e9, "pct_copy": 100.0 * bps / copy_bps, **extra}


def bench_rotate(size_bytes: int = GIB, *, repeat: int = 5, copy_bps: float | None = None,
                 dtypes=("int32", "uint8")) -> list[dict]:
    """Time ``rotate`` for every shift of :func:`shifts` on ``size_bytes`` arrays.

    Examples
    --------
    >>> from fsstgpu.kernels.bench_rotate import bench_rotate
    >>> rows = bench_rotate()  # needs a GPU  # doctest: +SKIP
    """
    cp = get_cupy()
    copy_bps = copy_bps or copy_bandwidth(size_bytes)
    rows = []
    for dtype in dtypes:
        rows += _rows_for(cp, dtype, size_bytes, repeat, copy_bps)
        cp.get_default_memory_pool().free_all_blocks()
    return rows


def _rows_for(cp, dtype, size_bytes, repeat, copy_bps):
    es = cp.dtype(dtype).itemsize
    n = size_bytes // es
    x = cp.empty(n, dtype=dtype)
    x.view(cp.uint8)[:] = cp.arange(x.nbytes, dtype=cp.uint8)   # touch every page
    rows = []
    for label, k in shifts(n):
        t = time_device(lambda k=k: rotate(x, k), repeat=repeat)
        passes = "+".join(s[0] for s in plan(x.nbytes, k * es))
        rows.append(_row(f"fsstgpu k={label} ({passes})", dtype, n, x.nbytes, t, copy_bps))
    t = time_device(lambda: cp.roll(x, -(n // 3)), repeat=repeat)
    rows.append(_row("cupy.roll k=n/3 (out of place)", dtype, n, x.nbytes, t, copy_bps))
    return rows
