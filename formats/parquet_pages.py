"""Parquet column chunks read raw: page headers parsed here, each page's CRC checked and its
codec undone, DELTA_LENGTH_BYTE_ARRAY values split into their lengths and their bytes.

This is how an fsst column's codes reach the GPU without Arrow (issue #24, item 2;
``files.md``, "Raw reads of the codes"): a ``DELTA_LENGTH_BYTE_ARRAY`` page holds its values'
lengths (``DELTA_BINARY_PACKED``, decoded by ``native.delta_binary_packed``) followed by the
values' bytes back to back, so a column chunk's codes are the concatenation of its pages' byte
regions: one copy from the read (or decompressed) pages into the buffer the GPU uploads, and no
per-string work but the lengths' prefix sum. Arrow's reader would decode every page into a
binary array first.

Everything here reads a file from outside: a header that runs past its chunk, a page size that
does not fit, a CRC that does not match, lengths that do not add up to the page's bytes raise
CorruptDataError naming what is wrong. A layout this reader does not take (a dictionary page,
another encoding, repetition levels, a codec pyarrow lacks) raises :class:`NotRaw`: the caller
reads that chunk through pyarrow instead.

>>> import os, tempfile, numpy as np, pyarrow as pa, pyarrow.parquet as pq
>>> from fsstgpu.formats.parquet_pages import read_dlba_chunk
>>> path = os.path.join(tempfile.mkdtemp(), "a.parquet")
>>> pq.write_table(pa.table({"b": [b"ab", None, b"", b"cde"]}), path, compression="zstd",
...                use_dictionary=False, column_encoding={"b": "DELTA_LENGTH_BYTE_ARRAY"},
...                write_page_checksum=True)
>>> meta = pq.ParquetFile(path).metadata
>>> with open(path, "rb") as f:
...     values = read_dlba_chunk(f, meta.row_group(0).column(0), max_definition_level=1)
>>> values.lengths.tolist(), bytes(values.data), values.rows, values.defs.tolist()
([2, 0, 3], b'abcde', 4, [1, 0, 1, 1])
"""

from __future__ import annotations

import os
import zlib
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from fsstgpu import native
from fsstgpu.errors import CorruptDataError

__all__ = ["LeafValues", "NotRaw", "PageHeader", "parse_page_header", "read_dlba_chunk",
           "read_leaf_chunk"]

# PageType and Encoding of parquet.thrift
DATA_PAGE, INDEX_PAGE, DICTIONARY_PAGE, DATA_PAGE_V2 = 0, 1, 2, 3
PLAIN, PLAIN_DICTIONARY, DELTA_LENGTH_BYTE_ARRAY, RLE_DICTIONARY = 0, 2, 6, 8
#: the codecs this reader undoes (pyarrow's codec names by Parquet's)
CODECS = {"UNCOMPRESSED": None, "ZSTD": "zstd", "SNAPPY": "snappy", "LZ4_RAW": "lz4_raw",
          "GZIP": "gzip", "BROTLI": "brotli"}
#: a page header is a few dozen bytes; a larger one is not a header
MAX_HEADER_BYTES = 1 << 16
_MAX_DEPTH = 8  # Thrift structs nest 3 deep in a page header (statistics inside a data header)


class NotRaw(Exception):
    """A column chunk in a layout :func:`read_dlba_chunk` does not take (read it otherwise)."""


@dataclass(frozen=True)
class PageHeader:
    """The fields of a Parquet page header this reader uses (``parquet.thrift``)."""

    type: int
    uncompressed_size: int
    compressed_size: int
    crc: int | None
    num_values: int = 0
    encoding: int = -1
    definition_bytes: int = 0  # v2: the definition levels' bytes (stored uncompressed)
    repetition_bytes: int = 0  # v2
    is_compressed: bool = True  # v2


