"""UTF-8: the validator against Python's decoder, and every decoding path refusing forged text.

Regression tests for issue #12, finding 2: a forged blob or extension array whose codes decode to
``\\xff\\xff`` under a ``string`` type came back as a pyarrow string array that fails
``validate(full=True)``.
"""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

import fsstgpu
from fsstgpu import CorruptDataError, DeviceStringArray
from fsstgpu.formats.arrow import FsstType
from fsstgpu.formats.arrow_storage import to_extension_array
from fsstgpu.utf8 import check_utf8, first_invalid_string


def _reference(strings) -> int:
    for i, s in enumerate(strings):
        try:
            s.decode("utf-8")
        except UnicodeDecodeError:
            return i
    return -1


def _layout(strings):
    data = np.frombuffer(b"".join(strings), np.uint8)
    offsets = np.zeros(len(strings) + 1, np.int64)
    np.cumsum([len(s) for s in strings], out=offsets[1:])
    return data, offsets


# Bytes near every boundary of the encoding: ASCII, continuation ranges, overlong leads,
# surrogates, the last code point and past it.
_EDGES = [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0,
          0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF]
_piece = st.one_of(
    st.text(max_size=12).map(lambda s: s.encode("utf-8")),
    st.lists(st.sampled_from(_EDGES), max_size=6).map(bytes),
    st.binary(max_size=20),
)


@settings(max_examples=600, deadline=None)
@given(st.lists(st.lists(_piece, max_size=4).map(b"".join), max_size=12))
def test_matches_pythons_decoder(strings):
    data, offsets = _layout(strings)
    assert first_invalid_string(data, offsets) == _reference(strings)
    assert first_invalid_string(data, offsets.astype(np.int32)) == _reference(strings)


def test_every_two_and_three_byte_sequence():
    seqs = [bytes([a, b]) for a in range(0x80, 0x100) for b in range(256)]
    seqs += [bytes([a, b, c]) for a in range(0xE0, 0xF5) for b in range(0x80, 0xC0)
             for c in (0x7F, 0x80, 0xBF, 0xC0)]
    for s in seqs:
        for prefix in (b"", b"0123456789"):  # inside and after the 8-byte ASCII skip
            data, offsets = _layout([prefix + s])
            assert (first_invalid_string(data, offsets) == 0) == (_reference([prefix + s]) == 0)


def test_large_columns_split_over_tasks_find_the_first_bad_string():
    strings = [b"plain ascii text %d" % i for i in range(400_000)]
    strings[123_456] = b"bad \xff"
    strings[300_000] = b"\xc3"
    data, offsets = _layout(strings)
    assert first_invalid_string(data, offsets) == 123_456
    strings[123_456] = b"fine \xc3\xa9"
    data, offsets = _layout(strings)
    assert first_invalid_string(data, offsets) == 300_000


def test_message_names_the_string_and_its_bytes():
    data, offsets = _layout([b"ok", b"\xe2\x82"])
    with pytest.raises(CorruptDataError, match=r"col: string 1 is not valid UTF-8 \(bytes e2 82\)"):
        check_utf8(data, offsets, "col")


# ------------------------------------------------------------------------- decoded output
def _forged_text_blob() -> bytes:
    """A binary column of b"\\xff\\xff" whose blob claims type string (CRC recomputed)."""
    carr = fsstgpu.compress(pa.array([b"ok", b"\xff\xff", None], pa.binary()))
    data = bytearray(carr.to_bytes())
    data[7] = 0  # type code: string
    struct.pack_into("<I", data, 64, zlib.crc32(bytes(data[:64])))
    return bytes(data)


def test_forged_blob_cannot_decode_to_invalid_text():
    carr = fsstgpu.CompressedStringArray.from_bytes(_forged_text_blob())
    assert carr.type == pa.string()
    with pytest.raises(CorruptDataError, match="string 1 is not valid UTF-8"):
        fsstgpu.decompress(carr, device="cpu")
    with pytest.raises(CorruptDataError, match="string 1"):
        carr[1]
    with pytest.raises(CorruptDataError, match="UTF-8"):
        carr.take([0, 1])
    assert carr[0] == "ok" and carr.take([2, 0]).to_pylist() == [None, "ok"]


def test_forged_extension_type_cannot_decode_to_invalid_text():
    ext = to_extension_array(fsstgpu.compress(pa.array([b"\xff\xff"], pa.binary())))
    t = ext.type
    as_text = FsstType(t.codes_type, pa.string(), t.tables, t.split_size)
    forged = pa.ExtensionArray.from_storage(as_text, ext.storage)
    with pytest.raises(CorruptDataError, match="UTF-8"):
        fsstgpu.decompress(forged, device="cpu")


class _Host:
    """Stands in for a CuPy array: ``get()`` copies to the host."""

    def __init__(self, array):
        self.array = array

    def get(self):
        return self.array


def test_device_result_is_checked_on_the_host_copy():
    """DeviceStringArray.to_arrow checks text after copying it (no GPU needed to test it)."""
    offsets, data = np.array([0, 2, 4], np.int32), np.frombuffer(b"ok\xff\xff", np.uint8)
    dev = DeviceStringArray(pa.string(), 2, _Host(offsets), _Host(data), None, 0)
    with pytest.raises(CorruptDataError, match="string 1 is not valid UTF-8"):
        dev.to_arrow()
    dev = DeviceStringArray(pa.binary(), 2, _Host(offsets), _Host(data), None, 0)
    assert dev.to_arrow().to_pylist() == [b"ok", b"\xff\xff"]
