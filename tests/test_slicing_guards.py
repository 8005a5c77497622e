"""fsstgpu.slicing's own checks and edges, each on its own (carr[a:b] and carr.slice clamp
their bounds first, so slice_fields' refusal was never reached by a test; a mutation campaign
found it)."""

from __future__ import annotations

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
