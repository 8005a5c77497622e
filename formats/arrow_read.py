"""``fsstgpu.fsst`` extension arrays read: into a CompressedStringArray, or decoded to a column.

:func:`from_extension_array` reads the storage of ``arrow.md`` back at memory speed: the storage's
buffers are checked (:func:`fsstgpu.arrow_layout.check_arrow`) before any child is read, the
lengths against what the codes can hold, the cuts to lie strictly inside their strings in
increasing order, and the split points are planned from lengths, code offsets and cuts
(:func:`fsstgpu.splits.plan_splits`). The codes themselves are checked when they are decoded. The
storage names each string's table (version 4: in a dictionary of the tables themselves, per
chunk; version 3: an index into the type's tables); the blocks are the runs of equal tables
(:func:`table_runs`), so an Arrow row operation reads back as the strings it selected. A
version-4 chunk, what files and row operations give, is read in one compiled pass over its rows
without the GIL (:func:`fsstgpu.native.stored_rows`); anything unusual there is read the careful
way above, which names what is wrong.
Version-1 arrays (codes only) have their lengths and cuts derived from the codes
(:mod:`fsstgpu.scan`). :func:`decode_column` decodes a whole column, cut into chunks that fit
their type. The extension type (``arrow.py``) decodes through this module, so it reads only the
type's attributes and never imports the type's module.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from fsstgpu.arrays import CompressedStringArray
from fsstgpu.arrow_layout import buffer_values, check_arrow, from_arrow
from fsstgpu.bitmaps import slice_bitmap
from fsstgpu.checks import check_structure, length_sums
from fsstgpu.columns import decompress_column
from fsstgpu.device import resolve_device
from fsstgpu.errors import CorruptDataError
from fsstgpu.formats.table_child import EXTENSION_NAME, dictionary_tables, tables_in_data
from fsstgpu.gpu.decode import decompress_device
from fsstgpu.limits import MAX_TABLES
from fsstgpu.memory import pool_empty
from fsstgpu.native import running_sum, stored_rows as native_stored_rows
from fsstgpu.native.scan import ROWS_OK
from fsstgpu.scan import lengths_from_code_offsets, long_string_cuts
from fsstgpu.splits import plan_splits
from fsstgpu.symbol_table import MAX_SYMBOL_LENGTH, SymbolTable
from fsstgpu.types import INT32_MAX, integer_dtype, narrow_offsets

__all__ = ["EXTENSION_NAME", "MAX_BLOCKS", "decode_column", "from_extension_array",
           "is_fsst_type", "output_chunks", "table_runs"]


#: Version 3 reading: at most this many blocks (``CompressedStringArray``'s split_table is
#: uint16). It also bounds what an interleaving of tables costs the decoders, which hold a copy
#: of the table of every block (2.3 KiB each): 150 MiB at most, whatever the array.
MAX_BLOCKS = MAX_TABLES

#: consecutive chunks decoded as one group hold at most this many string bytes: a group's
#: storages are joined (a copy of their codes), worth it for small chunks, whose check and
#: decode cost a fixed ~0.2-0.5 ms each, and not for large ones (memory, a copy for nothing)
GROUP_BYTES = 32 << 20


def is_fsst_type(type_) -> bool:
    """Tell whether an Arrow type is the ``fsstgpu.fsst`` extension type.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.arrow import is_fsst_type
    >>> is_fsst_type(pa.string())
    False
    """
    return isinstance(type_, pa.ExtensionType) and type_.extension_name == EXTENSION_NAME


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
    if ftype.version == 4 and len(chunks) == 1 and len(chunks[0]):
        quick = _one_pass(ftype, chunks[0].storage)
        if quick is not None:
            return _assembled(ftype, *quick, chunked=isinstance(arr, pa.ChunkedArray),
                              one_pass=True)
    elif ftype.version == 4 and len(chunks) > 1 and len(arr):
        joined = _joined_storage(chunks)
        quick = None if joined is None else _one_pass(ftype, joined)
        if quick is not None:
            return _assembled(ftype, *quick, chunked=True, one_pass=True,
                              chunk_lengths=np.array([len(c) for c in chunks], np.int64))
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
    if ftype.version == 4:
        tables, per_row = tables_in_data([f[3] for f in flat], n, plain.validity)
        tables, block_starts = table_runs(tables, per_row, plain.validity)
    elif ftype.version == 3:
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
    return _assembled(ftype, tables, block_starts, plain.data, plain.offsets, lengths,
                      plain.validity, plain.null_count, cuts,
                      chunked=isinstance(arr, pa.ChunkedArray), chunk_lengths=plain.chunk_lengths)


def _assembled(ftype, tables, block_starts, codes, code_offsets, lengths, validity, null_count,
               cuts, *, chunked: bool, chunk_lengths=None,
               one_pass: bool = False) -> CompressedStringArray:
    """The CompressedStringArray of a read storage: its split points planned, structurally
    checked (``chunk_lengths`` kept only for a chunked input, whose chunks it gives back;
    ``one_pass``: read by :func:`_one_pass`, which checked every row already)."""
    out_offsets = pool_empty(len(lengths) + 1, np.int64)  # warm pages: see fsstgpu.memory
    running_sum(lengths, out_offsets)
    split_codes, split_out, split_table = plan_splits(code_offsets, lengths, block_starts,
                                                      ftype.split_size, cuts, out_offsets)
    if chunked and chunk_lengths is None:
        chunk_lengths = np.array([len(lengths)], np.int64)
    carr = CompressedStringArray(
        type=ftype.value_type, length=len(lengths), tables=tables, block_starts=block_starts,
        codes=codes, code_offsets=code_offsets, lengths=lengths, validity=validity,
        null_count=null_count, split_size=ftype.split_size, split_codes=split_codes,
        split_out=split_out, split_table=split_table,
        chunk_lengths=chunk_lengths if chunked else None,
    )
    if one_pass:  # every row checked already: the rest of the structure here
        check_structure(carr, rows_checked=out_offsets)
        carr._checked = True  # what validate(full=False) records (columns.py does the same)
    else:
        carr.validate(full=False)
    return carr


def _one_pass(ftype, storage: pa.StructArray):
    """A version-4 chunk read in one compiled pass over its rows (the GIL released:
    :func:`fsstgpu.native.stored_rows`): the arguments of :func:`_assembled` but ``chunked``, or
    None when anything is unusual or off (then :func:`from_extension_array` reads it the careful
    way, which names the fault, or drops codes stored under null strings). The careful way's NumPy
    passes and temporaries cost about as much as decoding the chunk's strings."""
    n = len(storage)
    try:
        storage.validate()  # buffer sizes and child lengths, recursively
        codes, lengths, cuts, table = (storage.field(ftype.storage_type.get_field_index(k))
                                       for k in ("codes", "lengths", "cuts", "table"))
        if (codes.type != pa.large_binary() or not pa.types.is_dictionary(table.type)
                or table.type.index_type != pa.uint16()
                or lengths.type not in (pa.uint32(), pa.uint64())):
            return None
        offsets = buffer_values(codes.buffers()[1], np.int64, codes.offset, n + 1)
        data = codes.buffers()[2]
        data = np.zeros(0, np.uint8) if data is None else np.frombuffer(data, np.uint8)
        wide = lengths.type == pa.uint64()
        values = buffer_values(lengths.buffers()[1], np.uint64 if wide else np.uint32,
                               lengths.offset, n)
        index = buffer_values(table.indices.buffers()[1], np.uint16, table.indices.offset, n)
        table_of, distinct = dictionary_tables(table.dictionary, index)
        status, nulls, code_offsets, lens, starts, ids = native_stored_rows(
            n, _bits(storage), _bits(codes), offsets, len(data), _bits(lengths), values,
            _bits(table), index, table_of)
    except (CorruptDataError, pa.ArrowException, ValueError):  # the careful read names it
        return None
    declared = [a.null_count for a in (storage, codes, lengths, table)]
    if status != ROWS_OK or nulls != declared or len(starts) - 1 > MAX_BLOCKS:
        return None
    row_nulls = nulls[0]
    validity = (slice_bitmap(np.frombuffer(storage.buffers()[0], np.uint8), storage.offset, n)
                if row_nulls else None)
    tables = (tuple(distinct[i] for i in ids.tolist()) if row_nulls < n
              else (SymbolTable([]),))
    # (the lengths' total is bounded already: stored_rows fitted every length to its codes)
    check_arrow(cuts, f"{EXTENSION_NAME} storage, field 'cuts'")
    cut_arrays = _unpack_cuts([cuts], code_offsets, lens, 8 if wide else 4, rows=validity)
    return (tables, starts, data[int(offsets[0]):int(offsets[-1])], code_offsets, lens,
            validity, row_nulls, cut_arrays)


