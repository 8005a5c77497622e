"""Session 80: `compress_file` on the CPU against `device="gpu"` (the GPU block encoder: all of
a row group's blocks in one encode), at both levels; two real-text tables (this machine's
text, dbtext as one column), Snappy Parquet in, rounds interleaved, wall ms median / min."""
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

import fsstgpu
from fsstgpu.datasets.text_tables import dbtext_table, machine_text_table
from fsstgpu.formats import compress_file, read_table

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
work = Path(tempfile.mkdtemp())
tables = {"machine text": machine_text_table(286_000), "dbtext": dbtext_table()}
variants = [("cpu", {}), ("gpu", {"device": "gpu"}), ("cpu fast", {"level": "fast"}),
            ("gpu fast", {"device": "gpu", "level": "fast"})]
if not fsstgpu.gpu_available():  # (a dry run here: the CPU rows only)
    variants = [v for v in variants if "gpu" not in v[0]]
for name, table in tables.items():
    src = work / f"{name.replace(' ', '_')}.parquet"
    pq.write_table(table, src, compression="snappy", row_group_size=65536)
    times = {v[0]: [] for v in variants}
    outs = {}
    for r in range(ROUNDS + 1):
        for label, kw in variants:
            dst = work / f"out_{label.replace(' ', '_')}.parquet"
            if dst.exists():
                os.remove(dst)
            t = time.perf_counter()
            compress_file(src, dst, **kw)
            dt = time.perf_counter() - t
            if r:
                times[label].append(dt * 1e3)
            outs[label] = dst
    same = {label: outs[label].read_bytes() == outs["cpu" if "fast" not in label
                                                    else "cpu fast"].read_bytes()
            for label in outs}
    back = read_table(outs[variants[-1][0]], device="cpu").equals(table)
    print(f"{name}: {table.num_rows} rows, {src.stat().st_size / 1e6:.1f} MB snappy; "
          f"files identical to the CPU's: {same}; the last variant's reads back equal: {back}")
    for label in times:
        a = np.array(times[label])
        print(f"  {label:22s} median {np.median(a):8.1f} ms  min {a.min():8.1f}  "
              f"({np.median(times['cpu']) / np.median(a):.2f}x cpu)")
