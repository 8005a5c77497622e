"""Parquet specifics of :mod:`fsstgpu.formats.rowgroups`: the writer's options per leaf column,
and the checks of a file's footer.

Pyarrow keys its per-column writer options (``compression=``, ``use_dictionary=``,
``write_statistics=``, ...) by the Parquet *leaf* path (``tags.list.element``, ``point.x``), not
by the top-level name: a nested column keyed by its name gets none of them (uncompressed pages,
no dictionary, no statistics). :func:`leaf_paths` names the leaves as pyarrow does and
:func:`writer_options` keys every option by them.

The footer has no checksum of its own, so an fsstgpu file's Arrow schema carries its CRC32
(:data:`SCHEMA_CRC_KEY`) and the file's key-value metadata the row counts
(:data:`ROW_GROUPS_KEY`, added by the writer's ``close()`` only, so another writer rewriting
the file does not copy it: pyarrow copies the schema's metadata, not the file's). Parquet
changes some Arrow types (``date64`` is read back as ``date32``, ``timestamp[s]`` as
``timestamp[ms]``, list items are named ``element``, ...); the schema given to the writer is
stored whole (``ARROW:schema``), so :func:`checked_schema` compares the CRC with that schema,
checks that the schema pyarrow rebuilds from the Parquet footer is exactly what Parquet makes
of it, and returns it: its columns are cast back to it
(:func:`fsstgpu.formats.parquet_restore.restore`).

>>> import pyarrow as pa
>>> from fsstgpu.formats.parquet_options import leaf_paths
>>> leaf_paths(pa.field("tags", pa.map_(pa.string(), pa.list_(pa.int8()))))
['tags.key_value.key', 'tags.key_value.value.list.element']
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import zlib

import pyarrow as pa
import pyarrow.parquet as pq

from fsstgpu.errors import CorruptDataError
from fsstgpu.formats.arrow import is_fsst_type
from fsstgpu.formats.chunk_record import CHUNKS_KEY

__all__ = [
    "FSST_DICTIONARY_PAGE_BYTES",
    "FSST_PAGE_ROWS",
    "FSST_ZSTD_LEVEL",
    "PARQUET_CODECS",
    "ROW_GROUPS_KEY",
    "SCHEMA_CRC_KEY",
    "check_column_metadata",
    "check_row_groups",
    "checked_schema",
    "input_codecs",
    "input_leaf",
    "leaf_columns",
    "leaf_indices",
    "leaf_paths",
    "open_parquet",
    "parquet_codec_name",
    "read_row_group",
    "validated",
    "with_schema_crc",
    "writer_options",
]

#: the schema-metadata key of the CRC32 of a Parquet file's Arrow schema (without this key):
#: pages carry their own CRCs, the footer does not, and a flipped byte there could turn an
#: fsst column into a plain struct or rename a column.
SCHEMA_CRC_KEY = b"fsstgpu.schema_crc32"

#: the file-metadata key of the row counts of a Parquet file's row groups (JSON), added when
#: the file is finished: a flipped row count in the footer would silently drop rows. Only
#: fsstgpu's writer adds it, so it also tells a footer written here from another writer's.
ROW_GROUPS_KEY = b"fsstgpu.row_groups"

#: Parquet codecs a column may be written with (``"none"``: uncompressed pages).
PARQUET_CODECS = ("none", "snappy", "gzip", "brotli", "lz4", "zstd")

# zstd level of the fsst columns' pages. Measured on a 1M-row table of this machine's text
# (formats/files.md): level 3 makes the codes' pages 13% smaller than level 1 (pyarrow's default),
# enough for the file to undercut pyarrow's zstd Parquet of the strings; higher levels gain 1-2%
# more at several times the write time.
FSST_ZSTD_LEVEL = 3
#: Dictionary pages of fsst files may hold this much (pyarrow's default, 1 MiB, falls back to
#: plain pages after a few thousand distinct lines: the repeating columns' codes then lose their
#: dictionary; measured in formats/files.md).
FSST_DICTIONARY_PAGE_BYTES = 64 << 20
#: Rows a data page of an fsst file may hold: pages end at pyarrow's 1 MiB of data instead of
#: its 20,000 rows, so a string column's small leaves (lengths, cuts, table indices) are one or
#: a few pages a row group rather than ten, each with its header, checksum and zstd frame (whose
#: decoder pyarrow sets up afresh every page). Measured (formats/files.md): 600 k rows of this
#: machine's text, 17.19 -> 16.12 MB, reads and writes as fast within the noise.
FSST_PAGE_ROWS = 1 << 20

_CODEC_ALIASES = {"uncompressed": "none", "lz4_raw": "lz4"}  # as file metadata names them

# Struct children of an fsst column's storage: seen without the extension type, they mean a
# footer whose Arrow schema was lost (another writer's) or altered, not a user's struct.
_FSST_STORAGE_NAMES = ["codes", "lengths", "cuts"]

_KEYS = (SCHEMA_CRC_KEY, ROW_GROUPS_KEY)


def parquet_codec_name(name: str) -> str:
    """A Parquet codec name as pyarrow's writer takes it; ValueError listing the codecs.

    Examples
    --------
    >>> from fsstgpu.formats.parquet_options import parquet_codec_name
    >>> parquet_codec_name("ZSTD"), parquet_codec_name("uncompressed")
    ('zstd', 'none')
    """
    # (a name that is not a str names none: name.lower() failed as an AttributeError)
    codec = _CODEC_ALIASES.get(name.lower(), name.lower()) if isinstance(name, str) else name
    if codec not in PARQUET_CODECS:
        raise ValueError(f"unknown Parquet codec {name!r}; choose from "
                         f"{', '.join(PARQUET_CODECS)}")
    return codec


def _input_codec(name: str) -> str:
    """The codec to keep for a column an input had in codec ``name`` (Snappy for one pyarrow
    cannot write, such as LZO)."""
    name = _CODEC_ALIASES.get(name.lower(), name.lower())
    return name if name in PARQUET_CODECS else "snappy"


def leaf_paths(field: pa.Field) -> list[str]:
    """The Parquet column paths of a top-level ``field``, as pyarrow's writer names them.

    Lists (also large and fixed-size) are ``<name>.list.element``, maps
    ``<name>.key_value.key`` and ``.value``, struct children ``<name>.<child>``; an extension
    type has its storage's leaves, a dictionary one leaf.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.parquet_options import leaf_paths
    >>> leaf_paths(pa.field("p", pa.struct([("x", pa.int8()), ("l", pa.list_(pa.string()))])))
    ['p.x', 'p.l.list.element']
    """
    return _leaves(field.name, field.type)


def leaf_columns(schema: pa.Schema, num_columns: int) -> dict[str, list[int]] | None:
    """The Parquet leaf column indices of each top-level field of a Parquet file's Arrow
    ``schema``, by name; None when they do not come to the file's ``num_columns`` or a name
    repeats.

    pyarrow's ``read_row_group(columns=)`` takes a name for a dotted path as well: ``"a.b"``
    also selects the child ``b`` of a struct ``a``. These indices name top-level columns only
    (:func:`read_row_group`).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.parquet_options import leaf_columns
    >>> leaf_columns(pa.schema([("a.b", pa.int8()), ("a", pa.struct([("b", pa.int8())]))]), 2)
    {'a.b': [0], 'a': [1]}
    """
    out, start = {}, 0
    for field in schema:
        count = len(leaf_paths(field))
        out[field.name] = list(range(start, start + count))
        start += count
    return out if start == num_columns and len(out) == len(schema) else None


def read_row_group(parquet: pq.ParquetFile, k: int, columns, leaves, *,
                   use_threads: bool) -> pa.Table:
    """Row group ``k`` of ``parquet`` with the top-level ``columns`` named (every column when
    None), in that order; ``leaves``: :func:`leaf_columns` of the file (None: by name, as
    pyarrow resolves them)."""
    indices = leaf_indices(columns, leaves)
    if indices is None:
        return parquet.read_row_group(k, columns=columns, use_threads=use_threads)
    return parquet.reader.read_row_group(k, column_indices=indices, use_threads=use_threads)


def leaf_indices(columns, leaves) -> list[int] | None:
    """The Parquet leaf column indices of the top-level ``columns`` (``leaves``:
    :func:`leaf_columns` of the file), in order; None for every column (``columns`` None) or
    where ``leaves`` does not name them all (pyarrow then resolves the names).

    Examples
    --------
    >>> from fsstgpu.formats.parquet_options import leaf_indices
    >>> leaves = {"a": [0], "b": [1, 2]}
    >>> leaf_indices(["b", "a"], leaves), leaf_indices(None, leaves), leaf_indices(["c"], leaves)
    ([1, 2, 0], None, None)
    """
    if columns is None or leaves is None or any(name not in leaves for name in columns):
        return None
    return [j for name in columns for j in leaves[name]]


def _leaves(path: str, type_: pa.DataType) -> list[str]:
    if isinstance(type_, pa.BaseExtensionType):
        return _leaves(path, type_.storage_type)
    if pa.types.is_struct(type_):
        return [p for child in type_ for p in _leaves(f"{path}.{child.name}", child.type)]
    if pa.types.is_map(type_):
        return (_leaves(f"{path}.key_value.key", type_.key_type)
                + _leaves(f"{path}.key_value.value", type_.item_type))
    if (pa.types.is_list(type_) or pa.types.is_large_list(type_)
            or pa.types.is_fixed_size_list(type_) or pa.types.is_list_view(type_)
            or pa.types.is_large_list_view(type_)):
        return _leaves(f"{path}.list.element", type_.value_type)
    return [path]


def _fsst_leaves(field: pa.Field) -> list[tuple[str, str | None]]:
    """The Parquet column paths of an fsst column, each with the encoding it is written with."""
    return _fsst_storage_leaves(field.name, field.type)


def _fsst_storage_leaves(path: str, type_: pa.DataType) -> list[tuple[str, str | None]]:
    storage = type_.storage_type
    if not pa.types.is_struct(storage):  # version 1: the codes alone
        return [(path, "DELTA_LENGTH_BYTE_ARRAY")]
    # version 4's tables (one dictionary page per column chunk, the indices run-length coded):
    # written plain, every string would carry a copy of its 2 KB table
    how = {"codes": "DELTA_LENGTH_BYTE_ARRAY", "lengths": "DICTIONARY", "table": "TABLES"}
    return [(f"{path}.{child.name}", how.get(child.name)) for child in storage]


def _nested_fsst_leaves(path: str, type_: pa.DataType) -> dict[str, str | None]:
    """The leaves of the fsst types nested in a list / struct / map column (formats/nested.py),
    keyed by path as :func:`leaf_paths` names them, with their encodings."""
    if is_fsst_type(type_):
        return dict(_fsst_storage_leaves(path, type_))
    if isinstance(type_, pa.BaseExtensionType):
        return {}
    if pa.types.is_struct(type_):
        return {k: v for child in type_
                for k, v in _nested_fsst_leaves(f"{path}.{child.name}", child.type).items()}
    if pa.types.is_map(type_):
        return {**_nested_fsst_leaves(f"{path}.key_value.key", type_.key_type),
                **_nested_fsst_leaves(f"{path}.key_value.value", type_.item_type)}
    if (pa.types.is_list(type_) or pa.types.is_large_list(type_)
            or pa.types.is_fixed_size_list(type_)):
        return _nested_fsst_leaves(f"{path}.list.element", type_.value_type)
    return {}


def writer_options(schema: pa.Schema, *, fsst_columns=(), codecs=None, fsst_codec="zstd",
                   repeating=(), prefixed=(), plain_lengths=None,
                   zstd_level: int | None = None) -> dict:
    """``pyarrow.parquet.ParquetWriter`` keyword arguments for ``schema``, keyed by leaf path.

    fsst columns (those named in ``fsst_columns`` and every column of an fsst type, such as one
    copied from an fsst input) get codec ``fsst_codec``, no statistics and their encodings
    (``formats/files.md``), and so do the fsst leaves inside list / struct / map columns
    (``formats/nested.py``); every other leaf gets ``codecs[leaf]`` (else ``codecs[name]`` of
    its top-level column, else Snappy), dictionary encoding and statistics. The codes of the
    ``repeating`` fsst columns are dictionary-encoded, those of the ``prefixed`` ones (that do
    not repeat) ``DELTA_BYTE_ARRAY``, the others' ``DELTA_LENGTH_BYTE_ARRAY``; the lengths of
    the ``plain_lengths`` ones (default: the ``repeating`` ones) are written plain, the others'
    dictionary-encoded (:mod:`~fsstgpu.formats.encoding_trials` chooses). ``zstd_level``: the
    fsst pages' zstd level (default :data:`FSST_ZSTD_LEVEL`).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.parquet_options import writer_options
    >>> schema = pa.schema([("l", pa.list_(pa.string())), ("n", pa.int8())])
    >>> writer_options(schema, codecs={"l": "zstd"})["compression"]
    {'l.list.element': 'zstd', 'n': 'snappy'}
    """
    fsst = set(fsst_columns) | {f.name for f in schema if is_fsst_type(f.type)}
    codecs = codecs or {}
    compression, levels, encoding, dictionary, statistics = {}, {}, {}, [], []
    any_nested = False

    plain = set(repeating if plain_lengths is None else plain_lengths)

    def fsst_leaf(leaf, how):
        compression[leaf] = parquet_codec_name(fsst_codec)
        if compression[leaf] == "zstd":
            levels[leaf] = FSST_ZSTD_LEVEL if zstd_level is None else zstd_level
        if how in ("DICTIONARY", "TABLES"):
            dictionary.append(leaf)
        elif how:
            encoding[leaf] = how

    for field in schema:
        if field.name not in fsst:
            nested = _nested_fsst_leaves(field.name, field.type)  # fsst leaves of lists, ...
            any_nested = any_nested or bool(nested)
            for leaf in leaf_paths(field):
                if leaf in nested:
                    fsst_leaf(leaf, nested[leaf])
                    continue
                compression[leaf] = _input_codec(codecs.get(leaf) or codecs.get(field.name)
                                                 or "snappy")
                dictionary.append(leaf)
                statistics.append(leaf)
            continue
        for leaf, how in _fsst_leaves(field):
            if how == "DELTA_LENGTH_BYTE_ARRAY":  # the codes: equal strings, equal codes
                how = ("DICTIONARY" if field.name in repeating
                       else "DELTA_BYTE_ARRAY" if field.name in prefixed else how)
            elif how == "DICTIONARY" and field.name in plain:  # the lengths
                how = "PLAIN"
            fsst_leaf(leaf, how)
    # a column named like another's leaf (``s.codes`` beside fsst column ``s``) shares its path:
    # pyarrow then refuses an encoding beside dictionary encoding; dictionary encoding (plain
    # where it does not pay) suits both
    for leaf in set(encoding).intersection(dictionary):
        del encoding[leaf]
    keyed = bool(fsst) or any_nested
    return {
        "compression": compression,
        "compression_level": levels or None,
        "dictionary_pagesize_limit": FSST_DICTIONARY_PAGE_BYTES if keyed else None,
        "max_rows_per_page": FSST_PAGE_ROWS if keyed else None,
        "use_dictionary": dictionary if keyed else True,
        "write_statistics": statistics if keyed else True,
        "column_encoding": encoding or None,
    }


def _without_keys(schema: pa.Schema) -> pa.Schema:
    metadata = {k: v for k, v in (schema.metadata or {}).items() if k not in _KEYS}
    return schema.with_metadata(metadata) if metadata else schema.remove_metadata()


def _schema_crc(schema: pa.Schema) -> bytes:
    # Over the schema as the IPC format reads it back, which is what is stored: it does not
    # keep everything (a map's entries are "entries" again, where pyarrow's Parquet reader
    # names them after the column), and a CRC of the schema in memory would not match.
    plain = pa.ipc.read_schema(pa.py_buffer(_without_keys(schema).serialize()))
    return str(zlib.crc32(plain.serialize())).encode()


def with_schema_crc(schema: pa.Schema, *, always: bool = False) -> pa.Schema:
    """``schema`` with :data:`SCHEMA_CRC_KEY` when it has an fsst column, or fsst leaves in a
    nested one, or ``always`` (else as it is). fsstgpu's readers restore the types of a file
    with the key as they were written (Parquet reads ``date64`` back as ``date32``, ...).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.parquet_options import SCHEMA_CRC_KEY, with_schema_crc
    >>> with_schema_crc(pa.schema([("n", pa.int8())])).metadata is None
    True
    >>> SCHEMA_CRC_KEY in with_schema_crc(pa.schema([("n", pa.int8())]), always=True).metadata
    True
    """
    if not always and not any(is_fsst_type(f.type) or _nested_fsst_leaves(f.name, f.type)
                              for f in schema):
        return schema
    return schema.with_metadata({**(schema.metadata or {}), SCHEMA_CRC_KEY: _schema_crc(schema)})


def _read_back(schema: pa.Schema) -> pa.Schema:
    """The Arrow schema pyarrow reads back from a Parquet file written with ``schema``."""
    sink = pa.BufferOutputStream()
    with pq.ParquetWriter(sink, schema, store_schema=True) as writer:
        # (not schema.empty_table(): pyarrow cannot make an empty list of an extension type)
        writer.write_table(pa.Table.from_batches([], schema=schema))
    return pq.ParquetFile(pa.BufferReader(sink.getvalue())).schema_arrow


def _stored_schema(kv: dict) -> pa.Schema | None:
    """The Arrow schema the file's writer was given (``ARROW:schema``), or None."""
    raw = kv.get(b"ARROW:schema")
    if raw is None:
        return None
    try:
        return pa.ipc.read_schema(pa.py_buffer(base64.b64decode(raw)))
    except (binascii.Error, ValueError, pa.ArrowException) as exc:
        raise CorruptDataError(f"its stored Arrow schema is unreadable ({exc})") from None


