"""A Parquet file's fsst columns read onto the GPU with no per-row work on the host (issue #24
item 2), for files whose fsst pages are stored uncompressed (``compress_file(...,
parquet_codec="none")``).

Each column's chunks are read through pinned memory, their page headers parsed, their
dictionary pages read and their CRCs checked on the host (in C++, a chunk a thread), and each
window of them is uploaded as soon as it is (:func:`~fsstgpu.formats.page_plan.plan_column`
with a sink: host memory holds two windows of at most 32 MiB a column and what its
dictionaries say, not the file); the column is then decoded on the device
into its compressed arrays (:func:`~fsstgpu.formats.page_columns.decode_pages`),
its split points planned there (:func:`fsstgpu.gpu.encoded.device_column`, as for a column
the GPU encoded) and its strings decoded by the checked decode (the file is untrusted: each
string's code start and end, and a text column's bytes as UTF-8, checked as an uploaded
column's are). A column it does not take (compressed pages, another layout) is left to the
caller: :func:`~fsstgpu.formats.device_reader.read_to_device` reads it the usual way. Each
column is read on a worker thread with a stream of its own (``workers`` of them at a time: one
by default, measured faster than five), its stream starting after what the caller's stream
holds, and the caller's stream waits for it.

Measured on an H100 (BENCHMARKS.md section 73), ``read_table_device`` with it read this
machine's text 1.30x and dbtext 1.02x faster than the usual path on the same files: its host
part is O(pages and dictionary entries) as designed, the planning in C++ on every core, but
each column's decode is still ~9 ms of CuPy calls whatever its rows. ``read_to_device`` takes
it only with :data:`~fsstgpu.formats.device_reader.PAGE_READS` on (off until the whole GPU
suite has run with it on).
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
    >>> import os, tempfile, fsstgpu, pyarrow as pa, pyarrow.parquet as pq
    >>> from fsstgpu.formats import compress_file
    >>> from fsstgpu.formats.page_reader import read_page_columns
    >>> d = tempfile.mkdtemp()
    >>> pq.write_table(pa.table({"s": ["ab", None, "cd"]}), os.path.join(d, "s.parquet"))
    >>> path = os.path.join(d, "f.parquet")
    >>> _ = compress_file(os.path.join(d, "s.parquet"), path, parquet_codec="none")
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     columns = read_page_columns(path)
    ...     assert columns["s"].to_arrow().to_pylist() == ["ab", None, "cd"]
    """
    with Source(path) as source:
        return page_columns(source, stream=stream)


def page_columns(source: Source, *, stream=None, workers: int | None = None) -> dict:
    """:func:`read_page_columns` of an open ``source`` (for a whole-file device read that reads
    its other columns itself), ``workers`` columns at a time (each a thread and a stream; one
    by default: on an H100 host five took 203 ms where one took 176 for this machine's text,
    session 84, the columns' CuPy calls and Python waiting on each other's GIL).

    Examples
    --------
    >>> import os, tempfile, fsstgpu, pyarrow as pa, pyarrow.parquet as pq
    >>> from fsstgpu.formats import compress_file
    >>> from fsstgpu.formats.page_reader import page_columns
    >>> from fsstgpu.formats.rowgroups import Source
    >>> d = tempfile.mkdtemp()
    >>> pq.write_table(pa.table({"s": ["x", "y"], "n": [1, 2]}), os.path.join(d, "s.parquet"))
    >>> path = os.path.join(d, "f.parquet")
    >>> _ = compress_file(os.path.join(d, "s.parquet"), path, parquet_codec="none")
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     with Source(path) as source:
    ...         columns = page_columns(source)  # (its fsst columns only)
    ...     assert list(columns) == ["s"]
    """
    fields = plannable(source)
    if not fields:
        return {}
    cp = get_cupy()
    import cupyx

    main = stream if stream is not None else cp.cuda.get_current_stream()
    device = cp.cuda.Device().id
    pinned = lambda n: cupyx.empty_pinned((n,), np.uint8)  # noqa: E731
    begun = main.record()  # (what the caller queued before: the columns' streams wait for it)

    def read(f):  # a thread and a stream a column: its chunks read, checked and uploaded as
        with cp.cuda.Device(device):  # they come, then its pages and strings decoded
            own = cp.cuda.Stream(non_blocking=True)
            own.wait_event(begun)
            upload = _Upload(cp, own)
            try:
                plan = plan_column(source, f, allocate=pinned, sink=upload)
            except Unsupported:
                return None
            return _decoded(cp, plan, upload.device_buffer(), own), own.record()

    out = {}
    with ThreadPoolExecutor(max(1, min(len(fields), workers or 1))) as readers:
        for f, got in zip(fields, readers.map(read, fields), strict=True):
            if got is not None:
                out[f.name] = got[0]
                main.wait_event(got[1])  # (the column is the caller's stream's from here)
    source.check_unchanged()
    for name in out:  # (the footer's record of the chunks, as reads check it)
        for k in range(source.num_units):
            source.check_chunks(k, [name])
    return out


class _Upload:
    """A column's chunks copied into one device buffer as the planning thread reads them, a
    window at a time (:func:`~fsstgpu.formats.page_plan.plan_column`'s ``sink``): each copy
    asynchronous on ``stream``, from pinned staging that is reused once the copy is done (on
    the reading thread, whose device is the column's)."""

    def __init__(self, cp, stream):
        self.cp, self.stream = cp, stream
        self.data = None

    def __call__(self, at: int, chunk, total: int):
        cp = self.cp
        with on_stream(self.stream):
            if self.data is None:
                self.data = cp.empty(max(total, 1), cp.uint8)
            self.data[at : at + chunk.size].set(chunk, stream=self.stream)
            done = self.stream.record()
        return done.synchronize

    def device_buffer(self):
        """The column's buffer (one byte for a column without bytes)."""
        if self.data is None:
            with on_stream(self.stream):
                self.data = self.cp.zeros(1, self.cp.uint8)
        return self.data


def _decoded(cp, plan, data, stream):
    """A planned column decoded on the device: its arrays from the pages, then its strings."""
    with on_stream(stream):
        col = decode_pages(plan, cp, data)
        n, ftype = plan.rows, plan.field.type
        validity = pack_bits(col.valid, cp) if col.null_count else None
        cuts = tuple(cp.asarray(c) for c in col.cuts)
        dev = device_column(cp, col.tables, ftype.value_type, n, col.codes, col.code_offsets,
                            col.out_offsets, col.lengths, validity, col.null_count,
                            col.chunk_lengths, ftype.split_size, cuts, total=col.total,
                            most=col.most, block_starts=col.block_starts,
                            out_offsets=col.out_offsets, checked=True)
    try:
        return decode_async(dev, stream).check()
    except CorruptDataError as exc:
        raise CorruptDataError(f"{plan.where}: {exc}") from None
