"""The GPU benchmark's inputs: compressed columns concatenated and replicated, at memory speed.

FSST compresses every string on its own, so compressed columns laid end to end (codes,
lengths and split points concatenated, positions shifted, each part keeping its own tables) form
a valid compressed column: the one that compressing the concatenated strings block by block with
those tables gives. Replicating a dbtext file this way reaches the ~1 GiB a GPU needs without
compressing 1 GiB on the CPU. The result is a real :class:`fsstgpu.CompressedStringArray`;
:func:`fsstgpu.to_device` checks its structure like any other column's.

>>> import pyarrow as pa, fsstgpu
>>> from benchmarks.columns import replicate
>>> col = pa.array(["ab", "abc", None])
>>> big = replicate(fsstgpu.compress(col), 3)
>>> fsstgpu.decompress(big, device="cpu").to_pylist() == col.to_pylist() * 3
True
"""

from __future__ import annotations

import numpy as np

from fsstgpu import CompressedStringArray
from fsstgpu.bitmaps import unpack_bitmap


def concat(parts) -> CompressedStringArray:
    """The compressed columns ``parts`` laid end to end, as one column.

    Consecutive blocks that use the same table object become one block, so a one-table column
    replicated stays one block with one table; otherwise each part keeps its tables.

    Parameters
    ----------
    parts : sequence of CompressedStringArray
        Of one Arrow type; chunk boundaries are not kept.

    Returns
    -------
    CompressedStringArray
        Without code offsets (derived on first use: the GPU path does not need them).

    Raises
    ------
    TypeError
        When the parts' types differ.
    ValueError
        For no parts, or more tables in all than ``split_table`` (uint16) can name.

    Examples
    --------
    >>> import pyarrow as pa, fsstgpu
    >>> from benchmarks.columns import concat
    >>> a, b = fsstgpu.compress(pa.array(["x", "y"])), fsstgpu.compress(pa.array(["zz"]))
    >>> ab = concat([a, b])
    >>> len(ab.tables), fsstgpu.decompress(ab, device="cpu").to_pylist()
    (2, ['x', 'y', 'zz'])
    """
    parts = list(parts)
    if not parts:
        raise ValueError("concat needs at least one column")
    type_ = parts[0].type
    if any(p.type != type_ for p in parts):
        raise TypeError(f"columns of different types: {sorted({str(p.type) for p in parts})}")
    tables, block_starts, split_table = [], [], []
    codes, lengths, split_codes, split_out = [], [], [], []
    nstrings = ncodes = nbytes = 0
    for p in parts:
        block_of = np.empty(len(p.tables), np.int64)  # p's block -> the result's block
        for b, table in enumerate(p.tables):
            if not (tables and tables[-1] is table):
                tables.append(table)
                block_starts.append(nstrings + int(p.block_starts[b]))
            block_of[b] = len(tables) - 1
        split_table.append(block_of[p.split_table])
        split_codes.append(p.split_codes[:-1] + ncodes)
        split_out.append(p.split_out[:-1] + nbytes)
        codes.append(p.codes)
        lengths.append(p.lengths)
        nstrings += p.length
        ncodes += len(p.codes)
        nbytes += p.uncompressed_bytes
    validity = None
    null_count = sum(p.null_count for p in parts)
    if null_count:
        valid = np.concatenate([np.ones(p.length, bool) if p.validity is None
                                else unpack_bitmap(p.validity, p.length) for p in parts])
        validity = np.packbits(valid, bitorder="little")
    return CompressedStringArray(
        type=type_, length=nstrings, tables=tables, block_starts=block_starts + [nstrings],
        codes=np.concatenate(codes), code_offsets=None, lengths=np.concatenate(lengths),
        validity=validity, null_count=null_count, split_size=parts[0].split_size,
        split_codes=np.concatenate(split_codes + [[ncodes]]),
        split_out=np.concatenate(split_out + [[nbytes]]),
        split_table=np.concatenate(split_table))


def replicate(carr: CompressedStringArray, copies: int) -> CompressedStringArray:
    """``copies`` copies of ``carr`` end to end (:func:`concat`), sharing its tables.

    Examples
    --------
    >>> import pyarrow as pa, fsstgpu
    >>> from benchmarks.columns import replicate
    >>> big = replicate(fsstgpu.compress(pa.array(["abc"] * 10)), 1000)
    >>> len(big), len(big.tables), big.uncompressed_bytes
    (10000, 1, 30000)
    """
    if copies < 1:
        raise ValueError(f"copies must be at least 1, not {copies}")
    return concat([carr] * copies)