def open_parquet(f: pa.NativeFile) -> pq.ParquetFile:
    """``pyarrow.parquet.ParquetFile`` of ``f`` (page CRCs checked), its refusal of an fsst
    column's type explained when the file is another writer's (``created_by``). Pyarrow's
    pre-buffering (each read's column chunks fetched by its I/O threads) is kept for a Python
    file (a URL's) and off for a local or in-memory one, where it only hands every read to
    another thread and back: 16-33% of the CPU time of reading a row group's columns one by
    one at 100-1,000 rows a row group, 5-10% at 20,000 (2-core VM, pyarrow 26)."""
    try:
        return pq.ParquetFile(f, memory_map=False, page_checksum_verification=True,
                              pre_buffer=isinstance(f, pa.PythonFile))
    except UnicodeDecodeError:  # pyarrow decodes the column names as UTF-8
        raise CorruptDataError("a column name in the footer is not UTF-8: the footer was "
                               "altered") from None
    except CorruptDataError as exc:
        created_by = _created_by(f)
        if created_by is None or created_by.startswith("parquet-cpp-arrow"):
            raise
        raise CorruptDataError(
            f"{exc}: the file was rewritten by another writer ({created_by}), which changed the "
            "fsst columns' storage types, which pyarrow then refuses to open as fsst: "
            "decompress the original file (fsstgpu decompress) before rewriting it with "
            "another writer"
        ) from None


