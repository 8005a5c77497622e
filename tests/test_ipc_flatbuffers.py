"""The flatbuffer reads of an Arrow IPC file's footer and message headers
(:mod:`fsstgpu.formats.ipc_compression`'s FlatTable, :mod:`fsstgpu.formats.ipc_footer`): a forged
offset that points outside the bytes is refused, never read from somewhere else."""

from __future__ import annotations

import struct

import pyarrow as pa
import pyarrow.ipc as ipc
import pytest

from fsstgpu.formats.ipc_compression import FlatTable, ipc_compression
from fsstgpu.formats.ipc_footer import last_batch_metadata


def _two_batches() -> bytes:
    """An IPC file of two batches whose custom metadata tell them apart."""
    sink = pa.BufferOutputStream()
    batch = pa.record_batch({"n": pa.array([1], pa.int8())})
    with ipc.new_file(sink, batch.schema) as w:
        w.write_batch(batch, custom_metadata={"k": "first"})
        w.write_batch(batch, custom_metadata={"k": "last"})
    return sink.getvalue().to_pybytes()


def _footer_with_wrapped_vtable(data: bytes) -> bytes:
    """``data`` with its footer's root table given a vtable at a negative position, -size: the
    last ``size`` bytes of the footer (as Python counts a negative offset) are a vtable whose
    recordBatches field names a vector of one block, the first batch's."""
    size = len(data)
    length = struct.unpack_from("<i", data, size - 10)[0]
    body, footer = data[:size - 10 - length], data[size - 10 - length:size - 10]
    root = struct.unpack_from("<I", footer, 0)[0]
    vtable = root - struct.unpack_from("<i", footer, root)[0]
    vtable_size = struct.unpack_from("<H", footer, vtable)[0]
    at = root + struct.unpack_from("<H", footer, vtable + 4 + 2 * 3)[0]  # recordBatches
    vector = at + struct.unpack_from("<I", footer, at)[0]
    first_block = footer[vector + 4:vector + 4 + 24]
    slot = len(footer) + (-len(footer)) % 8
    forged_vtable = bytearray(footer[vtable:vtable + vtable_size])
    struct.pack_into("<H", forged_vtable, 4 + 2 * 3, slot - root)
    new = bytearray(footer.ljust(slot, b"\0"))
    new += struct.pack("<II", 8, 0) + struct.pack("<I", 1) + first_block + forged_vtable
    struct.pack_into("<i", new, root, root + vtable_size)  # root - soffset = -vtable_size
    return body + bytes(new) + struct.pack("<i", len(new)) + b"ARROW1"


def test_a_vtable_before_the_buffer_is_refused():
    # the table at 4 says its vtable is 6 bytes before it: at -2, which struct reads as the
    # buffer's last two bytes (a vtable size of 6)
    buf = struct.pack("<Iih", 0, 6, 6)
    with pytest.raises(struct.error, match="before the buffer"):
        FlatTable(buf, 4)


def test_last_batch_metadata_of_a_footer_whose_vtable_wraps_is_none():
    data = _two_batches()
    assert last_batch_metadata(pa.BufferReader(data)) == {b"k": b"last"}
    forged = _footer_with_wrapped_vtable(data)
    with pytest.raises(OSError, match="Footer"):  # pyarrow's own reader refuses that footer
        ipc.open_file(pa.BufferReader(forged))
    # it was read as a footer listing only the first batch: {b"k": b"first"}
    assert last_batch_metadata(pa.BufferReader(forged)) is None


@pytest.mark.parametrize("cut", ["garbage", "half", "schema part"])
def test_ipc_compression_of_unreadable_messages_is_none(cut):
    """The codec guides only how outputs are written: messages that cannot be read give None
    (the read proper names the fault), not pyarrow's error. Bytes that are no stream fail as
    OSError, a stream cut short as ArrowInvalid: a mutation campaign dropped either from the
    except unseen."""
    sink = pa.BufferOutputStream()
    with ipc.new_stream(sink, pa.schema([("n", pa.int64())]),
                        options=ipc.IpcWriteOptions(compression="zstd")) as w:
        w.write_table(pa.table({"n": [1, 2, 3]}))
    data = sink.getvalue().to_pybytes()
    assert ipc_compression(pa.BufferReader(data), "arrows") == "zstd"
    bad = {"garbage": b"\xff" * 64, "half": data[:len(data) // 2], "schema part": data[:20]}[cut]
    assert ipc_compression(pa.BufferReader(bad), "arrows") is None


def test_a_string_past_the_buffer_is_refused():
    # a vtable at 0, its table at 4, at 8 the offset of a string at 12 that says it has 5
    # bytes where the buffer has 4 left (a dropped check read those 4 without an error)
    def table(n):
        return FlatTable(struct.pack("<HHiII", 4, 8, 4, 4, n) + b"abcd", 4)

    assert table(4).string_at(8) == b"abcd"
    with pytest.raises(struct.error, match="string past the buffer"):
        table(5).string_at(8)
