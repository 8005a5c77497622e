"""The corpora of issue #21's comparison with the reference FSST, as loaders.

A corpus is a list of ``(name, column)`` pairs: each column is compressed on its own (its own
tables), and a corpus's figures are its columns' bytes and times summed. Strings are lines
without their ``\\n`` (a ``\\r`` stays), as the FSST paper measured; a column is
``pyarrow.string()`` when all of it is valid UTF-8, else ``pyarrow.binary()``.

==================  ===========================================================================
name                columns
==================  ===========================================================================
``dbtext``          the FSST paper's 22 dbtext files, a column each
``dbtext-column``   the same 22 files as one column (in file name order)
``doc-lines``       lines of the text files under ``/usr/share/doc`` (``.gz`` ones unpacked;
                    files that are not UTF-8, or hold a NUL in their first 4 KiB, skipped),
                    sorted walk, at most ``cap_bytes`` (default 93 MB, the size of the
                    issue's column)
``usr-paths``       every path under ``/usr`` (folders, files and symlinks; sorted walk, links
                    not followed)
``stdlib-lines``    lines of the running interpreter's standard library ``.py`` files
                    (``site-packages`` left out), sorted walk
==================  ===========================================================================

Every walk is sorted, so a corpus depends only on the machine's files.
"""

from __future__ import annotations

import gzip
import os
import sysconfig
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa

from fsstgpu.datasets.text_tables import sorted_walk

CORPORA = ("dbtext", "dbtext-column", "doc-lines", "usr-paths", "stdlib-lines")
"""The corpus names, in the order the issue's table lists them."""

DOC_CAP_BYTES = 93_000_000
"""Default cap on ``doc-lines`` (lines past it are left out, at a line boundary)."""


def load_corpus(name: str, *, cap_bytes: int | None = None) -> list[tuple[str, pa.Array]]:
    """The columns of corpus ``name`` (module docstring).

    Parameters
    ----------
    name : str
        One of :data:`CORPORA`.
    cap_bytes : int, optional
        Keep at most this many string bytes (whole lines, in walk order); default: all, but
        :data:`DOC_CAP_BYTES` for ``doc-lines``.

    Returns
    -------
    list of (str, pyarrow.Array)

    Examples
    --------
    >>> from benchmarks.corpora import load_corpus
    >>> [(name, col.type) for name, col in load_corpus("stdlib-lines", cap_bytes=1000)]
    [('stdlib-lines', DataType(string))]
    >>> load_corpus("nope")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: unknown corpus 'nope'; known: dbtext, dbtext-column, ...
    """
    if name == "dbtext":
        return _capped(_dbtext_columns(), cap_bytes)
    if name == "dbtext-column":
        parts = [col for _, col in _dbtext_columns()]
        typ = _type_of(parts)
        return _capped([(name, pa.concat_arrays([p.cast(typ) for p in parts]))], cap_bytes)
    if name == "doc-lines":
        cap = DOC_CAP_BYTES if cap_bytes is None else cap_bytes
        return [(name, lines_of_files(text_files("/usr/share/doc"), cap_bytes=cap))]
    if name == "usr-paths":
        return [(name, _lines(b"\n".join(p for p in tree_paths("/usr") if b"\n" not in p) + b"\n",
                              cap_bytes))]
    if name == "stdlib-lines":
        stdlib = sysconfig.get_paths()["stdlib"]
        files = (p for p in sorted_walk(stdlib, skip_dirs=("site-packages",))
                 if p.endswith(".py"))
        return [(name, lines_of_files(files, cap_bytes=cap_bytes))]
    raise ValueError(f"unknown corpus {name!r}; known: {', '.join(CORPORA)}")


def _dbtext_columns() -> list[tuple[str, pa.Array]]:
    from fsstgpu.datasets import dbtext_files, load_lines

    files = dbtext_files()
    if not files:
        raise FileNotFoundError("the dbtext corpus was not found (set FSSTGPU_DBTEXT)")
    return [(p.name, load_lines(p)) for p in files]


def _type_of(parts) -> pa.DataType:
    text = all(pa.types.is_string(p.type) or pa.types.is_large_string(p.type) for p in parts)
    large = sum(p.nbytes for p in parts) > 2**31 - 1
    if text:
        return pa.large_string() if large else pa.string()
    return pa.large_binary() if large else pa.binary()


