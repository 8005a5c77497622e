"""The ``fsstgpu`` command line: compress, decompress and inspect Parquet / Arrow IPC files,
train symbol tables, generate datasets, round-trip and benchmark.

Every command prints its results on stdout (a table, or JSON with ``--json``) and its progress
and errors on stderr; see :data:`fsstgpu.cli.output.EXIT_CODES_HELP` for the exit codes.
"""

from __future__ import annotations

import tempfile
import time
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from fsstgpu.cli.output import (
    EXIT_CODES_HELP,
    FileProgress,
    err_console,
    fail,
    fmt_ratio,
    handle_errors,
    human_bytes,
    kv_table,
    out_console,
    print_json,
    rows_table,
)

app = typer.Typer(
    name="fsstgpu",
    no_args_is_help=True,
    add_completion=False,
    help="FSST string compression for Parquet / Arrow IPC columns, decompressed on NVIDIA GPUs."
    f"\n\n{EXIT_CODES_HELP}",
)
datasets_app = typer.Typer(no_args_is_help=True, help="List and generate datasets.")
app.add_typer(datasets_app, name="datasets")


class FileFormat(str, Enum):
    parquet = "parquet"
    arrow = "arrow"
    arrows = "arrows"


class Device(str, Enum):
    auto = "auto"
    cpu = "cpu"
    gpu = "gpu"


class BenchDevice(str, Enum):
    cpu = "cpu"
    gpu = "gpu"


JsonOpt = Annotated[bool, typer.Option("--json", help="Print machine-readable JSON on stdout.")]
ForceOpt = Annotated[bool, typer.Option("--force", "-f", help="Overwrite an existing output.")]
ProgressOpt = Annotated[bool, typer.Option("--progress/--no-progress",
                                           help="Show a progress bar on stderr (terminals only).")]


# --------------------------------------------------------------------------- files
@app.command()
def compress(
    src: Annotated[Path, typer.Argument(help="Input Parquet or Arrow IPC file.",
                                        metavar="IN")],
    dst: Annotated[Path, typer.Argument(help="Output file (format from its suffix: .parquet, "
                                        ".arrow/.feather/.ipc, .arrows).", metavar="OUT")],
    columns: Annotated[str | None, typer.Option(
        help="Comma-separated columns to compress (default: every string/binary column).")] = None,
    format: Annotated[FileFormat | None, typer.Option(
        "--format", help="Output format (default: from OUT's suffix, else IN's format).")] = None,
    sample_bytes: Annotated[int | None, typer.Option(
        min=1, help="Training sample size per column in bytes (default 65536).")] = None,
    table: Annotated[Path | None, typer.Option(
        help="Use this symbol table file (from `fsstgpu train`) for every column.")] = None,
    parquet_codec: Annotated[str, typer.Option(
        help="Parquet codec for the compressed columns' pages (none, snappy, zstd, lz4, gzip, "
             "brotli); other columns keep the input's codec.")] = "none",
    force: ForceOpt = False,
    progress: ProgressOpt = True,
    json_: JsonOpt = False,
):
    """Compress the string columns of a Parquet / Arrow IPC file with FSST."""
    from fsstgpu.formats import compress_file

    with handle_errors():
        cols = None if columns is None else [c.strip() for c in columns.split(",") if c.strip()]
        t0 = time.perf_counter()
        with FileProgress(f"compress {src.name}", progress) as bar:
            info = compress_file(src, dst, cols, format=None if format is None else format.value,
                                 sample_bytes=sample_bytes, table=table, force=force,
                                 progress=bar, parquet_codec=parquet_codec)
        info["seconds"] = time.perf_counter() - t0
        info["ratio"] = (info["string_bytes"] / info["codes_bytes"]
                         if info["codes_bytes"] else float("nan"))
        if json_:
            print_json(info)
            return
        out_console().print(kv_table(f"compressed {src} -> {dst}", [
            ("format", info["format"]),
            ("rows", f"{info['rows']:,}"),
            ("row groups / batches", info["units"]),
            ("fsst columns", ", ".join(info["columns"]) or "(none)"),
            ("string bytes", human_bytes(info["string_bytes"])),
            ("codes bytes", human_bytes(info["codes_bytes"])),
            ("string / codes ratio", fmt_ratio(info["ratio"])),
            ("file size", f"{human_bytes(info['input_bytes'])} -> "
                          f"{human_bytes(info['output_bytes'])}"),
            ("time", f"{info['seconds']:.3f} s"),
        ]))


