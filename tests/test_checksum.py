"""fsstgpu.checksum: zlib's CRC32, computed in pieces on the worker pool, the same number; and
fsstgpu.native.checksums, the C++ CRC each piece runs."""

from __future__ import annotations

import os
import zlib

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fsstgpu import _native, checksum
from fsstgpu.native.checksums import crc32 as native_crc32, crc32_many


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


# fsstgpu.native.checksums: the C++ CRC (folding where the CPU has PCLMULQDQ, else the table)


@pytest.fixture(params=["best", "scalar"])
def crc_path(request, monkeypatch):
    """Each of the C++ CRC's two paths (FSSTGPU_ISA=scalar: the table's)."""
    if request.param == "scalar":
        monkeypatch.setenv("FSSTGPU_ISA", "scalar")
        assert not _native.crc32_clmul()  # (the table's path, whatever the CPU)
    return request.param


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=700), st.integers(0, 15), st.integers(0, 2**32 - 1))
def test_native_crc32_is_zlibs(data, skip, value):
    """Every length around the 16- and 64-byte folds, at every alignment (``skip``)."""
    view = memoryview(data)[min(skip, len(data)):]
    assert native_crc32(view, value) == zlib.crc32(view, value)


def test_native_crc32_both_paths_on_large_buffers(crc_path):
    data = os.urandom((3 << 20) + 77)
    for cut in (0, 1, 63, 64, 65, 1000):
        assert native_crc32(data[cut:], 3) == zlib.crc32(data[cut:], 3), (crc_path, cut)
    flipped = bytearray(data)
    flipped[1 << 20] ^= 4
    assert native_crc32(flipped) != native_crc32(data)


def test_native_crc32_refuses_what_is_not_contiguous_bytes():
    with pytest.raises(TypeError, match="contiguous"):
        native_crc32(np.arange(10, dtype=np.uint8)[::2])
    with pytest.raises(TypeError, match="contiguous"):
        native_crc32(7)


def test_crc32_many_gives_each_pieces_crc(crc_path):
    data = os.urandom(5000)
    starts, sizes = [0, 100, 100, 4000, 5000], [100, 0, 3900, 1000, 0]
    want = [zlib.crc32(data[s : s + z]) for s, z in zip(starts, sizes, strict=True)]
    got = crc32_many(data, starts, sizes)
    assert got.dtype == np.uint32 and got.tolist() == want
    assert crc32_many(data, [], []).tolist() == []


@pytest.mark.parametrize("start, size", [(-1, 1), (0, 5001), (4999, 2), (5001, 0),
                                         (2**62, 2**62), (1, -1)])
def test_crc32_many_refuses_pieces_outside_the_data(start, size):
    with pytest.raises(ValueError, match="outside the data"):
        crc32_many(bytes(5000), [0, start], [1, size])
