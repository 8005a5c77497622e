"""Where read_fsst_direct's time goes (one device call): 1.6 M rows of machine text,
uncompressed fsst pages; cProfile of one warm call, then its steps timed by wrapping."""
import cProfile
import pstats
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq

from fsstgpu.datasets import machine_text_table
from fsstgpu.device import get_cupy
from fsstgpu.formats import compress_file, direct_reader as D

cp = get_cupy()
with tempfile.TemporaryDirectory() as tmp:
    src, dst = Path(tmp) / "s.parquet", Path(tmp) / "f.parquet"
    pq.write_table(machine_text_table(1_600_000), src, compression="zstd", row_group_size=200_000)
    compress_file(src, dst, parquet_codec="none")
    D.read_fsst_direct(dst)
    cp.cuda.get_current_stream().synchronize()
    for name in ("_host_part", "_gathered", "decode_staged", "StagedColumn", "direct_plan",
                 "_read_into", "from_extension_array", "read_fsst_chunk"):
        fn = getattr(D, name)
        acc = [0.0, 0]

        def wrap(*a, _fn=fn, _acc=acc, **k):
            t = time.perf_counter()
            try:
                return _fn(*a, **k)
            finally:
                _acc[0] += time.perf_counter() - t
                _acc[1] += 1
        setattr(D, name, wrap)
        D.__dict__.setdefault("_acc", {})[name] = acc
    t = time.perf_counter()
    D.read_fsst_direct(dst)
    cp.cuda.get_current_stream().synchronize()
    print(f"whole call {1e3 * (time.perf_counter() - t):.1f} ms")
    for name, (s, n) in D._acc.items():
        print(f"  {name:22s} {1e3 * s:8.1f} ms in {n} calls (threads overlap)")
    cProfile.run("D.read_fsst_direct(dst); cp.cuda.get_current_stream().synchronize()",
                 "/tmp/direct.prof")
    pstats.Stats("/tmp/direct.prof").sort_stats("tottime").print_stats(25)