def _joined_storage(chunks) -> pa.StructArray | None:
    """Several chunks' storage as one array, for one pass over all their rows (a file's small
    row groups checked at once: each check's fixed cost, Python under the GIL, is paid once),
    or None when a chunk is malformed (the careful read names it). Each chunk is validated in
    full first: joining differing table dictionaries reads every index through a map."""
    try:
        storages = [c.storage for c in chunks]
        for storage in storages:
            storage.validate(full=True)
        return pa.concat_arrays(storages)
    except (pa.ArrowException, ValueError):
        return None


def _bits(array: pa.Array):
    """``(bitmap, first bit)`` of an array's validity, or None without one."""
    buffer = array.buffers()[0]
    return None if buffer is None else (np.frombuffer(buffer, np.uint8), array.offset)


def _check_valid_rows(ftype, storages, flat) -> None:
    """Every valid string has its codes, its length and (version 3) its table: a child null
    under a valid row is not what any writer or Arrow row operation makes (taking a null index
    nulls the struct row), and reading it would decode the row as null or use the value
    beneath the null."""
    names = ("codes", "lengths") + (("table",) if ftype.version >= 3 else ())
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
    >>> from fsstgpu.formats.arrow_read import table_runs
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
            raw = buffer_values(part.buffers()[1], integer_dtype(part.type), part.offset, m)
            if raw.dtype == np.uint64 and int(raw.max()) >= 2**62:
                raise CorruptDataError(f"{EXTENSION_NAME}: a length of {int(raw.max())} bytes")
            out[pos : pos + m] = raw
        pos += m
    return out


