"""Raw fsst column chunks (:mod:`fsstgpu.formats.raw_chunks`) decoded on the GPU: pages
decompressed, codes found and joined, split points finished, one decode batch.

One call takes every raw (row group, column) chunk of a read: the chunks' bytes cross the bus in
one copy from pinned memory; nvCOMP decompresses every zstd page in one batched call
(:mod:`fsstgpu.gpu.nvcomp`); one warp a page decodes the codes' lengths and finds the page's code
bytes (:mod:`fsstgpu.kernels.dlba_pages`); a prefix sum gives every string's code offset. The
host then needs only the offsets at the rows where splits start, and at the strings holding cuts:
one small copy back (the call's one wait), after which the split points are assembled as a file
read assembles them (``fsstgpu.splits.assemble_splits``), the batch laid out
(:class:`fsstgpu.gpu.layout.HostBatch`) and the pages' code bytes copied into its code stream.
What the decode kernel checks (each split fills exactly its output) it checks here too.

:func:`raw_to_host` does the same with the CPU twins (pyarrow's zstd, the pages' twin) and
returns CompressedStringArrays: what CI tests, against pyarrow's reading of the same file.

>>> from fsstgpu.formats.raw_device import PAGE_ERRORS
>>> PAGE_ERRORS[64]
'nvCOMP could not decompress it'
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from fsstgpu.arrays import CompressedStringArray
from fsstgpu.checks import length_sums
from fsstgpu.device import get_cupy
from fsstgpu.errors import CorruptDataError
from fsstgpu.formats.arrow_read import absolute_cuts, gather_bytes
from fsstgpu.formats.raw_chunks import RawChunk
from fsstgpu.gpu import nvcomp
from fsstgpu.gpu.arrays import DeviceCompressedStringArray
from fsstgpu.gpu.layout import HostBatch
from fsstgpu.kernels.dlba_pages import (
    ERRORS,
    SLACK,
    dlba_gather,
    dlba_lengths,
    dlba_pages_cpu,
    values_gather,
)
from fsstgpu.native import parquet as pages_native
from fsstgpu.native.parquet import (
    COMPRESSED_SIZE,
    DEF_LEVEL_BYTES,
    IS_COMPRESSED,
    PAYLOAD_OFFSET,
    REP_LEVEL_BYTES,
    TYPE,
    UNCOMPRESSED_SIZE,
)
from fsstgpu.splits import assemble_splits

__all__ = ["PAGE_ERRORS", "raw_to_device", "raw_to_host"]

#: a page's error bits: the pages kernel's, and the decompression's
PAGE_ERRORS = {**ERRORS, 64: "nvCOMP could not decompress it",
               128: "it decompressed to another size than its header gives"}
_ALIGN = 16


class _Pages:
    """Every data page of the chunks, as one table: where its bytes to decompress lie in the
    upload buffer, how many, what they decompress to, whether zstd made them."""

    def __init__(self, chunks: list[RawChunk]):
        tables = [c.pages for c in chunks]
        pages = np.concatenate(tables) if tables else np.zeros((0, 13), np.int64)
        self.chunk_of = np.repeat(np.arange(len(chunks)), [len(t) for t in tables])
        self.first = np.concatenate([[0], np.cumsum([len(t) for t in tables])])
        v2 = pages[:, TYPE] == pages_native.DATA_PAGE_V2
        # v2: the levels are stored plainly before the (compressed) values
        levels = np.where(v2, pages[:, DEF_LEVEL_BYTES] + pages[:, REP_LEVEL_BYTES], 0)
        base = np.array([c.offset for c in chunks], np.int64)[self.chunk_of]
        self.src = base + pages[:, PAYLOAD_OFFSET] + levels
        self.src_size = pages[:, COMPRESSED_SIZE] - levels
        self.out_size = pages[:, UNCOMPRESSED_SIZE] - levels
        zstd_chunk = np.array([c.zstd for c in chunks], bool)[self.chunk_of]
        self.compressed = zstd_chunk & (~v2 | (pages[:, IS_COMPRESSED] != 0))
        if np.any(self.src_size < 0) or np.any(self.out_size < 0) or np.any(
                ~self.compressed & (self.src_size != self.out_size)):
            bad = int(np.flatnonzero((self.src_size < 0) | (self.out_size < 0) | (
                ~self.compressed & (self.src_size != self.out_size)))[0])
            raise CorruptDataError(f"{self.where(chunks, bad)}: its sizes do not fit its levels "
                                   "or codec")
        self.has_levels = np.array([c.has_levels for c in chunks], bool)[self.chunk_of] & ~v2
        self.expected = np.concatenate([c.expected for c in chunks]) if chunks else \
            np.zeros(0, np.int64)
        self.value_base = np.concatenate([[0], np.cumsum(self.expected)])
        self.n = len(pages)

    def where(self, chunks, p: int) -> str:
        c = int(self.chunk_of[p])
        return f"{chunks[c].label}: codes page {p - int(self.first[c])}"


def _needed(chunk: RawChunk) -> np.ndarray:
    """The value indices (within the chunk) whose code offsets finish its plan: the split rows',
    the cut strings' starts and ends, and the total."""
    rank = chunk.valid_rank
    return np.concatenate([rank[chunk.split_rows], rank[chunk.cut_rows],
                           rank[chunk.cut_rows] + 1, rank[-1:]])


