"""The ``fsstgpu.fsst`` Arrow extension type: an FSST-compressed string column inside Arrow.

Specification: ``formats/arrow.md`` (beside this module). In short (versions 2 and 3):

* **storage** (version 4) is ``struct<codes: large_binary, lengths: uint32, cuts: binary,
  table: dictionary<uint16, binary>>`` (``uint64`` lengths for the large value types;
  ``binary`` codes accepted): per string its FSST codes, its uncompressed length, only for
  strings longer than the split size ``S`` the cut points inside it (:mod:`fsstgpu.splits`),
  and its symbol table, as an index into the chunk's dictionary of serialised tables.
  Everything is per string, so any Arrow row operation (slice, take, filter, concatenation)
  keeps an array valid. A reader without fsstgpu sees that struct.
* **extension metadata** (UTF-8 JSON, versioned, CRC-checked) holds what is per logical type:
  the original Arrow type (dictionary encoding included) and ``S``. So one type serves every
  column of that type, whatever its tables: the files of a dataset share one schema.

Reading needs no walk over the codes: the split points follow from the lengths, the code offsets
and the stored cuts at memory speed (:mod:`fsstgpu.formats.arrow_storage`). The versions that
kept the tables in the metadata are still read: 3 (a ``table: uint16`` index per string), 2 (no
``table`` child; several tables by block starts) and 1 (storage: the codes alone, lengths and
cuts derived from the codes).

>>> import pyarrow as pa, fsstgpu
>>> from fsstgpu.formats.arrow import FsstType
>>> t = FsstType(pa.large_binary(), pa.string(), None, 4096)
>>> t.storage_type.names, t.version
(['codes', 'lengths', 'cuts', 'table'], 4)
"""

from __future__ import annotations

import base64
import functools
import json
import struct
import threading
import zlib

import numpy as np
import pyarrow as pa

from fsstgpu.arrow_layout import is_non_decreasing
from fsstgpu.errors import CorruptDataError
from fsstgpu.formats.arrow_read import EXTENSION_NAME, is_fsst_type
from fsstgpu.formats.arrow_values import FsstArray, FsstScalar, decoded_dtype
from fsstgpu.limits import MAX_TABLES, check_split_size
from fsstgpu.symbol_table import SymbolTable
from fsstgpu.types import SUPPORTED_TYPES, is_view, narrow_offsets

__all__ = [
    "EXTENSION_NAME",
    "FsstArray",
    "FsstScalar",
    "FsstType",
    "distinct_tables",
    "extension_type_for",
    "is_fsst_type",
    "lengths_type_for",
    "parse_metadata",
    "register",
    "storage_type_for",
]

MAGIC = b"FSAX"
#: the version written: the tables in the data (a ``table`` dictionary per string), so that the
#: type depends only on the logical type; versions 1 to 3 (tables in the metadata) are read too
VERSION = 4
#: the read-only version of several tables in the metadata (a ``table`` index per string)
MULTI_TABLE_VERSION = 3
#: the type of version 4's ``table`` child: per string its table, the chunk's distinct
#: serialised SymbolTables as the dictionary (Parquet stores each once per column chunk)
TABLE_DICTIONARY = pa.dictionary(pa.uint16(), pa.binary())

#: Original value types, by their one-byte code: the blob format's codes, from the one table.
VALUE_TYPES = SUPPORTED_TYPES
#: Dictionary index types, by their one-byte code minus one (0 means "not dictionary-encoded").
INDEX_TYPES = (
    pa.int8(), pa.int16(), pa.int32(), pa.int64(),
    pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64(),
)
#: the types the codes may be stored as
CODES_TYPES = (pa.large_binary(), pa.binary())

_HEADER = struct.Struct("<4sBBBBQH")  # magic, version, value type, index type, flags, S, ntables
#: the most tables version 1 can count (in 16 bits); versions 2 and 3 hold a column's limit
_V1_MAX_TABLES = MAX_TABLES - 1
_FLAG_ORDERED = 1