@app.command()
def decompress(
    src: Annotated[Path, typer.Argument(help="File written by `fsstgpu compress`.",
                                        metavar="IN")],
    dst: Annotated[Path, typer.Argument(help="Output file (format from its suffix).",
                                        metavar="OUT")],
    device: Annotated[Device, typer.Option(
        help="Where to decode: auto picks the GPU when one is usable.")] = Device.auto,
    format: Annotated[FileFormat | None, typer.Option(
        "--format", help="Output format (default: from OUT's suffix, else IN's format).")] = None,
    force: ForceOpt = False,
    progress: ProgressOpt = True,
    json_: JsonOpt = False,
):
    """Restore the original string columns of a file written by `fsstgpu compress`."""
    from fsstgpu.formats import decompress_file

    with handle_errors():
        t0 = time.perf_counter()
        with FileProgress(f"decompress {src.name}", progress) as bar:
            info = decompress_file(src, dst, device=device.value,
                                   format=None if format is None else format.value,
                                   force=force, progress=bar)
        info["seconds"] = time.perf_counter() - t0
        if json_:
            print_json(info)
            return
        out_console().print(kv_table(f"decompressed {src} -> {dst}", [
            ("format", info["format"]),
            ("device", info["device"]),
            ("rows", f"{info['rows']:,}"),
            ("row groups / batches", info["units"]),
            ("fsst columns", ", ".join(info["columns"]) or "(none)"),
            ("string bytes", human_bytes(info["string_bytes"])),
            ("file size", f"{human_bytes(info['input_bytes'])} -> "
                          f"{human_bytes(info['output_bytes'])}"),
            ("time", f"{info['seconds']:.3f} s"),
        ]))


@app.command()
def inspect(
    path: Annotated[Path, typer.Argument(help="Parquet or Arrow IPC file.", metavar="FILE")],
    json_: JsonOpt = False,
):
    """Show each column's codec, sizes, ratio and symbol table, and the row groups."""
    from fsstgpu.formats import inspect_file

    with handle_errors():
        info = inspect_file(path)
        if json_:
            print_json(info)
            return
        console = out_console()
        rg = info["unit_rows"]
        shown = ", ".join(f"{r:,}" for r in rg[:8]) + (", ..." if len(rg) > 8 else "")
        console.print(kv_table(f"{path}", [
            ("format", info["format"]),
            ("file size", human_bytes(info["file_bytes"])),
            ("rows", f"{info['rows']:,}"),
            ("row groups / batches", f"{info['units']} ({shown})" if rg else "0"),
            ("schema metadata keys", ", ".join(info["schema_metadata"]) or "(none)"),
        ]))
        rows = []
        for c in info["columns"]:
            fsst = c["codec"] == "fsst"
            tables = c.get("tables", [])
            rows.append([
                c["name"], c["type"], c["codec"] if fsst else c.get("parquet_codec", "none"),
                human_bytes(c["stored_bytes"]),
                human_bytes(c["string_bytes"]) if fsst else "-",
                fmt_ratio(c["ratio"]) if fsst else "-",
                fmt_ratio(c["file_ratio"]) if fsst else "-",
                (f"{tables[0]['symbols']} sym, mean {tables[0]['mean_symbol_length']:.2f} B"
                 + (f" (+{len(tables) - 1} tables)" if len(tables) > 1 else "")) if fsst else "-",
                f"{c['null_count']:,}",
            ])
        console.print(rows_table("columns", ["column", "type", "codec", "stored", "strings",
                                             "fsst ratio", "file ratio", "symbol table",
                                             "nulls"], rows))
        for c in info["columns"]:
            for k, t in enumerate(c.get("tables", [])):
                console.print(f"[bold]{c['name']}[/bold] table {k}: {t['symbols']} symbols "
                              f"({t['bytes']} bytes serialised), by length 1-8: "
                              f"{t['by_length']}; longest: {' '.join(t['longest'])}",
                              markup=True, highlight=False)


