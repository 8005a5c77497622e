"""The structural checks of a compressed column: everything checkable without walking the codes.

:func:`check_structure` is what :meth:`CompressedStringArray.validate
<fsstgpu.arrays.CompressedStringArray.validate>` runs first (and alone with ``full=False``): every
invariant of the field contract (``fsstgpu/arrays.py``) that holds between the arrays, in
O(strings), in single compiled passes (:mod:`fsstgpu.native`, spread over the cores) that
allocate nothing per string (a column of 100 million empty strings is checked in a fraction of a
second, without gigabytes of temporaries). It is what
the decoders need to stay inside their buffers: they check each split's codes while decoding. The
walk over the codes is :mod:`fsstgpu.scan`'s.

>>> import pyarrow as pa, fsstgpu
>>> from fsstgpu.checks import check_structure
>>> check_structure(fsstgpu.compress(pa.array(["a", None])))
"""

from __future__ import annotations

import numpy as np

from fsstgpu.arrow_layout import is_non_decreasing
from fsstgpu.bitmaps import count_set_bits
from fsstgpu.errors import CorruptDataError
from fsstgpu.limits import MAX_TABLES, check_split_size
from fsstgpu.native import (
    check_splits,
    first_filled_null,
    first_misfit,
    length_sums as native_length_sums,
)
from fsstgpu.symbol_table import SymbolTable
from fsstgpu.types import INT32_MAX, is_supported, narrow_offsets

__all__ = ["check_structure", "length_sums"]

#: splits checked against their blocks at a time (~1 MiB of temporaries)
_SPLITS_AT_ONCE = 1 << 15


def _bad(msg: str):
    raise CorruptDataError(msg)


def length_sums(lengths, ncodes: int, positions=None):
    """The total of the string lengths, checked against what ``ncodes`` codes can hold, and
    their prefix sums at ``positions``: one pass, no temporaries.

    Parameters
    ----------
    lengths : numpy.ndarray of int64
    ncodes : int
        A code yields at most 8 bytes: every length and their total must be at most
        ``8 * ncodes``.
    positions : numpy.ndarray of int64, optional
        Non-decreasing string indices in ``0..len(lengths)``.

    Returns
    -------
    total : int
    prefix : numpy.ndarray of int64
        ``sum(lengths[:p])`` for each ``p`` of ``positions`` (empty without them).

    Raises
    ------
    CorruptDataError
        For a negative length, or lengths adding up to more than ``8 * ncodes``.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.checks import length_sums
    >>> total, prefix = length_sums(np.array([3, 0, 5]), 2, np.array([0, 2, 3]))
    >>> total, prefix.tolist()
    (8, [0, 3, 8])
    """
    positions = np.zeros(0, np.int64) if positions is None else positions
    return native_length_sums(lengths, ncodes, positions)


def check_structure(carr, *, rows_checked=None) -> None:
    """Raise CorruptDataError naming the first broken structural invariant of ``carr``.

    The code offsets are checked only when present (they are derived from the codes otherwise).
    ``rows_checked``: the running sum of the lengths (``n + 1`` entries from 0), from a reader that
    has checked every row in one pass (:func:`fsstgpu.native.stored_rows`: offsets from 0, inside
    the codes and non-decreasing, no codes or length under a null, every code count fitting its
    length): the per-row passes are then not run again, only what is O(1), O(blocks), O(splits) or
    O(bitmap bytes). A file read spent most of its per-chunk checking time on them (the H200 host's
    profile: the row passes were nearly all of ``from_extension_array``).
    """
    n = carr.length
    if not is_supported(carr.type):
        _bad(f"type {carr.type} is not a supported string or binary type")
    if n < 0:
        _bad(f"negative length {n}")
    if not all(isinstance(t, SymbolTable) for t in carr.tables):
        _bad("tables must be SymbolTable objects")
    nblocks = len(carr.tables)
    if nblocks > MAX_TABLES:
        _bad(f"{nblocks} blocks, at most {MAX_TABLES} (split_table is uint16)")
    bs = carr.block_starts
    _check_positions("block_starts", bs, nblocks + 1, n, " (tables + 1)")
    ncodes = len(carr.codes)
    lengths = carr.lengths
    if len(lengths) != n:
        _bad(f"lengths has {len(lengths)} entries, expected {n}")
    if rows_checked is None:
        total, block_out = length_sums(lengths, ncodes, bs)
        has_offsets = _check_code_offsets(carr, n, ncodes)
    else:
        total, block_out = int(rows_checked[-1]), rows_checked[bs]
        co = carr.code_offsets
        if len(co) != n + 1 or co[0] != 0 or co[-1] != ncodes or len(rows_checked) != n + 1:
            _bad(f"code_offsets must have {n + 1} entries from 0 to {ncodes}")
        if total > 8 * ncodes:
            _bad(f"the lengths add up to {total} bytes, more than {ncodes} codes can make")
        has_offsets = True
    _check_validity(carr, n, lengths, has_offsets, rows_checked=rows_checked is not None)
    _check_splits(carr, ncodes, total, nblocks, block_out)
    _check_chunks(carr, n, total)


