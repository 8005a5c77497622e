"""An fsst column's row group read straight from its Parquet pages, without pyarrow.

pyarrow reads an fsst column chunk by decoding every page into Arrow arrays (the codes'
``large_binary``, the lengths' dictionary decoded, the struct's validity), which
:func:`~fsstgpu.formats.arrow_read.from_extension_array` then walks again. Here (issue #24,
item 2) the column's four leaves (``codes``, ``lengths``, ``cuts``, ``table``: adjacent in the
file) are read with one ``os.preadv``, their page headers parsed (``native.page_headers``), each
page's CRC32 checked, its payload decompressed (pyarrow's codecs, the GIL released) and the
leaves decoded in C++ (``native.parquet.leaf_rows``) into the buffers that
``native.stored_rows``, the one pass over a chunk's rows, checks and turns into a
CompressedStringArray: the same checks and the same result as the pyarrow read.

Only what fsstgpu's writer makes is taken (v1 data pages, the encodings of ``files.md``; codecs
none, zstd or Snappy; the storage of version 4); for anything else, and for anything that is off
(a CRC, a page, a row), :meth:`PageReader.read` returns None and the caller reads the chunk
through pyarrow, whose careful path names a fault.

>>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq, fsstgpu
>>> from fsstgpu.formats import compress_file
>>> from fsstgpu.formats.page_reader import PageReader
>>> d = tempfile.mkdtemp()
>>> pq.write_table(pa.table({"s": ["ab", None, "abc"]}), os.path.join(d, "a.parquet"))
>>> _ = compress_file(os.path.join(d, "a.parquet"), os.path.join(d, "b.parquet"))
>>> path = os.path.join(d, "b.parquet")
>>> reader = PageReader(path, pq.read_metadata(path), pq.read_schema(path))
>>> carr = reader.read(0, "s")
>>> reader.close()
>>> fsstgpu.decompress(carr, device="cpu").to_pylist()
['ab', None, 'abc']
"""

from __future__ import annotations

import os
import threading
import zlib

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from fsstgpu.errors import CorruptDataError
from fsstgpu.formats.arrow import is_fsst_type
from fsstgpu.formats.arrow_read import assemble_stored, tables_of_entries
from fsstgpu.native import parquet as pages

__all__ = ["CODECS", "PageReader", "fsst_leaves"]

#: the Parquet codecs whose pages are decompressed here (pyarrow's codec names)
CODECS = {"UNCOMPRESSED": None, "ZSTD": "zstd", "SNAPPY": "snappy"}
_LEAVES = ("codes", "lengths", "cuts", "table")
_PAGE_COLUMNS = [pages.TYPE, pages.NUM_VALUES, pages.ENCODING]


def fsst_leaves(metadata: pq.FileMetaData, schema: pa.Schema) -> dict:
    """``{name: (kinds, columns)}`` for each top-level fsst column of version 4 whose four
    leaves are where a reader of its pages expects them: the Parquet column index of
    ``codes``, ``lengths``, ``cuts`` and ``table`` and what :func:`native.parquet.leaf_rows`
    makes of each; other columns are not listed."""
    at = {metadata.schema.column(j).path: j for j in range(metadata.num_columns)}
    out = {}
    for field in schema:
        if not is_fsst_type(field.type) or field.type.version != 4:
            continue
        columns = [at.get(f"{field.name}.{leaf}") for leaf in _LEAVES]
        if None in columns:
            continue
        described = [metadata.schema.column(j) for j in columns]
        if any(c.max_definition_level != 2 or c.max_repetition_level != 0 for c in described):
            continue
        physical = [c.physical_type for c in described]
        if physical[0] != "BYTE_ARRAY" or physical[2:] != ["BYTE_ARRAY", "BYTE_ARRAY"]:
            continue
        lengths = {"INT32": pages.LEAF_INT32, "INT64": pages.LEAF_INT64}.get(physical[1])
        if lengths is None:
            continue
        out[field.name] = ((pages.LEAF_BYTES, lengths, pages.LEAF_BYTES, pages.LEAF_INDICES),
                           columns)
    return out


