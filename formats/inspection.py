"""Describe a Parquet / Arrow IPC file: per column codec, sizes, ratio and symbol tables.

The ``fsstgpu inspect`` command prints what :func:`inspect_file` returns.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from fsstgpu.errors import CorruptDataError
from fsstgpu.formats.arrow import is_fsst_type
from fsstgpu.formats.arrow_storage import from_extension_array
from fsstgpu.formats.nested import child_fields, holds_fsst, is_container, plain_type_of
from fsstgpu.formats.nested_device import checked_leaves
from fsstgpu.formats.parquet_options import input_leaf, leaf_paths
from fsstgpu.formats.rowgroups import Source, check_input, reading
from fsstgpu.symbol_table import SymbolTable

__all__ = ["inspect_file"]


def inspect_file(path) -> dict:
    """Describe a Parquet / Arrow IPC file: per column codec, sizes, ratio, symbol tables.

    Returns
    -------
    dict
        ``path``, ``format``, ``file_bytes``, ``rows``, ``units`` (row groups or record
        batches), ``unit_rows`` (rows per unit), ``schema_metadata`` (keys),
        ``ipc_compression`` (an Arrow IPC file's body codec: ``"lz4"``, ``"zstd"`` or
        ``"uncompressed"``, as its first dictionary or record batch message has it, the reads
        checking every one; None for Parquet, and for an IPC file without batches), and
        ``columns``: a list of dicts with ``name``, ``type`` (the original type),
        ``stored_type``, ``codec`` (``"fsst"``, ``"fsst-nested"`` for a list / struct / map
        column with fsst leaves, or ``"none"``), ``stored_bytes`` (bytes in the file: Parquet
        column-chunk sizes, a nested column's leaves summed, each chunk's range checked against
        the file's; None for Arrow IPC, whose bodies are compressed whole and hold a dictionary
        once, so that a column's bytes are not told apart), ``null_count``; for fsst and
        fsst-nested columns also ``string_bytes`` (uncompressed), ``codes_bytes``, ``ratio``
        (string bytes / (codes + table bytes, each distinct table once; ``fsstgpu compress``'s
        "string / codes ratio" leaves the tables out), ``file_ratio`` (string bytes / stored
        bytes; NaN for IPC) and ``tables``: one summary per symbol table (``symbols``,
        ``bytes``, ``mean_symbol_length``, ``by_length``: symbol counts for lengths 1..8,
        ``longest``: up to 8 of the longest symbols, as Python ``repr`` strings; the column's
        distinct tables, every row group's, in order of first use). A fsst-nested column's
        figures are its fsst leaves' together (``file_ratio``: over the whole column's stored
        bytes), and its ``leaves`` hold one such dict per fsst leaf, depth first: ``name`` the
        leaf's path joined by dots (``"m.value"``), ``path`` the same as a list,
        ``stored_bytes`` its own column chunks' (None for IPC), ``null_count`` its own. Other
        Parquet columns have ``parquet_codec``.

    Raises
    ------
    CorruptDataError
        When the file is not a readable Parquet / Arrow IPC file, or its codes are corrupt
        (those of nested fsst leaves too; structurally checked, as a reader checks them before
        it decodes).

    Examples
    --------
    >>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
    >>> from fsstgpu.formats import compress_file, inspect_file
    >>> d = tempfile.mkdtemp()
    >>> pq.write_table(pa.table({"s": ["abc"] * 10}), os.path.join(d, "a.parquet"))
    >>> _ = compress_file(os.path.join(d, "a.parquet"), os.path.join(d, "b.parquet"))
    >>> [c["codec"] for c in inspect_file(os.path.join(d, "b.parquet"))["columns"]]
    ['fsst']
    >>> m = pa.array([[("k", "abc")]] * 10, pa.map_(pa.string(), pa.string()))
    >>> pq.write_table(pa.table({"m": m}), os.path.join(d, "m.parquet"))
    >>> _ = compress_file(os.path.join(d, "m.parquet"), os.path.join(d, "m.arrow"))
    >>> info = inspect_file(os.path.join(d, "m.arrow"))
    >>> info["ipc_compression"], [leaf["name"] for leaf in info["columns"][0]["leaves"]]
    ('zstd', ['m.key', 'm.value'])
    """
    path = check_input(path)
    with Source(path) as source:
        schema = source.schema
        cols = {f.name: _column_summary(f) for f in schema}
        # each fsst column's and nested fsst leaf's distinct tables (by their bytes), by
        # (column, leaf index): a dotted leaf name can be a top-level column's too
        seen: dict[tuple, dict[bytes, SymbolTable]] = {
            (name, k): {} for name, info in cols.items()
            for k in (None, *range(len(info.get("leaves", ()))))}
        unit_rows = []
        for k, unit in enumerate(source.units()):
            unit_rows.append(unit.num_rows)
            for f in schema:
                col, info = unit.column(f.name), cols[f.name]
                info["null_count"] += col.null_count
                if is_fsst_type(f.type):
                    with reading(path, f"unit {k}, column {f.name!r}: "):
                        carr = from_extension_array(col)
                    _count(info, carr, seen[f.name, None])
                elif holds_fsst(f.type):  # its fsst leaves checked as a top-level column is
                    with reading(path, f"unit {k}, column {f.name!r}: "):
                        for chunk in col.chunks:
                            leaves = checked_leaves(chunk, f.type)
                            for j, (leaf, carr) in enumerate(zip(info["leaves"], leaves,
                                                                 strict=True)):
                                leaf["null_count"] += carr.null_count
                                _count(leaf, carr, seen[f.name, j])
        if source.parquet_metadata is not None:
            # after the reads, which check every column chunk's metadata: pyarrow aborts the
            # process on some damage there when asked from Python first (parquet_options.py)
            with reading(path):
                _check_chunk_ranges(source.parquet_metadata, source.file_bytes)
                _add_parquet_sizes(source.parquet_metadata, cols, source.leaf_columns,
                                   {f.name: _leaf_owners(f.type) for f in schema
                                    if cols[f.name]["codec"] == "fsst-nested"})
        else:  # an IPC file's bodies (compressed, dictionaries once) are not told apart
            for info in cols.values():
                for part in (info, *info.get("leaves", ())):
                    part["stored_bytes"] = None
    for f in schema:
        info = cols[f.name]
        if is_fsst_type(f.type):
            _finish(info, list(seen[f.name, None].values()) or list(f.type.tables))
        elif info["codec"] == "fsst-nested":
            every: dict[bytes, SymbolTable] = {}  # the leaves' tables, each once
            for j, (_, leaf_type) in enumerate(_fsst_leaves(f.type)):
                leaf = info["leaves"][j]
                tables = list(seen[f.name, j].values()) or list(leaf_type.tables)
                _finish(leaf, tables)
                for t in tables:
                    every.setdefault(t.to_bytes(), t)
                for key in ("string_bytes", "codes_bytes"):
                    info[key] += leaf[key]
            _finish(info, list(every.values()))
    return {
        "path": str(path),
        "format": source.format,
        "file_bytes": source.file_bytes,
        "rows": sum(unit_rows),
        "units": len(unit_rows),
        "unit_rows": unit_rows,
        "schema_metadata": sorted(k.decode("utf-8", "replace")
                                  for k in (schema.metadata or {})),
        # (read by Source from a message whose flatbuffer pyarrow verified, bounds-checked:
        # ipc_compression.py; a damaged body or codec fails the batch reads above)
        "ipc_compression": source.ipc_compression if source.format != "parquet" else None,
        "columns": list(cols.values()),
    }


def _column_summary(field: pa.Field) -> dict:
    fsst = is_fsst_type(field.type)
    if holds_fsst(field.type):  # fsst leaves in a list / struct / map (formats/nested.py)
        leaves = []
        for names, leaf_type in _fsst_leaves(field.type, (field.name,)):
            leaves.append({"name": ".".join(names), "path": list(names),
                           "type": str(leaf_type.original_type),
                           "stored_type": str(leaf_type.storage_type), "codec": "fsst",
                           "stored_bytes": 0, "null_count": 0,
                           "string_bytes": 0, "codes_bytes": 0, "tables": []})
        return {"name": field.name, "type": str(plain_type_of(field.type)),
                "stored_type": str(field.type), "codec": "fsst-nested", "stored_bytes": 0,
                "null_count": 0, "string_bytes": 0, "codes_bytes": 0, "tables": [],
                "leaves": leaves}
    info = {"name": field.name,
            "type": str(field.type.original_type if fsst else field.type),
            "stored_type": str(field.type.storage_type if fsst else field.type),
            "codec": "fsst" if fsst else "none",
            "stored_bytes": 0, "null_count": 0}
    if fsst:
        info.update(string_bytes=0, codes_bytes=0, tables=[])
    return info


def _leaf_children(type_: pa.DataType, path: tuple = ()) -> list[tuple[tuple, pa.DataType]]:
    """Each child of a nested type that is no container (an fsst leaf or a plain one), as (its
    path of field names, its type), depth first: the order in which
    :func:`~fsstgpu.formats.nested_device.checked_leaves` gives the fsst ones and in which
    Parquet stores their columns."""
    found = []
    for child in child_fields(type_):
        names = (*path, child.name)
        if is_fsst_type(child.type) or not is_container(child.type):
            found.append((names, child.type))
        else:
            found.extend(_leaf_children(child.type, names))
    return found


def _fsst_leaves(type_: pa.DataType, path: tuple = ()) -> list[tuple[tuple, pa.DataType]]:
    """The fsst leaves of a nested type, each as (its path of field names, its type), depth
    first (:func:`_leaf_children`' order)."""
    return [(names, t) for names, t in _leaf_children(type_, path) if is_fsst_type(t)]


def _leaf_owners(type_: pa.DataType) -> list[int | None]:
    """For each Parquet leaf column of a nested column of ``type_`` (in order), the index of
    the fsst leaf (:func:`_fsst_leaves`) that it stores, or None (a leaf of another type)."""
    owners: list[int | None] = []
    found = 0
    for names, t in _leaf_children(type_):
        columns = len(leaf_paths(pa.field(names[-1], t)))
        owners.extend([found if is_fsst_type(t) else None] * columns)
        found += is_fsst_type(t)
    return owners


def _count(info: dict, carr, seen: dict) -> None:
    """Add one unit's fsst array ``carr`` (checked) to ``info``'s figures; its tables to
    ``seen``."""
    info["string_bytes"] += int(carr.lengths.sum())
    info["codes_bytes"] += len(carr.codes)
    for table in carr.tables if carr.length > carr.null_count else ():
        # version 4: the tables are in the data (a unit of no strings holds an empty one that
        # no string uses)
        seen.setdefault(table.to_bytes(), table)


def _finish(info: dict, tables: list) -> None:
    """``info``'s tables, ratio and file ratio, from its sums and its distinct ``tables``."""
    info["tables"] = [_table_summary(t) for t in tables]
    tb = sum(t.nbytes_serialised() for t in tables)
    info["ratio"] = (info["string_bytes"] / (info["codes_bytes"] + tb)
                     if info["codes_bytes"] + tb else float("nan"))
    info["file_ratio"] = (info["string_bytes"] / info["stored_bytes"]
                          if info["stored_bytes"] else float("nan"))  # (None: IPC)


def _check_chunk_ranges(metadata, file_bytes: int) -> None:
    """CorruptDataError unless every column chunk's bytes (its first page's offset and its
    stored size, as the footer says) lie between the magic and the footer, apart from each
    other's: the sizes reported come from there, and nothing else checks them (pyarrow reads a
    chunk whose size grew by a flipped bit as before)."""
    end_of_data = file_bytes - 8 - metadata.serialized_size
    ranges = []
    for i in range(metadata.num_row_groups):
        rg = metadata.row_group(i)
        for j in range(rg.num_columns):
            c = rg.column(j)
            if c.num_values == 0:  # (pyarrow places a chunk without values at offset 0)
                continue
            start = c.data_page_offset
            if c.has_dictionary_page and 0 < c.dictionary_page_offset < start:
                start = c.dictionary_page_offset
            ranges.append((start, start + c.total_compressed_size, i, j))
    ranges.sort()
    for k, (start, end, i, j) in enumerate(ranges):
        if start < 4 or end > end_of_data or (k and start < ranges[k - 1][1]):
            raise CorruptDataError(
                f"the footer's size of column chunk {j} of row group {i} ({end - start} bytes "
                f"at {start}) overlaps other data: the footer was altered")


def _add_parquet_sizes(metadata, cols: dict, leaves, nested: dict) -> None:
    """Add each column chunk's stored size (and, for plain columns, its codec) to ``cols``,
    to the top-level column owning the leaf (``leaves``: the file's leaf indices by column, as
    ``Source.leaf_columns``; a leaf path's first part is no name when names hold dots), and to
    the nested fsst leaf storing it (``nested``: :func:`_leaf_owners` by column; the leaves'
    sizes are None where ``leaves`` is, or disagrees)."""
    owner = {j: name for name, indices in (leaves or {}).items() for j in indices}
    leaf_of = {}  # Parquet leaf column index -> the nested fsst leaf's dict
    for name, owners in nested.items():
        indices = (leaves or {}).get(name)
        if indices is None or len(indices) != len(owners):
            for leaf in cols[name]["leaves"]:
                leaf["stored_bytes"] = None
            continue
        leaf_of.update({j: cols[name]["leaves"][k] for j, k in zip(indices, owners, strict=True)
                        if k is not None})
    for i in range(metadata.num_row_groups):
        rg = metadata.row_group(i)
        for j in range(rg.num_columns):
            c = rg.column(j)
            info = cols.get(owner[j] if j in owner else input_leaf(rg, j).split(".")[0])
            if info is not None:
                info["stored_bytes"] += c.total_compressed_size
                if info["codec"] != "fsst":
                    info["parquet_codec"] = c.compression.lower()
            if j in leaf_of:
                leaf_of[j]["stored_bytes"] += c.total_compressed_size


def _table_summary(table: SymbolTable) -> dict:
    lengths = table.lengths.astype(np.int64)
    longest = sorted(table.symbols, key=len, reverse=True)[:8]
    return {
        "symbols": len(table),
        "bytes": table.nbytes_serialised(),
        "mean_symbol_length": float(lengths.mean()) if len(lengths) else 0.0,
        "by_length": np.bincount(lengths, minlength=9)[1:9].tolist(),
        "longest": [repr(s) for s in longest],
    }
