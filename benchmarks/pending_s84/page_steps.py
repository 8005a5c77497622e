"""Session 84's probe (deleted once run): where read_page_columns' time goes, step by step
(a sync after each step), on the device (or the host twin with --cpu), machine text + dbtext.
No Nsight Systems on the device image (KINDS.md), so: host timers around synced steps."""
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

import fsstgpu.formats.page_columns as PC
import fsstgpu.formats.page_prefixes as PP
import fsstgpu.formats.page_runs as PRUNS
from fsstgpu.datasets import dbtext_dir, dbtext_table, machine_text_table
from fsstgpu.formats import compress_file
from fsstgpu.formats.page_plan import plan_column, plannable
from fsstgpu.formats.rowgroups import Source

CPU = "--cpu" in sys.argv
if CPU:
    xp = np
    sync = lambda: None  # noqa: E731
else:
    import cupy as cp
    xp = cp
    sync = lambda: cp.cuda.get_current_stream().synchronize()  # noqa: E731

acc = defaultdict(float)
calls = defaultdict(int)


def wrap(mod, name):
    fn = getattr(mod, name)

    def wrapped(*a, **k):
        sync()
        t = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            sync()
            acc[name] += time.perf_counter() - t
            calls[name] += 1
    setattr(mod, name, wrapped)


for mod, name in ((PC, "_levels"), (PC, "_leaves"), (PC, "_codes"), (PC, "_lengths"),
                  (PC, "_table_ids"),
                  (PC, "_gathered"), (PC, "_blocks"), (PC, "_cuts"), (PC, "_dictionary_entry"),
                  (PC, "_byte_dictionaries"), (PC, "prefixed_values"), (PC, "decode_runs"),
                  (PP, "decode_runs"), (PRUNS.Checks, "raise_first")):
    wrap(mod, name)
_init = PC._Leaf.__init__


def leaf_init(self, *a, **k):
    sync()
    t = time.perf_counter()
    _init(self, *a, **k)
    sync()
    acc["_Leaf"] += time.perf_counter() - t
    calls["_Leaf"] += 1


PC._Leaf.__init__ = leaf_init


def run(name, table, tmp):
    src = Path(tmp) / f"{name}.s.parquet"
    pq.write_table(table, src, compression="zstd", row_group_size=200_000)
    dst = Path(tmp) / f"{name}.none.parquet"
    compress_file(src, dst, parquet_codec="none")
    print(f"== {name}: {len(table)} rows, file {dst.stat().st_size / 1e6:.1f} MB")
    with Source(dst) as source:
        fields = plannable(source)
        for f in fields:
            for crc in (True, False):
                t = time.perf_counter()
                plan = plan_column(source, f, check=crc)
                dt = time.perf_counter() - t
            print(f" {f.name}: plan_column 1 thread {1e3 * dt:.1f} ms (no CRC), buffer "
                  f"{plan.buffer.size / 1e6:.1f} MB, rows {plan.rows}")
            for leaf in plan.leaves:
                enc, cnt = np.unique(leaf.encoding, return_counts=True)
                print(f"   {leaf.name}: {len(leaf.rows)} pages, rows/page max "
                      f"{leaf.rows.max() if len(leaf.rows) else 0}, encodings "
                      f"{dict(zip(enc.tolist(), cnt.tolist(), strict=False))}")
            data = plan.buffer if CPU else cp.asarray(plan.buffer)
            for _rep in range(3):
                acc.clear()
                calls.clear()
                sync()
                t = time.perf_counter()
                PC.decode_pages(plan, xp, data)
                sync()
                total = time.perf_counter() - t
            print(f"   decode_pages {1e3 * total:.1f} ms; steps (nested, synced):")
            for k, v in sorted(acc.items(), key=lambda kv: -kv[1]):
                print(f"     {k:20s} {1e3 * v:8.2f} ms  x{calls[k]}")


with tempfile.TemporaryDirectory() as tmp:
    run("machine", machine_text_table(1_600_000), tmp)
    if dbtext_dir() is not None:
        run("dbtext", dbtext_table(), tmp)
