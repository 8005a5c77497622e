"""The FSST longest-match lookup: the one matcher the encoder and the trainer share.

It follows the reference (cwida/fsst): for every input position the next 8 bytes are loaded as
one little-endian word, and

1. when a symbol of 3-8 bytes starts with the word's first two bytes (flag :data:`LONG_FLAG` in
   the 2-byte table), the first 3 bytes are hashed (:func:`hash3`) into a table of such symbols,
   whose chain is tried longest first against the word masked to each symbol's length;
2. otherwise the 65536-entry 2-byte table gives the 2-byte symbol starting with those bytes, else
   the 1-byte symbol of the first byte, else an escape;
3. with a single byte left in the string, the 256-entry 1-byte table answers.

Entries are ``code | length << 16`` (int32). Training admits a symbol of 3+ bytes only when its
hash slot is free (:mod:`fsstgpu.training`), so for trained tables every chain has one entry;
hand-made tables may chain several, longest first, so the match is still the longest.

>>> import numpy as np
>>> from fsstgpu import SymbolTable
>>> from fsstgpu.matcher import matcher_tables
>>> byte_code, short_code, *_ = matcher_tables(SymbolTable([b"a", b"ab"]))
>>> int(byte_code[ord("a")] & 0xFF), int(short_code[ord("a") | ord("b") << 8] >> 16)
(0, 2)
"""

from __future__ import annotations

import functools

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from fsstgpu.jit import readonly
from fsstgpu.symbol_table import ESCAPE, SymbolTable

#: bits of the hash of a symbol's first 3 bytes: 4096 slots for at most 255 symbols
HASH_BITS = 12
HASH_SIZE = 1 << HASH_BITS
#: set in a 2-byte entry when a symbol of 3+ bytes starts with those two bytes
LONG_FLAG = np.int32(1 << 24)
#: multiplier of :func:`hash3` (also seeds the trainer's choice of sample lines)
HASH_PRIME = np.uint64(2971215073)
#: the encoder's 1-byte table before any symbol is added: every byte is an escape
ESCAPES = readonly(np.full(256, ESCAPE | (1 << 16)), np.int32)


@intrinsic
def load_u64(typingctx, arr, idx):
    """Unaligned little-endian 8-byte load from a uint8 array (no bounds check)."""
    sig = types.uint64(arr, idx)

    def codegen(context, builder, sig, args):
        ary = context.make_array(sig.args[0])(context, builder, args[0])
        ptr = builder.gep(ary.data, [args[1]])
        return builder.load(builder.bitcast(ptr, ir.IntType(64).as_pointer()), align=1)

    return sig, codegen


@numba.njit(cache=True, nogil=True, inline="always")
def hash3(word):
    """Hash of the low 3 bytes of ``word`` (uint64) into ``[0, HASH_SIZE)``."""
    p = (word & np.uint64(0xFFFFFF)) * HASH_PRIME
    return np.int64((p ^ (p >> np.uint64(15))) & np.uint64(HASH_SIZE - 1))


@numba.njit(cache=True, nogil=True, inline="always")
def load_word(data, pos, end, size):
    """The bytes ``data[pos:min(pos + 8, end)]`` as a little-endian word, zero beyond ``end``.

    ``size`` is ``len(data)``: a full 8-byte load is used whenever it stays inside the array.
    """
    rem = end - pos
    if pos + 8 <= size:
        w = load_u64(data, pos)
        if rem < 8:
            w &= (np.uint64(1) << np.uint64(8 * rem)) - np.uint64(1)
        return w
    w = np.uint64(0)
    for j in range(rem if rem < 8 else 8):
        w |= np.uint64(data[pos + j]) << np.uint64(8 * j)
    return w


