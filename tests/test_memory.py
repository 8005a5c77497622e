"""Memory and time of compressing and of reading blobs: bounded by what the column needs.

Regression tests for issue #12, finding 12: compress used 8-10x a row group's string bytes; a
3.1 MB blob of 100 million empty strings took 23 s and 3.9 GiB to decode.
"""

from __future__ import annotations

import os
import time
import tracemalloc

import numpy as np
import pyarrow as pa

import fsstgpu
from fsstgpu import CompressedStringArray

#: the pools _traced measured with, kept alive for the buffers allocated in them
_POOLS = []


def _traced(fn):
    """(result, peak bytes allocated while ``fn`` ran, seconds): numpy's and Python's peak
    plus that of pyarrow's pool (decoded columns live there: fsstgpu.memory), an upper bound
    of the two together."""
    pool = pa.proxy_memory_pool(pa.default_memory_pool())
    _POOLS.append(pool)  # its buffers hold a bare pointer to it: it outlives them
    before = pa.default_memory_pool()
    pa.set_memory_pool(pool)
    tracemalloc.start()
    t = time.perf_counter()
    try:
        out = fn()
        seconds = time.perf_counter() - t
        return out, tracemalloc.get_traced_memory()[1] + pool.max_memory(), seconds
    finally:
        tracemalloc.stop()
        pa.set_memory_pool(before)


def test_compress_memory_is_a_small_multiple_of_the_strings():
    """Beyond its input, compressing a column with one table (the file writer's case) needs
    its codes, code offsets and lengths, the plain layout's int64 offsets, and the encoder's
    scratch for one wave of chunks (8 MB per core at most): no worst-case buffer of twice the
    input, no copies of the codes."""
    rng = np.random.default_rng(0)
    words = np.array(["alpha", "beta", "gamma", "http://", "example", ".com/", "x", "0123"])
    base = pa.array([" ".join(rng.choice(words, rng.integers(1, 8))) for _ in range(40_000)])
    col = pa.concat_arrays([base] * 60)
    nbytes = col.buffers()[2].size
    table = fsstgpu.train(base)
    fsstgpu.compress(base, table=table)  # compile
    carr, peak, _ = _traced(lambda: fsstgpu.compress(col, table=table))
    needed = carr.nbytes + 8 * (len(col) + 1)  # the result and the int64 offsets
    scratch = 8 * 2**20 * (os.cpu_count() or 1)
    assert peak < 1.2 * needed + scratch, (f"peak {peak / nbytes:.2f}x the string bytes, the "
                                            f"result {carr.nbytes / nbytes:.2f}x")
    assert fsstgpu.decompress(carr, device="cpu").equals(col)


def test_reading_many_empty_strings_is_cheap():
    """A blob of empty strings (32 a byte) once took 8 int64 arrays per string to read and
    decode; now the int64 lengths and the Arrow offsets (12 bytes a string) at the peak."""
    n = 4_000_000
    empty = pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(np.zeros(n + 1, np.int32)),
                                                   pa.py_buffer(b"")])
    data = fsstgpu.compress(empty).to_bytes()
    # 32 empty strings a byte, plus the FBP2 index's 16 bytes per 4096 strings
    assert len(data) < n // 28
    fsstgpu.decompress(CompressedStringArray.from_bytes(data), device="cpu")  # compile
    out, peak, seconds = _traced(
        lambda: fsstgpu.decompress(CompressedStringArray.from_bytes(data), device="cpu"))
    assert len(out) == n and out.null_count == 0 and out.buffers()[2].size == 0
    assert peak < 14 * n, f"{peak / n:.1f} bytes per string"
    assert seconds < 2.5, f"{seconds:.2f} s for {n} strings"


def test_decompress_allocates_only_the_result():
    """The offsets are built in the output's own width (int32 for ``string``), not as int64
    and then narrowed."""
    col = pa.array(["abc", "de", None, "fghij"] * 250_000)
    carr = fsstgpu.compress(col)
    fsstgpu.decompress(carr, device="cpu")
    out, peak, _ = _traced(lambda: fsstgpu.decompress(carr, device="cpu"))
    result = sum(b.size for b in out.buffers() if b is not None)
    assert peak < 1.1 * result + 2**20