# --------------------------------------------------------------------------- round trip
@app.command()
def roundtrip(
    path: Annotated[str, typer.Argument(
        help="A Parquet / Arrow IPC file, a text file (one string per line), or a dataset "
             "name (see `fsstgpu datasets list`).", metavar="PATH")],
    bench: Annotated[bool, typer.Option(
        "--bench", help="Time compress and decompress over several runs (best of N).")] = False,
    runs: Annotated[int, typer.Option(min=1, help="Runs per timing with --bench.")] = 5,
    device: Annotated[Device, typer.Option(help="Where to decompress.")] = Device.auto,
    json_: JsonOpt = False,
):
    """Compress and decompress PATH, check the result equals the input, print ratio and speed."""
    from fsstgpu.formats.files import detect_format

    with handle_errors():
        _warm_up(device.value)
        p = Path(path)
        if p.is_file() and detect_format(p) is not None:
            result = _roundtrip_file(p, device.value, runs if bench else 1)
        else:
            result = _roundtrip_column(path, device.value, runs if bench else 1)
        if json_:
            print_json(result)
        else:
            out_console().print(kv_table(f"round trip of {path}", [
                (k.replace("_MB_s", " MB/s").replace("_", " "), _fmt_value(k, v))
                for k, v in result.items()
            ]))
        if not result["equal"]:
            fail(f"{path}: round trip mismatch: the decompressed data differs from the input")


def _warm_up(device: str) -> None:
    """Compile the codec once on a tiny column, so that the timings measure the codec.

    numba compiles the CPU hot loops on first use in a fresh environment (cached on disk after
    that), and the GPU path compiles its CUDA module once per process.
    """
    import pyarrow as pa

    import fsstgpu
    from fsstgpu.device import resolve_device

    with err_console().status("compiling the codec (first use only) ..."):
        # over 128 KB: block planning probes it and training draws a sample, as for real data
        tiny = pa.array([f"warm-up string {i}" for i in range(8000)] + [None])
        out = fsstgpu.decompress(fsstgpu.compress(tiny), device=resolve_device(device))
        if not isinstance(out, (pa.Array, pa.ChunkedArray)):
            out.to_arrow()


def _fmt_value(key, value):
    if isinstance(value, float):
        return f"{value:.3f}" if "ratio" in key or "seconds" in key else f"{value:.1f}"
    if key.endswith("bytes") and isinstance(value, int):
        return f"{value:,} ({human_bytes(value)})"
    return value


def _roundtrip_column(name: str, device: str, runs: int) -> dict:
    import pyarrow as pa

    import fsstgpu
    from fsstgpu.datasets import load
    from fsstgpu.device import resolve_device

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


def _roundtrip_file(path: Path, device: str, runs: int) -> dict:
    from fsstgpu.device import resolve_device
    from fsstgpu.formats import compress_file, decompress_file, read_table
    from fsstgpu.formats.files import SUFFIXES, detect_format

    dev = resolve_device(device)
    fmt = detect_format(path)
    suffix = {v: k for k, v in reversed(list(SUFFIXES.items()))}[fmt]
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


