"""A Parquet file's fsst columns read onto the GPU with no per-row work on the host (issue #24
item 2), for files whose fsst pages are stored uncompressed (``compress_file(...,
parquet_codec="none")``).

Each column's chunks are read into pinned memory and their page headers parsed and CRC-checked
on the host (:func:`~fsstgpu.formats.page_plan.plan_column`, a thread a column), uploaded in one
copy, and decoded on the device into the column's compressed arrays
(:func:`~fsstgpu.formats.page_columns.decode_pages`); its split points are planned there
(:func:`fsstgpu.gpu.encoded.device_column`, as for a column the GPU encoded) and its strings
decoded by the checked decode (the file is untrusted: each string's code start and end, and a
text column's bytes as UTF-8, checked as an uploaded column's are). A column it does not take
(compressed pages, codes written ``DELTA_BYTE_ARRAY``, another layout) is left to the caller:
:func:`~fsstgpu.formats.device_reader.read_to_device` reads it the usual way.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np

from fsstgpu.bitmaps import pack_bits
from fsstgpu.device import get_cupy
from fsstgpu.errors import CorruptDataError
from fsstgpu.formats.page_columns import decode_pages
from fsstgpu.formats.page_plan import plan_column, plannable
from fsstgpu.formats.raw_columns import Unsupported
from fsstgpu.formats.rowgroups import Source
from fsstgpu.gpu.decode import decode_async
from fsstgpu.gpu.encoded import device_column
from fsstgpu.kernels.loader import on_stream
from fsstgpu.parallel import usable_cores

__all__ = ["page_columns", "read_page_columns"]


def read_page_columns(path, *, stream=None) -> dict:
    """The fsst columns of the Parquet file at ``path`` that this reader takes, each decoded
    on the GPU (its row groups joined: one :class:`~fsstgpu.DeviceStringArray`, its chunks the
    row groups); the others are not in the result.

    Raises
    ------
    fsstgpu.CorruptDataError
        For damaged pages (named by file, row group, column and page) or codes that do not
        decode (the checked decode).

    Examples
    --------
    >>> import fsstgpu
    >>> from fsstgpu.formats.page_reader import read_page_columns
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     columns = read_page_columns("out.parquet")  # compress_file(..., parquet_codec="none")
    """
    with Source(path) as source:
        return page_columns(source, stream=stream)


def page_columns(source: Source, *, stream=None, workers: int | None = None) -> dict:
    """:func:`read_page_columns` of an open ``source`` (for a whole-file device read that reads
    its other columns itself).

    Examples
    --------
    >>> import fsstgpu
    >>> from fsstgpu.formats.page_reader import page_columns
    >>> from fsstgpu.formats.rowgroups import Source
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     with Source("out.parquet") as source:
    ...         columns = page_columns(source)
    """
    fields = plannable(source)
    if not fields:
        return {}
    cp = get_cupy()
    import cupyx

    main = stream if stream is not None else cp.cuda.get_current_stream()
    pinned = lambda n: cupyx.empty_pinned((n,), np.uint8)  # noqa: E731

    def plan(f):
        try:  # (the CRCs checked below, while the device decodes)
            return plan_column(source, f, check=False, allocate=pinned)
        except Unsupported:
            return None

    out = {}
    threads = workers or usable_cores()
    with ThreadPoolExecutor(min(len(fields), threads)) as planner, \
            ThreadPoolExecutor(threads) as crcs:
        for f, p in zip(fields, planner.map(plan, fields), strict=True):
            if p is None:
                continue
            checked = [crcs.submit(check) for check in p.crc_checks()]
            with on_stream(main):
                data = cp.empty(max(p.buffer.size, 1), cp.uint8)
                data[: p.buffer.size].set(p.buffer, stream=main)
            try:
                out[f.name] = _decoded(cp, p, data, main)
            except CorruptDataError:
                for done in checked:  # (a damaged page's CRC names it best)
                    done.result()
                raise
            for done in checked:
                done.result()
    source.check_unchanged()
    for name in out:  # (the footer's record of the chunks, as reads check it)
        for k in range(source.num_units):
            source.check_chunks(k, [name])
    return out


def _decoded(cp, plan, data, stream):
    """A planned column decoded on the device: its arrays from the pages, then its strings."""
    with on_stream(stream):
        col = decode_pages(plan, cp, data)
        n, ftype = plan.rows, plan.field.type
        out_offsets = cp.zeros(n + 1, cp.int64)
        cp.cumsum(col.lengths, dtype=cp.int64, out=out_offsets[1:])
        validity = pack_bits(col.valid, cp) if col.null_count else None
        cuts = tuple(cp.asarray(c) for c in col.cuts)
        dev = device_column(cp, col.tables, ftype.value_type, n, col.codes, col.code_offsets,
                            out_offsets, col.lengths, validity, col.null_count,
                            col.chunk_lengths, ftype.split_size, cuts,
                            block_starts=col.block_starts, out_offsets=out_offsets,
                            checked=True)
    try:
        return decode_async(dev, stream).check()
    except CorruptDataError as exc:
        raise CorruptDataError(f"{plan.where}: {exc}") from None
