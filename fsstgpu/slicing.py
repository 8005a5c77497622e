"""A contiguous run of strings of a compressed column, as the fields of a new one.

:func:`slice_fields` is what ``carr[a:b]`` and :meth:`CompressedStringArray.slice
<fsstgpu.arrays.CompressedStringArray.slice>` build on. The slice shares the column's codes (a
view of ``codes[code_offsets[a]:code_offsets[b]]``) and lengths; its code offsets are rebased, its
validity bitmap shifted, its blocks are the blocks it overlaps (with their tables), and its chunks
are cut as ``pyarrow.ChunkedArray.slice`` cuts them. Split points cannot be cut out of the column's
own (they are planned from multiples of ``S`` counted from the column's first byte), so they are
planned afresh (:func:`fsstgpu.splits.plan_splits`) with the cuts of the slice's strings longer
than ``S`` (:func:`fsstgpu.scan.long_string_cuts`, which walks only those strings' codes).

>>> import pyarrow as pa, fsstgpu
>>> from fsstgpu.slicing import slice_fields
>>> carr = fsstgpu.compress(pa.array(["a", None, "bc", "d"]))
>>> f = slice_fields(carr, 1, 3)
>>> f["length"], f["null_count"], f["lengths"].tolist()
(2, 1, [0, 2])
"""

from __future__ import annotations

import numpy as np

from fsstgpu.bitmaps import count_set_bits, slice_bitmap
from fsstgpu.scan import long_string_cuts
from fsstgpu.splits import plan_splits

__all__ = ["slice_fields"]


def slice_fields(carr, start: int, stop: int, requested: int | None = None) -> dict:
    """The constructor fields of strings ``start:stop`` of ``carr`` (``0 <= start <= stop <=
    len(carr)``), for ``CompressedStringArray(**fields)``; ``requested``: the length asked for
    (default ``stop - start``), which decides whether empty chunks past the end are kept, as
    in pyarrow."""
    if not 0 <= start <= stop <= carr.length:
        raise IndexError(f"slice {start}:{stop} outside 0..{carr.length}")
    n = stop - start
    all_offsets = carr.code_offsets
    first, last = int(all_offsets[start]), int(all_offsets[stop])
    codes = carr.codes[first:last]
    code_offsets = all_offsets[start : stop + 1] - first
    lengths = carr.lengths[start:stop]
    validity, null_count = None, 0
    if carr.validity is not None and n:
        bitmap = slice_bitmap(carr.validity, start, n)
        null_count = n - count_set_bits(bitmap)
        if null_count:
            validity = bitmap
    tables, block_starts = _blocks(carr, start, stop)
    cuts = long_string_cuts(tables, block_starts, codes, code_offsets, lengths, carr.split_size)
    split_codes, split_out, split_table = plan_splits(code_offsets, lengths, block_starts,
                                                      carr.split_size, cuts)
    return {
        "type": carr.type, "length": n, "tables": tables, "block_starts": block_starts,
        "codes": codes, "code_offsets": code_offsets, "lengths": lengths, "validity": validity,
        "null_count": null_count, "split_size": carr.split_size, "split_codes": split_codes,
        "split_out": split_out, "split_table": split_table,
        "chunk_lengths": _chunks(carr.chunk_lengths, start, stop,
                                 stop - start if requested is None else requested),
    }


def _blocks(carr, start: int, stop: int):
    """The tables of the blocks that strings ``start:stop`` lie in, and their starts (rebased)."""
    starts = np.asarray(carr.block_starts, np.int64)
    if not carr.tables:  # a column of no chunks has no blocks
        return carr.tables, np.zeros(1, np.int64)
    last_block = len(carr.tables) - 1
    # the block holding a string: the last one starting at or before it (skips empty blocks)
    first = min(int(np.searchsorted(starts, start, side="right")) - 1, last_block)
    final = first if stop == start else int(np.searchsorted(starts, stop - 1, side="right")) - 1
    rebased = np.clip(starts[first : final + 2] - start, 0, stop - start)
    rebased[0], rebased[-1] = 0, stop - start
    return carr.tables[first : final + 1], rebased


def _chunks(chunk_lengths, start: int, stop: int, requested: int):
    """The chunk lengths of the slice, as ``pyarrow.ChunkedArray.slice(start, requested)``
    cuts the chunks: from the first one holding ``start``, each chunk it reaches while the
    length asked for lasts (empty chunks in between kept, and past the end when more was asked
    for than there is: ``slice(1)`` asks for the whole length); one empty chunk for an empty
    slice (none when there were no chunks)."""
    if chunk_lengths is None:
        return None
    lengths = [int(x) for x in chunk_lengths]
    k, offset = 0, start
    while k < len(lengths) and offset >= lengths[k]:
        offset -= lengths[k]
        k += 1
    if not lengths:
        return np.zeros(0, np.int64)
    if stop == start:
        return np.zeros(1, np.int64)
    out, remaining = [], requested
    while k < len(lengths) and remaining > 0:
        out.append(min(lengths[k] - offset, remaining))
        remaining -= lengths[k] - offset
        offset = 0
        k += 1
    return np.array(out, np.int64)
