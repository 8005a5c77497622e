"""Blocks: where a column gets a new symbol table, found while the column is encoded.

A column's data can change at a few places (appended files, partitions, a sorted key moving to
another kind of value), and a table trained for one part can compress another part badly (the 22
dbtext files concatenated into one column: 1.41 with one reference table, 2.16 with per-block
tables). :func:`encode_column` finds those places *while encoding*: every segment is encoded with
the current block's table into the real output, so its code bytes are its cost, and only where
that cost jumps (or, now and then, to catch data that would compress better) is a cheap candidate
table trained and tried. Nothing but the segments around a change is encoded twice.
"""

from __future__ import annotations

import numpy as np

from fsstgpu import native
from fsstgpu.parallel import usable_cores
from fsstgpu.symbol_table import SymbolTable
from fsstgpu.training import checked_input, train_range

__all__ = ["encode_column", "plan_blocks"]

_FIRST_RECHECK = 16  # segments into a block before a candidate is first tried unasked
_LAST_RECHECK = 1024  # the interval doubles after each fruitless try, up to this
_MIN_GAP = 2  # ... and halves after each change found, down to this
_DRIFT_BYTES = 1 << 20  # a shorter block splits only for a change that doubles its cost
_NEW_BLOCK_LOOKAHEAD = 1 << 20  # a block found at a change trains on this much data ahead
_LOOK_BACK = 16  # segments searched for the change an unasked candidate found


def _encode(matcher, data, offsets, pieces, threads):
    """Codes and code offsets (from 0) of strings ``pieces[0]:pieces[-1]`` with one matcher,
    the runs between ``pieces`` spread over ``threads``."""
    lo = int(pieces[0])
    return native.encode_matched([matcher] * (len(pieces) - 1), data,
                                 offsets[lo : int(pieces[-1]) + 1], pieces - lo, threads)


class _Output:
    """The committed codes: runs of consecutive strings, each with its code offsets (from 0)."""

    def __init__(self):
        self.runs = []  # (first string, codes, code offsets of its strings and the end)

    def add(self, lo, codes, code_offsets):
        self.runs.append((lo, codes, code_offsets))

    def end(self) -> int:
        lo, _, co = self.runs[-1]
        return lo + len(co) - 1

    def sizes(self, lo, hi) -> np.ndarray:
        """Code bytes of each committed string ``lo:hi``."""
        parts = []
        for first, _, co in reversed(self.runs):
            a, b = max(lo, first), min(hi, first + len(co) - 1)
            if a < b:
                parts.append(np.diff(co[a - first : b - first + 1]))
            if first <= lo:
                break
        return np.concatenate(parts[::-1]) if parts else np.zeros(0, np.int64)

    def truncate(self, at):
        """Drop the codes of strings ``at`` and later."""
        while self.runs and self.runs[-1][0] >= at:
            self.runs.pop()
        if self.runs and self.end() > at:
            lo, codes, co = self.runs.pop()
            co = co[: at - lo + 1]
            self.runs.append((lo, codes[: co[-1]], co))

    def join(self, n):
        codes = np.concatenate([c for _, c, _ in self.runs]) if self.runs else np.zeros(0, np.uint8)
        code_offsets = np.zeros(n + 1, np.int64)
        base = 0
        for lo, c, co in self.runs:
            code_offsets[lo : lo + len(co)] = co + base
            base += len(c)
        return codes, code_offsets


