"""Split points: where the GPU decoder cuts the code stream so every thread gets equal output.

A split is a run of codes that decodes, with one table, to a contiguous range of the Arrow data
buffer. The rule (the contract in :mod:`fsstgpu.arrays`): a split starts at the first code of
every block, and at the first code boundary at or after every multiple of ``S`` uncompressed
bytes (output positions counted over the whole column), inside long strings too; a code boundary
is never between an escape (255) and its literal byte; empty splits are not emitted, so
``split_codes`` and ``split_out`` are strictly increasing (a column without codes has no
splits: ``split_codes == [0]``, ``split_out == [0]``). Every split but a block's last therefore
decodes to between ``S - 7`` and ``S + 7`` bytes.

The same walk over the codes checks that each string's codes decode to exactly its stored length
with its block's table, so :func:`compute_splits` doubles as the decode-consistency check of
:meth:`CompressedStringArray.validate <fsstgpu.arrays.CompressedStringArray.validate>`.
:func:`derive_code_offsets` recovers the per-string code boundaries from the lengths (a blob may
omit them: each code yields at least one byte, so the boundaries are unambiguous).
"""

from __future__ import annotations

import numba
import numpy as np

from fsstgpu.errors import CorruptDataError
from fsstgpu.symbol_table import ESCAPE

#: Default ``S``: target uncompressed bytes per split, i.e. the GPU decoder's work per thread.
#: 4 KiB keeps a thread's output in a few cache lines' worth of stores per iteration while giving
#: a 1 GiB column ~260 000 splits, plenty to fill an H200 (132 SMs x 2048 threads).
DEFAULT_SPLIT_SIZE = 4096

_OK, _BAD_CODE, _ESCAPE_AT_END, _LENGTH, _TOO_MANY, _RANGE, _OVERSHOOT, _SHORT, _TRAILING = range(9)
_MESSAGES = {
    _BAD_CODE: "string {i}: a code has no symbol in its block's table",
    _ESCAPE_AT_END: "string {i}: its codes end in an escape without its literal byte",
    _LENGTH: "string {i}: its codes decode to a different length than the stored one",
    _TOO_MANY: "string {i}: more split points than the stored lengths allow",
    _RANGE: "string {i}: code offsets run past the codes",
    _OVERSHOOT: "string {i}: a symbol crosses the end of the string (stored length too short)",
    _SHORT: "string {i}: the codes run out before the stored length is reached",
    _TRAILING: "codes left over after the last string",
}


def symbol_lengths(tables) -> np.ndarray:
    """Return a (ntables, 256) uint8 array: symbol length per code, 0 where a code is unused.

    Column 255 (the escape) is 0; the scans treat it separately.

    Examples
    --------
    >>> from fsstgpu import SymbolTable
    >>> from fsstgpu.splits import symbol_lengths
    >>> symbol_lengths([SymbolTable([b"ab", b"c"])])[0, :3].tolist()
    [1, 2, 0]
    """
    out = np.zeros((len(tables), 256), dtype=np.uint8)
    for k, table in enumerate(tables):
        out[k, : len(table)] = table.lengths
    return out


