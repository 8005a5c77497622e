"""Reading compressed files: :func:`read_table` (a host Table, like ``pyarrow.parquet.read_table``:
``columns=``, ``filters=``, ``row_groups=``), :func:`open_reader` (a ``RecordBatchReader`` of
decoded batches, for engines that stream) and :func:`read_table_device` (the strings in GPU
memory). Row groups are read ahead in parallel (:mod:`fsstgpu.formats.unit_reads`), pruned by
``filters=`` (:mod:`fsstgpu.formats.pruning`), and decoded by
:class:`fsstgpu.formats.decoding.Decoder`.
"""

from __future__ import annotations

import itertools

import pyarrow as pa

from fsstgpu.columns import joined_chunks
from fsstgpu.device import resolve_device
from fsstgpu.errors import CorruptDataError
from fsstgpu.formats.decoding import Decoder, restored_schema
from fsstgpu.formats.device_reader import read_to_device
from fsstgpu.formats.nested import child_fields, is_container, map_leaves, with_children
from fsstgpu.formats.pruning import normalized_filters, row_filter, selected_units
from fsstgpu.formats.rowgroups import Source, check_input, reading, rows_only
from fsstgpu.formats.selection import ColumnSelectionError
from fsstgpu.formats.unit_reads import (
    WHOLE,
    parallel_units,
    row_group_runs,
    run_label,
    run_units,
)
from fsstgpu.types import is_view, large_type

__all__ = ["device_columns", "open_reader", "read_table", "read_table_device"]


def read_table(path, device="auto", *, columns=None, filters=None, row_groups=None):
    """Read a Parquet / Arrow IPC file, decompressing its fsst columns.

    Parameters
    ----------
    path : str or os.PathLike
    device : {"auto", "cpu", "gpu"}
        Where the fsst columns decode (``"auto"``: on the GPU when one is usable,
        ``FSSTGPU_DEVICE`` overriding). The result is a host ``pyarrow.Table`` either way,
        exactly like the one :func:`decompress_file` would write; :func:`read_table_device`
        leaves the strings in GPU memory.
    columns : list of str, optional
        Only these top-level columns, in this order (as ``pyarrow.parquet.read_table``; a
        dotted path into a struct, which pyarrow also takes, is not: read the struct).
    filters : list or pyarrow.compute.Expression, optional
        Only the rows these select, as ``pyarrow.parquet.read_table`` takes them: ``(column, op,
        value)`` tuples, a list of them (all must hold) or a list of such lists (any); a Parquet
        file's row groups that cannot match are not read, by the bounds of each fsst column's
        strings that ``compress_file`` records and Parquet's own statistics of the others
        (:mod:`fsstgpu.formats.pruning`). An Expression filters rows but prunes nothing.
    row_groups : list of int, optional
        Only these row groups (record batches of an IPC file), in this order.

    Raises
    ------
    DeviceError
        When ``device="gpu"`` and no GPU is usable.
    CorruptDataError
        When the file is unreadable or its codes do not decode.
    ColumnSelectionError
        When ``columns`` or ``filters`` name a column the file lacks (a ValueError).
    ValueError
        For a malformed filter, or a row group the file lacks.
    TypeError
        When ``row_groups`` is not a sequence of integers.

    Examples
    --------
    >>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
    >>> from fsstgpu.formats import compress_file, read_table
    >>> d = tempfile.mkdtemp()
    >>> pq.write_table(pa.table({"s": ["x", None, "yz"], "n": [1, 2, 3]}),
    ...                os.path.join(d, "a.parquet"))
    >>> _ = compress_file(os.path.join(d, "a.parquet"), os.path.join(d, "b.parquet"))
    >>> read_table(os.path.join(d, "b.parquet")).column("s").to_pylist()
    ['x', None, 'yz']
    >>> read_table(os.path.join(d, "b.parquet"), columns=["s"],
    ...            filters=[("s", ">=", "y")]).to_pylist()
    [{'s': 'yz'}]
    """
    path = check_input(path)
    dev = resolve_device(device)
    with Source(path) as source:
        plan = _ReadPlan(source, columns, filters, row_groups)
        units = list(plan.tables(dev, whole=True))
    if not plan.columns:  # columns=[]: rows without columns (concat_tables drops them)
        return rows_only(sum(u.num_rows for u in units), plan.schema.metadata)
    # (not schema.empty_table(): pyarrow cannot make an empty list of an extension type)
    return pa.concat_tables(units) if units else pa.Table.from_batches([], schema=plan.schema)


