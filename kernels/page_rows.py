"""Each row's dictionary entry looked up, on the device (``page_rows.cu``) or, as its twin, on
the host: one launch where :mod:`fsstgpu.formats.page_columns` made ~8 CuPy calls a
dictionary leaf, each ~25-65 us of host time on the device host (BENCHMARKS.md section 73).

A dictionary-encoded leaf's indices are decoded with each page's values placed from its first
row (row ``i``'s at ``index[at[i]]``); row ``i``'s page's row group ``g = page_group[page[i]]``
holds ``counts[g]`` entries, starting at ``base[g]`` among the row groups' dictionaries end to
end (``entries`` of them). :func:`dictionary_lookup` writes ``values[e]`` (and ``values2[e]``)
to the rows of ``rows`` (every row with ``every``), ``e`` the row's entry clipped into the
dictionaries, and returns whether a row of ``rows`` named an index past its row group's entries.

>>> import numpy as np
>>> from fsstgpu.kernels.page_rows import dictionary_lookup
>>> out = np.zeros(3, np.int64)
>>> past = dictionary_lookup(np, np.array([True, True, False]), np.array([1, 0, 0], np.uint32),
...                          np.arange(3), np.zeros(3, np.int64), np.zeros(1, np.int64),
...                          np.array([2]), np.array([0]), 2, np.array([10, 20]), out)
>>> out.tolist(), bool(past[0])
([20, 10, 0], False)
"""

from __future__ import annotations

import numpy as np

from fsstgpu.kernels.loader import get_function

__all__ = ["dictionary_lookup"]

SOURCE = "page_rows.cu"
THREADS = 256
_KERNELS = {np.dtype(np.int32): "dictionary_lookup_i32",
            np.dtype(np.uint32): "dictionary_lookup_u32",
            np.dtype(np.int64): "dictionary_lookup_i64",
            np.dtype(np.uint64): "dictionary_lookup_u64"}


def dictionary_lookup(xp, rows, index, at, page, page_group, counts, base, entries: int,
                      values, out, *, every: bool = False, values2=None, out2=None):
    """Write each row's dictionary value into ``out`` (and ``out2``) in place, with array
    module ``xp`` (NumPy: the twin; CuPy: one launch on the current stream); return whether a
    row of ``rows`` names an index past its row group's entries (an ``xp`` bool array of one,
    read back with the decode's other checks).

    ``rows`` (bool), ``index`` (uint32), ``at`` and ``page`` (int64, each in range: the
    caller's own) have a value a row; ``page_group`` one a page; ``counts`` and ``base`` one a
    row group; ``values`` (and ``values2``) hold the ``entries`` entries, or one entry when
    there are none; ``out`` (and ``out2``) share their dtype, a value a row.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.kernels.page_rows import dictionary_lookup
    >>> out = np.full(2, -1, np.int32)
    >>> past = dictionary_lookup(np, np.array([True, True]), np.array([0, 5], np.uint32),
    ...                          np.arange(2), np.zeros(2, np.int64), np.zeros(1, np.int64),
    ...                          np.array([2]), np.array([0]), 2, np.array([7, 8], np.int32),
    ...                          out, every=True)
    >>> out.tolist(), bool(past[0])  # (index 5 is past the 2 entries: flagged, clipped)
    ([7, 8], True)
    """
    last = max(int(entries) - 1, 0)
    if xp is np:
        group = page_group[page]
        k = index[at].astype(np.int64)
        past = np.any(rows & (k >= counts[group])).reshape(1)
        e = np.clip(base[group] + k, 0, last)
        np.copyto(out, values[e], where=True if every else rows)
        if values2 is not None:
            np.copyto(out2, values2[e], where=True if every else rows)
        return past
    n = int(out.size)
    two = values2 is not None
    for a, dtype in ((index, np.uint32), (values, out.dtype)) + (((values2, out.dtype),) if two
                                                                 else ()):
        if a.dtype != dtype:
            raise TypeError(f"dictionary_lookup: {a.dtype} where {np.dtype(dtype)} is needed")
    if not out.flags.c_contiguous or (two and (not out2.flags.c_contiguous or
                                               out2.dtype != out.dtype)):
        raise ValueError("dictionary_lookup writes contiguous outputs of one dtype")
    past = xp.zeros(1, xp.int32)
    if n:
        contiguous = xp.ascontiguousarray
        fn = get_function(SOURCE, _KERNELS[np.dtype(out.dtype)])
        grid = (max(1, min(-(-n // THREADS), 65535)),)
        fn(grid, (THREADS,), (np.int64(n), contiguous(rows), contiguous(index), contiguous(at),
                              contiguous(page), contiguous(page_group), contiguous(counts),
                              contiguous(base), np.int64(last), np.int32(every),
                              np.int32(two), contiguous(values), out,
                              contiguous(values2) if two else values,
                              out2 if two else out, past))
    return past != 0
