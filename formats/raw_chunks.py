"""An fsst column's row group read for the GPU without decoding its codes on the host.

pyarrow reads every leaf of an fsst column's storage and decodes every page on the host: the codes
leaf (nearly all of a file's bytes) is decompressed, split into strings and copied into an Arrow
array, only for the GPU path to upload it again. Here (issue #24, item 2) the codes leaf's column
chunk is read as it lies in the file, into memory the GPU can copy from, its page headers parsed
(``native.page_headers``), and everything else the decode needs planned from the three small
leaves (``lengths``, ``cuts``, ``table``), which pyarrow still reads: the blocks and tables, the
output offsets, the rows where splits start and the cuts inside long strings. What the host cannot
know without the codes' pages, each string's code offset, the GPU finds
(:mod:`fsstgpu.formats.raw_device`); the split points are then finished from the few offsets
their rows need.

pyarrow refuses to read part of an extension type's storage, so the small leaves are read through
:func:`storage_view`: the file's footer with its row groups but without the stored Arrow schema.

A chunk this path does not take (not version 4, codes dictionary-encoded, a codec other than zstd
or none, a page without a CRC, nvCOMP missing for zstd pages) is read as before, through pyarrow:
:func:`raw_layout` says which chunks qualify from the footer alone, and a chunk whose pages then
disagree with its footer is read through pyarrow on the same thread.

>>> from fsstgpu.formats.raw_chunks import RAW_CODECS
>>> sorted(RAW_CODECS)
['UNCOMPRESSED', 'ZSTD']
"""

from __future__ import annotations

import os
import threading
import zlib
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from fsstgpu.arrow_layout import check_arrow, slice_bitmap
from fsstgpu.checks import length_sums
from fsstgpu.errors import CorruptDataError
from fsstgpu.formats.arrow import is_fsst_type
from fsstgpu.formats.arrow_read import (
    EXTENSION_NAME,
    cut_pairs,
    table_runs,
    tables_in_data,
    unpack_values,
)
from fsstgpu.kernels.dlba_pages import SLACK
from fsstgpu.native import parquet as pages_native
from fsstgpu.splits import rule2_rows

__all__ = ["RAW_CODECS", "RawChunk", "RawReader", "raw_layout", "read_raw_chunk",
           "storage_view"]

#: the codecs of codes pages the GPU undoes (zstd through nvCOMP)
RAW_CODECS = frozenset({"ZSTD", "UNCOMPRESSED"})
#: where a chunk starts in the shared upload buffer: a multiple of this
ALIGN = 16
_SMALL = ("lengths", "cuts", "table")
_TABLE_TYPE = pa.dictionary(pa.uint16(), pa.binary())


def storage_view(metadata: pq.FileMetaData, schema: pa.Schema) -> pq.FileMetaData | None:
    """The file's footer (``metadata``) with its row groups but without the Arrow schema stored
    in it, so that pyarrow reads the leaves of an fsst column's storage one by one (it refuses
    part of an extension type). Built from an empty file of the storage types, whose Parquet
    schema must equal the file's; None when it does not (the caller reads through pyarrow)."""
    storage = pa.schema([f.with_type(f.type.storage_type) if is_fsst_type(f.type) else f
                         for f in schema])
    sink = pa.BufferOutputStream()
    try:
        pq.ParquetWriter(sink, storage, store_schema=False).close()
        view = pq.read_metadata(pa.BufferReader(sink.getvalue()))
        if not view.schema.equals(metadata.schema):
            return None
        view.append_row_groups(metadata)
    except (pa.ArrowException, ValueError, TypeError):
        return None
    return view


