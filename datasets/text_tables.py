"""Deterministic real-text tables for file-format benchmarks.

:func:`machine_text_table` gathers the text a new user's machine already holds (documentation,
file paths, the Python standard library, the package database) into one table whose columns
look like the string columns of real data: free text, paths, code with nulls, mostly-null
summaries, a long-run categorical and a low-cardinality column. :func:`dbtext_table` is the
FSST paper's dbtext corpus as one two-column table.

Lines are split at ``\\n`` only, which is removed (a ``\\r`` before it stays, as in
:func:`fsstgpu.datasets.load_lines`). Files are read with strict UTF-8: a file that does not
decode, or whose first 4 KiB hold a NUL byte, is skipped whole rather than decoded with
replacement characters, so every value is text a user really has.
"""

from __future__ import annotations

import gzip
import json
import os
import sys
import sysconfig
import zlib
from collections.abc import Mapping
from itertools import count, islice
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fsstgpu.datasets.dbtext import dbtext_dir, dbtext_files
from fsstgpu.datasets.loaders import check_rows, load_lines

__all__ = ["dbtext_table", "machine_text_table", "sorted_walk"]

METADATA_KEY = b"fsstgpu.text_table"
"""Schema metadata key of :func:`machine_text_table`: UTF-8 JSON naming the sources used."""

MAX_DEFAULT_ROWS = 2_000_000
"""Cap on the default row count of :func:`machine_text_table` (the stdlib's ``.py`` lines)."""

_SUMMARY_EVERY = 3  # one summary in 3 rows: about two thirds of the column is null
_PACKAGE_RUN = 500  # rows per run of one package name: long runs, as in a sorted categorical
_ROOT_KEYS = ("doc", "usr", "stdlib", "dpkg_status", "site")


