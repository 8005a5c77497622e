"""Each refusal of :mod:`fsstgpu.formats.intcodec` on its own (mutation campaign, round 3).

The blob tests reach the integer codecs through whole blobs, where the first check to fail
hides the rest: these call the codec with payloads that break one rule each, and pin the
bounds (the widest value that fits, a delta equal to the total, count 0 and 1).
"""

import numpy as np
import pytest

from fsstgpu.errors import CorruptDataError
from fsstgpu.formats import intcodec
from fsstgpu.formats.intcodec import (
    BITPLANE,
    BITPLANE_INDEXED,
    NARROW,
    decode_offsets,
    decode_uints,
    encode_offsets,
    encode_uints,
    encoded_size,
    narrowest_width,
)


def test_narrowest_width_at_its_bounds():
    assert [narrowest_width(v) for v in (255, 256, 2**16 - 1, 2**16, 2**32 - 1, 2**32)] == [
        1, 2, 2, 4, 4, 8]
    assert narrowest_width(2**64 - 1) == 8
    with pytest.raises(ValueError, match="does not fit in 64 bits"):
        narrowest_width(2**64)
    with pytest.raises(ValueError, match="non-negative, got -1"):
        narrowest_width(-1)


@pytest.mark.parametrize(("values", "codec", "error", "message"), [
    ([1, 2], 4, ValueError, "unknown integer codec 4"),
    ([1, 2], 0, ValueError, "unknown integer codec 0"),
    ([[1, 2]], NARROW, ValueError, "1-D array"),
    ([1.0, 2.0], NARROW, TypeError, "expected integers, got float64"),
    ([True], NARROW, TypeError, "expected integers, got bool"),
    ([5, -1], NARROW, ValueError, "values must be non-negative"),  # the maximum fits a byte
    ([5, -1], BITPLANE_INDEXED, ValueError, "values must be non-negative"),
])
def test_encoders_refuse_what_they_cannot_encode(values, codec, error, message):
    for encode in (encode_uints, encoded_size):
        with pytest.raises(error, match=message):
            encode(values, codec)


def test_an_empty_array_of_any_dtype_encodes_as_no_values():
    for codec in sorted(intcodec.CODECS):
        payload = encode_uints(np.array([], np.float64), codec)
        assert payload == encode_uints(np.array([], np.uint8), codec)
        assert decode_uints(payload, 0, codec).tolist() == []
    assert encode_uints([]) == b"\x01"


@pytest.mark.parametrize(("payload", "count", "codec", "message"), [
    (b"\x01\x07", 1, 4, "unknown integer codec 4"),
    (b"\x01\x07", 1, 0, "unknown integer codec 0"),
    (b"\x01", -1, NARROW, "negative count -1"),
    (b"", 0, NARROW, "empty payload"),
    (b"\x03\x01\x00\x00", 1, NARROW, "invalid integer width 3"),
    (b"\x00", 5, NARROW, "invalid integer width 0"),
    (b"\x01\x07", 2, NARROW, "payload is 2 bytes, expected 3"),
    (b"\x01\x07\x08\x09", 2, NARROW, "payload is 4 bytes, expected 3"),
    (b"\x02\xff\x00", 1, NARROW, "fit in 1"),
    (b"\x04\xff\xff\x00\x00", 1, NARROW, "fit in 2"),
    (b"\x08" + (2**32 - 1).to_bytes(8, "little"), 1, NARROW, "fit in 4"),
])
def test_decode_uints_refuses_each_damage(payload, count, codec, message):
    with pytest.raises(CorruptDataError, match=message):
        decode_uints(payload, count, codec, what="lengths")
    with pytest.raises(CorruptDataError, match="^lengths: "):
        decode_uints(payload, count, codec, what="lengths")


