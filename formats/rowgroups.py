"""Parquet and Arrow IPC files as a sequence of units (row groups or record batches).

:class:`Source` reads an input one unit at a time and :mod:`fsstgpu.formats.sinks`' ``Sink``
writes one unit per call, so a rewrite (:func:`fsstgpu.formats.pipeline.rewrite`) holds a few
units in memory whatever the file size, and the input's unit boundaries survive.

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
every record batch read is validated in full, and every one fsstgpu writes
(:mod:`fsstgpu.formats.sinks`) carries a CRC32 of its serialised schema, data and dictionaries
and its position, and the output ends with a batch counting them
(:mod:`fsstgpu.formats.ipc_integrity`). IPC outputs keep the input's IPC compression
(:mod:`fsstgpu.formats.ipc_compression`), zstd for an input without one (Parquet).

>>> import os, tempfile, pyarrow as pa
>>> from fsstgpu.formats.rowgroups import Source
>>> from fsstgpu.formats.sinks import write_table
>>> path = os.path.join(tempfile.mkdtemp(), "t.parquet")
>>> write_table(pa.table({"s": ["a", "b", "c"]}), path, "parquet", rows_per_unit=2)
>>> with Source(path) as source:
...     [unit.num_rows for unit in source.units()]
[2, 1]
"""

from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from fsstgpu.errors import CorruptDataError, FsstGpuError
from fsstgpu.formats.chunk_record import ChunkRecord, footer_bytes
from fsstgpu.formats.file_identity import FileIdentity, descriptor
from fsstgpu.formats.ipc_compression import ipc_compression
from fsstgpu.formats.ipc_integrity import CRC_KEY, IpcChecks, data_batches
from fsstgpu.formats.locations import Url, file_size, is_url, local_or_url
from fsstgpu.formats.parquet_compat import hint
from fsstgpu.formats.parquet_options import (  # Parquet's options and footer checks
    PARQUET_CODECS,
    check_column_metadata,
    check_row_groups,
    checked_schema,
    input_codecs,
    leaf_columns,
    leaf_indices,
    open_parquet,
    parquet_codec_name,
    read_row_group,
)
from fsstgpu.formats.parquet_restore import restore
from fsstgpu.formats.sniff import sniff_format
from fsstgpu.parallel import refuse_forked

__all__ = [
    "BATCH_CRC_KEY",
    "MissingInputError",
    "PARQUET_CODECS",
    "ProgressCallback",
    "Source",
    "check_input",
    "check_progress",
    "holds_extension_type",
    "open_file",
    "parquet_codec_name",
    "reading",
    "rows_only",
]

#: the custom-metadata key of a record batch's CRC32 as written now (version 3: schema, data,
#: the dictionary prefixes it was written with and position; versions 2 and 1 are still checked)
BATCH_CRC_KEY = CRC_KEY

#: progress(units_done=, units_total=, rows=, nbytes=): called after every row group / batch;
#: ``units_total`` is None when not known ahead: an IPC stream, or an IPC file regrouped by
#: ``rows_per_unit`` (its batches' rows are not read ahead); ``nbytes`` counts the input's
#: Arrow bytes so far.
ProgressCallback = Callable[..., None]


def check_progress(progress) -> None:
    """TypeError unless ``progress`` is None or a callable: it is first called after a unit (a
    dataset's file) is written, so a wrong one failed only then, a dataset's first file left
    written."""
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be a callable or None, not {type(progress).__name__}")


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


class MissingInputError(FsstGpuError, FileNotFoundError):
    """An input file (a local path or a URL's object) that is not there: a usage error on the
    command line (exit 2), a FileNotFoundError to Python callers."""


def check_input(src) -> Path | Url:
    """``src`` as a Path; FileNotFoundError / IsADirectoryError naming it unless it is a file,
    ValueError when it is a pipe, device or socket (read by position, it could hang).

    Examples
    --------
    >>> from fsstgpu.formats.rowgroups import check_input
    >>> check_input("no/such.parquet")
    Traceback (most recent call last):
    ...
    fsstgpu.formats.rowgroups.MissingInputError: no/such.parquet: no such file
    """
    src = local_or_url(src)
    if isinstance(src, Url):
        if not src.is_file():
            if src.is_dir():
                raise IsADirectoryError(f"{src}: is a directory, not a file")
            raise MissingInputError(f"{src}: no such file")
        return src
    if not src.exists():
        raise MissingInputError(f"{src}: no such file")
    if src.is_dir():
        raise IsADirectoryError(f"{src}: is a directory, not a file")
    if not src.is_file():  # a pipe's second opening waited forever for a writer
        raise ValueError(f"{src}: is not a regular file (a pipe, device or socket): Parquet "
                         "and Arrow IPC files are read by position; copy it to a file first")
    return src


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


