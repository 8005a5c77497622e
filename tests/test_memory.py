"""Memory and time of compressing and of reading blobs: bounded by what the column needs.

Regression tests for issue #12, finding 12: compress used 8-10x a row group's string bytes; a
3.1 MB blob of 100 million empty strings took 23 s and 3.9 GiB to decode.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import tracemalloc

import numpy as np
import pyarrow as pa
import pytest

import fsstgpu
from fsstgpu import CompressedStringArray
from fsstgpu.splits import interior_cuts

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


def _letters(n: int, width: int = 40) -> pa.Array:
    """``n`` strings of ``width`` random lowercase letters: FSST finds little in them (about 0.75
    codes a byte), so ``split_size=1`` makes a split of nearly every code."""
    data = np.random.default_rng(0).integers(97, 123, n * width, dtype=np.uint8)
    offsets = np.arange(0, n * width + 1, width, dtype=np.int32)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets),
                                                  pa.py_buffer(data)])


def test_split_size_1_compress_holds_its_result_and_cuts_only():
    """``split_size=1`` makes a split a code (18 bytes each in the result), and planning them
    holds each cut inside a string (24 bytes) for a moment. Nothing more as tracemalloc sees it:
    the checks' masks over every split at once (~35 bytes a split), the cuts kept through those
    checks and an int64 copy of the table indices made the peak 1.56x that (50x the column's
    bytes; 32x now)."""
    col = _letters(62_500)
    fsstgpu.compress(col.slice(0, 100), split_size=1)  # compile
    carr, peak, _ = _traced(lambda: fsstgpu.compress(col, split_size=1))
    cuts = len(interior_cuts(carr.code_offsets, carr.lengths, carr.split_codes,
                             carr.split_out)[0])
    needed = carr.nbytes + 24 * cuts + 8 * (len(col) + 1)  # and the int64 offsets
    assert peak < 1.1 * needed, f"peak {peak / needed:.2f}x the result and the cuts"
    assert fsstgpu.decompress(carr, device="cpu").equals(col)


def test_split_size_1_decompress_allocates_only_the_result():
    """The uint16 table indices go to the decoder as they are: an int64 copy of them (8 bytes a
    split) made the peak 6.4x the output at ``split_size=1``."""
    carr = fsstgpu.compress(_letters(62_500), split_size=1)
    fsstgpu.decompress(carr, device="cpu")
    out, peak, _ = _traced(lambda: fsstgpu.decompress(carr, device="cpu"))
    result = sum(b.size for b in out.buffers() if b is not None)
    assert peak < 1.1 * result + 2**20, f"peak {peak / result:.2f}x the result"


_SPLIT_SIZE_1 = """
import json, sys
import numpy as np, pyarrow as pa
import fsstgpu
from fsstgpu.splits import interior_cuts

def grown(fn):
    # the resident set's growth while fn runs: the compiled code's own vectors are not numpy's,
    # tracemalloc does not see them
    with open("/proc/self/status") as f:
        before = next(int(x.split()[1]) for x in f if x.startswith("VmRSS"))
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")  # the high-water mark back to the resident set
    out = fn()
    with open("/proc/self/status") as f:
        return out, 1024 * (next(int(x.split()[1]) for x in f if x.startswith("VmHWM")) - before)

n, width = 250_000, 40
data = np.random.default_rng(0).integers(97, 123, n * width, dtype=np.uint8)
offsets = np.arange(0, n * width + 1, width, dtype=np.int32)
col = pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])
fsstgpu.decompress(fsstgpu.compress(col.slice(0, 100), split_size=1), device="cpu")  # compiled
carr, compressing = grown(lambda: fsstgpu.compress(col, split_size=1))
out, decoding = grown(lambda: fsstgpu.decompress(carr, device="cpu"))
cuts = len(interior_cuts(carr.code_offsets, carr.lengths, carr.split_codes, carr.split_out)[0])
print(json.dumps({"compress": compressing, "decompress": decoding, "result": carr.nbytes,
                  "cuts": cuts, "splits": len(carr.split_table), "output": n * width}))
"""


def test_split_size_1_compiled_code_holds_each_split_point_once():
    """The resident set (what tracemalloc misses) at ``split_size=1``, 10 MB of letters: the
    compiled plan copied each cut into a 32-byte record and a block index, the walk and the plan
    copied their vectors into the arrays they return, and the decoder kept a status and a row per
    split: compress peaked at 63-69x the column's bytes (2.0x the result and the cuts), decompress
    at 31x (1.6x the output and the 24 bytes a split of its private copies). Now 33-36x and 19x."""
    if not os.access("/proc/self/clear_refs", os.W_OK):
        pytest.skip("no /proc/self/clear_refs to reset the high-water mark (Linux)")
    env = dict(os.environ, FSSTGPU_THREADS="2")
    done = subprocess.run([sys.executable, "-c", _SPLIT_SIZE_1], capture_output=True, text=True,
                          timeout=300, check=True, env=env)
    got = json.loads(done.stdout)
    needed = got["result"] + 24 * got["cuts"]
    assert got["compress"] < 1.35 * needed, f"{got['compress'] / needed:.2f}x"
    needed = got["output"] + 4 * 250_001 + 24 * got["splits"]
    assert got["decompress"] < 1.25 * needed, f"{got['decompress'] / needed:.2f}x"
