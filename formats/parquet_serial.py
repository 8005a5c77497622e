"""A Parquet file of many small row groups written by one pyarrow writer, straight into the
output, with fsstgpu's footer records.

Joining row groups written apart (:mod:`fsstgpu.formats.parquet_parts`) reads each part's
footer in Python to move its positions: ~35 us a column chunk on the 2-core VM, holding the
GIL, whatever the chunk holds. For small row groups that costs more than writing them in
parallel saves (60 row groups of 500 rows, 5 fsst and 2 number columns: 1320 column chunks,
the footer read 47 ms, written 13 ms; pyarrow writes the 60 row groups in 77 ms on one
thread, the joined parts took 178 ms on two). :class:`SerialParquetWriter` writes them with
one ``ParquetWriter`` on the calling thread instead (pyarrow releases the GIL while it
encodes); :func:`serial_suits` tells when.

The footer's records that depend on where the chunks landed and on their statistics (the
chunk record, :data:`~fsstgpu.formats.chunk_record.CHUNKS_KEY`, and the statistics' CRC32s,
:data:`~fsstgpu.formats.pruning.STATS_CRC_KEY`) are known only once the writer has closed,
but key-value pairs must be given before: each is given as a placeholder of random bytes, the
footer (written last, at close) is held back and the placeholders' values replaced in it.
The file is byte for byte what :class:`~fsstgpu.formats.parquet_parts.PartWriter` writes
(tested), i.e. what one pyarrow writer writes given the records' values.

>>> import io, pyarrow as pa, pyarrow.parquet as pq
>>> from fsstgpu.formats.parquet_serial import SerialParquetWriter
>>> out = io.BytesIO()
>>> table = pa.table({"s": ["a", "b", "c"]})
>>> writer = SerialParquetWriter(out, table.schema, {}, chunks=True)
>>> writer.write_many([table.slice(0, 2), table.slice(2)])
>>> writer.close({"k": "v"})
>>> f = pq.ParquetFile(pa.BufferReader(out.getvalue()))
>>> f.num_row_groups, sorted(f.metadata.metadata)[:2]
(2, [b'ARROW:schema', b'fsstgpu.chunks'])
"""

from __future__ import annotations

import contextlib
import os

import pyarrow as pa
import pyarrow.parquet as pq

from fsstgpu.formats.chunk_record import ARROW_SCHEMA_KEY, CHUNKS_KEY, chunk_digests, chunks_footer
from fsstgpu.formats.parquet_options import leaf_paths
from fsstgpu.formats.parquet_parts import REFUSALS, refused
from fsstgpu.formats.pruning import STATS_CRC_KEY, statistics_digests, stats_crc_footer
from fsstgpu.formats.thrift_compact import varint

__all__ = ["SERIAL_CHUNK_BYTES", "SerialParquetWriter", "serial_suits"]

#: row groups whose column chunks hold fewer Arrow bytes than this on average, where parts
#: are written two at a time, are written by one writer (:func:`serial_suits`; with ``P``
#: at a time, under ``2 / P`` of it): a chunk's share of joining (~45 us, read and written
#: back, holding the GIL) outweighs what writing it on several threads saves, a share that
#: shrinks as parts are written more at a time (encoding takes ~6 us a KB on one thread
#: of the VM). Measured on the 2-core VM, parts two at a time: 60 row groups of 22 chunks
#: of ~10 KB written in 68-77 ms by one writer, 107-178 in parts; 61 of 5 chunks of ~12 KB
#: 49-52 against 66-74.
SERIAL_CHUNK_BYTES = 32 << 10


def serial_suits(tables: list, schema: pa.Schema, parallel: int = 2) -> bool:
    """Whether ``tables`` (a file's first row groups) are small enough to write the file with
    one writer rather than in parts written ``parallel`` at a time: several of them, their
    column chunks under :data:`SERIAL_CHUNK_BYTES` ``* 2 / parallel`` on average (and a
    pyarrow that adds key-value pairs to a footer, 16 and later).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.parquet_serial import serial_suits
    >>> t = pa.table({"n": range(2000)})  # 16 KB, one column chunk
    >>> serial_suits([t, t], t.schema), serial_suits([t], t.schema)
    (True, False)
    >>> serial_suits([t, t], t.schema, parallel=8)  # (8 KB a chunk at most)
    False
    """
    if len(tables) < 2 or not hasattr(pq.ParquetWriter, "add_key_value_metadata"):
        return False
    leaves = max(1, sum(len(leaf_paths(f)) for f in schema))
    limit = SERIAL_CHUNK_BYTES * 2 // max(1, parallel)
    return sum(t.nbytes for t in tables) < limit * leaves * len(tables)


#: the writer's small writes (a page header, a page: ~3 a column chunk) are gathered in
#: pyarrow's memory and passed on to the file in pieces of this many bytes: a call into Python
#: each, from the writing thread, waited for the GIL while the next units were converted
#: (the 60 row groups above: 37 ms a run of 16 alone, 118 ms for the four beside the
#: conversion)
PASS_BYTES = 1 << 20


