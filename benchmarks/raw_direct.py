"""What a file -> GPU read could cost with the pages' work on the device (issue #24 item 2's
design input): a file's fsst column chunks read with ``os.preadv`` straight into one pinned
buffer and uploaded in one copy (uncompressed pages: the device would decode them from there;
zstd pages: the host's zstd of them, a thread a core, added), beside pyarrow's zstd read +
upload of the strings, fsstgpu's ``read_table_device`` of the zstd and the uncompressed file,
and the host reads: pyarrow's of the fsst columns and :mod:`fsstgpu.formats.raw_columns`'
(a thread a column and row group). One JSON line a row; wall clock, the median of
``--repeat`` after a warm-up (section 67 took the best of 3).

Usage: ``python -m benchmarks.raw_direct [--rows N] [--repeat R] [--host-only]`` from the
checkout's root (dbtext by FSSTGPU_DBTEXT; this machine's text always).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.files import upload_strings
from benchmarks.timing import time_wall
from fsstgpu.datasets import dbtext_dir, dbtext_table, machine_text_table
from fsstgpu.formats import compress_file, read_table_device
from fsstgpu.formats.arrow_read import is_fsst_type
from fsstgpu.formats.parquet_options import leaf_columns
from fsstgpu.formats.raw_columns import read_fsst_chunk
from fsstgpu.formats.raw_pages import chunk_pages, chunk_span, decompressed


def emit(**row):
    print(json.dumps({k: round(v, 3) if isinstance(v, float) else v for k, v in row.items()}),
          flush=True)


def fsst_spans(path):
    """(start, size, column metadata) of every fsst leaf's column chunk."""
    f = pq.ParquetFile(path)
    schema = f.schema_arrow
    leaves = leaf_columns(schema, f.metadata.num_columns)
    cols = [j for n in schema.names if is_fsst_type(schema.field(n).type) for j in leaves[n]]
    size = os.path.getsize(path)
    out = []
    for k in range(f.metadata.num_row_groups):
        for j in cols:
            col = f.metadata.row_group(k).column(j)
            out.append((*chunk_span(col, size, path.name), col))
    return out


def measure(name, table, work, repeat, host_only, pool):
    src = work / f"{name}.zstd.parquet"
    pq.write_table(table, src, compression="zstd", row_group_size=200_000)
    files = {}
    for codec in ("zstd", "none"):
        files[codec] = work / f"{name}.fsst.{codec}.parquet"
        compress_file(src, files[codec], parquet_codec=codec)
    strings = [n for n in table.column_names
               if pa.types.is_string(table.schema.field(n).type)
               or pa.types.is_large_string(table.schema.field(n).type)]
    string_bytes = sum(c.buffers()[2].size for n in strings for c in table.column(n).chunks
                       if c.buffers()[2] is not None)
    emit(table=name, rows=len(table), string_MB=string_bytes / 1e6,
         zstd_parquet_MB=src.stat().st_size / 1e6,
         **{f"fsst_{c}_MB": p.stat().st_size / 1e6 for c, p in files.items()})

    def row(what, seconds):
        emit(table=name, what=what, ms=seconds * 1e3, string_GBps=string_bytes / seconds / 1e9)

    meta = {c: pq.ParquetFile(p).metadata for c, p in files.items()}
    for codec, path in files.items():
        schema = pq.ParquetFile(path).schema_arrow
        leaves = leaf_columns(schema, meta[codec].num_columns)
        fields = [schema.field(n) for n in schema.names if is_fsst_type(schema.field(n).type)]
        names = [f.name for f in fields]
        row(f"host: pyarrow read of the fsst columns ({codec} pages)",
            time_wall(lambda p=path, n=names: pq.read_table(p, columns=n), repeat=repeat))
        jobs = [(fld, k) for fld in fields for k in range(meta[codec].num_row_groups)]
        row(f"host: raw_columns of the fsst columns ({codec} pages, a thread a chunk)",
            time_wall(lambda p=path, c=codec, lv=leaves, js=jobs: list(pool.map(
                lambda job: read_fsst_chunk(p, meta[c], job[0], lv[job[0].name], job[1],
                                            threads=1), js)), repeat=repeat))
    if host_only:
        return
    import cupy as cp

    def pyarrow_upload():
        upload_strings(pq.read_table(src, columns=strings), strings)

    row("pyarrow zstd read + upload of the strings", time_wall(pyarrow_upload, repeat=repeat))
    for codec, path in files.items():
        row(f"fsstgpu read_table_device ({codec} pages)",
            time_wall(lambda p=path: (read_table_device(p),
                                 cp.cuda.get_current_stream().synchronize()), repeat=repeat))
    stream = cp.cuda.Stream(non_blocking=True)
    for codec, path in files.items():
        spans = fsst_spans(path)
        starts = np.cumsum([0] + [s for _, s, _ in spans])
        pinned = cp.cuda.alloc_pinned_memory(int(starts[-1]))
        host = np.frombuffer(pinned, np.uint8, int(starts[-1]))
        dev = cp.empty(int(starts[-1]), cp.uint8)
        fd = os.open(path, os.O_RDONLY)

        def read_into(k, fd=fd, host=host, spans=spans, starts=starts):
            view = memoryview(host[starts[k] : starts[k + 1]])
            got = os.preadv(fd, [view], spans[k][0])
            assert got == spans[k][1]

        def direct(spans=spans, host=host, dev=dev):
            list(pool.map(read_into, range(len(spans))))
            dev.set(host, stream=stream)
            stream.synchronize()

        row(f"direct: chunks preadv'd into pinned memory + one upload ({codec} pages, "
            f"{starts[-1] / 1e6:.1f} MB)", time_wall(direct, repeat=repeat))
        if codec == "zstd":
            pages = [(k, p) for k, (_, _, col) in enumerate(spans)
                     for p in chunk_pages(bytes(host[starts[k] : starts[k + 1]]),
                                          col.num_values, "x")]

            def zstd_after(pages=pages, host=host, starts=starts):
                direct()
                list(pool.map(lambda kp: decompressed(
                    host[starts[kp[0]] : starts[kp[0] + 1]].tobytes(), kp[1], "zstd"), pages))

            row("direct + the host's zstd of every page (a thread a core)",
                time_wall(zstd_after, repeat=repeat))
        os.close(fd)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_600_000, help="machine text rows")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--host-only", action="store_true")
    args = parser.parse_args(argv)
    tables = {"machine": machine_text_table(args.rows)}
    if dbtext_dir() is not None:
        tables["dbtext"] = dbtext_table()
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(os.cpu_count()) as pool:
        for name, table in tables.items():
            measure(name, table, Path(tmp), args.repeat, args.host_only, pool)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
