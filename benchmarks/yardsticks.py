"""pyarrow's LZ4 / zstd as the CPU benchmarks' yardstick: one way of measuring them.

The string bytes are cut into 1 MiB pieces, each compressed by its own ``pyarrow.compress``
call, as many at once as the pool has threads (pyarrow releases the GIL); that is how a user
would spread them over cores.

>>> import pyarrow as pa
>>> from benchmarks.yardsticks import compress_pieces, decompress_pieces, pieces_of
>>> parts = pieces_of(pa.py_buffer(b"abc" * 1_000_000))
>>> len(parts), parts[-1].size
(3, 902848)
>>> packed = compress_pieces(parts, "lz4")
>>> b"".join(p.to_pybytes() for p in decompress_pieces(packed, parts, "lz4")) == b"abc" * 1_000_000
True
"""

from __future__ import annotations

PIECE = 1 << 20  # string bytes per pyarrow call


def pieces_of(raw) -> list:
    """``raw`` (a pyarrow Buffer) as slices of :data:`PIECE` bytes, the last one shorter."""
    return [raw.slice(i, min(PIECE, raw.size - i)) for i in range(0, raw.size, PIECE)]


def _map(fn, items, pool):
    return list(pool.map(fn, items)) if pool else [fn(x) for x in items]


def compress_pieces(pieces, codec: str, pool=None) -> list:
    """Each piece compressed with ``codec`` (``"lz4"``, ``"zstd"``), on ``pool`` if given."""
    import pyarrow as pa

    return _map(lambda p: pa.compress(p, codec), pieces, pool)


def decompress_pieces(packed, pieces, codec: str, pool=None) -> list:
    """:func:`compress_pieces`' output back, each to its piece's size."""
    import pyarrow as pa

    return _map(lambda zp: pa.decompress(zp[0], zp[1].size, codec),
                list(zip(packed, pieces, strict=True)), pool)
