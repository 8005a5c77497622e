"""An fsst column's pages decoded into the arrays of its compressed column, on the device or,
as its twin, on the host (issue #24 item 2: a file -> GPU read with no per-row host work).

:mod:`fsstgpu.formats.page_plan` reads a column's chunks and says where each page's levels and
values lie; :func:`decode_pages` turns them into a :class:`PageColumn` (the codes end to end,
their offsets, the strings' lengths and validity, the blocks of one table, the cuts) with the
same array code for NumPy and CuPy (``xp``): the runs inside the pages by
:mod:`fsstgpu.kernels.page_decode` (its kernels, or their twins on the host), each row's codes
gathered from the page that holds them by :mod:`fsstgpu.kernels.gather`, everything else
elementwise passes and running sums over the rows. The host reads only what is O(pages) or
O(dictionary entries): page headers, dictionary pages, and the cuts of the few strings longer
than the split size.

The pages are untrusted: every decoded value is checked before it is used (levels, counts,
indices against their dictionaries, the codes' lengths against their pages, each string's code
count against its length), a gather index is clipped into its array before any check is read
back, and the checks are read back once, at the end: a :class:`~fsstgpu.errors.CorruptDataError`
naming the page or the column.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fsstgpu import native
from fsstgpu.device import host_array
from fsstgpu.errors import CorruptDataError
from fsstgpu.formats.page_dictionaries import entry_starts
from fsstgpu.formats.page_plan import (
    DELTA_BYTE_ARRAY,
    DELTA_LENGTH_BYTE_ARRAY,
    DICTIONARY,
    PLAIN,
    ColumnPlan,
)
from fsstgpu.formats.page_prefixes import prefixed_values
from fsstgpu.formats.page_runs import Checks, decode_runs
from fsstgpu.kernels.fsst_decode import padded_size
from fsstgpu.kernels.gather import check_gathered, gather_segments, gather_segments_cpu
from fsstgpu.kernels.page_rows import dictionary_lookup
from fsstgpu.limits import MAX_TABLES
from fsstgpu.symbol_table import SymbolTable
from fsstgpu.types import INT32_MAX, narrow_offsets

__all__ = ["PageColumn", "decode_pages"]


@dataclass
class PageColumn:
    """A column's arrays as :func:`decode_pages` made them (``xp`` arrays but the host's
    ``tables``, ``block_starts``, ``cuts`` and ``chunk_lengths``): what
    :class:`~fsstgpu.CompressedStringArray` holds before its split points are planned."""

    codes: object          # uint8, code_offsets[-1] of them
    code_offsets: object   # int64, rows + 1 from 0
    lengths: object        # the storage's lengths dtype (0 under a null)
    out_offsets: object    # int64, rows + 1 from 0: the lengths' running sum
    valid: object          # bool, a row each
    null_count: int
    tables: tuple
    block_starts: np.ndarray
    cuts: tuple            # (absolute code position, place in its string, row), int64 each
    chunk_lengths: np.ndarray
    total: int = 0         # the strings' bytes (out_offsets[-1])
    most: int = 0          # the longest string's


class _Leaf:
    """One leaf's levels decoded, and where each row's value lies in its values (made by
    :func:`_leaves`, all leaves' at once): ``counts``, its pages' values; ``at``, where a
    present row's value lies when each page's values start at its first row."""

    def __init__(self, leaf, levels, present, struct_valid, row0, page, dev, counts, at):
        self.plan, self.levels, self.present, self.struct_valid = leaf, levels, present, \
            struct_valid
        self.row0, self.page, self.dev, self.counts, self.at = row0, page, dev, counts, at
        self._rows_in = {}

    def pages(self, encodings) -> np.ndarray:
        """Its pages of these encodings (host indices)."""
        return np.flatnonzero(_among(self.plan.encoding, encodings))

    def rows_in(self, encodings):
        """Whether each row lies in a page of one of ``encodings`` (a key of
        :data:`_ENCODINGS`) and holds a value (made once a leaf)."""
        if encodings not in self._rows_in:
            self._rows_in[encodings] = (self.dev[encodings][self.page] != 0) & self.present
        return self._rows_in[encodings]

    def values(self, kind, data, xp, checks, pages, total: int, width=None):
        p = self.plan
        every = len(pages) == len(p.rows)  # (all its pages: their arrays already on the
        # device, where a subset is a gather by an uploaded index)
        return decode_runs(kind, data, xp, checks, p.values_at[pages],
                            p.values_end[pages] - p.values_at[pages],
                            self.counts if every else self.counts[pages],
                            self.dev["row0"] if every else p.row0[pages], total,
                            [p.names[i] for i in pages], width)


#: the groups of page encodings whose rows the decode selects (:meth:`_Leaf.rows_in`)
_ENCODINGS = ((DELTA_LENGTH_BYTE_ARRAY,), (DELTA_BYTE_ARRAY,), DICTIONARY, (PLAIN,))


def _among(encoding: np.ndarray, encodings) -> np.ndarray:
    """Whether each page's ``encoding`` is one of ``encodings`` (Parquet's encodings are small
    numbers: a table looked up, where ``np.isin`` cost ~30 us a call, 16 calls a column)."""
    table = np.zeros(17, bool)  # (the last entry for any number outside 0..15: none)
    table[list(encodings)] = True
    return table[np.where((encoding >= 0) & (encoding < 16), encoding, 16)]


def _uploaded(plan: ColumnPlan, xp) -> list[dict]:
    """Each leaf's page arrays that the decode indexes on the device, in one copy: each page's
    rows, first row and row group, whether it is of each group of :data:`_ENCODINGS` (0/1),
    and each row group's dictionary entries and their running sum from 0. (Each small copy
    from pageable memory waits for the stream: the decode made ~60 of them a column.)"""
    parts, names = [], []
    for leaf in plan.leaves:
        counts = np.array([0 if d is None else d[2] for d in leaf.dictionaries], np.int64)
        arrays = {"rows": leaf.rows, "row0": leaf.row0, "group": leaf.group,
                  "counts": counts, "base": np.concatenate([[0], np.cumsum(counts)])}
        arrays.update({enc: _among(leaf.encoding, enc) for enc in _ENCODINGS})
        names.append(list(arrays))
        parts.extend(np.asarray(a).astype(np.int64) for a in arrays.values())
    ends = np.cumsum([0] + [len(a) for a in parts])
    whole = xp.asarray(np.concatenate(parts) if parts else np.zeros(0, np.int64))
    out, k = [], 0
    for keys in names:
        out.append({key: whole[ends[k + j] : ends[k + j + 1]] for j, key in enumerate(keys)})
        k += len(keys)
    return out


def decode_pages(plan: ColumnPlan, xp, data=None) -> PageColumn:
    """``plan``'s column decoded from its pages with array module ``xp`` (NumPy: the host's
    twin; CuPy: the device), ``data`` the column's chunks (the plan's buffer, uploaded; None:
    the plan's buffer itself).

    Raises
    ------
    fsstgpu.CorruptDataError
        Naming the page or the column, for any value the pages hold that the column cannot.

    Examples
    --------
    >>> import os, tempfile, numpy as np, pyarrow as pa, pyarrow.parquet as pq
    >>> from fsstgpu.formats import compress_file
    >>> from fsstgpu.formats.page_columns import decode_pages
    >>> from fsstgpu.formats.page_plan import plan_column
    >>> from fsstgpu.formats.rowgroups import Source
    >>> d = tempfile.mkdtemp()
    >>> pq.write_table(pa.table({"s": ["hello"] * 4}), os.path.join(d, "s.parquet"))
    >>> _ = compress_file(os.path.join(d, "s.parquet"), os.path.join(d, "f.parquet"),
    ...                   parquet_codec="none")
    >>> with Source(os.path.join(d, "f.parquet")) as source:
    ...     col = decode_pages(plan_column(source, source.schema.field("s")), np)
    >>> col.block_starts.tolist(), len(col.tables), bool(col.valid.all())
    ([0, 4], 1, True)
    """
    data = plan.buffer if data is None else data
    n = plan.rows
    checks = Checks(xp, plan.where)
    leaves = _leaves(plan, _levels(plan, data, xp, checks), xp, checks, _uploaded(plan, xp))
    valid = leaves["codes"].struct_valid
    lengths = _lengths(plan, leaves["lengths"], data, xp, checks, n, valid)
    wide = lengths.astype(xp.int64)
    code_len, src, extra = _codes(plan, leaves["codes"], data, xp, checks, n, wide)
    code_offsets = xp.zeros(n + 1, xp.int64)
    xp.cumsum(code_len, dtype=xp.int64, out=code_offsets[1:])
    checks.flag((code_len > 2 * wide) | (wide > 8 * code_len),
                "a string's code count does not fit its length")
    out = xp.zeros(n + 1, xp.int64)
    xp.cumsum(wide, dtype=xp.int64, out=out[1:])
    if narrow_offsets(plan.field.type.value_type):
        bounds = xp.asarray(np.concatenate([[0], np.cumsum(plan.group_rows)]))
        checks.flag(out[bounds[1:]] - out[bounds[:-1]] > INT32_MAX,
                    f"a {plan.field.type.value_type} row group holds more than 2**31 - 1 bytes")
    table_id = _table_ids(plan, leaves["table"], data, xp, checks, n, valid)
    tables = plan.tables
    # (everything the gathers and blocks below rely on is checked; the sizes they need read
    # back in the same copy)
    ncodes, total, nvalid, most = checks.raise_first(values=(
        code_offsets[-1], out[-1], xp.count_nonzero(valid), lengths.max() if n else 0))
    codes = _gathered(data, extra, src, code_offsets, xp, ncodes)
    block_starts, block_tables = _blocks(xp, valid, table_id, n, plan.where)
    null_count = n - nvalid
    cuts = _cuts(plan, leaves["cuts"], xp, code_offsets, wide)
    return PageColumn(codes, code_offsets, lengths, out, valid, null_count,
                      tuple(tables[t] for t in block_tables) if null_count < n
                      else (SymbolTable([]),), block_starts, cuts, plan.group_rows.copy(),
                      total, most)


def _leaves(plan: ColumnPlan, levels, xp, checks: Checks, dev: list) -> dict:
    """Every leaf's :class:`_Leaf` from their ``levels`` (leaf after leaf), its levels checked:
    each pass made once for all four (a leaf's pages' rows found once for the leaves whose
    pages start at the same rows: a row group a page, usually)."""
    n, names = plan.rows, [leaf.name for leaf in plan.leaves]
    grid = levels.reshape(len(names), n)
    most = np.array([leaf.max_def for leaf in plan.leaves])
    top = xp.asarray(most.astype(grid.dtype))[:, None]
    present = grid == top
    struct = grid >= plan.struct_level
    ranks = xp.zeros((len(names), n + 1), xp.int64)
    ranks[:, 1:] = xp.cumsum(present, axis=1, dtype=xp.int64)
    checks.flag_each(grid > top,
                     [f"{m}: a definition level over {d}" for m, d in zip(names, most,
                                                                            strict=True)])
    checks.flag_each(struct != struct[:1], ["the struct's nulls differ between its leaves"] *
                     len(names))
    missing = struct[:1] & ~present  # (a null cut is no error: its row cleared, where
    missing[names.index("cuts")] = False  # picking the others' rows was an uploaded index)
    checks.flag_each(missing, [f"a valid string has a null {m!r} entry" for m in names])
    # the leaves whose pages start at the same rows (a row group a page, usually all four)
    # share each row's page, and their values' places are found in one pass for all of them
    shared = {}
    for i, leaf in enumerate(plan.leaves):
        shared.setdefault(leaf.row0.tobytes() + leaf.rows.tobytes(), []).append(i)
    out = {}
    for members in shared.values():
        row0, rows = dev[members[0]]["row0"], dev[members[0]]["rows"]
        # each row's page (the last starting at or before it: empty pages passed over)
        page = xp.searchsorted(row0, xp.arange(n), side="right") - 1
        mine = ranks if len(members) == len(names) else ranks[xp.asarray(members)]
        first = mine[:, row0]
        counts = mine[:, row0 + rows] - first
        at = (row0 - first)[:, page] + mine[:, :-1]
        for k, i in enumerate(members):
            leaf = plan.leaves[i]
            out[leaf.name] = _Leaf(leaf, grid[i], present[i], struct[i], row0, page, dev[i],
                                   counts[k], at[k])
    return out


def _levels(plan: ColumnPlan, data, xp, checks: Checks):
    """Every leaf's definition levels, leaf after leaf (``rows`` a leaf), in one run of
    jobs."""
    n = plan.rows
    parts = [(leaf.levels_at, leaf.levels_size, leaf.rows, leaf.row0 + i * n,
              np.full(len(leaf.rows), int(leaf.max_def).bit_length(), np.int32), leaf.names)
             for i, leaf in enumerate(plan.leaves)]
    start, size, rows, at, width = (np.concatenate([p[k] for p in parts]) for k in range(5))
    names = [name for p in parts for name in p[5]]
    levels, _ = decode_runs("rle", data, xp, checks, start, size, rows, at,
                             n * len(plan.leaves), [f"{m} (levels)" for m in names], width)
    return levels


def _codes(plan, leaf: _Leaf, data, xp, checks: Checks, n: int, wide):
    """Each row's code count and where its codes start in the buffer (0 under a null);
    ``wide``: the strings' lengths (int64), which bound their codes (twice as many at most)."""
    code_len = xp.zeros(n, xp.int64)
    src = xp.zeros(n, xp.int64)
    p = leaf.plan
    delta = leaf.pages([DELTA_LENGTH_BYTE_ARRAY])
    if delta.size:
        lens, ends = leaf.values("delta", data, xp, checks, delta, n)
        rows = leaf.rows_in((DELTA_LENGTH_BYTE_ARRAY,))
        here = xp.where(rows, lens[leaf.at], 0)
        checks.flag(here < 0, "a negative code length")
        here = xp.maximum(here, 0)
        before = xp.zeros(n + 1, xp.int64)
        xp.cumsum(here, dtype=xp.int64, out=before[1:])
        page_bytes = before[leaf.row0 + leaf.dev["rows"]] - before[leaf.row0]
        end_of = xp.zeros(len(p.rows), xp.int64)
        end_of[xp.asarray(delta)] = xp.asarray(ends, xp.int64)
        room = xp.asarray(p.values_end - p.values_at) - end_of
        checks.flag(page_bytes > room, "a page's code lengths run past its bytes")
        first = xp.asarray(p.values_at) + end_of  # (each page's first string's codes)
        starts = first[leaf.page] + before[:-1] - before[leaf.row0][leaf.page]
        code_len = xp.where(rows, here, code_len)
        src = xp.where(rows, starts, src)
    extra = data[:0]
    prefixed = leaf.pages([DELTA_BYTE_ARRAY])
    if prefixed.size:  # rebuilt apart; their rows' codes then gathered from there (-1 - i)
        lens, starts, extra = prefixed_values(leaf, data, xp, checks, prefixed, n,
                                              most=2 * int(wide.sum()))
        rows = leaf.rows_in((DELTA_BYTE_ARRAY,))
        code_len = xp.where(rows, lens, code_len)
        src = xp.where(rows, -1 - starts, src)
    keyed = leaf.pages(DICTIONARY)
    if keyed.size:
        starts, sizes = _byte_dictionaries(p, xp)
        _dictionary_values(leaf, data, xp, checks, keyed, n, "codes", sizes, code_len,
                           values2=starts, out2=src)
    return code_len, src, extra


