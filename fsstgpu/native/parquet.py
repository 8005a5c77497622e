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
           "RLE_DICTIONARY", "TYPE", "UNCOMPRESSED_SIZE", "delta_binary_packed", "leaf_rows",
           "page_headers", "rle_hybrid", "LEAF_BYTES", "LEAF_INT32", "LEAF_INT64",
           "LEAF_INDICES"]

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


#: what :func:`leaf_rows` makes of a leaf's values: byte arrays (offsets and bytes), INT32 or
#: INT64 integers (each row's value), or a byte-array leaf's dictionary indices and entries
LEAF_BYTES, LEAF_INT32, LEAF_INT64, LEAF_INDICES = range(4)


def leaf_rows(kind: int, n: int, pages: np.ndarray, bodies: list) -> tuple:
    """One leaf of an fsst column's Parquet column chunk decoded from its pages: the leaf of a
    nullable struct column of ``n`` rows (definition levels up to 2, no repetition), as
    fsstgpu's writer makes it (``formats/files.md``).

    Parameters
    ----------
    kind : int
        :data:`LEAF_BYTES`, :data:`LEAF_INT32`, :data:`LEAF_INT64` or :data:`LEAF_INDICES`.
    n : int
        The row group's rows: the data pages' levels must add up to it.
    pages : numpy.ndarray of int64, shape (npages, 3)
        Each page's type (:data:`DATA_PAGE` v1 or :data:`DICTIONARY_PAGE`, at most one, first),
        value count and encoding, from :func:`page_headers`.
    bodies : list of numpy.ndarray of uint8
        Each page's payload, decompressed.

    Returns
    -------
    row_bits, value_bits : numpy.ndarray of uint8
        Bitmaps of the rows (least significant bit first): level >= 1 (the struct's row is
        valid) and level 2 (the leaf has a value).
    row_nulls, value_nulls : int
        Their clear bits.
    offsets, data : numpy.ndarray of int64 and uint8, or None
        Byte arrays: ``n + 1`` offsets from 0 (a row without a value is empty), the bytes.
    values : numpy.ndarray of uint64 or None
        Integers: each row's value (0 without one; INT32 as its unsigned 32 bits).
    index : numpy.ndarray of uint32 or None
        :data:`LEAF_INDICES`: each row's dictionary index (0 without one).
    entries : numpy.ndarray of int64
        The dictionary's entries of a byte-array leaf, as (start, size) pairs in its page's
        payload.

    Raises
    ------
    CorruptDataError
        For anything that cannot be right, and for encodings and page kinds fsstgpu's writer
        does not make (v2 pages, other encodings): the caller reads such a chunk through
        pyarrow, which names the fault.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.native import parquet
    >>> # 3 rows, levels 2, 0, 2 (3 bytes: one bit-packed group of 8, header 0x03, 2 bits a
    >>> # level: 0x22, 0x00), then two PLAIN values "ab" and "c"
    >>> page = bytes([3, 0, 0, 0, 0x03, 0x22, 0, 2, 0, 0, 0]) + b"ab" + bytes([1, 0, 0, 0]) + b"c"
    >>> out = parquet.leaf_rows(parquet.LEAF_BYTES, 3, np.array([[0, 3, 0]]),
    ...                         [np.frombuffer(page, np.uint8)])
    >>> out[0].tolist(), out[2], out[4].tolist(), out[5].tobytes()
    ([5], 1, [0, 2, 2, 3], b'abc')
    """
    return _native.leaf_rows(int(kind), int(n), np.ascontiguousarray(pages, np.int64),
                             [_bytes(b) for b in bodies])


def rle_hybrid(buf, pos: int, end: int, width: int, count: int) -> tuple[np.ndarray, int]:
    """The first ``count`` values of Parquet's RLE / bit-packed hybrid run of bit width
    ``width`` (0-32) at ``buf[pos:end]``, and where its last group ends.

    Examples
    --------
    >>> from fsstgpu.native import parquet
    >>> # a run of three 3s (header 3 << 1), then 8 bit-packed values (header 1 << 1 | 1)
    >>> values, past = parquet.rle_hybrid(bytes([0x06, 3, 0x03, 0b11100100, 0]), 0, 5, 2, 7)
    >>> values.tolist(), past
    ([3, 3, 3, 0, 1, 2, 3], 5)
    """
    return _native.rle_hybrid(_bytes(buf), int(pos), int(end), int(width), int(count))
