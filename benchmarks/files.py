"""Files on the user's path: sizes, writes, reads and reads onto the GPU, beside pyarrow's own.

:func:`run_files_bench` takes real-text tables (:func:`fsstgpu.datasets.machine_text_table`,
:func:`fsstgpu.datasets.dbtext_table`), writes each as pyarrow Snappy and zstd Parquet and
compresses it with ``fsstgpu.formats.compress_file`` (the default, and ``parquet_codec="none"``),
then times, by wall clock on a warm page cache (median of ``repeat`` after one untimed call):

* ``write``: pyarrow writing the table (Snappy, zstd) from memory; fsstgpu compressing the Snappy
  file into its own (read + train + encode + write: the ``fsstgpu compress`` path; with a GPU
  also ``fsstgpu-gpu``, the strings encoded there: ``--device gpu``), beside ``transcode``
  (pyarrow reading the Snappy file and writing it as zstd: the same file-to-file job);
* ``read``: ``pyarrow.parquet.read_table`` of the Snappy / zstd files, and
  ``fsstgpu.formats.read_table(device="cpu")`` of fsstgpu's (Arrow strings out); the largest
  string column alone (``columns=``) by both, with the peak host memory of a fresh process
  doing it (:func:`column_peak_mb`);
* ``to_gpu`` (when a GPU is usable): pyarrow reading the Snappy / zstd file and uploading the
  string columns' buffers (offsets, data, validity) with CuPy, against
  ``read_table_device`` of fsstgpu's files (Arrow strings in device memory) and
  ``stream_to_device`` (``fsstgpu-stream``: row group by row group, host memory bounded), each
  ending with the device synchronised; and the growth of peak resident memory and of the CuPy
  device pool of a fresh process doing each (:func:`peak_memory_mb`), beside one row group's
  size in Arrow.

Sizes are per column (every Parquet leaf of it, compressed) and per file; when DuckDB or
vortex-data is installed, the size of its own file of the table too (``peer_file_MB``).
Throughputs count the string columns' bytes (``string_MB``). Run from a checkout:
``fsstgpu bench files``.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from benchmarks.timing import copy_bandwidth, pinned_like, time_wall, upload_seconds
from fsstgpu.formats import compress_file, read_table, read_table_device

ROWS_PER_GROUP = 200_000
FILES = ("snappy", "zstd", "fsstgpu", "fsstgpu-none")


def _string_columns(table: pa.Table) -> list[str]:
    """The plain (not dictionary-encoded) string and binary columns: those fsstgpu compresses."""
    return [f.name for f in table.schema
            if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)
            or pa.types.is_binary(f.type) or pa.types.is_large_binary(f.type)]


def _value_bytes(column) -> int:
    """The bytes of a string / binary column's non-null values (what fsstgpu compresses and
    reads back), not its data buffers' sizes: a slice, bytes under nulls or a builder's spare
    capacity are no string bytes.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from benchmarks.files import _value_bytes
    >>> _value_bytes(pa.chunked_array([pa.array(["ab", None, "cde"]).slice(1)]))
    3
    """
    return int(pc.sum(pc.binary_length(column)).as_py() or 0)


def column_sizes(path) -> dict[str, int]:
    """Compressed bytes of each top-level column of a Parquet file (all its leaves).

    Examples
    --------
    >>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
    >>> from benchmarks.files import column_sizes
    >>> path = os.path.join(tempfile.mkdtemp(), "t.parquet")
    >>> pq.write_table(pa.table({"s": ["a", "b"], "n": [1, 2]}), path)
    >>> sorted(column_sizes(path))
    ['n', 's']
    """
    md = pq.ParquetFile(path).metadata
    out: dict[str, int] = {}
    for g in range(md.num_row_groups):
        rg = md.row_group(g)
        for j in range(rg.num_columns):
            col = rg.column(j)
            top = col.path_in_schema.split(".")[0]
            out[top] = out.get(top, 0) + col.total_compressed_size
    return out


def upload_strings(table: pa.Table, names: list[str]) -> None:
    """Upload the buffers of ``names``' chunks to the GPU and wait: the yardstick's last step."""
    import cupy as cp
    import numpy as np

    for name in names:
        for chunk in table.column(name).chunks:
            for buf in chunk.buffers():
                if buf is not None and buf.size:
                    cp.asarray(np.frombuffer(buf, dtype=np.uint8))
    cp.cuda.get_current_stream().synchronize()


def _to_gpu_fsstgpu(path) -> None:
    import cupy as cp

    read_table_device(path)
    cp.cuda.get_current_stream().synchronize()


def _peer_sizes(table: pa.Table, stem) -> dict[str, float]:
    """MB of the FSST-based peers' own files of ``table``, for those installed: a DuckDB
    database (its string compression includes DICT_FSST) and a vortex-data file, each written
    with its defaults."""
    sizes = {}
    try:
        import duckdb
    except ImportError:
        duckdb = None
    if duckdb is not None:
        path = f"{stem}.duckdb"
        with duckdb.connect(path) as con:
            con.register("src", table)
            con.execute("CREATE TABLE t AS SELECT * FROM src")
            con.execute("CHECKPOINT")
        sizes[f"duckdb {duckdb.__version__}"] = os.path.getsize(path) / 1e6
    try:
        import vortex
    except ImportError:
        vortex = None
    if vortex is not None:
        path = f"{stem}.vortex"
        vortex.io.write(table, path)
        sizes[f"vortex-data {vortex.__version__}"] = os.path.getsize(path) / 1e6
    return sizes


# a child's resident-set sampler (every 0.5 ms, from /proc/self/statm): peak[0] is the peak
_RSS_SAMPLER = """
page = os.sysconf("SC_PAGE_SIZE")
def rss():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * page
peak, done = [rss()], threading.Event()
def sample():
    while not done.is_set():
        peak[0] = max(peak[0], rss())
        time.sleep(0.0005)
