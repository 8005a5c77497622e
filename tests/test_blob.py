"""The standalone blob: layout, golden bytes, and every kind of damage raising CorruptDataError.

Damage tests run over every writer option (code offsets stored or derived; narrow or bit-plane
lengths)."""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pyarrow as pa
import pytest

import fsstgpu
from fsstgpu import CompressedStringArray, CorruptDataError, SymbolTable
from fsstgpu.formats import blob, intcodec
from fsstgpu.testing import check_roundtrip

# Written by format version 1 (see test_golden_blob for how); must keep decoding forever.
GOLDEN_HEX = (
    "46534742010701000500000000000000010000000000000011000000000000000100000000000000040000"
    "000000000008000000000000000200000000000000e19a8ba11d000000000000004653545401010000010000"
    "010078612e622f687474703a2f2f0919858c3dd5f85e02000000000000000105857d0e8e060000000000000001"
    "020005000a4199fb7e1100000000000000020100ff00ff790201ff68ff74ff74ff70112a2fc9060000000000"
    "0000010b0003000f0d730c0701000000000000001d346c7492050000000000000001020601086bd17f96050000"
    "0000000000010b0a0404ebdfac960500000000000000010000000021dc3b2f0300000000000000010302358f"
    "8436"
)

# Written by the default writer from bit-plane lengths (lengths codec 2) and derived code offsets
# until split points became string-aligned; must keep decoding forever too.
GOLDEN_BITPLANE_HEX = (
    "4653474201030200050000000000000001000000000000001100000000000000010000000000000004000000"
    "0000000008000000000000000200000000000000d19b83001d00000000000000465354540101000001000001"
    "0078612e622f687474703a2f2f0919858c3dd5f85e02000000000000000105857d0e8e000000000000000069"
    "df22651100000000000000020100ff00ff790201ff68ff74ff74ff70112a2fc9240000000000000046425031"
    "00000000050000000000000004000000150000001500000010000000110000006fa3c2d50100000000000000"
    "1d346c7492050000000000000001020601086bd17f960500000000000000010b0a0404ebdfac960500000000"
    "000000010000000021dc3b2f0300000000000000010302358f8436"
)


# Written by the default writer with string-aligned split points (:mod:`fsstgpu.splits`) and FBP1
# bit-plane lengths (codec 2) until 2026-11-30; must keep decoding forever too.
GOLDEN_ALIGNED_FBP1_HEX = (
    "4653474201030200050000000000000001000000000000001100000000000000010000000000000003000000"
    "0000000008000000000000000200000000000000a6ac9b311d00000000000000465354540101000001000001"
    "0078612e622f687474703a2f2f0919858c3dd5f85e02000000000000000105857d0e8e000000000000000069"
    "df22651100000000000000020100ff00ff790201ff68ff74ff74ff70112a2fc9240000000000000046425031"
    "00000000050000000000000004000000150000001500000010000000110000006fa3c2d50100000000000000"
    "1d346c7492040000000000000001020708ee5071820400000000000000010b0e04039cd45504000000000000"
    "0001000000759a6fc00300000000000000010302358f8436"
)


# Written by the current default writer: lengths in indexed bit planes (codec 3, layout FBP2).
GOLDEN_CURRENT_HEX = (
    "4653474201030300050000000000000001000000000000001100000000000000010000000000000003000000"
    "000000000800000000000000020000000000000035a35c7b1d00000000000000465354540101000001000001"
    "0078612e622f687474703a2f2f0919858c3dd5f85e02000000000000000105857d0e8e000000000000000069"
    "df22651100000000000000020100ff00ff790201ff68ff74ff74ff70112a2fc9480000000000000046425032"
    "0000000005000000000000000400000000000000000000000000000000000000000000000400000000000000"
    "1d0000000000000015000000150000001000000011000000449a2f1801000000000000001d346c7492040000"
    "000000000001020708ee5071820400000000000000010b0e04039cd455040000000000000001000000759a6f"
    "c00300000000000000010302358f8436"
)


def golden_column():
    return pa.chunked_array([["http://a.b/", None, "x\x00y"], ["", "http://a.b/http"]],
                            pa.string())