# --------------------------------------------------------------------------- bench
@app.command()
def bench(
    paths: Annotated[list[str] | None, typer.Argument(
        help="Text files (one string per line) to benchmark (default: the dbtext corpus); or "
             "the single word `kernels` to benchmark the GPU data-movement kernels.",
        metavar="[PATH ...] | kernels")] = None,
    device: Annotated[BenchDevice, typer.Option(
        help="cpu: the CPU codec (bench_cpu); gpu: the GPU decoder (bench_gpu).")
    ] = BenchDevice.cpu,
    target_mib: Annotated[int, typer.Option(
        min=1, help="GPU bench: replicate the data to about this many MiB.")] = 1024,
    nvcomp: Annotated[bool, typer.Option(
        help="GPU bench: also time nvCOMP's codecs on the same bytes (when nvidia.nvcomp "
             "imports).")] = True,
    json_: JsonOpt = False,
):
    """Benchmark compression and decompression (`fsstgpu bench kernels`: the GPU kernels)."""
    from fsstgpu.datasets import dbtext_files
    from fsstgpu.device import resolve_device

    with handle_errors():
        paths = list(paths or [])
        if paths == ["kernels"]:
            resolve_device("gpu")
            from fsstgpu.kernels.bench import format_kernel_bench, run_kernel_bench

            rows = run_kernel_bench()
            _show(rows, format_kernel_bench, json_)
            return
        if "kernels" in paths:
            raise ValueError("`kernels` takes no paths: run `fsstgpu bench kernels` alone "
                             "(write ./kernels for a file of that name)")
        if not paths:
            paths = [str(p) for p in dbtext_files()]
            if not paths:
                raise FileNotFoundError("no PATH given and the dbtext corpus was not found "
                                        "(set FSSTGPU_DBTEXT)")
        for p in paths:
            if not Path(p).is_file():
                raise FileNotFoundError(f"{p}: no such file")
        if device is BenchDevice.gpu:
            resolve_device("gpu")
            from fsstgpu.bench_gpu import format_gpu_bench, run_gpu_bench

            rows = run_gpu_bench(paths, target_mib * 2**20, nvcomp=nvcomp)
            _show(rows, format_gpu_bench, json_)
        else:
            from fsstgpu.bench_cpu import format_cpu_bench, run_cpu_bench

            rows = run_cpu_bench(paths)
            _show(rows, format_cpu_bench, json_)


def _show(rows, formatter, json_: bool) -> None:
    if json_:
        print_json(rows)
        return
    text = formatter(rows)
    if isinstance(text, str):
        typer.echo(text)
    else:
        out_console().print(text)


# --------------------------------------------------------------------------- train
@app.command()
def train(
    src: Annotated[str, typer.Argument(
        help="Text file (one string per line), Parquet / Arrow IPC file, or dataset name.",
        metavar="IN")],
    out: Annotated[Path, typer.Option(
        "--out", "-o", help="Where to write the symbol table (SymbolTable.to_bytes()).")],
    column: Annotated[str | None, typer.Option(
        help="Column of a Parquet / IPC input (default: its first string column).")] = None,
    sample_bytes: Annotated[int | None, typer.Option(
        min=1, help="Training sample size in bytes (default 65536).")] = None,
    force: ForceOpt = False,
    json_: JsonOpt = False,
):
    """Train a symbol table and save it, for `fsstgpu compress --table`."""
    import fsstgpu
    from fsstgpu.datasets import load
    from fsstgpu.formats.files import atomic_output, check_output

    with handle_errors():
        inputs = [src] if Path(src).exists() else []
        check_output(out, force=force, inputs=inputs)
        strings = load(src, column=column)
        table = fsstgpu.train(strings, sample_bytes=sample_bytes)
        data = table.to_bytes()
        with atomic_output(out, force=force, inputs=inputs) as tmp:
            Path(tmp).write_bytes(data)
        lengths = [int(x) for x in table.lengths]
        info = {
            "source": src,
            "out": str(out),
            "symbols": len(table),
            "bytes": len(data),
            "mean_symbol_length": sum(lengths) / len(lengths) if lengths else 0.0,
            "longest": [repr(s) for s in sorted(table.symbols, key=len, reverse=True)[:8]],
        }
        if json_:
            print_json(info)
            return
        out_console().print(kv_table(f"symbol table from {src}", [
            ("written to", out),
            ("symbols", info["symbols"]),
            ("serialised bytes", info["bytes"]),
            ("mean symbol length", f"{info['mean_symbol_length']:.2f}"),
            ("longest", " ".join(info["longest"])),
        ]))


