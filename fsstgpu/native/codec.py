"""The compiled encoder, decoder and UTF-8 check (``fsstgpu._native``), for NumPy arrays.

:mod:`fsstgpu.native` documents the extension as a whole; this module holds the entry points of
the codec itself: the instruction set in use, matchers, encoding, decoding and the UTF-8 check.

>>> from fsstgpu import native
>>> native.isa() in native.supported_isas()
True
"""

from __future__ import annotations

import numpy as np

from fsstgpu._native import (
    best_isa as _best_isa,
    check_splits as _check_splits,
    compact_tables as _compact_tables,
    decode_all as _decode_all,
    decode_range as _decode_range,
    encode_symbols as _encode_symbols,
    first_invalid_string as _first_invalid_string,
    isa as _isa,
)
from fsstgpu.errors import CorruptDataError, invalid_utf8_error
from fsstgpu.parallel import thread_count
from fsstgpu.symbol_table import SymbolTable, pack_tables

__all__ = ["check_splits", "compact_tables", "decode_all", "decode_codes", "decode_range",
           "encode_blocks", "first_invalid_string", "isa", "supported_isas"]

_ISAS = ("scalar", "avx2", "avx512")


def isa() -> str:
    """The instruction set the kernels run with: ``"avx512"``, ``"avx2"`` or ``"scalar"``.

    Examples
    --------
    >>> from fsstgpu import native
    >>> native.isa() in ("scalar", "avx2", "avx512")
    True
    """
    return _isa()


def supported_isas() -> tuple[str, ...]:
    """The instruction sets this CPU can run the kernels with, lowest first (``FSSTGPU_ISA``
    picks one of them).

    Examples
    --------
    >>> from fsstgpu import native
    >>> native.supported_isas()[0], native.isa() in native.supported_isas()
    ('scalar', True)
    """
    return _ISAS[: _ISAS.index(_best_isa()) + 1]


def encode_blocks(tables, data, offsets, block_starts, threads=None):
    """Compress strings ``block_starts[b]:block_starts[b + 1]`` with ``tables[b]``, every block.

    Parameters
    ----------
    tables : sequence of SymbolTable
        One per block.
    data : numpy.ndarray of uint8
    offsets : numpy.ndarray of int64, shape (n + 1,)
        String boundaries in ``data`` (non-decreasing, inside ``data``).
    block_starts : numpy.ndarray of int64, shape (len(tables) + 1,)
        From 0 to n, non-decreasing.
    threads : int, optional
        Threads to use (default: the usable cores).

    Returns
    -------
    codes : numpy.ndarray of uint8
    code_offsets : numpy.ndarray of int64, shape (n + 1,), starting at 0

    Raises
    ------
    ValueError
        If the offsets or block starts are out of order or outside their arrays.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import SymbolTable, native
    >>> tables = [SymbolTable([b"ab"]), SymbolTable([b"xa"])]
    >>> codes, offs = native.encode_blocks(tables, np.frombuffer(b"abxab", np.uint8),
    ...                                    np.array([0, 3, 5]), np.array([0, 1, 2]), threads=2)
    >>> codes.tolist(), offs.tolist()
    ([0, 255, 120, 255, 97, 255, 98], [0, 3, 7])
    """
    # the tables as symbols: the lookup tables are built in the call, in parallel, a few
    # blocks' at a time (a matcher each is ~280 KB: thousands of blocks would hold a GB)
    tables = list(tables)
    counts = np.array([len(t) for t in tables], np.int64)
    values = np.concatenate([t.packed for t in tables]) if tables else np.empty(0, np.uint64)
    lengths = np.concatenate([t.lengths for t in tables]) if tables else np.empty(0, np.uint8)
    return _encode_symbols(np.ascontiguousarray(data, np.uint8),
                           np.ascontiguousarray(offsets, np.int64),
                           np.ascontiguousarray(block_starts, np.int64),
                           np.ascontiguousarray(values, np.uint64),
                           np.ascontiguousarray(lengths, np.uint8), counts,
                           thread_count(threads))


