"""The custom metadata of an Arrow IPC file's last record batch, read without the batch.

An IPC file written by fsstgpu ends with an empty batch counting the others
(:mod:`fsstgpu.formats.ipc_integrity`); a decompressed output written before its schema got
the mark has nothing else telling so, and reading its last batch to find out would read a whole
batch of any other writer's file twice.
The file's footer (``File.fbs``) lists each batch's message (offset and metadata length), so
:func:`last_batch_metadata` reads only the last message's header and its ``custom_metadata``.

>>> import pyarrow as pa, pyarrow.ipc as ipc
>>> from fsstgpu.formats.ipc_footer import last_batch_metadata
>>> sink = pa.BufferOutputStream()
>>> with ipc.new_file(sink, pa.schema([("n", pa.int8())])) as w:
...     w.write_batch(pa.record_batch({"n": pa.array([1], pa.int8())}),
...                   custom_metadata={"k": "v"})
>>> last_batch_metadata(pa.BufferReader(sink.getvalue()))
{b'k': b'v'}
"""

from __future__ import annotations

import struct

import pyarrow as pa

from fsstgpu.formats.ipc_compression import FlatTable

__all__ = ["last_batch_metadata"]

_TAIL = 10  # int32 footer length, then "ARROW1"
_BLOCK = 24  # Block: offset int64, metaDataLength int32, 4 bytes of padding, bodyLength int64
_MAX_HEADER = 1 << 26  # a message header bigger than this is not worth reading here


def last_batch_metadata(f: pa.NativeFile) -> dict | None:
    """The custom metadata of the last record batch of an open IPC file (``{}``: none), or None
    when the file has no batch or its footer or header cannot be read (reading the file proper
    then reports what is wrong).
    """
    try:
        size = f.size()
        f.seek(size - _TAIL)
        tail = f.read(_TAIL)
        footer_len = struct.unpack_from("<i", tail, 0)[0]
        if tail[4:] != b"ARROW1" or not 0 < footer_len <= size - _TAIL:
            return None
        f.seek(size - _TAIL - footer_len)
        footer = f.read(footer_len)
        start, count = FlatTable(footer, struct.unpack_from("<I", footer, 0)[0]).vector(3)
        if not count:
            return None
        offset, header_len = struct.unpack_from("<qi", footer, start + _BLOCK * (count - 1))
        if not 0 <= offset < size or not 8 <= header_len <= _MAX_HEADER:
            return None
        f.seek(offset)
        header = f.read(header_len)
        skip = 8 if header[:4] == b"\xff\xff\xff\xff" else 4  # continuation marker, length
        message = header[skip:]
        table = FlatTable(message, struct.unpack_from("<I", message, 0)[0])
        first, n = table.vector(4)  # Message: ..., custom_metadata: [KeyValue]
        out = {}
        for k in range(n):
            at = first + 4 * k
            kv = FlatTable(message, at + struct.unpack_from("<I", message, at)[0])
            key, value = kv.field(0), kv.field(1)
            if key and value:
                out[kv.string_at(key)] = kv.string_at(value)
        return out
    except (pa.ArrowException, OSError, struct.error, IndexError, ValueError):
        return None
