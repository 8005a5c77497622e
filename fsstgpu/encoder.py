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
    """Compress every string ``data[offsets[i]:offsets[i+1]]`` with ``table``: the one-block
    case of :func:`encode_blocks` (whose parameters and results these are).

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
    return encode_blocks((table,), data, offsets, np.array([0, max(n, 0)], np.int64))


def encode_blocks(tables, data: np.ndarray, offsets: np.ndarray, block_starts):
    """Compress strings ``block_starts[b]:block_starts[b + 1]`` with ``tables[b]``, every block.

    Memory: the codes plus a scratch buffer for one wave of chunks (four per core, about 1 MB
    of input each, at their worst case of 2 bytes per input byte); the codes buffer grows in
    place (realloc) to the size the ratio so far predicts, and is trimmed at the end. So a
    column needs about its codes' size, not a worst-case buffer for the whole column.

    Parameters
    ----------
    tables : sequence of SymbolTable
        One per block.
    data : numpy.ndarray of uint8
    offsets : numpy.ndarray of int64, shape (n + 1,)
        String boundaries in ``data`` (non-decreasing, inside ``data``).
    block_starts : numpy.ndarray of int64, shape (len(tables) + 1,)
        From 0 to n, non-decreasing.

    Returns
    -------
    codes : numpy.ndarray of uint8
    code_offsets : numpy.ndarray of int64, shape (n + 1,), starting at 0

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import SymbolTable
    >>> from fsstgpu.encoder import encode_blocks
    >>> tables = [SymbolTable([b"ab"]), SymbolTable([b"xa"])]
    >>> codes, offs = encode_blocks(tables, np.frombuffer(b"abxab", np.uint8),
    ...                             np.array([0, 3, 5]), np.array([0, 1, 2]))
    >>> codes.tolist(), offs.tolist()
    ([0, 255, 120, 255, 97, 255, 98], [0, 3, 7])
    """
    data = np.ascontiguousarray(data, dtype=np.uint8)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    if offsets.ndim != 1 or len(offsets) == 0:
        raise ValueError("offsets must be a non-empty 1-D array (n + 1 string boundaries)")
    if len(offsets) > 1 and (offsets[0] < 0 or offsets[-1] > len(data)
                             or not is_non_decreasing(offsets)):
        raise ValueError("offsets must be non-decreasing and inside data")
    n = len(offsets) - 1
    block_starts = np.asarray(block_starts, dtype=np.int64)
    if (len(block_starts) != len(tables) + 1 or block_starts[0] != 0 or block_starts[-1] != n
            or not is_non_decreasing(block_starts)):
        raise ValueError(f"block_starts must run from 0 to {n}, one more than the tables")
    code_offsets = np.empty(n + 1, dtype=np.int64)
    # Chunks never cross a block: each block is cut on its own; chunk k uses table block[k].
    min_chunks = _TASKS_PER_CORE * (os.cpu_count() or 1)
    chunk_starts, owners = [], []
    for b in range(len(tables)):
        lo, hi = int(block_starts[b]), int(block_starts[b + 1])
        if lo < hi:
            cuts = _chunk_bounds(offsets[lo : hi + 1], _CHUNK_BYTES, min_chunks,
                                 _MIN_CHUNK_BYTES) + lo
            chunk_starts.append(cuts[:-1])
            owners.append(np.full(len(cuts) - 1, b))
    if not chunk_starts:
        code_offsets[:] = 0
        return np.empty(0, dtype=np.uint8), code_offsets
    starts = np.concatenate(chunk_starts)
    bounds = np.append(starts, n)
    owner = np.concatenate(owners)
    nchunks = len(starts)
    lookups = {int(b): matcher_tables(tables[b]) for b in np.unique(owner)}
    # Waves of a few chunks per core: each chunk of a wave is encoded into its own worst-case
    # region of a scratch buffer (2 bytes per input byte, plus 1 for the speculative literal),
    # then the wave's codes are appended, in order, to the output.
    wave = _TASKS_PER_CORE * (os.cpu_count() or 1)
    chunk_bytes = offsets[bounds[1:]] - offsets[bounds[:-1]]
    ends = np.empty(nchunks, dtype=np.int64)
    region = np.zeros(nchunks + 1, dtype=np.int64)
    scratch = np.empty(0, dtype=np.uint8)
    codes = np.empty(0, dtype=np.uint8)
    total = 0
    for w0 in range(0, nchunks, wave):
        w1 = min(w0 + wave, nchunks)
        region[w0] = 0
        np.cumsum(2 * chunk_bytes[w0:w1] + 1, out=region[w0 + 1 : w1 + 1])
        if region[w1] > len(scratch):
            scratch = np.empty(int(region[w1]), dtype=np.uint8)

        def task(j, w0=w0, scratch=scratch):
            k = w0 + j
            ends[k] = encode_chunk(data, offsets, bounds[k], bounds[k + 1],
                                   *lookups[int(owner[k])], scratch, region[k], code_offsets)

        run_tasks(task, w1 - w0)
        wave_size = int((ends[w0:w1] - region[w0:w1]).sum())
        if total + wave_size > len(codes):
            # Grow to the expected final size (the ratio so far, over the whole input) in place:
            # resize reallocates, which for large buffers remaps pages instead of copying.
            done = int(offsets[bounds[w1]] - offsets[0])
            expect = (total + wave_size) * int(offsets[-1] - offsets[0]) // max(done, 1)
            codes.resize(max(total + wave_size, expect * 17 // 16), refcheck=False)
        for k in range(w0, w1):
            src, size = int(region[k]), int(ends[k] - region[k])
            codes[total : total + size] = scratch[src : src + size]
            code_offsets[bounds[k] : bounds[k + 1]] += total - src
            total += size
    code_offsets[n] = total
    codes.resize(total, refcheck=False)
    return codes, code_offsets
