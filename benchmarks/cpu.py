"""CPU benchmark of the FSST codec on line files (the dbtext corpus), with pyarrow's LZ4 beside it.

Each file is one column, one string per line (the ``\\n`` removed, a ``\\r`` kept: what
:func:`fsstgpu.datasets.load_lines` gives), as in the FSST paper. For every file
:func:`run_cpu_bench` measures, in the same run:

* ``ratio``: string bytes / (code bytes + serialised symbol tables), the paper's measure;
* ``stored_ratio``: string bytes / the whole stored form
  (:meth:`fsstgpu.CompressedStringArray.to_bytes`: codes, tables, lengths, split points, ...);
* ``compress_mbs``: string bytes / seconds of block planning + training + encoding
  (:func:`fsstgpu.blocks.plan_level` at the bench's level, :func:`fsstgpu.encoder.encode_strings`);
* ``decompress_mbs``: string bytes / seconds of :func:`fsstgpu.decoder.decode_all` over the
  column's split points;
* ``codec_compress_mbs`` / ``codec_decompress_mbs``: the same through the public
  ``fsstgpu.compress(col, level=...)`` / ``fsstgpu.decompress(device="cpu")`` (Arrow in,
  Arrow out);
* ``lz4_*``: ``pyarrow.compress(data, "lz4")`` (LZ4 frame) on the same string bytes.

Times are the best of ``repeats`` runs (wall clock). Rows: one per file, ``(all files, one
column)`` for the whole corpus concatenated into a single column, and ``TOTAL`` (sums over the
files: bytes over summed sizes and summed times).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa

import fsstgpu
from benchmarks.timing import best_of
from fsstgpu.arrow_layout import from_arrow
from fsstgpu.blocks import plan_level
from fsstgpu.datasets import load_lines
from fsstgpu.decoder import decode_all
from fsstgpu.encoder import encode_strings
from fsstgpu.scan import long_string_cuts
from fsstgpu.splits import DEFAULT_SPLIT_SIZE, plan_splits


def _engine_compress(data, offsets, level):
    starts, tables = plan_level(data, offsets, level)
    if len(tables) == 1:  # the usual case: no copies
        codes, code_offsets = encode_strings(tables[0], data, offsets)
        return starts, tables, codes, code_offsets
    parts = []
    code_offsets = np.zeros(len(offsets), dtype=np.int64)
    base = 0
    for b, table in enumerate(tables):
        lo, hi = int(starts[b]), int(starts[b + 1])
        codes, offs = encode_strings(table, data, offsets[lo : hi + 1])
        code_offsets[lo + 1 : hi + 1] = offs[1:] + base
        base += len(codes)
        parts.append(codes)
    codes = np.concatenate(parts) if parts else np.zeros(0, np.uint8)
    return starts, tables, codes, code_offsets


def _bench_one(name, col, repeats, level="default"):
    plain = from_arrow(col)
    data, offsets = plain.data, plain.offsets
    nbytes = int(offsets[-1])
    mb = nbytes / 1e6
    t_c, (starts, tables, codes, code_offsets) = best_of(
        lambda: _engine_compress(data, offsets, level), repeats)
    lengths = np.diff(offsets)
    cuts = long_string_cuts(tables, starts, codes, code_offsets, lengths, DEFAULT_SPLIT_SIZE)
    split_codes, split_out, split_table = plan_splits(code_offsets, lengths, starts,
                                                      DEFAULT_SPLIT_SIZE, cuts)
    t_d, out = best_of(lambda: decode_all(tables, codes, split_codes, split_out, split_table,
                                        nbytes), repeats)
    if not np.array_equal(out, data[:nbytes]):
        raise AssertionError(f"{name}: decoded bytes differ from the input")
    size = len(codes) + sum(t.nbytes_serialised() for t in tables)
    t_cc, carr = best_of(lambda: fsstgpu.compress(col, level=level), repeats)
    stored = len(carr.to_bytes())
    t_cd, back = best_of(lambda: fsstgpu.decompress(carr, device="cpu"), repeats)
    if not back.equals(col):
        raise AssertionError(f"{name}: codec round trip differs")
    raw = pa.py_buffer(np.ascontiguousarray(data[:nbytes]))
    t_lc, lz = best_of(lambda: pa.compress(raw, codec="lz4", asbytes=False), repeats)
    t_ld, _ = best_of(lambda: pa.decompress(lz, decompressed_size=nbytes, codec="lz4",
                                          asbytes=False), repeats)
    return {
        "name": name, "strings": len(col), "bytes": nbytes, "blocks": len(tables),
        "compressed_bytes": size, "ratio": nbytes / size if size else float("inf"),
        "compress_s": t_c, "decompress_s": t_d,
        "compress_mbs": mb / t_c, "decompress_mbs": mb / t_d,
        "stored_bytes": stored, "stored_ratio": nbytes / stored, "codec_compress_s": t_cc,
        "codec_decompress_s": t_cd, "codec_compress_mbs": mb / t_cc,
        "codec_decompress_mbs": mb / t_cd,
        "lz4_bytes": lz.size, "lz4_ratio": nbytes / lz.size, "lz4_compress_s": t_lc,
        "lz4_decompress_s": t_ld, "lz4_compress_mbs": mb / t_lc, "lz4_decompress_mbs": mb / t_ld,
    }


def _total(rows, name):
    tot = {"name": name, "strings": sum(r["strings"] for r in rows),
           "bytes": sum(r["bytes"] for r in rows), "blocks": sum(r["blocks"] for r in rows)}
    mb = tot["bytes"] / 1e6
    for key, size_key in (("ratio", "compressed_bytes"), ("stored_ratio", "stored_bytes"),
                          ("lz4_ratio", "lz4_bytes")):
        sizes = [r[size_key] for r in rows]
        tot[size_key] = None if None in sizes else sum(sizes)
        tot[key] = None if tot[size_key] is None else tot["bytes"] / tot[size_key]
    for prefix in ("", "codec_", "lz4_"):
        for what in ("compress", "decompress"):
            times = [r[f"{prefix}{what}_s"] for r in rows]
            t = None if None in times else sum(times)
            tot[f"{prefix}{what}_s"] = t
            tot[f"{prefix}{what}_mbs"] = None if t is None else mb / t
    return tot


def run_cpu_bench(paths=None, *, repeats: int = 3, concatenated: bool = True,
                  level: str = "default") -> list[dict]:
    """Benchmark compression on the CPU; return one dict per file plus summary rows.

    Parameters
    ----------
    paths : list of path-like, optional
        Text files, one string per line. Default: every dbtext file found
        (:func:`fsstgpu.datasets.dbtext_files`).
    repeats : int
        Runs per measurement; the best time counts.
    concatenated : bool
        Add the row ``"(all files, one column)"``: all files as a single column.
    level : {"default", "fast"}
        The compression level (:data:`fsstgpu.blocks.LEVELS`).

    Returns
    -------
    list of dict
        Keys: name, strings, bytes, blocks, ratio, stored_ratio, compress_mbs, decompress_mbs,
        codec_compress_mbs, codec_decompress_mbs, lz4_ratio, lz4_compress_mbs,
        lz4_decompress_mbs (and the underlying sizes and seconds). The last row is ``TOTAL``.

    Examples
    --------
    >>> import tempfile, os
    >>> from benchmarks.cpu import run_cpu_bench
    >>> d = tempfile.mkdtemp(); p = os.path.join(d, "t.txt")
    >>> _ = open(p, "w").write("".join(f"row {i} of the example\\n" for i in range(3000)))
    >>> rows = run_cpu_bench([p], repeats=1, concatenated=False)
    >>> [r["name"] for r in rows], rows[0]["ratio"] > 2
    (['t.txt', 'TOTAL'], True)
    """
    if paths is None:
        from fsstgpu.datasets import dbtext_files

        paths = dbtext_files()
    columns = [(Path(p).name, load_lines(p)) for p in paths]
    # Compile and warm every kernel first so that no row pays for it.
    if columns:
        _bench_one("warm-up", columns[0][1], 1, level)
    rows = [_bench_one(name, col, repeats, level) for name, col in columns]
    summary = []
    if concatenated and len(columns) > 1:
        # one type for all: a file that is not UTF-8 loads as binary
        one = pa.concat_arrays([col.cast(pa.large_binary()) for _, col in columns])
        summary.append(_bench_one("(all files, one column)", one, repeats, level))
    return rows + summary + [_total(rows, "TOTAL")]


def format_cpu_bench(rows):
    """A rich Table of :func:`run_cpu_bench` rows (speeds in MB/s, 1 MB = 10^6 bytes).

    Examples
    --------
    >>> from benchmarks.cpu import format_cpu_bench
    >>> format_cpu_bench([]).row_count
    0
    """
    from rich.table import Table

    table = Table(title=f"FSST on the CPU ({os.cpu_count()} cores) vs pyarrow LZ4 frame; "
                        "ratio = string bytes / (codes + tables)")
    cols = [("file", "name", None), ("strings", "strings", "{:,}"), ("bytes", "bytes", "{:,}"),
            ("blocks", "blocks", "{}"), ("ratio", "ratio", "{:.3f}"),
            ("stored", "stored_ratio", "{:.3f}"), ("comp MB/s", "compress_mbs", "{:.0f}"),
            ("decomp MB/s", "decompress_mbs", "{:.0f}"),
            ("codec comp", "codec_compress_mbs", "{:.0f}"),
            ("codec decomp", "codec_decompress_mbs", "{:.0f}"),
            ("LZ4 ratio", "lz4_ratio", "{:.3f}"), ("LZ4 comp", "lz4_compress_mbs", "{:.0f}"),
            ("LZ4 decomp", "lz4_decompress_mbs", "{:.0f}")]
    for header, _, fmt in cols:
        table.add_column(header, justify="left" if fmt is None else "right")
    for r in rows:
        cells = []
        for _, key, fmt in cols:
            v = r.get(key)
            cells.append("-" if v is None else (str(v) if fmt is None else fmt.format(v)))
        table.add_row(*cells, end_section=r["name"] == "TOTAL" or r["name"].startswith("("))
    return table