# Writers' names as they start the footer's created_by (Parquet's FileMetaData field 6).
_WRITERS = re.compile(rb"(?:parquet-cpp|Polars|DuckDB|parquet-mr|parquet-rs|fastparquet"
                      rb"|impala|parquet-go|Apache Spark)[ -~]{0,120}")


def _created_by(f: pa.NativeFile) -> str | None:
    """The writer named in the footer of ``f``, found by its bytes: pyarrow's metadata reader
    is what refused the file (an fsst type it could not rebuild), so it cannot be asked."""
    try:
        size = f.size()
        f.seek(size - 8)
        length = int.from_bytes(f.read(4), "little")
        f.seek(max(0, size - 8 - length))
        found = _WRITERS.search(f.read(min(length, size - 8)))
    except (pa.ArrowException, OSError, ValueError):
        return None
    return found.group().decode("ascii") if found else None


def checked_schema(parquet: pq.ParquetFile) -> tuple[pa.Schema, dict[str, pa.DataType]]:
    """The Arrow schema of a Parquet file, without fsstgpu's footer keys, after the checks of
    its footer; and the types its columns are to be cast back to
    (:func:`~fsstgpu.formats.parquet_restore.restore`).

    A footer written by fsstgpu (:data:`ROW_GROUPS_KEY` present) must match its schema CRC,
    and the schema pyarrow rebuilds from the Parquet schema must be exactly what Parquet makes
    of the stored one. A file rewritten by another writer keeps fsstgpu's schema metadata but not
    the row counts: when its schema no longer matches the CRC (its writer changed types, e.g.
    ``version="1.0"``), what is left to check is checked: the fsst types' own CRCs (when
    pyarrow parses them), page CRCs where written, and the codes when decoded.

    Examples
    --------
    >>> import pyarrow as pa, pyarrow.parquet as pq
    >>> from fsstgpu.formats.parquet_options import checked_schema
    >>> buf = pa.BufferOutputStream()
    >>> pq.write_table(pa.table({"n": [1]}), buf)
    >>> checked_schema(pq.ParquetFile(pa.BufferReader(buf.getvalue())))
    (n: int64, {})
    """
    metadata = parquet.metadata
    kv = metadata.metadata or {}
    try:
        actual = parquet.schema_arrow
    except UnicodeDecodeError:
        raise CorruptDataError("a column name in the footer is not UTF-8: the footer was "
                               "altered") from None
    stored = _stored_schema(kv)
    ours = ROW_GROUPS_KEY in kv
    try:
        created_by = metadata.created_by or "unknown"
    except UnicodeDecodeError:  # only named in messages
        created_by = "its name in the footer is not UTF-8"
    recorded = (stored if stored is not None else actual).metadata or {}
    if SCHEMA_CRC_KEY not in recorded:
        if ours:
            raise CorruptDataError(f"the footer lacks its schema CRC32 ({SCHEMA_CRC_KEY.decode()})")
        _check_fsst_storage(actual, created_by, ours)
        if CHUNKS_KEY in kv and stored is not None and not _read_back(  # (a decompressed output)
                _without_keys(stored)).equals(_without_keys(actual), check_metadata=True):
            raise CorruptDataError("its Parquet schema is not what its Arrow schema was written "
                                   "as (a type changed): the footer was altered")
        return _without_keys(actual), {}
    target = _without_keys(stored if stored is not None else actual)
    # files written before the CRC was of the schema as read back have that of pyarrow's
    # rebuilt schema, serialised as it was (a map's entries named after the column)
    legacy = str(zlib.crc32(_without_keys(actual).serialize())).encode()
    # (that CRC covers the rebuilt schema, not the stored one, which must then be the same
    # schema as the IPC format reads both back: else a flip in the stored schema that Parquet's
    # read-back normalises, such as a list's item name, would pass both checks)
    intact = (stored is not None
              and (recorded[SCHEMA_CRC_KEY] == _schema_crc(stored)
                   or (recorded[SCHEMA_CRC_KEY] == legacy
                       and _schema_crc(stored) == _schema_crc(actual)))
              and _read_back(target).equals(_without_keys(actual), check_metadata=True))
    if not intact and ours:
        raise CorruptDataError("CRC32 mismatch: the file's schema (its footer) was altered")
    if target.names != actual.names:
        raise CorruptDataError(f"its Arrow schema names the columns {target.names}, its Parquet "
                               f"schema {actual.names}")
    _check_fsst_storage(target, created_by, ours)
    return target, {f.name: f.type for f, a in zip(target, actual, strict=True)
                    if f.type != a.type}


