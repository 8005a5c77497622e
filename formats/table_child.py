"""The ``table`` child of a version-4 fsst storage read (:mod:`fsstgpu.formats.arrow_read`
uses it): each dictionary entry a string names, as an index into the distinct tables read.

A chunk's dictionary holds its row group's tables: one for a column compressed with one table,
hundreds where a table was trained for each run of similar text (``compress_file(...,
parquet_codec="none")``, ~1,000 a 1.6 M-row column). The entries the rows name are read at once
(:func:`fsstgpu.native.tables.read_tables`, compiled; one by one they cost ~20 us each,
session 84), a lone new entry through a cache of the tables read before
(:func:`table_of`: every chunk of a file repeats its row group's tables, and pyarrow cuts a row
group into several chunks).
"""

from __future__ import annotations

import functools

import numpy as np
import pyarrow as pa

from fsstgpu.arrow_layout import buffer_values, check_arrow
from fsstgpu.errors import CorruptDataError
from fsstgpu.native.tables import read_tables
from fsstgpu.symbol_table import SymbolTable

__all__ = ["EXTENSION_NAME", "dictionary_tables", "read_new", "table_ids", "table_of",
           "tables_in_data"]

#: the Arrow extension type's name (:mod:`~fsstgpu.formats.arrow_read` gives it out; here,
#: below it, for this module's errors)
EXTENSION_NAME = "fsstgpu.fsst"


@functools.lru_cache(maxsize=1024)
def table_of(serialised: bytes) -> SymbolTable:
    """The table ``serialised`` holds, read once a process (CorruptDataError if it is none).

    Examples
    --------
    >>> from fsstgpu import SymbolTable
    >>> from fsstgpu.formats.table_child import table_of
    >>> table_of(SymbolTable([b"ab"]).to_bytes()).symbols
    (b'ab',)
    """
    return SymbolTable.from_bytes(serialised)


def _entries(dictionary: pa.Array, js) -> list:
    """Entries ``js`` of a (checked) binary dictionary as bytes, None where null."""
    wide = pa.types.is_large_binary(dictionary.type) or pa.types.is_large_string(dictionary.type)
    offsets = np.frombuffer(dictionary.buffers()[1], np.int64 if wide else np.int32)[
        dictionary.offset :]
    data = dictionary.buffers()[2]
    raw = memoryview(data) if data is not None else memoryview(b"")
    valid = None if not dictionary.null_count else \
        np.asarray(dictionary.is_valid().to_numpy(zero_copy_only=False))
    return [None if valid is not None and not valid[j] else
            bytes(raw[int(offsets[j]) : int(offsets[j + 1])]) for j in js]


def read_new(raws, found: dict, tables: list) -> None:
    """The serialised tables among ``raws`` (bytes, None for none) that ``found`` does not
    hold yet, read at once and added: to ``tables``, and to ``found`` as their index there (-1
    where unreadable). A lone new one is read through :func:`table_of`'s cache.

    Examples
    --------
    >>> from fsstgpu import SymbolTable
    >>> from fsstgpu.formats.table_child import read_new
    >>> a = SymbolTable([b"a"]).to_bytes()
    >>> found, tables = {}, []
    >>> read_new([a, None, b"junk", a], found, tables)
    >>> list(found.values()), len(tables)
    ([0, -1], 1)
    """
    fresh = list(dict.fromkeys(r for r in raws if r is not None and r not in found))
    if len(fresh) == 1:
        try:
            got = [table_of(fresh[0])]
        except CorruptDataError:
            got = [None]
    else:
        got = read_tables(b"".join(fresh), np.cumsum([0] + [len(r) for r in fresh]))
    for serialised, table in zip(fresh, got, strict=True):
        found[serialised] = -1 if table is None else len(tables)
        if table is not None:
            tables.append(table)


def table_ids(dictionary: pa.Array, js, found: dict, tables: list, where: str, *,
              strict: bool = True) -> list[int]:
    """Dictionary entries ``js``' indices in ``tables``, the distinct tables read so far (the
    new ones added there; ``found``: their serialised bytes to index). ``strict``: a null or
    unreadable entry is CorruptDataError naming ``where`` and the entry (the first of ``js``);
    else its index is -1.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu import SymbolTable
    >>> from fsstgpu.formats.table_child import table_ids
    >>> a, b = SymbolTable([b"a"]).to_bytes(), SymbolTable([b"b"]).to_bytes()
    >>> tables = []
    >>> table_ids(pa.array([a, b"junk", b, a]), [0, 1, 2, 3], {}, tables, "x", strict=False)
    [0, -1, 1, 0]
    >>> [t.symbols for t in tables]
    [(b'a',), (b'b',)]
    """
    raws = _entries(dictionary, js)
    read_new(raws, found, tables)
    out = []
    for j, serialised in zip(js, raws, strict=True):
        k = -1 if serialised is None else found[serialised]
        if k < 0 and strict:
            if serialised is None:
                raise CorruptDataError(f"{where}: a string's table {j} is null")
            try:
                SymbolTable.from_bytes(serialised)  # (what is wrong with it, in words)
            except CorruptDataError as exc:
                raise CorruptDataError(f"{where}: table {j}: {exc}") from None
        out.append(k)
    return out


