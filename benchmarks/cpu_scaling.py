"""How the CPU codec scales with cores, beside pyarrow's LZ4 and zstd on the same bytes.

:func:`cpu_scaling` compresses and decompresses one column with 1, 2, 4, ... cores and prints
(returns) one row per core count. Each core count runs in its own process pinned to that many
cores (``os.sched_setaffinity``; fsstgpu's worker pool sizes itself to the process's affinity
mask), so one call gives the whole table from one run on one machine. In every row:

* ``compress_MB_s`` / ``decompress_MB_s``: string bytes over the best of ``repeats`` wall times of
  ``fsstgpu.compress(column, level=...)`` (block planning, training, encoding: the whole public
  call) and
  ``fsstgpu.decompress(carr, device="cpu")`` (Arrow out), after one untimed warm-up round trip;
* ``lz4_*`` / ``zstd_*``: ``pyarrow.compress`` / ``pyarrow.decompress`` (LZ4 frame; zstd at
  pyarrow's default level) of the same string bytes, cut into 1 MiB pieces that as many threads
  as cores compress in parallel (pyarrow releases the GIL), best of ``repeats``;
* ``ratio``: string bytes over the compressed form's codes and tables (the FSST paper's measure);
  ``lz4_ratio`` / ``zstd_ratio``: string bytes over the compressed pieces.

Run from a checkout: ``python -m benchmarks.cpu_scaling FILE [--threads N]`` (a text file, one
string per line).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def core_counts(threads: int) -> list[int]:
    """1, 2, 4, ... up to ``threads``, and ``threads`` itself.

    Examples
    --------
    >>> from benchmarks.cpu_scaling import core_counts
    >>> core_counts(6)
    [1, 2, 4, 6]
    """
    counts = []
    n = 1
    while n < threads:
        counts.append(n)
        n *= 2
    return counts + [threads]


def cpu_scaling(column, *, threads: int | None = None, repeats: int = 3,
                level: str = "default") -> list[dict]:
    """Compress and decompress ``column`` on 1, 2, 4, ... cores, with LZ4 and zstd beside.

    Parameters
    ----------
    column : pyarrow.Array or pyarrow.ChunkedArray
        A string or binary column (anything :func:`fsstgpu.compress` takes).
    threads : int, optional
        The most cores to use (default: all this process may run on).
    repeats : int
        Timed runs per figure (the best counts).
    level : {"default", "fast"}
        The compression level (:data:`fsstgpu.blocks.LEVELS`).

    Returns
    -------
    list of dict
        One row per core count (module docstring).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from benchmarks.cpu_scaling import cpu_scaling
    >>> col = pa.array([f"https://example.com/item/{i % 977}" for i in range(20_000)])
    >>> rows = cpu_scaling(col, threads=1, repeats=1)
    >>> [r["cores"] for r in rows], rows[0]["ratio"] > 2
    ([1], True)
    """
    import pyarrow as pa

    usable = sorted(os.sched_getaffinity(0))
    threads = len(usable) if threads is None else max(1, min(int(threads), len(usable)))
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    rows = []
    with tempfile.TemporaryDirectory(prefix="fsstgpu-scaling-") as tmp:
        path = Path(tmp) / "column.arrow"
        with pa.OSFile(str(path), "wb") as f, pa.ipc.new_file(
                f, pa.schema([("s", column.type)])) as writer:
            writer.write(pa.record_batch([column], names=["s"]))
        for cores in core_counts(threads):
            args = json.dumps({"path": str(path), "cores": usable[:cores], "repeats": repeats,
                               "level": level})
            done = subprocess.run([sys.executable, __file__, "--worker", args],
                                  capture_output=True, text=True, cwd=Path(__file__).parent.parent)
            if done.returncode:  # its error, not only "exit status 1" (stderr was captured):
                # the traceback's last line, which names the exception
                why = (done.stderr.strip().splitlines() or ["no message"])[-1]
                raise RuntimeError(f"the {cores}-core run failed (exit {done.returncode}): {why}")
            rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
    return rows


def _string_bytes(column):
    """The column's string bytes (non-null values, in order) as a pyarrow buffer."""
    import pyarrow as pa

    arr = column.cast(pa.large_binary())
    if arr.null_count:
        arr = arr.drop_null()
    offsets = arr.buffers()[1]
    first = int.from_bytes(offsets[8 * arr.offset : 8 * arr.offset + 8], "little")
    last = int.from_bytes(offsets[8 * (arr.offset + len(arr)) : 8 * (arr.offset + len(arr)) + 8],
                          "little")
    data = arr.buffers()[2]
    return data.slice(first, last - first) if data is not None else pa.py_buffer(b"")


