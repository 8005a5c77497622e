"""Rows of a compressed column decoded alone: :meth:`CompressedStringArray.take`'s selection.

Runs of consecutive indices in one block decode with one call (their codes and their output are
both contiguous); the column is validated once first, so a corrupt column gives no strings, as
its whole decode.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from fsstgpu.arrow_layout import offsets_from_lengths, to_arrow
from fsstgpu.bitmaps import unpack_bitmap
from fsstgpu.decoder import decode_range
from fsstgpu.errors import CorruptDataError
from fsstgpu.types import is_text
from fsstgpu.utf8 import check_utf8

__all__ = ["take_rows"]


def take_rows(carr, indices) -> pa.Array:
    """The strings of ``carr`` (a CompressedStringArray) at ``indices``, decoded.

    Parameters
    ----------
    carr : CompressedStringArray
    indices : sequence of int (None for a null), numpy integer array, or pyarrow integer Array
        Positions to take, in any order, repeats allowed; negative ones count from the end; a
        null index gives a null.

    Returns
    -------
    pyarrow.Array
        Of the column's original type.

    Examples
    --------
    >>> import pyarrow as pa, fsstgpu
    >>> from fsstgpu.rows import take_rows
    >>> take_rows(fsstgpu.compress(pa.array(["a", "bb", None])), [1, 2, 0, None]).to_pylist()
    ['bb', None, 'a', None]
    """
    index_valid = None
    if isinstance(indices, (list, tuple)) and any(i is None for i in indices):
        # [0, None]: a null index, as pyarrow's take (its type inferred, so that [None, 0.5]
        # is refused below as [0.5] is; all None: no type to infer, int64)
        indices = pa.array(indices)
        if pa.types.is_null(indices.type):
            indices = indices.cast(pa.int64())
    if isinstance(indices, (pa.Array, pa.ChunkedArray)):
        if not pa.types.is_integer(indices.type):
            raise TypeError(f"indices must be integers, not {indices.type}")
        if indices.null_count:
            index_valid = indices.is_valid().to_numpy(zero_copy_only=False)
            indices = indices.fill_null(0)
        indices = indices.to_numpy(zero_copy_only=False)
    idx = np.asarray(indices)
    if idx.size == 0:
        idx = idx.astype(np.int64)
    if idx.ndim != 1 or idx.dtype.kind not in "iu":
        raise TypeError(f"indices must be a 1-D integer sequence, not {idx.dtype} "
                        f"of shape {idx.shape}")
    if idx.dtype.kind == "u" and idx.size and int(idx.max()) >= carr.length:
        # (before the cast to int64, which would wrap 2**64 - 1 to -1, the last string)
        raise IndexError(f"take index out of range for {carr.length} strings")
    idx = idx.astype(np.int64)
    carr.validate()  # once: a corrupt column gives no strings, as its whole decode
    idx = np.where(idx < 0, idx + carr.length, idx)
    if index_valid is not None:  # a null index takes nothing (0 is a stand-in, if any)
        idx = np.where(index_valid, idx, 0 if carr.length else -1)
        if not carr.length and not index_valid.any():
            return pa.nulls(len(idx), carr.type)
    if idx.size and (int(idx.min()) < 0 or int(idx.max()) >= carr.length):
        raise IndexError(f"take index out of range for {carr.length} strings")
    valid = np.ones(len(idx), bool)
    if carr.validity is not None:
        valid &= unpack_bitmap(carr.validity, carr.length)[idx]
    if index_valid is not None:
        valid &= index_valid
    lengths = np.where(valid, carr.lengths[idx], 0)
    offsets = offsets_from_lengths(lengths, carr.type)
    out = np.empty(int(offsets[-1]), np.uint8)
    blocks = np.searchsorted(carr.block_starts, idx, side="right") - 1
    # Runs of consecutive indices in one block decode with one call: their codes and their
    # output are both contiguous.
    k, m = 0, len(idx)
    while k < m:
        if not valid[k]:
            k += 1
            continue
        j = k + 1
        while (j < m and valid[j] and idx[j] == idx[j - 1] + 1
               and blocks[j] == blocks[k]):
            j += 1
        a, b = int(idx[k]), int(idx[j - 1]) + 1
        end = decode_range(carr.tables[int(blocks[k])], carr.codes,
                           int(carr.code_offsets[a]), int(carr.code_offsets[b]),
                           out, int(offsets[k]), int(offsets[j]))
        if end != int(offsets[j]):
            raise CorruptDataError(f"strings {a}..{b} decode to the wrong total length")
        k = j
    if is_text(carr.type):
        check_utf8(out, offsets, "decoded strings")
    validity = None if valid.all() else np.packbits(valid, bitorder="little")
    return to_arrow(carr.type, out, offsets, validity)
