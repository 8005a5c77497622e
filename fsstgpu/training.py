"""FSST symbol-table training (the algorithm of Boncz, Neumann and Leis, PVLDB 2020).

Training builds a table from a sample of the strings in five rounds. Each round

1. compresses part of the sample greedily with the current table (the fraction grows
   8, 38, 68, 98, 128 out of 128, so early rounds are cheap), counting how often every symbol
   is used, how often every pair of adjacent symbols occurs (the pair's concatenation, cut to 8
   bytes, is a candidate symbol), and the single bytes that start multi-byte matches (so that
   frequent bytes can become 1-byte symbols instead of 2-byte escapes);
2. scores each candidate by ``count * length`` (1-byte symbols weighted up: they cut escapes,
   which cost 2 bytes each, and make compression and decompression faster), drops candidates
   seen fewer than ``5 * fraction / 128`` times, and keeps the best 255 as the next table.

Here three extra rounds over the whole sample come before the last (more rounds let longer
symbols grow; +1.5% ratio on dbtext). The last round compresses the whole sample without
counting pairs; the final table is made from
the symbol counts of the best round (by bytes saved), so symbols that turned out unused are
dropped. A symbol of 3+ bytes is admitted only when its hash slot in the encoder's lookup
(:mod:`fsstgpu.encoder`) is free, so the encoder can always find every trained symbol.

The sample is drawn the reference's way, but larger: random strings (a random 512-byte piece
of longer ones) until ``sample_bytes`` bytes are collected, from a fixed-seed generator, so the
same input always gives the same table. Hot loops run in numba.

Where a column gets a new table is :mod:`fsstgpu.blocks`' job.
"""

from __future__ import annotations

import numba
import numpy as np

from fsstgpu.arrow_layout import as_data_offsets, is_non_decreasing
from fsstgpu.inputs import as_string_column
from fsstgpu.jit import readonly
from fsstgpu.matcher import (
    HASH_PRIME,
    HASH_SIZE,
    LONG_FLAG,
    fill,
    hash3,
    load_word,
    lookup_scratch,
)
from fsstgpu.symbol_table import MAX_SYMBOLS, SymbolTable

DEFAULT_SAMPLE_BYTES = 48 << 10
# Tuned on dbtext (corpus ratio, reference 2.094): a 48 KB sample instead of 16 KB (+1.5%),
# three extra rounds over the whole sample before the last (+1.5%), and single bytes weighted 4x
# instead of 8x (+0.2%). Lower candidate thresholds or more rounds bought < 0.3% more.
_MIN_COUNT = 5
_EXTRA_ROUNDS = 3
_SINGLE_WEIGHT = 4
SEED = 4637947
SAMPLE_LINE = 512  # longer strings contribute one random 512-byte piece to the sample
_CODE_BASE = 256  # training codes 0-255 are escaped bytes, 256-510 real symbols
_NCODES = 512
_ESCAPED_BYTES = np.arange(256, dtype=np.int32) | np.int32(1 << 16)  # code b, length 1


@numba.njit(cache=True, nogil=True)
def _mix(x):
    """SplitMix64 step: a well-spread 64-bit hash of ``x`` (uint64)."""
    x = x + np.uint64(0x9E3779B97F4A7C15)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