def _dictionary_values(leaf: _Leaf, data, xp, checks: Checks, pages, n: int, name: str,
                       values, out, **kw) -> None:
    """Each row's entry of the leaf's dictionaries written into ``out`` in place (and
    ``values2`` into ``out2``; :func:`~fsstgpu.kernels.page_rows.dictionary_lookup`, one launch
    on the device), for its rows in dictionary pages (every row with ``every=True``); an index
    past its page's dictionary flagged, every entry clipped into the dictionaries."""
    p = leaf.plan
    index, _ = leaf.values("rle", data, xp, checks, pages, n, width=p.width[pages])
    entries = sum(0 if d is None else d[2] for d in p.dictionaries)
    past = dictionary_lookup(xp, leaf.rows_in(DICTIONARY), index, leaf.at, leaf.page,
                             leaf.dev["group"], leaf.dev["counts"], leaf.dev["base"], entries,
                             values, out, **kw)
    checks.flag_hit(past, f"{name}: an index past its dictionary")


def _byte_dictionaries(p, xp):
    """Where each codes dictionary entry's bytes lie in the buffer and their sizes, every row
    group's dictionary in turn (their sizes read as the chunks were, their places found
    here); one zero entry when there are none."""
    read = [(e, d) for e, d in zip(p.entries, p.dictionaries, strict=True) if e is not None]
    if not read:
        return xp.zeros(1, xp.int64), xp.zeros(1, xp.int64)
    sizes = xp.asarray(np.concatenate([e for e, _ in read]))
    starts = entry_starts(xp, sizes, [d[0] for _, d in read], [d[2] for _, d in read])
    return starts, sizes.astype(xp.int64)