class _Thrift:
    """Thrift's compact protocol over ``buf[pos:end]``, every read bounds-checked."""

    def __init__(self, buf, pos: int, end: int):
        self.buf, self.pos, self.end = buf, pos, end

    def byte(self) -> int:
        if self.pos >= self.end:
            raise CorruptDataError("a page header runs past its column chunk")
        b = self.buf[self.pos]
        self.pos += 1
        return b

    def varint(self) -> int:
        value = shift = 0
        while True:
            b = self.byte()
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
            if shift > 63:
                raise CorruptDataError("a page header holds a varint of over 64 bits")

    def zigzag(self) -> int:
        z = self.varint()
        return (z >> 1) ^ -(z & 1)

    def skip(self, kind: int, depth: int) -> None:
        if depth > _MAX_DEPTH:
            raise CorruptDataError("a page header nests deeper than any Parquet header")
        if kind in (1, 2):  # bool: in the field type
            return
        if kind == 3:
            self.byte()
        elif kind in (4, 5, 6):
            self.varint()
        elif kind == 7:
            self._advance(8)
        elif kind == 8:
            self._advance(self.varint())
        elif kind in (9, 10):  # list, set
            head = self.byte()
            count = head >> 4 if head >> 4 != 15 else self.varint()
            for _ in range(count):
                self.skip(head & 0x0F, depth + 1)
        elif kind == 11:  # map
            count = self.varint()
            if count:
                types = self.byte()
                for _ in range(count):
                    self.skip(types >> 4, depth + 1)
                    self.skip(types & 0x0F, depth + 1)
        elif kind == 12:
            self.struct({}, depth + 1)
        else:
            raise CorruptDataError(f"a page header holds Thrift type {kind}")

    def _advance(self, n: int) -> None:
        if n > self.end - self.pos:
            raise CorruptDataError("a page header runs past its column chunk")
        self.pos += n

    def struct(self, wanted: dict, depth: int = 0) -> dict:
        """The fields of a struct: ``wanted`` maps a field id to None (an integer or bool is
        kept) or to the ``wanted`` of a struct field; other fields are skipped."""
        found, last = {}, 0
        while True:
            head = self.byte()
            kind = head & 0x0F
            if kind == 0:
                return found
            delta = head >> 4
            field = last + delta if delta else self.zigzag()
            last = field
            if field in wanted and wanted[field] is not None and kind == 12:
                found[field] = self.struct(wanted[field], depth + 1)
            elif field in wanted and wanted[field] is None and kind in (1, 2):
                found[field] = kind == 1
            elif field in wanted and wanted[field] is None and kind in (3, 4, 5, 6):
                found[field] = self.byte() if kind == 3 else self.zigzag()
            else:
                self.skip(kind, depth)


_DATA = {1: None, 2: None}  # num_values, encoding
_V2 = {1: None, 4: None, 5: None, 6: None, 7: None}
_HEADER = {1: None, 2: None, 3: None, 4: None, 5: _DATA, 7: _DATA, 8: _V2}


def parse_page_header(buf, pos: int, end: int) -> tuple[PageHeader, int]:
    """The page header at ``buf[pos:end]`` and the position just past it.

    Raises
    ------
    CorruptDataError
        When it is not a complete page header of sizes that fit.

    Examples
    --------
    >>> from fsstgpu.formats.parquet_pages import parse_page_header
    >>> raw = bytes([0x15, 0x00, 0x15, 0x0A, 0x15, 0x08, 0x00])  # data page, 5 and 4 bytes
    >>> parse_page_header(raw, 0, len(raw))[0].compressed_size
    4
    """
    # (a memoryview: its items are Python ints, a NumPy array's would be uint8 scalars)
    reader = _Thrift(memoryview(buf).cast("B"), pos, min(end, pos + MAX_HEADER_BYTES))
    fields = reader.struct(_HEADER)
    for field, name in ((1, "type"), (2, "uncompressed size"), (3, "compressed size")):
        if field not in fields:
            raise CorruptDataError(f"a page header has no {name}")
    usize, csize = fields[2], fields[3]
    if usize < 0 or csize < 0:
        raise CorruptDataError(f"a page header gives sizes {usize} and {csize}")
    v2 = fields.get(8) or {}
    detail = fields.get(5) or fields.get(7) or {1: v2.get(1, 0), 2: v2.get(4, -1)}
    header = PageHeader(
        type=fields[1], uncompressed_size=usize, compressed_size=csize,
        crc=None if 4 not in fields else fields[4] & 0xFFFFFFFF,
        num_values=detail.get(1, 0), encoding=detail.get(2, -1),
        definition_bytes=v2.get(5, 0), repetition_bytes=v2.get(6, 0),
        is_compressed=v2.get(7, True))
    if header.num_values < 0 or header.definition_bytes < 0 or header.repetition_bytes < 0:
        raise CorruptDataError("a page header gives a negative count")
    return header, reader.pos


