"""``compress_file``'s conversion of a file's units (row groups / record batches): each string
column's units through its :class:`~fsstgpu.columns.ColumnStream`, nested columns' leaves
through a :class:`~fsstgpu.formats.nested.NestedCompressor`, other columns checked and copied.

:class:`UnitCompressor` converts a unit (:meth:`~UnitCompressor.convert`, unit by unit) or a run
of consecutive units (:meth:`~UnitCompressor.convert_run`, for
:func:`~fsstgpu.formats.pipeline.rewrite`'s runs): a top-level string column's run is encoded
as one where its units keep one table (:meth:`ColumnStream.compress_many
<fsstgpu.columns.ColumnStream.compress_many>`), laid out once as an ``fsstgpu.fsst`` array and
cut back into its units. Either way each unit gets the tables, codes and storage that
compressing it alone gives: a row group still holds the table(s) decoding it.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa

from fsstgpu.columns import ColumnStream
from fsstgpu.errors import CorruptDataError
from fsstgpu.formats.arrow import is_fsst_type
from fsstgpu.formats.arrow_read import decode_column
from fsstgpu.formats.arrow_storage import GrowingTables, to_extension_array
from fsstgpu.formats.decoding import copied
from fsstgpu.formats.dictionaries import Redictionary, plain_values
from fsstgpu.formats.nested import (
    NestedCompressor,
    NestedTables,
    decode_nested,
    holds_fsst,
    holds_fsst_dictionary,
)
from fsstgpu.formats.pruning import bounds_of, recorded_bounds
from fsstgpu.formats.rowgroups import Source, reading
from fsstgpu.formats.unit_reads import cut_rows
from fsstgpu.parallel import thread_count

__all__ = ["UnitCompressor"]


class UnitCompressor:
    """Compresses the columns of ``source``'s units into ``out_schema``'s: ``types`` maps each
    top-level string column to compress to its fsst type, ``nested`` names the list / struct /
    map columns whose string leaves are compressed; every other column is checked and copied.

    ``again``: the output compresses the codes again (zstd pages, IPC body compression), so a
    retrained unit gets one table rather than blocks (:class:`~fsstgpu.columns.ColumnStream`).
    ``table``, ``sample_bytes``, ``level`` and ``encode`` are ``compress_file``'s.
    ``row_group_rows``: the units are joined / cut to that many rows, and a dictionary column a
    reader rebuilds from the values is checked to fit its index type unit by unit (see
    :func:`check_rebuilt`). :meth:`sizes` gives the string and code bytes compressed;
    ``bounds`` each column's string bounds per unit (Parquet outputs, for ``filters=``), an
    fsst column copied through included.

    Each column's units must come in order, one at a time (its stream keeps the last table);
    different columns may be converted on different threads at once. :meth:`convert_run`
    converts a run's columns on ``workers`` threads of its own (:meth:`close` ends them).

    Examples
    --------
    >>> import os, tempfile, pyarrow as pa
    >>> from fsstgpu.formats.compressing import UnitCompressor
    >>> from fsstgpu.formats.nested import fsst_leaf_type
    >>> from fsstgpu.formats.rowgroups import Source
    >>> from fsstgpu.formats.sinks import write_table
    >>> path = os.path.join(tempfile.mkdtemp(), "in.arrows")
    >>> write_table(pa.table({"s": ["a.example/%d" % i for i in range(9)]}), path, "arrows",
    ...             rows_per_unit=3)
    >>> with Source(path) as source:
    ...     types = {"s": fsst_leaf_type(pa.string())}
    ...     units = UnitCompressor(source, pa.schema([("s", types["s"])]), types=types)
    ...     run = units.convert_run(list(source.units()), 0)
    ...     units.close()
    >>> [[len(col) for col in unit] for unit in run], units.sizes()["string_bytes"]
    ([[3], [3], [3]], 99)
    """

    def __init__(self, source: Source, out_schema: pa.Schema, *, types: dict, nested=(),
                 out_format: str = "parquet", table=None, sample_bytes=None, again=True,
                 level="default", encode=None, row_group_rows=None, workers=None):
        self.source = source
        self.schema = source.schema
        self.types = types
        # an IPC output: a run's pieces copied (cut_rows: the IPC writer writes a slice with
        # the whole buffers it shares)
        self.own = out_format != "parquet"
        # An fsst column of the input, copied through, too (a file recompressed had none, and
        # filtered reads of it pruned nothing): its units' bounds carried from the input's
        # sound record where the units stay as they are, else decoded for them
        copied = [f.name for f in self.schema if is_fsst_type(f.type) and f.name not in types]
        self.bounds = {name: [] for name in [*types, *copied]} if out_format == "parquet" else {}
        self.carried = (recorded_bounds(source.parquet_metadata, copied)
                        if self.bounds and row_group_rows is None
                        and source.parquet_metadata is not None else {})
        self._sizes = {"string_bytes": 0, "codes_bytes": 0}
        self._counting = threading.Lock()  # (columns are converted on several threads)
        # an IPC file holds one dictionary per field: each column's tables on one growing list
        self.growing = {f.name: GrowingTables() for f in out_schema
                        if out_format == "arrow" and is_fsst_type(f.type)
                        and f.type.tables_in_data}
        self.growing.update({f.name: NestedTables() for f in out_schema  # copied fsst leaves
                             if out_format == "arrow" and holds_fsst(f.type)
                             and f.name not in nested})
        # each column's units one after the other: a new table where the text changes
        # (blocks only where nothing compresses the codes again: ColumnStream's measurement)
        self.streams = {name: ColumnStream(sample_bytes=sample_bytes, blocks=not again,
                                           table=table, split_size=types[name].split_size,
                                           level=level, encode=encode)
                        for name in types}
        self.leaves = {name: NestedCompressor(self.schema.field(name).type, table=table,
                                              sample_bytes=sample_bytes, stream=True,
                                              blocks=not again, growing=out_format == "arrow",
                                              level=level, encode=encode)
                       for name in nested}
        # Dictionaries a reader rebuilds from an fsst column's values, unit by unit (nested
        # leaves chunk by chunk): re-encoded here as every reader will, so that a unit joined
        # by row_group_rows that outgrows its index type is refused now, not written and left
        # unreadable. (One dictionary growing over all the batches is only what an IPC file
        # *output* of a decompress needs: a stream or Parquet output reads them back.)
        self.rows = row_group_rows
        self.rebuilt = {}
        if row_group_rows is not None:
            self.rebuilt = {f.name: Redictionary(f.type.original_type, running=False,
                                                 name=f.name)
                            for f in out_schema
                            if is_fsst_type(f.type) and f.type.index_type is not None}
            self.rebuilt.update({f.name: None for f in out_schema
                                 if f.name not in nested and holds_fsst_dictionary(f.type)})
        # the copied columns whose bounds are decoded for, a run's units at once (_copied_run),
        # a rebuilt one checked on the same values (decoding a unit cost ~0.5 ms of 1,000 rows)
        self._decoded_bounds = {name for name in copied if name in self.bounds
                                and name not in self.carried}
        workers = max(1, min(thread_count(workers), len(self.schema)))
        self._pool = (ThreadPoolExecutor(max_workers=workers,
                                         thread_name_prefix="fsstgpu-convert")
                      if workers > 1 else None)

    def sizes(self) -> dict:
        """``string_bytes`` and ``codes_bytes`` of the strings compressed so far."""
        out = dict(self._sizes)
        for work in self.leaves.values():
            out["string_bytes"] += work.string_bytes
            out["codes_bytes"] += work.codes_bytes
        return out

    def close(self) -> None:
        """End :meth:`convert_run`'s threads."""
        if self._pool is not None:
            self._pool.shutdown(wait=True)

    def convert(self, field, col, unit_index: int):
        """Column ``field`` of unit ``unit_index``, as the output holds it."""
        name = field.name
        if name in self.leaves:  # checked first, as a copied column is
            return self.leaves[name].compress(copied(self.source, name, col, unit_index))
        if name not in self.types:  # copied through: checked first (parquet_options.py)
            col = copied(self.source, name, col, unit_index)
            values = None  # (the plain values, once decoded: a unit decoded once)
            if name in self.rebuilt:
                values = check_rebuilt(name, col, self.rebuilt[name], self.rows)
            if name in self.carried:
                self.bounds[name].append(self.carried[name][unit_index])
            elif name in self.bounds:
                with self._reading(name, unit_index):
                    if values is None:
                        values = decode_column(col, "cpu")[0]
                    self.bounds[name].append(bounds_of(values))
            return self._grown(name, col)
        with self._reading(name, unit_index):
            return self._laid_out(name, self.streams[name].compress(self._values(name, col)))

    def convert_run(self, units: list, first: int) -> list[list]:
        """:meth:`convert` of every column of consecutive ``units`` (Tables: the source's units
        ``first``, ``first + 1``, ...): each unit's columns, for
        :func:`~fsstgpu.formats.pipeline.rewrite`. A top-level string column's units are
        compressed together (:meth:`~fsstgpu.columns.ColumnStream.compress_many`); the other
        columns unit by unit, so that a unit's fault is still named by its own row group."""
        def column(field) -> list:
            cols = [unit.column(field.name) for unit in units]
            if field.name in self.streams and len(units) > 1:
                return self._run(field.name, cols, first)
            if field.name in self._decoded_bounds and len(units) > 1:
                return self._copied_run(field, cols, first)
            return [self.convert(field, col, first + i) for i, col in enumerate(cols)]

        by_field = (list(self._pool.map(column, self.schema)) if self._pool is not None
                    else [column(field) for field in self.schema])
        return [[cols[i] for cols in by_field] for i in range(len(units))]

    def _run(self, name: str, cols: list, first: int) -> list:
        """Column ``name`` of a run's units (``cols``, units ``first``, ...), each unit's
        array."""
        values = []
        for i, col in enumerate(cols):
            with self._reading(name, first + i):
                values.append(self._values(name, col))
        try:
            segments = self.streams[name].compress_many(values)
        except (CorruptDataError, ValueError, TypeError, pa.ArrowException):
            # (the stream is as it was) each unit alone, to fail as it does alone, named
            out = []
            for i, v in enumerate(values):
                with self._reading(name, first + i):
                    out.append(self._laid_out(name, self.streams[name].compress(v)))
            return out
        out = []
        for carr, count in segments:
            whole = self._laid_out(name, carr, grow=False)
            counts = [len(v) for v in values[len(out) : len(out) + count]]
            pieces = [whole] if count == 1 else cut_rows(whole, counts, own=self.own)
            out.extend(self._grown(name, piece) for piece in pieces)
        return out

    def _copied_run(self, field, cols: list, first: int) -> list:
        """A copied fsst column's units of a run (``cols``, units ``first``, ...), their bounds
        found by one decode of them all: each unit's decode apart cost about 170 us of fixed
        work, more than its strings (200 row groups of 1,000 rows: 34 ms a column, against 13
        decoded together). The bounds are those of the same values, so the same; a dictionary
        a reader rebuilds is checked on each unit's values as :meth:`convert` checks it."""
        name = field.name
        try:
            checked = [copied(self.source, name, col, first + i) for i, col in enumerate(cols)]
            values = decode_column(pa.chunked_array(
                [c for col in checked for c in (col.chunks if isinstance(col, pa.ChunkedArray)
                                                else [col])], field.type), "cpu")[0]
            values = values if isinstance(values, pa.ChunkedArray) else pa.chunked_array([values])
            bounds, start = [], 0
            for col in checked:
                unit = values.slice(start, len(col))
                if name in self.rebuilt:
                    check_rebuilt(name, unit, self.rebuilt[name], self.rows)
                bounds.append(bounds_of(unit))
                start += len(col)
        except (CorruptDataError, ValueError, TypeError, pa.ArrowException):
            # each unit alone, to fail as it does alone, named by its row group
            return [self.convert(field, col, first + i) for i, col in enumerate(cols)]
        self.bounds[name].extend(bounds)
        return [self._grown(name, col) for col in checked]

    def _reading(self, name: str, unit_index: int):
        """Errors raised inside named by the file, row group ``unit_index`` and column."""
        return reading(self.source.path, f"row group {unit_index}, column {name!r}: ")

    def _values(self, name: str, col):
        """A string column's unit as the values to compress (checked, its bounds kept)."""
        values = plain_values(col)
        if name in self.rebuilt:
            check_rebuilt(name, values, self.rebuilt[name], self.rows)
        if name in self.bounds:  # for filters= (the codes' statistics order nothing)
            self.bounds[name].append(bounds_of(values))
        return values

    def _laid_out(self, name: str, carr, *, grow: bool = True):
        """``carr`` (compressed strings of column ``name``) as the output's array, counted."""
        with self._counting:
            self._sizes["string_bytes"] += int(carr.uncompressed_bytes)
            self._sizes["codes_bytes"] += len(carr.codes)
        col = to_extension_array(carr, ext_type=self.types[name])
        return self._grown(name, col) if grow else col

    def _grown(self, name: str, col):
        """``col`` with the growing list of tables of an IPC file output (others as is)."""
        if name not in self.growing:
            return col
        parts = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
        return pa.chunked_array([self.growing[name].extend(p) for p in parts], col.type)


