"""The body compression of an Arrow IPC file or stream, read from its first data message.

Pyarrow reads compressed IPC transparently and says nothing of the codec, so an output written
with default options would be uncompressed: a 103 MiB lz4 Feather file became an 888 MiB
``.arrow``. :func:`ipc_compression` reads the ``BodyCompression`` of the first dictionary or
record-batch message (the Arrow format's ``Message.fbs``: a writer compresses every body alike)
straight from its flatbuffer, so outputs can keep the input's codec: ``"uncompressed"`` too, since
an uncompressed IPC file can be memory-mapped and read without copies, a compressed one cannot.

>>> import pyarrow as pa, pyarrow.ipc as ipc
>>> from fsstgpu.formats.ipc_compression import ipc_compression
>>> sink = pa.BufferOutputStream()
>>> with ipc.new_stream(sink, pa.schema([("n", pa.int64())]),
...                     options=ipc.IpcWriteOptions(compression="lz4")) as w:
...     w.write_table(pa.table({"n": [1, 2, 3]}))
>>> ipc_compression(pa.BufferReader(sink.getvalue()), "arrows")
'lz4'
"""

from __future__ import annotations

import struct

import pyarrow as pa
import pyarrow.ipc as ipc

__all__ = ["IPC_CODECS", "FlatTable", "ipc_compression"]

#: IPC body codecs, as pyarrow's ``IpcWriteOptions(compression=)`` names them, by their number
#: in ``CompressionType`` (Message.fbs: LZ4_FRAME = 0, ZSTD = 1).
IPC_CODECS = ("lz4", "zstd")

_FILE_MAGIC = 8  # "ARROW1" and two bytes of padding, then the stream's messages
_DICTIONARY_BATCH, _RECORD_BATCH = 2, 3  # MessageHeader union tags


class FlatTable:
    """A flatbuffer table: fields found through its vtable, every read bounds-checked (a read
    past the buffer is a ``struct.error``)."""

    def __init__(self, buf: bytes, pos: int):
        self.buf, self.pos = buf, pos
        self.vtable = pos - struct.unpack_from("<i", buf, pos)[0]
        if self.vtable < 0:  # (the soffset is signed: struct would read from the buffer's end)
            raise struct.error(f"vtable at {self.vtable}, before the buffer")
        self.vtable_size = struct.unpack_from("<H", buf, self.vtable)[0]

    def field(self, k: int) -> int:
        """The position of field ``k``, or 0 when it is absent (its default)."""
        at = 4 + 2 * k
        if at + 2 > self.vtable_size:
            return 0
        off = struct.unpack_from("<H", self.buf, self.vtable + at)[0]
        return self.pos + off if off else 0

    def u8(self, k: int, default: int = 0) -> int:
        at = self.field(k)
        return struct.unpack_from("<B", self.buf, at)[0] if at else default

    def table(self, k: int) -> FlatTable | None:
        at = self.field(k)
        return FlatTable(self.buf, at + struct.unpack_from("<I", self.buf, at)[0]) if at else None

    def vector(self, k: int) -> tuple[int, int]:
        """``(position of the first element, length)`` of vector field ``k`` ((0, 0): absent)."""
        at = self.field(k)
        if not at:
            return 0, 0
        start = at + struct.unpack_from("<I", self.buf, at)[0]
        return start + 4, struct.unpack_from("<I", self.buf, start)[0]

    def string_at(self, at: int) -> bytes:
        """The string that the offset at ``at`` points to."""
        start = at + struct.unpack_from("<I", self.buf, at)[0]
        n = struct.unpack_from("<I", self.buf, start)[0]
        if start + 4 + n > len(self.buf):
            raise struct.error("string past the buffer")
        return bytes(self.buf[start + 4:start + 4 + n])


def _body_codec(metadata: bytes) -> str | None:
    """The codec of one message's body, given its flatbuffer ``Message``."""
    message = FlatTable(metadata, struct.unpack_from("<I", metadata, 0)[0])
    header = message.table(2)  # Message: version, header_type, header, bodyLength, ...
    if message.u8(1) == _DICTIONARY_BATCH and header is not None:
        header = header.table(1)  # DictionaryBatch: id, data (a RecordBatch), isDelta
    compression = header.table(3) if header is not None else None  # RecordBatch field 3
    if compression is None:
        return "uncompressed" if header is not None else None
    codec = compression.u8(0)  # BodyCompression: codec, method
    return IPC_CODECS[codec] if codec < len(IPC_CODECS) else None


def ipc_compression(f: pa.NativeFile, fmt: str) -> str | None:
    """The body codec (``"lz4"``, ``"zstd"`` or ``"uncompressed"``) of an open IPC file /
    stream, or None.

    None when there is no data message, and when the messages cannot be read: the codec only
    guides how outputs are written, and reading the file proper reports what is wrong with it.

    Parameters
    ----------
    f : pyarrow.NativeFile
        Open at its start (it is read from there on).
    fmt : {"arrow", "arrows"}
        An IPC file or an IPC stream.
    """
    try:
        if fmt == "arrow":
            f.seek(_FILE_MAGIC)
        for message in ipc.MessageReader.open_stream(f):
            if message.type in ("dictionary", "record batch"):
                return _body_codec(message.metadata.to_pybytes())
    except (pa.ArrowException, OSError, EOFError, struct.error, IndexError):
        pass
    return None
