"""Block planning: where a column gets a new symbol table (see :func:`plan_blocks`).

A column's data can change at a few places (appended files, partitions, a sorted key moving to
another kind of value), and a table trained for one part can compress another part badly (the 22
dbtext files concatenated into one column: 1.41 with one reference table, 2.16 with per-block
tables). Planning probes the column with small samples and cheap tables, cuts it where the cost
of the current table jumps, and trains one table per block.
"""

from __future__ import annotations

import numpy as np

from fsstgpu import native
from fsstgpu.parallel import run_tasks, shared_pool, usable_cores
from fsstgpu.symbol_table import SymbolTable
from fsstgpu.training import (
    SEED,
    checked_input,
    probe_symbols,
    sample_of,
    train_range,
    train_table,
)


def _probe_lookup(vals, lens):
    """The compiled encoder's tables for trained symbols ``vals``/``lens`` (code ``i`` for
    symbol ``i``), without making a SymbolTable: block planning only needs code counts."""
    return native.matcher_of(vals, lens)


def _code_offsets(lookup, data, offsets) -> np.ndarray:
    """Where each of the strings ``data``/``offsets`` starts when encoded with ``lookup``, and
    the end: one thread (planning runs its probes in parallel itself)."""
    return native.encode_matched([lookup], data, offsets, np.array([0, len(offsets) - 1]),
                                 threads=1)[1]


def _range_cost(lookup, data, offsets, lo, hi):
    """Code bytes per string byte when strings ``lo:hi`` are encoded with matcher ``lookup``."""
    return float(_piece_costs(lookup, data, offsets, np.array([lo, hi]))[0])


def _piece_costs(lookup, data, offsets, pieces):
    """:func:`_range_cost` of each run of strings ``pieces[k]:pieces[k + 1]`` (1.0 for an empty
    one), from one encoding of them all (strings encode independently)."""
    lo, hi = int(pieces[0]), int(pieces[-1])
    code_offsets = _code_offsets(lookup, data, offsets[lo : hi + 1])
    raw = np.diff(offsets[pieces])
    coded = np.diff(code_offsets[pieces - lo])
    return np.where(raw > 0, coded / np.maximum(raw, 1), 1.0)


def _window_costs(lookups, data, offsets, pieces, group: int = 64):
    """:func:`_piece_costs` of ``pieces`` with each of ``lookups``, in parallel: every
    (lookup, run of ``group`` pieces) pair is a task (a located change encodes up to 16
    segments twice, which on one thread held up the whole walk)."""
    starts = np.arange(0, len(pieces) - 1, group)
    costs = [np.empty(len(pieces) - 1) for _ in lookups]

    def task(k):
        which, g = divmod(k, len(starts))
        lo = int(starts[g])
        hi = min(lo + group, len(pieces) - 1)
        costs[which][lo:hi] = _piece_costs(lookups[which], data, offsets, pieces[lo : hi + 1])

    run_tasks(task, len(lookups) * len(starts))
    return costs


# Segments whose probe costs are computed ahead of the walk, at most: more is wasted after each
# cut, and the small jobs then fight over the GIL (dbtext, 33 MB, 23 blocks on an H200 host's
# 16 cores: planning 0.35 s computing 64 ahead, 0.25 s computing 8).
_LOOKAHEAD = 8


