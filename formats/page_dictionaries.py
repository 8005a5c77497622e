"""An fsst column's dictionary pages read on the host as :func:`~fsstgpu.formats.page_plan.
plan_column` reads each chunk (on its thread, while the chunk is still in host memory): what
:func:`~fsstgpu.formats.page_columns.decode_pages` looks up by dictionary index, so that the
decode does no host work but gathers, and the chunk's dictionary page need not be kept.

- ``codes``: the entries' sizes (their 4-byte lengths walked, none of their bytes copied; the
  device finds where each lies from them, :func:`entry_starts`), read in C++ with the chunk's
  pages (:func:`fsstgpu.native.pages.plan_chunks`);
- ``lengths``: the entries' values, likewise;
- ``table``: each entry's table, as an index into the column's distinct tables (each read and
  checked once; -1 where an entry is unreadable, which is an error only where a valid string
  names it): :class:`DictionaryReader`.

The read is O(dictionary entries), as the page headers' is O(pages): no per-row host work.
"""

from __future__ import annotations

import numpy as np

from fsstgpu import native
from fsstgpu.errors import CorruptDataError
from fsstgpu.formats.table_child import read_new
from fsstgpu.symbol_table import SymbolTable

__all__ = ["DictionaryReader", "entry_starts"]


def entry_starts(xp, sizes, pages, counts):
    """Where each entry of PLAIN byte-array dictionary pages lies, from the entries' ``sizes``
    (``xp`` uint32, the pages' entries end to end), the pages' starts ``pages`` and their entry
    ``counts`` (host int64): entry ``k`` of a page follows ``k + 1`` lengths of 4 bytes and
    the entries before it (int64; on the device, where the sizes are 4 bytes an entry and the
    places 8).

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.formats.page_dictionaries import entry_starts
    >>> sizes = np.array([2, 1, 5], np.uint32)  # a page of two entries at 100, one at 300
    >>> entry_starts(np, sizes, np.array([100, 300]), np.array([2, 1])).tolist()
    [104, 110, 304]
    """
    counts = np.asarray(counts, np.int64)
    first = np.zeros(len(counts), np.int64)
    np.cumsum(counts[:-1], out=first[1:])
    k = xp.arange(int(counts.sum()), dtype=xp.int64)
    first = xp.asarray(first)
    # each entry's page (the last starting at or before it: an empty page is passed over)
    page = xp.searchsorted(first, k, side="right") - 1
    wide = sizes.astype(xp.int64)
    before = xp.cumsum(wide) - wide  # (the sizes of the entries before, of every page)
    page_first = first[page]
    return xp.asarray(np.asarray(pages, np.int64))[page] + before - before[page_first] + \
        4 * (k - page_first + 1)


class DictionaryReader:
    """Reads the table leaf's dictionary pages of one fsst column's chunks, a window of chunks
    at a time, keeping the column's distinct tables (:attr:`tables`) across its row groups (the
    codes' and lengths' dictionary pages are read in C++ as their chunks are planned:
    :func:`fsstgpu.native.pages.plan_chunks`).

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import SymbolTable
    >>> from fsstgpu.formats.page_dictionaries import DictionaryReader
    >>> t = SymbolTable([b"ab"]).to_bytes()
    >>> page = np.frombuffer(len(t).to_bytes(4, "little") + t + b"\\1\\0\\0\\0x", np.uint8)
    >>> reader = DictionaryReader()
    >>> got = reader.table_ids(page, 100, [(100, page.size, 2), None])
    >>> [None if i is None else i.tolist() for i in got]
    [[0, -1], None]
    >>> len(reader.tables)
    1
    """

    def __init__(self):
        self.tables: list[SymbolTable] = []
        self._found: dict[bytes, int] = {}

    def table_ids(self, raw, at: int, dictionaries) -> list:
        """Each entry's table of each of a window's chunks' dictionary pages
        (``dictionaries``: each ``(start, size, count)`` in the column's buffer, None for a
        chunk without one; ``raw`` holds those bytes, at ``at`` in that buffer), as an index
        into :attr:`tables` (int32; -1 where an entry is unreadable), or None. The new tables
        of the whole window are read in one call (a call a chunk cost ~0.3 ms of fixed NumPy
        work on the device host: ~900 tables in 8 row groups, session 86)."""
        entries = []  # each chunk's entries (bytes), or None
        for dictionary in dictionaries:
            if dictionary is None:
                entries.append(None)
                continue
            start, size, count = dictionary
            page = np.asarray(raw[start - at : start - at + size], np.uint8)
            try:
                blob, offsets, _ = native.plain_byte_arrays(page, count)
            except CorruptDataError:  # (every entry unreadable: an error where one is named)
                entries.append(count)
                continue
            whole, ends = blob.tobytes(), offsets.tolist()  # (bytes sliced: no array a slice)
            entries.append([whole[ends[j] : ends[j + 1]] for j in range(count)])
        read_new([e for chunk in entries if isinstance(chunk, list) for e in chunk],
                 self._found, self.tables)  # (those no chunk before held)
        found = self._found
        return [None if chunk is None else np.full(chunk, -1, np.int32)
                if isinstance(chunk, int) else np.array([found[e] for e in chunk], np.int32)
                for chunk in entries]
