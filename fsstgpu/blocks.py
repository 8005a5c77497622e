"""Block planning: where a column gets a new symbol table (see :func:`plan_blocks`), at one of
the compression :data:`LEVELS` (:func:`plan_level`).

A column's data can change at a few places (appended files, partitions, a sorted key moving to
another kind of value), and a table trained for one part can compress another part badly (the 22
dbtext files concatenated into one column: 1.41 with one reference table, 2.16 with per-block
tables). Planning probes the column with small samples and cheap tables, cuts it where the cost
of the current table jumps, and trains one table per block.

The planner is compiled (``csrc/plan.cpp``): one call with the GIL released, the pieces of a
large column and the blocks' trainings spread over the cores. This module documents the policy
and makes SymbolTables of the symbols it returns.
"""

from __future__ import annotations

import numpy as np

from fsstgpu.limits import MAX_TABLES
from fsstgpu.native import plan_symbols
from fsstgpu.symbol_table import SymbolTable
from fsstgpu.training import checked_input

#: Compression levels, fastest first: ``"fast"`` (:func:`fast_blocks`: a block per
#: :data:`FAST_BLOCK_BYTES`, a reference-sized training each) and ``"default"``
#: (:func:`plan_blocks`: blocks where the text changes, each table trained on a larger sample).
#: Measured on one core of the 2-core VM (BENCHMARKS.md section 19): "fast" compresses 1.4-8x
#: faster at 73-98% of the default's ratio, still above the reference FSST's.
LEVELS = ("fast", "default")

#: The "fast" level's block size in string bytes: a table per MiB costs ~0.5 ms of training
#: (16 KB sample, six rounds), ~15% of encoding the MiB, and follows text that changes along
#: the column (dbtext as one column: ratio 1.45 with one table, 2.0 with a table per MiB, at
#: the same speed: better tables make fewer codes).
FAST_BLOCK_BYTES = 1 << 20

#: The "fast" level's training sample per block (the reference FSST's).
FAST_SAMPLE_BYTES = 16 << 10

#: The "fast" level's training rounds beyond the reference's five.
FAST_EXTRA_ROUNDS = 1

#: The most blocks :func:`plan_level` gives a column at the "fast" level: a column of more than
#: this many MiB gets larger blocks, so that it stays within :data:`fsstgpu.limits.MAX_TABLES`.
FAST_MAX_BLOCKS = MAX_TABLES // 2


def check_level(level) -> str:
    """``level`` if it is one of :data:`LEVELS`, else ValueError naming them.

    >>> from fsstgpu.blocks import check_level
    >>> check_level("fast")
    'fast'
    """
    if not isinstance(level, str) or level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(map(repr, LEVELS))}, not {level!r}")
    return level


def plan_level(data: np.ndarray, offsets: np.ndarray, level: str = "default", *,
               sample_bytes=None):
    """Blocks and their tables at a compression ``level`` (:data:`LEVELS`):
    :func:`fast_blocks` (blocks of :data:`FAST_BLOCK_BYTES`, larger past
    :data:`FAST_MAX_BLOCKS` of them) or :func:`plan_blocks`; same arguments and results.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.blocks import plan_level
    >>> data = np.frombuffer(b"hello world" * 100, np.uint8)
    >>> starts, tables = plan_level(data, np.arange(0, 1101, 11), "fast")
    >>> starts.tolist(), b"hello wo" in tables[0].symbols
    ([0, 100], True)
    """
    if check_level(level) == "fast":
        total = int(offsets[-1]) - int(offsets[0]) if len(offsets) else 0
        return fast_blocks(data, offsets, sample_bytes=sample_bytes,
                           block_bytes=fast_block_bytes(total))
    return plan_blocks(data, offsets, sample_bytes=sample_bytes)