class _Planned:
    """A chunk's plan finished from its code offsets: what :class:`HostBatch` reads of a
    column (its codes stay on the device: ``codes`` has their count and no bytes)."""

    packed_lengths = None

    def __init__(self, chunk: RawChunk, at: np.ndarray):
        ns, nc = len(chunk.split_rows), len(chunk.cut_rows)
        ncodes = int(at[-1])
        start, end = at[ns : ns + nc], at[ns + nc : ns + 2 * nc]
        total, _ = length_sums(chunk.lengths, ncodes)  # no more bytes than the codes can make
        cuts = absolute_cuts(chunk.cut_pairs, chunk.cut_rows, start, end - start,
                             chunk.lengths, chunk.out_offsets)
        if ncodes == 0:
            self.split_codes, self.split_out = np.zeros(1, np.int64), np.zeros(1, np.int64)
            self.split_table = np.zeros(0, np.uint16)
        else:
            self.split_codes, self.split_out, self.split_table = assemble_splits(
                chunk.block_starts, chunk.split_rows, at[:ns],
                chunk.out_offsets[chunk.split_rows], cuts, ncodes, total)
        self.type = chunk.ftype.value_type
        self.length, self.null_count = chunk.length, chunk.null_count
        self.tables, self.block_starts = chunk.tables, chunk.block_starts
        self.lengths, self.validity = chunk.lengths, chunk.validity
        self.split_size = chunk.ftype.split_size
        # one chunk, as a read row group's column gives from_extension_array
        self.chunk_lengths = np.array([chunk.length], np.int64)
        self.uncompressed_bytes = total
        self.codes = np.broadcast_to(np.uint8(0), (ncodes,))  # a count, no bytes

    def validate(self, full: bool = False) -> None:
        """Checked when made (:func:`length_sums`, the cuts, the split assembly)."""


def _raise_page_errors(chunks, pages: _Pages, err: np.ndarray) -> None:
    bad = np.flatnonzero(err)
    if len(bad):
        words = [f"{pages.where(chunks, int(p))}: " + "; ".join(
            text for bit, text in PAGE_ERRORS.items() if int(err[p]) & bit) for p in bad[:8]]
        more = f" (and {len(bad) - 8} more pages)" if len(bad) > 8 else ""
        raise CorruptDataError("; ".join(words) + more)


def raw_to_device(chunks: list[RawChunk], upload: np.ndarray, *,
                  stream=None) -> DeviceCompressedStringArray:
    """The chunks as one device batch, ready for :func:`fsstgpu.decompress_device` (one
    DeviceStringArray per chunk, in order).

    Parameters
    ----------
    chunks : list of RawChunk
    upload : numpy.ndarray of uint8
        The buffer every paged chunk was read into (pinned memory: its copy is asynchronous),
        with :data:`~fsstgpu.kernels.dlba_pages.SLACK` bytes after the last chunk.
    stream : cupy.cuda.Stream, optional

    Raises
    ------
    CorruptDataError
        Naming the chunk and page whose codes do not decode, or whose plan the codes refute.
    """
    cp = get_cupy()
    stream = stream or cp.cuda.get_current_stream()
    at, pass_ = _offsets_at(cp, chunks, upload, stream)
    planned = []
    for k, chunk in enumerate(chunks):
        try:
            planned.append(_Planned(chunk, at[k]))
        except CorruptDataError as exc:
            raise CorruptDataError(f"{chunk.label}: {exc}") from None
    dev = DeviceCompressedStringArray(HostBatch(planned), stream, upload_codes=False)
    code_start = np.array([col.code_start for col in dev.layout.columns], np.int64)
    with stream:
        if pass_ is not None:  # each page's code bytes to where its chunk's codes start
            pages, page_ptr, in_page, counts, err, dev_counts = pass_
            within = np.zeros(pages.n, np.int64)
            for c in range(len(pages.first) - 1):
                lo, hi = int(pages.first[c]), int(pages.first[c + 1])
                within[lo:hi] = np.cumsum(counts[lo:hi]) - counts[lo:hi]
            base = code_start[[k for k, ch in enumerate(chunks) if ch.pages is not None]]
            dlba_gather(page_ptr, in_page, dev_counts,
                        cp.asarray(base[pages.chunk_of] + within), err, dev.codes,
                        stream=stream)
        coded = [k for k, ch in enumerate(chunks) if ch.pages is None and len(ch.values)]
        if coded:  # dictionary-coded strings: their codes gathered from the dictionaries
            dict_at = np.cumsum([0] + [len(chunks[k].dictionary) for k in coded])
            src = np.concatenate([chunks[k].dictionary for k in coded] + [np.zeros(1, np.uint8)])
            src_at = np.concatenate([chunks[k].value_src + dict_at[j]
                                     for j, k in enumerate(coded)])
            dst_at = np.concatenate([code_start[k] + np.cumsum(chunks[k].values)
                                     - chunks[k].values for k in coded])
            size = np.concatenate([chunks[k].values for k in coded])
            values_gather(cp.asarray(src), cp.asarray(src_at), cp.asarray(dst_at),
                          cp.asarray(size), dev.codes, stream=stream)
    return dev