def _unpack_cuts(parts, code_offsets, lengths, width: int, rows=None):
    """The stored cuts as absolute (code, output, row) arrays, checked to lie strictly inside
    their strings and to increase. ``width``: bytes per stored offset (the lengths' width);
    ``rows``: the struct's validity bitmap, when ``parts`` do not have its nulls applied (cuts
    stored under a null string are not read)."""
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
    if rows is not None:
        sizes = np.where(np.unpackbits(rows, count=n, bitorder="little").astype(bool), sizes, 0)
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


def output_chunks(lengths, limit: int) -> np.ndarray:
    """Chunk lengths cutting items of these ``lengths`` into runs of at most ``limit`` in total
    (an item longer than ``limit`` gets a chunk of its own).

    Examples
    --------
    >>> from fsstgpu.formats.arrow_read import output_chunks
    >>> output_chunks([3, 3, 3, 9, 1], limit=6).tolist()
    [2, 1, 1, 1]
    """
    ends = np.cumsum(np.asarray(lengths, dtype=np.int64))
    chunks = []
    start = 0
    while start < len(ends):
        base = int(ends[start - 1]) if start else 0
        stop = max(int(np.searchsorted(ends, base + limit, side="right")), start + 1)
        chunks.append(stop - start)
        start = stop
    return np.array(chunks, dtype=np.int64)


def _length_bound(lengths: pa.Array) -> float:
    """The sum of an integer array's stored values, those under nulls included (at least the
    sum of its valid values: lengths are unsigned), from its buffer, as a float (no overflow)."""
    if not len(lengths):
        return 0.0
    if not pa.types.is_unsigned_integer(lengths.type) or lengths.buffers()[1] is None:
        return float("inf")  # not a storage we wrote: from_extension_array names the fault
    dtype = integer_dtype(lengths.type)
    values = np.frombuffer(lengths.buffers()[1], dtype)[lengths.offset:][: len(lengths)]
    return float(values.sum(dtype=np.float64))