def machine_text_table(rows: int | None = None, *, roots: dict | None = None) -> pa.Table:
    """Build a table of the text found on this machine, the same on every call.

    Columns, all ``rows`` long:

    - ``doc_line`` (string): lines of the text files under ``/usr/share/doc``, plain or
      ``.gz``; ``line_no`` (int64) is each line's number (from 1) in its file.
    - ``path`` (large_string): the files under ``/usr`` (symlinks not followed); ``size``
      (int64) is each one's size in bytes (``lstat``).
    - ``py_line`` (string): lines of the standard library's ``.py`` files (``site-packages``
      left out); lines of only whitespace are null.
    - ``summary`` (string): one-line package descriptions, one every 3 rows, null between.
    - ``package`` (dictionary<int32, string>): package names in runs of 500 rows.
    - ``dpkg_line`` (string): ``dpkg -l``-style lines ``ii  name  version  arch  summary``,
      one per package, cycled (a few hundred distinct values repeated).

    Packages are those installed in ``/var/lib/dpkg/status``, or, without it, the
    ``*.dist-info/METADATA`` files on ``sys.path`` (arch ``all``). Every walk is sorted, so
    the table depends only on the files. A source with fewer values than ``rows`` is cycled; a
    source that is missing or empty is replaced by the standard library's lines (blank lines
    kept as text), so the table always builds. Sources are read only as far as ``rows`` needs.
    The schema metadata key :data:`METADATA_KEY` holds JSON saying where each column came
    from and how many values were read.

    Parameters
    ----------
    rows : int, optional
        Row count; default the number of ``.py`` lines of the standard library, at most
        :data:`MAX_DEFAULT_ROWS`.
    roots : dict, optional
        Sources to use instead of the machine's (for tests): ``"doc"``, ``"usr"``,
        ``"stdlib"`` and ``"site"`` (folders; ``"site"`` may be a list) and ``"dpkg_status"``
        (a file). A missing key means the machine's default.

    Returns
    -------
    pyarrow.Table

    Examples
    --------
    >>> import json
    >>> from fsstgpu.datasets import machine_text_table
    >>> t = machine_text_table(rows=1000)
    >>> t.num_rows, t.column_names[:3]
    (1000, ['doc_line', 'path', 'py_line'])
    >>> t.equals(machine_text_table(rows=1000))
    True
    >>> sorted(json.loads(t.schema.metadata[b"fsstgpu.text_table"])["columns"])[:2]
    ['doc_line', 'dpkg_line']
    """
    rows = check_rows(rows)
    paths = _roots(roots)
    limit = MAX_DEFAULT_ROWS if rows is None else rows
    py_from = paths["stdlib"]
    py, py_whole = _take(_lines_of_tree(py_from, _is_py, skip_dirs=("site-packages",)), limit)
    if not py and limit:  # only through ``roots``: the machine's stdlib always has .py files
        py_from = _roots(None)["stdlib"]
        py, py_whole = _take(_lines_of_tree(py_from, _is_py, skip_dirs=("site-packages",)),
                             limit)
    rows = len(py) if rows is None else rows
    fallback = [line for line, _ in py]
    used = {"py_line": {"source": py_from, "values": len(py), "complete": py_whole}}

    def note(columns, source, values, complete):
        if not values:
            source, values, complete = "stdlib lines (fallback)", fallback, py_whole
        for column in columns:
            used[column] = {"source": source, "values": len(values), "complete": complete}
        return values

    doc, whole = _take(_lines_of_tree(paths["doc"], lambda name: True), rows)
    note(["doc_line", "line_no"], paths["doc"], doc, whole)
    doc = doc or py
    usr, whole = _take(_files_of_tree(paths["usr"]), rows)
    note(["path", "size"], paths["usr"], usr, whole)
    usr = usr or [(line, len(line.encode())) for line in fallback]
    packages, package_source = _packages(paths["dpkg_status"], paths["site"])
    summaries = note(["summary"], package_source, [p[3] for p in packages if p[3]], True)
    names = note(["package"], package_source, [p[0] for p in packages], True)
    dpkg_lines = note(["dpkg_line"], package_source,
                      [f"ii  {name}  {version}  {arch}  {summary}"
                       for name, version, arch, summary in packages], True)

    i = np.arange(rows, dtype=np.int64)
    summary = _cycle(pa.array(summaries, pa.string()), rows, i // _SUMMARY_EVERY)
    summary = pc.if_else(i % _SUMMARY_EVERY == 0, summary, pa.scalar(None, pa.string()))
    package = _cycle(pa.array(names, pa.string()), rows, i // _PACKAGE_RUN)
    table = pa.table({
        "doc_line": _cycle(pa.array([d[0] for d in doc], pa.string()), rows),
        "path": _cycle(pa.array([u[0] for u in usr], pa.large_string()), rows),
        "py_line": _cycle(pa.array([line if line.strip() else None for line in fallback],
                                   pa.string()), rows),
        "summary": summary,
        "package": package.dictionary_encode(),
        "dpkg_line": _cycle(pa.array(dpkg_lines, pa.string()), rows),
        "line_no": _cycle(pa.array([d[1] for d in doc], pa.int64()), rows),
        "size": _cycle(pa.array([u[1] for u in usr], pa.int64()), rows),
    })
    info = {"rows": rows, "columns": used}
    return table.replace_schema_metadata({METADATA_KEY: json.dumps(info, sort_keys=True)})


def dbtext_table(rows: int | None = None) -> pa.Table:
    """Return the dbtext corpus as one table: ``file`` and ``line``, one row per line.

    ``file`` (dictionary<int32, string>) is the stem of each line's file and ``line`` (string)
    the line, files in the corpus order (:data:`fsstgpu.datasets.DBTEXT_FILES`), lines in file
    order, split as by :func:`fsstgpu.datasets.load_lines`.

    Parameters
    ----------
    rows : int, optional
        Keep only the first ``rows`` rows (only the files they need are read).

    Returns
    -------
    pyarrow.Table

    Raises
    ------
    FileNotFoundError
        The corpus is not on this machine.
    ValueError
        A file of the corpus is not valid UTF-8.

    Examples
    --------
    >>> from fsstgpu.datasets import dbtext_dir, dbtext_table
    >>> dbtext_dir() is None or dbtext_table(rows=5).column_names == ["file", "line"]
    True
    """
    rows = check_rows(rows)
    files = dbtext_files()
    if not files:
        where = os.environ.get("FSSTGPU_DBTEXT") or "shared/datasets/dbtext or .data/dbtext"
        raise FileNotFoundError(
            f"dbtext corpus not found (looked in {where}, found {dbtext_dir()}): set "
            "FSSTGPU_DBTEXT to the folder holding its files (uuid, urls2, ...), or place it at "
            "shared/datasets/dbtext or .data/dbtext in this directory or a parent"
        )
    stems, parts = [], []
    for path in files:
        left = None if rows is None else rows - sum(len(p) for p in parts)
        if left == 0:
            break
        lines = load_lines(path, rows=left)
        if not pa.types.is_string(lines.type) and not pa.types.is_large_string(lines.type):
            raise ValueError(f"dbtext file {os.fspath(path)!r} is not valid UTF-8")
        stems.append(path.stem)
        parts.append(lines.cast(pa.string()))
    counts = [len(p) for p in parts]
    indices = np.repeat(np.arange(len(stems), dtype=np.int32), counts)
    file = pa.DictionaryArray.from_arrays(pa.array(indices, pa.int32()),
                                          pa.array(stems, pa.string()))
    line = pa.concat_arrays(parts) if parts else pa.array([], pa.string())
    return pa.table({"file": file, "line": line})


# --------------------------------------------------------------------------------------------


def _roots(roots: dict | None) -> dict:
    if roots is not None and not isinstance(roots, Mapping):  # (a str was walked by letters)
        raise TypeError(f"roots must be a dict of sources by key ({', '.join(_ROOT_KEYS)}), "
                        f"not {type(roots).__name__}")
    unknown = set(roots or ()) - set(_ROOT_KEYS)
    if unknown:
        raise ValueError(f"unknown roots keys {sorted(unknown)}; known: {', '.join(_ROOT_KEYS)}")
    stdlib = sysconfig.get_paths()["stdlib"]
    defaults = {
        "doc": "/usr/share/doc",
        "usr": "/usr",
        "stdlib": stdlib,
        "dpkg_status": "/var/lib/dpkg/status",
        "site": [os.path.join(stdlib, "site-packages"), *(p for p in sys.path if os.path.isabs(p))],
    }
    merged = {**defaults, **(roots or {})}
    site = merged["site"]
    site = [site] if isinstance(site, (str, os.PathLike)) else list(site)
    out = {key: os.fspath(value) for key, value in merged.items() if key != "site"}
    out["site"] = [os.fspath(s) for s in site]
    return out


def sorted_walk(root: str, skip_dirs=()):
    """``os.walk`` in sorted order, symlinked folders not entered; yields file paths.

    Examples
    --------
    >>> import os, tempfile
    >>> from fsstgpu.datasets.text_tables import sorted_walk
    >>> with tempfile.TemporaryDirectory() as d:
    ...     for name in ("b", "a"):
    ...         open(os.path.join(d, name), "w").close()
    ...     [os.path.basename(p) for p in sorted_walk(d)]
    ['a', 'b']
    """
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in skip_dirs)
        for name in sorted(files):
            yield os.path.join(folder, name)


def _is_py(name: str) -> bool:
    return name.endswith(".py")


def _read_text(path: str) -> str | None:
    """The file's text, or None for a file that is binary, unreadable or not UTF-8."""
    try:
        with open(path, "rb") as f:
            data = f.read()
        if path.endswith(".gz"):
            data = gzip.decompress(data)
        if b"\0" in data[:4096]:
            return None
        return data.decode("utf-8")
    except (OSError, EOFError, zlib.error, UnicodeDecodeError):
        return None


def _lines_of_tree(root: str, wanted, skip_dirs=()):
    """Yield ``(line, line_no)`` for every line of the wanted text files under ``root``."""
    for path in sorted_walk(root, skip_dirs):
        # symlinked files would repeat a file read elsewhere, or point outside the tree
        if not wanted(os.path.basename(path)) or os.path.islink(path):
            continue
        text = _read_text(path)
        if not text:
            continue
        lines = text.split("\n")
        if lines[-1] == "":  # a final newline ends the last line; it starts no new one
            lines.pop()
        yield from zip(lines, count(1))


def _files_of_tree(root: str):
    """Yield ``(path, size)`` for every file (symlinks included, not followed) under root."""
    for path in sorted_walk(root):
        try:
            yield path, os.lstat(path).st_size
        except OSError:  # removed while walking
            continue


def _packages(status: str, site: list[str]) -> tuple[list[tuple[str, str, str, str]], str]:
    """``(name, version, arch, summary)`` of the installed packages, sorted, and the source."""
    found = _dpkg_packages(status)
    if found:
        return found, status
    return _dist_packages(site), "dist-info METADATA on " + os.pathsep.join(site)


def _dpkg_packages(status: str) -> list[tuple[str, str, str, str]]:
    try:
        text = Path(status).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    found = set()
    for stanza in text.split("\n\n"):
        fields = {}
        for line in stanza.split("\n"):
            key, sep, value = line.partition(":")
            if sep and not line[:1].isspace():  # continuation lines begin with a space
                fields.setdefault(key, value.strip())
        if fields.get("Package") and fields.get("Status", "").endswith(" installed"):
            found.add((fields["Package"], fields.get("Version", ""),
                       fields.get("Architecture", ""), fields.get("Description", "")))
    return sorted(found)


def _dist_packages(site: list[str]) -> list[tuple[str, str, str, str]]:
    found = {}
    for folder in site:
        try:
            entries = sorted(os.listdir(folder))
        except OSError:
            continue
        for entry in entries:
            if not entry.endswith(".dist-info"):
                continue
            text = _read_text(os.path.join(folder, entry, "METADATA"))
            headers = {}
            for line in (text or "").split("\n"):
                if not line.strip():  # the headers end at the first blank line
                    break
                key, sep, value = line.partition(":")
                if sep:
                    headers.setdefault(key, value.strip())
            name = headers.get("Name")
            if name and name.lower() not in found:  # the first on the path wins, as for import
                found[name.lower()] = (name, headers.get("Version", ""), "all",
                                       headers.get("Summary", ""))
    return sorted(found.values())


def _take(items, limit: int) -> tuple[list, bool]:
    """The first ``limit`` items, and whether that was all of them (one more is read to know)."""
    taken = list(islice(items, limit + 1))
    return taken[:limit], len(taken) <= limit


def _cycle(values: pa.Array, rows: int, index: np.ndarray | None = None) -> pa.Array:
    """``values[index % len(values)]`` (``index`` default ``0..rows-1``): a short source
    repeated to the table's length."""
    if index is None:
        if len(values) >= rows:
            return values.slice(0, rows)
        index = np.arange(rows, dtype=np.int64)
    return values.take(pa.array(index % max(len(values), 1)))
