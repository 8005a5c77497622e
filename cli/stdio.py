"""``-`` for IN and OUT of compress / decompress (and for ``inspect``, ``roundtrip`` and
``train``'s input, ``train --out`` and ``datasets generate --out``): standard input and output.

Parquet and Arrow IPC files are read from their ends (the footer) and by random access, so
standard input (or a pipe named as a file, ``<(command)``) is first copied whole to a
temporary file; an output goes to a temporary file and is copied to standard output once
complete, so a failed command writes nothing there (as :mod:`fsstgpu.formats.atomic`
promises for files). Messages name ``<stdin>`` / ``<stdout>``,
never the temporary files (:func:`fsstgpu.cli.output.alias`). With OUT ``-`` the results table
goes to stderr (stdout holds the file), the output's format is ``--format``'s or the input's,
and a terminal on stdout is refused (binary data would garble it).
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import stat
import sys
import tempfile
import warnings
from pathlib import Path

from fsstgpu.cli.output import EXIT_USAGE, alias, fail
from fsstgpu.formats.atomic import (
    WRITE_ERRORS,
    StaleTemporaryFileWarning,
    owned_by_ended,
    owner_tag,
)
from fsstgpu.formats.sniff import detect_format, suffix_for

__all__ = ["STDIO", "is_stream", "spool", "stdin_file", "stdout_file"]

#: The name that stands for standard input (as IN) or output (as OUT).
STDIO = "-"
#: a spool folder's name: ``fsstgpu-stdin-<pid>@<host>-<random>`` (tempfile adds the random;
#: a round trip's copies: ``_fsstgpu-roundtrip-...``)
_SPOOL = re.compile(r"^_?fsstgpu-(?:stdin|stdout|roundtrip)-(?P<pid>[0-9]+)@"
                    r"(?P<host>[A-Za-z0-9_-]*)-[^-]+$")


@contextlib.contextmanager
def _spool_errors(name: str):
    """A full disk, quota or file size limit while spooling: the error says it is the
    temporary folder's, not the disk behind ``name`` (standard input or output)."""
    try:
        yield
    except OSError as exc:
        if exc.errno not in WRITE_ERRORS:
            raise
        raise OSError(exc.errno, f"{os.strerror(exc.errno)} in the temporary folder "
                      f"{tempfile.gettempdir()} (TMPDIR) while spooling", name) from None


def spool(kind: str) -> tempfile.TemporaryDirectory:
    """A temporary folder for standard input or output (``kind`` ``"stdin"``, ``"stdout"``) or
    for a round trip's copies (``"roundtrip"``), tagged with this process; the folders of
    processes that ended without removing theirs (SIGKILL: up to a whole input each, or two
    copies of it) are removed first, with a StaleTemporaryFileWarning naming them. A round
    trip's is named ``_*``: a dataset folder that holds the temporary folder skips it."""
    for entry in owned_by_ended(tempfile.gettempdir(), _SPOOL):
        shutil.rmtree(entry.path, ignore_errors=True)
        warnings.warn(f"removed {entry.path}, a spool left by a process that has ended",
                      StaleTemporaryFileWarning, stacklevel=3)
    hidden = "_" if kind == "roundtrip" else ""
    return tempfile.TemporaryDirectory(prefix=f"{hidden}fsstgpu-{kind}-{owner_tag()}-")