def _capped(columns, cap_bytes):
    if cap_bytes is None:
        return columns
    out, left = [], cap_bytes
    for name, col in columns:
        if left <= 0:
            break
        data_offsets = np.asarray(col.cast(pa.large_binary()).buffers()[1]
                                  ).view(np.int64)[col.offset: col.offset + len(col) + 1]
        keep = int(np.searchsorted(data_offsets - data_offsets[0], left, side="right")) - 1
        if keep:
            out.append((name, col.slice(0, keep)))
        if keep < len(col):  # the cap falls in this column: the rest is left out
            break
        left -= int(data_offsets[keep] - data_offsets[0])
    return out


def tree_paths(root: str):
    """Every path under ``root`` (folders, files, symlinks; links not followed) as bytes
    (``os.fsencode``): each folder's entries sorted, a folder's tree after its entries.

    Examples
    --------
    >>> import sysconfig
    >>> from benchmarks.corpora import tree_paths
    >>> next(iter(tree_paths(sysconfig.get_paths()["stdlib"]))).startswith(b"/")
    True
    """
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(dirs + files):
            yield os.fsencode(os.path.join(folder, name))


def text_files(root: str):
    """The files under ``root`` that are not symlinks (a link repeats a file or leaves the
    tree), sorted walk; :func:`lines_of_files` drops the ones that are not text.

    Examples
    --------
    >>> import sysconfig
    >>> from benchmarks.corpora import text_files
    >>> any(p.endswith("os.py") for p in text_files(sysconfig.get_paths()["stdlib"]))
    True
    """
    for path in sorted_walk(root):
        if not os.path.islink(path):
            yield path


def _read_text(path: str) -> bytes | None:
    """The file's bytes (unpacked when ``.gz``), or None when it is binary, unreadable or not
    UTF-8: skipped whole rather than decoded with replacement characters."""
    try:
        data = Path(path).read_bytes()
        if path.endswith(".gz"):
            data = gzip.decompress(data)
        if b"\0" in data[:4096]:
            return None
        data.decode("utf-8")
        return data
    except (OSError, EOFError, zlib.error, UnicodeDecodeError):
        return None


def lines_of_files(paths, *, cap_bytes: int | None = None) -> pa.Array:
    """The lines of the text files ``paths``, in order, as one column; at most ``cap_bytes``
    string bytes (files are read only as far as the cap needs).

    Examples
    --------
    >>> import os, tempfile
    >>> from benchmarks.corpora import lines_of_files
    >>> with tempfile.TemporaryDirectory() as d:
    ...     for name, data in [("a", b"x\\r\\ny"), ("b", b"\\xff\\n"), ("c", b"z\\n")]:
    ...         _ = open(os.path.join(d, name), "wb").write(data)
    ...     lines_of_files([os.path.join(d, n) for n in "abc"]).to_pylist()
    ['x\\r', 'y', 'z']
    """
    blobs, string_bytes = [], 0
    for path in paths:
        data = _read_text(path)
        if not data:
            continue
        if not data.endswith(b"\n"):
            data += b"\n"
        blobs.append(data)
        string_bytes += len(data) - data.count(b"\n")
        if cap_bytes is not None and string_bytes >= cap_bytes:
            break  # enough read: the cap itself is applied at a line boundary below
    return _lines(b"".join(blobs), cap_bytes)


def _lines(buf: bytes, cap_bytes: int | None) -> pa.Array:
    """``buf``'s ``\\n``-terminated lines as a string (or binary) column, capped."""
    arr = np.frombuffer(buf, dtype=np.uint8)
    ends = np.flatnonzero(arr == 10)  # each line's end (buf ends with a newline, or is empty)
    starts = np.concatenate([[0], ends[:-1] + 1]) if len(ends) else ends
    lengths = ends - starts
    offsets = np.zeros(len(ends) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    if cap_bytes is not None and offsets[-1] > cap_bytes:
        keep = int(np.searchsorted(offsets, cap_bytes, side="right")) - 1
        offsets, ends = offsets[: keep + 1], ends[:keep]
    used = arr[: int(ends[-1]) + 1] if len(ends) else arr[:0]
    data = np.delete(used, ends)  # the newlines
    large = len(data) > 2**31 - 1
    typ = pa.large_binary() if large else pa.binary()
    column = pa.Array.from_buffers(typ, len(offsets) - 1, [
        None, pa.py_buffer(offsets if large else offsets.astype(np.int32)), pa.py_buffer(data)])
    text = column.cast(pa.large_string() if large else pa.string(), safe=False)
    try:
        text.validate(full=True)  # every value valid UTF-8
        return text
    except pa.ArrowInvalid:
        return column
