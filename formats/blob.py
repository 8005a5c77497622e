"""The standalone blob: one CompressedStringArray as bytes (the specification is blob.md).

Reading never trusts the input: the header and every section carry a CRC32; every declared size
is checked against the bytes that remain before anything is allocated (every count is backed by
at least one byte per item, or per 32 strings with bit-plane lengths, so no allocation exceeds 256
bytes per input byte); the result then
goes through :meth:`CompressedStringArray.validate(full=False)
<fsstgpu.arrays.CompressedStringArray.validate>`, every structural invariant in O(strings); the
codes are checked when they are decoded (or by a full ``validate()``), not when read. Anything
wrong raises :class:`~fsstgpu.errors.CorruptDataError` saying what.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np

from fsstgpu.arrays import CompressedStringArray
from fsstgpu.blob_hooks import install_blob_format
from fsstgpu.checks import length_sums
from fsstgpu.checksum import crc32
from fsstgpu.errors import CorruptDataError
from fsstgpu.formats.intcodec import (
    BITPLANE_INDEXED,
    CODECS,
    MAX_VALUES_PER_BYTE,
    decode_offsets,
    decode_uints,
    encode_offsets,
    encode_uints,
    encoded_offsets_size,
    encoded_size,
)
from fsstgpu.limits import MAX_TABLES, flag
from fsstgpu.symbol_table import SymbolTable
from fsstgpu.types import SUPPORTED_TYPES, type_code

MAGIC = b"FSGB"
VERSION = 1

FLAG_VALIDITY = 1  # a validity section is present (the column has nulls)
FLAG_CHUNKS = 2  # a chunk-lengths section is present (the input was a ChunkedArray)
FLAG_CODE_OFFSETS = 4  # code offsets are stored; else derived from the codes and lengths
_KNOWN_FLAGS = FLAG_VALIDITY | FLAG_CHUNKS | FLAG_CODE_OFFSETS

# magic, version, flags, lengths codec, type code, then length, null_count, ncodes, nblocks,
# nsplits, split_size, nchunks (u64 each); the header CRC32 follows.
_HEADER = struct.Struct("<4sBBBB7Q")
_U32 = struct.Struct("<I")
_U64 = struct.Struct("<Q")
HEADER_SIZE = _HEADER.size + _U32.size  # 68

SECTIONS = ("tables", "block_starts", "code_offsets", "codes", "lengths", "validity",
            "split_codes", "split_out", "split_table", "chunk_lengths")
_MIN_TABLE_BYTES = 17  # an empty serialised SymbolTable
MAX_BLOCKS = MAX_TABLES  # split_table is uint16
# Chunks a blob may declare: MAX_BLOCKS (a chunked column gets a block a chunk), plus one per
# CHUNK_BYTES bytes of blob. A decoded chunk is a pyarrow slice (about 500 bytes) whatever its
# length, so this keeps a forged blob's chunks under 32 times its size (issue #20, finding 6: a
# 3 MB blob of zero-length chunks took 3.8 GB).
CHUNK_BYTES = 16


def chunk_limit(blob_size: int) -> int:
    """The most chunks a blob of ``blob_size`` bytes may declare (blob.md, check 2).

    Examples
    --------
    >>> from fsstgpu.formats.blob import chunk_limit
    >>> chunk_limit(1_000_000)
    128036
    """
    return MAX_BLOCKS + blob_size // CHUNK_BYTES


_FRAME_BYTES = _U64.size + _U32.size  # a section's size before it and CRC32 after it


def _frame(payload) -> tuple:
    """A section as its three parts: size, payload (any bytes-like, not copied here), CRC32;
    the blob's one join copies each payload once."""
    size = _U64.pack(len(payload))
    return size, payload, _U32.pack(crc32(payload, zlib.crc32(size)))


