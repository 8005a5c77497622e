"""Issue #24 item 2's first measurement: a file's fsst pages read raw (formats/raw_pages.py),
uploaded and decompressed on the GPU by nvCOMP's batched zstd (standard frames: Parquet's),
beside pyarrow reading the zstd Parquet of the same table and uploading its strings, and
beside fsstgpu's read_table(device="gpu") as it is. Output: one JSON line a step.

Steps, each timed on its own (wall clock, best of ``--repeat``; device steps with CUDA events
on our stream as well): the fsst leaves' chunks read (``os.pread``), their page headers parsed,
the pages' CRCs checked (one thread), the compressed payloads staged in pinned memory and
uploaded, nvCOMP's decompression of every page in one batched call (checked byte for byte
against the host's), and the host's own zstd of the pages (one thread, and a thread a core):
what the GPU path would leave to the host, against what the host path costs.

Usage: ``python -X faulthandler -m benchmarks.raw_pages_gpu [--rows N] [--repeat R]`` from the
checkout's root (the dbtext corpus by FSSTGPU_DBTEXT; this machine's text always).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from benchmarks.files import upload_strings
from fsstgpu.datasets import dbtext_dir, dbtext_table, machine_text_table
from fsstgpu.formats import compress_file, read_table, read_table_device, sinks
from fsstgpu.formats.device_reader import stream_to_device
from fsstgpu.formats.raw_pages import check_crcs, chunk_pages, chunk_span, decompressed, read_span

LEAVES = ("codes", "lengths", "cuts", "table")


def best(fn, repeat):
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def emit(**row):
    print(json.dumps(row, default=str), flush=True)


def fsst_chunks(path):
    meta = pq.ParquetFile(path).metadata
    out = []
    for r in range(meta.num_row_groups):
        for c in range(meta.num_columns):
            col = meta.row_group(r).column(c)
            if col.path_in_schema.split(".")[-1] in LEAVES:
                out.append((f"{path.name}: row group {r}, column {col.path_in_schema}", col))
    return out


def read_raw(path, chunks):
    size = os.path.getsize(path)
    fd = os.open(path, os.O_RDONLY)
    try:
        return [read_span(fd, *chunk_span(col, size, w), w) for w, col in chunks]
    finally:
        os.close(fd)


def compress_with_pages(src, dst, page_bytes):
    """compress_file with the fsst pages cut at ``page_bytes`` of data (pyarrow's
    ``data_page_size``; None: its default, 1 MiB)."""
    plain = sinks.writer_options

    def options(*args, **kwargs):
        return {**plain(*args, **kwargs), "data_page_size": page_bytes}

    sinks.writer_options = options if page_bytes else plain
    try:
        compress_file(src, dst)
    finally:
        sinks.writer_options = plain


def measure(name, table, work, repeat, host_only=False, page_bytes=None):
    src = work / f"{name}.zstd.parquet"
    pq.write_table(table, src, compression="zstd", row_group_size=200_000)
    dst = work / f"{name}.{page_bytes or 0}.fsst.parquet"
    compress_with_pages(src, dst, page_bytes)
    name = f"{name}, pages of {page_bytes or 'pyarrow default'} bytes"
    strings = [n for n in table.column_names if pa.types.is_string(table.schema.field(n).type)
               or pa.types.is_large_string(table.schema.field(n).type)]
    string_bytes = sum(sum(c.buffers()[2].size for c in table.column(n).chunks
                           if c.buffers()[2] is not None) for n in strings)
    emit(table=name, rows=len(table), string_MB=string_bytes / 1e6,
         zstd_file_MB=src.stat().st_size / 1e6, fsst_file_MB=dst.stat().st_size / 1e6)

    def pyarrow_to_gpu():
        upload_strings(pq.read_table(src), strings)

    def ours_to_gpu():
        read_table_device(dst)
        cp.cuda.get_current_stream().synchronize()

    def ours_streamed():
        for _ in stream_to_device(dst):
            pass
        cp.cuda.get_current_stream().synchronize()

    steps = (("pyarrow zstd read", lambda: pq.read_table(src)),
             ("fsstgpu read_table(device='cpu')", lambda: read_table(dst, device="cpu")))
    if not host_only:
        import cupy as cp

        steps += (("pyarrow zstd read + upload", pyarrow_to_gpu),
                  ("fsstgpu read_table_device", ours_to_gpu),
                  ("fsstgpu stream_to_device", ours_streamed))
    for what, fn in steps:
        fn()
        s, _ = best(fn, repeat)
        emit(table=name, what=what, ms=s * 1e3, string_GBps=string_bytes / s / 1e9)

    chunks = fsst_chunks(dst)
    s_read, raws = best(lambda: read_raw(dst, chunks), repeat)
    s_parse, pages = best(lambda: [chunk_pages(raw, col.num_values, w)
                                   for raw, (w, col) in zip(raws, chunks, strict=True)], repeat)
    s_crc, _ = best(lambda: [check_crcs(raw, p, w) for raw, p, (w, _) in
                             zip(raws, pages, chunks, strict=True)], repeat)
    npages = sum(len(p) for p in pages)
    payload = sum(pg.size for p in pages for pg in p)
    unpacked = sum(pg.uncompressed_size for p in pages for pg in p)
    largest = max((pg for p in pages for pg in p), key=lambda pg: pg.uncompressed_size)
    emit(table=name, chunks=len(chunks), pages=npages, payload_MB=payload / 1e6,
         largest_page=(largest.kind, largest.uncompressed_size, largest.size),
         uncompressed_MB=unpacked / 1e6, read_ms=s_read * 1e3, headers_ms=s_parse * 1e3,
         crc_ms=s_crc * 1e3)

    # the host's zstd of every page: one thread, then a thread a core
    jobs = [(raw, pg, col.compression) for raw, p, (_, col) in zip(raws, pages, chunks,
                                                                    strict=True) for pg in p]
    s_host1, host = best(lambda: [decompressed(*j) for j in jobs], repeat)
    with ThreadPoolExecutor(os.cpu_count()) as pool:
        s_hostn, _ = best(lambda: list(pool.map(lambda j: decompressed(*j), jobs)), repeat)
    emit(table=name, what="host zstd of the pages", one_thread_ms=s_host1 * 1e3,
         all_cores_ms=s_hostn * 1e3, cores=os.cpu_count())

    if host_only:
        return
    # staged in pinned memory, uploaded, decompressed by nvCOMP in one batched call
    starts = np.zeros(len(jobs) + 1, np.int64)
    np.cumsum([pg.size for _, pg, _ in jobs], out=starts[1:])
    pinned = cp.cuda.alloc_pinned_memory(int(starts[-1]))
    staged = np.frombuffer(pinned, np.uint8, int(starts[-1]))

    def stage():
        for k, (raw, pg, _) in enumerate(jobs):
            staged[starts[k] : starts[k + 1]] = np.frombuffer(raw, np.uint8, pg.size, pg.start)

    s_stage, _ = best(stage, repeat)
    stream = cp.cuda.Stream(non_blocking=True)
    dev = cp.empty(int(starts[-1]), cp.uint8)

    def upload():
        dev.set(staged, stream=stream)
        stream.synchronize()

    s_up, _ = best(upload, repeat)
    emit(table=name, stage_ms=s_stage * 1e3, upload_ms=s_up * 1e3,
         upload_GBps=starts[-1] / s_up / 1e9)
    try:
        from nvidia import nvcomp
    except Exception as exc:
        emit(table=name, what=f"nvCOMP not measured: {type(exc).__name__}: {exc}")
        return
    with stream:
        codec = nvcomp.Codec(algorithm="Zstd", bitstream_kind=nvcomp.BitstreamKind.RAW,
                             cuda_stream=stream.ptr)
        zstd = [k for k, (_, pg, c) in enumerate(jobs) if c == "ZSTD" and pg.levels_size == 0]
        t = time.perf_counter()
        # (Codec.decode takes one Array or a BatchArray, not a list)
        batch = nvcomp.as_arrays([dev[starts[k] : starts[k + 1]] for k in zstd]) \
            if hasattr(nvcomp, "as_arrays") else \
            nvcomp.BatchArray([dev[starts[k] : starts[k + 1]] for k in zstd])
        s_wrap = time.perf_counter() - t
        outs = codec.decode(batch)
        stream.synchronize()
        got = [cp.asnumpy(cp.asarray(o)).tobytes() for o in outs]
        same = all(g == host[k] for g, k in zip(got, zstd, strict=True))
        events = []
        for _ in range(repeat):
            a, b = cp.cuda.Event(), cp.cuda.Event()
            t = time.perf_counter()
            a.record(stream)
            codec.decode(batch)
            b.record(stream)
            b.synchronize()
            events.append((cp.cuda.get_elapsed_time(a, b) / 1e3, time.perf_counter() - t))
        dev_s = min(e[0] for e in events)
        wall_s = min(e[1] for e in events)
        out_bytes = sum(len(host[k]) for k in zstd)
        emit(table=name, what="nvCOMP batched zstd of the pages", pages=len(zstd),
             same_bytes=same, device_ms=dev_s * 1e3, wall_ms=wall_s * 1e3,
             out_GBps=out_bytes / dev_s / 1e9, wrap_ms=s_wrap * 1e3)
        codec = batch = outs = None
        stream.synchronize()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=1_600_000, help="machine text rows")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--host-only", action="store_true", help="no GPU steps (a dry run)")
    parser.add_argument("--page-bytes", default="0",
                        help="comma-separated data page sizes of the fsst file (0: default)")
    args = parser.parse_args(argv)
    tables = {"machine": machine_text_table(args.rows)}
    if dbtext_dir() is not None:
        tables["dbtext"] = dbtext_table()
    with tempfile.TemporaryDirectory() as tmp:
        for name, table in tables.items():
            for page_bytes in (int(v) for v in args.page_bytes.split(",")):
                measure(name, table, Path(tmp), args.repeat, args.host_only, page_bytes or None)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
