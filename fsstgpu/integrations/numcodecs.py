"""``FSST``: a numcodecs codec for numpy arrays of strings (zarr's codecs are numcodecs codecs).

numcodecs finds it by its id through the entry point ``numcodecs.codecs: fsst`` that the package
declares, so ``numcodecs.get_codec({"id": "fsst"})`` works without importing fsstgpu; importing
this module also registers it. numcodecs is an optional dependency
(``pip install 'fsstgpu[numcodecs]'``); nothing else in fsstgpu imports this module.

**Encoded form**: a small header that restores the array, then the column's blob
(``formats/blob.md``, :meth:`fsstgpu.CompressedStringArray.to_bytes`) of its values in C order:

======  ======  ==============================================================================
offset  size    field
======  ======  ==============================================================================
0       4       magic ``b"FSNP"``
4       1       version (2; version 1, without the flags and the CRC, is still read)
5       1       dtype kind: 0 object (str or bytes: the blob's type says which; None is a
                null), 1 ``U``, 2 ``S``, 3 NumPy 2's ``StringDType``
6       1       StringDType missing value: 0 none, 1 ``None``, 2 NaN (0 for other kinds)
7       1       flags: bit 0 a big-endian ``U``, bit 1 a StringDType with ``coerce=False``,
                bit 2 an array in Fortran order (the values are still in C order)
8       8       itemsize: characters for ``U``, bytes for ``S``, else 0 (u64, little-endian)
16      4       ndim (u32)
20      8 x n   shape (u64 each)
...     4       CRC32 of the bytes before it (the header and the shape)
...             the blob (its own CRCs cover the values)
======  ======  ==============================================================================

A flipped byte anywhere is a :class:`~fsstgpu.CorruptDataError`. The header's item size and
shape are what the output's size is made of (a ``U`` array's bytes are its item size times its
length, whatever its strings): a header forged with its CRC can ask for a large array, as a
forged ``.npy`` header can. The item size must hold the longest string, but has no upper bound
in the data: the writer records the array's own item size, which padding makes as large as a
caller's dtype says (``U1000`` of two-letter strings). So the output is allocated before the
strings are decoded, and an output that cannot be allocated is a
:class:`~fsstgpu.CorruptDataError` naming the item size and the bytes asked for (a forged header,
or an array larger than this machine's memory), never numpy's MemoryError.

Decoding runs on the CPU (byte-identical to the GPU decoder; a numpy result lives in host memory
anyway) and returns exactly the dtype and shape encoded: ``U`` / ``S`` with their item size,
object arrays of str (or bytes) with None for nulls, StringDType with its missing value. A
Fortran-ordered array comes back in Fortran order: numcodecs' users read a decoded array in its
memory order (zarr's v2 format reshapes a filter's output with ``order="A"``, then the array's
order), so one in C order would come back transposed from an ``order="F"`` zarr array.

>>> import numpy as np
>>> from fsstgpu.integrations.numcodecs import FSST
>>> codec = FSST()
>>> a = np.array([["http://a.example", "http://b.example"], ["", "x"]])
>>> back = codec.decode(codec.encode(a))
>>> back.dtype == a.dtype, back.shape, bool((back == a).all())
(True, (2, 2), True)
"""

from __future__ import annotations

import math
import struct
import zlib

import numcodecs.abc
import numcodecs.registry
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from numcodecs.compat import ensure_bytes, ndarray_copy

from fsstgpu.arrays import CompressedStringArray
from fsstgpu.columns import compress_column
from fsstgpu.errors import CorruptDataError
from fsstgpu.types import is_text

__all__ = ["FSST"]

MAGIC = b"FSNP"
VERSION = 2
_HEADER = struct.Struct("<4sBBBBQI")  # magic, version, kind, missing, flags, itemsize, ndim
_CRC = struct.Struct("<I")
BIG_ENDIAN, NO_COERCE, FORTRAN = 1, 2, 4  # the flags
#: numpy's largest item size (bytes): a larger one in a header is damage
_MAX_ITEM_BYTES = 2**31 - 1
OBJECT, UNICODE, BYTES, STRINGDTYPE = range(4)
NO_MISSING, MISSING_NONE, MISSING_NAN = range(3)
_KINDS = {"O": OBJECT, "U": UNICODE, "S": BYTES, "T": STRINGDTYPE}


def _string_dtype(missing: int, *, coerce: bool = True):
    """NumPy 2's StringDType with the given missing value and ``coerce``."""
    string_dtype = getattr(np.dtypes, "StringDType", None)
    if string_dtype is None:
        raise CorruptDataError("FSST data holds a StringDType array; this NumPy has no "
                               "StringDType (NumPy >= 2 does)")
    if missing == MISSING_NONE:
        return string_dtype(na_object=None, coerce=coerce)
    if missing == MISSING_NAN:
        return string_dtype(na_object=np.nan, coerce=coerce)
    return string_dtype(coerce=coerce)