class PageReader:
    """Reads row groups of a Parquet file's fsst columns from their pages
    (:meth:`read`), on any number of threads: each thread opens the file once.

    Parameters
    ----------
    path : str or os.PathLike
    metadata : pyarrow.parquet.FileMetaData
        The file's footer, checked by the caller (``formats/rowgroups.Source``).
    schema : pyarrow.Schema
        The file's Arrow schema (the fsst columns' types).
    """

    def __init__(self, path, metadata: pq.FileMetaData, schema: pa.Schema):
        self.path = os.fspath(path)
        self.metadata = metadata
        self.leaves = fsst_leaves(metadata, schema)
        self.types = {f.name: f.type for f in schema}
        self._local = threading.local()
        self._lock = threading.Lock()
        self._fds: list[int] = []

    def read(self, k: int, name: str):
        """Row group ``k`` of fsst column ``name`` as a checked CompressedStringArray (one
        chunk, as ``from_extension_array`` of pyarrow's read gives), or None when this reader
        does not take it or anything in it is off."""
        if name not in self.leaves:
            return None
        fd = getattr(self._local, "fd", None)
        if fd is None:
            fd = self._local.fd = os.open(self.path, os.O_RDONLY)
            with self._lock:
                self._fds.append(fd)
        kinds, columns = self.leaves[name]
        try:
            return _read_chunk(fd, self.metadata.row_group(k), kinds, columns, self.types[name])
        except (CorruptDataError, ValueError, pa.ArrowException):
            return None  # the careful read (pyarrow's pages, from_extension_array) names it

    def close(self) -> None:
        """Close the threads' file descriptors."""
        with self._lock:
            for fd in self._fds:
                os.close(fd)
            self._fds.clear()


def _read_chunk(fd: int, group, kinds, columns, ftype):
    n = group.num_rows
    chunks = [group.column(j) for j in columns]
    starts, ends, codecs = [], [], []
    for c in chunks:
        if c.compression not in CODECS:
            return None
        start = c.dictionary_page_offset if c.has_dictionary_page else c.data_page_offset
        if start is None or start < 0 or c.total_compressed_size < 0:
            return None
        starts.append(int(start))
        ends.append(int(start) + int(c.total_compressed_size))
        codecs.append(CODECS[c.compression])
    lo, hi = min(starts), max(ends)
    if hi - lo > 1 << 40:
        return None
    buf = np.empty(hi - lo, np.uint8)
    if os.preadv(fd, [memoryview(buf)], lo) != len(buf):
        return None
    leaves = []
    for kind, start, end, codec in zip(kinds, starts, ends, codecs, strict=True):
        headers = pages.page_headers(buf, start - lo, end - lo)
        bodies = _bodies(buf, headers, codec)
        if bodies is None:
            return None
        leaves.append(pages.leaf_rows(kind, n, headers[:, _PAGE_COLUMNS], bodies))
    # the table leaf's dictionary: the serialised tables (its first page)
    dictionary_body = (bodies[0] if len(headers) and headers[0, pages.TYPE]
                       == pages.DICTIONARY_PAGE else np.zeros(0, np.uint8))
    codes, lengths, cuts, table = leaves
    if any(leaf[0].tobytes() != codes[0].tobytes() for leaf in leaves[1:]):
        return None  # the leaves disagree on which rows are null
    entries = table[8].reshape(-1, 2)
    if len(entries) > 1 << 16:
        return None
    table_of, distinct = tables_of_entries(dictionary_body, entries, table[7])
    if cuts[4][-1] >= 1 << 31:
        return None
    cuts_array = pa.Array.from_buffers(pa.binary(), n, [
        pa.py_buffer(cuts[1]), pa.py_buffer(cuts[4].astype(np.int32)), pa.py_buffer(cuts[5])],
        null_count=cuts[3])
    return assemble_stored(
        ftype, n, row_bits=(codes[0], 0), codes_bits=(codes[1], 0), code_offsets=codes[4],
        data=codes[5], length_bits=(lengths[1], 0), lengths=lengths[6],
        table_bits=(table[1], 0), index=table[7].astype(np.uint16), table_of=table_of,
        distinct=distinct, cuts=cuts_array,
        declared=[codes[2], codes[3], lengths[3], table[3]])


def _bodies(buf: np.ndarray, headers: np.ndarray, codec) -> list | None:
    """Each page's payload, its CRC32 checked and decompressed; None for a page of a kind
    this reader does not take."""
    out = []
    for kind, at, size, usize, has_crc, crc in headers[:, [
            pages.TYPE, pages.PAYLOAD_OFFSET, pages.COMPRESSED_SIZE, pages.UNCOMPRESSED_SIZE,
            pages.HAS_CRC, pages.CRC]].tolist():
        if kind not in (pages.DATA_PAGE, pages.DICTIONARY_PAGE):
            return None
        payload = buf[at : at + size]
        if has_crc and zlib.crc32(payload) != crc & 0xFFFFFFFF:
            return None
        if codec is None:
            if usize != size:
                return None
            out.append(payload)
            continue
        body = pa.Codec(codec).decompress(payload, decompressed_size=usize)
        if body.size != usize:
            return None
        out.append(np.frombuffer(body, np.uint8))
    return out