def lengths_type_for(value_type: pa.DataType) -> pa.DataType:
    """The type of the ``lengths`` child: uint32 where strings fit 32-bit offsets, else uint64."""
    return pa.uint32() if narrow_offsets(value_type) or is_view(value_type) else pa.uint64()


def storage_type_for(value_type: pa.DataType, codes_type=None, *,
                     version: int = VERSION) -> pa.StructType:
    """The storage type of a column of ``value_type`` in ``version`` (2, 3 or 4): the codes,
    lengths and cuts, then each string's table (version 3: an index into the metadata's tables;
    version 4: :data:`TABLE_DICTIONARY`, the tables themselves).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.arrow import storage_type_for
    >>> storage_type_for(pa.large_string(), version=2)
    StructType(struct<codes: large_binary, lengths: uint64, cuts: binary>)
    >>> storage_type_for(pa.string()).field("table").type
    DictionaryType(dictionary<values=binary, indices=uint16, ordered=0>)
    """
    codes_type = pa.large_binary() if codes_type is None else codes_type
    fields = [pa.field("codes", codes_type), pa.field("lengths", lengths_type_for(value_type)),
              pa.field("cuts", pa.binary())]
    if version == MULTI_TABLE_VERSION:
        fields.append(pa.field("table", pa.uint16()))
    elif version == VERSION:
        fields.append(pa.field("table", TABLE_DICTIONARY))
    return pa.struct(fields)


