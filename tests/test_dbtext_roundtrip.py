"""Every dbtext file (the FSST paper's corpus) through the shared round-trip checker."""

from __future__ import annotations

import pyarrow as pa

from fsstgpu.datasets import load_lines
from fsstgpu.testing import check_roundtrip


def test_dbtext_roundtrip(dbtext_paths):
    for path in dbtext_paths:
        column = load_lines(path)
        carr = check_roundtrip(column, samples=32)
        stats = carr.stats()
        assert stats["uncompressed_bytes"] == path.stat().st_size - len(column)  # minus "\n"s
        assert stats["ratio"] > 1.2, f"{path.name}: ratio {stats['ratio']:.3f}"


def test_dbtext_chunked_binary_view(dbtext_paths, table_per_chunk):
    """One file as a ChunkedArray of binary_view: chunks of one table each, view type kept."""
    path = min(dbtext_paths, key=lambda p: p.stat().st_size)
    column = load_lines(path).cast(pa.binary()).cast(pa.binary_view())
    n = len(column)
    chunked = pa.chunked_array([column[: n // 3], column[n // 3 :]], type=pa.binary_view())
    carr = check_roundtrip(chunked, split_size=1000)
    assert len(carr.tables) == 2
