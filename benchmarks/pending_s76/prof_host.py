"""Host time of three small GPU calls, cProfile'd (session 76): compress_device at 16 MiB (the
table given), decompress_device of a host column at 4 MiB, of a device column at 1 MiB."""
import cProfile
import io
import pstats
import time

import numpy as np

import fsstgpu
from benchmarks.gpu_encode import column_of
from benchmarks.gpu_sizes import corpus
from fsstgpu.device import get_cupy

cp = get_cupy()
MIB = 1 << 20
stream = cp.cuda.get_current_stream()
strings = corpus()


def report(name, fn, n):
    for _ in range(20):
        fn()
    stream.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    stream.synchronize()
    wall = (time.perf_counter() - t0) / n
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(n):
        fn()
    stream.synchronize()
    pr.disable()
    s = io.StringIO()
    st = pstats.Stats(pr, stream=s)
    st.sort_stats("tottime").print_stats(28)
    st.sort_stats("cumulative").print_stats(40)
    print(f"==== {name}: {wall * 1e6:.1f} us a call (wall, no profiler), n={n}")
    print(s.getvalue())


col16 = column_of(strings.cast(__import__("pyarrow").large_binary()), 16 * MIB)
table = fsstgpu.train(col16)
offs = np.frombuffer(col16.buffers()[1], np.int64)[col16.offset: col16.offset + len(col16) + 1]
data = np.frombuffer(col16.buffers()[2], np.uint8)[int(offs[0]): int(offs[-1])]
dev = fsstgpu.DeviceStringArray(col16.type, len(col16), cp.asarray(offs - offs[0]),
                                cp.asarray(data), None, 0)
report("compress_device 16 MiB", lambda: (fsstgpu.compress_device(dev, table),
                                          stream.synchronize()), 100)
c4 = fsstgpu.compress(column_of(strings, 4 * MIB))
report("decompress_device host 4 MiB", lambda: (fsstgpu.decompress_device(c4),
                                                stream.synchronize()), 200)
d1 = fsstgpu.to_device(fsstgpu.compress(column_of(strings, 1 * MIB)))
report("decompress_device device 1 MiB", lambda: (fsstgpu.decompress_device(d1),
                                                  stream.synchronize()), 500)