def _missing_code(dtype) -> int:
    if not hasattr(dtype, "na_object"):
        return NO_MISSING
    na = dtype.na_object
    if na is None:
        return MISSING_NONE
    if isinstance(na, float) and math.isnan(na):
        return MISSING_NAN
    raise TypeError(f"FSST keeps StringDType's missing value when it is None or NaN, not {na!r}")


class FSST(numcodecs.abc.Codec):
    """FSST compression of numpy arrays of strings or bytes (the encoded form: module docstring).

    Takes arrays of dtype object (str, or bytes, and None), ``U``, ``S`` or ``StringDType``, of
    any shape; :meth:`decode` gives back the same dtype and shape. The codec has no parameters:
    a symbol table is trained for each array encoded (``get_config() == {"id": "fsst"}``).

    Examples
    --------
    >>> import numcodecs, numpy as np
    >>> codec = numcodecs.get_codec({"id": "fsst"})
    >>> a = np.array(["alpha", None, "beta"], dtype=object)
    >>> codec.decode(codec.encode(a))
    array(['alpha', None, 'beta'], dtype=object)
    """

    codec_id = "fsst"

    def encode(self, buf) -> bytes:
        """The encoded form of ``buf`` (a numpy array of strings, or anything ``np.asarray``
        makes one of)."""
        arr = buf if isinstance(buf, np.ndarray) else np.asarray(buf)
        kind = _KINDS.get(arr.dtype.kind)
        if kind is None:
            raise TypeError(f"FSST encodes arrays of str / bytes (dtype object, U, S or "
                            f"StringDType), not {arr.dtype}")
        missing = _missing_code(arr.dtype) if kind == STRINGDTYPE else NO_MISSING
        itemsize, flags = 0, 0
        if kind == UNICODE:
            itemsize = arr.dtype.itemsize // 4
            flags = BIG_ENDIAN if arr.dtype.byteorder == ">" else 0
        elif kind == BYTES:
            itemsize = arr.dtype.itemsize
        elif kind == STRINGDTYPE and not getattr(arr.dtype, "coerce", True):
            flags = NO_COERCE
        if arr.flags.f_contiguous and not arr.flags.c_contiguous:
            flags |= FORTRAN
        carr = compress_column(arr.reshape(-1))  # C order; object arrays: str / bytes / None only
        if kind == OBJECT and not is_text(carr.type):
            _no_str(arr)
        head = (_HEADER.pack(MAGIC, VERSION, kind, missing, flags, itemsize, arr.ndim)
                + struct.pack(f"<{arr.ndim}Q", *arr.shape))
        return head + _CRC.pack(zlib.crc32(head)) + carr.to_bytes()

    def decode(self, buf, out=None):
        """The array ``buf`` encodes; written into ``out`` (same size) when given.

        Raises
        ------
        CorruptDataError
            For damaged or forged data, including a ``U`` / ``S`` output that cannot be
            allocated (the message names its item size and bytes).
        ValueError
            For an ``out`` of another dtype or size.
        """
        data = ensure_bytes(buf)
        if len(data) < _HEADER.size:
            raise CorruptDataError(f"FSST data truncated: {len(data)} bytes")
        magic, version, kind, missing, flags, itemsize, ndim = _HEADER.unpack_from(data)
        if magic != MAGIC:
            raise CorruptDataError(f"FSST data: bad magic {magic!r}, expected {MAGIC!r}")
        if version not in (1, VERSION):
            raise CorruptDataError(f"FSST data: unsupported version {version}")
        if ndim > 64:
            raise CorruptDataError("FSST data: invalid header")
        shape_end = _HEADER.size + 8 * ndim
        blob_at = shape_end + (_CRC.size if version > 1 else 0)
        if len(data) < blob_at:
            raise CorruptDataError("FSST data truncated in its shape")
        if version > 1 and _CRC.unpack_from(data, shape_end)[0] != zlib.crc32(data[:shape_end]):
            raise CorruptDataError("FSST data: the header's CRC does not match (damaged)")
        if (kind > STRINGDTYPE or missing > MISSING_NAN
                or (missing and kind != STRINGDTYPE) or flags & ~(BIG_ENDIAN | NO_COERCE | FORTRAN)
                or (version == 1 and flags) or (flags & BIG_ENDIAN and kind != UNICODE)
                or (flags & NO_COERCE and kind != STRINGDTYPE)
                or itemsize * (4 if kind == UNICODE else 1) > _MAX_ITEM_BYTES):
            raise CorruptDataError("FSST data: invalid header")
        shape = struct.unpack_from(f"<{ndim}Q", data, _HEADER.size)
        carr = CompressedStringArray.from_bytes(data[blob_at:])
        if math.prod(shape) != len(carr):
            raise CorruptDataError(f"FSST data: shape {shape} but {len(carr)} strings")
        try:
            values = _values(carr, kind, missing, itemsize, flags).reshape(shape)
        except CorruptDataError:  # (a ValueError too: _values' own messages, unwrapped)
            raise
        except ValueError as exc:  # numpy refuses the shape ("array is too big", ...)
            raise CorruptDataError(f"FSST data: shape {shape}: {exc}") from None
        if flags & FORTRAN:
            values = np.asfortranarray(values)
        if out is None:
            return values
        if isinstance(out, np.ndarray) and out.dtype not in (values.dtype, object):
            # (numpy would cut longer strings to a narrower item size without a word)
            raise ValueError(f"out has dtype {out.dtype}, the data {values.dtype}")
        # objects and StringDType's arena strings cannot be viewed as bytes: copied by item
        if values.dtype.kind in "OT" or (isinstance(out, np.ndarray) and out.dtype == object):
            out = np.asarray(out)
            if out.size != values.size:
                raise ValueError(f"out has {out.size} items, the data {values.size}")
            out[...] = values.reshape(out.shape)
            return out
        if isinstance(out, np.ndarray) and out.shape == values.shape:
            out[...] = values  # by index: a C-ordered out of Fortran-ordered data, or the reverse
            return out
        return ndarray_copy(values, out)  # numcodecs' way: any buffer of the data's size


