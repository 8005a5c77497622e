""":func:`fsstgpu.formats.ipc_footer.last_batch_metadata` on files whose footer, last block or
message header is forged one field at a time (mutation campaign, round 3): each bound the
reader checks gives None, the values at the bounds are read, and every way the read can fail
is None rather than an exception."""

from __future__ import annotations

import struct

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from fsstgpu.formats.ipc_compression import FlatTable
from fsstgpu.formats.ipc_footer import _MAX_HEADER, last_batch_metadata


def _file(*metadata) -> bytes:
    """An IPC file of one single-row batch per entry of ``metadata`` (its custom metadata)."""
    sink = pa.BufferOutputStream()
    batch = pa.record_batch({"n": pa.array([1], pa.int8())})
    with ipc.new_file(sink, batch.schema) as w:
        for m in metadata:
            w.write_batch(batch, custom_metadata=m)
    return sink.getvalue().to_pybytes()


def _last_block(data: bytes) -> int:
    """The position in ``data`` of the footer's last Block (offset int64, metaDataLength int32)."""
    footer_len = struct.unpack_from("<i", data, len(data) - 10)[0]
    at = len(data) - 10 - footer_len
    footer = data[at:len(data) - 10]
    start, count = FlatTable(footer, struct.unpack_from("<I", footer, 0)[0]).vector(3)
    assert count
    return at + start + 24 * (count - 1)


def _with_block(data: bytes, offset: int | None = None, length: int | None = None) -> bytes:
    out = bytearray(data)
    pos = _last_block(data)
    old_offset, old_length = struct.unpack_from("<qi", data, pos)
    struct.pack_into("<qi", out, pos, old_offset if offset is None else offset,
                     old_length if length is None else length)
    return bytes(out)


def _read(data: bytes):
    return last_batch_metadata(pa.BufferReader(data))


TWO = _file({"k": "first"}, {"k": "last", "e": ""})


def test_the_last_batchs_metadata_and_none_or_empty():
    assert _read(TWO) == {b"k": b"last", b"e": b""}  # an empty value is a value
    assert _read(_file({"k": "v"}, {})) == {}  # no metadata: empty, not None
    assert _read(_file()) is None  # no batch


def test_a_damaged_tail_is_none():
    size = len(TWO)
    footer_len = struct.unpack_from("<i", TWO, size - 10)[0]
    assert _read(TWO[:-1] + b"2") is None  # "ARROW2"
    for bad in (0, -1, -footer_len, size - 9, 2**31 - 1):
        assert _read(TWO[:-10] + struct.pack("<i", bad) + b"ARROW1") is None, bad
    assert _read(b"ARROW1") is None  # shorter than the tail: the seek fails (OSError)
    assert _read(b"") is None


def test_a_footer_filling_the_whole_file_is_read():
    """A footer of exactly size - 10 bytes (at the file's first byte) is within bounds."""
    footer_len = struct.unpack_from("<i", TWO, len(TWO) - 10)[0]
    footer = TWO[len(TWO) - 10 - footer_len:len(TWO) - 10]
    # the messages put after it (the blocks' offsets moved), the footer is the file's start
    body = TWO[:len(TWO) - 10 - footer_len]
    shift = len(footer)
    moved = bytearray(footer + body)
    root = struct.unpack_from("<I", footer, 0)[0]
    start, count = FlatTable(footer, root).vector(3)
    for k in range(count):
        at = start + 24 * k
        struct.pack_into("<q", moved, at, struct.unpack_from("<q", footer, at)[0] + shift)
    tail = struct.pack("<i", len(moved)) + b"ARROW1"
    assert _read(bytes(moved) + tail) == {b"k": b"last", b"e": b""}


