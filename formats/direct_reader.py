"""A Parquet file's fsst columns read straight onto the GPU (issue #24 item 2), for files whose
fsst pages are stored uncompressed (``compress_file(..., parquet_codec="none")``). Not yet
wired into ``read_table_device``: this version (row starts from C++, a gather a row group, the
staged columns built on the reading threads) has not run on a GPU; commit 2a772ea wires it in
(``read_to_device`` reading the fsst columns here and the others as before) for the session
that measures it against ``read_table_device`` (``benchmarks/pending_s82/direct_vs.py``).

The fsst column chunks are read with ``os.preadv`` into one pinned buffer and uploaded in one
copy; the host parses their page headers, checks their CRCs and decodes the small parts
(definition levels, the lengths, cuts and table leaves, the codes' offsets:
:func:`~fsstgpu.formats.raw_columns.read_fsst_chunk` with ``codes_in_place``), a thread a row
group and column, never copying the codes: it says where each row's codes start in the
uploaded chunks (a DELTA_LENGTH_BYTE_ARRAY page's body, or the dictionary page a
dictionary-encoded value lies in), and the device gathers them there
(:func:`~fsstgpu.kernels.gather.gather_segments`, a launch a row group). Each column's row
groups are then decoded in one batch through the staged path's checked decode
(:func:`fsstgpu.gpu.staged.decode_staged`: the file is untrusted, its code offsets checked by
the code-starts bitmap as a staged read checks them).

BENCHMARKS.md sections 67-68 measured it: the chunks reach device memory in a tenth of
pyarrow's zstd read + upload; the host's per-row work is what the reader's time is made of.
Files with compressed fsst pages, or any layout the raw reader does not take, are not read
here (:func:`read_fsst_direct` returns None).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa

from fsstgpu.device import get_cupy
from fsstgpu.errors import CorruptDataError
from fsstgpu.formats.arrow_read import from_extension_array, is_fsst_type
from fsstgpu.formats.raw_columns import Unsupported, read_fsst_chunk
from fsstgpu.formats.raw_pages import chunk_span
from fsstgpu.formats.rowgroups import Source
from fsstgpu.gpu.staged import StagedColumn, decode_staged
from fsstgpu.kernels.gather import check_gathered, gather_segments
from fsstgpu.kernels.loader import on_stream
from fsstgpu.parallel import usable_cores

__all__ = ["direct_columns", "direct_plan", "read_fsst_direct"]

_STORED = ("UNCOMPRESSED",)


def direct_plan(source: Source) -> list | None:
    """The fsst columns of an open Parquet ``source`` that :func:`read_fsst_direct` reads, as
    ``[(field, leaves, [(row group, [(start, size) of each leaf chunk]), ...]), ...]``; None
    when it reads none of them (another format, no fsst column, or a chunk whose pages are
    compressed or not four top-level leaves)."""
    if source.format != "parquet" or not source.num_units or \
            not isinstance(source.path, Path):  # (a local file: read with os.preadv)
        return None
    meta, leaves = source.parquet_metadata, source.leaf_columns
    fields = [f for f in source.schema if is_fsst_type(f.type)]
    if not fields or leaves is None:
        return None
    plan = []
    for field in fields:
        columns = leaves.get(field.name)
        if columns is None or len(columns) != 4:
            return None
        groups = []
        for k in range(source.num_units):
            spans = []
            for j in columns:
                col = meta.row_group(k).column(j)
                if col.compression not in _STORED:
                    return None
                spans.append(chunk_span(col, source.file_bytes,
                                        f"{source.path}: row group {k}, column "
                                        f"{col.path_in_schema}"))
            groups.append((k, spans))
        plan.append((field, columns, groups))
    return plan


def read_fsst_direct(path, *, stream=None, workers: int | None = None) -> dict | None:
    """The fsst columns of the Parquet file at ``path``, each decoded on the GPU (its row
    groups joined: one :class:`~fsstgpu.DeviceStringArray` a column), when every one of their
    chunks is stored uncompressed; else None (read the file with
    :func:`~fsstgpu.formats.file_reads.read_table_device`).

    Raises
    ------
    fsstgpu.CorruptDataError
        For damaged pages (CRCs, headers, levels, lengths: named by file, row group and
        column) or codes that do not decode (the checked decode).

    Examples
    --------
    >>> import fsstgpu
    >>> from fsstgpu.formats.direct_reader import read_fsst_direct
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     columns = read_fsst_direct("out.parquet")  # compress_file(..., parquet_codec="none")
    """
    with Source(path) as source:
        return direct_columns(source, stream=stream, workers=workers)


def direct_columns(source: Source, *, stream=None, workers: int | None = None) -> dict | None:
    """:func:`read_fsst_direct` of an open ``source`` (for a whole-file device read that reads
    its other columns itself)."""
    cp = get_cupy()
    import cupyx

    main = stream if stream is not None else cp.cuda.get_current_stream()
    plan = direct_plan(source)
    if plan is None:
        return None
    jobs = [(field, columns, k, spans) for field, columns, groups in plan
            for k, spans in groups]
    starts = np.cumsum([0] + [size for *_, spans in jobs for _, size in spans])
    total = int(starts[-1])
    pinned = cupyx.empty_pinned((max(total, 1),), np.uint8)
    where = []  # each job's four chunks' places in the buffer
    at = 0
    for *_, spans in jobs:
        where.append([(int(starts[at + i]), size) for i, (_, size) in enumerate(spans)])
        at += len(spans)
    fd = os.open(source.path, os.O_RDONLY)
    try:
        reads = [(file_at, int(starts[i]), size) for i, (file_at, size) in
                 enumerate(s for *_, spans in jobs for s in spans)]
        with ThreadPoolExecutor(workers or usable_cores()) as pool:
            list(pool.map(lambda r: _read_into(fd, pinned, *r, source.path), reads))
            with on_stream(main):
                chunks = cp.empty(max(total, 1), cp.uint8)
                chunks.set(pinned, stream=main)  # (one copy, while the host decodes)
            decoded = list(pool.map(
                lambda job_where: _host_part(source, *job_where[0], job_where[1],
                                             pinned),
                zip(jobs, where, strict=True)))
    finally:
        os.close(fd)
    source.check_unchanged()
    for field, _, groups in plan:  # (the footer's record of the chunks, as reads check it)
        for k, _ in groups:
            source.check_chunks(k, [field.name])
    # each row group's codes gathered on the device (a launch each), a column's row
    # groups decoded in one batch
    out, errors = {}, []
    for field, _, groups in plan:
        staged = []
        for _ in groups:
            column, starts, offsets, extra = decoded.pop(0)
            with on_stream(main):
                d_extra = cp.asarray(extra) if len(extra) else chunks[:0]
            column.codes, error = gather_segments(chunks, d_extra, starts, offsets,
                                                  stream=main)
            errors.append(error)
            staged.append(column)
        [out[field.name]] = decode_staged(staged, main, joined=[len(staged)])
    for error in errors:  # (a run outside the chunks: refused, its zeros not returned)
        check_gathered(error)
    return out


def _read_into(fd: int, pinned, file_at: int, at: int, size: int, path) -> None:
    """``size`` bytes of the file from ``file_at`` into ``pinned[at:]`` (``os.preadv``: no
    shared position, so threads read one file at once)."""
    got = 0
    while got < size:
        n = os.preadv(fd, [memoryview(pinned[at + got : at + size])], file_at + got)
        if n <= 0:
            raise CorruptDataError(f"{path}: the file ends {size - got} bytes into a column "
                                   "chunk")
        got += n


def _host_part(source: Source, field, columns, k, spans, where, pinned) -> tuple:
    """One fsst column's row group decoded on the host from its chunks in ``pinned``:
    ``(StagedColumn without its codes, starts, code offsets, extra)``, each row's codes a
    segment for :func:`~fsstgpu.kernels.gather.gather_segments`: from ``starts[i]`` in the
    uploaded chunks (or ``-1 - starts[i]`` in ``extra``, the bytes that had to be decoded)."""
    raws = [memoryview(pinned[at : at + size]) for at, size in where]
    try:
        storage, starts, extra = read_fsst_chunk(source.path, source.parquet_metadata, field,
                                                 columns, k, threads=1, raws=raws,
                                                 codes_in_place=True)
    except Unsupported as exc:  # (direct_plan took it: a page proved otherwise)
        raise RuntimeError(f"the direct reader met a layout it does not take: {exc}") from None
    carr = from_extension_array(pa.ExtensionArray.from_storage(field.type, storage))
    offsets = carr.code_offsets  # (int64 from 0, whatever the codes child's offsets type)
    if len(offsets) != len(starts) + 1 or int(offsets[-1]) != len(carr.codes):
        raise CorruptDataError(f"{source.path}: row group {k}, column {field.name!r}: "
                               f"{len(offsets)} code offsets end at {int(offsets[-1])} for "
                               f"{len(starts)} rows and {len(carr.codes)} bytes of codes")
    starts = np.where(starts >= 0, starts + where[0][0], starts)  # (into the whole buffer)
    return StagedColumn(carr, codes=None), starts, offsets, extra
