"""The footer's record of where every column chunk of a Parquet file fsstgpu wrote lies.

Page CRCs cover a page's bytes, not where the footer says the pages are, how many values a
chunk holds or how many rows a row group has: a flipped or forged position sends pyarrow's
reader to another row group's pages (their CRCs hold), and a changed row count reads fewer rows
(BENCHMARKS.md / RELIABILITY.md, session 68's hunt), both without an error. So every Parquet
output of fsstgpu's writer (:class:`~fsstgpu.formats.parquet_parts.JoinedParquetFile`, which
writes the footer itself) records, under :data:`CHUNKS_KEY`, a CRC32 of each column chunk's
row group row count, file offset, value count, sizes and page offsets (:func:`chunk_digest`)
and one of the stored Arrow schema (``ARROW:schema``, the bytes as stored); a reader checks a
chunk's after pyarrow has read it (pyarrow's reader validates what its metadata accessors do
not), before any of its rows is handed out (:class:`ChunkRecord`). Another writer's file has
no record and is read as before; a damaged record is an error.

Examples
--------
>>> from fsstgpu.formats.chunk_record import chunk_digest
>>> chunk_digest(3, (4, 3, 60, 50, 4, None)) == chunk_digest(3, (4, 3, 60, 50, 4, 0))
True
"""

from __future__ import annotations

import base64
import binascii
import re
import struct
import zlib

import pyarrow.parquet as pq

from fsstgpu.errors import CorruptDataError
from fsstgpu.formats.footer_records import sealed, unsealed

__all__ = ["ARROW_SCHEMA_KEY", "CHUNKS_KEY", "ChunkRecord", "chunk_digest", "chunk_digests",
           "chunks_footer", "footer_bytes"]

#: the file-metadata key of the record (canonical JSON: ``{"crc32": N, "fsstgpu.chunks":
#: {"row_groups": [base64 of the chunks' CRC32s (<u4), ...], "schema": CRC32 of ARROW:schema
#: or null, "version": 1}}``, the CRC over the canonical JSON of the inner object)
CHUNKS_KEY = b"fsstgpu.chunks"
#: the record's version: a reader skips (does not refuse) a record of a version it does not know
VERSION = 1
_BODY = "fsstgpu.chunks"
ARROW_SCHEMA_KEY = b"ARROW:schema"
_U32 = struct.Struct("<I")
#: what :func:`chunk_digest` packs: the row count and the chunk's six numbers
_PLACE = struct.Struct("<7q")
#: the record as a footer's Thrift KeyValue holds it (key, then the value's length and start):
#: found where pyarrow's metadata has no record, a damaged footer lost it (and with it, the
#: key-value pairs, as a flipped byte before them can make pyarrow's reader skip them)
_STORED = re.compile(rb'\x18\x0efsstgpu\.chunks\x18[\x80-\xff]{0,4}[\x00-\x7f]\{"crc32":')


def chunk_digest(num_rows: int, chunk) -> int:
    """CRC32 of a column chunk's place: its row group's ``num_rows`` and ``chunk`` = (file
    offset, value count, uncompressed size, compressed size, data page offset, dictionary
    page offset or None; an offset of 0 or less is none, as readers take it)."""
    return _place_crc(num_rows, *chunk)


def chunk_digests(metadata: pq.FileMetaData) -> list[list[int]]:
    """Each row group's :func:`chunk_digest` of each column chunk, as pyarrow reads the footer
    (call after pyarrow's reader has read them: a damaged footer entry can abort the process in
    its metadata accessors).

    Examples
    --------
    >>> import io, pyarrow as pa, pyarrow.parquet as pq
    >>> from fsstgpu.formats.chunk_record import chunk_digests
    >>> out = io.BytesIO()
    >>> pq.write_table(pa.table({"n": [1, 2, 3]}), out, row_group_size=2)
    >>> [len(d) for d in chunk_digests(pq.read_metadata(pa.BufferReader(out.getvalue())))]
    [1, 1]
    """
    out = []
    for k in range(metadata.num_row_groups):
        rg = metadata.row_group(k)
        rows = rg.num_rows  # (an accessor call: once a row group, not once a chunk)
        out.append([_digest(rg.column(j), rows) for j in range(rg.num_columns)])
    return out


def _digest(c: pq.ColumnChunkMetaData, num_rows: int) -> int:
    """:func:`chunk_digest` of chunk ``c`` of a row group of ``num_rows`` rows, inline: a
    file of many small row groups has thousands of chunks, and this is paid for each one on
    writing and again on reading (half the cost of going through the tuple)."""
    return _place_crc(num_rows, c.file_offset, c.num_values, c.total_uncompressed_size,
                      c.total_compressed_size, c.data_page_offset, c.dictionary_page_offset)


def _place_crc(num_rows, offset, values, uncompressed, compressed, data, dictionary) -> int:
    """The CRC32 of a chunk's place, its fields given one by one (:func:`chunk_digest`)."""
    return zlib.crc32(_PLACE.pack(num_rows, offset, values, uncompressed, compressed, data,
                                  dictionary if dictionary is not None and dictionary > 0
                                  else -1))


