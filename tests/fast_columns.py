"""Shared by the tests of the ``"fast"`` level's blocks and tables (on the CPU and the GPU):
random columns of a few MB whose text changes along them (each MiB draws from its own
alphabet), with empty strings, long strings (pieces of 512 bytes drawn from them), nulls over
bytes and chunks, so that every way of sampling a block is taken."""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def fast_column(rng, nbytes: int, *, nulls: bool = True, chunks: int = 1) -> pa.ChunkedArray:
    """About ``nbytes`` of strings (``large_binary``) in ``chunks`` chunks of random sizes."""
    lengths = np.where(rng.random(nbytes // 8) < 0.01, rng.integers(513, 5000, nbytes // 8),
                       rng.integers(0, 40, nbytes // 8))
    lengths[rng.random(len(lengths)) < 0.05] = 0
    ends = np.cumsum(lengths)
    n = int(np.searchsorted(ends, nbytes)) + 1
    lengths = lengths[:n]
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    total = int(offsets[-1])
    data = np.empty(total, np.uint8)
    for at in range(0, total, 1 << 20):  # each MiB its own alphabet
        alphabet = rng.choice(np.arange(32, 127, dtype=np.uint8), int(rng.integers(4, 30)))
        span = data[at : at + (1 << 20)]
        span[:] = alphabet[rng.zipf(1.5, len(span)) % len(alphabet)]
    validity = None
    if nulls:
        valid = rng.random(n) >= 0.03
        validity = pa.py_buffer(np.packbits(valid, bitorder="little").tobytes())
    whole = pa.LargeBinaryArray.from_buffers(pa.large_binary(), n, [
        validity, pa.py_buffer(offsets.tobytes()), pa.py_buffer(data.tobytes())])
    cuts = np.sort(rng.integers(0, n + 1, chunks - 1)) if chunks > 1 else np.zeros(0, int)
    bounds = [0, *cuts.tolist(), n]
    return pa.chunked_array([whole[a:b] for a, b in zip(bounds[:-1], bounds[1:], strict=True)],
                            type=pa.large_binary())