class FsstType(pa.ExtensionType):
    """Arrow extension type ``fsstgpu.fsst``: FSST codes, lengths, cuts and tables per string.

    Version 4 (written) keeps the symbol tables in the data, so the type is one per logical
    type: every column of strings compressed with the same split size has the same type,
    whatever its tables, and a folder of files is one dataset. Versions 1 to 3 (read) keep the
    tables in the type.

    Parameters
    ----------
    codes_type : pyarrow.DataType
        How the codes are stored: ``pa.large_binary()`` or ``pa.binary()``.
    value_type : pyarrow.DataType
        The original string / binary type the codes decode to.
    tables : sequence of SymbolTable, optional
        Versions 1 to 3 only: the column's distinct tables. None (or empty) for version 4.
    split_size : int
        ``S``, the target uncompressed bytes per split (1..2**63 - 1: :mod:`fsstgpu.limits`).
    block_starts : sequence of int, optional
        Version 2 with several tables only (read, never written): the interior block starts
        (``len(tables) - 1`` of them), which tie the type to one array's length.
    index_type : pyarrow.DataType, optional
        When the original column was dictionary-encoded: its index type.
    ordered : bool
        The original dictionary type's ``ordered`` flag.
    version : int, optional
        By default 4 without tables; with tables 2 for one and 3 for several. 4: storage
        :func:`storage_type_for`, each string's table in a ``table`` dictionary child. 3: a
        ``table`` index per string into ``tables``. 2: no ``table`` child. 1: the codes alone
        are the storage (what the oldest files hold). 1 to 3 are read, never written.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu import SymbolTable
    >>> from fsstgpu.formats.arrow import FsstType
    >>> t = FsstType(pa.large_binary(), pa.string(), None, 4096)
    >>> FsstType.__arrow_ext_deserialize__(t.storage_type, t.__arrow_ext_serialize__()) == t
    True
    >>> t.original_type, t.version, t.storage_type.names
    (DataType(string), 4, ['codes', 'lengths', 'cuts', 'table'])
    >>> FsstType(pa.large_binary(), pa.string(), [SymbolTable([b"ab"])], 4096).version
    2
    """

    def __init__(self, codes_type, value_type, tables, split_size, block_starts=None,
                 index_type=None, ordered=False, *, version=None):
        if codes_type not in CODES_TYPES:
            raise TypeError(f"fsstgpu.fsst codes are large_binary or binary, not {codes_type}")
        tables = tuple(tables or ())
        if version is None:
            version = VERSION if not tables else 2 if len(tables) == 1 else MULTI_TABLE_VERSION
        if version not in (1, 2, 3, 4):
            raise ValueError(f"fsstgpu.fsst version 1, 2, 3 or 4, not {version}")
        if value_type not in VALUE_TYPES:
            raise TypeError(f"fsstgpu.fsst decodes to a string/binary type, not {value_type}")
        if index_type is not None and index_type not in INDEX_TYPES:
            raise TypeError(f"dictionary index type must be an integer type, not {index_type}")
        if version == VERSION:
            if tables:
                raise ValueError("version 4 keeps the tables in the data, not in the type")
        else:
            most = _V1_MAX_TABLES if version == 1 else MAX_TABLES
            if not 1 <= len(tables) <= most:
                raise ValueError(f"fsstgpu.fsst version {version} holds 1 to {most} tables, "
                                 f"not {len(tables)}")
        if any(not isinstance(t, SymbolTable) for t in tables):
            raise TypeError("tables must be SymbolTable instances")
        split_size = check_split_size(int(split_size))
        starts = np.asarray([] if block_starts is None else block_starts, dtype=np.int64)
        if version in (MULTI_TABLE_VERSION, VERSION):
            if len(starts):
                raise ValueError(f"version {version} keeps each string's table in the storage; "
                                 "block starts are version 2's")
        elif len(starts) != len(tables) - 1:
            raise ValueError(
                f"{len(tables)} tables need {len(tables) - 1} interior block starts, "
                f"got {len(starts)}"
            )
        if starts.size and (starts[0] < 0 or not is_non_decreasing(starts)):
            raise ValueError("block starts must be non-negative and non-decreasing")
        self.version = version
        self.codes_type = codes_type
        self.value_type = value_type
        self.tables = tables
        self.split_size = split_size
        self.block_starts = starts
        self.block_starts.flags.writeable = False
        self.index_type = index_type
        self.ordered = bool(ordered) and index_type is not None
        self._serialised = _serialise(self)
        storage = codes_type if version == 1 else storage_type_for(
            value_type, codes_type, version=version)
        super().__init__(storage, EXTENSION_NAME)

    @property
    def original_type(self) -> pa.DataType:
        """The column's type before compression (a dictionary type when it was one)."""
        if self.index_type is None:
            return self.value_type
        return pa.dictionary(self.index_type, self.value_type, self.ordered)

    @property
    def tables_in_data(self) -> bool:
        """True for version 4: each chunk's storage holds its tables (``table`` child)."""
        return self.version == VERSION

    def with_codes_type(self, codes_type) -> FsstType:
        """The same type with the codes stored as ``codes_type`` (``binary``, ``large_binary``)."""
        return FsstType(codes_type, self.value_type, self.tables, self.split_size,
                        self.block_starts, self.index_type, self.ordered, version=self.version)

    def __arrow_ext_serialize__(self) -> bytes:
        return self._serialised

    @classmethod
    def __arrow_ext_deserialize__(cls, storage_type, serialized) -> FsstType:
        return _parse_cached(storage_type, bytes(serialized))

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

    def __arrow_ext_class__(self):
        return FsstArray

    def __arrow_ext_scalar_class__(self):
        return FsstScalar

    def to_pandas_dtype(self):
        # Table.to_pandas() asks the type, not the array: decode there too
        return decoded_dtype()

    def __repr__(self) -> str:
        tables = ("tables in the data" if self.tables_in_data
                  else f"{len(self.tables)} table(s)")
        return (f"FsstType({self.original_type}, {tables}, S={self.split_size}, "
                f"storage={self.storage_type})")

    def __str__(self) -> str:
        return f"extension<{EXTENSION_NAME}[{self.original_type}]>"


def _serialise(t: FsstType) -> bytes:
    return _serialise_v1(t) if t.version == 1 else _serialise_json(t)


