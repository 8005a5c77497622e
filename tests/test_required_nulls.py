"""The Parquet writer's required-nulls check (formats/parquet_compat.py): it masks what lies
under null parents instead of copying it (a filter copied a whole nested column, strings too, on
every unit), and still refuses exactly the nulls it refused."""

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from fsstgpu.formats.parquet_compat import required_nulls

_REQ_STR = pa.field("a", pa.string(), nullable=False)


def _struct(children, fields, null_rows):
    mask = pa.array([i in null_rows for i in range(len(children[0]))])
    return pa.StructArray.from_arrays(children, fields=fields, mask=mask)


def _cases():
    req_struct = _struct([pa.array(["x", None, "z", None])], [_REQ_STR], {1})
    yield "null under a null parent", req_struct.slice(0, 3), []
    yield "null under a valid parent", req_struct, ["c"]
    # a slice starting mid-byte: the valid row 3 holding the null lies outside it
    yield "bitmap offset", req_struct.slice(1, 2), []
    wide = _struct([pa.array([f"s{i}" if i != 13 else None for i in range(20)])], [_REQ_STR],
                   {2, 5})
    yield "null past a byte of parents", wide.slice(9, 8), ["c"]
    yield "null past a byte, sliced off", wide.slice(9, 4), []
    # a dictionary's null_count counts its indices: a valid index to a null value passes
    # (is_valid() would read that value as null)
    dict_field = pa.field("d", pa.dictionary(pa.int8(), pa.string()), nullable=False)
    dictionary = pa.DictionaryArray.from_arrays(pa.array([0, 1, None], pa.int8()),
                                                pa.array(["a", None]))
    yield "dictionary value null", _struct([dictionary], [dict_field], {2}), []
    yield "dictionary index null", _struct([dictionary], [dict_field], {1}), ["c"]
    # a null list whose range holds entries: they are not written
    values = pa.array(["x", None, "y"])
    lists = pa.ListArray.from_arrays(pa.array([0, 1, 3], pa.int32()), values,
                                     type=pa.list_(_REQ_STR), mask=pa.array([False, True]))
    yield "null list holding a null", lists, []
    yield "under a null struct", _struct([lists], [pa.field("l", lists.type)], {0}), []
    fixed = pa.FixedSizeListArray.from_arrays(pa.array(["a", "b", None, "d"]),
                                              type=pa.list_(_REQ_STR, 2))
    fixed_field = pa.field("f", fixed.type)
    yield "fixed-size under a null struct", _struct([fixed], [fixed_field], {1}), []
    yield "fixed-size under a valid struct", _struct([fixed], [fixed_field], {0}), ["c"]
    item = pa.field("v", pa.int64(), nullable=False)
    maps = pa.MapArray.from_arrays(pa.array([0, 1, 2], pa.int32()), pa.array(["k", "q"]),
                                   pa.array([1, None]), type=pa.map_(pa.string(), item))
    yield "map item under a null struct", _struct([maps], [pa.field("m", maps.type)], {1}), []
    yield "map item under a valid struct", _struct([maps], [pa.field("m", maps.type)], {0}), [
        "c"]


@pytest.mark.parametrize("array, expected", [c[1:] for c in _cases()],
                         ids=[c[0] for c in _cases()])
def test_required_nulls_under_valid_parents_only(array, expected):
    assert required_nulls(pa.table({"c": array})) == expected


def test_list_views_under_null_parents():
    values = pa.array(["x", None, "y"])
    views = pa.ListViewArray.from_arrays(pa.array([0, 1], pa.int32()), pa.array([1, 2], pa.int32()),
                                         values, type=pa.list_view(_REQ_STR))
    assert required_nulls(pa.table({"c": views})) == ["c"]
    assert required_nulls(pa.table({"c": _struct([views], [pa.field("l", views.type)],
                                                 {1})})) == []


def test_required_nulls_copies_nothing(monkeypatch):
    """A struct with a required string child and null rows, and a list of it: the check filtered
    (copied) the column on every Parquet unit; it now reads the validity bitmaps."""
    n = 10_000
    children = [pa.array([f"s{i}" if i % 7 else None for i in range(n)])]
    st = _struct(children, [_REQ_STR], set(range(0, n, 7)))
    lists = pa.ListArray.from_arrays(pa.array(np.arange(0, n + 1, 2), pa.int32()), st,
                                     mask=pa.array(np.arange(n // 2) % 3 == 0))

    def no_copy(*args, **kwargs):
        raise AssertionError("the required-nulls check copied a column")

    monkeypatch.setattr(pc, "filter", no_copy)  # (Array.filter calls it)
    assert required_nulls(pa.table({"s": st})) == required_nulls(pa.table({"l": lists})) == []
    bad = _struct(children, [_REQ_STR], set(range(0, n, 14)))
    assert required_nulls(pa.table({"s": bad, "t": st})) == ["s"]
