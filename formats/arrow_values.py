"""What pyarrow hands out for ``fsstgpu.fsst`` columns once fsstgpu is imported: arrays
(:class:`FsstArray`) and scalars (:class:`FsstScalar`) that decode on ``to_pylist()`` / ``as_py()``
/ ``to_pandas()`` / ``cast()``, and the pandas dtype (:func:`decoded_dtype`) through which
``Table.to_pandas()`` and ``pandas.read_parquet`` decode. The type (``arrow.py``) names them.
"""

from __future__ import annotations

import functools

import pyarrow as pa

from fsstgpu.errors import CorruptDataError
from fsstgpu.formats.arrow_read import EXTENSION_NAME, decode_column

__all__ = ["FsstArray", "FsstScalar", "decoded_dtype"]


class FsstArray(pa.ExtensionArray):
    """An ``fsstgpu.fsst`` column as pyarrow hands it out once fsstgpu is imported: its
    :meth:`to_pylist`, :meth:`to_pandas` and :meth:`cast` decode the strings (on the CPU), so
    ``Table.to_pylist()`` shows text, not codes. ``.storage`` is the stored struct.

    Examples
    --------
    >>> import pyarrow as pa, fsstgpu
    >>> from fsstgpu.formats.arrow_storage import to_extension_array
    >>> ext = to_extension_array(fsstgpu.compress(pa.array(["ab", None])))
    >>> ext.to_pylist(), pa.table({"s": ext}).to_pylist()
    (['ab', None], [{'s': 'ab'}, {'s': None}])
    >>> ext.cast(pa.large_string()).type
    DataType(large_string)
    """

    def decoded(self):
        """The column's values, decoded: its original type (a dictionary column's plain values;
        a ChunkedArray for a ``string`` column of more than 2 GiB)."""
        return decode_column(self)[0]

    def to_pylist(self, **kwargs):
        return self.decoded().to_pylist(**kwargs)

    def to_pandas(self, **kwargs):
        decoded = self.decoded()
        if self.type.index_type is None:
            return decoded.to_pandas(**kwargs)
        # a dictionary column: a Categorical, as the original's to_pandas() gives
        series = decoded.dictionary_encode().to_pandas(**kwargs)
        return series.cat.as_ordered() if self.type.ordered else series

    def to_numpy(self, zero_copy_only=True, writable=False):
        # (pyarrow's own converts the stored struct: dicts of codes, not the strings;
        # ``np.asarray(arr)`` comes here too)
        return self.decoded().to_numpy(zero_copy_only=zero_copy_only, writable=writable)

    def cast(self, target_type=None, safe=None, options=None, memory_pool=None):
        if target_type is not None and target_type in (self.type, self.type.storage_type):
            # to the stored struct (or the type itself): pyarrow's own cast of the codes, as
            # for any extension array (decoding first made it "Unsupported cast from string")
            return super().cast(target_type, safe=safe, options=options,
                                memory_pool=memory_pool)
        return self.decoded().cast(target_type, safe=safe, options=options,
                                   memory_pool=memory_pool)


class FsstScalar(pa.ExtensionScalar):
    """One value of an ``fsstgpu.fsst`` column: :meth:`as_py` decodes it (``t["s"][0]``).

    Examples
    --------
    >>> import pyarrow as pa, fsstgpu
    >>> from fsstgpu.formats.arrow_storage import to_extension_array
    >>> ext = to_extension_array(fsstgpu.compress(pa.array(["ab", None])))
    >>> ext[0].as_py(), ext[1].as_py(), pa.table({"s": ext})["s"][0].as_py()
    ('ab', None, 'ab')
    """

    def as_py(self, **kwargs):
        if not self.is_valid:
            return None
        table = self.value["table"] if self.type.version == 4 else None
        if table is not None and table.is_valid and table.index.as_py() >= len(table.dictionary):
            # (pyarrow's as_py of the struct looks it up first: its ArrowIndexError, where the
            # column's decode names the forged index)
            raise CorruptDataError(f"{EXTENSION_NAME} storage: a string names table "
                                   f"{table.index.as_py()} of {len(table.dictionary)}")
        storage = pa.array([self.value.as_py()], type=self.type.storage_type)
        if storage.type != self.type.storage_type:  # pyarrow < 26 gives the table's
            storage = storage.cast(self.type.storage_type)  # dictionary int16 indices
        one = pa.ExtensionArray.from_storage(self.type, storage)
        return decode_column(one)[0][0].as_py(**kwargs)


@functools.cache
def decoded_dtype():
    """A pandas dtype whose ``__from_arrow__`` decodes: pandas then gives an fsst column the
    dtype its decoded values get (``str``, ``object`` for bytes), as if it were never coded.
    Made on first use: pandas is optional, and slow to import."""
    import pandas as pd

    class FsstDecoded(pd.api.extensions.ExtensionDtype):
        name = "fsstgpu.fsst"
        type = object

        def __from_arrow__(self, array):
            chunks = array.chunks if isinstance(array, pa.ChunkedArray) else [array]
            decoded = [c.decoded() for c in chunks]
            parts = [p for d in decoded
                     for p in (d.chunks if isinstance(d, pa.ChunkedArray) else [d])]
            ftype = array.type
            values = pa.chunked_array(parts, type=ftype.value_type)
            if ftype.index_type is not None:  # a dictionary column: a Categorical, as it was
                values = values.dictionary_encode()
            # (bytes: a NumpyExtensionArray of objects; pandas takes no plain ndarray here)
            out = values.to_pandas().array
            return out.as_ordered() if ftype.ordered else out  # (dictionary_encode's are not)

    return FsstDecoded()