def encode_column(data: np.ndarray, offsets: np.ndarray, *, sample_bytes=None,
                  segment_bytes: int = 64 << 10, max_block_bytes: int = 64 << 20,
                  tolerance: float = 0.15, threads=None):
    """Cut a column into blocks, train a table for each and encode it, in one walk.

    Policy:

    1. The first block's table is trained on a sample of the column's first ``max_block_bytes``
       (a column that stays one block gets exactly :func:`~fsstgpu.training.train_table`'s
       table). The column is encoded in segments of ``segment_bytes`` (cut at string
       boundaries), a batch of segments at a time on every core, into the real output; a
       segment's cost is its code bytes per string byte.
    2. A block's baseline is the larger cost of its first two segments. A segment costing more
       than the baseline by ``tolerance`` (15%; for blocks under 1 MB, 100%: drifting data such
       as a sorted key would otherwise get a block per segment) gets a candidate table, trained
       with the reference's five rounds on 8 KB of it; so does, unasked, every segment 16, 48,
       112 ... segments into the block (the gap doubles after each try that fails, up to 1024),
       to catch data that would compress *better* with its own table.
    3. The candidate encodes the segment and the one before; where switching tables at a string
       saves more than ``tolerance / 2`` (unasked: ``tolerance``) of those strings' codes, a new
       block starts at the string that saves most, with a table trained on the 1 MB ahead of it,
       and encoding goes on from there. A block also ends after ``max_block_bytes`` (its
       successor trains on the next ``max_block_bytes``).

    Every decision depends only on the segments before it, so the output is the same whatever
    the thread count; every block decodes alone with its table. Inputs under two segments are
    one block.

    Parameters
    ----------
    data : numpy.ndarray of uint8
    offsets : numpy.ndarray of int64, shape (n + 1,)
        String boundaries in ``data`` (non-decreasing; ``offsets[0]`` need not be 0).
    sample_bytes : int, optional
        Training sample per block table (default 49152).
    segment_bytes, max_block_bytes : int
        Cost granularity and the largest block, in bytes of string data.
    tolerance : float
        Relative cost increase on a segment that makes it try a new table.
    threads : int, optional
        Threads to encode with (default: the usable cores).

    Returns
    -------
    block_starts : numpy.ndarray of int64, shape (nblocks + 1,)
        String index where each block starts; ``[0] == 0``, ``[-1] == n``.
    tables : list of SymbolTable
        One per block.
    codes : numpy.ndarray of uint8
    code_offsets : numpy.ndarray of int64, shape (n + 1,)
        Where each string's codes start, from 0, and the end.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.blocks import encode_column
    >>> rng = np.random.default_rng(0)
    >>> text = b" ".join(rng.choice([b"lorem", b"ipsum", b"dolor", b"sitam"], 120_000))
    >>> dna = bytes(rng.choice(np.frombuffer(b"ACGT", np.uint8), 600_000))
    >>> data = np.frombuffer(text[:600_000] + dna, np.uint8)
    >>> starts, tables, codes, code_offsets = encode_column(data, np.arange(0, 1_200_001, 30))
    >>> len(tables) == len(starts) - 1 >= 2
    True
    >>> min(abs(int(s) - 20000) for s in starts) * 30 <= 4096  # a block starts at the change
    True
    >>> len(codes) == code_offsets[-1] and len(codes) < len(data) // 2
    True
    """
    data, offsets, n, target = checked_input(data, offsets, sample_bytes)
    segment_bytes = max(1, int(segment_bytes))
    max_block_bytes = max(segment_bytes, int(max_block_bytes))
    threads = usable_cores() if threads is None else max(1, int(threads))
    total = int(offsets[-1] - offsets[0]) if n else 0

    trained_to = [0]  # the string where the current block's training range ends

    def train_ahead(lo, ahead, commit=True):
        hi = min(n, max(lo + 1, int(np.searchsorted(offsets, offsets[lo] + ahead))))
        if commit:
            trained_to[0] = hi
        if offsets[hi] == offsets[lo]:
            return SymbolTable([])
        return train_range(data, offsets, lo, hi, target)

    if total < 2 * segment_bytes:
        table = train_ahead(0, total) if n else SymbolTable([])
        codes, code_offsets = native.encode_blocks([table], data, offsets, np.array([0, n]),
                                                   threads)
        return np.array([0, n], np.int64), [table], codes, code_offsets

    marks = np.arange(offsets[0] + segment_bytes, offsets[n], segment_bytes, dtype=np.int64)
    seg = np.unique(np.concatenate(([0], np.searchsorted(offsets, marks), [n])))
    nseg = len(seg) - 1
    batch = max(4, 2 * threads)  # segments encoded ahead at once (wasted only at a change)

    out = _Output()
    starts, tables = [0], [train_ahead(0, max_block_bytes)]
    matcher = native.matcher(tables[0])
    base = None  # the block's baseline cost
    measured = 0  # segments of the block measured so far
    block_bytes = 0
    next_try, gap = _FIRST_RECHECK, _FIRST_RECHECK
    pos, s = 0, 0  # next string to encode; the segment holding it

    def new_block(at, found):
        nonlocal matcher, base, measured, block_bytes, next_try, gap
        starts.append(at)
        if isinstance(found, tuple):  # the candidate table found at a change
            tables.append(found[0])
            trained_to[0] = found[1]
        else:
            tables.append(train_ahead(at, found))
        matcher = native.matcher(tables[-1])
        base, measured, block_bytes = None, 0, 0
        # a change found: try sooner in the new block (drifting data keeps finding them)
        gap = max(_MIN_GAP, gap // 2)
        next_try = gap

    def candidate(lo, hi):
        """A block table trained on strings lo:hi, and its matcher."""
        table = train_ahead(lo, int(offsets[hi] - offsets[lo]), commit=False)
        return table, native.matcher(table)

    def locate(lo, hi, seg_no, old_here, threshold, back):
        """Where a candidate table trained on strings lo:hi (segment seg_no, whose sizes with
        the block's table are ``old_here``) should take over, or None: it must save more than
        ``threshold`` of segment seg_no's codes; the switch is then placed at the string that
        saves most in up to ``back`` segments before."""
        table, cand = candidate(lo, hi)
        new_here = np.diff(_encode(cand, data, offsets, np.array([lo, hi]), 1)[1])
        # the new table is stored too: it must pay for itself
        if new_here.sum() * (1.0 + threshold) + table.nbytes_serialised() >= old_here.sum():
            return None, None
        window = min(lo, max(starts[-1] + 1, int(seg[max(seg_no - back, 0)])))
        old = np.concatenate((out.sizes(window, lo), old_here))
        new = np.concatenate((np.diff(_encode(cand, data, offsets, np.array([window, lo]),
                                              threads)[1]), new_here))
        # total[j]: the block's table before string window + j, the candidate from there on
        total_cost = (np.concatenate(([0], np.cumsum(old)))
                      + np.concatenate((np.cumsum(new[::-1])[::-1], [0])))
        return window + int(np.argmin(total_cost[:-1])), (table, hi)

    def refit(at):
        """A block ending at string ``at`` whose table was trained on strings beyond it (the
        data ahead of a change) gets a table of its own strings where that is smaller."""
        lo = starts[-1]
        if at >= trained_to[0] or at <= lo:
            return
        own = train_ahead(lo, int(offsets[at] - offsets[lo]))
        if own == tables[-1]:
            return
        codes, co = native.encode_blocks([own], data, offsets[lo : at + 1],
                                         np.array([0, at - lo]), threads)
        if len(codes) < out.sizes(lo, at).sum():
            tables[-1] = own
            out.truncate(lo)
            out.add(lo, codes, co)

    while pos < n:
        # the pieces of this batch: from pos to the segment boundaries after it
        last = min(nseg, s + batch)
        pieces = np.concatenate(([pos], seg[s + 1 : last + 1]))
        codes, co = _encode(matcher, data, offsets, pieces, threads)
        restart = None
        for k in range(len(pieces) - 1):
            lo, hi = int(pieces[k]), int(pieces[k + 1])
            raw = int(offsets[hi] - offsets[lo])
            coded = int(co[hi - pos] - co[lo - pos])
            seg_no = s + k
            if raw and lo > starts[-1] and block_bytes + raw > max_block_bytes:
                out.truncate(lo)
                new_block(lo, max_block_bytes)
                restart = lo
                break
            cost = coded / raw if raw else 0.0
            ask = unasked = False
            if raw and base is not None:
                tol = tolerance if block_bytes >= _DRIFT_BYTES else 1.0
                ask = cost > base * (1.0 + tol) or cost * (1.0 + tol) < base
                unasked = not ask and measured >= next_try
            if ask or unasked:
                at, found = locate(lo, hi, seg_no, np.diff(co[lo - pos : hi - pos + 1]),
                            0.5 * tolerance if ask else tolerance, 1 if ask else _LOOK_BACK)
                if at is not None:
                    if at < lo:
                        out.truncate(at)
                    else:
                        out.add(lo, codes[co[lo - pos] : co[at - pos]],
                                co[lo - pos : at - pos + 1] - co[lo - pos])
                    refit(at)
                    new_block(at, found)
                    restart = at
                    break
                if unasked:
                    gap = min(2 * gap, _LAST_RECHECK)
                    next_try = measured + gap
                else:
                    base = cost  # different for any table: the new normal
            out.add(lo, codes[co[lo - pos] : co[hi - pos]],
                    co[lo - pos : hi - pos + 1] - co[lo - pos])
            block_bytes += raw
            if raw:
                measured += 1
                if base is None or measured <= 2:
                    base = cost if base is None else max(base, cost)
        if restart is None:
            pos, s = int(pieces[-1]), last
        else:
            pos = restart
            s = int(np.searchsorted(seg, pos, side="right")) - 1
    codes, code_offsets = out.join(n)
    return np.array(starts + [n], np.int64), tables, codes, code_offsets


def plan_blocks(data: np.ndarray, offsets: np.ndarray, **options):
    """The blocks and tables of :func:`encode_column`, without the codes.

    Returns
    -------
    block_starts : numpy.ndarray of int64
    tables : list of SymbolTable

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.blocks import plan_blocks
    >>> starts, tables = plan_blocks(np.frombuffer(b"abcabc" * 1000, np.uint8),
    ...                              np.arange(0, 6001, 6))
    >>> starts.tolist(), len(tables)
    ([0, 1000], 1)
    """
    block_starts, tables, _, _ = encode_column(data, offsets, **options)
    return block_starts, tables
