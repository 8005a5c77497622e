"""Each check of ``formats/parquet_compat.py`` on an input that reaches it alone (the mutation
campaign's fourth round: dropping any one of these checks passed the module's other tests).

A fixed-size list field that is not nullable, under a null struct, is what pyarrow 26.0.1 still
writes to Parquet and cannot read back; the tests here put it where each branch of the walk
must find it: inside an extension type, inside a list, inside a map."""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
import pytest

from fsstgpu.formats import parquet_compat
from fsstgpu.formats.parquet_compat import (
    READS_NULL_FIXED_SIZE_LISTS,
    check_readable_back,
    hint,
    null_fixed_size_lists,
    required_nulls,
    value_checked,
)

sys.path.insert(0, str(Path(__file__).parent))
from wrapped_type import WrappedType  # noqa: E402

_REQUIRED = pa.struct([pa.field("f", pa.list_(pa.int8(), 2), nullable=False)])


def _null_struct() -> pa.Array:
    """A struct column of a required fixed-size list field, its second struct null."""
    return pa.array([{"f": [1, 2]}, None], _REQUIRED)


def test_a_required_fixed_size_list_under_a_null_struct_inside_an_extension_is_found():
    storage = _null_struct()
    ext = pa.ExtensionArray.from_storage(WrappedType(storage.type), storage)
    table = pa.table({"e": ext})
    assert value_checked(table.schema) == [0]
    assert null_fixed_size_lists(table) == ["e"]
    # the same column with its struct valid is not
    valid = pa.array([{"f": [1, 2]}, {"f": [3, 4]}], _REQUIRED)
    assert null_fixed_size_lists(pa.table({
        "e": pa.ExtensionArray.from_storage(WrappedType(valid.type), valid)})) == []


def test_an_extension_of_a_fixed_size_list_alone_is_value_checked():
    fl = pa.list_(pa.int8(), 2)
    schema = pa.schema([("s", pa.string()), ("e", WrappedType(fl))])
    assert value_checked(schema) == [1]


def test_a_required_fixed_size_list_under_a_null_struct_inside_a_list_is_found():
    items = _null_struct()
    lists = pa.ListArray.from_arrays(pa.array([0, 1, 2], pa.int32()), items)
    large = pa.LargeListArray.from_arrays(pa.array([0, 0, 2], pa.int64()), items)
    table = pa.table({"l": lists, "big": large, "ok": pa.array([[1]], pa.list_(pa.int8()))
                      .take(pa.array([0, 0]))})
    assert null_fixed_size_lists(table) == ["l", "big"]
    if READS_NULL_FIXED_SIZE_LISTS:
        with pytest.raises(ValueError, match="column 'l' holds a fixed-size list field"):
            check_readable_back(table)


def test_a_required_fixed_size_list_under_a_null_struct_inside_a_map_is_found():
    items = _null_struct()
    maps = pa.MapArray.from_arrays(pa.array([0, 2], pa.int32()),
                                   pa.array(["a", "b"], pa.string()), items)
    table = pa.table({"m": maps})
    assert null_fixed_size_lists(table) == ["m"]


def test_a_table_of_rows_without_columns_is_refused_only_with_rows():
    empty = pa.table({})
    with pytest.raises(ValueError, match="3 rows without columns"):
        check_readable_back(empty, rows=3)
    check_readable_back(empty, rows=0)
    check_readable_back(empty)


def test_required_nulls_is_checked_before_fixed_size_lists_and_columns_are_selected():
    schema = pa.schema([pa.field("s", pa.string()), pa.field("n", pa.string(), nullable=False)])
    table = pa.Table.from_arrays([pa.array(["a", None]), pa.array(["b", None])], schema=schema)
    assert required_nulls(table) == ["n"]
    with pytest.raises(ValueError, match="column 'n' holds nulls"):
        check_readable_back(table)
    with pytest.raises(ValueError, match="column 'n' holds nulls"):
        check_readable_back(table, columns=[1])
    check_readable_back(table, columns=[0])  # (the caller's columns are the ones looked at)
    both = table.append_column(pa.field("m", pa.string(), nullable=False), [[None, "c"]])
    with pytest.raises(ValueError, match="column 'n' holds nulls"):  # (the first named)
        check_readable_back(both)


def test_a_required_null_inside_an_extension_is_found():
    fields = [pa.field("a", pa.string(), nullable=False)]
    storage = pa.StructArray.from_arrays([pa.array(["x", None])], fields=fields)
    table = pa.table({"e": pa.ExtensionArray.from_storage(WrappedType(storage.type), storage)})
    assert value_checked(table.schema) == [0]
    assert required_nulls(table) == ["e"]
    with pytest.raises(ValueError, match="column 'e' holds nulls"):
        check_readable_back(table)
    valid = pa.StructArray.from_arrays([pa.array(["x", "y"])], fields=fields)
    assert required_nulls(pa.table({
        "e": pa.ExtensionArray.from_storage(WrappedType(valid.type), valid)})) == []


