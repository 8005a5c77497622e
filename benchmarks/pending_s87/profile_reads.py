"""Session 85's read probe, trimmed in session 87: read_table_device's usual path (fsst zstd
pages) and the page reader (fsst uncompressed pages) beside pyarrow's zstd read + upload, wall
clock best/median of 3; planning alone on 1 thread and on all cores; a cProfile of the page
reads."""
import cProfile
import io
import pstats
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

import fsstgpu.formats.device_reader as DR
from benchmarks.files import bus_bandwidths, upload_strings
from fsstgpu.datasets import dbtext_dir, dbtext_table, machine_text_table
from fsstgpu.device import get_cupy
from fsstgpu.formats import compress_file, read_table_device

cp = get_cupy()


def sync():
    cp.cuda.get_current_stream().synchronize()


def wall(fn, repeat=3):
    fn()
    sync()
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        sync()
        out.append(time.perf_counter() - t)
    out.sort()
    return f"best {1e3 * out[0]:.1f} median {1e3 * out[len(out) // 2]:.1f} ms"


def profile(label, fn):
    fn()
    sync()
    pr = cProfile.Profile()
    pr.enable()
    fn()
    sync()
    pr.disable()
    for key in ("tottime", "cumulative"):
        s = io.StringIO()
        pstats.Stats(pr, stream=s).sort_stats(key).print_stats(45)
        text = s.getvalue()
        print(f"---- {label} by {key}")
        print(text[text.find("ncalls") - 200:])


def planning(path):
    """Every plannable column planned as the page reader plans it (pinned staging, a no-op
    sink), plan_chunks on 1 thread and on all cores (session 86: planning in C++)."""
    import cupyx
    import numpy as np

    import fsstgpu.formats.page_plan as PP
    from fsstgpu.formats.rowgroups import Source
    from fsstgpu.parallel import usable_cores

    pinned = lambda n: cupyx.empty_pinned((n,), np.uint8)  # noqa: E731
    sink = lambda at, chunk, total: (lambda: None)  # noqa: E731

    def plan_all():
        with Source(path) as source:
            return [PP.plan_column(source, f, allocate=pinned, sink=sink)
                    for f in PP.plannable(source)]

    for threads in (1, usable_cores()):
        PP.usable_cores = lambda t=threads: t
        print(f"planning, {threads} threads", wall(plan_all))
    PP.usable_cores = usable_cores


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
    print(f"== {name}: {len(table)} rows; files zstd {src.stat().st_size / 1e6:.1f} MB, "
          f"fsst zstd {zdst.stat().st_size / 1e6:.1f}, fsst none {dst.stat().st_size / 1e6:.1f}")
    print("pyarrow zstd read + upload", wall(lambda: upload_strings(
        pq.read_table(src, columns=strings), strings)))
    DR.PAGE_READS = False
    print("usual (fsst zstd)", wall(lambda: read_table_device(zdst)))
    print("usual (fsst none)", wall(lambda: read_table_device(dst)))
    planning(dst)
    DR.PAGE_READS = True
    print("page reads (fsst none)", wall(lambda: read_table_device(dst)))
    import fsstgpu.formats.page_reader as PR
    print("read_page_columns (fsst none)", wall(lambda: PR.read_page_columns(dst)))
    sys.stdout.flush()
    profile(f"{name} page reads", lambda: read_table_device(dst))
    DR.PAGE_READS = False


print("bus:", bus_bandwidths())
with tempfile.TemporaryDirectory() as tmp:
    run("machine", machine_text_table(1_600_000), tmp)
    if dbtext_dir() is not None:
        run("dbtext", dbtext_table(), tmp)
