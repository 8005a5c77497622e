"""Writing Parquet and Arrow IPC files one unit (row group or record batch) per call.

:class:`Sink` is what a rewrite (:func:`fsstgpu.formats.pipeline.rewrite`) writes through,
:mod:`fsstgpu.formats.rowgroups`' :class:`~fsstgpu.formats.rowgroups.Source` what it reads:
a few units in memory whatever the file size, the input's unit boundaries kept. Parquet row
groups are written several at once (:mod:`fsstgpu.formats.parquet_parts`), with page
checksums; Arrow IPC batches each carry a CRC32 (:mod:`fsstgpu.formats.ipc_integrity`).
:func:`write_table` writes a plain file with pyarrow only.

>>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
>>> from fsstgpu.formats.sinks import Sink
>>> path = os.path.join(tempfile.mkdtemp(), "t.parquet")
>>> table = pa.table({"s": ["a", "b", "c"]})
>>> sink = Sink(path, "parquet", table.schema)
>>> for rows in (table.slice(0, 2), table.slice(2)):  # a row group a call
...     sink.write(rows.columns)
>>> sink.close()
>>> pq.ParquetFile(path).metadata.num_row_groups, pq.read_table(path).column("s").to_pylist()
(2, ['a', 'b', 'c'])
"""

from __future__ import annotations

import contextlib
import json

import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from fsstgpu.formats.arrow import is_fsst_type
from fsstgpu.formats.encoding_trials import tried_encodings
from fsstgpu.formats.ipc_integrity import IpcWriter
from fsstgpu.formats.parquet_compat import check_readable_back, value_checked
from fsstgpu.formats.parquet_options import (  # Parquet's options and footer checks
    FSST_ZSTD_LEVEL,
    ROW_GROUPS_KEY,
    SCHEMA_CRC_KEY,
    parquet_codec_name,
    with_schema_crc,
    writer_options,
)
from fsstgpu.formats.parquet_parts import PartWriter, part_threads
from fsstgpu.formats.parquet_serial import SerialParquetWriter, serial_suits
from fsstgpu.formats.rowgroups import open_file

__all__ = ["Sink", "write_table"]


