"""CompressedStringArray -> ``fsstgpu.fsst`` extension arrays (the storage of ``arrow.md``).

:func:`to_extension_array` lays a compressed column out as the version-4 storage struct: the codes
per string (zero-copy from ``codes`` + ``code_offsets`` + ``validity``), the lengths, the cuts
inside strings longer than ``S`` (taken from the column's own split points) and each string's
table (a dictionary of the column's distinct serialised tables). Nothing is walked.

:func:`from_extension_array` (:mod:`fsstgpu.formats.arrow_read`, re-exported here) reads it
back.

>>> import pyarrow as pa, fsstgpu
>>> from fsstgpu.formats.arrow_storage import to_extension_array, from_extension_array
>>> col = pa.array(["http://a.example", None, "http://b.example"])
>>> ext = to_extension_array(fsstgpu.compress(col))
>>> ext.type.extension_name, ext.storage.type.names
('fsstgpu.fsst', ['codes', 'lengths', 'cuts', 'table'])
>>> fsstgpu.decompress(from_extension_array(ext), device="cpu").equals(col)
True
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from fsstgpu.bitmaps import unpack_bitmap
from fsstgpu.formats.arrow import TABLE_DICTIONARY, FsstType, distinct_tables, extension_type_for
from fsstgpu.formats.arrow_read import MAX_BLOCKS, from_extension_array, table_runs
from fsstgpu.splits import interior_cuts
from fsstgpu.types import INT32_MAX, integer_dtype

__all__ = ["MAX_BLOCKS", "MAX_CUT_BYTES", "GrowingTables", "from_extension_array", "table_runs",
           "to_extension_array"]

#: The most bytes of cuts one array's ``cuts`` child holds: it is ``binary``, int32 offsets
#: (two lengths-wide values a cut: 2**27 cuts of a large type, e.g. ``split_size=1`` on 140 MB)
MAX_CUT_BYTES = INT32_MAX



def to_extension_array(carr, *, codes_type=None, dictionary_type=None,
                       ext_type=None, version: int = 4) -> pa.ExtensionArray:
    """Wrap a CompressedStringArray as an ``fsstgpu.fsst`` extension array (version 4).

    Zero-copy for the codes with the default ``large_binary`` codes type; the lengths are
    narrowed to the storage's width, the cuts packed, and each string's table recorded in the
    ``table`` dictionary (the column's distinct tables, serialised, once each).
    ``carr.chunk_lengths`` is not kept (the result is one array).

    Parameters
    ----------
    carr : CompressedStringArray
    codes_type : pyarrow.DataType, optional
        ``pa.large_binary()`` (default) or ``pa.binary()`` (needs fewer than 2**31 code bytes).
    dictionary_type : pyarrow.DictionaryType, optional
        Record that the original column was dictionary-encoded with this type.
    ext_type : FsstType, optional
        Use exactly this type (version 4, of ``carr``'s value type and split size), e.g. the
        column type of a file being written (with its dictionary index type).
    version : {4, 3, 2}
        The layout (``arrow.md``): 4, the tables in the storage; 3 and 2, the tables in the type
        (2: one distinct table, 3: several), for fsstgpu readers older than version 4.

    Returns
    -------
    pyarrow.ExtensionArray

    Raises
    ------
    CorruptDataError
        When ``carr`` fails its structural checks (:meth:`~fsstgpu.CompressedStringArray.validate`
        with ``full=False``).
    ValueError
        When the codes do not fit ``codes_type``, a length does not fit the lengths' width, or
        the cuts need more than :data:`MAX_CUT_BYTES` bytes (a split size far below the
        strings' lengths).

    Examples
    --------
    >>> import pyarrow as pa, fsstgpu
    >>> from fsstgpu.formats.arrow_storage import to_extension_array
    >>> ext = to_extension_array(fsstgpu.compress(pa.array(["ab", None])))
    >>> ext.storage.field("lengths").to_pylist(), ext.storage.is_null().to_pylist()
    ([2, 0], [False, True])
    """
    # The storage is built from the fields as they are (the codes' offsets, validity and lengths
    # become Arrow buffers): fields from elsewhere are checked first (once; free for the
    # encoder's output), or a decreasing code offset makes a malformed Arrow array that pyarrow
    # itself aborts on (its repr, take, scalars), not a CorruptDataError.
    carr.validate(full=False)
    derived = extension_type_for(carr, codes_type=codes_type, dictionary_type=dictionary_type,
                                 version=version)
    if ext_type is None:
        ext_type = derived
    elif not (
        isinstance(ext_type, FsstType) and ext_type.version == derived.version
        and ext_type.value_type == derived.value_type
        and ext_type.split_size == derived.split_size and ext_type.tables == derived.tables
    ):
        raise ValueError(f"{ext_type!r} does not describe this array ({derived!r})")
    n = int(carr.length)
    codes = np.ascontiguousarray(carr.codes, dtype=np.uint8)
    code_offsets = np.ascontiguousarray(carr.code_offsets, dtype=np.int64)
    if ext_type.codes_type == pa.binary():
        if len(codes) > 2**31 - 1:
            raise ValueError(f"{len(codes)} code bytes do not fit binary storage; use large_binary")
        offsets = code_offsets.astype(np.int32)
    else:
        offsets = code_offsets
    vbuf = None
    if carr.validity is not None and carr.null_count:
        vbuf = pa.py_buffer(np.ascontiguousarray(carr.validity, dtype=np.uint8))
    storage_type = ext_type.storage_type
    codes_arr = pa.Array.from_buffers(ext_type.codes_type, n,
                                      [vbuf, pa.py_buffer(offsets), pa.py_buffer(codes)],
                                      int(carr.null_count))
    width = storage_type.field("lengths").type
    lengths = np.asarray(carr.lengths)
    if n and int(lengths.max()) > np.iinfo(integer_dtype(width)).max:
        raise ValueError(f"a string of {int(lengths.max())} bytes does not fit {width} lengths")
    lengths_arr = _from_numpy(lengths, width)
    cuts_arr = _pack_cuts(carr, code_offsets, integer_dtype(width))
    children = [codes_arr, lengths_arr, cuts_arr]
    if ext_type.version == 4:
        children.append(_table_per_string(carr))
    elif ext_type.version == 3:  # an index into the type's tables
        _, index = distinct_tables(carr.tables)
        children.append(_from_numpy(np.repeat(index.astype(np.uint16), np.diff(carr.block_starts)),
                                    pa.uint16()))
    storage = pa.StructArray.from_arrays(children, fields=list(storage_type), mask=_mask(carr))
    return pa.ExtensionArray.from_storage(ext_type, storage)


def _from_numpy(values, type_, valid=None) -> pa.Array:
    """A primitive Arrow array over ``values``, null where the bool array ``valid`` is False
    (None: no nulls), built from its buffers: ``pa.array`` of a numpy array or a list first
    asks whether it is a pandas object, which imports pandas (0.2-1 s of a command's wall time
    when pandas is installed)."""
    values = np.ascontiguousarray(values, dtype=integer_dtype(type_))
    if valid is None:
        return pa.Array.from_buffers(type_, len(values), [None, pa.py_buffer(values)])
    bitmap = pa.py_buffer(np.packbits(valid, bitorder="little"))
    return pa.Array.from_buffers(type_, len(values), [bitmap, pa.py_buffer(values)],
                                 int(len(valid) - np.count_nonzero(valid)))


def _binary_from_list(values: list, type_=pa.binary()) -> pa.Array:
    """A binary array of ``values`` (bytes), built from its buffers (see :func:`_from_numpy`)."""
    offsets = np.zeros(len(values) + 1, np.int32)
    np.cumsum([len(v) for v in values], out=offsets[1:])
    return pa.Array.from_buffers(type_, len(values),
                                 [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(values))])


def _table_per_string(carr) -> pa.DictionaryArray:
    """Each string's table: indices into the column's distinct tables, serialised once each,
    so that row operations carry every string's table along."""
    tables, index = distinct_tables(carr.tables)
    per_row = np.repeat(index.astype(np.uint16), np.diff(carr.block_starts))
    dictionary = _binary_from_list([t.to_bytes() for t in tables], TABLE_DICTIONARY.value_type)
    return pa.DictionaryArray.from_arrays(_from_numpy(per_row, TABLE_DICTIONARY.index_type),
                                          dictionary)


def _mask(carr):
    if carr.validity is None or not carr.null_count:
        return None
    n = int(carr.length)
    nulls = ~unpack_bitmap(carr.validity, n)
    return pa.Array.from_buffers(pa.bool_(), n,
                                 [None, pa.py_buffer(np.packbits(nulls, bitorder="little"))])


def _pack_cuts(carr, code_offsets, dtype) -> pa.Array:
    """The split starts inside strings, per string: (code, output) offsets from its start."""
    n = int(carr.length)
    code, out, rows = interior_cuts(code_offsets, carr.lengths, carr.split_codes, carr.split_out)
    # checked before the int32 offsets below: past 2**31 their running sum wraps silently
    if len(rows) * 2 * dtype.itemsize > MAX_CUT_BYTES:
        raise ValueError(f"{len(rows)} cuts inside strings need {len(rows) * 2 * dtype.itemsize} "
                         f"bytes, more than the cuts child's binary offsets hold "
                         f"({MAX_CUT_BYTES}): compress with a larger split_size (now "
                         f"{carr.split_size}), or fewer strings per array")
    out_offsets = np.zeros(n + 1, np.int64)
    np.cumsum(carr.lengths, out=out_offsets[1:])
    pairs = np.empty((len(rows), 2), dtype=dtype)
    pairs[:, 0] = code - code_offsets[rows]
    pairs[:, 1] = out - out_offsets[rows]
    counts = np.bincount(rows, minlength=n)
    offsets = np.zeros(n + 1, np.int32)
    np.cumsum(counts * 2 * dtype.itemsize, out=offsets[1:])
    valid = counts > 0
    vbuf = pa.py_buffer(np.packbits(valid, bitorder="little")) if not valid.all() else None
    return pa.Array.from_buffers(pa.binary(), n, [vbuf, pa.py_buffer(offsets),
                                                  pa.py_buffer(pairs.tobytes())],
                                 int(n - valid.sum()))


class GrowingTables:
    """Keeps the ``table`` dictionaries of one version-4 column of an Arrow IPC *file* on one
    list that only grows: an IPC file holds one dictionary per dictionary field (extended by
    deltas, never replaced), while each compressed batch brings its own tables.

    :meth:`extend` gives a batch's array the list of every table seen so far (its own added at
    the end) with its indices remapped; pyarrow's file writer then writes each batch's new
    tables as a delta, and a reader of the file hands every batch the whole list.

    Examples
    --------
    >>> import pyarrow as pa, fsstgpu
    >>> from fsstgpu.formats.arrow_storage import GrowingTables, to_extension_array
    >>> grow = GrowingTables()
    >>> a = grow.extend(to_extension_array(fsstgpu.compress(pa.array(["ab", "ab"]))))
    >>> b = grow.extend(to_extension_array(fsstgpu.compress(pa.array(["xyz", None]))))
    >>> [len(x.storage.field("table").dictionary) for x in (a, b)], b.to_pylist()
    ([1, 2], ['xyz', None])
    """

    def __init__(self):
        self._position: dict[bytes, int] = {}
        self._values: list[bytes] = []
        self._dictionary = None

    def extend(self, ext: pa.ExtensionArray) -> pa.ExtensionArray:
        """``ext`` (a version-4 array) with the growing list of tables as its dictionary."""
        storage = ext.storage
        child = storage.field("table")
        mapping = np.zeros(max(len(child.dictionary), 1), np.uint16)
        for j, value in enumerate(child.dictionary.to_pylist()):
            if value is not None:
                if value not in self._position:
                    self._position[value] = len(self._values)
                    self._values.append(value)
                    self._dictionary = None
                mapping[j] = self._position[value]
        if self._dictionary is None:
            self._dictionary = _binary_from_list(self._values or [b""],
                                                 TABLE_DICTIONARY.value_type)
        ind = child.indices  # read from its buffer: fill_null's scalar would import pandas
        data = ind.buffers()[1]
        indices = np.zeros(0, np.int64) if not len(ind) or data is None else np.frombuffer(
            data, integer_dtype(ind.type), count=len(ind),
            offset=ind.offset * ind.type.byte_width).astype(np.int64)
        indices = np.where(indices < len(mapping), indices, 0)  # garbage under nulls
        valid = child.is_valid().to_numpy(zero_copy_only=False) if child.null_count else None
        table = pa.DictionaryArray.from_arrays(
            _from_numpy(mapping[indices], TABLE_DICTIONARY.index_type, valid), self._dictionary)
        children = [storage.field(i) for i in range(storage.type.num_fields - 1)] + [table]
        mask = storage.is_null() if storage.null_count else None
        rebuilt = pa.StructArray.from_arrays(children, fields=list(storage.type), mask=mask)
        return pa.ExtensionArray.from_storage(ext.type, rebuilt)