def test_decode_uints_at_its_bounds():
    assert decode_uints(b"\x01", 0).tolist() == []
    assert decode_uints(b"\x02\x00\x01", 1).tolist() == [256]  # the least that needs 2 bytes
    assert decode_uints(b"\x04\x00\x00\x01\x00", 1).tolist() == [2**16]
    assert decode_uints(b"\x08" + (2**32).to_bytes(8, "little"), 1).tolist() == [2**32]
    assert decode_uints(b"\x08" + b"\xff" * 8, 1).tolist() == [2**64 - 1]


@pytest.mark.parametrize("codec", [BITPLANE, BITPLANE_INDEXED])
def test_bitplane_payloads_refuse_each_damage(codec):
    values = np.arange(33, dtype=np.uint8)
    good = encode_uints(values, codec)
    other = encode_uints(values, BITPLANE + BITPLANE_INDEXED - codec)
    assert decode_uints(good, 33, codec).tolist() == values.tolist()
    cases = [
        (good[:4], 0, "shorter than its 16-byte header"),  # no dtype byte to read
        (good[:5], 0, "shorter than its 16-byte header"),  # no flags byte
        (good[:8], 0, "shorter than its 16-byte header"),
        (good[:15], 33, "payload of 15 bytes is shorter than its 16-byte header"),
        (good, 32, "holds 33 values, expected 32"),
        (other, 33, f"has magic b'FBP{2 if codec == BITPLANE else 1}', "
                    f"expected b'FBP{1 if codec == BITPLANE else 2}'"),
        (good[:4] + b"\x04" + good[5:], 33, "dtype code 4, flags 0"),
        (good[:5] + b"\x01" + good[6:], 33, "dtype code 0, flags 1"),
        (good[:16], 33, "truncated"),  # the header alone: no plane counts
        (good[:17], 33, "truncated"),
    ]
    for payload, count, message in cases:
        with pytest.raises(CorruptDataError, match=message):
            decode_uints(payload, count, codec)


@pytest.mark.parametrize("codec", [BITPLANE, BITPLANE_INDEXED])
def test_bitplane_values_need_the_narrowest_dtype_at_its_bounds(codec):
    from fsstgpu.kernels.bitplane import bitplane_pack_cpu

    def payload(values, dtype):
        kwargs = {"version": 1} if codec == BITPLANE else {}
        return bitplane_pack_cpu(np.asarray(values, dtype), **kwargs).tobytes()

    assert decode_uints(payload([0, 256], np.uint16), 2, codec).tolist() == [0, 256]
    assert decode_uints(payload([2**16], np.uint32), 1, codec).tolist() == [2**16]
    assert decode_uints(payload([0, 255], np.uint8), 2, codec).tolist() == [0, 255]
    for values, dtype in (([0, 255], np.uint16), ([2**16 - 1], np.uint32),
                          ([2**32 - 1], np.uint64), ([], np.uint16), ([0, 0], np.uint32)):
        with pytest.raises(CorruptDataError, match="narrowest dtype"):
            decode_uints(payload(values, dtype), len(values), codec)


@pytest.mark.parametrize(("offsets", "message"), [
    ([], "non-empty and start at 0"),
    ([1, 2], "non-empty and start at 0"),
    ([0, 3, 2], "non-decreasing"),
    # unsigned offsets: a decrease would wrap to a huge delta without the int64 conversion
    # (the fourth round's survivor: `dtype=` dropped in _deltas)
    (np.array([0, 3, 2], np.uint64), "non-decreasing"),
    (np.array([0, 3, 2], np.uint32), "non-decreasing"),
])
def test_encode_offsets_refuses_what_is_no_offsets(offsets, message):
    for encode in (encode_offsets, intcodec.encoded_offsets_size):
        with pytest.raises(ValueError, match=message):
            encode(offsets)