"""

_PEAK_CHILD = """
import os, sys, threading, time
import cupy as cp, pyarrow.parquet as pq, fsstgpu
from fsstgpu.formats import read_table, read_table_device
from fsstgpu.formats.device_reader import stream_to_device
import benchmarks.files as bf
fsstgpu.decompress_device(fsstgpu.compress(__import__("pyarrow").array(["warm"] * 1000)))
how, path = sys.argv[1], sys.argv[2]
""" + _RSS_SAMPLER + """pool = cp.get_default_memory_pool()
pool_before = pool.total_bytes()
before = rss()
sampler = threading.Thread(target=sample)
sampler.start()
if how == "read_table":
    cols = read_table_device(path)
elif how == "stream":
    for unit in stream_to_device(path):
        del unit
elif how == "pyarrow":
    table = pq.read_table(path)
    bf.upload_strings(table, bf._string_columns(table))
cp.cuda.Device().synchronize()
done.set()
sampler.join()
# the pool keeps freed blocks for reuse, so what it holds now is the read's peak (approx.)
print(before, max(peak[0], rss()), pool_before, pool.total_bytes())
"""


def peak_memory_mb(how: str, path) -> tuple[float, float]:
    """MB by which a fresh process's resident memory, and its CuPy device pool, peak above their
    level before it reads ``path`` onto the GPU ``how`` (``read_table``, ``stream`` or
    ``pyarrow``: zstd read + upload), after imports, CUDA start-up and one small decode.

    Host: the resident set sampled every 0.5 ms from ``/proc/self/statm`` (pinned staging
    buffers count). Device: the bytes CuPy's pool holds after the read (it keeps freed blocks
    for reuse, so this is about the read's peak of live device buffers). Linux only."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    res = subprocess.run([sys.executable, "-c", _PEAK_CHILD, how, str(path)], cwd=root,
                         capture_output=True, text=True)
    if res.returncode:
        raise RuntimeError(f"peak_memory_mb({how!r}) failed: {res.stderr[-2000:]}")
    before, after, pool_before, pool_after = (int(v) for v in res.stdout.split()[-4:])
    return (after - before) / 1e6, (pool_after - pool_before) / 1e6


_COLUMN_PEAK_CHILD = """
import os, sys, threading, time
import pyarrow.parquet as pq, fsstgpu
from fsstgpu.formats import read_table
how, path, column = sys.argv[1:4]
""" + _RSS_SAMPLER + """before = rss()
sampler = threading.Thread(target=sample)
sampler.start()
t = (read_table(path, device="cpu", columns=[column]) if how == "fsstgpu"
     else pq.read_table(path, columns=[column]))
done.set()
sampler.join()
print(before, max(peak[0], rss()))
"""


def column_peak_mb(how: str, path, column: str) -> float:
    """MB by which a fresh process's resident memory peaks above its level after imports while
    it reads one column of ``path`` to the host (``how``: ``fsstgpu`` with
    ``read_table(columns=)``, else pyarrow's ``pq.read_table(columns=)``). Linux only."""
    import subprocess
    import sys

    root = Path(__file__).resolve().parent.parent
    res = subprocess.run([sys.executable, "-c", _COLUMN_PEAK_CHILD, how, str(path), column],
                         cwd=root, capture_output=True, text=True)
    if res.returncode:
        raise RuntimeError(f"column_peak_mb({how!r}) failed: {res.stderr[-2000:]}")
    before, after = (int(v) for v in res.stdout.split()[-2:])
    return (after - before) / 1e6