def _canonical(obj) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def _serialise_json(t: FsstType) -> bytes:
    """Versions 2 to 4: UTF-8 JSON (tables base64), so that every reader can show the metadata.
    Version 3 has no block starts (each string's table is in the storage), version 4 no tables
    (they are in the storage too)."""
    body = {
        "version": t.version,
        "value_type": str(t.value_type),
        "dictionary": (None if t.index_type is None
                       else {"index_type": str(t.index_type), "ordered": t.ordered}),
        "split_size": t.split_size,
    }
    if t.version != VERSION:
        body["tables"] = [base64.b64encode(table.to_bytes()).decode() for table in t.tables]
    if t.version == 2:
        body["block_starts"] = [int(x) for x in t.block_starts]
    return _canonical({"crc32": zlib.crc32(_canonical(body)), EXTENSION_NAME: body})


def _serialise_v1(t: FsstType) -> bytes:
    index_code = 0 if t.index_type is None else INDEX_TYPES.index(t.index_type) + 1
    flags = _FLAG_ORDERED if t.ordered else 0
    parts = [
        _HEADER.pack(MAGIC, 1, VALUE_TYPES.index(t.value_type), index_code, flags,
                     t.split_size, len(t.tables)),
        t.block_starts.astype("<i8").tobytes(),
        *(table.to_bytes() for table in t.tables),
    ]
    body = b"".join(parts)
    return body + struct.pack("<I", zlib.crc32(body))


@functools.lru_cache(maxsize=64)
def _parse_cached(storage_type, serialized: bytes) -> FsstType:
    # pyarrow deserialises the type once per chunk it reads (a file's row groups, a reader's
    # batches): parsing and checking the same tables again each time cost a third of reading a
    # file's fsst columns to the GPU. FsstType is immutable, so sharing one is safe.
    return parse_metadata(storage_type, serialized)


def parse_metadata(storage_type, serialized) -> FsstType:
    """Rebuild an :class:`FsstType` from its storage type and metadata bytes, validating both.

    Versions 2 to 4 are JSON; version 1 the binary layout of ``arrow.md``, which the first
    version-2 writer (2026-11-30, before its metadata became JSON) used too, with version byte 2.

    Raises
    ------
    CorruptDataError
        When the metadata is truncated, altered (CRC), has an unknown version, type or field,
        a bad table, or does not fit the storage type; the message says which.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.arrow import parse_metadata
    >>> parse_metadata(pa.large_binary(), b"junk")
    Traceback (most recent call last):
    ...
    fsstgpu.errors.CorruptDataError: fsstgpu.fsst metadata: neither JSON nor the version-1 layout
    """
    data = bytes(serialized)
    what = "fsstgpu.fsst metadata"
    if data[:1] == b"{":
        return _parse_json(storage_type, data, what)
    if data[:4] != MAGIC:
        raise CorruptDataError(f"{what}: neither JSON nor the version-1 layout")
    return _parse_v1(storage_type, data, what)


_FIELDS = {"version", "value_type", "dictionary", "split_size"}
_FIELDS_BY_VERSION = {2: _FIELDS | {"tables", "block_starts"}, 3: _FIELDS | {"tables"},
                      4: _FIELDS}
_TYPES_BY_NAME = {str(t): t for t in VALUE_TYPES}
_INDEX_BY_NAME = {str(t): t for t in INDEX_TYPES}
#: Valid metadata nests 3 deep (outer object, body, dictionary or lists); deeper JSON is refused
#: before parsing, which would otherwise recurse once per level (a RecursionError, not ours).
_MAX_DEPTH = 8


def _json_depth(data: bytes) -> int:
    """How deep brackets nest in ``data`` (brackets inside strings counted too: valid metadata
    has none there)."""
    b = np.frombuffer(data, np.uint8)
    step = (((b == 0x5B) | (b == 0x7B)).astype(np.int8)
            - ((b == 0x5D) | (b == 0x7D)).astype(np.int8))
    return int(np.cumsum(step, dtype=np.int64).max()) if len(b) else 0


