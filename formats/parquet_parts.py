"""A Parquet file's row groups written in parallel, then joined into the one file.

pyarrow's ``ParquetWriter`` encodes and compresses a row group on one thread, and a file's row
groups one after the other: ``compress_file`` on the H200's 16-core host spent 73-88% of its
time in it (BENCHMARKS.md section 36). A row group's bytes do not depend on where it
lands in the file (pages, dictionaries and their CRCs are the column chunk's own; only the footer
holds positions), so each row group (or a few small consecutive ones,
:meth:`PartWriter.write_many`) is written by a writer of its own into memory, on a pool
thread (pyarrow releases the GIL), and :class:`JoinedParquetFile` appends them to the output in
order, moving the positions in each one's footer entry (:func:`moved_row_group`) and writing
one footer for all at the end. The file is byte for byte the one a single writer writes (tested).

Row groups that hold a page index or a bloom filter (written after every row group, with
positions of their own) are refused: fsstgpu's writer options write neither.

Examples
--------
>>> import io, pyarrow as pa, pyarrow.parquet as pq
>>> from fsstgpu.formats.parquet_parts import JoinedParquetFile, write_part
>>> schema = pa.schema([("s", pa.string())])
>>> out = io.BytesIO()
>>> joined = JoinedParquetFile(out, schema, {})
>>> for rows in (["a", "b"], ["c"]):
...     joined.append(write_part(pa.table({"s": rows}), schema, {}))
>>> joined.close({})
>>> f = pq.ParquetFile(pa.BufferReader(out.getvalue()))
>>> f.num_row_groups, f.read().column("s").to_pylist()
(2, ['a', 'b', 'c'])
"""

from __future__ import annotations

from collections import deque
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pyarrow.parquet as pq

from fsstgpu.formats.chunk_record import ARROW_SCHEMA_KEY, CHUNKS_KEY, chunk_digest, chunks_footer
from fsstgpu.formats.pruning import STATS_CRC_KEY, statistics_digests, stats_crc_footer
from fsstgpu.formats.thrift_compact import BINARY, LIST, STRUCT, Field, Seq, Struct, dumps, loads
from fsstgpu.parallel import usable_cores

__all__ = ["PART_BYTES", "JoinedParquetFile", "PartWriter", "moved_row_group", "part_threads",
           "REFUSALS", "refused", "unwritable", "write_part"]

MAGIC = b"PAR1"
#: Arrow bytes of the row groups being written at once, beyond the oldest: row groups of a GB
#: and more are then written one or two at a time, not eight (memory, not speed, bounds them)
MAX_HELD_BYTES = 1 << 30
#: consecutive row groups written together (:meth:`PartWriter.write_many`) share a part up to
#: this many Arrow bytes: parts of a few row groups pay a part's fixed cost once for them, and
#: a file of them still has several parts to write at once
PART_BYTES = 1 << 20
# Thrift field ids (parquet.thrift)
_FILE_NUM_ROWS, _FILE_ROW_GROUPS, _FILE_KEY_VALUES = 3, 4, 5
_RG_COLUMNS, _RG_NUM_ROWS, _RG_FILE_OFFSET, _RG_ORDINAL = 1, 3, 5, 7
_CC_FILE_OFFSET, _CC_META, _CC_OFFSET_INDEX, _CC_COLUMN_INDEX = 2, 3, 4, 6
_CM_POSITIONS = (9, 10, 11)  # data_page_offset, index_page_offset, dictionary_page_offset
_CM_DATA_PAGE, _, _CM_DICTIONARY_PAGE = _CM_POSITIONS
_CM_COUNTS = (5, 6, 7)  # num_values, total_uncompressed_size, total_compressed_size
_CM_BLOOM_FILTER = 14
# What joining reads of a part's footer (thrift_compact.loads' shape): the row counts, the row
# groups' positions, the chunks' counts and sizes (the chunk record), and the key-value pairs;
# the rest (schema, statistics, encodings, paths) stays raw bytes, written back as they were
# (reading it all took ~0.4 ms a row group)
_FOOTER_SHAPE = {
    _FILE_NUM_ROWS: None, _FILE_KEY_VALUES: None,
    _FILE_ROW_GROUPS: {
        _RG_NUM_ROWS: None, _RG_FILE_OFFSET: None, _RG_ORDINAL: None,
        _RG_COLUMNS: {_CC_FILE_OFFSET: None, _CC_OFFSET_INDEX: None, _CC_COLUMN_INDEX: None,
                      _CC_META: dict.fromkeys((*_CM_POSITIONS, *_CM_COUNTS,
                                               _CM_BLOOM_FILTER))}}}