def _lengths(plan, leaf: _Leaf, data, xp, checks: Checks, n: int, valid):
    """Each row's string length, in the storage's lengths dtype (0 under a null)."""
    p = leaf.plan
    dtype = np.dtype(np.uint64 if p.physical == "INT64" else np.uint32)
    out = xp.zeros(n, dtype)
    plain = leaf.pages([PLAIN])
    if plain.size:  # the values a page's rows hold, end to end from its values' start
        need = leaf.counts[xp.asarray(plain)] * dtype.itemsize
        checks.flag(need > xp.asarray(p.values_end[plain] - p.values_at[plain]),
                    "lengths: a page holds fewer values than rows")
        rows = leaf.rows_in((PLAIN,))
        first = xp.asarray(p.values_at)[leaf.page] + (leaf.at - leaf.row0[leaf.page]) * \
            dtype.itemsize
        first = xp.where(rows, first, 0)
        first = xp.clip(first, 0, max(int(data.size) - dtype.itemsize, 0))
        raw = data[first[:, None] + xp.arange(dtype.itemsize)]
        out = xp.where(rows, xp.ascontiguousarray(raw).view(dtype).reshape(n), out)
    keyed = leaf.pages(DICTIONARY)
    if keyed.size:  # (each row group's dictionary read as its chunk was)
        values = np.concatenate([e for e in p.entries if e is not None] + [np.zeros(1, dtype)])
        _dictionary_values(leaf, data, xp, checks, keyed, n, "lengths", xp.asarray(values), out)
    return xp.where(valid, out, 0).astype(dtype)