def golden_table():
    return SymbolTable([b"http://", b"a.b/", b"x"])


@pytest.mark.parametrize("hex_", [GOLDEN_HEX, GOLDEN_BITPLANE_HEX, GOLDEN_ALIGNED_FBP1_HEX,
                                  GOLDEN_CURRENT_HEX],
                         ids=["narrow-with-offsets", "bitplane", "aligned-fbp1", "current"])
def test_golden_blob_decodes(hex_):
    carr = CompressedStringArray.from_bytes(bytes.fromhex(hex_))
    carr.validate()  # the full walk: every code and every split start
    out = fsstgpu.decompress(carr, device="cpu")
    assert out.type == pa.string() and out.equals(golden_column())
    assert [len(c) for c in out.chunks] == [3, 2]


def test_writer_is_stable():
    """The current writer produces exactly the current golden bytes (and re-reads them)."""
    again = fsstgpu.compress(golden_column(), table=golden_table(), split_size=8)
    assert blob.dumps(again) == bytes.fromhex(GOLDEN_CURRENT_HEX)
    assert CompressedStringArray.from_bytes(bytes.fromhex(GOLDEN_CURRENT_HEX)).equals(again)


def test_default_blob_options(carr):
    data = carr.to_bytes()
    assert data == blob.dumps(carr, store_code_offsets=False,
                              lengths_codec=intcodec.BITPLANE_INDEXED)
    assert not data[5] & blob.FLAG_CODE_OFFSETS and data[6] == intcodec.BITPLANE_INDEXED


def test_indexed_lengths_travel_as_stored(carr):
    """A blob's FBP2 lengths become the column's packed_lengths (what the GPU uploads)."""
    from fsstgpu.kernels.bitplane import bitplane_unpack_offsets_cpu

    back = CompressedStringArray.from_bytes(carr.to_bytes())
    assert back.packed_lengths is not None and bytes(back.packed_lengths[:4]) == b"FBP2"
    offsets = bitplane_unpack_offsets_cpu(back.packed_lengths)
    assert offsets.tolist() == [0, *np.cumsum(carr.lengths).tolist()]
    older = blob.dumps(carr, lengths_codec=intcodec.BITPLANE)
    assert CompressedStringArray.from_bytes(older).packed_lengths is None


def small_carr():
    col = pa.array(["alpha", None, "beta\x00", "", "gamma" * 3, None, "delta"] * 3,
                   pa.large_string())
    return fsstgpu.compress(col, table=SymbolTable([b"alpha", b"a", b"mm", b"\x00"]),
                            split_size=16)


@pytest.fixture(scope="module")
def carr():
    return small_carr()


BLOB_OPTIONS = [(store, codec) for codec in (intcodec.NARROW, intcodec.BITPLANE,
                                              intcodec.BITPLANE_INDEXED)
                for store in (True, False)]


@pytest.fixture(scope="module", params=BLOB_OPTIONS,
                ids=[f"{'offsets' if s else 'no-offsets'}-codec{c}" for s, c in BLOB_OPTIONS])
def small_blob(request, carr):
    store, codec = request.param
    return blob.dumps(carr, store_code_offsets=store, lengths_codec=codec)


def test_header_layout(carr, small_blob):
    assert small_blob[:4] == b"FSGB" and small_blob[4] == blob.VERSION
    flags, codec, tcode = small_blob[5], small_blob[6], small_blob[7]
    assert flags & blob.FLAG_VALIDITY and not flags & blob.FLAG_CHUNKS
    assert codec in intcodec.CODECS and tcode == 1  # large_string
    length, nulls, ncodes, nblocks, nsplits, split_size, nchunks = struct.unpack_from(
        "<7Q", small_blob, 8)
    assert (length, nulls, ncodes, nblocks, nsplits, split_size, nchunks) == (
        len(carr), carr.null_count, len(carr.codes), 1, len(carr.split_table), 16, 0)
    (crc,) = struct.unpack_from("<I", small_blob, 64)  # formats/blob.md: bytes 64..67
    assert crc == zlib.crc32(small_blob[:64])
    # the first section (tables) follows the header: its size, its payload, its CRC
    (size,) = struct.unpack_from("<Q", small_blob, blob.HEADER_SIZE)
    payload = small_blob[blob.HEADER_SIZE + 8 : blob.HEADER_SIZE + 8 + size]
    assert SymbolTable.from_bytes(payload) == carr.tables[0]


