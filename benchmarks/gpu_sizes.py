"""GPU decode against column size, batches of small columns, and host columns: beside nvCOMP.

The strings are the dbtext corpus laid end to end (one string per line) and repeated or cut to
each size. In the same run, beside the device-to-device copy bandwidth (bytes read plus written):

* device-resident decode (Arrow offsets included) of one column of each size: the user's call,
  ``decompress_device(dev)``, its result dropped, CUDA events around the whole of it;
* a batch of ``count`` columns of ``size`` bytes decoded in one call;
* host columns (pageable memory) to device Arrow strings, wall clock, beside a plain pageable
  upload of the uncompressed strings and offsets;
* nvCOMP's codecs on the same bytes at each size and in its batched mode on the batch, in a child
  process of its own (:mod:`benchmarks.nvcomp_child`).

Every decoded output is compared with the CPU decoder's.

``fsstgpu bench --device gpu`` prints these rows (:func:`format_sweep`) after the per-file table,
and ``--plot FILE.svg`` draws them (:mod:`benchmarks.sweep_plot`).

Usage: ``python -m benchmarks.gpu_sizes [--json FILE] [--plot FILE.svg] [--no-nvcomp]`` from the
checkout's root.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa

import fsstgpu
from benchmarks.columns import replicate
from benchmarks.timing import (
    copy_bandwidth,
    pinned_like,
    time_device,
    time_wall,
    upload_seconds,
)
from fsstgpu.datasets import dbtext_files, load_lines
from fsstgpu.device import get_cupy
from fsstgpu.gpu.decode import decode_async, decompress_device

ROOT = Path(__file__).resolve().parent.parent
MIB = 1 << 20
SIZES = (1 * MIB, 4 * MIB, 16 * MIB, 64 * MIB, 256 * MIB, 1024 * MIB)
HOST_SIZES = (4 * MIB, 64 * MIB, 256 * MIB)


def _row(what, size, seconds, copy_bps, **extra) -> dict:
    gbs = size / seconds / 1e9
    return {"what": what, "MiB": size / MIB, "us": seconds * 1e6, "GB/s": gbs,
            "copy GB/s": copy_bps / 1e9, "of copy": gbs / (copy_bps / 1e9), **extra}


def corpus() -> pa.Array:
    """The dbtext corpus as one binary column (its files one after the other)."""
    paths = dbtext_files()
    if not paths:
        raise FileNotFoundError("no dbtext files found (set FSSTGPU_DBTEXT)")
    return pa.concat_arrays([load_lines(p).cast(pa.binary()) for p in paths])


def column_of_size(base, size: int):
    """A compressed column of about ``size`` string bytes: ``base`` cut or repeated."""
    if base.uncompressed_bytes >= size:
        out = np.zeros(base.length + 1, np.int64)
        np.cumsum(base.lengths, out=out[1:])
        stop = int(np.searchsorted(out, size))
        return base[:stop]
    copies = -(-size // base.uncompressed_bytes)
    big = replicate(base, copies)
    out = np.zeros(big.length + 1, np.int64)
    np.cumsum(big.lengths, out=out[1:])
    return big[: int(np.searchsorted(out, size))]


def _expected(carr) -> np.ndarray:
    return np.asarray(fsstgpu.decompress(carr, device="cpu").buffers()[2]).view(np.uint8)[
        : carr.uncompressed_bytes]


def device_rows(carr, copy_bps, *, repeat=20) -> dict:
    dev = fsstgpu.to_device(carr)
    # the user's call, its result dropped: CUDA events around the whole of it (the check, that
    # is the one host sync, included)
    seconds = time_device(lambda: fsstgpu.decompress_device(dev), repeat=repeat)
    return _row("fsstgpu", dev.total, seconds, copy_bps, splits=dev.nsplits,
                ratio=carr.stats()["ratio"])


def run(nvcomp: bool = True, repeat: int = 20, progress=None) -> list[dict]:
    """The sweep's rows (device columns, batches, host columns, uploads, nvCOMP), in order."""
    say = progress or (lambda msg: None)
    cp = get_cupy()
    copy_bps = copy_bandwidth(1 << 30)
    say("sweep: compressing the dbtext corpus")
    strings = corpus()
    base = fsstgpu.compress(strings)
    rows = [pinned_upload_row(copy_bps)]
    raws = {}
    for size in SIZES:
        say(f"sweep: {size // MIB} MiB")
        col = column_of_size(base, size)
        expect = _expected(col)
        raws[size] = expect
        rows.append(device_rows(col, copy_bps, repeat=repeat))
        got = fsstgpu.decompress_device(fsstgpu.to_device(col))
        if not np.array_equal(got.data.get(), expect):
            raise RuntimeError(f"{size} bytes: decoded bytes differ")
        del got
        cp.get_default_memory_pool().free_all_blocks()
    # a batch of small columns in one call
    for count, size in ((64, 4 * MIB), (256, 1 * MIB)):
        big = column_of_size(base, count * size)
        cuts = np.zeros(big.length + 1, np.int64)
        np.cumsum(big.lengths, out=cuts[1:])
        idx = np.searchsorted(cuts, np.arange(count + 1) * size)
        idx[-1] = big.length
        parts = [big[int(a):int(b)] for a, b in zip(idx[:-1], idx[1:], strict=True)]
        dev = fsstgpu.to_device(parts)
        seconds = time_device(lambda d=dev: fsstgpu.decompress_device(d), repeat=repeat)
        results = decode_async(dev).check()
        for part, res in zip(parts[:3], results[:3], strict=True):
            if not np.array_equal(res.data.get(), _expected(part)):
                raise RuntimeError("batch: decoded bytes differ")
        rows.append(_row(f"fsstgpu batch {count} x {size // MIB} MiB", dev.total, seconds,
                         copy_bps, splits=dev.nsplits))
        cp.get_default_memory_pool().free_all_blocks()
    say("sweep: host columns")
    rows += host_rows(base, copy_bps)
    if nvcomp:
        say("sweep: nvCOMP (child process)")
        cp.get_default_memory_pool().free_all_blocks()
        cp.get_default_pinned_memory_pool().free_all_blocks()
        rows += nvcomp_rows(copy_bps)
    return rows


