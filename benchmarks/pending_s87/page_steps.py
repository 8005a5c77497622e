"""Session 86 probe (run again in session 87): where read_page_columns' time goes on the
device host (machine text, fsst
pages uncompressed): each column's planning, decode_pages, device_column and checked decode,
each step followed by a sync; then a cProfile of the whole read (top functions by own and
cumulative time)."""
import cProfile
import io
import pstats
import tempfile
import time
from pathlib import Path

import cupyx
import numpy as np
import pyarrow.parquet as pq

import fsstgpu.formats.page_reader as PR
from fsstgpu.datasets import machine_text_table
from fsstgpu.device import get_cupy
from fsstgpu.formats import compress_file
from fsstgpu.formats.page_plan import plan_column, plannable
from fsstgpu.formats.rowgroups import Source

cp = get_cupy()


def sync():
    cp.cuda.get_current_stream().synchronize()


def steps(path):
    """Per column: plan (pinned staging, the upload sink), decode_pages, device_column, the
    checked decode; ms each, synced."""
    from fsstgpu.bitmaps import pack_bits
    from fsstgpu.formats.page_columns import decode_pages
    from fsstgpu.gpu.decode import decode_async
    from fsstgpu.gpu.encoded import device_column

    pinned = lambda n: cupyx.empty_pinned((n,), np.uint8)  # noqa: E731
    out = []
    with Source(path) as source:
        stream = cp.cuda.get_current_stream()
        for f in plannable(source):
            t = [time.perf_counter()]
            upload = PR._Upload(cp, stream)
            plan = plan_column(source, f, allocate=pinned, sink=upload)
            sync()
            t.append(time.perf_counter())
            col = decode_pages(plan, cp, upload.device_buffer())
            sync()
            t.append(time.perf_counter())
            validity = pack_bits(col.valid, cp) if col.null_count else None
            cuts = tuple(cp.asarray(c) for c in col.cuts)
            dev = device_column(cp, col.tables, f.type.value_type, plan.rows, col.codes,
                                col.code_offsets, col.out_offsets, col.lengths, validity,
                                col.null_count, col.chunk_lengths, f.type.split_size, cuts,
                                block_starts=col.block_starts, out_offsets=col.out_offsets,
                                checked=True)
            sync()
            t.append(time.perf_counter())
            decode_async(dev, stream).check()
            sync()
            t.append(time.perf_counter())
            out.append((f.name, [1e3 * (b - a) for a, b in zip(t[:-1], t[1:], strict=True)]))
    return out


with tempfile.TemporaryDirectory() as tmp:
    src = Path(tmp) / "m.s.parquet"
    pq.write_table(machine_text_table(1_600_000), src, compression="zstd",
                   row_group_size=200_000)
    dst = Path(tmp) / "m.none.parquet"
    compress_file(src, dst, parquet_codec="none")
    for _ in range(2):
        steps(dst)
    for r in range(3):
        rows = steps(dst)
        print(f"round {r}: " + "; ".join(
            f"{n} plan {a:.1f} pages {b:.1f} device_column {c:.1f} decode {d:.1f}"
            for n, (a, b, c, d) in rows))
        sums = [sum(x[1][k] for x in rows) for k in range(4)]
        print("  sums: plan {:.1f} pages {:.1f} device_column {:.1f} decode {:.1f}".format(
            *sums))
    PR.read_page_columns(dst)
    sync()
    pr = cProfile.Profile()
    pr.enable()
    PR.read_page_columns(dst)
    sync()
    pr.disable()
    for key in ("tottime", "cumulative"):
        s = io.StringIO()
        pstats.Stats(pr, stream=s).sort_stats(key).print_stats(40)
        print(f"---- read_page_columns by {key}")
        print(s.getvalue())
