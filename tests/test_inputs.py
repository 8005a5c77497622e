"""fsstgpu.compress over the inputs users have: numpy, pandas, dictionaries, Arrow capsules."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import fsstgpu
from fsstgpu.inputs import ACCEPTED
from fsstgpu.testing import check_roundtrip

WORDS = ["http://example.com/a", "", "ab\x00c", "\x00lead", "日本語", "épsilon", "x" * 300]


def decoded(obj):
    return fsstgpu.decompress(fsstgpu.compress(obj), device="cpu")


@pytest.mark.parametrize("dtype", ["U", "S", "object"])
def test_numpy_fixed_width_and_object(dtype):
    values = WORDS if dtype != "S" else [w.encode() for w in WORDS]
    arr = np.array(values, dtype=dtype)
    out = decoded(arr)
    assert out.type == (pa.binary() if dtype == "S" else pa.string())
    # numpy's own values: inner NULs kept (pyarrow alone would cut "ab\x00c" at the NUL)
    assert out.to_pylist() == arr.tolist()


def test_numpy_object_with_none_and_bytes():
    out = decoded(np.array([b"a", None, b"\xff"], dtype=object))
    assert out.type == pa.binary() and out.to_pylist() == [b"a", None, b"\xff"]


def test_numpy_string_dtype():
    string_dtype = getattr(np.dtypes, "StringDType", None)
    if string_dtype is None:
        pytest.skip("NumPy < 2 has no StringDType")
    assert decoded(np.array(WORDS, dtype=string_dtype())).to_pylist() == WORDS
    with_none = np.array(["a", None, "b"], dtype=string_dtype(na_object=None))
    assert decoded(with_none).to_pylist() == ["a", None, "b"]
    with_nan = np.array(["a", np.nan], dtype=string_dtype(na_object=np.nan))
    assert decoded(with_nan).to_pylist() == ["a", None]


@pytest.mark.parametrize("bad", [np.array([1, 2]), np.array([1.5]), np.array(["a", 1.5],
                                                                             dtype=object)])
def test_numpy_arrays_of_other_things(bad):
    with pytest.raises(TypeError, match="numpy array of dtype"):
        fsstgpu.compress(bad)


def test_numpy_needs_one_dimension():
    with pytest.raises(ValueError, match="1-D"):
        fsstgpu.compress(np.array([["a", "b"]]))


def test_pandas_string_dtypes():
    pd = pytest.importorskip("pandas")
    values = ["a", None, "http://example.com"]
    for dtype in (object, "string", "string[pyarrow]", "string[python]"):
        series = pd.Series(values, dtype=dtype)
        out = decoded(series)
        assert pa.types.is_string(out.type) or pa.types.is_large_string(out.type)
        assert out.to_pylist() == values, dtype
    nan_object = pd.Series(["a", np.nan], dtype=object)  # pandas' missing value in object columns
    assert decoded(nan_object).to_pylist() == ["a", None]
    assert decoded(pd.Series([b"x", None], dtype=object)).to_pylist() == [b"x", None]


def test_pandas_categorical_compresses_its_values():
    pd = pytest.importorskip("pandas")
    series = pd.Series(["b", "a", None, "b"], dtype="category")
    out = decoded(series)
    assert pa.types.is_string(out.type) or pa.types.is_large_string(out.type)
    assert out.to_pylist() == ["b", "a", None, "b"]


def test_pandas_non_strings_are_refused():
    pd = pytest.importorskip("pandas")
    with pytest.raises(TypeError, match="int64"):
        fsstgpu.compress(pd.Series([1, 2]))
    with pytest.raises(TypeError, match="holds something else"):
        fsstgpu.compress(pd.Series(["a", 1], dtype=object))


def test_dictionary_arrays_compress_their_values():
    col = pa.array(["x", None, "y", "x"], pa.large_string()).dictionary_encode()
    carr = check_roundtrip(col.dictionary_decode())  # what the values path must equal
    assert fsstgpu.compress(col).equals(carr)
    chunked = pa.chunked_array([col, col.slice(1, 2)])
    out = decoded(chunked)
    assert out.type == pa.large_string() and out.num_chunks == 2
    assert out.to_pylist() == ["x", None, "y", "x", None, "y"]
    with pytest.raises(TypeError, match="dictionary"):
        fsstgpu.compress(pa.array([1, 2]).dictionary_encode())


def test_all_null_and_empty_inputs_become_string():
    assert decoded(pa.array([None, None])).to_pylist() == [None, None]
    assert decoded([]).type == pa.string()


class CapsuleOnly:
    """An Arrow producer known only by the PyCapsule interface (as polars, DuckDB are)."""

    def __init__(self, data, stream: bool):
        self.data = data
        if stream:
            self.__arrow_c_stream__ = data.__arrow_c_stream__
        else:
            self.__arrow_c_array__ = data.__arrow_c_array__


def test_arrow_pycapsule_producers():
    arr = pa.array(["a", None, "bc"], pa.string_view())
    assert decoded(CapsuleOnly(arr, stream=False)).equals(arr)
    chunked = pa.chunked_array([["a"], ["b", None]], pa.large_binary())
    out = decoded(CapsuleOnly(chunked, stream=True))
    assert out.equals(chunked) and out.num_chunks == 2


@pytest.mark.parametrize("bad", [5, {"a": 1}, (x for x in ["a"]), [1, "a"], [1, 2]])
def test_wrong_inputs_name_what_is_accepted(bad):
    with pytest.raises(TypeError) as info:
        fsstgpu.compress(bad)
    assert ACCEPTED in str(info.value)


def test_symbol_table_may_be_given_as_bytes():
    col = pa.array(["http://example.com/a", "http://example.com/b"])
    table = fsstgpu.train(col)
    carr = fsstgpu.compress(col, table=table.to_bytes())
    assert carr.tables == (table,)
    assert fsstgpu.decompress(carr, device="cpu").equals(col)


def test_optional_libraries_not_imported_by_fsstgpu(fresh_python):
    # (pyarrow itself imports pandas, when installed, on its first conversion from Python)
    code = ("import sys, fsstgpu\n"
            "optional = ('pandas', 'numcodecs', 'zarr', 'cudf', 'nanoarrow')\n"
            "print(sorted(m for m in optional if m in sys.modules))\n"
            "fsstgpu.decompress(fsstgpu.compress(['a', None]), device='cpu')\n"
            "print(sorted(m for m in optional[1:] if m in sys.modules))")
    assert fresh_python(code).split() == ["[]", "[]"]


@pytest.mark.parametrize("bad", [[np.datetime64("2020")], (np.void(b"ab"),),
                                 [np.array([1j])], np.array([np.void(b"ab")], dtype=object)])
def test_values_pyarrow_cannot_convert_at_all_are_a_type_error(bad):
    # pyarrow raises ArrowNotImplementedError for these (a year-unit datetime64, a void or
    # complex numpy value); it escaped as that, where the contract is TypeError
    with pytest.raises(TypeError, match="holds something else") as info:
        fsstgpu.compress(bad)
    assert ACCEPTED in str(info.value)
