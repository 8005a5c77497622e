"""fsstgpu.checksum: zlib's CRC32, computed in pieces on the worker pool, the same number."""

from __future__ import annotations

import os
import zlib

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fsstgpu import checksum


@given(st.binary(max_size=300), st.binary(max_size=300), st.integers(0, 2**32 - 1))
def test_combine_is_zlibs(a, b, value):
    assert checksum.combine(zlib.crc32(a, value), zlib.crc32(b), len(b)) == zlib.crc32(a + b, value)


@settings(max_examples=60, deadline=None)
@given(st.binary(min_size=0, max_size=5000), st.integers(0, 2**32 - 1),
       st.integers(1, 700))
def test_pieces_give_zlibs_crc(data, value, piece):
    """Small pieces and a low threshold: every split of the buffer is exercised."""
    old = checksum.PARALLEL_BYTES, checksum.PIECE_BYTES
    checksum.PARALLEL_BYTES, checksum.PIECE_BYTES = 1, piece
    try:
        assert checksum.crc32(data, value) == zlib.crc32(data, value)
    finally:
        checksum.PARALLEL_BYTES, checksum.PIECE_BYTES = old


@pytest.mark.parametrize("size", [0, 1, (8 << 20) - 1, 8 << 20, (21 << 20) + 7])
def test_large_buffers_and_their_types(size):
    data = os.urandom(size)
    want = zlib.crc32(data, 77)
    for form in (data, memoryview(data), np.frombuffer(data, np.uint8), bytearray(data)):
        assert checksum.crc32(form, 77) == want


def test_a_flipped_byte_changes_it():
    data = bytearray(os.urandom(9 << 20))
    before = checksum.crc32(data)
    data[5 << 20] ^= 0x10
    assert checksum.crc32(data) != before and checksum.crc32(data) == zlib.crc32(data)


def test_negative_length_refused():
    with pytest.raises(ValueError, match="at least 0"):
        checksum.combine(0, 0, -1)
