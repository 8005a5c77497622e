"""The ``fsstgpu.fsst`` Arrow extension type: an FSST-compressed string column inside Arrow.

Specification: ``formats/arrow.md`` (beside this module). In short:

* **storage** is ``large_binary`` (or ``binary``): value ``i`` is string ``i``'s FSST codes, a null
  is a null. A reader without fsstgpu opens the column as plain binary.
* **extension metadata** (serialised bytes, versioned, CRC-checked) holds what the codes alone do
  not: the symbol table(s), the original Arrow type (dictionary encoding included), ``S`` (the
  split size) and, only for a multi-block array, the block starts.
* the **uncompressed lengths** and the **split points** are not stored: both follow from the codes
  and the tables in one pass over the codes (a string's length is the sum of its codes' symbol
  lengths, an escape counting 1), done by :func:`from_extension_array`.

Because the metadata holds no per-row data, one type (one table per column) describes every
record batch / row group of a file: that is what lets Parquet and IPC writers, which keep one
schema per file, store the column.

>>> import pyarrow as pa, fsstgpu
>>> from fsstgpu.formats.arrow import to_extension_array, from_extension_array
>>> col = pa.array(["http://a.example", None, "http://b.example"])
>>> ext = to_extension_array(fsstgpu.compress(col))
>>> ext.type.extension_name, ext.storage.type
('fsstgpu.fsst', DataType(large_binary))
>>> fsstgpu.decompress(from_extension_array(ext), device="cpu").equals(col)
True
"""

from __future__ import annotations

import struct
import zlib

import numba
import numpy as np
import pyarrow as pa

from fsstgpu.errors import CorruptDataError
from fsstgpu.symbol_table import ESCAPE, SymbolTable
from fsstgpu.types import SUPPORTED_TYPES

EXTENSION_NAME = "fsstgpu.fsst"
MAGIC = b"FSAX"
VERSION = 1

#: Original value types, by their one-byte code: the blob format's codes, from the one table.
VALUE_TYPES = SUPPORTED_TYPES
#: Dictionary index types, by their one-byte code minus one (0 means "not dictionary-encoded").
INDEX_TYPES = (
    pa.int8(), pa.int16(), pa.int32(), pa.int64(),
    pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64(),
)
STORAGE_TYPES = (pa.large_binary(), pa.binary())

_HEADER = struct.Struct("<4sBBBBQH")  # magic, version, value type, index type, flags, S, ntables
_FLAG_ORDERED = 1