def raw_layout(metadata: pq.FileMetaData, schema: pa.Schema, *, zstd: bool) -> dict:
    """Which (row group, column) codes leaves qualify, from the footer: ``{(k, name): (start,
    size, has_levels, zstd, dictionary)}``, the codes leaf's byte range, whether its v1 pages
    hold definition levels, whether its pages are zstd (else uncompressed), and whether it is
    dictionary-coded (then pyarrow reads its indices and dictionary, and the range is empty: the
    GPU gathers each string's codes). ``zstd``: whether zstd pages can be undone (nvCOMP
    loaded)."""
    names = {f.name for f in schema if is_fsst_type(f.type) and f.type.version == 4}
    if not names:
        return {}
    leaves = {}
    for j in range(metadata.num_columns):
        path = metadata.schema.column(j).path
        head, _, leaf = path.rpartition(".")
        if head in names:
            leaves.setdefault(head, {})[leaf] = j
    codecs = RAW_CODECS if zstd else {"UNCOMPRESSED"}
    out = {}
    for name in names:
        where = leaves.get(name, {})
        if set(where) != {"codes", *_SMALL}:
            continue
        for k in range(metadata.num_row_groups):
            col = metadata.row_group(k).column(where["codes"])
            levels = metadata.schema.column(where["codes"]).max_definition_level > 0
            if col.has_dictionary_page:  # pyarrow reads it as indices and a dictionary
                out[(k, name)] = (0, 0, levels, False, True)
                continue
            if (col.compression not in codecs
                    or "DELTA_LENGTH_BYTE_ARRAY" not in col.encodings
                    or any("DICTIONARY" in e for e in col.encodings)):
                continue
            out[(k, name)] = (int(col.data_page_offset), int(col.total_compressed_size), levels,
                              col.compression == "ZSTD", False)
    return out


@dataclass
class RawChunk:
    """One (row group, fsst column) planned on the host, its codes' pages not yet decoded.

    Attributes
    ----------
    label : str
        ``"row group K, column 'NAME'"``, for messages.
    ftype : FsstType
    length, null_count : int
    validity : numpy.ndarray of uint8 or None
    tables : tuple of SymbolTable
    block_starts, lengths, out_offsets : numpy.ndarray of int64
    split_rows : numpy.ndarray of int64
        Rule 1 and 2 rows (``fsstgpu.splits``): block starts, then the rule 2 rows.
    cut_pairs, cut_rows : numpy.ndarray of int64
        Cuts inside long strings (pairs within their strings) and their rows.
    valid_rank : numpy.ndarray of int64
        For each row, the non-null strings before it (``length + 1`` entries): row ``r``'s
        codes are value ``valid_rank[r]`` of the codes leaf.
    pages : numpy.ndarray of int64
        The codes leaf's data pages (``native.page_headers``' columns), payload offsets made
        relative to the chunk's first byte.
    expected : numpy.ndarray of int64
        Each data page's non-null strings (the values its DELTA_BINARY_PACKED header must count).
    buffer : numpy.ndarray of uint8
        The chunk's bytes as read (a slice of the shared upload buffer).
    offset : int
        Where ``buffer`` starts in the shared upload buffer.
    has_levels : bool
        Whether a v1 data page starts with definition levels (the leaf may be null).
    zstd : bool
        Whether the pages are zstd (else uncompressed).
    dictionary : numpy.ndarray of uint8 or None
        A dictionary-coded leaf's dictionary bytes (``pages`` and ``expected`` are then None):
        value ``i`` (the ``i``-th non-null string) is ``dictionary[value_src[i]:][:values[i]]``.
    value_src, values : numpy.ndarray of int64 or None
    """

    label: str
    ftype: object
    length: int
    null_count: int
    validity: np.ndarray | None
    tables: tuple
    block_starts: np.ndarray
    lengths: np.ndarray
    out_offsets: np.ndarray
    split_rows: np.ndarray
    cut_pairs: np.ndarray
    cut_rows: np.ndarray
    valid_rank: np.ndarray
    pages: np.ndarray
    expected: np.ndarray
    buffer: np.ndarray
    offset: int
    has_levels: bool
    zstd: bool
    dictionary: np.ndarray | None = None
    value_src: np.ndarray | None = None
    values: np.ndarray | None = None