def _chunk_bytes(f, meta) -> np.ndarray:
    """The column chunk ``meta`` (pyarrow ColumnChunkMetaData) of the open file ``f``."""
    start = meta.dictionary_page_offset if meta.has_dictionary_page else meta.data_page_offset
    size = meta.total_compressed_size
    if size == 0 and meta.num_values == 0:  # an empty row group's chunk (offset 0)
        return np.empty(0, np.uint8)
    file_size = os.fstat(f.fileno()).st_size
    if start is None or start < 4 or size < 0 or start + size > file_size - 8:
        raise CorruptDataError(f"a column chunk at {start} of {size} bytes does not fit in the "
                               f"file's {file_size} bytes")
    buf = np.empty(size, np.uint8)
    got = os.preadv(f.fileno(), [memoryview(buf)], start) if size else 0
    if got != size:
        raise CorruptDataError(f"a column chunk's {size} bytes could not be read (got {got})")
    return buf


def _undo_codec(codec, payload: np.ndarray, size: int) -> np.ndarray:
    if codec is None:
        if len(payload) != size:
            raise CorruptDataError(f"an uncompressed page of {len(payload)} bytes says {size}")
        return payload
    try:
        out = codec.decompress(pa.py_buffer(payload), decompressed_size=size)
    except (pa.ArrowException, OSError) as exc:
        raise CorruptDataError(f"a page does not decompress ({exc})") from None
    if out.size != size:
        raise CorruptDataError(f"a page decompressed to {out.size} bytes, not {size}")
    return np.frombuffer(out, np.uint8)


def _levels(values: np.ndarray, pos: int, max_level: int, count: int, sized: bool):
    """``count`` levels at ``values[pos:]`` (v1 pages: ``sized``, a 4-byte length first) and the
    position past them."""
    if sized:
        if len(values) - pos < 4:
            raise CorruptDataError("a data page's levels run past the page")
        n = int.from_bytes(values[pos:pos + 4].tobytes(), "little")
        if n > len(values) - pos - 4:
            raise CorruptDataError("a data page's levels run past the page")
        levels, _ = native.rle_hybrid(values[:pos + 4 + n], pos + 4, max_level.bit_length(),
                                      count)
        end = pos + 4 + n
    else:
        levels, end = native.rle_hybrid(values, pos, max_level.bit_length(), count)
    if count and int(levels.max()) > max_level:
        raise CorruptDataError(f"a definition level above the leaf's {max_level}")
    return levels, end


@dataclass(frozen=True)
class LeafValues:
    """A column chunk read raw (:func:`read_leaf_chunk`).

    ``defs``: each row's definition level (uint32; None when every row has the leaf's maximum
    level, as a leaf without levels does); its non-null
    values in order: ``ints`` (INT32 / INT64 leaves), or ``data`` + ``lengths`` (byte arrays,
    back to back), or for a dictionary-encoded byte-array leaf ``indices`` into ``dictionary``
    (a list of bytes).
    """

    rows: int
    defs: np.ndarray | None = None
    ints: np.ndarray | None = None
    data: np.ndarray | None = None
    lengths: np.ndarray | None = None
    indices: np.ndarray | None = None
    dictionary: list | None = None


_PHYSICAL = {"INT32": np.dtype("<i4"), "INT64": np.dtype("<i8"), "BYTE_ARRAY": None}


