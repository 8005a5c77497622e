"""Split points: where the decoders cut the code stream so every thread gets equal output.

A split is a run of codes that decodes, with one table, to a contiguous range of the Arrow data
buffer: split ``k`` decodes ``codes[split_codes[k]:split_codes[k+1]]`` with table
``split_table[k]`` into the output bytes ``split_out[k]:split_out[k+1]``. Codes of consecutive
strings decode to consecutive output, so a split needs no string index, and the GPU gives every
warp about the same *uncompressed* work whatever the string lengths.

Any partition of the codes into such runs decodes correctly (the decoders check each split fills
exactly its range). The one fsstgpu writes (:func:`plan_splits`) starts a split

1. at the first string of every block (a split never mixes tables);
2. at the first string starting at or after every multiple of ``S`` output bytes (``S`` =
   ``split_size``, counted over the whole column);
3. inside every string longer than ``S``: at its *cuts*, the first code boundary at or after
   every multiple of ``S`` bytes from the string's start (:func:`fsstgpu.scan.long_string_cuts`),

dropping empty splits. Every split then decodes to at most about ``2 S`` bytes. Rules 1 and 2 need
only the per-string code offsets and lengths, so the plan is computed at memory speed; only long
strings' codes are walked, for rule 3, and their cuts are what a file stores per string
(``formats/arrow.md``). A column without codes has no splits (``split_codes == [0]``).

>>> import numpy as np
>>> from fsstgpu.splits import plan_splits
>>> empty = np.zeros(0, np.int64)
>>> sc, so, st = plan_splits(np.array([0, 2, 4, 6]), np.array([3, 3, 3]), np.array([0, 3]), 4,
...                          (empty, empty, empty))
>>> sc.tolist(), so.tolist(), st.tolist()
([0, 4, 6], [0, 6, 9], [0, 0])
"""

from __future__ import annotations

import numpy as np

from fsstgpu.native import assemble_splits as native_assemble_splits, first_at_or_after

__all__ = ["DEFAULT_SPLIT_SIZE", "assemble_splits", "interior_cuts", "one_block_starts",
           "plan_splits", "rule2_rows", "split_rows"]

#: Default ``S``: target uncompressed bytes per split, i.e. the GPU decoder's work per warp.
#: A 1 GiB column gets ~260 000 splits, plenty to fill an H200 (132 SMs x 40 warps).
DEFAULT_SPLIT_SIZE = 4096


def plan_splits(code_offsets, lengths, block_starts, split_size: int, cuts, out_offsets=None):
    """The split points of a column (rules in the module docstring), at memory speed.

    Parameters
    ----------
    code_offsets : numpy.ndarray of int64, shape (n + 1,)
        Where each string's codes start; ``code_offsets[-1]`` is the number of codes.
    lengths : numpy.ndarray of int64, shape (n,)
        Uncompressed length of each string.
    block_starts : numpy.ndarray of int64, shape (nblocks + 1,)
    split_size : int
        ``S``, in 1..2**63 - 1 (checked by the caller: :func:`fsstgpu.limits.check_split_size`).
    cuts : tuple of three int64 arrays
        Code positions, output positions and string indices of the cuts inside strings longer
        than ``S`` (:func:`fsstgpu.scan.long_string_cuts`), in order.
    out_offsets : numpy.ndarray of int64, shape (n + 1,), optional
        The running sum of ``lengths`` from 0, when the caller has it (saves computing it).

    Returns
    -------
    split_codes, split_out : numpy.ndarray of int64, shape (nsplits + 1,)
    split_table : numpy.ndarray of uint16, shape (nsplits,)

    Examples
    --------
    Two blocks of two strings (2, 3 | 2, 4 bytes); a split starts at each block and at the first
    string starting at or after every 2 output bytes:

    >>> import numpy as np
    >>> from fsstgpu.splits import plan_splits
    >>> no_cuts = (np.zeros(0, np.int64),) * 3
    >>> sc, so, st = plan_splits(np.array([0, 1, 3, 4, 6]), np.array([2, 3, 2, 4]),
    ...                          np.array([0, 2, 4]), 2, no_cuts)
    >>> sc.tolist(), so.tolist(), st.tolist()
    ([0, 1, 3, 4, 6], [0, 2, 5, 7, 11], [0, 0, 1, 1])
    """
    code_offsets = np.asarray(code_offsets, dtype=np.int64)
    lengths = np.asarray(lengths, dtype=np.int64)
    block_starts = np.asarray(block_starts, dtype=np.int64)
    split_size = int(split_size)
    n = len(lengths)
    ncodes = int(code_offsets[-1])
    if out_offsets is None:
        out_offsets = np.zeros(n + 1, np.int64)
        np.cumsum(lengths, out=out_offsets[1:])
    total = int(out_offsets[-1])
    if ncodes == 0:
        return np.zeros(1, np.int64), np.zeros(1, np.int64), np.zeros(0, np.uint16)
    row = np.concatenate([block_starts[:-1], rule2_rows(out_offsets, split_size)])
    return native_assemble_splits(block_starts, row, code_offsets, out_offsets, cuts, ncodes,
                                  total, by_row=True)