def _parse_json(storage_type, data: bytes, what: str) -> FsstType:
    if _json_depth(data) > _MAX_DEPTH:
        raise CorruptDataError(f"{what}: JSON nested deeper than {_MAX_DEPTH} levels")
    try:
        outer = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise CorruptDataError(f"{what}: not valid JSON ({exc})") from None
    if not isinstance(outer, dict) or set(outer) != {"crc32", EXTENSION_NAME}:
        raise CorruptDataError(f"{what}: expected the keys crc32 and {EXTENSION_NAME}")
    body = outer[EXTENSION_NAME]
    if not isinstance(body, dict) or not _FIELDS <= set(body):
        raise CorruptDataError(f"{what}: expected at least the fields {sorted(_FIELDS)}")
    if outer["crc32"] != zlib.crc32(_canonical(body)):
        raise CorruptDataError(f"{what}: CRC32 mismatch")
    # every field's JSON type is checked before it is used (a list is not hashable, ...)
    version = body["version"]
    if type(version) is not int or version not in _FIELDS_BY_VERSION:
        raise CorruptDataError(f"{what}: unsupported version {version!r} "
                               "(this reader: 1, 2, 3, 4)")
    if set(body) != _FIELDS_BY_VERSION[version]:
        raise CorruptDataError(f"{what}: version {version} expects the fields "
                               f"{sorted(_FIELDS_BY_VERSION[version])}")
    value_type = body["value_type"]
    if type(value_type) is not str or value_type not in _TYPES_BY_NAME:
        raise CorruptDataError(f"{what}: unknown value type {value_type!r}")
    value_type = _TYPES_BY_NAME[value_type]
    index_type, ordered = _dictionary_of(body["dictionary"], what)
    split_size = body["split_size"]
    if type(split_size) is not int:  # its range: FsstType's check
        raise CorruptDataError(f"{what}: invalid split size {split_size!r}")
    tables_b64 = body.get("tables", [])
    # bounds the work before the tables are decoded (FsstType checks the count again)
    if version != VERSION and (not isinstance(tables_b64, list)
                               or not 1 <= len(tables_b64) <= MAX_TABLES):
        raise CorruptDataError(f"{what}: 1 to {MAX_TABLES} tables expected")
    starts = None
    if version == 2:
        starts = body["block_starts"]
        if (not isinstance(starts, list) or len(starts) != len(tables_b64) - 1
                or any(type(x) is not int or not 0 <= x < 2**63 for x in starts)
                or any(b < a for a, b in zip(starts, starts[1:], strict=False))):
            raise CorruptDataError(f"{what}: block starts must be {len(tables_b64) - 1} "
                                   "non-negative, non-decreasing integers")
    tables = []
    for k, text in enumerate(tables_b64):
        if type(text) is not str:
            raise CorruptDataError(f"{what}: table {k} is not base64")
        try:
            raw = base64.b64decode(text, validate=True)
        except (TypeError, ValueError):
            raise CorruptDataError(f"{what}: table {k} is not base64") from None
        try:
            tables.append(SymbolTable.from_bytes(raw))
        except CorruptDataError as exc:
            raise CorruptDataError(f"{what}: table {k}: {exc}") from None
    codes_type = _codes_type_of(storage_type, value_type, version, what)
    return _checked_type(what, codes_type, value_type, tables, split_size, starts, index_type,
                         ordered, version=version)


def _checked_type(what: str, *args, **kwargs) -> FsstType:
    """FsstType(*args, **kwargs) of fields read from metadata: its checks (the split size's
    range, the table count) are the reader's, and what they find is corrupt data."""
    try:
        return FsstType(*args, **kwargs)
    except (ValueError, TypeError) as exc:
        raise CorruptDataError(f"{what}: {exc}") from None