def _table_ids(plan, leaf: _Leaf, data, xp, checks: Checks, n: int, valid):
    """Each row's table, as an index into the distinct tables of the column's dictionaries
    (read as the chunks were: -1 where an entry is unreadable, flagged only where a valid
    string names it)."""
    ids = [e for e in leaf.plan.entries if e is not None]
    ids = xp.asarray(np.concatenate(ids + [np.full(1, -1, np.int32)]))
    table_id = xp.empty(n, xp.int32)
    _dictionary_values(leaf, data, xp, checks, leaf.pages(DICTIONARY), n, "table", ids,
                       table_id, every=True)
    checks.flag(valid & (table_id < 0), "a string's table is unreadable")
    return table_id


def _gathered(data, extra, src, code_offsets, xp, ncodes: int):
    """Each row's codes from where its page holds them (``src[i] < 0``: from ``extra[-1 -
    src[i]]``, the rebuilt prefixed values), end to end (on the device in an allocation of the
    decode's padded size, the padding zero)."""
    if xp is np:
        return gather_segments_cpu(data, extra, src, code_offsets)
    padded = xp.empty(padded_size(ncodes), xp.uint8)
    padded[ncodes:] = 0
    codes, error = gather_segments(data, extra, src, code_offsets, out=padded[:ncodes],
                                   size=ncodes)  # (read back with the checks: no wait)
    check_gathered(error)
    return codes


