"""The ``fsstgpu`` command line: compress, decompress and inspect Parquet / Arrow IPC files,
train symbol tables, generate datasets, round-trip and benchmark.

Every command prints its results on stdout (a table, or JSON with ``--json``) and its progress
and errors on stderr (with ``--json``, an error is also a JSON object on stdout:
:mod:`fsstgpu.cli.group`); see :data:`fsstgpu.cli.output.EXIT_CODES_HELP` for the exit codes. Usage
errors (a bad option or argument, a missing input file, an output whose format its suffix does
not name, a column the file lacks) exit 2 and list the valid choices.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import time
import warnings
from pathlib import Path
from typing import Annotated

import typer

import fsstgpu
from fsstgpu.cli.group import Group
from fsstgpu.cli.inspect_view import show_inspection
from fsstgpu.cli.output import (
    EXIT_CODES_HELP,
    EXIT_USAGE,
    DatasetProgress,
    FileProgress,
    err_console,
    fail,
    fmt_ratio,
    handle_errors,
    human_bytes,
    kv_table,
    note,
    out_console,
    print_json,
    printable,
    rows_table,
    warning_line,
)
from fsstgpu.cli.params import (
    BenchDevice,
    BenchLevelOpt,
    DataIn,
    DecodeDeviceOpt,
    Device,
    EncodeDeviceOpt,
    FileFormat,
    FileOrDataset,
    ForceOpt,
    FormatOpt,
    GeneratorName,
    JsonOpt,
    Level,
    LevelOpt,
    OutFile,
    ParquetCodec,
    PathOrUrl,
    ProgressOpt,
    SchedulerOpt,
    WorkersOpt,
    dataset_in,
    dataset_or_file,
    generator_name,
    is_dataset,
    one_file,
    output_format_of,
    roundtrip_source,
)
from fsstgpu.cli.roundtrip import (
    format_value,
    roundtrip_column,
    roundtrip_dataset,
    roundtrip_file,
    warm_up,
)
from fsstgpu.cli.run_bench import run_bench
from fsstgpu.cli.signals import stop_signals
from fsstgpu.cli.stdio import STDIO, stdin_file, stdout_file
from fsstgpu.datasets import generate, is_dataset_name, list_datasets, load
from fsstgpu.formats import (
    compress_dataset,
    compress_file,
    decompress_dataset,
    decompress_file,
    inspect_file,
)
from fsstgpu.formats.atomic import atomic_output, check_output
from fsstgpu.formats.datasets import check_dataset_output, output_name
from fsstgpu.formats.locations import file_size, is_url, local_or_url, skipped_files
from fsstgpu.formats.sinks import write_table
from fsstgpu.formats.sniff import detect_format, suffix_for
from fsstgpu.integrations import dask as on_dask

app = typer.Typer(
    name="fsstgpu",
    cls=Group,
    rich_markup_mode="rich",  # the help texts escape [ as rich markup wants, whatever the default
    no_args_is_help=True,
    add_completion=True,
    help="FSST string compression for Parquet / Arrow IPC columns, decompressed on NVIDIA GPUs."
    f"\n\n{EXIT_CODES_HELP}",
)
datasets_app = typer.Typer(cls=Group, rich_markup_mode="rich", no_args_is_help=True,
                           help="List and generate datasets.")
app.add_typer(datasets_app, name="datasets")


def _show_version(value: bool) -> None:
    if value:
        typer.echo(f"fsstgpu {fsstgpu.__version__}")
        raise typer.Exit()


@app.callback()
def _main_options(
    version: Annotated[bool, typer.Option(
        "--version", "-V", callback=_show_version, is_eager=True,
        help="Show the version and exit.")] = False,
):
    pass


#: How many skipped names the note lists before "and N more".
_SKIPPED_SHOWN = 5


def _start_dataset(src, dst) -> None:
    """Before a dataset's files are written: refuse OUT ``-`` (stdout holds one file, a
    dataset's output is a folder) and an OUT named as a file, and name the files skipped as
    not data."""
    if dst == STDIO:
        fail("OUT - is standard output, which holds one file; the output of a dataset is a "
             "folder (one file per input file): name a folder", EXIT_USAGE)
    if dst is not None:
        check_dataset_output(dst, src)
    skipped = skipped_files(src)
    if skipped:
        shown = ", ".join(skipped[:_SKIPPED_SHOWN])
        more = f" and {len(skipped) - _SKIPPED_SHOWN} more" if len(skipped) > _SKIPPED_SHOWN \
            else ""
        note(f"skipped {len(skipped)} file{'s' * (len(skipped) > 1)} named _* or .* or in "
             f"such a folder (not data, as pyarrow.dataset skips them): {shown}{more}")


def _show_dataset(results: list[dict], verb: str, src, dst, json_: bool) -> None:
    if json_:
        print_json(results)
        return
    out_console().print(kv_table(f"{verb} {src} -> {dst}: {len(results)} files", [
        (r["output"], f"{r['rows']:,} rows, {human_bytes(r['input_bytes'])} -> "
                      f"{human_bytes(r['output_bytes'])}") for r in results]))


def _into_folder(src, dst):
    """OUT of a one-file compress / decompress, an existing local folder taken as ``cp`` takes
    it: the file ``OUT/<IN's name>`` (less a codec name before the suffix, as a dataset's
    outputs: ``a.snappy.parquet`` -> ``a.parquet``); anything else as given."""
    if dst == STDIO or is_url(dst) or not Path(dst).is_dir():
        return dst
    if src == STDIO:
        fail(f"{dst} is a folder, and standard input has no name to give the file in it: name "
             "the output file", EXIT_USAGE)
    return str(Path(dst) / output_name(local_or_url(src).name))


@contextlib.contextmanager
def _files(src, dst, format, json_: bool):
    """``(input, output, output format)`` of a one-file compress / decompress: local paths or
    URLs, or for ``-`` temporary files standing for stdin / stdout (:mod:`fsstgpu.cli.stdio`)."""

    if dst == STDIO and json_:
        fail("--json and OUT - would both write to stdout: give OUT a file name, or leave out "
             "--json", EXIT_USAGE)
    with stdin_file(src, output=dst) as path:
        path = local_or_url(path)
        if dst != STDIO:
            fmt = output_format_of(dst, format)
        else:  # no suffix to name it: --format, else the input's
            fmt = format.value if format is not None else detect_format(path) or "parquet"
        with stdout_file(dst, suffix_for(fmt)) as out:
            yield path, out, fmt


def _results_console(dst):
    """Where the results table goes: stdout, or stderr when stdout holds the output file."""
    return err_console() if dst == STDIO else out_console()


def _out_is_stdout(out, json_: bool) -> bool:
    """Whether ``--out`` is ``-`` (stdout), refused beside ``--json`` (both would write there)."""
    to_stdout = str(out) == STDIO
    if to_stdout and json_:
        fail("--json and --out - would both write to stdout: give --out a file name, or "
             "leave out --json", EXIT_USAGE)
    return to_stdout


def _dataset_command(verb: str, src, dst, progress, workers, scheduler, json_: bool, run,
                     run_on_dask, *args, **options) -> None:
    """``verb`` (compress / decompress) the dataset ``src`` into the folder ``dst`` and show
    the results: ``run(src, dst, *args, progress=bar, **options)`` here with a progress bar,
    or with ``workers`` / ``scheduler`` ``run_on_dask(..., client=client, ...)`` on Dask."""
    _start_dataset(src, dst)
    if workers or scheduler:
        with on_dask.local_client(workers, scheduler=scheduler, quiet=True) as client:
            results = run_on_dask(src, dst, *args, client=client, **options)
    else:
        with DatasetProgress(f"{verb} {printable(src)}", progress) as bar:
            results = run(src, dst, *args, progress=bar, **options)
    _show_dataset(results, f"{verb}ed", src, dst, json_)


def _file_command(verb: str, src, dst, format, progress, json_: bool, run, *args, **options):
    """``(info, OUT)`` of ``verb`` (compress / decompress) of one file: ``run(input, output,
    *args, format=..., progress=bar, **options)``'s info, timed, and :func:`_into_folder`'s OUT."""
    t0 = time.perf_counter()
    dst = _into_folder(src, dst)
    with _files(src, dst, format, json_) as (path, out, fmt), FileProgress(
            f"{verb} {printable(Path(src).name)}", progress) as bar:
        info = run(path, out, *args, format=fmt, progress=bar, **options)
    info["seconds"] = time.perf_counter() - t0
    return info, dst


def _show_file(info: dict, verb: str, src, dst, json_: bool, sizes: list) -> None:
    """A one-file run's ``info``: JSON, or a table (``sizes``: rows after the string bytes)."""
    if json_:
        print_json(info)
        return
    _results_console(dst).print(kv_table(f"{verb} {src} -> {dst}", [
        ("format", info["format"]),
        ("device", info["device"]),
        ("rows", f"{info['rows']:,}"),
        ("row groups / batches", info["units"]),
        ("fsst columns", ", ".join(info["columns"]) or "(none)"),
        ("string bytes", human_bytes(info["string_bytes"])),
        *sizes,
        ("file size", f"{human_bytes(info['input_bytes'])} -> "
                      f"{human_bytes(info['output_bytes'])}"),
        ("time", f"{info['seconds']:.3f} s"),
    ]))