def _dictionary_of(dictionary, what: str):
    """(index type, ordered) of the ``dictionary`` field: None or {"index_type", "ordered"}."""
    if dictionary is None:
        return None, False
    if (not isinstance(dictionary, dict) or set(dictionary) != {"index_type", "ordered"}
            or type(dictionary["index_type"]) is not str
            or dictionary["index_type"] not in _INDEX_BY_NAME
            or not isinstance(dictionary["ordered"], bool)):
        raise CorruptDataError(f"{what}: invalid dictionary {dictionary!r}")
    return _INDEX_BY_NAME[dictionary["index_type"]], dictionary["ordered"]


def _parse_v1(storage_type, data: bytes, what: str) -> FsstType:
    """The binary layout: version 1 (codes-only storage), or version 2's struct storage as the
    first version-2 writer described it (version byte 2: files of 2026-11-30)."""
    if len(data) < _HEADER.size + 4:
        raise CorruptDataError(f"{what}: {len(data)} bytes, too short for the header")
    magic, version, value_code, index_code, flags, split_size, ntables = _HEADER.unpack_from(data)
    if version not in (1, 2):
        raise CorruptDataError(f"{what}: unsupported version {version} of the binary layout "
                               "(this reader: 1, 2)")
    (crc,) = struct.unpack_from("<I", data, len(data) - 4)
    if zlib.crc32(data[:-4]) != crc:
        raise CorruptDataError(f"{what}: CRC32 mismatch")
    if value_code >= len(VALUE_TYPES):
        raise CorruptDataError(f"{what}: unknown value type code {value_code}")
    if index_code > len(INDEX_TYPES):
        raise CorruptDataError(f"{what}: unknown dictionary index type code {index_code}")
    if flags & ~_FLAG_ORDERED or (flags and not index_code):
        raise CorruptDataError(f"{what}: invalid flags {flags:#x}")
    if ntables < 1:
        raise CorruptDataError(f"{what}: no symbol table")
    pos = _HEADER.size
    nstarts = ntables - 1
    if pos + 8 * nstarts > len(data) - 4:
        raise CorruptDataError(f"{what}: truncated block starts")
    starts = np.frombuffer(data, dtype="<i8", count=nstarts, offset=pos).astype(np.int64)
    pos += 8 * nstarts
    if starts.size and (starts[0] < 0 or not is_non_decreasing(starts)):
        raise CorruptDataError(f"{what}: block starts are negative or decreasing")
    body = memoryview(data)[:-4]
    try:
        tables, pos = SymbolTable.read_many(body, pos, ntables)
    except CorruptDataError as exc:
        raise CorruptDataError(f"{what}: {exc}") from None
    if pos != len(body):
        raise CorruptDataError(f"{what}: {len(body) - pos} trailing bytes")
    value_type = VALUE_TYPES[value_code]
    codes_type = _codes_type_of(storage_type, value_type, version, what)
    return _checked_type(what, codes_type, value_type, tables, split_size, starts,
                         INDEX_TYPES[index_code - 1] if index_code else None,
                         bool(flags & _FLAG_ORDERED), version=version)


def _codes_type_of(storage_type, value_type, version: int, what: str) -> pa.DataType:
    """The codes type a version's storage type implies; CorruptDataError if it is not one."""
    if version == 1:
        if storage_type in CODES_TYPES:
            return storage_type
    elif pa.types.is_struct(storage_type) and storage_type.num_fields == (3 if version == 2 else 4):
        codes_type = storage_type.field(0).type
        if codes_type in CODES_TYPES and storage_type == storage_type_for(
                value_type, codes_type, version=version):
            return codes_type
    raise CorruptDataError(f"{what}: storage type {storage_type} is not that of version {version}")


_REGISTERING = threading.Lock()
_registered = False  # this module's FsstType is pyarrow's (a reloaded module registers its own)