def rows_only(rows: int, metadata=None) -> pa.Table:
    """A table of ``rows`` rows and no column (with the schema's ``metadata``), as pyarrow's
    ``read_table(columns=[])`` gives (the idiom that counts a file's rows; pyarrow's
    concat_tables and replace_schema_metadata of such tables drop their rows).

    Examples
    --------
    >>> from fsstgpu.formats.rowgroups import rows_only
    >>> t = rows_only(3, {b"k": b"v"})
    >>> t.num_rows, t.num_columns, t.schema.metadata
    (3, 0, {b'k': b'v'})
    """
    return pa.table({"rows": pa.nulls(rows)}, metadata=metadata).select([])


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
    except UnicodeDecodeError as exc:  # a column name pyarrow hands on as it found it
        raise CorruptDataError(f"{path}: {what}a name in the file is not UTF-8 ({exc})") from None
    except (pa.ArrowException, OSError, EOFError) as exc:
        raise CorruptDataError(
            f"{path}: {what}unreadable ({type(exc).__name__}: {hint(str(exc))})") from None


def _refuse_repeated_names(path, schema: pa.Schema) -> None:
    """ValueError when two columns share a name (Arrow and Parquet allow it): fsstgpu selects,
    converts and restores columns by name, and would mix them up."""
    seen: set[str] = set()
    repeated = [n for n in schema.names if n in seen or seen.add(n)]
    if repeated:
        raise ValueError(f"{path}: column name {repeated[0]!r} is used by more than one "
                         "column: fsstgpu reads columns by name; rename them first")


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
        None for an IPC stream (known only at its end); fsstgpu's end batch is not counted.
    ipc_compression : {"lz4", "zstd", "uncompressed"} or None
        An IPC input's body codec (None for Parquet), which IPC outputs keep.
    parquet_metadata : pyarrow.parquet.FileMetaData or None
    """

    def __init__(self, path):
        self.path = path if isinstance(path, Url) else Path(path)
        self.format = sniff_format(self.path)
        self.file_bytes = file_size(self.path)
        self.parquet_metadata = None
        #: Parquet: each top-level column's leaf column indices (parquet_options.leaf_columns)
        self.leaf_columns: dict[str, list[int]] | None = None
        self._restore: dict[str, pa.DataType] = {}  # Parquet: types to cast columns back to
        self.ipc_compression = None  # an IPC input's body codec ("lz4", "zstd"), if any
        self._files: list[pa.NativeFile] = []
        self._identity: FileIdentity | None = None  # the first handle's file (file_identity)
        self._first: pa.Table | None = None  # row group 0, kept by first_unit() for units()
        self._parquet = self._ipc_file = None
        self._ipc_ours = False  # an IPC file ending with fsstgpu's end batch
        self._chunk_record: ChunkRecord | None = None  # Parquet: where fsstgpu wrote its chunks
        try:
            with reading(self.path):
                if self.format == "parquet":
                    self._parquet = open_parquet(self._open())
                    # the schema as written (Parquet changes some types: cast back per unit)
                    self.schema, self._restore = checked_schema(self._parquet)
                    check_row_groups(self._parquet.metadata)
                    self._chunk_record = ChunkRecord.of(self._parquet.metadata,
                                                        footer=self._footer_bytes)
                    self.num_units = self._parquet.num_row_groups
                    self.parquet_metadata = self._parquet.metadata
                    self.leaf_columns = leaf_columns(self.schema,
                                                     self.parquet_metadata.num_columns)
                elif self.format == "arrow":
                    self._ipc_file = ipc.open_file(self._open())
                    self._ipc_schema = self._ipc_file.schema
                    # fsstgpu's end batch left out (found from the footer: a second handle)
                    self.num_units = data_batches(self._ipc_file, self._open())
                    # fsstgpu's (its end batch left out), whatever its schema says: a batch
                    # read alone must then carry its checksum
                    self._ipc_ours = self.num_units < self._ipc_file.num_record_batches
                else:
                    self._ipc_schema = IpcChecks.stream_schema(self._open())
                    self.num_units = None
                if self.format != "parquet":
                    self.schema = IpcChecks(self._ipc_schema).schema
                    with self.reopen() as f:
                        self.ipc_compression = ipc_compression(f, self.format)
                _refuse_repeated_names(self.path, self.schema)
                # See the module docstring: no pool threads near a Python-defined type.
                self.use_threads = not any(holds_extension_type(f.type) for f in self.schema)
                if self.format == "arrow" and not self.use_threads:
                    self._ipc_file = ipc.open_file(self._open(), options=self._ipc_options())
        except BaseException:
            self.close()
            raise

    def _footer_bytes(self) -> bytes:
        with self.reopen() as f:
            return footer_bytes(f)

    def _ipc_options(self) -> ipc.IpcReadOptions:
        return ipc.IpcReadOptions(use_threads=self.use_threads)

    def _open(self) -> pa.NativeFile:
        """A handle kept until :meth:`close`: the first one is the file the read holds to."""
        f = self.reopen()
        self._files.append(f)
        if self._identity is None and len(self._files) == 1:
            self._identity = FileIdentity.of(descriptor(f))
        return f

    def reopen(self) -> pa.NativeFile:
        """Open the input again (the caller closes it): CorruptDataError if the path now
        names another file, or this one changed (:mod:`~fsstgpu.formats.file_identity`)."""
        f = open_file(self.path)
        if self._identity is not None:
            try:
                self._identity.check(descriptor(f), self.path)
            except BaseException:
                f.close()
                raise
        return f

    def check_unchanged(self) -> None:
        """CorruptDataError if the input changed since it was opened (called when a read
        ends: a rewrite in place changes the bytes under the read)."""
        if self._identity is not None:
            self._identity.check_unchanged(self.path)

    def __enter__(self):
        return self

    def __exit__(self, exc_type, *exc):
        try:
            if exc_type is None:
                self.check_unchanged()
        finally:
            self.close()
        return False

    def close(self) -> None:
        """Close the open input files."""
        for f in self._files:
            f.close()
        self._files.clear()
        self._identity = None  # its descriptor is closed (and may be reused)

    def unit(self, k: int, columns: list[str] | None = None) -> pa.Table:
        """Row group / batch ``k`` alone (an IPC stream is read up to it), with every column
        or (Parquet) only ``columns``; IndexError when the file has fewer."""
        if self.format == "parquet":
            if not 0 <= k < self.num_units:
                raise IndexError(f"{self.path}: no row group {k} (it has {self.num_units})")
            with reading(self.path, f"row group {k}: "):
                unit = self._restored(self.rows_checked(k, self.read_row_group(
                    self._parquet, k, columns)))
            self.check_unchanged()
            return unit
        if self.format == "arrow":
            if not 0 <= k < self.num_units:
                raise IndexError(f"{self.path}: no record batch {k} (it has {self.num_units})")
            with reading(self.path, f"record batch {k}: "):
                batch = IpcChecks(self._ipc_schema, self._ipc_ours).check(
                    *self._ipc_file.get_batch_with_custom_metadata(k), index=k)
                if batch is None:
                    raise CorruptDataError("it is the end batch, amid the data")
            self.check_unchanged()
            return pa.Table.from_batches([batch])
        for i, unit in enumerate(self.units()):
            if i == k:
                return unit
        raise IndexError(f"{self.path}: no record batch {k}")

    def first_unit(self) -> pa.Table | None:
        """Row group 0 with every column (None for a file without row groups), kept for the
        next :meth:`units` (Parquet), which yields it rather than reading it again: a caller
        that looks at the first unit before a rewrite (``compress_file``) reads it once."""
        if self.format != "parquet" or not self.num_units:
            return None
        if self._first is None:
            self._first = self.unit(0)
        return self._first

    def check_chunk_metadata(self, k: int, columns) -> None:
        """:func:`~fsstgpu.formats.parquet_options.check_column_metadata` of row group ``k``'s
        ``columns`` (every column where a name has a dot: pyarrow takes it for a path)."""
        names = list(columns)
        with reading(self.path, f"row group {k}: "):
            check_column_metadata(self._parquet, k, use_threads=self.use_threads,
                                  columns=None if any("." in n for n in names) else names)

    def read_row_group(self, parquet: pq.ParquetFile, k: int, columns) -> pa.Table:
        """Row group ``k`` as ``parquet`` (this file, opened by the caller) reads it, with the
        top-level ``columns`` named (all when None): a name is never taken for a dotted path
        into a struct (:func:`~fsstgpu.formats.parquet_options.read_row_group`). The chunks
        read are checked against the footer's record of them where fsstgpu wrote the file
        (:mod:`~fsstgpu.formats.chunk_record`: after pyarrow's read, which validates what the
        metadata accessors do not)."""
        table = read_row_group(parquet, k, columns, self.leaf_columns,
                               use_threads=self.use_threads)
        self.check_chunks(k, columns)
        return table

    def check_chunks(self, k: int, columns) -> None:
        """Row group ``k``'s chunks of the top-level ``columns`` against the footer's record of
        them where fsstgpu wrote the file (what :meth:`read_row_group` checks after pyarrow's
        read), for a reader that reads them itself (issue #24 item 2's raw page reader)."""
        if self._chunk_record is not None:
            self._chunk_record.check(k, leaf_indices(columns, self.leaf_columns))

    def rows_checked(self, k: int, table: pa.Table) -> pa.Table:
        """``table``, read from row group ``k``, if it has the footer's rows: a damaged column
        chunk entry can make pyarrow 25 read a column alone as empty, where the footer's
        counts (checked against the written ones in fsstgpu's files) still say how many."""
        expected = self.parquet_metadata.row_group(k).num_rows
        if table.num_rows != expected:
            raise CorruptDataError(f"{table.num_rows} rows read, where the footer has "
                                   f"{expected}: the footer or its column chunks are damaged")
        return table

    def units(self, columns: list[str] | None = None) -> Iterator[pa.Table]:
        """Yield each row group / batch as a Table with this file's schema (or ``columns``)."""
        names = self.schema.names if columns is None else columns
        if self.format == "parquet":
            for i in range(self.num_units):
                if i == 0 and self._first is not None:  # (first_unit)
                    kept, self._first = self._first, None
                    self.check_unchanged()  # (each unit before it is yielded: units())
                    yield kept if columns is None else kept.select(columns)
                    continue
                with reading(self.path, f"row group {i}: "):
                    unit = self._restored(self.rows_checked(i, self.read_row_group(
                        self._parquet, i, columns)))
                # a rewrite in place changes the bytes under the next reads: none of their
                # rows may reach a caller (who has used them when the read ends)
                self.check_unchanged()
                yield unit
            self.check_unchanged()
            return
        checks = IpcChecks(self._ipc_schema, self._ipc_ours)
        if self.format == "arrow":
            # an fsstgpu file's end batch is read too (not yielded): it counts the batches
            for i in range(self._ipc_file.num_record_batches):
                with reading(self.path, f"record batch {i}: "):
                    batch = checks.check(*self._ipc_file.get_batch_with_custom_metadata(i))
                if batch is not None:
                    self.check_unchanged()
                    yield pa.Table.from_batches([batch]).select(names)
            with reading(self.path):
                checks.finish()
            self.check_unchanged()
            return
        with reading(self.path):
            stream = self._open()
            reader = ipc.open_stream(stream, options=self._ipc_options())
        owner = os.getpid()  # a forked child's reads would move the parent's file position
        for i in itertools.count():
            refuse_forked(owner, f"{self.path}: this stream", "it shares the parent's file")
            with reading(self.path, f"record batch {i}: "):
                try:
                    batch = checks.check(*reader.read_next_batch_with_custom_metadata())
                except StopIteration:
                    break
                except pa.ArrowInvalid as exc:
                    if "ended without reading the expected number" not in str(exc):
                        raise
                    # cut between a batch's dictionary messages: a cut stream, not other damage
                    raise CorruptDataError("truncated: it ends before the dictionaries of "
                                           "this record batch were all read") from None
            if batch is not None:  # None: the end batch, which must be the last
                self.check_unchanged()
                yield pa.Table.from_batches([batch]).select(names)
        with reading(self.path):
            checks.finish(reader.stats)
        self.check_unchanged()
        if self._identity is not None and stream.tell() < self._identity.size:
            # another stream after this one's end (two files joined), or damage pyarrow
            # took for the end: either way not this stream's rows alone
            raise CorruptDataError(f"{self.path}: {self._identity.size - stream.tell()} bytes "
                                   "after the end of the stream")

    def restored(self, name: str, column):
        """Column ``name`` of a Parquet row group cast back to the type it was written with
        (Parquet reads ``date64`` as ``date32``, ...: ``formats/parquet_options.py``)."""
        if self.format != "parquet" or name not in self._restore:
            return column
        with reading(self.path, f"column {name!r}: "):
            return restore(column, self._restore[name])

    def _restored(self, unit: pa.Table) -> pa.Table:
        if not self._restore:
            return unit
        return pa.Table.from_arrays([restore(unit.column(n), self._restore[n])
                                     if n in self._restore else unit.column(n)
                                     for n in unit.column_names],
                                    schema=pa.schema([self.schema.field(n)
                                                      for n in unit.column_names],
                                                     metadata=self.schema.metadata))

    def parquet_codecs(self) -> dict[str, str]:
        """Each leaf column's codec in the first row group, by its path (``l.list.element``),
        and each top-level column's (its first leaf's) by its name (Parquet only)."""
        if self.parquet_metadata is None or self.num_units == 0:
            return {}
        with reading(self.path, "row group 0: "):
            check_column_metadata(self._parquet, use_threads=self.use_threads)
            return input_codecs(self.parquet_metadata)
