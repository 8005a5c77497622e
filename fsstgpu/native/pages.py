"""The compiled decoders of Parquet's value encodings (``fsstgpu._native``, C++ in
``fsstgpu/csrc/parquet_pages*``), for reading a file's pages raw
(:mod:`fsstgpu.formats.raw_pages`): the RLE / bit-packed hybrid of definition levels and
dictionary indices, DELTA_BINARY_PACKED, and the byte arrays of PLAIN, DELTA_LENGTH_BYTE_ARRAY
(the fsst codes' usual encoding) and DELTA_BYTE_ARRAY pages; and a column chunk's page headers.
"""

from __future__ import annotations

import numpy as np

from fsstgpu._native import (
    decode_leaf as _decode_leaf,
    delta_binary_packed as _delta_binary_packed,
    delta_byte_arrays as _delta_byte_arrays,
    delta_length_byte_arrays as _delta_length_byte_arrays,
    page_headers as _page_headers,
    plain_byte_arrays as _plain_byte_arrays,
    plan_chunks as _plan_chunks,
    rle_hybrid as _rle_hybrid,
)

__all__ = ["CHUNK_SPEC_FIELDS", "LEAF_BYTES", "LEAF_INT32", "LEAF_INT64", "PAGE_FIELDS",
           "PLAN_ERRORS", "PLAN_FIELDS", "decode_leaf", "delta_binary_packed",
           "delta_byte_arrays", "delta_length_byte_arrays", "page_headers", "plain_byte_arrays",
           "plan_chunks", "rle_hybrid"]

#: :func:`decode_leaf`'s physical types
LEAF_BYTES, LEAF_INT32, LEAF_INT64 = 0, 1, 2
#: :func:`page_headers`' columns, in order
PAGE_FIELDS = ("type", "encoding", "num_values", "start", "size", "uncompressed_size", "crc",
               "levels_size", "compressed", "levels_encoding", "rep_levels_size", "header_at")

#: :func:`plan_chunks`' ``specs`` columns, in order (``leaf``: 0 codes, 1 lengths, 2 cuts, 3
#: table; ``wide``: 1 where the lengths leaf is INT64)
CHUNK_SPEC_FIELDS = ("file_at", "size", "buf_at", "col_at", "num_values", "first_row",
                     "group", "leaf", "wide")
#: :func:`plan_chunks`' data page rows' columns, in order
PLAN_FIELDS = ("levels_at", "levels_size", "values_at", "values_end", "rows", "row0",
               "encoding", "width", "group", "chunk", "page")
#: the kinds of :func:`plan_chunks`' error, by number
PLAN_ERRORS = {1: "corrupt", 2: "unsupported", 3: "short_file", 4: "os"}


def page_headers(chunk, max_pages: int) -> np.ndarray:
    """Every page header of a Parquet column chunk's bytes ``chunk`` (any contiguous buffer,
    from its first header to its last page's end), read in C++ (Thrift's compact protocol,
    each header wholly checked as :mod:`fsstgpu.formats.thrift_compact` checks it): an int64
    row a page, its columns :data:`PAGE_FIELDS` (the page type: 0 data, 2 dictionary, 3 data
    v2; the CRC unsigned, -1 where none is stored; ``compressed`` 0 or 1).

    Raises
    ------
    fsstgpu.CorruptDataError
        For a malformed header, a header without the fields its page needs, a page running
        past the chunk, or more than ``max_pages`` pages (the message names the header's
        byte).

    Examples
    --------
    >>> import io, pyarrow as pa, pyarrow.parquet as pq
    >>> from fsstgpu.native.pages import page_headers
    >>> out = io.BytesIO()
    >>> pq.write_table(pa.table({"s": ["ab", "cd"] * 50}), out)
    >>> meta = pq.ParquetFile(io.BytesIO(out.getvalue())).metadata.row_group(0).column(0)
    >>> start = meta.dictionary_page_offset
    >>> rows = page_headers(out.getvalue()[start : start + meta.total_compressed_size], 100)
    >>> rows[:, :3].tolist()  # (a dictionary page of 2 values, a data page of 100)
    [[2, 0, 2], [0, 8, 100]]
    """
    return _page_headers(chunk, max_pages)


