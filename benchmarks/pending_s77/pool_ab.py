"""A/B of the stage kernel (fsst_encode.STAGE_KERNEL): one string a lane (v3) against a pool of
64 or 128 strings a warp handed to lanes as they finish; encode_on_device (CUDA events, median
of 10) and compress_device (wall clock, median of 7) on dbtext laid end to end, two
interleaved rounds, codes and code offsets compared with v3's."""
import sys
import time

import numpy as np
import pyarrow as pa

import fsstgpu
from benchmarks.gpu_encode import column_of
from benchmarks.gpu_sizes import corpus
from benchmarks.timing import time_device
from fsstgpu.device import get_cupy
from fsstgpu.kernels import fsst_encode
from fsstgpu.kernels.fsst_encode import device_lookups, encode_on_device

cp = get_cupy()
MIB = 1 << 20
VARIANTS = ("fsst_encode_stage", "fsst_encode_stage_pool64", "fsst_encode_stage_pool128")
strings = corpus().cast(pa.large_binary())
stream = cp.cuda.get_current_stream()


def wall(fn, repeat=7):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        stream.synchronize()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def measure(size):
    col = column_of(strings, size)
    table = fsstgpu.train(col)
    offs = np.frombuffer(col.buffers()[1], np.int64)[col.offset: col.offset + len(col) + 1]
    data = np.frombuffer(col.buffers()[2], np.uint8)[int(offs[0]): int(offs[-1])]
    d_data, d_offs = cp.asarray(data), cp.asarray(offs - offs[0])
    look = device_lookups(table)
    dev = fsstgpu.DeviceStringArray(col.type, len(col), d_offs, d_data, None, 0)
    ref, res = None, {}
    for _rnd in range(2):
        for v in VARIANTS:
            fsst_encode.STAGE_KERNEL = v
            codes, co = encode_on_device(table, d_data, d_offs, lookups=look, fill=7)
            h = (codes.get(), co.get())
            ref = ref or h
            same = np.array_equal(h[0], ref[0]) and np.array_equal(h[1], ref[1])
            t = time_device(lambda: encode_on_device(table, d_data, d_offs, lookups=look),
                            repeat=10)
            c = wall(lambda: fsstgpu.compress_device(dev, table))
            res.setdefault(v, []).append((data.size / t / 1e9, data.size / c / 1e9, same))
    for v, rows in res.items():
        print(f"{size // MIB:5d} MiB {v:28s} " + "  ".join(
            f"kernels {k:6.1f} GB/s compress_device {c:6.1f} same={s}" for k, c, s in rows),
            flush=True)


for size in [int(s) * MIB for s in sys.argv[1:]] or [16 * MIB, 1024 * MIB]:
    measure(size)
fsst_encode.STAGE_KERNEL = VARIANTS[0]