def dumps(carr: CompressedStringArray, *, store_code_offsets: bool = False,
          lengths_codec: int = BITPLANE_INDEXED) -> bytes:
    """Serialise ``carr`` (see blob.md for the layout).

    Parameters
    ----------
    carr : CompressedStringArray
    store_code_offsets : bool
        Store each string's code length (section 2). By default they are left out and
        :func:`loads` derives them from the codes and the string lengths.
    lengths_codec : int
        Integer codec of the per-string sections (string lengths, and code lengths when stored):
        :data:`~fsstgpu.formats.intcodec.BITPLANE_INDEXED` (default: bit planes with the index
        that lets the GPU unpack them into offsets in one kernel),
        :data:`~fsstgpu.formats.intcodec.BITPLANE` or :data:`~fsstgpu.formats.intcodec.NARROW`.

    Examples
    --------
    >>> import pyarrow as pa, fsstgpu
    >>> from fsstgpu.formats import blob
    >>> data = blob.dumps(fsstgpu.compress(pa.array(["a", "b"])))
    >>> data[:4], data[4], data[6]  # magic, version, lengths codec (3: indexed bit planes)
    (b'FSGB', 1, 3)
    """
    store_code_offsets = flag(store_code_offsets, "store_code_offsets")
    if lengths_codec not in CODECS:
        raise ValueError(f"unknown lengths codec {lengths_codec}; known: {sorted(CODECS)}")
    if not store_code_offsets and carr.has_code_offsets:
        # Dropped offsets are derived again from the codes on reading, so a forged offset would
        # come back valid: the blob would decode where the array raises. Check them before they
        # go (free for the encoder's own output, already validated).
        carr.validate()
    # Stored ones are written as they are: a forged column is named here as every other path
    # names it, not by the offsets codec's ValueError (decreasing code offsets).
    carr.validate(full=False)
    flags = 0
    if carr.validity is not None:
        flags |= FLAG_VALIDITY
    if carr.chunk_lengths is not None:
        flags |= FLAG_CHUNKS
    if store_code_offsets:
        flags |= FLAG_CODE_OFFSETS
    nchunks = 0 if carr.chunk_lengths is None else len(carr.chunk_lengths)
    header = _HEADER.pack(MAGIC, VERSION, flags, lengths_codec, type_code(carr.type),
                          carr.length, carr.null_count, len(carr.codes), len(carr.tables),
                          len(carr.split_table), carr.split_size, nchunks)
    parts = [header, _U32.pack(zlib.crc32(header))]
    payloads = (
        b"".join(t.to_bytes() for t in carr.tables),
        encode_offsets(carr.block_starts),
        encode_offsets(carr.code_offsets, lengths_codec) if store_code_offsets else b"",
        memoryview(carr.codes),  # (joined below: copied once, into the blob)
        encode_uints(carr.lengths, lengths_codec),
        b"" if carr.validity is None else memoryview(carr.validity),
        encode_offsets(carr.split_codes),
        encode_offsets(carr.split_out),
        encode_uints(carr.split_table),
        b"" if carr.chunk_lengths is None else encode_uints(carr.chunk_lengths),
    )
    for payload in payloads:
        parts.extend(_frame(payload))
    data = b"".join(parts)
    if nchunks > chunk_limit(len(data)):  # the reader would refuse it
        raise ValueError(f"{nchunks} chunks in a {len(data)}-byte blob; at most "
                         f"{chunk_limit(len(data))} (combine chunks first)")
    return data


def dumped_size(carr: CompressedStringArray, *,
                lengths_codec: int = BITPLANE_INDEXED) -> int:
    """``len(dumps(carr, lengths_codec=lengths_codec))``, computed without serialising: the
    sections' sizes from their counts, and the lengths' bit-plane size from one pass over them
    (none when the column holds them packed already).

    Examples
    --------
    >>> import pyarrow as pa, fsstgpu
    >>> from fsstgpu.formats import blob
    >>> carr = fsstgpu.compress(pa.array(["a", None, "b"] * 100))
    >>> blob.dumped_size(carr) == len(blob.dumps(carr))
    True
    """
    if lengths_codec not in CODECS:
        raise ValueError(f"unknown lengths codec {lengths_codec}; known: {sorted(CODECS)}")
    if lengths_codec == BITPLANE_INDEXED and carr.packed_lengths is not None \
            and carr.packed_lengths_checked:
        lengths = len(carr.packed_lengths)  # the very bytes dumps writes (the narrowest dtype)
    else:
        lengths = encoded_size(carr.lengths, lengths_codec)
    payloads = (
        sum(t.nbytes_serialised() for t in carr.tables),
        encoded_offsets_size(carr.block_starts),
        0,  # code offsets: stored only on request
        len(carr.codes),
        lengths,
        0 if carr.validity is None else len(carr.validity),
        encoded_offsets_size(carr.split_codes),
        encoded_offsets_size(carr.split_out),
        encoded_size(carr.split_table),
        0 if carr.chunk_lengths is None else encoded_size(carr.chunk_lengths),
    )
    return HEADER_SIZE + len(payloads) * _FRAME_BYTES + sum(payloads)


