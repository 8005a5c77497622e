"""Session 87 A/B: the page reader and the file reads at session 86's last commit (b74712c,
installed in its own venv) against this session's, each in its own process, alternated, on
the same files (``make DIR`` writes them once; ``time DIR LABEL`` prints a JSON line of best
ms of 3): machine text 1.6 M rows and dbtext, fsst uncompressed pages and zstd."""
import json
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq


def make(folder: Path) -> None:
    from fsstgpu.datasets import dbtext_dir, dbtext_table, machine_text_table
    from fsstgpu.formats import compress_file

    folder.mkdir(parents=True, exist_ok=True)
    tables = {"machine": machine_text_table(1_600_000)}
    if dbtext_dir() is not None:
        tables["dbtext"] = dbtext_table()
    for name, table in tables.items():
        src = folder / f"{name}.s.parquet"
        pq.write_table(table, src, compression="zstd", row_group_size=200_000)
        compress_file(src, folder / f"{name}.none.parquet", parquet_codec="none")
        compress_file(src, folder / f"{name}.zstd.parquet")


def measure(folder: Path, label: str) -> None:
    import cupyx
    import numpy as np

    import fsstgpu.formats.device_reader as DR
    import fsstgpu.formats.page_plan as PP
    import fsstgpu.formats.page_reader as PR
    from benchmarks.files import upload_strings
    from fsstgpu.device import get_cupy
    from fsstgpu.formats import read_table_device
    from fsstgpu.formats.rowgroups import Source
    from fsstgpu.parallel import usable_cores

    cp = get_cupy()
    sync = cp.cuda.get_current_stream().synchronize

    def best(fn, repeat=3):
        fn()
        sync()
        out = []
        for _ in range(repeat):
            t = time.perf_counter()
            fn()
            sync()
            out.append(time.perf_counter() - t)
        return round(1e3 * min(out), 2)

    pinned = lambda n: cupyx.empty_pinned((n,), np.uint8)  # noqa: E731
    sink = lambda at, chunk, total: (lambda: None)  # noqa: E731

    def plan_all(path):
        with Source(path) as source:
            return [PP.plan_column(source, f, allocate=pinned, sink=sink)
                    for f in PP.plannable(source)]

    def files(name, row):  # (a function, so that the timed lambdas bind this file's names)
        none, zstd = folder / f"{name}.none.parquet", folder / f"{name}.zstd.parquet"
        src = folder / f"{name}.s.parquet"
        strings = [f.name for f in pq.read_schema(src) if pa.types.is_string(f.type)
                   or pa.types.is_large_string(f.type)]
        row[f"{name} yardstick"] = best(lambda: upload_strings(
            pq.read_table(src, columns=strings), strings))
        DR.PAGE_READS = False
        row[f"{name} usual zstd"] = best(lambda: read_table_device(zstd))
        row[f"{name} usual none"] = best(lambda: read_table_device(none))
        DR.PAGE_READS = True
        row[f"{name} page reads"] = best(lambda: read_table_device(none))
        DR.PAGE_READS = False
        row[f"{name} read_page_columns"] = best(lambda: PR.read_page_columns(none))
        for threads in (1, usable_cores()):
            PP.usable_cores = lambda t=threads: t
            row[f"{name} planning {threads}t"] = best(lambda: plan_all(none))
        PP.usable_cores = usable_cores

    row = {"label": label, "code": PP.__file__}  # (which tree this process runs)
    for name in ("machine", "dbtext"):
        if (folder / f"{name}.none.parquet").exists():
            files(name, row)
    print(json.dumps(row), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(Path(sys.argv[2]))
    else:
        measure(Path(sys.argv[2]), sys.argv[3])