class FsstType(pa.ExtensionType):
    """Arrow extension type ``fsstgpu.fsst``: FSST codes per string in a binary storage column.

    Parameters
    ----------
    storage_type : pyarrow.DataType
        ``pa.large_binary()`` or ``pa.binary()``.
    value_type : pyarrow.DataType
        The original string / binary type the codes decode to.
    tables : sequence of SymbolTable
        One per block (one for a column of a file).
    split_size : int
        ``S``, the target uncompressed bytes per split (>= 1).
    block_starts : sequence of int, optional
        Interior block starts (``len(tables) - 1`` of them) when there are several tables;
        they tie the type to one array's length.
    index_type : pyarrow.DataType, optional
        When the original column was dictionary-encoded: its index type.
    ordered : bool
        The original dictionary type's ``ordered`` flag.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu import SymbolTable
    >>> from fsstgpu.formats.arrow import FsstType
    >>> t = FsstType(pa.large_binary(), pa.string(), [SymbolTable([b"ab"])], 4096)
    >>> FsstType.__arrow_ext_deserialize__(t.storage_type, t.__arrow_ext_serialize__()) == t
    True
    >>> t.original_type
    DataType(string)
    """

    def __init__(self, storage_type, value_type, tables, split_size, block_starts=None,
                 index_type=None, ordered=False):
        if storage_type not in STORAGE_TYPES:
            raise TypeError(f"fsstgpu.fsst storage is large_binary or binary, not {storage_type}")
        if value_type not in VALUE_TYPES:
            raise TypeError(f"fsstgpu.fsst decodes to a string/binary type, not {value_type}")
        if index_type is not None and index_type not in INDEX_TYPES:
            raise TypeError(f"dictionary index type must be an integer type, not {index_type}")
        tables = tuple(tables)
        if not 1 <= len(tables) <= 65535:
            raise ValueError(f"fsstgpu.fsst needs 1 to 65535 tables, not {len(tables)}")
        if any(not isinstance(t, SymbolTable) for t in tables):
            raise TypeError("tables must be SymbolTable instances")
        split_size = int(split_size)
        if not 1 <= split_size < 2**63:
            raise ValueError(f"split_size must be at least 1, not {split_size}")
        starts = np.asarray([] if block_starts is None else block_starts, dtype=np.int64)
        if len(starts) != len(tables) - 1:
            raise ValueError(
                f"{len(tables)} tables need {len(tables) - 1} interior block starts, "
                f"got {len(starts)}"
            )
        if starts.size and (starts[0] < 0 or np.any(np.diff(starts) < 0)):
            raise ValueError("block starts must be non-negative and non-decreasing")
        self.value_type = value_type
        self.tables = tables
        self.split_size = split_size
        self.block_starts = starts
        self.block_starts.flags.writeable = False
        self.index_type = index_type
        self.ordered = bool(ordered) and index_type is not None
        self._serialised = _serialise(self)
        super().__init__(storage_type, EXTENSION_NAME)

    @property
    def original_type(self) -> pa.DataType:
        """The column's type before compression (a dictionary type when it was one)."""
        if self.index_type is None:
            return self.value_type
        return pa.dictionary(self.index_type, self.value_type, self.ordered)

    def with_storage(self, storage_type) -> FsstType:
        """The same type over another storage type (``binary`` or ``large_binary``)."""
        return FsstType(storage_type, self.value_type, self.tables, self.split_size,
                        self.block_starts, self.index_type, self.ordered)

    def __arrow_ext_serialize__(self) -> bytes:
        return self._serialised

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type, serialized) -> FsstType:
        return parse_metadata(storage_type, serialized)

    # pyarrow's default equality ignores the metadata; two columns with different tables must
    # not compare equal (a writer would then accept a batch its schema cannot decode).
    def __eq__(self, other) -> bool:
        return (isinstance(other, FsstType) and self.storage_type == other.storage_type
                and self._serialised == other._serialised)

    def __ne__(self, other) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash((EXTENSION_NAME, str(self.storage_type), self._serialised))

    def __reduce__(self):
        return parse_metadata, (self.storage_type, self._serialised)

    def __repr__(self) -> str:
        return (f"FsstType({self.original_type}, {len(self.tables)} table(s), "
                f"S={self.split_size}, storage={self.storage_type})")

    def __str__(self) -> str:
        return f"extension<{EXTENSION_NAME}[{self.original_type}]>"


def _serialise(t: FsstType) -> bytes:
    index_code = 0 if t.index_type is None else INDEX_TYPES.index(t.index_type) + 1
    flags = _FLAG_ORDERED if t.ordered else 0
    parts = [
        _HEADER.pack(MAGIC, VERSION, VALUE_TYPES.index(t.value_type), index_code, flags,
                     t.split_size, len(t.tables)),
        t.block_starts.astype("<i8").tobytes(),
        *(table.to_bytes() for table in t.tables),
    ]
    body = b"".join(parts)
    return body + struct.pack("<I", zlib.crc32(body))


