"""A file's row groups read on threads of fsstgpu's own: :func:`parallel_units` (each column
of each row group a task) and :func:`run_units` (each column of a run of consecutive row groups
a task, :func:`row_group_runs`).

Reading a compressed Parquet file is host work: pages are checked (CRC32) and decompressed
(zstd), the codes reassembled, the storage checked (:func:`from_extension_array`). Pyarrow does
a file with a Python-defined extension type on the calling thread (``files.md``: its own pool
threads would outlive the call holding the type), so :func:`parallel_units` reads the column
chunks of the row groups on threads of its own instead, each thread with its own handle on the
file and pyarrow's threads off, at most ``ahead + 1`` row groups in flight beyond the one in
use: host memory stays bounded by a few row groups. The threads are joined when the last unit
has been read; a reader left early (a break, an error) waits for nothing: reads still running
finish on their threads and close their handles.

>>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
>>> from fsstgpu.formats import compress_file
>>> from fsstgpu.formats.unit_reads import parallel_units
>>> from fsstgpu.formats.rowgroups import Source
>>> d = tempfile.mkdtemp()
>>> pq.write_table(pa.table({"s": ["a", "b", "c"]}), os.path.join(d, "a.parquet"),
...                row_group_size=1)
>>> _ = compress_file(os.path.join(d, "a.parquet"), os.path.join(d, "b.parquet"))
>>> with Source(os.path.join(d, "b.parquet")) as source:
...     [len(unit["s"]) for unit in parallel_units(source, workers=2)]
[1, 1, 1]
"""

from __future__ import annotations

import os
import threading
from collections import deque
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa

from fsstgpu.formats.parquet_options import open_parquet
from fsstgpu.formats.rowgroups import Source, reading
from fsstgpu.parallel import MAX_THREADS, refuse_forked, usable_cores
from fsstgpu.types import is_view, large_type

__all__ = ["GROUP_BYTES", "GROUP_ROWS", "WHOLE", "cut_rows", "default_workers",
           "parallel_units", "row_group_runs", "run_label", "run_units"]


#: ``ahead`` for a reader that keeps every unit (a whole-file read: its result holds them all,
#: so reading a few ahead bounds nothing): every (unit, column) task is queued at once. A few
#: ahead left a 4-row-group file's two columns 6 tasks for 16 threads, in two waves (H200 host:
#: the reads of a nested table 80 ms, pyarrow's one-call read of the same file 42).
WHOLE = 1 << 62


#: rows of an fsst column a whole-file read checks (and decodes or stages) at once: a column's
#: consecutive row groups, read one by one, are checked as one column (the check's fixed
#: cost, Python holding the GIL, paid once for them) up to this many rows together.
GROUP_ROWS = 131_072
#: ... and at most this many bytes of row groups (the footer's uncompressed sizes): what a
#: reading thread holds at once.
GROUP_BYTES = 32 << 20


def default_workers() -> int:
    """Reading threads by default: the cores this process may use, at most 16 (and at most
    ``FSSTGPU_THREADS``: a CPU read decodes on these threads, :func:`fsstgpu.parallel.
    usable_cores`).

    Examples
    --------
    >>> from fsstgpu.formats.unit_reads import default_workers
    >>> 1 <= default_workers() <= 16
    True
    """
    return max(1, min(16, usable_cores()))


def parallel_units(source: Source, *, workers: int | None = None,
                   ahead: int | None = None, convert=None, columns=None,
                   units=None) -> Iterator[dict]:
    """Yield ``source``'s units in order, each column of each Parquet row group read by one of
    ``workers`` threads (a row group's columns in parallel too: its largest column bounds it).

    Parameters
    ----------
    source : Source
    workers : int, optional
        Reading threads (default: the cores this process may use, at most 16; at most
        :data:`fsstgpu.parallel.MAX_THREADS` whatever is asked).
    ahead : int, optional
        Row groups read ahead besides the next one (default 2): at most ``ahead + 1`` are being
        read while the caller holds the one yielded last.
    convert : callable, optional
        ``convert(k, name, column)`` is run on the reading thread after column ``name`` of unit
        ``k`` is read, and its result yielded instead of the column (host work that then runs
        in parallel too).
    columns : list of str, optional
        Only these columns (default all, in the schema's order).
    units : list of int, optional
        Only these units, in this order (default all; :func:`fsstgpu.formats.pruning.
        selected_units` chooses them for ``row_groups=`` and ``filters=``).

    Yields
    ------
    dict
        Column name -> ``pyarrow.ChunkedArray`` (or what ``convert`` returns), one dict per
        unit; IPC files and streams are read in order on the calling thread.

    Raises
    ------
    CorruptDataError
        Naming the file, the row group and the column.
    """
    names = source.schema.names if columns is None else list(columns)
    convert = convert or (lambda k, name, column: column)
    if source.format != "parquet" or len(set(source.schema.names)) < len(source.schema.names):
        chosen = (enumerate(source.units()) if units is None
                  else ((k, source.unit(k)) for k in units))  # a file's batches: by index
        for k, unit in chosen:
            yield {name: convert(k, name, unit.column(name)) for name in names}
        return
    order = list(range(source.num_units)) if units is None else list(units)
    runs = [(k,) for k in order]
    for _, unit in run_units(source, runs, names, workers, ahead,
                              lambda run, name, parts: convert(run[0], name, parts[0])):
        yield unit


