"""Session 87 probe: where decode_pages' and device_column's host time goes on the device
host, by part (each part of formats/page_columns.py wrapped with a stream sync before and
after: ms a column, best of 3), what one small CuPy call costs there (an add, a fancy index,
an upload, a reduction read back), and decode_pages of a 16,000-row file (pure overhead)."""
import functools
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

import fsstgpu.formats.page_columns as PC
import fsstgpu.formats.page_runs as PRUNS
from fsstgpu.datasets import machine_text_table
from fsstgpu.device import get_cupy
from fsstgpu.formats import compress_file
from fsstgpu.formats.page_plan import plan_column, plannable
from fsstgpu.formats.rowgroups import Source

cp = get_cupy()
sync = cp.cuda.get_current_stream().synchronize
spent = defaultdict(float)


def timed(name, fn):
    @functools.wraps(fn)
    def wrapper(*a, **k):
        sync()
        t = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            sync()
            spent[name] += time.perf_counter() - t
    return wrapper


for name in ("_uploaded", "_levels", "_leaves", "_lengths", "_codes", "_table_ids",
             "_gathered", "_blocks", "_cuts", "prefixed_values"):
    setattr(PC, name, timed(name, getattr(PC, name)))
PRUNS.Checks.raise_first = timed("raise_first", PRUNS.Checks.raise_first)


def per_call(label, fn, k=300):
    fn()
    sync()
    t = time.perf_counter()
    for _ in range(k):
        fn()
    sync()
    print(f"one call: {label} {1e6 * (time.perf_counter() - t) / k:.1f} us")


a = cp.arange(1_600_000, dtype=cp.int64)
idx = cp.arange(0, 1_600_000, 7)
host = np.arange(40, dtype=np.int64)
per_call("a + 1 (1.6 M int64)", lambda: a + 1)
per_call("a[idx] (230 K)", lambda: a[idx])
per_call("asarray of 40 int64", lambda: cp.asarray(host))
per_call("int(a.any())", lambda: int(a.any()))
per_call("cumsum (1.6 M)", lambda: cp.cumsum(a))


def columns(path):
    with Source(path) as source:
        return [plan_column(source, f) for f in plannable(source)]


with tempfile.TemporaryDirectory() as tmp:
    for rows, label in ((1_600_000, "machine text 1.6 M rows"), (16_000, "16,000 rows")):
        src = Path(tmp) / f"{rows}.parquet"
        pq.write_table(machine_text_table(rows), src, compression="zstd",
                       row_group_size=max(rows // 8, 1))
        dst = Path(tmp) / f"{rows}.none.parquet"
        compress_file(src, dst, parquet_codec="none")
        plans = columns(dst)
        data = [cp.asarray(p.buffer) for p in plans]
        best = {}
        for _ in range(3):
            for p, d in zip(plans, data, strict=True):
                spent.clear()
                sync()
                t = time.perf_counter()
                PC.decode_pages(p, cp, d)
                sync()
                whole = time.perf_counter() - t
                row = dict(spent, whole=whole)
                key = p.field.name
                if key not in best or whole < best[key]["whole"]:
                    best[key] = row
        print(f"== {label}: decode_pages by part, ms (best of 3 a column)")
        for key, row in best.items():
            print(f"  {key}: " + ", ".join(f"{k} {1e3 * v:.2f}" for k, v in
                                          sorted(row.items(), key=lambda kv: -kv[1])))