# --------------------------------------------------------------------------- files
@app.command()
def compress(
    src: DataIn,
    dst: OutFile,
    columns: Annotated[str | None, typer.Option(
        metavar="COL[,COL...]",
        help="Columns to compress, comma-separated (default: every string or binary column not "
             "dictionary encoded, and every list, struct or map column holding strings).")
    ] = None,
    format: FormatOpt = None,
    sample_bytes: Annotated[int | None, typer.Option(
        min=1, metavar="BYTES",
        help="Training sample size per table (default: the level's).")
    ] = None,
    level: LevelOpt = Level.default,
    table: Annotated[Path | None, typer.Option(
        exists=True, dir_okay=False, metavar="FILE",
        help="Use this symbol table (from `fsstgpu train`) for every column.")] = None,
    parquet_codec: Annotated[ParquetCodec, typer.Option(
        help="Parquet codec for the compressed columns' pages (zstd level 3; `none` keeps the "
             "codes as they are); other columns are stored zstd unless the input's codec is as "
             "strong, and `decompress` gives every column its input codec back.")
    ] = ParquetCodec.zstd,
    zstd_level: Annotated[int | None, typer.Option(
        min=1, max=22, metavar="LEVEL",
        help="zstd level of the compressed columns' pages (default 3; higher: smaller, slower).")
    ] = None,
    row_group_rows: Annotated[int | None, typer.Option(
        min=1, metavar="ROWS",
        help="Rows per output row group / batch (default: the input's are kept).")] = None,
    device: EncodeDeviceOpt = Device.cpu,
    force: ForceOpt = False,
    progress: ProgressOpt = True,
    workers: WorkersOpt = None,
    scheduler: SchedulerOpt = None,
    json_: JsonOpt = False,
):
    """Compress the string columns of a Parquet / Arrow IPC file or dataset with FSST."""
    options = dict(sample_bytes=sample_bytes, table=table, parquet_codec=parquet_codec.value,
                   zstd_level=zstd_level, row_group_rows=row_group_rows, level=level.value,
                   device=device.value)
    with handle_errors():
        if dataset_in(src, format, workers, scheduler):
            _dataset_command("compress", src, dst, progress, workers, scheduler, json_,
                             compress_dataset, on_dask.compress_dataset, columns, force=force,
                             **options)
            return
        info, dst = _file_command("compress", src, dst, format, progress, json_, compress_file,
                                  columns, force=force, **options)
        info["ratio"] = info["string_bytes"] / (info["codes_bytes"] or float("nan"))
        _show_file(info, "compressed", src, dst, json_, [
            ("codes bytes", human_bytes(info["codes_bytes"])),
            ("string / codes ratio", fmt_ratio(info["ratio"])),
        ])


