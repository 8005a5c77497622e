"""DELTA_BYTE_ARRAY values rebuilt from their prefixes and suffixes, on the GPU a value at a
time (``prefix_rebuild.cu``) or, as its twin, on the host a byte at a time by pointer jumping
(a different method: the two must give the same bytes).

The values lie end to end: value ``k`` at ``at[k]``, its first ``pre[k]`` bytes those of value
``k - 1`` and then its ``tail[k]`` suffix bytes, at ``tail_start[k]`` of ``data``. The caller
(:mod:`fsstgpu.formats.page_prefixes`) has checked them: no prefix longer than the value before
it, a page's first value (and every place without a value) without one, each page's suffixes
inside its bytes; both methods still check every index before reading it.

>>> import numpy as np
>>> from fsstgpu.kernels.prefix_rebuild import rebuild_prefixed
>>> data = np.frombuffer(b"abcXYd", np.uint8)  # "abc", then "ab" + "XY", then "abX" + "d"
>>> pre, tail = np.array([0, 2, 3]), np.array([3, 2, 1])
>>> at, tail_start = np.array([0, 3, 7, 11]), np.array([0, 3, 5])
>>> bytes(rebuild_prefixed(np, data, pre, tail, at, tail_start, 3))
b'abcabXYabXd'
"""

from __future__ import annotations

import numpy as np

from fsstgpu.device import host_array
from fsstgpu.errors import CorruptDataError
from fsstgpu.kernels.loader import get_function

__all__ = ["minimum_table", "prefix_links", "rebuild_prefixed"]

SOURCE = "prefix_rebuild.cu"
THREADS = 256
#: what the kernels' error bits say
ERRORS = {1: "a value with a prefix has no value before it with a shorter one",
          2: "a value's bytes lie outside its page or the values"}
#: pointer-jumping rounds that resolve any chain (2**63 bytes): the twin's bound
_ROUNDS = 64


def minimum_table(xp, pre, levels: int):
    """``(levels, n)`` int64: row ``l`` holds, at ``i``, the least of ``pre[i - 2**l + 1 :
    i + 1]`` (from 0 where ``i < 2**l - 1``): a row a level, each from the one before.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.kernels.prefix_rebuild import minimum_table
    >>> minimum_table(np, np.array([3, 1, 4, 1, 5]), 3).tolist()
    [[3, 1, 4, 1, 5], [3, 1, 1, 1, 1], [3, 1, 1, 1, 1]]
    """
    n = int(pre.shape[0])
    table = xp.empty((max(levels, 1), n), xp.int64)
    table[0] = pre
    for level in range(1, levels):
        span = 1 << (level - 1)
        table[level] = table[level - 1]
        if span < n:
            xp.minimum(table[level - 1, span:], table[level - 1, :-span],
                       out=table[level, span:])
    return table


def prefix_links(xp, pre, levels: int):
    """For each value, the last value before it with a shorter prefix (-1 where its prefix is
    0), found by skipping back over blocks of ``2**l`` values whose least prefix is not shorter
    (``levels``: ``2**levels`` exceeds any page's values). Raises CorruptDataError where a
    value with a prefix has no such value before it.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.kernels.prefix_rebuild import prefix_links
    >>> prefix_links(np, np.array([0, 4, 6, 6, 2, 0, 1]), 3).tolist()
    [-1, 0, 1, 1, 0, -1, 5]
    """
    n = int(pre.shape[0])
    table = minimum_table(xp, xp.asarray(pre, xp.int64), levels)
    if xp is not np:
        error = xp.zeros(1, xp.int32)
        link = _device_links(xp, table, error)
        _raise(error)
        return link
    p = table[0]
    i = np.arange(n, dtype=np.int64) - 1
    for level in range(table.shape[0] - 1, -1, -1):
        span = 1 << level
        can = i - span + 1 >= 0
        skip = can & (table[level, np.where(can, i, 0)] >= p)
        i = np.where(skip, i - span, i)
    found = (i >= 0) & (p[np.maximum(i, 0)] < p)
    if np.any((p > 0) & ~found):
        raise CorruptDataError(ERRORS[1])
    return np.where(p > 0, i, -1)


