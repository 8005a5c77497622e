"""FSST decoding on the CPU: the reference every GPU decode is compared with, byte for byte.

Two entry points:

* :func:`decode_range` decodes one run of codes into a caller-given output range (random access,
  one string or many);
* :func:`decode_all` decodes a whole column from its split points (see the contract in
  :mod:`fsstgpu.arrays`), groups of splits in parallel (:func:`fsstgpu.parallel.run_tasks`).

Both check everything a corrupt input could get wrong: a code with no symbol, an escape as the
last code, output that would pass the end of its range, and (for :func:`decode_all`) a split that
does not fill its range exactly. They raise :class:`~fsstgpu.errors.CorruptDataError` and never
write outside the output range they were given.

Speed: while at least 8 output bytes remain in the range, every symbol is written as one
unaligned 8-byte store (its zero padding is overwritten by the next symbol); only the last few
bytes of a range are written one at a time, so neighbouring splits never touch each other's bytes.
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from fsstgpu.arrow_layout import is_non_decreasing
from fsstgpu.errors import CorruptDataError
from fsstgpu.jit import readonly
from fsstgpu.parallel import run_tasks
from fsstgpu.symbol_table import ESCAPE, SymbolTable, pack_tables

_TASK_BYTES = 1 << 20  # output bytes per parallel task of decode_all


@intrinsic
def _store_u64(typingctx, arr, idx, val):
    """Unaligned little-endian 8-byte store into a uint8 array (no bounds check)."""
    sig = types.void(arr, idx, types.uint64)

    def codegen(context, builder, sig, args):
        ary = context.make_array(sig.args[0])(context, builder, args[0])
        ptr = builder.gep(ary.data, [args[1]])
        builder.store(args[2], builder.bitcast(ptr, ir.IntType(64).as_pointer()), align=1)
        return context.get_dummy_value()

    return sig, codegen


@numba.njit(cache=True, nogil=True)
def _decode_kernel(codes, start, end, packed, lens, out, out_pos, out_end):
    """Decode ``codes[start:end]`` into ``out[out_pos:out_end]``; return the output end or -1.

    ``packed``/``lens`` have 256 entries, ``lens[c] == 0`` for codes without a symbol. -1 means
    corrupt: an unknown code, an escape as the last code, or output past ``out_end``.
    """
    i = start
    o = out_pos
    fast_end = out_end - 8
    # Fast loop: 8-byte stores while they stay inside the range.
    while i < end and o <= fast_end:
        c = codes[i]
        if c != ESCAPE:
            ln = lens[c]
            if ln == 0:
                return -1
            _store_u64(out, o, packed[c])
            o += ln
            i += 1
        else:
            if i + 1 >= end:
                return -1
            out[o] = codes[i + 1]
            o += 1
            i += 2
    # Tail: byte stores with exact bounds.
    while i < end:
        c = codes[i]
        if c != ESCAPE:
            ln = np.int64(lens[c])
            if ln == 0 or o + ln > out_end:
                return -1
            sym = packed[c]
            for j in range(ln):
                out[o + j] = np.uint8((sym >> np.uint64(8 * j)) & np.uint64(0xFF))
            o += ln
            i += 1
        else:
            if i + 1 >= end or o >= out_end:
                return -1
            out[o] = codes[i + 1]
            o += 1
            i += 2
    return o


def decode_range(table: SymbolTable, codes, start: int, end: int, out, out_pos: int, out_end: int):
    """Decode ``codes[start:end]`` into ``out`` from ``out_pos``; return the output end.

    Parameters
    ----------
    table : SymbolTable
    codes : numpy.ndarray of uint8
    start, end : int
        The codes to decode, ``0 <= start <= end <= len(codes)``.
    out : numpy.ndarray of uint8
        Written only in ``out[out_pos:out_end]``.
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
    >>> from fsstgpu import SymbolTable
    >>> from fsstgpu.decoder import decode_range
    >>> out = np.zeros(3, np.uint8)
    >>> decode_range(SymbolTable([b"ab"]), np.array([0, 255, 120], np.uint8), 0, 3, out, 0, 3)
    3
    >>> bytes(out)
    b'abx'
    """
    start, end, out_pos, out_end = int(start), int(end), int(out_pos), int(out_end)
    if not 0 <= start <= end <= len(codes):
        raise ValueError(f"code range {start}..{end} outside 0..{len(codes)}")
    if not 0 <= out_pos <= out_end <= len(out):
        raise ValueError(f"output range {out_pos}..{out_end} outside 0..{len(out)}")
    packed, lens = pack_tables([table])
    # Read-only inputs, as decode_all passes them: the kernel compiles once.
    o = _decode_kernel(readonly(codes, np.uint8), start, end, readonly(packed[0], np.uint64),
                       readonly(lens[0], np.uint8), out, out_pos, out_end)
    if o < 0:
        raise CorruptDataError(
            f"codes {start}..{end} do not decode into output bytes {out_pos}..{out_end} "
            "(unknown code, escape at the end, or output overflow)"
        )
    return int(o)


@numba.njit(cache=True, nogil=True)
def _decode_splits(codes, split_codes, split_out, split_table, packed, lens, out, status, k0, k1):
    """Decode splits ``k0:k1``; ``status[k]`` gets each split's output end (-1: corrupt)."""
    for k in range(k0, k1):
        t = np.int64(split_table[k])
        status[k] = _decode_kernel(codes, split_codes[k], split_codes[k + 1], packed[t], lens[t],
                                   out, split_out[k], split_out[k + 1])