def pinned_upload_row(copy_bps, size: int = 256 * MIB, repeat: int = 5) -> dict:
    """The same run's host-to-device bandwidth from pinned memory (the bus's ceiling)."""
    cp = get_cupy()
    host = pinned_like(np.full(size, 7, np.uint8))
    seconds = upload_seconds(host, cp.empty(size, dtype=cp.uint8), repeat=repeat)
    return _row("plain pinned upload", size, seconds, copy_bps)


def format_sweep(rows: list[dict]):
    """Render :func:`run`'s rows as a rich Table.

    Examples
    --------
    >>> from benchmarks.gpu_sizes import format_sweep
    >>> format_sweep([{"what": "fsstgpu", "MiB": 16.0, "us": 95.0, "GB/s": 176.6,
    ...                "copy GB/s": 4100.0, "of copy": 0.043, "splits": 4096},
    ...               {"what": "nvCOMP zstd failed: RuntimeError: x"}]).row_count
    2
    """
    from rich.table import Table

    table = Table(title="GPU decode against column size (device-resident unless noted; dbtext "
                        "laid end to end), beside the same run's copy, uploads and nvCOMP")
    cols = (("what", None, ""), ("MiB", "MiB", ".0f"), ("us", "us", ".1f"),
            ("GB/s", "GB/s", ".1f"), ("of copy", "of copy", ".1%"), ("ratio", "ratio", ".2f"),
            ("vs upload", "vs_upload", ".2f"))
    for header, key, _ in cols:
        table.add_column(header, justify="left" if key is None else "right")
    for r in rows:
        table.add_row(*(str(r.get("what", "")) if key is None
                        else ("-" if r.get(key) is None else format(r[key], spec))
                        for _, key, spec in cols))
    copy = next((r["copy GB/s"] for r in rows if r.get("copy GB/s")), None)
    if copy:
        table.caption = f"device copy (read + written) in this run: {copy:.0f} GB/s"
    return table


def host_rows(base, copy_bps, repeat: int = 5) -> list[dict]:
    """Host column (pageable) to device Arrow strings, beside a plain pageable upload."""

    cp = get_cupy()
    rows = []
    for size in HOST_SIZES:
        col = column_of_size(base, size)
        col.validate(full=False)
        total = col.uncompressed_bytes
        plain = np.full(total + 4 * (col.length + 1), 7, np.uint8)  # strings + int32 offsets
        t_up = upload_seconds(plain, cp.empty(plain.size, dtype=cp.uint8), repeat=repeat)
        rows.append(_row("plain pageable upload (uncompressed)", total, t_up, copy_bps))
        t = time_wall(lambda c=col: decompress_device(c), repeat=repeat)
        rows.append(_row("fsstgpu host (pageable) -> device", total, t, copy_bps,
                         vs_upload=t_up / t))
        cp.get_default_memory_pool().free_all_blocks()
    return rows


def nvcomp_rows(copy_bps: float, sizes=SIZES, batch: str = "64x4194304,256x1048576", *,
                encode: bool = False) -> list[dict]:
    """nvCOMP's codecs on the dbtext corpus cut to each of ``sizes``, in a child process
    (:mod:`benchmarks.nvcomp_child`): decodes (and ``batch``'s batched decodes), or with
    ``encode`` compressions."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(ROOT), env.get("PYTHONPATH"))))
    with tempfile.TemporaryDirectory(prefix="fsstgpu-nvcomp-") as tmp:
        out = Path(tmp) / "rows.json"
        cmd = [sys.executable, "-X", "faulthandler", "-m", "benchmarks.nvcomp_child", "--sizes",
               ",".join(str(s) for s in sizes), "--batch", batch,
               "--copy-bps", repr(copy_bps), "--out", str(out)] + (["--encode"] if encode else [])
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
        if proc.returncode == 0 and out.is_file():
            return json.loads(out.read_text())
    return [{"what": f"nvCOMP not measured: exit {proc.returncode}"}]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--json", type=Path, help="also write the rows here")
    parser.add_argument("--plot", type=Path, help="draw the sweep here (.svg, or .png "
                        "with matplotlib)")
    parser.add_argument("--no-nvcomp", action="store_true")
    args = parser.parse_args(argv)
    rows = run(nvcomp=not args.no_nvcomp)
    for r in rows:
        print(json.dumps(r, default=str))
    if args.json:
        args.json.write_text(json.dumps(rows, default=str, indent=1))
    if args.plot:
        from benchmarks.sweep_plot import draw_sweep

        draw_sweep(rows, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