def rle_hybrid(data, bit_width: int, count: int) -> tuple[np.ndarray, int]:
    """``count`` values of Parquet's RLE / bit-packed hybrid encoding of ``bit_width``-bit
    values (0-32) from the bytes ``data`` (no length prefix), and the bytes they took.

    Raises
    ------
    fsstgpu.CorruptDataError
        Where the data ends before ``count`` values, or a run is malformed.
    ValueError
        For a bit width outside 0-32.

    Examples
    --------
    >>> from fsstgpu import native
    >>> # a run of 5 threes, then one bit-packed group of 8 values 0..7 (3 bits each)
    >>> values, end = native.rle_hybrid(bytes([5 << 1, 3, 3, 0x88, 0xC6, 0xFA]), 3, 13)
    >>> values.tolist(), end
    ([3, 3, 3, 3, 3, 0, 1, 2, 3, 4, 5, 6, 7], 6)
    """
    return _rle_hybrid(np.frombuffer(data, np.uint8), int(bit_width), int(count))


def delta_binary_packed(data, count: int) -> tuple[np.ndarray, int]:
    """The ``count`` int64 values of a DELTA_BINARY_PACKED run at the start of the bytes
    ``data`` (its header must declare ``count``), and the bytes they took.

    Raises
    ------
    fsstgpu.CorruptDataError
        Where the header is malformed or declares another count, or the data ends inside a
        block.

    Examples
    --------
    >>> from fsstgpu import native
    >>> # blocks of 128 values in 4 miniblocks, 3 values, first 10; a block: min delta 1,
    >>> # widths (1, 0, 0, 0), the first miniblock's 32 1-bit values (deltas 1 + 0, 1 + 1)
    >>> run = bytes([128, 1, 4, 3, 20, 2, 1, 0, 0, 0, 0b10, 0, 0, 0])
    >>> values, end = native.delta_binary_packed(run, 3)
    >>> values.tolist(), end
    ([10, 11, 13], 14)
    """
    return _delta_binary_packed(np.frombuffer(data, np.uint8), int(count))


def delta_length_byte_arrays(data, count: int) -> tuple[np.ndarray, int]:
    """The offsets (int64, ``count + 1`` from 0) of a DELTA_LENGTH_BYTE_ARRAY run of ``count``
    byte arrays at the start of ``data``, and where their bytes start in it: the arrays are
    ``data[start + offsets[k] : start + offsets[k + 1]]``, their bytes end to end.

    Raises
    ------
    fsstgpu.CorruptDataError
        Where the lengths are malformed, negative or run past the data.

    Examples
    --------
    >>> from fsstgpu import native
    >>> # lengths 2, 3 (first 2, one delta of 1: min delta 1, 0-bit miniblocks), then "abcde"
    >>> run = bytes([128, 1, 4, 2, 4, 2, 0, 0, 0, 0]) + b"abcde"
    >>> offsets, start = native.delta_length_byte_arrays(run, 2)
    >>> offsets.tolist(), run[start:]
    ([0, 2, 5], b'abcde')
    """
    return _delta_length_byte_arrays(np.frombuffer(data, np.uint8), int(count))


def plain_byte_arrays(data, count: int, *, values: bool = True
                      ) -> tuple[np.ndarray, np.ndarray, int]:
    """``count`` PLAIN byte arrays (each a 4-byte length, then its bytes) from the start of
    ``data``: their bytes end to end (uint8; none, not copied, with ``values=False``), their
    offsets (int64, ``count + 1`` from 0) and the bytes read.

    Raises
    ------
    fsstgpu.CorruptDataError
        Where a length runs past the data.

    Examples
    --------
    >>> from fsstgpu import native
    >>> values, offsets, end = native.plain_byte_arrays(b"\\2\\0\\0\\0ab\\0\\0\\0\\0", 2)
    >>> values.tobytes(), offsets.tolist(), end
    (b'ab', [0, 2, 2], 10)
    """
    return _plain_byte_arrays(np.frombuffer(data, np.uint8), int(count), bool(values))