@numba.njit(cache=True, nogil=True)
def _draw_sample(data, offsets, lo, hi, target, seed, sdata, soffs):
    """Random strings of ``lo:hi`` (a random 512-byte piece of longer ones) until ``target``
    bytes are collected into ``sdata`` (``target + 511`` bytes), their ends into ``soffs[1:]``
    (``soffs[0] == 0``; ``target + 1`` more entries). Returns the number of pieces."""
    n = hi - lo
    k = 0
    filled = 0
    state = np.uint64(seed)
    while filled < target:
        state = _mix(state)
        line = lo + np.int64(state % np.uint64(n))
        while offsets[line + 1] == offsets[line]:  # skip empty strings (total > 0: terminates)
            line += 1
            if line == hi:
                line = lo
        ln = offsets[line + 1] - offsets[line]
        state = _mix(state)
        start = SAMPLE_LINE * np.int64(state % np.uint64(1 + (ln - 1) // SAMPLE_LINE))
        src = offsets[line] + start - filled
        end = filled + (ln - start if ln - start < SAMPLE_LINE else SAMPLE_LINE)
        while filled < end:
            sdata[filled] = data[src + filled]
            filled += 1
        k += 1
        soffs[k] = filled
    return k


def sample_of(data, offsets, lo, hi, target, seed):
    """Sample strings ``lo:hi`` of checked arrays (:func:`checked_input`): all of them if they
    hold < ``target`` bytes, else random strings (a random 512-byte piece of longer ones) from
    a generator seeded with ``seed``, until ``target`` bytes are collected.

    Returns the sample's bytes and its offsets (from 0), as read-only arrays.
    """
    lo, hi, target = int(lo), int(hi), int(target)
    data, offsets = readonly(data, np.uint8), readonly(offsets, np.int64)
    if offsets[hi] - offsets[lo] < target:
        sdata = data[offsets[lo] : offsets[hi]]
        soffs = offsets[lo : hi + 1] - offsets[lo]
    else:
        sdata = np.empty(target + SAMPLE_LINE, dtype=np.uint8)
        soffs = np.empty(target + 2, dtype=np.int64)  # every piece has at least one byte
        soffs[0] = 0
        k = _draw_sample(data, offsets, lo, hi, target, int(seed), sdata, soffs)
        sdata, soffs = sdata[: soffs[k]], soffs[: k + 1]
    return readonly(sdata, np.uint8), readonly(soffs, np.int64)


@numba.njit(cache=True, nogil=True)
def _compress_count(sdata, soffs, frac, byte_code, short_code, hhead, ekey, ecl, enext, count1,
                    count2, touched):
    """Compress the round's part of the sample, counting symbols (and pairs when frac < 128).
    Returns (bytes saved, number of touched pair counters)."""
    size = sdata.shape[0]
    nlines = soffs.shape[0] - 1
    gain = 0
    ntouched = 0
    for i in range(nlines):
        if frac < 128:
            r = np.uint64(i + 1) * np.uint64(frac) * HASH_PRIME
            if 1 + np.int64((r ^ (r >> np.uint64(15))) & np.uint64(127)) > frac:
                continue
        pos = soffs[i]
        end = soffs[i + 1]
        code1 = -1
        while pos < end:
            # Longest match (the encoder's lookup, written out: numba is slow to call helpers
            # with many array arguments in a hot loop). The 3+ byte symbols are only looked
            # for when one starts with these two bytes (LONG_FLAG), as in the encoder.
            rem = end - pos
            word = load_word(sdata, pos, end, size)
            if rem >= 2:
                cl = short_code[np.int64(word & np.uint64(0xFFFF))]
                if rem >= 3 and cl & LONG_FLAG:
                    e = hhead[hash3(word)]
                    while e >= 0:
                        ln = ecl[e] >> 16
                        if ln <= rem:
                            sh = np.uint64(64 - 8 * ln)
                            if (word << sh) >> sh == ekey[e]:
                                cl = ecl[e]
                                break
                        e = enext[e]
            else:
                cl = byte_code[np.int64(word & np.uint64(0xFF))]
            code2 = np.int64(cl & 0xFFFF)
            ln2 = np.int64((cl >> 16) & 0xFF)
            first = np.int64(word & np.uint64(0xFF))
            pos += ln2
            gain += ln2 - (2 if code2 < _CODE_BASE else 1)
            count1[code2] += 1
            if ln2 != 1:  # the first byte alone is the alternative to a longer symbol
                count1[first] += 1
            if frac < 128 and code1 >= 0:
                # the concatenation of the two symbols is a candidate ...
                idx = code1 * _NCODES + code2
                if count2[idx] == 0:
                    touched[ntouched] = idx
                    ntouched += 1
                count2[idx] += 1
                if ln2 > 1:  # ... and so is the first symbol extended by one byte
                    idx = code1 * _NCODES + first
                    if count2[idx] == 0:
                        touched[ntouched] = idx
                        ntouched += 1
                    count2[idx] += 1
            code1 = code2
    return gain, ntouched


@numba.njit(cache=True, nogil=True)
def _before(gain_a, val_a, len_a, gain_b, val_b, len_b):
    """Whether candidate a ranks before b: more gain, then smaller value, then shorter (a total
    order on distinct symbols, so the table does not depend on candidate order). Scalars, not
    arrays: array arguments cost refcount updates per call, 50x slower in this loop."""
    return gain_a > gain_b or (gain_a == gain_b and (val_a < val_b
                                                     or (val_a == val_b and len_a < len_b)))


@numba.njit(cache=True, nogil=True)
def _choose(val, ln, gain, u, pick, slot_best, sym_val, sym_len):
    """Write the best 255 of the distinct candidates ``0:u`` (rank order: :func:`_before`) over
    codes 256+ of ``sym_val``/``sym_len`` (in no particular order), a 3+ byte symbol only when
    no better one has its hash slot; return how many.

    Taking candidates best first, a 3+ byte one is refused exactly when a better one of its
    hash slot was taken before it: so the taken set is the best 255 of the 1-2 byte candidates
    and of the best 3+ byte candidate of each slot. Those are found without sorting, by a
    bounded heap (which rejects most candidates with one comparison). Scratch: ``pick`` (u
    entries), ``slot_best`` (HASH_SIZE, all -1, and left so).
    """
    for c in range(u):
        if ln[c] >= 3:
            h = hash3(val[c])
            b = slot_best[h]
            if b < 0 or _before(gain[c], val[c], ln[c], gain[b], val[b], ln[b]):
                slot_best[h] = c
    m = 0
    for c in range(u):
        if ln[c] < 3 or slot_best[hash3(val[c])] == c:
            pick[m] = c
            m += 1
    for c in range(u):
        if ln[c] >= 3:
            slot_best[hash3(val[c])] = -1
    if m > MAX_SYMBOLS:
        # pick[:size]: a heap of the best so far, its root the worst of them (in place: the
        # heap never grows past the candidate being read)
        size = 0
        for j in range(m):
            c = pick[j]
            if size < MAX_SYMBOLS:
                i = size
                size += 1
                while i > 0:  # up: a parent ranks after its children
                    q = pick[(i - 1) // 2]
                    if not _before(gain[q], val[q], ln[q], gain[c], val[c], ln[c]):
                        break
                    pick[i] = q
                    i = (i - 1) // 2
                pick[i] = c
                continue
            q = pick[0]
            if not _before(gain[c], val[c], ln[c], gain[q], val[q], ln[q]):
                continue
            i = 0
            while 2 * i + 1 < size:  # down from the root
                w = 2 * i + 1
                q = pick[w]
                if w + 1 < size:
                    r = pick[w + 1]
                    if _before(gain[q], val[q], ln[q], gain[r], val[r], ln[r]):
                        w, q = w + 1, r  # the child that ranks last
                if not _before(gain[c], val[c], ln[c], gain[q], val[q], ln[q]):
                    break
                pick[i] = q
                i = w
            pick[i] = c
        m = size
    for j in range(m):
        sym_val[_CODE_BASE + j] = val[pick[j]]
        sym_len[_CODE_BASE + j] = ln[pick[j]]
    return m


@numba.njit(cache=True, nogil=True)
def _next_table(frac, sym_val, sym_len, nsym, count1, count2, touched, ntouched, min_count,
                single_weight, cval, clen, cgain, slot_of, pick, slot_best):
    """Make the next table from a round's counts; write it over codes 256+ of
    ``sym_val``/``sym_len`` and return its size. The pair counters read are zeroed.

    Candidates are the current symbols and escaped bytes (``count1``; single bytes weighted by
    ``single_weight``) and, when frac < 128, the concatenated pairs counted in ``count2`` at
    the ``ntouched`` indices ``touched``; candidates seen fewer than ``min_count * frac / 128``
    times are dropped, the same symbol from several sources is merged (gains summed), and the
    best 255 by gain (``count * length``) are taken, a 3+ byte symbol only when no better one
    has its hash slot. Scratch: ``cval``/``clen``/``cgain``/``pick`` for all candidates,
    ``slot_of`` for twice as many (at least 1024), and :func:`_choose`'s.
    """
    m = 0
    thr = (min_count * frac) // 128
    for k in range(_CODE_BASE + nsym):
        cnt = count1[k]
        if cnt == 0:
            continue
        ln = sym_len[k]
        if ln == 1:
            cnt *= single_weight
        if cnt < thr:
            continue
        cval[m] = sym_val[k]
        clen[m] = ln
        cgain[m] = cnt * ln
        m += 1
    for t in range(ntouched if frac < 128 else 0):
        idx = touched[t]
        cnt = np.int64(count2[idx])
        count2[idx] = 0  # zero again for the next round
        if cnt < thr:
            continue
        p1 = idx // _NCODES
        l1 = sym_len[p1]
        if l1 >= 8:
            continue
        p2 = idx % _NCODES
        ln = l1 + sym_len[p2]
        if ln > 8:
            ln = np.int64(8)
        v = sym_val[p1] | (sym_val[p2] << np.uint64(8 * l1))
        if ln < 8:
            v &= (np.uint64(1) << np.uint64(8 * ln)) - np.uint64(1)
        cval[m] = v
        clen[m] = ln
        cgain[m] = cnt * ln
        m += 1
    # Merge duplicates (the same symbol can arise from several pairs) in a hash map keyed by
    # (value, length), compacting the candidates in place in order of first sight.
    cap = 1024
    while cap < 2 * m:
        cap *= 2
    for h in range(cap):
        slot_of[h] = -1
    u = np.int64(0)  # not a literal 0: callees would compile for Literal[int](0) too
    for k in range(m):
        v = cval[k]
        ln = clen[k]
        h = np.int64(_mix(v ^ np.uint64(ln)) & np.uint64(cap - 1))
        while True:
            q = slot_of[h]
            if q < 0:
                slot_of[h] = np.int32(u)
                cval[u] = v  # u <= k: overwrites only entries already read
                clen[u] = ln
                cgain[u] = cgain[k]
                u += 1
                break
            if cval[q] == v and clen[q] == ln:
                cgain[q] += cgain[k]
                break
            h = (h + 1) & (cap - 1)
    # One symbol of 3+ bytes per hash slot (the reference's rule). The matcher could chain
    # more, but measured on dbtext the ratio drops (2.18 -> 2.17, genome -4%): overlapping
    # symbols such as "the" and "the " share their counts and crowd out other symbols.
    return _choose(cval, clen, cgain, u, pick, slot_best, sym_val, sym_len)


def _build(sdata, soffs, min_count, extra_rounds, single_weight, counter=None):
    """Train on the read-only sample (:func:`sample_of`); returns the symbols' values and
    lengths (uint64, int64). ``counter``: the pair counters' dtype (None: the narrowest that
    cannot overflow)."""
    # A pair counter gets at most one increment per sample byte: 16 bits suffice for samples
    # under 64 KB (the default) and halve the counters' 1 MB, which then stay in the L2 cache
    # (training 10% faster). Each counter type is its own compile of the kernels that take
    # it, done only when first needed.
    if counter is None:
        counter = np.uint16 if len(sdata) < 65536 else np.int32
    count2 = np.zeros(_NCODES * _NCODES, counter)
    touched = np.empty(2 * len(sdata) + 2, np.int64)
    ncand = _NCODES + len(touched)  # symbols, escaped bytes and pairs
    scratch = (np.empty(ncand, np.uint64), np.empty(ncand, np.int64), np.empty(ncand, np.int64),
               np.empty(max(1024, 2 * ncand), np.int32), np.empty(ncand, np.int64),
               np.full(HASH_SIZE, -1, np.int64))
    _, _, codes_of, byte_code, short_code, hhead, ekey, ecl, enext, tail = lookup_scratch()
    codes_of[:] = _CODE_BASE + np.arange(256)
    # codes 0-255: escaped bytes (value b, length 1), 256 + i: symbol i of the current table
    sym_val = np.arange(_NCODES, dtype=np.uint64)
    sym_len = np.ones(_NCODES, np.int64)
    count1 = np.zeros(_NCODES, np.int64)
    nsym = 0
    best_gain, best = -(1 << 62), None
    for frac in [8, 38, 68, 98] + [127] * extra_rounds + [128]:
        # The matcher: code 256 + i for symbol i. fill() wants symbols longest first, but
        # only for chains of 3+ byte symbols sharing a hash slot, which trained tables never
        # have (one per slot), so table order serves.
        byte_code[:] = _ESCAPED_BYTES
        fill(nsym, sym_val[_CODE_BASE:], sym_len[_CODE_BASE:], codes_of, byte_code, short_code,
             hhead, ekey, ecl, enext, tail)
        count1[:] = 0
        gain, ntouched = _compress_count(sdata, soffs, frac, byte_code, short_code, hhead, ekey,
                                         ecl, enext, count1, count2, touched)
        if gain >= best_gain:
            best_gain, best = gain, (sym_val.copy(), sym_len.copy(), nsym, count1.copy())
        if frac < 128:
            nsym = _next_table(frac, sym_val, sym_len, nsym, count1, count2, touched, ntouched,
                               min_count, single_weight, *scratch)
    sym_val, sym_len, nsym, count1 = best
    n = _next_table(128, sym_val, sym_len, nsym, count1, count2, touched, 0, min_count,
                    single_weight, *scratch)
    return sym_val[_CODE_BASE : _CODE_BASE + n].copy(), sym_len[_CODE_BASE : _CODE_BASE + n].copy()


def _table_from(vals, lens) -> SymbolTable:
    raw = np.ascontiguousarray(vals, dtype="<u8").tobytes()
    return SymbolTable([raw[8 * i : 8 * i + n] for i, n in enumerate(lens.tolist())])


def checked_input(data, offsets, sample_bytes):
    """Check and normalise the arguments of :func:`train_table` and :func:`plan_blocks`.

    Returns ``(data, offsets, n, target)``: read-only contiguous uint8 / int64 arrays, the string
    count and the sample size in bytes.
    """
    data = readonly(data, np.uint8)
    offsets = readonly(offsets, np.int64)
    if offsets.ndim != 1 or len(offsets) == 0:
        raise ValueError("offsets must be a non-empty 1-D array (n + 1 string boundaries)")
    n = len(offsets) - 1
    if n and (offsets[0] < 0 or offsets[-1] > len(data) or not is_non_decreasing(offsets)):
        raise ValueError("offsets must be non-decreasing and inside data")
    target = DEFAULT_SAMPLE_BYTES if sample_bytes is None else int(sample_bytes)
    if target < 1:
        raise ValueError(f"sample_bytes must be positive, not {target}")
    return data, offsets, n, target


def train_table(data: np.ndarray, offsets: np.ndarray, *, sample_bytes=None) -> SymbolTable:
    """Train a symbol table on the strings ``data[offsets[i]:offsets[i+1]]``.

    Parameters
    ----------
    data : numpy.ndarray of uint8
        The strings' bytes, concatenated.
    offsets : numpy.ndarray of int64, shape (n + 1,)
        String boundaries in ``data`` (non-decreasing; ``offsets[0]`` need not be 0).
    sample_bytes : int, optional
        Bytes of sample to train on (default 49152; the reference uses 16384). Inputs smaller
        than this are used whole.

    Returns
    -------
    SymbolTable
        At most 255 symbols of 1-8 bytes; the same input always gives the same table.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.training import train_table
    >>> data = np.frombuffer(b"hello world" * 100, np.uint8)
    >>> t = train_table(data, np.arange(0, 1101, 11))
    >>> b"hello wo" in t.symbols
    True
    """
    data, offsets, n, target = checked_input(data, offsets, sample_bytes)
    if n == 0 or offsets[-1] == offsets[0]:
        return SymbolTable([])
    return train_range(data, offsets, 0, n, target)


def train_range(data, offsets, lo, hi, target):
    """Train on strings ``lo:hi`` of checked arrays (:func:`checked_input`) holding at least one
    byte, with a sample of ``target`` bytes."""
    sdata, soffs = sample_of(data, offsets, lo, hi, target, SEED)
    vals, lens = _build(sdata, soffs, _MIN_COUNT, _EXTRA_ROUNDS, _SINGLE_WEIGHT)
    return _table_from(vals, lens)


def probe_symbols(sdata, soffs):
    """Symbols trained on a read-only sample (:func:`sample_of`) with the reference's five
    rounds only (cheaper, for probing how well a table fits): ``(values, lengths)`` as numpy
    arrays, code ``i`` = symbol ``i``."""
    return _build(sdata, soffs, _MIN_COUNT, 0, _SINGLE_WEIGHT)


def train(strings, *, sample_bytes=None) -> SymbolTable:
    """Train an FSST symbol table on a column of strings.

    Parameters
    ----------
    strings : pyarrow.Array, pyarrow.ChunkedArray, sequence of bytes or str, or (data, offsets)
        Any of the six Arrow string/binary types (sliced arrays and nulls are fine: nulls are
        ignored), Python strings (UTF-8 encoded) or bytes, or numpy ``(data, offsets)``.
    sample_bytes : int, optional
        Bytes of sample to train on (default 49152).

    Returns
    -------
    SymbolTable

    Raises
    ------
    TypeError
        For anything :func:`fsstgpu.compress` does not take (a list of integers, an Arrow
        array that is not of a string or binary type).

    Examples
    --------
    >>> from fsstgpu.training import train
    >>> t = train(["http://example.com/%d" % i for i in range(1000)])
    >>> 0 < len(t) <= 255
    True
    """
    if not (isinstance(strings, tuple) and len(strings) == 2
            and isinstance(strings[0], np.ndarray)):
        # compress's normaliser: what compress takes, train takes (a list of ints was trained
        # on as bytes, a dictionary array refused)
        strings = as_string_column(strings)
    data, offsets = as_data_offsets(strings)
    return train_table(data, offsets, sample_bytes=sample_bytes)


