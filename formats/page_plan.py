"""Where an fsst column's pages lie, for a reader that decodes them on the device (issue #24
item 2; :mod:`fsstgpu.formats.page_columns` decodes them).

The column's chunks (its four leaves, ``codes``, ``lengths``, ``cuts``, ``table``, in every row
group) are read into one buffer, each chunk's page headers parsed and checked against the chunk
and the footer (:func:`~fsstgpu.formats.raw_pages.chunk_pages`), their CRCs checked, and each
data page reduced to a few numbers: where its definition levels and its values lie in the
buffer, its rows and the first of them in the column, its values' encoding and, for dictionary
indices, their bit width (the first byte of its values); each dictionary page is read
(:mod:`~fsstgpu.formats.page_dictionaries`: the codes' entry sizes, the lengths' values, the
tables). That is all the host reads of the pages (O(pages and dictionary entries)); the levels,
lengths and indices are the device's to decode.

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
from fsstgpu.formats.raw_pages import check_crcs, chunk_pages, chunk_span
from fsstgpu.formats.rowgroups import Source

__all__ = ["ColumnPlan", "LeafPlan", "plan_column", "plannable"]

#: Parquet's encodings, by number
PLAIN, PLAIN_DICTIONARY, RLE, DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY, RLE_DICTIONARY = (
    0, 2, 3, 6, 7, 8)
DICTIONARY = (PLAIN_DICTIONARY, RLE_DICTIONARY)
#: each leaf's data page encodings this reader takes
_TAKES = {"codes": (DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY, *DICTIONARY),
          "lengths": (PLAIN, *DICTIONARY),
          "cuts": (PLAIN,), "table": DICTIONARY}
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
    chunks: list = field(default_factory=list)  # (start, size, pages, name) of each chunk
    tables: list = field(default_factory=list)  # the distinct tables its dictionaries name

    def crc_checks(self) -> list:
        """A callable a chunk, each checking its pages' CRCs (zlib's CRC lets the GIL go: a
        reader runs them on its threads while the device decodes the pages).

        Each raises :class:`~fsstgpu.errors.CorruptDataError` naming its chunk (file, row
        group and column) where a page is damaged.
        """
        view = memoryview(self.buffer)
        return [functools.partial(check_crcs, view[at : at + size], pages, where)
                for at, size, pages, where in self.chunks]

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

    ``sink(at, chunk, total)``: the chunks are not kept but handed over one by one as they are
    read (each checked first), to lie at ``at`` of a buffer of ``total`` bytes (a device
    reader's upload, which returns a callable that waits until the chunk's bytes are no longer
    needed); they pass through two staging buffers of the largest chunk's size, and the plan's
    ``buffer`` keeps only what the decode reads on the host (:class:`HostParts`). Host memory
    then holds two chunks and what the dictionaries say, not the column.

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
    spans, names = [], []
    for k in groups:
        for j in columns:
            col = meta.row_group(k).column(j)
            where = f"{source.path}: row group {k}, column {col.path_in_schema}"
            if col.compression != "UNCOMPRESSED":
                raise Unsupported(f"{where}: pages compressed with {col.compression}")
            spans.append(chunk_span(col, source.file_bytes, where))
            names.append(where)
    starts = np.zeros(len(spans) + 1, np.int64)
    np.cumsum([size for _, size in spans], out=starts[1:])
    group_rows = np.array([meta.row_group(k).num_rows for k in groups], np.int64)
    row0 = np.concatenate([[0], np.cumsum(group_rows)])
    make = allocate or (lambda n: np.empty(n, np.uint8))
    if sink is None:  # the chunks kept, end to end
        buffer = make(int(starts[-1]))
        slots = None
    else:  # the chunks through two staging buffers to the sink; the host keeps its parts
        buffer = HostParts()
        slots = [[make(max((size for _, size in spans), default=0)), None] for _ in range(2)]
    leaves = [[[], [], [], []] for _ in columns]  # each leaf's page rows, dictionaries, page
    dictionaries = DictionaryReader()               # names, dictionaries read
    chunks = []
    fd = os.open(source.path, os.O_RDONLY)
    try:
        for c, (file_at, size) in enumerate(spans):
            k, i = divmod(c, 4)
            at, where = int(starts[c]), names[c]
            col = meta.row_group(k).column(columns[i])
            if col.num_values != group_rows[k]:
                raise CorruptDataError(f"{where}: {col.num_values} values in "
                                       f"{group_rows[k]} rows")
            if slots is None:
                raw = memoryview(buffer)[at : at + size]
            else:
                slot = slots[c % 2]
                if slot[1] is not None:
                    slot[1]()  # (the sink's copy of the chunk before has been made)
                raw = memoryview(slot[0])[:size]
            _read(fd, file_at, raw, source.path)
            got = chunk_pages(raw, col.num_values, where)
            if slots is not None and check:
                check_crcs(raw, got, where)
            chunks.append((at, size, got, where))
            rows, dictionary = _chunk_rows(storage[i].name, raw, at, got, int(row0[k]),
                                           int(row0[k + 1]), k, where)
            leaves[i][0].extend(rows)
            leaves[i][1].append(dictionary)
            leaves[i][2].extend(f"{where}, page {p}" for p, page in enumerate(got)
                                if page.kind != "dictionary")
            leaves[i][3].append(dictionaries.read(storage[i].name, leaf_schemas[i].physical_type,
                                                  raw, at, dictionary, where))
            if slots is not None:
                _keep_host_parts(buffer, storage[i].name, raw, at, rows)
                slot[1] = sink(at, slot[0][:size], int(starts[-1]))
    finally:
        os.close(fd)
    for slot in slots or ():
        if slot[1] is not None:
            slot[1]()
    plans = []
    for i, (child, leaf) in enumerate(zip(storage, leaf_schemas, strict=True)):
        table = np.array(leaves[i][0], np.int64).reshape(-1, 9)
        plans.append(LeafPlan(child.name, leaf.physical_type, leaf.max_definition_level,
                              *(table[:, c].copy() for c in range(9)),
                              dictionaries=leaves[i][1], names=leaves[i][2],
                              entries=leaves[i][3]))
    plan = ColumnPlan(fsst_field, buffer, int(row0[-1]), group_rows, plans, struct_level,
                      f"{source.path}: column {fsst_field.name}",
                      chunks if slots is None else [], dictionaries.tables)
    if check and slots is None:
        plan.check_crcs()
    return plan


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


def _keep_host_parts(parts: HostParts, name: str, raw, at: int, rows) -> None:
    """Keep what the decode reads on the host of a chunk (``raw``, at ``at`` in the column's
    buffer): the values of its cuts' pages."""
    if name == "cuts":
        for row in rows:
            if row[3] > row[2]:
                parts.keep(row[2], raw[row[2] - at : row[3] - at])


