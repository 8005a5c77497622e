"""FSST encoding on the CPU: greedy longest match, string by string, in parallel over chunks.

Columns are encoded by the compiled kernel (:func:`fsstgpu.native.encode_blocks`: chunks of up to
1 MB of strings, at least four per thread as long as each keeps 64 KB, each into its own
worst-case buffer, then packed in order), so the result is identical to encoding the strings one
after the other, whatever the thread count.

:func:`encode_chunk` is the numba kernel with :mod:`fsstgpu.matcher`'s tables, kept only as the
tests' oracle for the compiled encoder (issue #21: it goes with the rest of numba).
"""

from __future__ import annotations

import numba
import numpy as np

from fsstgpu import native
from fsstgpu.jit import readonly
from fsstgpu.matcher import LONG_FLAG, hash3, load_u64, load_word
from fsstgpu.symbol_table import SymbolTable


def encode_chunk(data, offsets, lo, hi, byte_code, short_code, hhead, ekey, ecl, enext, codes,
                 out0, code_offsets) -> int:
    """Encode strings ``lo:hi`` into ``codes`` from ``out0``; ``code_offsets`` get absolute
    positions. Returns the end position in ``codes``. ``codes`` needs 2 bytes per input byte.

    The matcher tables are :func:`fsstgpu.matcher.build_lookup`'s (read-only); ``data`` and
    ``offsets`` are passed on as read-only views, so the kernel compiles once.
    """
    return _encode_chunk(readonly(data, np.uint8), readonly(offsets, np.int64), int(lo), int(hi),
                         byte_code, short_code, hhead, ekey, ecl, enext, codes, int(out0),
                         code_offsets)


@numba.njit(cache=True, nogil=True)
def _encode_chunk(data, offsets, lo, hi, byte_code, short_code, hhead, ekey, ecl, enext, codes,
                  out0, code_offsets):
    """:func:`encode_chunk`'s kernel."""
    size = data.shape[0]
    out = out0
    for i in range(lo, hi):
        code_offsets[i] = out
        pos = offsets[i]
        end = offsets[i + 1]
        # Fast path: 8 whole bytes left in the string, so no length checks are needed.
        while pos + 8 <= end:
            word = load_u64(data, pos)
            cl = short_code[np.int64(word & np.uint64(0xFFFF))]
            if cl & LONG_FLAG:
                e = hhead[hash3(word)]
                while e >= 0:
                    sh = np.uint64(64 - 8 * (ecl[e] >> 16))
                    if (word << sh) >> sh == ekey[e]:
                        break
                    e = enext[e]
                if e >= 0:
                    cl = ecl[e]
                    codes[out] = np.uint8(cl & 0xFF)
                    out += 1
                    pos += cl >> 16
                    continue
            c = cl & 0xFF
            # Branch-free escape: always write the literal, advance by 2 only for an escape.
            codes[out] = np.uint8(c)
            codes[out + 1] = np.uint8(word & np.uint64(0xFF))
            out += 1 + (c == 255)
            pos += (cl >> 16) & 0xFF
        # The last 1-7 bytes of the string.
        while pos < end:
            rem = end - pos
            word = load_word(data, pos, end, size)
            if rem >= 3:
                e = hhead[hash3(word)]
                while e >= 0:
                    cl = ecl[e]
                    ln = cl >> 16
                    if ln <= rem:
                        sh = np.uint64(64 - 8 * ln)
                        if (word << sh) >> sh == ekey[e]:
                            break
                    e = enext[e]
                if e >= 0:
                    codes[out] = np.uint8(cl & 0xFF)
                    out += 1
                    pos += ln
                    continue
            if rem >= 2:
                cl = short_code[np.int64(word & np.uint64(0xFFFF))]
            else:
                cl = byte_code[np.int64(word & np.uint64(0xFF))]
            c = cl & 0xFF
            codes[out] = np.uint8(c)
            codes[out + 1] = np.uint8(word & np.uint64(0xFF))
            out += 1 + (c == 255)
            pos += (cl >> 16) & 0xFF
    return out


def encode_strings(table: SymbolTable, data: np.ndarray, offsets: np.ndarray):
    """Compress every string ``data[offsets[i]:offsets[i+1]]`` with ``table``: the one-block
    case of :func:`fsstgpu.native.encode_blocks` (whose parameters and results these are).

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import SymbolTable
    >>> from fsstgpu.encoder import encode_strings
    >>> t = SymbolTable([b"ab"])
    >>> codes, offs = encode_strings(t, np.frombuffer(b"abxab", np.uint8), np.array([0, 3, 5]))
    >>> codes.tolist(), offs.tolist()
    ([0, 255, 120, 0], [0, 3, 4])
    """
    n = len(offsets) - 1 if np.ndim(offsets) == 1 else 0
    return native.encode_blocks((table,), data, offsets, np.array([0, max(n, 0)], np.int64))
