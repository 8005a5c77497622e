"""Benchmark of the transpose kernels on ~1 GiB matrices, beside CuPy and the copy yardstick.

Every row counts the bytes read plus the bytes written (2 x the matrix), is timed with CUDA events
(median), and carries the same run's device-to-device copy bandwidth and the percentage of it.
Run ``python -m fsstgpu.kernels.bench_transpose [--tune] [--quick] [--json PATH]`` on a GPU
machine.  Variant kernels (``tiles_pf``, ``square_pf``, cluster panels / rows) are timed beside
the defaults in the same run, each after a byte-for-byte check against the default kernel.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import importlib
import json
import math
import statistics

from fsstgpu.device import get_cupy
from fsstgpu.kernels._timing import bench_row, copy_bandwidth, time_device

# the module itself: fsstgpu.kernels exports the function under the same name
tmod = importlib.import_module("fsstgpu.kernels.transpose")

GIB = 1 << 30
# (element size, dtype name, rows, cols): 1 GiB each
OUT_OF_PLACE = [(1, "uint8", 32768, 32768), (2, "uint16", 16384, 32768),
                (4, "float32", 16384, 16384), (8, "float64", 8192, 16384),
                (16, "complex128", 8192, 8192)]
SQUARE = [("float32", 16384), ("uint8", 32768), ("float64", 11584)]
# power-of-two shape (gcd = rows: three passes) and a coprime one (two passes); both ~1 GiB
RECT = [("float32", 8192, 32768), ("float32", 5003, 53636)]
QUICK_OUT_OF_PLACE = ("uint8", "complex128")   # the rows still short of their targets
QUICK_SQUARE = ("uint8",)


def _row(op, variant, dtype, shape, nbytes, seconds, copy_bps):
    return bench_row(op, variant, dtype, shape, 2 * nbytes, seconds, copy_bps)


def _fill(cp, shape, dtype):
    x = cp.empty(shape, dtype=dtype)
    x.reshape(-1).view(cp.uint8).fill(0x5A)   # touch every page before timing
    return x


def _random_fill(cp, shape, dtype):
    """Random bytes (for the spot checks of the variants: a constant fill checks nothing)."""
    x = cp.empty(shape, dtype=dtype)
    raw = x.reshape(-1).view(cp.uint8)
    raw[...] = cp.random.randint(0, 256, size=raw.size, dtype=cp.uint8)
    return x


def _same(cp, a, b) -> bool:
    return bool(cp.array_equal(a.reshape(-1).view(cp.uint8), b.reshape(-1).view(cp.uint8)))


def _tag(rows, ok):
    for r in rows:
        r["check"] = "ok" if ok else "MISMATCH"
    return rows


@contextlib.contextmanager
def _settings(**kw):
    """Temporarily set module constants of the transpose module (the variant switches)."""
    saved = {k: getattr(tmod, k) for k in kw}
    try:
        for k, v in kw.items():
            setattr(tmod, k, v)
        yield
    finally:
        for k, v in saved.items():
            setattr(tmod, k, v)


def _cfg_name(kind, cfg):
    v, tr, mb = cfg
    return f"{kind} V={v} TR={tr} MINB={mb}"


def _default_name(es, r, c, *ptrs, inplace=False):
    """Label of the kernel that transpose() picks for this case."""
    kernel, cfgs = tmod.default_kernels(es, inplace=inplace)
    cfg = tmod._fitting_cfg(cfgs, es, r, c, *ptrs)
    if cfg is None:
        kernel = "square" if inplace else "tiles"
    return f"default: {_cfg_name(kernel, cfg) if cfg else kernel}"


def _bench_tiles_pf(cp, es, dtype, r, c, repeat, copy_bps):
    """Every compiled tiles_pf config, each checked against the default kernel first."""
    rows = []
    x = _random_fill(cp, (r, c), dtype)
    ref = cp.empty((c, r), dtype=dtype)
    tmod._launch_tiles(x, ref, 1, r, c)
    out = cp.empty((c, r), dtype=dtype)
    for cfg in tmod.TILE_PF_ALL[es]:
        out.reshape(-1).view(cp.uint8).fill(0xAB)
        tmod._launch_tiles_pf(x, out, 1, r, c, cfg=cfg)
        ok = _same(cp, out, ref)
        t = time_device(lambda cfg=cfg: tmod._launch_tiles_pf(x, out, 1, r, c, cfg=cfg),
                        repeat=repeat)
        rows += _tag([_row("out_of_place", _cfg_name("tiles_pf", cfg), dtype, (r, c), x.nbytes,
                           t, copy_bps)], ok)
    return rows


def _bench_square_pf(cp, dtype, n, repeat, copy_bps):
    rows = []
    x = _random_fill(cp, (n, n), dtype)
    es = x.dtype.itemsize
    ref = cp.empty((n, n), dtype=dtype)
    tmod._launch_tiles(x, ref, 1, n, n)
    y = cp.empty_like(x)
    for cfg in tmod.SQUARE_PF_ALL[es]:
        y[...] = x
        tmod._launch_square_pf(y, 1, n, cfg=cfg)
        ok = _same(cp, y, ref)
        t = time_device(lambda cfg=cfg: tmod._launch_square_pf(y, 1, n, cfg=cfg), repeat=repeat)
        rows += _tag([_row("inplace_square", _cfg_name("square_pf", cfg), dtype, (n, n),
                           x.nbytes, t, copy_bps)], ok)
    return rows


# (panel kernel, row kernel, CLUSTER_PANEL_BYTES, CLUSTER_THREADS, CLUSTER_SMEM) of the
# rectangular variants timed beside the default
RECT_VARIANTS = [("panel_cluster", "row_cluster", 64, 512, 100 * 1024),
                 ("panel_cluster", "row_cluster", 64, 256, 72 * 1024),
                 ("panel_cluster", "row_cluster", 128, 1024, 227 * 1024),
                 ("panel_cluster", "row_cluster", 32, 512, 100 * 1024),
                 ("panel_cluster", "row", 64, 512, 100 * 1024),
                 ("panel", "row_cluster", 64, 512, 100 * 1024)]


def _rect_name(pk, rk, pb, nt, sm):
    return f"{pk}+{rk} panel={pb}B threads={nt} smem<={sm // 1024}K"


def _bench_rect_variants(cp, dtype, r, c, repeat, copy_bps):
    rows = []
    x = _random_fill(cp, (r, c), dtype)
    ref = cp.ascontiguousarray(x.T)
    y = cp.empty_like(x)
    for pk, rk, pb, nt, sm in RECT_VARIANTS:
        with _settings(RECT_PANEL_KERNEL=pk, RECT_ROW_KERNEL=rk, CLUSTER_PANEL_BYTES=pb,
                       CLUSTER_THREADS=nt, CLUSTER_SMEM=sm):
            y[...] = x
            got = tmod.transpose(y, inplace=True)
            ok = _same(cp, got, ref)
            name = _rect_name(pk, rk, pb, nt, sm)
            for shape, t in _time_alternating(cp, y, repeat).items():
                rows += _tag([_row("inplace_rect", name, dtype, shape, x.nbytes, t, copy_bps)],
                             ok)
    # each cluster pass alone (timing only), beside the default passes
    flat = y.reshape(-1)
    m, n = min(r, c), max(r, c)
    g = math.gcd(m, n)
    a, b = m // g, n // g
    limit = tmod._smem_limit()
    for pb, nt, sm in [(64, 512, 100 * 1024), (128, 1024, 227 * 1024)]:
        with _settings(CLUSTER_PANEL_BYTES=pb, CLUSTER_THREADS=nt, CLUSTER_SMEM=sm):
            pplan = tmod.cluster_panel_plan(m, x.dtype.itemsize, pb, min(limit, sm), nt)
            rplan = tmod.cluster_row_plan(n, x.dtype.itemsize, min(limit, sm))
            steps = [(f"cluster panel rotate {pplan}",
                      lambda: tmod._panel_step_cluster(flat, m, n, a, b, 0, limit)),
                     (f"cluster row scatter {rplan}",
                      lambda: tmod._row_step_cluster(flat, m, n, g, a, b, 0, limit)),
                     (f"cluster row gather {rplan}",
                      lambda: tmod._row_step_cluster(flat, m, n, g, a, b, 1, limit)),
                     (f"cluster panel shuffle gather {pplan}",
                      lambda: tmod._panel_step_cluster(flat, m, n, a, b, 1, limit)),
                     (f"cluster panel shuffle scatter {pplan}",
                      lambda: tmod._panel_step_cluster(flat, m, n, a, b, 2, limit))]
            for name, fn in steps:
                t = time_device(fn, repeat=repeat)
                rows.append(_row("inplace_rect_pass", f"{name} threads={nt} smem<={sm // 1024}K",
                                 dtype, (m, n), x.nbytes, t, copy_bps))
    return rows


def _time_alternating(cp, x, repeat):
    """Median device time of in-place transposes in each direction (the shape flips each call)."""
    times = {}
    cur = x
    for k in range(repeat + 2):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        shape = cur.shape
        start.record()
        cur = tmod.transpose(cur, inplace=True)
        stop.record()
        stop.synchronize()
        if k >= 2:   # first two calls warm up (compile, first touch)
            times.setdefault(shape, []).append(cp.cuda.get_elapsed_time(start, stop) / 1e3)
    return {s: statistics.median(t) for s, t in times.items()}


def _bench_out_of_place(cp, es, dtype, r, c, tune, repeat, copy_bps):
    rows = []
    x = _fill(cp, (r, c), dtype)
    out = cp.empty((c, r), dtype=dtype)
    for v in (tmod._ALL_V[es] if tune else (None,)):
        t = time_device(lambda v=v: tmod._launch_tiles(x, out, 1, r, c, v=v), repeat=repeat)
        chosen = v or tmod._pick_v(tmod.TILE_V[es], es, r, c, x.data.ptr, out.data.ptr)
        rows.append(_row("out_of_place", f"fsstgpu V={chosen}", dtype, (r, c), x.nbytes, t,
                         copy_bps))
    t = time_device(lambda: tmod.transpose(x, out), repeat=repeat)   # the per-size default
    rows.append(_row("out_of_place", _default_name(es, r, c, x.data.ptr, out.data.ptr), dtype,
                     (r, c), x.nbytes, t, copy_bps))
    t = time_device(lambda: cp.ascontiguousarray(x.T), repeat=repeat)
    rows.append(_row("out_of_place", "cupy.ascontiguousarray(x.T)", dtype, (r, c), x.nbytes, t,
                     copy_bps))
    t = time_device(lambda: cp.asfortranarray(x), repeat=repeat)
    rows.append(_row("out_of_place", "cupy.asfortranarray(x)", dtype, (r, c), x.nbytes, t,
                     copy_bps))
    return rows


def _bench_square(cp, dtype, n, tune, repeat, copy_bps):
    rows = []
    x = _fill(cp, (n, n), dtype)
    es = x.dtype.itemsize
    for v in (tmod._ALL_V[es] if tune else (None,)):
        t = time_device(lambda v=v: tmod._launch_square(x, 1, n, v=v), repeat=repeat)
        chosen = v or tmod._pick_v(tmod.SQUARE_V[es], es, n, n, x.data.ptr)
        rows.append(_row("inplace_square", f"fsstgpu V={chosen}", dtype, (n, n), x.nbytes, t,
                         copy_bps))
    t = time_device(lambda: tmod.transpose(x, inplace=True), repeat=repeat)
    rows.append(_row("inplace_square", _default_name(es, n, n, x.data.ptr, inplace=True), dtype,
                     (n, n), x.nbytes, t, copy_bps))
    return rows


def _bench_rect(cp, dtype, r, c, tune, repeat, copy_bps):
    rows = []
    x = _fill(cp, (r, c), dtype)
    saved = tmod.PANEL_BYTES, tmod.ROW_THREADS
    configs = [(pb, nt) for nt in (512, 1024) for pb in (16, 32, 64)] if tune else [saved]
    try:
        for pb, nt in configs:
            tmod.PANEL_BYTES, tmod.ROW_THREADS = pb, nt
            for shape, t in _time_alternating(cp, x, repeat).items():
                rows.append(_row("inplace_rect", f"fsstgpu panel={pb}B threads={nt}", dtype,
                                 shape, x.nbytes, t, copy_bps))
    finally:
        tmod.PANEL_BYTES, tmod.ROW_THREADS = saved
    if tune:   # each pass alone (permuting whatever is there: timing only)
        flat = x.reshape(-1)
        m, n = min(r, c), max(r, c)
        g = math.gcd(m, n)
        a, b = m // g, n // g
        limit = tmod._smem_limit()
        steps = [("panel rotate", lambda: tmod._panel_step(flat, m, n, a, b, 0, limit, saved[0])),
                 ("row scatter", lambda: tmod._row_step(flat, m, n, g, a, b, 0, limit)),
                 ("row gather", lambda: tmod._row_step(flat, m, n, g, a, b, 1, limit)),
                 ("panel shuffle gather",
                  lambda: tmod._panel_step(flat, m, n, a, b, 1, limit, saved[0])),
                 ("panel shuffle scatter",
                  lambda: tmod._panel_step(flat, m, n, a, b, 2, limit, saved[0]))]
        for name, fn in steps:
            t = time_device(fn, repeat=repeat)
            rows.append(_row("inplace_rect_pass", name, dtype, (m, n), x.nbytes, t, copy_bps))
    t = time_device(lambda: cp.ascontiguousarray(x.T), repeat=repeat)
    rows.append(_row("inplace_rect", "cupy.ascontiguousarray(x.T) (out of place)", dtype,
                     (r, c), x.nbytes, t, copy_bps))
    return rows


def bench_transpose(*, tune: bool = False, repeat: int = 10, quick: bool = False,
                    variants: bool = True) -> list[dict]:
    """Measure every transpose path on ~1 GiB matrices; return one dict per measurement.

    Parameters
    ----------
    tune : bool, default False
        Also time every register-block width V and panel width (for choosing the defaults).
    repeat : int, default 10
        Timed repetitions per figure (median reported).
    quick : bool, default False
        Only the rows the variants aim at (out-of-place uint8 and complex128, in-place square
        uint8, both in-place rectangular shapes), default and variants side by side; about a
        minute including compilation.
    variants : bool, default True
        Also time the non-default kernels (tiles_pf, square_pf, cluster panels / rows); each
        variant row carries ``check``: "ok" when its output on random data equals the default
        kernel's byte for byte, else "MISMATCH".

    Returns
    -------
    list of dict
        Keys: op, variant, dtype, shape, bytes_moved (read + written), ms, gbps, copy_gbps,
        pct_copy.

    Examples
    --------
    >>> from fsstgpu.kernels.bench_transpose import bench_transpose
    >>> rows = bench_transpose()  # doctest: +SKIP
    """
    cp = get_cupy()
    copy_bps = copy_bandwidth(GIB)
    rows = [_row("copy", "cupy d2d copy", "uint8", (GIB,), GIB, 2 * GIB / copy_bps, copy_bps)]

    pool = cp.get_default_memory_pool()
    for es, dtype, r, c in OUT_OF_PLACE:
        if quick and dtype not in QUICK_OUT_OF_PLACE:
            continue
        rows += _bench_out_of_place(cp, es, dtype, r, c, tune, repeat, copy_bps)
        pool.free_all_blocks()
        if variants:
            rows += _bench_tiles_pf(cp, es, dtype, r, c, repeat, copy_bps)
            pool.free_all_blocks()
    for dtype, n in SQUARE:
        if quick and dtype not in QUICK_SQUARE:
            continue
        rows += _bench_square(cp, dtype, n, tune, repeat, copy_bps)
        pool.free_all_blocks()
        if variants:
            rows += _bench_square_pf(cp, dtype, n, repeat, copy_bps)
            pool.free_all_blocks()
    for dtype, r, c in RECT:
        rows += _bench_rect(cp, dtype, r, c, tune, repeat, copy_bps)
        pool.free_all_blocks()
        if variants:
            rows += _bench_rect_variants(cp, dtype, r, c, repeat, copy_bps)
            pool.free_all_blocks()
    return rows


def format_table(rows: list[dict]) -> str:
    """Markdown table of :func:`bench_transpose` rows."""
    lines = ["| op | variant | dtype | shape | ms | GB/s (r+w) | copy GB/s | % of copy | check |",
             "|---|---|---|---|---:|---:|---:|---:|---|"]
    for r in rows:
        lines.append(f"| {r['op']} | {r['variant']} | {r['dtype']} | "
                     f"{'x'.join(map(str, r['shape']))} | {r['ms']:.3f} | {r['gbps']:.0f} | "
                     f"{r['copy_gbps']:.0f} | {r['pct_copy']:.1f} | {r.get('check', '')} |")
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tune", action="store_true", help="time every V and panel width")
    parser.add_argument("--json", help="write the rows to this JSON file")
    parser.add_argument("--quick", action="store_true",
                        help="only the rows short of their targets, default and variants")
    parser.add_argument("--no-variants", action="store_true", help="default kernels only")
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args(argv)
    cp = get_cupy()
    rows = bench_transpose(tune=args.tune, quick=args.quick, variants=not args.no_variants,
                           repeat=args.repeat)
    props = cp.cuda.runtime.getDeviceProperties(cp.cuda.Device().id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else props["name"]
    print(f"device: {name}  date: {datetime.date.today()}  cupy {cp.__version__}")
    print(format_table(rows))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"device": name, "date": str(datetime.date.today()), "rows": rows}, fh,
                      indent=1)


if __name__ == "__main__":
    main()