def delta_byte_arrays(data, count: int) -> tuple[np.ndarray, np.ndarray, int]:
    """``count`` DELTA_BYTE_ARRAY strings (each a prefix of the one before, then a suffix;
    prefix lengths and suffixes as DELTA_BINARY_PACKED and DELTA_LENGTH_BYTE_ARRAY runs) from
    the start of ``data``: their bytes end to end, their offsets (``count + 1`` from 0) and the
    bytes read.

    Raises
    ------
    fsstgpu.CorruptDataError
        Where a prefix is longer than the string before it, or a run is malformed.

    Examples
    --------
    >>> from fsstgpu import native
    >>> zeros = bytes([128, 1, 4, 2, 0, 0, 0, 0, 0, 0])  # two zeros: "keep nothing"
    >>> suffixes = bytes([128, 1, 4, 2, 4, 2, 0, 0, 0, 0]) + b"abcde"  # lengths 2, 3
    >>> values, offsets, end = native.delta_byte_arrays(zeros + suffixes, 2)
    >>> values.tobytes(), offsets.tolist(), end == len(zeros + suffixes)
    (b'abcde', [0, 2, 5], True)
    """
    return _delta_byte_arrays(np.frombuffer(data, np.uint8), int(count))


def decode_leaf(bodies, pages, physical: int, max_def: int, *, keep_indices: bool = False,
                max_rows: int, in_place: bool = False, body_starts=None) -> tuple:
    """A Parquet leaf column chunk decoded into Arrow's layout in one call without the GIL: a
    top-level leaf (no repetition levels) with definition levels up to 2.

    Parameters
    ----------
    bodies : list of bytes-like
        Each page's payload decompressed (a version 2 data page's levels first).
    pages : numpy.ndarray of int64, shape (len(bodies), 6)
        A page's kind (0 data v1, 1 data v2, 2 dictionary), encoding, definition levels'
        encoding (v1), value count, repetition levels' bytes and levels' bytes (v2).
    physical : int
        ``LEAF_BYTES``, ``LEAF_INT32`` or ``LEAF_INT64``.
    max_def : int
        The leaf's greatest definition level: a row holds a value where its level is it.
    keep_indices : bool
        The values are a dictionary's indices, kept (every data page dictionary-encoded).
    max_rows : int
        The most rows the chunk may hold (its row group's).
    in_place : bool
        Byte arrays: leave a DELTA_LENGTH_BYTE_ARRAY page's bytes in its body and a
        dictionary-encoded value's in the dictionary page's (a device reader uploads the
        bodies as they are and gathers the values there) and say where the values' bytes are.
    body_starts : array of int64, optional
        With ``in_place``: where each page's body starts in the chunk's bytes (the bodies
        are views of them), to say where each row's bytes start there (``starts``).

    Returns
    -------
    tuple
        ``(levels, present, offsets, data, ints, indices, dict_offsets, dict_data, regions,
        starts)``:
        a definition level a row (uint8) and the rows holding a value; byte arrays' offsets
        over the rows (int64, from 0; a null row adds nothing) and bytes; or ints a row (int64,
        0 under a null); or (``keep_indices``) an index a row (uint32) and the dictionary's
        offsets and bytes; with ``in_place``, ``regions`` (int64, a row of (body, start, bytes)
        a run, adjacent runs of one body merged: body -1 for ``data``): the values' bytes are
        those runs end to end, and ``data`` holds only the bytes that had to be decoded; with
        ``body_starts``, ``starts`` (int64, a row: where its bytes start in the chunk, or
        ``-1 - i`` for ``data[i]``; 0 for an empty or null row); the others None.

    Raises
    ------
    fsstgpu.CorruptDataError
        For malformed pages.
    ValueError
        For a layout it does not take (read the chunk another way), or ``physical`` or
        ``max_def`` outside 0-2.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import native
    >>> # one v1 data page of 3 rows, levels (1, 0, 1) (RLE: a bit-packed group), PLAIN values
    >>> levels = bytes([3, 0b101])
    >>> body = len(levels).to_bytes(4, "little") + levels + b"\\1\\0\\0\\0a\\2\\0\\0\\0bc"
    >>> out = native.decode_leaf([body], np.array([[0, 0, 3, 3, 0, 0]]), native.LEAF_BYTES, 1,
    ...                          max_rows=3)
    >>> out[0].tolist(), out[1], out[2].tolist(), out[3].tobytes()
    ([1, 0, 1], 2, [0, 1, 1, 3], b'abc')
    >>> # the same values DELTA_LENGTH_BYTE_ARRAY-coded (lengths 1, 2), left in place
    >>> values = bytes([128, 1, 4, 2, 2, 2, 0, 0, 0, 0]) + b"abc"
    >>> body = len(levels).to_bytes(4, "little") + levels + values
    >>> out = native.decode_leaf([body], np.array([[0, 6, 3, 3, 0, 0]]), native.LEAF_BYTES, 1,
    ...                          max_rows=3, in_place=True)
    >>> out[2].tolist(), out[3].tobytes(), out[8].tolist(), body[16:19]
    ([0, 1, 1, 3], b'', [[0, 16, 3]], b'abc')
    >>> # the body at byte 100 of its chunk: each row's bytes start there + 16, + 17
    >>> out = native.decode_leaf([body], np.array([[0, 6, 3, 3, 0, 0]]), native.LEAF_BYTES, 1,
    ...                          max_rows=3, in_place=True, body_starts=[100])
    >>> out[9].tolist()
    [116, 0, 117]
    """
    return _decode_leaf([np.frombuffer(b, np.uint8) for b in bodies],
                        np.ascontiguousarray(pages, np.int64).reshape(-1, 6), int(physical),
                        int(max_def), bool(keep_indices), int(max_rows), bool(in_place),
                        None if body_starts is None
                        else np.ascontiguousarray(body_starts, np.int64))