def _measure(path: str, cores: list[int], repeats: int, level: str) -> dict:
    """One row of :func:`cpu_scaling`, in a process pinned to ``cores`` (before any import
    that starts threads)."""
    os.sched_setaffinity(0, cores)
    import pyarrow as pa

    import fsstgpu
    from benchmarks.timing import best_of
    from benchmarks.yardsticks import compress_pieces, decompress_pieces, pieces_of

    with pa.memory_map(path) as f:
        column = pa.ipc.open_file(f).read_all().column(0).combine_chunks()
    raw = _string_bytes(column)
    nbytes = raw.size
    fsstgpu.decompress(fsstgpu.compress(column, level=level), device="cpu")  # warm-up: caches
    t_c, carr = best_of(lambda: fsstgpu.compress(column, level=level), repeats)
    t_d, back = best_of(lambda: fsstgpu.decompress(carr, device="cpu"), repeats)
    if not back.equals(column):
        raise AssertionError("fsstgpu round trip differs from the input")
    stats = carr.stats()
    row = {"cores": len(cores), "string_bytes": nbytes,
           "ratio": nbytes / max(1, stats["codes_bytes"] + stats["table_bytes"]),
           "compress_MB_s": nbytes / t_c / 1e6, "decompress_MB_s": nbytes / t_d / 1e6}
    pieces = pieces_of(raw)
    with ThreadPoolExecutor(len(cores)) as pool:
        for codec in ("lz4", "zstd"):
            t_c, packed = best_of(lambda c=codec: compress_pieces(pieces, c, pool), repeats)
            t_d, _ = best_of(lambda c=codec, z=packed: decompress_pieces(z, pieces, c, pool),
                           repeats)
            row[f"{codec}_ratio"] = nbytes / max(1, sum(z.size for z in packed))
            row[f"{codec}_compress_MB_s"] = nbytes / t_c / 1e6
            row[f"{codec}_decompress_MB_s"] = nbytes / t_d / 1e6
    row["compress_vs_lz4"] = row["compress_MB_s"] / row["lz4_compress_MB_s"]
    row["decompress_vs_lz4"] = row["decompress_MB_s"] / row["lz4_decompress_MB_s"]
    return row


def format_rows(rows: list[dict]) -> str:
    """The rows as a plain-text table (MB/s; ratios).

    Examples
    --------
    >>> from benchmarks.cpu_scaling import format_rows
    >>> print(format_rows([]).splitlines()[0].split()[:3])
    ['cores', 'ratio', 'compress']
    """
    head = (f"{'cores':>5} {'ratio':>6} {'compress':>9} {'decompress':>10} | {'lz4 c':>7} "
            f"{'lz4 d':>7} {'lz4 r':>6} | {'zstd c':>7} {'zstd d':>7} {'zstd r':>6}")
    lines = [head]
    for r in rows:
        lines.append(
            f"{r['cores']:>5} {r['ratio']:6.3f} {r['compress_MB_s']:9.0f} "
            f"{r['decompress_MB_s']:10.0f} | {r['lz4_compress_MB_s']:7.0f} "
            f"{r['lz4_decompress_MB_s']:7.0f} {r['lz4_ratio']:6.3f} | "
            f"{r['zstd_compress_MB_s']:7.0f} {r['zstd_decompress_MB_s']:7.0f} "
            f"{r['zstd_ratio']:6.3f}")
    return "\n".join(lines)


def _main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("file", nargs="?", help="a text file, one string per line")
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--level", choices=("default", "fast"), default="default")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        spec = json.loads(args.worker)
        print(json.dumps(_measure(spec["path"], spec["cores"], spec["repeats"], spec["level"])))
        return
    if not args.file:
        parser.error("a file is needed")
    from fsstgpu.datasets import load_lines

    rows = cpu_scaling(load_lines(args.file), threads=args.threads, repeats=args.repeats,
                       level=args.level)
    print(json.dumps(rows, indent=1) if args.json else format_rows(rows))


if __name__ == "__main__":
    if "--worker" in sys.argv:  # run as a file: make the checkout importable
        sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    _main()