def row_group_runs(source: Source, group_rows: int | None = None,
                   group_bytes: int | None = None, units=None) -> list[tuple]:
    """``source``'s row groups (or ``units``, in their order) in runs of consecutive ones of
    at most ``group_rows`` rows and (by the footer's uncompressed sizes) ``group_bytes`` bytes
    together (default :data:`GROUP_ROWS`, :data:`GROUP_BYTES`; a larger row group alone).

    Examples
    --------
    >>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
    >>> from fsstgpu.formats.unit_reads import row_group_runs
    >>> from fsstgpu.formats.rowgroups import Source
    >>> path = os.path.join(tempfile.mkdtemp(), "a.parquet")
    >>> pq.write_table(pa.table({"n": range(10)}), path, row_group_size=3)
    >>> with Source(path) as source:
    ...     row_group_runs(source, 6), row_group_runs(source, 6, units=[0, 2, 3])
    ([(0, 1), (2, 3)], [(0,), (2, 3)])
    """
    group_rows = GROUP_ROWS if group_rows is None else group_rows
    group_bytes = GROUP_BYTES if group_bytes is None else group_bytes
    runs, run, rows, size = [], [], 0, 0
    for k in range(source.num_units) if units is None else units:
        meta = source.parquet_metadata.row_group(k)
        n, b = meta.num_rows, max(0, meta.total_byte_size)
        if run and (rows + n > group_rows or size + b > group_bytes or k != run[-1] + 1):
            runs.append(tuple(run))
            run, rows, size = [], 0, 0
        run.append(k)
        rows, size = rows + n, size + b
    return runs + [tuple(run)] if run else runs


def run_label(run) -> str:
    """``"row group 3"`` or ``"row groups 3-7"``: a run of row groups, for error messages.

    Examples
    --------
    >>> from fsstgpu.formats.unit_reads import run_label
    >>> run_label((3,)), run_label((3, 4, 5))
    ('row group 3', 'row groups 3-5')
    """
    return f"row group {run[0]}" if len(run) == 1 else f"row groups {run[0]}-{run[-1]}"


def cut_rows(values, counts: list, *, own: bool) -> list:
    """``values`` (an Array or a ChunkedArray) cut into pieces of ``counts`` rows, each an
    Array where it is one chunk, as a unit converted alone is; ``own``: each piece copied into
    buffers of its own, for an IPC output (pyarrow's IPC writer writes a zero-row slice with
    the whole buffers it shares, 17 KB a batch for nothing beside a 15 KB column, and pads a
    slice's data otherwise: copied, the batches are a lone unit's, byte for byte).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.unit_reads import cut_rows
    >>> [p.to_pylist() for p in cut_rows(pa.chunked_array([[1, 2], [3]]), [1, 2], own=True)]
    [[1], [2, 3]]
    """
    out, start = [], 0
    for count in counts:
        piece = values.slice(start, count)
        if isinstance(piece, pa.ChunkedArray) and piece.num_chunks == 1:
            piece = piece.chunk(0)
        if own:
            piece = (_owned(piece) if isinstance(piece, pa.Array)
                     else pa.chunked_array([_owned(c) for c in piece.chunks], type=piece.type))
        out.append(piece)
        start += count
    return out


def _owned(array: pa.Array) -> pa.Array:
    """``array`` in buffers of its own: a view array's strings copied out of the data buffers
    it shares (which ``concat_arrays`` keeps whole: a run's for each unit), into one buffer as
    a unit decoded alone has."""
    if is_view(array.type):
        return pa.concat_arrays([array.cast(large_type(array.type))]).cast(array.type)
    return pa.concat_arrays([array])


