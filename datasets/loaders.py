"""Load string columns from line files, Parquet, Arrow IPC, the dbtext corpus or a generator.

:func:`load` is the one entry point the CLI and benchmarks use; the per-format loaders beside it
are public for callers that know what they have.

Line files (``load_lines``): one value per line. Lines are split at ``\\n`` only, which is removed;
a ``\\r`` before it is kept as data (so CRLF files give values ending in ``\\r``, byte-exact with
what the file holds). A final ``\\n`` ends the last line rather than starting an empty one; empty
lines are empty strings; an empty file is zero rows. The result is ``pa.string()`` when every line
is valid UTF-8 and ``pa.binary()`` otherwise, each switched to its ``large_`` variant when the data
exceed 2**31 - 1 bytes (32-bit offsets).

Parquet and Arrow IPC (``load_parquet``, ``load_ipc``): one column, named by ``column=`` or else
the first string-like column (``string``, ``large_string``, ``string_view``, the ``binary``
counterparts, or a dictionary of any of these, which is decoded). The column keeps the file's
type and chunks (a :class:`pyarrow.ChunkedArray`).
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from fsstgpu.arrow_layout import to_arrow
from fsstgpu.datasets.dbtext import DBTEXT_FILES, dbtext_dir
from fsstgpu.datasets.generators import GENERATORS, generate
from fsstgpu.formats.rowgroups import MissingInputError, open_file, reading
from fsstgpu.formats.selection import ColumnSelectionError, ColumnTypeError, string_columns
from fsstgpu.formats.sniff import detect_format, format_from_name
from fsstgpu.types import INT32_MAX

__all__ = [
    "DEFAULT_ROWS",
    "is_dataset_name",
    "list_datasets",
    "load",
    "load_dbtext",
    "load_ipc",
    "load_lines",
    "load_parquet",
    "sample_path",
]

DEFAULT_ROWS = 10_000
"""Rows :func:`load` generates when it is given a generator name and no ``rows``."""


def sample_path() -> Path:
    """Return the path of the bundled sample Parquet file (``datasets/sample/sample.parquet``).

    It holds 6000 rows in 3 row groups: ``url``, ``email``, ``log_line``, ``json_record``,
    ``name`` (strings), ``id`` (int64) and ``comment`` (strings, mostly null).

    Examples
    --------
    >>> from fsstgpu.datasets import sample_path
    >>> sample_path().name
    'sample.parquet'
    >>> sample_path().is_file()
    True
    """
    return Path(__file__).resolve().with_name("sample") / "sample.parquet"


def load_lines(path: str | os.PathLike, *, rows: int | None = None,
               binary: bool = False) -> pa.Array:
    """Load a file with one value per line (see the module docstring for the exact rules).

    The file is read in one piece and split with NumPy (no Python work per line), so this is
    also the loader for benchmarks: ``binary=True`` skips the UTF-8 check, and
    ``fsstgpu.arrow_layout.from_arrow`` turns the result into ``(data, offsets)``.

    Parameters
    ----------
    path : str or os.PathLike
        The file.
    rows : int, optional
        Keep only the first ``rows`` lines.
    binary : bool
        Return ``binary`` whatever the bytes (default: ``string`` when every line is valid
        UTF-8, else ``binary``).

    Returns
    -------
    pyarrow.Array
        ``string`` or ``binary``; ``large_string`` / ``large_binary`` past 2**31 - 1 bytes.

    Examples
    --------
    >>> import tempfile, os
    >>> from fsstgpu.datasets import load_lines
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = os.path.join(d, "x.txt")
    ...     _ = open(p, "wb").write(b"a\\r\\n\\nb\\n")
    ...     load_lines(p).to_pylist(), load_lines(p, rows=1, binary=True).to_pylist()
    (['a\\r', '', 'b'], [b'a\\r'])
    """
    rows = check_rows(rows)
    buf = np.fromfile(os.fspath(path), dtype=np.uint8)
    newlines = np.flatnonzero(buf == 10)
    ends = newlines if not len(buf) or buf[-1] == 10 else np.append(newlines, len(buf))
    if rows is not None:
        ends = ends[:rows]
    used = buf[: int(ends[-1])] if len(ends) else buf[:0]
    data = np.delete(used, newlines[: max(len(ends) - 1, 0)])  # the newlines inside ``used``
    offsets = np.zeros(len(ends) + 1, dtype=np.int64)
    offsets[1:] = ends - np.arange(len(ends))  # each line's end, less the newlines before it
    large = len(data) > INT32_MAX
    if not binary:
        text = to_arrow(pa.large_string() if large else pa.string(), data, offsets, None)
        try:
            text.validate(full=True)  # checks that every value is valid UTF-8
            return text
        except pa.ArrowInvalid:
            pass
    return to_arrow(pa.large_binary() if large else pa.binary(), data, offsets, None)


def load_parquet(path: str | os.PathLike, *, column: str | None = None,
                 rows: int | None = None) -> pa.ChunkedArray:
    """Load one string-like column of a Parquet file.

    Parameters
    ----------
    path : str or os.PathLike
        The Parquet file.
    column : str, optional
        Column name; default the first string-like column.
    rows : int, optional
        Keep only the first ``rows`` rows (only the row groups needed are read).

    Returns
    -------
    pyarrow.ChunkedArray

    Raises
    ------
    ValueError
        ``column`` is not in the file.
    TypeError
        The column is not string-like, or (without ``column``) no column is.

    Examples
    --------
    >>> from fsstgpu.datasets import load_parquet, sample_path
    >>> col = load_parquet(sample_path(), column="email", rows=10)
    >>> len(col), col.type
    (10, DataType(string))
    """
    rows = check_rows(rows)
    # (opened by its bytes: pyarrow's own opening of a str path fails on a name that is not
    # UTF-8, which Python holds as surrogates)
    with open_file(os.fspath(path)) as f:
        parquet = pq.ParquetFile(f)
        name = _choose_column(parquet.schema_arrow, column, path)
        if rows is None:
            table = parquet.read(columns=[name])
        else:
            counts = np.cumsum([parquet.metadata.row_group(i).num_rows
                                for i in range(parquet.num_row_groups)])
            needed = int(np.searchsorted(counts, rows, side="left")) + 1
            groups = list(range(min(needed, parquet.num_row_groups)))
            table = parquet.read_row_groups(groups, columns=[name]).slice(0, rows)
    return _decode_dictionary(table.column(name))


def load_ipc(path: str | os.PathLike, *, column: str | None = None, rows: int | None = None,
             stream: bool | None = None) -> pa.ChunkedArray:
    """Load one string-like column of an Arrow IPC file (Feather v2) or stream.

    Parameters
    ----------
    path : str or os.PathLike
        The file, memory-mapped.
    column : str, optional
        Column name; default the first string-like column.
    rows : int, optional
        Keep only the first ``rows`` rows.
    stream : bool, optional
        True for the IPC stream format, False for the file format; None tries the file format
        and then the stream format (``.arrow`` is used for both in the wild).

    Returns
    -------
    pyarrow.ChunkedArray

    Examples
    --------
    >>> import tempfile, os, pyarrow as pa, pyarrow.feather as feather
    >>> from fsstgpu.datasets import load_ipc
    >>> with tempfile.TemporaryDirectory() as d:
    ...     p = os.path.join(d, "t.arrow")
    ...     feather.write_feather(pa.table({"n": [1, 2], "s": ["x", "y"]}), p)
    ...     load_ipc(p).to_pylist()
    ['x', 'y']
    """
    rows = check_rows(rows)
    table = _read_ipc(os.fspath(path), stream)
    name = _choose_column(table.schema, column, path)
    col = table.column(name)
    if rows is not None:
        col = col.slice(0, rows)
    return _decode_dictionary(col)


def load_dbtext(name: str, *, rows: int | None = None) -> pa.Array:
    """Load one file of the FSST paper's dbtext corpus (found by :func:`dbtext_dir`).

    Raises
    ------
    FileNotFoundError
        The corpus or the file is not on this machine; the message says where it was looked for
        (a ``MissingInputError``: on the command line a missing input, exit 2).

    Examples
    --------
    >>> from fsstgpu.datasets import dbtext_dir, load_dbtext
    >>> dbtext_dir() is None or load_dbtext("uuid", rows=2).type == "string"
    True
    """
    if not name or name != Path(name).name or name in (".", ".."):
        raise ValueError(f"dbtext file name must be a bare file name, got {name!r}")
    root = dbtext_dir()
    if root is None:
        raise MissingInputError(
            f"dbtext corpus not found, so dbtext file {name!r} cannot be loaded: set "
            "FSSTGPU_DBTEXT to the folder holding its files (uuid, urls2, ...), or place it at "
            "shared/datasets/dbtext or .data/dbtext in this directory or a parent"
        )
    path = root / name
    if not path.is_file():
        raise MissingInputError(
            f"no dbtext file {name!r} in {root} (known files: {', '.join(DBTEXT_FILES)})"
        )
    return load_lines(path, rows=rows)


def is_dataset_name(name) -> bool:
    """Tell whether :func:`load` reads ``name`` as a dataset name rather than a path.

    Examples
    --------
    >>> from fsstgpu.datasets import is_dataset_name
    >>> is_dataset_name("urls"), is_dataset_name("dbtext:uuid"), is_dataset_name("in.txt")
    (True, True, False)
    """
    return isinstance(name, str) and (
        name in GENERATORS or name == "sample" or name.startswith("dbtext:")
        or name in DBTEXT_FILES)


def load(name_or_path: str | os.PathLike, *, rows: int | None = None, seed: int = 0,
         column: str | None = None) -> pa.Array | pa.ChunkedArray:
    """Load a string column by generator name, dbtext name, ``"sample"`` or file path.

    Resolution, first match wins:

    1. a generator name (``"urls"``, ...; see :func:`list_datasets`): ``rows`` values
       (default :data:`DEFAULT_ROWS`) generated with ``seed``;
    2. ``"sample"``: the bundled sample Parquet file (:func:`sample_path`);
    3. ``"dbtext:<file>"``, or a bare dbtext file name such as ``"uuid"``: that dbtext file;
    4. otherwise a path, read by extension: ``.parquet``/``.parq`` Parquet; ``.arrow``,
       ``.feather``, ``.ipc`` Arrow IPC file (or stream); ``.arrows`` IPC stream; anything else
       a line file.

    A :class:`pathlib.Path` (or other ``os.PathLike``) is always a path; to read a file whose
    name is also a dataset name, pass ``"./name"``.

    Parameters
    ----------
    name_or_path : str or os.PathLike
        What to load.
    rows : int, optional
        Number of rows to generate, or the first rows of a file to keep.
    seed : int, default 0
        Seed for generators (ignored for files).
    column : str, optional
        Column of a Parquet or IPC file; an error for other sources.

    Returns
    -------
    pyarrow.Array or pyarrow.ChunkedArray
        An Array for generators and line files, a ChunkedArray for Parquet and IPC columns.

    Raises
    ------
    FileNotFoundError
        The path does not exist (nor is it a dataset name), or the dbtext corpus is absent.

    Examples
    --------
    >>> from fsstgpu.datasets import load
    >>> load("uuids", rows=3).type
    DataType(string)
    >>> load("sample", column="name", rows=2).to_pylist()
    ['James P. Jones', 'Søren S. Johnson']
    """
    if isinstance(name_or_path, str) and name_or_path in GENERATORS:
        _no_column(column, name_or_path)
        return generate(name_or_path, DEFAULT_ROWS if rows is None else rows, seed)
    if isinstance(name_or_path, str) and name_or_path == "sample":
        return load_parquet(sample_path(), column=column, rows=rows)
    if isinstance(name_or_path, str) and (
        name_or_path.startswith("dbtext:") or name_or_path in DBTEXT_FILES
    ):
        _no_column(column, name_or_path)
        return load_dbtext(name_or_path.removeprefix("dbtext:"), rows=rows)
    path = Path(name_or_path)
    if not path.is_file():
        hint = "" if not isinstance(name_or_path, str) else (
            f"; it is not a dataset name either (generators: {', '.join(GENERATORS)}; "
            "'sample'; dbtext files as 'dbtext:<file>')"
        )
        raise FileNotFoundError(f"no such file: {os.fspath(path)!r}{hint}")
    # the format by the first bytes, as compress and inspect tell it (a .pq file is Parquet),
    # else by the suffix (a damaged file is then unreadable, not lines of text)
    found = (detect_format(path) or format_from_name(path)
             or ("parquet" if path.suffix.lower() == ".parq" else None))
    with reading(os.fspath(path)):  # pyarrow's complaints: CorruptDataError naming the file
        if found == "parquet":
            return load_parquet(path, column=column, rows=rows)
        if found in ("arrow", "arrows"):  # (an IPC file under a stream's name is a file)
            return load_ipc(path, column=column, rows=rows,
                            stream=True if found == "arrows" else None)
    _no_column(column, os.fspath(path))
    return load_lines(path, rows=rows)


def list_datasets() -> list[dict]:
    """Describe every named dataset :func:`load` knows.

    Returns
    -------
    list of dict
        One dict per dataset with keys ``name`` (what to pass to :func:`load`), ``kind``
        (``"generator"``, ``"sample"`` or ``"dbtext"``), ``description`` and ``available``
        (False for dbtext files not on this machine).

    Examples
    --------
    >>> from fsstgpu.datasets import list_datasets
    >>> entries = list_datasets()
    >>> [e["name"] for e in entries if e["kind"] == "generator"][:2]
    ['urls', 'emails']
    >>> {"name", "kind", "description", "available"} <= set(entries[0])
    True
    """
    entries = [
        {"name": name, "kind": "generator", "available": True,
         "description": _first_line(func.__doc__)}
        for name, func in GENERATORS.items()
    ]
    entries.append({
        "name": "sample", "kind": "sample", "available": sample_path().is_file(),
        "description": "bundled Parquet file: url, email, log_line, json_record, name, id, "
                       "comment (6000 rows, 3 row groups)",
    })
    root = dbtext_dir()
    for name in DBTEXT_FILES:
        present = root is not None and (root / name).is_file()
        where = f"in {root}" if present else "not on this machine (set FSSTGPU_DBTEXT)"
        entries.append({
            "name": f"dbtext:{name}", "kind": "dbtext", "available": present,
            "description": f"FSST paper corpus file {name!r}, one string per line; {where}",
        })
    return entries


# --------------------------------------------------------------------------------------------


def check_rows(rows):
    """``rows=`` of a loader as an int (or None: all rows); ValueError for anything else.

    Examples
    --------
    >>> from fsstgpu.datasets.loaders import check_rows
    >>> check_rows(3), check_rows(None)
    (3, None)
    """
    if rows is None:
        return None
    if isinstance(rows, bool) or not isinstance(rows, (int, np.integer)) or rows < 0:
        raise ValueError(f"rows must be a non-negative integer or None, got {rows!r}")
    return int(rows)


def _no_column(column, source) -> None:
    if column is not None:  # (a ColumnSelectionError: a usage error, exit 2, on the CLI)
        raise ColumnSelectionError(f"column= (--column) applies to Parquet and Arrow IPC files "
                                   f"only, not {source!r}")


def _first_line(doc: str | None) -> str:
    """A docstring's first line, as plain text (its reST literals' quotes dropped)."""
    lines = (doc or "").strip().splitlines()
    return lines[0].replace("``", "") if lines else ""


def _choose_column(schema: pa.Schema, column: str | None, path) -> str:
    names = string_columns(schema)
    if column is None:
        if names:
            return names[0]
        described = ", ".join(f"{f.name}: {f.type}" for f in schema) or "no columns"
        raise ColumnTypeError(f"{os.fspath(path)!r} has no string or binary column ({described})")
    choices = f"string columns: {', '.join(names) or '(none)'}"
    if column not in schema.names:
        raise ColumnSelectionError(f"no column {column!r} in {os.fspath(path)!r}; {choices}")
    if column not in names:
        raise ColumnTypeError(f"column {column!r} of {os.fspath(path)!r} is "
                              f"{schema.field(column).type}, not a string or binary type; "
                              f"{choices}")
    return column


def _decode_dictionary(col: pa.ChunkedArray) -> pa.ChunkedArray:
    if pa.types.is_dictionary(col.type):
        return col.cast(col.type.value_type)
    return col


def _read_ipc(path: str, stream: bool | None) -> pa.Table:
    source = pa.memory_map(os.fsencode(path))  # (any bytes in the name: see load_parquet)
    if stream is not True:
        try:
            return pa.ipc.open_file(source).read_all()
        except pa.ArrowInvalid:
            if stream is False:
                raise
            source.seek(0)
    return pa.ipc.open_stream(source).read_all()