def assemble_splits(block_starts, row, code, out, cuts, ncodes: int, total: int):
    """The split starts of rules 1-3 from their rows: what :func:`plan_splits` does once it has
    them, apart so that a caller whose offsets live elsewhere (the GPU encoder:
    :func:`fsstgpu.compress_device`) gathers only these rows.

    ``row`` is ``block_starts[:-1]`` followed by :func:`rule2_rows`; ``code`` and ``out`` are
    the code and output offsets at those rows; ``ncodes`` > 0. Every start is ordered by (code
    position, string, block); of several starts at one code position (empty strings, empty
    blocks) the last one, whose table decodes the codes that follow, is kept; a start at the very
    end would open an empty split and is dropped (:func:`fsstgpu.native.assemble_splits`, one
    merge of the three sorted runs).

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.splits import assemble_splits
    >>> empty = np.zeros(0, np.int64)
    >>> sc, so, st = assemble_splits(np.array([0, 3]), np.array([0, 2]), np.array([0, 4]),
    ...                              np.array([0, 6]), (empty, empty, empty), 6, 9)
    >>> sc.tolist(), so.tolist(), st.tolist()
    ([0, 4, 6], [0, 6, 9], [0, 0])
    """
    return native_assemble_splits(block_starts, row, code, out, cuts, ncodes, total)


def one_block_starts(code, out, ncodes: int, total: int, xp=np):
    """:func:`assemble_splits` of a column of one block without long strings (no cuts), with
    the arrays module ``xp`` of ``code`` and ``out`` (NumPy, or CuPy: the GPU encoder's
    planning, where its offsets are; the host merge took 9 ms of a 1 GiB column's 30).

    ``code`` and ``out`` are the code and output offsets at rows ``[0, *rule2_rows(...)]``,
    which do not decrease, so the merge by (code position, string, block) is their order: of
    equal code positions the last is kept, those at or past ``ncodes`` are dropped. The split
    table is all zeros.

    Returns
    -------
    split_codes, split_out : arrays of int64, shape (nsplits + 1,)

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.splits import one_block_starts
    >>> sc, so = one_block_starts(np.array([0, 0, 4, 6]), np.array([0, 2, 6, 9]), 6, 9)
    >>> sc.tolist(), so.tolist()
    ([0, 4, 6], [2, 6, 9])
    """
    last = xp.ones(code.shape[0], dtype=bool)
    last[:-1] = code[1:] != code[:-1]
    kept = xp.flatnonzero(last & (code < ncodes))  # (one count: CuPy's waits for it once)
    return (xp.concatenate([code[kept], xp.full(1, ncodes, dtype=xp.int64)]),
            xp.concatenate([out[kept], xp.full(1, total, dtype=xp.int64)]))


def rule2_rows(out_offsets, split_size: int, xp=np, total: int | None = None):
    """For every multiple ``t`` of ``S`` below the total, the first string starting at or after
    ``t`` (index n when none does), duplicates allowed. Found from whichever is fewer, the
    multiples or the strings, so a tiny ``S`` (a forged one, say) costs no more than the strings.
    ``xp`` is the array module of ``out_offsets`` (NumPy, or CuPy for device offsets);
    ``total``: ``out_offsets[-1]`` where the caller has it (a device offset read is a wait).

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.splits import rule2_rows
    >>> rule2_rows(np.array([0, 3, 6, 9]), 4).tolist()  # multiples 4 and 8
    [2, 3]
    """
    total = int(out_offsets[-1]) if total is None else total
    n = len(out_offsets) - 1
    if (total - 1) // split_size <= n:
        if xp is np:  # (searchsorted's binary searches miss the cache: 16 ms a 268 MB column)
            count = max(0, (total - 1) // split_size)
            return first_at_or_after(out_offsets, split_size, count)
        targets = xp.arange(split_size, total, split_size, dtype=xp.int64)
        return xp.searchsorted(out_offsets, targets, side="left")
    # String i (1..n) is the first at or after some multiple t < total exactly when a multiple
    # lies in (out_offsets[i - 1], min(out_offsets[i], total - 1)].
    hi = xp.minimum(out_offsets[1:], total - 1)
    return xp.flatnonzero(hi // split_size > out_offsets[:-1] // split_size) + 1


def split_rows(code_offsets, split_codes) -> np.ndarray:
    """For each split start, the string whose codes it starts in (the last of several empty
    strings at that position, i.e. the one whose codes follow).

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.splits import split_rows
    >>> split_rows(np.array([0, 0, 3, 5]), np.array([0, 1, 3, 5])).tolist()
    [1, 1, 2]
    """
    return np.searchsorted(code_offsets, np.asarray(split_codes)[:-1], side="right") - 1


def interior_cuts(code_offsets, lengths, split_codes, split_out):
    """The split starts inside strings (not at a string start): the cuts a plan carries over.

    Returns code positions, output positions and string indices, as :func:`plan_splits` takes
    them.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.splits import interior_cuts
    >>> [c.tolist() for c in interior_cuts(np.array([0, 5]), np.array([15]),
    ...                                    np.array([0, 2, 5]), np.array([0, 6, 15]))]
    [[2], [6], [0]]
    """
    code_offsets = np.asarray(code_offsets, np.int64)
    starts = np.asarray(split_codes, np.int64)[:-1]
    rows = split_rows(code_offsets, split_codes)
    inner = starts > code_offsets[rows]
    # An empty split (a start repeated: the contract's split points only never decrease) is
    # one cut, not two: a string's cuts strictly increase (formats/arrow.md), and a repeated
    # one made a column that decodes everywhere an extension array its reader refuses.
    inner[1:] &= starts[1:] != starts[:-1]
    return starts[inner], np.asarray(split_out, np.int64)[:-1][inner], rows[inner]
