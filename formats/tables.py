"""Whole tables: compress the string columns of a pyarrow Table / RecordBatch, keep the rest.

:func:`compress_table` replaces every string-like column (the six string / binary types; a
dictionary of them when named) by an ``fsstgpu.fsst`` extension column (``formats/arrow.md``),
and the string-like leaves of list / struct / map columns by ``fsstgpu.fsst`` leaves
(:mod:`fsstgpu.formats.nested`), so the result is an ordinary Arrow table: it can be written to
Parquet or Arrow IPC with pyarrow, sliced, filtered and concatenated, and read back by anything
that has ``import fsstgpu``-ed (a reader without fsstgpu sees the storage struct).
:func:`decompress_table` gives the original table back.

Each column is planned and trained as :func:`fsstgpu.compress` does it (blocks, each chunk of
1 MiB or more planned on its own: :mod:`fsstgpu.columns`); the tables travel in the storage, so
the extension type is the same for every column of one string type, whatever its tables, and
the chunks are kept as they are.

>>> import pyarrow as pa, fsstgpu
>>> t = pa.table({"id": [1, 2], "url": ["http://a.example", None]})
>>> c = fsstgpu.compress_table(t)
>>> c.schema.field("url").type
FsstType(string, tables in the data, S=4096, storage=struct<codes: large_binary, \
lengths: uint32, cuts: binary, table: dictionary<values=binary, indices=uint16, ordered=0>>)
>>> fsstgpu.decompress_table(c, device="cpu").equals(t)
True
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from fsstgpu.arrow_layout import as_chunks
from fsstgpu.blocks import check_level
from fsstgpu.columns import compress_column, decompress_column
from fsstgpu.device import resolve_device
from fsstgpu.formats.arrow import is_fsst_type
from fsstgpu.formats.arrow_storage import from_extension_array, to_extension_array
from fsstgpu.formats.dictionary_encoding import dictionary_encoded
from fsstgpu.formats.nested import compress_nested, decode_nested, holds_fsst, holds_strings
from fsstgpu.formats.selection import is_default_column, select_columns
from fsstgpu.gpu.decode import decompress_device
from fsstgpu.inputs import as_string_column, as_table
from fsstgpu.splits import DEFAULT_SPLIT_SIZE
from fsstgpu.training import check_compression_options

__all__ = ["compress_table", "decompress_table"]


def _check_table(table, what: str) -> None:
    if not isinstance(table, (pa.Table, pa.RecordBatch)):
        raise TypeError(f"{what} takes a pyarrow Table or RecordBatch, not "
                        f"{type(table).__name__}")


def compress_table(data, columns=None, *, table=None, sample_bytes=None,
                   split_size=DEFAULT_SPLIT_SIZE, level="default"):
    """Compress the string-like columns of a Table or RecordBatch; keep the other columns.

    Parameters
    ----------
    data : pyarrow.Table, pyarrow.RecordBatch, pandas.DataFrame or polars.DataFrame
        A DataFrame is taken as a Table (:func:`fsstgpu.inputs.as_table`: a pandas one with its
        index and dtypes recorded, so that ``decompress_table(...).to_pandas()`` gives it back).
    columns : list of str or str, optional
        The columns to compress (each must be string-like, or a list / struct / map column
        holding string-like leaves, each leaf compressed as one column; a string: names
        separated by commas, as :func:`fsstgpu.formats.compress_file` takes them); default:
        every such column that is not dictionary-encoded. A dictionary column is already
        compact, and kept it comes back exactly; named, it is compressed as its plain values and
        gets a dictionary rebuilt from them back (see :func:`decompress_table`), as
        ``compress_file`` does.
    table : SymbolTable or bytes, optional
        Use this symbol table for every compressed column (as :func:`fsstgpu.compress` takes
        it); default: tables trained per column as :func:`fsstgpu.compress` trains them.
    sample_bytes, split_size, level
        As for :func:`fsstgpu.compress`.

    Returns
    -------
    pyarrow.Table or pyarrow.RecordBatch
        Same kind (a Table for a DataFrame), column names, order, chunks, field nullability
        and metadata; the compressed columns have the ``fsstgpu.fsst`` extension type, which
        records the original type (a dictionary type included).

    Raises
    ------
    TypeError
        For a non-table.
    ColumnSelectionError
        For a requested column the table lacks (a ValueError), or one that is not string-like
        (its subclass ``ColumnTypeError`` is a TypeError too).

    Examples
    --------
    >>> import pyarrow as pa, fsstgpu
    >>> batch = pa.record_batch({"k": pa.array(["a", "b"]).dictionary_encode(), "v": [1.5, 2.5]})
    >>> fsstgpu.compress_table(batch).schema.field("k").type  # kept
    DictionaryType(dictionary<values=string, indices=int32, ordered=0>)
    >>> out = fsstgpu.compress_table(batch, columns=["k"])
    >>> type(out).__name__, str(out.schema.field("k").type)
    ('RecordBatch', 'extension<fsstgpu.fsst[dictionary<values=string, indices=int32, ordered=0>]>')
    """
    level = check_level(level)
    # the options for every column, checked once before any: a table without string columns
    # took split_size=-1 or table=5 without a word
    table, _, split_size = check_compression_options(table, sample_bytes, split_size)
    data = as_table(data, "compress_table")
    schema = data.schema
    # the files' selector: dictionary columns only when named (their dictionaries would change)
    chosen = set(select_columns(schema, columns, source="the table", dictionaries=False,
                                nested=True))
    fields, arrays = [], []
    for i, field in enumerate(schema):
        col = data.column(i)
        # by field when none are named: another column may have this one's name
        take = (is_default_column(field, dictionaries=False, nested=True) if columns is None
                else field.name in chosen)
        if take and holds_strings(field.type):  # formats/nested.py
            col = compress_nested(col, table=table, sample_bytes=sample_bytes,
                                  split_size=split_size, level=level)
            field = field.with_type(col.type)
        elif take:
            col = _compress_column(col, table, sample_bytes, split_size, level)
            field = field.with_type(col.type)
        fields.append(field)
        arrays.append(col)
    return _rebuild(data, fields, arrays)


def _rebuild(like, fields, arrays):
    """A Table or RecordBatch (as ``like`` is) of these columns, with ``like``'s metadata."""
    schema = pa.schema(fields, metadata=like.schema.metadata)
    if isinstance(like, pa.RecordBatch):
        return pa.RecordBatch.from_arrays(arrays, schema=schema)
    return pa.Table.from_arrays(arrays, schema=schema)