@numba.njit(cache=True, nogil=True)
def fill(n, packed, lengths, codes_of, byte_code, short_code, hhead, ekey, ecl, enext, tail):
    """Fill the matcher tables (see :func:`build_lookup`) for the first ``n`` symbols of
    ``packed``/``lengths`` (sorted longest first) with codes ``codes_of``; ``byte_code`` must
    hold its "no symbol" entries already, ``tail`` is scratch. The arrays are
    :func:`lookup_scratch`'s (writable: the trainer calls this from its own kernel)."""
    for i in range(n):
        if lengths[i] == 1:
            byte_code[np.int64(packed[i] & np.uint64(0xFF))] = np.int32(codes_of[i]) | np.int32(
                1 << 16
            )
    # 2-byte entries: default to the 1-byte code of the first byte, then the 2-byte symbols
    for w in range(65536):
        short_code[w] = byte_code[w & 0xFF]
    for i in range(n):
        if lengths[i] == 2:
            short_code[np.int64(packed[i] & np.uint64(0xFFFF))] = np.int32(codes_of[i]) | np.int32(
                2 << 16
            )
    for h in range(HASH_SIZE):
        hhead[h] = -1
    m = 0
    for i in range(n):
        ln = np.int64(lengths[i])
        if ln >= 3:
            h = hash3(packed[i])
            ekey[m] = packed[i]
            ecl[m] = np.int32(codes_of[i]) | np.int32(ln << 16)
            enext[m] = -1
            if hhead[h] < 0:
                hhead[h] = m
            else:
                enext[tail[h]] = m
            tail[h] = m
            m += 1
            # Mark the 2-byte prefix: only then must the encoder try the hash table.
            w2 = np.int64(packed[i] & np.uint64(0xFFFF))
            short_code[w2] = short_code[w2] | LONG_FLAG


def lookup_scratch():
    """Fresh arrays for :func:`fill`: ``(packed, lengths, codes_of, byte_code, short_code,
    hhead, ekey, ecl, enext, tail)``, room for 256 symbols."""
    return (np.zeros(256, np.uint64), np.zeros(256, np.int64), np.zeros(256, np.int32),
            np.empty(256, np.int32), np.empty(65536, np.int32), np.empty(HASH_SIZE, np.int32),
            np.zeros(256, np.uint64), np.zeros(256, np.int32), np.zeros(256, np.int32),
            np.empty(HASH_SIZE, np.int32))


def build_lookup(packed, lengths, codes_of, byte_code):
    """The matcher tables for symbols ``packed``/``lengths`` with codes ``codes_of``.

    Parameters
    ----------
    packed : numpy.ndarray of uint64
        The symbols' bytes, little-endian, zero beyond each symbol's length (at most 256).
    lengths : numpy.ndarray of integers
        Their lengths (1-8).
    codes_of : numpy.ndarray of integers
        The code of each symbol (< 65536).
    byte_code : numpy.ndarray of int32, shape (256,)
        The 1-byte table's "no symbol" entries (an escape, for the encoder).

    Returns
    -------
    tuple of six read-only numpy arrays
        ``(byte_code, short_code, hhead, ekey, ecl, enext)``: entries are
        ``code | length << 16`` (int32); ``short_code`` entries also carry :data:`LONG_FLAG` when
        a symbol of 3+ bytes starts with their two bytes (so the length is
        ``(entry >> 16) & 0xFF``). Symbols of 3+ bytes are chained per hash slot: ``hhead[h]``
        is the first entry (-1: none), ``ekey``/``ecl``/``enext`` hold each entry's bytes, code
        and length, and the next entry; chains are longest first, so the first entry that
        matches is the longest match.
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    order = np.argsort(-lengths, kind="stable")  # longest first
    n = len(order)
    scratch = lookup_scratch()
    for dest, src in zip(scratch[:3], (packed, lengths, codes_of), strict=True):
        dest[:n] = np.asarray(src)[order]
    scratch[3][:] = byte_code
    fill(n, *scratch)
    return tuple(readonly(t, t.dtype) for t in scratch[3:9])


@functools.lru_cache(maxsize=64)
def matcher_tables(table: SymbolTable):
    """The matcher tables for ``table``: ``(byte_code, short_code, hhead, ekey, ecl, enext)``.

    Memoised (tables are immutable; the arrays are read-only). Unknown bytes map to an escape
    (code 255).
    """
    return build_lookup(table.packed, table.lengths, np.arange(len(table), dtype=np.int32),
                        ESCAPES)
