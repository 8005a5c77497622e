"""A table a block for strings on the GPU (issue #25's ratio): the blocks and tables that
``fsstgpu.compress(column, level="fast")`` plans on the CPU, planned where the strings are.

The ``"fast"`` level (:func:`fsstgpu.blocks.fast_blocks`) cuts a column every
:data:`~fsstgpu.blocks.FAST_BLOCK_BYTES` string bytes (more past
:data:`~fsstgpu.blocks.FAST_MAX_BLOCKS` blocks; a chunked column piece by piece,
:func:`fsstgpu.columns.planning_pieces`) and trains each block's table on a 16 KB sample. Here
the cuts are one search of the device offsets (:func:`fast_block_starts`), the samples are
gathered on the device as the trainer gathers them
(:func:`fsstgpu.kernels.fsst_sample.sample_blocks_on_device`) and only they come back, to be
trained on every core in one call (:func:`fsstgpu.native.train_samples`): the same blocks, the
same tables, so the GPU's codes are the CPU's (one table for the whole column gave 1.43 on
dbtext, a table per MiB 1.99).
"""

from __future__ import annotations

import numpy as np

from fsstgpu.blocks import FAST_EXTRA_ROUNDS, fast_block_bytes, tables_of
from fsstgpu.columns import planning_pieces
from fsstgpu.device import host_array
from fsstgpu.kernels.fsst_sample import sample_blocks_on_device
from fsstgpu.native import train_samples

__all__ = ["fast_block_starts", "fast_tables", "tables_of_samples"]


def fast_block_starts(xp, offsets, chunk_lengths=None) -> np.ndarray:
    """The block starts (host int64, a block's first string each, then n) that the ``"fast"``
    level plans for strings ending at ``offsets`` (an ``xp`` array, NumPy or CuPy: int64,
    n + 1, nulls empty, from any first value), chunked by ``chunk_lengths`` or not. Two small
    copies back from a device: the offsets at the pieces' ends, the found cuts.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.blocks import fast_blocks
    >>> from fsstgpu.gpu.block_tables import fast_block_starts
    >>> offsets = np.arange(0, 5_000_001, 1000)  # 5 MB of 1000-byte strings
    >>> fast_block_starts(np, offsets).tolist()
    [0, 1049, 2098, 3146, 4195, 5000]
    >>> data = np.zeros(5_000_000, np.uint8)
    >>> fast_blocks(data, offsets)[0].tolist()
    [0, 1049, 2098, 3146, 4195, 5000]
    """
    n = int(offsets.shape[0]) - 1
    pieces = np.array([0, n], np.int64)
    if chunk_lengths is not None and len(chunk_lengths) >= 2:
        chunk_starts = np.zeros(len(chunk_lengths) + 1, np.int64)
        np.cumsum(chunk_lengths, out=chunk_starts[1:])
        chunk_ends = host_array(offsets[xp.asarray(chunk_starts)])
        pieces = chunk_starts[planning_pieces(np.diff(chunk_ends))]
    ends = host_array(offsets[xp.asarray(pieces)]).tolist()
    marks = []
    for base, top in zip(ends[:-1], ends[1:], strict=True):
        block_bytes = fast_block_bytes(top - base)
        # (a piece of at most block_bytes is one block: plan_symbols' first case)
        marks.append(np.arange(base + block_bytes, top, block_bytes, dtype=np.int64)
                     if top - base > block_bytes else np.zeros(0, np.int64))
    every = np.concatenate(marks)
    found = host_array(xp.searchsorted(offsets, xp.asarray(every), side="left")) if every.size \
        else every
    # each piece: its first string, then the first string ending at or past each mark (none
    # twice, none at the piece's end); the pieces' starts kept as they are, empty ones too
    starts, at = [], 0
    for k, piece_marks in enumerate(marks):
        lo, hi = int(pieces[k]), int(pieces[k + 1])
        cut = found[at : at + len(piece_marks)]
        at += len(piece_marks)
        starts.append(np.array([lo], np.int64))
        starts.append(np.unique(cut[cut < hi]))
    starts.append(np.array([n], np.int64))
    return np.concatenate(starts).astype(np.int64)


def tables_of_samples(sample, offsets, piece_first, byte_first, *, threads=None) -> list:
    """The ``"fast"`` level's table of each sample (as
    :func:`~fsstgpu.kernels.fsst_sample.sample_blocks_on_device` returns them): trained on
    ``threads`` cores in one call without the GIL.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.gpu.block_tables import tables_of_samples
    >>> from fsstgpu.kernels.fsst_sample import sample_blocks_cpu
    >>> data = np.frombuffer(b"hello world" * 100, np.uint8)
    >>> tables = tables_of_samples(*sample_blocks_cpu(data, np.arange(0, 1101, 11),
    ...                                                np.array([0, 100]), 16384))
    >>> b"hello wo" in tables[0].symbols
    True
    """
    return tables_of(*train_samples(sample, offsets, piece_first, byte_first,
                                    extra_rounds=FAST_EXTRA_ROUNDS, threads=threads))


def fast_tables(data, src, coord, block_starts, target: int) -> list:
    """Each block's ``"fast"``-level table for device strings: ``data`` (uint8), ``coord``
    (the strings' ends, nulls empty) and ``src`` (where their bytes start in ``data``; the
    same array without nulls), int64 CuPy arrays the caller checked; ``block_starts`` from
    :func:`fast_block_starts`; ``target`` the sample's bytes (16 KB at that level).

    Examples
    --------
    >>> import fsstgpu
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     import cupy as cp
    ...     import numpy as np
    ...     from fsstgpu.blocks import fast_blocks
    ...     from fsstgpu.gpu.block_tables import fast_block_starts, fast_tables
    ...     data, offs = np.frombuffer(b"hello world" * 100, np.uint8), np.arange(0, 1101, 11)
    ...     d_offs = cp.asarray(offs)
    ...     starts = fast_block_starts(cp, d_offs)
    ...     got = fast_tables(cp.asarray(data), d_offs, d_offs, starts, 16384)
    ...     assert [t.symbols for t in got] == [t.symbols for t in fast_blocks(data, offs)[1]]
    """
    return tables_of_samples(*sample_blocks_on_device(data, src, coord, block_starts, target))
