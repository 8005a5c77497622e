"""The strings of ``DELTA_BYTE_ARRAY`` pages rebuilt with array operations, on the device or, as
the twin, on the host (:mod:`fsstgpu.formats.page_columns` reads the fsst codes of the
``prefixed`` columns, which ``compress_file`` writes so: lines that share their starts).

Such a page holds, for its ``k``-th value, how many bytes it shares with value ``k - 1`` (its
prefix) and the bytes after them (its suffix). Rebuilding a value needs the one before it, a
chain through the page; the prefixes, suffixes and places are found here with array
operations, the bytes by :func:`fsstgpu.kernels.prefix_rebuild.rebuild_prefixed`: on the
device a warp a value, walking the chain of values with shorter prefixes that its prefix's
bytes come from (no round over every byte); on the host, the twin, every byte pointing at
where it comes from, followed by pointer jumping.

The prefixes and suffixes are untrusted: a negative one, a prefix longer than the value before
it, a page whose first value has a prefix, or suffixes running past the page are flagged, and
every pointer lies inside the bytes it indexes before it is followed.
"""

from __future__ import annotations

import numpy as np

from fsstgpu.device import host_array
from fsstgpu.errors import CorruptDataError
from fsstgpu.formats.page_plan import DELTA_BYTE_ARRAY
from fsstgpu.formats.page_runs import decode_runs
from fsstgpu.kernels.prefix_rebuild import rebuild_prefixed

__all__ = ["prefixed_values"]


def prefixed_values(leaf, data, xp, checks, pages, n: int, most: int | None = None):
    """The values of ``leaf``'s ``DELTA_BYTE_ARRAY`` ``pages`` (host indices): ``(lengths,
    starts, bytes)``, ``lengths`` and ``starts`` int64 a row (the row's value's size and where
    it starts in ``bytes``, the values end to end in the order of their rows; 0 where a row
    holds none of these pages' values), ``bytes`` an ``xp`` uint8 array.

    ``leaf``: the codes' ``_Leaf`` of :mod:`fsstgpu.formats.page_columns` (its levels decoded);
    ``checks`` its ``_Checks``, which get the flags (read back here, before the rebuild).
    ``most``: the most bytes the values may hold in all (the codes: twice their strings'
    lengths), checked before they are allocated: a page of ``m`` values may declare ~m**2/2
    bytes through its prefixes alone.

    Examples
    --------
    >>> import os, tempfile, numpy as np, pyarrow as pa, pyarrow.parquet as pq
    >>> from fsstgpu.formats.page_columns import decode_pages
    >>> from fsstgpu.formats.page_plan import plan_column
    >>> from fsstgpu.formats.rowgroups import Source
    >>> import fsstgpu
    >>> from fsstgpu.formats.arrow_storage import to_extension_array
    >>> path = os.path.join(tempfile.mkdtemp(), "p.parquet")
    >>> ext = to_extension_array(fsstgpu.compress(pa.array(["https://a/1", "https://a/22"])))
    >>> pq.write_table(pa.table({"s": ext}), path, compression="none",
    ...                column_encoding={"s.codes": "DELTA_BYTE_ARRAY"}, use_dictionary=["s.table"])
    >>> with Source(path) as source:
    ...     col = decode_pages(plan_column(source, source.schema.field("s")), np)
    >>> bytes(col.codes) == b"".join(ext.storage.field("codes").to_pylist())
    True
    """
    p = leaf.plan
    prefix, ends = leaf.values("delta", data, xp, checks, pages, n)
    checks.raise_first()  # (the suffixes' lengths start where the prefixes' runs end)
    ends = host_array(ends)
    tails_at = p.values_at[pages] + ends
    size = p.values_end[pages] - tails_at
    tails, ends2 = decode_runs("delta", data, xp, checks, tails_at, size, leaf.counts[pages],
                               p.row0[pages], n,
                               [f"{p.names[i]} (suffix lengths)" for i in pages])
    ends2 = xp.asarray(ends2)
    rows = leaf.rows_in((DELTA_BYTE_ARRAY,))
    value = xp.zeros(n, bool)  # which places of the placed layout hold these pages' values
    value[leaf.at[rows]] = True
    pre = xp.where(value, prefix, 0)
    tail = xp.where(value, tails, 0)
    checks.flag((pre < 0) | (tail < 0), "a negative prefix or suffix length")
    pre, tail = xp.maximum(pre, 0), xp.maximum(tail, 0)
    length = pre + tail
    # a page's first value has no value before it; the others share at most its bytes
    first = np.zeros(n, bool)
    first[p.row0[pages]] = True
    first = xp.asarray(first)
    before = xp.concatenate([xp.zeros(1, xp.int64), length[:-1]])
    checks.flag(value & (first & (pre > 0) | ~first & (pre > before)),
                "a value's prefix is longer than the value before it")
    tail_run = xp.zeros(n + 1, xp.int64)
    xp.cumsum(tail, dtype=xp.int64, out=tail_run[1:])
    row0, nrows = xp.asarray(p.row0[pages]), xp.asarray(p.rows[pages])
    room = xp.asarray(size) - ends2
    checks.flag(tail_run[row0 + nrows] - tail_run[row0] > room,
                "a page's suffixes run past its bytes")
    at = xp.zeros(n + 1, xp.int64)  # where each value starts among the rebuilt bytes
    xp.cumsum(length, dtype=xp.int64, out=at[1:])
    checks.raise_first()
    total = int(at[-1])
    if most is not None and total > most:
        raise CorruptDataError(f"{p.names[pages[0]]}: its values' prefixes and suffixes make "
                               f"{total} bytes, more than the {most} their strings' lengths "
                               "allow")
    # each value's page (of ``pages``), and where its suffix starts in the buffer
    page_of = xp.maximum(xp.searchsorted(row0, xp.arange(n), side="right") - 1, 0)
    tail_from = xp.asarray(tails_at) + ends2  # (each page's suffix bytes)
    tail_start = tail_from[page_of] + tail_run[:-1] - tail_run[row0][page_of]
    levels = max(1, int(p.rows[pages].max()).bit_length())  # (no chain leaves its page)
    try:
        out = rebuild_prefixed(xp, data, pre, tail, at, tail_start, levels)
    except CorruptDataError as exc:
        raise CorruptDataError(f"{p.names[pages[0]]}: {exc}") from None
    return xp.where(rows, length[leaf.at], 0), xp.where(rows, at[:-1][leaf.at], 0), out