def open_reader(path, *, columns=None, filters=None, row_groups=None,
                device="cpu") -> pa.RecordBatchReader:
    """Stream a Parquet / Arrow IPC file's record batches, fsst columns decoded, one row group
    (record batch) at a time, one of no rows included (so ``read_all()`` is :func:`read_table`'s
    Table): a ``pyarrow.RecordBatchReader`` that engines consume lazily.

    ``pl.from_arrow(reader)`` (polars), ``duckdb.from_arrow(reader)`` (DuckDB) and
    ``pyarrow.dataset.Scanner.from_batches`` take it as it is. Memory holds a few row groups
    at a time, whatever the file size. The file stays open until the reader is read to its end
    or dropped (``del reader``): pyarrow's ``close()`` (and ``with``) of a reader made from
    Python batches does not reach them (pyarrow 26), so its files and reading threads stay
    until then.

    Parameters
    ----------
    path, columns, filters, row_groups
        As for :func:`read_table`.
    device : {"cpu", "auto", "gpu"}
        Where the fsst columns decode (the batches are host batches either way); default the
        CPU, whose decode runs beside the reading.

    Examples
    --------
    >>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
    >>> from fsstgpu.formats import compress_file, open_reader
    >>> d = tempfile.mkdtemp()
    >>> pq.write_table(pa.table({"s": ["ab", "cd", "ef"]}), os.path.join(d, "a.parquet"),
    ...                row_group_size=2)
    >>> _ = compress_file(os.path.join(d, "a.parquet"), os.path.join(d, "b.parquet"))
    >>> reader = open_reader(os.path.join(d, "b.parquet"))
    >>> [batch.column(0).to_pylist() for batch in reader]
    [['ab', 'cd'], ['ef']]
    """
    path = check_input(path)
    dev = resolve_device(device)
    source = Source(path)
    try:
        plan = _ReadPlan(source, columns, filters, row_groups)
    except BaseException:
        source.close()
        raise

    def batches():
        with source:
            for table in plan.tables(dev):
                yield from _unit_batches(table)

    return pa.RecordBatchReader.from_batches(plan.schema, batches())


def _unit_batches(table: pa.Table) -> list:
    """``table.to_batches()``, but a unit of no rows (an empty row group or record batch, or
    one whose rows the filter all left out) as one batch of no rows, which ``to_batches()``
    drops: the reader yields one batch per unit read, as :func:`read_table` keeps a chunk per
    unit (so ``read_all()`` is its Table) and pyarrow's IPC readers keep empty batches."""
    batches = table.to_batches()
    if batches or table.num_rows:
        return batches
    # a filtered column may have no chunk; pa.nulls builds an empty array of any type (an
    # empty nested array of an extension type cannot be made by pa.array or combine_chunks)
    empty = [col.chunk(0).slice(0, 0) if col.num_chunks else pa.nulls(0, col.type)
             for col in table.columns]
    return [pa.RecordBatch.from_arrays(empty, schema=table.schema)]