def is_stream(path) -> bool:
    """Tell whether ``path`` names a pipe (``<(command)``'s ``/dev/fd/63``, a FIFO,
    ``/dev/stdin`` fed by one): read once, front to back, like standard input. A character
    device is not one (``/dev/zero`` would never end)."""
    try:
        return stat.S_ISFIFO(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


@contextlib.contextmanager
def stdin_file(src, output=None):
    """``src``, or for ``-`` (or a pipe: :func:`is_stream`) a temporary copy of what it gives
    (removed afterwards), named ``stdin`` with the suffix of the format its first bytes show
    (``stdin.parquet``; none for text); messages name ``<stdin>`` or ``src``. ValueError when
    standard input is the file ``output`` (``compress - f --force < f`` replaced ``f``)."""
    if src != STDIO and not is_stream(src):
        yield src
        return
    if src == STDIO and output not in (None, STDIO) and _is_stdin(output):
        raise ValueError(f"{output}: the output is the input file (standard input is "
                         "redirected from it); choose another output path")
    if src == STDIO and sys.stdin is None:  # (`<&-`: Python leaves no stdin object at all)
        fail("IN - reads standard input, which is closed here", EXIT_USAGE)
    with spool("stdin") as folder:
        path = Path(folder) / "stdin"
        with _spool_errors("<stdin>" if src == STDIO else str(src)), open(path, "wb") as f:
            if src == STDIO:
                shutil.copyfileobj(sys.stdin.buffer, f, 1 << 20)
            else:
                with open(src, "rb") as stream:
                    shutil.copyfileobj(stream, f, 1 << 20)
        fmt = detect_format(path)
        if fmt is not None:  # named as its format, for readers that go by the suffix
            path = path.rename(path.with_suffix(suffix_for(fmt)))
        with alias(path, "<stdin>" if src == STDIO else str(src)):
            yield path


def _is_stdin(path) -> bool:
    """Whether standard input is the regular file ``path`` (``< path``)."""
    try:
        given, named = os.fstat(sys.stdin.fileno()), os.stat(path)
    except (AttributeError, OSError, ValueError):  # no descriptor, or no such file
        return False
    return stat.S_ISREG(given.st_mode) and (given.st_dev, given.st_ino) == (named.st_dev,
                                                                              named.st_ino)


@contextlib.contextmanager
def stdout_file(dst, suffix: str):
    """``dst``, or for ``-`` a temporary file (named with ``suffix``) copied to standard output
    when the block succeeds."""
    if dst != STDIO:
        yield dst
        return
    if sys.stdout is None:  # (`>&-`: Python leaves no stdout object at all)
        fail("OUT - writes the file to standard output, which is closed here", EXIT_USAGE)
    if sys.stdout.isatty():
        fail("OUT - writes the file to standard output, which is a terminal here: redirect it "
             "(> file, | command)", EXIT_USAGE)
    with spool("stdout") as folder:
        path = Path(folder) / f"stdout{suffix}"
        with _spool_errors("<stdout>"), alias(path, "<stdout>"):
            yield path
        sys.stdout.flush()
        try:
            with open(path, "rb") as f:
                _write_all(sys.stdout, f)
        except BrokenPipeError:
            raise  # (the reader went away: output.handle_errors ends quietly)
        except OSError as exc:  # a full disk behind stdout, say: name it
            if exc.errno is None or exc.filename is not None:
                raise
            raise OSError(exc.errno, os.strerror(exc.errno), "<stdout>") from None


def _write_all(stdout, f) -> None:
    """Every byte of the file ``f`` to ``stdout``'s descriptor, a short write continued until
    it is whole or the system says why not (EPIPE, ENOSPC). ``BufferedWriter`` through
    ``shutil.copyfileobj`` let a short write pass: a pipe whose reader left got part of the
    file, and the command said it was done. (A stdout with no descriptor, a test runner's,
    takes the bytes through its buffer.)"""
    try:
        fd = stdout.fileno()
    except (AttributeError, OSError, ValueError):  # (io.UnsupportedOperation is both)
        shutil.copyfileobj(f, stdout.buffer, 1 << 20)
        stdout.buffer.flush()
        return
    while chunk := f.read(1 << 20):
        view = memoryview(chunk)
        while view:
            written = os.write(fd, view)
            if written <= 0:  # (not seen: os.write raises instead; a loop must not spin)
                raise OSError(errno.EIO, os.strerror(errno.EIO))
            view = view[written:]
