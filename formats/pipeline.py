"""A file rewritten unit by unit (row group or record batch): the next unit read, this one's
columns converted and the last one written, each on threads of its own.

:func:`rewrite` is what ``compress_file`` and ``decompress_file`` run between a
:class:`~fsstgpu.formats.rowgroups.Source` and a :class:`~fsstgpu.formats.sinks.Sink`:
:func:`read_ahead` reads unit k + 1 (pyarrow releases the GIL while it decodes pages) while
unit k's columns are converted, and the sink writes unit k - 1 meanwhile (several row groups at
once for Parquet: :mod:`fsstgpu.formats.parquet_parts`). :func:`regrouped` cuts units to a row
count; :func:`runs` joins small consecutive ones, which ``decompress_file`` reads, decodes and
writes together (each still a unit of its own in the output).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa

from fsstgpu.formats.dictionaries import joined_table
from fsstgpu.formats.rowgroups import Source, rows_only
from fsstgpu.formats.sinks import Sink
from fsstgpu.parallel import MAX_THREADS, refuse_forked

__all__ = ["RUN_BYTES", "RUN_FLOOR", "RUN_PARTS", "RUN_ROWS", "read_ahead", "regrouped", "rewrite",
           "runs"]

#: a rewrite that converts runs of units (``convert_run``) joins consecutive units up to this
#: many rows ... (decompress_file of 61 row groups of 2,000 lines, 2-core VM: runs of 16 K,
#: 32 K, 64 K and 128 K rows within noise of each other, min 56-58 ms in one pass; unit by
#: unit, min 112-118 ms)
RUN_ROWS = 65_536
#: ... and this many Arrow bytes together (a larger unit alone): with the run read ahead and
#: the one written, three runs are held at a time
RUN_BYTES = 16 << 20
#: ... and, where the file says how many rows it holds, at most 1 / RUN_PARTS of them (but
#: RUN_FLOOR rows at least): a run is written while the next is read and converted, so a file
#: of one run (50,000 rows in 500 row groups) read, converted and wrote one after the other,
#: a core idle throughout (compress_file of that file, 2-core VM: 0.86-0.88 of the wall time)
RUN_PARTS = 4
RUN_FLOOR = 8_192


def read_ahead(units: Iterator) -> Iterator:
    """``units``, the next one read on a thread of its own while the caller holds this one.

    One unit ahead: the reading thread's exceptions come where that unit would have. Closed
    early (the caller stops), it waits for a read still running, then closes ``units``, so a
    file is never closed under a read.

    Examples
    --------
    >>> from fsstgpu.formats.pipeline import read_ahead
    >>> list(read_ahead(iter([1, 2, 3])))
    [1, 2, 3]
    """
    end = object()
    owner = os.getpid()
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fsstgpu-read")
    pending = pool.submit(next, units, end)
    try:
        while True:
            _refuse_fork(owner)
            unit = pending.result()
            if unit is end:
                return
            pending = pool.submit(next, units, end)
            yield unit
    finally:
        # a forked child has none of the reading thread: a read it had running never ends
        # there, so nothing is waited for (and ``units``, the parent's, is left alone)
        if os.getpid() == owner:
            with contextlib.suppress(BaseException):  # (its error is not the one to tell)
                pending.result()
            pool.shutdown(wait=True)
            close = getattr(units, "close", None)
            if close is not None:
                close()


def _refuse_fork(owner: int) -> None:
    """FsstGpuError in a process forked (e.g. by a ``progress`` callback) from ``owner``
    while a rewrite ran: its threads, and the output it writes, stayed the parent's."""
    refuse_forked(owner, "a file's rewrite (forked in a progress callback?)",
                  "its threads and its output stayed the parent's: end the child with "
                  "os._exit()")