def read_raw_chunk(fd: int, view: pq.ParquetFile, k: int, name: str, ftype, byte_range,
                   buffer: np.ndarray, offset: int, has_levels: bool, zstd: bool) -> RawChunk:
    """Read row group ``k`` of fsst column ``name`` for the GPU: the small leaves through
    ``view`` (a ParquetFile on :func:`storage_view`), the codes leaf's bytes ``byte_range`` into
    ``buffer`` (from ``os.preadv`` on ``fd``), and the host's share of the plan.

    Raises
    ------
    CorruptDataError
        When the leaves disagree with each other or with the footer, or a page header is
        damaged (the message names the page).
    NotImplementedError
        When the pages are of a kind :func:`raw_layout` could not see (a page without a CRC,
        another encoding): the caller reads the chunk through pyarrow.
    """
    label = f"row group {k}, column {name!r}"
    start, size = byte_range
    if size == 0:  # dictionary-coded: indices and dictionary from pyarrow
        return _dictionary_chunk(view, k, name, ftype, label, has_levels)
    if size > len(buffer):
        raise CorruptDataError(f"{label}: the codes' column chunk has {size} bytes, more than "
                               "planned")
    got = os.preadv(fd, [memoryview(buffer[:size])], start)
    if got != size:
        raise CorruptDataError(f"{label}: the file ends inside the codes' column chunk "
                               f"({got} of {size} bytes)")
    small = _read_leaves(view, k, name, _SMALL, label)
    n = len(small)
    pages = _data_pages(pages_native.page_headers(buffer[:size], 0, size), n, label)
    _check_crcs(buffer, pages, label)
    if zstd:
        _check_frames(buffer, pages, label)
    # the codes are at most the pages' bytes: what the lengths may add up to is bounded first
    plan = _plan(ftype, small, label, max_codes=int(pages[:, _USIZE].sum()))
    valid_rank = plan.pop("valid_rank")
    rows_at = np.concatenate([[0], np.cumsum(pages[:, NUM_ROWS])])
    expected = valid_rank[rows_at[1:]] - valid_rank[rows_at[:-1]]
    return RawChunk(label=label, ftype=ftype, valid_rank=valid_rank, pages=pages,
                    expected=expected, buffer=buffer[:size], offset=offset,
                    has_levels=has_levels, zstd=zstd, **plan)


def _read_leaves(view: pq.ParquetFile, k: int, name: str, leaves, label: str) -> pa.StructArray:
    """Leaves ``leaves`` of fsst column ``name`` in row group ``k``, as one struct array with
    the footer's rows."""
    col = view.read_row_group(k, columns=[f"{name}.{leaf}" for leaf in leaves],
                              use_threads=False).column(0)
    col = col.chunk(0) if col.num_chunks == 1 else pa.concat_arrays(col.chunks)
    if len(col) != view.metadata.row_group(k).num_rows:
        raise CorruptDataError(f"{label}: {len(col)} rows read, where the footer has "
                               f"{view.metadata.row_group(k).num_rows}")
    return col


def _dictionary_chunk(view, k: int, name: str, ftype, label: str, has_levels: bool) -> RawChunk:
    """A chunk whose codes are dictionary-coded: pyarrow reads its indices and dictionary (no
    string's codes are copied on the host); each string's code length and its place in the
    dictionary are all the GPU needs to gather them."""
    leaves = _read_leaves(view, k, name, _SMALL + ("codes",), label)
    codes = leaves.field("codes")  # (the struct has the file's field order)
    small = pa.StructArray.from_arrays([leaves.field(leaf) for leaf in _SMALL], _SMALL,
                                       mask=leaves.is_null() if leaves.null_count else None)
    if not pa.types.is_dictionary(codes.type):
        raise NotImplementedError(f"{label}: codes not read as a dictionary")
    n = len(leaves)
    dictionary = codes.dictionary
    try:
        check_arrow(dictionary, f"{label}: the codes' dictionary")
    except CorruptDataError as exc:
        raise CorruptDataError(str(exc)) from None
    valid = (leaves.is_valid().to_numpy(zero_copy_only=False) if leaves.null_count
             else None)
    if codes.null_count != leaves.null_count or (
            valid is not None and np.any(valid & ~codes.is_valid().to_numpy(
                zero_copy_only=False))):
        raise CorruptDataError(f"{label}: {EXTENSION_NAME} storage: a valid string has a "
                               "null 'codes' entry")
    d_offsets = np.frombuffer(dictionary.buffers()[1], np.int32 if dictionary.type == pa.binary()
                              else np.int64, len(dictionary) + 1, dictionary.offset * (
                                  4 if dictionary.type == pa.binary() else 8)).astype(np.int64)
    d_data = dictionary.buffers()[2]
    d_data = np.zeros(0, np.uint8) if d_data is None else np.frombuffer(d_data, np.uint8)
    index = np.frombuffer(codes.indices.buffers()[1], np.int32, n,
                          codes.indices.offset * 4)
    valid_index = index if valid is None else index[valid]
    if len(valid_index) and (int(valid_index.min()) < 0
                             or int(valid_index.max()) >= len(dictionary)):
        raise CorruptDataError(f"{label}: a string's codes index lies past the dictionary")
    values = (d_offsets[1:] - d_offsets[:-1])[valid_index]
    value_src = d_offsets[valid_index]
    plan = _plan(ftype, small, label, max_codes=int(values.sum()))
    return RawChunk(label=label, ftype=ftype, pages=None, expected=None,
                    buffer=np.zeros(0, np.uint8), offset=0, has_levels=has_levels, zstd=False,
                    dictionary=d_data, value_src=value_src, values=values, **plan)