def _check_positions(name: str, positions, count: int, last: int, why: str = "") -> None:
    """``positions`` must have ``count`` entries, run from 0 to ``last`` and never decrease."""
    if len(positions) != count:
        _bad(f"{name} has {len(positions)} entries, expected {count}{why}")
    if positions[0] != 0 or positions[-1] != last:
        _bad(f"{name} must run from 0 to {last}, not {positions[0]} to {positions[-1]}")
    if not is_non_decreasing(positions):
        _bad(f"{name} must be non-decreasing")


def _check_code_offsets(carr, n: int, ncodes: int) -> bool:
    """Check the code offsets when they are at hand; return whether they are."""
    if not carr.has_code_offsets:
        return False
    co = carr.code_offsets
    _check_positions("code_offsets", co, n + 1, ncodes)
    i = first_misfit(co, carr.lengths)
    if i >= 0:
        _bad(f"a string's code count does not fit its length (string {i})")
    return True


def _check_validity(carr, n: int, lengths, has_offsets: bool, *,
                    rows_checked: bool = False) -> None:
    if not 0 <= carr.null_count <= n:
        _bad(f"null_count {carr.null_count} outside 0..{n}")
    if carr.validity is None:
        if carr.null_count:
            _bad(f"null_count is {carr.null_count} but there is no validity bitmap")
        return
    if carr.null_count == 0:
        _bad("a validity bitmap is present but null_count is 0 (it must then be None)")
    if len(carr.validity) != (n + 7) // 8:
        _bad(f"validity has {len(carr.validity)} bytes, expected {(n + 7) // 8}")
    if n % 8 and carr.validity[-1] >> (n % 8):
        _bad("validity padding bits are not zero")
    set_bits = count_set_bits(carr.validity)
    if n - set_bits != carr.null_count:
        _bad(f"validity has {n - set_bits} nulls, null_count says {carr.null_count}")
    if rows_checked:  # no codes or length under a null: the one pass saw every row
        return
    i = first_filled_null(carr.validity, lengths,
                          carr.code_offsets if has_offsets else None)
    if i >= 0:
        _bad(f"a null string has bytes or codes (string {i})")


def _check_splits(carr, ncodes: int, total: int, nblocks: int, block_out) -> None:
    check_split_size(carr.split_size, CorruptDataError)
    sc, so, st = carr.split_codes, carr.split_out, carr.split_table
    # the decoder's own check of the split arrays (one home for it: csrc/decode.cpp)
    check_splits(sc, so, st, ncodes, total, nblocks)
    # A split stays inside its table's block: between the output positions where the block's
    # strings start and end (block_out: those positions). Checked a slice of splits at a time:
    # the masks and gathers take ~35 bytes a split, twice the split points' own 18, which
    # split_size=1 (a split a code) made 3.5x the column's bytes.
    for lo in range(0, len(st), _SPLITS_AT_ONCE):
        hi = min(lo + _SPLITS_AT_ONCE, len(st))
        t = st[lo:hi].astype(np.int64)
        outside = (so[lo:hi] < block_out[t]) | (so[lo + 1:hi + 1] > block_out[t + 1])
        if outside.any():
            k = lo + int(np.flatnonzero(outside)[0])
            _bad(f"split {k} (output bytes {int(so[k])}..{int(so[k + 1])}) lies outside the "
                 f"block of its table {int(st[k])}")


def _check_chunks(carr, n: int, total: int) -> None:
    cl = carr.chunk_lengths
    if cl is not None:
        if len(cl) and (int(cl.min()) < 0 or int(cl.max()) > n):
            _bad(f"chunk_lengths must lie in 0..{n}")
        if float(cl.sum(dtype=np.float64)) > n or int(cl.sum()) != n:
            _bad(f"chunk_lengths add up to {int(cl.sum())}, not {n}")
    if narrow_offsets(carr.type) and total > INT32_MAX:
        # 32-bit offsets: every chunk's data must stay below 2 GiB.
        bounds = np.zeros(1 + (1 if cl is None else len(cl)), np.int64)
        if cl is None:
            bounds[1] = n
        else:
            np.cumsum(cl, out=bounds[1:])
        _, starts = length_sums(carr.lengths, len(carr.codes), bounds)
        if int(np.diff(starts).max()) > INT32_MAX:
            _bad(f"a {carr.type} chunk holds more than 2**31 - 1 bytes")
