"""fsstgpu.rows.take_rows' checks, each on its own (a mutation campaign found them untested):
indices past either end, in every form take accepts."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import fsstgpu

VALUES = ["a", None, "ccc"]


@pytest.fixture(scope="module")
def carr():
    return fsstgpu.compress(pa.array(VALUES))


@pytest.mark.parametrize("indices", [[-4], [0, -4], np.array([3]), np.array([-4, 0]),
                                     pa.array([None, -4]), pa.array([3, None], pa.int8()),
                                     [None, 3], np.array([3], np.uint8)])
def test_an_index_past_either_end_is_refused_by_name(carr, indices):
    # (-4 counted from the end of 3 strings was -1 again for numpy: the last string)
    with pytest.raises(IndexError, match="^take index out of range for 3 strings$"):
        carr.take(indices)


@pytest.mark.parametrize("indices, expected", [([-3, 2, -1], ["a", "ccc", "ccc"]),
                                               (np.array([2], np.uint64), ["ccc"]),
                                               (pa.array([None, -3], pa.int8()), [None, "a"])])
def test_indices_at_either_end_are_taken(carr, indices, expected):
    assert carr.take(indices).to_pylist() == expected


@pytest.mark.parametrize("indices, named", [(pa.array([0.5]), "double"),
                                            (pa.array(["0"]), "string"),
                                            (pa.chunked_array([[1.0]]), "double")])
def test_arrow_indices_of_another_type_are_named(carr, indices, named):
    with pytest.raises(TypeError, match=f"^indices must be integers, not {named}$"):
        carr.take(indices)


@pytest.mark.parametrize("indices, named", [(np.array([0.5]), "float64 of shape (1,)"),
                                            (np.array([[0]]), "int64 of shape (1, 1)"),
                                            (np.array(["0"]), "<U1 of shape (1,)")])
def test_numpy_indices_not_1d_integers_are_named(carr, indices, named):
    with pytest.raises(TypeError) as info:
        carr.take(indices)
    assert str(info.value) == f"indices must be a 1-D integer sequence, not {named}"


def test_a_run_of_indices_across_blocks_decodes_each_with_its_table(table_per_chunk):
    # consecutive indices over a block boundary are two runs: one table each
    chunks = [[f"alpha-{i}-alpha" for i in range(40)], [f"zz{i}zz" * 4 for i in range(40)],
              [None, "omega"]]
    col = pa.chunked_array(chunks, pa.string())
    carr = fsstgpu.compress(col)
    assert len(carr.tables) == 3 and carr.tables[0] != carr.tables[1]
    flat = col.to_pylist()
    for indices in (np.arange(35, 45), np.arange(0, 82), np.array([39, 40, 41, 80, 81])):
        assert carr.take(indices).to_pylist() == [flat[i] for i in indices]


@pytest.mark.parametrize("indices, expected", [([0, None], ["a", None]),
                                               (pa.array([None, 0], pa.int16()), [None, "a"])])
def test_a_null_index_into_a_one_string_column(indices, expected):
    # (a null's stand-in index must be in range whatever the column's length)
    assert fsstgpu.compress(pa.array(["a"])).take(indices).to_pylist() == expected


def test_indices_a_step_apart_are_no_run():
    col = pa.array(["ab", "c", "de", "f", "gh"])
    assert fsstgpu.compress(col).take([0, 2, 4, 3]).to_pylist() == ["ab", "de", "gh", "f"]
