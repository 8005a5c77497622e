"""The compiled block planner's entry point (``fsstgpu._native``, C++ in ``fsstgpu/csrc/plan*``).

:func:`fsstgpu.blocks.plan_blocks` documents the policy and makes SymbolTables of these symbols.
"""

from __future__ import annotations

import numpy as np

from fsstgpu._native import plan_blocks as _plan_blocks
from fsstgpu.parallel import thread_count

__all__ = ["plan_symbols"]


def plan_symbols(data, offsets, sample_bytes, *, segment_bytes=64 << 10,
                 max_block_bytes=64 << 20, tolerance=0.15, speculate=True, threads=None,
                 walk=True, extra_rounds=3):
    """Cut strings ``data[offsets[i]:offsets[i + 1]]`` into blocks and train each block's
    symbols (the policy: :func:`fsstgpu.blocks.plan_blocks`), in one call without the GIL.

    Parameters
    ----------
    data : numpy.ndarray of uint8
    offsets : numpy.ndarray of int64
        Non-decreasing, inside ``data`` (else ValueError).
    sample_bytes : int
        Each block's training sample, at least 1.
    segment_bytes, max_block_bytes : int, optional
        Probe granularity and the largest block, in bytes.
    tolerance : float, optional
        Relative cost increase on a segment that starts a new block (finite, >= 0).
    speculate : bool, optional
        With a spare core, train a column's whole table while probing (same result).
    threads : int, optional
        Cores to use (default: :func:`fsstgpu.parallel.thread_count`); the plan is the same
        whatever the count.
    walk : bool, optional
        Probe for changes (the policy); False: no probes, a block every ``max_block_bytes``
        (cut at string boundaries), as ``level="fast"`` plans.
    extra_rounds : int, optional
        Each block's training rounds beyond the reference's five (0-64; as
        :func:`train_symbols`).

    Returns
    -------
    block_starts : numpy.ndarray of int64
        Each block's first string, then ``n``.
    packed : numpy.ndarray of uint64
        Every block's symbols, block after block, each block's in SymbolTable's canonical
        order (by length, then bytes), as little-endian integers, zero-padded.
    lengths : numpy.ndarray of uint8
        Each of those symbols' length.
    first : numpy.ndarray of int64
        Where each block's symbols start in ``packed``, then their total.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import native
    >>> data = np.frombuffer(b"hello world" * 100, np.uint8)
    >>> starts, packed, lengths, first = native.plan_symbols(data, np.arange(0, 1101, 11), 4096)
    >>> starts.tolist(), first.tolist() == [0, len(packed)]
    ([0, 100], True)
    >>> int.from_bytes(b"hello wo", "little") in packed
    True
    """
    return _plan_blocks(np.ascontiguousarray(data, np.uint8),
                        np.ascontiguousarray(offsets, np.int64), int(sample_bytes),
                        int(segment_bytes), int(max_block_bytes), float(tolerance),
                        bool(speculate), thread_count(threads), bool(walk),
                        int(extra_rounds))
