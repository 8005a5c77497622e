"""Benchmark of the in-place rotate on ~1 GiB arrays, beside cupy.roll and the copy yardstick.

Every row counts bytes read plus bytes written (2 x the array), is timed with CUDA events
(median) and carries the same run's device-to-device copy bandwidth and the percentage of it.
"""

from __future__ import annotations

import time

from fsstgpu.device import get_cupy
from fsstgpu.kernels._timing import bench_row, copy_bandwidth, time_device
from fsstgpu.kernels.rotate import VARIANTS, plan, rotate

GIB = 1 << 30


def shifts(n: int) -> list[tuple[str, int]]:
    """The benchmark's shifts: small, tile-ragged, thirds, halves and n - 1."""
    return [("1", 1), ("1000", 1000), ("4096*3+5", 4096 * 3 + 5), ("n/3", n // 3),
            ("n/2", n // 2), ("n-1", n - 1)]


def _row(variant, dtype, n, nbytes, seconds, copy_bps, **extra):
    return bench_row("rotate", variant, dtype, (n,), 2 * nbytes, seconds, copy_bps, **extra)


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
        # the default variant per pass; check=False: no host sync inside the timed region
        t = time_device(lambda k=k: rotate(x, k, check=False), repeat=repeat)
        passes = "+".join(s[0] for s in plan(x.nbytes, k * es))
        rows.append(_row(f"fsstgpu k={label} ({passes})", dtype, n, x.nbytes, t, copy_bps))
    t = time_device(lambda: cp.roll(x, -(n // 3)), repeat=repeat)
    rows.append(_row("cupy.roll k=n/3 (out of place)", dtype, n, x.nbytes, t, copy_bps))
    return rows


def bench_rotate_variants(size_bytes: int = GIB, *, repeat: int = 5, copy_bps: float | None = None,
                          dtypes=("int32", "uint8"), variants=VARIANTS,
                          time_budget_s: float = 120.0, verify: bool = True) -> list[dict]:
    """Every rotate kernel variant on every shift of :func:`shifts`, in one run.

    Each (dtype, shift) runs all ``variants`` back to back; before timing, each variant is run
    once with ``check=True`` and compared with ``cupy.roll`` (``verified`` in the row; a wrong
    result gives a ``FAILED`` row and that variant is not timed).  Rows stop once
    ``time_budget_s`` of wall time has passed (a last row says what was skipped).  Pipelined
    variants are timed with ``check=False`` (no synchronisation).

    Examples
    --------
    >>> from fsstgpu.kernels.bench_rotate import bench_rotate_variants
    >>> rows = bench_rotate_variants(time_budget_s=60)  # needs a GPU  # doctest: +SKIP
    """
    cp = get_cupy()
    t_end = time.monotonic() + time_budget_s
    copy_bps = copy_bps or copy_bandwidth(size_bytes)
    rows: list[dict] = []
    for dtype in dtypes:
        if _variant_rows(cp, dtype, size_bytes, repeat, copy_bps, variants, t_end, verify, rows):
            break
        cp.get_default_memory_pool().free_all_blocks()
    return rows


def _verify_once(cp, x, k, variant) -> dict:
    before = x.copy()
    extra = {}
    try:
        rotate(x, k, variant=variant, check=True)
        ok = bool(cp.array_equal(x, cp.roll(before, -k)))
    except Exception as exc:                  # report it, keep benchmarking the others
        ok = False
        extra["error"] = f"{type(exc).__name__}: {exc}"
        x[...] = before
    extra["verified"] = ok
    return extra


def _variant_rows(cp, dtype, size_bytes, repeat, copy_bps, variants, t_end, verify, rows) -> bool:
    """Append one dtype's rows; True when the time budget ran out."""
    es = cp.dtype(dtype).itemsize
    n = size_bytes // es
    x = cp.empty(n, dtype=dtype)
    x.view(cp.uint8)[:] = cp.arange(x.nbytes, dtype=cp.uint8)
    x.view(cp.uint8)[::4093] += 7                # not periodic in 256: a wrong shift shows up
    for label, k in shifts(n):
        passes = "+".join(s[0] for s in plan(x.nbytes, k * es))
        for variant in variants:
            if time.monotonic() > t_end:
                rows.append({"op": "rotate", "variant": "(time budget reached)",
                             "skipped": f"{dtype} k={label} {variant} and later"})
                return True
            extra = _verify_once(cp, x, k, variant) if verify else {}
            if verify and not extra["verified"]:
                rows.append({"op": "rotate", "variant": f"{variant} k={label}", "dtype": dtype,
                             "shape": [n], "FAILED": True, **extra})
                continue
            t = time_device(lambda k=k, v=variant: rotate(x, k, variant=v, check=False),
                            repeat=repeat)
            rows.append(_row(f"{variant} k={label} ({passes})", dtype, n, x.nbytes, t, copy_bps,
                             kernel_variant=variant, **extra))
    t = time_device(lambda: cp.roll(x, -(n // 3)), repeat=repeat)
    rows.append(_row("cupy.roll k=n/3 (out of place)", dtype, n, x.nbytes, t, copy_bps))
    return False