def _check_fsst_storage(schema: pa.Schema, created_by: str, ours: bool) -> None:
    """CorruptDataError for a column that is an fsst column's storage without its type."""
    for f in schema:
        if (pa.types.is_struct(f.type) and not is_fsst_type(f.type)
                and [c.name for c in f.type][:3] == _FSST_STORAGE_NAMES):
            if ours:
                raise CorruptDataError(
                    f"column {f.name!r} is an fsstgpu.fsst column's storage without its type: "
                    "the file's footer metadata was lost or altered")
            raise CorruptDataError(
                f"column {f.name!r} is fsstgpu.fsst storage whose extension type (the strings' "
                f"type, their split size and, before version 4, their symbol tables: in the "
                f"ARROW:schema footer key) the file's writer ({created_by}) dropped: its "
                "strings cannot be decoded as they were written; rewrite the file with pyarrow "
                "keeping the schema (store_schema=True), or decompress it first")


def check_row_groups(metadata: pq.FileMetaData) -> None:
    """Compare a Parquet file's row-group row counts with :data:`ROW_GROUPS_KEY`, if recorded.

    Examples
    --------
    >>> import pyarrow as pa, pyarrow.parquet as pq
    >>> from fsstgpu.formats.parquet_options import check_row_groups
    >>> buf = pa.BufferOutputStream()
    >>> pq.write_table(pa.table({"n": [1]}), buf)
    >>> check_row_groups(pq.ParquetFile(pa.BufferReader(buf.getvalue())).metadata)
    """
    recorded = (metadata.metadata or {}).get(ROW_GROUPS_KEY)
    if recorded is None:
        return
    actual = [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]
    if recorded != json.dumps(actual).encode():
        raise CorruptDataError(f"the footer's row counts {actual} differ from those written "
                               f"({recorded.decode(errors='replace')})")


