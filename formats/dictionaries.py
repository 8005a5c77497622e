"""Dictionary columns: decode one to its plain values, and encode plain values back.

An ``fsstgpu.fsst`` column made from a dictionary column stores the plain strings (the
dictionary's order is not kept); on the way back :class:`Redictionary` rebuilds a dictionary in
order of first occurrence, which is what ``dictionary_encode`` makes, so a column written that
way comes back exactly.

Views (``string_view``, ``binary_view``) go through the compute functions as their large types:
pyarrow 26 has no ``take`` / ``is_in`` / ``index_in`` kernels for them, and its ``unique`` turns a
null view into ``""``.

>>> import pyarrow as pa
>>> from fsstgpu.formats.dictionaries import Redictionary, plain_values
>>> col = pa.array(["b", "a", "b"]).dictionary_encode()
>>> Redictionary(col.type, running=False).encode(plain_values(col)).equals(col)
True
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from fsstgpu.types import is_view, large_type

__all__ = ["Redictionary", "plain_values"]


def plain_values(col):
    """The plain values of a column (dictionaries decoded), keeping its chunks.

    ``col`` is an Array or a ChunkedArray, and so is the result; nothing is concatenated (a
    column over 2 GiB comes in several chunks and would not fit one 32-bit-offset array).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.dictionaries import plain_values
    >>> views = pa.array(["a", "bb"], pa.string_view())
    >>> col = pa.DictionaryArray.from_arrays(pa.array([1, None, 0], pa.int32()), views)
    >>> plain_values(col).to_pylist(), plain_values(col).type
    (['bb', None, 'a'], DataType(string_view))
    """
    if not pa.types.is_dictionary(col.type):
        return col
    if isinstance(col, pa.ChunkedArray):
        return pa.chunked_array([_decoded(c) for c in col.chunks], type=col.type.value_type)
    return _decoded(col)


def _decoded(col: pa.DictionaryArray) -> pa.Array:
    value_type = col.type.value_type
    if not is_view(value_type):
        return col.dictionary_decode()
    wide = pa.DictionaryArray.from_arrays(col.indices, col.dictionary.cast(large_type(value_type)))
    return wide.dictionary_decode().cast(value_type)


class Redictionary:
    """Re-encodes plain strings as a dictionary column, in order of first occurrence.

    ``running=True`` keeps one growing dictionary across calls (an IPC file, which holds one
    dictionary per column: later batches add deltas); otherwise each call starts a fresh one
    (Parquet: dictionaries are per row group; an IPC stream: a new dictionary per batch, as a
    stream of dictionary-encoded batches has, and no dictionary growing over the whole stream).

    Raises
    ------
    ValueError
        From :meth:`encode`, when a running dictionary outgrows its index type (the values of
        all batches together have more distinct values than, say, ``int8`` indices reach).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.dictionaries import Redictionary
    >>> redict = Redictionary(pa.dictionary(pa.int8(), pa.string()), running=True)
    >>> _ = redict.encode(pa.array(["a", "b"]))
    >>> redict.encode(pa.array(["c", "a"])).dictionary.to_pylist()
    ['a', 'b', 'c']
    """

    def __init__(self, type_: pa.DictionaryType, running: bool, name: str | None = None):
        self.type = type_
        self.running = running
        self.name = name  # the column's, for messages
        # the compute kernels run on large types (see the module docstring)
        self._work_type = (large_type(type_.value_type) if is_view(type_.value_type)
                           else type_.value_type)
        self.dictionary = pa.array([], type=self._work_type)

    def encode(self, values):
        """Encode one unit's values (an Array, or a ChunkedArray encoded chunk by chunk)."""
        if not self.running:
            self.dictionary = pa.array([], type=self._work_type)
        if isinstance(values, pa.ChunkedArray):
            return pa.chunked_array([self._encode(c) for c in values.chunks], type=self.type)
        return self._encode(values)

    def _encode(self, values: pa.Array) -> pa.DictionaryArray:
        values = values.cast(self._work_type)
        fresh = pc.unique(values.filter(pc.invert(pc.is_in(values, self.dictionary))).drop_null())
        if len(fresh):
            self.dictionary = pa.concat_arrays([self.dictionary, fresh.cast(self._work_type)])
        limit = _index_limit(self.type.index_type)
        if len(self.dictionary) > limit:
            raise ValueError(
                (f"column {self.name!r}: " if self.name is not None else "")
                + f"{len(self.dictionary)} distinct values need a dictionary larger than "
                f"{self.type.index_type} indices reach ({limit} values)"
                + (" over all the record batches of an Arrow IPC file, which holds one dictionary "
                   "per column: write an IPC stream (.arrows) or Parquet instead"
                   if self.running else ""))
        indices = pc.index_in(values, value_set=self.dictionary).cast(self.type.index_type)
        dictionary = self.dictionary
        if dictionary.type != self.type.value_type:
            dictionary = dictionary.cast(self.type.value_type)
        return pa.DictionaryArray.from_arrays(indices, dictionary, ordered=self.type.ordered)


def _index_limit(index_type: pa.DataType) -> int:
    """How many dictionary values indices of ``index_type`` can address."""
    bits = index_type.bit_width - (1 if pa.types.is_signed_integer(index_type) else 0)
    return 1 << bits