def _decodable(col, max_bytes: int):
    """``col``'s arrays as groups to decode, each a list of arrays (a ChunkedArray's chunks),
    cut where needed so that none decodes to more than ``max_bytes`` (for value types of int32
    offsets; others: ``[col]``, the column as one group).

    Version 2 and later store each string's length, which bounds the pieces exactly; the sum
    of the stored values, nulls' included, decides first without a pass of pyarrow's
    (``fill_null``, then a copy: 7% of a file's CPU read of many small chunks). Consecutive
    chunks whose bounds fit ``max_bytes`` and :data:`GROUP_BYTES` together form one group (read
    and decoded as one: a check's and a decode's fixed costs, Python under the GIL, paid once
    for a file's many small row groups). For version 1 a code byte decodes to at most
    MAX_SYMBOL_LENGTH bytes, so a piece of at most ``max_bytes // MAX_SYMBOL_LENGTH`` code
    bytes is small enough whatever it holds. A type with block starts (versions 1 and 2 of
    several tables) counts them in rows of the whole array, so it is not cut; versions 3 and 4
    name each string's table in the storage, which a slice keeps.
    """
    if not narrow_offsets(col.type.value_type):
        yield [col]
        return
    arrays = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
    if len(col.type.block_starts):  # (versions 1 and 2 of several tables)
        yield [pa.concat_arrays(arrays) if len(arrays) > 1 else arrays[0]]
        return
    group, size = [], 0.0
    for arr in arrays:
        if col.type.version == 1:
            limit = max(max_bytes // MAX_SYMBOL_LENGTH, 1)
            sizes = np.diff(from_arrow(arr.storage).offsets)  # nulls: none
            bound = float(sizes.sum())
        else:
            limit, lengths = max_bytes, arr.storage.field("lengths")
            bound = _length_bound(lengths)
            sizes = (None if bound <= limit  # small enough: no pass needed
                     else lengths.fill_null(0).to_numpy(zero_copy_only=False))
            if sizes is not None:
                bound = float(sizes.sum())
        if bound <= limit:  # (the bound counts values under nulls)
            if group and size + bound > min(limit, GROUP_BYTES):
                yield group
                group, size = [], 0.0
            group.append(arr)
            size += bound
            continue
        if group:
            yield group
            group, size = [], 0.0
        start = 0
        for rows in output_chunks(sizes, limit):
            yield [arr.slice(start, int(rows))]
            start += int(rows)
    if group:
        yield group


def _read_group(group: list, ftype) -> CompressedStringArray:
    """A group of :func:`_decodable` as one CompressedStringArray (several arrays: chunked, so
    that their decode gives back their chunks; their storage checked in one pass,
    :func:`from_extension_array`)."""
    return from_extension_array(group[0] if len(group) == 1
                                else pa.chunked_array(group, type=ftype))


def decode_column(col, device: str = "cpu", *, max_chunk_bytes: int = INT32_MAX):
    """Decode one ``fsstgpu.fsst`` column (Array or ChunkedArray) to a host Arrow column.

    Returns ``(values, string_bytes)``: the plain values (dictionary columns as their plain
    values), an Array, or a ChunkedArray when the column is cut: a ``string`` / ``binary``
    column comes back in chunks that hold at most ``max_chunk_bytes`` bytes each, since one
    array of these types holds at most 2**31 - 1 bytes.

    Raises
    ------
    CorruptDataError
        When the codes do not decode.

    Examples
    --------
    >>> import pyarrow as pa, fsstgpu
    >>> from fsstgpu.formats.arrow_storage import to_extension_array
    >>> from fsstgpu.formats.arrow_read import decode_column
    >>> col = to_extension_array(fsstgpu.compress(pa.array(["ab", "cd", "ef"] * 4)))
    >>> values, nbytes = decode_column(col, max_chunk_bytes=10)
    >>> values.num_chunks > 1, values.to_pylist() == ["ab", "cd", "ef"] * 4, nbytes
    (True, True, 24)
    """
    ftype = col.type
    on_gpu = resolve_device(device) == "gpu"
    out, total = [], 0

    def decoded(group):
        carr = _read_group(group, ftype)
        values = decompress_device(carr).to_arrow() if on_gpu else decompress_column(carr)
        return values.chunks if isinstance(values, pa.ChunkedArray) else [values], carr

    for group in _decodable(col, max_chunk_bytes):
        try:
            chunks, carr = decoded(group)
        except CorruptDataError:
            if len(group) == 1:
                raise
            # the fault named as a lone chunk names it (and a group that reads only apart,
            # such as one of more table runs than a column holds, still reads)
            pieces = [decoded([arr]) for arr in group]
            chunks = [c for piece, _ in pieces for c in piece]
            total += sum(int(carr.uncompressed_bytes) for _, carr in pieces)
            out.extend(chunks)
            continue
        out.extend(chunks)
        total += int(carr.uncompressed_bytes)
    if len(out) == 1:
        return out[0], total
    return pa.chunked_array(out, type=ftype.value_type), total