def plan_blocks(data: np.ndarray, offsets: np.ndarray, *, sample_bytes=None,
                segment_bytes: int = 64 << 10, max_block_bytes: int = 64 << 20,
                tolerance: float = 0.15, speculate: bool | None = None):
    """Cut a column into blocks of consecutive strings and train one symbol table per block.

    Policy: a column's data can change at a few places (appended files, partitions, a sorted
    key moving to another kind of value), and a table trained for one part can compress another
    part badly (the 22 dbtext files concatenated into one column: 1.41 with one reference
    table). So:

    1. The column is probed in segments of ``segment_bytes`` (cut at string boundaries). A block
       starts with a probe table trained on its first 8 KB (reference rounds only), and its
       baseline cost (code bytes per byte) on that data.
    2. Each following segment contributes a 4 KB random sample, encoded with the probe table.
       When its cost exceeds the baseline by more than ``tolerance`` (15%), the change is
       located to ~4 KB: the previous and current segment are cut into 4 KB pieces, encoded
       whole with the old and with a fresh probe table, and the new block starts where switching
       tables costs least. Every 16 segments a fresh probe table is also tried on the next
       segment, to catch a change to data that compresses *better* with its own table. A block
       also ends after ``max_block_bytes``.
    2b. Drift (a sorted key, a slowly changing vocabulary) makes costs creep up; a block shorter
       than 1 MB is only split for a change that doubles the cost, so drifting data gets
       blocks of about 1 MB, not one per segment (each block costs a training, ~4 ms).
    3. Each block then gets its table trained on a sample of the whole block (``sample_bytes``),
       blocks in parallel. A column that stays one block gets exactly :func:`train_table`'s
       table. That table is trained on another core while this one probes (most columns stay
       one block; it is discarded otherwise), so on a machine with a free core a uniform column
       pays max(probing, training) instead of their sum (probing: ~1.5 ms per MB).

    4. A column of more than ``max_block_bytes`` is first cut every ``max_block_bytes`` bytes
       (at string boundaries), and the pieces are planned as above independently, on all
       cores: a block ends there anyway (step 2), and a fixed grid keeps the result the same
       whatever the thread count.

    Every block decodes alone with its table. Inputs under two segments are one block.

    Parameters
    ----------
    data : numpy.ndarray of uint8
    offsets : numpy.ndarray of int64, shape (n + 1,)
        String boundaries in ``data`` (non-decreasing; ``offsets[0]`` need not be 0).
    sample_bytes : int, optional
        Training sample per block (default 49152).
    segment_bytes, max_block_bytes : int
        Probe granularity and the largest block, in bytes of string data.
    tolerance : float
        Relative cost increase on a segment that starts a new block.
    speculate : bool, optional
        Train the whole column's table on another thread while probing (step 3); default: when
        the machine has more than one core. The result is the same either way.

    Returns
    -------
    block_starts : numpy.ndarray of int64, shape (nblocks + 1,)
        String index where each block starts; ``[0] == 0``, ``[-1] == n``.
    tables : list of SymbolTable
        One per block.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.blocks import plan_blocks
    >>> rng = np.random.default_rng(0)
    >>> text = b" ".join(rng.choice([b"lorem", b"ipsum", b"dolor", b"sitam"], 120_000))
    >>> dna = bytes(rng.choice(np.frombuffer(b"ACGT", np.uint8), 600_000))
    >>> data = np.frombuffer(text[:600_000] + dna, np.uint8)
    >>> starts, tables = plan_blocks(data, np.arange(0, 1_200_001, 30))  # 30-byte strings
    >>> len(tables) == len(starts) - 1 >= 2
    True
    >>> min(abs(int(s) - 20000) for s in starts) * 30 <= 4096  # a block starts at the change
    True
    """
    data, offsets, n, target = checked_input(data, offsets, sample_bytes)
    max_block_bytes = max(1, int(max_block_bytes))
    total = int(offsets[-1] - offsets[0]) if n else 0
    if total <= max_block_bytes:
        return _plan_piece(data, offsets, target, segment_bytes, max_block_bytes, tolerance,
                           speculate)
    marks = np.arange(offsets[0] + max_block_bytes, offsets[n], max_block_bytes, dtype=np.int64)
    grid = np.unique(np.concatenate(([0], np.searchsorted(offsets, marks), [n])))
    plans = [None] * (len(grid) - 1)

    def piece(k):
        lo, hi = int(grid[k]), int(grid[k + 1])
        # no speculative training: a piece waiting on a future queued behind the other pieces
        # in the pool would wait for itself
        starts, tables = _plan_piece(data, offsets[lo : hi + 1], target, segment_bytes,
                                     max_block_bytes, tolerance, False)
        plans[k] = (starts[:-1] + lo, tables)

    run_tasks(piece, len(plans))
    return (np.concatenate([s for s, _ in plans] + [np.array([n], np.int64)]),
            [t for _, ts in plans for t in ts])