_TYPE, _PAYLOAD, _CSIZE, _USIZE, _NVALUES, _ENCODING, _DEF, _REP, _COMPRESSED, _HAS_CRC, _CRC = (
    pages_native.TYPE, pages_native.PAYLOAD_OFFSET, pages_native.COMPRESSED_SIZE,
    pages_native.UNCOMPRESSED_SIZE, pages_native.NUM_VALUES, pages_native.ENCODING,
    pages_native.DEF_LEVEL_BYTES, pages_native.REP_LEVEL_BYTES, pages_native.IS_COMPRESSED,
    pages_native.HAS_CRC, pages_native.CRC)
#: a column of our own after native.page_headers' twelve: the page's rows
NUM_ROWS = len(pages_native.PAGE_FIELDS)


def _data_pages(headers: np.ndarray, n: int, label: str) -> np.ndarray:
    """The data pages of a codes leaf's chunk, with a 13th column: their rows (a flat leaf's
    v1 page counts a level per row; a v2 page says its rows); refused as NotImplementedError
    when of a kind the GPU pass does not take."""
    data = headers[np.isin(headers[:, _TYPE], (pages_native.DATA_PAGE,
                                                pages_native.DATA_PAGE_V2))]
    other = headers[~np.isin(headers[:, _TYPE], (pages_native.DATA_PAGE,
                                                  pages_native.DATA_PAGE_V2,
                                                  pages_native.INDEX_PAGE))]
    if len(other):
        raise NotImplementedError(f"{label}: a dictionary page")
    if np.any(data[:, _ENCODING] != pages_native.DELTA_LENGTH_BYTE_ARRAY):
        raise NotImplementedError(f"{label}: a codes page not DELTA_LENGTH_BYTE_ARRAY")
    if np.any(data[:, _HAS_CRC] == 0):
        raise NotImplementedError(f"{label}: a codes page without a CRC")
    if np.any(data[:, _REP] != 0):
        raise CorruptDataError(f"{label}: a codes page with repetition levels")
    rows = data[:, _NVALUES]  # v1: levels, one a row; v2: the header's num_values = rows too
    if int(rows.sum()) != n or np.any(rows < 0):
        raise CorruptDataError(f"{label}: the codes' pages hold {int(rows.sum())} rows, where "
                               f"the other leaves have {n}")
    return np.concatenate([data, rows[:, None]], axis=1)


def _check_crcs(buffer: np.ndarray, pages: np.ndarray, label: str) -> None:
    """Each data page's CRC32 (over its bytes as stored): nvCOMP's zstd is undefined on
    damaged input, so no damaged page may reach it. zlib releases the GIL for the sums, so the
    reading threads check their chunks in parallel (~6 GB/s a core on the VM)."""
    view = memoryview(buffer)
    for p, (at, size, crc) in enumerate(pages[:, [_PAYLOAD, _CSIZE, _CRC]].tolist()):
        if zlib.crc32(view[at : at + size]) != crc & 0xFFFFFFFF:
            raise CorruptDataError(f"{label}: codes page {p}: its CRC32 does not match (the "
                                   "page is damaged)")