def regrouped(units, rows: int) -> Iterator[pa.Table]:
    """The rows of ``units`` (Tables of one schema) again, in Tables of ``rows`` rows (the last
    may hold fewer): at most one output unit and one input unit in memory at a time (the
    output's rows twice while its parts are joined).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.pipeline import regrouped
    >>> parts = [pa.table({"n": range(k, k + 3)}) for k in (0, 3, 6)]
    >>> [t.column("n").to_pylist() for t in regrouped(parts, 4)]
    [[0, 1, 2, 3], [4, 5, 6, 7], [8]]
    """
    if rows < 1:
        raise ValueError(f"row groups of {rows} rows: give 1 or more")
    # (a slice keeps its whole unit's buffers: nothing here holds one of a unit passed)
    held, count, empty, wrote = [], 0, None, False
    for unit in units:
        start = 0
        if empty is None and not unit.num_rows:  # (needed only where no unit has rows)
            empty = unit.slice(0, 0)
        while start < unit.num_rows:
            take = min(rows - count, unit.num_rows - start)
            held.append(unit.slice(start, take))
            count, start = count + take, start + take
            if count == rows:
                out, held, count, wrote = _joined(held, count), [], 0, True
                yield out
                del out
        if count and held[-1].num_rows < unit.num_rows:  # the tail of a unit cut before
            held[-1] = _copied(held[-1])
    if count:
        yield _joined(held, count)
    elif empty is not None and not wrote:
        # units but no rows: one empty unit, as the output without rows= keeps an empty row
        # group and pyarrow writes one for an empty table (there were none: row_groups=[0]
        # read the input and failed on the output)
        yield empty


def runs(units, rows: int, nbytes: int) -> Iterator[list]:
    """The Tables of ``units`` in lists of consecutive ones holding at most ``rows`` rows and
    ``nbytes`` Arrow bytes together (a larger unit alone); ``units`` is closed at the end.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.pipeline import runs
    >>> parts = [pa.table({"n": range(k)}) for k in (2, 3, 9, 1, 0, 4)]
    >>> [[t.num_rows for t in run] for run in runs(parts, rows=5, nbytes=1 << 20)]
    [[2, 3], [9], [1, 0, 4]]
    """
    run, count, size = [], 0, 0
    try:
        for unit in units:
            # (Table.nbytes walks every buffer of every column: ~13 us for a row group of five
            # columns, once a unit, not twice)
            unit_rows, unit_bytes = unit.num_rows, unit.nbytes
            if run and (count + unit_rows > rows or size + unit_bytes > nbytes):
                yield run
                run, count, size = [], 0, 0
            run.append(unit)
            count, size = count + unit_rows, size + unit_bytes
        if run:
            yield run
    finally:
        close = getattr(units, "close", None)
        if close is not None:
            close()


def _copied(table: pa.Table) -> pa.Table:
    """``table`` (a slice) in buffers of its own, its chunks kept (none share the input's)."""
    if table.num_columns == 0:
        return table  # (no buffers: the slice holds only its row count)
    return pa.Table.from_arrays([pa.chunked_array([pa.concat_arrays([chunk])
                                                   for chunk in column.chunks], column.type)
                                 for column in table.columns], schema=table.schema)


def _joined(tables: list, rows: int) -> pa.Table:
    """``tables`` (of one schema, ``rows`` rows together) as one Table: tables without columns
    keep their rows (``pa.concat_tables`` counts none there); dictionaries joined by bits
    (:func:`~fsstgpu.formats.dictionaries.joined_table`)."""
    if tables[0].num_columns == 0:
        return rows_only(rows, tables[0].schema.metadata)
    return joined_table(tables)


