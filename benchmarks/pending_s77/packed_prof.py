"""One encode at 256 MiB each way (for ncu with a kernel filter): the v3 pair, then the packed."""
import numpy as np
import pyarrow as pa

import fsstgpu
from benchmarks.gpu_encode import column_of
from benchmarks.gpu_sizes import corpus
from fsstgpu.device import get_cupy
from fsstgpu.kernels import fsst_encode
from fsstgpu.kernels.fsst_encode import device_lookups, encode_on_device

cp = get_cupy()
col = column_of(corpus().cast(pa.large_binary()), 256 << 20)
table = fsstgpu.train(col)
offs = np.frombuffer(col.buffers()[1], np.int64)[col.offset: col.offset + len(col) + 1]
data = np.frombuffer(col.buffers()[2], np.uint8)[int(offs[0]): int(offs[-1])]
d_data, d_offs = cp.asarray(data), cp.asarray(offs - offs[0])
look = device_lookups(table)
for packed in (False, True):
    fsst_encode.PACKED = packed
    encode_on_device(table, d_data, d_offs, lookups=look)
cp.cuda.Device().synchronize()
