"""Files onto the GPU: row groups read in parallel (:mod:`fsstgpu.formats.unit_reads`), their
fsst columns decoded in batches on the GPU.

:func:`stream_to_device` hands each row group's fsst columns to the GPU as one batch
(:func:`fsstgpu.decompress_device` of a list: one upload, one launch set), while the next row
groups are being read; :func:`read_to_device` decodes a whole file's in one batch, each column's
row groups as one output column.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa

from fsstgpu.columns import decompress_column, joined_chunks
from fsstgpu.device import get_cupy, resolve_device
from fsstgpu.errors import BatchDecodeError, CorruptDataError
from fsstgpu.formats.arrow import is_fsst_type
from fsstgpu.formats.arrow_storage import from_extension_array
from fsstgpu.formats.nested import decode_nested, holds_fsst
from fsstgpu.formats.nested_device import (
    checked_leaves,
    device_layout_supports,
    nested_to_device,
)
from fsstgpu.formats.page_plan import plannable
from fsstgpu.formats.page_reader import page_columns
from fsstgpu.formats.rowgroups import Source, check_input, reading
from fsstgpu.formats.unit_reads import (
    WHOLE,
    default_workers,
    parallel_units,
    row_group_runs,
    run_label,
    run_units,
)
from fsstgpu.gpu.decode import decompress_device
from fsstgpu.gpu.staged import StagedColumn, decode_staged, stage

__all__ = ["decode_batch", "nested_column_to_device", "read_to_device", "read_unit_to_device",
           "stream_to_device"]


#: rows of fsst column chunks per reading thread of a device read (at least 2 threads, at most
#: :func:`~fsstgpu.formats.unit_reads.default_workers`, which a file without fsst columns
#: gets). Each chunk's check holds the GIL for a fixed time (Python: about 0.4 ms on the H200
#: host) besides its compiled passes, which scale with its rows, so threads beyond the
#: compiled work only queue for the GIL. H200 host, ``read_to_device`` (BENCHMARKS.md section
#: 33): 286 K rows x 5 fsst columns in 8 row groups 60.3 ms with 16 threads, 44.7 with 8; four
#: times the rows 79.5 with 16, 95.7 with 8.
ROWS_PER_READER = 180_000

def _device_readers(source: Source) -> int:
    """Reading threads for a device read of ``source`` (:data:`ROWS_PER_READER`)."""
    meta = source.parquet_metadata
    if meta is None:  # IPC: read in order on the calling thread
        return 1
    checked = sum(is_fsst_type(f.type) or holds_fsst(f.type) for f in source.schema)
    if not checked:  # plain columns only: pyarrow's reads, nothing queued for the GIL
        return default_workers()
    rows = meta.num_rows * checked
    return max(2, min(default_workers(), -(-rows // ROWS_PER_READER)))


def stream_to_device(path, *, workers: int | None = None, ahead: int | None = None,
                     stream=None) -> Iterator[dict]:
    """Read a Parquet / Arrow IPC file onto the GPU one row group (record batch) at a time.

    Row groups are read ahead in parallel (:func:`parallel_units`); each one's fsst columns
    are decoded on the GPU in one batch. Host memory holds at most ``ahead + 2`` row groups
