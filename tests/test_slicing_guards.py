"""fsstgpu.slicing's own checks and edges, each on its own (carr[a:b] and carr.slice clamp
their bounds first, so slice_fields' refusal was never reached by a test; a mutation campaign
found it)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import fsstgpu
from fsstgpu.slicing import slice_fields


@pytest.mark.parametrize("start, stop", [(-1, 1), (2, 1), (0, 4), (4, 4), (-1, -1)])
def test_slice_fields_refuses_bounds_outside_the_column(start, stop):
    carr = fsstgpu.compress(pa.array(["a", "b", "c"]))
    with pytest.raises(IndexError, match=rf"^slice {start}:{stop} outside 0\.\.3$"):
        slice_fields(carr, start, stop)


@pytest.mark.parametrize("start, stop", [(0, 0), (3, 3), (0, 3), (2, 3)])
def test_slice_fields_at_its_bounds(start, stop):
    col = pa.array(["a", None, "c"])
    carr = fsstgpu.compress(col)
    part = fsstgpu.CompressedStringArray(**slice_fields(carr, start, stop))
    part.validate()
    assert part.to_arrow().equals(col[start:stop])


def test_an_empty_slice_keeps_one_block_even_at_the_end(table_per_chunk):
    # as a column of chunks has at least one block (only a column of no chunks has none)
    carr = fsstgpu.compress(pa.chunked_array([["ab", "cd"], ["ef"]]))
    assert len(carr.tables) == 2
    for k in range(len(carr) + 1):
        fields = slice_fields(carr, k, k)
        assert len(fields["tables"]) == 1 and fields["block_starts"].tolist() == [0, 0], k
    assert slice_fields(carr, 3, 3)["tables"] == carr.tables[1:]


def test_a_column_of_no_tables_slices_to_no_blocks():
    z = np.zeros
    carr = fsstgpu.CompressedStringArray(
        type=pa.string(), length=0, tables=(), block_starts=z(1, np.int64),
        codes=z(0, np.uint8), code_offsets=z(1, np.int64), lengths=z(0, np.int64),
        validity=None, null_count=0, split_size=1 << 16, split_codes=z(1, np.int64),
        split_out=z(1, np.int64), split_table=z(0, np.int64))
    fields = slice_fields(carr, 0, 0)
    assert fields["tables"] == () and fields["block_starts"].tolist() == [0]
    assert carr[0:0].to_arrow().equals(pa.array([], pa.string()))
