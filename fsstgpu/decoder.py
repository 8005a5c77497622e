"""FSST decoding on the CPU: the reference every GPU decode is compared with, byte for byte.

PLACEHOLDER (correct, not yet fast): the core issue's owner speeds it up, keeping the signatures.
"""

from __future__ import annotations

import numba
import numpy as np

from fsstgpu.errors import CorruptDataError
from fsstgpu.symbol_table import SymbolTable


@numba.njit(cache=True, nogil=True)
def _decode_range(codes, start, end, packed, lengths, out, out_pos, out_end):
    """Decode codes[start:end] into out[out_pos:out_end]; return the end position, or -1 on error.

    Errors: an escape as the last code, a code with no symbol, or output past ``out_end``.
    """
    nsym = packed.shape[0]
    i = start
    o = out_pos
    while i < end:
        c = codes[i]
        if c == 255:
            if i + 1 >= end or o >= out_end:
                return -1
            out[o] = codes[i + 1]
            o += 1
            i += 2
        else:
            if c >= nsym:
                return -1
            ln = lengths[c]
            if o + ln > out_end:
                return -1
            sym = packed[c]
            for j in range(ln):
                out[o + j] = (sym >> np.uint64(8 * j)) & np.uint64(0xFF)
            o += ln
            i += 1
    return o


def decode_range(table: SymbolTable, codes, start: int, end: int, out, out_pos: int, out_end: int):
    """Decode ``codes[start:end]`` into ``out`` from ``out_pos``; return the output end.

    Raises
    ------
    CorruptDataError
        If the codes run past ``out_end``, end in an escape, or use a code the table lacks.

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
    o = _decode_range(codes, start, end, table.packed, table.lengths, out, out_pos, out_end)
    if o < 0:
        raise CorruptDataError(
            f"codes {start}..{end} do not decode into output bytes {out_pos}..{out_end}"
        )
    return int(o)
