"""The compiled CPU codec (C++17, built by ``pip install``): encoder, decoder and UTF-8 check.

This module is the documented face of the extension ``fsstgpu._native`` (sources in
``fsstgpu/csrc``). Every entry point validates its arguments, releases the GIL and spreads the
work over ``threads`` std::threads (default :func:`fsstgpu.parallel.usable_cores`, which honours
``FSSTGPU_THREADS``); results do not depend on the thread count.

The hot loops are compiled three times (scalar, AVX2, AVX-512) and picked at run time for the
CPU at hand (:func:`isa`); ``FSSTGPU_ISA=scalar`` (or ``avx2``) steps down to a lower copy.

* :func:`encode_blocks`: greedy longest-match FSST encoding (the codes of
  :func:`fsstgpu.testing.greedy_encode`);
* :func:`decode_codes` / :func:`decode_range` / :func:`decode_all`: FSST decoding (one run of
  codes, a whole column from its split points, with every corruption check; :mod:`fsstgpu.decoder`
  is their documented home);
* :func:`first_invalid_string`: :func:`fsstgpu.utf8.first_invalid_string`'s contract.

>>> import numpy as np
>>> from fsstgpu import SymbolTable, native
>>> t = SymbolTable([b"ab"])
>>> codes, offs = native.encode_blocks([t], np.frombuffer(b"abxab", np.uint8),
...                                    np.array([0, 3, 5]), np.array([0, 2]))
>>> codes.tolist(), offs.tolist()
([0, 255, 120, 0], [0, 3, 4])
>>> native.isa() in ("scalar", "avx2", "avx512")
True
"""

from __future__ import annotations

import functools

import numpy as np

from fsstgpu import _native
from fsstgpu.errors import CorruptDataError
from fsstgpu.parallel import usable_cores
from fsstgpu.symbol_table import SymbolTable, pack_tables

__all__ = ["compact_tables", "decode_all", "decode_codes", "decode_range", "encode_blocks",
           "encode_matched", "first_invalid_string", "isa", "matcher", "matcher_of",
           "supported_isas"]

_ISAS = ("scalar", "avx2", "avx512")


def isa() -> str:
    """The instruction set the kernels run with: ``"avx512"``, ``"avx2"`` or ``"scalar"``.

    Examples
    --------
    >>> from fsstgpu import native
    >>> native.isa() in ("scalar", "avx2", "avx512")
    True
    """
    return _native.isa()


def supported_isas() -> tuple[str, ...]:
    """The instruction sets this CPU can run the kernels with, lowest first (``FSSTGPU_ISA``
    picks one of them).

    Examples
    --------
    >>> from fsstgpu import native
    >>> native.supported_isas()[0], native.isa() in native.supported_isas()
    ('scalar', True)
    """
    return _ISAS[: _ISAS.index(_native.best_isa()) + 1]


def _threads(threads) -> int:
    return usable_cores() if threads is None else max(1, int(threads))


@functools.lru_cache(maxsize=64)
def matcher(table: SymbolTable):
    """The compiled longest-match tables of ``table`` (memoised: tables are immutable).

    Examples
    --------
    >>> from fsstgpu import SymbolTable, native
    >>> native.matcher(SymbolTable([b"ab", b"c"])).nsymbols
    2
    """
    return matcher_of(table.packed, table.lengths)


def matcher_of(values, lengths):
    """The compiled longest-match tables for symbols that need not make a SymbolTable (block
    planning's probe symbols): symbol ``i`` (bytes ``values[i]``, little-endian, zero beyond
    ``lengths[i]``) gets code ``i``; at most 255 symbols of 1-8 bytes (else ValueError).

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import native
    >>> m = native.matcher_of(np.array([0x6261], np.uint64), np.array([2]))
    >>> codes, _ = native.encode_matched([m], np.frombuffer(b"abc", np.uint8), np.array([0, 3]),
    ...                                  np.array([0, 1]))
    >>> codes.tolist()
    [0, 255, 99]
    """
    values = np.ascontiguousarray(values, np.uint64)
    lengths = np.asarray(lengths)
    if lengths.size and (lengths.min() < 1 or lengths.max() > 8):
        raise ValueError("symbols are 1-8 bytes long")
    return _native.Matcher(values, np.ascontiguousarray(lengths, np.uint8))


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
    return encode_matched([matcher(t) for t in tables], data, offsets, block_starts, threads)