def parse_metadata(storage_type, serialized) -> FsstType:
    """Rebuild an :class:`FsstType` from its storage type and metadata bytes, validating both.

    Raises
    ------
    CorruptDataError
        When the metadata is truncated, has a bad magic, version, CRC, type code or table, or
        the storage type is not binary / large_binary; the message says which.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.arrow import parse_metadata
    >>> parse_metadata(pa.large_binary(), b"junk")
    Traceback (most recent call last):
    ...
    fsstgpu.errors.CorruptDataError: fsstgpu.fsst metadata: 4 bytes, too short for the header
    """
    data = bytes(serialized)
    what = "fsstgpu.fsst metadata"
    if storage_type not in STORAGE_TYPES:
        raise CorruptDataError(f"{what}: storage type {storage_type}, expected large_binary "
                               "or binary")
    if len(data) < _HEADER.size + 4:
        raise CorruptDataError(f"{what}: {len(data)} bytes, too short for the header")
    magic, version, value_code, index_code, flags, split_size, ntables = _HEADER.unpack_from(data)
    if magic != MAGIC:
        raise CorruptDataError(f"{what}: bad magic {magic!r}, expected {MAGIC!r}")
    if version != VERSION:
        raise CorruptDataError(f"{what}: unsupported version {version} (this reader: {VERSION})")
    (crc,) = struct.unpack_from("<I", data, len(data) - 4)
    if zlib.crc32(data[:-4]) != crc:
        raise CorruptDataError(f"{what}: CRC32 mismatch")
    if value_code >= len(VALUE_TYPES):
        raise CorruptDataError(f"{what}: unknown value type code {value_code}")
    if index_code > len(INDEX_TYPES):
        raise CorruptDataError(f"{what}: unknown dictionary index type code {index_code}")
    if flags & ~_FLAG_ORDERED or (flags and not index_code):
        raise CorruptDataError(f"{what}: invalid flags {flags:#x}")
    if split_size < 1 or split_size >= 2**63:
        raise CorruptDataError(f"{what}: invalid split size {split_size}")
    if ntables < 1:
        raise CorruptDataError(f"{what}: no symbol table")
    pos = _HEADER.size
    nstarts = ntables - 1
    if pos + 8 * nstarts > len(data) - 4:
        raise CorruptDataError(f"{what}: truncated block starts")
    starts = np.frombuffer(data, dtype="<i8", count=nstarts, offset=pos).astype(np.int64)
    pos += 8 * nstarts
    if starts.size and (starts[0] < 0 or np.any(np.diff(starts) < 0)):
        raise CorruptDataError(f"{what}: block starts are negative or decreasing")
    body = memoryview(data)[:-4]
    try:
        tables, pos = SymbolTable.read_many(body, pos, ntables)
    except CorruptDataError as exc:
        raise CorruptDataError(f"{what}: {exc}") from None
    if pos != len(body):
        raise CorruptDataError(f"{what}: {len(body) - pos} trailing bytes")
    return FsstType(storage_type, VALUE_TYPES[value_code], tables, split_size, starts,
                    INDEX_TYPES[index_code - 1] if index_code else None,
                    bool(flags & _FLAG_ORDERED))


def register() -> None:
    """Register ``fsstgpu.fsst`` with pyarrow; calling it again is harmless.

    ``import fsstgpu`` calls it. A second call (or a reload of this module) replaces the
    registration with this module's class, so that readers always build the current class.
    """
    prototype = FsstType(pa.large_binary(), pa.string(), [SymbolTable([])], 1)
    try:
        pa.register_extension_type(prototype)
    except pa.ArrowKeyError:
        pa.unregister_extension_type(EXTENSION_NAME)
        pa.register_extension_type(prototype)


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


def extension_type_for(carr, *, storage_type=None, dictionary_type=None) -> FsstType:
    """The :class:`FsstType` that :func:`to_extension_array` gives ``carr``.

    Tables repeated in every block collapse into one (the block starts then need not be
    stored, and the type is the same for every array compressed with that table).

    Parameters
    ----------
    carr : CompressedStringArray
    storage_type : pyarrow.DataType, optional
        ``pa.large_binary()`` (the default) or ``pa.binary()``.
    dictionary_type : pyarrow.DictionaryType, optional
        The original dictionary type when the column was dictionary-encoded (its value type
        must be ``carr.type``).
    """
    storage_type = pa.large_binary() if storage_type is None else storage_type
    tables = tuple(carr.tables)
    starts = np.asarray(carr.block_starts, dtype=np.int64)[1:-1]
    if len(tables) > 1 and all(t == tables[0] for t in tables[1:]):
        tables, starts = tables[:1], None
    index_type, ordered = None, False
    if dictionary_type is not None:
        if not pa.types.is_dictionary(dictionary_type):
            raise TypeError(f"dictionary_type must be a dictionary type, not {dictionary_type}")
        if dictionary_type.value_type != carr.type:
            raise TypeError(f"dictionary value type {dictionary_type.value_type} differs from "
                            f"the compressed type {carr.type}")
        index_type, ordered = dictionary_type.index_type, dictionary_type.ordered
    return FsstType(storage_type, carr.type, tables, carr.split_size, starts, index_type,
                    ordered)


