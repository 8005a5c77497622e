"""The compiled block planner's entry points (``fsstgpu._native``, C++ in ``fsstgpu/csrc/plan*``,
``train_samples.cpp`` and ``lookups.cpp``): blocks and their tables, and the GPU encoder's
lookups of many tables.

:func:`fsstgpu.blocks.plan_blocks` documents the policy and makes SymbolTables of these symbols.
"""

from __future__ import annotations

import numpy as np

from fsstgpu._native import (
    plan_blocks as _plan_blocks,
    table_lookups as _table_lookups,
    train_samples as _train_samples,
)
from fsstgpu.parallel import thread_count

__all__ = ["plan_symbols", "table_lookups", "train_samples"]


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


def train_samples(sample_bytes, offsets, piece_first, byte_first, *, extra_rounds=3,
                  threads=None):
    """Train a table on each of several samples laid end to end, in one call without the GIL
    (the samples' trainings spread over the cores): what :func:`plan_symbols` does once it has
    each block's sample, for samples gathered elsewhere (the GPU:
    :mod:`fsstgpu.gpu.block_tables`).

    Parameters
    ----------
    sample_bytes : numpy.ndarray of uint8
        Every sample's bytes, sample after sample.
    offsets : numpy.ndarray of int64
        Every sample's string ends, each sample's from 0 to its byte count (n + 1 of them).
    piece_first, byte_first : numpy.ndarray of int64
        Where each sample's offsets and bytes start, then their ends (m + 1 each).
    extra_rounds : int, optional
        As :func:`train_symbols` (``level="fast"``: 1).
    threads : int, optional

    Returns
    -------
    packed, lengths, first
        As :func:`plan_symbols` returns the tables: a sample without bytes gets no symbols.

    Raises
    ------
    ValueError
        Where a sample's offsets do not run from 0 to its bytes without decreasing.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import native
    >>> data = np.frombuffer(b"hello world" * 100, np.uint8)
    >>> offs = np.concatenate([np.arange(0, 1101, 11), np.zeros(1, np.int64)])
    >>> packed, lengths, first = native.train_samples(
    ...     data, offs, np.array([0, 101, 102]), np.array([0, 1100, 1100]))
    >>> first.tolist()[1:] == [len(packed)] * 2  # (the second sample has no bytes)
    True
    >>> want = native.train_symbols(data, offs[:101], 0, 100, 1 << 20, 1)
    >>> sorted(packed.tolist()) == sorted(want[0].tolist())
    True
    """
    return _train_samples(np.ascontiguousarray(sample_bytes, np.uint8),
                          np.ascontiguousarray(offsets, np.int64),
                          np.ascontiguousarray(piece_first, np.int64),
                          np.ascontiguousarray(byte_first, np.int64), int(extra_rounds),
                          thread_count(threads))


def table_lookups(packed, lengths, first, *, threads=None) -> tuple:
    """The GPU encoder's lookups of tables laid end to end (as :func:`plan_symbols` and
    :func:`train_samples` return them), in one call without the GIL, spread over the tables:
    :func:`fsstgpu.kernels.table_lookups.encode_lookups` of each table, but for the byte
    pairs' 65536 entries a table, which are the bytes' best repeated with the 2-byte symbols
    on top: :func:`~fsstgpu.kernels.table_lookups.encode_lookups_many` fills them where they
    go (on the device for the GPU).

    Parameters
    ----------
    packed : numpy.ndarray of uint64
        Every table's symbols (SymbolTable.packed), table after table.
    lengths : numpy.ndarray of uint8
        Their lengths.
    first : numpy.ndarray of int64
        Where each table's symbols start, then their end (count + 1).
    threads : int, optional

    Returns
    -------
    one_best : numpy.ndarray of uint16, shape (count, 256)
        Each table's best match of a byte alone (``short_best``'s last 256 entries).
    two_at, two_value : numpy.ndarray of int64, uint16
        The 2-byte symbols' entries in the tables' ``short_best`` rows laid end to end
        (``t * (65536 + 256) + pair``) and their values, table after table.
    bucket_range, cand_vm, cand_lc : numpy.ndarray
        Each table's as :func:`~fsstgpu.kernels.table_lookups.encode_lookups` gives them, a row
        a table (``cand_vm`` and ``cand_lc`` padded with zeros past the table's candidates).

    Raises
    ------
    ValueError
        Where a table has over 255 symbols, a symbol is not 1-8 bytes long or has bytes past its
        length, a table's symbols are not in SymbolTable's canonical order, or ``first`` does
        not run from 0 to the symbols.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import SymbolTable, native
    >>> t = SymbolTable([b"a", b"bc", b"http"])
    >>> one, two_at, two_value, ranges, vm, lc = native.table_lookups(
    ...     t.packed, t.lengths, np.array([0, 3]))
    >>> int(one[0, ord("a")]) == (1 << 8) | 0, int(two_at[0]) == ord("b") | ord("c") << 8
    (True, True)
    >>> int(lc[0, 0]) == 4 | 2 << 8 and int(vm[0, 0]) == int.from_bytes(b"http", "little")
    True
    """
    return _table_lookups(np.ascontiguousarray(packed, np.uint64),
                          np.ascontiguousarray(lengths, np.uint8),
                          np.ascontiguousarray(first, np.int64), thread_count(threads))
