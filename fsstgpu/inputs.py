"""What :func:`fsstgpu.compress` accepts, turned in one place into an Arrow string column.

Accepted (anything else raises TypeError naming this list, :data:`ACCEPTED`):

================================  ===========================================================
input                             becomes
================================  ===========================================================
pyarrow Array / ChunkedArray      itself, when of one of the six types (:mod:`fsstgpu.types`)
pyarrow DictionaryArray (or       its values, decoded: the compressed column (and
chunked) of such values           :func:`fsstgpu.decompress`) has the *value* type (polars'
                                  Categorical / Enum: ``string_view``)
pandas Series / Index             ``pa.array(series)``: object dtype of str / bytes / None /
                                  NaN, ``string[python]``, ``string[pyarrow]``, pandas 3's
                                  ``str``; a categorical of strings becomes a dictionary (above)
numpy 1-D array                   of dtype ``U``, ``S``, object (str / bytes / None) or NumPy 2's
                                  ``StringDType`` (its missing values become nulls); ``U`` and
                                  ``S`` values keep inner NULs (numpy drops trailing ones)
Arrow PyCapsule producers         objects with ``__arrow_c_array__`` (one array) or
                                  ``__arrow_c_stream__`` (chunks): polars, nanoarrow, DuckDB...
list / tuple                      of str / bytes / None
================================  ===========================================================

Tables (``pyarrow.Table``, ``pyarrow.RecordBatch``, and pandas and polars DataFrames, which
:func:`as_table` turns into a ``pyarrow.Table``) have several columns and are
:mod:`fsstgpu.formats.tables`'s. pandas and polars are never imported here: their objects can
only exist once the user has imported them, so ``sys.modules`` tells whether to look for one.

>>> import numpy as np
>>> from fsstgpu.inputs import as_string_column
>>> as_string_column(np.array(["ab", "c"])).to_pylist()
['ab', 'c']
"""

from __future__ import annotations

import sys

import numpy as np
import pyarrow as pa

from fsstgpu.types import SUPPORTED_TYPES, is_supported, is_view, large_type

__all__ = ["ACCEPTED", "as_string_column", "as_table", "is_table"]

#: What the compressor takes, as error messages name it.
ACCEPTED = ("a pyarrow string/binary Array or ChunkedArray (dictionary-encoded too), a pandas "
            "Series of strings, a 1-D numpy array of dtype U, S, object or StringDType, an object "
            "with __arrow_c_array__ / __arrow_c_stream__, a list of str / bytes / None, or "
            "(fsstgpu.compress_table) a pyarrow Table or RecordBatch or a pandas / polars "
            "DataFrame")


def is_table(obj) -> bool:
    """Whether ``obj`` is a pyarrow Table or RecordBatch, or a pandas / polars DataFrame
    (several columns: :func:`fsstgpu.compress_table`'s)."""
    return isinstance(obj, (pa.Table, pa.RecordBatch, *_frame_types()))


def as_table(obj, what: str = "compress_table"):
    """``obj`` as a pyarrow Table or RecordBatch: itself, or a pandas / polars DataFrame as a
    Table.

    A pandas DataFrame goes through ``pa.Table.from_pandas``, so that its index and column dtypes
    are recorded in the schema's pandas metadata and ``Table.to_pandas()`` gives them back; a
    polars DataFrame through its Arrow stream (``pa.table``: polars' strings are
    ``string_view``), as :func:`as_string_column` takes a polars Series.

    Raises
    ------
    TypeError
        For anything else (``what`` names the function in the message).

    Examples
    --------
    >>> import pandas as pd
    >>> from fsstgpu.inputs import as_table
    >>> as_table(pd.DataFrame({"s": ["a", None]})).column("s").to_pylist()
    ['a', None]
    """
    if isinstance(obj, (pa.Table, pa.RecordBatch)):
        return obj
    pandas = sys.modules.get("pandas")
    if pandas is not None and isinstance(obj, getattr(pandas, "DataFrame", ())):
        return pa.Table.from_pandas(obj)
    if isinstance(obj, _frame_types()):
        return pa.table(obj)
    raise TypeError(f"{what} takes a pyarrow Table or RecordBatch or a pandas / polars "
                    f"DataFrame, not {type(obj).__name__}")


def _frame_types() -> tuple:
    """pandas' and polars' DataFrame, of those imported (see :func:`_pandas_types`)."""
    found = (getattr(sys.modules.get("pandas"), "DataFrame", None),
             getattr(sys.modules.get("polars"), "DataFrame", None))
    return tuple(t for t in found if isinstance(t, type))


