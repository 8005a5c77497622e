"""GPU FSST encoding (issue #25's first step) beside the CPU encoder, on dbtext laid end to end.

For each size: one table trained on the CPU (timed), then

* the device encode alone (strings already on the GPU: both kernel passes, the prefix sum and
  the read of the codes' size), CUDA events, median; GB/s of input string bytes;
* ``fsstgpu.compress_device`` of the device strings, wall clock (the codes and offsets copied
  back, the split points planned on the host);
* ``fsstgpu.compress(column, table=table)`` on the CPU's cores, wall clock (best of the runs),
  and a pinned upload of the strings (median, as every upload yardstick:
  :func:`benchmarks.timing.upload_seconds`);

and the codes compared with the CPU's at every size.

Usage: ``python -m benchmarks.gpu_encode [--json FILE]`` from the checkout's root.
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
from benchmarks.gpu_sizes import corpus
from benchmarks.timing import copy_bandwidth, pinned_like, time_device, upload_seconds
from fsstgpu.device import get_cupy
from fsstgpu.kernels.fsst_encode import encode_lookups, encode_on_device

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
    look = {k: cp.asarray(v) for k, v in encode_lookups(table).items()}
    kernel_s = time_device(lambda: encode_on_device(table, d_data, d_offs, lookups=look),
                           repeat=repeat)
    dev = fsstgpu.DeviceStringArray(col.type, len(col), d_offs, d_data, None, 0)
    gpu = fsstgpu.compress_device(dev, table)
    call_s = _wall(lambda: fsstgpu.compress_device(dev, table), repeat)
    cpu = fsstgpu.compress(col, table=table)
    cpu_s = _wall(lambda: fsstgpu.compress(col, table=table), max(1, repeat // 2))
    same = bool(np.array_equal(np.asarray(gpu.codes), np.asarray(cpu.codes)) and gpu.equals(cpu))
    up_s = upload_seconds(pinned_like(data), d_data, repeat=repeat)
    return {"MiB": nbytes / MIB, "strings": len(col), "ratio": cpu.stats()["ratio"],
            "train ms": train_s * 1e3,
            "GPU encode GB/s (device-resident, kernels)": nbytes / kernel_s / 1e9,
            "compress_device GB/s (codes back, splits on host)": nbytes / call_s / 1e9,
            "CPU compress GB/s (same table, all cores)": nbytes / cpu_s / 1e9,
            "pinned upload GB/s": nbytes / up_s / 1e9, "copy GB/s": copy_bps / 1e9,
            "same codes": same}


def run(repeat: int = 5) -> list[dict]:
    cp = get_cupy()
    copy_bps = copy_bandwidth(1 << 30)
    strings = corpus().cast(pa.large_binary())
    rows = []
    for size in SIZES:
        rows.append(size_row(strings, size, copy_bps, repeat))
        print(json.dumps(rows[-1]), flush=True)
        cp.get_default_memory_pool().free_all_blocks()
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args(argv)
    rows = run()
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
