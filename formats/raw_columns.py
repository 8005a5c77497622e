"""An fsst column's row group read from its pages raw (:mod:`fsstgpu.formats.raw_pages`) instead
of through pyarrow's reader: the storage struct (``formats/arrow.md``: ``codes``, ``lengths``,
``cuts``, ``table``) built from the four leaves' pages with the compiled decoders of
:mod:`fsstgpu.native.pages`, equal to what ``pyarrow.parquet`` reads. The pages are
decompressed on the reader's threads and the codes' bytes land in one buffer with no
intermediate arrays, the shape a device reader uploads as it is (issue #24 item 2).

What it takes: top-level columns (no repetition levels), data pages of version 1 or 2 with RLE
definition levels, values PLAIN, dictionary-encoded (a PLAIN dictionary page),
DELTA_LENGTH_BYTE_ARRAY or DELTA_BYTE_ARRAY (the encodings ``compress_file`` writes). Anything
else raises :class:`Unsupported`, and the caller reads the column with pyarrow instead.
Malformed pages raise :class:`~fsstgpu.errors.CorruptDataError` naming the chunk.

>>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
>>> from fsstgpu.formats import compress_file
>>> from fsstgpu.formats.raw_columns import read_fsst_chunk
>>> d = tempfile.mkdtemp()
>>> pq.write_table(pa.table({"s": ["ab", None, "abc"] * 100}), os.path.join(d, "s.parquet"))
>>> _ = compress_file(os.path.join(d, "s.parquet"), os.path.join(d, "f.parquet"))
>>> path = os.path.join(d, "f.parquet")
>>> f = pq.ParquetFile(path)
>>> got = read_fsst_chunk(path, f.metadata, f.schema_arrow.field("s"), [0, 1, 2, 3], 0)
>>> got.equals(pq.read_table(path).column("s").chunk(0).storage)
True
"""

from __future__ import annotations

import os
import struct
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa

from fsstgpu import native
from fsstgpu.errors import CorruptDataError
from fsstgpu.formats.raw_pages import (
    Page,
    check_crcs,
    chunk_pages,
    chunk_span,
    decompressed,
    read_span,
)

__all__ = ["Unsupported", "read_fsst_chunk"]

PLAIN, PLAIN_DICTIONARY, RLE, DELTA_LENGTH_BYTE_ARRAY, DELTA_BYTE_ARRAY, RLE_DICTIONARY = \
    0, 2, 3, 6, 7, 8
_INTS = {"INT32": np.int32, "INT64": np.int64}


class Unsupported(Exception):
    """A column chunk whose layout the raw reader does not take (the caller reads it with
    pyarrow)."""


def _bytes_of(body: bytes, encoding: int, count: int, where: str):
    """``count`` byte arrays of a page's values: (offsets int64 from 0, bytes)."""
    if encoding == DELTA_LENGTH_BYTE_ARRAY:
        offsets, start = native.delta_length_byte_arrays(body, count)
        return offsets, np.frombuffer(body, np.uint8, int(offsets[-1]), start)
    if encoding == PLAIN:
        data, offsets, _ = native.plain_byte_arrays(body, count)
        return offsets, data
    if encoding == DELTA_BYTE_ARRAY:
        data, offsets, _ = native.delta_byte_arrays(body, count)
        return offsets, data
    raise Unsupported(f"{where}: byte arrays in encoding {encoding}")


def _ints_of(body: bytes, count: int, dtype, where: str) -> np.ndarray:
    width = np.dtype(dtype).itemsize
    if len(body) < count * width:
        raise CorruptDataError(f"{where}: {count} PLAIN values in {len(body)} bytes")
    return np.frombuffer(body, dtype, count)


def _levels(body: bytes, page: Page, max_def: int, where: str) -> tuple[np.ndarray, bytes]:
    """A data page's definition levels (uint32, a value a row) and its values' bytes."""
    n = page.num_values
    width = max_def.bit_length()
    if page.kind == "data_v2":
        start, size = page.rep_levels_size, page.levels_size - page.rep_levels_size
        levels = native.rle_hybrid(body[start : start + size], width, n)[0] if max_def else \
            np.zeros(n, np.uint32)
        return levels, body[page.levels_size :]
    if not max_def:
        return np.zeros(n, np.uint32), body
    if page.levels_encoding != RLE:
        raise Unsupported(f"{where}: definition levels in encoding {page.levels_encoding}")
    if len(body) < 4:
        raise CorruptDataError(f"{where}: a data page ends inside its levels' length")
    (size,) = struct.unpack_from("<i", body)
    if not 0 <= size <= len(body) - 4:
        raise CorruptDataError(f"{where}: definition levels of {size} bytes in a page of "
                               f"{len(body)}")
    levels, _ = native.rle_hybrid(body[4 : 4 + size], width, n)
    return levels, body[4 + size :]


