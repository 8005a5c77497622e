"""A Parquet footer that reads an fsst file's columns as their storage, so pyarrow's threads can.

Pyarrow builds a Parquet file's Arrow types from the ``ARROW:schema`` value in its footer. An
``fsstgpu.fsst`` type there is made by Python code (a Python-defined extension type), and
pyarrow's pool threads must not hold one: one that drops its reference while the interpreter
finalizes aborts the process (``files.md``, "Reading without pyarrow's threads"). So a file
with fsst columns was read with pyarrow's threads off, one column after another on the calling
thread. :func:`storage_footer` gives the file's footer with that one value replaced by the same
schema with each fsst column's storage struct in place of its type; read through it
(``pq.ParquetFile(f, metadata=footer)``), a row group's columns are decoded by pyarrow's threads
side by side and no Python type is made or held off the caller's thread.
:func:`with_fsst_types` then gives the fsst columns their type back, on the caller's thread.

Only files whose extension columns are all top-level fsst columns get such a footer (a nested
fsst column, or another extension type, would need its storage rebuilt inside lists and
structs); any other file is read as before.

>>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
>>> from fsstgpu.formats import compress_file
>>> from fsstgpu.formats.storage_footer import fsst_types, storage_footer, with_fsst_types
>>> d = tempfile.mkdtemp()
>>> pq.write_table(pa.table({"s": ["a", "b"]}), os.path.join(d, "a.parquet"))
>>> _ = compress_file(os.path.join(d, "a.parquet"), os.path.join(d, "b.parquet"))
>>> f = pq.ParquetFile(os.path.join(d, "b.parquet"))
>>> with pa.OSFile(os.path.join(d, "b.parquet")) as raw:
...     footer = storage_footer(raw, f.metadata, f.schema_arrow)
>>> footer.schema.to_arrow_schema().field("s").type.names
['codes', 'lengths', 'cuts', 'table']
>>> storage = pq.ParquetFile(os.path.join(d, "b.parquet"), metadata=footer).read_row_group(0)
>>> with_fsst_types(storage, fsst_types(f.schema_arrow)).equals(f.read_row_group(0))
True
"""

from __future__ import annotations

import base64

import pyarrow as pa
import pyarrow.parquet as pq

from fsstgpu.formats.arrow import is_fsst_type

__all__ = ["fsst_types", "holds_extension_type", "storage_footer", "with_fsst_types"]

_SCHEMA_KEY = b"ARROW:schema"
_VALUE_FIELD = 0x18  # compact protocol: KeyValue's field 2 (binary), one past field 1


def _varint(v: int) -> bytes:
    out = bytearray()
    while v >= 0x80:
        out.append(v & 0x7F | 0x80)
        v >>= 7
    return bytes(out + bytes([v]))


def holds_extension_type(type_: pa.DataType) -> bool:
    """Tell whether ``type_`` is, or nests, an Arrow extension type.

    Examples
    --------
    >>> import pyarrow as pa, fsstgpu
    >>> from fsstgpu.formats.arrow_storage import to_extension_array
    >>> from fsstgpu.formats.storage_footer import holds_extension_type
    >>> fsst = to_extension_array(fsstgpu.compress(pa.array(["a"]))).type
    >>> holds_extension_type(pa.list_(fsst)), holds_extension_type(pa.list_(pa.string()))
    (True, False)
    """
    if isinstance(type_, pa.BaseExtensionType):
        return True
    if pa.types.is_dictionary(type_):
        return holds_extension_type(type_.value_type)
    return any(holds_extension_type(type_.field(i).type) for i in range(type_.num_fields))


def storage_footer(f: pa.NativeFile, meta: pq.FileMetaData, read_schema: pa.Schema
                   ) -> pq.FileMetaData | None:
    """The footer of the Parquet file ``f`` (``meta``, which pyarrow reads as ``read_schema``)
    with its stored Arrow schema's fsst types replaced by their storage types.

    None where that cannot be done exactly: no stored schema or no fsst column, an extension
    type that is not a top-level fsst column, an encrypted footer, a stored schema that is not
    once in the footer as pyarrow writes it. Every other byte of the footer is the file's, and
    the result is checked against ``meta`` (row groups, rows) and ``read_schema`` (pyarrow
    must read the storage schema from it).
    """
    stored = (meta.metadata or {}).get(_SCHEMA_KEY)
    if stored is None or not any(is_fsst_type(f.type) for f in read_schema) or any(
            holds_extension_type(f.type) and not is_fsst_type(f.type) for f in read_schema):
        return None
    storage = pa.schema([f.with_type(f.type.storage_type) if is_fsst_type(f.type) else f
                         for f in read_schema], metadata=read_schema.metadata)
    try:
        size = f.size()
        tail = f.read_at(8, size - 8) if size >= 12 else b""
        length = int.from_bytes(tail[:4], "little")
        if tail[4:] != b"PAR1" or not 0 < length <= size - 12:
            return None  # (an encrypted footer ends "PARE")
        footer = f.read_at(length, size - 8 - length)
        old = bytes([_VALUE_FIELD]) + _varint(len(stored)) + stored
        if footer.count(old) != 1:
            return None
        value = base64.b64encode(storage.serialize().to_pybytes())
        new = footer.replace(old, bytes([_VALUE_FIELD]) + _varint(len(value)) + value)
        rewritten = pq.read_metadata(pa.BufferReader(
            b"PAR1" + new + len(new).to_bytes(4, "little") + b"PAR1"))
        if (rewritten.num_row_groups != meta.num_row_groups
                or rewritten.num_rows != meta.num_rows
                or not rewritten.schema.to_arrow_schema().equals(storage)):
            return None
        return rewritten
    except (pa.ArrowException, OSError, ValueError):
        return None


def fsst_types(read_schema: pa.Schema) -> dict:
    """Each fsst column's type in ``read_schema``, by name (what :func:`with_fsst_types`
    gives back)."""
    return {f.name: f.type for f in read_schema if is_fsst_type(f.type)}


def with_fsst_types(table: pa.Table, types: dict) -> pa.Table:
    """``table``, read through a :func:`storage_footer`, with each fsst column given its type
    again (``types``: :func:`fsst_types` of the schema pyarrow reads the file with; no data is
    checked or copied: the fsst reads check the storage as they would have)."""
    for i, field in enumerate(table.schema):
        fsst = types.get(field.name)
        if fsst is not None:
            column = pa.chunked_array([pa.ExtensionArray.from_storage(fsst, chunk)
                                       for chunk in table.column(i).chunks], fsst)
            table = table.set_column(i, field.with_type(fsst), column)
    return table