def _compress_column(col, symbol_table, sample_bytes, split_size, level):
    """One column as an fsstgpu.fsst extension Array (ChunkedArray: the same chunks)."""
    dictionary_type = col.type if pa.types.is_dictionary(col.type) else None
    values = as_string_column(col)
    carr = compress_column(values, table=symbol_table, sample_bytes=sample_bytes,
                           split_size=split_size, level=level)
    ext = to_extension_array(carr, dictionary_type=dictionary_type)
    if not isinstance(col, pa.ChunkedArray):
        return ext
    return as_chunks(ext, np.array([len(chunk) for chunk in col.chunks], np.int64))


def decompress_table(table, device="auto", stream=None):
    """Decompress every ``fsstgpu.fsst`` column of a Table or RecordBatch; keep the rest.

    Parameters
    ----------
    table : pyarrow.Table or pyarrow.RecordBatch
        E.g. from :func:`compress_table`, or read with ``pyarrow.parquet.read_table`` from a
        file written from one.
    device : {"auto", "cpu", "gpu"}
        Where to decode (see :func:`fsstgpu.decompress`); the result is in host memory.
    stream : cupy.cuda.Stream, optional
        GPU only.

    Returns
    -------
    pyarrow.Table or pyarrow.RecordBatch
        Each decompressed column has its original type, with its chunks. A column that was
        dictionary-encoded gets its dictionary type back, its dictionary rebuilt from the values
        (in order of first appearance per chunk; the original dictionary's unused entries and
        order are not kept).

    Examples
    --------
    >>> import pyarrow as pa, fsstgpu
    >>> t = pa.table({"s": pa.chunked_array([["x", "y"], ["z"]], pa.large_string())})
    >>> back = fsstgpu.decompress_table(fsstgpu.compress_table(t), device="cpu")
    >>> back.equals(t), back.column("s").num_chunks
    (True, 2)
    """
    _check_table(table, "decompress_table")
    on_gpu = resolve_device(device) == "gpu"
    fields, arrays = [], []
    for i, field in enumerate(table.schema):
        col = table.column(i)
        if is_fsst_type(field.type):
            carr = from_extension_array(col)
            col = (decompress_device(carr, stream).to_arrow() if on_gpu
                   else decompress_column(carr))
            if field.type.index_type is not None:
                col = dictionary_encoded(col, field.type.original_type, f"column {field.name!r}")
            field = field.with_type(col.type)
        elif holds_fsst(field.type):  # formats/nested.py: each leaf decoded on ``device``
            col, _ = decode_nested(col, "gpu" if on_gpu else "cpu")
            field = field.with_type(col.type)
        fields.append(field)
        arrays.append(col)
    return _rebuild(table, fields, arrays)