class Sink:
    """Writes Tables as row groups (Parquet) or record batches (IPC), one per :meth:`write`
    (:meth:`write_many`: several consecutive ones a call).

    Parquet: the ``fsst_columns`` (their storage struct's leaves), and every column of an fsst
    type, are written without statistics (statistics of codes mean nothing) and with codec
    ``fsst_codec`` (zstd at level 3); the codes of the ``repeating`` ones with dictionary
    encoding (equal strings have equal codes), the others' with ``DELTA_LENGTH_BYTE_ARRAY``
    (back to back in the page, not interleaved with 4-byte lengths as in PLAIN), or
    ``DELTA_BYTE_ARRAY`` where a trial on the first unit with rows finds that much smaller;
    the string lengths (few distinct values) with dictionary encoding, or plain for the
    ``repeating`` ones where their trial finds that smaller
    (:mod:`~fsstgpu.formats.encoding_trials`; row groups written before the trial get the
    defaults). Every other leaf gets its codec from ``codecs``, by leaf path or by
    its column's name (Snappy when named in neither), with dictionary encoding and statistics
    (:func:`~fsstgpu.formats.parquet_options.writer_options`). ``formats/files.md`` has the
    measurements behind these choices.

    IPC: an :class:`~fsstgpu.formats.ipc_integrity.IpcWriter` (checksums, positions, an end
    batch, the schema marked: fsstgpu's readers remove the mark), its bodies compressed with
    ``ipc_compression`` (``"lz4"``, ``"zstd"``, ``"uncompressed"``; default zstd).

    ``footer``: a callable giving more key-values for a Parquet footer, called at close (the
    string bounds of :mod:`fsstgpu.formats.pruning`). ``restorable``: a Parquet output gets
    its schema's CRC (and so its types restored by fsstgpu's readers) even without an fsst
    column.

    Parquet row groups are encoded ``parallel`` at once (default
    :func:`~fsstgpu.formats.parquet_parts.part_threads`), each into a file of its own in memory
    (small consecutive ones given to one :meth:`write_many` share one) on a thread of its own,
    then joined into the output in order
    (:mod:`fsstgpu.formats.parquet_parts`: the same bytes as one pyarrow writer's). A unit's
    error (a type Parquet cannot hold) may then surface at a later :meth:`write` or at
    :meth:`close`. A file whose first :meth:`write_many` brings several small row groups
    (:func:`~fsstgpu.formats.parquet_serial.serial_suits`) is written by one writer instead,
    on the calling thread (:mod:`fsstgpu.formats.parquet_serial`: the same bytes again);
    ``serial`` False never does, True whenever it can (the encodings' trial taken).
    """

    def __init__(self, path, fmt: str, schema: pa.Schema, *, fsst_columns=(), codecs=None,
                 fsst_codec: str = "zstd", repeating=(), ipc_compression: str | None = None,
                 footer=None, zstd_level: int | None = None, parallel: int | None = None,
                 restorable: bool = False, serial: bool | None = None):
        self.format = fmt
        self.schema = schema
        self._footer = footer  # Parquet: footer key-values, asked for at close
        self._rows: list[int] = []
        self._parts = None  # Parquet: the row groups' writer, made at the first row groups
        self._trial: list[str] = []  # Parquet: fsst columns whose codes' encoding is untried
        self._fsst_codec = parquet_codec_name(fsst_codec)
        self._zstd_level = FSST_ZSTD_LEVEL if zstd_level is None else zstd_level
        self._file = open_file(path, "wb")
        try:
            if fmt == "parquet":
                # an fsstgpu file's footer gets a checksum (see SCHEMA_CRC_KEY); every option
                # is keyed by leaf path, so that nested columns get theirs too
                schema = self.schema = with_schema_crc(schema, always=restorable)

                def options(prefixed=(), plain_lengths=None):
                    return dict(store_schema=True, write_page_checksum=True,
                                **writer_options(schema, fsst_columns=fsst_columns,
                                                 codecs=codecs, fsst_codec=fsst_codec,
                                                 repeating=repeating, prefixed=prefixed,
                                                 plain_lengths=plain_lengths,
                                                 zstd_level=zstd_level))

                self._options, self._repeating = options, list(repeating)
                self._value_checked = value_checked(schema)  # (a walk of the types: once)
                self._trial = [f.name for f in schema
                               if f.name in fsst_columns or is_fsst_type(f.type)]
                self._part_options = options()  # (the trial's, once taken)
                self._parallel = part_threads() if parallel is None else parallel
                self._serial = serial
            else:
                # checksums, positions and an end batch; the input's codec, else zstd
                self._writer = IpcWriter(self._file, fmt, schema, compression=ipc_compression)
                self.schema = self._writer.schema
        except BaseException:
            self._file.close()
            raise

    def write(self, columns: list, num_rows: int | None = None) -> None:
        """Write one unit: one Array or ChunkedArray per field of the schema (``num_rows``:
        its rows, which a unit without columns has too: an IPC batch keeps them)."""
        self.write_many([(columns, num_rows)])

    def write_many(self, units: list) -> None:
        """Write consecutive units, each ``(columns, num_rows)`` as :meth:`write` takes them
        (Parquet: several row groups a part, :meth:`~fsstgpu.formats.parquet_parts.PartWriter.
        write_many`)."""
        if self.format != "parquet":
            for columns, num_rows in units:
                self._write_ipc(columns, num_rows)
            return
        tables = []
        for columns, num_rows in units:
            table = pa.Table.from_arrays(columns, schema=self.schema)
            # (also rows without columns: none kept)
            check_readable_back(table, num_rows, self._value_checked)
            if self._trial and table.num_rows:  # encodings tried once, on the first rows
                self._flush(tables)  # (those before it: the default encodings)
                tables = []
                self._part_options = self._options(*tried_encodings(
                    table, self._trial, repeating=self._repeating, codec=self._fsst_codec,
                    level=self._zstd_level))
                self._trial = []
            tables.append(table)
        self._flush(tables)

    def _flush(self, tables: list) -> None:
        """Parquet: ``tables`` written, a row group each (the input's boundaries survive)."""
        if tables:
            if self._parts is None:
                self._parts = self._row_group_writer(tables)
            self._parts.options = self._part_options
            self._parts.write_many(tables)
            self._rows += [t.num_rows for t in tables]

    def _row_group_writer(self, tables: list):
        """Parquet: the writer of the file's row groups, ``tables`` its first: one writer
        where they are several small ones (and the options are the trial's, which then never
        change), else parts written in parallel. Every Parquet output, a decompressed one too,
        records its statistics' CRCs: a filtered read of it trusts them rather than reading
        the values of each row group they skip (files.md)."""
        if tables and self._serial is not False and not self._trial and (
                self._serial or serial_suits(tables, self.schema, self._parallel)):
            return SerialParquetWriter(self._file, self.schema, self._part_options,
                                       stats_crc=True, chunks=True)
        return PartWriter(self._file, self.schema, self._part_options, self._parallel,
                          stats_crc=True, chunks=True)

    def _write_ipc(self, columns: list, num_rows: int | None) -> None:
        if not columns and num_rows:
            # (the writer puts it on its schema, keeping the rows)
            self._writer.write(pa.record_batch({"rows": pa.nulls(num_rows)}).select([]))
            return
        try:
            # (a column of no chunks, empty: combine_chunks builds no dictionary of views)
            arrays = [c if not isinstance(c, pa.ChunkedArray) else c.combine_chunks()
                      if c.num_chunks else pa.nulls(0, c.type) for c in columns]
            batches = [pa.RecordBatch.from_arrays(arrays, schema=self.schema)]
        except pa.ArrowInvalid:  # over 2 GiB in a 32-bit-offset column: one batch per chunk
            batches = pa.Table.from_arrays(columns, schema=self.schema).to_batches()
        for batch in batches:
            self._writer.write(batch)

    def close(self) -> None:
        """Finish the file (footer) and close it."""
        try:
            extra = {}
            if (self.format == "parquet" and SCHEMA_CRC_KEY in (self.schema.metadata or {})
                    and hasattr(pq.ParquetWriter, "add_key_value_metadata")):  # pyarrow >= 16
                extra = {ROW_GROUPS_KEY: json.dumps(self._rows),
                         **(self._footer() if self._footer is not None else {})}
            if self.format == "parquet":
                if self._parts is None:  # no row group: the footer of a writer of none
                    self._parts = self._row_group_writer([])
                self._parts.close(extra)
                return
            self._writer.close()
        finally:
            if self._parts is not None:
                self._parts.abandon()
            self._file.close()

    def abandon(self) -> None:
        """Stop without finishing the file (the caller failed and discards it): row groups
        still being written are waited for, nothing raises."""
        with contextlib.suppress(Exception):
            if self._parts is not None:
                self._parts.abandon()
            elif self.format != "parquet":
                self._writer.close()
        self._file.close()


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
    >>> from fsstgpu.formats.sinks import write_table
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