def _blocks(xp, valid, table_id, n: int, where: str):
    """The runs of strings of one table (a null string joins the run before it): their starts
    (host int64, from 0 to ``n``) and tables."""
    rows = xp.flatnonzero(valid)
    if not rows.size:
        return np.array([0, n], np.int64), np.zeros(1, np.int64)
    ids = table_id[rows]
    change = xp.flatnonzero(ids[1:] != ids[:-1]) + 1
    starts = rows[change]
    both = host_array(xp.concatenate([starts, ids[change].astype(xp.int64),
                                      ids[:1].astype(xp.int64)]))
    k = len(starts)
    if k + 1 > MAX_TABLES:
        raise CorruptDataError(f"{where}: {k + 1} runs of one table, more than {MAX_TABLES} "
                               "(a row operation reordered a multi-table array after "
                               "compression: decode it first)")
    return (np.concatenate([[0], both[:k], [n]]).astype(np.int64),
            np.concatenate([both[-1:], both[k : 2 * k]]).astype(np.int64))


def _cuts(plan: ColumnPlan, leaf: _Leaf, xp, code_offsets, lengths) -> tuple:
    """The stored cuts of the strings that have them, as ``(absolute code position, place in
    the string, row)`` (host int64): read on the host, where they are (the strings longer than
    the split size), checked to lie strictly inside their strings and to increase. (A present
    cut lies under a valid string: the leaves' struct levels were checked equal.)"""
    empty = np.zeros(0, np.int64)
    counts = host_array(leaf.counts)
    if not int(counts.sum()):
        return empty, empty, empty
    p = leaf.plan
    width = 8 if plan.leaves[1].physical == "INT64" else 4
    sizes, blobs = [], []
    for k in np.flatnonzero(counts):
        at, end = int(p.values_at[k]), int(p.values_end[k])
        try:
            blob, offsets, _ = native.plain_byte_arrays(plan.buffer[at:end], int(counts[k]))
        except CorruptDataError as exc:
            raise CorruptDataError(f"{p.names[k]}: {exc}") from None
        sizes.append(np.diff(offsets))
        blobs.append(blob)
    sizes, blob = np.concatenate(sizes), np.concatenate(blobs)
    if np.any(sizes % (2 * width)):
        raise CorruptDataError(f"{plan.where}: a string's cuts are not pairs of {width}-byte "
                               "offsets")
    rows = host_array(xp.flatnonzero(leaf.present))
    pairs = blob.view(f"<u{width}").reshape(-1, 2).astype(np.int64)
    cut_rows = np.repeat(rows.astype(np.int64), sizes // (2 * width))
    at = xp.asarray(cut_rows)
    start = code_offsets[at]
    code_start, code_len, length = host_array(
        xp.stack([start, code_offsets[at + 1] - start, lengths[at]]))
    if np.any(pairs <= 0) or np.any(pairs[:, 0] >= code_len) or np.any(pairs[:, 1] >= length):
        raise CorruptDataError(f"{plan.where}: a cut lies outside its string")
    code = code_start + pairs[:, 0]
    same = cut_rows[1:] == cut_rows[:-1]
    if np.any(same & ((np.diff(code) <= 0) | (np.diff(pairs[:, 1]) <= 0))):
        raise CorruptDataError(f"{plan.where}: a string's cuts do not increase")
    return code, pairs[:, 1].copy(), cut_rows
