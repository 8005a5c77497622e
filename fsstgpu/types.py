"""The Arrow types fsstgpu compresses, and what each one needs: the one table of them.

Six types hold strings: three UTF-8 (``string``, ``large_string``, ``string_view``) and three
raw (``binary``, ``large_binary``, ``binary_view``). Inside fsstgpu every one of them is handled
in its *large* layout (int64 offsets, bytes in one buffer); a type's other properties follow from
this table:

==============  ============  ============  ========  ========
type            blob code     large layout  UTF-8     offsets
==============  ============  ============  ========  ========
string          0             large_string  yes       int32
large_string    1             large_string  yes       int64
binary          2             large_binary  no        int32
large_binary    3             large_binary  no        int64
string_view     4             large_string  yes       views
binary_view     5             large_binary  no        views
==============  ============  ============  ========  ========

The blob format and the extension type store a type as its code (its index in
:data:`SUPPORTED_TYPES`), so the order of that tuple is part of both formats.

>>> import pyarrow as pa
>>> from fsstgpu.types import large_type, is_text
>>> large_type(pa.string_view()), is_text(pa.binary())
(DataType(large_string), False)
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

__all__ = [
    "INT32_MAX",
    "SUPPORTED_TYPES",
    "check_type",
    "integer_dtype",
    "is_string_like",
    "is_supported",
    "is_text",
    "is_view",
    "large_type",
    "narrow_offsets",
    "offsets_dtype",
    "type_code",
    "type_from_code",
]

#: The supported types, in the order of their one-byte code in the file formats (code = index).
SUPPORTED_TYPES = (
    pa.string(),
    pa.large_string(),
    pa.binary(),
    pa.large_binary(),
    pa.string_view(),
    pa.binary_view(),
)
#: The largest offset a 32-bit-offset type (``string``, ``binary``) can hold.
INT32_MAX = 2**31 - 1

_LARGE = dict(zip(SUPPORTED_TYPES, (pa.large_string(), pa.large_string(), pa.large_binary(),
                                    pa.large_binary(), pa.large_string(), pa.large_binary()),
                  strict=True))
_SUPPORTED_IDS = frozenset(t.id for t in SUPPORTED_TYPES)
_TEXT = frozenset((pa.string(), pa.large_string(), pa.string_view()))
_VIEWS = frozenset((pa.string_view(), pa.binary_view()))
_NARROW_OFFSETS = frozenset((pa.string(), pa.binary()))


def integer_dtype(type_: pa.DataType) -> np.dtype:
    """The little-endian NumPy dtype of an Arrow integer type. (pyarrow 25's
    ``to_pandas_dtype`` imports pandas, which fsstgpu does not need.)

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.types import integer_dtype
    >>> integer_dtype(pa.uint32()), integer_dtype(pa.int64())
    (dtype('uint32'), dtype('int64'))
    """
    if not pa.types.is_integer(type_):
        raise TypeError(f"{type_} is not an integer type")
    kind = "u" if pa.types.is_unsigned_integer(type_) else "i"
    return np.dtype(f"<{kind}{type_.bit_width // 8}")


def is_supported(type_: pa.DataType) -> bool:
    """Tell whether ``type_`` is one of the six string / binary types fsstgpu compresses.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.types import is_supported
    >>> is_supported(pa.binary_view()), is_supported(pa.dictionary(pa.int8(), pa.string()))
    (True, False)
    """
    # the id first: hashing a nested type formats it whole (types 300 levels deep took seconds
    # to compress, each level's check formatting the levels below, and 400 a RecursionError)
    return type_.id in _SUPPORTED_IDS and type_ in _LARGE


def check_type(type_: pa.DataType) -> None:
    """Raise TypeError unless ``type_`` is one of the six supported string / binary types.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.types import check_type
    >>> check_type(pa.large_string())
    >>> check_type(pa.int32())
    Traceback (most recent call last):
    ...
    TypeError: fsstgpu compresses string and binary columns (string, large_string, binary, \
large_binary, string_view, binary_view), not int32
    """
    if type_ not in _LARGE:
        names = ", ".join(str(t) for t in SUPPORTED_TYPES)
        raise TypeError(f"fsstgpu compresses string and binary columns ({names}), not {type_}")


def is_string_like(type_: pa.DataType) -> bool:
    """Tell whether a column of this type gets FSST: a supported type, or a dictionary of one.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.types import is_string_like
    >>> is_string_like(pa.dictionary(pa.int32(), pa.string())), is_string_like(pa.int8())
    (True, False)
    """
    if pa.types.is_dictionary(type_):
        type_ = type_.value_type
    return type_ in _LARGE


def large_type(type_: pa.DataType) -> pa.DataType:
    """The large layout of a supported type: ``large_string`` or ``large_binary``.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.types import large_type
    >>> large_type(pa.binary())
    DataType(large_binary)
    """
    check_type(type_)
    return _LARGE[type_]


def is_text(type_: pa.DataType) -> bool:
    """Tell whether a supported type holds UTF-8 text (``string``, ``large_string``,
    ``string_view``).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.types import is_text
    >>> is_text(pa.string_view()), is_text(pa.large_binary())
    (True, False)
    """
    return type_ in _TEXT


def is_view(type_: pa.DataType) -> bool:
    """Tell whether a supported type is a view type (``string_view``, ``binary_view``).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.types import is_view
    >>> is_view(pa.binary_view()), is_view(pa.binary())
    (True, False)
    """
    return type_ in _VIEWS


def narrow_offsets(type_: pa.DataType) -> bool:
    """Tell whether a supported type has 32-bit offsets (``string``, ``binary``).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.types import narrow_offsets
    >>> narrow_offsets(pa.string()), narrow_offsets(pa.large_string())
    (True, False)
    """
    return type_ in _NARROW_OFFSETS


def offsets_dtype(type_: pa.DataType, total: int):
    """The dtype of the Arrow offsets fsstgpu builds for ``total`` bytes of ``type_``.

    int32 for ``string`` / ``binary`` and the view types (whose offsets layout is their small
    plain type) while the data fits in 2**31 - 1 bytes; int64 otherwise.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.types import offsets_dtype
    >>> offsets_dtype(pa.string(), 100), offsets_dtype(pa.string(), 2**31)
    (dtype('int32'), dtype('int64'))
    >>> offsets_dtype(pa.large_binary(), 100)
    dtype('int64')
    """
    small = type_ in _NARROW_OFFSETS or type_ in _VIEWS
    return np.dtype(np.int32) if small and total <= INT32_MAX else np.dtype(np.int64)


def type_code(type_: pa.DataType) -> int:
    """The one-byte code of a supported type in the file formats (its index in the table).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.types import type_code, type_from_code
    >>> type_code(pa.large_string()), type_from_code(type_code(pa.binary_view()))
    (1, DataType(binary_view))
    """
    check_type(type_)
    return SUPPORTED_TYPES.index(type_)


def type_from_code(code: int) -> pa.DataType:
    """The supported type with one-byte code ``code``; ValueError for an unknown code.

    Examples
    --------
    >>> from fsstgpu.types import type_from_code
    >>> type_from_code(2)
    DataType(binary)
    >>> type_from_code(6)
    Traceback (most recent call last):
    ...
    ValueError: unknown string type code 6
    """
    if not 0 <= code < len(SUPPORTED_TYPES):
        raise ValueError(f"unknown string type code {code}")
    return SUPPORTED_TYPES[code]
