"""Parquet column chunks read raw on the host (``fsstgpu._native``, C++ in
``fsstgpu/csrc/parquet_pages.cpp`` and ``parquet_delta.cpp``): the page headers of a chunk, so
that its pages' payloads can be shipped to a GPU as they lie in the file, and the
``DELTA_BINARY_PACKED`` decoder a GPU decoder is checked against.

Both read bytes from a file: every read is bounds-checked, and whatever cannot be right raises
:class:`~fsstgpu.CorruptDataError` naming what is wrong (and, for a page header, which page).
Neither needs pyarrow; the examples use it to write a file.

:func:`page_headers` returns one row a page; its columns are the indices :data:`TYPE`,
:data:`HEADER_OFFSET`, ... :data:`CRC`, named in that order by :data:`PAGE_FIELDS`.

>>> import io, pyarrow as pa, pyarrow.parquet as pq
>>> from fsstgpu.native import parquet
>>> sink = io.BytesIO()
>>> pq.write_table(pa.table({"n": [1, 2, 3]}), sink, compression="none")
>>> raw = sink.getvalue()
>>> col = pq.ParquetFile(io.BytesIO(raw)).metadata.row_group(0).column(0)
>>> start = col.dictionary_page_offset or col.data_page_offset
>>> pages = parquet.page_headers(raw, start, start + col.total_compressed_size)
>>> pages[:, parquet.TYPE].tolist() == [parquet.DICTIONARY_PAGE, parquet.DATA_PAGE]
True
>>> int(pages[1, parquet.NUM_VALUES]), int(pages[1, parquet.ENCODING]) == parquet.RLE_DICTIONARY
(3, True)
"""

from __future__ import annotations

import numpy as np

from fsstgpu import _native

__all__ = ["COMPRESSED_SIZE", "CRC", "DATA_PAGE", "DATA_PAGE_V2", "DEF_LEVEL_BYTES",
           "DELTA_BINARY_PACKED", "DELTA_LENGTH_BYTE_ARRAY", "DICTIONARY_PAGE", "ENCODING",
           "HAS_CRC", "HEADER_OFFSET", "INDEX_PAGE", "IS_COMPRESSED", "NUM_VALUES", "PAGE_FIELDS",
           "PAYLOAD_OFFSET", "PLAIN", "PLAIN_DICTIONARY", "REP_LEVEL_BYTES", "RLE",
           "RLE_DICTIONARY", "TYPE", "UNCOMPRESSED_SIZE", "delta_binary_packed", "page_headers"]

# PageType of parquet.thrift
DATA_PAGE, INDEX_PAGE, DICTIONARY_PAGE, DATA_PAGE_V2 = 0, 1, 2, 3
# Encoding of parquet.thrift (those a column chunk's pages commonly carry)
PLAIN, PLAIN_DICTIONARY, RLE, DELTA_BINARY_PACKED, DELTA_LENGTH_BYTE_ARRAY, RLE_DICTIONARY = (
    0, 2, 3, 5, 6, 8)

#: the columns of :func:`page_headers`' rows, in order (the C++ enum PageField's)
PAGE_FIELDS = ("type", "header_offset", "payload_offset", "compressed_size", "uncompressed_size",
               "num_values", "encoding", "def_level_bytes", "rep_level_bytes", "is_compressed",
               "has_crc", "crc")
(TYPE, HEADER_OFFSET, PAYLOAD_OFFSET, COMPRESSED_SIZE, UNCOMPRESSED_SIZE, NUM_VALUES, ENCODING,
 DEF_LEVEL_BYTES, REP_LEVEL_BYTES, IS_COMPRESSED, HAS_CRC, CRC) = range(len(PAGE_FIELDS))


def _bytes(buf) -> np.ndarray:
    """``buf`` (a uint8 array, or bytes, a memoryview, a pyarrow Buffer...) as a contiguous
    uint8 array, without a copy where it is one already."""
    if isinstance(buf, np.ndarray):
        return np.ascontiguousarray(buf)  # another dtype: TypeError from the extension
    return np.frombuffer(buf, np.uint8)