_ZSTD_MAGIC = 0xFD2FB528
_MAX_BLOCK = 1 << 17  # a zstd block's largest size (RFC 8878)


def _check_frames(buffer: np.ndarray, pages: np.ndarray, label: str) -> None:
    """Each zstd page holds exactly one well-formed zstd frame of the page's size: its header,
    its blocks' headers (types and sizes, the last one marked) and its checksum walked, and a
    content size, where the frame gives one, equal to the page's. nvCOMP's decompressor is
    undefined on malformed frames (RFC 8878 says what well-formed is); a page whose CRC matches
    but whose frame was forged is refused here. What the compressed blocks hold is left to
    nvCOMP, which reports a block it cannot decode."""
    raw = memoryview(buffer)
    for p, row in enumerate(pages.tolist()):
        levels = row[_DEF] + row[_REP] if row[_TYPE] == pages_native.DATA_PAGE_V2 else 0
        if row[_TYPE] == pages_native.DATA_PAGE_V2 and not row[_COMPRESSED]:
            continue
        problem = _frame_problem(raw[row[_PAYLOAD] + levels : row[_PAYLOAD] + row[_CSIZE]],
                                 row[_USIZE] - levels)
        if problem:
            raise CorruptDataError(f"{label}: codes page {p}: {problem}")


def _frame_problem(frame, size: int) -> str | None:
    """What is wrong with ``frame`` as one zstd frame decompressing to ``size`` bytes, or
    None."""
    end = len(frame)
    if end < 6 or int.from_bytes(frame[:4], "little") != _ZSTD_MAGIC:
        return "not a zstd frame"
    descriptor = frame[4]
    fcs_code, single, checksum, dict_code = (descriptor >> 6, (descriptor >> 5) & 1,
                                             (descriptor >> 2) & 1, descriptor & 3)
    if descriptor & 0x08:
        return "a zstd frame with its reserved bit set"
    pos = 5 + (0 if single else 1) + (0, 1, 2, 4)[dict_code]
    fcs_bytes = (1 if single else 0, 2, 4, 8)[fcs_code]
    if pos + fcs_bytes > end:
        return "a truncated zstd frame header"
    if fcs_bytes:
        content = int.from_bytes(frame[pos : pos + fcs_bytes], "little") + (
            256 if fcs_bytes == 2 else 0)
        if content != size:
            return f"a zstd frame of {content} bytes in a page of {size}"
    pos += fcs_bytes
    while True:
        if pos + 3 > end:
            return "a truncated zstd frame"
        head = int.from_bytes(frame[pos : pos + 3], "little")
        last, kind, block = head & 1, (head >> 1) & 3, head >> 3
        pos += 3
        if kind == 3 or block > _MAX_BLOCK:
            return "a malformed zstd block"
        pos += 1 if kind == 1 else block
        if pos > end:
            return "a truncated zstd frame"
        if last:
            break
    if pos + 4 * checksum != end:
        return "a zstd frame that does not end with its page"
    return None