def encode_matched(matchers, data, offsets, block_starts, threads=None):
    """:func:`encode_blocks` with compiled tables (:func:`matcher`, :func:`matcher_of`) in
    place of the symbol tables."""
    return _native.encode_blocks(np.ascontiguousarray(data, np.uint8),
                                 np.ascontiguousarray(offsets, np.int64),
                                 np.ascontiguousarray(block_starts, np.int64), list(matchers),
                                 _threads(threads))


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
    return _native.decode_range(np.ascontiguousarray(codes, np.uint8), int(start), int(end),
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
    ntables = len(tables)
    counts = np.fromiter((len(t.lengths) for t in tables), np.int64, ntables)
    first = np.zeros(ntables + 1, np.int64)
    np.cumsum(counts, out=first[1:])
    total = int(first[-1])
    packed = np.zeros(total + 255, np.uint64)
    lens = np.zeros((max(ntables, 1), 256), np.uint8)  # one row at least: a kernel indexes
    if total:  # whole arrays at once: a blob may hold 65536 tables
        packed[:total] = np.concatenate([t.packed for t in tables])
        rows = np.repeat(np.arange(ntables), counts)
        lens[rows, np.arange(total) - first[rows]] = np.concatenate([t.lengths for t in tables])
    return packed, first, lens


def decode_all(tables, codes, split_codes, split_out, split_table, total_out: int, *,
               string_ends=None, code_offsets=None, check_ends: bool = True, utf8: bool = False,
               threads=None) -> np.ndarray:
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
    out, bad = _native.decode_all(codes, np.ascontiguousarray(split_codes, np.int64),
                                  np.ascontiguousarray(split_out, np.int64),
                                  np.ascontiguousarray(split_table, np.int64), packed, first,
                                  lens, total_out, ends, bool(check_ends), offsets, bool(utf8),
                                  _threads(threads))
    if bad >= 0:
        from fsstgpu.utf8 import invalid_utf8_error  # (fsstgpu.utf8 imports this module)

        raise invalid_utf8_error(out, ends, bad, "decoded column")
    return out


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
    return _native.first_invalid_string(np.ascontiguousarray(data, np.uint8),
                                        np.ascontiguousarray(offsets), _threads(threads))


# ---- train ----
# The compiled trainer (csrc/train.h, also called from C++): fsstgpu.training documents the
# algorithm and makes SymbolTables of these symbols. Symbols come as (values, lengths): uint64
# little-endian bytes, zero beyond each length, and uint8 lengths 1-8, in no particular order.


def train_symbols(data, offsets, lo, hi, sample_bytes, seed, extra_rounds=3):
    """Train symbols on strings ``lo:hi`` of ``data``/``offsets``: a sample of
    ``sample_bytes`` (:func:`sample_of`) and ``4 + extra_rounds + 1`` rounds of
    compress-and-count (``extra_rounds=0``: the reference's five, for cheap probe tables).

    Parameters
    ----------
    data : numpy.ndarray of uint8
    offsets : numpy.ndarray of int64
        ``offsets[lo:hi + 1]`` non-decreasing, inside ``data`` (else ValueError).
    lo, hi : int
        The strings to train on, ``0 <= lo <= hi < len(offsets)``.
    sample_bytes : int
        At least 1.
    seed : int
        The sample's generator seed (:data:`fsstgpu.training.SEED` for tables).
    extra_rounds : int, optional

    Returns
    -------
    values : numpy.ndarray of uint64
    lengths : numpy.ndarray of uint8
        At most 255 distinct symbols.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import native
    >>> data = np.frombuffer(b"hello world" * 100, np.uint8)
    >>> values, lengths = native.train_symbols(data, np.arange(0, 1101, 11), 0, 100, 4096, 1)
    >>> int.from_bytes(b"hello wo", "little") in values.tolist()
    True
    """
    return _native.train_range(np.ascontiguousarray(data, np.uint8),
                               np.ascontiguousarray(offsets, np.int64), int(lo), int(hi),
                               int(sample_bytes), int(seed), int(extra_rounds))


def train_sample(sample, offsets, extra_rounds=3):
    """:func:`train_symbols` on a sample as it is: strings ``sample[offsets[i]:offsets[i + 1]]``.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import native
    >>> values, lengths = native.train_sample(np.frombuffer(b"abcabcabc" * 200, np.uint8),
    ...                                       np.arange(0, 1801, 9), extra_rounds=0)
    >>> sorted(int(v).to_bytes(8, "little")[:n] for v, n in zip(values, lengths))
    [b'a', b'abcabca', b'b', b'bc']
    """
    return _native.train_sample(np.ascontiguousarray(sample, np.uint8),
                                np.ascontiguousarray(offsets, np.int64), int(extra_rounds))


def sample_of(data, offsets, lo, hi, sample_bytes, seed):
    """The training sample of strings ``lo:hi``: all of them (copied) when they hold fewer than
    ``sample_bytes`` bytes, else random strings (a random 512-byte piece of longer ones) from a
    generator seeded with ``seed`` until ``sample_bytes`` bytes are collected.

    Returns
    -------
    sample : numpy.ndarray of uint8
    sample_offsets : numpy.ndarray of int64
        The pieces' boundaries in ``sample``, from 0.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import native
    >>> data = np.frombuffer(b"ab" * 1000, np.uint8)
    >>> sample, offs = native.sample_of(data, np.array([0, 2000]), 0, 1, 100, seed=7)
    >>> len(sample), offs.tolist()  # one random 512-byte piece of the 2000-byte string
    (512, [0, 512])
    """
    return _native.sample_of(np.ascontiguousarray(data, np.uint8),
                             np.ascontiguousarray(offsets, np.int64), int(lo), int(hi),
                             int(sample_bytes), int(seed))


__all__ += ["sample_of", "train_sample", "train_symbols"]


# ---- scan ----


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
    return _native.walk_codes(np.ascontiguousarray(codes, np.uint8),
                              np.ascontiguousarray(block_starts, np.int64),
                              np.ascontiguousarray(symlen, np.uint8), opt(code_offsets),
                              opt(lengths), int(mode), int(cut_size), int(max_cuts),
                              opt(split_codes), opt(split_out), _threads(threads))


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
    return _native.length_sums(np.ascontiguousarray(lengths, np.int64), int(ncodes),
                               np.ascontiguousarray(positions, np.int64), _threads(threads))


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
    return _native.first_misfit(np.ascontiguousarray(code_offsets, np.int64),
                                np.ascontiguousarray(lengths, np.int64), _threads(threads))


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
    return _native.first_filled_null(np.ascontiguousarray(validity, np.uint8),
                                     np.ascontiguousarray(lengths, np.int64), co,
                                     _threads(threads))


def count_set_bits(bitmap) -> int:
    """The number of 1 bits in a uint8 array.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import native
    >>> native.count_set_bits(np.array([0xFF, 0b101], np.uint8))
    10
    """
    return _native.count_set_bits(np.ascontiguousarray(bitmap, np.uint8))


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
    _native.gather(np.ascontiguousarray(data, np.uint8), np.ascontiguousarray(starts, np.int64),
                   np.ascontiguousarray(lengths, np.int64),
                   np.ascontiguousarray(out_offsets, np.int64), out, _threads(threads))


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
    _native.running_sum(np.ascontiguousarray(lengths, np.int64), out, _threads(threads))


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
    return _native.first_decrease(a, _threads(threads))


__all__ += ["count_set_bits", "first_decrease", "first_filled_null", "first_misfit", "gather",
            "length_sums", "running_sum", "walk_codes"]
