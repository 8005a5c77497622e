"""The compiled walks and checks (``fsstgpu._native``, C++ in ``fsstgpu/csrc/scan*``,
``checks*``, ``layout*``, ``splits*``): :mod:`fsstgpu.scan`, :mod:`fsstgpu.checks`,
:mod:`fsstgpu.arrow_layout` and :mod:`fsstgpu.splits` are their documented homes.
"""

from __future__ import annotations

import numpy as np

from fsstgpu._native import (
    assemble_splits as _assemble_splits,
    count_set_bits as _count_set_bits,
    differences as _differences,
    distinct_upto as _distinct_upto,
    first_at_or_after as _first_at_or_after,
    first_decrease as _first_decrease,
    first_filled_null as _first_filled_null,
    first_misfit as _first_misfit,
    gather as _gather,
    length_sums as _length_sums,
    mark_code_starts as _mark_code_starts,
    narrow_lengths as _narrow_lengths,
    or_bits as _or_bits,
    running_sum as _running_sum,
    stored_rows as _stored_rows,
    string_bounds as _string_bounds,
    walk_codes as _walk_codes,
)
from fsstgpu.memory import pool_empty
from fsstgpu.parallel import thread_count

__all__ = ["assemble_splits", "count_set_bits", "differences", "distinct_upto", "first_at_or_after",
           "first_decrease", "first_filled_null", "first_misfit", "gather", "length_sums",
           "mark_code_starts", "narrow_lengths", "or_bits", "running_sum", "stored_rows",
           "string_bounds", "walk_codes"]



def walk_codes(codes, block_starts, symlen, code_offsets, lengths, mode, cut_size=0, max_cuts=0,
               split_codes=None, split_out=None, threads=None):
    """:func:`fsstgpu.scan.walk`'s loop: walk the codes without decoding them.

    Parameters
    ----------
    codes : numpy.ndarray of uint8
    block_starts : numpy.ndarray of int64, shape (nblocks + 1,)
        From 0 to n, non-decreasing (else ValueError).
    symlen : numpy.ndarray of uint8, shape (>= nblocks, 256)
        Each block's symbol lengths (0: no symbol).
    code_offsets, lengths : numpy.ndarray of int64 or None
        What ``mode`` (one of :data:`fsstgpu.scan.CHECK`, ``OFFSETS``, ``LENGTHS``, ``LONG``)
        needs; the one it derives may be None.
    cut_size, max_cuts : int
        Record the cuts of strings longer than ``cut_size`` (none when <= 0); more than
        ``max_cuts`` of them is corrupt.
    split_codes, split_out : numpy.ndarray of int64 or None
        Split points to check on the way.
    threads : int, optional

    Returns
    -------
    code_offsets, lengths : numpy.ndarray of int64 or None
        The one the mode derives (OFFSETS, LENGTHS), else None.
    cut_code, cut_out, cut_row : numpy.ndarray of int64

    Raises
    ------
    CorruptDataError
        As :func:`fsstgpu.scan.walk`, naming the same string (or split) whatever ``threads``.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import native
    >>> symlen = np.zeros((1, 256), np.uint8); symlen[0, 0] = 2
    >>> offs, _, *cuts = native.walk_codes(np.array([0, 255, 120, 0], np.uint8),
    ...                                    np.array([0, 2]), symlen, None, np.array([3, 2]), 1)
    >>> offs.tolist()
    [0, 3, 4]
    """
    def opt(a):
        return None if a is None else np.ascontiguousarray(a, np.int64)
    return _walk_codes(np.ascontiguousarray(codes, np.uint8),
                       np.ascontiguousarray(block_starts, np.int64),
                       np.ascontiguousarray(symlen, np.uint8), opt(code_offsets),
                       opt(lengths), int(mode), int(cut_size), int(max_cuts),
                       opt(split_codes), opt(split_out), thread_count(threads))


def length_sums(lengths, ncodes: int, positions, threads=None):
    """:func:`fsstgpu.checks.length_sums`, compiled: ``(total, prefix)``, same errors.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import native
    >>> total, prefix = native.length_sums(np.array([3, 0, 5]), 2, np.array([0, 2, 3]))
    >>> total, prefix.tolist()
    (8, [0, 3, 8])
    """
    return _length_sums(np.ascontiguousarray(lengths, np.int64), int(ncodes),
                        np.ascontiguousarray(positions, np.int64), thread_count(threads))


def first_misfit(code_offsets, lengths, threads=None) -> int:
    """The first string whose code count cannot yield its length (a code yields 1 to 8
    bytes, an escape pair 1), or -1.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import native
    >>> native.first_misfit(np.array([0, 1, 5]), np.array([8, 1]))
    1
    """
    return _first_misfit(np.ascontiguousarray(code_offsets, np.int64),
                         np.ascontiguousarray(lengths, np.int64), thread_count(threads))