def to_extension_array(carr, *, storage_type=None, dictionary_type=None,
                       ext_type=None) -> pa.ExtensionArray:
    """Wrap a CompressedStringArray as an ``fsstgpu.fsst`` extension array.

    Zero-copy for the default ``large_binary`` storage: the codes, the int64 code offsets and the
    validity bitmap become the storage's buffers. The split points and lengths are dropped (see
    the module docstring); ``carr.chunk_lengths`` is not kept (the result is one array).

    Parameters
    ----------
    carr : CompressedStringArray
    storage_type : pyarrow.DataType, optional
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
    >>> from fsstgpu.formats.arrow import to_extension_array
    >>> ext = to_extension_array(fsstgpu.compress(pa.array(["ab", None])))
    >>> ext.storage.is_null().to_pylist()
    [False, True]
    """
    derived = extension_type_for(carr, storage_type=storage_type,
                                 dictionary_type=dictionary_type)
    if ext_type is None:
        ext_type = derived
    elif not (
        isinstance(ext_type, FsstType) and ext_type.tables == derived.tables
        and ext_type.value_type == derived.value_type
        and ext_type.split_size == derived.split_size
        and np.array_equal(ext_type.block_starts, derived.block_starts)
    ):
        raise ValueError(f"{ext_type!r} does not describe this array ({derived!r})")
    codes = np.ascontiguousarray(carr.codes, dtype=np.uint8)
    offsets = np.ascontiguousarray(carr.code_offsets, dtype=np.int64)
    if ext_type.storage_type == pa.binary():
        if len(codes) > 2**31 - 1:
            raise ValueError(f"{len(codes)} code bytes do not fit binary storage; use large_binary")
        offsets = offsets.astype(np.int32)
    n = int(carr.length)
    vbuf = None
    if carr.validity is not None and carr.null_count:
        vbuf = pa.py_buffer(np.ascontiguousarray(carr.validity, dtype=np.uint8))
    storage = pa.Array.from_buffers(
        ext_type.storage_type, n, [vbuf, pa.py_buffer(offsets), pa.py_buffer(codes)],
        int(carr.null_count),
    )
    return pa.ExtensionArray.from_storage(ext_type, storage)


def _symbol_length_table(tables) -> np.ndarray:
    """(ntables, 256) int64: symbol length per code, -1 for a code without a symbol (255: 0)."""
    out = np.full((len(tables), 256), -1, dtype=np.int64)
    for k, table in enumerate(tables):
        out[k, : len(table)] = table.lengths
    out[:, ESCAPE] = 0
    return out


@numba.njit(cache=True, nogil=True)
def _derive_lengths(codes, code_offsets, block_starts, symlen, lengths):
    """Fill ``lengths[i]`` with the decoded size of string ``i``; return -1, or a bad string."""
    for b in range(block_starts.shape[0] - 1):
        for i in range(block_starts[b], block_starts[b + 1]):
            c = code_offsets[i]
            e = code_offsets[i + 1]
            n = 0
            while c < e:
                code = codes[c]
                if code == ESCAPE:
                    if c + 1 >= e:
                        return i
                    n += 1
                    c += 2
                else:
                    ln = symlen[b, code]
                    if ln < 0:
                        return i
                    n += ln
                    c += 1
            lengths[i] = n
    return -1


