"""fsstgpu beside the reference FSST, pyarrow's LZ4 and zstd: the comparison of issue #21.

:func:`compare` runs every contender on the same strings in one process and one run, and
interleaves them: each repeat runs, column after column, every contender's compress and then
its decompress, so a machine that gets busier slows them all alike. A figure is the best of the
repeats, per column, summed over a corpus's columns. Contenders:

* ``reference``: cwida/fsst through :mod:`benchmarks.reference_fsst` (``fsst_create`` on the
  column, ``fsst_compress``, then ``fsst_decompress`` per string); one thread, as its C API is;
  ``reference_per_mb`` (when asked): the same with a new table every ``table_mb`` MB;
* ``fsstgpu``: ``fsstgpu.compress(column)`` and ``fsstgpu.decompress(carr, device="cpu")``,
  Arrow to Arrow (UTF-8 checked for string columns), on ``threads`` cores
  (``FSSTGPU_THREADS``); ``fsstgpu_fast``: the same with ``level="fast"``;
* ``lz4`` / ``zstd``: ``pyarrow.compress`` / ``pyarrow.decompress`` (LZ4 frame; zstd at
  pyarrow's default level) of the column's string bytes in 1 MiB pieces, ``threads`` pieces at
  a time.

``ratio`` = string bytes / compressed bytes (codes and tables for FSST, no string lengths for
anyone); MB/s = string bytes / wall seconds, compress including training, decompress counting
the decompressed bytes. Every contender's output is checked against the input once, untimed.

Run from a checkout: ``fsstgpu bench CORPUS|FILE ... --reference SRC_OR_LIB --threads N``
(corpus names: :data:`benchmarks.corpora.CORPORA`).
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import numpy as np

CONTENDERS = ("reference", "reference_per_mb", "fsstgpu", "fsstgpu_fast", "lz4", "zstd")
"""Contender names in the order rows and tables list them."""


class _Fsstgpu:
    def __init__(self, column, level="default"):
        self.column, self.level = column, level
        self.name = "fsstgpu" if level == "default" else f"fsstgpu_{level}"

    def compress(self):
        import fsstgpu

        return fsstgpu.compress(self.column, level=self.level)

    def decompress(self, carr):
        import fsstgpu

        return fsstgpu.decompress(carr, device="cpu")

    def stored_bytes(self, carr) -> int:
        stats = carr.stats()
        return stats["codes_bytes"] + stats["table_bytes"]

    def check(self, back) -> bool:
        return back.equals(self.column)


class _Reference:
    def __init__(self, column, ref, table_bytes=None):
        from benchmarks.reference_fsst import strings_layout

        self.name = "reference_per_mb" if table_bytes else "reference"
        self.ref, self.table_bytes = ref, table_bytes
        self.data, self.offsets = strings_layout(column)

    def compress(self):
        return self.ref.compress(self.data, self.offsets, table_bytes=self.table_bytes)

    def decompress(self, comp):
        return self.ref.decompress(comp)

    def stored_bytes(self, comp) -> int:
        return comp.stored_bytes

    def check(self, back) -> bool:
        data, offsets = back
        return bool(np.array_equal(data, self.data) and np.array_equal(offsets, self.offsets))


class _Pyarrow:
    def __init__(self, column, codec, pool):
        import pyarrow as pa

        from benchmarks.reference_fsst import strings_layout
        from benchmarks.yardsticks import pieces_of

        self.name, self.codec, self.pool = codec, codec, pool
        data, _ = strings_layout(column)
        raw = pa.py_buffer(data)
        self.raw = raw
        self.pieces = pieces_of(raw)

    def compress(self):
        from benchmarks.yardsticks import compress_pieces

        return compress_pieces(self.pieces, self.codec, self.pool)

    def decompress(self, packed):
        from benchmarks.yardsticks import decompress_pieces

        return decompress_pieces(packed, self.pieces, self.codec, self.pool)

    def stored_bytes(self, packed) -> int:
        return sum(z.size for z in packed)

    def check(self, back) -> bool:
        return b"".join(b.to_pybytes() for b in back) == self.raw.to_pybytes()


@contextmanager
def _fsstgpu_threads(threads: int):
    """``FSSTGPU_THREADS`` set to ``threads`` for the block (read at every parallel call)."""
    old = os.environ.get("FSSTGPU_THREADS")
    os.environ["FSSTGPU_THREADS"] = str(threads)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("FSSTGPU_THREADS", None)
        else:
            os.environ["FSSTGPU_THREADS"] = old


def compare(corpora, *, reference=None, threads: int = 1, repeats: int = 5,
            table_mb: float | None = None, progress=None) -> list[dict]:
    """Time every contender on every corpus (module docstring); one row per corpus.

    Parameters
    ----------
    corpora : list of (str, list of (str, pyarrow.Array))
        Corpus names and their columns (:func:`benchmarks.corpora.load_corpus`).
    reference : benchmarks.reference_fsst.ReferenceFSST, optional
        The reference; without it its columns are left out.
    threads : int
        Cores for fsstgpu and the pyarrow codecs (the reference runs on one); at most the cores
        this process may run on.
    repeats : int
        Timed runs of each contender on each column; the best counts.
    table_mb : float, optional
        Also run the reference with a new table every this many MB (``reference_per_mb``).
    progress : callable, optional
        Called with a line of text as each corpus starts.

    Returns
    -------
    list of dict
        Per corpus: ``corpus``, ``columns``, ``strings``, ``bytes``, ``threads``, ``repeats``;
        per contender ``<name>_ratio``, ``<name>_compress_MB_s``, ``<name>_decompress_MB_s``;
        with a reference, ``compress_vs_reference`` and ``decompress_vs_reference`` (fsstgpu's
        MB/s over the reference's).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from benchmarks.reference_bench import compare, format_table
    >>> col = pa.array([f"https://example.com/item/{i % 977}" for i in range(20_000)])
    >>> rows = compare([("urls", [("urls", col)])], repeats=1)
    >>> rows[0]["fsstgpu_ratio"] > 2, "reference_ratio" in rows[0]
    (True, False)
    >>> print(format_table(rows).splitlines()[0])  # doctest: +ELLIPSIS
    | corpus | MB | fsstgpu: ratio / compress MB/s / decompress MB/s | ...
    """
    # at most the cores this process may run on, as fsstgpu's pool (FSSTGPU_THREADS) and the
    # scaling bench are: rows said "threads": N while fsstgpu ran on fewer cores than pyarrow
    threads = max(1, min(int(threads), len(os.sched_getaffinity(0))))
    rows = []
    with _fsstgpu_threads(threads), ThreadPoolExecutor(threads) as pool:
        for corpus, columns in corpora:
            if progress:
                progress(f"{corpus}: {len(columns)} column(s), {repeats} repeats")
            rows.append(_compare_corpus(corpus, columns, reference, threads, repeats,
                                        table_mb, pool if threads > 1 else None))
    return rows


def _contenders(column, reference, table_mb, pool):
    out = []
    if reference is not None:
        out.append(_Reference(column, reference))
        if table_mb:
            out.append(_Reference(column, reference, int(table_mb * 1e6)))
    out += [_Fsstgpu(column), _Fsstgpu(column, "fast"), _Pyarrow(column, "lz4", pool),
            _Pyarrow(column, "zstd", pool)]
    return out


def _compare_corpus(corpus, columns, reference, threads, repeats, table_mb, pool) -> dict:
    from benchmarks.reference_fsst import strings_layout

    per_column = [_contenders(col, reference, table_mb, pool) for _, col in columns]
    names = [c.name for c in per_column[0]] if per_column else []
    best = {(k, c.name, op): float("inf") for k, cs in enumerate(per_column) for c in cs
            for op in ("c", "d")}
    stored = {}
    for cs in per_column:  # untimed warm-up on a slice: first-use costs are not timed
        for c in cs:
            if c.name.startswith("fsstgpu"):
                _Fsstgpu(c.column.slice(0, 20_000)).decompress(
                    _Fsstgpu(c.column.slice(0, 20_000), c.level).compress())
    for rep in range(repeats):
        for k, cs in enumerate(per_column):
            for c in cs:
                t0 = time.perf_counter()
                packed = c.compress()
                t1 = time.perf_counter()
                back = c.decompress(packed)
                t2 = time.perf_counter()
                best[k, c.name, "c"] = min(best[k, c.name, "c"], t1 - t0)
                best[k, c.name, "d"] = min(best[k, c.name, "d"], t2 - t1)
                if rep == 0:
                    if not c.check(back):
                        raise AssertionError(f"{c.name} round trip of {corpus} column "
                                             f"{columns[k][0]} differs from the input")
                    stored[k, c.name] = c.stored_bytes(packed)
                del packed, back
    nbytes = sum(int(strings_layout(col)[1][-1]) for _, col in columns)
    row = {"corpus": corpus, "columns": len(columns), "strings": sum(len(c) for _, c in columns),
           "bytes": nbytes, "threads": threads, "repeats": repeats}
    for name in names:
        ks = range(len(per_column))
        t_c = sum(best[k, name, "c"] for k in ks)
        t_d = sum(best[k, name, "d"] for k in ks)
        row[f"{name}_ratio"] = nbytes / max(1, sum(stored[k, name] for k in ks))
        row[f"{name}_compress_MB_s"] = nbytes / t_c / 1e6
        row[f"{name}_decompress_MB_s"] = nbytes / t_d / 1e6
    if "reference" in names:
        row["compress_vs_reference"] = (row["fsstgpu_compress_MB_s"]
                                        / row["reference_compress_MB_s"])
        row["decompress_vs_reference"] = (row["fsstgpu_decompress_MB_s"]
                                          / row["reference_decompress_MB_s"])
        row["fast_compress_vs_reference"] = (row["fsstgpu_fast_compress_MB_s"]
                                             / row["reference_compress_MB_s"])
    return row


_LABELS = {"reference": "reference", "reference_per_mb": "reference, table per MB",
           "fsstgpu": "fsstgpu", "fsstgpu_fast": "fsstgpu --level fast", "lz4": "LZ4",
           "zstd": "zstd"}


def format_table(rows: list[dict]) -> str:
    """The rows as a Markdown table: ``ratio / compress MB/s / decompress MB/s`` per contender,
    then fsstgpu's speed over the reference's.

    Examples
    --------
    >>> from benchmarks.reference_bench import format_table
    >>> format_table([])
    ''
    """
    if not rows:
        return ""
    names = [n for n in CONTENDERS if f"{n}_ratio" in rows[0]]
    vs = "compress_vs_reference" in rows[0]
    head = ["corpus", "MB"] + [f"{_LABELS[n]}: ratio / compress MB/s / decompress MB/s"
                               for n in names]
    if vs:
        head += ["fsstgpu / reference, compress", "fast / reference, compress",
                 "fsstgpu / reference, decompress"]
    lines = ["| " + " | ".join(head) + " |",
             "|" + "|".join(["---", "---:"] + ["---:"] * (len(head) - 2)) + "|"]
    for r in rows:
        cells = [r["corpus"], f"{r['bytes'] / 1e6:.1f}"]
        cells += [f"{r[n + '_ratio']:.2f} / {r[n + '_compress_MB_s']:.0f} / "
                  f"{r[n + '_decompress_MB_s']:.0f}" for n in names]
        if vs:
            cells += [f"{r['compress_vs_reference']:.2f}",
                      f"{r['fast_compress_vs_reference']:.2f}",
                      f"{r['decompress_vs_reference']:.2f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)
