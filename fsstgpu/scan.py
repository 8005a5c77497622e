"""The one walk over FSST codes that does not decode: lengths, code offsets, cuts, checks.

Every path that must know where codes start and how many bytes they stand for, without writing
the bytes, goes through :func:`walk`: checking a column (:meth:`CompressedStringArray.validate
<fsstgpu.arrays.CompressedStringArray.validate>`), recovering per-string code offsets from the
lengths (a blob may leave them out) or lengths from code offsets (version-1 extension arrays), and
finding the cut points inside long strings that the split plan needs (:mod:`fsstgpu.splits`).
Decoding itself is :mod:`fsstgpu.decoder`'s.

The walk steps through each string's codes with its block's symbol lengths: a code ``c < 255``
yields ``symlen[b, c]`` bytes (0 means the table lacks the code: corrupt), the escape 255 yields
its one literal byte and takes two code bytes. It runs in one of four modes:

=============== ======================== ================================================
mode            knows                    does
=============== ======================== ================================================
``CHECK``       offsets and lengths      checks every string decodes to its length
``OFFSETS``     lengths                  fills ``code_offsets`` (and checks)
``LENGTHS``     offsets                  fills ``lengths`` (and checks)
``LONG``        offsets and lengths      walks only strings longer than ``cut_size``
=============== ======================== ================================================

In every mode but ``LENGTHS``, each walked string longer than ``cut_size`` records its *cuts*:
the first code boundary at or after every multiple of ``cut_size`` bytes from the string's start,
strictly inside the string. With ``split_codes`` given, every split start met on the way must
fall on a code boundary whose output position is the split's (``CHECK`` and ``OFFSETS`` modes).

>>> import numpy as np
>>> from fsstgpu import SymbolTable
>>> from fsstgpu.scan import code_offsets_from_lengths
>>> code_offsets_from_lengths([SymbolTable([b"ab"])], np.array([0, 3]),
...                           np.array([0, 255, 120, 0], np.uint8), np.array([3, 0, 2])).tolist()
[0, 3, 3, 4]
"""

from __future__ import annotations

import numpy as np

from fsstgpu.arrow_layout import is_non_decreasing
from fsstgpu.errors import CorruptDataError
from fsstgpu.native import length_sums, walk_codes

_MAX_CODES = 1 << 59  # native length_sums' largest code count: lengths may total 2**62
_NO_POSITIONS = np.zeros(0, np.int64)

__all__ = [
    "CHECK",
    "LENGTHS",
    "LONG",
    "OFFSETS",
    "check_codes",
    "code_offsets_from_lengths",
    "long_string_cuts",
    "lengths_from_code_offsets",
    "walk",
]

CHECK, OFFSETS, LENGTHS, LONG = range(4)

def _checked_blocks(block_starts, ntables: int, n: int) -> np.ndarray:
    """block_starts as int64, checked: the walk indexes with it unchecked."""
    block_starts = np.ascontiguousarray(block_starts, dtype=np.int64)
    if block_starts.ndim != 1 or len(block_starts) != ntables + 1:
        raise CorruptDataError(
            f"block_starts has {len(block_starts)} entries, expected {ntables + 1} (tables + 1)")
    if block_starts[0] != 0 or block_starts[-1] != n:
        raise CorruptDataError(f"block_starts must run from 0 to the {n} strings")
    if not is_non_decreasing(block_starts):
        raise CorruptDataError("block_starts must be non-decreasing")
    return block_starts