def test_sizes_are_compact(carr):
    def size(store, codec):
        return len(blob.dumps(carr, store_code_offsets=store, lengths_codec=codec))

    with_offsets = size(True, intcodec.NARROW)
    without = size(False, intcodec.NARROW)
    # One byte per string (code lengths < 256) and the width byte.
    assert with_offsets - without == len(carr) + 1
    assert with_offsets < len(carr.codes) + 3 * len(carr) + 300
    # Bit planes: lengths < 16 take 4 bits each (one 32-value group: 16-byte header, 1 count
    # byte, 3 padding, 4 planes of 4 bytes) instead of 1 + 21 bytes.
    assert size(False, intcodec.BITPLANE) - without == (16 + 4 + 4 * 4) - (1 + len(carr))
    # Indexed: the counts padded to 8 bytes and a 2-entry index (one superblock, the totals).
    assert size(False, intcodec.BITPLANE_INDEXED) - size(False, intcodec.BITPLANE) == 4 + 2 * 16
    assert len(carr.to_bytes()) == size(False, intcodec.BITPLANE_INDEXED)


def test_many_empty_strings():
    """Bit-plane lengths take one byte per 32 empty strings: the reader's count bound allows it."""
    col = pa.array([""] * 100_000 + ["x"])
    data = fsstgpu.compress(col).to_bytes()
    assert len(data) < 100_000 // 8
    assert fsstgpu.decompress(CompressedStringArray.from_bytes(data), "cpu").equals(col)
    data = bytearray(data)
    struct.pack_into("<Q", data, 8, 33 * len(data))  # more strings than 32 per byte
    with pytest.raises(CorruptDataError, match="strings declared"):
        CompressedStringArray.from_bytes(_fix_crcs(data))


@pytest.mark.parametrize("change,message", [
    (lambda p: p[:15], "shorter than its 16-byte header"),
    (lambda p: p[:8] + (22).to_bytes(8, "little") + p[16:], "holds 22 values, expected 21"),
    (lambda p: p[:4] + bytes([6]) + p[5:], "unsigned values without delta"),
    (lambda p: p[:5] + bytes([1]) + p[6:], "unsigned values without delta"),
    (lambda p: b"XBP1" + p[4:], "magic"),
    (lambda p: p[:16] + bytes([9]) + p[17:], "planes"),
    (lambda p: p[:-4], "plane words"),
    (lambda p: p + bytes(4), "plane words"),
])
def test_forged_bitplane_lengths(carr, change, message):
    """A lengths section in the bit-plane codec, altered (CRCs fixed): CorruptDataError."""
    data = blob.dumps(carr, lengths_codec=intcodec.BITPLANE)
    pos, start, end = _sections(data)[4]
    payload = change(data[start:end])
    forged = bytearray(data[:pos] + struct.pack("<Q", len(payload)) + payload + bytes(4)
                       + data[end + 4:])
    with pytest.raises(CorruptDataError, match=message):
        CompressedStringArray.from_bytes(_fix_crcs(forged))


def _with_lengths(carr, payload: bytes, codec: int) -> bytes:
    """``carr``'s blob with ``payload`` as its lengths section (sizes and CRCs fixed)."""
    data = blob.dumps(carr, lengths_codec=codec)
    pos, start, end = _sections(data)[4]
    return _fix_crcs(bytearray(data[:pos] + struct.pack("<Q", len(payload)) + payload + bytes(4)
                               + data[end + 4:]))