def register() -> None:
    """Register ``fsstgpu.fsst`` with pyarrow; calling it again, from any thread, is harmless.

    ``import fsstgpu`` calls it. The first call of a reloaded module replaces the registration
    with that module's class, so that readers always build the current class; later calls
    change nothing (a replacement leaves the name unregistered for a moment, when another
    thread's read would see the bare storage struct).
    """
    global _registered
    with _REGISTERING:
        if _registered:
            return
        prototype = FsstType(pa.large_binary(), pa.string(), None, 1)
        try:
            pa.register_extension_type(prototype)
        except pa.ArrowKeyError:
            pa.unregister_extension_type(EXTENSION_NAME)
            pa.register_extension_type(prototype)
        _registered = True


def extension_type_for(carr, *, codes_type=None, dictionary_type=None,
                       version: int = VERSION) -> FsstType:
    """The :class:`FsstType` that :func:`to_extension_array` gives ``carr`` (version 4).

    It depends on ``carr``'s value type, split size and the codes' and dictionary's types only,
    never on its tables (they go into the storage), so every column of one logical type has the
    same type: files of one dataset share a schema, and arrays concatenate. ``version=2`` or
    ``3`` gives the older layouts' type (the tables in the type: 2 for one distinct table, 3 for
    several), for readers older than version 4.

    Parameters
    ----------
    carr : CompressedStringArray
    codes_type : pyarrow.DataType, optional
        ``pa.large_binary()`` (the default) or ``pa.binary()``.
    dictionary_type : pyarrow.DictionaryType, optional
        The original dictionary type when the column was dictionary-encoded (its value type
        must be ``carr.type``).

    Examples
    --------
    >>> import pyarrow as pa, fsstgpu
    >>> from fsstgpu.formats.arrow import extension_type_for
    >>> a = extension_type_for(fsstgpu.compress(pa.array(["ab"] * 3)))
    >>> a.original_type, a == extension_type_for(fsstgpu.compress(pa.array(["xyz"])))
    (DataType(string), True)
    """
    codes_type = pa.large_binary() if codes_type is None else codes_type
    index_type, ordered = None, False
    if dictionary_type is not None:
        if not pa.types.is_dictionary(dictionary_type):
            raise TypeError(f"dictionary_type must be a dictionary type, not {dictionary_type}")
        if dictionary_type.value_type != carr.type:
            raise TypeError(f"dictionary value type {dictionary_type.value_type} differs from "
                            f"the compressed type {carr.type}")
        if dictionary_type.ordered:  # (formats/selection.py copies such columns as they are)
            raise ValueError(f"an ordered dictionary ({dictionary_type}) is not compressed: its "
                             "order is its meaning, and the column would come back with its "
                             "values in order of first occurrence")
        index_type, ordered = dictionary_type.index_type, dictionary_type.ordered
    if version == VERSION:
        return FsstType(codes_type, carr.type, None, carr.split_size, None, index_type, ordered)
    if version not in (2, MULTI_TABLE_VERSION):
        raise ValueError(f"fsstgpu.fsst arrays are written as version 4 (or 2, 3), not {version}")
    tables, _ = distinct_tables(carr.tables)
    if version == 2 and len(tables) > 1:
        raise ValueError(f"version 2 holds one table; this array has {len(tables)}: version 3")
    return FsstType(codes_type, carr.type, tables, carr.split_size, None, index_type, ordered,
                    version=version)


def distinct_tables(tables):
    """The distinct tables of ``tables`` in order of first use, and each one's index there.

    Examples
    --------
    >>> from fsstgpu import SymbolTable
    >>> from fsstgpu.formats.arrow import distinct_tables
    >>> a, b = SymbolTable([b"ab"]), SymbolTable([b"cd"])
    >>> found, index = distinct_tables([a, b, a])
    >>> found == (a, b), index.tolist()
    (True, [0, 1, 0])
    """
    seen: dict[bytes, int] = {}
    index = np.array([seen.setdefault(t.to_bytes(), len(seen)) for t in tables], np.int64)
    found = [None] * len(seen)
    for t, k in zip(tables, index.tolist(), strict=True):
        found[k] = t
    return tuple(found), index


register()