def decode_codes(codes, start, end, packed, lens, out, out_pos, out_end) -> int:
    """The decoding kernel: decode ``codes[start:end]`` into
    ``out[out_pos:out_end]``; return the output end, or -1 when the codes are corrupt.

    Parameters
    ----------
    codes : numpy.ndarray of uint8
    start, end : int
    packed : numpy.ndarray of uint64, shape (256,)
        A row of :func:`fsstgpu.symbol_table.pack_tables`.
    lens : numpy.ndarray of uint8, shape (256,)
        Its lengths (0: no symbol; at most 8).
    out : numpy.ndarray of uint8
        Written only in ``out[out_pos:out_end]`` (and in place: it must be writable uint8).
    out_pos, out_end : int

    Returns
    -------
    int
        -1 for an unknown code, an escape as the last code, or output past ``out_end``.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import SymbolTable, native
    >>> from fsstgpu.symbol_table import pack_tables
    >>> packed, lens = pack_tables([SymbolTable([b"ab"])])
    >>> out = np.zeros(4, np.uint8)
    >>> native.decode_codes(np.array([0, 255, 120], np.uint8), 0, 3, packed[0], lens[0], out,
    ...                     0, 4)
    3
    >>> native.decode_codes(np.array([0, 255], np.uint8), 0, 2, packed[0], lens[0], out, 0, 4)
    -1
    """
    return _decode_range(np.ascontiguousarray(codes, np.uint8), int(start), int(end),
                         np.ascontiguousarray(packed, np.uint64),
                         np.ascontiguousarray(lens, np.uint8), out, int(out_pos),
                         int(out_end))


def decode_range(table: SymbolTable, codes, start: int, end: int, out, out_pos: int,
                 out_end: int) -> int:
    """Decode ``codes[start:end]`` into ``out`` from ``out_pos``; return the output end.

    Parameters
    ----------
    table : SymbolTable
    codes : numpy.ndarray of uint8
    start, end : int
        The codes to decode, ``0 <= start <= end <= len(codes)``.
    out : numpy.ndarray of uint8
        Written in place, only in ``out[out_pos:out_end]`` (writable uint8, else TypeError).
    out_pos, out_end : int
        The output range, ``0 <= out_pos <= out_end <= len(out)``.

    Returns
    -------
    int
        The position after the last byte written.

    Raises
    ------
    CorruptDataError
        If the codes run past ``out_end``, end in an escape, or use a code the table lacks.
    ValueError
        If a range lies outside its array.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import SymbolTable, native
    >>> out = np.zeros(3, np.uint8)
    >>> native.decode_range(SymbolTable([b"ab"]), np.array([0, 255, 120], np.uint8), 0, 3,
    ...                     out, 0, 3)
    3
    >>> bytes(out)
    b'abx'
    """
    packed, lens = pack_tables([table])
    o = decode_codes(codes, start, end, packed[0], lens[0], out, out_pos, out_end)
    if o < 0:
        raise CorruptDataError(
            f"codes {start}..{end} do not decode into output bytes {out_pos}..{out_end} "
            "(unknown code, escape at the end, or output overflow)"
        )
    return o


def compact_tables(tables):
    """The tables as the CPU decoder reads them: every symbol, table after table (uint64, then
    255 zero words so that a kernel may read any code's word before it checks the code), where
    each table's symbols start (int64, ``ntables + 1``), and a (ntables, 256) uint8 array of
    lengths (0 for codes a table lacks and for the escape).

    :func:`~fsstgpu.symbol_table.pack_tables` gives every table 256 symbols of 8 bytes: 2.3 KB
    a table, so a blob of 65536 tables of 17 bytes each took 135 times its size to decode (issue
    #20, finding 6). This takes 256 bytes a table and 8 a symbol.

    Examples
    --------
    >>> from fsstgpu import SymbolTable
    >>> from fsstgpu.native import compact_tables
    >>> packed, first, lens = compact_tables([SymbolTable([b"ab", b"c"]), SymbolTable([])])
    >>> [hex(int(v)) for v in packed[:2]], len(packed), first.tolist(), lens[0, :3].tolist()
    (['0x63', '0x6261'], 257, [0, 2, 2], [1, 2, 0])
    """
    # (in C++: numpy's concatenate of many small arrays cost 1 us a table)
    return _compact_tables(tables if isinstance(tables, (list, tuple)) else list(tables))


