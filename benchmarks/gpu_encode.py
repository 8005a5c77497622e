"""GPU FSST encoding (issue #25's first step) beside the CPU encoder, on dbtext laid end to end.

For each size: one table trained on the CPU (timed), then

* the device encode alone (strings already on the GPU: both kernel passes, the prefix sum and
  the read of the codes' size), CUDA events, median; GB/s of input string bytes;
* ``fsstgpu.compress_device`` of the device strings, wall clock (its result stays on the
  device: the split points planned there), the same call without a table (trained on the CPU
  from a sample gathered on the device: issue #25's "training included"), and its
  ``to_host()`` (wall clock);
* ``fsstgpu.compress(column, table=table)`` on the CPU's cores, wall clock (best of the runs),
  and a pinned upload of the strings (median, as every upload yardstick:
  :func:`benchmarks.timing.upload_seconds`);

and the codes compared with the CPU's at every size; then a table a block (``level="fast"``:
the kernels with the tables given, ``compress_device(level="fast")`` with its sampling and
training, and ``fsstgpu.compress(level="fast")`` on the CPU, whose column it must equal, with
the ratios); then long strings (the same bytes cut into
strings of 64 KiB and 4 MiB, 256 MiB in all): the device encode with long strings in chunks
(the default) and with one thread a string (``long_min=None``), CUDA events, codes compared
with the CPU's, and ``compress_device`` of them (wall clock: the cuts inside long strings
found by the encode); then nvCOMP's compressors (LZ4, Snappy,
GDeflate, zstd, ANS, Cascaded) on the same corpus cut to the same sizes, device-resident, CUDA
events around their ``encode``, with their ratios (a child process, as for the decode sweep).
``fsstgpu bench --device gpu`` prints this table after the size sweep.

Usage: ``python -m benchmarks.gpu_encode [--json FILE] [--no-nvcomp]`` from the checkout's root.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

import fsstgpu
from benchmarks.gpu_sizes import corpus, nvcomp_rows
from benchmarks.timing import copy_bandwidth, pinned_like, time_device, upload_seconds
from fsstgpu.device import get_cupy
from fsstgpu.kernels.encode_chunks import LONG_MIN
from fsstgpu.kernels.fsst_encode import device_lookups, encode_on_device, many_lookups

MIB = 1 << 20
SIZES = (16 * MIB, 256 * MIB, 1024 * MIB)


def column_of(strings: pa.Array, size: int) -> pa.Array:
    """``strings`` repeated and cut to about ``size`` bytes (whole strings)."""
    nbytes = strings.buffers()[2].size
    copies = -(-size // nbytes)
    col = pa.concat_arrays([strings] * copies) if copies > 1 else strings
    ends = np.frombuffer(col.buffers()[1], np.int64 if pa.types.is_large_binary(col.type)
                         else np.int32)[col.offset + 1 : col.offset + len(col) + 1]
    return col[: int(np.searchsorted(ends, size)) + 1]


def _wall(fn, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def size_row(strings: pa.Array, size: int, copy_bps: float, repeat: int) -> dict:
    """The figures of one size (see the module's docstring)."""
    cp = get_cupy()
    col = column_of(strings, size)
    t0 = time.perf_counter()
    table = fsstgpu.train(col)
    train_s = time.perf_counter() - t0
    offs = np.frombuffer(col.buffers()[1], np.int64)[col.offset : col.offset + len(col) + 1]
    data = np.frombuffer(col.buffers()[2], np.uint8)[int(offs[0]) : int(offs[-1])]
    nbytes = int(offs[-1] - offs[0])
    d_data = cp.asarray(data)
    d_offs = cp.asarray(offs - offs[0])
    look = device_lookups(table)
    kernel_s = time_device(lambda: encode_on_device(table, d_data, d_offs, lookups=look),
                           repeat=repeat)
    dev = fsstgpu.DeviceStringArray(col.type, len(col), d_offs, d_data, None, 0)
    gpu = fsstgpu.compress_device(dev, table)
    stream = cp.cuda.get_current_stream()
    call_s = _wall(lambda: (fsstgpu.compress_device(dev, table), stream.synchronize()), repeat)
    # issue #25's "training included": the table trained on the CPU from a sample the call
    # gathers on the device (what compress_device(strings) does without a table)
    trained_s = _wall(lambda: (fsstgpu.compress_device(dev), stream.synchronize()), repeat)
    host_s = _wall(lambda: gpu.to_host(), max(1, repeat // 2))
    gpu = gpu.to_host()
    cpu = fsstgpu.compress(col, table=table)
    cpu_s = _wall(lambda: fsstgpu.compress(col, table=table), max(1, repeat // 2))
    same = bool(np.array_equal(np.asarray(gpu.codes), np.asarray(cpu.codes)) and gpu.equals(cpu))
    up_s = upload_seconds(pinned_like(data), d_data, repeat=repeat)
    return {"MiB": nbytes / MIB, "strings": len(col), "ratio": cpu.stats()["ratio"],
            "train ms": train_s * 1e3,
            "GPU encode GB/s (device-resident, kernels)": nbytes / kernel_s / 1e9,
            "compress_device GB/s (device-resident result)": nbytes / call_s / 1e9,
            "compress_device GB/s, trained from the device column": nbytes / trained_s / 1e9,
            "to_host GB/s": nbytes / host_s / 1e9,
            "CPU compress GB/s (same table, all cores)": nbytes / cpu_s / 1e9,
            "pinned upload GB/s": nbytes / up_s / 1e9, "copy GB/s": copy_bps / 1e9,
            "same codes": same}


def fast_rows(strings: pa.Array, size: int, repeat: int) -> list[dict]:
    """A table a block (``level="fast"``, issue #25's ratio): the device encode alone with the
    blocks' tables given (CUDA events), ``compress_device(level="fast")`` with its sampling on
    the device and training on the CPU (wall clock), and ``fsstgpu.compress(level="fast")`` on
    the CPU's cores (wall clock), whose column the device's must equal."""
    cp = get_cupy()
    col = column_of(strings, size)
    offs = np.frombuffer(col.buffers()[1], np.int64)[col.offset : col.offset + len(col) + 1]
    data = np.frombuffer(col.buffers()[2], np.uint8)[int(offs[0]) : int(offs[-1])]
    d_data, d_offs = cp.asarray(data), cp.asarray(offs - offs[0])
    dev = fsstgpu.DeviceStringArray(col.type, len(col), d_offs, d_data, None, 0)
    stream = cp.cuda.get_current_stream()
    host = fsstgpu.compress_device(dev, level="fast").to_host()
    tables, starts = list(host.tables), host.block_starts
    look = many_lookups(tables, starts) if len(tables) > 1 else device_lookups(tables[0])
    several = starts if len(tables) > 1 else None
    kernel_s = time_device(lambda: encode_on_device(
        tables if several is not None else tables[0], d_data, d_offs, lookups=look,
        block_starts=several), repeat=repeat)
    call_s = _wall(lambda: (fsstgpu.compress_device(dev, level="fast"), stream.synchronize()),
                   repeat)
    t0 = time.perf_counter()
    cpu = fsstgpu.compress(col, level="fast")
    cpu_s = time.perf_counter() - t0
    same = "" if host.equals(cpu) else " (COLUMN DIFFERS FROM THE CPU'S)"
    ratio, mib = host.stats()["ratio"], data.size / MIB
    return [{"what": f"fsstgpu level=fast, kernels ({len(tables)} tables given){same}",
             "MiB": mib, "GB/s": data.size / kernel_s / 1e9, "ratio": ratio},
            {"what": "fsstgpu level=fast, compress_device with training (wall clock)",
             "MiB": mib, "GB/s": data.size / call_s / 1e9, "ratio": ratio},
            {"what": "CPU compress level=fast, all cores (wall clock, one run)", "MiB": mib,
             "GB/s": data.size / cpu_s / 1e9, "ratio": cpu.stats()["ratio"]}]


def long_rows(strings: pa.Array, size: int, repeat: int) -> list[dict]:
    """The device encode of ``strings``' bytes cut into long strings, with and without chunks
    (see the module's docstring)."""
    cp = get_cupy()
    col = column_of(strings, size)
    table = fsstgpu.train(col)
    offs = np.frombuffer(col.buffers()[1], np.int64)[col.offset : col.offset + len(col) + 1]
    data = np.frombuffer(col.buffers()[2], np.uint8)[int(offs[0]) : int(offs[-1])]
    d_data = cp.asarray(data)
    look = device_lookups(table)
    rows = []
    for string_bytes in (64 << 10, 4 * MIB):
        bounds = np.append(np.arange(0, data.size, string_bytes), data.size).astype(np.int64)
        d_offs = cp.asarray(bounds)
        want = fsstgpu.native.encode_blocks([table], data, bounds, np.array([0, len(bounds) - 1]))
        for name, long_min in (("in chunks", LONG_MIN), ("one thread a string", None)):
            codes, _ = encode_on_device(table, d_data, d_offs, lookups=look, long_min=long_min)
            same = codes.get().tobytes() == want[0].tobytes()
            secs = time_device(lambda lm=long_min, offs=d_offs: encode_on_device(
                table, d_data, offs, lookups=look, long_min=lm), repeat=repeat)
            what = f"fsstgpu, {string_bytes >> 10} KiB strings, {name}"
            rows.append({"what": what + ("" if same else " (CODES DIFFER)"),
                         "MiB": data.size / MIB, "GB/s": data.size / secs / 1e9,
                         "ratio": data.size / max(1, codes.size)})
        dev = fsstgpu.DeviceStringArray(pa.large_binary(), len(bounds) - 1, d_offs, d_data,
                                        None, 0)
        call_s = _wall(lambda d=dev: (fsstgpu.compress_device(d, table),
                                      cp.cuda.get_current_stream().synchronize()), repeat)
        rows.append({"what": f"fsstgpu, {string_bytes >> 10} KiB strings, compress_device "
                             "(wall clock)", "MiB": data.size / MIB,
                     "GB/s": data.size / call_s / 1e9})
    return rows


def run(repeat: int = 5, nvcomp: bool = True, progress=None) -> list[dict]:
    """One row a size (:func:`size_row`), then nvCOMP's compressors on the same corpus cut to
    the same sizes, in a child process (:func:`benchmarks.gpu_sizes.nvcomp_rows`)."""
    say = progress or (lambda msg: None)
    cp = get_cupy()
    copy_bps = copy_bandwidth(1 << 30)
    strings = corpus().cast(pa.large_binary())
    rows = []
    for size in SIZES:
        say(f"encode: {size // MIB} MiB")
        rows.append(size_row(strings, size, copy_bps, repeat))
        cp.get_default_memory_pool().free_all_blocks()
    for size in SIZES:
        say(f"encode: {size // MIB} MiB, a table a block")
        rows += fast_rows(strings, size, repeat)
        cp.get_default_memory_pool().free_all_blocks()
    say("encode: long strings")
    rows += long_rows(strings, 256 * MIB, max(3, repeat // 2))
    cp.get_default_memory_pool().free_all_blocks()
    if nvcomp:
        say("encode: nvCOMP's compressors (child process)")
        cp.get_default_pinned_memory_pool().free_all_blocks()
        rows += nvcomp_rows(copy_bps, SIZES, "", encode=True)
    return rows


ENCODE_COLUMNS = (("MiB", "MiB", ".0f"), ("ratio", "ratio", ".2f"), ("train ms", "train ms", ".1f"),
                  ("GPU encode GB/s", "GPU encode GB/s (device-resident, kernels)", ".1f"),
                  ("compress_device GB/s", "compress_device GB/s (device-resident result)",
                   ".1f"),
                  ("with training GB/s", "compress_device GB/s, trained from the device column",
                   ".1f"),
                  ("to_host GB/s", "to_host GB/s", ".2f"),
                  ("CPU GB/s", "CPU compress GB/s (same table, all cores)", ".2f"),
                  ("pinned upload GB/s", "pinned upload GB/s", ".1f"))


def format_encode(rows: list[dict]):
    """Render :func:`run`'s rows as a rich Table: fsstgpu's rows, then nvCOMP's.

    Examples
    --------
    >>> from benchmarks.gpu_encode import format_encode
    >>> format_encode([{"MiB": 16.0, "ratio": 1.5, "GPU encode GB/s (device-resident, "
    ...                 "kernels)": 47.5, "same codes": True, "copy GB/s": 4000.0},
    ...                {"what": "nvCOMP LZ4 compress", "MiB": 16.0, "GB/s": 30.0,
    ...                 "ratio": 1.3}]).row_count
    2
    """
    from rich.table import Table

    table = Table(title="GPU compression of dbtext laid end to end (one table, trained on the "
                        "CPU), beside the CPU encoder and nvCOMP's compressors on the same bytes; "
                        "the same bytes as long strings")
    table.add_column("what", justify="left")
    for header, _, _ in ENCODE_COLUMNS:
        table.add_column(header, justify="right")
    for r in rows:
        if "what" in r:  # long strings, nvCOMP: their GB/s in the GPU encode column
            cells = {"MiB": r.get("MiB"), "ratio": r.get("ratio"),
                     "GPU encode GB/s (device-resident, kernels)": r.get("GB/s")}
            what = r["what"]
        else:
            cells, what = r, "fsstgpu" + ("" if r.get("same codes") else " (CODES DIFFER)")
        table.add_row(what, *("-" if cells.get(key) is None else format(cells[key], spec)
                              for _, key, spec in ENCODE_COLUMNS))
    copy = next((r["copy GB/s"] for r in rows if r.get("copy GB/s")), None)
    if copy:
        table.caption = f"device copy (read + written) in this run: {copy:.0f} GB/s"
    return table


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument("--no-nvcomp", action="store_true")
    args = parser.parse_args(argv)
    rows = run(nvcomp=not args.no_nvcomp)
    for r in rows:
        print(json.dumps(r, default=str))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