def _plan(ftype, small: pa.StructArray, label: str, *, max_codes: int) -> dict:
    """The host's share of the plan, from the small leaves (struct<lengths, cuts, table>);
    ``max_codes`` bounds the codes (the lengths add up to at most 8 bytes a code)."""
    try:
        check_arrow(small, f"{EXTENSION_NAME} storage")
    except CorruptDataError as exc:
        raise CorruptDataError(f"{label}: {exc}") from None
    n = len(small)
    flat = dict(zip([f.name for f in small.type], small.flatten(), strict=True))
    lengths_leaf, cuts_leaf, table_leaf = (flat[leaf] for leaf in _SMALL)
    for name, child in (("lengths", lengths_leaf), ("table", table_leaf)):
        if child.null_count != small.null_count:
            raise CorruptDataError(f"{label}: {EXTENSION_NAME} storage: a valid string has a "
                                   f"null {name!r} entry")
    validity = None
    if small.null_count:
        validity = slice_bitmap(np.frombuffer(small.buffers()[0], np.uint8), small.offset, n)
    valid = (np.ones(n, bool) if validity is None
             else np.unpackbits(validity, count=n, bitorder="little").astype(bool))
    valid_rank = np.zeros(n + 1, np.int64)
    np.cumsum(valid, out=valid_rank[1:])
    try:
        if table_leaf.type != _TABLE_TYPE:  # read without the Arrow schema: int32 indices
            try:
                table_leaf = pa.DictionaryArray.from_arrays(
                    table_leaf.indices.cast(pa.uint16()), table_leaf.dictionary)
            except (pa.ArrowException, AttributeError):
                raise CorruptDataError(f"{EXTENSION_NAME} storage: the table indices are not "
                                       "a dictionary's of at most 65536 tables") from None
        tables, per_row = tables_in_data([table_leaf], n, validity)
        tables, block_starts = table_runs(tables, per_row, validity)
        lengths = unpack_values([lengths_leaf], n)
        lengths[~valid] = 0
        length_sums(lengths, max_codes)
        width = 8 if lengths_leaf.type == pa.uint64() else 4
        pairs, cut_rows = cut_pairs([cuts_leaf], width)
    except CorruptDataError as exc:
        raise CorruptDataError(f"{label}: {exc}") from None
    out_offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=out_offsets[1:])
    split_rows = np.concatenate([block_starts[:-1], rule2_rows(out_offsets, ftype.split_size)])
    return dict(length=n, null_count=small.null_count, validity=validity, tables=tables,
                block_starts=block_starts, lengths=lengths, out_offsets=out_offsets,
                split_rows=split_rows.astype(np.int64), cut_pairs=pairs, cut_rows=cut_rows,
                valid_rank=valid_rank)


class RawReader:
    """Reads a Parquet file's qualifying fsst chunks raw (:func:`read_raw_chunk`) from many
    threads: each thread gets its own file descriptor and its own ParquetFile on the storage
    view; every chunk has its place in one upload buffer, from ``allocate(nbytes)`` (pinned
    memory for the GPU).

    ``reader(k, name)`` is the chunk as a RawChunk, or None when it is to be read through pyarrow
    (it does not qualify, or its pages turned out not to).
    """

    def __init__(self, path, metadata: pq.FileMetaData, schema: pa.Schema, *, zstd: bool,
                 allocate=None):
        self.path = os.fspath(path)
        self.view = storage_view(metadata, schema)
        self.layout = raw_layout(metadata, schema, zstd=zstd) if self.view is not None else {}
        self.types = {f.name: f.type for f in schema}
        # read as dictionaries: the tables, and the codes where they are dictionary-coded
        self.tables = sorted({f"{name}.table" for _, name in self.layout}
                             | {f"{name}.codes" for (_, name), v in self.layout.items() if v[4]})
        self.at, pos = {}, 0
        for key, (_, size, _, _, _) in sorted(self.layout.items()):
            self.at[key] = pos
            pos += -(-size // ALIGN) * ALIGN
        self.upload = None
        if self.layout:
            self.upload = (allocate or (lambda n: np.empty(n, np.uint8)))(pos + SLACK)
            self.upload[pos:] = 0  # the slack past the last chunk, which the GPU may read
        self._local = threading.local()
        self._lock = threading.Lock()
        self._open: list = []

    def __call__(self, k: int, name: str) -> RawChunk | None:
        key = (k, name)
        if key not in self.layout:
            return None
        local = self._local
        if not hasattr(local, "fd"):
            fd, handle = os.open(self.path, os.O_RDONLY), pa.OSFile(self.path)
            with self._lock:
                self._open.append((fd, handle))
            local.fd = fd
            local.view = pq.ParquetFile(handle, metadata=self.view, memory_map=False,
                                        read_dictionary=self.tables,
                                        page_checksum_verification=True)
        start, size, levels, zstd, _ = self.layout[key]
        at = self.at[key]
        try:
            return read_raw_chunk(local.fd, local.view, k, name, self.types[name], (start, size),
                                  self.upload[at : at + size], at, levels, zstd)
        except NotImplementedError:
            return None

    def close(self) -> None:
        """Close the threads' file descriptors."""
        with self._lock:
            for fd, handle in self._open:
                os.close(fd)
                handle.close()
            self._open.clear()
