"""Issue #21's large column: runs of 4000 lines of every dbtext file in turn, and its bench.

The column changes kind every 4000 strings, so block planning cuts it into thousands of blocks
(a 1 GiB column: 4047): the case where the planner, not the encoder, sets the speed. BENCHMARKS.md
sections 8 and 9 measured it this way on the H200 host.

``python -m benchmarks.mixed_column make DBTEXT_DIR OUT [BYTES]`` writes the column as a text
file (one string per line; default 1.074e9 bytes, continuing each file where its last run ended,
wrapping around). ``python -m benchmarks.mixed_column bench FILE THREADS...`` loads it as one
``large_binary`` column and prints, for each thread count and each compression level
(``default``, ``fast``), in that order: fsstgpu's ratio, blocks, one ``fsstgpu.compress``
(wall), ``fsstgpu.decompress(device="cpu")`` (wall) twice: into fresh memory (the second
call while the first one's result is alive; equality with the input checked for the first
count) and reused (the best of three, each result dropped before
the next call: pyarrow's pool hands its memory back, as in a loop over row groups), and
pyarrow's LZ4 and zstd on the same bytes in 1 MiB pieces on as many threads
(:mod:`benchmarks.yardsticks`' way), decompressed the same two ways.
``FSSTGPU_THREADS`` is set per count; the pool keeps the size of the first count it starts with,
so give the largest count first (as the sections did: 16 8 4, then 1 in a second process).
"""

from __future__ import annotations

import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa

from benchmarks.yardsticks import compress_pieces, decompress_pieces, pieces_of

RUN_LINES = 4000


def make(dbtext: Path, out: Path, target: int = 1_074_000_000) -> int:
    """Write the column to ``out``; return its size in bytes."""
    files = sorted(p for p in Path(dbtext).iterdir() if p.is_file() and p.suffix != ".md")
    lines = [p.read_bytes().split(b"\n") for p in files]
    pos = [0] * len(lines)
    total = 0
    with open(out, "wb") as f:
        while total < target:
            for k, ls in enumerate(lines):
                run = [ls[(pos[k] + j) % len(ls)] for j in range(RUN_LINES)]
                pos[k] = (pos[k] + RUN_LINES) % len(ls)
                chunk = b"\n".join(run) + b"\n"
                f.write(chunk)
                total += len(chunk)
                if total >= target:
                    break
    return total


def _pieces_rate(pieces, threads: int, codec: str):
    """pyarrow ``codec`` on the pieces with ``threads`` threads: (ratio, compress s,
    decompress s into fresh memory, decompress s again once the first results are dropped)."""
    with ThreadPoolExecutor(threads) as ex:
        t0 = time.perf_counter()
        packed = compress_pieces(pieces, codec, ex)
        tc = time.perf_counter() - t0
        times, out = [], []
        for _ in range(2):
            out.clear()  # (the second round: the pool's freed memory is there to reuse)
            t0 = time.perf_counter()
            out.extend(decompress_pieces(packed, pieces, codec, ex))
            times.append(time.perf_counter() - t0)
    return sum(p.size for p in pieces) / sum(c.size for c in packed), tc, *times


def bench(path: Path, thread_counts: list[int]) -> None:
    """Print, per thread count, a line per compression level and one for pyarrow (module
    docstring)."""
    col = pa.array(Path(path).read_bytes().split(b"\n"), pa.large_binary())
    raw = col.buffers()[2]
    mb = raw.size / 1e6
    print(f"{mb:.0f} MB, {len(col)} strings", flush=True)
    pieces = pieces_of(raw)
    for n, threads in enumerate(thread_counts):
        os.environ["FSSTGPU_THREADS"] = str(threads)
        for level in ("default", "fast"):
            print(f"threads {threads}, level {level}: "
                  + _fsstgpu_rates(col, mb, level, check=n == 0), flush=True)
        lz4 = _pieces_rate(pieces, threads, "lz4")
        zstd = _pieces_rate(pieces, threads, "zstd")
        print(f"threads {threads}: LZ4 ratio {lz4[0]:.2f} compress {mb / lz4[1]:.0f} decompress "
              f"{mb / lz4[2]:.0f} fresh, {mb / lz4[3]:.0f} reused MB/s | zstd ratio "
              f"{zstd[0]:.2f} compress {mb / zstd[1]:.0f} decompress {mb / zstd[2]:.0f} fresh, "
              f"{mb / zstd[3]:.0f} reused MB/s", flush=True)


def _fsstgpu_rates(col, mb: float, level: str, check: bool) -> str:
    """One compress at ``level`` and the decompresses of the module docstring, as text."""
    import fsstgpu

    t0 = time.perf_counter()
    carr = fsstgpu.compress(col, level=level)
    tc = time.perf_counter() - t0
    fresh = []  # results kept: every call decodes into fresh memory
    for _ in range(2):
        t0 = time.perf_counter()
        fresh.append(fsstgpu.decompress(carr, device="cpu"))
        td_fresh = time.perf_counter() - t0
    equal = fresh[0].equals(col) if check else "n/a"
    del fresh
    td = float("inf")  # each result dropped before the next call: memory reused
    for _ in range(3):
        t0 = time.perf_counter()
        out = fsstgpu.decompress(carr, device="cpu")
        td = min(td, time.perf_counter() - t0)
        del out
    return (f"fsstgpu ratio {carr.stats()['ratio']:.3f} blocks {len(carr.tables)} compress "
            f"{mb / tc:.0f} MB/s ({tc:.2f} s) decompress {mb / td_fresh:.0f} MB/s fresh, "
            f"{mb / td:.0f} reused, equal {equal}")

if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "make":
        size = make(Path(sys.argv[2]), Path(sys.argv[3]),
                    int(float(sys.argv[4])) if len(sys.argv) > 4 else 1_074_000_000)
        print(sys.argv[3], size)
    elif len(sys.argv) >= 4 and sys.argv[1] == "bench":
        bench(Path(sys.argv[2]), [int(t) for t in sys.argv[3:]])
    else:
        sys.exit(__doc__)