@app.command()
def decompress(
    src: DataIn,
    dst: OutFile,
    device: DecodeDeviceOpt = Device.auto,
    format: FormatOpt = None,
    force: ForceOpt = False,
    progress: ProgressOpt = True,
    workers: WorkersOpt = None,
    scheduler: SchedulerOpt = None,
    json_: JsonOpt = False,
):
    """Restore the string columns of a file or dataset written by `fsstgpu compress`."""
    with handle_errors():
        if dataset_in(src, format, workers, scheduler):
            _dataset_command("decompress", src, dst, progress, workers, scheduler, json_,
                             decompress_dataset, on_dask.decompress_dataset,
                             device=device.value, force=force)
            return
        info, dst = _file_command("decompress", src, dst, format, progress, json_,
                                  decompress_file, device=device.value, force=force)
        _show_file(info, "decompressed", src, dst, json_, [])


@app.command()
def inspect(
    path: Annotated[PathOrUrl, typer.Argument(
        parser=PathOrUrl, callback=one_file, metavar="FILE",
        help="Parquet or Arrow IPC file, or its URL (- reads standard input).")],
    json_: JsonOpt = False,
):
    """Show each column's (and nested fsst leaf's) codec, sizes, ratios (string bytes / (codes +
    symbol tables), and / stored bytes), symbol tables, row groups and an IPC file's body codec."""
    with handle_errors():
        with stdin_file(path) as name:
            info = inspect_file(name)
        if name != path:  # (- or a pipe: read from a temporary copy, gone by now)
            info["path"] = "<stdin>" if path == STDIO else str(path)
        if json_:
            print_json(info)
            return
        show_inspection(out_console(), info, info["path"] if path == STDIO else path)