(4 by default): the one yielded and those being read.

    Parameters
    ----------
    path : str or os.PathLike
    workers, ahead : int, optional
        As for :func:`parallel_units`; by default one reading thread per
        :data:`ROWS_PER_READER` rows of fsst column chunks (from 2 to the usable cores, at
        most 16; the usable cores for a file without fsst columns).
    stream : cupy.cuda.Stream, optional
        Each yielded row group is ready on this stream (default: the current stream).

    Yields
    ------
    dict
        Column name -> :class:`fsstgpu.DeviceStringArray` (each fsst column),
        :class:`fsstgpu.formats.nested_device.DeviceNestedArray` (each nested column with
        fsst leaves the device layout takes; others decoded on the CPU) or the host
        ``pyarrow.ChunkedArray`` (every other column), one dict per row group.

    Raises
    ------
    CorruptDataError
        Naming the file, row group and column.
    DeviceError
        Without a usable GPU.

    Examples
    --------
    >>> import os, tempfile, fsstgpu, pyarrow as pa, pyarrow.parquet as pq
    >>> from fsstgpu.formats import compress_file
    >>> from fsstgpu.formats.device_reader import stream_to_device
    >>> path = os.path.join(tempfile.mkdtemp(), "data.parquet")
    >>> pq.write_table(pa.table({"s": ["ab", "c", None]}), path, row_group_size=2)
    >>> _ = compress_file(path, path + ".fsst.parquet")
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     for unit in stream_to_device(path + ".fsst.parquet"):  # a row group at a time
    ...         print(unit["s"].to_arrow().to_pylist())
    ['ab', 'c']
    [None]
    """

    resolve_device("gpu")
    with Source(check_input(path)) as source:
        units = parallel_units(source, workers=workers or _device_readers(source),
                               ahead=ahead, convert=_compressed_columns(source))
        fsst = _fsst_names(source)
        for k, unit in enumerate(units):
            yield _decoded_unit(source, k, unit, fsst, stream)


def _decoded_unit(source: Source, k: int, unit: dict, fsst: set, stream) -> dict:
    """Unit ``k`` (name -> column, the fsst ones as CompressedStringArrays) with its fsst
    columns decoded on the GPU in one batch, its nested fsst columns placed on the GPU."""
    carrs = {n: c for n, c in unit.items() if n in fsst}
    out = decode_batch(source.path, {f"row group {k}, column {n!r}": c
                                     for n, c in carrs.items()}, stream=stream)
    nested = {}
    for n, c in unit.items():
        where = f"row group {k}, "
        if isinstance(c, _CheckedNested):
            nested[n] = nested_column_to_device(source.path, n, c.column, stream=stream,
                                                where=where, checked=c.checked)
        elif n not in fsst and isinstance(c, pa.ChunkedArray) and holds_fsst(c.type):
            nested[n] = nested_column_to_device(source.path, n, c, stream=stream, where=where)
    return {**unit, **dict(zip(carrs, out.values(), strict=True)), **nested}


def nested_column_to_device(path, name: str, col: pa.ChunkedArray, *, stream=None,
                            where: str = "", checked=None):
    """A nested column with fsst leaves decoded on the GPU (a DeviceNestedArray), or on the
    CPU (a host ChunkedArray) when the device layout does not take its types; errors name
    ``path``, ``where`` (e.g. the row group) and the column; ``checked``: each chunk's
    :func:`~fsstgpu.formats.nested_device.checked_leaves`, when the caller has them."""
    with reading(path, f"{where}column {name!r}: "):
        if not device_layout_supports(col.type):
            return decode_nested(col, "cpu")[0]
        return nested_to_device(col.chunks, col.type, stream=stream, checked=checked)


def read_unit_to_device(path, k: int, *, stream=None) -> dict:
    """Row group (record batch) ``k`` of a file, its fsst columns decoded on the GPU in one
    batch (the unit of work of a task that reads a dataset row group by row group).

    Returns
    -------
    dict
        Column name -> :class:`fsstgpu.DeviceStringArray` or ``pyarrow.ChunkedArray``.

    Examples
    --------
    >>> import os, tempfile, fsstgpu, pyarrow as pa, pyarrow.parquet as pq
    >>> from fsstgpu.formats import compress_file
    >>> from fsstgpu.formats.device_reader import read_unit_to_device
    >>> path = os.path.join(tempfile.mkdtemp(), "data.parquet")
    >>> pq.write_table(pa.table({"s": ["ab", "c", "d"]}), path, row_group_size=2)
    >>> _ = compress_file(path, path + ".fsst.parquet")
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     second = read_unit_to_device(path + ".fsst.parquet", 1)  # row group 1
    ...     assert second["s"].to_arrow().to_pylist() == ["d"]
    """

    resolve_device("gpu")
    with Source(check_input(path)) as source:
        table = source.unit(k)
        convert = _compressed_columns(source)
        unit = {f.name: convert(k, f.name, table.column(f.name)) for f in source.schema}
        return _decoded_unit(source, k, unit, _fsst_names(source), stream)


def read_to_device(source: Source, *, workers: int | None = None,
                   nested_on_device: bool = True) -> dict:
    """Every column of ``source``: the fsst ones decoded on the GPU, the others on the host.

    Nested columns with fsst leaves are placed on the GPU (:func:`nested_column_to_device`,
    their leaves checked on the reading threads as each row group arrives); with
    ``nested_on_device=False`` they are returned compressed, as host columns.

    Row groups are read and checked in parallel (as :func:`parallel_units` does; ``workers``
    reading threads, by default one per :data:`ROWS_PER_READER` rows of fsst column chunks,
    from 2 to the usable cores, at most 16), a column's consecutive small row groups read by
    one thread and checked as one column (runs of
    :func:`~fsstgpu.formats.unit_reads.row_group_runs`), and every (row group, column) is
    decoded in one batch laid
    out column by column, each column's row groups as one output column (``joined``: the
    offsets scan writes them joined, its chunks are the row groups). Each fsst chunk's codes
    are uploaded by the thread that read it (:func:`fsstgpu.gpu.staged.stage`), which keeps
    only its split points, narrow lengths, validity and tables: host memory holds the chunks
    being read (one a reading thread) and a few bytes a string of the others, not the file's
    pages. Plain columns are returned on the host and nested ones placed on the GPU from their
    host chunks at the end, so those chunks are kept.

    Returns
    -------
    dict
        Column name -> :class:`fsstgpu.DeviceStringArray` or ``pyarrow.ChunkedArray``.

    Examples
    --------
    >>> import os, tempfile, fsstgpu, pyarrow as pa, pyarrow.parquet as pq
    >>> from fsstgpu.formats import compress_file
    >>> from fsstgpu.formats.device_reader import read_to_device
    >>> from fsstgpu.formats.rowgroups import Source
    >>> path = os.path.join(tempfile.mkdtemp(), "data.parquet")
    >>> pq.write_table(pa.table({"s": ["ab", None, "d"]}), path, row_group_size=2)
    >>> _ = compress_file(path, path + ".fsst.parquet")
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     with Source(path + ".fsst.parquet") as source:
    ...         columns = read_to_device(source)   # the row groups joined: one column
    ...     assert columns["s"].to_arrow().to_pylist() == ["ab", None, "d"]
    """

    # the fsst columns whose pages are stored uncompressed: decoded from their pages on the
    # device (formats/page_reader.py) on a thread of their own, while this one reads the
    # others as below (pyarrow's reads let the GIL go: they overlap); a column whose pages
    # turn out to be of a layout the page reader does not take is then read as below
    taken = {f.name for f in plannable(source)} if PAGE_READS else set()
    with ThreadPoolExecutor(1) as beside:
        pages = None
        if taken:  # (on this thread's device, handed to its stream)
            cp = get_cupy()
            pages = beside.submit(_page_columns, source, cp.cuda.Device().id,
                                  cp.cuda.get_current_stream())
        decoded, host, checked = _usual_columns(source, taken, workers, nested_on_device)
        direct = pages.result() if pages is not None else {}
    missed = taken - set(direct)
    if missed:
        more = _usual_columns(source, set(source.schema.names) - missed, workers,
                              nested_on_device)
        for got, extra in zip((decoded, host, checked), more, strict=True):
            got.update(extra)  # (only the missed columns: the rest were skipped)
    decoded.update(direct)
    out = {}
    for f in source.schema:
        if f.name in decoded:
            out[f.name] = decoded[f.name]
        elif nested_on_device and holds_fsst(f.type):  # on the CPU where the layout refuses it
            out[f.name] = nested_column_to_device(
                source.path, f.name, pa.chunked_array(host[f.name], type=f.type),
                checked=checked.get(f.name))
        else:
            out[f.name] = pa.chunked_array(host[f.name], type=f.type)
    return out


def _page_columns(source: Source, device: int, stream) -> dict:
    """:func:`~fsstgpu.formats.page_reader.page_columns` of ``source`` on another thread than
    the caller's: on the caller's ``device``, its columns handed to the caller's ``stream``."""
    with get_cupy().cuda.Device(device):
        return page_columns(source, stream=stream)