def run_units(source: Source, runs: list, names: list, workers, ahead, convert):
    """:func:`parallel_units`'s reading, by runs of row groups of a Parquet file (e.g.
    :func:`row_group_runs`'s): yields ``(run, unit)``, each column of a run read (row group by
    row group) and converted (``convert(run, name, parts)``, ``parts`` the run's row groups'
    ChunkedArrays) by one of ``workers`` threads, at most ``ahead + 1`` runs in flight
    beyond the one yielded last.

    Examples
    --------
    >>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
    >>> from fsstgpu.formats.unit_reads import run_units
    >>> from fsstgpu.formats.rowgroups import Source
    >>> path = os.path.join(tempfile.mkdtemp(), "a.parquet")
    >>> pq.write_table(pa.table({"n": range(5)}), path, row_group_size=2)
    >>> with Source(path) as source:
    ...     [(run, unit["n"]) for run, unit in run_units(
    ...         source, [(0, 1), (2,)], ["n"], 2, 1, lambda run, name, parts: len(parts))]
    [((0, 1), 2), ((2,), 1)]
    """
    # at most MAX_THREADS: the pool starts a thread (each opening the file) per read in flight
    workers = min(workers or default_workers(), MAX_THREADS)
    ahead = max(1, ahead or 2)
    handles: dict = {}  # thread id -> [its file handle, its ParquetFile, reads it has running]
    # re-entrant: the collector may finalize this generator on a reading thread holding it
    lock = threading.RLock()
    abandoned = False

    def read_one(parquet, k: int, name: str):
        with reading(source.path, f"row group {k}, column {name!r}: "):
            unit = source.rows_checked(k, source.read_row_group(parquet, k, [name]))
        # the type it was written with (Parquet reads some back as others: parquet_options.py)
        return source.restored(name, unit.column(0))

    def read(run: tuple, name: str):
        me = threading.get_ident()
        with lock:
            entry = handles.get(me)
        if entry is None:
            f = source.reopen()  # the file the read began with, or an error
            entry = [f, open_parquet(f), 0]
        with lock:
            handles[me] = entry
            entry[2] += 1
        try:
            return convert(run, name, [read_one(entry[1], k, name) for k in run])
        finally:
            with lock:
                entry[2] -= 1
                if abandoned and not entry[2] and handles.pop(me, None) is not None:
                    entry[0].close()

    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="fsstgpu-read")
    owner = os.getpid()  # a forked child has none of this process's reading threads
    pending: deque = deque()
    finished = False
    try:
        def submit(run):
            return run, {name: pool.submit(read, run, name) for name in names}

        pending.extend(submit(run) for run in runs[:ahead + 1])
        following = len(pending)
        while pending:
            # the reads queued here would be waited for in vain (they were the parent's)
            refuse_forked(owner, f"{source.path}: this reader")
            run, jobs = pending.popleft()
            unit = {name: job.result() for name, job in jobs.items()}
            # read from the file the read began with, unchanged: a rewrite in place changes
            # the bytes under later reads, whose rows must not be yielded (a caller streaming
            # batches has used them by the time the read ends, or stops before its end)
            source.check_unchanged()
            if following < len(runs):
                pending.append(submit(runs[following]))
                following += 1
            yield run, unit
        source.check_unchanged()  # a rewrite in place changes the bytes under the reads
        finished = True
    finally:
        if os.getpid() != owner:
            # A forked child: the pool's threads, and any lock they held at the fork, are the
            # parent's, so neither the pool nor the lock is touched; handles no read was using
            # are closed (the child's copies of the descriptors).
            for f, _, running in handles.values():
                if not running:
                    f.close()
        elif finished:
            pool.shutdown(wait=True)
            for f, _, _ in handles.values():
                f.close()
        else:
            # Left early (an error, a break, or the garbage collector finalizing an abandoned
            # generator). Nothing may wait here: the collector can run this on any thread,
            # even one inside threading's own bookkeeping, where joining the readers
            # deadlocked (H200, pytest -m gpu, 2026-12-04). Queued reads are cancelled; a
            # read still running closes its thread's handle when it ends.
            pool.shutdown(wait=False, cancel_futures=True)
            with lock:
                abandoned = True
                for me in [me for me, (_, _, running) in handles.items() if not running]:
                    handles.pop(me)[0].close()
