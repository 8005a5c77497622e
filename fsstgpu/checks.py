"""The structural checks of a compressed column: everything checkable without walking the codes.

:func:`check_structure` is what :meth:`CompressedStringArray.validate
<fsstgpu.arrays.CompressedStringArray.validate>` runs first (and alone with ``full=False``): every
invariant of the field contract (``fsstgpu/arrays.py``) that holds between the arrays, in
O(strings) vectorised numpy. It is what the decoders need to stay inside their buffers: they
check each split's codes while decoding. The walk over the codes is :mod:`fsstgpu.scan`'s.

>>> import pyarrow as pa, fsstgpu
>>> from fsstgpu.checks import check_structure
>>> check_structure(fsstgpu.compress(pa.array(["a", None])))
"""

from __future__ import annotations

import numpy as np

from fsstgpu import arrow_layout
from fsstgpu.errors import CorruptDataError
from fsstgpu.symbol_table import SymbolTable
from fsstgpu.types import INT32_MAX, is_supported, narrow_offsets

__all__ = ["check_structure"]


def _bad(msg: str):
    raise CorruptDataError(msg)


def check_structure(carr) -> None:
    """Raise CorruptDataError naming the first broken structural invariant of ``carr``.

    The code offsets are checked only when present (they are derived from the codes otherwise).
    """
    n = carr.length
    if not is_supported(carr.type):
        _bad(f"type {carr.type} is not a supported string or binary type")
    if n < 0:
        _bad(f"negative length {n}")
    if not all(isinstance(t, SymbolTable) for t in carr.tables):
        _bad("tables must be SymbolTable objects")
    nblocks = len(carr.tables)
    if nblocks > 65536:
        _bad(f"{nblocks} blocks, at most 65536 (split_table is uint16)")
    bs = carr.block_starts
    if len(bs) != nblocks + 1:
        _bad(f"block_starts has {len(bs)} entries, expected {nblocks + 1} (tables + 1)")
    if bs[0] != 0 or bs[-1] != n:
        _bad(f"block_starts must run from 0 to {n}, not {bs[0]} to {bs[-1]}")
    if np.any(np.diff(bs) < 0):
        _bad("block_starts must be non-decreasing")
    ncodes = len(carr.codes)
    lengths = carr.lengths
    if len(lengths) != n:
        _bad(f"lengths has {len(lengths)} entries, expected {n}")
    if n:
        if int(lengths.min()) < 0:
            _bad("lengths must be non-negative")
        # A code yields at most 8 bytes: bounds the sum before it is taken (no overflow).
        if int(lengths.max()) > 8 * ncodes:
            _bad(f"a length exceeds 8 x the {ncodes} codes")
    out_offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=out_offsets[1:])
    total = int(out_offsets[-1])
    if total > 8 * ncodes:
        _bad(f"lengths add up to {total} bytes, more than {ncodes} codes can hold")
    code_lengths = _check_code_offsets(carr, n, ncodes)
    _check_validity(carr, n, lengths, code_lengths)
    _check_splits(carr, ncodes, total, nblocks, out_offsets)
    _check_chunks(carr, n, out_offsets)


def _check_code_offsets(carr, n: int, ncodes: int):
    """The per-string code counts, or None when the code offsets are not at hand."""
    if not carr.has_code_offsets:
        return None
    co = carr.code_offsets
    if len(co) != n + 1:
        _bad(f"code_offsets has {len(co)} entries, expected {n + 1}")
    if co[0] != 0 or co[-1] != ncodes:
        _bad(f"code_offsets must run from 0 to {ncodes}, not {co[0]} to {co[-1]}")
    code_lengths = np.diff(co)
    if np.any(code_lengths < 0):
        _bad("code_offsets must be non-decreasing")
    # a code yields 1 to 8 bytes, an escape pair (2 codes) 1 byte
    if np.any(code_lengths > 2 * carr.lengths) or np.any(carr.lengths > 8 * code_lengths):
        _bad("a string's code count does not fit its length")
    return code_lengths


def _check_validity(carr, n: int, lengths, code_lengths) -> None:
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
    set_bits = arrow_layout.count_set_bits(carr.validity)
    if n - set_bits != carr.null_count:
        _bad(f"validity has {n - set_bits} nulls, null_count says {carr.null_count}")
    nulls = ~arrow_layout.unpack_bitmap(carr.validity, n)
    if lengths[nulls].any() or (code_lengths is not None and code_lengths[nulls].any()):
        _bad("a null string has bytes or codes")


def _check_splits(carr, ncodes: int, total: int, nblocks: int, out_offsets) -> None:
    if not 1 <= carr.split_size < 2**64:
        _bad(f"split_size must be in 1..2**64 - 1, not {carr.split_size}")
    sc, so, st = carr.split_codes, carr.split_out, carr.split_table
    if len(sc) != len(st) + 1 or len(so) != len(st) + 1:
        _bad(f"split arrays disagree: {len(sc)} code starts, {len(so)} output starts, "
             f"{len(st)} tables (need k + 1, k + 1, k)")
    if sc[0] != 0 or so[0] != 0:
        _bad(f"splits must start at code 0 and output byte 0, not {sc[0]} and {so[0]}")
    if sc[-1] != ncodes or so[-1] != total:
        _bad(f"splits must end at {ncodes} codes and {total} bytes, not {sc[-1]} and {so[-1]}")
    if np.any(np.diff(sc) < 0) or np.any(np.diff(so) < 0):
        _bad("split positions must be non-decreasing")
    if not len(st):
        return
    if int(st.max()) >= nblocks:
        _bad(f"split_table names table {int(st.max())} of {nblocks}")
    # A split stays inside its table's block: between the output positions where the block's
    # strings start and end.
    block_out = out_offsets[carr.block_starts]
    t = st.astype(np.int64)
    outside = (so[:-1] < block_out[t]) | (so[1:] > block_out[t + 1])
    if outside.any():
        k = int(np.flatnonzero(outside)[0])
        _bad(f"split {k} (output bytes {int(so[k])}..{int(so[k + 1])}) lies outside the block "
             f"of its table {int(st[k])}")


def _check_chunks(carr, n: int, out_offsets) -> None:
    cl = carr.chunk_lengths
    if cl is not None:
        if len(cl) and int(cl.min()) < 0:
            _bad("chunk_lengths must be non-negative")
        if int(cl.sum()) != n:
            _bad(f"chunk_lengths add up to {int(cl.sum())}, not {n}")
    if narrow_offsets(carr.type):
        # 32-bit offsets: every chunk's data must stay below 2 GiB.
        bounds = np.zeros(1 + (1 if cl is None else len(cl)), np.int64)
        if cl is None:
            bounds[1] = n
        else:
            np.cumsum(cl, out=bounds[1:])
        starts = out_offsets[bounds]
        if len(starts) > 1 and int(np.diff(starts).max()) > INT32_MAX:
            _bad(f"a {carr.type} chunk holds more than 2**31 - 1 bytes")