def _usual_columns(source: Source, skip: set, workers: int | None, nested_on_device: bool):
    """The columns of ``source`` but ``skip`` read the usual way (row groups read on the
    reading threads, fsst chunks staged and decoded in one batch): ``(decoded, host,
    checked)``, the fsst columns decoded on the GPU, the other columns' host chunks, and the
    nested columns' checked leaves."""
    fsst = _fsst_names(source) - skip
    host: dict[str, list] = {f.name: [] for f in source.schema if f.name not in skip}
    pieces: dict[str, dict] = {name: {} for name in fsst}   # column -> label -> compressed
    checked: dict[str, list] = {}   # nested column -> each row group chunk's checked leaves
    workers = workers or _device_readers(source)
    staged = _staged_runs(source)
    runs = row_group_runs(source) if source.format == "parquet" else None
    names = [n for n in source.schema.names if n not in skip]
    if runs is None or len(set(source.schema.names)) < len(source.schema.names):
        # IPC, or columns named twice: unit by unit on this thread (runs of one)
        units = parallel_units(source, workers=workers, ahead=WHOLE,
                               convert=lambda k, name, column: staged((k,), name, [column]))
    else:
        units = (unit for _, unit in run_units(source, runs, names, workers, WHOLE, staged)) \
            if names else ()
    for unit in units:
        for name, col in unit.items():
            if name in skip:
                continue
            if name in fsst:
                pieces[name].update(col)
            elif isinstance(col, _CheckedNested):
                checked.setdefault(name, []).extend(col.checked)
                host[name].extend(col.column.chunks)
            else:
                host[name].extend(col.chunks)
    for name, labelled in pieces.items():  # no row groups at all: an empty column
        if not labelled:
            empty = pa.chunked_array([], source.schema.field(name).type)
            labelled[f"column {name!r}"] = stage(from_extension_array(empty))
    # column by column, each column's row groups decoded as one column (their offsets come
    # out of the scan joined: no join after the decode)
    batch = {label: col for labelled in pieces.values() for label, col in labelled.items()}
    try:
        joined = decode_batch(source.path, batch, joined=[len(lab) for lab in pieces.values()]) \
            if batch else {}
    except CorruptDataError as exc:
        _name_row_group(source, str(exc), runs)
        raise
    return dict(zip(pieces, joined.values(), strict=True)), host, checked


