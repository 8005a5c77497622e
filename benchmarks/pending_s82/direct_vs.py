"""The direct reader (row starts from C++, a gather launch a row group) against
read_table_device and pyarrow's zstd read + upload, same run; one thread's wrapped steps."""
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

import fsstgpu.formats.device_reader as DR
from benchmarks.files import upload_strings
from fsstgpu.datasets import dbtext_dir, dbtext_table, machine_text_table
from fsstgpu.device import get_cupy
from fsstgpu.formats import compress_file, direct_reader as D, raw_columns as R, read_table_device

cp = get_cupy()


def wall(fn, repeat=3):
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


TARGETS = [(D, "_host_part"), (D, "decode_staged"), (D, "StagedColumn"),
           (D, "from_extension_array"), (D, "read_fsst_chunk"), (D, "_read_into"),
           (D, "gather_segments"), (R, "chunk_pages"), (R, "check_crcs"), (R, "_leaf")]


def steps(dst, workers):
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
    D.read_fsst_direct(dst, workers=workers)
    cp.cuda.get_current_stream().synchronize()
    print(f"  workers={workers} wrapped call {1e3 * (time.perf_counter() - t):.1f} ms")
    for (mod, fname), (fn, (s, n)) in accs.items():
        print(f"    {fname:22s} {1e3 * s:8.1f} ms in {n:4d} calls")
        setattr(mod, fname, fn)


def run(name, table, tmp):
    src = Path(tmp) / f"{name}.s.parquet"
    pq.write_table(table, src, compression="zstd", row_group_size=200_000)
    strings = [n for n in table.column_names
               if pa.types.is_string(table.schema.field(n).type)
               or pa.types.is_large_string(table.schema.field(n).type)]
    dst = Path(tmp) / f"{name}.none.parquet"
    compress_file(src, dst, parquet_codec="none")
    zdst = Path(tmp) / f"{name}.zstd.parquet"
    compress_file(src, zdst)
    print(f"== {name}: {len(table)} rows; files: zstd {src.stat().st_size / 1e6:.1f} MB, "
          f"fsst zstd {zdst.stat().st_size / 1e6:.1f}, fsst none {dst.stat().st_size / 1e6:.1f}")
    for _ in range(1):
        print("pyarrow zstd read + upload", wall(lambda: upload_strings(
            pq.read_table(src, columns=strings), strings)))
        print("read_table_device (fsst zstd)", wall(lambda: read_table_device(zdst)))
        print("read_table_device (fsst none)", wall(lambda: read_table_device(dst)))
        print("read_fsst_direct (fsst none)", wall(lambda: D.read_fsst_direct(dst)))
        if hasattr(DR, "DIRECT_READS"):  # (2a772ea's device_reader.py applied)
            DR.DIRECT_READS = False
            print("read_table_device (fsst none), direct reads off", wall(
                lambda: read_table_device(dst)))
            DR.DIRECT_READS = True
    print("read_fsst_direct workers=8", wall(lambda: D.read_fsst_direct(dst, workers=8)))
    steps(dst, None)


with tempfile.TemporaryDirectory() as tmp:
    run("machine", machine_text_table(1_600_000), tmp)
    if dbtext_dir() is not None:
        run("dbtext", dbtext_table(), tmp)
