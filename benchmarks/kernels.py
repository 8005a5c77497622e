"""Benchmarks of the data-movement kernels: transpose, rotate, bitshuffle and the bit-plane codec.

``run_kernel_bench`` returns plain dict rows (JSON-ready); ``format_kernel_bench`` renders them
as a rich table.  Without a GPU only the CPU rows (dbtext length ratios) are produced.  Every GPU
row counts the bytes read plus the bytes written, is timed with CUDA events (median) and carries
the same run's device-to-device copy bandwidth and the percentage of it.  Only the public kernel
API runs (``fsstgpu.kernels.<module>.<function>``), so the rows measure what users get.

Run ``python -m benchmarks.kernels [--json PATH]`` from a checkout on a GPU machine.
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics

import numpy as np

from benchmarks.timing import bench_row, copy_bandwidth, time_device
from fsstgpu.device import get_cupy, gpu_available
from fsstgpu.kernels import bitplane, bitshuffle, rotate, transpose, transpose_inplace

GIB = 1 << 30
# transpose: (dtype, rows, cols), ~1 GiB each
OUT_OF_PLACE = [("uint8", 32768, 32768), ("uint16", 16384, 32768), ("float32", 16384, 16384),
                ("float64", 8192, 16384), ("complex128", 8192, 8192)]
SQUARE = [("float32", 16384), ("uint8", 32768), ("float64", 11584)]
# gcd = rows (blocks + chunk cycles: two passes) and a coprime shape (Catanzaro: two passes)
RECT = [("float32", 8192, 32768), ("float32", 5003, 53636)]


def device_name() -> str:
    """The current GPU's name, or ``"cpu"``."""
    if not gpu_available():
        return "cpu"
    cp = get_cupy()
    name = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)["name"]
    return name.decode() if isinstance(name, bytes) else name


def _filled(cp, shape, dtype):
    x = cp.empty(shape, dtype=dtype)
    x.reshape(-1).view(cp.uint8).fill(0x5A)   # touch every page before timing
    return x


# ------------------------------------------------------------------------------------------------
# transpose
# ------------------------------------------------------------------------------------------------

def _kernel_label(choice) -> str:
    names = ("V", "TR", "MINB")
    return " ".join([choice[0]] + [f"{k}={v}" for k, v in zip(names, choice[1:], strict=False)])


def _time_alternating(cp, x, repeat):
    """Median device time of in-place transposes in each direction (the shape flips each call)."""
    times: dict = {}
    cur = x
    for k in range(repeat + 2):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        shape = cur.shape
        start.record()
        cur = transpose.transpose(cur, inplace=True)
        stop.record()
        stop.synchronize()
        if k >= 2:   # the first two calls warm up (compile, first touch)
            times.setdefault(shape, []).append(cp.cuda.get_elapsed_time(start, stop) / 1e3)
    return {s: statistics.median(t) for s, t in times.items()}


def bench_transpose(*, repeat: int = 10, copy_bps: float | None = None) -> list[dict]:
    """Every transpose path on ~1 GiB matrices, beside CuPy's own transposes.

    Examples
    --------
    >>> from benchmarks.kernels import bench_transpose
    >>> rows = bench_transpose()  # needs a GPU  # doctest: +SKIP
    """
    cp = get_cupy()
    copy_bps = copy_bps or copy_bandwidth(GIB)
    pool = cp.get_default_memory_pool()
    rows = []

    def row(op, label, dtype, shape, nbytes, seconds):
        rows.append(bench_row(op, label, dtype, shape, 2 * nbytes, seconds, copy_bps))

    for dtype, r, c in OUT_OF_PLACE:
        x = _filled(cp, (r, c), dtype)
        out = cp.empty((c, r), dtype=dtype)
        choice = transpose.choose_kernel(x.dtype.itemsize, r, c, x.data.ptr, out.data.ptr)
        row("out_of_place", f"fsstgpu {_kernel_label(choice)}", dtype, (r, c), x.nbytes,
            time_device(lambda x=x, out=out: transpose.transpose(x, out), repeat=repeat))
        row("out_of_place", "cupy.ascontiguousarray(x.T)", dtype, (r, c), x.nbytes,
            time_device(lambda x=x: cp.ascontiguousarray(x.T), repeat=repeat))
        row("out_of_place", "cupy.asfortranarray(x)", dtype, (r, c), x.nbytes,
            time_device(lambda x=x: cp.asfortranarray(x), repeat=repeat))
        del x, out
        pool.free_all_blocks()
    for dtype, n in SQUARE:
        x = _filled(cp, (n, n), dtype)
        choice = transpose.choose_kernel(x.dtype.itemsize, n, n, x.data.ptr, inplace=True)
        row("inplace_square", f"fsstgpu {_kernel_label(choice)}", dtype, (n, n), x.nbytes,
            time_device(lambda x=x: transpose.transpose(x, inplace=True), repeat=repeat))
        del x
        pool.free_all_blocks()
    for dtype, r, c in RECT:
        x = _filled(cp, (r, c), dtype)
        for shape, seconds in _time_alternating(cp, x, repeat).items():
            blocks = transpose_inplace.block_shape(*shape, x.dtype.itemsize)
            label = "fsstgpu blocks + chunk cycles" if blocks else "fsstgpu panel + row"
            row("inplace_rect", label, dtype, shape, x.nbytes, seconds)
        row("inplace_rect", "cupy.ascontiguousarray(x.T) (out of place)", dtype, (r, c),
            x.nbytes, time_device(lambda x=x: cp.ascontiguousarray(x.T), repeat=repeat))
        del x
        pool.free_all_blocks()
    return rows