#: whether :func:`read_to_device` decodes the fsst columns whose pages are stored uncompressed
#: from their pages on the device (:mod:`fsstgpu.formats.page_reader`). Off until the whole GPU
#: suite has run with it on: its own GPU tests pass, and on an H100 it read machine text 1.30x
#: and dbtext 1.02x faster than the usual path on the same files (BENCHMARKS.md section 73);
#: its tests turn it on
PAGE_READS = False


def _name_row_group(source: Source, failed: str, runs) -> None:
    """After a batched decode failed (``failed``, its message) on a run of row groups checked
    as one: raise the error of the first of them whose codes the CPU refuses, named as a lone
    row group's decode is (the error path alone reads them again)."""
    for run in runs or ():
        for name in _fsst_names(source):
            if len(run) == 1 or f"{run_label(run)}, column {name!r}" not in failed:
                continue
            for k in run:
                with reading(source.path, f"row group {k}, column {name!r}: "):
                    decompress_column(from_extension_array(source.unit(k, [name]).column(name)))


def _staged_runs(source: Source):
    """``convert`` for :func:`~fsstgpu.formats.unit_reads.run_units` in a whole-file device
    read: each fsst column's run of row groups checked as one column (:func:`_checked_run`) and
    staged on the reading thread (:func:`fsstgpu.gpu.staged.stage`: its codes uploaded on the
    caller's stream, the rest kept; a pageable upload a run: through pinned buffers of the
    read's own it was slower, BENCHMARKS.md section 38), as ``[(label, staged)]``; other
    columns joined over the run after each row group's is converted as
    :func:`_compressed_columns` does."""
    checked = _compressed_columns(source)
    fsst = _fsst_names(source)
    cp = get_cupy()
    stream, device = cp.cuda.get_current_stream(), cp.cuda.Device().id

    def convert(run: tuple, name: str, parts: list):
        if name in fsst:
            return [(label, stage(carr, stream, device=device))
                    for label, carr in _checked_run(source, run, name, parts)]
        return _joined_parts(run, name, parts, checked)

    return convert


