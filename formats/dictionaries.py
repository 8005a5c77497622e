"""Dictionary columns: decode one to its plain values, and encode plain values back.

An ``fsstgpu.fsst`` column made from a dictionary column stores the plain strings (the
dictionary's order is not kept); on the way back :class:`Redictionary` rebuilds a dictionary in
order of first occurrence, which is what ``dictionary_encode`` makes, so a column written that
way comes back exactly.

>>> import pyarrow as pa
>>> from fsstgpu.formats.dictionaries import Redictionary, plain_values
>>> col = pa.array(["b", "a", "b"]).dictionary_encode()
>>> Redictionary(col.type, running=False).encode(plain_values(col)).equals(col)
True
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["Redictionary", "plain_values"]


def plain_values(col):
    """The plain values of a column (dictionaries decoded), keeping its chunks.

    ``col`` is an Array or a ChunkedArray, and so is the result; nothing is concatenated (a
    column over 2 GiB comes in several chunks and would not fit one 32-bit-offset array).
    """
    if not pa.types.is_dictionary(col.type):
        return col
    if isinstance(col, pa.ChunkedArray):
        return pa.chunked_array([c.dictionary_decode() for c in col.chunks],
                                type=col.type.value_type)
    return col.dictionary_decode()


class Redictionary:
    """Re-encodes plain strings as a dictionary column, in order of first occurrence.

    ``running=True`` keeps one growing dictionary across calls (IPC: later batches add deltas);
    otherwise each call starts a fresh one (Parquet: dictionaries are per row group).
    """

    def __init__(self, type_: pa.DictionaryType, running: bool):
        self.type = type_
        self.running = running
        self.dictionary = pa.array([], type=type_.value_type)

    def encode(self, values):
        """Encode one unit's values (an Array, or a ChunkedArray encoded chunk by chunk)."""
        if not self.running:
            self.dictionary = pa.array([], type=self.type.value_type)
        if isinstance(values, pa.ChunkedArray):
            return pa.chunked_array([self._encode(c) for c in values.chunks], type=self.type)
        return self._encode(values)

    def _encode(self, values: pa.Array) -> pa.DictionaryArray:
        fresh = pc.unique(values.filter(pc.invert(pc.is_in(values, self.dictionary))).drop_null())
        if len(fresh):
            self.dictionary = pa.concat_arrays([self.dictionary, fresh.cast(self.type.value_type)])
        indices = pc.index_in(values, value_set=self.dictionary).cast(self.type.index_type)
        return pa.DictionaryArray.from_arrays(indices, self.dictionary, ordered=self.type.ordered)