def walk(tables, block_starts, codes, *, code_offsets=None, lengths=None, mode=CHECK,
         cut_size: int = 0, split_codes=None, split_out=None, threads=None):
    """Walk a column's codes; return ``(code_offsets, lengths, cuts)`` as far as known.

    Parameters
    ----------
    tables : sequence of SymbolTable
        One per block.
    block_starts : array of int, shape (nblocks + 1,)
    codes : numpy.ndarray of uint8
    code_offsets, lengths : numpy.ndarray of int64, optional
        What the mode needs (module docstring); the one a mode derives may be None.
    mode : {CHECK, OFFSETS, LENGTHS, LONG}
    cut_size : int
        Record the cuts of strings longer than this (0: none).
    split_codes, split_out : numpy.ndarray of int64, optional
        Split points to check on the way (CHECK and OFFSETS modes).
    threads : int, optional
        Threads to walk with (default: the usable cores); the result and the error do not
        depend on it (:func:`fsstgpu.native.walk_codes`).

    Returns
    -------
    code_offsets, lengths : numpy.ndarray of int64
    cuts : tuple of three numpy.ndarray of int64
        The cuts' code positions, output positions and string indices, in order.

    Raises
    ------
    CorruptDataError
        When the codes do not fit the lengths or offsets (the message names the string).

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import SymbolTable
    >>> from fsstgpu.scan import LENGTHS, walk
    >>> codes = np.array([0, 0, 255, 33], np.uint8)  # "ab" "ab" "!" with the table below
    >>> _, lengths, _ = walk([SymbolTable([b"ab"])], [0, 2], codes,
    ...                      code_offsets=np.array([0, 2, 4]), mode=LENGTHS)
    >>> lengths.tolist()
    [4, 1]
    """
    codes = np.ascontiguousarray(codes, np.uint8)
    if mode == OFFSETS:
        lengths = np.ascontiguousarray(lengths, np.int64)
        n = len(lengths)
        code_offsets = None
    else:
        code_offsets = np.ascontiguousarray(code_offsets, np.int64)
        n = len(code_offsets) - 1
        if mode == LENGTHS:
            lengths = None
        else:
            lengths = np.ascontiguousarray(lengths, np.int64)
            if len(lengths) != n:
                raise CorruptDataError(f"{len(lengths)} lengths for {n} strings")
    cut_size = int(cut_size)
    total = 0
    if mode != LENGTHS and n and cut_size > 0:
        # one parallel pass for the cuts' bound: a negative length is an error, the total at
        # most 2**62 (a larger one is corrupt: 2**59 codes, the most there can be, yield less)
        total, _ = length_sums(lengths, _MAX_CODES, _NO_POSITIONS)
    elif mode != LENGTHS and n and int(lengths.min()) < 0:
        raise CorruptDataError("lengths must be non-negative")
    block_starts = _checked_blocks(block_starts, len(tables), n)
    max_cuts = 0
    if cut_size > 0:
        # Cuts fall at least cut_size output bytes apart, a code yields at most 8 bytes, and
        # each cut is a distinct code position: this bounds them by the codes even when the
        # lengths are corrupt.
        max_cuts = min(min(total, 8 * len(codes)) // cut_size, len(codes)) + 1
    if split_codes is None:
        split_out = None
    symlen = np.zeros((max(len(tables), 1), 256), np.uint8)  # lengths only: 256 bytes a table
    for t, table in enumerate(tables):
        symlen[t, : len(table)] = table.lengths
    offsets_out, lengths_out, *cuts = walk_codes(
        codes, block_starts, symlen, code_offsets, lengths, mode, cut_size, max_cuts,
        split_codes, split_out, threads)
    if mode == OFFSETS:
        code_offsets = offsets_out
    elif mode == LENGTHS:
        lengths = lengths_out
    return code_offsets, lengths, tuple(cuts)


def code_offsets_from_lengths(tables, block_starts, codes, lengths) -> np.ndarray:
    """Recover ``code_offsets`` from the codes and the stored lengths.

    Each code yields at least one byte, so string ``i``'s codes are the shortest run after
    string ``i - 1``'s that decodes to ``lengths[i]`` bytes.

    Raises
    ------
    CorruptDataError
        When the codes cannot be cut to the lengths (a symbol would cross a string end, the codes
        run out or are left over, an unknown code).

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import SymbolTable
    >>> from fsstgpu.scan import code_offsets_from_lengths
    >>> code_offsets_from_lengths([SymbolTable([b"abc"])], np.array([0, 1]),
    ...                           np.array([0, 0], np.uint8), np.array([6])).tolist()
    [0, 2]
    """
    return walk(tables, block_starts, codes, lengths=lengths, mode=OFFSETS)[0]


def lengths_from_code_offsets(tables, block_starts, codes, code_offsets) -> np.ndarray:
    """Each string's uncompressed length, from its codes (one pass, no decoding).

    Raises
    ------
    CorruptDataError
        When a string's codes end in an escape or use a code its table lacks.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import SymbolTable
    >>> from fsstgpu.scan import lengths_from_code_offsets
    >>> codes = np.array([0, 255, 120, 0], np.uint8)
    >>> lengths_from_code_offsets([SymbolTable([b"abc"])], np.array([0, 2]), codes,
    ...                           np.array([0, 3, 4])).tolist()
    [4, 3]
    """
    return walk(tables, block_starts, codes, code_offsets=code_offsets, mode=LENGTHS)[1]


def long_string_cuts(tables, block_starts, codes, code_offsets, lengths, cut_size: int):
    """The cuts inside strings longer than ``cut_size`` (code positions, output positions, rows).

    Only those strings' codes are walked (and checked).

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import SymbolTable
    >>> from fsstgpu.scan import long_string_cuts
    >>> codes = np.array([0, 0, 0, 0, 0], np.uint8)  # "abc" x 5 as one string
    >>> [c.tolist() for c in long_string_cuts([SymbolTable([b"abc"])], np.array([0, 1]), codes,
    ...                                       np.array([0, 5]), np.array([15]), 4)]
    [[2, 3, 4], [6, 9, 12], [0, 0, 0]]
    """
    return walk(tables, block_starts, codes, code_offsets=code_offsets, lengths=lengths,
                mode=LONG, cut_size=cut_size)[2]


def check_codes(tables, block_starts, codes, code_offsets, lengths, split_codes=None,
                split_out=None) -> None:
    """Check that every string's codes decode to exactly its length, and that the split starts
    (when given) are code boundaries at their output positions. Raises CorruptDataError.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import SymbolTable
    >>> from fsstgpu.scan import check_codes
    >>> check_codes([SymbolTable([b"ab"])], np.array([0, 1]), np.array([0, 0], np.uint8),
    ...             np.array([0, 2]), np.array([5]))
    Traceback (most recent call last):
    ...
    fsstgpu.errors.CorruptDataError: string 0: its codes decode to a different length than the \
stored one
    """
    mode = CHECK if code_offsets is not None else OFFSETS
    walk(tables, block_starts, codes, code_offsets=code_offsets, lengths=lengths, mode=mode,
         split_codes=split_codes, split_out=split_out)
