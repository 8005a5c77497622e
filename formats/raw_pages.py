"""A Parquet column chunk's pages from its raw bytes: the headers parsed on the host, the
payloads left as they are (compressed), for a reader that decompresses and decodes them
elsewhere. Issue #24 item 2 reads a file's fsst columns to the GPU this way: pyarrow's reader
decodes every page on the host (zstd, CRC, DELTA_LENGTH_BYTE_ARRAY, dictionaries) before
anything moves, ~200 ms for a 14 MB file, where the chunks' raw bytes read in 1.6 ms and their
headers parse in a few (BENCHMARKS.md section 66; now in C++,
:func:`fsstgpu.native.page_headers`, each header wholly checked as the Thrift reader checks
it).

A chunk's bytes are untrusted: every header is checked against the chunk (sizes, counts, page
kinds, the pages' values against the footer's), and a page's CRC (our files carry one a page:
``write_page_checksum``) against its payload, each failure a
:class:`~fsstgpu.errors.CorruptDataError` naming the file, row group and column.
:func:`decompressed` is the host twin of the device's decompression.

>>> import io, pyarrow as pa, pyarrow.parquet as pq
>>> from fsstgpu.formats.raw_pages import chunk_pages, chunk_span, decompressed
>>> out = io.BytesIO()
>>> pq.write_table(pa.table({"s": ["ab", "cd"] * 50}), out, compression="zstd",
...                write_page_checksum=True)
>>> raw = out.getvalue()
>>> meta = pq.ParquetFile(io.BytesIO(raw)).metadata.row_group(0).column(0)
>>> start, size = chunk_span(meta, len(raw), "s")
>>> pages = chunk_pages(raw[start : start + size], meta.num_values, "s")
>>> [p.kind for p in pages], sum(p.num_values for p in pages if p.kind != "dictionary")
(['dictionary', 'data'], 100)
>>> decompressed(raw[start : start + size], pages[0], "zstd")[4:6]
b'ab'
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from fsstgpu.errors import CorruptDataError
from fsstgpu.native.checksums import crc32_many
from fsstgpu.native.pages import page_headers

__all__ = ["Page", "check_crcs", "check_page_crcs", "chunk_pages", "chunk_span", "decompressed",
           "read_span"]

#: Parquet's page types (PageType) that a column chunk may hold, by their names here
_KINDS = {0: "data", 2: "dictionary", 3: "data_v2"}
#: the most pages a chunk may declare: far more than any writer makes (pyarrow's pages hold
#: up to 20,000 rows, ours 16,384), so a forged run of empty headers stops here
MAX_PAGES = 1 << 20


@dataclass(frozen=True, slots=True)
class Page:
    """One page of a column chunk: ``kind`` ("dictionary", "data" or "data_v2"), its values'
    ``encoding`` (Parquet's Encoding number) and count, where its payload lies in the chunk's
    bytes (``start``, ``size``: compressed), its ``uncompressed_size``, its ``crc`` (unsigned,
    or None where the writer stored none) and, for a version 2 data page, the bytes of its
    repetition and definition levels at the payload's start (``levels_size``, never
    compressed) and whether the rest is compressed."""

    kind: str
    encoding: int
    num_values: int
    start: int
    size: int
    uncompressed_size: int
    crc: int | None
    levels_size: int = 0
    compressed: bool = True
    #: a version 1 data page's definition levels' encoding (3: RLE, what writers use); a
    #: version 2 page's repetition levels' bytes (its definition levels follow them)
    levels_encoding: int = 3
    rep_levels_size: int = 0


def chunk_span(meta, file_size: int, where: str) -> tuple[int, int]:
    """Where column chunk ``meta`` (pyarrow's ``ColumnChunkMetaData``) lies in a file of
    ``file_size`` bytes: (start, size), from its dictionary page if it has one, checked to lie
    inside the file.

    Examples
    --------
    >>> import io, pyarrow as pa, pyarrow.parquet as pq
    >>> out = io.BytesIO()
    >>> pq.write_table(pa.table({"s": ["ab", "cd"] * 50}), out, write_page_checksum=True)
    >>> raw = out.getvalue()
    >>> meta = pq.ParquetFile(io.BytesIO(raw)).metadata.row_group(0).column(0)
    >>> start, size = chunk_span(meta, len(raw), "s")
    >>> raw[start - 4 : start] == b"PAR1", size == meta.total_compressed_size
    (True, True)
    """
    start = meta.dictionary_page_offset if meta.has_dictionary_page else meta.data_page_offset
    size = meta.total_compressed_size
    if start is None or start < 4 or size <= 0 or start + size > file_size:
        raise CorruptDataError(f"{where}: the column chunk ({start}, {size} bytes) lies outside "
                               f"the file's {file_size} bytes")
    return int(start), int(size)


def read_span(fd: int, start: int, size: int, where: str) -> bytes:
    """``size`` bytes of open file ``fd`` from ``start`` (``os.pread``: no shared position, so
    threads may read one file at once); a file that ends first is corrupt.

    Examples
    --------
    >>> import os, tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "f")
    >>> _ = open(path, "wb").write(b"0123456789")
    >>> fd = os.open(path, os.O_RDONLY)
    >>> read_span(fd, 2, 3, "f")
    b'234'
    >>> os.close(fd)
    """
    parts, got = [], 0
    while got < size:
        part = os.pread(fd, size - got, start + got)
        if not part:
            raise CorruptDataError(f"{where}: the file ends {size - got} bytes into a column "
                                   f"chunk of {size}")
        parts.append(part)
        got += len(part)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def chunk_pages(raw: bytes, num_values: int, where: str) -> list[Page]:
    """The pages of a column chunk whose bytes are ``raw`` (from its first page's header to its
    last page's end, as :func:`chunk_span` places it) and whose footer entry declares
    ``num_values`` values: at most one dictionary page, first; the data pages' values adding
    up to ``num_values``; nothing after the last page. ``where`` names the chunk in errors
    (file, row group, column).

    Examples
    --------
    >>> import io, pyarrow as pa, pyarrow.parquet as pq
    >>> out = io.BytesIO()
    >>> pq.write_table(pa.table({"s": ["ab", "cd"] * 50}), out, write_page_checksum=True)
    >>> raw = out.getvalue()
    >>> meta = pq.ParquetFile(io.BytesIO(raw)).metadata.row_group(0).column(0)
    >>> start, size = chunk_span(meta, len(raw), "s")
    >>> [(p.kind, p.num_values) for p in chunk_pages(raw[start : start + size], 100, "s")]
    [('dictionary', 2), ('data', 100)]
    """
    try:
        rows = page_headers(raw, MAX_PAGES)
    except CorruptDataError as exc:
        raise CorruptDataError(f"{where}: {exc}") from None
    if np.any(rows[1:, 0] == 2):
        raise CorruptDataError(f"{where}: a dictionary page after the chunk's first page")
    found = int(rows[rows[:, 0] != 2, 2].sum())
    if found != num_values:
        raise CorruptDataError(f"{where}: the pages hold {found} values, the footer says "
                               f"{num_values}")
    return [Page(_KINDS[kind], encoding, count, start, size, uncompressed,
                 None if crc < 0 else crc, levels, bool(compressed), levels_encoding, rep)
            for kind, encoding, count, start, size, uncompressed, crc, levels, compressed,
            levels_encoding, rep, _ in rows.tolist()]


def check_crcs(raw: bytes, pages: list[Page], where: str) -> None:
    """Each page's stored CRC (zlib's CRC32 of its payload as stored, Parquet's definition)
    against its payload; a page without one is not checked.

    Examples
    --------
    >>> import io, pyarrow as pa, pyarrow.parquet as pq
    >>> out = io.BytesIO()
    >>> pq.write_table(pa.table({"s": ["ab", "cd"] * 50}), out, write_page_checksum=True)
    >>> raw = out.getvalue()
    >>> meta = pq.ParquetFile(io.BytesIO(raw)).metadata.row_group(0).column(0)
    >>> start, size = chunk_span(meta, len(raw), "s")
    >>> chunk = bytearray(raw[start : start + size])
    >>> pages = chunk_pages(bytes(chunk), 100, "s")
    >>> check_crcs(bytes(chunk), pages, "s")  # (they hold)
    >>> chunk[pages[1].start] ^= 1
    >>> check_crcs(bytes(chunk), pages, "s")
    Traceback (most recent call last):
    fsstgpu.errors.CorruptDataError: s: page 1 fails its CRC check (the file is damaged)
    """
    check_page_crcs(raw, np.array([[p.start, p.size, -1 if p.crc is None else p.crc]
                                   for p in pages], np.int64).reshape(-1, 3), where)


def check_page_crcs(raw, pages, where: str) -> None:
    """:func:`check_crcs` of pages given as rows ``(start, size, stored CRC or -1)`` (int64,
    a page a row, each inside ``raw``).

    Examples
    --------
    >>> import zlib, numpy as np
    >>> check_page_crcs(b"abcd", np.array([[0, 2, zlib.crc32(b"ab")], [2, 2, -1]]), "s")
    >>> check_page_crcs(b"abcd", np.array([[2, 2, zlib.crc32(b"ab")]]), "s")
    Traceback (most recent call last):
    fsstgpu.errors.CorruptDataError: s: page 0 fails its CRC check (the file is damaged)
    """
    got = crc32_many(raw, pages[:, 0].copy(), pages[:, 1].copy())
    bad = np.flatnonzero((pages[:, 2] >= 0) & (got != pages[:, 2]))
    if bad.size:
        raise CorruptDataError(f"{where}: page {int(bad[0])} fails its CRC check (the file is "
                               "damaged)")


def decompressed(raw: bytes, page: Page, codec: str) -> bytes:
    """A page's payload as its encoder wrote it (the host twin of the device's
    decompression): ``codec`` the chunk's compression as pyarrow names it ("ZSTD",
    "UNCOMPRESSED", ...: any case); a version 2 data page's levels come first, as stored.

    Examples
    --------
    >>> from fsstgpu.formats.raw_pages import Page
    >>> page = Page("data", 0, 1, start=0, size=3, uncompressed_size=3, crc=None)
    >>> decompressed(b"abc", page, "UNCOMPRESSED")
    b'abc'
    """
    body = memoryview(raw)[page.start : page.start + page.size]
    levels, body = body[: page.levels_size], body[page.levels_size :]
    want = page.uncompressed_size - page.levels_size
    name = codec.lower()
    if name in ("uncompressed", "none") or not page.compressed:
        out = bytes(body)
    else:
        try:
            out = pa.Codec(name).decompress(body, want).to_pybytes()
        except (pa.ArrowException, OSError, ValueError) as exc:
            raise CorruptDataError(f"a page does not decompress ({codec}): {exc}") from None
    if len(out) != want:
        raise CorruptDataError(f"a page decompresses to {len(out)} bytes, its header says "
                               f"{want}")
    return bytes(levels) + out