def _device_links(cp, table, error):
    """:func:`prefix_links` on the device from its table of minima: the links, a failure's
    bit OR-ed into ``error`` (not read back here)."""
    n = int(table.shape[1])
    link = cp.empty(n, cp.int64)
    if n:
        grid = (max(1, min(-(-n // THREADS), 1 << 16)),)
        get_function(SOURCE, "prefix_links")(grid, (THREADS,), (
            table, np.int32(table.shape[0]), np.int64(n), link, error))
    return link


def _raise(error) -> None:
    """Raise CorruptDataError for the first bit the kernels set in ``error`` (a sync)."""
    bits = int(host_array(error)[0])
    for bit, what in ERRORS.items():
        if bits & bit:
            raise CorruptDataError(what)


def rebuild_prefixed(xp, data, pre, tail, at, tail_start, levels: int):
    """The values end to end (``xp`` uint8, ``at[-1]`` bytes): on the device a warp a value
    walking its chain of :func:`prefix_links`, on the host by pointer jumping over the bytes.

    ``pre``, ``tail``, ``tail_start``: int64 a value; ``at``: int64, a value's start, then
    the end (``n + 1``); ``levels`` as :func:`prefix_links` takes it.

    Raises
    ------
    fsstgpu.CorruptDataError
        Where a chain breaks or a value's bytes lie outside ``data`` (the caller's checks
        rule both out: a last guard).

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.kernels.prefix_rebuild import rebuild_prefixed
    >>> data = np.frombuffer(b"helloy", np.uint8)  # "hello", then "hell" + "y"
    >>> bytes(rebuild_prefixed(np, data, np.array([0, 4]), np.array([5, 1]),
    ...                        np.array([0, 5, 10]), np.array([0, 5]), 1))
    b'hellohelly'
    """
    n = int(pre.shape[0])
    total = int(at[-1]) if n else 0
    if xp is np:
        return _pointer_jumping(data, pre, tail, at, tail_start, n, total)
    error = xp.zeros(1, xp.int32)  # (the links' and the rebuild's, read back once)
    link = _device_links(xp, minimum_table(xp, pre, levels), error)
    out = xp.empty(total, xp.uint8)
    if n:
        grid = (max(1, min(-(-n // (THREADS // 32)), 1 << 20)),)
        get_function(SOURCE, "prefixed_rebuild")(grid, (THREADS,), (
            data, np.int64(data.size), pre, tail, at, tail_start, link, np.int64(n),
            np.int64(total), out, error))
    _raise(error)
    return out


def _pointer_jumping(data, pre, tail, at, tail_start, n: int, total: int):
    """The twin: every byte points at where it comes from (the same byte of the value before,
    inside the prefix, or a suffix byte of ``data`` as ``-1 - place``), and the pointers into
    earlier bytes are followed by pointer jumping (each round doubles how far they have gone)."""
    byte = np.arange(total, dtype=np.int64)
    owner = np.clip(np.searchsorted(at, byte, side="right") - 1, 0, max(n - 1, 0))
    offset = byte - at[owner]
    shared = offset < pre[owner]
    link = np.where(shared, at[np.maximum(owner - 1, 0)] + offset,
                    -1 - (tail_start[owner] + offset - pre[owner]))
    for _ in range(_ROUNDS):
        pending = link >= 0
        if not pending.any():
            break
        link = np.where(pending, link[np.clip(link, 0, max(total - 1, 0))], link)
    source = -1 - link
    if total and (np.any(link >= 0) or source.min() < 0 or source.max() >= data.size):
        raise CorruptDataError(ERRORS[2])
    return data[source] if total else np.zeros(0, np.uint8)