def fast_block_bytes(total: int) -> int:
    """The ``"fast"`` level's block size for a column (or planning piece) of ``total`` string
    bytes: :data:`FAST_BLOCK_BYTES`, larger past :data:`FAST_MAX_BLOCKS` blocks.

    >>> from fsstgpu.blocks import FAST_MAX_BLOCKS, fast_block_bytes
    >>> fast_block_bytes(5 << 20), fast_block_bytes(FAST_MAX_BLOCKS << 21) >> 20
    (1048576, 2)
    """
    return max(FAST_BLOCK_BYTES, -(-total // FAST_MAX_BLOCKS))


def fast_blocks(data: np.ndarray, offsets: np.ndarray, *, sample_bytes=None,
                block_bytes: int = FAST_BLOCK_BYTES):
    """Cut a column every ``block_bytes`` string bytes (at string boundaries) and train a table
    per block with the reference FSST's budget: the ``"fast"`` compression level.

    No probes and no change located: a block's cost is its training, ~0.5 ms (a
    :data:`FAST_SAMPLE_BYTES` sample, the reference's rounds and :data:`FAST_EXTRA_ROUNDS`
    more), blocks trained in parallel in one call without the GIL. The same input gives the
    same blocks and tables whatever the thread count.

    Parameters
    ----------
    data, offsets
        The strings, as :func:`plan_blocks` takes them.
    sample_bytes : int, optional
        Training sample per block (default :data:`FAST_SAMPLE_BYTES`).
    block_bytes : int
        String bytes per block (the last may hold fewer; a string longer than this is a block).

    Returns
    -------
    block_starts, tables
        As :func:`plan_blocks`.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.blocks import fast_blocks
    >>> data = np.frombuffer(b"abcdefghij" * 1000, np.uint8)
    >>> starts, tables = fast_blocks(data, np.arange(0, 10001, 10), block_bytes=4000)
    >>> starts.tolist(), len(tables)
    ([0, 400, 800, 1000], 3)
    """
    target = FAST_SAMPLE_BYTES if sample_bytes is None else sample_bytes
    data, offsets, _, target = checked_input(data, offsets, target)
    if int(block_bytes) < 1:
        raise ValueError(f"block_bytes must be positive, not {block_bytes}")
    return _blocks_of(*plan_symbols(
        data, offsets, target, max_block_bytes=int(block_bytes), walk=False,
        extra_rounds=FAST_EXTRA_ROUNDS))


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
       located to ~4 KB: the previous and current segment are cut into 4 KB pieces, each
       piece's cost with the old and with a fresh probe table estimated from a quarter of its
       strings, the two pieces either side of the cheapest switch encoded whole, and the new
       block starts where switching tables costs least among them (encoding every piece whole
       was most of the planning on short strings). Every 16 segments a fresh probe table is
       also tried on the next segment, to catch a change to data that compresses *better* with
       its own table. A block also ends after ``max_block_bytes``.
    2b. Drift (a sorted key, a slowly changing vocabulary) makes costs creep up; a block shorter
       than 1 MB is only split for a change that doubles the cost, so drifting data gets
       blocks of about 1 MB, not one per segment (each block costs a training, ~4 ms).
    3. Each block then gets its table trained on a sample of the whole block (``sample_bytes``;
       evenly spread over a block of fewer than four samples, :mod:`fsstgpu.training`), blocks
       in parallel. A column that stays one block gets exactly :func:`train_table`'s
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
        Train the whole column's table on another thread while probing (step 3), when more
        than one thread is used (default: yes). The result is the same either way.

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
    data, offsets, _, target = checked_input(data, offsets, sample_bytes)
    return _blocks_of(*plan_symbols(
        data, offsets, target, segment_bytes=segment_bytes, max_block_bytes=max_block_bytes,
        tolerance=tolerance, speculate=True if speculate is None else speculate))


def _blocks_of(starts, packed, lengths, first):
    """(block_starts, tables) of what :func:`fsstgpu.native.plan_symbols` returns."""
    return starts, tables_of(packed, lengths, first)


def tables_of(packed, lengths, first) -> list:
    """The SymbolTables of tables packed end to end as :func:`fsstgpu.native.plan_symbols`
    and :func:`fsstgpu.native.train_samples` return them (each table's symbols in canonical
    order).

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.blocks import tables_of
    >>> t = tables_of(np.array([97, 98], np.uint64), np.array([1, 1], np.uint8),
    ...               np.array([0, 1, 2]))
    >>> [x.symbols for x in t]
    [(b'a',), (b'b',)]
    """
    bounds = first.tolist()
    return [SymbolTable.from_canonical(packed[a:b], lengths[a:b])
            for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