# --------------------------------------------------------------------------- round trip
@app.command()
def roundtrip(
    path: Annotated[FileOrDataset, typer.Argument(
        parser=FileOrDataset, callback=roundtrip_source, metavar="PATH",
        help="A Parquet / Arrow IPC file (- reads standard input), a text file (one string per "
             "line), a dataset of files (a folder, its files recursively, or a quoted glob "
             "pattern: each file round-trips on its own, the figures are their sums), or a "
             "dataset name (see `fsstgpu datasets list`).")],
    bench: Annotated[bool, typer.Option(
        "--bench", help="Time compress and decompress over several runs (best of N).")] = False,
    runs: Annotated[int, typer.Option(min=1, metavar="N",
                                      help="Runs per timing with --bench.")] = 5,
    device: DecodeDeviceOpt = Device.auto,
    level: LevelOpt = Level.default,
    json_: JsonOpt = False,
):
    """Compress and decompress PATH, check the result equals the input, print ratio and speed."""
    with handle_errors():
        warm_up(device.value)
        runs = runs if bench else 1
        if not is_dataset_name(path) and is_dataset(path):
            _start_dataset(path, None)
            result = roundtrip_dataset(path, device.value, runs, level.value)
        else:
            with stdin_file(path) as name:
                p = Path(name)
                if not is_dataset_name(name) and p.is_file() and detect_format(p) is not None:
                    result = roundtrip_file(p, device.value, runs, level.value)
                else:
                    result = roundtrip_column(name, device.value, runs, level.value)
            if name != path:  # (- or a pipe: read from a temporary copy, gone by now)
                result["source"] = "<stdin>" if path == STDIO else str(path)
        if json_:
            print_json(result)
        else:
            out_console().print(kv_table(f"round trip of {path}", [
                (k.replace("_MB_s", " MB/s").replace("_", " "), format_value(k, v))
                for k, v in result.items()
            ]))
        if not result["equal"]:
            fail(f"{result.get('differs', path)}: round trip mismatch: the decompressed data "
                 "differs from the input")