class _ReadPlan:
    """What a read with ``columns=``, ``filters=`` and ``row_groups=`` reads of ``source``,
    and its decoded units (:meth:`tables`), each filtered and with the columns asked for."""

    def __init__(self, source: Source, columns, filters, row_groups):
        self.source = source
        names = source.schema.names
        if isinstance(columns, str):
            columns = [c.strip() for c in columns.split(",")]
        elif columns is not None and (isinstance(columns, (bytes, bytearray))
                                      or not hasattr(columns, "__iter__")):
            # (compress_file's words: columns=5 was "'int' object is not iterable", b"s" the
            # columns 115)
            raise TypeError(f"columns must be a str or a sequence of str, not "
                            f"{type(columns).__name__}: {columns!r}")
        self.columns = list(names) if columns is None else list(columns)
        self.expression = row_filter(filters)
        conjunctions = normalized_filters(filters)
        needed = set(self.columns)
        if conjunctions is not None:
            needed |= {t[0] for conj in conjunctions for t in conj}
        elif self.expression is not None:
            needed = set(names)  # an Expression's columns cannot be listed
        missing = [c for c in list(needed) if c not in names]
        if missing:
            raise ColumnSelectionError(f"{source.path}: no column named {missing[0]!r} (it has "
                                       f"{', '.join(names)})")
        self.read = [n for n in names if n in needed]  # the file's order, each once
        self.units = selected_units(source, row_groups, filters)
        restored = restored_schema(source.schema)
        self.full = pa.schema([restored.field(n) for n in self.read],
                              metadata=restored.metadata)
        self.schema = pa.schema([restored.field(n) for n in self.columns],
                                metadata=restored.metadata)
        if self.expression is not None:
            # bound to the columns' types before any unit is read, as pyarrow binds it: a filter
            # they cannot take (`in []` on a string) was otherwise an error only where a unit
            # survived pruning (an IPC file), 0 rows where none did (a Parquet file)
            _filtered(pa.table([pa.nulls(0, f.type) for f in self.full], schema=self.full),
                      self.expression)

    def tables(self, device: str, *, whole: bool = False):
        """Yield each unit read, as a Table of :attr:`schema`; ``whole``: the caller keeps
        every unit (a whole-file read), so all are read at once, not a few ahead."""
        source = self.source
        if not self.read:  # columns=[] and no filter: each unit's rows, nothing decoded
            yield from self._row_counts()
            return
        decoder = Decoder(source, source.format, device, in_memory=True)
        if (device == "cpu" and whole and source.format == "parquet"
                and len(set(source.schema.names)) == len(source.schema.names)):
            yield from self._run_tables(decoder)
            return
        # On the CPU, columns decode on the reading threads too (the codec's own pool is
        # shared by all of them); GPU decodes stay on this thread.
        early = ((lambda k, name, col: decoder.decode(name, col, k)) if device == "cpu"
                 else None)
        order = self.units if self.units is not None else itertools.count()
        units = parallel_units(source, convert=early, columns=self.read, units=self.units,
                               ahead=WHOLE if whole else None)
        for k, unit in zip(order, units, strict=False):  # order: count() when all
            cols = [decoder.finish(name, unit[name] if early
                                   else decoder.decode(name, unit[name], k))
                    for name in self.read]
            yield self._table(cols, f"row group {k}")

    def _run_tables(self, decoder: Decoder):
        """:meth:`tables` of a whole-file CPU read: consecutive small row groups read by one
        thread a column and an fsst column's decoded as one column (one check and one decode
        call for them: their fixed costs, Python holding the GIL, paid once), each row group
        still a chunk; an fsst column re-encoded as a dictionary (``redict``), or a run that
        does not decode as one (it names no row group), decoded row group by row group."""
        source = self.source
        joinable = decoder.fsst - set(decoder.redict)

        def decode(run, name, parts):
            if name in joinable and len(run) > 1:
                try:
                    return [decoder.decode(name, joined_chunks(parts), run[0])]
                except CorruptDataError:
                    pass  # named below, row group by row group
            return [decoder.decode(name, part, k) for k, part in zip(run, parts, strict=True)]

        runs = row_group_runs(source, units=self.units)
        for run, unit in run_units(source, runs, self.read, None, WHOLE, decode):
            cols = [joined_chunks([decoder.finish(name, d) for d in unit[name]])
                    for name in self.read]
            yield self._table(cols, run_label(run))

    def _row_counts(self):
        """Each unit read as its row count alone (a table of no column): a Parquet row
        group's from the footer, a record batch's from the batch."""
        source = self.source
        if source.format == "parquet":
            units = range(source.num_units) if self.units is None else self.units
            counts = (source.parquet_metadata.row_group(k).num_rows for k in units)
        else:
            chosen = (source.units() if self.units is None
                      else (source.unit(k) for k in self.units))
            counts = (unit.num_rows for unit in chosen)
        for rows in counts:
            yield rows_only(rows, self.schema.metadata)

    def _table(self, cols: list, where: str) -> pa.Table:
        """The decoded columns of a unit (``where``: its row groups) as a Table of
        :attr:`schema`, filtered."""
        with reading(self.source.path, f"{where}: "):  # columns read apart: lengths differ
            table = pa.Table.from_arrays(cols, schema=self.full)
        if self.expression is not None:
            table = _filtered(table, self.expression)
            if not table.num_rows:  # pyarrow's filter leaves an empty unit no chunk at all
                table = pa.Table.from_batches(_unit_batches(table))
        return table.select(self.columns)


def _filtered(table: pa.Table, expression) -> pa.Table:
    """``table.filter(expression)``; its columns of view types (``string_view``,
    ``binary_view``), which pyarrow 26 has no filter or take kernel for (``array_filter``
    refused them whatever column the filter named), filtered as their large types and cast
    back, also where they are leaves of list, struct and map columns (leaf by leaf: a cast of
    the whole column refuses the nulls Parquet reads under a null parent's required field)."""
    views = {i: dict(_view_leaves(field.type)) for i, field in enumerate(table.schema)}
    views = {i: kinds for i, kinds in views.items() if kinds}
    if not views:
        return _apply(table, expression)
    wide = table
    for i in views:
        wide = _with_leaves(wide, i, table.column(i), lambda key, v: v.cast(large_type(v.type)),
                            is_view)
    out = _apply(wide, expression)
    for i, kinds in views.items():
        out = _with_leaves(out, i, out.column(i),
                           lambda key, v, kinds=kinds: v.cast(kinds[key]) if key in kinds else v,
                           lambda type_: True, table.field(i))
    return out


