"""A/B of DeviceCompressedStringArray.to_host: HEAD's pageable gets (copied here as `old`)
against the tree's pinned downloads; dbtext laid end to end, compress_device with a table,
the first call of each (fresh memory / a cold pinned pool) then the best of 4 interleaved;
results compared."""
import sys
import time

import numpy as np
import pyarrow as pa

import fsstgpu
from benchmarks.gpu_encode import column_of
from benchmarks.gpu_sizes import corpus
from fsstgpu.arrays import CompressedStringArray
from fsstgpu.device import get_cupy

cp = get_cupy()
MIB = 1 << 20
strings = corpus().cast(pa.large_binary())


def old(self):
    col = self.layout.columns[0]
    codes = self.codes[: self.ncodes].get()
    code_offsets = self.encoded["code_offsets"].get()
    lengths = self.lengths.get().astype(np.int64)
    validity = None if self.validity is None else self.validity.get()
    split_codes, split_out = self.split_codes.get(), self.split_out.get()
    split_table = self.split_table.get()
    carr = CompressedStringArray(
        type=col.type, length=col.length, tables=self.encoded["tables"],
        block_starts=np.array([0, col.length], np.int64), codes=codes,
        code_offsets=code_offsets, lengths=lengths, validity=validity,
        null_count=col.null_count, split_size=self.encoded["split_size"],
        split_codes=split_codes, split_out=split_out, split_table=split_table,
        chunk_lengths=col.chunk_lengths)
    carr.validate(full=False)
    return carr


def timed(fn):
    t0 = time.perf_counter()
    r = fn()
    return time.perf_counter() - t0, r


def measure(size):
    col = column_of(strings, size)
    # nulls too: every tenth string (the validity downloaded)
    mask = pa.array(np.arange(len(col)) % 10 == 3)
    col = pa.compute.if_else(mask, pa.scalar(None, col.type), col)
    nbytes = int(pa.compute.sum(pa.compute.binary_length(col)).as_py())
    table = fsstgpu.train(col)
    dev = fsstgpu.compress_device(col, table)
    t_old0, a = timed(lambda: old(dev))
    t_new0, b = timed(lambda: dev.to_host())
    assert a.equals(b) and b.equals(fsstgpu.compress(col, table=table)), "different results"
    del a, b
    olds, news = [], []
    for _ in range(4):
        olds.append(timed(lambda: old(dev))[0])
        news.append(timed(lambda: dev.to_host())[0])
    print(f"{size // MIB:5d} MiB (nulls 1 in 10) to_host GB/s of strings: "
          f"old first {nbytes / t_old0 / 1e9:6.2f} best {nbytes / min(olds) / 1e9:6.2f} | "
          f"pinned first {nbytes / t_new0 / 1e9:6.2f} best {nbytes / min(news) / 1e9:6.2f} "
          f"(old {[round(t * 1e3, 1) for t in olds]} ms, new {[round(t * 1e3, 1) for t in news]})",
          flush=True)


for size in [int(s) * MIB for s in sys.argv[1:]] or [16 * MIB, 256 * MIB, 1024 * MIB]:
    measure(size)
    cp.get_default_memory_pool().free_all_blocks()
