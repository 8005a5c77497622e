"""GPU decode benchmark on the dbtext corpus: device-resident decode, ingestion from host memory.

Each file (one string per line, :func:`fsstgpu.datasets.load_lines`) is compressed once on the
CPU and replicated to about ``per_file_bytes`` of strings (:mod:`benchmarks.columns`: a real
compressed column, at memory speed); "overall" is every file laid end to end, replicated to about
``target_bytes``. In the same run, beside the device-to-device copy bandwidth (bytes read plus
written, :func:`benchmarks.timing.copy_bandwidth`):

* device-resident decode (:func:`fsstgpu.to_device` once, then decoded many times): ``decode +
  offsets`` is :func:`fsstgpu.gpu.decode.decode_async` into a reused data buffer (the kernel, the
  offsets scan, the offsets allocation), ``kernel only`` is
  :func:`fsstgpu.kernels.fsst_decode.launch_decode` alone; device time by CUDA events
  (:func:`benchmarks.timing.time_device`, median); throughput = decompressed bytes / time;
* ingestion of the overall column from host memory (:func:`fsstgpu.gpu.decode.decompress_device`
  of a host column: codes uploaded while the layout is built), codes in pageable and in pinned
  memory, beside a plain upload of the uncompressed strings and their Arrow offsets from
  pageable and from pinned memory (the column validated once beforehand, as
  :func:`fsstgpu.compress` and :meth:`~fsstgpu.CompressedStringArray.from_bytes` leave theirs);
  host wall clock including the final synchronisation, median; GB/s counts the strings' bytes
  (a plain upload moves the offsets too); ``vs upload`` is the speed-up over the plain upload
  from the same kind of memory;
* the string lengths both ways (:func:`lengths_rows`, and the ingest rows with default chunks):
  narrow lengths scanned into offsets against bit-plane packed lengths (FBP2) unpacked into
  offsets by one fused kernel;
* nvCOMP's codecs on the overall column's bytes, in a child process of its own
  (:mod:`benchmarks.nvcomp_child`), when ``nvidia.nvcomp`` imports there.

Every decoded output is compared on the device with the strings it must equal.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

import fsstgpu
from benchmarks.columns import concat, replicate
from benchmarks.timing import copy_bandwidth, time_decode, time_device, time_wall
from fsstgpu.arrow_layout import from_arrow
from fsstgpu.datasets import load_lines
from fsstgpu.device import get_cupy
from fsstgpu.gpu.decode import decompress_device
from fsstgpu.kernels.fsst_decode import error_message, launch_decode
from fsstgpu.types import offsets_dtype

#: the checkout's root: the nvCOMP child imports ``benchmarks`` from there
ROOT = Path(__file__).resolve().parent.parent
#: what output buffers hold before a decode: never part of valid UTF-8 (bytes the decoder
#: misses show in the comparison, for text at least)
POISON = 0xFF


def throughput_row(file, what, nbytes, ratio, splits, seconds, copy_bps, vs_upload=None) -> dict:
    """One result: ``nbytes`` of strings in ``seconds``, beside the copy bandwidth ``copy_bps``."""
    gbs = nbytes / seconds / 1e9
    return {"file": file, "variant": what, "bytes": nbytes, "ratio": ratio, "splits": splits,
            "ms": seconds * 1e3, "GB/s": gbs, "copy GB/s": copy_bps / 1e9,
            "of copy": gbs / (copy_bps / 1e9), "vs upload": vs_upload}


def note_row(file, what, nbytes, copy_bps) -> dict:
    """A row that says why something was not measured."""
    nan = float("nan")
    return {"file": file, "variant": what, "bytes": nbytes, "ratio": nan, "splits": 0,
            "ms": nan, "GB/s": nan, "copy GB/s": copy_bps / 1e9, "of copy": nan,
            "vs upload": None}


def _check_output(data, expect: np.ndarray, what: str) -> None:
    """Raise unless device bytes ``data`` are ``expect`` repeated (compared on the device)."""
    cp = get_cupy()
    size = expect.size
    copies = data.size // size if size else 0
    if data.size != copies * size:
        raise RuntimeError(f"{what}: {data.size} bytes decoded, not a multiple of {size}")
    if size and not bool((data.reshape(copies, size) == cp.asarray(expect)).all()):
        raise RuntimeError(f"{what}: the decoded bytes differ from the input")


def _ratio(carrs) -> float:
    """String bytes / (codes + serialised tables) over ``carrs`` (FSST's measure)."""
    stats = [c.stats() for c in carrs]
    size = sum(s["codes_bytes"] + s["table_bytes"] for s in stats)
    return sum(s["uncompressed_bytes"] for s in stats) / max(size, 1)


def decode_rows(name: str, carr, expect: np.ndarray, ratio: float, copy_bps: float, *,
                repeat: int = 10, lengths: bool = True) -> list[dict]:
    """Device-resident decode of ``carr``: with offsets, and the kernel alone; with
    ``lengths``, also :func:`lengths_rows`.

    ``expect`` holds the bytes that the decoded data repeats (one copy's strings).
    """
    cp = get_cupy()
    cp.get_default_memory_pool().free_all_blocks()  # what earlier measurements left
    dev = fsstgpu.to_device(carr)
    out = cp.full(dev.total, POISON, dtype=cp.uint8)
    t_full = time_decode(dev, out, repeat=repeat)
    _check_output(out, expect, f"{name}, decode + offsets")
    out.fill(POISON)  # the kernel-only runs must write every byte again
    err = cp.zeros(1, dtype=cp.int32)

    def kernel():
        launch_decode(dev.codes, dev.ncodes, dev.split_codes, dev.split_out, dev.split_table,
                      dev.tab_sym, dev.tab_len, dev.ntables, out, dev.total, err)

    t_kernel = time_device(kernel, repeat=repeat)
    bits = int(err.get()[0])
    if bits:
        raise fsstgpu.CorruptDataError(error_message(bits))
    _check_output(out, expect, f"{name}, kernel only")
    rows = [throughput_row(name, what, dev.total, ratio, dev.nsplits, t, copy_bps)
            for what, t in (("decode + offsets", t_full), ("kernel only", t_kernel))]
    if lengths:
        rows += lengths_rows(name, carr, dev, out, expect, ratio, copy_bps, repeat=repeat)
    return rows


def lengths_rows(name, carr, dev, out, expect, ratio, copy_bps, *, repeat=10) -> list[dict]:
    """The string lengths on the device, both ways: narrow lengths scanned into offsets (the
    one-pass scan) against bit-plane packed lengths unpacked into offsets by one fused
    kernel; as parts of a whole decode, and the offsets step alone (device time). ``bytes`` of
    the offsets-only rows are the offsets written."""
    from fsstgpu.kernels.bitplane import bitplane_unpack_offsets
    from fsstgpu.kernels.fsst_decode import launch_offsets

    cp = get_cupy()
    packed = fsstgpu.to_device(carr, lengths="bitplane")
    out.fill(POISON)
    t_packed = time_decode(packed, out, repeat=repeat)
    _check_output(out, expect, f"{name}, decode + offsets (bit-plane lengths)")
    col = dev.layout.columns[0]
    offsets = cp.empty(dev.layout.offsets_nbytes, dtype=cp.uint8)
    wide = col.offsets_dtype.itemsize == 8
    err = cp.zeros(1, dtype=cp.int32)
    t_scan = time_device(lambda: launch_offsets(dev.lengths, offsets, *dev.scan_args, err),
                         repeat=repeat)
    expect_offsets = offsets.copy()
    buf = packed.layout.column_packed_lengths(packed.lengths, 0)
    t_fused = time_device(lambda: bitplane_unpack_offsets(buf, offsets, wide=wide, check=False),
                          repeat=repeat)
    if not bool((offsets == expect_offsets).all()):
        raise AssertionError(f"{name}: bit-plane offsets differ from the scan's")
    obytes = (carr.length + 1) * col.offsets_dtype.itemsize
    narrow = dev.lengths.nbytes
    return [
        throughput_row(name, "decode + offsets (bit-plane lengths)", dev.total, ratio,
                       dev.nsplits, t_packed, copy_bps),
        throughput_row(name, f"offsets only: scan of {dev.lengths.dtype} lengths "
                       f"({narrow / 1e6:.1f} MB to upload)", obytes, ratio, 0, t_scan, copy_bps),
        throughput_row(name, f"offsets only: fused bit-plane unpack ({int(buf.size) / 1e6:.1f} MB "
                       "to upload)", obytes, ratio, 0, t_fused, copy_bps)]


def _with_pinned_codes(carr):
    """``carr`` with its codes copied into pinned host memory (the upload then needs no
    staging copy)."""
    import cupyx

    codes = cupyx.empty_pinned(carr.codes.shape, dtype=np.uint8)
    codes[:] = carr.codes
    return fsstgpu.CompressedStringArray(
        type=carr.type, length=carr.length, tables=carr.tables, block_starts=carr.block_starts,
        codes=codes, code_offsets=None, lengths=carr.lengths, validity=carr.validity,
        null_count=carr.null_count, split_size=carr.split_size, split_codes=carr.split_codes,
        split_out=carr.split_out, split_table=carr.split_table)


def ingest_rows(carr, expect: np.ndarray, ratio: float, copy_bps: float, *,
                chunk_sizes=(1 << 20, 4 << 20), nbuffers=(4, 8), repeat: int = 3) -> list[dict]:
    """Host column to device Arrow strings, beside plain uploads of the uncompressed strings."""
    import cupyx

    cp = get_cupy()
    cp.get_default_memory_pool().free_all_blocks()  # what earlier measurements left
    total = carr.uncompressed_bytes
    plain_bytes = total + np.dtype(offsets_dtype(carr.type, total)).itemsize * (carr.length + 1)
    stream = cp.cuda.get_current_stream()
    target = cp.empty(plain_bytes, dtype=cp.uint8)

    def upload(src):
        cp.cuda.runtime.memcpyAsync(target.data.ptr, src.ctypes.data, plain_bytes,
                                    cp.cuda.runtime.memcpyHostToDevice, stream.ptr)
        stream.synchronize()

    uploads = {}
    for label, src in (("pageable", np.empty(plain_bytes, np.uint8)),
                       ("pinned", cupyx.empty_pinned((plain_bytes,), dtype=np.uint8))):
        src[:] = 7  # touch it: never time on unwritten memory
        uploads[label] = time_wall(lambda s=src: upload(s), repeat=repeat)
    rows = [throughput_row("overall", f"plain upload, {label} (uncompressed)", total, 1.0, 0, t,
                           copy_bps, vs_upload=1.0) for label, t in uploads.items()]
    for label, column in (("pageable", carr), ("pinned", _with_pinned_codes(carr))):
        # Checked in full once, as compress and from_bytes leave their columns: otherwise every
        # decompress_device call would time the O(strings) structural checks (~1 s per GiB of
        # dbtext) instead of the transfer.
        column.validate()
        for chunk in chunk_sizes:
            for nb in nbuffers:
                what = f"ingest, codes {label}, pieces {chunk >> 20}MiB x{nb}"
                result = decompress_device(column, chunk_bytes=chunk, nbuffers=nb,
                                           fill=POISON)
                _check_output(result.data, expect, what)
                del result
                t = time_wall(lambda c=column, k=chunk, n=nb: decompress_device(
                    c, chunk_bytes=k, nbuffers=n), repeat=repeat)
                rows.append(throughput_row("overall", what, total, ratio, len(carr.split_table),
                                           t, copy_bps, vs_upload=uploads[label] / t))
        t_pack = time_wall(lambda c=column: _repack(c), repeat=1)  # the first upload's cost
        for lengths in ("narrow", "bitplane"):  # same chunking, lengths the only difference
            what = f"ingest, codes {label}, default chunks, {lengths} lengths"
            result = decompress_device(column, lengths=lengths, fill=POISON)
            _check_output(result.data, expect, what)
            del result
            t = time_wall(lambda c=column, k=lengths: decompress_device(c, lengths=k),
                          repeat=repeat)
            rows.append(throughput_row("overall", what, total, ratio, len(carr.split_table), t,
                                       copy_bps, vs_upload=uploads[label] / t))
        rows.append(throughput_row("overall", "  packing the lengths on the host (once per "
                                   "column; a blob brings them packed)", total, ratio, 0, t_pack,
                                   copy_bps))
    return rows


def _repack(column) -> None:
    from fsstgpu.gpu.layout import packed_lengths

    column.packed_lengths = None
    packed_lengths(column)


def nvcomp_rows(paths, copies: int, nbytes: int, copy_bps: float, *,
                timeout: float = 600) -> list[dict]:
    """nvCOMP's codecs on ``copies`` copies of the files' strings (``nbytes`` in all), run by
    :mod:`benchmarks.nvcomp_child` in a process of its own: a crash inside nvCOMP (a segfault
    was seen at the first call) then costs only these rows. Its output goes to stderr."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(ROOT), env.get("PYTHONPATH"))))
    with tempfile.TemporaryDirectory(prefix="fsstgpu-nvcomp-") as tmp:
        out = Path(tmp) / "rows.json"
        cmd = [sys.executable, "-X", "faulthandler", "-m", "benchmarks.nvcomp_child",
               "--copies", str(copies), "--copy-bps", repr(copy_bps), "--out", str(out),
               *(str(Path(p).resolve()) for p in paths)]
        try:
            proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return [note_row("overall", f"nvCOMP not measured: timed out after {timeout:.0f} s",
                          nbytes, copy_bps)]
        sys.stderr.write(proc.stdout + proc.stderr)
        if proc.returncode == 0 and out.is_file():
            return json.loads(out.read_text())
    return [note_row("overall", f"nvCOMP not measured: its process exited with {proc.returncode} "
                     "(stderr above)", nbytes, copy_bps)]


def run_gpu_bench(paths=None, target_bytes: int = 1 << 30, *, per_file_bytes: int | None = None,
                  per_file: bool = True, ingest: bool = True, nvcomp: bool = True,
                  repeat: int = 10, progress=None) -> list[dict]:
    """Benchmark GPU decoding on line files; return one dict per measurement.

    Parameters
    ----------
    paths : list of path-like, optional
        Text files, one string per line (default: every dbtext file found,
        :func:`fsstgpu.datasets.dbtext_files`).
    target_bytes : int
        Uncompressed bytes of the overall (all files) column.
    per_file_bytes : int, optional
        Uncompressed bytes each file is replicated to (default ``target_bytes // 2``).
    per_file : bool
        Also decode each file on its own.
    ingest, nvcomp : bool
        Also measure ingestion from host memory / nvCOMP's codecs (module docstring).
    repeat : int
        Timed runs per device-resident figure (the median counts).
    progress : callable, optional
        Called with a message before each step.

    Returns
    -------
    list of dict
        Keys: file, variant (what was measured), bytes, ratio, splits, ms, GB/s, copy GB/s,
        of copy (GB/s over copy GB/s), vs upload (ingestion: speed-up over the plain upload).
    """
    from fsstgpu.datasets import dbtext_files

    say = progress or (lambda msg: None)
    paths = [Path(p) for p in paths] if paths is not None else dbtext_files()
    if not paths:
        raise FileNotFoundError("no dbtext files found (set FSSTGPU_DBTEXT)")
    per_file_bytes = per_file_bytes or target_bytes // 2
    get_cupy()
    say("copy bandwidth")
    copy_bps = copy_bandwidth(min(target_bytes, 1 << 30))
    rows, carrs, raws = [], [], []
    for path in paths:
        say(f"compress {path.name}")
        col = load_lines(path)
        carr = fsstgpu.compress(col)
        raw = from_arrow(col).data
        carrs.append(carr)
        raws.append(raw)
        if per_file and raw.size:
            copies = -(-per_file_bytes // raw.size)
            say(f"decode {path.name} x{copies}")
            rows += decode_rows(path.name, replicate(carr, copies), raw, _ratio([carr]),
                                copy_bps, repeat=repeat)
    one = np.concatenate(raws)
    copies = max(1, -(-target_bytes // max(one.size, 1)))
    say(f"overall x{copies}")
    overall = replicate(concat(carrs), copies)
    ratio = _ratio(carrs)
    rows += decode_rows("overall", overall, one, ratio, copy_bps, repeat=repeat)
    if ingest:
        say("ingest")
        rows += ingest_rows(overall, one, ratio, copy_bps)
    if nvcomp:
        say("nvCOMP (child process)")
        del overall
        cp = get_cupy()  # the child gets the device memory this process holds in its pools
        cp.get_default_memory_pool().free_all_blocks()
        cp.get_default_pinned_memory_pool().free_all_blocks()
        rows += nvcomp_rows(paths, copies, copies * one.size, copy_bps)
    return rows


def format_gpu_bench(rows):
    """Render :func:`run_gpu_bench` rows as a rich Table (missing figures as ``-``).

    Examples
    --------
    >>> from benchmarks.gpu import format_gpu_bench
    >>> row = {"file": "x", "variant": "kernel only", "bytes": 2**30, "ratio": 2.0,
    ...        "splits": 9, "ms": 2.0, "GB/s": 537.0, "copy GB/s": 4000.0, "of copy": 0.134,
    ...        "vs upload": None}
    >>> format_gpu_bench([row]).row_count
    1
    """
    from rich.table import Table

    def cell(value, spec):
        if value is None or (isinstance(value, float) and value != value):  # None or NaN
            return "-"
        return format(value, spec)

    table = Table(title="GPU FSST decode (device-resident unless noted), beside the same run's "
                        "device copy (read + written)")
    cols = (("file", None, ""), ("variant", None, ""), ("MiB", "bytes", ".0f"),
            ("ratio", "ratio", ".2f"), ("splits", "splits", "d"), ("ms", "ms", ".3f"),
            ("GB/s", "GB/s", ".1f"), ("copy GB/s", "copy GB/s", ".0f"),
            ("of copy", "of copy", ".1%"), ("vs upload", "vs upload", ".2f"))
    for header, key, _ in cols:
        table.add_column(header, justify="left" if key is None else "right")
    for r in rows:
        cells = []
        for header, key, spec in cols:
            if key is None:
                cells.append(str(r.get(header, "")))
            elif key == "bytes":
                cells.append(cell(r.get(key, 0) / 2**20, spec))
            else:
                cells.append(cell(r.get(key), spec))
        table.add_row(*cells)
    return table
