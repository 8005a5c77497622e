"""CompressedStringArray <-> ``fsstgpu.fsst`` extension arrays (the storage of ``arrow.md``).

:func:`to_extension_array` lays a compressed column out as the version-2 storage struct: the codes
per string (zero-copy from ``codes`` + ``code_offsets`` + ``validity``), the lengths, and the cuts
inside strings longer than ``S``, taken from the column's own split points. Nothing is walked.

:func:`from_extension_array` reads it back at memory speed: the storage's buffers are checked
(:func:`fsstgpu.arrow_layout.check_arrow`) before any child is read, the lengths against what the
codes can hold, the cuts to lie strictly inside their strings in increasing order, and the split
points are planned from lengths, code offsets and cuts (:func:`fsstgpu.splits.plan_splits`). The
codes themselves are checked when they are decoded. A multi-table array (version 3) names each
string's table in the storage; its blocks are the runs of equal tables (:func:`table_runs`), so
an Arrow row operation on it reads back as the strings it selected. Version-1 arrays (codes only)
have their lengths and cuts derived from the codes (:mod:`fsstgpu.scan`).

>>> import pyarrow as pa, fsstgpu
>>> from fsstgpu.formats.arrow_storage import to_extension_array, from_extension_array
>>> col = pa.array(["http://a.example", None, "http://b.example"])
>>> ext = to_extension_array(fsstgpu.compress(col))
>>> ext.type.extension_name, ext.storage.type.names
('fsstgpu.fsst', ['codes', 'lengths', 'cuts'])
>>> fsstgpu.decompress(from_extension_array(ext), device="cpu").equals(col)
True
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from fsstgpu.arrays import CompressedStringArray
from fsstgpu.arrow_layout import buffer_values, check_arrow, from_arrow, slice_bitmap
from fsstgpu.checks import length_sums
from fsstgpu.errors import CorruptDataError
from fsstgpu.formats.arrow import (
    EXTENSION_NAME,
    FsstType,
    distinct_tables,
    extension_type_for,
    is_fsst_type,
)
from fsstgpu.limits import MAX_TABLES
from fsstgpu.scan import lengths_from_code_offsets, long_string_cuts
from fsstgpu.splits import interior_cuts, plan_splits

__all__ = ["from_extension_array", "table_runs", "to_extension_array"]

#: Version 3 reading: at most this many blocks (``CompressedStringArray``'s split_table is
#: uint16). It also bounds what an interleaving of tables costs the decoders, which hold a copy
#: of the table of every block (2.3 KiB each): 150 MiB at most, whatever the array.
MAX_BLOCKS = MAX_TABLES


def to_extension_array(carr, *, codes_type=None, dictionary_type=None,
                       ext_type=None) -> pa.ExtensionArray:
    """Wrap a CompressedStringArray as an ``fsstgpu.fsst`` extension array (version 2).

    Zero-copy for the codes with the default ``large_binary`` codes type; the lengths are
    narrowed to the storage's width and the cuts packed. ``carr.chunk_lengths`` is not kept (the
    result is one array).

    Parameters
    ----------
    carr : CompressedStringArray
    codes_type : pyarrow.DataType, optional
        ``pa.large_binary()`` (default) or ``pa.binary()`` (needs fewer than 2**31 code bytes).
    dictionary_type : pyarrow.DictionaryType, optional
        Record that the original column was dictionary-encoded with this type.
    ext_type : FsstType, optional
        Use exactly this type (it must describe ``carr``: same tables, value type and split
        size), e.g. the column type of a file being written.

    Returns
    -------
    pyarrow.ExtensionArray

    Examples
    --------
    >>> import pyarrow as pa, fsstgpu
    >>> from fsstgpu.formats.arrow_storage import to_extension_array
    >>> ext = to_extension_array(fsstgpu.compress(pa.array(["ab", None])))
    >>> ext.storage.field("lengths").to_pylist(), ext.storage.is_null().to_pylist()
    ([2, 0], [False, True])
    """
    derived = extension_type_for(carr, codes_type=codes_type, dictionary_type=dictionary_type)
    if ext_type is None:
        ext_type = derived
    elif not (
        isinstance(ext_type, FsstType) and ext_type.version == derived.version
        and ext_type.tables == derived.tables and ext_type.value_type == derived.value_type
        and ext_type.split_size == derived.split_size
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
    if n and int(lengths.max()) > np.iinfo(width.to_pandas_dtype()).max:
        raise ValueError(f"a string of {int(lengths.max())} bytes does not fit {width} lengths")
    lengths_arr = pa.array(lengths.astype(width.to_pandas_dtype()), type=width)
    cuts_arr = _pack_cuts(carr, code_offsets, np.dtype(width.to_pandas_dtype()))
    children = [codes_arr, lengths_arr, cuts_arr]
    if ext_type.version == 3:  # each string's table, so that row operations carry it along
        _, index = distinct_tables(carr.tables)
        per_row = np.repeat(index.astype(np.uint16), np.diff(carr.block_starts))
        children.append(pa.array(per_row, pa.uint16()))
    storage = pa.StructArray.from_arrays(children, fields=list(storage_type), mask=_mask(carr))
    return pa.ExtensionArray.from_storage(ext_type, storage)


def _mask(carr):
    if carr.validity is None or not carr.null_count:
        return None
    return pa.array(~np.unpackbits(carr.validity, count=carr.length, bitorder="little")
                    .astype(bool))


def _pack_cuts(carr, code_offsets, dtype) -> pa.Array:
    """The split starts inside strings, per string: (code, output) offsets from its start."""
    n = int(carr.length)
    code, out, rows = interior_cuts(code_offsets, carr.lengths, carr.split_codes, carr.split_out)
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


def from_extension_array(arr) -> CompressedStringArray:
    """Read an ``fsstgpu.fsst`` array (or chunked array) back into a CompressedStringArray.

    Structurally checked (:meth:`CompressedStringArray.validate` with ``full=False``); the codes
    are checked when decoded. A chunked input gives ``chunk_lengths``, so
    :func:`fsstgpu.decompress` returns the same chunks.

    Raises
    ------
    TypeError
        When ``arr`` is not of type ``fsstgpu.fsst``.
    CorruptDataError
        When the storage is inconsistent (offsets, lengths, cuts, block starts, tables; a
        valid string with a null ``codes``, ``lengths`` or ``table`` entry), or a multi-table
        array was reordered into more than :data:`MAX_BLOCKS` runs of one table.

    Examples
    --------
    >>> import pyarrow as pa, fsstgpu
    >>> from fsstgpu.formats.arrow_storage import from_extension_array, to_extension_array
    >>> carr = fsstgpu.compress(pa.array(["abc", "abd"]))
    >>> back = from_extension_array(to_extension_array(carr))
    >>> back.equals(carr), fsstgpu.decompress(back, device="cpu").to_pylist()
    (True, ['abc', 'abd'])
    """
    if not isinstance(arr, (pa.Array, pa.ChunkedArray)) or not is_fsst_type(arr.type):
        got = getattr(arr, "type", type(arr).__name__)
        raise TypeError(f"expected an {EXTENSION_NAME} array, got {got}")
    ftype = arr.type
    chunks = arr.chunks if isinstance(arr, pa.ChunkedArray) else [arr]
    storages = [c.storage for c in chunks]
    for k, storage in enumerate(storages):  # before any child is read
        check_arrow(storage, f"{EXTENSION_NAME} storage"
                    + (f" (chunk {k})" if len(storages) > 1 else ""))
    flat = None
    if ftype.version == 1:
        codes_col = storages
    else:
        flat = [s.flatten() for s in storages]  # the struct's nulls applied to its children
        _check_valid_rows(ftype, storages, flat)
        codes_col = [f[0] for f in flat]
    codes_storage = pa.chunked_array(codes_col, type=ftype.codes_type)
    plain = from_arrow(codes_storage)  # int64 offsets from 0; checked; bytes under nulls dropped
    n = len(plain)
    if ftype.version == 3:
        tables, block_starts = table_runs(
            ftype.tables, _unpack_values([f[3] for f in flat], n, np.uint16), plain.validity)
    else:
        tables = ftype.tables
        block_starts = np.concatenate([[0], ftype.block_starts, [n]]).astype(np.int64)
        if len(ftype.tables) > 1 and int(ftype.block_starts[-1]) > n:
            raise CorruptDataError(f"{EXTENSION_NAME}: block starts run past the {n} strings")
    if ftype.version == 1:
        lengths = lengths_from_code_offsets(tables, block_starts, plain.data, plain.offsets)
        cuts = long_string_cuts(tables, block_starts, plain.data, plain.offsets, lengths,
                                ftype.split_size)
    else:
        lengths = _unpack_values([f[1] for f in flat], n)
        if plain.validity is not None:
            lengths[~np.unpackbits(plain.validity, count=n, bitorder="little").astype(bool)] = 0
        length_sums(lengths, len(plain.data))  # before the plan sizes anything by them
        width = 8 if ftype.storage_type.field("lengths").type == pa.uint64() else 4
        cuts = _unpack_cuts([f[2] for f in flat], plain.offsets, lengths, width)
    split_codes, split_out, split_table = plan_splits(plain.offsets, lengths, block_starts,
                                                      ftype.split_size, cuts)
    carr = CompressedStringArray(
        type=ftype.value_type, length=n, tables=tables, block_starts=block_starts,
        codes=plain.data, code_offsets=plain.offsets, lengths=lengths, validity=plain.validity,
        null_count=plain.null_count, split_size=ftype.split_size, split_codes=split_codes,
        split_out=split_out, split_table=split_table,
        chunk_lengths=plain.chunk_lengths if isinstance(arr, pa.ChunkedArray) else None,
    )
    carr.validate(full=False)
    return carr


def _check_valid_rows(ftype, storages, flat) -> None:
    """Every valid string has its codes, its length and (version 3) its table: a child null
    under a valid row is not what any writer or Arrow row operation makes (taking a null index
    nulls the struct row), and reading it would decode the row as null or use the value
    beneath the null."""
    names = ("codes", "lengths") + (("table",) if ftype.version == 3 else ())
    for k, (storage, children) in enumerate(zip(storages, flat, strict=True)):
        for name in names:
            # the flattened child is null where the struct or the child is: the counts agree
            # exactly when the child has no null of its own under a valid row
            if children[ftype.storage_type.get_field_index(name)].null_count != storage.null_count:
                where = f" (chunk {k})" if len(storages) > 1 else ""
                raise CorruptDataError(f"{EXTENSION_NAME} storage{where}: a valid string has a "
                                       f"null {name!r} entry")


def table_runs(tables, per_row, validity):
    """Version 3: the blocks (runs of strings of one table) and their tables, from each string's
    table index ``per_row``; null strings join the block before them (they have no codes).

    Raises CorruptDataError for an index past the tables, or for more than :data:`MAX_BLOCKS`
    blocks: a row operation that reorders strings (a take by a permutation, a sort) can
    interleave the tables string by string.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import SymbolTable
    >>> from fsstgpu.formats.arrow_storage import table_runs
    >>> a, b = SymbolTable([b"ab"]), SymbolTable([b"cd"])
    >>> found, starts = table_runs((a, b), np.array([0, 0, 1, 1, 0]), None)
    >>> found == (a, b, a), starts.tolist()
    (True, [0, 2, 4, 5])
    """
    n = len(per_row)
    ids, where = np.asarray(per_row), None
    if validity is not None:  # only valid strings decide the runs: nulls have no codes
        where = np.flatnonzero(np.unpackbits(validity, count=n, bitorder="little"))
        ids = ids[where]
    if len(ids) and int(ids.max()) >= len(tables):
        raise CorruptDataError(f"{EXTENSION_NAME} storage: a string names table "
                               f"{int(ids.max())} of {len(tables)}")
    change = np.flatnonzero(ids[1:] != ids[:-1]) + 1
    starts = np.empty(len(change) + 2, np.int64)
    starts[0], starts[-1] = 0, n
    # a run starts at its first valid string; the nulls before it stay in the run before
    starts[1:-1] = change if where is None else where[change]
    if len(starts) - 1 > MAX_BLOCKS:
        raise CorruptDataError(
            f"{EXTENSION_NAME}: the {n} strings switch between the {len(tables)} tables "
            f"{len(starts) - 2} times, more than a multi-table array can be read with "
            f"({MAX_BLOCKS} blocks): a row operation (take, sort, concatenation) reordered it "
            "after compression. Decode it first (FsstArray.decoded(), fsstgpu.decompress) and "
            "then reorder, or compress with one table (fsstgpu.compress(..., table=...))")
    first = ids[np.concatenate([[0], change])].tolist() if len(ids) else [0]
    return tuple(tables[k] for k in first), starts


def _unpack_values(parts, n: int, dtype=np.int64) -> np.ndarray:
    """The lengths (or table) children's values (nulls read as their stored values) as one
    array of ``dtype``."""
    out = np.empty(n, dtype)
    pos = 0
    for part in parts:
        m = len(part)
        if m:
            raw = buffer_values(part.buffers()[1], part.type.to_pandas_dtype(), part.offset, m)
            if raw.dtype == np.uint64 and int(raw.max()) >= 2**62:
                raise CorruptDataError(f"{EXTENSION_NAME}: a length of {int(raw.max())} bytes")
            out[pos : pos + m] = raw
        pos += m
    return out


def _unpack_cuts(parts, code_offsets, lengths, width: int):
    """The stored cuts as absolute (code, output, row) arrays, checked to lie strictly inside
    their strings and to increase. ``width``: bytes per stored offset (the lengths' width)."""
    empty = np.zeros(0, np.int64)
    if not parts:  # a chunked array without chunks
        return empty, empty, empty
    cuts = pa.concat_arrays(parts) if len(parts) != 1 else parts[0]
    n = len(cuts)
    if n == 0 or cuts.null_count == n:
        return empty, empty, empty
    validity, offsets, data = cuts.buffers()
    offs = buffer_values(offsets, np.int32, cuts.offset, n + 1).astype(np.int64)
    sizes = np.diff(offs)
    if cuts.null_count:
        bits = slice_bitmap(np.frombuffer(validity, np.uint8), cuts.offset, n)
        sizes = np.where(np.unpackbits(bits, count=n, bitorder="little").astype(bool), sizes, 0)
    data = np.zeros(0, np.uint8) if data is None else np.frombuffer(data, np.uint8)
    if np.any(sizes < 0) or offs[0] < 0 or offs[-1] > len(data):
        raise CorruptDataError(f"{EXTENSION_NAME}: the cuts' offsets are out of order or bounds")
    if np.any(sizes % (2 * width)):
        raise CorruptDataError(f"{EXTENSION_NAME}: a string's cuts are not pairs of "
                               f"{width}-byte offsets")
    starts = offs[:-1][sizes > 0]
    raw = _gather_bytes(data, starts, sizes[sizes > 0])
    pairs = raw.view(f"<u{width}").reshape(-1, 2).astype(np.int64)
    rows = np.repeat(np.arange(n, dtype=np.int64), sizes // (2 * width))
    out_offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=out_offsets[1:])
    code_len = np.diff(code_offsets)[rows]
    if np.any(pairs <= 0) or np.any(pairs[:, 0] >= code_len) or np.any(
            pairs[:, 1] >= lengths[rows]):
        raise CorruptDataError(f"{EXTENSION_NAME}: a cut lies outside its string")
    code = code_offsets[rows] + pairs[:, 0]
    out = out_offsets[rows] + pairs[:, 1]
    if np.any(np.diff(code) <= 0) or np.any(np.diff(out) <= 0):
        raise CorruptDataError(f"{EXTENSION_NAME}: a string's cuts do not increase")
    return code, out, rows


def _gather_bytes(data, starts, sizes) -> np.ndarray:
    """The bytes ``data[starts[i]:starts[i] + sizes[i]]`` for every i, concatenated."""
    if not len(starts):
        return np.zeros(0, np.uint8)
    ends = np.cumsum(sizes)
    if starts[-1] + sizes[-1] - starts[0] == ends[-1]:  # contiguous: the usual case
        return data[starts[0] : starts[0] + ends[-1]]
    index = np.arange(int(ends[-1]), dtype=np.int64) + np.repeat(starts - (ends - sizes), sizes)
    return data[index]
