"""fsstgpu.inputs' own checks, each on its own: what as_table and as_string_column give back
for each kind of input, and what their messages name (a mutation campaign found these untested).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from numpy.dtypes import StringDType

from fsstgpu.inputs import ACCEPTED, as_string_column, as_table, is_table


def test_as_table_gives_pyarrow_tables_and_batches_back_as_they_are():
    table = pa.table({"s": ["a", None]})
    batch = table.to_batches()[0]
    assert as_table(table) is table and as_table(batch) is batch
    assert is_table(table) and is_table(batch) and not is_table(pa.array(["a"]))


def test_as_table_takes_pandas_with_its_index_and_names_the_caller_otherwise():
    frame = pd.DataFrame({"s": ["a", None]}, index=[5, 7])
    table = as_table(frame)
    assert isinstance(table, pa.Table) and b"pandas" in table.schema.metadata
    assert table.to_pandas().index.tolist() == [5, 7]
    with pytest.raises(TypeError, match=r"^fn_x takes a pyarrow Table .* not int$"):
        as_table(5, "fn_x")


def test_arrow_columns_come_back_as_themselves():
    arr = pa.array(["a", None], pa.large_string())
    chunked = pa.chunked_array([["a"], [], ["b"]], pa.binary_view())
    assert as_string_column(arr) is arr and as_string_column(chunked) is chunked


def test_a_table_given_as_one_column_points_to_compress_table():
    for table in (pa.table({"s": ["a"]}), pa.record_batch({"s": ["a"]}),
                  pd.DataFrame({"s": ["a"]})):
        with pytest.raises(TypeError, match="has several columns: use fsstgpu.compress_table"):
            as_string_column(table)


def test_pandas_series_and_index_are_read_with_pandas_nulls():
    out = as_string_column(pd.Series(["a", None, float("nan")], dtype=object))
    assert isinstance(out, pa.Array) and out.to_pylist() == ["a", None, None]
    index = as_string_column(pd.Index(["x", "y"]))
    assert isinstance(index, pa.Array) and index.to_pylist() == ["x", "y"]


@pytest.mark.parametrize("bad, named", [
    (np.array([1, 2], object), "got a numpy array of dtype object holding int64"),
    (pd.Series([1, 2]), "got a pandas.Series holding int64"),
    (pa.array([1]), "got a pyarrow.Int64Array holding int64"),
    ([1, 2], "got a list holding int64"),
])
def test_a_column_of_other_things_is_named_as_given(bad, named):
    with pytest.raises(TypeError) as info:
        as_string_column(bad)
    assert str(info.value) == f"fsstgpu compresses strings: {named}; it takes {ACCEPTED}"


@pytest.mark.parametrize("bad", [np.array([1, 2]), np.array([1j]),
                                 np.array([(1, 2)], dtype="i4,i4"),
                                 np.array(["2020-01-01"], "M8[D]")])
def test_numpy_arrays_not_of_strings_are_refused_by_their_dtype(bad):
    # (pyarrow has no conversion of complex or record arrays: ArrowNotImplementedError)
    with pytest.raises(TypeError) as info:
        as_string_column(bad)
    assert str(info.value) == (f"fsstgpu compresses strings, not a numpy array of dtype "
                               f"{bad.dtype}; it takes {ACCEPTED}")


def test_a_string_dtype_pyarrow_cannot_take_goes_through_objects(monkeypatch):
    # pyarrow 25 with NumPy 2.5 raised "Unsupported numpy type" for StringDType: the fallback
    # reads it as Python objects, its missing values (None or NaN) as nulls; other arrays'
    # errors are not retried that way
    plain_array = pa.array

    def no_string_dtype(obj, *args, **kwargs):
        if isinstance(obj, np.ndarray) and obj.dtype.kind == "T":
            raise pa.ArrowNotImplementedError("Unsupported numpy type")
        return plain_array(obj, *args, **kwargs)

    monkeypatch.setattr(pa, "array", no_string_dtype)
    arr = np.array(["a", None, "b"], dtype=StringDType(na_object=None))
    assert as_string_column(arr).to_pylist() == ["a", None, "b"]
    arr = np.array(["a", np.nan], dtype=StringDType(na_object=np.nan))
    assert as_string_column(arr).to_pylist() == ["a", None]


@pytest.mark.parametrize("chunked", [False, True])
def test_a_dictionary_of_other_values_names_the_dictionary_types(chunked):
    col = pa.array([1.5, 2.5, 1.5]).dictionary_encode()
    col = pa.chunked_array([col, col]) if chunked else col
    with pytest.raises(TypeError) as info:
        as_string_column(col)
    assert str(info.value) == (
        "fsstgpu compresses dictionary arrays of string, large_string, binary, large_binary, "
        "string_view, binary_view, not dictionary<values=double, indices=int32, ordered=0>")


@pytest.mark.parametrize("value_type", [pa.string(), pa.large_binary(), pa.string_view()])
def test_dictionary_columns_decode_to_their_value_type_chunk_by_chunk(value_type):
    chunks = [pa.array(["a", "b", None, "a"], value_type).dictionary_encode(),
              pa.array(["c"], value_type).dictionary_encode()]
    out = as_string_column(pa.chunked_array(chunks))
    assert out.type == value_type and [len(c) for c in out.chunks] == [4, 1]
    assert out.to_pylist() == (["a", "b", None, "a", "c"] if value_type != pa.large_binary()
                               else [b"a", b"b", None, b"a", b"c"])
    one = as_string_column(chunks[0])
    assert isinstance(one, pa.Array) and one.type == value_type


@pytest.mark.parametrize("bad", [["a", float("nan")], ("a", np.nan)])
def test_nan_in_a_list_is_no_null(bad):
    # (pandas' semantics, NaN a null, are for pandas objects only)
    with pytest.raises(TypeError, match="holds something else"):
        as_string_column(bad)


def test_empty_fixed_width_numpy_arrays_keep_bytes_or_str():
    # (an empty array of objects is taken for nulls, which become string)
    assert as_string_column(np.array([], "S3")).type == pa.binary()
    assert as_string_column(np.array([], "U3")).type == pa.string()
    assert as_string_column(np.array([b"a\x00b"], "S3")).to_pylist() == [b"a\x00b"]


def test_nan_in_a_numpy_object_array_is_no_null():
    with pytest.raises(TypeError, match="holds something else"):
        as_string_column(np.array(["a", np.nan], object))
    assert as_string_column(np.array(["a", None], object)).to_pylist() == ["a", None]


@pytest.mark.parametrize("value_type", [pa.string(), pa.binary_view()])
def test_a_dictionary_column_of_no_chunks_has_its_value_type(value_type):
    out = as_string_column(pa.chunked_array([], pa.dictionary(pa.int32(), value_type)))
    assert out.type == value_type and out.num_chunks == 0