def first_filled_null(validity, lengths, code_offsets=None, threads=None) -> int:
    """The first null string (its validity bit clear) with bytes or, when ``code_offsets``
    are given, codes; or -1.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import native
    >>> native.first_filled_null(np.array([0b01], np.uint8), np.array([1, 0]),
    ...                          np.array([0, 1, 2]))
    1
    """
    co = None if code_offsets is None else np.ascontiguousarray(code_offsets, np.int64)
    return _first_filled_null(np.ascontiguousarray(validity, np.uint8),
                              np.ascontiguousarray(lengths, np.int64), co,
                              thread_count(threads))


def count_set_bits(bitmap) -> int:
    """The number of 1 bits in a uint8 array.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import native
    >>> native.count_set_bits(np.array([0xFF, 0b101], np.uint8))
    10
    """
    return _count_set_bits(np.ascontiguousarray(bitmap, np.uint8))


def mark_code_starts(code_offsets, out, bit: int = 0) -> None:
    """Set, in the LSB-first bitmap ``out`` (uint8, written in place), bit ``bit +
    code_offsets[i]`` of every string ``i`` that has codes: where the strings' codes start.

    Raises
    ------
    ValueError
        Where a position lies outside ``out`` (the bits before it are set).

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import native
    >>> out = np.zeros(2, np.uint8)
    >>> native.mark_code_starts(np.array([0, 2, 2, 5]), out, 1)  # the empty string marks nothing
    >>> [int(b) for b in out]
    [10, 0]
    """
    _mark_code_starts(np.ascontiguousarray(code_offsets, np.int64), int(bit), out)


def or_bits(src, nbits: int, out, bit: int) -> None:
    """OR bits ``[0, nbits)`` of the LSB-first bitmap ``src`` into ``out`` (uint8, in place)
    from bit ``bit`` on.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import native
    >>> out = np.zeros(2, np.uint8)
    >>> native.or_bits(np.array([0b111], np.uint8), 2, out, 7)
    >>> [int(b) for b in out]
    [128, 1]
    """
    _or_bits(np.ascontiguousarray(src, np.uint8), int(nbits), out, int(bit))


def gather(data, starts, lengths, out_offsets, out, threads=None) -> None:
    """Copy ``data[starts[i]:starts[i] + lengths[i]]`` into ``out`` (writable uint8) at
    ``out_offsets[i]``, for every i; a range outside ``data`` or ``out`` is a ValueError.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import native
    >>> out = np.zeros(3, np.uint8)
    >>> native.gather(np.frombuffer(b"abcd", np.uint8), np.array([3, 0]), np.array([1, 2]),
    ...               np.array([0, 1]), out)
    >>> bytes(out)
    b'dab'
    """
    _gather(np.ascontiguousarray(data, np.uint8), np.ascontiguousarray(starts, np.int64),
            np.ascontiguousarray(lengths, np.int64),
            np.ascontiguousarray(out_offsets, np.int64), out, thread_count(threads))


def running_sum(lengths, out, threads=None) -> None:
    """``out[0] = 0``, ``out[i + 1] = lengths[:i + 1].sum()``, into ``out`` (writable int32 or
    int64, ``len(lengths) + 1`` entries; int32 keeps the low 32 bits).

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import native
    >>> out = np.empty(4, np.int32)
    >>> native.running_sum(np.array([2, 0, 3]), out)
    >>> out.tolist()
    [0, 2, 2, 5]
    """
    _running_sum(np.ascontiguousarray(lengths, np.int64), out, thread_count(threads))


def narrow_lengths(lengths, out, threads=None) -> int:
    """Copy ``lengths`` (int64) into ``out`` (a writable uint8, uint16, uint32 or uint64 array of
    as many entries, in place) keeping each value's low bytes, and return the bitwise OR of
    every length: in one pass, every length fits ``out``'s dtype (and none is negative) exactly
    when the OR does (``int(np.bitwise_or.reduce(lengths))`` as unsigned 64-bit).

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import native
    >>> out = np.empty(3, np.uint8)
    >>> native.narrow_lengths(np.array([3, 0, 260]), out), out.tolist()
    (263, [3, 0, 4])
    """
    return _narrow_lengths(np.ascontiguousarray(lengths, np.int64), out, thread_count(threads))


def differences(offsets, threads=None) -> np.ndarray:
    """``numpy.diff`` of int64 ``offsets`` (the lengths of the strings they bound), on every
    core: a new int64 array of ``len(offsets) - 1`` entries.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import native
    >>> native.differences(np.array([0, 2, 2, 7])).tolist()
    [2, 0, 5]
    """
    return _differences(np.ascontiguousarray(offsets, np.int64), thread_count(threads))