def _read(fd: int, file_at: int, view, path) -> None:
    """``view``'s bytes from the file at ``file_at`` (``os.preadv``)."""
    got, size = 0, len(view)
    while got < size:
        n = os.preadv(fd, [view[got:]], file_at + got)
        if n <= 0:
            raise CorruptDataError(f"{path}: the file ends {size - got} bytes into a column "
                                   "chunk")
        got += n


def _chunk_rows(name: str, raw, at: int, pages, first: int, last: int, k: int,
                where: str) -> tuple[list, tuple | None]:
    """A chunk's data pages (``raw``: its bytes, at ``at`` in the column's buffer; rows
    ``first`` to ``last`` of row group ``k``) as rows of :class:`LeafPlan`'s arrays, and its
    dictionary page's (start, size, count), or None."""
    rows, dictionary, start = [], None, first
    for p, page in enumerate(pages):
        body = at + page.start
        page_where = f"{where}, page {p}"
        if page.size != page.uncompressed_size:  # (the chunk's codec: none)
            raise CorruptDataError(f"{page_where}: a stored page of {page.size} bytes, its "
                                   f"header says {page.uncompressed_size}")
        if page.kind == "dictionary":
            if page.encoding not in (PLAIN, PLAIN_DICTIONARY):
                raise Unsupported(f"{page_where}: a dictionary page of encoding "
                                  f"{page.encoding}")
            dictionary = (body, page.size, page.num_values)
            continue
        if page.encoding not in _TAKES[name]:
            raise Unsupported(f"{page_where}: values of encoding {page.encoding}")
        end = body + page.size
        if page.kind == "data":
            if page.levels_encoding != RLE:
                raise Unsupported(f"{page_where}: levels of encoding {page.levels_encoding}")
            if page.size < 4:
                raise CorruptDataError(f"{page_where}: a page of {page.size} bytes has no "
                                       "levels")
            nlevels = int.from_bytes(raw[page.start : page.start + 4], "little")
            if nlevels > page.size - 4:
                raise CorruptDataError(f"{page_where}: {nlevels} bytes of levels in a page of "
                                       f"{page.size}")
            levels = (body + 4, nlevels)
        else:
            if page.rep_levels_size:
                raise CorruptDataError(f"{page_where}: repetition levels in a top-level column")
            levels = (body, page.levels_size)
        values = levels[0] + levels[1]
        width = 0
        if page.encoding in DICTIONARY:
            if values >= end:
                raise CorruptDataError(f"{page_where}: no room for the indices' bit width")
            if dictionary is None:
                raise CorruptDataError(f"{page_where}: dictionary indices without a dictionary "
                                       "page")
            width = raw[values - at]
            if width > 32:
                raise CorruptDataError(f"{page_where}: dictionary indices of {width} bits")
            values += 1
        rows.append((*levels, values, end, page.num_values, first, page.encoding, width, k))
        first += page.num_values
    if first != last:
        raise CorruptDataError(f"{where}: its pages hold {first - start} rows, not "
                               f"{last - start}")
    return rows, dictionary
