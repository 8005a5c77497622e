"""The direct reader's host side restructured (an experiment, not library code): a job a
column (its row groups read with read_fsst_chunk(codes_in_place) one after another, joined
as one chunked array, one from_extension_array, one StagedColumn, its segments built in the
job), one gather a column; against read_fsst_direct (a job a row group) and
read_table_device, same run. Also each path's jobs on one thread (contention or work)."""
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import cupyx
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from fsstgpu.datasets import dbtext_dir, dbtext_table, machine_text_table
from fsstgpu.device import get_cupy
from fsstgpu.formats import compress_file, direct_reader as D, read_table_device
from fsstgpu.formats.arrow_read import from_extension_array
from fsstgpu.formats.raw_columns import read_fsst_chunk
from fsstgpu.formats.rowgroups import Source
from fsstgpu.gpu.staged import StagedColumn, decode_staged
from fsstgpu.kernels.gather import check_gathered, gather_segments
from fsstgpu.kernels.loader import on_stream

cp = get_cupy()


def by_column(path, workers=16, timings=None):
    main = cp.cuda.get_current_stream()
    with Source(path) as source:
        plan = D.direct_plan(source)
        spans = [s for _, _, groups in plan for _, sp in groups for s in sp]
        starts = np.cumsum([0] + [size for _, size in spans])
        total = int(starts[-1])
        pinned = cupyx.empty_pinned((total,), np.uint8)
        fd = os.open(source.path, os.O_RDONLY)
        t0 = time.perf_counter()
        with ThreadPoolExecutor(workers) as pool:
            reads = zip(spans, starts[:-1], strict=True)
            list(pool.map(lambda r: D._read_into(fd, pinned, r[0][0], int(r[1]), r[0][1],
                                                 source.path), reads))
            os.close(fd)
            chunks = cp.empty(total, cp.uint8)
            chunks.set(pinned, stream=main)
            t1 = time.perf_counter()
            # each column's chunk places
            at, jobs = 0, []
            for field, columns, groups in plan:
                rgs = []
                for k, sp in groups:
                    rgs.append((k, [(int(starts[at + i]), size) for i, (_, size) in
                                    enumerate(sp)]))
                    at += len(sp)
                jobs.append((field, columns, rgs))

            def job(j):
                field, columns, rgs = j
                exts, seg_starts, seg_sizes, extras, extra_at = [], [], [], [], 0
                for k, where in rgs:
                    raws = [memoryview(pinned[a : a + n]) for a, n in where]
                    storage, runs, data = read_fsst_chunk(source.path, source.parquet_metadata,
                                                          field, columns, k, threads=1,
                                                          raws=raws, codes_in_place=True)
                    exts.append(pa.ExtensionArray.from_storage(field.type, storage))
                    a, n = runs[:, 0], runs[:, 1]
                    seg_starts.append(np.where(a >= 0, a + where[0][0], a - extra_at))
                    seg_sizes.append(n)
                    if len(data):
                        extras.append(data)
                        extra_at += len(data)
                carr = from_extension_array(pa.chunked_array(exts, field.type))
                sizes = np.concatenate(seg_sizes)
                offsets = np.zeros(len(sizes) + 1, np.int64)
                np.cumsum(sizes, out=offsets[1:])
                extra = np.concatenate(extras) if extras else np.zeros(0, np.uint8)
                staged = StagedColumn(carr, codes=np.empty(len(carr.codes), np.uint8))
                return field.name, staged, np.concatenate(seg_starts), offsets, extra

            done = list(pool.map(job, jobs))
        t2 = time.perf_counter()
        out, errors = {}, []
        for name, staged, seg_starts, offsets, extra in done:
            with on_stream(main):
                codes, error = gather_segments(chunks, cp.asarray(extra), seg_starts, offsets,
                                               stream=main)
            staged.codes = codes
            errors.append(error)
            [out[name]] = decode_staged([staged], main)
        for e in errors:
            check_gathered(e)
        t3 = time.perf_counter()
    if timings is not None:
        timings.append((t1 - t0, t2 - t1, t3 - t2))
    return out


def best(fn, repeat=5):
    fn()
    cp.cuda.get_current_stream().synchronize()
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        cp.cuda.get_current_stream().synchronize()
        out.append(time.perf_counter() - t)
    return f"best {1e3 * min(out):.1f} median {1e3 * float(np.median(out)):.1f} ms"


def run(name, table, tmp):
    src, dst = Path(tmp) / f"{name}.s.parquet", Path(tmp) / f"{name}.f.parquet"
    pq.write_table(table, src, compression="zstd", row_group_size=200_000)
    compress_file(src, dst, parquet_codec="none")
    print(f"== {name}: {len(table)} rows")
    got = by_column(dst)
    want = D.read_fsst_direct(dst)
    for n, col in want.items():
        a, b = col.to_arrow(), got[n].to_arrow()
        a = a.combine_chunks() if isinstance(a, pa.ChunkedArray) else a
        b = b.combine_chunks() if isinstance(b, pa.ChunkedArray) else b
        assert a.equals(b), n
    print("by_column equal to read_fsst_direct")
    print("read_table_device (none)", best(lambda: read_table_device(dst)))
    print("read_fsst_direct (a job a row group)", best(lambda: D.read_fsst_direct(dst)))
    print("read_fsst_direct workers=1", best(lambda: D.read_fsst_direct(dst, workers=1), 2))
    t = []
    print("by_column workers=16", best(lambda: by_column(dst, 16, t)))
    print("   steps (read+upload start, jobs, gathers+decodes) ms:",
          [round(1e3 * x, 1) for x in min(t, key=sum)])
    t = []
    print("by_column workers=1", best(lambda: by_column(dst, 1, t), 2))
    print("   steps ms:", [round(1e3 * x, 1) for x in min(t, key=sum)])


with tempfile.TemporaryDirectory() as tmp:
    run("machine", machine_text_table(1_600_000), tmp)
    if dbtext_dir() is not None:
        run("dbtext", dbtext_table(), tmp)
sys.exit(0)
