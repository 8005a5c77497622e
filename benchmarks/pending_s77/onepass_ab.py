"""A/B of the one-pass encode (fsst_encode.ONE_PASS) against the staged kernels: encode_on_device
and compress_device on dbtext laid end to end, two interleaved rounds, codes and code offsets
compared with the staged encode's, the one-pass kernel seen to answer (not to fall back)."""
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
answers = []
real = fsst_encode._one_pass
fsst_encode._one_pass = lambda *a: answers.append(real(*a)) or answers[-1]
strings = corpus().cast(pa.large_binary())
sizes = [int(s) * MIB for s in sys.argv[1:]] or [16 * MIB, 256 * MIB, 1024 * MIB]
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
    nbytes = data.size
    d_data, d_offs = cp.asarray(data), cp.asarray(offs - offs[0])
    look = device_lookups(table)
    dev = fsstgpu.DeviceStringArray(col.type, len(col), d_offs, d_data, None, 0)
    ref, res = None, {}
    for _rnd in range(2):
        for one in (False, True):
            fsst_encode.ONE_PASS = one
            answers.clear()
            codes, co = encode_on_device(table, d_data, d_offs, lookups=look, fill=7)
            h = (codes.get(), co.get())
            answered = bool(answers) and answers[-1] is not None
            ref = ref or h
            same = np.array_equal(h[0], ref[0]) and np.array_equal(h[1], ref[1])
            t = time_device(lambda: encode_on_device(table, d_data, d_offs, lookups=look),
                            repeat=10)
            c = wall(lambda: fsstgpu.compress_device(dev, table))
            res.setdefault(one, []).append((nbytes / t / 1e9, nbytes / c / 1e9, same, answered))
    total = int(ref[1][-1])
    src = cp.empty(total, cp.uint8)
    cp_s = time_device(lambda: src.copy(), repeat=10)
    for one, rows in res.items():
        name = "one-pass" if one else "staged  "
        print(f"{size // MIB:5d} MiB {name} " + "  ".join(
            f"kernels {k:6.1f} GB/s compress_device {c:6.1f} same={s} answered={a}"
            for k, c, s, a in rows), flush=True)
    print(f"{size // MIB:5d} MiB trim copy of {total} code bytes: {cp_s * 1e6:.0f} us", flush=True)


for size in sizes:
    measure(size)
fsst_encode.ONE_PASS = True