def part_threads() -> int:
    """Row groups a file's writer encodes at once: half the usable cores (the other half
    reads and converts the next row groups), at most 8 (each holds a row group in memory
    twice, as Arrow and encoded), at least 2: on the 2-core VM two were as fast or faster
    than one (dbtext compress 296 -> 264 ms, decompress 208 -> 153)."""
    return max(2, min(8, usable_cores() // 2))


#: what pyarrow's Parquet writer raises for a table it cannot write (:func:`refused`)
REFUSALS = (pa.ArrowNotImplementedError, pa.ArrowInvalid, OSError)


def refused(table: pa.Table, exc: Exception) -> Exception:
    """What to raise where pyarrow's Parquet writer refused ``table`` with ``exc``: a ValueError
    (:func:`unwritable`); for an OSError (pyarrow's for some types it cannot write, such as a
    dictionary of structs of two fields in a row group of no rows: "Only 4 out of 6 columns
    are initialized"; or the disk's), only where a column alone is refused, else ``exc``.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.parquet_parts import refused
    >>> point = pa.struct([("x", pa.float64()), ("y", pa.float64())])
    >>> d = pa.DictionaryArray.from_arrays(pa.array([], pa.int8()), pa.array([], point))
    >>> str(refused(pa.table({"d": d}), OSError("Only 1 out of 3 columns are initialized")))[:50]
    "column 'd' (dictionary<values=struct<x: double, y:"
    >>> refused(pa.table({"n": [1]}), OSError("No space left on device"))
    OSError('No space left on device')
    """
    why = unwritable(table, exc)
    return exc if isinstance(exc, OSError) and not why.startswith("column ") else ValueError(why)


def unwritable(table: pa.Table, exc: Exception) -> str:
    """Why pyarrow's Parquet writer refused ``table`` (types Parquet cannot hold, such as a
    dictionary holding a null or of views, or seconds past the millisecond range), naming the
    first column it refuses alone."""
    for field, column in zip(table.schema, table.columns, strict=True):
        try:
            pq.write_table(pa.table({field.name: column}), pa.BufferOutputStream())
        except REFUSALS as alone:
            return (f"column {field.name!r} ({field.type}) cannot be written to Parquet "
                    f"({alone}); write an Arrow IPC output (.arrow, .arrows) instead")
    return f"the table cannot be written to Parquet ({exc})"


def write_part(tables, schema: pa.Schema, options: dict, *,
               digests: list | None = None) -> pa.Buffer:
    """``tables`` (a Table, or a list of them) as a Parquet file of one row group each, in
    memory (``options``: the ``ParquetWriter`` keyword arguments every part of a file shares).
    ``digests``, a list, gets the row groups' statistics' CRC32s
    (:func:`~fsstgpu.formats.pruning.statistics_digests` of the writer's own footer: no read of
    it again, and on the part's thread)."""
    sink = pa.BufferOutputStream()
    with pq.ParquetWriter(sink, schema, **options) as writer:
        for table in [tables] if isinstance(tables, pa.Table) else tables:
            writer.write_table(table, row_group_size=max(1, table.num_rows))
    if digests is not None:
        digests += statistics_digests(writer.writer.metadata)
    return sink.getvalue()


def _footer(buf) -> tuple[memoryview, Struct]:
    """A whole Parquet file's bytes after the leading magic and before its footer, and the
    footer (``FileMetaData``)."""
    raw = memoryview(buf).cast("B")  # a pa.Buffer's bytes are signed ("b")
    if len(raw) < 12 or raw[:4] != MAGIC or raw[-4:] != MAGIC:
        raise ValueError("not a whole Parquet file")
    size = int.from_bytes(raw[-8:-4], "little")
    if size > len(raw) - 12:
        raise ValueError("a Parquet footer longer than its file")
    return raw[4 : len(raw) - 8 - size], loads(raw[len(raw) - 8 - size : -8], _FOOTER_SHAPE)


def moved_row_group(row_group: Struct, shift: int, ordinal: int) -> Struct:
    """``row_group`` (a ``RowGroup`` footer entry) with every file position moved by
    ``shift`` bytes and its ordinal set, in place (returned). A position 0 means "none" (no
    byte of a Parquet file's data is at 0, its magic is): parquet-cpp writes it for a column
    chunk's ``file_offset`` (since 15) and for the data pages of a row group without rows.

    Raises
    ------
    ValueError
        For a column chunk with a page index or a bloom filter (positions outside the row
        group's bytes).
    """
    for f in row_group.fields:
        if f.id == _RG_FILE_OFFSET and f.value:
            f.value += shift
        elif f.id == _RG_ORDINAL:
            f.value = (ordinal + 2**15) % 2**16 - 2**15  # an i16, as parquet-cpp casts it
    for chunk in row_group.get(_RG_COLUMNS).items:
        for f in chunk.fields:
            if f.id in (_CC_OFFSET_INDEX, _CC_COLUMN_INDEX):
                raise ValueError("a row group with a page index cannot be moved")
            if f.id == _CC_FILE_OFFSET and f.value:
                f.value += shift
            elif f.id == _CC_META:
                for m in f.value.fields:
                    if m.id == _CM_BLOOM_FILTER:
                        raise ValueError("a row group with a bloom filter cannot be moved")
                    if m.id in _CM_POSITIONS and m.value:
                        m.value += shift
    return row_group


class JoinedParquetFile:
    """Row groups written alone (:func:`write_part`) appended to one Parquet file.

    Parameters
    ----------
    file : binary file object
        Open for writing, at its start; written in order (no seeks).
    schema : pyarrow.Schema
        The parts' schema (a file without parts gets its footer from it).
    options : dict
        The parts' ``ParquetWriter`` keyword arguments.
    stats_crc : bool
        Record the CRC32s of the row groups' statistics in the footer
        (:data:`~fsstgpu.formats.pruning.STATS_CRC_KEY`: fsstgpu's own files).
    chunks : bool
        Record where every column chunk lies (:mod:`fsstgpu.formats.chunk_record`: fsstgpu's
        outputs).
    """

    def __init__(self, file, schema: pa.Schema, options: dict, *, stats_crc: bool = False,
                 chunks: bool = False):
        self._file, self._schema, self._options = file, schema, options
        self._chunks = chunks
        self._file.write(MAGIC)
        self._pos = len(MAGIC)
        self._row_groups: list[Struct] = []
        self._template: Struct | None = None  # the first part's footer
        # each row group's statistics' CRC32s (pruning), where the footer records them
        self._digests: list[list[int]] | None = [] if stats_crc else None

    def append(self, part, digests: list | None = None) -> None:
        """Append the row groups of ``part`` (a whole Parquet file's bytes); ``digests``: their
        statistics' CRC32s where :func:`write_part` gave them (else read from ``part``)."""
        body, meta = _footer(part)
        if self._digests is not None:
            if digests is None:
                digests = statistics_digests(pq.read_metadata(pa.BufferReader(part)))
            self._digests += digests
        for rg in meta.get(_FILE_ROW_GROUPS, Seq(LIST, STRUCT)).items:
            self._row_groups.append(moved_row_group(rg, self._pos - len(MAGIC),
                                                    len(self._row_groups)))
        self._file.write(body)
        self._pos += len(body)
        if self._template is None:
            self._template = meta

    @property
    def records_digests(self) -> bool:
        """Whether the footer records the statistics' CRC32s (``stats_crc``)."""
        return self._digests is not None

    def close(self, key_values: dict) -> None:
        """Write the footer: the parts' own, every row group in it, ``key_values`` added as
        ``ParquetWriter.add_key_value_metadata`` adds them (and the statistics' CRC32s, where
        the file was made with ``stats_crc``)."""
        if self._digests is not None:
            key_values = {**key_values, STATS_CRC_KEY: stats_crc_footer(self._digests)}
        meta = self._template
        if meta is None:  # no row group: the footer of a writer that wrote none
            empty = pa.BufferOutputStream()
            try:
                pq.ParquetWriter(empty, self._schema, **self._options).close()
            except REFUSALS as exc:  # a type it refuses
                raise refused(pa.Table.from_batches([], schema=self._schema), exc) from None
            _, meta = _footer(empty.getvalue())
        meta.set(_FILE_NUM_ROWS, sum(rg.get(_RG_NUM_ROWS) for rg in self._row_groups))
        meta.set(_FILE_ROW_GROUPS, Seq(LIST, STRUCT, self._row_groups))
        pairs = meta.get(_FILE_KEY_VALUES)
        if pairs is None:
            pairs = Seq(LIST, STRUCT, [])
            meta.fields.append(Field(_FILE_KEY_VALUES, LIST, pairs))
            meta.fields.sort(key=lambda f: f.id)
        if self._chunks:
            stored = {p.get(1): p.get(2) for p in pairs.items}.get(ARROW_SCHEMA_KEY)
            key_values = {**key_values, CHUNKS_KEY: chunks_footer(
                [_digests(rg) for rg in self._row_groups], stored)}
        # as parquet-cpp merges them: the added pairs first, in order, then the others
        added = {_bytes(k): _bytes(v) for k, v in key_values.items()}
        pairs.items = ([Struct([Field(1, BINARY, k), Field(2, BINARY, v)])
                        for k, v in added.items()]
                       + [p for p in pairs.items if p.get(1) not in added])
        raw = dumps(meta)
        self._file.write(raw)
        self._file.write(len(raw).to_bytes(4, "little"))
        self._file.write(MAGIC)


def _digests(row_group: Struct) -> list[int]:
    """:func:`~fsstgpu.formats.chunk_record.chunk_digest` of each column chunk of
    ``row_group`` (a footer entry, positions moved)."""
    rows = row_group.get(_RG_NUM_ROWS)
    out = []
    for chunk in row_group.get(_RG_COLUMNS).items:
        meta = chunk.get(_CC_META, Struct())
        out.append(chunk_digest(rows, (chunk.get(_CC_FILE_OFFSET, 0),
                                       *(meta.get(i, 0) for i in _CM_COUNTS),
                                       meta.get(_CM_DATA_PAGE, 0), meta.get(_CM_DICTIONARY_PAGE))))
    return out


def _bytes(v) -> bytes:
    return v.encode() if isinstance(v, str) else bytes(v)


class PartWriter:
    """Tables written as row groups on ``parallel`` threads, joined into ``file`` in order
    (:class:`JoinedParquetFile`); at most ``parallel`` row groups in flight, and beyond the
    oldest at most :data:`MAX_HELD_BYTES` of their Arrow data. A table pyarrow refuses raises
    ValueError (:func:`unwritable`) at the :meth:`write` or :meth:`close` that collects its
    row group.
    """

    def __init__(self, file, schema: pa.Schema, options: dict, parallel: int, *,
                 stats_crc: bool = False, chunks: bool = False):
        self._joined = JoinedParquetFile(file, schema, options, stats_crc=stats_crc,
                                         chunks=chunks)
        self._schema, self._parallel = schema, parallel
        #: the options of the row groups written from now on (set between writes)
        self.options = options
        self._pool = ThreadPoolExecutor(parallel, thread_name_prefix="fsstgpu-part")
        self._pending: deque = deque()  # (job, Arrow bytes) in order
        self._held = 0

    def _part(self, tables: list, options: dict):
        digests = [] if self._joined.records_digests else None
        try:
            return write_part(tables, self._schema, options, digests=digests), digests
        except REFUSALS as exc:
            raise refused(pa.concat_tables(tables), exc) from None

    def write(self, table: pa.Table) -> None:
        """Start writing ``table`` as the next row group; append the oldest ones done."""
        self.write_many([table])

    def write_many(self, tables: list) -> None:
        """Start writing ``tables`` as the next row groups, one each, consecutive ones sharing
        a part up to :data:`PART_BYTES` of Arrow data: a part's writer costs ~0.3 ms whatever
        it holds (its creation, its footer and the footer's read back), as much as encoding a
        row group of 2,000 short lines."""
        share, nbytes = [], 0
        for table in tables:
            if share and nbytes + table.nbytes > PART_BYTES:
                self._submit(share, nbytes)
                share, nbytes = [], 0
            share.append(table)
            nbytes += table.nbytes
        if share:
            self._submit(share, nbytes)

    def _submit(self, tables: list, nbytes: int) -> None:
        self._pending.append((self._pool.submit(self._part, tables, self.options), nbytes))
        self._held += nbytes
        self._collect()

    def _collect(self) -> None:
        """Append the oldest parts done while too many are in flight."""
        while len(self._pending) > self._parallel or (
                len(self._pending) > 1 and self._held - self._pending[0][1] > MAX_HELD_BYTES):
            self._append_oldest()

    def _append_oldest(self) -> None:
        job, nbytes = self._pending.popleft()
        self._held -= nbytes
        self._joined.append(*job.result())

    def close(self, key_values: dict) -> None:
        """Append every row group left and write the footer (``key_values`` added; see
        :meth:`JoinedParquetFile.close`)."""
        while self._pending:
            self._append_oldest()
        self._joined.close(key_values)

    def abandon(self) -> None:
        """Stop: row groups not started are dropped, those running are waited for."""
        for job, _ in self._pending:
            job.cancel()
        self._pending.clear()
        self._pool.shutdown(wait=True)