def _offsets_at(cp, chunks: list[RawChunk], upload: np.ndarray, stream):
    """For each chunk, the code offsets its plan needs (:func:`_needed`): a dictionary-coded
    chunk's from its host values, a paged chunk's from its pages decoded on the GPU (one copy
    back, the call's one wait). Returns them and the paged chunks' device state for the
    gather (None without paged chunks)."""
    at: dict[int, np.ndarray] = {}
    for k, chunk in enumerate(chunks):
        if chunk.pages is None:
            offsets = np.zeros(len(chunk.values) + 1, np.int64)
            np.cumsum(chunk.values, out=offsets[1:])
            at[k] = offsets[_needed(chunk)]
    paged = [k for k, chunk in enumerate(chunks) if chunk.pages is not None]
    if not paged:
        return at, None
    pchunks = [chunks[k] for k in paged]
    pages = _Pages(pchunks)
    with stream:
        raw = cp.empty(len(upload), cp.uint8)
        raw.set(upload, stream=stream)
        page_ptr, page_size, statuses, sizes = _decompressed(cp, raw, pages, stream)
        values = cp.zeros(max(int(pages.value_base[-1]), 1), cp.int64)
        meta = cp.asarray(np.stack([pages.expected, pages.value_base[:-1]]))
        in_page, code_count, err = dlba_lengths(
            page_ptr, page_size, cp.asarray(pages.has_levels.astype(np.uint8)), meta[0],
            meta[1], values, stream=stream)
        if statuses is not None:  # a page nvCOMP failed is named for that alone
            failed = ((statuses != 0).astype(cp.int32) * 64
                      | (sizes.astype(cp.int64) != page_size).astype(cp.int32) * 128)
            err = cp.where(failed != 0, failed, err)
        offsets = cp.zeros(len(values) + 1, cp.int64)
        cp.cumsum(values, out=offsets[1:])
        value_first = pages.value_base[pages.first[:-1]]
        needed = [_needed(c) for c in pchunks]
        index = np.concatenate([value_first[j] + idx for j, idx in enumerate(needed)]
                               + [value_first])
        back = cp.concatenate([err.astype(cp.int64), code_count,
                               offsets[cp.asarray(index)]]).get()
    n = pages.n
    _raise_page_errors(pchunks, pages, back[:n])
    counts, found = back[n : 2 * n], back[2 * n :]
    firsts = found[len(found) - len(pchunks):]
    pos = 0
    for j, (k, idx) in enumerate(zip(paged, needed, strict=True)):
        at[k] = found[pos : pos + len(idx)] - firsts[j]
        pos += len(idx)
        if at[k][-1] != counts[pages.first[j] : pages.first[j + 1]].sum():
            raise CorruptDataError(f"{chunks[k].label}: the codes' lengths and pages disagree")
    pages.raw = raw  # alive until the gather has read the pages
    return at, (pages, page_ptr, in_page, counts, err, code_count)


