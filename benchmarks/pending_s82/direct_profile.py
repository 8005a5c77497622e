"""Where read_fsst_direct's time goes (a device call): 1.6 M rows of machine text and dbtext,
uncompressed fsst pages; each step timed by wrapping, workers and the GIL's switch interval
varied, the gather kernel timed alone on the file's own segments (CUDA events)."""
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from fsstgpu.datasets import dbtext_dir, dbtext_table, machine_text_table
from fsstgpu.device import get_cupy
from fsstgpu.formats import compress_file, direct_reader as D, read_table_device
from fsstgpu.kernels.gather import gather_segments

cp = get_cupy()


def best(fn, repeat=5):
    fn()
    cp.cuda.get_current_stream().synchronize()
    out = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        cp.cuda.get_current_stream().synchronize()
        out.append(time.perf_counter() - t)
    return 1e3 * min(out), 1e3 * float(np.median(out))


def run(name, table, tmp):
    src, dst = Path(tmp) / f"{name}.s.parquet", Path(tmp) / f"{name}.f.parquet"
    pq.write_table(table, src, compression="zstd", row_group_size=200_000)
    compress_file(src, dst, parquet_codec="none")
    print(f"== {name}: {len(table)} rows, fsst none file {dst.stat().st_size / 1e6:.1f} MB")
    print("read_table_device (none)  best/median ms {:.1f} / {:.1f}".format(
        *best(lambda: read_table_device(dst))))
    for w in (None, 8, 4):
        print("read_fsst_direct workers={}  best/median ms {:.1f} / {:.1f}".format(
            w, *best(lambda w=w: D.read_fsst_direct(dst, workers=w))))
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)
    print("read_fsst_direct switchinterval 1e-4  best/median ms {:.1f} / {:.1f}".format(
        *best(lambda: D.read_fsst_direct(dst))))
    sys.setswitchinterval(old)
    accs = {}
    for fname in ("_host_part", "_gathered", "decode_staged", "StagedColumn", "direct_plan",
                  "_read_into", "from_extension_array", "read_fsst_chunk", "job_segments"):
        fn = getattr(D, fname)
        acc = [0.0, 0]

        def wrap(*a, _fn=fn, _acc=acc, **k):
            t = time.perf_counter()
            try:
                return _fn(*a, **k)
            finally:
                _acc[0] += time.perf_counter() - t
                _acc[1] += 1
        setattr(D, fname, wrap)
        accs[fname] = (fn, acc)
    t = time.perf_counter()
    D.read_fsst_direct(dst)
    cp.cuda.get_current_stream().synchronize()
    print(f"whole call (wrapped) {1e3 * (time.perf_counter() - t):.1f} ms")
    for fname, (fn, (s, n)) in accs.items():
        print(f"  {fname:22s} {1e3 * s:8.1f} ms in {n} calls (threads overlap)")
        setattr(D, fname, fn)
    # the gather kernel alone on this file's segments
    captured = {}
    real = D.gather_segments

    def keep(chunks, extra, starts, offsets, stream=None):
        captured.update(chunks=chunks, extra=extra, starts=starts, offsets=offsets)
        return real(chunks, extra, starts, offsets, stream=stream)
    D.gather_segments = keep
    D.read_fsst_direct(dst)
    D.gather_segments = real
    c = captured
    d_starts = cp.asarray(c["starts"])
    out = cp.empty(int(c["offsets"][-1]), cp.uint8)
    e0, e1 = cp.cuda.Event(), cp.cuda.Event()
    gather_segments(c["chunks"], c["extra"], d_starts, c["offsets"], out)
    e0.record()
    for _ in range(10):
        gather_segments(c["chunks"], c["extra"], d_starts, c["offsets"], out)
    e1.record()
    e1.synchronize()
    ms = cp.cuda.get_elapsed_time(e0, e1) / 10
    print(f"gather kernel: {len(c['starts'])} segments, {out.size / 1e6:.1f} MB out: {ms:.3f} ms "
          f"= {out.size / ms / 1e6:.1f} GB/s (launcher included)")


with tempfile.TemporaryDirectory() as tmp:
    run("machine", machine_text_table(1_600_000), tmp)
    if dbtext_dir() is not None:
        run("dbtext", dbtext_table(), tmp)