# --------------------------------------------------------------------------- info
@app.command()
def info(json_: JsonOpt = False):
    """Show the backend: whether a GPU is usable, and what device "auto" picks and why."""
    import fsstgpu

    with handle_errors():
        data = {"version": fsstgpu.__version__, **fsstgpu.backend_info()}
        if json_:
            print_json(data)
            return
        out_console().print(kv_table("fsstgpu backend", [
            ("version", data["version"]),
            ("GPU usable", data["gpu"]),
            ("why", data["gpu_reason"]),
            ("CuPy", data["cupy"] or "-"),
            ("FSSTGPU_DEVICE", data["env_override"] or "(unset)"),
            ('device "auto" picks', data["auto_choice"]),
        ]))


# --------------------------------------------------------------------------- datasets
@datasets_app.command("list")
def datasets_list(json_: JsonOpt = False):
    """List the generators, the bundled sample and the dbtext files."""
    from fsstgpu.datasets import list_datasets

    with handle_errors():
        entries = list_datasets()
        if json_:
            print_json(entries)
            return
        out_console().print(rows_table("datasets", ["name", "kind", "available", "description"],
                                       [[e["name"], e["kind"], "yes" if e["available"] else "no",
                                         e["description"]] for e in entries]))


@datasets_app.command("generate")
def datasets_generate(
    name: Annotated[str, typer.Argument(help="Generator name (see `fsstgpu datasets list`).")],
    rows: Annotated[int, typer.Option(min=0, help="Number of rows to generate.")],
    out: Annotated[Path, typer.Option(
        "--out", "-o", help="Output file: .parquet, .arrow/.feather/.ipc or .arrows.")],
    seed: Annotated[int, typer.Option(min=0, help="Random seed (same seed, same bytes).")] = 0,
    row_group_rows: Annotated[int | None, typer.Option(
        min=1, help="Rows per Parquet row group / IPC record batch (default: pyarrow's).")
    ] = None,
    format: Annotated[FileFormat | None, typer.Option(
        "--format", help="Output format (default: from the suffix of --out).")] = None,
    force: ForceOpt = False,
    json_: JsonOpt = False,
):
    """Generate a synthetic string column and write it as a one-column file named NAME."""
    import pyarrow as pa

    from fsstgpu.datasets import GENERATORS, generate
    from fsstgpu.formats.files import atomic_output, check_output, format_from_name, write_table

    with handle_errors():
        if name not in GENERATORS:
            fail(f"unknown generator {name!r}; choose from {', '.join(sorted(GENERATORS))}", 2)
        fmt = format_from_name(out, None if format is None else format.value)
        if fmt is None:
            fail(f"{out}: unknown output format; use a .parquet/.arrow/.arrows suffix or --format",
                 2)
        check_output(out, force=force)
        table = pa.table({name: generate(name, rows, seed)})
        with atomic_output(out, force=force) as tmp:
            write_table(table, tmp, fmt, rows_per_unit=row_group_rows)
        info = {"name": name, "rows": rows, "seed": seed, "format": fmt, "out": str(out),
                "bytes": out.stat().st_size}
        if json_:
            print_json(info)
            return
        out_console().print(kv_table(f"generated {name}", list(info.items())))


def main():
    """Entry point of the ``fsstgpu`` console script."""
    app()


if __name__ == "__main__":
    main()
