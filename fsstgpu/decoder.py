"""FSST decoding on the CPU: the reference every GPU decode is compared with, byte for byte.

Two entry points:

* :func:`decode_range` decodes one run of codes into a caller-given output range (random access,
  one string or many);
* :func:`decode_all` decodes a whole column from its split points (see the contract in
  :mod:`fsstgpu.arrays`), groups of splits in parallel (:func:`fsstgpu.parallel.run_tasks`).

Both check everything a corrupt input could get wrong: a code with no symbol, an escape as the
last code, output that would pass the end of its range, and (for :func:`decode_all`) a split that
does not fill its range exactly, a symbol that runs across a string's end, or a stored code offset
that is not where the string's codes start (checked in the same walk, so the whole column decodes
exactly when each string decodes alone). They raise :class:`~fsstgpu.errors.CorruptDataError`
and never write outside the output range they were given.

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


def compact_tables(tables):
    """The tables as the CPU decoder reads them: every symbol, table after table (uint64), where
    each table's start (int64, ``ntables + 1``), and a (ntables, 256) uint8 array of lengths (0
    for codes a table lacks and for the escape).

    :func:`~fsstgpu.symbol_table.pack_tables` gives every table 256 symbols of 8 bytes: 2.3 KB
    a table, so a blob of 65536 tables of 17 bytes each took 135 times its size to decode (issue
    #20, finding 6). This takes 256 bytes a table and 8 a symbol.

    Examples
    --------
    >>> from fsstgpu import SymbolTable
    >>> from fsstgpu.decoder import compact_tables
    >>> packed, first, lens = compact_tables([SymbolTable([b"ab", b"c"]), SymbolTable([])])
    >>> [hex(int(v)) for v in packed], first.tolist(), lens[0, :3].tolist()
    (['0x63', '0x6261'], [0, 2, 2], [1, 2, 0])
    """
    first = np.zeros(len(tables) + 1, np.int64)
    np.cumsum([len(t) for t in tables], out=first[1:])
    packed = np.zeros(max(int(first[-1]), 1), np.uint64)  # one entry at least: a kernel indexes
    lens = np.zeros((max(len(tables), 1), 256), np.uint8)
    for t, table in enumerate(tables):
        packed[first[t] : first[t + 1]] = table.packed
        lens[t, : len(table)] = table.lengths
    return packed, first, lens


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


# Statuses of a split that :func:`_decode_checked` rejects (a non-negative one is its output end).
_CORRUPT, _CROSSES, _OFFSET = -1, -2, -3
# Output bytes per window of the string-end check: its scratch (8 bytes an output byte) stays in
# the L1 cache.
_WINDOW = 4096


@numba.njit(cache=True, nogil=True)
def _check_ends(ends, row, o, i, base, wcode, starts, code_offsets):
    """Check the string ends ``ends[row:]`` up to output ``o`` (code position ``i``) of a window
    that began at output ``base``, code ``wcode``; return (status, the next end's index).

    ``starts[p - base]`` holds the code position of the symbol that starts at output ``p`` when
    one did in this window (positions ``>= wcode``; anything else there is older). A string end
    must be such a start (else a symbol or an escape runs across it: _CROSSES) and, with stored
    code offsets (``len(code_offsets) == len(ends)``), at its code offset (else _OFFSET)."""
    nb = ends.shape[0]
    check = code_offsets.shape[0] == nb
    while row < nb and ends[row] <= o:
        e = np.int64(ends[row])
        pos = i if e == o else starts[e - base]
        if pos < wcode:
            return _CROSSES, row
        if check and code_offsets[row] != pos:
            return _OFFSET, row
        row += 1
    return 0, row


@numba.njit(cache=True, nogil=True)
def _decode_checked(codes, start, end, packed, lens, out, out_pos, out_end, ends, row,
                    code_offsets, starts):
    """:func:`_decode_kernel` that also checks the string ends; return (output end or a
    negative status, the index of the string end it stopped at).

    ``ends`` are the strings' output offsets (``n + 1``, from 0) and ``ends[row]`` the first
    after ``out_pos``. Each symbol's start is noted in ``starts`` (``_WINDOW + 16`` entries, none
    at or after ``start`` on entry) and the ends are checked a window at a time
    (:func:`_check_ends`): the symbol loop stays the plain decoder's, plus one store, with no
    branch per string (which halved the speed)."""
    i = start
    o = out_pos
    fast_end = out_end - 8
    base, wcode = o, i  # the current window's output and code start
    while True:
        lim = min(fast_end + 1, base + _WINDOW)
        # Fast loop: 8-byte stores while they stay inside the range.
        while i < end and o < lim:
            starts[np.uint64(o - base)] = i
            c = codes[i]
            if c != ESCAPE:
                ln = lens[c]
                if ln == 0:
                    return _CORRUPT, row
                _store_u64(out, o, packed[c])
                o += ln
                i += 1
            else:
                if i + 1 >= end:
                    return _CORRUPT, row
                out[o] = codes[i + 1]
                o += 1
                i += 2
        if i < end and o > fast_end:
            # Tail: byte stores with exact bounds (fewer than 16 bytes past the window).
            while i < end:
                starts[np.uint64(o - base)] = i
                c = codes[i]
                if c != ESCAPE:
                    ln = np.int64(lens[c])
                    if ln == 0 or o + ln > out_end:
                        return _CORRUPT, row
                    sym = packed[c]
                    for j in range(ln):
                        out[o + j] = np.uint8((sym >> np.uint64(8 * j)) & np.uint64(0xFF))
                    o += ln
                    i += 1
                else:
                    if i + 1 >= end or o >= out_end:
                        return _CORRUPT, row
                    out[o] = codes[i + 1]
                    o += 1
                    i += 2
        status, row = _check_ends(ends, row, o, i, base, wcode, starts, code_offsets)
        if status:
            return status, row
        if i >= end:
            return o, row
        base, wcode = o, i


@numba.njit(cache=True, nogil=True)
def _decreases(a):
    for i in range(a.shape[0] - 1):
        if a[i + 1] < a[i]:
            return True
    return False


@numba.njit(cache=True, nogil=True)
def _first_end_after(ends, pos):
    """The first ``r`` with ``ends[r] > pos`` (``len(ends)`` when none): a binary search."""
    lo, hi = 0, ends.shape[0]
    while lo < hi:
        mid = (lo + hi) >> 1
        if ends[mid] <= pos:
            lo = mid + 1
        else:
            hi = mid
    return lo


@numba.njit(cache=True, nogil=True)
def _decode_splits(codes, split_codes, split_out, split_table, packed, first, lens, out, ends,
                   code_offsets, status, rows, k0, k1):
    """Decode splits ``k0:k1``; ``status[k]`` gets each split's output end (negative: corrupt)
    and ``rows[k]`` the string end index it stopped at."""
    if ends.shape[0] == 0:  # no string ends to check: the plain kernel, a third faster
        for k in range(k0, k1):
            t = np.int64(split_table[k])
            status[k] = _decode_kernel(codes, split_codes[k], split_codes[k + 1],
                                       packed[first[t] : first[t + 1]], lens[t], out,
                                       split_out[k], split_out[k + 1])
        return
    starts = np.full(_WINDOW + 16, -1, np.int64)  # older than every code position
    for k in range(k0, k1):
        t = np.int64(split_table[k])
        row = _first_end_after(ends, split_out[k])
        # table t's symbols: packed[first[t]:first[t + 1]] (lens[t, c] == 0 past them)
        status[k], rows[k] = _decode_checked(codes, split_codes[k], split_codes[k + 1],
                                             packed[first[t] : first[t + 1]], lens[t], out,
                                             split_out[k], split_out[k + 1], ends, row,
                                             code_offsets, starts)


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


def decode_all(tables, codes, split_codes, split_out, split_table, total_out: int, *,
               string_ends=None, code_offsets=None) -> np.ndarray:
    """Decode a whole column from its split points; return its ``total_out`` data bytes.

    Split ``k`` decodes ``codes[split_codes[k]:split_codes[k+1]]`` with ``tables[split_table[k]]``
    into output bytes ``split_out[k]:split_out[k+1]`` (the contract in :mod:`fsstgpu.arrays`).
    Splits are decoded in parallel. With ``string_ends`` the decode also checks, in the same
    walk, that no symbol (or escape) runs across a string's end and, with ``code_offsets``, that
    each string's codes start where they say: then the column decodes here exactly when every
    string decodes alone (``carr[i]``, ``take``) and :meth:`~fsstgpu.CompressedStringArray.validate`
    passes, to the same bytes.

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

    Returns
    -------
    numpy.ndarray of uint8, shape (total_out,)

    Raises
    ------
    CorruptDataError
        If the split arrays are inconsistent, any split does not decode to exactly its range, a
        symbol crosses a string end or a code offset disagrees with the codes.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import SymbolTable
    >>> from fsstgpu.decoder import decode_all
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
    # Read-only inputs whatever the caller's arrays are: the kernel compiles once per dtype of
    # the string ends (int32 or int64, as the Arrow offsets come).
    codes = readonly(codes, np.uint8)
    split_codes = readonly(split_codes, np.int64)
    split_out = readonly(split_out, np.int64)
    split_table = readonly(split_table, np.int64)
    total_out = int(total_out)
    if total_out < 0:
        raise CorruptDataError(f"negative output size {total_out}")
    _check_splits(len(codes), split_codes, split_out, split_table, len(tables), total_out)
    ends, offsets = _checked_ends(string_ends, code_offsets, total_out, len(codes))
    packed, first, lens = (readonly(a, a.dtype) for a in compact_tables(tables))
    out = np.empty(total_out, dtype=np.uint8)
    nsplits = len(split_table)
    status = np.empty(nsplits, dtype=np.int64)
    rows = np.empty(nsplits, dtype=np.int64)
    # Tasks of about _TASK_BYTES of output each, spread over the cores.
    ntasks = max(1, min(nsplits, total_out // _TASK_BYTES))
    bounds = np.searchsorted(split_out[:-1], (total_out * np.arange(ntasks + 1)) // ntasks)
    bounds[-1] = nsplits
    run_tasks(lambda k: _decode_splits(codes, split_codes, split_out, split_table, packed, first,
                                       lens, out, ends, offsets, status, rows, bounds[k],
                                       bounds[k + 1]), ntasks)
    bad = np.flatnonzero(status != split_out[1:])
    if len(bad):
        k = int(bad[0])
        where = f"split {k}, codes {int(split_codes[k])}..{int(split_codes[k + 1])}"
        if status[k] == _CROSSES:
            raise CorruptDataError(f"string {int(rows[k]) - 1}: a symbol runs across its end "
                                   f"({where})")
        if status[k] == _OFFSET:
            raise CorruptDataError(f"string {int(rows[k])}: its stored code offset "
                                   f"{int(offsets[rows[k]])} is not where its codes start "
                                   f"({where})")
        what = "is corrupt" if status[k] < 0 else f"ends at output byte {int(status[k])}"
        raise CorruptDataError(
            f"split {k} (codes {int(split_codes[k])}..{int(split_codes[k + 1])}, table "
            f"{int(split_table[k])}) {what}; expected output bytes "
            f"{int(split_out[k])}..{int(split_out[k + 1])} ({len(bad)} bad splits)"
        )
    return out


def _checked_ends(string_ends, code_offsets, total_out: int, ncodes: int):
    """The string ends and code offsets as the kernel takes them (read-only, the offsets empty
    when not stored), checked: it indexes with them unchecked."""
    if string_ends is None:
        if code_offsets is not None:
            raise ValueError("code_offsets are checked against string_ends: give both")
        return (readonly(np.zeros(0, np.int64), np.int64),) * 2  # nothing to check
    ends = np.asarray(string_ends)
    ends = readonly(ends, np.int32 if ends.dtype == np.int32 else np.int64)
    if ends.ndim != 1 or not len(ends) or ends[0] != 0 or ends[-1] != total_out:
        raise CorruptDataError(f"string ends must run from 0 to the {total_out} output bytes")
    if _decreases(ends):  # in their own dtype: an int64 copy would cost 8 bytes a string
        raise CorruptDataError("string ends must be non-decreasing")
    if code_offsets is None:
        return ends, readonly(np.zeros(0, np.int64), np.int64)
    offsets = readonly(code_offsets, np.int64)
    if offsets.shape != ends.shape or offsets[0] != 0 or offsets[-1] != ncodes:
        raise CorruptDataError(f"code offsets must be {len(ends)} positions from 0 to {ncodes}")
    return ends, offsets
