"""Where an fsst column's pages lie, for a reader that decodes them on the device (issue #24
item 2; :mod:`fsstgpu.formats.page_columns` decodes them).

The column's chunks (its four leaves, ``codes``, ``lengths``, ``cuts``, ``table``, in every row
group) are read into one buffer, or window by window into staging buffers handed to a sink,
by one compiled call a window (:func:`fsstgpu.native.pages.plan_chunks`: a chunk a thread,
without the GIL): each chunk's page headers parsed and checked against the chunk and the
footer, their CRCs checked, each data page reduced to a few numbers (where its definition
levels and its values lie in the buffer, its rows and the first of them in the column, its
values' encoding and, for dictionary indices, their bit width) and its dictionary page read
(the codes' entry sizes, the lengths' values; the tables by
:mod:`~fsstgpu.formats.page_dictionaries`). That is all the host reads of the pages (O(pages
and dictionary entries)); the levels, lengths and indices are the device's to decode.

What it takes (else :class:`~fsstgpu.formats.raw_columns.Unsupported`, and the caller reads the
column another way): pages stored uncompressed, data pages of version 1 (RLE levels) or 2,
definition levels of at most 2 and no repetition; the codes ``DELTA_LENGTH_BYTE_ARRAY``,
``DELTA_BYTE_ARRAY`` or dictionary-encoded (the encodings ``compress_file`` writes), the lengths
plain or dictionary-encoded, the cuts plain, the tables dictionary-encoded.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from fsstgpu.errors import CorruptDataError
from fsstgpu.formats.arrow_read import is_fsst_type
from fsstgpu.formats.page_dictionaries import DictionaryReader
from fsstgpu.formats.raw_columns import Unsupported
from fsstgpu.formats.raw_pages import check_page_crcs, chunk_span
from fsstgpu.formats.rowgroups import Source
from fsstgpu.native.pages import CHUNK_SPEC_FIELDS, PLAN_ERRORS, plan_chunks
from fsstgpu.parallel import usable_cores

__all__ = ["ColumnPlan", "LeafPlan", "plan_column", "plannable"]

#: Parquet's encodings, by number
PLAIN, PLAIN_DICTIONARY, RLE, DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY, RLE_DICTIONARY = (
    0, 2, 3, 6, 7, 8)
DICTIONARY = (PLAIN_DICTIONARY, RLE_DICTIONARY)
_LEAVES = ("codes", "lengths", "cuts", "table")


@dataclass
class LeafPlan:
    """One leaf's data pages across the column's row groups (each array a value a page, in
    order), and its dictionary pages (a row group's, or None)."""

    name: str
    physical: str
    max_def: int
    levels_at: np.ndarray      # where the definition levels' RLE runs start in the buffer
    levels_size: np.ndarray    # ... and their bytes
    values_at: np.ndarray      # where the values start (a dictionary page's indices: after
    values_end: np.ndarray     # their bit width byte) and end
    rows: np.ndarray           # the page's rows (a value each: no repetition)
    row0: np.ndarray           # its first row in the column
    encoding: np.ndarray
    width: np.ndarray          # dictionary indices' bit width (0 for other encodings)
    group: np.ndarray          # its row group's position in the plan
    dictionaries: list = field(default_factory=list)  # a row group's (at, size, count) or None
    names: list = field(default_factory=list)  # each page named for errors
    entries: list = field(default_factory=list)  # a row group's dictionary read on the host
    #                                              (page_dictionaries.DictionaryReader.read)


@dataclass
class ColumnPlan:
    """An fsst column's chunks read into ``buffer`` (host uint8), its leaves' pages planned."""

    field: pa.Field
    buffer: np.ndarray
    rows: int
    group_rows: np.ndarray     # each row group's rows
    leaves: list               # LeafPlan of codes, lengths, cuts, table
    struct_level: int          # the struct's definition level (0 when it cannot be null)
    where: str                 # the column, for errors
    chunks: list = field(default_factory=list)  # (start, size, CRC rows, name) of each chunk
    tables: list = field(default_factory=list)  # the distinct tables its dictionaries name

    def crc_checks(self) -> list:
        """A callable a chunk, each checking its pages' CRCs (zlib's CRC lets the GIL go: a
        reader runs them on its threads while the device decodes the pages).

        Each raises :class:`~fsstgpu.errors.CorruptDataError` naming its chunk (file, row
        group and column) where a page is damaged.
        """
        view = memoryview(self.buffer)
        return [functools.partial(check_page_crcs, view[at : at + size], crcs[:, 1:], where)
                for at, size, crcs, where in self.chunks]

    def check_crcs(self) -> None:
        """Check every page's CRC (a plan made with ``check=False``).

        Raises
        ------
        fsstgpu.CorruptDataError
            Naming the first damaged page's chunk.
        """
        for check in self.crc_checks():
            check()


def plannable(source: Source) -> list[pa.Field]:
    """The fsst columns of an open ``source`` whose chunks are all stored uncompressed: the
    ones :func:`plan_column` may take (it refuses what their pages show otherwise).

    Examples
    --------
    >>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
    >>> from fsstgpu.formats.page_plan import plannable
    >>> from fsstgpu.formats.rowgroups import Source
    >>> path = os.path.join(tempfile.mkdtemp(), "p.parquet")
    >>> pq.write_table(pa.table({"x": [1, 2]}), path)
    >>> with Source(path) as source:
    ...     plannable(source)
    []
    """
    if source.format != "parquet" or not source.num_units or source.leaf_columns is None:
        return []
    meta, out = source.parquet_metadata, []
    names = source.schema.names
    for f in source.schema:
        columns = source.leaf_columns.get(f.name)
        if not is_fsst_type(f.type) or names.count(f.name) != 1 or columns is None \
                or len(columns) != 4:
            continue
        if all(meta.row_group(k).column(j).compression == "UNCOMPRESSED"
               for k in range(source.num_units) for j in columns):
            out.append(f)
    return out


def plan_column(source: Source, fsst_field: pa.Field, *, check: bool = True,
                allocate=None, sink=None) -> ColumnPlan:
    """Read fsst column ``fsst_field``'s chunks of an open Parquet ``source`` into one buffer
    and plan its pages (``check``: their CRCs checked here; else the caller checks them,
    :meth:`ColumnPlan.crc_checks`). ``allocate(n)`` makes the buffer (a
    uint8 NumPy array of ``n`` bytes: pinned memory, for a reader that uploads it), else
    ``numpy.empty``.

    ``sink(at, chunks, total)``: the chunks are not kept but handed over a window at a time
    (consecutive chunks of at most :data:`WINDOW_BYTES`, or one larger chunk), each window
    read and checked first, to lie at ``at`` of a buffer of ``total`` bytes (a device reader's
    upload, which returns a callable that waits until the window's bytes are no longer
    needed); they pass through two staging buffers, and the plan's ``buffer`` keeps only what
    the decode reads on the host (:class:`HostParts`). Host memory then holds two windows and
    what the dictionaries say, not the column.

    Raises
    ------
    Unsupported
        For a layout this reader does not take.
    fsstgpu.CorruptDataError
        For malformed or damaged pages, naming the file, row group and column.

    Examples
    --------
    >>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
    >>> from fsstgpu.formats import compress_file
    >>> from fsstgpu.formats.page_plan import plan_column
    >>> from fsstgpu.formats.rowgroups import Source
    >>> d = tempfile.mkdtemp()
    >>> pq.write_table(pa.table({"s": ["x"] * 10}), os.path.join(d, "s.parquet"))
    >>> _ = compress_file(os.path.join(d, "s.parquet"), os.path.join(d, "f.parquet"),
    ...                   parquet_codec="none")
    >>> with Source(os.path.join(d, "f.parquet")) as source:
    ...     plan = plan_column(source, source.schema.field("s"))
    >>> plan.leaves[0].rows.tolist(), plan.group_rows.tolist()
    ([10], [10])
    """
    storage = fsst_field.type.storage_type if is_fsst_type(fsst_field.type) else None
    if storage is None or not pa.types.is_struct(storage) or \
            [c.name for c in storage] != list(_LEAVES):
        raise Unsupported(f"{fsst_field.name}: not a version 4 fsst storage")
    meta, schema = source.parquet_metadata, source.parquet_metadata.schema
    columns = source.leaf_columns[fsst_field.name]
    leaf_schemas = [schema.column(j) for j in columns]  # (checked before any chunk is read)
    for leaf in leaf_schemas:
        if leaf.max_repetition_level or not 1 <= leaf.max_definition_level <= 2:
            raise Unsupported(f"{source.path}: column {leaf.path}: repetition levels, or "
                              "definition levels not 1-2")
    struct_level = 1 if fsst_field.nullable else 0
    if any(leaf.max_definition_level < struct_level for leaf in leaf_schemas):
        raise Unsupported(f"{fsst_field.name}: a leaf without the struct's level")
    groups = range(source.num_units)
    group_rows = np.array([meta.row_group(k).num_rows for k in groups], np.int64)
    row0 = np.concatenate([[0], np.cumsum(group_rows)])
    specs, names = [], []
    for k in groups:
        for i, j in enumerate(columns):
            col = meta.row_group(k).column(j)
            where = f"{source.path}: row group {k}, column {col.path_in_schema}"
            if col.compression != "UNCOMPRESSED":
                raise Unsupported(f"{where}: pages compressed with {col.compression}")
            if col.num_values != group_rows[k]:
                raise CorruptDataError(f"{where}: {col.num_values} values in "
                                       f"{group_rows[k]} rows")
            file_at, size = chunk_span(col, source.file_bytes, where)
            specs.append((file_at, size, 0, 0, col.num_values, row0[k], k, i,
                          leaf_schemas[i].physical_type == "INT64"))
            names.append(where)
    specs = np.array(specs, np.int64).reshape(-1, len(CHUNK_SPEC_FIELDS))
    starts = np.zeros(len(specs) + 1, np.int64)
    np.cumsum(specs[:, 1], out=starts[1:])
    specs[:, 3] = starts[:-1]  # (each chunk's place in the column's bytes)
    total = int(starts[-1])
    make = allocate or (lambda n: np.empty(n, np.uint8))
    windows = _windows(specs[:, 1], None if sink is None else WINDOW_BYTES)
    if sink is None:  # the chunks kept, end to end
        buffer = make(total)
        slots = None
    else:  # the chunks through two staging buffers to the sink; the host keeps its parts
        buffer = HostParts()
        most = max((int(starts[b] - starts[a]) for a, b in windows), default=0)
        slots = [[make(most), None] for _ in range(min(2, len(windows)))]
    found = _Found(len(columns))
    fd = os.open(source.path, os.O_RDONLY)
    try:
        for w, (a, b) in enumerate(windows):
            at = int(starts[a])
            if slots is None:
                target = buffer
            else:
                slot = slots[w % 2]
                if slot[1] is not None:
                    slot[1]()  # (the sink's copy of the window before has been made)
                target = slot[0]
            window = specs[a:b].copy()
            window[:, 2] = window[:, 3] - (0 if slots is None else at)
            planned = plan_chunks(target, fd, window, check_crc=check,
                                  threads=usable_cores())
            raw = memoryview(target)[int(window[0, 2]) :]  # (the window's bytes)
            found.add(planned, window, a, names, source.path, raw, at, buffer,
                      slots is not None)
            if slots is not None:
                slot[1] = sink(at, slot[0][: int(starts[b]) - at], total)
    finally:
        os.close(fd)
    for slot in slots or ():
        if slot[1] is not None:
            slot[1]()
    plans = []
    for i, (child, leaf) in enumerate(zip(storage, leaf_schemas, strict=True)):
        table = found.rows_of(i)
        plans.append(LeafPlan(child.name, leaf.physical_type, leaf.max_definition_level,
                              *(table[:, c].copy() for c in range(9)),
                              dictionaries=found.dictionaries[i], names=found.names[i],
                              entries=found.entries(i, child.name, leaf.physical_type)))
    plan = ColumnPlan(fsst_field, buffer, int(row0[-1]), group_rows, plans, struct_level,
                      f"{source.path}: column {fsst_field.name}",
                      found.chunks if sink is None and not check else [], found.reader.tables)
    return plan


#: the bytes a sink's window of chunks holds at most (a chunk larger than this alone): the
#: chunks of a window are read and planned at once, a thread a chunk, and handed over in one
#: copy; two windows are staged (host memory: 64 MiB at most beside one large chunk)
WINDOW_BYTES = 32 << 20


def _windows(sizes, most: int | None) -> list[tuple[int, int]]:
    """Runs ``(first, end)`` of consecutive chunks of ``sizes`` totalling at most ``most``
    bytes each (a larger chunk alone); one run of them all for ``most=None``."""
    if most is None or not len(sizes):
        return [(0, len(sizes))] if len(sizes) else []
    runs, first, held = [], 0, 0
    for c, size in enumerate(sizes.tolist()):
        if c > first and held + size > most:
            runs.append((first, c))
            first, held = c, 0
        held += size
    runs.append((first, len(sizes)))
    return runs


class _Found:
    """What :func:`plan_chunks` found of a column's chunks, window after window, by leaf:
    its data pages' rows and names, its dictionaries and their entries, the tables the table
    leaf's dictionaries name, and the cut values (kept on the host with a sink)."""

    def __init__(self, nleaves: int):
        self.parts = [[] for _ in range(nleaves)]  # a leaf's data page rows, a chunk each
        self.dictionaries = [[] for _ in range(nleaves)]
        self.names = [[] for _ in range(nleaves)]
        self.raw_entries = [[] for _ in range(nleaves)]  # a chunk's entries (uint64) or None
        self.table_ids = []  # the table leaf's chunks' table indices (int32) or None
        self.reader = DictionaryReader()
        self.chunks = []  # (start, size, crc rows, name) of each chunk, for a later CRC check

    def add(self, planned, window, first: int, names, path, raw, at: int, parts,
            sunk: bool) -> None:
        """A window's chunks (``window`` their specs, ``first`` the first one's index; ``raw``
        their bytes, at ``at`` in the column's bytes), or the error of its first failed chunk
        raised."""
        rows, dictionaries, entries, entry_at, crcs, error = planned
        if error is not None:
            _raise(error, names[first + error[0]], path)
        nleaves, nchunks = len(self.parts), len(dictionaries)
        # (rows and CRC rows come chunk after chunk: each chunk's found by a search)
        row_at = np.searchsorted(rows[:, 9], np.arange(nchunks + 1))
        crc_at = np.searchsorted(crcs[:, 0], np.arange(nchunks + 1))
        dictionaries = [None if d[0] < 0 else tuple(d) for d in dictionaries.tolist()]
        self.table_ids.extend(self.reader.table_ids(raw, at, [  # (the window's at once)
            d for c, d in enumerate(dictionaries) if (first + c) % nleaves == 3]))
        for c, dictionary in enumerate(dictionaries):
            k = first + c
            i = k % nleaves
            mine = rows[row_at[c] : row_at[c + 1]]
            self.parts[i].append(mine[:, :9])
            self.names[i].extend(f"{names[k]}, page {p}" for p in mine[:, 10].tolist())
            self.dictionaries[i].append(dictionary)
            self.raw_entries[i].append(None if dictionary is None else
                                       entries[entry_at[c] : entry_at[c + 1]])
            if i == 2 and sunk:
                _keep_host_parts(parts, raw, at, mine)
            self.chunks.append((int(window[c, 3]), int(window[c, 1]),
                                crcs[crc_at[c] : crc_at[c + 1]], names[k]))

    def rows_of(self, i: int) -> np.ndarray:
        """Leaf ``i``'s data pages' rows (the first 9 of plan_chunks' columns)."""
        p = self.parts[i]
        return np.concatenate(p) if p else np.zeros((0, 9), np.int64)

    def entries(self, i: int, name: str, physical: str) -> list:
        """Leaf ``i``'s dictionaries' entries a chunk, as the decode reads them: the codes'
        sizes (uint32), the lengths' values (uint64 for ``physical`` INT64, else uint32), the
        tables' indices (int32); None for a chunk without a dictionary."""
        if name == "table":
            return self.table_ids
        if name == "cuts":
            return [None] * len(self.raw_entries[i])
        dtype = np.uint64 if name == "lengths" and physical == "INT64" else np.uint32
        return [None if e is None else e.astype(dtype) for e in self.raw_entries[i]]


def _raise(error, where: str, path) -> None:
    """:func:`plan_chunks`' error as the exception it stands for, naming its chunk."""
    _, kind, page, message = error
    kind = PLAN_ERRORS[kind]
    if kind == "os":
        raise OSError(page, f"{message} (reading {path})")
    if kind == "short_file":
        raise CorruptDataError(f"{path}: {message}")
    named = f"{where}, page {page}" if page >= 0 else \
        f"{where}, dictionary page" if page == -2 else where
    raise (Unsupported if kind == "unsupported" else CorruptDataError)(f"{named}: {message}")


class HostParts:
    """The parts of a column's chunks that the host reads itself, kept by where they lie in
    the column's buffer (the rest went to the device): the cuts' values (the dictionaries are
    read as their chunks are: :mod:`~fsstgpu.formats.page_dictionaries`).
    Sliced as the buffer would be, within one part.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.formats.page_plan import HostParts
    >>> parts = HostParts()
    >>> parts.keep(100, memoryview(b"abcdef"))
    >>> bytes(parts[102:104])
    b'cd'
    """

    def __init__(self):
        self.parts: dict[int, np.ndarray] = {}

    def keep(self, at: int, view) -> None:
        self.parts[at] = np.array(view, np.uint8)  # (a copy: the view's buffer is reused)

    def __getitem__(self, where: slice) -> np.ndarray:
        for at, part in self.parts.items():
            if at <= where.start and where.stop <= at + part.size:
                return part[where.start - at : where.stop - at]
        raise KeyError(f"bytes {where.start}..{where.stop} were not kept on the host")


def _keep_host_parts(parts: HostParts, raw, at: int, rows) -> None:
    """Keep what the decode reads on the host of a cuts chunk (``rows``: its data pages' plan
    rows; ``raw``: bytes at ``at`` in the column's buffer, holding the chunk): its pages'
    values."""
    for start, end in rows[:, 2:4].tolist():
        if end > start:
            parts.keep(start, raw[start - at : end - at])