def read_leaf_chunk(f, meta, *, max_definition_level: int,
                    max_repetition_level: int = 0) -> LeafValues:
    """Read a column chunk of the open Parquet file ``f`` raw: its definition levels and its
    values, for the layouts fsstgpu writes an fsst column's leaves in (INT32 / INT64 / BYTE_ARRAY
    leaves, PLAIN, DELTA_LENGTH_BYTE_ARRAY or dictionary-encoded, data pages v1 or v2, any codec
    pyarrow has, no repetition).

    Parameters
    ----------
    f : file
        The Parquet file, opened for reading in binary (read with ``os.preadv``: threads may
        share it).
    meta : pyarrow.parquet.ColumnChunkMetaData
        The chunk (``ParquetFile.metadata.row_group(k).column(j)``).
    max_definition_level, max_repetition_level : int
        The leaf's, from the schema (``ParquetFile.metadata.schema.column(j)``); a repeated
        leaf is NotRaw.

    Returns
    -------
    LeafValues

    Raises
    ------
    CorruptDataError
        Naming what is wrong: sizes that do not fit, a CRC that does not match, a page that
        does not decompress, levels or lengths that do not add up, an index past the
        dictionary.
    NotRaw
        For another layout (read that chunk otherwise).
    """
    if meta.compression not in CODECS:
        raise NotRaw(f"codec {meta.compression}")
    if max_repetition_level:
        raise NotRaw("repetition levels")
    if meta.physical_type not in _PHYSICAL:
        raise NotRaw(f"physical type {meta.physical_type}")
    dtype = _PHYSICAL[meta.physical_type]
    codec = None if CODECS[meta.compression] is None else pa.Codec(CODECS[meta.compression])
    buf = _chunk_bytes(f, meta)
    defs, ints, lengths, regions, indices = [], [], [], [], []
    dictionary = dict_ints = None
    rows = pos = 0
    while pos < len(buf):
        header, pos = parse_page_header(buf, pos, len(buf))
        if header.compressed_size > len(buf) - pos:
            raise CorruptDataError(f"a page of {header.compressed_size} bytes runs past its "
                                   "column chunk")
        payload = buf[pos:pos + header.compressed_size]
        pos += header.compressed_size
        if header.crc is not None and zlib.crc32(payload) != header.crc:
            raise CorruptDataError("a page's CRC does not match its bytes")
        if header.type == INDEX_PAGE:
            continue
        if header.type == DICTIONARY_PAGE:
            if dictionary is not None or dict_ints is not None or rows:
                raise CorruptDataError("a dictionary page that is not the chunk's first page")
            values = _undo_codec(codec, payload, header.uncompressed_size)
            if dtype is None:
                starts, sizes, end = native.plain_byte_arrays(values, 0, header.num_values)
                dictionary = [values[a:a + b].tobytes() for a, b in
                              zip(starts.tolist(), sizes.tolist(), strict=True)]
            else:
                end = header.num_values * dtype.itemsize
                if end > len(values):
                    raise CorruptDataError("a dictionary page's values run past the page")
                dict_ints = np.frombuffer(values[:end].tobytes(), dtype)
            continue
        if header.type not in (DATA_PAGE, DATA_PAGE_V2):
            raise NotRaw(f"page type {header.type}")
        count = header.num_values
        if header.type == DATA_PAGE:
            values = _undo_codec(codec, payload, header.uncompressed_size)
            start = 0
            if max_definition_level > 0:
                levels, start = _levels(values, 0, max_definition_level, count, True)
                defs.append(levels)
        else:
            if header.repetition_bytes:
                raise NotRaw("repetition levels")
            nlev = header.definition_bytes
            if nlev > len(payload):
                raise CorruptDataError("a data page's levels run past the page")
            if max_definition_level > 0:
                levels, _ = _levels(payload[:nlev], 0, max_definition_level, count, False)
                defs.append(levels)
            values = payload[nlev:] if not header.is_compressed else \
                _undo_codec(codec, payload[nlev:], header.uncompressed_size - nlev)
            start = 0
        present = count
        if max_definition_level > 0:
            present = int(np.count_nonzero(defs[-1] == max_definition_level))
            if present == count:  # every value there (the usual page): no levels kept
                defs[-1] = count
        if header.encoding in (RLE_DICTIONARY, PLAIN_DICTIONARY):
            if dictionary is None and dict_ints is None:
                raise CorruptDataError("dictionary indices without a dictionary page")
            if start >= len(values):
                if present:
                    raise CorruptDataError("a data page's indices run past the page")
                rows += count
                continue
            width = int(values[start])
            idx, _ = native.rle_hybrid(values, start + 1, width, present)
            size = len(dictionary) if dictionary is not None else len(dict_ints)
            if present and int(idx.max()) >= size:
                raise CorruptDataError(f"a dictionary index past the {size} entries")
            indices.append(idx)
        elif header.encoding == DELTA_LENGTH_BYTE_ARRAY and dtype is None:
            page_lengths, end = native.delta_binary_packed(values, start, present)
            if len(page_lengths) != present:
                raise CorruptDataError(f"a page holds {len(page_lengths)} values where its "
                                       f"levels say {present}")
            room = len(values) - end
            if present and (int(page_lengths.min()) < 0 or int(page_lengths.max()) > room):
                raise CorruptDataError("a value's length is negative or past its page")
            nbytes = int(page_lengths.sum())  # each at most the page: no overflow
            if nbytes != room:
                raise CorruptDataError(f"a page's values hold {room} bytes, their lengths "
                                       f"{nbytes}")
            lengths.append(page_lengths)
            regions.append(values[end:])
        elif header.encoding == PLAIN and dtype is None:
            starts, sizes, _ = native.plain_byte_arrays(values, start, present)
            lengths.append(sizes)
            regions += [values[a:a + b] for a, b in zip(starts.tolist(), sizes.tolist(),
                                                         strict=True)]
        elif header.encoding == PLAIN:
            end = start + present * dtype.itemsize
            if end > len(values):
                raise CorruptDataError("a page's values run past the page")
            ints.append(np.frombuffer(values[start:end].tobytes(), dtype))
        else:
            raise NotRaw(f"encoding {header.encoding}")
        rows += count
    if rows != meta.num_values:
        raise CorruptDataError(f"the pages hold {rows} values, the footer says "
                               f"{meta.num_values}")
    out = {"rows": rows, "defs": _levels_of(defs, max_definition_level)}
    if indices and dict_ints is not None:  # a dictionary of integers: looked up here
        if ints:
            raise NotRaw("dictionary and plain pages in one chunk")
        return LeafValues(**out, ints=dict_ints[_joined(indices, np.uint32)])
    if indices:
        if regions:
            raise NotRaw("dictionary and plain pages in one chunk")
        return LeafValues(**out, indices=_joined(indices, np.uint32), dictionary=dictionary)
    if dtype is not None:
        return LeafValues(**out, ints=_joined(ints, dtype))
    return LeafValues(**out, lengths=_joined(lengths, np.int64),
                      data=_joined(regions, np.uint8))


def _levels_of(pages: list, top: int):
    """The chunk's definition levels from its pages' (an int: that many rows at ``top``), or
    None when every row is at ``top``."""
    if all(isinstance(p, int) for p in pages):
        return None
    return np.concatenate([np.full(p, top, np.uint32) if isinstance(p, int) else p
                           for p in pages])


def _joined(parts, dtype) -> np.ndarray:
    return np.concatenate(parts) if parts else np.empty(0, dtype)


def read_dlba_chunk(f, meta, *, max_definition_level: int) -> LeafValues:
    """:func:`read_leaf_chunk` of a ``DELTA_LENGTH_BYTE_ARRAY`` (or PLAIN) byte-array chunk:
    its values' ``lengths`` and ``data`` (NotRaw for a dictionary-encoded one)."""
    values = read_leaf_chunk(f, meta, max_definition_level=max_definition_level)
    if values.data is None:
        raise NotRaw("a dictionary page" if values.indices is not None else "not byte arrays")
    return values
