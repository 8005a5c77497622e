"""A/B of the stage kernel variants: encode_on_device, CUDA events, codes compared to HEAD's."""
import numpy as np

import fsstgpu
from benchmarks.gpu_encode import column_of
from benchmarks.gpu_sizes import corpus
from benchmarks.timing import time_device
from fsstgpu.device import get_cupy
from fsstgpu.kernels import fsst_encode
from fsstgpu.kernels.fsst_encode import device_lookups, encode_on_device

cp = get_cupy()
MIB = 1 << 20
VARIANTS = ["fsst_encode_stage", "fsst_encode_stage_v2", "fsst_encode_stage_v3"]
strings = corpus().cast(__import__("pyarrow").large_binary())
for size in (16 * MIB, 256 * MIB, 1024 * MIB):
    col = column_of(strings, size)
    table = fsstgpu.train(col)
    offs = np.frombuffer(col.buffers()[1], np.int64)[col.offset: col.offset + len(col) + 1]
    data = np.frombuffer(col.buffers()[2], np.uint8)[int(offs[0]): int(offs[-1])]
    nbytes = data.size
    d_data = cp.asarray(data)
    d_offs = cp.asarray(offs - offs[0])
    look = device_lookups(table)
    ref = None
    res = {}
    for _rnd in range(2):  # two rounds, interleaved, to see the drift
        for v in VARIANTS:
            fsst_encode.STAGE_KERNEL = v
            codes, co = encode_on_device(table, d_data, d_offs, lookups=look, fill=7)
            h = (codes.get(), co.get())
            if ref is None:
                ref = h
            same = np.array_equal(h[0], ref[0]) and np.array_equal(h[1], ref[1])
            t = time_device(lambda t=table, d=d_data, o=d_offs, k=look: encode_on_device(
                t, d, o, lookups=k),
                            repeat=10)
            res.setdefault(v, []).append((nbytes / t / 1e9, same))
    for name, rows in res.items():
        print(f"{size // MIB:5d} MiB {name:36s} " + "  ".join(f"{g:7.1f} GB/s same={s}"
                                                          for g, s in rows), flush=True)
fsst_encode.STAGE_KERNEL = VARIANTS[0]