def _plan_piece(data, offsets, target, segment_bytes, max_block_bytes, tolerance, speculate):
    """:func:`plan_blocks` of a column of at most ``max_block_bytes`` (checked arrays)."""
    n = len(offsets) - 1
    segment_bytes = max(1, int(segment_bytes))
    total = int(offsets[-1] - offsets[0]) if n else 0
    if total < 2 * segment_bytes:
        return np.array([0, n], dtype=np.int64), [train_table(data, offsets, sample_bytes=target)]

    def cut(lo, hi, step):
        """String indices from lo to hi, about ``step`` bytes apart."""
        marks = np.arange(offsets[lo] + step, offsets[hi], step, dtype=np.int64)
        return np.unique(np.concatenate(([lo], np.searchsorted(offsets, marks), [hi])))

    # Most columns stay one block, whose table is the whole column's: train it on another core
    # while this one probes, and drop it if the column gets cut.
    spare_core = usable_cores() > 1
    if speculate is None:
        speculate = spare_core
    whole = shared_pool().submit(train_range, data, offsets, 0, n, target) if speculate else None
    seg = cut(0, n, segment_bytes)
    nseg = len(seg) - 1
    probe_bytes = 4 << 10
    probe_train = 8 << 10

    def probe(lookup, s, lo=None, hi=None):
        """Code bytes per byte of a small sample of segment s (or of strings lo:hi, sampled
        with segment lo's seed) encoded with ``lookup``."""
        if s is not None:
            lo, hi = seg[s], seg[s + 1]
            seed = SEED + s
        else:
            seed = SEED + int(np.searchsorted(seg, lo, side="right")) - 1
        sdata, soffs = sample_of(data, offsets, lo, hi, probe_bytes, seed)
        raw = int(soffs[-1])
        return int(_code_offsets(lookup, sdata, soffs)[-1]) / raw if raw else 0.0

    def probe_table(lo, hi):
        return _probe_lookup(*probe_symbols(*sample_of(data, offsets, lo, hi, probe_train, SEED)))

    def start_block(lo):
        """Probe table (its matcher) and baseline cost for a block starting at string ``lo``."""
        hi = min(n, max(lo + 1, int(np.searchsorted(offsets,
                                                     offsets[lo] + probe_bytes + probe_train))))
        if offsets[hi] == offsets[lo]:
            return None, 0.0
        # Skip the first 4 KB: the located change point may be up to a piece early.
        lo_t = min(int(np.searchsorted(offsets, offsets[lo] + probe_bytes)), hi - 1)
        t = probe_table(lo_t, hi)
        base = _range_cost(t, data, offsets, lo_t, hi)
        # The cost on the training data itself is optimistic (a table fits its sample); take
        # the larger of it and the cost on the next 4 KB sample after it, if different enough
        # data has not begun already.
        s_next = int(np.searchsorted(seg, hi, side="left"))
        if s_next < nseg:
            holdout = probe(t, s_next)
            if holdout <= base * (1.0 + tolerance):
                base = max(base, holdout)
        return t, base

    def switch_point(c_old, c_new):
        """The piece from which the new table costs least overall, and that total and the
        old table's alone (c_old, c_new: each piece's code bytes with either table)."""
        # total[k]: old table before piece k, new table from piece k on
        total = np.concatenate(([0.0], np.cumsum(c_old))) + np.concatenate(
            (np.cumsum(c_new[::-1])[::-1], [0.0]))
        k = int(np.argmin(total[:-1]))
        return k, total[k], total[-1]

    def locate(old, new, lo, hi):
        """Where in strings lo:hi switching from table old to new costs least (None: nowhere).

        A window of more than three segments is first narrowed with each segment's 4 KB probe
        sample (encoding a 1 MB window whole with both tables cost more than the column's own
        encoding on dbtext as one column); the switch is then placed to ~4 KB by encoding the
        segments around the best one whole."""
        coarse = cut(lo, hi, segment_bytes)
        if len(coarse) > 4:
            costs = np.array([[probe(t, None, int(coarse[j]), int(coarse[j + 1]))
                               for j in range(len(coarse) - 1)] for t in (old, new)])
            raw = np.diff(offsets[coarse]).astype(np.float64)
            k, best, stay = switch_point(costs[0] * raw, costs[1] * raw)
            if best > stay * (1.0 - 0.5 * tolerance):
                return None
            lo, hi = int(coarse[max(k - 1, 0)]), int(coarse[min(k + 1, len(coarse) - 1)])
        pieces = cut(lo, hi, probe_bytes)
        raw = np.diff(offsets[pieces]).astype(np.float64)
        c_old, c_new = _window_costs((old, new), data, offsets, pieces)
        k, best, stay = switch_point(c_old * raw, c_new * raw)
        if len(coarse) <= 4 and best > stay * (1.0 - 0.5 * tolerance):
            return None
        return int(pieces[k])

    recheck = 16  # segments between checks for a better table (a change to better-compressing data)
    drift_bytes = 1 << 20
    # The walk below is sequential, but what it asks for next is mostly known: the probe cost
    # of each following segment with the current table, and every recheck-th segment's fresh
    # table with its cost on the segment after. Those are computed ahead, a batch at a time,
    # on all cores (memoised by (table number, segment); the work after a cut is wasted).
    ahead = min(_LOOKAHEAD, 4 * usable_cores()) if spare_core else 1
    cost_of = {}  # (table number, segment) -> probe cost; (-1 - s, s + 1): fresh table of s
    fresh_of = {}  # segment -> its fresh probe table

    def cost(tno, lookup, s, since):
        """probe(lookup, s), lookup being table number tno (< 0: segment -1 - tno's fresh one)."""
        if tno < 0 and (tno, s) not in cost_of:
            cost_of[tno, s] = probe(lookup, s)
        if (tno, s) not in cost_of:
            jobs = [t for t in range(s, min(nseg, s + ahead)) if (tno, t) not in cost_of]
            jobs += [-1 - t for t in range(s, min(nseg, s + ahead))
                     if (t - since) % recheck == recheck - 1 and t not in fresh_of]

            def job(k):
                t = jobs[k]
                if t >= 0:
                    cost_of[tno, t] = probe(lookup, t)
                else:  # a fresh table and its cost on the next segment
                    t = -1 - t
                    nxt = min(t + 1, nseg - 1)
                    fresh_of[t] = probe_table(int(seg[t]), int(seg[t + 1]))
                    cost_of[-1 - t, nxt] = probe(fresh_of[t], nxt)

            run_tasks(job, len(jobs))
        return cost_of[tno, s]

    starts = [0]
    table, base = start_block(0)
    tno = 0  # the current table's number
    block_bytes = 0
    for s in range(nseg):
        for key in [key for key in cost_of if key[1] < s]:  # keep only what is ahead
            del cost_of[key]
        fresh_of.pop(s - 1, None)  # a fresh table is ~300 KB of matcher
        seg_bytes = int(offsets[seg[s + 1]] - offsets[seg[s]])
        lo_seg, hi_seg = int(seg[s]), int(seg[s + 1])
        if lo_seg > starts[-1] and seg_bytes:
            at = None
            if block_bytes + seg_bytes > max_block_bytes:
                at = lo_seg
            elif table is None:
                at = lo_seg
            else:
                since = int(np.searchsorted(seg, starts[-1], side="right"))  # first whole segment
                # Drift (e.g. a sorted key) splits only blocks of drift_bytes; a shorter block
                # needs a change that doubles the cost.
                tol = tolerance if block_bytes >= drift_bytes else 1.0
                worse = cost(tno, table, s, since) > base * (1.0 + tol)
                if worse or (s - since) % recheck == recheck - 1:
                    if s not in fresh_of:
                        fresh_of[s] = probe_table(lo_seg, hi_seg)
                    fresh = fresh_of[s]
                    nxt = min(s + 1, nseg - 1)
                    if worse or (cost(-1 - s, fresh, nxt, since) * (1.0 + tol)
                                 < cost(tno, table, nxt, since)):
                        # never shorter than the probe table's training range
                        first = int(np.searchsorted(offsets, offsets[starts[-1]] + probe_bytes
                                                    + probe_train))
                        window = max(starts[-1] + 1, first,
                                     int(seg[max(s - (1 if worse else recheck), 0)]))
                        if window >= hi_seg:
                            window = lo_seg
                        at = locate(table, fresh, window, hi_seg)
                        if at is None and worse:
                            at = lo_seg
            if at is not None:
                starts.append(at)
                table, base = start_block(at)
                tno += 1
                block_bytes = int(offsets[lo_seg] - offsets[at])
                if whole is not None:
                    whole.cancel()  # not needed (a no-op once it has started)
        block_bytes += seg_bytes
    block_starts = np.array(starts + [n], dtype=np.int64)
    nb = len(block_starts) - 1
    if nb == 1:
        if whole is None:
            return block_starts, [train_range(data, offsets, 0, n, target)]
        return block_starts, [whole.result()]

    tables = [None] * nb

    def final(b):
        lo, hi = int(block_starts[b]), int(block_starts[b + 1])
        tables[b] = (SymbolTable([]) if offsets[hi] == offsets[lo]
                     else train_range(data, offsets, lo, hi, target))

    run_tasks(final, nb)
    return block_starts, tables
