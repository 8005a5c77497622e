"""``fsstgpu bench``: which benchmark of the checkout's ``benchmarks/`` folder runs, and how.

The benchmarks are not installed (they live in the source checkout); :func:`run_bench` picks one
from the command line's words and options and prints its table (or JSON).
"""

from __future__ import annotations

from pathlib import Path

import typer

import fsstgpu
from fsstgpu.cli.output import EXIT_USAGE, fail, note, out_console, print_json
from fsstgpu.cli.params import BenchDevice
from fsstgpu.datasets import dbtext_files, dbtext_table, load_lines, machine_text_table
from fsstgpu.device import gpu_available, resolve_device
from fsstgpu.formats.atomic import atomic_output, check_output

__all__ = ["run_bench"]


def run_bench(paths: list[str], *, device: BenchDevice, target_mib: int, nvcomp: bool,
              threads: int | None, reference: str | None, repeats: int,
              reference_table_mb: float | None, rows: int, json_: bool,
              plot: str | None = None, level: str = "default", force: bool = False) -> None:
    """Run the benchmark the command line asks for (see ``fsstgpu bench --help``)."""

    # options the chosen bench does not read: refused, as --threads with --device gpu is (they
    # were ignored without a word, the figures printed as if they applied)
    if reference_table_mb is not None and reference is None:
        fail("--reference-table-mb goes with --reference", EXIT_USAGE)
    if paths in (["kernels"], ["files"]):
        unread = [name for name, given in (
            ("--threads", threads is not None), ("--reference", reference is not None),
            ("--level", level != "default"), ("--plot", plot is not None)) if given]
        if unread:
            fail(f"`fsstgpu bench {paths[0]}` takes no {', '.join(unread)}", EXIT_USAGE)
    if plot is not None:
        _check_plot(plot, device, force)

    if paths == ["kernels"]:
        resolve_device("gpu")
        kernels = _benchmarks("kernels")
        _show(kernels.run_kernel_bench(), kernels.format_kernel_bench, json_)
        return
    if paths == ["files"]:
        _bench_files(rows, json_)
        return
    for word in ("kernels", "files"):
        if word in paths:  # a usage error (exit 2), as a misplaced option is
            fail(f"`{word}` takes no paths: run `fsstgpu bench {word}` alone (write ./{word} "
                 "for a file of that name)", EXIT_USAGE)
    if reference is not None:
        if device is BenchDevice.gpu:
            fail("--reference goes with --device cpu (the reference decodes on the CPU)",
                 EXIT_USAGE)
        _bench_reference(paths, reference, threads or 1, repeats, reference_table_mb,
                         json_)
        return
    if not paths:
        paths = [str(p) for p in dbtext_files()]
        if not paths:
            fail("no PATH given and the dbtext corpus was not found: name text files, or set "
                 "FSSTGPU_DBTEXT to the corpus folder", EXIT_USAGE)
    for p in paths:
        if not Path(p).is_file():
            fail(f"{p}: no such file", EXIT_USAGE)
        _refuse_empty(p)
    if device is BenchDevice.gpu and threads is not None:
        fail("--threads goes with --device cpu (the GPU bench uses the GPU)", EXIT_USAGE)
    if device is BenchDevice.gpu and level != "default":
        fail("--level goes with --device cpu (the GPU bench encodes with one table)", EXIT_USAGE)
    if device is BenchDevice.gpu:
        # The size sweep and the encode bench cut the dbtext corpus to their sizes, whatever
        # PATHs are named: without it they are left out (they failed after the per-file bench,
        # its results unprinted).
        corpus = bool(dbtext_files())
        if plot is not None and not corpus:
            fail("--plot draws the size sweep, which runs on the dbtext corpus: it was not "
                 "found (set FSSTGPU_DBTEXT to its folder)", EXIT_USAGE)
        resolve_device("gpu")
        if not corpus:
            note("the dbtext corpus was not found (FSSTGPU_DBTEXT): the size sweep and the GPU "
                 "encode bench, which run on it, are left out")
        gpu = _benchmarks("gpu")
        say = lambda msg: typer.echo(f".. {msg}", err=True)  # noqa: E731
        rows = gpu.run_gpu_bench(paths, target_mib * 2**20, nvcomp=nvcomp, progress=say)
        sizes, encode = _benchmarks("gpu_sizes"), _benchmarks("gpu_encode")
        sweep = sizes.run(nvcomp=nvcomp, progress=say) if corpus else []
        encoded = encode.run(nvcomp=nvcomp, progress=say) if corpus else []
        if json_:
            print_json({"files": rows, "sweep": sweep, "encode": encoded})
        else:
            _show(rows, gpu.format_gpu_bench, False)
            if corpus:
                _show(sweep, sizes.format_sweep, False)
                _show(encoded, encode.format_encode, False)
        if plot is not None:  # last: a plot that fails to draw loses no measurement
            with atomic_output(plot, force=force) as tmp:   # whole or not at all, as outputs are
                _benchmarks("sweep_plot").draw_sweep(sweep, tmp,
                                                     kind=Path(plot).suffix.lower()[1:])
            say(f"plot: {plot}")
    elif threads is not None:
        import pyarrow as pa


        scaling = _benchmarks("cpu_scaling")
        column = pa.chunked_array([load_lines(p, binary=True) for p in paths])
        _show(scaling.cpu_scaling(column, threads=threads, level=level), scaling.format_rows,
              json_)
    else:
        cpu = _benchmarks("cpu")
        _show(cpu.run_cpu_bench(paths, level=level), cpu.format_cpu_bench, json_)


