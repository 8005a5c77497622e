"""A file rewritten unit by unit (row group or record batch): the next unit read, this one's
columns converted and the last one written, each on threads of its own.

:func:`rewrite` is what ``compress_file`` and ``decompress_file`` run between a
:class:`~fsstgpu.formats.rowgroups.Source` and a :class:`~fsstgpu.formats.sinks.Sink`:
:func:`read_ahead` reads unit k + 1 (pyarrow releases the GIL while it decodes pages) while
unit k's columns are converted, and the sink writes unit k - 1 meanwhile (several row groups at
once for Parquet: :mod:`fsstgpu.formats.parquet_parts`). :func:`regrouped` cuts units to a row
count.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa

from fsstgpu.formats.rowgroups import Source, rows_only
from fsstgpu.formats.sinks import Sink
from fsstgpu.parallel import refuse_forked

__all__ = ["read_ahead", "regrouped", "rewrite"]


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
    may hold fewer): at most one output unit and one input unit in memory at a time.

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
    held, count = [], 0
    for unit in units:
        start = 0
        while start < unit.num_rows:
            take = min(rows - count, unit.num_rows - start)
            held.append(unit.slice(start, take))
            count, start = count + take, start + take
            if count == rows:
                yield _joined(held, count)
                held, count = [], 0
    if count:
        yield _joined(held, count)


def _joined(tables: list, rows: int) -> pa.Table:
    """``tables`` (of one schema, ``rows`` rows together) as one Table: tables without columns
    keep their rows (``pa.concat_tables`` counts none there)."""
    if tables[0].num_columns == 0:
        return rows_only(rows, tables[0].schema.metadata)
    return pa.concat_tables(tables).combine_chunks()


def rewrite(source: Source, sink: Sink, convert, progress=None, *,
            rows_per_unit: int | None = None, workers: int = 1) -> tuple[int, int]:
    """Write every unit of ``source`` to ``sink``, each column through ``convert``; close ``sink``.

    ``convert(field, column, unit_index)`` returns the column to write: on the calling thread,
    column after column, or with ``workers`` > 1 the columns of a unit on that many threads at
    once (``convert`` must then be safe on any thread for different fields; a field's units
    still come in order, one at a time). Each unit is written while the next one is
    converted, and the one after it read (:func:`read_ahead`). Returns ``(rows, units)``;
    ``progress`` (a :data:`~fsstgpu.formats.rowgroups.ProgressCallback`) is called after each
    unit is written. ``rows_per_unit``: the output's row groups / batches hold that many rows
    (the input's are kept by default).

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
    # Unit k is written (pyarrow's encoding and page compression, the GIL released) on a
    # thread of its own while unit k + 1 is read and converted here: one unit in flight.
    writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fsstgpu-write")
    workers = max(1, min(int(workers), len(source.schema)))
    # a unit's columns at once: a column of one row group is often too small to keep every
    # core busy on its own (its planner's walk, say, runs on one)
    converters = (ThreadPoolExecutor(max_workers=workers, thread_name_prefix="fsstgpu-convert")
                  if workers > 1 else None)
    pending = None

    def written(job) -> None:
        nonlocal rows, units, nbytes
        job.result()
        unit = job.unit
        rows, units, nbytes = rows + unit.num_rows, units + 1, nbytes + unit.nbytes
        if progress is not None:
            progress(units_done=units, units_total=total, rows=rows, nbytes=nbytes)
            _refuse_fork(owner)

    units_in = ahead = read_ahead(source.units())
    total = source.num_units
    if rows_per_unit is not None:
        units_in = regrouped(units_in, rows_per_unit)
        known = (source.parquet_metadata.num_rows if source.parquet_metadata is not None
                 else None)
        total = None if known is None else -(-known // rows_per_unit)
    done = False
    try:
        for k, unit in enumerate(units_in):
            if converters is None:
                columns = [convert(field, unit.column(field.name), k) for field in source.schema]
            else:
                columns = list(converters.map(
                    lambda field, unit=unit, k=k: convert(field, unit.column(field.name), k),
                    source.schema))
            if pending is not None:
                written(pending)
                pending = None
            pending = writer.submit(sink.write, columns, unit.num_rows)
            pending.unit = unit
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