def as_string_column(obj):
    """``obj`` as a pyarrow Array or ChunkedArray of one of the six supported types.

    Parameters
    ----------
    obj
        Any input in the module docstring's table.

    Returns
    -------
    pyarrow.Array or pyarrow.ChunkedArray
        Zero-copy for Arrow inputs of a supported type; a dictionary-encoded column is decoded to
        its values; a column of nulls only (or an empty list) becomes ``string``.

    Raises
    ------
    TypeError
        For any other input, or one that holds something other than strings (the message says
        what was given and what is accepted).
    ValueError
        For a numpy array that is not 1-D.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.inputs import as_string_column
    >>> col = pa.array(["x", "y", "x"]).dictionary_encode()
    >>> as_string_column(col).type
    DataType(string)
    >>> as_string_column([1, 2])
    Traceback (most recent call last):
    ...
    TypeError: fsstgpu compresses strings: got a list holding int64; it takes a pyarrow \
string/binary Array or ChunkedArray (dictionary-encoded too), a pandas Series of strings, a 1-D \
numpy array of dtype U, S, object or StringDType, an object with __arrow_c_array__ / \
__arrow_c_stream__, a list of str / bytes / None, or (fsstgpu.compress_table) a pyarrow Table or \
RecordBatch or a pandas / polars DataFrame
    """
    what = _describe(obj)
    col = _to_arrow(obj, what)
    if pa.types.is_dictionary(col.type):
        col = _dictionary_values(col)
    if pa.types.is_null(col.type):  # only None, or empty: nothing says str or bytes
        col = col.cast(pa.string())
    if not is_supported(col.type):
        raise TypeError(f"fsstgpu compresses strings: got {what} holding {col.type}; "
                        f"it takes {ACCEPTED}")
    return col


def _describe(obj) -> str:
    if isinstance(obj, np.ndarray):
        return f"a numpy array of dtype {obj.dtype}"
    kind = type(obj)
    if kind.__module__ == "builtins":
        return f"a {kind.__name__}"
    return f"a {kind.__module__.split('.')[0]}.{kind.__name__}"


def _to_arrow(obj, what: str):
    if isinstance(obj, (pa.Array, pa.ChunkedArray)):
        return obj
    if is_table(obj):
        raise TypeError(f"{what} has several columns: use fsstgpu.compress_table")
    try:
        if isinstance(obj, _pandas_types()):
            return pa.array(obj)  # pandas semantics: NaN / NA in object columns are nulls
        if isinstance(obj, np.ndarray):
            return _from_numpy(obj)
        if hasattr(obj, "__arrow_c_array__"):
            return pa.array(obj)
        if hasattr(obj, "__arrow_c_stream__"):
            return pa.chunked_array(obj)
        if isinstance(obj, (list, tuple)):
            return pa.array(obj, from_pandas=False)
    except (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError) as exc:
        # (not implemented: values pyarrow converts to nothing, a void or complex numpy value)
        raise TypeError(f"fsstgpu compresses strings: {what} holds something else ({exc}); "
                        f"it takes {ACCEPTED}") from None
    raise TypeError(f"fsstgpu compresses strings: got {what}; it takes {ACCEPTED}")


def _pandas_types() -> tuple:
    """pandas' Series and Index when pandas is imported (possibly still importing, in another
    thread: pyarrow imports it lazily), else nothing."""
    pandas = sys.modules.get("pandas")
    found = (getattr(pandas, "Series", None), getattr(pandas, "Index", None))
    return tuple(t for t in found if isinstance(t, type))


def _from_numpy(arr: np.ndarray):
    if arr.ndim != 1:
        raise ValueError(f"fsstgpu compresses 1-D arrays; this one has shape {arr.shape} "
                         "(ravel it, or use fsstgpu.integrations.numcodecs.FSST, which keeps "
                         "the shape)")
    # kind T is NumPy 2's StringDType; pyarrow reads it (and its missing values) natively
    if arr.dtype.kind not in "USOT":
        raise TypeError(f"fsstgpu compresses strings, not a numpy array of dtype {arr.dtype}; "
                        f"it takes {ACCEPTED}")
    if arr.dtype.kind in "US":
        # pyarrow reads a fixed-width numpy string up to its first NUL byte / character, where
        # numpy's value only drops trailing NULs ("a\x00b" is a valid value): go through
        # Python objects, which hold numpy's values exactly; typed, since an empty array of
        # objects would be taken for strings (an empty S array came back as str)
        type_ = pa.binary() if arr.dtype.kind == "S" else pa.string()
        return pa.array(arr.astype(object), type=type_, from_pandas=False)
    try:
        return pa.array(arr, from_pandas=False)
    except pa.ArrowNotImplementedError:
        if arr.dtype.kind != "T":
            raise
        # a StringDType this pyarrow cannot take (25 with NumPy 2.5: "Unsupported numpy
        # type"): as objects, its missing values (None or NaN, its na_object) become nulls
        return pa.array(arr.astype(object), from_pandas=True)


def _dictionary_values(col):
    """The values of a dictionary-encoded column (its dictionary taken by its indices)."""
    value_type = col.type.value_type
    if not is_supported(value_type):
        names = ", ".join(str(t) for t in SUPPORTED_TYPES)
        raise TypeError(f"fsstgpu compresses dictionary arrays of {names}, not {col.type}")
    if isinstance(col, pa.ChunkedArray):
        return pa.chunked_array([_decode(c) for c in col.chunks], type=value_type)
    return _decode(col)


def _decode(arr):
    """One dictionary array's values. pyarrow has no take kernel for view values (polars'
    Categorical and Enum are dictionaries of ``string_view``): those are taken as their large
    type and cast back, so the column keeps its values' type."""
    value_type = arr.type.value_type
    if not is_view(value_type):
        return arr.dictionary_decode()
    large = large_type(value_type)
    return arr.dictionary.cast(large).take(arr.indices).cast(value_type)
