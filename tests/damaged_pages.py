"""Shared by the raw page readers' tests: a copy of a Parquet file with one byte of a column
chunk's last page flipped (its CRC then fails)."""

from __future__ import annotations

import os

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