def _decompressed(cp, raw, pages: _Pages, stream):
    """Each page's bytes to decode, on the device: zstd pages decompressed by nvCOMP into an
    arena (each from a 16-byte boundary, :data:`SLACK` bytes apart), the others where they lie
    in ``raw``. Returns the pages' addresses and sizes, and nvCOMP's statuses and sizes (None
    without zstd pages)."""
    ptr = raw.data.ptr + pages.src
    size = pages.out_size.copy()
    statuses = sizes = None
    z = np.flatnonzero(pages.compressed)
    if len(z):
        slots = -(-pages.out_size[z] // _ALIGN) * _ALIGN + _ALIGN * -(-SLACK // _ALIGN)
        at = np.concatenate([[0], np.cumsum(slots)])
        arena = cp.empty(int(at[-1]), cp.uint8)
        src = pages.src[z]
        src_ptr = raw.data.ptr + src
        align_in = nvcomp.zstd_alignments()[0]
        if np.any(src_ptr % align_in):  # nvCOMP asks aligned inputs: copy them to a staging
            src_slots = -(-pages.src_size[z] // _ALIGN) * _ALIGN
            src_at = np.concatenate([[0], np.cumsum(src_slots)])
            staging = cp.empty(max(int(src_at[-1]), 1), cp.uint8)
            zeros = cp.zeros(len(z), cp.int32)
            dlba_gather(cp.asarray(src_ptr.astype(np.uint64)), cp.zeros(len(z), cp.int64),
                        cp.asarray(pages.src_size[z]), cp.asarray(src_at[:-1]), zeros,
                        staging, stream=stream)
            src_ptr = staging.data.ptr + src_at[:-1]
            pages.staging = staging  # alive until the stream has decompressed it
        out_ptr = arena.data.ptr + at[:-1]
        args = cp.asarray(np.stack([src_ptr, pages.src_size[z], out_ptr,
                                    pages.out_size[z]]).astype(np.uint64))
        st, sz = nvcomp.zstd_decompress(cp, args[0], args[1], args[2], args[3],
                                        max_chunk=int(pages.out_size[z].max()),
                                        total=int(pages.out_size[z].sum()), stream=stream)
        ptr[z] = out_ptr
        pages.arena = arena
        statuses = cp.zeros(pages.n, cp.int32)
        sizes = cp.asarray(size.astype(np.uint64))
        zi = cp.asarray(z)
        statuses[zi] = st
        sizes[zi] = sz
    return (cp.asarray(ptr.astype(np.uint64)), cp.asarray(size), statuses, sizes)


def raw_to_host(chunks: list[RawChunk], upload: np.ndarray) -> list[CompressedStringArray]:
    """:func:`raw_to_device`'s twin on the CPU (pyarrow's zstd, the pages kernels' twin): the
    CompressedStringArrays a pyarrow read of the same chunks gives, or the same errors."""
    pchunks = [c for c in chunks if c.pages is not None]
    paged = {}
    if pchunks:
        pages = _Pages(pchunks)
        codec = pa.Codec("zstd")
        data, err = [], np.zeros(pages.n, np.int64)
        for p in range(pages.n):
            src = upload[pages.src[p] : pages.src[p] + pages.src_size[p]]
            if not pages.compressed[p]:
                data.append(src)
                continue
            try:
                out = np.frombuffer(codec.decompress(src, int(pages.out_size[p])), np.uint8)
            except (pa.ArrowException, ValueError):
                out = np.zeros(0, np.uint8)
                err[p] |= 64
            if len(out) != pages.out_size[p]:
                err[p] |= 128
            data.append(out)
        values, starts, counts, bits, _ = dlba_pages_cpu(
            [d if not err[p] else np.zeros(0, np.uint8) for p, d in enumerate(data)],
            pages.has_levels, pages.expected)
        err |= np.where(err == 0, bits, 0)
        _raise_page_errors(pchunks, pages, err)
        for j, chunk in enumerate(pchunks):
            lo, hi = int(pages.first[j]), int(pages.first[j + 1])
            codes = np.concatenate([data[p][starts[p] : starts[p] + counts[p]]
                                    for p in range(lo, hi)] or [np.zeros(0, np.uint8)])
            paged[id(chunk)] = (values[int(pages.value_base[lo]) : int(pages.value_base[hi])],
                                codes)
    out = []
    for chunk in chunks:
        if chunk.pages is None:
            vals = chunk.values
            codes = gather_bytes(chunk.dictionary, chunk.value_src, vals)
        else:
            vals, codes = paged[id(chunk)]
        offsets = np.zeros(len(vals) + 1, np.int64)
        np.cumsum(vals, out=offsets[1:])
        try:
            planned = _Planned(chunk, offsets[_needed(chunk)])
        except CorruptDataError as exc:
            raise CorruptDataError(f"{chunk.label}: {exc}") from None
        code_offsets = np.zeros(chunk.length + 1, np.int64)
        code_offsets[1:] = offsets[chunk.valid_rank[1:]]
        carr = CompressedStringArray(
            type=planned.type, length=chunk.length, tables=chunk.tables,
            block_starts=chunk.block_starts, codes=codes, code_offsets=code_offsets,
            lengths=chunk.lengths, validity=chunk.validity, null_count=chunk.null_count,
            split_size=planned.split_size, split_codes=planned.split_codes,
            split_out=planned.split_out, split_table=planned.split_table,
            chunk_lengths=planned.chunk_lengths)
        carr.validate(full=False)
        out.append(carr)
    return out
