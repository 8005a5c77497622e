"""A Parquet file's fsst columns read straight onto the GPU (issue #24 item 2), for files whose
fsst pages are stored uncompressed (``compress_file(..., parquet_codec="none")``): the fsst
column chunks are read with ``os.preadv`` into one pinned buffer and uploaded in one copy;
the host parses their page headers, checks their CRCs and decodes the small parts (definition
levels, the codes' lengths, the lengths, cuts and table leaves:
:func:`~fsstgpu.formats.raw_columns.read_fsst_chunk` with ``codes_in_place``), never copying
the codes, which the device gathers out of the uploaded chunks; each column's row groups are
then decoded in one batch through the staged path's checked decode
(:func:`fsstgpu.gpu.staged.decode_staged`: the file is untrusted, its code offsets checked by
the code-starts bitmap as a staged read checks them).

BENCHMARKS.md section 67 measured the bound it aims at: this machine's text (1.6 M rows, 408
MB of strings) reached device memory in 9.1 ms against pyarrow's zstd read + upload of 149-161.
Files with compressed fsst pages, or any layout the raw reader does not take, are not read
here (:func:`read_fsst_direct` returns None: read them with
:func:`~fsstgpu.formats.file_reads.read_table_device`).
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

__all__ = ["direct_plan", "read_fsst_direct"]

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
    cp = get_cupy()
    import cupyx

    main = stream if stream is not None else cp.cuda.get_current_stream()
    with Source(path) as source:
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
        # every column's codes laid out by one gather on the device, a row group after another
        codes, error = _gathered(cp, main, chunks, decoded, [w[0][0] for w in where])
        out, at = {}, 0
        for field, _, groups in plan:
            staged = []
            for _ in groups:
                carr = decoded.pop(0)[0]
                size = len(carr.codes)
                staged.append(StagedColumn(carr, codes=codes[at : at + size]))
                at += size
            [out[field.name]] = decode_staged(staged, main, joined=[len(staged)])
        check_gathered(error)  # (a run outside the chunks: refused, its zeros not returned)
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
    """One fsst column's row group decoded on the host from its chunks in ``pinned``: its
    CompressedStringArray (codes an unread placeholder), the codes' runs and the decoded
    codes' bytes."""
    raws = [memoryview(pinned[at : at + size]) for at, size in where]
    try:
        storage, runs, data = read_fsst_chunk(source.path, source.parquet_metadata, field,
                                              columns, k, threads=1, raws=raws,
                                              codes_in_place=True)
    except Unsupported as exc:  # (direct_plan took it: a page proved otherwise)
        raise RuntimeError(f"the direct reader met a layout it does not take: {exc}") from None
    carr = from_extension_array(pa.ExtensionArray.from_storage(field.type, storage))
    if int(runs[:, 1].sum()) != len(carr.codes):
        raise CorruptDataError(f"{source.path}: row group {k}, column {field.name!r}: the "
                               f"codes' runs hold {int(runs[:, 1].sum())} bytes, their "
                               f"offsets {len(carr.codes)}")
    return carr, runs, data


def job_segments(decoded: list, chunk_starts: list) -> tuple:
    """Every job's codes as segments for :func:`~fsstgpu.kernels.gather.gather_segments`,
    end to end in job order: ``(starts, out_offsets, extra)``. ``decoded``: each job's
    ``(column, runs, data)`` (its runs into its codes chunk, which starts at
    ``chunk_starts[j]`` in the uploaded chunks, or into ``data``, the bytes it had to decode:
    ``extra`` holds them all, job after job)."""
    starts, sizes, extras = [np.zeros(0, np.int64)], [np.zeros(0, np.int64)], []
    extra_at = 0
    for (_, runs, data), chunk_at in zip(decoded, chunk_starts, strict=True):
        at, n = runs[:, 0], runs[:, 1]
        starts.append(np.where(at >= 0, at + chunk_at, at - extra_at))
        sizes.append(n)
        if len(data):
            extras.append(data)
            extra_at += len(data)
    sizes = np.concatenate(sizes)
    offsets = np.zeros(len(sizes) + 1, np.int64)
    np.cumsum(sizes, out=offsets[1:])
    extra = np.concatenate(extras) if extras else np.zeros(0, np.uint8)
    return np.concatenate(starts), offsets, extra


def _gathered(cp, stream, chunks, decoded: list, chunk_starts: list):
    """Every job's codes on the device, end to end in job order, by one
    :func:`~fsstgpu.kernels.gather.gather_segments` of :func:`job_segments` (the decoded
    bytes uploaded in one copy). Returns ``(codes, error)``."""
    starts, offsets, extra = job_segments(decoded, chunk_starts)
    with on_stream(stream):
        d_extra = cp.asarray(extra)
    return gather_segments(chunks, d_extra, starts, offsets, stream=stream)
