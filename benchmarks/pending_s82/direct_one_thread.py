"""read_fsst_direct on one thread, each step timed by wrapping (the host's per-row work,
without contention): machine text 1.6 M rows and dbtext, uncompressed fsst pages."""
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

from fsstgpu.datasets import dbtext_dir, dbtext_table, machine_text_table
from fsstgpu.device import get_cupy
from fsstgpu.formats import compress_file, direct_reader as D, raw_columns as R

cp = get_cupy()
TARGETS = [(D, "_host_part"), (D, "job_segments"), (D, "_gathered"), (D, "decode_staged"),
           (D, "StagedColumn"), (D, "from_extension_array"), (D, "read_fsst_chunk"),
           (D, "_read_into"), (R, "chunk_pages"), (R, "check_crcs"), (R, "_leaf"),
           (R, "_table_array"), (R, "_binary_array"), (R, "_int_array"), (R, "_runs")]


def run(name, table, tmp):
    src, dst = Path(tmp) / f"{name}.s.parquet", Path(tmp) / f"{name}.f.parquet"
    pq.write_table(table, src, compression="zstd", row_group_size=200_000)
    compress_file(src, dst, parquet_codec="none")
    D.read_fsst_direct(dst, workers=1)
    cp.cuda.get_current_stream().synchronize()
    accs = {}
    for mod, fname in TARGETS:
        fn = getattr(mod, fname)
        acc = [0.0, 0]

        def wrap(*a, _fn=fn, _acc=acc, **k):
            t = time.perf_counter()
            try:
                return _fn(*a, **k)
            finally:
                _acc[0] += time.perf_counter() - t
                _acc[1] += 1
        setattr(mod, fname, wrap)
        accs[(mod, fname)] = (fn, acc)
    t = time.perf_counter()
    D.read_fsst_direct(dst, workers=1)
    cp.cuda.get_current_stream().synchronize()
    rows = len(table)
    ms = 1e3 * (time.perf_counter() - t)
    print(f"== {name}: {rows} rows; whole call, one thread {ms:.1f} ms")
    for (mod, fname), (fn, (s, n)) in accs.items():
        print(f"  {fname:22s} {1e3 * s:8.1f} ms in {n:4d} calls")
        setattr(mod, fname, fn)


with tempfile.TemporaryDirectory() as tmp:
    run("machine", machine_text_table(1_600_000), tmp)
    if dbtext_dir() is not None:
        run("dbtext", dbtext_table(), tmp)
