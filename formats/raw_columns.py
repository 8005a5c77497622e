"""An fsst column's row group read from its pages raw (:mod:`fsstgpu.formats.raw_pages`) instead
of through pyarrow's reader: the storage struct (``formats/arrow.md``: ``codes``, ``lengths``,
``cuts``, ``table``) built from the four leaves' pages with the compiled decoders of
:mod:`fsstgpu.native.pages`, equal to what ``pyarrow.parquet`` reads; with ``codes_in_place``
the codes of pages stored uncompressed are not copied but located in the chunk's bytes, for a
device reader that uploads the chunks as they are (issue #24 item 2).

As a host reader it is slower than pyarrow's; it was the host step of the direct device
readers, which lost to ``read_table_device`` three times (80cd04e, 107ebf5, 341c0ff:
BENCHMARKS.md sections 67-69: ~45-110 ns of host work a row) and were removed; the next
design decodes the pages on the device (:mod:`fsstgpu.kernels.page_decode`).

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
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa

from fsstgpu import native
from fsstgpu.errors import CorruptDataError
from fsstgpu.formats.raw_pages import check_crcs, chunk_pages, chunk_span, decompressed, read_span
from fsstgpu.types import integer_dtype

__all__ = ["Unsupported", "read_fsst_chunk"]

_PHYSICAL = {"BYTE_ARRAY": native.LEAF_BYTES, "INT32": native.LEAF_INT32,
             "INT64": native.LEAF_INT64}
_KIND = {"data": 0, "data_v2": 1, "dictionary": 2}


class Unsupported(Exception):
    """A column chunk whose layout the raw reader does not take (the caller reads it with
    pyarrow)."""


def _body(raw, page, codec: str):
    """A page's payload as its encoder wrote it: a view of ``raw`` where it is stored so
    (uncompressed; its levels first either way), else decompressed."""
    if codec.lower() in ("uncompressed", "none") or not page.compressed:
        if page.size != page.uncompressed_size:
            raise CorruptDataError(f"a stored page of {page.size} bytes, its header says "
                                   f"{page.uncompressed_size}")
        return memoryview(raw)[page.start : page.start + page.size]
    return decompressed(raw, page, codec)


def _leaf(raw: bytes, pages: list, codec: str, physical: str, max_def: int, rows: int,
          where: str, keep_indices: bool = False, in_place: bool = False) -> tuple:
    """One leaf's chunk decoded (:func:`fsstgpu.native.decode_leaf`'s tuple)."""
    if physical not in _PHYSICAL or max_def > 2:
        raise Unsupported(f"{where}: physical type {physical}, definition levels {max_def}")
    try:
        bodies = [_body(raw, page, codec) for page in pages]
    except CorruptDataError as exc:
        raise CorruptDataError(f"{where}: {exc}") from None
    meta = np.array([(_KIND[p.kind], p.encoding, p.levels_encoding, p.num_values,
                      p.rep_levels_size, p.levels_size) for p in pages], np.int64).reshape(-1, 6)
    try:
        # (in place each page's body is a view of raw: its start there is where rows start)
        return native.decode_leaf(bodies, meta, _PHYSICAL[physical], max_def,
                                  keep_indices=keep_indices, max_rows=rows, in_place=in_place,
                                  body_starts=[p.start for p in pages] if in_place else None)
    except CorruptDataError as exc:
        raise CorruptDataError(f"{where}: {exc}") from None
    except ValueError as exc:  # (a layout decode_leaf does not take)
        raise Unsupported(f"{where}: {exc}") from None


def _bitmap(present: np.ndarray) -> pa.Buffer | None:
    return None if present.all() else pa.py_buffer(np.packbits(present, bitorder="little"))


def _nulls(present: np.ndarray) -> int:
    return int(len(present) - np.count_nonzero(present))


def _binary_array(type_, present, offsets, data) -> pa.Array:
    wide = pa.types.is_large_binary(type_) or pa.types.is_large_string(type_)
    if not wide:
        if offsets[-1] > np.iinfo(np.int32).max:
            raise CorruptDataError("a binary child's bytes outgrow its 32-bit offsets")
        offsets = offsets.astype(np.int32)
    return pa.Array.from_buffers(type_, len(present),
                                 [_bitmap(present), pa.py_buffer(offsets), pa.py_buffer(data)],
                                 null_count=_nulls(present))


def _int_array(type_, present, values) -> pa.Array:
    full = values.astype(integer_dtype(type_), copy=False)
    return pa.Array.from_buffers(type_, len(present), [_bitmap(present), pa.py_buffer(full)],
                                 null_count=_nulls(present))


def _table_array(type_, present, indices, offsets, data, where) -> pa.Array:
    index_type = type_.index_type
    count = max(len(offsets) - 1, 0)
    if count > 1 << index_type.bit_width:
        raise CorruptDataError(f"{where}: a dictionary of {count} tables")
    dictionary = _binary_array(type_.value_type, np.ones(count, bool),
                               offsets if count else np.zeros(1, np.int64), data)
    return pa.DictionaryArray.from_arrays(_int_array(index_type, present, indices), dictionary)


def read_fsst_chunk(path, metadata, field: pa.Field, leaves: list[int], k: int, *,
                    threads: int | None = None, check: bool = True, raws=None,
                    codes_in_place: bool = False):
    """Row group ``k`` of the fsst column ``field`` (as pyarrow's schema of the file names it:
    the extension type, storage version 4) of the Parquet file at ``path`` (``metadata``: its
    footer), whose leaves are the file's columns ``leaves`` (codes, lengths, cuts, table):
    its storage struct, as ``pyarrow.parquet`` would read it, from the pages read raw
    (``check``: their CRCs checked). ``raws``: the four chunks' bytes, already read (else they
    are read here).

    With ``codes_in_place`` the codes are not copied: the result is ``(storage, starts,
    data)``, the storage's codes child holding an unread placeholder of their size (its offsets
    the codes' own), and ``starts`` (int64, a row) where each row's codes start in the codes
    chunk's bytes (a DELTA_LENGTH_BYTE_ARRAY page's body, a dictionary-encoded value's
    dictionary page), or ``-1 - i`` for ``data[i]``, the bytes that had to be decoded: what a
    device reader that has the chunk's bytes uploaded gathers there, a segment a row
    (:func:`fsstgpu.kernels.gather.gather_segments_cpu` is the host's twin).

    Raises
    ------
    Unsupported
        For a layout this reader does not take (read the column with pyarrow).
    fsstgpu.CorruptDataError
        For malformed or damaged pages, naming the file, row group and column.

    Examples
    --------
    >>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
    >>> from fsstgpu.formats import compress_file
    >>> d = tempfile.mkdtemp()
    >>> rows = [f"line {i} of a log" for i in range(200)]
    >>> pq.write_table(pa.table({"s": rows}), os.path.join(d, "s.parquet"))
    >>> path = os.path.join(d, "f.parquet")
    >>> _ = compress_file(os.path.join(d, "s.parquet"), path, parquet_codec="none")
    >>> f = pq.ParquetFile(path)
    >>> storage, starts, data = read_fsst_chunk(path, f.metadata, f.schema_arrow.field("s"),
    ...                                         [0, 1, 2, 3], 0, codes_in_place=True)
    >>> # row i's codes: from starts[i] in the codes chunk (or -1 - starts[i] in data), as
    >>> # many as the offsets of the placeholder (unread bytes of the codes' size) say
    >>> len(storage), len(starts), storage.field("codes").buffers()[2].size > 0
    (200, 200, True)
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
    fd = os.open(path, os.O_RDONLY) if raws is None else -1
    try:
        for child, j in zip(storage, leaves, strict=True):
            col = group.column(j)
            where = f"{path}: row group {k}, column {col.path_in_schema}"
            leaf = schema.column(j)
            if leaf.max_repetition_level or col.path_in_schema != f"{field.name}.{child.name}":
                raise Unsupported(f"{where}: not a top-level fsst leaf")
            raw = raws[len(jobs)] if raws is not None else \
                read_span(fd, *chunk_span(col, size, where), where)
            pages = chunk_pages(raw, col.num_values, where)
            if col.num_values != rows:
                raise CorruptDataError(f"{where}: {col.num_values} values in {rows} rows")
            jobs.append((child, raw, pages, col.compression, col.physical_type,
                         leaf.max_definition_level, where))
    finally:
        if fd >= 0:
            os.close(fd)

    def decode(job):
        child, raw, pages, codec, physical, max_def, where = job
        if check:
            check_crcs(raw, pages, where)
        if max_def < struct_level:
            raise Unsupported(f"{where}: definition levels {max_def} under a nullable struct")
        # (a compressed page's body is a copy: its codes are not in the chunk's bytes)
        stored = codec.lower() in ("uncompressed", "none")
        return _leaf(raw, pages, codec, physical, max_def, rows, where,
                     keep_indices=child.name == "table",
                     in_place=codes_in_place and child.name == "codes" and stored)

    if threads == 1:
        decoded = [decode(job) for job in jobs]
    else:
        with ThreadPoolExecutor(min(4, threads or 4)) as pool:
            decoded = list(pool.map(decode, jobs))
    children = []
    struct_valid = None
    starts = None
    for (child, _, _, *_, max_def, where), out in zip(jobs, decoded, strict=True):
        levels, _, offsets, data, ints, indices, dict_offsets, dict_data, _, row_starts = out
        if codes_in_place and child.name == "codes":  # where each row's codes start
            starts = row_starts if row_starts is not None else \
                -1 - offsets[:-1]  # (compressed pages: every row's codes decoded into data)
            kept = data
            data = np.empty(int(offsets[-1]), np.uint8)  # (never read: a placeholder)
        if len(levels) != rows:
            raise CorruptDataError(f"{where}: {len(levels)} levels in {rows} rows")
        present = levels == max_def
        valid = levels >= struct_level
        if struct_valid is None:
            struct_valid = valid
        elif not np.array_equal(valid, struct_valid):
            raise CorruptDataError(f"{where}: the struct's nulls differ between its leaves")
        if child.name == "table":
            if indices is None:
                raise Unsupported(f"{where}: table indices not dictionary-encoded")
            children.append(_table_array(child.type, present, indices, dict_offsets,
                                         dict_data, where))
        elif offsets is not None:
            children.append(_binary_array(child.type, present, offsets, data))
        elif ints is not None:
            children.append(_int_array(child.type, present, ints))
        else:
            raise Unsupported(f"{where}: a {child.type} child of another layout")
    mask = None if struct_valid is None or struct_valid.all() else pa.array(~struct_valid)
    out = pa.StructArray.from_arrays(children, fields=list(storage), mask=mask)
    return (out, starts, kept) if codes_in_place else out