@numba.njit(cache=True, nogil=True)
def _scan(codes, code_offsets, lengths, block_starts, symlen, split_size,
          split_codes, split_out, split_table):
    """Walk every string's codes; fill the splits; return (nsplits, error kind, string index)."""
    ncodes = codes.shape[0]
    cap = split_table.shape[0]
    nsplits = 0
    o = 0
    for b in range(block_starts.shape[0] - 1):
        target = 0  # forces a split at the block's first code
        for i in range(block_starts[b], block_starts[b + 1]):
            c = code_offsets[i]
            e = code_offsets[i + 1]
            if e > ncodes or c > e:
                return nsplits, _RANGE, i
            start_out = o
            while c < e:
                if o >= target:
                    if nsplits >= cap:
                        return nsplits, _TOO_MANY, i
                    split_codes[nsplits] = c
                    split_out[nsplits] = o
                    split_table[nsplits] = b
                    nsplits += 1
                    target = (o // split_size + 1) * split_size
                code = codes[c]
                if code == ESCAPE:
                    if c + 1 >= e:
                        return nsplits, _ESCAPE_AT_END, i
                    o += 1
                    c += 2
                else:
                    ln = symlen[b, code]
                    if ln == 0:
                        return nsplits, _BAD_CODE, i
                    o += ln
                    c += 1
            if o - start_out != lengths[i]:
                return nsplits, _LENGTH, i
    split_codes[nsplits] = ncodes
    split_out[nsplits] = o
    return nsplits, _OK, 0


def _check_blocks(block_starts, ntables, n):
    """The scans index with block_starts unchecked (numba), so check it here first."""
    if block_starts.ndim != 1 or len(block_starts) != ntables + 1:
        raise CorruptDataError(
            f"block_starts has {len(block_starts)} entries, expected {ntables + 1} (tables + 1)"
        )
    if block_starts[0] != 0 or block_starts[-1] != n:
        raise CorruptDataError(f"block_starts must run from 0 to the {n} strings")
    if np.any(np.diff(block_starts) < 0):
        raise CorruptDataError("block_starts must be non-decreasing")


def compute_splits(tables, block_starts, codes, code_offsets, lengths, split_size):
    """Compute the split points of a code stream, checking it against the stored lengths.

    Parameters
    ----------
    tables : sequence of SymbolTable
        One per block.
    block_starts : numpy.ndarray of int64, shape (nblocks + 1,)
    codes : numpy.ndarray of uint8
    code_offsets : numpy.ndarray of int64, shape (n + 1,)
    lengths : numpy.ndarray of int64, shape (n,)
        Uncompressed byte length of each string.
    split_size : int
        ``S``, at least 1.

    Returns
    -------
    split_codes, split_out : numpy.ndarray of int64, shape (nsplits + 1,)
    split_table : numpy.ndarray of uint16, shape (nsplits,)

    Raises
    ------
    CorruptDataError
        When a string's codes do not decode to its stored length with its block's table (an
        unknown code, an escape without its byte, a length mismatch), naming the string.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import SymbolTable
    >>> from fsstgpu.splits import compute_splits
    >>> t = SymbolTable([b"abcd"])
    >>> codes = np.array([0, 0, 0, 255, 120], np.uint8)   # "abcd" * 3 + "x"
    >>> sc, so, st = compute_splits([t], np.array([0, 1]), codes, np.array([0, 5]),
    ...                             np.array([13]), split_size=6)
    >>> sc.tolist(), so.tolist(), st.tolist()
    ([0, 2, 3, 5], [0, 8, 12, 13], [0, 0, 0])
    """
    split_size = int(split_size)
    if split_size < 1:
        raise ValueError(f"split_size must be at least 1, not {split_size}")
    # Output positions stay below 2**62 (8 bytes per code at most), so any larger S gives the
    # same splits as 2**62: clamp it to keep the kernel's int64 arithmetic exact.
    split_size = min(split_size, 2**62)
    if len(tables) > 65536:
        raise ValueError(f"at most 65536 blocks (split_table is uint16), not {len(tables)}")
    codes = np.ascontiguousarray(codes, dtype=np.uint8)
    code_offsets = np.ascontiguousarray(code_offsets, dtype=np.int64)
    lengths = np.ascontiguousarray(lengths, dtype=np.int64)
    block_starts = np.ascontiguousarray(block_starts, dtype=np.int64)
    _check_blocks(block_starts, len(tables), len(lengths))
    if len(code_offsets) != len(lengths) + 1:
        raise CorruptDataError(
            f"code_offsets has {len(code_offsets)} entries, expected {len(lengths) + 1}"
        )
    if code_offsets[0] != 0 or (len(code_offsets) > 1 and np.any(np.diff(code_offsets) < 0)):
        raise CorruptDataError("code_offsets must start at 0 and be non-decreasing")
    # Each code yields at most 8 bytes, so this bounds the allocation by the codes' size even
    # when the lengths are corrupt.
    total = min(int(lengths.sum()) if lengths.size else 0, 8 * len(codes))
    cap = (len(block_starts) - 1) + total // split_size + 1
    split_codes = np.empty(cap + 1, dtype=np.int64)
    split_out = np.empty(cap + 1, dtype=np.int64)
    split_table = np.empty(cap, dtype=np.uint16)
    nsplits, err, index = _scan(codes, code_offsets, lengths, block_starts,
                                symbol_lengths(tables), split_size,
                                split_codes, split_out, split_table)
    if err != _OK:
        raise CorruptDataError(_MESSAGES[err].format(i=index))
    return (split_codes[: nsplits + 1].copy(), split_out[: nsplits + 1].copy(),
            split_table[:nsplits].copy())


@numba.njit(cache=True, nogil=True)
def _derive(codes, lengths, block_starts, symlen, code_offsets):
    ncodes = codes.shape[0]
    c = 0
    for b in range(block_starts.shape[0] - 1):
        for i in range(block_starts[b], block_starts[b + 1]):
            code_offsets[i] = c
            need = lengths[i]
            while need > 0:
                if c >= ncodes:
                    return _SHORT, i
                code = codes[c]
                if code == ESCAPE:
                    if c + 1 >= ncodes:
                        return _ESCAPE_AT_END, i
                    need -= 1
                    c += 2
                else:
                    ln = symlen[b, code]
                    if ln == 0:
                        return _BAD_CODE, i
                    if ln > need:
                        return _OVERSHOOT, i
                    need -= ln
                    c += 1
    code_offsets[lengths.shape[0]] = c
    if c != ncodes:
        return _TRAILING, 0
    return _OK, 0


def derive_code_offsets(tables, block_starts, codes, lengths):
    """Recover ``code_offsets`` from the codes and the stored lengths.

    Each code yields at least one byte, so string ``i``'s codes are the shortest run that decodes
    to ``lengths[i]`` bytes.

    Raises
    ------
    CorruptDataError
        When the codes cannot be cut to the lengths (a symbol would cross a string end, the
        codes run out or are left over, an unknown code).

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import SymbolTable
    >>> from fsstgpu.splits import derive_code_offsets
    >>> derive_code_offsets([SymbolTable([b"ab"])], np.array([0, 3]),
    ...                     np.array([0, 255, 120, 0], np.uint8), np.array([3, 0, 2])).tolist()
    [0, 3, 3, 4]
    """
    codes = np.ascontiguousarray(codes, dtype=np.uint8)
    lengths = np.ascontiguousarray(lengths, dtype=np.int64)
    block_starts = np.ascontiguousarray(block_starts, dtype=np.int64)
    _check_blocks(block_starts, len(tables), len(lengths))
    if lengths.size and int(lengths.min()) < 0:
        raise CorruptDataError("lengths must be non-negative")
    code_offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    err, index = _derive(codes, lengths, block_starts, symbol_lengths(tables), code_offsets)
    if err != _OK:
        raise CorruptDataError(_MESSAGES[err].format(i=index))
    return code_offsets
