"""One entry point for the data-movement kernel benchmarks: transpose, rotate, bitplane.

``run_kernel_bench`` returns plain dict rows (JSON-ready); ``format_kernel_bench`` renders them
as a rich table.  Without a GPU only the CPU rows (dbtext length ratios) are produced.
"""

from __future__ import annotations

import datetime

from fsstgpu.device import get_cupy, gpu_available

GIB = 1 << 30


def device_name() -> str:
    """The current GPU's name, or ``"cpu"``."""
    if not gpu_available():
        return "cpu"
    cp = get_cupy()
    name = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)["name"]
    return name.decode() if isinstance(name, bytes) else name


def run_kernel_bench(size_bytes: int = GIB, *, repeat: int = 5) -> list[dict]:
    """Run every kernel benchmark that this machine supports.

    Parameters
    ----------
    size_bytes : int, default 1 GiB
        Array size of the rotate and bitplane benchmarks (transpose uses its own ~1 GiB shapes).
    repeat : int, default 5
        Timed repetitions per figure (median).

    Returns
    -------
    list of dict
        Rows with at least ``op`` and ``variant``; GPU rows also ``gbps`` (bytes read + written
        per second), ``copy_gbps`` (this run's device copy) and ``pct_copy``.  The first row
        records device and date.

    Examples
    --------
    >>> from fsstgpu.kernels.bench import run_kernel_bench
    >>> rows = run_kernel_bench()  # a minute on a GPU  # doctest: +SKIP
    """
    from fsstgpu.kernels.bench_bitplane import bench_bitplane

    rows = [{"op": "info", "variant": "run", "device": device_name(),
             "date": datetime.date.today().isoformat()}]
    if not gpu_available():
        return rows + bench_bitplane(size_bytes, gpu=False)
    from fsstgpu.kernels._timing import copy_bandwidth
    from fsstgpu.kernels.bench_rotate import bench_rotate

    copy_bps = copy_bandwidth(GIB)
    try:
        from fsstgpu.kernels.bench_transpose import bench_transpose
    except ImportError:
        bench_transpose = None
    if bench_transpose is not None:
        rows += bench_transpose()
    rows += bench_rotate(size_bytes, repeat=repeat, copy_bps=copy_bps)
    rows += bench_bitplane(size_bytes, repeat=repeat, copy_bps=copy_bps)
    return rows


def format_kernel_bench(rows: list[dict]):
    """Render :func:`run_kernel_bench` rows as a ``rich.table.Table``.

    Examples
    --------
    >>> from fsstgpu.kernels.bench import format_kernel_bench
    >>> t = format_kernel_bench([{"op": "bitplane_ratio", "variant": "lengths", "file": "x",
    ...                           "values": 3, "packed_bytes": 24, "ratio_vs_int32": 0.5,
    ...                           "bits_per_value": 64.0}])
    >>> t.row_count
    1
    """
    from rich.table import Table

    info = next((r for r in rows if r.get("op") == "info"), None)
    title = "kernel benchmarks"
    if info:
        title += f" ({info['device']}, {info['date']})"
    table = Table(title=title)
    for col, just in (("op", "left"), ("variant", "left"), ("dtype / file", "left"),
                      ("shape / values", "right"), ("ms", "right"), ("GB/s (r+w)", "right"),
                      ("copy GB/s", "right"), ("% of copy", "right"), ("ratio", "right")):
        table.add_column(col, justify=just)
    for r in rows:
        if r.get("op") == "info":
            continue
        if r.get("op") == "bitplane_ratio":
            table.add_row(r["op"], r["variant"], r["file"], f"{r['values']:,}", "", "", "", "",
                          f"{r['ratio_vs_int32']:.2f} ({r['bits_per_value']:.1f} b/v)")
            continue
        shape = "x".join(str(s) for s in r.get("shape", []))
        ratio = f"{r['ratio']:.2f}" if "ratio" in r else ""
        table.add_row(r["op"], r["variant"], str(r.get("dtype", "")), shape, f"{r['ms']:.3f}",
                      f"{r['gbps']:.0f}", f"{r['copy_gbps']:.0f}", f"{r['pct_copy']:.1f}", ratio)
    return table