def assemble_splits(block_starts, row, code, out, cuts, ncodes: int, total: int, *,
                    by_row: bool = False, threads=None):
    """The split plan's last step (:func:`fsstgpu.splits.assemble_splits` documents the rules):
    the starts of rules 1-3 merged by (code position, string, block), the last start at each
    code position kept, those at or past ``ncodes`` dropped.

    Parameters
    ----------
    block_starts : numpy.ndarray of int64, shape (nblocks + 1,)
        Non-decreasing (forged ones get an answer, not necessarily NumPy's searchsorted's).
    row : numpy.ndarray of int64
        The blocks' first strings, then rule 2's strings.
    code, out : numpy.ndarray of int64
        Each row's code and output position; with ``by_row``, every string's (read at ``row``;
        a row outside them is a ValueError).
    cuts : tuple of three int64 arrays
        Code positions, output positions and strings of the cuts inside long strings.
    ncodes, total : int
    by_row : bool
    threads : int, optional
        Threads reading the rows' positions (default: the usable cores).

    Returns
    -------
    split_codes, split_out : numpy.ndarray of int64
    split_table : numpy.ndarray of uint16

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import native
    >>> empty = np.zeros(0, np.int64)
    >>> sc, so, st = native.assemble_splits(np.array([0, 3]), np.array([0, 2]),
    ...                                     np.array([0, 4]), np.array([0, 6]),
    ...                                     (empty, empty, empty), 6, 9)
    >>> sc.tolist(), so.tolist(), st.tolist()
    ([0, 4, 6], [0, 6, 9], [0, 0])
    """
    bs, row, code, out, cut_code, cut_out, cut_row = (
        np.ascontiguousarray(a, np.int64) for a in (block_starts, row, code, out, *cuts))
    return _assemble_splits(bs, row, code, out, bool(by_row), cut_code, cut_out, cut_row,
                            int(ncodes), int(total), thread_count(threads))


def first_at_or_after(offsets, step: int, count: int, threads=None) -> np.ndarray:
    """``numpy.searchsorted(offsets, step * (j + 1), "left")`` for ``j < count``, on every core:
    for each target, the first index whose offset reaches it (``len(offsets)`` when none does).
    The split planner's rule 2 (:func:`fsstgpu.splits.rule2_rows`) for non-decreasing int64
    offsets; other offsets get answers in ``0..len(offsets)``.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import native
    >>> native.first_at_or_after(np.array([0, 3, 6, 9]), 4, 2).tolist()  # targets 4 and 8
    [2, 3]
    """
    return _first_at_or_after(np.ascontiguousarray(offsets, np.int64), int(step),
                              int(count), thread_count(threads))


def first_decrease(a, threads=None) -> int:
    """The first ``i`` with ``a[i + 1] < a[i]`` (int32 as they are, other integers compared as
    int64), or -1.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import native
    >>> native.first_decrease(np.array([0, 3, 2, 4], np.int32)), native.first_decrease([1, 1])
    (1, -1)
    """
    a = np.asarray(a)
    a = np.ascontiguousarray(a if a.dtype == np.int32 else a.astype(np.int64, copy=False))
    return _first_decrease(a, thread_count(threads))


def distinct_upto(data, offsets, limit: int, validity=None) -> int:
    """The number of distinct valid strings ``data[offsets[i]:offsets[i + 1]]``, or
    ``limit + 1`` as soon as more than ``limit`` are found (the rest is not read): one pass, no
    copy of the values (``csrc/distinct.cpp``; strings told apart by a 64-bit hash).

    Parameters
    ----------
    data : numpy.ndarray of uint8
    offsets : numpy.ndarray of int64, shape (n + 1,)
        Checked as far as the count goes: non-decreasing, inside ``data`` (else ValueError).
    limit : int
    validity : numpy.ndarray of uint8, optional
        An Arrow bitmap of at least n bits; None: every string valid.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.native import distinct_upto
    >>> data = np.frombuffer(b"abababcd", np.uint8)
    >>> offsets = np.array([0, 2, 4, 6, 8])
    >>> distinct_upto(data, offsets, 10), distinct_upto(data, offsets, 1)
    (2, 2)
    """
    return _distinct_upto(np.ascontiguousarray(data, np.uint8),
                          np.ascontiguousarray(offsets, np.int64),
                          None if validity is None
                          else np.ascontiguousarray(validity, np.uint8), int(limit))


