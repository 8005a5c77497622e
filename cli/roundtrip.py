"""``fsstgpu roundtrip``: compress and decompress a file or a column, check and time it."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import fsstgpu
from fsstgpu.cli.output import err_console, human_bytes
from fsstgpu.datasets import load
from fsstgpu.device import resolve_device
from fsstgpu.formats import compress_file, decompress_file, read_table
from fsstgpu.formats.sniff import detect_format, suffix_for

__all__ = ["format_value", "roundtrip_column", "roundtrip_file", "warm_up"]


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


def roundtrip_column(name: str, device: str, runs: int) -> dict:
    """Round-trip the column :func:`fsstgpu.datasets.load` gives for ``name``; best of ``runs``."""
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
        carr = fsstgpu.compress(column)
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


def roundtrip_file(path: Path, device: str, runs: int) -> dict:
    """Round-trip a Parquet / IPC file through compress_file and decompress_file."""

    dev = resolve_device(device)
    fmt = detect_format(path)
    suffix = suffix_for(fmt)
    t_c = t_d = float("inf")
    with tempfile.TemporaryDirectory(prefix="fsstgpu-roundtrip-") as tmp:
        comp, back = Path(tmp) / f"c{suffix}", Path(tmp) / f"d{suffix}"
        for _ in range(runs):
            t0 = time.perf_counter()
            cinfo = compress_file(path, comp, force=True)
            t1 = time.perf_counter()
            decompress_file(comp, back, device=dev, force=True)
            t2 = time.perf_counter()
            t_c, t_d = min(t_c, t1 - t0), min(t_d, t2 - t1)
        original = read_table(path, device="cpu")
        restored = read_table(back, device="cpu")
        equal = bool(restored.equals(original)
                     and restored.schema.equals(original.schema, check_metadata=True))
    mb = cinfo["string_bytes"] / 1e6
    return {
        "source": str(path),
        "format": fmt,
        "device": dev,
        "rows": cinfo["rows"],
        "row_groups": cinfo["units"],
        "fsst_columns": ", ".join(cinfo["columns"]),
        "input_file_bytes": cinfo["input_bytes"],
        "compressed_file_bytes": cinfo["output_bytes"],
        "file_ratio": cinfo["input_bytes"] / cinfo["output_bytes"],
        "string_bytes": cinfo["string_bytes"],
        "codes_bytes": cinfo["codes_bytes"],
        "ratio": cinfo["string_bytes"] / cinfo["codes_bytes"] if cinfo["codes_bytes"]
        else float("nan"),
        "compress_seconds": t_c,
        "decompress_seconds": t_d,
        "compress_MB_s": mb / t_c if t_c else float("nan"),
        "decompress_MB_s": mb / t_d if t_d else float("nan"),
        "runs": runs,
        "equal": equal,
    }
