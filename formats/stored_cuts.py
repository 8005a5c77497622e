"""The cuts of an fsst column's storage (``arrow.md``: pairs of code and output offsets inside
strings longer than the split size) read back as the absolute positions the split planner
takes (:func:`fsstgpu.splits.plan_splits`), every cut checked to lie strictly inside its string
and the cuts of a string to increase."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from fsstgpu.arrow_layout import buffer_values, slice_bitmap
from fsstgpu.errors import CorruptDataError

__all__ = ["unpack_cuts"]


def unpack_cuts(parts, code_offsets, lengths, width: int, rows=None, *,
                what: str = "fsstgpu.fsst"):
    """The stored cuts as absolute (code, output, row) arrays, checked to lie strictly inside
    their strings and to increase. ``width``: bytes per stored offset (the lengths' width);
    ``rows``: the struct's validity bitmap, when ``parts`` do not have its nulls applied (cuts
    stored under a null string are not read); ``what`` names the column in errors.

    Examples
    --------
    >>> import numpy as np, pyarrow as pa
    >>> from fsstgpu.formats.stored_cuts import unpack_cuts
    >>> cuts = pa.array([None, np.array([2, 5], "<u4").tobytes()], pa.binary())
    >>> code, out, row = unpack_cuts([cuts], np.array([0, 1, 6]), np.array([3, 9]), 4)
    >>> code.tolist(), out.tolist(), row.tolist()
    ([3], [8], [1])
    """
    empty = np.zeros(0, np.int64)
    if not parts:  # a chunked array without chunks
        return empty, empty, empty
    cuts = pa.concat_arrays(parts) if len(parts) != 1 else parts[0]
    n = len(cuts)
    if n == 0 or cuts.null_count == n:
        return empty, empty, empty
    validity, offsets, data = cuts.buffers()
    offs = buffer_values(offsets, np.int32, cuts.offset, n + 1).astype(np.int64)
    sizes = np.diff(offs)
    if cuts.null_count:
        bits = slice_bitmap(np.frombuffer(validity, np.uint8), cuts.offset, n)
        sizes = np.where(np.unpackbits(bits, count=n, bitorder="little").astype(bool), sizes, 0)
    if rows is not None:
        sizes = np.where(np.unpackbits(rows, count=n, bitorder="little").astype(bool), sizes, 0)
    data = np.zeros(0, np.uint8) if data is None else np.frombuffer(data, np.uint8)
    if np.any(sizes < 0) or offs[0] < 0 or offs[-1] > len(data):
        raise CorruptDataError(f"{what}: the cuts' offsets are out of order or bounds")
    if np.any(sizes % (2 * width)):
        raise CorruptDataError(f"{what}: a string's cuts are not pairs of "
                               f"{width}-byte offsets")
    starts = offs[:-1][sizes > 0]
    raw = _gather(data, starts, sizes[sizes > 0])
    pairs = raw.view(f"<u{width}").reshape(-1, 2).astype(np.int64)
    rows = np.repeat(np.arange(n, dtype=np.int64), sizes // (2 * width))
    out_offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=out_offsets[1:])
    code_len = np.diff(code_offsets)[rows]
    if np.any(pairs <= 0) or np.any(pairs[:, 0] >= code_len) or np.any(
            pairs[:, 1] >= lengths[rows]):
        raise CorruptDataError(f"{what}: a cut lies outside its string")
    code = code_offsets[rows] + pairs[:, 0]
    out = out_offsets[rows] + pairs[:, 1]
    if np.any(np.diff(code) <= 0) or np.any(np.diff(out) <= 0):
        raise CorruptDataError(f"{what}: a string's cuts do not increase")
    return code, out, rows


def _gather(data, starts, sizes) -> np.ndarray:
    """The bytes ``data[starts[i]:starts[i] + sizes[i]]`` for every i, concatenated."""
    if not len(starts):
        return np.zeros(0, np.uint8)
    ends = np.cumsum(sizes)
    if starts[-1] + sizes[-1] - starts[0] == ends[-1]:  # contiguous: the usual case
        return data[starts[0] : starts[0] + ends[-1]]
    index = np.arange(int(ends[-1]), dtype=np.int64) + np.repeat(starts - (ends - sizes), sizes)
    return data[index]