def test_decode_offsets_refuses_each_damage():
    with pytest.raises(CorruptDataError, match="at least one offset, got count 0"):
        decode_offsets(b"\x01", 0, total=0)
    assert decode_offsets(b"\x01", 1, total=0).tolist() == [0]
    with pytest.raises(CorruptDataError, match="add up to 0, expected 1"):
        decode_offsets(b"\x01", 1, total=1)
    # a delta equal to the total is fine, one past it is refused by name
    assert decode_offsets(encode_offsets([0, 0, 5]), 3, total=5).tolist() == [0, 0, 5]
    with pytest.raises(CorruptDataError, match="a delta exceeds the declared total 5"):
        decode_offsets(encode_uints([6, 0]), 3, total=5)
    with pytest.raises(CorruptDataError, match="add up to 4, expected 5"):
        decode_offsets(encode_uints([2, 2]), 3, total=5)
    # every delta <= total, yet the uint64 running sum wraps and lands exactly on the total
    big = 2**63 - 1
    deltas = encode_uints(np.array([big, big, big, 2], np.uint64))
    with pytest.raises(CorruptDataError, match="deltas overflow"):
        decode_offsets(deltas, 5, total=big)
    with pytest.raises(CorruptDataError, match="^starts: "):
        decode_offsets(encode_uints([6]), 2, total=5, what="starts")


def _fbp1(values) -> bytearray:
    from fsstgpu.kernels.bitplane import bitplane_pack_cpu

    return bytearray(bitplane_pack_cpu(np.asarray(values, np.uint8), version=1).tobytes())


def _two_groups(top: int) -> np.ndarray:
    """53 values: group 0 (32 values) of 2 bit planes, group 1 (21 values, the last) whose
    maximum is ``top``."""
    values = np.zeros(53, np.uint8)
    values[:32] = np.arange(32) % 4
    values[40] = top
    return values


def _forged_fbp1():
    """(name, payload, message) of bit-plane layouts that unpack to the same values as the
    writer's but are not its: each in a payload of two groups (counts at 16-17, padding 18-19,
    planes from 20), forged in the second group or the first padding byte."""
    out = []
    p = _fbp1(_two_groups(255))
    assert p[16:20] == b"\x02\x08\x00\x00" and len(p) == 20 + 4 * 10
    p[18] = 1  # the first padding byte (a test forged the last one)
    out.append(("first padding byte", p, "padding after the plane counts is not zero"))
    p = _fbp1(_two_groups(255))  # group 1 of 8 planes: as many as uint8's bits
    p[20 + 4 * 2 + 3] |= 0x80  # bit 31 of group 1's plane 0: value 63, past the 53
    out.append(("bit past n", p, "group 1 has bits set past the 53 values"))
    values = _two_groups(255)
    values[:32] = 0  # group 0 without planes: group 1's plane 0 is the first word
    p = _fbp1(values)
    p[20 + 3] |= 0x80
    out.append(("bit past n after an empty group", p, "group 1 has bits set past the 53"))
    p = _fbp1(_two_groups(100))  # 7 planes in group 1: an eighth, zero, appended
    p[17] = 8
    p += bytes(4)
    out.append(("zero top plane", p, "group 1 claims 8 planes but its top plane is zero"))
    p = _fbp1(_two_groups(0))  # group 1 all zero: no plane; one zero plane claimed
    assert p[17] == 0
    p[17] = 1
    p += bytes(4)
    out.append(("one zero plane", p, "group 1 claims 1 planes but its top plane is zero"))
    return out


@pytest.mark.parametrize(("name", "payload", "message"), _forged_fbp1(),
                         ids=[f[0] for f in _forged_fbp1()])
def test_bitplane_layouts_of_two_groups_have_one_encoding(name, payload, message):
    from fsstgpu.kernels.bitplane import bitplane_unpack_cpu

    want = _two_groups({"bit past n": 255, "first padding byte": 255, "zero top plane": 100,
                        "one zero plane": 0, "bit past n after an empty group": 255}[name])
    if name == "bit past n after an empty group":
        want[:32] = 0
    assert decode_uints(encode_uints(want, BITPLANE), 53, BITPLANE).tolist() == want.tolist()
    assert bitplane_unpack_cpu(np.frombuffer(bytes(payload), np.uint8)).tolist() == want.tolist()
    with pytest.raises(CorruptDataError, match=message):
        decode_uints(bytes(payload), 53, BITPLANE)