def input_codecs(metadata: pq.FileMetaData) -> dict[str, str]:
    """Each leaf's codec in the first row group, keyed by its path, and each top-level column's
    (its first leaf's) by its name; CorruptDataError for a path that is not UTF-8.

    Examples
    --------
    >>> import pyarrow as pa, pyarrow.parquet as pq
    >>> from fsstgpu.formats.parquet_options import input_codecs
    >>> buf = pa.BufferOutputStream()
    >>> pq.write_table(pa.table({"l": [["a"]]}), buf, compression="zstd")
    >>> input_codecs(pq.ParquetFile(pa.BufferReader(buf.getvalue())).metadata)
    {'l.list.element': 'zstd', 'l': 'zstd'}
    """
    if metadata.num_row_groups == 0:
        return {}
    rg = metadata.row_group(0)
    leaves, names = {}, {}
    for j in range(rg.num_columns):
        path = input_leaf(rg, j)
        leaves[path] = rg.column(j).compression.lower()
        names.setdefault(path.split(".")[0], leaves[path])
    return {**leaves, **{k: v for k, v in names.items() if k not in leaves}}


def check_column_metadata(parquet: pq.ParquetFile, row_group: int = 0, *,
                          use_threads: bool = False, columns=None) -> None:
    """Have pyarrow's reader check the column chunks' metadata of ``row_group`` (reading one
    row): some damage there (a size-statistics histogram of the wrong length) makes
    ``RowGroupMetaData.column()`` throw a C++ exception through Python, which aborts the
    process, while the reader raises it as an error. Call before reading column metadata;
    ``columns`` (top-level names) limits the check to those columns' chunks.

    Examples
    --------
    >>> import pyarrow as pa, pyarrow.parquet as pq
    >>> from fsstgpu.formats.parquet_options import check_column_metadata
    >>> buf = pa.BufferOutputStream()
    >>> pq.write_table(pa.table({"n": [1, 2]}), buf)
    >>> check_column_metadata(pq.ParquetFile(pa.BufferReader(buf.getvalue())))
    """
    if row_group < parquet.metadata.num_row_groups:
        batches = parquet.iter_batches(batch_size=1, row_groups=[row_group],
                                       columns=None if columns is None else list(columns),
                                       use_threads=use_threads)
        next(batches, None)