def chunks_footer(digests: list[list[int]], arrow_schema: bytes | None) -> bytes:
    """The footer value of :data:`CHUNKS_KEY`: each row group's chunk digests
    (:func:`chunk_digest`; base64 of little-endian uint32s, 5.3 bytes a chunk), and the stored
    Arrow schema's CRC32."""
    body = {"row_groups": [base64.b64encode(struct.pack(f"<{len(d)}I", *d)).decode()
                           for d in digests],
            "schema": None if arrow_schema is None else zlib.crc32(arrow_schema),
            "version": VERSION}
    return sealed(_BODY, body)


class ChunkRecord:
    """The record of a Parquet file's footer (None from :meth:`of` without one), checked as
    far as the footer alone allows when read: the record's own CRC, the row groups' count, the
    stored Arrow schema; :meth:`check` checks chunks after they are read.

    Raises
    ------
    CorruptDataError
        From :meth:`of` and :meth:`check`, saying what differs.
    """

    def __init__(self, metadata: pq.FileMetaData, row_groups: list):
        self._metadata = metadata
        self._row_groups = row_groups
        # row group -> its recorded CRCs (<u4 bytes), decoded once (a reader checks one column
        # at a time: decoding the row group's record each time cost O(columns) a chunk), and
        # a byte a chunk, set once it is checked (threads racing at most check one twice)
        self._decoded: dict[int, tuple[bytes, bytearray]] = {}

    @classmethod
    def of(cls, metadata: pq.FileMetaData, footer=None) -> ChunkRecord | None:
        """The record of ``metadata``'s footer, checked, or None where it has none (and
        ``footer()``, the footer's bytes as stored, where given, holds none either)."""
        kv = metadata.metadata or {}
        raw = kv.get(CHUNKS_KEY)
        what = f"the footer's record of its column chunks ({CHUNKS_KEY.decode()})"
        if raw is None:
            if footer is not None and _STORED.search(footer()):
                raise CorruptDataError(f"{what} is in the footer's bytes but not in the footer "
                                       "as read: the footer was altered")
            return None
        try:
            body = unsealed(raw, _BODY)
            version = None if body is None else body.get("version")
        except (ValueError, TypeError, KeyError, AttributeError, RecursionError):
            raise CorruptDataError(f"{what} is not readable: the footer was altered") from None
        if body is None:
            raise CorruptDataError(f"{what}: CRC32 mismatch, the footer was altered")
        if version != VERSION:  # (a later writer's, sealed: nothing this reader can check)
            return None
        groups, schema = body.get("row_groups"), body.get("schema")
        if not (isinstance(groups, list) and all(isinstance(g, str) for g in groups)
                and (schema is None or type(schema) is int)):
            raise CorruptDataError(f"{what} is not readable: the footer was altered")
        if len(groups) != metadata.num_row_groups:
            raise CorruptDataError(f"the footer has {metadata.num_row_groups} row groups, where "
                                   f"{len(groups)} were written: the footer was altered")
        stored = kv.get(ARROW_SCHEMA_KEY)
        if (None if stored is None else zlib.crc32(stored)) != schema:
            raise CorruptDataError("the footer's Arrow schema (ARROW:schema) is not the one "
                                   "written: the footer was altered")
        return cls(metadata, groups)

    def check(self, k: int, leaves) -> None:
        """Check row group ``k``'s column chunks ``leaves`` (indices; None: all of them), once
        each, after pyarrow has read them."""
        entry = self._decoded.get(k)
        if entry is not None and leaves is not None and all(entry[1][j] for j in leaves):
            return
        rg = self._metadata.row_group(k)
        if entry is None:
            try:
                recorded = base64.b64decode(self._row_groups[k], validate=True)
            except (ValueError, binascii.Error):
                recorded = b"?"  # (a length no row group has)
            if len(recorded) != 4 * rg.num_columns:
                raise CorruptDataError(f"{rg.num_columns} column chunks, where "
                                       f"{len(recorded) // 4} were written: the footer was "
                                       "altered")
            entry = self._decoded.setdefault(k, (recorded, bytearray(rg.num_columns)))
        recorded, checked = entry
        rows = rg.num_rows
        for j in range(rg.num_columns) if leaves is None else leaves:
            if checked[j]:
                continue
            if _digest(rg.column(j), rows) != _U32.unpack_from(recorded, 4 * j)[0]:
                raise CorruptDataError(f"column chunk {j}: its row count, values, sizes or page "
                                       "positions are not those written: the footer was altered")
            checked[j] = 1


def footer_bytes(f) -> bytes:
    """The footer of the Parquet file open as ``f`` (a pyarrow NativeFile), as stored (what
    the length before its end magic says, at most the file)."""
    size = f.size()
    f.seek(max(0, size - 8))
    length = int.from_bytes(f.read(4), "little")
    f.seek(max(0, size - 8 - length))
    return f.read(max(0, min(length, size - 8)))