def _leaf(raw: bytes, pages: list, codec: str, physical: str, max_def: int, where: str,
          keep_indices: bool = False):
    """One leaf's chunk: its definition levels (a value a row) and its present values, as
    byte arrays (offsets, bytes), ints, or (``keep_indices``, all data pages dictionary-encoded)
    (indices, dictionary offsets, dictionary bytes)."""
    dictionary, levels, parts, indices = None, [], [], []
    for page in pages:
        body = decompressed(raw, page, codec)
        if page.kind == "dictionary":
            if page.encoding not in (PLAIN, PLAIN_DICTIONARY):
                raise Unsupported(f"{where}: a dictionary page in encoding {page.encoding}")
            dictionary = _bytes_of(body, PLAIN, page.num_values, where) \
                if physical == "BYTE_ARRAY" else _ints_of(body, page.num_values,
                                                           _INTS[physical], where)
            continue
        lv, values = _levels(body, page, max_def, where)
        if lv.size and int(lv.max()) > max_def:
            raise CorruptDataError(f"{where}: a definition level over {max_def}")
        levels.append(lv)
        count = int(np.count_nonzero(lv == max_def))
        if page.encoding in (RLE_DICTIONARY, PLAIN_DICTIONARY):
            if dictionary is None:
                raise CorruptDataError(f"{where}: dictionary indices without a dictionary")
            if not values and count:
                raise CorruptDataError(f"{where}: a page ends before its indices' bit width")
            idx = native.rle_hybrid(values[1:], values[0], count)[0] if count else \
                np.zeros(0, np.uint32)
            size = len(dictionary[0]) - 1 if physical == "BYTE_ARRAY" else len(dictionary)
            if idx.size and int(idx.max()) >= size:
                raise CorruptDataError(f"{where}: a dictionary index past its {size} values")
            indices.append(idx)
            parts.append(("dictionary", idx))
        elif physical == "BYTE_ARRAY":
            parts.append(("values", _bytes_of(values, page.encoding, count, where)))
        elif page.encoding == PLAIN and physical in _INTS:
            parts.append(("values", _ints_of(values, count, _INTS[physical], where)))
        else:
            raise Unsupported(f"{where}: {physical} values in encoding {page.encoding}")
    levels = np.concatenate(levels) if levels else np.zeros(0, np.uint32)
    if keep_indices and dictionary is not None and all(k == "dictionary" for k, _ in parts):
        return levels, (np.concatenate(indices) if indices else np.zeros(0, np.uint32),
                        *dictionary)
    if physical != "BYTE_ARRAY":
        vals = [dictionary[p] if kind == "dictionary" else p for kind, p in parts]
        return levels, np.concatenate(vals) if vals else np.zeros(0, _INTS[physical])
    pieces = []
    for kind, p in parts:
        if kind == "dictionary":
            offs, data = dictionary
            dict_array = pa.LargeBinaryArray.from_buffers(
                pa.large_binary(), len(offs) - 1, [None, pa.py_buffer(offs), pa.py_buffer(data)])
            taken = dict_array.take(pa.array(p))
            bufs = taken.buffers()
            offs2 = np.frombuffer(bufs[1], np.int64, len(taken) + 1, taken.offset * 8)
            data2 = np.frombuffer(bufs[2], np.uint8) if bufs[2] is not None else \
                np.zeros(0, np.uint8)
            pieces.append((offs2 - offs2[0], data2[offs2[0] : offs2[-1]]))
        else:
            pieces.append(p)
    return levels, _joined(pieces)


def _joined(pieces) -> tuple[np.ndarray, np.ndarray]:
    """Byte arrays of several pages as one: (offsets from 0, bytes)."""
    if len(pieces) == 1:
        return pieces[0]
    sizes = [int(o[-1]) for o, _ in pieces]
    starts = np.cumsum([0] + sizes)
    offsets = np.concatenate([np.zeros(1, np.int64)] +
                             [o[1:] + s for (o, _), s in zip(pieces, starts[:-1], strict=True)])
    return offsets, np.concatenate([d[: int(o[-1])] for o, d in pieces] +
                                   [np.zeros(0, np.uint8)])


def _spread(present: np.ndarray, lengths: np.ndarray, dtype) -> np.ndarray:
    """Offsets over every row (``dtype``) of values present where ``present`` is set."""
    full = np.zeros(len(present) + 1, np.int64)
    full[1:][present] = lengths
    np.cumsum(full, out=full)
    if dtype == np.int32 and full[-1] > np.iinfo(np.int32).max:
        raise CorruptDataError("a binary child's bytes outgrow its 32-bit offsets")
    return full.astype(dtype, copy=False)


def _bitmap(present: np.ndarray) -> pa.Buffer | None:
    return None if present.all() else pa.py_buffer(np.packbits(present, bitorder="little"))