def decode_all(tables, codes, split_codes, split_out, split_table, total_out: int, *,
               string_ends=None, code_offsets=None, check_ends: bool = True, utf8: bool = False,
               threads=None, alloc=None) -> np.ndarray:
    """Decode a whole column from its split points; return its ``total_out`` data bytes.

    Split ``k`` decodes ``codes[split_codes[k]:split_codes[k+1]]`` with ``tables[split_table[k]]``
    into output bytes ``split_out[k]:split_out[k+1]`` (the contract in :mod:`fsstgpu.arrays`).
    Splits are decoded in parallel. With ``string_ends`` (and ``check_ends``) the decode also
    checks, in the same walk, that no symbol (or escape) runs across a string's end and, with
    ``code_offsets``, that each string's codes start where they say: then the column decodes
    here exactly when every string decodes alone (``carr[i]``, ``take``) and
    :meth:`~fsstgpu.CompressedStringArray.validate` passes, to the same bytes. With ``utf8``
    every string must be valid UTF-8 (:func:`fsstgpu.utf8.check_utf8`'s rules and message),
    checked split by split right after it is decoded, while its bytes are in the cache.

    Parameters
    ----------
    tables : sequence of SymbolTable
    codes : numpy.ndarray of uint8
    split_codes, split_out : numpy.ndarray of int64, shape (nsplits + 1,)
    split_table : numpy.ndarray of integers, shape (nsplits,)
    total_out : int
    string_ends : numpy.ndarray of int32 or int64, shape (n + 1,), optional
        The strings' output offsets (the Arrow offsets: from 0, non-decreasing, ending at
        ``total_out``).
    code_offsets : numpy.ndarray of int64, shape (n + 1,), optional
        Where each string's codes start, when stored (only with ``string_ends``).
    check_ends : bool
        Check the string ends in the walk (False: a column known good, ``string_ends`` given
        for ``utf8`` only).
    utf8 : bool
        Check that every string is valid UTF-8 (needs ``string_ends``).
    threads : int, optional
        Threads to use (default: the usable cores).
    alloc : callable, optional
        ``alloc(total_out)`` gives the output: a writable C-ordered uint8 array of exactly that
        size (:func:`fsstgpu.memory.pool_empty`: pyarrow's memory pool); called once the split
        points are checked, so a forged size fails before any allocation. Default: numpy's.

    Returns
    -------
    numpy.ndarray of uint8, shape (total_out,)

    Raises
    ------
    CorruptDataError
        If the split arrays are inconsistent, any split does not decode to exactly its range, a
        symbol crosses a string end, a code offset disagrees with the codes or (``utf8``) a
        string is not valid UTF-8.
    ValueError
        For ``code_offsets`` or ``utf8`` without ``string_ends``.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import SymbolTable
    >>> from fsstgpu.native import decode_all
    >>> codes = np.array([0, 255, 120, 0], np.uint8)
    >>> args = ([SymbolTable([b"ab"])], codes, np.array([0, 3, 4]), np.array([0, 3, 5]),
    ...         np.array([0, 0], np.uint16), 5)
    >>> bytes(decode_all(*args))
    b'abxab'
    >>> decode_all(*args, string_ends=np.array([0, 1, 5]))  # "a" + "bxab": "ab" crosses
    Traceback (most recent call last):
    ...
    fsstgpu.errors.CorruptDataError: string 0: a symbol runs across its end (split 0, codes 0..3)
    """
    total_out = int(total_out)
    if string_ends is None:
        if code_offsets is not None or utf8:
            raise ValueError("code_offsets and utf8 are checked against string_ends: give them")
        ends = np.zeros(0, np.int64)
        check_ends = False
    else:
        ends = np.asarray(string_ends)
        if ends.ndim != 1 or not len(ends):  # the C++ check names the rest
            raise CorruptDataError(f"string ends must run from 0 to the {total_out} output bytes")
        ends = np.ascontiguousarray(ends, np.int32 if ends.dtype == np.int32 else np.int64)
    offsets = np.zeros(0, np.int64)
    if code_offsets is not None and check_ends:
        offsets = np.ascontiguousarray(code_offsets, np.int64)
        if offsets.ndim != 1 or offsets.shape != ends.shape:
            raise CorruptDataError(f"code offsets must be {len(ends)} positions from 0 to "
                                   f"{np.size(codes)}")
    packed, first, lens = compact_tables(tables)
    codes = np.ascontiguousarray(codes, np.uint8)
    out, bad = _decode_all(codes, np.ascontiguousarray(split_codes, np.int64),
                           np.ascontiguousarray(split_out, np.int64),
                           _table_indices(split_table), packed, first,
                           lens, total_out, ends, bool(check_ends), offsets, bool(utf8),
                           thread_count(threads), alloc)
    if bad >= 0:
        raise invalid_utf8_error(out, ends, bad, "decoded column")
    return out


