"""Session 76's host-side A/B, one process: decompress_device of host columns with the layout on
a worker (arrays.LAYOUT_ON_WORKER True) or the codes' copy on a worker (False), beside a
pageable upload of the raw strings and int32 offsets; compress_device and a device column's
decode timed as they are (the tree's code: run this under each tree to compare). Wall clock,
median of `n` calls a round, three interleaved rounds."""
import statistics
import sys
import time

import numpy as np

import fsstgpu
from benchmarks.gpu_encode import column_of
from benchmarks.gpu_sizes import column_of_size, corpus
from benchmarks.timing import upload_seconds
from fsstgpu.device import get_cupy
from fsstgpu.gpu import arrays

cp = get_cupy()
MIB = 1 << 20
stream = cp.cuda.get_current_stream()
tag = sys.argv[1] if len(sys.argv) > 1 else "tree"
strings = corpus()


def med(fn, n):
    for _ in range(10):
        fn()
    stream.synchronize()
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        stream.synchronize()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e6


base = fsstgpu.compress(strings)
hosts = {s: column_of_size(base, s * MIB) for s in (1, 4, 16)}
ups = {}
for s, col in hosts.items():
    col.validate(full=False)
    plain = np.full(col.uncompressed_bytes + 4 * (col.length + 1), 7, np.uint8)
    ups[s] = upload_seconds(plain, cp.empty(plain.size, dtype=cp.uint8), repeat=20) * 1e6
col16 = column_of(strings.cast(__import__("pyarrow").large_binary()), 16 * MIB)
table = fsstgpu.train(col16)
offs = np.frombuffer(col16.buffers()[1], np.int64)[col16.offset: col16.offset + len(col16) + 1]
data = np.frombuffer(col16.buffers()[2], np.uint8)[int(offs[0]): int(offs[-1])]
dev16 = fsstgpu.DeviceStringArray(col16.type, len(col16), cp.asarray(offs - offs[0]),
                                  cp.asarray(data), None, 0)
d1 = fsstgpu.to_device(hosts[1])
for rnd in range(3):
    for flag in (False, True):
        if hasattr(arrays, "LAYOUT_ON_WORKER"):
            arrays.LAYOUT_ON_WORKER = flag
        elif flag:
            continue
        row = [f"{tag} r{rnd} layout_on_worker={flag}:"]
        for s, col in hosts.items():
            t = med(lambda c=col: fsstgpu.decompress_device(c), 100)
            row.append(f"host {s} MiB {t:.0f} us ({ups[s] / t:.2f}x upload {ups[s]:.0f})")
        row.append(f"compress_device 16 MiB {med(lambda: fsstgpu.compress_device(dev16, table), 50):.0f} us")
        row.append(f"device 1 MiB decode {med(lambda: fsstgpu.decompress_device(d1), 300):.1f} us")
        print("  ".join(row), flush=True)
