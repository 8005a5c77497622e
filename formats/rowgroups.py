"""Parquet and Arrow IPC files as a sequence of units (row groups or record batches).

:class:`Source` reads an input one unit at a time and :class:`Sink` writes one unit per call, so
a rewrite (:func:`rewrite`) holds one unit in memory whatever the file size, and the input's
unit boundaries survive. :func:`write_table` writes a plain file with pyarrow only.

Files are opened here, as bytes paths, and handed to pyarrow as open files: pyarrow takes path
strings as UTF-8, which a file name that is not valid UTF-8 (undecodable bytes, which Python
keeps as surrogates) is not.

Two pyarrow behaviours shape the reading:

* A file with an extension column (``fsstgpu.fsst`` or any other Python-defined type) is decoded
  on the calling thread. Read with threads, pyarrow's pool threads keep references to the
  column's Python type after a read returns and drop them later, which takes the GIL; a
  process ending at that moment aborts (``terminate called without an active exception``).
* A row group with more than 2 GiB of ``string``/``binary`` data comes back in several chunks;
  units are kept as they come, chunked, since concatenating them would overflow 32-bit offsets.

Integrity: a flipped byte must be an error, not wrong data. Parquet files are written with page
checksums (CRC32 of every data page, checked on read wherever present); Arrow IPC has none, so
every record batch written here carries the CRC32 of its serialised schema and data in its custom
metadata (key ``fsstgpu.crc32``), checked on read when present.

>>> import os, tempfile, pyarrow as pa
>>> from fsstgpu.formats.rowgroups import Source, write_table
>>> path = os.path.join(tempfile.mkdtemp(), "t.parquet")
>>> write_table(pa.table({"s": ["a", "b", "c"]}), path, "parquet", rows_per_unit=2)
>>> with Source(path) as source:
...     [unit.num_rows for unit in source.units()]
[2, 1]
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import zlib
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from fsstgpu.errors import CorruptDataError
from fsstgpu.formats.locations import Url, file_size, is_url, local_or_url
from fsstgpu.formats.sniff import sniff_format

__all__ = [
    "BATCH_CRC_KEY",
    "PARQUET_CODECS",
    "ProgressCallback",
    "Sink",
    "Source",
    "check_input",
    "holds_extension_type",
    "open_file",
    "parquet_codec_name",
    "reading",
    "rewrite",
    "write_table",
]

#: the custom-metadata key of a record batch's CRC32 (of ``RecordBatch.serialize()``)
BATCH_CRC_KEY = b"fsstgpu.crc32"

#: the schema-metadata key of the CRC32 of a Parquet file's Arrow schema (without this key):
#: pages carry their own CRCs, the footer does not, and a flipped byte there could turn an
#: fsst column into a plain struct or rename a column.
SCHEMA_CRC_KEY = b"fsstgpu.schema_crc32"

#: the file-metadata key of the row counts of a Parquet file's row groups (JSON), added when
#: the file is finished: a flipped row count in the footer would silently drop rows.
ROW_GROUPS_KEY = b"fsstgpu.row_groups"

# Struct children of an fsst column's storage: seen without the extension type (and without
# SCHEMA_CRC_KEY), they mean a footer whose metadata was lost, not a user's struct.
_FSST_STORAGE_NAMES = ["codes", "lengths", "cuts"]

#: Parquet codecs a column may be written with (``"none"``: uncompressed pages).
PARQUET_CODECS = ("none", "snappy", "gzip", "brotli", "lz4", "zstd")

#: progress(units_done=, units_total=, rows=, nbytes=): called after every row group / batch;
#: ``units_total`` is None for an IPC stream, ``nbytes`` counts the input's Arrow bytes so far.
ProgressCallback = Callable[..., None]


def open_file(path, mode: str = "rb") -> pa.NativeFile:
    """Open ``path`` as a pyarrow file, whatever bytes its name holds (see the module docstring).

    Examples
    --------
    >>> import os, tempfile
    >>> from fsstgpu.formats.rowgroups import open_file
    >>> path = os.path.join(tempfile.mkdtemp(), "caf\\udce9.bin")  # the bytes b"caf\\xe9.bin"
    >>> with open_file(path, "wb") as f:
    ...     _ = f.write(b"ok")
    >>> open_file(path).read()
    b'ok'
    """
    if isinstance(path, Url) or is_url(path):
        if mode != "rb":
            raise ValueError(f"{path}: outputs are local paths (a URL can be an input)")
        return Url(path).open()
    return pa.OSFile(os.fsencode(path), mode)


def check_input(src) -> Path | Url:
    """``src`` as a Path; FileNotFoundError / IsADirectoryError naming it unless it is a file.

    Examples
    --------
    >>> from fsstgpu.formats.rowgroups import check_input
    >>> check_input("no/such.parquet")
    Traceback (most recent call last):
    ...
    FileNotFoundError: no/such.parquet: no such file
    """
    src = local_or_url(src)
    if isinstance(src, Url):
        if not src.is_file():
            if src.is_dir():
                raise IsADirectoryError(f"{src}: is a directory, not a file")
            raise FileNotFoundError(f"{src}: no such file")
        return src
    if not src.exists():
        raise FileNotFoundError(f"{src}: no such file")
    if src.is_dir():
        raise IsADirectoryError(f"{src}: is a directory, not a file")
    return src


# zstd level of the fsst columns' pages. Measured on a 1M-row table of this machine's text
# (formats/files.md): level 3 makes the codes' pages 13% smaller than level 1 (pyarrow's default),
# enough for the file to undercut pyarrow's zstd Parquet of the strings; higher levels gain 1-2%
# more at several times the write time.
FSST_ZSTD_LEVEL = 3

_CODEC_ALIASES = {"uncompressed": "none", "lz4_raw": "lz4"}  # as file metadata names them


def parquet_codec_name(name: str) -> str:
    """A Parquet codec name as pyarrow's writer takes it; ValueError listing the codecs.

    Examples
    --------
    >>> from fsstgpu.formats.rowgroups import parquet_codec_name
    >>> parquet_codec_name("ZSTD"), parquet_codec_name("uncompressed")
    ('zstd', 'none')
    """
    name = _CODEC_ALIASES.get(name.lower(), name.lower())
    if name not in PARQUET_CODECS:
        raise ValueError(f"unknown Parquet codec {name!r}; choose from "
                         f"{', '.join(PARQUET_CODECS)}")
    return name


def _input_codec(name: str) -> str:
    """The codec to keep for a column an input had in codec ``name`` (Snappy for one pyarrow
    cannot write, such as LZO)."""
    name = _CODEC_ALIASES.get(name.lower(), name.lower())
    return name if name in PARQUET_CODECS else "snappy"


def holds_extension_type(type_: pa.DataType) -> bool:
    """Tell whether ``type_`` is, or nests, an Arrow extension type.

    Examples
    --------
    >>> import pyarrow as pa, fsstgpu
    >>> from fsstgpu.formats.arrow_storage import to_extension_array
    >>> from fsstgpu.formats.rowgroups import holds_extension_type
    >>> fsst = to_extension_array(fsstgpu.compress(pa.array(["a"]))).type
    >>> holds_extension_type(pa.list_(fsst)), holds_extension_type(pa.list_(pa.string()))
    (True, False)
    """
    if isinstance(type_, pa.BaseExtensionType):
        return True
    if pa.types.is_dictionary(type_):
        return holds_extension_type(type_.value_type)
    return any(holds_extension_type(type_.field(i).type) for i in range(type_.num_fields))


@contextlib.contextmanager
def reading(path, what: str = ""):
    """Turn pyarrow's and fsstgpu's complaints about an input into one CorruptDataError.

    The message is ``"<path>: <what><problem>"``; file-system errors pass through unchanged.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.rowgroups import reading
    >>> with reading("x.parquet", "row group 3: "):
    ...     raise pa.ArrowInvalid("bad page")
    Traceback (most recent call last):
    ...
    fsstgpu.errors.CorruptDataError: x.parquet: row group 3: unreadable (ArrowInvalid: bad page)
    """
    try:
        yield
    except (FileNotFoundError, PermissionError, IsADirectoryError):
        raise
    except CorruptDataError as exc:
        raise CorruptDataError(f"{path}: {what}{exc}") from None
    except (pa.ArrowException, OSError, EOFError) as exc:
        raise CorruptDataError(f"{path}: {what}unreadable ({type(exc).__name__}: {exc})") from None


class Source:
    """An input file seen as a schema and a sequence of units (row groups or record batches).

    Files are read, not memory-mapped: a mapping would keep every page touched resident (and
    counted in the process's memory) until the end, while reads free each unit's buffers.
    Use as a context manager, or call :meth:`close`.

    Attributes
    ----------
    path : Path
    format : {"parquet", "arrow", "arrows"}
    file_bytes : int
    schema : pyarrow.Schema
    num_units : int or None
        None for an IPC stream (known only at its end).
    parquet_metadata : pyarrow.parquet.FileMetaData or None
    """

    def __init__(self, path):
        self.path = path if isinstance(path, Url) else Path(path)
        self.format = sniff_format(self.path)
        self.file_bytes = file_size(self.path)
        self.parquet_metadata = None
        self._files: list[pa.NativeFile] = []
        self._parquet = self._ipc_file = None
        try:
            with reading(self.path):
                if self.format == "parquet":
                    self._parquet = pq.ParquetFile(self._open(), memory_map=False,
                                                   page_checksum_verification=True)
                    self.schema = _checked_schema(self._parquet.schema_arrow)
                    _check_row_groups(self._parquet.metadata)
                    self.num_units = self._parquet.num_row_groups
                    self.parquet_metadata = self._parquet.metadata
                elif self.format == "arrow":
                    self._ipc_file = ipc.open_file(self._open())
                    self.schema = self._ipc_file.schema
                    self.num_units = self._ipc_file.num_record_batches
                else:
                    with open_file(self.path) as f:
                        self.schema = ipc.open_stream(f).schema
                    self.num_units = None
                # See the module docstring: no pool threads near a Python-defined type.
                self.use_threads = not any(holds_extension_type(f.type) for f in self.schema)
                if self.format == "arrow" and not self.use_threads:
                    self._ipc_file = ipc.open_file(self._open(), options=self._ipc_options())
        except BaseException:
            self.close()
            raise

    def _ipc_options(self) -> ipc.IpcReadOptions:
        return ipc.IpcReadOptions(use_threads=self.use_threads)

    def _open(self) -> pa.NativeFile:
        f = open_file(self.path)
        self._files.append(f)
        return f

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def close(self) -> None:
        """Close the open input files."""
        for f in self._files:
            f.close()
        self._files.clear()

    def unit(self, k: int) -> pa.Table:
        """Row group / batch ``k`` alone (an IPC stream is read up to it); IndexError when the
        file has fewer."""
        if self.format == "parquet":
            if not 0 <= k < self.num_units:
                raise IndexError(f"{self.path}: no row group {k} (it has {self.num_units})")
            with reading(self.path, f"row group {k}: "):
                return self._parquet.read_row_group(k, use_threads=self.use_threads)
        if self.format == "arrow":
            if not 0 <= k < self.num_units:
                raise IndexError(f"{self.path}: no record batch {k} (it has {self.num_units})")
            with reading(self.path, f"record batch {k}: "):
                batch = _checked(*self._ipc_file.get_batch_with_custom_metadata(k))
            return pa.Table.from_batches([batch])
        for i, unit in enumerate(self.units()):
            if i == k:
                return unit
        raise IndexError(f"{self.path}: no record batch {k}")

    def units(self, columns: list[str] | None = None) -> Iterator[pa.Table]:
        """Yield each row group / batch as a Table with this file's schema (or ``columns``)."""
        names = self.schema.names if columns is None else columns
        if self.format == "parquet":
            for i in range(self.num_units):
                with reading(self.path, f"row group {i}: "):
                    unit = self._parquet.read_row_group(i, columns=columns,
                                                        use_threads=self.use_threads)
                yield unit
            return
        if self.format == "arrow":
            for i in range(self.num_units):
                with reading(self.path, f"record batch {i}: "):
                    batch = _checked(*self._ipc_file.get_batch_with_custom_metadata(i))
                yield pa.Table.from_batches([batch]).select(names)
            return
        with reading(self.path):
            reader = ipc.open_stream(self._open(), options=self._ipc_options())
        for i in itertools.count():
            with reading(self.path, f"record batch {i}: "):
                try:
                    batch = _checked(*reader.read_next_batch_with_custom_metadata())
                except StopIteration:
                    return
            yield pa.Table.from_batches([batch]).select(names)

    def parquet_codecs(self) -> dict[str, str]:
        """Each top-level column's codec in the first row group (Parquet only)."""
        if self.parquet_metadata is None or self.num_units == 0:
            return {}
        rg = self.parquet_metadata.row_group(0)
        out = {}
        for j in range(rg.num_columns):
            col = rg.column(j)
            out.setdefault(col.path_in_schema.split(".")[0], col.compression.lower())
        return out


def _batch_crc(batch: pa.RecordBatch) -> int:
    """CRC32 of the batch's schema and data, serialised (so a renamed field counts too)."""
    return zlib.crc32(batch.serialize(), zlib.crc32(batch.schema.serialize()))


def _checked(batch: pa.RecordBatch, metadata) -> pa.RecordBatch:
    """``batch``, after comparing it with the CRC32 it was written with (when it has one)."""
    if metadata is not None and BATCH_CRC_KEY in metadata:
        try:
            expected = int(metadata[BATCH_CRC_KEY])
        except ValueError:
            raise CorruptDataError(f"unreadable {BATCH_CRC_KEY.decode()} metadata") from None
        if _batch_crc(batch) != expected:
            raise CorruptDataError("CRC32 mismatch: the record batch was altered")
    return batch


def _schema_crc(schema: pa.Schema) -> int:
    return zlib.crc32(schema.serialize())


def _without_keys(schema: pa.Schema, keys=(SCHEMA_CRC_KEY, ROW_GROUPS_KEY)) -> pa.Schema:
    metadata = {k: v for k, v in (schema.metadata or {}).items() if k not in keys}
    return schema.with_metadata(metadata) if metadata else schema.remove_metadata()


def _checked_schema(schema: pa.Schema) -> pa.Schema:
    """A Parquet file's Arrow ``schema`` without fsstgpu's footer keys, after comparing it with
    the CRC32 it was written with (when it has one)."""
    plain = _without_keys(schema)
    if SCHEMA_CRC_KEY not in (schema.metadata or {}):
        for f in schema:
            if pa.types.is_struct(f.type) and [c.name for c in f.type] == _FSST_STORAGE_NAMES:
                raise CorruptDataError(
                    f"column {f.name!r} is an fsstgpu.fsst column's storage without its type: "
                    "the file's footer metadata was lost or altered")
        return plain
    if schema.metadata[SCHEMA_CRC_KEY] != str(_schema_crc(plain)).encode():
        raise CorruptDataError("CRC32 mismatch: the file's schema (its footer) was altered")
    return plain


def _check_row_groups(metadata) -> None:
    """Compare a Parquet file's row-group row counts with :data:`ROW_GROUPS_KEY`, if recorded."""
    recorded = (metadata.metadata or {}).get(ROW_GROUPS_KEY)
    if recorded is None:
        return
    actual = [metadata.row_group(i).num_rows for i in range(metadata.num_row_groups)]
    if recorded != json.dumps(actual).encode():
        raise CorruptDataError(f"the footer's row counts {actual} differ from those written "
                               f"({recorded.decode(errors='replace')})")


def _fsst_leaves(field: pa.Field) -> list[tuple[str, str | None]]:
    """The Parquet column paths of an fsst column, each with the encoding it is written with."""
    storage = field.type.storage_type
    if not pa.types.is_struct(storage):  # version 1: the codes alone
        return [(field.name, "DELTA_LENGTH_BYTE_ARRAY")]
    how = {"codes": "DELTA_LENGTH_BYTE_ARRAY", "lengths": "DICTIONARY"}
    return [(f"{field.name}.{child.name}", how.get(child.name)) for child in storage]


class Sink:
    """Writes Tables as row groups (Parquet) or record batches (IPC), one per :meth:`write`.

    Parquet: the ``fsst_columns`` (their storage struct's leaves) are written without statistics
    (statistics of codes mean nothing) and with codec ``fsst_codec`` (zstd at level
    :data:`FSST_ZSTD_LEVEL`); the codes of the ``repeating`` ones with dictionary encoding (equal
    strings have equal codes), the others' with ``DELTA_LENGTH_BYTE_ARRAY`` (back to back in the
    page, not interleaved with 4-byte lengths as in PLAIN); the string lengths (few distinct
    values) with dictionary encoding, or plain for the ``repeating`` ones. Every other column
    gets its codec from ``codecs`` (Snappy when not named there). ``formats/files.md`` has the
    measurements behind these choices.
    """

    def __init__(self, path, fmt: str, schema: pa.Schema, *, fsst_columns=(), codecs=None,
                 fsst_codec: str = "zstd", repeating=()):
        self.format = fmt
        self.schema = schema
        self._rows: list[int] = []
        self._file = open_file(path, "wb")
        try:
            if fmt == "parquet":
                fsst = set(fsst_columns)
                if fsst:  # an fsstgpu file: its footer gets a checksum (see SCHEMA_CRC_KEY)
                    schema = self.schema = schema.with_metadata({
                        **(schema.metadata or {}),
                        SCHEMA_CRC_KEY: str(_schema_crc(_without_keys(schema))).encode()})
                others = [n for n in schema.names if n not in fsst]
                codecs = codecs or {}
                compression = {n: _input_codec(codecs.get(n, "snappy")) for n in others}
                levels, encoding, dictionary = {}, {}, list(others)
                for name in fsst:
                    for leaf, how in _fsst_leaves(schema.field(name)):
                        compression[leaf] = parquet_codec_name(fsst_codec)
                        if compression[leaf] == "zstd":
                            levels[leaf] = FSST_ZSTD_LEVEL
                        if name in repeating:  # codes: a dictionary; lengths: as they are
                            how = {"DELTA_LENGTH_BYTE_ARRAY": "DICTIONARY",
                                   "DICTIONARY": "PLAIN"}.get(how, how)
                        if how == "DICTIONARY":
                            dictionary.append(leaf)
                        elif how:
                            encoding[leaf] = how
                self._writer = pq.ParquetWriter(
                    self._file, schema, compression=compression,
                    compression_level=levels or None,
                    use_dictionary=dictionary if fsst else True,
                    write_statistics=others if fsst else True,
                    column_encoding=encoding or None,
                    store_schema=True,
                    write_page_checksum=True,
                )
            else:
                new = ipc.new_file if fmt == "arrow" else ipc.new_stream
                self._writer = new(self._file, schema,
                                   options=ipc.IpcWriteOptions(emit_dictionary_deltas=True))
        except BaseException:
            self._file.close()
            raise

    def write(self, columns: list) -> None:
        """Write one unit: one Array or ChunkedArray per field of the schema."""
        if self.format == "parquet":
            table = pa.Table.from_arrays(columns, schema=self.schema)
            # One call, one row group: the input's row-group boundaries survive.
            self._writer.write_table(table, row_group_size=max(1, table.num_rows))
            self._rows.append(table.num_rows)
            return
        try:
            arrays = [c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c
                      for c in columns]
            batches = [pa.RecordBatch.from_arrays(arrays, schema=self.schema)]
        except pa.ArrowInvalid:  # over 2 GiB in a 32-bit-offset column: one batch per chunk
            batches = pa.Table.from_arrays(columns, schema=self.schema).to_batches()
        for batch in batches:
            self._writer.write_batch(
                batch, custom_metadata={BATCH_CRC_KEY: str(_batch_crc(batch)).encode()})

    def close(self) -> None:
        """Finish the file (footer) and close it."""
        try:
            if (self.format == "parquet" and SCHEMA_CRC_KEY in (self.schema.metadata or {})
                    and hasattr(self._writer, "add_key_value_metadata")):  # pyarrow >= 16
                self._writer.add_key_value_metadata(
                    {ROW_GROUPS_KEY: json.dumps(self._rows)})
            self._writer.close()
        finally:
            self._file.close()


def rewrite(source: Source, sink: Sink, convert, progress=None) -> tuple[int, int]:
    """Write every unit of ``source`` to ``sink``, each column through ``convert``; close ``sink``.

    ``convert(field, column, unit_index)`` returns the column to write (on the calling thread,
    in order); each unit is written while the next one is converted. Returns ``(rows,
    units)``; ``progress`` (a :data:`ProgressCallback`) is called after each unit is written.

    Examples
    --------
    >>> import os, tempfile, pyarrow as pa, pyarrow.compute as pc
    >>> from fsstgpu.formats.rowgroups import Sink, Source, rewrite, write_table
    >>> d = tempfile.mkdtemp()
    >>> write_table(pa.table({"s": ["a", "b", "c"]}), os.path.join(d, "in.arrows"), "arrows",
    ...             rows_per_unit=2)
    >>> with Source(os.path.join(d, "in.arrows")) as source:
    ...     sink = Sink(os.path.join(d, "out.parquet"), "parquet", source.schema)
    ...     rewrite(source, sink, lambda field, col, k: pc.utf8_upper(col))
    (3, 2)
    """
    rows = units = nbytes = 0
    # Unit k is written (pyarrow's encoding and page compression, the GIL released) on a
    # thread of its own while unit k + 1 is read and converted here: one unit in flight.
    writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fsstgpu-write")
    pending = None

    def written(job) -> None:
        nonlocal rows, units, nbytes
        job.result()
        unit = job.unit
        rows, units, nbytes = rows + unit.num_rows, units + 1, nbytes + unit.nbytes
        if progress is not None:
            progress(units_done=units, units_total=source.num_units, rows=rows, nbytes=nbytes)

    try:
        for k, unit in enumerate(source.units()):
            columns = [convert(field, unit.column(field.name), k) for field in source.schema]
            if pending is not None:
                written(pending)
                pending = None
            pending = writer.submit(sink.write, columns)
            pending.unit = unit
        if pending is not None:
            written(pending)
            pending = None
    finally:
        if pending is not None:  # stopped meanwhile: let the write finish before closing
            with contextlib.suppress(BaseException):
                pending.result()
        writer.shutdown(wait=True)
        sink.close()
    return rows, units


def write_table(table: pa.Table, path, format: str, *, rows_per_unit: int | None = None) -> None:
    """Write ``table`` to ``path`` as a plain Parquet or Arrow IPC file, with pyarrow only.

    Parameters
    ----------
    table : pyarrow.Table
    path : str or os.PathLike
    format : {"parquet", "arrow", "arrows"}
        Parquet, an Arrow IPC file or an Arrow IPC stream.
    rows_per_unit : int, optional
        Rows per Parquet row group / IPC record batch (default: pyarrow's).

    Examples
    --------
    >>> import os, tempfile, pyarrow as pa, pyarrow.ipc as ipc
    >>> from fsstgpu.formats.rowgroups import write_table
    >>> path = os.path.join(tempfile.mkdtemp(), "t.arrows")
    >>> write_table(pa.table({"s": ["a", "b", "c"]}), path, "arrows", rows_per_unit=2)
    >>> [b.num_rows for b in ipc.open_stream(path)]
    [2, 1]
    """
    with open_file(path, "wb") as f:
        if format == "parquet":
            pq.write_table(table, f, row_group_size=rows_per_unit)
        else:
            new = ipc.new_file if format == "arrow" else ipc.new_stream
            with new(f, table.schema) as writer:
                writer.write_table(table, max_chunksize=rows_per_unit)
