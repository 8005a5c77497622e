"""FSST encoding on the CPU: greedy longest match, string by string, in parallel over chunks.

Matching is :mod:`fsstgpu.matcher`'s. Inputs are encoded in chunks of strings (up to 1 MB each,
at least four per core as long as each keeps 64 KB), spread over the cores by
:func:`fsstgpu.parallel.run_tasks`, each chunk into its own worst-case region of a scratch buffer;
the regions are then packed together. The result is identical to encoding the strings one after
the other.
"""

from __future__ import annotations

import os

import numba
import numpy as np

from fsstgpu.arrow_layout import is_non_decreasing
from fsstgpu.jit import readonly
from fsstgpu.matcher import LONG_FLAG, hash3, load_u64, load_word, matcher_tables
from fsstgpu.parallel import run_tasks
from fsstgpu.symbol_table import SymbolTable

# Input bytes per parallel task: up to 1 MB, but a column is cut into at least _TASKS_PER_CORE
# tasks per core as long as each keeps 64 KB (~150 us of work, >10x a task's overhead), so
# mid-sized columns use every core and a late-starting thread still gets a share (2 MB columns:
# 230 -> 400 MB/s on 2 cores).
_CHUNK_BYTES = 1 << 20
_MIN_CHUNK_BYTES = 64 << 10
_TASKS_PER_CORE = 4


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


def _chunk_bounds(offsets: np.ndarray, chunk_bytes: int, min_chunks: int = 1,
                  min_chunk_bytes: int = 1) -> np.ndarray:
    """String indices cutting ``offsets`` into runs of about ``chunk_bytes`` bytes each, or into
    ``min_chunks`` runs when that gives more, but never runs under ``min_chunk_bytes``."""
    n = len(offsets) - 1
    span = int(offsets[-1] - offsets[0])
    nchunks = max(1, min(n, span // max(1, min_chunk_bytes),
                         max(span // chunk_bytes, min_chunks)))
    if nchunks == 1:
        return np.array([0, n], dtype=np.int64)
    targets = offsets[0] + (span * np.arange(1, nchunks, dtype=np.int64)) // nchunks
    cuts = np.searchsorted(offsets, targets, side="left")
    return np.unique(np.concatenate(([0], cuts, [n]))).astype(np.int64)


def encode_strings(table: SymbolTable, data: np.ndarray, offsets: np.ndarray):
    """Compress every string ``data[offsets[i]:offsets[i+1]]`` with ``table``.

    Parameters
    ----------
    table : SymbolTable
    data : numpy.ndarray of uint8
        The strings' bytes, concatenated.
    offsets : numpy.ndarray of int64, shape (n + 1,)
        String boundaries in ``data`` (non-decreasing, inside ``data``).

    Returns
    -------
    codes : numpy.ndarray of uint8
    code_offsets : numpy.ndarray of int64, shape (n + 1,), starting at 0

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
    data = np.ascontiguousarray(data, dtype=np.uint8)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    if offsets.ndim != 1 or len(offsets) == 0:
        raise ValueError("offsets must be a non-empty 1-D array (n + 1 string boundaries)")
    if len(offsets) > 1 and (offsets[0] < 0 or offsets[-1] > len(data)
                             or not is_non_decreasing(offsets)):
        raise ValueError("offsets must be non-decreasing and inside data")
    n = len(offsets) - 1
    code_offsets = np.empty(n + 1, dtype=np.int64)
    if n == 0:
        code_offsets[0] = 0
        return np.empty(0, dtype=np.uint8), code_offsets
    lookup = matcher_tables(table)
    bounds = _chunk_bounds(offsets, _CHUNK_BYTES, _TASKS_PER_CORE * (os.cpu_count() or 1),
                           _MIN_CHUNK_BYTES)
    nchunks = len(bounds) - 1
    # Each chunk gets 2 bytes per input byte (all escapes) plus 1 for the speculative literal.
    chunk_bytes = offsets[bounds[1:]] - offsets[bounds[:-1]]
    scratch_starts = np.zeros(nchunks, dtype=np.int64)
    np.cumsum(2 * chunk_bytes[:-1] + 1, out=scratch_starts[1:])
    scratch = np.empty(int(scratch_starts[-1] + 2 * chunk_bytes[-1] + 1), dtype=np.uint8)
    ends = np.empty(nchunks, dtype=np.int64)
    if nchunks == 1:
        ends[0] = encode_chunk(data, offsets, 0, n, *lookup, scratch, 0, code_offsets)
        code_offsets[n] = ends[0]
        return scratch[: ends[0]].copy(), code_offsets

    def task(k):
        ends[k] = encode_chunk(data, offsets, bounds[k], bounds[k + 1], *lookup, scratch,
                                scratch_starts[k], code_offsets)

    run_tasks(task, nchunks)
    sizes = ends - scratch_starts
    dest_starts = np.zeros(nchunks, dtype=np.int64)
    np.cumsum(sizes[:-1], out=dest_starts[1:])
    total = int(dest_starts[-1] + sizes[-1])
    codes = np.empty(total, dtype=np.uint8)
    for k in range(nchunks):
        src, dst = int(scratch_starts[k]), int(dest_starts[k])
        codes[dst : dst + sizes[k]] = scratch[src : src + sizes[k]]
        code_offsets[bounds[k] : bounds[k + 1]] += dst - src
    code_offsets[n] = total
    return codes, code_offsets
