"""Session 84 (from 83): read_table_device with the fsst columns decoded from
their pages on the device (formats/page_reader.py) against the usual path and pyarrow's zstd
read + upload, same run, with the bus's bandwidths; one call's steps timed."""
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

import fsstgpu.formats.device_reader as DR
import fsstgpu.formats.page_reader as PR
from benchmarks.files import bus_bandwidths, upload_strings
from fsstgpu.datasets import dbtext_dir, dbtext_table, machine_text_table
from fsstgpu.device import get_cupy
from fsstgpu.formats import compress_file, read_table_device

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


def steps(path):
    """One page_columns call with its steps wrapped (a sync after each)."""
    acc = {}
    saved = {}
    for mod, name in ((PR, "plan_column"), (PR, "decode_pages"), (PR, "device_column"),
                      (PR, "decode_async")):
        fn = getattr(mod, name)
        saved[(mod, name)] = fn

        def wrap(*a, _fn=fn, _name=name, **k):
            t = time.perf_counter()
            try:
                out = _fn(*a, **k)
                if _name == "decode_async":
                    out = _Checked(out)
                return out
            finally:
                cp.cuda.get_current_stream().synchronize()
                acc[_name] = acc.get(_name, 0.0) + time.perf_counter() - t
        setattr(mod, name, wrap)
    t = time.perf_counter()
    got = PR.read_page_columns(path)
    cp.cuda.get_current_stream().synchronize()
    print(f"  page_columns wrapped {1e3 * (time.perf_counter() - t):.1f} ms, columns {sorted(got)}")
    for k, v in acc.items():
        print(f"    {k:16s} {1e3 * v:8.1f} ms (summed over threads)")
    for (mod, name), fn in saved.items():
        setattr(mod, name, fn)


class _Checked:
    def __init__(self, job):
        self.job = job

    def check(self):
        return self.job.check()


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
    nbytes = sum(pa.compute.sum(pa.compute.binary_length(table.column(n))).as_py() or 0
                 for n in strings)
    print(f"== {name}: {len(table)} rows, {nbytes / 1e6:.1f} MB of strings; files: zstd "
          f"{src.stat().st_size / 1e6:.1f} MB, fsst zstd {zdst.stat().st_size / 1e6:.1f}, "
          f"fsst none {dst.stat().st_size / 1e6:.1f}")
    DR.PAGE_READS = True
    print("pyarrow zstd read + upload", wall(lambda: upload_strings(
        pq.read_table(src, columns=strings), strings)))
    print("read_table_device (fsst zstd)", wall(lambda: read_table_device(zdst)))
    print("read_table_device (fsst none), page reads", wall(lambda: read_table_device(dst)))
    DR.PAGE_READS = False
    print("read_table_device (fsst none), page reads off", wall(lambda: read_table_device(dst)))
    DR.PAGE_READS = True
    print("read_page_columns alone (fsst none)", wall(lambda: PR.read_page_columns(dst)))
    import sys

    from fsstgpu.formats.rowgroups import Source

    def one_worker():
        with Source(dst) as source:
            PR.page_columns(source, workers=1)
    print("read_page_columns, 1 planning thread", wall(one_worker))
    old = sys.getswitchinterval()
    sys.setswitchinterval(0.0002)
    print("read_page_columns, GIL switch 0.2 ms", wall(lambda: PR.read_page_columns(dst)))
    sys.setswitchinterval(old)
    steps(dst)


print("bus:", bus_bandwidths())
with tempfile.TemporaryDirectory() as tmp:
    run("machine", machine_text_table(1_600_000), tmp)
    if dbtext_dir() is not None:
        run("dbtext", dbtext_table(), tmp)
