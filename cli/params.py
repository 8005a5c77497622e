"""The command line's argument and option types, and the checks that turn bad values into
usage errors (exit 2) listing the valid choices."""

from __future__ import annotations

import errno
import glob
import os
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from fsstgpu.cli.output import EXIT_USAGE, fail, printable
from fsstgpu.cli.stdio import is_stream
from fsstgpu.datasets import GENERATORS, is_dataset_name
from fsstgpu.formats.atomic import refuse_missing_folder
from fsstgpu.formats.locations import Url, is_url, local_text
from fsstgpu.formats.sniff import output_format


class FileFormat(str, Enum):
    """Output formats (``fsstgpu.formats.sniff.FORMATS``)."""

    parquet = "parquet"
    arrow = "arrow"
    arrows = "arrows"


class Device(str, Enum):
    auto = "auto"
    cpu = "cpu"
    gpu = "gpu"


class Level(str, Enum):
    """Compression levels (``fsstgpu.blocks.LEVELS``)."""

    fast = "fast"
    default = "default"


class BenchDevice(str, Enum):
    cpu = "cpu"
    gpu = "gpu"


class ParquetCodec(str, Enum):
    """Parquet codecs (``fsstgpu.formats.rowgroups.PARQUET_CODECS``)."""

    none = "none"
    snappy = "snappy"
    gzip = "gzip"
    brotli = "brotli"
    lz4 = "lz4"
    zstd = "zstd"


def dataset_or_file(value: str) -> str:
    """Accept an existing file, ``-`` (stdin) or a dataset name; otherwise a usage error (a
    folder or a device is named as such; a missing name gets the list of dataset names)."""

    if is_dataset_name(value) or value == "-":  # - : standard input (cli/stdio.py)
        return value
    looked_at(value)
    path = Path(value)
    if path.is_dir():  # a folder of files is a dataset for compress / decompress, not here
        raise typer.BadParameter(
            f"{printable(value)!r} is a folder: give one file (Parquet / Arrow IPC, or text "
            "with one string per line) or a dataset name; `fsstgpu compress` and "
            "`decompress` take a folder of files")
    if path.exists() and not path.is_file() and not is_stream(path):
        raise typer.BadParameter(f"{printable(value)!r} is not a regular file")
    if not path.exists():
        raise typer.BadParameter(
            f"{printable(value)!r} is neither a file nor a dataset name (generators: "
            f"{', '.join(GENERATORS)}; sample; dbtext:<file>; see `fsstgpu datasets list`)")
    return value


def one_file(value: str) -> str:
    """FILE of ``inspect``: an existing regular file, a URL (checked when opened) or ``-``
    (stdin); otherwise a usage error saying what it is instead."""

    path = Path(value)
    if value == "-" or is_url(value) or (looked_at(value) and path.is_file()) or is_stream(path):
        return value
    if path.is_dir():
        raise typer.BadParameter(f"{printable(value)!r} is a folder: give one file")
    if path.exists():
        raise typer.BadParameter(f"{printable(value)!r} is not a regular file")
    raise typer.BadParameter(f"{printable(value)!r}: no such file")


def roundtrip_source(value: str) -> str:
    """PATH of ``roundtrip``: what :func:`dataset_or_file` accepts, a dataset of files (a
    folder, a glob pattern matching files) or ``-`` (stdin); otherwise a usage error."""

    if value == "-":
        return value
    if not is_dataset_name(value):
        if looked_at(value):  # a file named like a glob pattern is that file
            if Path(value).is_dir():
                return value
        elif glob.has_magic(value) and glob.glob(value, recursive=True):
            return value
    return dataset_or_file(value)


def generator_name(value: str) -> str:
    if value not in GENERATORS:
        raise typer.BadParameter(f"unknown generator {value!r}; choose from "
                                 f"{', '.join(sorted(GENERATORS))}")
    return value


def output_format_of(dst: Path, format: FileFormat | None) -> str:
    """OUT's format: ``--format``, else the one OUT's suffix names, else a usage error (a
    name ending in ``/`` that is no folder: that it is not one, not that it has no suffix)."""

    try:
        if not is_url(dst):
            refuse_missing_folder(dst)
        return output_format(dst, None if format is None else format.value)
    except (ValueError, NotADirectoryError) as exc:
        fail(str(exc), EXIT_USAGE)


def input_location(value: str) -> str:
    """IN of compress / decompress: an existing file or folder, a pipe (read as stdin is), a
    glob pattern matching files, a URL (checked when opened) or ``-`` (stdin); otherwise a
    usage error."""

    if value == "-" or is_url(value):
        return value
    path = Path(value)
    if looked_at(value):  # a file named like a glob pattern is that file
        if not (path.is_file() or path.is_dir() or is_stream(path)):
            raise typer.BadParameter(f"{printable(value)!r} is not a regular file (a device or "
                                     "socket): give a file, a folder, a pipe or - (stdin)")
        return value
    if glob.has_magic(value) and glob.glob(value, recursive=True):
        return value
    raise typer.BadParameter(f"{printable(value)!r}: no such file, folder or matching files")