class _Tee:
    """The writer's output: passed on to ``file``, but once :attr:`holding`, kept (the footer,
    to be filled in)."""

    def __init__(self, file):
        self._file, self._pos, self.holding, self.held = file, 0, False, []

    def write(self, data) -> int:
        if self.holding:
            self.held.append(bytes(data))
        else:
            self._file.write(data)
        self._pos += len(data)
        return len(data)

    def tell(self) -> int:
        return self._pos

    def close(self) -> None:
        """The file is the caller's to close."""

    def flush(self) -> None:
        pass

    @property
    def closed(self) -> bool:
        return False

    def writable(self) -> bool:
        return True


class SerialParquetWriter:
    """Tables written as row groups, one each, in order, by one ``ParquetWriter`` into
    ``file`` (open for writing, at its start), with ``options`` (its keyword arguments);
    ``stats_crc`` and ``chunks`` as for :class:`~fsstgpu.formats.parquet_parts.
    JoinedParquetFile`. A table pyarrow refuses raises ValueError (:func:`refused`).
    :class:`~fsstgpu.formats.parquet_parts.PartWriter`'s interface: ``options`` is fixed
    here."""

    def __init__(self, file, schema: pa.Schema, options: dict, *, stats_crc: bool = False,
                 chunks: bool = False):
        self._file, self._tee = file, _Tee(file)
        self._stats_crc, self._chunks = stats_crc, chunks
        self.options = options
        self._out = pa.BufferedOutputStream(pa.PythonFile(self._tee, mode="w"), PASS_BYTES)
        try:
            self._writer = pq.ParquetWriter(self._out, schema, **options)
        except REFUSALS as exc:  # a type it refuses
            raise refused(pa.Table.from_batches([], schema=schema), exc) from None

    def write(self, table: pa.Table) -> None:
        """Write ``table`` as the next row group."""
        self.write_many([table])

    def write_many(self, tables: list) -> None:
        """Write ``tables`` as the next row groups, one each."""
        for table in tables:
            try:
                self._writer.write_table(table, row_group_size=max(1, table.num_rows))
            except REFUSALS as exc:
                raise refused(table, exc) from None

    def close(self, key_values: dict) -> None:
        """Write the footer with ``key_values`` (and the records) added, as
        ``JoinedParquetFile.close`` does."""
        # the records' places: random bytes no footer holds by chance, in JoinedParquetFile's
        # order (the statistics' CRCs, then the chunk record, after the caller's pairs)
        holes = {key: f"fsstgpu-hole-{os.urandom(16).hex()}".encode()
                 for key, wanted in ((STATS_CRC_KEY, self._stats_crc),
                                     (CHUNKS_KEY, self._chunks)) if wanted}
        pairs = {**key_values, **holes}
        if pairs:
            self._writer.add_key_value_metadata(pairs)
        self._out.flush()
        self._tee.holding = True  # (what the writer writes from now on: the footer's)
        self._writer.close()
        self._out.close()  # (flushed; the tee's file stays open)
        meta = self._writer.writer.metadata
        values = {}
        if self._stats_crc:
            values[holes[STATS_CRC_KEY]] = stats_crc_footer(statistics_digests(meta))
        if self._chunks:
            values[holes[CHUNKS_KEY]] = chunks_footer(chunk_digests(meta),
                                                      (meta.metadata or {}).get(ARROW_SCHEMA_KEY))
        self._file.write(filled(b"".join(self._tee.held), values))

    def abandon(self) -> None:
        """Stop (the file is discarded): nothing to wait for, the writer's work is done in its
        calls; nothing more reaches the file (a footer the writer writes as it is closed here
        rather than when collected is dropped)."""
        self._tee.holding = True
        with contextlib.suppress(Exception):
            self._writer.close()
        with contextlib.suppress(Exception):
            self._out.close()


def filled(tail: bytes, values: dict) -> bytes:
    """``tail``, a Parquet file's last bytes holding its whole footer, with each placeholder
    of ``values`` (a Thrift binary value of the footer) replaced by its value, the footer's
    length updated.

    Raises
    ------
    RuntimeError
        Where the footer is not in ``tail`` or a placeholder is not in it exactly once as a
        whole binary value (fsstgpu's fault, never the data's).

    Examples
    --------
    >>> from fsstgpu.formats.parquet_serial import filled
    >>> footer = b"\\x18\\x03abc\\x00"
    >>> filled(b"data" + footer + (6).to_bytes(4, "little") + b"PAR1", {b"abc": b"hello"})
    b'data\\x18\\x05hello\\x00\\x08\\x00\\x00\\x00PAR1'
    """
    size = int.from_bytes(tail[-8:-4], "little")
    if tail[-4:] != b"PAR1" or size + 8 > len(tail):
        raise RuntimeError("a Parquet footer not where the writer's last bytes are")
    body, footer = tail[: len(tail) - 8 - size], tail[len(tail) - 8 - size : -8]
    for hole, value in values.items():
        value = value.encode() if isinstance(value, str) else bytes(value)
        length = varint(len(hole))
        at = footer.find(hole)
        if at < 0 or footer.find(hole, at + 1) >= 0 or footer[at - len(length) : at] != length:
            raise RuntimeError("a footer record's placeholder not once in the footer")
        footer = footer[: at - len(length)] + varint(len(value)) + value + footer[at + len(hole) :]
    return body + footer + len(footer).to_bytes(4, "little") + b"PAR1"