@pytest.mark.parametrize(("mask", "expected"), [([True, False], []), ([False, True], ["v"])])
def test_a_required_null_in_a_list_view_of_ranges_out_of_order(mask, expected):
    """A list view's ranges need not be in order: the values under valid lists are found by
    each list's own range (here list 0 over the null value 1, list 1 over value 0)."""
    list_type = pa.list_view(pa.field("item", pa.string(), nullable=False))
    views = pa.ListViewArray.from_arrays(pa.array([1, 0], pa.int32()), pa.array([1, 1], pa.int32()),
                                         pa.array(["a", None]), type=list_type,
                                         mask=pa.array(mask))
    assert required_nulls(pa.table({"v": views})) == expected


def test_before_pyarrow_26_any_null_fixed_size_list_is_refused_and_hinted(monkeypatch):
    """The branches for a pyarrow before 26 (this one reads null fixed-size lists back),
    taken by saying it does not."""
    monkeypatch.setattr(parquet_compat, "READS_NULL_FIXED_SIZE_LISTS", False)
    fl = pa.list_(pa.int8(), 2)
    null_list = pa.table({"l": pa.array([[1, 2], None], fl)})
    under_null = pa.table({"s": pa.array([{"f": [1, 2]}, None], pa.struct([("f", fl)]))})
    in_list = pa.table({"n": pa.array([[[1, 2], None]], pa.list_(fl))})
    valid = pa.table({"v": pa.array([[1, 2]], fl)})
    assert null_fixed_size_lists(null_list) == ["l"]
    assert null_fixed_size_lists(under_null) == ["s"]
    assert null_fixed_size_lists(in_list) == ["n"]
    assert null_fixed_size_lists(valid) == []
    with pytest.raises(ValueError, match="column 'l' holds null fixed-size lists.*upgrade"):
        check_readable_back(null_list.append_column("m", null_list.column(0)))
    check_readable_back(valid)
    message = "Expected all lists to be of size=2 but index 1 had size=0"
    assert hint(message).startswith(message + "; pyarrow ")
    assert "upgrade pyarrow" in hint(message)
    assert hint("bad page") == "bad page"


def test_from_pyarrow_26_a_failed_read_is_not_hinted(monkeypatch):
    monkeypatch.setattr(parquet_compat, "READS_NULL_FIXED_SIZE_LISTS", True)
    message = "Expected all lists to be of size=2 but index 1 had size=0"
    assert hint(message) == message
    fl = pa.list_(pa.int8(), 2)
    assert null_fixed_size_lists(pa.table({"l": pa.array([[1, 2], None], fl)})) == []
    nullable = pa.array([{"f": [1, 2]}, None], pa.struct([("f", fl)]))  # (f nullable: read back)
    assert null_fixed_size_lists(pa.table({"s": nullable})) == []


@pytest.mark.parametrize("bad", [None, 5, 8, 13, 17, 22])
def test_required_nulls_of_slices_at_every_bit_offset(bad):
    """A struct whose required field is null under each null struct (and, with ``bad``, at
    one valid struct too), sliced at every offset of its validity bitmaps' bytes: the bits
    read are the slice's own (a bit or byte off finds a null that is not there, or misses
    one)."""
    n = 40
    parent_null = [i % 3 == 0 or i % 7 == 2 for i in range(n)]
    child = pa.array([None if parent_null[i] or i == bad else f"v{i}" for i in range(n)],
                     pa.string())
    fields = [pa.field("a", pa.string(), nullable=False)]
    column = pa.StructArray.from_arrays([child], fields=fields, mask=pa.array(parent_null))
    assert bad is None or not parent_null[bad]
    for first in range(18):
        for length in (1, 7, 9, 15, n - first):
            part = column.slice(first, length)
            want = ["c"] if bad is not None and first <= bad < first + length else []
            assert required_nulls(pa.table({"c": part})) == want, (first, length)


def test_a_required_fixed_size_list_in_a_struct_under_a_null_struct_is_found():
    inner = pa.struct([pa.field("f", pa.list_(pa.int8(), 2), nullable=False)])
    valid_inner = pa.array([{"f": [1, 2]}, {"f": [3, 4]}], inner)  # (no nulls of its own)
    outer = pa.StructArray.from_arrays([valid_inner], names=["s"], mask=pa.array([False, True]))
    assert null_fixed_size_lists(pa.table({"o": outer})) == ["o"]