def derive_lengths(tables, block_starts, codes, code_offsets) -> np.ndarray:
    """Each string's uncompressed length, from its codes alone (one pass, no decoding).

    Raises
    ------
    CorruptDataError
        When a string's codes end in an escape or use a code its table lacks.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import SymbolTable
    >>> from fsstgpu.formats.arrow import derive_lengths
    >>> derive_lengths([SymbolTable([b"abc"])], np.array([0, 2]),
    ...                np.array([0, 255, 120, 0], np.uint8), np.array([0, 3, 4])).tolist()
    [4, 3]
    """
    codes = np.ascontiguousarray(codes, dtype=np.uint8)
    code_offsets = np.ascontiguousarray(code_offsets, dtype=np.int64)
    block_starts = np.ascontiguousarray(block_starts, dtype=np.int64)
    n = len(code_offsets) - 1
    if (len(block_starts) != len(tables) + 1 or block_starts[0] != 0 or block_starts[-1] != n
            or np.any(np.diff(block_starts) < 0)):
        raise CorruptDataError(f"block starts {block_starts.tolist()[:8]} do not cover "
                               f"the {n} strings")
    if n >= 0 and (code_offsets[0] != 0 or code_offsets[-1] != len(codes)
                   or np.any(np.diff(code_offsets) < 0)):
        raise CorruptDataError("code offsets must run from 0 to the number of codes, "
                               "non-decreasing")
    lengths = np.empty(n, dtype=np.int64)
    bad = _derive_lengths(codes, code_offsets, block_starts, _symbol_length_table(tables),
                          lengths)
    if bad >= 0:
        raise CorruptDataError(f"string {bad}: its codes end in an escape or use a code "
                               "without a symbol")
    return lengths


def from_extension_array(arr):
    """Read an ``fsstgpu.fsst`` array (or chunked array) back into a CompressedStringArray.

    The lengths and split points are derived from the codes (one pass); the result is checked
    with :meth:`CompressedStringArray.validate` before it is returned. A chunked input gives
    ``chunk_lengths``, so :func:`fsstgpu.decompress` returns the same chunks.

    Raises
    ------
    TypeError
        When ``arr`` is not of type ``fsstgpu.fsst``.
    CorruptDataError
        When the codes do not decode with the type's tables, or the block starts do not fit.

    Examples
    --------
    >>> import pyarrow as pa, fsstgpu
    >>> from fsstgpu.formats.arrow import from_extension_array, to_extension_array
    >>> carr = fsstgpu.compress(pa.array(["abc", "abd"]))
    >>> back = from_extension_array(to_extension_array(carr))
    >>> fsstgpu.decompress(back, device="cpu").to_pylist()
    ['abc', 'abd']
    """
    from fsstgpu.arrays import CompressedStringArray
    from fsstgpu.arrow_layout import from_arrow
    from fsstgpu.splits import compute_splits

    if not isinstance(arr, (pa.Array, pa.ChunkedArray)) or not is_fsst_type(arr.type):
        got = getattr(arr, "type", type(arr).__name__)
        raise TypeError(f"expected an {EXTENSION_NAME} array, got {got}")
    ftype = arr.type
    if isinstance(arr, pa.ChunkedArray):
        storage = pa.chunked_array([c.storage for c in arr.chunks], type=ftype.storage_type)
    else:
        storage = arr.storage
    plain = from_arrow(storage)  # normalises offsets to int64 from 0, drops bytes under nulls
    n = len(plain)
    block_starts = np.concatenate([[0], ftype.block_starts, [n]]).astype(np.int64)
    if len(ftype.tables) > 1 and int(ftype.block_starts[-1]) > n:
        raise CorruptDataError(f"{EXTENSION_NAME}: block starts run past the {n} strings")
    lengths = derive_lengths(ftype.tables, block_starts, plain.data, plain.offsets)
    split_codes, split_out, split_table = compute_splits(
        ftype.tables, block_starts, plain.data, plain.offsets, lengths, ftype.split_size)
    carr = CompressedStringArray(
        type=ftype.value_type,
        length=n,
        tables=ftype.tables,
        block_starts=block_starts,
        codes=plain.data,
        code_offsets=plain.offsets,
        lengths=lengths,
        validity=plain.validity,
        null_count=plain.null_count,
        split_size=ftype.split_size,
        split_codes=split_codes,
        split_out=split_out,
        split_table=split_table,
        chunk_lengths=plain.chunk_lengths if isinstance(arr, pa.ChunkedArray) else None,
    )
    carr.validate()
    return carr


register()
