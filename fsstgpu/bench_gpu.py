"""GPU decode benchmark on the dbtext corpus: decode throughput, copy yardstick, ingestion rate.

Each dbtext file (one string per line, newline dropped) is compressed once on the CPU; its
compressed column is then replicated on the host (codes, lengths and split points tiled with
shifted positions: strings are compressed independently, so the copies are a valid column) to
about ``target_bytes`` of strings, uploaded once, and decoded from device memory into device
memory (Arrow offsets included) many times. Throughput = decompressed bytes / device time (CUDA
events, median), printed beside the same run's device-to-device copy bandwidth (bytes read plus
written). The "overall" row concatenates every file (one table per file) to ``target_bytes``.

Ingestion ("of copy" is then the speed-up over the plain upload): the overall column is
uploaded from pinned host memory chunk by chunk with decoding overlapped
(:func:`fsstgpu.ingest.ingest`), timed on the host wall clock including the final
synchronisation, against a plain pinned upload of the uncompressed strings and their offsets.
nvCOMP codecs are timed on the same bytes when ``nvidia.nvcomp`` imports.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from fsstgpu.device import get_cupy


class _Column:
    """A carr-like compressed column (the fields :class:`~fsstgpu.device_array.HostPrepared`
    reads), built by replication; already validated at compression."""

    def __init__(self, type_, tables, codes, lengths, split_codes, split_out, split_table):
        self.type = type_
        self.tables = tuple(tables)
        self.codes = codes
        self.lengths = lengths
        self.length = len(lengths)
        self.validity = None
        self.null_count = 0
        self.chunk_lengths = None
        self.split_codes = split_codes
        self.split_out = split_out
        self.split_table = split_table


def _read_lines(path) -> pa.Array:
    lines = path.read_bytes().split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return pa.array(lines, pa.binary())


def _concat(parts, type_=pa.binary()) -> _Column:
    """Concatenate compressed columns (each with its own tables) into one."""
    tables, codes, lengths, scs, sos, sts = [], [], [], [], [], []
    cbase = obase = 0
    for p in parts:
        codes.append(p.codes)
        lengths.append(np.asarray(p.lengths))
        scs.append(np.asarray(p.split_codes[:-1]) + cbase)
        sos.append(np.asarray(p.split_out[:-1]) + obase)
        sts.append(np.asarray(p.split_table).astype(np.uint16) + len(tables))
        tables.extend(p.tables)
        cbase += len(p.codes)
        obase += int(p.split_out[-1])
    return _Column(type_, tables, np.concatenate(codes), np.concatenate(lengths),
                   np.concatenate(scs + [np.array([cbase])]).astype(np.int64),
                   np.concatenate(sos + [np.array([obase])]).astype(np.int64),
                   np.concatenate(sts).astype(np.uint16))


def _replicate(carr, copies: int) -> _Column:
    """``copies`` copies of one compressed column, sharing its tables."""
    n = len(carr.split_table)
    ncodes, total = len(carr.codes), int(carr.split_out[-1])
    reps = np.arange(copies, dtype=np.int64)
    sc = (np.asarray(carr.split_codes[:-1])[None, :] + reps[:, None] * ncodes).ravel()
    so = (np.asarray(carr.split_out[:-1])[None, :] + reps[:, None] * total).ravel()
    return _Column(pa.binary(), carr.tables, np.tile(carr.codes, copies),
                   np.tile(np.asarray(carr.lengths), copies),
                   np.append(sc, ncodes * copies), np.append(so, total * copies),
                   np.tile(np.asarray(carr.split_table, np.uint16), copies)[: n * copies])


def _decode_time(dev, variant, out, *, with_offsets: bool, repeat: int = 10) -> float:
    from fsstgpu.device_array import decode_async
    from fsstgpu.kernels._timing import time_device
    from fsstgpu.kernels.fsst_decode import launch_decode

    cp = get_cupy()
    err = cp.zeros(1, cp.int32)
    if with_offsets:
        jobs = []

        def run():
            # Keep only the last two results: retaining every one would make each repeat
            # cudaMalloc fresh offsets (hundreds of MB) instead of reusing the pool's blocks.
            jobs.append(decode_async(dev, variant=variant, out=out))
            del jobs[:-2]
    else:
        def run():
            launch_decode(dev.codes, dev.ncodes, dev.split_codes, dev.split_out, dev.split_table,
                          dev.tab_sym, dev.tab_len, dev.ntables, out, dev.total, err,
                          variant=variant)
    seconds = time_device(run, repeat=repeat)
    if with_offsets:
        for job in jobs[-2:]:
            job.check()
    elif int(err.get()[0]):
        from fsstgpu.kernels.fsst_decode import error_message

        raise RuntimeError(error_message(int(err.get()[0])))
    return seconds


def _bench_column(name, col, ratio, copy_bw, variants, *, repeat=10) -> list[dict]:
    from fsstgpu.device_array import DeviceCompressedStringArray, HostPrepared

    cp = get_cupy()
    prep = HostPrepared(col)
    dev = DeviceCompressedStringArray(prep)
    out = cp.empty(dev.total, dtype=cp.uint8)
    rows = []
    for variant in variants:
        for with_offsets in (True, False):
            t = _decode_time(dev, variant, out, with_offsets=with_offsets, repeat=repeat)
            gbs = dev.total / t / 1e9
            rows.append({
                "file": name, "variant": variant + ("" if with_offsets else " (kernel only)"),
                "bytes": dev.total, "ratio": ratio, "splits": dev.nsplits,
                "ms": t * 1e3, "GB/s": gbs, "copy GB/s": copy_bw / 1e9,
                "of copy": gbs / (copy_bw / 1e9),
            })
    del dev, out
    cp.get_default_memory_pool().free_all_blocks()
    return rows


def _ingest_rows(col, ratio, copy_bw, *, chunk_sizes=(16 << 20, 64 << 20), repeat=3):
    """Pinned-source ingestion (upload + decode overlapped) vs a plain pinned upload."""
    import cupyx

    from fsstgpu.device_array import HostPrepared
    from fsstgpu.ingest import ingest, pin

    cp = get_cupy()
    prep = HostPrepared(col)
    total = prep.total
    rows = []
    # the yardstick: the uncompressed strings and int32/int64 offsets, from pinned memory
    from fsstgpu.device_array import _offsets_dtype

    offset_bytes = np.dtype(_offsets_dtype(prep.type, total)).itemsize * (prep.length + 1)
    plain = cupyx.empty_pinned((total + offset_bytes,), dtype=np.uint8)
    plain[:] = 7
    dplain = cp.empty(plain.shape, dtype=cp.uint8)
    stream = cp.cuda.get_current_stream()
    times = []
    for _ in range(repeat):
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record(stream)
        cp.cuda.runtime.memcpyAsync(dplain.data.ptr, plain.ctypes.data, plain.nbytes,
                                    cp.cuda.runtime.memcpyHostToDevice, stream.ptr)
        stop.record(stream)
        stop.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, stop) / 1e3)
    up = statistics.median(times)
    rows.append({"file": "overall", "variant": "plain pinned upload (uncompressed)",
                 "bytes": total, "ratio": 1.0, "splits": 0, "ms": up * 1e3,
                 "GB/s": total / up / 1e9, "copy GB/s": copy_bw / 1e9, "of copy": float("nan")})
    del dplain, plain
    for label, p in (("pinned", pin(prep)),):
        for chunk in chunk_sizes:
            for nstreams in (2, 3):
                ingest(p, chunk_bytes=chunk, nstreams=nstreams)  # warm-up (and correctness)
                times = []
                for _ in range(repeat):
                    cp.cuda.get_current_stream().synchronize()
                    t0 = time.perf_counter()
                    res = ingest(p, chunk_bytes=chunk, nstreams=nstreams)
                    times.append(time.perf_counter() - t0)
                    del res
                t = statistics.median(times)
                rows.append({"file": "overall",
                             "variant": f"ingest {label} chunk={chunk >> 20}MiB x{nstreams}",
                             "bytes": total, "ratio": ratio, "splits": len(prep.split_table),
                             "ms": t * 1e3, "GB/s": total / t / 1e9,
                             "copy GB/s": copy_bw / 1e9, "of copy": up / t})
    prep = HostPrepared(col)  # pageable again: the staged path
    ingest(prep, chunk_bytes=chunk_sizes[-1])  # warm-up: allocates the pinned staging buffers
    t0 = time.perf_counter()
    ingest(prep, chunk_bytes=chunk_sizes[-1])
    t = time.perf_counter() - t0
    rows.append({"file": "overall", "variant": "ingest pageable (staged)", "bytes": total,
                 "ratio": ratio, "splits": len(prep.split_table), "ms": t * 1e3,
                 "GB/s": total / t / 1e9, "copy GB/s": copy_bw / 1e9,
                 "of copy": up / t})
    cp.get_default_memory_pool().free_all_blocks()
    return rows


def _nvcomp_rows(data: np.ndarray, copy_bw: float) -> list[dict]:
    try:
        from nvidia import nvcomp
    except Exception:
        return []
    cp = get_cupy()
    from fsstgpu.kernels._timing import time_device

    rows = []
    dev = cp.asarray(data)
    arr = nvcomp.as_array(dev)
    # nvCOMP's Codec otherwise works on an internal stream of its own, which CUDA events recorded
    # on ours would not measure: give it ours.
    stream = cp.cuda.Stream(non_blocking=True)
    for algo in ("LZ4", "Snappy", "GDeflate", "Zstd", "ANS"):
        try:
            codec = nvcomp.Codec(algorithm=algo, cuda_stream=stream.ptr)
            comp = codec.encode(arr)
            stream.synchronize()
            t = time_device(lambda c=codec, x=comp: c.decode(x), repeat=5, stream=stream)
            ratio = data.nbytes / comp.buffer_size
        except Exception as exc:  # one codec failing must not hide the others
            rows.append({"file": "overall", "variant": f"nvCOMP {algo} failed: {exc}",
                         "bytes": data.nbytes, "ratio": float("nan"), "splits": 0,
                         "ms": float("nan"), "GB/s": float("nan"),
                         "copy GB/s": copy_bw / 1e9, "of copy": float("nan")})
            continue
        gbs = data.nbytes / t / 1e9
        rows.append({"file": "overall", "variant": f"nvCOMP {algo}", "bytes": data.nbytes,
                     "ratio": ratio, "splits": 0, "ms": t * 1e3, "GB/s": gbs,
                     "copy GB/s": copy_bw / 1e9, "of copy": gbs / (copy_bw / 1e9)})
    return rows


def run_gpu_bench(paths=None, target_bytes: int = 1 << 30, *, per_file_bytes: int | None = None,
                  variants=None, ingest: bool = True, nvcomp: bool = True,
                  split_sweep=(), sweep_variants=None, per_file: bool = True,
                  progress=None) -> list[dict]:
    """Benchmark GPU decoding on the dbtext corpus; return one dict per measurement.

    Parameters
    ----------
    paths : list of pathlib.Path, optional
        The files (default: every dbtext file found, see :func:`fsstgpu.datasets.dbtext_files`).
    target_bytes : int
        Uncompressed bytes of the overall (all files) column.
    per_file_bytes : int, optional
        Uncompressed bytes each file is replicated to (default ``target_bytes // 2``).
    variants : sequence of str, optional
        Kernel variants (:data:`fsstgpu.kernels.fsst_decode.VARIANTS`); default: the default one.
    split_sweep : sequence of int
        Also decode the overall column with its splits cut finer, to these sizes (bytes).
    sweep_variants : sequence of str, optional
        The variants decoded with the finer splits (default: the default one).
    per_file : bool
        Also decode each file on its own (replicated to ``per_file_bytes``).
    ingest, nvcomp : bool
        Also measure host-to-device ingestion / nvCOMP codecs (when importable).
    progress : callable, optional
        Called with a message before each step.

    Returns
    -------
    list of dict
        Keys: file, variant, bytes, ratio, splits, ms, GB/s, copy GB/s, of copy.
    """
    import fsstgpu
    from fsstgpu.datasets import dbtext_files
    from fsstgpu.kernels._timing import copy_bandwidth
    from fsstgpu.kernels.fsst_decode import DEFAULT_VARIANT

    say = progress or (lambda msg: None)
    paths = [Path(p) for p in paths] if paths is not None else dbtext_files()
    if not paths:
        raise FileNotFoundError("no dbtext files found (set FSSTGPU_DBTEXT)")
    variants = tuple(variants or (DEFAULT_VARIANT,))
    per_file_bytes = per_file_bytes or target_bytes // 2
    say("copy bandwidth")
    copy_bw = copy_bandwidth(min(target_bytes, 1 << 30))
    rows = []
    compressed = []
    raw_total = comp_total = 0
    for path in paths:
        say(f"compress {path.name}")
        col = _read_lines(path)
        carr = fsstgpu.compress(col)
        nbytes = int(carr.split_out[-1])
        ratio = nbytes / max(1, len(carr.codes) + sum(t.nbytes_serialised() for t in carr.tables))
        raw_total += nbytes
        comp_total += len(carr.codes) + sum(t.nbytes_serialised() for t in carr.tables)
        compressed.append(carr)
        copies = max(1, -(-per_file_bytes // max(nbytes, 1)))
        if per_file:
            say(f"decode {path.name} x{copies}")
            rows += _bench_column(path.name, _replicate(carr, copies), ratio, copy_bw, variants)
    ratio = raw_total / max(comp_total, 1)
    copies = max(1, -(-target_bytes // max(raw_total, 1)))
    say(f"overall x{copies}")
    overall = _concat([_replicate(c, 1) for c in compressed] * copies)
    rows += _bench_column("overall", overall, ratio, copy_bw, variants)
    for size in split_sweep:
        from fsstgpu.kernels.fsst_decode import refine_splits

        say(f"overall, splits of {size} bytes")
        sc, so, st = refine_splits(overall.codes, overall.split_codes, overall.split_out,
                                   overall.split_table, overall.tables, size)
        finer = _Column(overall.type, overall.tables, overall.codes, overall.lengths, sc, so, st)
        for row in _bench_column("overall", finer, ratio, copy_bw,
                                 tuple(sweep_variants or (DEFAULT_VARIANT,))):
            row["variant"] += f" S={size}"
            rows.append(row)
    if ingest:
        say("ingest")
        rows += _ingest_rows(overall, ratio, copy_bw)
    if nvcomp:
        say("nvcomp")
        data = np.concatenate([np.frombuffer(p.read_bytes().replace(b"\n", b""), np.uint8)
                               for p in paths] * copies)
        rows += _nvcomp_rows(data, copy_bw)
    return rows


def format_gpu_bench(rows):
    """Render :func:`run_gpu_bench` rows as a rich Table."""
    from rich.table import Table

    table = Table(title="GPU FSST decode (device-resident unless noted)")
    for col in ("file", "variant", "MiB", "ratio", "splits", "ms", "GB/s", "copy GB/s",
                "of copy"):
        table.add_column(col, justify="left" if col in ("file", "variant") else "right")
    for r in rows:
        table.add_row(r["file"], r["variant"], f"{r['bytes'] / 2**20:.0f}", f"{r['ratio']:.2f}",
                      str(r["splits"]), f"{r['ms']:.3f}", f"{r['GB/s']:.1f}",
                      f"{r['copy GB/s']:.0f}", f"{r['of copy']:.1%}")
    return table
