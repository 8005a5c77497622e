"""GSST word-interleaved layout against the current layout: the same columns, the same run.

For each compressed column (dbtext files concatenated and replicated to about ``target_bytes``,
as :mod:`benchmarks.gpu` builds its "overall" column; optionally each file alone; synthetic
columns of :func:`fsstgpu.datasets.generate`, replicated alike), with the column on the device
(:func:`fsstgpu.to_device`), device time by CUDA events (:func:`benchmarks.timing.time_device`,
median) of

* ``current``: :func:`fsstgpu.kernels.fsst_decode.launch_decode` (one warp per split, the codes
  as uploaded) into the Arrow data buffer;
* ``interleave + decode``: :func:`fsstgpu.kernels.gsst_decode.interleave_codes` (gather + our
  transpose) then :func:`~fsstgpu.kernels.gsst_decode.decode_device` (one thread per split);
* ``interleaved decode``: the decode alone, the layout built once (what a layout built at upload
  costs per decode);
* ``interleave only``: the layout's construction alone.

Throughput is decompressed bytes over device time, beside the same run's device-to-device copy
bandwidth (bytes read plus written, :func:`benchmarks.timing.copy_bandwidth`); ``vs current`` is
the speed over the current decode's. Every row also gives the layout's memory: its bytes
(``4 * wmax * nstreams``), the codes' bytes and ``padding`` (layout / codes - 1), and
``padding per warp``: what the padding would be if each group of 32 streams were padded only to
its own longest split (a layout this module does not build). Every decoded output is compared on
the device with the bytes it must equal; every error flag is read.

Run ``python -m benchmarks.gsst_layout`` from the checkout (JSON rows on stdout).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

import fsstgpu
from benchmarks.columns import concat, replicate
from benchmarks.timing import copy_bandwidth, time_device
from fsstgpu.arrow_layout import from_arrow
from fsstgpu.datasets import generate, load_lines
from fsstgpu.device import get_cupy
from fsstgpu.kernels.fsst_decode import error_message, launch_decode
from fsstgpu.kernels.gsst_decode import (
    STREAM_ALIGN,
    decode_device,
    interleave_codes,
    interleave_device,
    layout_shape,
)

#: what output buffers hold before a decode (never valid UTF-8: missed bytes show)
POISON = 0xFF
#: the synthetic columns measured (fsstgpu.datasets.generate kinds)
SYNTHETIC = ("emails", "urls", "log_lines", "json_records", "uuids", "multilingual",
             "long_strings")
#: rows generated per synthetic column before replication
SYNTHETIC_ROWS = 200_000


def layout_memory(split_codes) -> dict:
    """The interleaved layout's memory for these (host) split points.

    Returns
    -------
    dict
        ``code bytes`` (the splits' codes), ``layout bytes`` (``4 * wmax * nstreams``),
        ``padding`` (layout / codes - 1), ``wmax`` (words per stream), ``padding per warp``
        (the same, were each group of 32 streams padded to its own longest split only).

    Examples
    --------
    >>> import numpy as np
    >>> from benchmarks.gsst_layout import layout_memory
    >>> m = layout_memory(np.array([0, 8, 12, 16]))
    >>> m["code bytes"], m["layout bytes"], m["wmax"], round(m["padding"], 2)
    (16, 256, 2, 15.0)
    """
    split_codes = np.asarray(split_codes, dtype=np.int64)
    sizes = np.diff(split_codes)
    wmax, nstreams = layout_shape(split_codes)
    code_bytes = int(sizes.sum())
    layout_bytes = 4 * wmax * nstreams
    per_warp = 0
    if sizes.size:
        groups = np.zeros(nstreams, np.int64)
        groups[: sizes.size] = -(-sizes // 4)
        per_warp = 4 * STREAM_ALIGN * int(groups.reshape(-1, STREAM_ALIGN).max(axis=1).sum())
    spare = max(code_bytes, 1)
    return {"code bytes": code_bytes, "layout bytes": layout_bytes, "wmax": wmax,
            "padding": layout_bytes / spare - 1, "padding per warp": per_warp / spare - 1}


def gsst_row(file, variant, nbytes, splits, seconds, copy_bps, current_s, memory) -> dict:
    """One result: ``nbytes`` decompressed in ``seconds`` beside the copy and the current decode.

    Examples
    --------
    >>> from benchmarks.gsst_layout import gsst_row
    >>> row = gsst_row("x", "current", 10**9, 5, 0.002, 4e12, 0.002, {"padding": 0.5})
    >>> row["GB/s"], row["of copy"], row["vs current"], row["padding"]
    (500.0, 0.125, 1.0, 0.5)
    """
    gbs = nbytes / seconds / 1e9
    return {"file": file, "variant": variant, "bytes": nbytes, "splits": splits,
            "ms": seconds * 1e3, "GB/s": gbs, "copy GB/s": copy_bps / 1e9,
            "of copy": gbs / (copy_bps / 1e9), "vs current": current_s / seconds, **memory}


def _check(out, expect: np.ndarray, err, what: str) -> None:
    """Raise unless the error flag is clear and ``out`` is ``expect`` repeated (on the device)."""
    cp = get_cupy()
    bits = int(err.get()[0])
    if bits:
        raise fsstgpu.CorruptDataError(f"{what}: {error_message(bits)}")
    size = expect.size
    copies = out.size // size if size else 0
    if out.size != copies * size or (
            size and not bool((out.reshape(copies, size) == cp.asarray(expect)).all())):
        raise RuntimeError(f"{what}: the decoded bytes differ from the input")


def column_rows(name: str, carr, expect: np.ndarray, copy_bps: float, *,
                repeat: int = 10) -> list[dict]:
    """The four measurements (module docstring) of one column; ``expect`` holds the bytes the
    decoded data repeats."""
    cp = get_cupy()
    cp.get_default_memory_pool().free_all_blocks()  # what earlier columns left
    dev = fsstgpu.to_device(carr)
    memory = layout_memory(dev.layout.split_codes)
    wmax = memory["wmax"]
    out = cp.full(dev.total, POISON, dtype=cp.uint8)
    err = cp.zeros(1, dtype=cp.int32)

    def current():
        launch_decode(dev.codes, dev.ncodes, dev.split_codes, dev.split_out, dev.split_table,
                      dev.tab_sym, dev.tab_len, dev.ntables, out, dev.total, err)

    def interleave():
        return interleave_codes(dev.codes, dev.split_codes, dev.ncodes, wmax=wmax)

    def both():
        decode_device(dev, interleave(), out, err)

    times = {}
    for what, fn in (("current", current), ("interleave + decode", both)):
        times[what] = time_device(fn, repeat=repeat)
        _check(out, expect, err, f"{name}, {what}")
        out.fill(POISON)  # the next variant must write every byte again
    layout = interleave_device(dev)
    times["interleaved decode"] = time_device(lambda: decode_device(dev, layout, out, err),
                                              repeat=repeat)
    _check(out, expect, err, f"{name}, interleaved decode")
    layout = None  # its memory goes back to the pool before the construction is timed
    times["interleave only"] = time_device(interleave, repeat=repeat)
    return [gsst_row(name, what, dev.total, dev.nsplits, t, copy_bps, times["current"], memory)
            for what, t in times.items()]


def _copies(raw_size: int, target: int) -> int:
    return max(1, -(-target // max(raw_size, 1)))


def bench_gsst_layout(paths=None, target_bytes: int = 1 << 30, *, per_file: bool = False,
                      per_file_bytes: int | None = None, synthetic=SYNTHETIC,
                      repeat: int = 10, progress=None) -> list[dict]:
    """Time the current decode and the GSST layout's on the same columns; one dict per figure.

    Parameters
    ----------
    paths : list of path-like, optional
        Line files (default: every dbtext file found, :func:`fsstgpu.datasets.dbtext_files`);
        with none found, only the synthetic columns are measured.
    target_bytes : int
        Decompressed bytes of the concatenated files' column and of each synthetic column.
    per_file : bool
        Also each file alone, replicated to ``per_file_bytes`` (default ``target_bytes // 4``).
    synthetic : sequence of str
        :func:`fsstgpu.datasets.generate` kinds (empty: none).
    repeat : int
        Timed runs per figure (the median counts).
    progress : callable, optional
        Called with a message before each step.

    Returns
    -------
    list of dict
        Keys: file, variant, bytes, splits, ms, GB/s, copy GB/s, of copy, vs current (speed
        over the current decode's), code bytes, layout bytes, wmax, padding, padding per warp.

    Examples
    --------
    >>> from benchmarks.gsst_layout import bench_gsst_layout
    >>> rows = bench_gsst_layout(target_bytes=1 << 26, repeat=3)  # doctest: +SKIP
    """
    from fsstgpu.datasets import dbtext_files

    say = progress or (lambda msg: None)
    paths = [Path(p) for p in paths] if paths is not None else dbtext_files()
    get_cupy()
    say("copy bandwidth")
    copy_bps = copy_bandwidth(min(target_bytes, 1 << 30))
    rows, carrs, raws = [], [], []
    for path in paths:
        say(f"compress {path.name}")
        col = load_lines(path)
        carr, raw = fsstgpu.compress(col), from_arrow(col).data
        carrs.append(carr)
        raws.append(raw)
        if per_file and raw.size:
            copies = _copies(raw.size, per_file_bytes or target_bytes // 4)
            say(f"{path.name} x{copies}")
            rows += column_rows(path.name, replicate(carr, copies), raw, copy_bps, repeat=repeat)
    if carrs:
        one = np.concatenate(raws)
        copies = _copies(one.size, target_bytes)
        say(f"overall x{copies}")
        rows += column_rows("overall", replicate(concat(carrs), copies), one, copy_bps,
                            repeat=repeat)
    for seed, kind in enumerate(synthetic):
        say(f"synthetic {kind}")
        col = generate(kind, SYNTHETIC_ROWS, seed)
        raw = from_arrow(col).data
        copies = _copies(raw.size, target_bytes)
        rows += column_rows(f"synthetic {kind}", replicate(fsstgpu.compress(col), copies), raw,
                            copy_bps, repeat=repeat)
    return rows


def main(argv=None) -> int:
    """``python -m benchmarks.gsst_layout [--target-mib N] [--per-file] [--repeat R] [FILE...]``:
    the rows as JSON on stdout, progress on stderr."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", help="line files (default: the dbtext corpus)")
    parser.add_argument("--target-mib", type=int, default=1024)
    parser.add_argument("--per-file", action="store_true", help="also each file alone")
    parser.add_argument("--no-synthetic", action="store_true")
    parser.add_argument("--repeat", type=int, default=10)
    args = parser.parse_args(argv)
    rows = bench_gsst_layout(args.files or None, args.target_mib << 20, per_file=args.per_file,
                             synthetic=() if args.no_synthetic else SYNTHETIC,
                             repeat=args.repeat,
                             progress=lambda msg: print(msg, file=sys.stderr, flush=True))
    print(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