def check_rebuilt(name: str, col, redict, rows: int):
    """ValueError naming column ``name`` where a reader could not encode this unit's values
    (``col``: plain, or fsst and decoded here; units joined by ``row_group_rows=rows``) as their
    dictionary type again: ``redict`` as the reader's :class:`Redictionary`, None for a nested
    column (:func:`decode_nested`). Returns the plain values checked (None for a nested
    column), so that a caller needing them too need not decode the unit again.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.compressing import check_rebuilt
    >>> from fsstgpu.formats.dictionaries import Redictionary
    >>> redict = Redictionary(pa.dictionary(pa.int8(), pa.string()), running=False, name="c")
    >>> len(check_rebuilt("c", pa.array([str(i) for i in range(100)]), redict, 100))
    100
    >>> try:
    ...     check_rebuilt("c", pa.array([str(i) for i in range(300)]), redict, 300)
    ... except ValueError as exc:
    ...     print(str(exc)[:60])
    column 'c' cannot be written in row groups of row_group_rows
    """
    try:
        if redict is None:
            decode_nested(col, "cpu")
            return None
        values = decode_column(col, "cpu")[0] if is_fsst_type(col.type) else col
        redict.encode(values)
        return values
    except CorruptDataError:
        raise
    except ValueError as exc:
        raise ValueError(f"column {name!r} cannot be written in row groups of "
                         f"row_group_rows={rows} rows, it would not read back: {exc}") from None