# ------------------------------------------------------------------------------------------------
# rotate
# ------------------------------------------------------------------------------------------------

def shifts(n: int) -> list[tuple[str, int]]:
    """The rotate benchmark's shifts: small, tile-ragged, thirds, halves, n - 1, and 2n/5 + 1,
    whose remainder is too large to save (at 1 GiB), so that its plan takes two passes (issue
    #26 asks every shift at copy speed; BENCHMARKS.md section 34 has it at 56%).

    Examples
    --------
    >>> from benchmarks.kernels import shifts
    >>> [label for label, k in shifts(100)]
    ['1', '1000', '4096*3+5', 'n/3', 'n/2', 'n-1', '2n/5+1']
    """
    return [("1", 1), ("1000", 1000), ("4096*3+5", 4096 * 3 + 5), ("n/3", n // 3),
            ("n/2", n // 2), ("n-1", n - 1), ("2n/5+1", 2 * n // 5 + 1)]


def bench_rotate(size_bytes: int = GIB, *, repeat: int = 5, copy_bps: float | None = None,
                 dtypes=("int32", "uint8")) -> list[dict]:
    """Time ``rotate`` for every shift of :func:`shifts` on ``size_bytes`` arrays.

    Examples
    --------
    >>> from benchmarks.kernels import bench_rotate
    >>> rows = bench_rotate()  # needs a GPU  # doctest: +SKIP
    """
    cp = get_cupy()
    copy_bps = copy_bps or copy_bandwidth(size_bytes)
    rows = []
    for dtype in dtypes:
        es = cp.dtype(dtype).itemsize
        n = size_bytes // es
        x = cp.empty(n, dtype=dtype)
        x.view(cp.uint8)[:] = cp.arange(x.nbytes, dtype=cp.uint8)   # touch every page
        for label, k in shifts(n):
            # check=False: no host synchronisation inside the timed region
            t = time_device(lambda k=k, x=x: rotate.rotate(x, k, check=False), repeat=repeat)
            passes = "+".join(s[0] for s in rotate.plan(x.nbytes, k * es))
            rows.append(bench_row("rotate", f"fsstgpu k={label} ({passes})", dtype, (n,),
                                  2 * x.nbytes, t, copy_bps))
        t = time_device(lambda x=x, n=n: cp.roll(x, -(n // 3)), repeat=repeat)
        rows.append(bench_row("rotate", "cupy.roll k=n/3 (out of place)", dtype, (n,),
                              2 * x.nbytes, t, copy_bps))
        del x
        cp.get_default_memory_pool().free_all_blocks()
    return rows


# ------------------------------------------------------------------------------------------------
# bitshuffle and the bit-plane codec
# ------------------------------------------------------------------------------------------------

def _codec_rows(name, vals, delta, repeat, copy_bps):
    # the no-sync paths: pack without trimming, unpack with the count and dtype known
    t = time_device(lambda: bitplane.bitplane_pack(vals, delta=delta, trim=False), repeat=repeat)
    buf = bitplane.bitplane_pack(vals, delta=delta)
    moved = vals.nbytes + int(buf.size)
    rows = [bench_row("bitplane_pack", name, str(vals.dtype), (vals.size,), moved, t, copy_bps,
                      input_gbps=vals.nbytes / t / 1e9, ratio=vals.nbytes / int(buf.size))]
    t = time_device(lambda: bitplane.bitplane_unpack(buf, count=vals.size, dtype=vals.dtype,
                                                     check=False), repeat=repeat)
    rows.append(bench_row("bitplane_unpack", name, str(vals.dtype), (vals.size,), moved, t,
                          copy_bps, output_gbps=vals.nbytes / t / 1e9))
    if not delta and vals.dtype.kind == "u":      # lengths -> int64 Arrow offsets, fused
        t = time_device(lambda: bitplane.bitplane_unpack_offsets(
            buf, count=vals.size, dtype=vals.dtype, wide=True, check=False), repeat=repeat)
        rows.append(bench_row("bitplane_unpack_offsets", name, str(vals.dtype), (vals.size,),
                              int(buf.size) + 8 * (vals.size + 1), t, copy_bps))
    return rows


def bench_bitplane(size_bytes: int = GIB, *, repeat: int = 5,
                   copy_bps: float | None = None) -> list[dict]:
    """Time bitshuffle / bitunshuffle and bitplane_pack / unpack on ``size_bytes`` of data.

    Examples
    --------
    >>> from benchmarks.kernels import bench_bitplane
    >>> rows = bench_bitplane()  # needs a GPU  # doctest: +SKIP
    """
    cp = get_cupy()
    copy_bps = copy_bps or copy_bandwidth(size_bytes)
    pool = cp.get_default_memory_pool()
    rows = []
    for dtype in ("uint8", "uint16", "uint32", "uint64"):
        es = np.dtype(dtype).itemsize
        n = size_bytes // es
        x = cp.random.randint(0, 1 << min(8 * es - 1, 30), size=n, dtype=cp.int64).astype(dtype)
        t = time_device(lambda x=x: bitshuffle.bitshuffle(x), repeat=repeat)
        rows.append(bench_row("bitshuffle", "fsstgpu", dtype, (n,), 2 * x.nbytes, t, copy_bps))
        s = bitshuffle.bitshuffle(x)
        t = time_device(lambda s=s, d=dtype: bitshuffle.bitunshuffle(s, d), repeat=repeat)
        rows.append(bench_row("bitunshuffle", "fsstgpu", dtype, (n,), 2 * x.nbytes, t,
                              copy_bps))
        del x, s
        pool.free_all_blocks()
    # string-length-like data (uint32 in [0, 200)) and a sorted int64 column (delta)
    lengths = cp.random.randint(0, 200, size=size_bytes // 4, dtype=cp.int32).astype(cp.uint32)
    rows += _codec_rows("uint32 lengths <200", lengths, False, repeat, copy_bps)
    del lengths
    pool.free_all_blocks()
    col = cp.cumsum(cp.random.randint(0, 1000, size=size_bytes // 8, dtype=cp.int64))
    rows += _codec_rows("sorted int64, delta", col, True, repeat, copy_bps)
    del col
    pool.free_all_blocks()
    return rows


def dbtext_length_ratios(paths=None) -> list[dict]:
    """Pack the string lengths of every dbtext file (CPU); one row per file plus the total.

    Examples
    --------
    >>> from benchmarks.kernels import dbtext_length_ratios
    >>> rows = dbtext_length_ratios()  # reads the dbtext corpus  # doctest: +SKIP
    """
    from fsstgpu.datasets import dbtext_files, load_lines

    rows = []
    total_n = total_packed = 0
    for path in paths if paths is not None else dbtext_files():
        arr = load_lines(path)
        offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64 if arr.type in (
            "large_string", "large_binary") else np.int32)[arr.offset:arr.offset + len(arr) + 1]
        lengths = np.diff(offsets).astype(np.uint32)
        packed = bitplane.bitplane_pack_cpu(lengths).size
        total_n += lengths.size
        total_packed += packed
        rows.append({"op": "bitplane_ratio", "variant": "lengths", "file": path.name,
                     "values": int(lengths.size), "packed_bytes": int(packed),
                     "ratio_vs_int32": 4 * lengths.size / packed,
                     "bits_per_value": 8 * packed / max(1, lengths.size)})
    if rows:
        rows.append({"op": "bitplane_ratio", "variant": "lengths", "file": "(all files)",
                     "values": total_n, "packed_bytes": total_packed,
                     "ratio_vs_int32": 4 * total_n / total_packed,
                     "bits_per_value": 8 * total_packed / max(1, total_n)})
    return rows


# ------------------------------------------------------------------------------------------------
# entry points
# ------------------------------------------------------------------------------------------------

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
    >>> from benchmarks.kernels import run_kernel_bench
    >>> rows = run_kernel_bench()  # a minute on a GPU  # doctest: +SKIP
    """
    rows = [{"op": "info", "variant": "run", "device": device_name(),
             "date": datetime.date.today().isoformat()}]
    if gpu_available():
        copy_bps = copy_bandwidth(GIB)
        rows += bench_transpose(repeat=repeat, copy_bps=copy_bps)
        rows += bench_rotate(size_bytes, repeat=repeat, copy_bps=copy_bps)
        rows += bench_bitplane(size_bytes, repeat=repeat, copy_bps=copy_bps)
    return rows + dbtext_length_ratios()


def format_kernel_bench(rows: list[dict]):
    """Render :func:`run_kernel_bench` rows as a ``rich.table.Table``.

    Examples
    --------
    >>> from benchmarks.kernels import format_kernel_bench
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


def main(argv=None) -> None:
    """``python -m benchmarks.kernels``: print the table; ``--json PATH`` also writes the rows."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=GIB, help="bytes per rotate / bitplane array")
    parser.add_argument("--repeat", type=int, default=5, help="timed repetitions per figure")
    parser.add_argument("--json", help="write the rows to this JSON file")
    args = parser.parse_args(argv)
    rows = run_kernel_bench(args.size, repeat=args.repeat)
    from rich.console import Console

    Console().print(format_kernel_bench(rows))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=1)


if __name__ == "__main__":
    main()
