"""formats.unit_reads.cut_rows' ``own=``: an IPC output's pieces in buffers of their own (a
mutation campaign found no test telling a copied piece from a shared slice)."""

from __future__ import annotations

import pyarrow as pa
import pytest

from fsstgpu.formats.unit_reads import cut_rows

VALUES = [("x" * 40) + str(i) for i in range(100)]  # past 12 bytes: a view's data buffers


def _held(array: pa.Array) -> int:
    return sum(b.size for b in array.buffers() if b is not None)


@pytest.mark.parametrize("type_", [pa.string(), pa.string_view(), pa.large_binary(),
                                   pa.binary_view()])
@pytest.mark.parametrize("chunks", [1, 2])
def test_owned_pieces_hold_only_their_rows(type_, chunks):
    arr = pa.array(VALUES, type_)
    values = pa.chunked_array([arr.slice(0, 50), arr.slice(50)] if chunks == 2 else [arr])
    owned = cut_rows(values, [10, 30, 60], own=True)
    shared = cut_rows(values, [10, 30, 60], own=False)
    assert [p.to_pylist() for p in owned] == [p.to_pylist() for p in shared] == [
        arr[:10].to_pylist(), arr[10:40].to_pylist(), arr[40:].to_pylist()]
    for piece in owned:
        for array in piece.chunks if isinstance(piece, pa.ChunkedArray) else [piece]:
            assert array.offset == 0 and _held(array) <= array.nbytes + 8, (type_, array)
    # the slices share the column's buffers (what own= is for)
    assert _held(shared[0]) > 2 * _held(owned[0])
    assert isinstance(owned[2], pa.ChunkedArray) == (chunks == 2)
    assert isinstance(owned[0], pa.Array) and isinstance(shared[0], pa.Array)