def string_bounds(data, offsets, validity=None, threads=None) -> tuple[int, int]:
    """Indices of the least and greatest valid strings ``data[offsets[i]:offsets[i + 1]]``,
    bytewise (Arrow's order of binary and UTF-8 strings); ``(-1, -1)`` when none is valid. Ties
    give the first index, whatever the thread count (``csrc/bounds.cpp``).

    Parameters
    ----------
    data : numpy.ndarray of uint8
    offsets : numpy.ndarray of int64, shape (n + 1,)
        Checked: non-decreasing, inside ``data`` (else ValueError).
    validity : numpy.ndarray of uint8, optional
        An Arrow bitmap of at least n bits; None: every string valid.
    threads : int, optional

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.native import string_bounds
    >>> data = np.frombuffer(b"kiwiapplebanana", np.uint8)
    >>> string_bounds(data, np.array([0, 4, 9, 15]))
    (1, 0)
    >>> string_bounds(data, np.array([0, 4, 9, 15]), np.array([0b101], np.uint8))
    (2, 0)
    """
    return _string_bounds(np.ascontiguousarray(data, np.uint8),
                          np.ascontiguousarray(offsets, np.int64),
                          None if validity is None
                          else np.ascontiguousarray(validity, np.uint8),
                          thread_count(threads))


#: :func:`stored_rows`'s statuses (``csrc/storage_rows.h``): all well, offsets decreasing or
#: outside the data, a valid row with a null child, a 64-bit length of 2**62 or more, a valid
#: row naming a table past the dictionary or a null / unusable one, a null row with codes, a
#: valid row whose code count cannot make its length (more than 2 codes a byte, or more than 8
#: bytes a code: what ``checks.check_structure`` checks, so a row-checked read need not).
(ROWS_OK, ROWS_OFFSETS, ROWS_NULL_CHILD, ROWS_LENGTH, ROWS_TABLE, ROWS_FILLED_NULL,
 ROWS_MISFIT) = range(7)


def stored_rows(n, row_bits, codes_bits, code_offsets, data_size, length_bits, lengths,
                table_bits, table_index, table_of):
    """One pass over the ``n`` rows of an fsst column's stored struct (version 4), without
    the GIL: each row's code offset (from 0) and length (0 under a null row), the runs of one
    table, the null rows counted, and the first thing that is off reported, never raised.

    Parameters
    ----------
    n : int
    row_bits, codes_bits, length_bits, table_bits : tuple or None
        ``(bitmap, first_bit)``: the struct's and its children's validity (uint8 arrays), or
        None for all valid.
    code_offsets : numpy.ndarray of int64, shape (n + 1,)
        The codes child's offsets (its ``offset`` applied).
    data_size : int
        Bytes of the codes child's data buffer.
    lengths : numpy.ndarray of uint32 or uint64, shape (n,)
    table_index : numpy.ndarray of uint16, shape (n,)
        The table child's dictionary indices.
    table_of : numpy.ndarray of int32
        Each dictionary entry's table id (-1: null or unusable).

    Returns
    -------
    status, nulls, code_offsets, lengths, run_starts, run_tables
        ``status`` one of :data:`ROWS_OK` ...; the rest meaningful only with ROWS_OK:
        ``nulls`` the clear bits of the four bitmaps (struct, codes, lengths, table),
        ``code_offsets`` from 0 (the given array when it starts at 0), ``run_starts`` 0,
        the first valid row of each run after the first, then n.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import native
    >>> status, nulls, co, lengths, starts, tables = native.stored_rows(
    ...     3, (np.array([0b101], np.uint8), 0), None, np.array([4, 6, 6, 9]), 9, None,
    ...     np.array([5, 7, 4], np.uint32), None, np.array([0, 0, 1], np.uint16),
    ...     np.array([0, 1], np.int32))
    >>> status, nulls, co.tolist(), lengths.tolist(), starts.tolist(), tables.tolist()
    (0, [1, 0, 0, 0], [0, 2, 2, 5], [5, 0, 4], [0, 2, 3], [0, 1])
    """
    def bits(b):
        return (None, 0) if b is None else (np.ascontiguousarray(b[0], np.uint8), int(b[1]))

    (rb, rf), (cb, cf), (lb, lf), (tb, tf) = (bits(b) for b in (row_bits, codes_bits,
                                                                length_bits, table_bits))
    code_offsets = np.ascontiguousarray(code_offsets, np.int64)
    # outputs in pyarrow's pool, which keeps freed pages (fresh ones cost a fault each)
    lengths_out = pool_empty(int(n), np.int64)
    rebased = pool_empty(int(n) + 1, np.int64) if len(code_offsets) and code_offsets[0] else None
    status, nulls, offsets, starts, tables = _stored_rows(
        int(n), rb, rf, cb, cf, code_offsets, int(data_size), lb, lf,
        np.ascontiguousarray(lengths), tb, tf, np.ascontiguousarray(table_index, np.uint16),
        np.ascontiguousarray(table_of, np.int32), lengths_out, rebased)
    return status, nulls, offsets, lengths_out, starts, tables
