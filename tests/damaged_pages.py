"""Shared by the raw page readers' tests: a copy of a Parquet file with one byte of a column
chunk's last page flipped (its CRC then fails); a column chunk's bytes changed, cut short or
with bytes inserted."""

from __future__ import annotations

import os

import numpy as np

from fsstgpu.formats.raw_pages import chunk_pages, chunk_span, read_span


def flip_in_last_page(path, col, out, rng, bit: int) -> None:
    """Write ``path`` to ``out`` with ``bit`` flipped in a random byte of the last page's
    payload of column chunk ``col`` (pyarrow's ``ColumnChunkMetaData``)."""
    raw = bytearray(open(path, "rb").read())
    start, size = chunk_span(col, len(raw), "x")
    fd = os.open(path, os.O_RDONLY)
    try:
        pages = chunk_pages(read_span(fd, start, size, "x"), col.num_values, "x")
    finally:
        os.close(fd)
    page = pages[-1]
    raw[start + page.start + int(rng.integers(0, page.size))] ^= bit
    with open(out, "wb") as f:
        f.write(bytes(raw))


#: the byte values a changed chunk gets most: small counts, Thrift's field headers, all ones
CHANGED_BYTES = (0, 1, 2, 3, 4, 8, 0x15, 0x19, 0x1C, 0x2C, 0xFF)


def changed_chunk(rng, raw: bytes, head: int = 40) -> bytes:
    """A copy of a chunk's bytes cut short, with 1-3 random bytes inserted, or with 1-3 bytes
    set (among its first ``head`` bytes, where the first page's header is, or anywhere)."""
    bad = bytearray(raw)
    how = int(rng.integers(0, 4))
    if how == 0:
        return bytes(bad[: int(rng.integers(0, len(bad) + 1))])
    if how == 1:
        at = int(rng.integers(0, len(bad) + 1))
        return bytes(bad[:at]) + rng.integers(0, 256, int(rng.integers(1, 4)),
                                              dtype=np.uint8).tobytes() + bytes(bad[at:])
    for _ in range(int(rng.integers(1, 4))):
        at = int(rng.integers(0, min(len(bad), head))) if how == 2 else \
            int(rng.integers(0, len(bad)))
        bad[at] = int(rng.choice([*CHANGED_BYTES, rng.integers(0, 256)]))
    return bytes(bad)