def _planes(payload: bytes):
    """(plane-count position, data start) of a bit-plane payload."""
    n = int.from_bytes(payload[8:16], "little")
    groups = -(-n // 32)
    return 16, (16 + groups + 3) // 4 * 4


def _wider(p: bytes) -> bytes:
    """The same values as uint16: dtype code 1 (the plane words do not change)."""
    return p[:4] + bytes([1]) + p[5:]


def _extra_plane(p: bytes) -> bytes:
    """The last group claims one more plane, all zeros."""
    counts, start = _planes(p)
    n = int.from_bytes(p[8:16], "little")
    last = counts + -(-n // 32) - 1
    return p[:last] + bytes([p[last] + 1]) + p[last + 1:] + bytes(4)


def _bit_past_n(p: bytes) -> bytes:
    """Bit 31 of the last plane word set: value 31 of the last group, past n = 21."""
    return p[:-1] + bytes([p[-1] | 0x80])


def _padding(p: bytes) -> bytes:
    counts, start = _planes(p)
    return p[: start - 1] + b"\x01" + p[start:]


@pytest.mark.parametrize("change,message", [
    (_padding, "padding"),
    (_bit_past_n, "past the 21 values"),
    (_extra_plane, "top plane is zero"),
    (_wider, "narrowest dtype"),
])
def test_bitplane_lengths_have_one_encoding(carr, change, message):
    """Issue #12, finding 11: what blob.md promises of a bit-plane payload (zero padding, no
    bits past n, plane counts the groups' bit widths, the narrowest dtype) is enforced, so no
    second blob decodes to the same column."""
    good = intcodec.encode_uints(carr.lengths, intcodec.BITPLANE)
    assert len(carr) == 21 and int(carr.lengths.max()) < 256
    forged = change(good)
    assert forged != good
    # the unpacker alone would read the same values from it
    from fsstgpu.kernels.bitplane import bitplane_unpack_cpu

    assert bitplane_unpack_cpu(np.frombuffer(forged, np.uint8)).tolist() == carr.lengths.tolist()
    assert CompressedStringArray.from_bytes(_with_lengths(carr, good, intcodec.BITPLANE)).equals(
        carr)
    with pytest.raises(CorruptDataError, match=message):
        intcodec.decode_uints(forged, len(carr), intcodec.BITPLANE)
    with pytest.raises(CorruptDataError, match=message):
        CompressedStringArray.from_bytes(_with_lengths(carr, forged, intcodec.BITPLANE))


@pytest.mark.parametrize("code", [1, 3])
def test_indexed_bitplane_lengths_have_the_narrowest_dtype(carr, code):
    """FBP2 lengths (the default codec) stored wider than the values need are refused, as in
    FBP1 (the spec-conformance round of session 62: they decoded to the same column)."""
    good = intcodec.encode_uints(carr.lengths, intcodec.BITPLANE_INDEXED)
    assert good[:4] == b"FBP2" and good[4] == 0
    forged = good[:4] + bytes([code]) + good[5:]
    assert CompressedStringArray.from_bytes(
        _with_lengths(carr, good, intcodec.BITPLANE_INDEXED)).equals(carr)
    with pytest.raises(CorruptDataError, match="narrowest dtype"):
        CompressedStringArray.from_bytes(_with_lengths(carr, forged, intcodec.BITPLANE_INDEXED))


def test_narrow_lengths_have_one_encoding(carr):
    """The narrow codec likewise: a width wider than the values need is refused."""
    wide = bytes([2]) + carr.lengths.astype("<u2").tobytes()
    assert intcodec.decode_uints(intcodec.encode_uints(carr.lengths), len(carr)).tolist() == \
        carr.lengths.tolist()
    with pytest.raises(CorruptDataError, match="narrowest width"):
        CompressedStringArray.from_bytes(_with_lengths(carr, wide, intcodec.NARROW))


def test_roundtrip_inputs(carr, small_blob):
    for data in (small_blob, bytearray(small_blob), memoryview(small_blob)):
        again = CompressedStringArray.from_bytes(data)
        assert again.equals(carr)
    # bytes input is used without copying; mutable input is copied first.
    mutable = bytearray(small_blob)
    again = CompressedStringArray.from_bytes(mutable)
    mutable[:] = bytes(len(mutable))
    assert again.equals(carr)


def _check_damaged(data, original):
    """A damaged blob must raise CorruptDataError, or load as exactly the original."""
    try:
        got = CompressedStringArray.from_bytes(data)
    except CorruptDataError:
        return "error"
    assert got.equals(original)
    assert fsstgpu.decompress(got, device="cpu").equals(fsstgpu.decompress(original, "cpu"))
    return "same"


def test_every_truncation(carr, small_blob):
    for cut in range(len(small_blob)):
        with pytest.raises(CorruptDataError):
            CompressedStringArray.from_bytes(small_blob[:cut])


def test_trailing_bytes(small_blob):
    with pytest.raises(CorruptDataError, match="trailing"):
        CompressedStringArray.from_bytes(small_blob + b"\0")


def test_random_byte_flips(carr, small_blob):
    rng = np.random.default_rng(12345)
    outcomes = []
    for _ in range(300):
        data = bytearray(small_blob)
        for pos in rng.integers(0, len(data), size=rng.integers(1, 4)):
            data[pos] ^= int(rng.integers(1, 256))
        outcomes.append(_check_damaged(bytes(data), carr))
    assert outcomes.count("error") == 300  # every flip is caught (CRC32 on everything)


def _sections(data):
    """(size position, payload start, payload end) of each section."""
    out, pos = [], blob.HEADER_SIZE
    for _ in blob.SECTIONS:
        (size,) = struct.unpack_from("<Q", data, pos)
        out.append((pos, pos + 8, pos + 8 + size))
        pos += 8 + size + 4
    return out


def _fix_crcs(data: bytearray) -> bytes:
    """Recompute every CRC, as a forger would: only the structural checks remain."""
    struct.pack_into("<I", data, 64, zlib.crc32(bytes(data[:64])))
    pos = blob.HEADER_SIZE
    for _ in blob.SECTIONS:
        if pos + 8 > len(data):
            break
        (size,) = struct.unpack_from("<Q", data, pos)
        end = pos + 8 + size
        if end + 4 > len(data):
            break
        struct.pack_into("<I", data, end, zlib.crc32(bytes(data[pos:end])))
        pos = end + 4
    return bytes(data)


def test_forged_flips_never_crash(carr, small_blob):
    """With valid CRCs, altered payloads give CorruptDataError (on reading or decoding) or a
    consistent array."""
    rng = np.random.default_rng(7)
    loaded = 0
    for _ in range(300):
        data = bytearray(small_blob)
        for pos in rng.integers(0, len(data), size=rng.integers(1, 3)):
            data[pos] ^= int(rng.integers(1, 256))
        forged = _fix_crcs(data)
        try:  # reading checks the structure; decoding checks the codes
            got = CompressedStringArray.from_bytes(forged)
            out = fsstgpu.decompress(got, device="cpu")
        except CorruptDataError:
            continue
        loaded += 1
        assert len(out) == len(got)
        if got.type in (pa.binary(), pa.large_binary()):
            out.validate(full=True)
    assert loaded < 300


@pytest.mark.parametrize("field,value,message", [
    ("length", 2**62, "strings declared"),
    ("length", 2**64 - 1, "strings declared"),
    ("ncodes", 2**40, "codes declared"),
    ("nblocks", 2**40, "blocks declared"),
    ("nsplits", 2**63, "splits declared"),
    ("null_count", 2**50, "null_count"),
    ("length", 22, "block_starts"),
    ("ncodes", 3, "codes section"),
    ("nblocks", 2, "table 1"),
    ("nblocks", 0, "tables section"),
    ("nsplits", 1, "split"),
    ("split_size", 0, "split size"),
    ("split_size", 2**63, "split size"),  # read before (the column limit was 2**64 - 1 here)
    ("null_count", 5, "null"),
    ("nchunks", 1, "chunk"),
])
def test_forged_header_fields(small_blob, field, value, message):
    names = ("length", "null_count", "ncodes", "nblocks", "nsplits", "split_size", "nchunks")
    data = bytearray(small_blob)
    struct.pack_into("<Q", data, 8 + 8 * names.index(field), value)
    with pytest.raises(CorruptDataError, match=message):
        CompressedStringArray.from_bytes(_fix_crcs(data))


@pytest.mark.parametrize("offset,value,message", [
    (0, ord("X"), "magic"),
    (4, 2, "version"),
    (5, 0x80, "flags"),
    (5, None, "chunk_lengths"),  # the chunk flag added, without chunks
    (6, 9, "lengths codec"),
    (7, 6, "type code"),
])
def test_forged_header_bytes(small_blob, offset, value, message):
    data = bytearray(small_blob)
    data[offset] = data[offset] | blob.FLAG_CHUNKS if value is None else value
    with pytest.raises(CorruptDataError, match=message):
        CompressedStringArray.from_bytes(_fix_crcs(data))


def test_chunk_lengths_whose_sum_wraps_are_refused_by_name():
    # [3, 2**64 - 1] add up to 2 in uint64: refused (a chunk longer than the column), but the
    # message said "chunk lengths add up to 2, not 2"
    data = blob.dumps(fsstgpu.compress(pa.chunked_array([["a"], ["b"]])))
    pos = _sections(data)[-1][0]  # chunk_lengths, the last section
    payload = bytes([8]) + struct.pack("<2Q", 3, 2**64 - 1)
    frame = struct.pack("<Q", len(payload)) + payload
    forged = data[:pos] + frame + struct.pack("<I", zlib.crc32(frame))
    with pytest.raises(CorruptDataError, match=f"a chunk of {2**64 - 1} strings in a column of 2"):
        CompressedStringArray.from_bytes(forged)


def test_header_crc(small_blob):
    data = bytearray(small_blob)
    data[8] ^= 1
    with pytest.raises(CorruptDataError, match="header: CRC32"):
        CompressedStringArray.from_bytes(bytes(data))


def test_section_crc_named(small_blob):
    pos, start, end = _sections(small_blob)[3]  # codes
    data = bytearray(small_blob)
    data[start] ^= 0x40
    with pytest.raises(CorruptDataError, match="codes section: CRC32"):
        CompressedStringArray.from_bytes(bytes(data))


def test_forged_section_size(small_blob):
    pos, start, end = _sections(small_blob)[4]  # lengths
    data = bytearray(small_blob)
    struct.pack_into("<Q", data, pos, 2**63)
    with pytest.raises(CorruptDataError, match="lengths section declares"):
        CompressedStringArray.from_bytes(_fix_crcs(data))


def test_forged_width_byte(small_blob):
    pos, start, end = _sections(small_blob)[4]  # lengths: width byte first
    for width in (0, 3, 2, 255):
        data = bytearray(small_blob)
        data[start] = width
        with pytest.raises(CorruptDataError, match="lengths"):
            CompressedStringArray.from_bytes(_fix_crcs(data))


def test_not_a_blob():
    for data in (b"", b"FSGB", b"x" * 100, bytes(68), bytes(200)):
        with pytest.raises(CorruptDataError):
            CompressedStringArray.from_bytes(data)


def test_blob_roundtrip_of_all_types():
    for type_ in (pa.string(), pa.binary(), pa.string_view(), pa.binary_view()):
        vals = ["a", None, "bb"] if type_ in (pa.string(), pa.string_view()) else [b"a", None]
        check_roundtrip(pa.chunked_array([vals, vals], type_))


@pytest.mark.parametrize("n", [0, 1, 31, 32, 33, 1000])
@pytest.mark.parametrize("top", [0, 1, 255, 256, 70_000, 2**40, 2**64 - 1])
def test_bitplane_integer_codec_roundtrip(n, top):
    rng = np.random.default_rng(n * 7 + 1)
    values = (rng.integers(0, 2**63, n, dtype=np.uint64) % np.uint64(top + 1 if top < 2**63
                                                                         else 2**63))
    if n and top:
        values[rng.integers(0, n)] = top  # the maximum occurs
    payload = intcodec.encode_uints(values, intcodec.BITPLANE)
    assert intcodec.decode_uints(payload, n, intcodec.BITPLANE).tolist() == values.tolist()
    with pytest.raises(CorruptDataError, match="expected"):
        intcodec.decode_uints(payload, n + 1, intcodec.BITPLANE)
    offsets = np.concatenate(([0], np.cumsum(values % np.uint64(1000)))).astype(np.int64)
    payload = intcodec.encode_offsets(offsets, intcodec.BITPLANE)
    assert intcodec.decode_offsets(payload, n + 1, total=int(offsets[-1]),
                                  codec=intcodec.BITPLANE).tolist() == offsets.tolist()


@pytest.mark.parametrize("codec", sorted(intcodec.CODECS))
def test_encoded_size_is_the_encodings_size(codec):
    rng = np.random.default_rng(22)
    for n in (0, 1, 31, 32, 33, 4095, 4096, 4097, 20000):
        for top in (1, 2, 200, 70000, 2**40):
            values = rng.integers(0, top, n)
            values[rng.random(n) < 0.5] = 0  # groups of zeros store no planes
            assert intcodec.encoded_size(values, codec) == len(intcodec.encode_uints(values, codec))
    offsets = np.concatenate([[0], np.cumsum(rng.integers(0, 300, 1000))])
    assert (intcodec.encoded_offsets_size(offsets, codec)
            == len(intcodec.encode_offsets(offsets, codec)))


def _replaced_section(data: bytes, k: int, payload: bytes) -> bytes:
    """``data`` with section ``k``'s payload replaced (its size and every CRC fixed)."""
    pos, _, end = _sections(data)[k]
    return _fix_crcs(bytearray(data[:pos] + struct.pack("<Q", len(payload)) + payload
                               + bytes(4) + data[end + 4:]))


def test_a_section_without_its_flag_is_refused_not_ignored():
    """A validity, code-offsets or chunk-lengths section whose flag is off was refused only by
    these checks: without them its bytes were ignored (a column without nulls read with a
    bitmap's worth of bytes nobody looks at; stored code offsets or chunks dropped unread)."""
    carr = fsstgpu.compress(pa.array(["alpha", "beta", ""] * 5))
    data = blob.dumps(carr)
    assert carr.validity is None and not data[5] & blob.FLAG_VALIDITY
    forged = _replaced_section(data, blob.SECTIONS.index("validity"), b"\xff\xff")
    with pytest.raises(CorruptDataError, match="validity section present without its flag"):
        blob.loads(forged)
    stored = blob.dumps(carr, store_code_offsets=True)
    k = blob.SECTIONS.index("code_offsets")
    _, start, end = _sections(stored)[k]
    forged = _replaced_section(data, k, stored[start:end])
    with pytest.raises(CorruptDataError, match="code_offsets section present without its flag"):
        blob.loads(forged)
    chunked = blob.dumps(fsstgpu.compress(pa.chunked_array([pa.array(["alpha", "beta", ""] * 5)])))
    k = blob.SECTIONS.index("chunk_lengths")
    _, start, end = _sections(chunked)[k]
    forged = _replaced_section(data, k, chunked[start:end])
    with pytest.raises(CorruptDataError, match="chunk_lengths section present without its flag"):
        blob.loads(forged)
    assert blob.loads(data).equals(carr)


def test_a_blob_of_one_chunk_of_every_string_reads_back():
    """A chunk may hold every string of the column (the most a chunk length may be)."""
    col = pa.chunked_array([pa.array(["alpha", None, "beta"] * 4)])
    carr = fsstgpu.compress(col)
    assert carr.chunk_lengths.tolist() == [12]
    back = blob.loads(blob.dumps(carr))
    assert back.equals(carr) and fsstgpu.decompress(back, device="cpu").equals(col)


def test_dumps_refuses_an_unknown_lengths_codec(carr):
    with pytest.raises(ValueError, match="unknown lengths codec 9"):
        blob.dumps(carr, lengths_codec=9)
    with pytest.raises(ValueError, match="unknown lengths codec 9"):
        blob.dumped_size(carr, lengths_codec=9)


@pytest.mark.parametrize("width", [2, 4, 8])
def test_no_values_have_one_narrow_encoding(width):
    """blob.md: the narrow codec's width is the narrowest, "1 for no values". A payload of no
    values at a wider width decoded to the same empty array: a second encoding (the check of
    the width skipped the empty array, whose maximum it cannot take)."""
    assert intcodec.encode_uints([]) == b"\x01"
    assert intcodec.decode_uints(b"\x01", 0).tolist() == []
    with pytest.raises(CorruptDataError, match="narrowest width"):
        intcodec.decode_uints(bytes([width]), 0)
    with pytest.raises(CorruptDataError, match="narrowest width"):
        intcodec.decode_offsets(bytes([width]), 1, total=0)