def plan_chunks(buffer, fd: int, specs, *, check_crc: bool = True, threads: int = 1) -> tuple:
    """Fsst column chunks read from open file ``fd`` into ``buffer`` and planned for a device
    reader, ``threads`` chunks at a time without the GIL (:mod:`fsstgpu.formats.page_plan`'s
    step a chunk): each chunk's page headers read and checked against its footer entry, its
    pages' CRCs checked (``check_crc``), its data pages reduced to where their levels and values
    lie, its dictionary page's entry sizes (codes) or values (lengths) read.

    Parameters
    ----------
    buffer : numpy.ndarray of uint8
        Written in place: each chunk at its ``buf_at``.
    fd : int
        Read with ``pread`` (no shared position).
    specs : numpy.ndarray of int64, shape (chunks, 9)
        A chunk a row, its columns :data:`CHUNK_SPEC_FIELDS`; the chunks' buffer ranges in
        order and not overlapping (else ValueError). Positions returned count from ``col_at``.

    Returns
    -------
    rows : numpy.ndarray of int64, shape (data pages, 11)
        :data:`PLAN_FIELDS`, chunk after chunk.
    dictionaries : numpy.ndarray of int64, shape (chunks, 3)
        Each chunk's dictionary page: start, size, values; -1 each where there is none.
    entries : numpy.ndarray of uint64
        The codes' dictionary entries' sizes, or the lengths' dictionary values, chunk after
        chunk (none for the other leaves).
    entry_at : numpy.ndarray of int64, shape (chunks + 1,)
        Where each chunk's entries start.
    crcs : numpy.ndarray of int64, shape (pages, 4)
        Each page's chunk, start in its chunk, size and stored CRC (-1 where none is stored).
    error : tuple or None
        The first chunk that failed: ``(chunk, kind, page, message)``, ``kind`` a key of
        :data:`PLAN_ERRORS` (for ``"os"``, ``page`` is the errno), ``page`` -1 for the chunk,
        -2 for its dictionary page. The results above stop before that chunk.

    Examples
    --------
    >>> import io, os, tempfile, numpy as np, pyarrow as pa, pyarrow.parquet as pq
    >>> from fsstgpu.native.pages import plan_chunks
    >>> path = os.path.join(tempfile.mkdtemp(), "t.parquet")
    >>> pq.write_table(pa.table({"c": pa.array([7, 7, 9], pa.uint32())}), path,
    ...                compression="none")  # (read as an fsst column's lengths leaf)
    >>> col = pq.ParquetFile(path).metadata.row_group(0).column(0)
    >>> at, size = col.dictionary_page_offset, col.total_compressed_size
    >>> buffer = np.zeros(size, np.uint8)
    >>> fd = os.open(path, os.O_RDONLY)
    >>> rows, dicts, entries, entry_at, crcs, error = plan_chunks(
    ...     buffer, fd, np.array([[at, size, 0, 0, 3, 0, 0, 1, 0]]))  # (INT32 values)
    >>> os.close(fd)
    >>> error is None, len(rows), entries.tolist()  # (a data page; the dictionary's values)
    (True, 1, [7, 9])
    """
    return _plan_chunks(buffer, int(fd), np.asarray(specs, np.int64).reshape(-1, 9),
                        bool(check_crc), int(threads))