def test_the_last_blocks_offset_and_length_at_their_bounds():
    pos = _last_block(TWO)
    offset, length = struct.unpack_from("<qi", TWO, pos)
    for bad_offset in (-1, -8, len(TWO), 2**62):
        assert _read(_with_block(TWO, offset=bad_offset)) is None, bad_offset
    for bad_length in (7, 0, -1, _MAX_HEADER + 1, 2**31 - 1):
        assert _read(_with_block(TWO, length=bad_length)) is None, bad_length
    # a length past the file's end reads what there is: up to _MAX_HEADER is accepted
    assert _read(_with_block(TWO, length=_MAX_HEADER)) == {b"k": b"last", b"e": b""}
    # the first batch's message named by the last block: its metadata
    first = struct.unpack_from("<qi", TWO, pos - 24)
    assert _read(_with_block(TWO, *first)) == {b"k": b"first"}


def test_a_header_without_the_continuation_marker():
    """Arrow before 0.15 wrote a message as its int32 length and flatbuffer, no 0xFFFFFFFF
    marker: the block pointing 4 bytes in reads such a header."""
    offset, length = struct.unpack_from("<qi", TWO, _last_block(TWO))
    assert TWO[offset:offset + 4] == b"\xff\xff\xff\xff"
    assert _read(_with_block(TWO, offset + 4, length - 4)) == {b"k": b"last", b"e": b""}


def test_a_closed_file_is_none():
    f = pa.BufferReader(TWO)
    f.close()
    assert last_batch_metadata(f) is None  # ValueError: I/O operation on closed file


def test_a_file_that_cannot_seek_is_none():
    f = pa.CompressedInputStream(pa.BufferReader(TWO), "gzip")  # OSError: not seekable
    assert last_batch_metadata(f) is None


@pytest.mark.parametrize("cut", [1, 20, 60])
def test_a_footer_cut_short_is_none(cut):
    footer_len = struct.unpack_from("<i", TWO, len(TWO) - 10)[0]
    at = len(TWO) - 10 - footer_len
    short = TWO[:at] + TWO[at:len(TWO) - 10][:cut]
    assert _read(short + struct.pack("<i", cut) + b"ARROW1") is None


def test_a_footer_without_its_batches_field_is_none_whatever_its_last_bytes():
    """recordBatches absent is no batch: not a block read from 24 bytes before the vector's
    position 0 (the footer's last 24 bytes, as Python counts a negative offset), here a valid
    block naming the last batch."""
    pos = _last_block(TWO)
    block = TWO[pos:pos + 24]
    footer_len = struct.unpack_from("<i", TWO, len(TWO) - 10)[0]
    at = len(TWO) - 10 - footer_len
    footer = bytearray(TWO[at:len(TWO) - 10])
    root = FlatTable(bytes(footer), struct.unpack_from("<I", footer, 0)[0])
    struct.pack_into("<H", footer, root.vtable + 4 + 2 * 3, 0)  # field 3: absent
    footer += block
    assert _read(TWO[:at] + bytes(footer) + struct.pack("<i", len(footer)) + b"ARROW1") is None


@pytest.mark.parametrize("field", [0, 1])
def test_a_key_or_value_absent_is_skipped(field):
    """KeyValue's key and value are optional flatbuffer strings: a pair missing either is
    left out (pyarrow writes both; both of this file's pairs share one vtable)."""
    offset, length = struct.unpack_from("<qi", TWO, _last_block(TWO))
    message_at = offset + 8
    message = TWO[message_at:offset + length]
    first, n = FlatTable(message, struct.unpack_from("<I", message, 0)[0]).vector(4)
    vtables = {FlatTable(message, first + 4 * k + struct.unpack_from(
        "<I", message, first + 4 * k)[0]).vtable for k in range(n)}
    assert n == 2 and len(vtables) == 1
    forged = bytearray(TWO)
    struct.pack_into("<H", forged, message_at + vtables.pop() + 4 + 2 * field, 0)
    assert _read(bytes(forged)) == {}


def test_a_header_of_megabytes_of_metadata_is_read():
    """The header bound is 64 MiB: a last batch with 2 MB of custom metadata is read."""
    big = "x" * 2_000_000
    assert _read(_file({"k": "v"}, {"k": big})) == {b"k": big.encode()}
    assert _MAX_HEADER == 1 << 26