def _stream_fsstgpu(path) -> None:
    import cupy as cp

    from fsstgpu.formats.device_reader import stream_to_device

    for _ in stream_to_device(path):
        pass
    cp.cuda.get_current_stream().synchronize()


def bench_table(name: str, table: pa.Table, workdir, *, gpu: bool, repeat: int = 3,
                rows_per_group: int = ROWS_PER_GROUP) -> dict:
    """Every figure of one table (see the module docstring) as one dict."""
    work = Path(workdir)
    strings = _string_columns(table)
    string_bytes = sum(_value_bytes(table.column(n)) for n in strings)
    paths = {f: work / f"{name}.{f}.parquet" for f in FILES}
    row = {"table": name, "rows": table.num_rows,
           "row_groups": -(-table.num_rows // rows_per_group), "string_columns": strings,
           "string_MB": string_bytes / 1e6,
           "write_s": {}, "read_s": {}, "to_gpu_s": {}}

    for codec in ("snappy", "zstd"):
        row["write_s"][codec] = time_wall(
            lambda c=codec: pq.write_table(table, paths[c], compression=c,
                                           row_group_size=rows_per_group), repeat=repeat)

    def compress(dst, **kw):
        if dst.exists():
            os.remove(dst)
        compress_file(paths["snappy"], dst, **kw)

    row["write_s"]["fsstgpu"] = time_wall(lambda: compress(paths["fsstgpu"]), repeat=repeat)
    if gpu:  # the strings encoded on the GPU: the same file (compress_file's device="gpu")
        row["write_s"]["fsstgpu-gpu"] = time_wall(
            lambda: compress(work / f"{name}.gpu.parquet", device="gpu"), repeat=repeat)
    compress(paths["fsstgpu-none"], parquet_codec="none")
    row["write_s"]["transcode_zstd"] = time_wall(
        lambda: pq.write_table(pq.read_table(paths["snappy"]), work / "t.parquet",
                               compression="zstd", row_group_size=rows_per_group), repeat=repeat)

    row["file_MB"] = {f: p.stat().st_size / 1e6 for f, p in paths.items()}
    row["peer_file_MB"] = _peer_sizes(table, work / name)
    row["column_MB"] = {f: {c: v / 1e6 for c, v in column_sizes(p).items()}
                        for f, p in paths.items()}

    for codec in ("snappy", "zstd"):
        row["read_s"][codec] = time_wall(lambda c=codec: pq.read_table(paths[c]), repeat=repeat)
    for f in ("fsstgpu", "fsstgpu-none"):
        row["read_s"][f] = time_wall(lambda f=f: read_table(paths[f], device="cpu"),
                                     repeat=repeat)
    # one column (the largest string one): read time and peak host memory, beside pyarrow's
    big = max(strings, key=lambda c: table.column(c).nbytes) if strings else None
    if big is not None:
        row["column"] = big
        row["column_read_s"] = {
            "zstd": time_wall(lambda: pq.read_table(paths["zstd"], columns=[big]),
                              repeat=repeat),
            "fsstgpu": time_wall(lambda: read_table(paths["fsstgpu"], device="cpu",
                                                    columns=[big]), repeat=repeat)}
        try:
            row["column_peak_MB"] = {"zstd": column_peak_mb("pyarrow", paths["zstd"], big),
                                     "fsstgpu": column_peak_mb("fsstgpu", paths["fsstgpu"],
                                                               big)}
        except RuntimeError as exc:
            row["column_peak_error"] = str(exc)
    if gpu:
        for codec in ("snappy", "zstd"):
            row["to_gpu_s"][codec] = time_wall(
                lambda c=codec: upload_strings(pq.read_table(paths[c]), strings), repeat=repeat)
        for f in ("fsstgpu", "fsstgpu-none"):
            row["to_gpu_s"][f] = time_wall(lambda f=f: _to_gpu_fsstgpu(paths[f]), repeat=repeat)
        row["to_gpu_s"]["fsstgpu-stream"] = time_wall(
            lambda: _stream_fsstgpu(paths["fsstgpu"]), repeat=repeat)
        row["row_group_MB"] = table.slice(0, rows_per_group).nbytes / 1e6
        try:
            peaks = {"pyarrow zstd + upload": peak_memory_mb("pyarrow", paths["zstd"]),
                     "fsstgpu read_table": peak_memory_mb("read_table", paths["fsstgpu"]),
                     "fsstgpu stream": peak_memory_mb("stream", paths["fsstgpu"])}
            row["peak_host_MB"] = {k: host for k, (host, _) in peaks.items()}
            row["peak_device_MB"] = {k: dev for k, (_, dev) in peaks.items()}
        except RuntimeError as exc:  # a figure missing, not the whole run
            row["peak_host_error"] = str(exc)
    return row


def run_files_bench(tables: dict, *, gpu: bool, repeat: int = 3, workdir=None,
                    progress=None) -> list[dict]:
    """:func:`bench_table` of every ``name: table`` in ``tables``; files go to ``workdir`` (a
    temporary folder, removed after, by default).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from benchmarks.files import run_files_bench
    >>> t = pa.table({"s": ["http://a.example/%d" % i for i in range(2000)]})
    >>> [row] = run_files_bench({"urls": t}, gpu=False, repeat=1)
    >>> sorted(row["file_MB"]) == sorted(["snappy", "zstd", "fsstgpu", "fsstgpu-none"])
    True
    >>> format_files_bench([row]).splitlines()[0]
    'urls: 2,000 rows in 1 row groups, 0.0 MB in string columns s'
    """
    if workdir is None:
        with tempfile.TemporaryDirectory() as tmp:
            return run_files_bench(tables, gpu=gpu, repeat=repeat, workdir=tmp,
                                   progress=progress)
    rows = []
    links = bus_bandwidths() if gpu else {}
    for name, table in tables.items():
        if progress is not None:
            progress(f"files: {name} ({table.num_rows:,} rows)")
        rows.append({**bench_table(name, table, workdir, gpu=gpu, repeat=repeat), **links})
    return rows


def bus_bandwidths(nbytes: int = 256 << 20, repeat: int = 5) -> dict:
    """The same run's device copy (read + written) and host-to-device upload bandwidths, GB/s:
    what the ``to_gpu`` rows are read against."""
    import numpy as np

    from fsstgpu.device import get_cupy

    dst = get_cupy().empty(nbytes, np.uint8)
    pageable = np.full(nbytes, 7, np.uint8)
    return {"copy_GBs": copy_bandwidth(1 << 30) / 1e9,
            "upload_pinned_GBs": nbytes / upload_seconds(pinned_like(pageable), dst,
                                                         repeat=repeat) / 1e9,
            "upload_pageable_GBs": nbytes / upload_seconds(pageable, dst, repeat=repeat) / 1e9}


def format_files_bench(rows: list[dict]) -> str:
    """The rows as plain-text tables: sizes per column, then times and throughputs.

    Examples
    --------
    >>> from benchmarks.files import format_files_bench
    >>> format_files_bench([])
    ''
    """
    out = []
    for r in rows:
        out.append(f"{r['table']}: {r['rows']:,} rows in {r['row_groups']} row groups, "
                   f"{r['string_MB']:.1f} MB in string columns {', '.join(r['string_columns'])}")
        cols = list(r["column_MB"]["snappy"])
        out.append(f"  {'MB':<14}" + "".join(f"{f:>13}" for f in FILES))
        for c in cols:
            out.append(f"  {c[:14]:<14}" + "".join(f"{r['column_MB'][f].get(c, 0):13.2f}"
                                              for f in FILES))
        out.append(f"  {'(whole file)':<14}" + "".join(f"{r['file_MB'][f]:13.2f}"
                                                       for f in FILES))
        for peer, mb in r.get("peer_file_MB", {}).items():
            out.append(f"  {peer} (its own format, defaults): {mb:.2f} MB")
        if "copy_GBs" in r:
            out.append(f"  same run: device copy {r['copy_GBs']:.0f} GB/s, upload pinned "
                       f"{r['upload_pinned_GBs']:.1f} GB/s, pageable "
                       f"{r['upload_pageable_GBs']:.1f} GB/s")
        for what in ("write_s", "read_s", "to_gpu_s"):
            if not r[what]:
                continue
            cells = "  ".join(f"{k} {v:.3f} s ({r['string_MB'] / 1e3 / v:.2f} GB/s)"
                              for k, v in r[what].items())
            out.append(f"  {what[:-2]:<8} {cells}")
        if "column_read_s" in r:
            cells = "  ".join(f"{k} {v:.3f} s" for k, v in r["column_read_s"].items())
            peaks = "  ".join(f"{k} +{v:.0f} MB" for k, v in r.get("column_peak_MB", {}).items())
            out.append(f"  column {r['column']!r} alone: {cells}; peak host memory {peaks}")
        if "peak_host_MB" in r:
            cells = "  ".join(f"{k} +{v:.0f} MB" for k, v in r["peak_host_MB"].items())
            out.append(f"  peak host memory onto the GPU (one row group in Arrow: "
                       f"{r['row_group_MB']:.0f} MB): {cells}")
        if "peak_device_MB" in r:
            cells = "  ".join(f"{k} +{v:.0f} MB" for k, v in r["peak_device_MB"].items())
            out.append(f"  peak device pool onto the GPU (strings in Arrow: "
                       f"{r['string_MB']:.0f} MB): {cells}")
    return "\n".join(out)