def _check_splits(ncodes, split_codes, split_out, split_table, ntables, total_out):
    nsplits = len(split_table)
    if split_codes.shape != (nsplits + 1,) or split_out.shape != (nsplits + 1,):
        raise CorruptDataError(
            f"split arrays disagree: {len(split_codes)} code starts, {len(split_out)} output "
            f"starts, {nsplits} table indices (need n + 1, n + 1, n)"
        )
    if split_codes[0] != 0 or split_codes[-1] != ncodes:
        raise CorruptDataError(
            f"split code positions must run from 0 to {ncodes}, not "
            f"{split_codes[0]} to {split_codes[-1]}"
        )
    if split_out[0] != 0 or split_out[-1] != total_out:
        raise CorruptDataError(
            f"split output positions must run from 0 to {total_out}, not "
            f"{split_out[0]} to {split_out[-1]}"
        )
    if not is_non_decreasing(split_codes) or not is_non_decreasing(split_out):
        raise CorruptDataError("split positions must be non-decreasing")
    if nsplits and int(split_table.max()) >= ntables:
        raise CorruptDataError(
            f"split table index {int(split_table.max())} but only {ntables} tables"
        )


def decode_all(tables, codes, split_codes, split_out, split_table, total_out: int) -> np.ndarray:
    """Decode a whole column from its split points; return its ``total_out`` data bytes.

    Split ``k`` decodes ``codes[split_codes[k]:split_codes[k+1]]`` with ``tables[split_table[k]]``
    into output bytes ``split_out[k]:split_out[k+1]`` (the contract in :mod:`fsstgpu.arrays`).
    Splits are decoded in parallel.

    Parameters
    ----------
    tables : sequence of SymbolTable
    codes : numpy.ndarray of uint8
    split_codes, split_out : numpy.ndarray of int64, shape (nsplits + 1,)
    split_table : numpy.ndarray of integers, shape (nsplits,)
    total_out : int

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
    >>> from fsstgpu import SymbolTable
    >>> from fsstgpu.decoder import decode_all
    >>> codes = np.array([0, 255, 120, 0], np.uint8)
    >>> out = decode_all([SymbolTable([b"ab"])], codes, np.array([0, 3, 4]), np.array([0, 3, 5]),
    ...                  np.array([0, 0], np.uint16), 5)
    >>> bytes(out)
    b'abxab'
    """
    # Read-only inputs whatever the caller's arrays are: the kernel compiles once.
    codes = readonly(codes, np.uint8)
    split_codes = readonly(split_codes, np.int64)
    split_out = readonly(split_out, np.int64)
    split_table = readonly(split_table, np.int64)
    total_out = int(total_out)
    if total_out < 0:
        raise CorruptDataError(f"negative output size {total_out}")
    _check_splits(len(codes), split_codes, split_out, split_table, len(tables), total_out)
    packed, lens = (readonly(a, a.dtype) for a in pack_tables(tables))
    out = np.empty(total_out, dtype=np.uint8)
    status = np.empty(len(split_table), dtype=np.int64)
    nsplits = len(split_table)
    # Tasks of about _TASK_BYTES of output each, spread over the cores.
    ntasks = max(1, min(nsplits, total_out // _TASK_BYTES))
    bounds = np.searchsorted(split_out[:-1], (total_out * np.arange(ntasks + 1)) // ntasks)
    bounds[-1] = nsplits
    run_tasks(lambda k: _decode_splits(codes, split_codes, split_out, split_table, packed, lens,
                                       out, status, bounds[k], bounds[k + 1]), ntasks)
    bad = np.flatnonzero(status != split_out[1:])
    if len(bad):
        k = int(bad[0])
        what = "is corrupt" if status[k] < 0 else f"ends at output byte {int(status[k])}"
        raise CorruptDataError(
            f"split {k} (codes {int(split_codes[k])}..{int(split_codes[k + 1])}, table "
            f"{int(split_table[k])}) {what}; expected output bytes "
            f"{int(split_out[k])}..{int(split_out[k + 1])} ({len(bad)} bad splits)"
        )
    return out