def _binary_array(type_, present, offsets, data) -> pa.Array:
    wide = pa.types.is_large_binary(type_) or pa.types.is_large_string(type_)
    full = _spread(present, np.diff(offsets), np.int64 if wide else np.int32)
    return pa.Array.from_buffers(type_, len(present),
                                 [_bitmap(present), pa.py_buffer(full), pa.py_buffer(data)],
                                 null_count=int(len(present) - np.count_nonzero(present)))


def _int_array(type_, present, values) -> pa.Array:
    full = np.zeros(len(present), type_.to_pandas_dtype())
    full[present] = values.view(full.dtype)
    return pa.Array.from_buffers(type_, len(present), [_bitmap(present), pa.py_buffer(full)],
                                 null_count=int(len(present) - np.count_nonzero(present)))


def _table_array(type_, present, decoded, where) -> pa.Array:
    if len(decoded) != 3:
        raise Unsupported(f"{where}: table indices not all dictionary-encoded")
    idx, offsets, data = decoded
    index_type = type_.index_type
    if len(offsets) - 1 > 1 << index_type.bit_width:
        raise CorruptDataError(f"{where}: a dictionary of {len(offsets) - 1} tables")
    indices = _int_array(index_type, present, idx.astype(index_type.to_pandas_dtype()))
    dictionary = _binary_array(type_.value_type, np.ones(len(offsets) - 1, bool), offsets,
                               data)
    return pa.DictionaryArray.from_arrays(indices, dictionary)


def read_fsst_chunk(path, metadata, field: pa.Field, leaves: list[int], k: int, *,
                    threads: int | None = None, check: bool = True) -> pa.Array:
    """Row group ``k`` of the fsst column ``field`` (as pyarrow's schema of the file names it:
    the extension type, storage version 4) of the Parquet file at ``path`` (``metadata``: its
    footer), whose leaves are the file's columns ``leaves`` (codes, lengths, cuts, table):
    its storage struct, as ``pyarrow.parquet`` would read it, from the pages read raw
    (``check``: their CRCs checked).

    Raises
    ------
    Unsupported
        For a layout this reader does not take (read the column with pyarrow).
    fsstgpu.CorruptDataError
        For malformed or damaged pages, naming the file, row group and column.
    """
    storage = field.type.storage_type if isinstance(field.type, pa.BaseExtensionType) \
        else field.type
    if not pa.types.is_struct(storage) or [c.name for c in storage] != \
            ["codes", "lengths", "cuts", "table"] or len(leaves) != 4:
        raise Unsupported(f"{field.name}: not a version 4 fsst storage")
    group = metadata.row_group(k)
    rows = group.num_rows
    schema = metadata.schema
    size = os.path.getsize(path)
    struct_level = 1 if field.nullable else 0
    jobs = []
    fd = os.open(path, os.O_RDONLY)
    try:
        for child, j in zip(storage, leaves, strict=True):
            col = group.column(j)
            where = f"{path}: row group {k}, column {col.path_in_schema}"
            leaf = schema.column(j)
            if leaf.max_repetition_level or col.path_in_schema != f"{field.name}.{child.name}":
                raise Unsupported(f"{where}: not a top-level fsst leaf")
            raw = read_span(fd, *chunk_span(col, size, where), where)
            pages = chunk_pages(raw, col.num_values, where)
            if col.num_values != rows:
                raise CorruptDataError(f"{where}: {col.num_values} values in {rows} rows")
            jobs.append((child, raw, pages, col.compression, col.physical_type,
                         leaf.max_definition_level, where))
    finally:
        os.close(fd)

    def decode(job):
        child, raw, pages, codec, physical, max_def, where = job
        if check:
            check_crcs(raw, pages, where)
        if max_def < struct_level:
            raise Unsupported(f"{where}: definition levels {max_def} under a nullable struct")
        return _leaf(raw, pages, codec, physical, max_def, where,
                     keep_indices=child.name == "table")

    if threads == 1:
        decoded = [decode(job) for job in jobs]
    else:
        with ThreadPoolExecutor(min(4, threads or 4)) as pool:
            decoded = list(pool.map(decode, jobs))
    children = []
    struct_valid = None
    for (child, *_, max_def, where), (levels, values) in zip(jobs, decoded, strict=True):
        if len(levels) != rows:
            raise CorruptDataError(f"{where}: {len(levels)} levels in {rows} rows")
        present = levels == max_def
        valid = levels >= struct_level
        if struct_valid is None:
            struct_valid = valid
        elif not np.array_equal(valid, struct_valid):
            raise CorruptDataError(f"{where}: the struct's nulls differ between its leaves")
        if child.name == "table":
            children.append(_table_array(child.type, present, values, where))
        elif isinstance(values, tuple):
            children.append(_binary_array(child.type, present, *values))
        else:
            children.append(_int_array(child.type, present, values))
    mask = None if struct_valid is None or struct_valid.all() else pa.array(~struct_valid)
    return pa.StructArray.from_arrays(children, fields=list(storage), mask=mask)