# --------------------------------------------------------------------------- bench
@app.command()
def bench(
    paths: Annotated[list[str] | None, typer.Argument(
        help="Text files (one string per line) to benchmark (default: the dbtext corpus); or "
             "the single word `kernels` (the GPU data-movement kernels) or `files` (Parquet "
             "files of real text against pyarrow's, benchmarks/files.py).",
        metavar="[PATH ...] | kernels | files")] = None,
    device: Annotated[BenchDevice, typer.Option(
        help="cpu: the CPU codec; gpu: the GPU decoder, then its size sweep, then the GPU "
             "encoder beside nvCOMP's compressors.")
    ] = BenchDevice.cpu,
    target_mib: Annotated[int, typer.Option(
        min=1, metavar="MIB", help="GPU bench: replicate the data to about this many MiB.")
    ] = 1024,
    nvcomp: Annotated[bool, typer.Option(
        help="GPU bench: also time nvCOMP's codecs on the same bytes, in a child process (when "
             "nvidia.nvcomp imports).")] = True,
    threads: Annotated[int | None, typer.Option(
        min=1, metavar="N",
        help="CPU bench: a scaling table over 1, 2, 4, ... N cores of the PATHs as one column, "
             "beside pyarrow's LZ4 and zstd; with --reference: fsstgpu and pyarrow on N cores "
             "(default 1).")] = None,
    level: BenchLevelOpt = Level.default,
    reference: Annotated[str | None, typer.Option(
        metavar="LIB_OR_SRC",
        help="CPU bench: the reference FSST beside fsstgpu, LZ4 and zstd, interleaved, on the "
             "PATHs or corpora: a checkout of github.com/cwida/fsst (built once, under "
             "~/.cache/fsstgpu) or a library the reference_fsst benchmark built. PATH may name "
             "a corpus: dbtext, dbtext-column, doc-lines, usr-paths, stdlib-lines (default: all "
             "five).")
    ] = None,
    repeats: Annotated[int, typer.Option(
        min=1, metavar="N", help="With --reference: timed runs per figure (the best counts).")
    ] = 5,
    reference_table_mb: Annotated[float | None, typer.Option(
        min=0.001, metavar="MB",
        help="With --reference: also the reference with a new table every MB of strings.")
    ] = None,
    rows: Annotated[int, typer.Option(
        min=1, metavar="N",
        help="`bench files`: rows of the table built from this machine's text.")
    ] = 1_500_000,
    plot: Annotated[str | None, typer.Option(
        metavar="FILE",
        help="GPU bench: draw the size sweep (1 MiB - 1 GiB, batches, host columns, nvCOMP) "
             "into FILE.svg (or FILE.png, with matplotlib installed); an existing FILE only "
             "with --force.")] = None,
    force: Annotated[bool, typer.Option(  # (no -f: a short-flag column crops the help at 80)
        "--force", help="Replace an existing --plot FILE.")] = False,
    json_: JsonOpt = False,
):
    """Benchmark compression and decompression beside their yardsticks.

    `fsstgpu bench kernels`: the GPU kernels; `fsstgpu bench files`: Parquet sizes, writes,
    reads and reads onto the GPU against pyarrow. The benchmarks live in the source checkout's
    benchmarks/ folder (they are not installed): run this from a clone with an editable install
    (exit code 2 otherwise): cpu.py, cpu_scaling.py (--threads), reference_bench.py
    (--reference), gpu.py, gpu_sizes.py, gpu_encode.py (--device gpu) and files.py there.
    """

    with handle_errors():
        run_bench(list(paths or []), device=device, target_mib=target_mib, nvcomp=nvcomp,
                  threads=threads, reference=reference, repeats=repeats,
                  reference_table_mb=reference_table_mb, rows=rows, json_=json_, plot=plot,
                  level=level.value, force=force)


