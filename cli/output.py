"""What the CLI prints and how it fails: consoles, tables, JSON, progress bars, exit codes.

Results go to stdout (a rich table, or JSON with ``--json``); progress, warnings and errors go to
stderr. An error is one line naming the file and the problem, never a traceback (set
``FSSTGPU_TRACEBACK=1`` to get one when debugging); the exit code says what kind of error it was.
File names are printed with any bytes that are not UTF-8 as ``\\xNN`` (:func:`printable`).
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import re
import select
import sys
import time

import typer
from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    SpinnerColumn,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Column, Table
from rich.text import Text

from fsstgpu.cli.signals import Stopped
from fsstgpu.device import DEVICES
from fsstgpu.errors import CorruptDataError, DeviceError, OptionError
from fsstgpu.formats.datasets import DatasetOutputError
from fsstgpu.formats.files import NotCompressedError
from fsstgpu.formats.rowgroups import MissingInputError
from fsstgpu.formats.selection import ColumnSelectionError

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_DEVICE = 3
EXIT_CORRUPT = 4
EXIT_INTERRUPTED = 130
#: the reader of standard output went away (``| head``): as a tool killed by SIGPIPE
EXIT_BROKEN_PIPE = 128 + 13

EXIT_CODES_HELP = (
    "Exit codes: 0 ok; 1 other error (output exists, I/O error such as a permission denied); "
    "2 usage error (bad option or "
    "argument, missing input file, unknown output format, no such column, decompress of a file "
    "fsstgpu did not compress, a dataset's output named as a file or inside its input); 3 GPU "
    "requested but "
    "unavailable; 4 corrupt input, or not a file of its format; 128+N stopped by signal N "
    "(130 Ctrl-C, 143 "
    "SIGTERM, 129 SIGHUP; no partial file is left: a dataset keeps the files it finished; "
    "141, quietly, when the reader of "
    "standard output went away)."
)


#: The ``kind`` of an error under ``--json``, by exit code (128 + N: ``"stopped"``).
ERROR_KINDS = {EXIT_ERROR: "error", EXIT_USAGE: "usage", EXIT_DEVICE: "device",
               EXIT_CORRUPT: "corrupt", EXIT_INTERRUPTED: "interrupted"}


def error_kind(code: int) -> str:
    """What an exit code says went wrong, in one word (``--json`` errors' ``kind``).

    >>> from fsstgpu.cli.output import error_kind
    >>> error_kind(2), error_kind(4), error_kind(143)
    ('usage', 'corrupt', 'stopped')
    """
    return ERROR_KINDS.get(code, "stopped" if isinstance(code, int) and code > 128 else "error")


class _StdoutConsole(Console):
    """A console on stdout that ends as the rest of the command line does when the reader
    of stdout goes away (``fsstgpu inspect f | head``): quietly, exit 141 (rich's own: 1)."""

    def on_broken_pipe(self) -> None:
        _silence_stdout()
        raise SystemExit(EXIT_BROKEN_PIPE)


def out_console() -> Console:
    """The console for results (stdout); made per call so that test runners can capture it.

    Piped output gets a wide page (rich would assume 80 columns and squash wide tables).
    """
    _tolerant(sys.stdout)
    console = _StdoutConsole(file=sys.stdout, soft_wrap=True)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = 200
    return console


def err_console() -> Console:
    """The console for progress and errors (stderr)."""
    _tolerant(sys.stderr)
    return Console(file=sys.stderr, soft_wrap=True)


def _tolerant(stream) -> None:
    """Let ``stream`` show what its encoding lacks as ``\\xNN`` / ``\\uNNNN`` (a C or Latin-1
    locale, PYTHONIOENCODING=ascii): a table naming ``caf\u00e9.parquet`` raised
    UnicodeEncodeError after the output was written, and the command failed with exit 1."""
    try:
        stream.reconfigure(errors="backslashreplace")
    except (AttributeError, ValueError, OSError):  # (no such stream, or not a TextIOWrapper)
        pass


def printable(text) -> str:
    """``text`` (a str or path) safe to print: bytes of a file name that are not UTF-8 (which
    Python keeps as surrogates) are shown as ``\\xNN``.

    >>> from fsstgpu.cli.output import printable
    >>> printable("caf\\udce9.parquet")
    'caf\\\\xe9.parquet'
    """
    return str(text).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def fail(message: str, code: int = EXIT_ERROR):
    """Print ``fsstgpu: error: message`` as one line on stderr and exit with ``code``; under
    ``--json`` also ``{"error": message, "kind": ..., "exit_code": code}`` on stdout
    (:func:`print_json_error`)."""
    line = " ".join(printable(_unaliased(message)).split())  # one line, whatever the text held
    print_json_error(line, code)
    sys.stderr.write(f"fsstgpu: error: {line}\n")
    sys.stderr.flush()
    raise typer.Exit(code)


_ALIASES: dict[str, str] = {}


@contextlib.contextmanager
def alias(path, name: str):
    """Within the block, :func:`fail` writes ``name`` for ``path`` (a temporary file standing
    for standard input or output: :mod:`fsstgpu.cli.stdio`)."""
    _ALIASES[str(path)] = name
    yield  # on an exception the alias stays: the message is written after the block is left
    _ALIASES.pop(str(path), None)


def _unaliased(message: str) -> str:
    for path, name in _ALIASES.items():
        message = message.replace(path, name)
    return message


class _JsonState:
    """Whether errors are printed as JSON too (``--json``), and whether stdout has had JSON."""

    errors = False
    printed = False


@contextlib.contextmanager
def json_errors():
    """Within the block, :func:`fail` and :func:`print_json_error` print JSON on stdout
    (used by :class:`fsstgpu.cli.group.Group` when ``--json`` is given)."""
    _JsonState.errors, _JsonState.printed = True, False
    try:
        yield
    finally:
        _JsonState.errors = _JsonState.printed = False


def print_json_error(message: str, code: int) -> None:
    """Under :func:`json_errors`, ``{"error": message, "kind": kind, "exit_code": code}`` on
    stdout (``kind``: :func:`error_kind`, ``"usage"`` for exit 2), unless the command printed
    its JSON result already (stdout stays one JSON document)."""
    if _JsonState.errors and not _JsonState.printed and sys.stdout is not None:
        _JsonState.printed = True  # once: the error may be stdout's own (a full disk behind it)
        try:
            print_json({"error": " ".join(printable(message).split()), "kind": error_kind(code),
                        "exit_code": code})
        except OSError:  # stdout cannot take it: the line on stderr still says what happened
            _silence_stdout()


@contextlib.contextmanager
def handle_errors():
    """Map exceptions to one-line messages and the documented exit codes."""
    _check_device_variable()
    if os.environ.get("FSSTGPU_TRACEBACK"):
        yield
        return
    try:
        yield
    except (typer.Exit, typer.TyperException):
        raise
    except Stopped as exc:
        fail(f"stopped by {exc}; no partial file was left", exc.exit_code)
    except KeyboardInterrupt:
        fail("interrupted; no partial file was left", EXIT_INTERRUPTED)
    except DeviceError as exc:
        fail(str(exc), EXIT_DEVICE)
    except CorruptDataError as exc:
        fail(str(exc), EXIT_CORRUPT)
    except (ColumnSelectionError, NotCompressedError, DatasetOutputError, OptionError,
            MissingInputError) as exc:  # (a URL's missing object: a missing input file too)
        fail(str(exc), EXIT_USAGE)
    except (OSError, ValueError, TypeError, ImportError, NotImplementedError) as exc:
        if isinstance(exc, BrokenPipeError) and _stdout_broken():
            # `fsstgpu decompress in - | head`: quiet, as a tool killed by SIGPIPE
            _silence_stdout()
            raise typer.Exit(EXIT_BROKEN_PIPE) from None
        text = str(exc)
        if isinstance(exc, OSError) and exc.filename and str(exc.filename) not in text:
            text = f"{exc.filename}: {text}"
        fail(text or type(exc).__name__, EXIT_ERROR)
    except Exception as exc:  # a bug: still one line, but say it is unexpected
        fail(f"unexpected {type(exc).__name__}: {exc}", EXIT_ERROR)


def _silence_stdout() -> None:
    """Point stdout, whose reader has gone, at /dev/null: Python's own flush at exit then
    does not complain again."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _stdout_broken() -> bool:
    """Tell whether standard output is a pipe whose reader has gone (poll: POLLERR)."""
    try:
        poll = select.poll()
        poll.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poll.poll(0))
    except (OSError, ValueError, AttributeError):  # (no file behind it: a test's stdout)
        return False


def _check_device_variable() -> None:
    """A bad ``FSSTGPU_DEVICE`` is a usage error (exit 2) naming the variable, before any work
    (the library's ValueError would exit 1 and not say where the bad name came from)."""

    value = os.environ.get("FSSTGPU_DEVICE")
    if value is not None and (value.strip().lower() or "auto") not in DEVICES:
        fail(f"FSSTGPU_DEVICE={value!r} is not a device: set it to one of "
             f"{', '.join(DEVICES)}, or unset it", EXIT_USAGE)


def print_json(obj) -> None:
    """Write ``obj`` as JSON on stdout (NaN becomes null)."""
    if sys.stdout is None:  # (`>&-`: Python leaves no stdout object at all)
        raise OSError(errno.EBADF, "standard output is closed", "<stdout>")
    sys.stdout.write(json.dumps(_clean(obj), indent=2, default=str) + "\n")
    sys.stdout.flush()
    _JsonState.printed = True


def _clean(obj):
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, str):
        return printable(obj)
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj


def note(message: str) -> None:
    """Tell the user something they may not expect, ``fsstgpu: note: message`` as one line on
    stderr (stdout keeps the results, JSON under ``--json``)."""
    sys.stderr.write(f"fsstgpu: note: {' '.join(printable(message).split())}\n")
    sys.stderr.flush()


def warning_line(message, category, filename, lineno, file=None, line=None) -> None:
    """Show a Python warning as one line, ``fsstgpu: warning: message`` on stderr (a
    ``warnings.showwarning`` replacement)."""
    text = " ".join(printable(message).split())
    (file or sys.stderr).write(f"fsstgpu: warning: {text}\n")


def kv_table(title: str, items) -> Table:
    """A two-column rich table from (key, value) pairs."""
    table = Table(title=Text(printable(title)), show_header=False)
    table.add_column("key", style="bold")
    table.add_column("value", overflow="fold")  # (a long path broken, never cut to "…")
    for key, value in items:
        table.add_row(Text(printable(key)), Text(printable(value)))  # no markup
    return table


#: a figure, with an optional unit ("1,234", "0.345", "1.5 KiB", "45.2 MiB/s"), or "-" for none
_FIGURE = re.compile(r"-|[-+]?[\d.,]+(\s?[A-Za-z/%]+)?")


def rows_table(title: str, columns: list[str], rows: list[list]) -> Table:
    """A rich table with a header row: columns of figures aligned right, the first column and
    columns of words (names, types, descriptions) left, as text is read.

    Examples
    --------
    >>> from fsstgpu.cli.output import rows_table
    >>> [c.justify for c in rows_table("t", ["name", "size", "what"], [["a", "1.5 KiB", "x y"]])
    ...  .columns]
    ['left', 'right', 'left']
    """
    table = Table(title=Text(printable(title)))
    for i, name in enumerate(columns):
        figures = all(_FIGURE.fullmatch(str(row[i]).strip()) for row in rows)
        table.add_column(name, justify="right" if i and figures else "left")
    for row in rows:
        table.add_row(*(Text(printable(v)) for v in row))
    return table


def human_bytes(n) -> str:
    """``1536`` -> ``'1.5 KiB'``."""
    if n is None:
        return "-"
    n = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


def fmt_ratio(x) -> str:
    return "-" if x is None or not math.isfinite(x) else f"{x:.3f}"


#: the widths the numbers of a progress line take at most, with the space after each: percent,
#: rows, MiB/s, time remaining; then MiB done and time elapsed, shown on wide terminals only
_NUMBERS_WIDTH, _WIDE_NUMBERS_WIDTH = 5 + 18 + 14 + 8, 13 + 8


def progress_columns(description: str, width: int) -> list:
    """The columns of a progress line that fits ``width`` terminal columns: the numbers always
    whole, the bar 10 to 40 wide, the description cut with an ellipsis when it does not fit
    (rich would crop the line's last columns, the rate and the times, instead).

    Examples
    --------
    >>> from fsstgpu.cli.output import progress_columns
    >>> len(progress_columns("compress a.parquet", 80)), len(progress_columns("x", 200))
    (7, 9)
    """
    wide = width >= 110
    room = width - 2 - _NUMBERS_WIDTH - (_WIDE_NUMBERS_WIDTH if wide else 0)  # 2: the spinner
    bar = max(10, min(40, room - len(description) - 1))
    return [
        SpinnerColumn(),
        TextColumn("{task.description}", table_column=Column(
            no_wrap=True, overflow="ellipsis", max_width=max(8, room - bar - 1))),
        BarColumn(bar_width=bar),
        TaskProgressColumn(),
        TextColumn("{task.fields[rows]:,} rows"),
        *([TextColumn("{task.fields[mib]:.1f} MiB")] if wide else []),
        TextColumn("{task.fields[rate]:.1f} MiB/s"),
        *([TimeElapsedColumn()] if wide else []),
        TimeRemainingColumn(),
    ]


class FileProgress:
    """A rich progress bar on stderr for row groups / batches, with rows, bytes, rate and ETA.

    Use as a context manager and pass the instance as the ``progress=`` callback of
    :func:`fsstgpu.formats.compress_file` and friends. It draws only when stderr is a terminal.
    """

    def __init__(self, description: str, enabled: bool = True):
        console = err_console()
        self._progress = Progress(
            *progress_columns(description, console.width),
            console=console,
            transient=True,
            disable=not (enabled and console.is_terminal),
        )
        self._task = self._progress.add_task(description, total=None, rows=0, mib=0.0,
                                             rate=0.0)
        self._start = time.perf_counter()

    def __enter__(self):
        self._progress.start()
        return self

    def __exit__(self, *exc):
        self._progress.stop()
        return False

    def __call__(self, *, units_done, units_total, rows, nbytes):
        elapsed = max(time.perf_counter() - self._start, 1e-9)
        self._progress.update(self._task, completed=units_done, total=units_total, rows=rows,
                              mib=nbytes / 2**20, rate=nbytes / 2**20 / elapsed)


class DatasetProgress(FileProgress):
    """A rich progress bar on stderr over the files of a dataset (the ``progress=`` callback of
    :func:`fsstgpu.formats.compress_dataset` and :func:`~fsstgpu.formats.decompress_dataset`)."""

    def __call__(self, *, files_done, files_total, last):
        elapsed = max(time.perf_counter() - self._start, 1e-9)
        nbytes = self._bytes = getattr(self, "_bytes", 0) + int(last.get("input_bytes", 0))
        self._progress.update(self._task, completed=files_done, total=files_total,
                              rows=self._rows_so_far(last), mib=nbytes / 2**20,
                              rate=nbytes / 2**20 / elapsed)

    def _rows_so_far(self, last) -> int:
        self._rows = getattr(self, "_rows", 0) + int(last.get("rows", 0))
        return self._rows
