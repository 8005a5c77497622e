"""``fsstgpu roundtrip``: compress and decompress a file, a dataset or a column, check and time
it."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path

import pyarrow as pa

import fsstgpu
from fsstgpu.cli.output import err_console, human_bytes, printable
from fsstgpu.cli.stdio import spool
from fsstgpu.datasets import load
from fsstgpu.device import resolve_device
from fsstgpu.formats import (
    compress_dataset,
    compress_file,
    decompress_dataset,
    decompress_file,
    read_table,
)
from fsstgpu.formats.dictionary_bits import float_bits
from fsstgpu.formats.nested import map_value_types
from fsstgpu.formats.sniff import detect_format, suffix_for

__all__ = ["format_value", "phases", "roundtrip_column", "roundtrip_dataset", "roundtrip_file",
           "warm_up"]


def warm_up(device: str) -> None:
    """Compile the GPU decoder once on a tiny column, so that the timings measure the codec.

    The GPU path compiles its CUDA module once per process; the CPU codec is compiled ahead of
    time (the extension ``pip install`` builds), so for ``cpu`` there is nothing to do.
    """
    import pyarrow as pa


    device = resolve_device(device)
    if device == "cpu":
        return
    with err_console().status("compiling the GPU decoder (once per process) ..."):
        # over 128 KB: block planning probes it and training draws a sample, as for real data
        tiny = pa.array([f"warm-up string {i}" for i in range(8000)] + [None])
        out = fsstgpu.decompress(fsstgpu.compress(tiny), device=device)
        if not isinstance(out, (pa.Array, pa.ChunkedArray)):
            out.to_arrow()


def format_value(key, value):
    """A result value as the table shows it."""
    if isinstance(value, float):
        return f"{value:.3f}" if "ratio" in key or "seconds" in key else f"{value:.1f}"
    if key.endswith("bytes") and isinstance(value, int):
        return f"{value:,} ({human_bytes(value)})"
    return value


def roundtrip_column(name: str, device: str, runs: int, level: str = "default") -> dict:
    """Round-trip the column :func:`fsstgpu.datasets.load` gives for ``name``, compressed at
    ``level``; best of ``runs``."""
    import pyarrow as pa


    dev = resolve_device(device)
    column = load(name)
    if isinstance(column, pa.ChunkedArray) and column.num_chunks != 1:
        column = column.combine_chunks()
    elif isinstance(column, pa.ChunkedArray):
        column = column.chunk(0)
    t_c = t_d = float("inf")
    out = carr = None
    for _ in range(runs):
        t0 = time.perf_counter()
        carr = fsstgpu.compress(column, level=level)
        t1 = time.perf_counter()
        out = fsstgpu.decompress(carr, device=dev)
        if not isinstance(out, (pa.Array, pa.ChunkedArray)):
            out = out.to_arrow()
        t2 = time.perf_counter()
        t_c, t_d = min(t_c, t1 - t0), min(t_d, t2 - t1)
    stats = carr.stats()
    mb = stats["uncompressed_bytes"] / 1e6
    return {
        "source": name,
        "device": dev,
        "level": level,
        "strings": stats["strings"],
        "string_bytes": stats["uncompressed_bytes"],
        "codes_bytes": stats["codes_bytes"],
        "table_bytes": stats["table_bytes"],
        "ratio": stats["ratio"],
        "compress_seconds": t_c,
        "decompress_seconds": t_d,
        "compress_MB_s": mb / t_c if t_c else float("nan"),
        "decompress_MB_s": mb / t_d if t_d else float("nan"),
        "runs": runs,
        "equal": bool(out.equals(column)),
    }


def _same_file(original, restored) -> bool:
    """Tell whether ``restored`` reads as ``original`` does: values, types and metadata, floats
    bit for bit (``Table.equals`` takes a NaN for unequal to itself: an exact round trip of a
    column holding NaN was reported as a mismatch)."""
    before = read_table(original, device="cpu")
    after = read_table(restored, device="cpu")
    if not after.schema.equals(before.schema, check_metadata=True):
        return False
    return bool(_as_bits(after).equals(_as_bits(before)))  # (-0.0 is not 0.0 either)


def _bits_type(type_: pa.DataType) -> pa.DataType:
    """``type_`` with each floating-point type replaced by the integer of its width."""
    return map_value_types(type_, float_bits)


def _as_bits(table: pa.Table) -> pa.Table:
    """``table`` with its floats seen as integers of their bits (as they are where a view
    cannot be taken: then they compare as floats)."""
    columns = []
    for column in table.columns:
        bits = _bits_type(column.type)
        try:
            column = pa.chunked_array([c.view(bits) for c in column.chunks], bits)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            pass
        columns.append(column)
    return pa.Table.from_arrays(columns, names=table.column_names)


def _figures(info: dict, columns, t_c: float, t_d: float, runs: int) -> dict:
    """The round trip's figures from ``compress_file``'s counts (or their sums over files)."""
    mb = info["string_bytes"] / 1e6
    return {
        "rows": info["rows"],
        "row_groups": info["units"],
        "fsst_columns": ", ".join(columns),
        "input_file_bytes": info["input_bytes"],
        "compressed_file_bytes": info["output_bytes"],
        "file_ratio": info["input_bytes"] / info["output_bytes"],
        "string_bytes": info["string_bytes"],
        "codes_bytes": info["codes_bytes"],
        "ratio": info["string_bytes"] / info["codes_bytes"] if info["codes_bytes"]
        else float("nan"),
        "compress_seconds": t_c, "decompress_seconds": t_d,
        "compress_MB_s": mb / t_c if t_c else float("nan"),
        "decompress_MB_s": mb / t_d if t_d else float("nan"),
        "runs": runs,
    }


@contextlib.contextmanager
def phases(what):
    """A spinner on stderr naming what a round trip is doing, for a terminal (nothing when stderr
    is a file or a pipe); yields ``phase(text)``, which changes the text.

    Examples
    --------
    >>> from fsstgpu.cli.roundtrip import phases
    >>> with phases("a.parquet") as phase:  # stderr is no terminal here: silent
    ...     phase("compressing")
    """
    console = err_console()
    if not console.is_terminal:
        yield lambda text: None
        return
    with console.status(f"round trip of {printable(what)}") as status:
        yield lambda text: status.update(f"round trip of {printable(what)}: {text}")


def _timed(compress, decompress, runs: int, phase=lambda text: None):
    """``(compress()'s last result, best compress s, best decompress s)`` over ``runs``;
    ``phase`` is told each step."""
    t_c = t_d = float("inf")
    for run in range(runs):
        of = f" (run {run + 1} of {runs})" if runs > 1 else ""
        phase(f"compressing{of}")
        t0 = time.perf_counter()
        info = compress()
        t1 = time.perf_counter()
        phase(f"decompressing{of}")
        decompress()
        t_c, t_d = min(t_c, t1 - t0), min(t_d, time.perf_counter() - t1)
    return info, t_c, t_d


def roundtrip_dataset(src, device: str, runs: int, level: str = "default") -> dict:
    """Round-trip every file of a dataset (a folder or a glob pattern) through compress_dataset
    and decompress_dataset, in a temporary folder; the figures are the files' sums, ``equal``
    whether every file came back as it was (``differs``: the first that did not)."""

    dev = resolve_device(device)
    # (named _*: a dataset folder that holds the temporary folder (roundtrip /tmp) skips it)
    with spool("roundtrip") as tmp:
        comp, back = Path(tmp) / "c", Path(tmp) / "d"
        with phases(src) as phase:
            cinfo, t_c, t_d = _timed(
                lambda: compress_dataset(src, comp, force=True, level=level),
                lambda: decompress_dataset(comp, back, device=dev, force=True), runs, phase)
            phase("comparing with the input")
            # the outputs keep their relative names under both folders
            differs = [r["input"] for r in cinfo
                       if not _same_file(r["input"], back / Path(r["output"]).relative_to(comp))]
    total = {key: sum(r[key] for r in cinfo)
             for key in ("rows", "units", "input_bytes", "output_bytes", "string_bytes",
                         "codes_bytes")}
    columns = list(dict.fromkeys(c for r in cinfo for c in r["columns"]))
    return {
        "source": str(src),
        "files": len(cinfo),
        "formats": ", ".join(sorted({r["format"] for r in cinfo})),
        "device": dev,
        "level": level,
        **_figures(total, columns, t_c, t_d, runs),
        "equal": not differs,
        **({"differs": differs[0]} if differs else {}),
    }


def roundtrip_file(path: Path, device: str, runs: int, level: str = "default") -> dict:
    """Round-trip a Parquet / IPC file through compress_file and decompress_file."""

    dev = resolve_device(device)
    fmt = detect_format(path)
    suffix = suffix_for(fmt)
    # (a process killed here leaves the two copies: the next spool removes them)
    with spool("roundtrip") as tmp:
        comp, back = Path(tmp) / f"c{suffix}", Path(tmp) / f"d{suffix}"
        with phases(path) as phase:
            cinfo, t_c, t_d = _timed(
                lambda: compress_file(path, comp, force=True, level=level),
                lambda: decompress_file(comp, back, device=dev, force=True), runs, phase)
            phase("comparing with the input")
            equal = _same_file(path, back)
    return {
        "source": str(path),
        "format": fmt,
        "device": dev,
        "level": level,
        **_figures(cinfo, cinfo["columns"], t_c, t_d, runs),
        "equal": equal,
    }