def _no_str(arr: np.ndarray) -> None:
    """Refuse an object array of bytes that also holds str (pyarrow reads the str as bytes),
    as numcodecs' VLenBytes does: the strings would come back as bytes."""
    if any(isinstance(value, str) for value in arr.flat):
        raise TypeError("FSST takes an object array of str or of bytes (and None), not both: "
                        "its str would come back as bytes")


def _values(carr: CompressedStringArray, kind: int, missing: int, itemsize: int,
            flags: int) -> np.ndarray:
    """The decoded strings as a flat numpy array of the encoded kind."""
    col = carr.to_arrow()
    if isinstance(col, pa.ChunkedArray):
        col = col.combine_chunks() if col.num_chunks else pa.array([], type=carr.type)
    text = is_text(carr.type)
    if (kind in (UNICODE, STRINGDTYPE) and not text) or (kind == BYTES and text):
        raise CorruptDataError(f"FSST data: {carr.type} values for dtype kind {kind}")
    if col.null_count and kind in (UNICODE, BYTES):
        raise CorruptDataError("FSST data: nulls in a U / S array")
    if col.null_count and kind == STRINGDTYPE and missing == NO_MISSING:
        raise CorruptDataError("FSST data: nulls in a StringDType array without missing values")
    if kind == BYTES:
        if len(col) and carr.lengths.max() > itemsize:
            raise CorruptDataError(f"FSST data: a value longer than the S{itemsize} item size")
        return _fixed_width(col, np.dtype(f"S{itemsize}"))
    if kind == UNICODE:
        if len(col) and pc.max(pc.utf8_length(col)).as_py() > itemsize:
            raise CorruptDataError(f"FSST data: a value longer than the U{itemsize} item size")
        return _fixed_width(col, np.dtype(f"{'>' if flags & BIG_ENDIAN else '<'}U{itemsize}"))
    objects = col.to_numpy(zero_copy_only=False)
    if kind == OBJECT:
        return objects
    if missing == MISSING_NAN and col.null_count:
        objects[col.is_null().to_numpy(zero_copy_only=False)] = np.nan
    return objects.astype(_string_dtype(missing, coerce=not flags & NO_COERCE))


def _fixed_width(col: pa.Array, dtype: np.dtype) -> np.ndarray:
    """``col``'s strings in a new array of the ``U`` / ``S`` ``dtype``, allocated first.

    The header's item size has no upper bound the writer guarantees (a padded array's is as
    large as its dtype), so a forged one can ask for more than any machine holds: numpy's
    MemoryError then becomes a CorruptDataError naming the size, raised before the strings are
    decoded into Python objects.
    """
    try:
        out = np.empty(len(col), dtype)
    except MemoryError as exc:
        raise CorruptDataError(
            f"FSST data: the header's item size ({dtype.str}, {dtype.itemsize} bytes) times its "
            f"{len(col)} items is {len(col) * dtype.itemsize} bytes, which cannot be allocated "
            f"(a forged header, or an array larger than this machine's memory)") from exc
    out[...] = col.to_numpy(zero_copy_only=False)
    return out


numcodecs.registry.register_codec(FSST)