class _Reader:
    def __init__(self, data):
        self.data = data
        self.pos = HEADER_SIZE

    def section(self, name: str):
        data, pos = self.data, self.pos
        if len(data) - pos < _U64.size:
            raise CorruptDataError(f"blob truncated before the {name} section's size")
        (size,) = _U64.unpack_from(data, pos)
        start = pos + _U64.size
        if size > len(data) - start - _U32.size:
            raise CorruptDataError(
                f"{name} section declares {size} bytes, only {max(0, len(data) - start - 4)} "
                "remain (truncated or mis-sized)"
            )
        end = start + size
        (crc,) = _U32.unpack_from(data, end)
        # (a view, not a slice: a slice of bytes copies the section)
        if crc32(memoryview(data)[start:end], zlib.crc32(data[pos:start])) != crc:
            raise CorruptDataError(f"{name} section: CRC32 mismatch (altered data)")
        self.pos = end + _U32.size
        return data[start:end]


def loads(data) -> CompressedStringArray:
    """Read a blob written by :func:`dumps`: every CRC and every structural invariant checked.

    The codes themselves are checked when they are decoded (or by
    :meth:`~fsstgpu.CompressedStringArray.validate`): reading does not walk them.

    ``bytes`` input is used without copying (the arrays are read-only views into it); any other
    bytes-like input is copied first so that later changes to it cannot reach the arrays.

    Raises
    ------
    CorruptDataError
        For anything truncated, mis-sized, altered or inconsistent, saying what.

    Examples
    --------
    >>> import pyarrow as pa, fsstgpu
    >>> from fsstgpu.formats import blob
    >>> carr = fsstgpu.compress(pa.array(["a", None]))
    >>> blob.loads(blob.dumps(carr)).equals(carr)
    True
    """
    if not isinstance(data, bytes):
        data = bytes(memoryview(data).cast("B"))
    view = memoryview(data)
    if len(view) < HEADER_SIZE:
        raise CorruptDataError(
            f"blob truncated: {len(view)} bytes, the header needs {HEADER_SIZE}")
    fields = _HEADER.unpack_from(view, 0)
    magic, version, flags, lengths_codec, tcode = fields[:5]
    length, null_count, ncodes, nblocks, nsplits, split_size, nchunks = fields[5:]
    if magic != MAGIC:
        raise CorruptDataError(f"not an fsstgpu blob: magic {bytes(magic)!r}, expected {MAGIC!r}")
    (crc,) = _U32.unpack_from(view, _HEADER.size)
    if zlib.crc32(view[: _HEADER.size]) != crc:
        raise CorruptDataError("blob header: CRC32 mismatch (altered data)")
    if version != VERSION:
        raise CorruptDataError(f"unsupported blob version {version} (this reader: {VERSION})")
    if flags & ~_KNOWN_FLAGS:
        raise CorruptDataError(f"unknown blob flags {flags:#x}")
    if lengths_codec not in CODECS:
        raise CorruptDataError(f"unknown lengths codec {lengths_codec}")
    if tcode >= len(SUPPORTED_TYPES):
        raise CorruptDataError(f"unknown type code {tcode}")
    if not flags & FLAG_CHUNKS and nchunks:
        raise CorruptDataError(f"{nchunks} chunks declared without the chunk flag")
    # Bound every count by the blob size before anything is allocated from it (each item of a
    # section takes at least one byte, except per-string values in the bit-plane codec: 32 a
    # byte; a table at least 17).
    limit = len(view)
    per_string = limit * MAX_VALUES_PER_BYTE[lengths_codec]
    for name, count, bound in (("strings", length, per_string), ("codes", ncodes, limit),
                               ("splits", nsplits, limit), ("chunks", nchunks, limit),
                               ("null_count", null_count, per_string)):
        if count > bound:
            raise CorruptDataError(f"{count} {name} declared in a {limit}-byte blob")
    if nblocks * _MIN_TABLE_BYTES > limit or nblocks > MAX_BLOCKS:
        raise CorruptDataError(f"{nblocks} blocks declared in a {limit}-byte blob (at most "
                               f"{min(MAX_BLOCKS, limit // _MIN_TABLE_BYTES)})")
    if nchunks > chunk_limit(limit):
        raise CorruptDataError(f"{nchunks} chunks declared in a {limit}-byte blob (at most "
                               f"{chunk_limit(limit)})")

    reader = _Reader(view)
    raw = {name: reader.section(name) for name in SECTIONS}
    if reader.pos != len(view):
        raise CorruptDataError(f"{len(view) - reader.pos} trailing bytes after the last section")

    tbytes = raw["tables"]
    tables, pos = SymbolTable.read_many(tbytes, 0, nblocks)
    if pos != len(tbytes):
        raise CorruptDataError(f"tables section: {len(tbytes) - pos} bytes after {nblocks} tables")

    if len(raw["codes"]) != ncodes:
        raise CorruptDataError(f"codes section has {len(raw['codes'])} bytes, header says {ncodes}")
    codes = np.frombuffer(raw["codes"], dtype=np.uint8)
    block_starts = decode_offsets(raw["block_starts"], nblocks + 1, total=length,
                                  what="block_starts")
    # Viewed as int64 (no copy): a value past 2**63 turns negative, which the check rejects.
    lengths = decode_uints(raw["lengths"], length, lengths_codec,
                           what="lengths").view(np.int64)
    total_out, _ = length_sums(lengths, ncodes)  # a code yields at most 8 bytes
    if flags & FLAG_CODE_OFFSETS:
        code_offsets = decode_offsets(raw["code_offsets"], length + 1, total=ncodes,
                                      what="code_offsets", codec=lengths_codec)
    else:
        if len(raw["code_offsets"]):
            raise CorruptDataError("code_offsets section present without its flag")
        code_offsets = None  # derived from the codes and lengths on first use
    validity = None
    if flags & FLAG_VALIDITY:
        if len(raw["validity"]) != (length + 7) // 8:
            raise CorruptDataError(f"validity section has {len(raw['validity'])} bytes, expected "
                                   f"{(length + 7) // 8} for {length} strings")
        validity = np.frombuffer(raw["validity"], dtype=np.uint8)
    elif len(raw["validity"]):
        raise CorruptDataError("validity section present without its flag")
    split_codes = decode_offsets(raw["split_codes"], nsplits + 1, total=ncodes,
                                 what="split_codes")
    split_out = decode_offsets(raw["split_out"], nsplits + 1, total=total_out,
                               what="split_out")
    split_table = decode_uints(raw["split_table"], nsplits, what="split_table")
    if nsplits and int(split_table.max()) >= nblocks:
        raise CorruptDataError(f"split_table names table {int(split_table.max())} of {nblocks}")
    chunk_lengths = None
    if flags & FLAG_CHUNKS:
        chunk_lengths = decode_uints(raw["chunk_lengths"], nchunks, what="chunk_lengths")
        if nchunks and int(chunk_lengths.max()) > length:
            # (checked first: the uint64 sum of such lengths may wrap to anything, even length)
            raise CorruptDataError(f"a chunk of {int(chunk_lengths.max())} strings in a column "
                                   f"of {length}")
        if nchunks and int(chunk_lengths.sum()) != length:
            raise CorruptDataError(f"chunk lengths add up to {int(chunk_lengths.sum())}, "
                                   f"not {length}")
        chunk_lengths = chunk_lengths.astype(np.int64)
    elif len(raw["chunk_lengths"]):
        raise CorruptDataError("chunk_lengths section present without its flag")

    carr = CompressedStringArray(
        type=SUPPORTED_TYPES[tcode], length=length, tables=tables, block_starts=block_starts,
        codes=codes, code_offsets=code_offsets, lengths=lengths, validity=validity,
        null_count=null_count, split_size=split_size, split_codes=split_codes,
        split_out=split_out, split_table=split_table.astype(np.uint16),
        chunk_lengths=chunk_lengths,
    )
    if lengths_codec == BITPLANE_INDEXED and length:
        # already the layout the GPU unpacks: it travels as stored (fsstgpu.gpu.layout). Set
        # past the column's __setattr__, which would mark them unchecked: the lengths were
        # unpacked from these very bytes, so the GPU need not check them again
        packed = np.frombuffer(raw["lengths"], np.uint8)
        packed.flags.writeable = False
        object.__setattr__(carr, "packed_lengths", packed)
    carr.validate(full=False)
    return carr


# CompressedStringArray.to_bytes / from_bytes / stats use these (the column API lies below the
# formats and does not import them)
install_blob_format(dumps=dumps, loads=loads, dumped_size=dumped_size)
