"""The compiled CPU codec (C++17, built by ``pip install``): encoder, decoder and UTF-8 check.

This module is the documented face of the extension ``fsstgpu._native`` (sources in
``fsstgpu/csrc``). Every entry point validates its arguments, releases the GIL and spreads the
work over ``threads`` std::threads (default :func:`fsstgpu.parallel.usable_cores`, which honours
``FSSTGPU_THREADS``); results do not depend on the thread count.

The hot loops are compiled three times (scalar, AVX2, AVX-512) and picked at run time for the
CPU at hand (:func:`isa`); ``FSSTGPU_ISA=scalar`` (or ``avx2``) steps down to a lower copy.

* :func:`encode_blocks`: greedy longest-match FSST encoding, byte-identical to
  :mod:`fsstgpu.encoder`'s numba kernel for the same tables;
* :func:`decode_codes` / :func:`decode_range` / :func:`decode_all`: the equivalents of
  :mod:`fsstgpu.decoder`'s kernel and entry points, with the same corruption checks;
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

__all__ = ["decode_all", "decode_codes", "decode_range", "encode_blocks", "encode_matched",
           "first_invalid_string", "isa", "matcher", "matcher_of", "supported_isas"]

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
    """:func:`fsstgpu.decoder`'s kernel: decode ``codes[start:end]`` into
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
    """:func:`fsstgpu.decoder.decode_range`, compiled: same parameters, result and errors.

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


def decode_all(tables, codes, split_codes, split_out, split_table, total_out: int,
               threads=None) -> np.ndarray:
    """:func:`fsstgpu.decoder.decode_all`, compiled: same parameters, result and errors.

    Parameters
    ----------
    tables : sequence of SymbolTable
    codes : numpy.ndarray of uint8
    split_codes, split_out : numpy.ndarray of int64, shape (nsplits + 1,)
    split_table : numpy.ndarray of integers, shape (nsplits,)
    total_out : int
    threads : int, optional
        Threads to use (default: the usable cores).

    Returns
    -------
    numpy.ndarray of uint8, shape (total_out,)

    Raises
    ------
    CorruptDataError
        If the split arrays are inconsistent, or any split does not decode to exactly its range.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import SymbolTable, native
    >>> codes = np.array([0, 255, 120, 0], np.uint8)
    >>> out = native.decode_all([SymbolTable([b"ab"])], codes, np.array([0, 3, 4]),
    ...                         np.array([0, 3, 5]), np.array([0, 0], np.uint16), 5)
    >>> bytes(out)
    b'abxab'
    """
    packed, lens = pack_tables(tables)
    return _native.decode_all(np.ascontiguousarray(codes, np.uint8),
                              np.ascontiguousarray(split_codes, np.int64),
                              np.ascontiguousarray(split_out, np.int64),
                              np.ascontiguousarray(split_table, np.int64), packed, lens,
                              int(total_out), _threads(threads))


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