def _joined_parts(run: tuple, name: str, parts: list, checked):
    """A plain or nested column of a run of row groups: each row group's part converted by
    ``checked`` (:func:`_compressed_columns`'s, errors naming its row group), then joined."""
    done = [checked(k, name, part) for k, part in zip(run, parts, strict=True)]
    if isinstance(done[0], _CheckedNested):
        return _CheckedNested(joined_chunks([d.column for d in done]),
                              [leaves for d in done for leaves in d.checked])
    return joined_chunks(done)


def _checked_run(source: Source, run: tuple, name: str, parts: list) -> list:
    """Fsst column ``name`` of a run of row groups (``parts``: each one's ChunkedArray),
    checked as one CompressedStringArray (its chunks the row groups'): ``[(label, column)]``;
    or, when the run does not pass as one, row group by row group (one pair each, a corrupt
    one named)."""
    if len(run) > 1:
        try:
            return [(f"{run_label(run)}, column {name!r}",
                     from_extension_array(joined_chunks(parts)))]
        except CorruptDataError:
            pass  # named below (or together, the row groups pass one by one)
    out = []
    for k, part in zip(run, parts, strict=True):
        label = f"row group {k}, column {name!r}"
        with reading(source.path, label + ": "):
            out.append((label, from_extension_array(part)))
    return out


def _fsst_names(source: Source) -> set[str]:
    return {f.name for f in source.schema if is_fsst_type(f.type)}


class _CheckedNested:
    """A nested column of one unit with its fsst leaves checked (:func:`checked_leaves`, one
    list per chunk) on the reading thread."""

    def __init__(self, column: pa.ChunkedArray, checked: list):
        self.column, self.checked = column, checked


def _compressed_columns(source: Source):
    """``convert`` for :func:`parallel_units`: each fsst column as a CompressedStringArray,
    checked (:func:`from_extension_array`) on the reading thread, each nested column the
    device layout takes as a :class:`_CheckedNested`; other columns unchanged."""
    fsst = _fsst_names(source)
    nested = {f.name for f in source.schema
              if holds_fsst(f.type) and device_layout_supports(f.type)}

    def convert(k: int, name: str, column):
        if name in nested:
            with reading(source.path, f"row group {k}, column {name!r}: "):
                return _CheckedNested(column, [checked_leaves(chunk, column.type)
                                               for chunk in column.chunks])
        if name not in fsst:
            return column
        with reading(source.path, f"row group {k}, column {name!r}: "):
            return from_extension_array(column)

    return convert


def decode_batch(path, carrs: dict, *, stream=None, joined=None) -> dict:
    """Decode the compressed columns ``carrs`` (label -> column: all CompressedStringArrays,
    or all :class:`~fsstgpu.gpu.staged.StagedColumn`) on the GPU in one batch.

    Returns label -> :class:`fsstgpu.DeviceStringArray`, in order; with ``joined`` (counts of
    consecutive columns decoded as one, e.g. a file column's row groups:
    :func:`fsstgpu.gpu.decode.decompress_device`), the first label of each run -> its column.
    A corrupt column raises CorruptDataError ``"<path>: <label>: <problem>"`` naming every bad
    column.

    Examples
    --------
    >>> import fsstgpu, pyarrow as pa
    >>> from fsstgpu.formats.device_reader import decode_batch
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     out = decode_batch("f", {"column 's'": fsstgpu.compress(pa.array(["a"]))})
    """

    if not carrs:
        return {}
    labels = list(carrs)
    columns = list(carrs.values())
    with reading(path):
        try:
            decoded = (decode_staged(columns, stream, joined=joined)
                       if isinstance(columns[0], StagedColumn)
                       else decompress_device(columns, stream=stream, joined=joined))
        except BatchDecodeError as exc:
            raise CorruptDataError("; ".join(f"{labels[k]}: {msg}"
                                             for k, msg in sorted(exc.failed.items()))) from None
    if joined is not None:  # each run's first label
        labels = [labels[k] for k in itertools.accumulate(list(joined)[:-1], initial=0)]
    return dict(zip(labels, decoded, strict=True))