def _apply(table: pa.Table, expression) -> pa.Table:
    """``table.filter(expression)``, a filter its columns cannot take (a struct compared with a
    str, ``not in []``: pyarrow's ArrowNotImplementedError / ArrowTypeError when it binds) a
    ValueError, as read_table documents for a malformed filter."""
    try:
        return table.filter(expression)
    except (pa.ArrowNotImplementedError, pa.ArrowTypeError) as exc:
        raise ValueError(f"filters {expression} do not apply to the file's columns: "
                         f"{exc}") from None


def _view_leaves(type_: pa.DataType, key: tuple = ()):
    """``(key, type)`` of each view leaf of ``type_`` (itself, or in its lists, structs and
    maps; ``key`` as :func:`~fsstgpu.formats.nested.map_leaves` gives it)."""
    if is_view(type_):
        yield key, type_
    elif is_container(type_):
        for k, field in enumerate(child_fields(type_)):
            yield from _view_leaves(field.type, (*key, k))


def _with_leaves(table: pa.Table, i: int, col: pa.ChunkedArray, leaf, wanted,
                 field: pa.Field | None = None) -> pa.Table:
    """``table`` with column ``i`` ``col``'s chunks with their leaves mapped (``map_leaves``),
    as ``field`` when given (not a cast: that refuses the nulls under required fields too)."""
    chunks = [map_leaves(chunk, leaf, wanted) for chunk in col.chunks]
    if field is None:
        field = table.field(i).with_type(chunks[0].type if chunks else _unviewed(col.type))
    return table.set_column(i, field, pa.chunked_array(chunks, field.type))


def _unviewed(type_: pa.DataType) -> pa.DataType:
    """``type_`` with its view leaves as their large types (containers as ``map_leaves``
    rebuilds them)."""
    if is_view(type_):
        return large_type(type_)
    if not is_container(type_):
        return type_
    return with_children(type_, [f.with_type(_unviewed(f.type)) for f in child_fields(type_)])


def read_table_device(path) -> dict:
    """Read a Parquet / Arrow IPC file with its fsst columns decoded straight into GPU memory.

    Returns
    -------
    dict
        Column name -> :class:`fsstgpu.DeviceStringArray` (each fsst column, all row groups in
        one array; dictionary columns as their plain values),
        :class:`fsstgpu.formats.nested_device.DeviceNestedArray` (each list / struct / map
        column with fsst leaves: decoded on the GPU, containers and leaves in Arrow layout in
        device memory; one whose types the device layout does not take, such as a dictionary
        leaf, is a host column decoded on the CPU) or ``pyarrow.ChunkedArray`` (every other
        column, on the host, with the type it was written with).

    Raises
    ------
    DeviceError
        Without a usable GPU.
    CorruptDataError
        When the file is unreadable or its codes do not decode.

    Examples
    --------
    >>> import os, tempfile, fsstgpu, pyarrow as pa, pyarrow.parquet as pq
    >>> from fsstgpu.formats import compress_file, read_table_device
    >>> d = tempfile.mkdtemp()
    >>> pq.write_table(pa.table({"s": ["x", None, "yz"], "n": [1, 2, 3]}),
    ...                os.path.join(d, "a.parquet"))
    >>> _ = compress_file(os.path.join(d, "a.parquet"), os.path.join(d, "b.parquet"))
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     cols = read_table_device(os.path.join(d, "b.parquet"))
    ...     assert cols["s"].to_arrow().to_pylist() == ["x", None, "yz"]  # decoded on the GPU
    ...     assert cols["n"].to_pylist() == [1, 2, 3]                     # a host column
    """
    return device_columns(path)


def device_columns(path, *, nested_on_device: bool = True) -> dict:
    """:func:`read_table_device`; with ``nested_on_device=False`` its nested fsst columns are
    left compressed on the host (restored to their written type, as every host column the
    reader gives), for a caller that joins them over several files before placing them
    (:func:`fsstgpu.formats.datasets.read_dataset_device`)."""
    path = check_input(path)
    resolve_device("gpu")
    with Source(path) as source:
        return read_to_device(source, nested_on_device=nested_on_device)