def _bench_reference(paths: list[str], reference: str, threads: int, repeats: int,
                     table_mb: float | None, json_: bool) -> None:
    """`fsstgpu bench --reference`: the reference FSST beside fsstgpu, LZ4 and zstd."""

    corpora = _benchmarks("corpora")
    ref_fsst = _benchmarks("reference_fsst")
    compare = _benchmarks("reference_bench")
    say = lambda msg: typer.echo(f".. {msg}", err=True)  # noqa: E731
    inputs = []
    for p in paths or corpora.CORPORA:
        if p in corpora.CORPORA:
            say(f"loading the corpus {p}")
            inputs.append((p, corpora.load_corpus(p)))
        elif Path(p).is_file():
            _refuse_empty(p)
            inputs.append((p, [(Path(p).name, load_lines(p))]))
        else:
            fail(f"{p}: no such file, nor a corpus ({', '.join(corpora.CORPORA)})",
                 EXIT_USAGE)
    say(f"reference FSST from {reference}")
    ref = ref_fsst.load(reference)
    say(f"reference library {ref.path}")
    rows = compare.compare(inputs, reference=ref, threads=threads, repeats=repeats,
                           table_mb=table_mb, progress=say)
    _show(rows, compare.format_table, json_)


def _refuse_empty(path: str) -> None:
    """Exit 2 when the text file ``path`` holds no string bytes (empty, or empty lines only).

    Nothing can be timed on it: the CPU bench printed 0 MB/s rows as if measured, and the
    scaling and reference benches divided by its zero speeds.
    """
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            if chunk.strip(b"\n"):  # (a \r is kept in its string: a byte to time)
                return
    fail(f"{path}: no string bytes to time (an empty file, or empty lines only)", EXIT_USAGE)


def _check_plot(plot: str, device: BenchDevice, force: bool) -> None:
    """Refuse a --plot that cannot be drawn before anything is measured: exit 2 for a misused
    option, and check_output's errors (exit 1) for an existing file without ``force`` or a
    missing folder, which were found (or the file replaced) only after the whole run."""
    if device is not BenchDevice.gpu:
        fail("--plot draws the GPU size sweep: it goes with --device gpu", EXIT_USAGE)
    problem = _benchmarks("sweep_plot").plot_path_problem(plot)
    if problem:
        fail(f"--plot {plot}: {problem}", EXIT_USAGE)
    check_output(plot, force=force)


def _bench_files(rows: int, json_: bool) -> None:
    """`fsstgpu bench files`: this machine's text (and dbtext, when found) as tables."""

    files = _benchmarks("files")
    say = lambda msg: typer.echo(f".. {msg}", err=True)  # noqa: E731
    say(f"building the machine-text table ({rows:,} rows)")
    tables = {"machine_text": machine_text_table(rows)}
    if dbtext_files():
        tables["dbtext"] = dbtext_table()
    out = files.run_files_bench(tables, gpu=gpu_available(), progress=say)
    _show(out, files.format_files_bench, json_)


def _benchmarks(name: str):
    """Module ``benchmarks.<name>`` of the source checkout fsstgpu runs from.

    The benchmarks are not installed; an editable install (or Python started in the checkout)
    has them beside the package. Exits with code 2 when there is no such folder.
    """
    import importlib
    import sys


    root = Path(fsstgpu.__file__).resolve().parent.parent
    if not (root / "benchmarks" / "__init__.py").is_file():
        fail("the benchmarks need a source checkout (they are not installed): clone the "
             "repository, `pip install -e .` there and run `fsstgpu bench` again", 2)
    sys.path.insert(0, str(root))
    try:
        return importlib.import_module(f"benchmarks.{name}")
    finally:
        sys.path.remove(str(root))


def _show(rows, formatter, json_: bool) -> None:
    if json_:
        print_json(rows)
        return
    text = formatter(rows)
    if isinstance(text, str):
        typer.echo(text)
    else:
        out_console().print(text)
