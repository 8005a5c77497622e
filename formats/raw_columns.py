"""An fsst column's row group read from Parquet without Arrow's page decoding.

The four leaves of an ``fsstgpu.fsst`` column (``codes``, ``lengths``, ``cuts``, ``table``;
``arrow.md``) are read raw (:func:`fsstgpu.formats.parquet_pages.read_leaf_chunk`: page headers,
CRCs, codecs, DELTA_LENGTH_BYTE_ARRAY, dictionaries, definition levels), laid out as the Arrow
storage they stand for without copying the codes again, and read back by
:func:`fsstgpu.formats.arrow_read.from_extension_array`, so every check of the storage applies
as it does to what pyarrow reads. Measured (``files.md``, "Raw reads"): pyarrow decodes all
four leaves of a struct even when only some are asked for, and its decoding of the small ones
(per-row lengths, tables and cuts) costs as much as the codes'.

Dictionary-encoded codes (a column of repeating strings) are looked up here. A column in a
layout the raw reader does not take (an IPC file, a remote file, an fsst type of version 3 or
older, a leaf in an encoding it does not decode) is :class:`~fsstgpu.formats.parquet_pages.
NotRaw`: the caller reads it through pyarrow.

>>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq, fsstgpu
>>> from fsstgpu.formats import compress_file
>>> from fsstgpu.formats.raw_columns import RawColumns
>>> from fsstgpu.formats.rowgroups import Source
>>> d = tempfile.mkdtemp()
>>> pq.write_table(pa.table({"s": ["ab", None, "abc"]}), os.path.join(d, "a.parquet"))
>>> _ = compress_file(os.path.join(d, "a.parquet"), os.path.join(d, "b.parquet"))
>>> with Source(os.path.join(d, "b.parquet")) as source:
...     raw = RawColumns(source)
...     carr = raw.column(0, "s")
>>> fsstgpu.decompress(carr, device="cpu").to_pylist()
['ab', None, 'abc']
"""

from __future__ import annotations

import threading
from pathlib import Path

import numpy as np
import pyarrow as pa

from fsstgpu import native
from fsstgpu.errors import CorruptDataError
from fsstgpu.formats.arrow_read import EXTENSION_NAME, from_extension_array, is_fsst_type
from fsstgpu.formats.parquet_pages import LeafValues, NotRaw, read_leaf_chunk

__all__ = ["RawColumns"]

_LEAVES = ("codes", "lengths", "cuts", "table")


class RawColumns:
    """The fsst columns of a Parquet :class:`~fsstgpu.formats.rowgroups.Source` that can be
    read raw, and :meth:`column` to read one row group of one of them.

    ``names`` holds the columns that qualify (a local Parquet file, an fsst type of version 4
    with its four leaves, all nullable, unrepeated); a chunk that turns out otherwise
    (dictionary-encoded codes) raises NotRaw from :meth:`column`. Threads may share an
    instance: each has its own file handle.
    """

    def __init__(self, source):
        self.path = source.path
        self.metadata = source.parquet_metadata
        self.types: dict[str, pa.DataType] = {}
        self.leaves: dict[str, dict] = {}
        self._local = threading.local()
        self._handles: list = []
        self._lock = threading.Lock()
        if source.format != "parquet" or not isinstance(self.path, Path):
            return
        schema = self.metadata.schema
        where = {schema.column(j).path: j for j in range(self.metadata.num_columns)}
        for field in source.schema:
            ftype = field.type
            if not is_fsst_type(ftype) or ftype.version != 4:
                continue
            paths = [f"{field.name}.{leaf}" for leaf in _LEAVES]
            if not all(p in where for p in paths) or not all(
                    ftype.storage_type.field(leaf).nullable for leaf in _LEAVES):
                continue
            columns = {leaf: where[p] for leaf, p in zip(_LEAVES, paths, strict=True)}
            if any(schema.column(j).max_repetition_level for j in columns.values()):
                continue
            self.types[field.name] = ftype
            self.leaves[field.name] = columns

    @property
    def names(self) -> set[str]:
        return set(self.types)

    def close(self) -> None:
        """Close the file handles the reading threads opened."""
        with self._lock:
            for f in self._handles:
                f.close()
            self._handles.clear()

    def _file(self):
        f = getattr(self._local, "file", None)
        if f is None or f.closed:
            f = open(self.path, "rb")  # noqa: SIM115 (kept per thread; closed by close())
            with self._lock:
                self._handles.append(f)
            self._local.file = f
        return f

    def column(self, k: int, name: str):
        """Row group ``k`` of fsst column ``name``, as a checked
        :class:`~fsstgpu.CompressedStringArray`.

        Raises
        ------
        CorruptDataError
            When a chunk is damaged or the leaves do not agree (a valid string without codes,
            leaves of different row counts), or the storage's checks fail.
        NotRaw
            When a leaf's layout is one the raw reader does not take.
        """
        if name not in self.types:
            raise NotRaw(f"column {name!r}")
        ftype = self.types[name]
        rg = self.metadata.row_group(k)
        f = self._file()
        got = {}
        for leaf, j in self.leaves[name].items():
            level = self.metadata.schema.column(j).max_definition_level
            got[leaf] = (read_leaf_chunk(f, rg.column(j), max_definition_level=level), level)
        n = rg.num_rows
        storage = _storage(ftype, got, n)
        # one chunk, as pyarrow's read of the row group gives it
        return from_extension_array(pa.chunked_array(
            [pa.ExtensionArray.from_storage(ftype, storage)], type=ftype))


