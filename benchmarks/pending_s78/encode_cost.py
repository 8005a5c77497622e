"""Where compress_device's time goes at 16 MiB (issue #25: 40 GB/s): dbtext device strings, a
table given; the whole call (wall clock, stream synchronised) and the host time of each step
(module functions wrapped with perf_counter_ns, nested: a step's time includes its callees'),
and the kernels' GPU time (encode_on_device between CUDA events). Medians of 100 calls after
10 warm-up calls."""
import time

import numpy as np
import pyarrow as pa

import fsstgpu
from benchmarks.gpu_encode import column_of
from benchmarks.gpu_sizes import corpus
from benchmarks.timing import time_device
from fsstgpu.device import get_cupy
from fsstgpu.gpu import encode as E, encoded as ED
from fsstgpu.kernels import fsst_encode as FE

cp = get_cupy()
MIB = 1 << 20
spent = {}


def timed(name, fn):
    def wrapper(*a, **k):
        t0 = time.perf_counter_ns()
        r = fn(*a, **k)
        spent.setdefault(name, []).append(time.perf_counter_ns() - t0)
        return r
    return wrapper


WRAP = [(E, "_on_device"), (E, "launch_check"), (E, "prefetch_rows"), (E, "encode_on_device"),
        (E, "device_column"), (E, "_checked"), (E, "check_results"), (E, "rows_from"),
        (ED, "assemble_splits"), (ED, "DeviceLayout"), (ED, "_upload_sections"),
        (ED, "pack_tables"), (ED, "DeviceCompressedStringArray"), (ED, "split_rows"),
        (FE, "device_lookups"), (FE, "_in_kernel_order")]


def run(size, calls=100):
    col = column_of(corpus().cast(pa.large_binary()), size)
    table = fsstgpu.train(col)
    offs = np.frombuffer(col.buffers()[1], np.int64)[col.offset: col.offset + len(col) + 1]
    data = np.frombuffer(col.buffers()[2], np.uint8)[int(offs[0]): int(offs[-1])]
    d_data, d_offs = cp.asarray(data), cp.asarray(offs - offs[0])
    dev = fsstgpu.DeviceStringArray(col.type, len(col), d_offs, d_data, None, 0)
    stream = cp.cuda.get_current_stream()
    for _ in range(10):
        fsstgpu.compress_device(dev, table)
    stream.synchronize()
    wall = []
    for _ in range(calls):
        t0 = time.perf_counter_ns()
        fsstgpu.compress_device(dev, table)
        stream.synchronize()
        wall.append(time.perf_counter_ns() - t0)
    look = FE.device_lookups(table)
    kern = time_device(lambda: FE.encode_on_device(table, d_data, d_offs, lookups=look),
                       repeat=20)
    saved = [(m, n, getattr(m, n)) for m, n in WRAP]
    for m, n, f in saved:
        setattr(m, n, timed(f"{m.__name__.split('.')[-1]}.{n}", f))
    try:
        for _ in range(calls):
            fsstgpu.compress_device(dev, table)
            stream.synchronize()
    finally:
        for m, n, f in saved:
            setattr(m, n, f)
    med = lambda v: float(np.median(v))  # noqa: E731
    print(f"{size // MIB} MiB, {len(col)} strings: compress_device wall {med(wall) / 1e3:.0f} us "
          f"({data.size / med(wall):.1f} GB/s); encode_on_device GPU time {kern * 1e6:.0f} us")
    for n, v in spent.items():
        print(f"    {n:40s} {med(v) / 1e3:7.1f} us x {len(v) / calls:.0f}")
    spent.clear()


for size in (16 * MIB, 64 * MIB):
    run(size)
