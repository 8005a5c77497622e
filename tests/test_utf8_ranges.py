"""The UTF-8 check's range table (kernels/fsst_decode.py) on the CPU: made once a batch, it
must give every range a chunk for each 16-byte block of memory the range touches, wherever the
output lies (the kernel loads whole aligned blocks and skips a chunk past its range)."""

from __future__ import annotations

import numpy as np
import pytest

from fsstgpu.kernels.fsst_decode import UTF8_CHUNK, utf8_range_table


@pytest.mark.parametrize("nbounds", [2, 4, 65, 66, 200])  # (up to 64 ranges: from lists)
def test_every_block_a_range_touches_has_a_chunk_at_any_alignment(nbounds, fresh_rng):
    rng = fresh_rng
    bounds = np.sort(rng.integers(0, 5000, nbounds))
    ranges = [(int(a), int(b), k)
              for k, (a, b) in enumerate(zip(bounds[:-1], bounds[1:], strict=True))]
    table = utf8_range_table(ranges)
    kept = [r for r in ranges if r[1] > r[0]]
    assert table.shape == (4, len(kept) + 1) and table.dtype == np.int64
    assert table[:3, :-1].T.tolist() == [list(r) for r in kept]
    chunks = np.diff(table[3])
    for misalign in range(UTF8_CHUNK):
        start, end = table[0, :-1] + misalign, table[1, :-1] + misalign
        touched = -(-end // UTF8_CHUNK) - start // UTF8_CHUNK
        assert (touched <= chunks).all() and (chunks <= touched + 1).all(), misalign


def test_no_ranges_no_chunks():
    assert utf8_range_table([]).tolist() == [[0], [0], [0], [0]]
    assert utf8_range_table([(5, 5, 0)]).tolist() == [[0], [0], [0], [0]]