def input_leaf(row_group: pq.RowGroupMetaData, j: int) -> str:
    """The path of column chunk ``j`` of ``row_group``; CorruptDataError when not UTF-8 (a
    damaged footer: pyarrow raises UnicodeDecodeError).

    Examples
    --------
    >>> import pyarrow as pa, pyarrow.parquet as pq
    >>> from fsstgpu.formats.parquet_options import input_leaf
    >>> buf = pa.BufferOutputStream()
    >>> pq.write_table(pa.table({"p": [{"x": 1}]}), buf)
    >>> input_leaf(pq.ParquetFile(pa.BufferReader(buf.getvalue())).metadata.row_group(0), 0)
    'p.x'
    """
    try:
        return row_group.column(j).path_in_schema
    except UnicodeDecodeError:
        raise CorruptDataError(f"the footer's path of column chunk {j} is not UTF-8: "
                               "the footer was altered") from None


def validated(column, what: str):
    """``column`` after a full validation (offsets, UTF-8 of strings): pyarrow's Parquet reader
    hands out string columns without checking their UTF-8, and a column copied through into
    an output must not carry damage on; CorruptDataError naming ``what``.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.parquet_options import validated
    >>> offsets = pa.array([0, 1], pa.int32()).buffers()[1]
    >>> bad = pa.Array.from_buffers(pa.string(), 1, [None, offsets, pa.py_buffer(b"\\xff")])
    >>> validated(bad, "column 's'")
    Traceback (most recent call last):
    ...
    fsstgpu.errors.CorruptDataError: column 's' is invalid (Invalid UTF8 sequence at string index 0)
    """
    try:
        column.validate(full=True)
    except pa.ArrowInvalid as exc:
        raise CorruptDataError(f"{what} is invalid ({exc})") from None
    return column