def check_splits(split_codes, split_out, split_table, ncodes: int, total_out: int,
                 ntables: int) -> None:
    """Check a column's split points as the decoder does (``csrc/decode.cpp``'s check_splits,
    run by :func:`decode_all` too): ``nsplits + 1`` code and output starts running
    non-decreasing from 0 to ``ncodes`` and to ``total_out``, table indices below ``ntables``.

    Raises
    ------
    CorruptDataError
        Naming the first broken invariant.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.native import check_splits
    >>> check_splits(np.array([0, 3]), np.array([0, 5]), np.array([0]), 3, 5, 1)
    >>> check_splits(np.array([0, 3]), np.array([0, 4]), np.array([0]), 3, 5, 1)
    Traceback (most recent call last):
    ...
    fsstgpu.errors.CorruptDataError: split output positions must run from 0 to 5, not 0 to 4
    """
    _check_splits(np.ascontiguousarray(split_codes, np.int64),
                  np.ascontiguousarray(split_out, np.int64), _table_indices(split_table),
                  int(ncodes), int(total_out), int(ntables))


def _table_indices(split_table) -> np.ndarray:
    """``split_table`` for the compiled code: a column's uint16 indices as they are (an int64
    copy is 8 bytes a split: split_size=1 makes a split a code), any other as int64."""
    table = np.asarray(split_table)
    return np.ascontiguousarray(table, np.uint16 if table.dtype == np.uint16 else np.int64)


def first_invalid_string(data, offsets, threads=None) -> int:
    """:func:`fsstgpu.utf8.first_invalid_string`, compiled: the index of the first string that
    is not valid UTF-8 (RFC 3629: no overlong forms, surrogates or code points past U+10FFFF),
    or -1 when all are.

    Parameters
    ----------
    data : numpy.ndarray of uint8
    offsets : numpy.ndarray of int32 or int64, shape (n + 1,)
        Non-decreasing, inside ``data`` (else ValueError).
    threads : int, optional

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import native
    >>> data = np.frombuffer("añb".encode() + b"\\xff", np.uint8)
    >>> native.first_invalid_string(data, np.array([0, 1, 3, 4, 5]))
    3
    >>> native.first_invalid_string(data, np.array([0, 2, 3], np.int32))  # cut inside 'ñ'
    0
    """
    offsets = np.asarray(offsets)
    if offsets.dtype != np.int32:
        offsets = offsets.astype(np.int64, copy=False)
    return _first_invalid_string(np.ascontiguousarray(data, np.uint8),
                                 np.ascontiguousarray(offsets), thread_count(threads))