# --------------------------------------------------------------------------- train
@app.command()
def train(
    src: Annotated[FileOrDataset, typer.Argument(
        parser=FileOrDataset, callback=dataset_or_file, metavar="IN",
        help="Text file (one string per line), Parquet / Arrow IPC file (- reads standard "
             "input), or dataset name.")],
    out: Annotated[PathOrUrl, typer.Option(
        "--out", "-o", metavar="FILE", parser=PathOrUrl,  # as typed: a Path made ./- stdout
        help="Where to write the symbol table (SymbolTable.to_bytes()); - writes standard "
             "output (the results table goes to stderr).")],
    column: Annotated[str | None, typer.Option(
        "--column", metavar="COLUMN",  # (named: typer 0.27 made it --COLUMN)
        help="Column of a Parquet / IPC input (default: its first string column).")] = None,
    sample_bytes: Annotated[int | None, typer.Option(
        min=1, metavar="BYTES", help="Training sample size (default: fsstgpu.train's).")
    ] = None,
    force: ForceOpt = False,
    json_: JsonOpt = False,
):
    """Train a symbol table and save it, for `fsstgpu compress --table`."""
    with handle_errors():
        to_stdout = _out_is_stdout(out, json_)
        inputs = [] if is_dataset_name(src) or src == STDIO else [src]
        if not to_stdout:
            check_output(out, force=force, inputs=inputs)
        with err_console().status(f"training on {printable(src)}"), \
                stdin_file(src, output=out) as name:
            table = fsstgpu.train(load(name, column=column), sample_bytes=sample_bytes)
        data = table.to_bytes()
        with stdout_file(str(out), ".fsst") as dst:
            if to_stdout:
                Path(dst).write_bytes(data)
            else:
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
        _results_console(str(out)).print(kv_table(f"symbol table from {src}", [
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
    name: Annotated[GeneratorName, typer.Argument(
        parser=GeneratorName, callback=generator_name, metavar="NAME",
        help="Generator name (see `fsstgpu datasets list`).")],
    rows: Annotated[int, typer.Option(min=0, metavar="N", help="Number of rows to generate.")],
    out: Annotated[PathOrUrl, typer.Option(
        "--out", "-o", metavar="FILE", parser=PathOrUrl,  # as typed: a Path made ./- stdout
        help="Output file: .parquet/.pq, .arrow/.feather/.ipc or .arrows (or give --format); "
             "- writes standard output (format: --format, else parquet).")],
    seed: Annotated[int, typer.Option(
        min=0, metavar="N", help="Random seed (same seed, same bytes).")] = 0,
    row_group_rows: Annotated[int | None, typer.Option(
        min=1, metavar="N", help="Rows per Parquet row group / IPC record batch (default: "
        "pyarrow's).")] = None,
    format: Annotated[FileFormat | None, typer.Option(
        "--format", help="Output format (default: the one the suffix of --out names).")] = None,
    force: ForceOpt = False,
    json_: JsonOpt = False,
):
    """Generate a synthetic string column and write it as a one-column file (column NAME)."""
    with handle_errors():
        import pyarrow as pa

        to_stdout = _out_is_stdout(out, json_)
        if to_stdout:
            fmt = format.value if format is not None else "parquet"
        else:
            fmt = output_format_of(out, format)
            check_output(out, force=force)
        with err_console().status(f"generating {rows:,} rows of {name}"), \
                stdout_file(str(out), suffix_for(fmt)) as dst:
            table = pa.table({name: generate(name, rows, seed)})
            with contextlib.nullcontext(dst) if to_stdout else atomic_output(
                    out, force=force) as tmp:
                write_table(table, tmp, fmt, rows_per_unit=row_group_rows)
            size = file_size(dst)   # (a URL's object, in its store: Path.stat said "no such file")
        info = {"name": name, "rows": rows, "seed": seed, "format": fmt, "out": str(out),
                "bytes": size}
        if json_:
            print_json(info)
            return
        _results_console(str(out)).print(kv_table(f"generated {name}", list(info.items())))


def main():
    """Entry point of the ``fsstgpu`` console script.

    Runs the app with SIGINT, SIGTERM and SIGHUP stopping a command cleanly (exit 128 + the
    signal number, see :mod:`fsstgpu.cli.signals`), also when Python had to ignore the
    interrupt, and with warnings shown as one line each.
    """
    with stop_signals() as received, warnings.catch_warnings():
        warnings.showwarning = warning_line
        try:
            app()
            code = 0
        except SystemExit as exc:
            code = exc.code
        except KeyboardInterrupt:  # a stop signal while typer builds the command
            code = None if received else 130
    if received and code != 128 + received[0]:
        sys.stderr.write(f"fsstgpu: error: stopped by {signal.Signals(received[0]).name}\n")
        code = 128 + received[0]
    sys.exit(code)


if __name__ == "__main__":
    main()