def page_headers(chunk, start: int = 0, end: int | None = None) -> np.ndarray:
    """The pages of the Parquet column chunk at ``chunk[start:end]``: one row a page.

    Each page is a Thrift compact ``PageHeader`` followed by ``compressed_page_size`` bytes of
    payload; pages follow one another and the last one must end exactly at ``end``. Fields the
    reader does not need (statistics, fields of newer writers) are skipped whatever their Thrift
    types. The GIL is released while parsing (about 100 ns a page).

    Parameters
    ----------
    chunk : numpy.ndarray of uint8, or a bytes-like object
        The column chunk's raw bytes, or a whole file (then ``start`` and ``end`` come from
        the chunk's metadata: ``dictionary_page_offset`` or ``data_page_offset``, and that plus
        ``total_compressed_size``).
    start, end : int
        The chunk's byte range in ``chunk`` (``end`` None: ``len(chunk)``).

    Returns
    -------
    numpy.ndarray of int64, shape (npages, 12)
        One row a page; its columns, named in order by :data:`PAGE_FIELDS` (and indexed by
        :data:`TYPE` ... :data:`CRC`):

        - ``type``: :data:`DATA_PAGE`, :data:`INDEX_PAGE`, :data:`DICTIONARY_PAGE`,
          :data:`DATA_PAGE_V2` (another value is kept as it is);
        - ``header_offset``, ``payload_offset``: where the header and the payload start in
          ``chunk``;
        - ``compressed_size``, ``uncompressed_size``: the payload's size and its size once
          decompressed;
        - ``num_values``, ``encoding``: of the data, dictionary or v2 header (0 and -1 for
          other pages);
        - ``def_level_bytes``, ``rep_level_bytes``: v2 pages' levels, stored uncompressed at
          the payload's head (0 for other pages: a v1 page's levels are inside its payload);
        - ``is_compressed``: 0 for a v2 page that says so (its payload is not compressed by the
          chunk's codec), else 1;
        - ``has_crc``, ``crc``: whether the header holds a CRC, and the CRC as an unsigned
          32-bit value (``zlib.crc32`` of the payload as stored), 0 when it has none.

    Raises
    ------
    CorruptDataError
        Naming the page and what is wrong: a header that runs past ``end``, a varint of over 64
        bits, an i32 field out of range, nesting over 16 deep, a required field missing, a
        negative size or count, a payload that runs past ``end``, v2 levels larger than the
        page; ``start`` and ``end`` outside ``chunk`` too.

    Examples
    --------
    >>> from fsstgpu.native import parquet
    >>> header = bytes([0x15, 0x00,   # type: DATA_PAGE
    ...                 0x15, 0x0A,   # uncompressed_page_size: 5
    ...                 0x15, 0x0A,   # compressed_page_size: 5
    ...                 0x2C,         # data_page_header:
    ...                 0x15, 0x06, 0x15, 0x00, 0x15, 0x06, 0x15, 0x06,  # 3 values, PLAIN
    ...                 0x00, 0x00])  # its end, the header's end
    >>> pages = parquet.page_headers(header + b"12345")
    >>> dict(zip(parquet.PAGE_FIELDS, pages[0].tolist()))  # doctest: +NORMALIZE_WHITESPACE
    {'type': 0, 'header_offset': 0, 'payload_offset': 17, 'compressed_size': 5,
     'uncompressed_size': 5, 'num_values': 3, 'encoding': 0, 'def_level_bytes': 0,
     'rep_level_bytes': 0, 'is_compressed': 1, 'has_crc': 0, 'crc': 0}
    >>> parquet.page_headers(header + b"1234")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    fsstgpu.errors.CorruptDataError: Parquet page 0 (header at byte 0): its payload of 5 bytes ...
    """
    buf = _bytes(chunk)
    return _native.page_headers(buf, int(start), len(buf) if end is None else int(end))


def delta_binary_packed(buf, pos: int, end: int, max_values: int) -> tuple[np.ndarray, int]:
    """Decode the Parquet ``DELTA_BINARY_PACKED`` run at ``buf[pos:end]``: the CPU reference.

    A header (block size, a multiple of 128; miniblocks per block, each of a multiple of 32
    values; the value count; the first value, zigzag), then blocks of a minimum delta (zigzag),
    one bit width byte per miniblock (at most 64) and the miniblocks' deltas less the minimum,
    bit-packed. The last block stores only the miniblocks that hold values (the bit widths of
    all are present). The run is the head of a ``DELTA_LENGTH_BYTE_ARRAY`` page (its values'
    lengths, the bytes following) or an integer page's values.

    The sums wrap modulo 2**64, as the format's int64 arithmetic does: an encoder whose deltas
    overflowed (``2**63 - 1`` after ``-2**63``, say) and wrapped round-trips exactly.

    Parameters
    ----------
    buf : numpy.ndarray of uint8, or a bytes-like object
        A decompressed page, say.
    pos, end : int
        The run starts at ``buf[pos]`` and lies inside ``buf[pos:end]``.
    max_values : int
        More values than this is corrupt (the page header's value count): a forged count cannot
        make the output larger.

    Returns
    -------
    values : numpy.ndarray of int64
    past : int
        The position just past the run in ``buf`` (a miniblock's padding included).

    Raises
    ------
    CorruptDataError
        A header or block that runs past ``end``, a block size or miniblock count against the
        rules, a bit width over 64, more values than ``max_values``, a varint over 64 bits.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.native import parquet
    >>> # block of 128 values in 4 miniblocks, 3 values, the first 5; a block of minimum delta
    >>> # 1 and bit widths 1, 0, 0, 0: deltas 1 + 0, 1 + 1 in one miniblock of 32 bits
    >>> run = bytes([0x80, 0x01, 4, 3, 10, 2, 1, 0, 0, 0, 0b10, 0, 0, 0])
    >>> values, past = parquet.delta_binary_packed(run, 0, len(run), 3)
    >>> values.tolist(), past
    ([5, 6, 8], 14)
    """
    return _native.delta_binary_packed(_bytes(buf), int(pos), int(end), int(max_values))