def looked_at(value: str) -> bool:
    """Whether the local path ``value`` names something; a usage error naming the reason when
    it cannot be looked at (a folder on the way without permission, a name too long, a loop of
    symbolic links), where pathlib's ``exists()`` raises.

    Examples
    --------
    >>> looked_at("/"), looked_at("/no/such/path")
    (True, False)
    """
    try:
        os.stat(value)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ENOTDIR):
            return False
        raise typer.BadParameter(f"{printable(value)!r}: {exc.strerror}") from None
    return True


class FileOrDataset(str):
    """A file path or a dataset name (``urls``, ``sample``, ``dbtext:<file>``); the name is what
    --help shows as its type."""


class GeneratorName(str):
    """The name of a dataset generator (``fsstgpu datasets list``)."""


class PathOrUrl(str):
    """A local path, glob pattern or URL, kept as typed (a Path would fold ``s3://`` to ``s3:/``;
    the name is what --help shows as its type), but for a ``file://`` or ``local://`` URL: the
    local path it names, so that every check of inputs against outputs sees paths."""

    def __new__(cls, value):
        if value == "":  # ("" would be taken as the current folder)
            raise typer.BadParameter("an empty path names no file or folder")
        return super().__new__(cls, local_text(value))


DataIn = Annotated[PathOrUrl, typer.Argument(
    metavar="IN", parser=PathOrUrl, callback=input_location,
    help="Input Parquet or Arrow IPC file (- reads standard input, and a pipe such as "
         "<(command) is read the same way); or a dataset: a folder (its Parquet / Arrow IPC "
         "files, recursively), a "
         "quoted glob pattern, or an fsspec URL (s3://, gs://, memory://) of either.")]


def is_dataset(value: str) -> bool:
    """Whether IN is a dataset: a folder, or a glob pattern that is not itself a file's name."""
    if is_url(value):
        return glob.has_magic(value) or Url(value).is_dir()
    if looked_at(value):
        return Path(value).is_dir()
    return glob.has_magic(value)


def dataset_in(src: str, format, workers, scheduler) -> bool:
    """Whether IN is a dataset (:func:`is_dataset`), once the options its kind has no use for
    are refused as usage errors: ``--format`` for a dataset (its outputs keep their inputs'
    names and formats), ``--workers`` / ``--scheduler`` for one file (they spread a dataset's
    files over Dask workers; one file was written without them and without a word)."""
    dataset = is_dataset(src)
    if dataset and format is not None:
        fail("--format names one output file's format; a dataset's outputs keep their inputs' "
             "names and formats", EXIT_USAGE)
    if not dataset and (workers or scheduler):
        fail("--workers and --scheduler spread a dataset's files over Dask workers; IN is one "
             "file", EXIT_USAGE)
    return dataset


OutFile = Annotated[PathOrUrl, typer.Argument(
    metavar="OUT", parser=PathOrUrl,
    help="Output file (or URL); its suffix names the format (.parquet/.pq, .arrow/.feather/.ipc, "
         ".arrows) unless --format is given; - writes standard output (format: --format, else "
         "the input's); an existing folder gets the file under IN's name, as cp does; for a "
         "dataset IN, the output folder.")]
FormatOpt = Annotated[FileFormat | None, typer.Option(
    "--format", help="Output format (default: the one OUT's suffix names).")]
JsonOpt = Annotated[bool, typer.Option(
    "--json", help='Print machine-readable JSON on stdout; an error too, as {"error": message, '
                   '"kind": kind, "exit_code": code} (kind: usage, error, device, corrupt, '
                   'interrupted or stopped).')]
ForceOpt = Annotated[bool, typer.Option("--force", "-f", help="Overwrite an existing output.")]
LevelOpt = Annotated[Level, typer.Option(
    help="Compression level: `default` trains a table for each stretch of similar text (the "
         "best ratio); `fast` a cheaper table per MiB (1.4-8x faster, 73-98% of the ratio).")]
BenchLevelOpt = Annotated[Level, typer.Option(
    "--level", help="CPU bench and scaling table: the compression level timed (with --reference "
                    "both are).")]
DecodeDeviceOpt = Annotated[Device, typer.Option(
    help="Where to decode: auto takes FSSTGPU_DEVICE when it is set, else the GPU when one is "
         "usable.")]
EncodeDeviceOpt = Annotated[Device, typer.Option(
    "--device", help="Where to encode the strings: gpu uploads each row group's strings and "
                     "encodes them there (the same file, byte for byte); auto takes FSSTGPU_DEVICE "
                     "when it is set, else the GPU when one is usable. Training and writing stay "
                     "on the CPU.")]
ProgressOpt = Annotated[bool, typer.Option("--progress/--no-progress",
                                           help="Show a progress bar on stderr (terminals only).")]
WorkersOpt = Annotated[int | None, typer.Option(
    min=1, metavar="N",
    help="A dataset IN: compress / decompress its files on a local Dask cluster of N worker "
         "processes (pip install 'fsstgpu\\[dask]').")]  # rich markup: \\[ shows a [
SchedulerOpt = Annotated[str | None, typer.Option(
    metavar="ADDRESS",
    help="A dataset IN: run its files on the Dask cluster at this scheduler address "
         "(tcp://host:8786); the workers must see IN and OUT (shared filesystem or URLs).")]