def dictionary_tables(dictionary: pa.Array, index: np.ndarray):
    """Each dictionary entry's id among the distinct tables (-1: null, unreadable or named by
    no row), and the distinct tables. Only the entries some row names are read (a forged
    dictionary of many entries costs no more than its rows), and an unreadable one is never an
    error here.

    Examples
    --------
    >>> import numpy as np, pyarrow as pa
    >>> from fsstgpu import SymbolTable
    >>> from fsstgpu.formats.table_child import dictionary_tables
    >>> entries = pa.array([SymbolTable([b"a"]).to_bytes(), b"unused"])
    >>> ids, distinct = dictionary_tables(entries, np.array([0, 0], np.uint16))
    >>> ids.tolist(), len(distinct)
    ([0, -1], 1)
    """
    check_arrow(dictionary, f"{EXTENSION_NAME} storage, the tables")
    table_of_entry = np.full(max(len(dictionary), 1), -1, np.int32)
    distinct: list[SymbolTable] = []
    named = (list(range(len(dictionary))) if len(dictionary) <= 1 else  # the usual chunk
             np.flatnonzero(np.bincount(index, minlength=len(dictionary))[: len(dictionary)])
             .tolist())
    if named:
        table_of_entry[named] = table_ids(dictionary, named, {}, distinct, "", strict=False)
    return table_of_entry, distinct


def tables_in_data(parts, n: int, validity):
    """Version 4: the distinct tables of the ``table`` children ``parts`` (one dictionary
    array per chunk, the struct's nulls applied) and each string's index into them.

    Untrusted: an index past its chunk's dictionary, a null or damaged table under a valid
    string is CorruptDataError; what lies under a null string is never read.

    Examples
    --------
    >>> import numpy as np, pyarrow as pa
    >>> from fsstgpu import SymbolTable
    >>> from fsstgpu.formats.table_child import tables_in_data
    >>> entries = pa.array([SymbolTable([b"a"]).to_bytes(), SymbolTable([b"b"]).to_bytes()])
    >>> part = pa.DictionaryArray.from_arrays(pa.array([1, 0, 1], pa.uint16()), entries)
    >>> tables, per_row = tables_in_data([part], 3, None)
    >>> [t.symbols for t in tables], per_row.tolist()
    ([(b'a',), (b'b',)], [1, 0, 1])
    """
    valid = None
    per_row = np.empty(n, np.int32)
    found: dict[bytes, int] = {}
    tables: list[SymbolTable] = []

    pos = 0
    for k, part in enumerate(parts):
        m = len(part)
        if not m:
            continue
        where = f"{EXTENSION_NAME} storage" + (f" (chunk {k})" if len(parts) > 1 else "")
        if not pa.types.is_dictionary(part.type):
            raise CorruptDataError(f"{where}: the table child is not a dictionary")
        dictionary = part.dictionary
        check_arrow(dictionary, f"{where}, the tables")
        raw = buffer_values(part.indices.buffers()[1], np.uint16, part.indices.offset, m,
                            f"{where}, the table indices")
        if part.null_count == m:  # no string to decode: no table is looked at
            per_row[pos : pos + m] = 0
            pos += m
            continue
        if len(dictionary) == 1 and int(raw.max()) == 0:  # the usual chunk: one table
            per_row[pos : pos + m] = table_ids(dictionary, [0], found, tables, where)[0]
            pos += m
            continue
        if valid is None:
            valid = (np.ones(n, bool) if validity is None
                     else np.unpackbits(validity, count=n, bitorder="little").astype(bool))
        used = valid[pos : pos + m]
        raw = np.where(used, raw, 0)  # what lies under a null is never looked up
        if used.any() and int(raw.max()) >= len(dictionary):
            raise CorruptDataError(f"{where}: a string names table {int(raw.max())} of "
                                   f"{len(dictionary)}")
        local = np.zeros(max(len(dictionary), 1), np.int32)
        named = np.flatnonzero(np.bincount(raw[used], minlength=len(dictionary))).tolist()
        if named:
            local[named] = table_ids(dictionary, named, found, tables, where)
        per_row[pos : pos + m] = local[raw]
        pos += m
    return tuple(tables) or (SymbolTable([]),), per_row