def _storage(ftype, got: dict, n: int) -> pa.StructArray:
    """The version-4 storage struct of ``n`` rows from the four leaves' raw values."""
    codes, level = got["codes"]
    for leaf, (values, _) in got.items():
        if values.rows != n:
            raise CorruptDataError(f"{EXTENSION_NAME}: its {leaf!r} leaf holds {values.rows} "
                                   f"values for {n} rows")
    # the struct is present from the level below the (nullable) child's own
    defs = codes.defs
    valid = np.ones(n, bool) if defs is None else defs >= level - 1
    present = {leaf: (np.ones(n, bool) if v.defs is None else v.defs == lv)
               for leaf, (v, lv) in got.items()}
    for leaf in ("codes", "lengths", "table"):
        if not np.array_equal(present[leaf], valid):
            raise CorruptDataError(f"{EXTENSION_NAME} storage: a valid string has a null "
                                   f"{leaf!r} entry, or a null string has one")
    if np.any(present["cuts"] & ~valid):
        raise CorruptDataError(f"{EXTENSION_NAME} storage: a null string has cuts")
    types = {leaf: ftype.storage_type.field(leaf).type for leaf in _LEAVES}
    children = [
        _binary(types["codes"], codes, present["codes"], n),
        _ints(types["lengths"], got["lengths"][0], present["lengths"], n),
        _binary(types["cuts"], got["cuts"][0], present["cuts"], n),
        _tables(types["table"], got["table"][0], present["table"], n),
    ]
    mask = None if valid.all() else pa.array(~valid)
    return pa.StructArray.from_arrays(children, fields=list(ftype.storage_type), mask=mask)


def _numpy_int(type_) -> np.dtype:
    # (not type_.to_pandas_dtype(): it imports pandas)
    kind = "u" if pa.types.is_unsigned_integer(type_) else "i"
    return np.dtype(f"<{kind}{type_.bit_width // 8}")


def _bitmap(present: np.ndarray):
    return None if present.all() else pa.py_buffer(np.packbits(present, bitorder="little"))


def _looked_up(values):
    """(lengths, data) of a dictionary-encoded byte-array leaf's values, gathered."""
    sizes = np.fromiter(map(len, values.dictionary), np.int64, len(values.dictionary))
    starts = np.zeros(len(sizes) + 1, np.int64)
    np.cumsum(sizes, out=starts[1:])
    pool = np.frombuffer(b"".join(values.dictionary), np.uint8)
    lengths = sizes[values.indices]
    out_offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=out_offsets[1:])
    data = np.empty(int(out_offsets[-1]), np.uint8)
    native.gather(pool, starts[:-1][values.indices], lengths, out_offsets[:-1], data)
    return lengths, data


def _binary(type_, values, present, n) -> pa.Array:
    lengths, data = (values.lengths, values.data) if values.data is not None else \
        _looked_up(values)
    wide = pa.types.is_large_binary(type_) or pa.types.is_large_string(type_)
    offsets = np.zeros(n + 1, np.int64)
    if present.all():
        np.cumsum(lengths, out=offsets[1:])
    else:
        sizes = np.zeros(n, np.int64)
        sizes[present] = lengths
        np.cumsum(sizes, out=offsets[1:])
    if not wide:
        if offsets[-1] > np.iinfo(np.int32).max:
            raise CorruptDataError(f"{EXTENSION_NAME}: over 2 GiB of bytes in a binary leaf")
        offsets = offsets.astype(np.int32)
    return pa.Array.from_buffers(type_, n, [_bitmap(present), pa.py_buffer(offsets),
                                            pa.py_buffer(data)])


def _ints(type_, values, present, n) -> pa.Array:
    if values.ints is None:
        raise NotRaw("lengths that are not integers")
    dtype = _numpy_int(type_)
    raw = values.ints.view(dtype) if values.ints.dtype.itemsize == dtype.itemsize else None
    if raw is None:
        raise CorruptDataError(f"{EXTENSION_NAME}: its lengths are stored {values.ints.dtype}, "
                               f"not {dtype}")
    if not present.all():
        full = np.zeros(n, dtype)
        full[present] = raw
        raw = full
    return pa.Array.from_buffers(type_, n, [_bitmap(present), pa.py_buffer(raw)])


def _tables(type_, values, present, n) -> pa.Array:
    if values.indices is None and present.any():
        raise NotRaw("tables that are not dictionary-encoded")
    if values.indices is None:  # no table at all (no valid string)
        values = LeafValues(rows=n, indices=np.zeros(0, np.uint32), dictionary=[])
    index_dtype = _numpy_int(type_.index_type)
    if len(values.dictionary) > np.iinfo(index_dtype).max:
        raise CorruptDataError(f"{EXTENSION_NAME}: {len(values.dictionary)} tables in a chunk")
    idx = values.indices.astype(index_dtype)
    if not present.all():
        full = np.zeros(n, index_dtype)
        full[present] = idx
        idx = full
    indices = pa.Array.from_buffers(type_.index_type, n, [_bitmap(present), pa.py_buffer(idx)])
    return pa.DictionaryArray.from_arrays(indices, pa.array(values.dictionary,
                                                            type_.value_type))
