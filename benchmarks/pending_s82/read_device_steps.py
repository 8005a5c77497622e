"""Where read_table_device's time goes (the user's path, issue #24 item 2): machine text 1.6 M
rows and dbtext, zstd and uncompressed fsst pages; pyarrow's zstd read + upload beside it; each
step timed by wrapping (threads overlap: sums exceed the wall)."""
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

import fsstgpu.formats.device_reader as DR
import fsstgpu.formats.rowgroups as RG
import fsstgpu.gpu.staged as ST
from benchmarks.files import upload_strings
from fsstgpu.datasets import dbtext_dir, dbtext_table, machine_text_table
from fsstgpu.device import get_cupy
from fsstgpu.formats import compress_file, read_table_device

cp = get_cupy()


def wall(fn, repeat=5):
    fn()
    cp.cuda.get_current_stream().synchronize()
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        cp.cuda.get_current_stream().synchronize()
        out.append(time.perf_counter() - t)
    out.sort()
    return f"best {1e3 * out[0]:.1f} median {1e3 * out[len(out) // 2]:.1f} ms"


TARGETS = [(DR, "from_extension_array"), (DR, "stage"), (DR, "decode_batch"),
           (DR, "_checked_run"), (RG.Source, "read_row_group"), (RG.Source, "rows_checked"),
           (RG.Source, "restored"), (ST, "HostBatch"), (ST, "decode_async"),
           (ST, "upload_codes"), (ST, "StagedColumn"), (DR, "run_units")]


def steps(dst):
    accs = {}
    for owner, fname in TARGETS:
        fn = getattr(owner, fname)
        acc = [0.0, 0]

        def wrap(*a, _fn=fn, _acc=acc, **k):
            t = time.perf_counter()
            try:
                return _fn(*a, **k)
            finally:
                _acc[0] += time.perf_counter() - t
                _acc[1] += 1
        setattr(owner, fname, wrap)
        accs[(owner, fname)] = (fn, acc)
    t = time.perf_counter()
    read_table_device(dst)
    cp.cuda.get_current_stream().synchronize()
    print(f"  wrapped call {1e3 * (time.perf_counter() - t):.1f} ms")
    for (owner, fname), (fn, (s, n)) in accs.items():
        print(f"    {fname:22s} {1e3 * s:8.1f} ms in {n:4d} calls")
        setattr(owner, fname, fn)


def run(name, table, tmp):
    src = Path(tmp) / f"{name}.s.parquet"
    pq.write_table(table, src, compression="zstd", row_group_size=200_000)
    strings = [n for n in table.column_names
               if pa.types.is_string(table.schema.field(n).type)
               or pa.types.is_large_string(table.schema.field(n).type)]
    print(f"== {name}: {len(table)} rows")
    print("pyarrow zstd read + upload", wall(lambda: upload_strings(
        pq.read_table(src, columns=strings), strings)))
    for codec in ("zstd", "none"):
        dst = Path(tmp) / f"{name}.{codec}.parquet"
        compress_file(src, dst, parquet_codec=codec)
        print(f"read_table_device ({codec})", wall(lambda d=dst: read_table_device(d)))
        print(f"pyarrow read of the fsst file ({codec}), no upload",
              wall(lambda d=dst: pq.read_table(d)))
        steps(dst)


with tempfile.TemporaryDirectory() as tmp:
    run("machine", machine_text_table(1_600_000), tmp)
    if dbtext_dir() is not None:
        run("dbtext", dbtext_table(), tmp)