def rewrite(source: Source, sink: Sink, convert, progress=None, *,
            rows_per_unit: int | None = None, workers: int = 1,
            convert_run=None) -> tuple[int, int]:
    """Write every unit of ``source`` to ``sink``, each column through ``convert``; close ``sink``.

    ``convert(field, column, unit_index)`` returns the column to write: on the calling thread,
    column after column, or with ``workers`` > 1 the columns of a unit on that many threads at
    once (at most :data:`~fsstgpu.parallel.MAX_THREADS`: a thread a column otherwise, for a
    huge count; ``convert`` must then be safe on any thread for different fields; a field's units
    still come in order, one at a time). Each unit is written while the next one is
    converted, and the one after it read (:func:`read_ahead`). Returns ``(rows, units)``;
    ``progress`` (a :data:`~fsstgpu.formats.rowgroups.ProgressCallback`) is called after each
    unit is written. ``rows_per_unit``: the output's row groups / batches hold that many rows
    (the input's are kept by default).

    ``convert_run(units, first_index)``, given instead, converts consecutive units (Tables)
    at once and returns each one's columns (a list of lists): units are then read, converted
    and written in :func:`runs` (a run written while the next is converted and the one after
    it read; each unit still a row group / batch of its own), so that a file's many small
    units pay the fixed costs of a conversion and of a Parquet part once a run.

    Examples
    --------
    >>> import os, tempfile, pyarrow as pa, pyarrow.compute as pc
    >>> from fsstgpu.formats.pipeline import rewrite
    >>> from fsstgpu.formats.rowgroups import Source
    >>> from fsstgpu.formats.sinks import Sink, write_table
    >>> d = tempfile.mkdtemp()
    >>> write_table(pa.table({"s": ["a", "b", "c"]}), os.path.join(d, "in.arrows"), "arrows",
    ...             rows_per_unit=2)
    >>> with Source(os.path.join(d, "in.arrows")) as source:
    ...     sink = Sink(os.path.join(d, "out.parquet"), "parquet", source.schema)
    ...     rewrite(source, sink, lambda field, col, k: pc.utf8_upper(col))
    (3, 2)
    """
    rows = units = nbytes = 0
    owner = os.getpid()  # a child forked by ``progress`` must not touch the parent's write
    # Unit (or run) k is written (pyarrow's encoding and page compression, the GIL released)
    # on a thread of its own while k + 1 is converted here and k + 2 read: one in flight.
    writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fsstgpu-write")
    workers = max(1, min(int(workers), len(source.schema), MAX_THREADS))
    # a unit's columns at once: a column of one row group is often too small to keep every
    # core busy on its own (its planner's walk, say, runs on one)
    converters = (ThreadPoolExecutor(max_workers=workers, thread_name_prefix="fsstgpu-convert")
                  if workers > 1 else None)
    pending = None

    def written(job) -> None:
        nonlocal rows, units, nbytes
        job.result()
        for unit in job.units:
            rows, units = rows + unit.num_rows, units + 1
            if progress is not None:  # (nbytes, a walk of the unit's buffers, only for it)
                nbytes += unit.nbytes
                progress(units_done=units, units_total=total, rows=rows, nbytes=nbytes)
                _refuse_fork(owner)

    def converted(unit, k) -> list:
        if converters is None:
            return [convert(field, unit.column(field.name), k) for field in source.schema]
        return list(converters.map(lambda field: convert(field, unit.column(field.name), k),
                                   source.schema))

    total = source.num_units
    if rows_per_unit is not None:
        known = (source.parquet_metadata.num_rows if source.parquet_metadata is not None
                 else None)
        # (no rows: one empty unit, see regrouped)
        total = None if known is None else -(-known // rows_per_unit) or min(1, total)
    if convert_run is None:  # unit by unit, the next one read ahead
        units_in = ahead = read_ahead(source.units())
        if rows_per_unit is not None:
            units_in = regrouped(units_in, rows_per_unit)
        batches = ([unit] for unit in units_in)
    else:  # runs of units, the next run read ahead
        units_in = source.units()
        if rows_per_unit is not None:
            units_in = regrouped(units_in, rows_per_unit)
        run_rows = RUN_ROWS
        if source.parquet_metadata is not None:
            run_rows = min(run_rows, max(RUN_FLOOR,
                                         -(-source.parquet_metadata.num_rows // RUN_PARTS)))
        batches = ahead = read_ahead(runs(units_in, run_rows, RUN_BYTES))
    done = False
    try:
        first = 0
        for batch in batches:
            columns = (convert_run(batch, first) if convert_run is not None
                       else [converted(batch[0], first)])
            first += len(batch)
            if pending is not None:
                written(pending)
                pending = None
            pending = writer.submit(sink.write_many, [
                (cols, unit.num_rows) for cols, unit in zip(columns, batch, strict=True)])
            pending.units = batch
        if pending is not None:
            written(pending)
            pending = None
        done = True
    finally:
        # a forked child leaves the parent's threads and output alone (a footer it wrote
        # would go into the parent's file through the shared descriptor)
        if os.getpid() == owner:
            _finish(pending, writer, converters, ahead, sink, done)
    return rows, units


def _finish(pending, writer, converters, ahead, sink, done: bool) -> None:
    """:func:`rewrite`'s end: the threads stopped, the output closed or abandoned."""
    if pending is not None:  # stopped meanwhile: let the write finish before closing
        with contextlib.suppress(BaseException):
            pending.result()
    writer.shutdown(wait=True)
    if converters is not None:
        converters.shutdown(wait=True)
    ahead.close()  # (a read still running is waited for: the source closes next)
    if done:
        sink.close()
    else:  # the output is discarded: its footer would only hide the error
        sink.abandon()
