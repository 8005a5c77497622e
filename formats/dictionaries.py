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

__all__ = ["FileDictionaries", "Redictionary", "plain_values"]


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
    ``restart=True`` (a read into memory, where a ChunkedArray's chunks may each have their own
    dictionary): a unit that a running dictionary cannot take as well starts a new one, which
    the units after it grow.

    Raises
    ------
    ValueError
        From :meth:`encode`, when a running dictionary outgrows its index type (the values of
        all batches together have more distinct values than, say, ``int8`` indices reach), and
        with ``restart`` or not running, when one unit's values alone do.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.dictionaries import Redictionary
    >>> redict = Redictionary(pa.dictionary(pa.int8(), pa.string()), running=True)
    >>> _ = redict.encode(pa.array(["a", "b"]))
    >>> redict.encode(pa.array(["c", "a"])).dictionary.to_pylist()
    ['a', 'b', 'c']
    >>> small = Redictionary(pa.dictionary(pa.int8(), pa.string()), running=True, restart=True)
    >>> _ = small.encode(pa.array([str(i) for i in range(100)]))
    >>> len(small.encode(pa.array([f"x{i}" for i in range(40)] + ["0"])).dictionary)  # not 140
    41
    """

    def __init__(self, type_: pa.DictionaryType, running: bool, name: str | None = None, *,
                 restart: bool = False):
        self.type = type_
        self.running = running
        self.restart = restart
        self.name = name  # the column's, for messages
        self.limit = _index_limit(type_.index_type)
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
        grown = self._grown(values, self.dictionary)
        if len(grown) > self.limit and self.restart and len(self.dictionary):
            grown = self._grown(values, grown.slice(0, 0))  # a new one from this unit on
        if len(grown) > self.limit:
            raise ValueError(
                (f"column {self.name!r}: " if self.name is not None else "")
                + f"{len(grown)} distinct values need a dictionary larger than "
                f"{self.type.index_type} indices reach ({self.limit} values)"
                + (" over all the record batches of an Arrow IPC file, which holds one dictionary "
                   "per column: write an IPC stream (.arrows) or Parquet instead"
                   if self.running and not self.restart else ""))
        self.dictionary = grown
        indices = pc.index_in(values, value_set=self.dictionary).cast(self.type.index_type)
        dictionary = self.dictionary
        if dictionary.type != self.type.value_type:
            dictionary = dictionary.cast(self.type.value_type)
        return pa.DictionaryArray.from_arrays(indices, dictionary, ordered=self.type.ordered)

    def _grown(self, values: pa.Array, dictionary: pa.Array) -> pa.Array:
        """``dictionary`` with the values it lacks appended, in order of first occurrence."""
        fresh = pc.unique(values.filter(pc.invert(pc.is_in(values, dictionary))).drop_null())
        return pa.concat_arrays([dictionary, fresh.cast(self._work_type)]) if len(fresh) else (
            dictionary)


def _index_limit(index_type: pa.DataType) -> int:
    """How many dictionary values indices of ``index_type`` can address."""
    bits = index_type.bit_width - (1 if pa.types.is_signed_integer(index_type) else 0)
    return 1 << bits


class FileDictionaries:
    """Keeps each top-level dictionary column of an IPC file output on one dictionary, which
    only grows (an IPC file holds one dictionary per column, extended by deltas).

    Pyarrow's file writer takes a batch's dictionary as a delta only when it is longer than the
    one written before, which it starts with, and that one is not empty; anything else is a
    replacement, which a file cannot hold. So a batch whose dictionary is a prefix of the one
    written (an empty one included) is given the written one (its indices stay valid), and
    batches before the first write whose dictionaries are empty are held back (up to
    ``hold_bytes``) and given the first non-empty ones: an IPC file reader hands every batch
    the final dictionary anyway.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.dictionaries import FileDictionaries
    >>> def batch(v): return pa.record_batch({"d": pa.array(v, pa.string()).dictionary_encode()})
    >>> keep = FileDictionaries()
    >>> keep.batches(batch([]))  # held back
    []
    >>> [b.column(0).dictionary.to_pylist() for b in keep.batches(batch(["x", "y"]))]
    [['x', 'y'], ['x', 'y']]
    >>> [b.column(0).dictionary.to_pylist() for b in keep.batches(batch(["x"]))]
    [['x', 'y']]
    """

    def __init__(self, hold_bytes: int = 64 << 20):
        self.hold_bytes = hold_bytes
        self._written: dict[int, pa.Array] = {}  # column index: the dictionary written last
        self._held: list[pa.RecordBatch] = []

    def batches(self, batch: pa.RecordBatch) -> list[pa.RecordBatch]:
        """The batches to write now for ``batch`` (none while it is held back)."""
        if self._written or not _columns(batch):
            return [*self.flush(), self._extend(batch)]
        self._held.append(batch)
        if (any(not len(batch.column(i).dictionary) for i in _columns(batch))
                and sum(b.nbytes for b in self._held) <= self.hold_bytes):
            return []
        return self.flush()

    def flush(self) -> list[pa.RecordBatch]:
        """The batches held back, given the dictionaries of the last one where theirs are
        prefixes of those (before the end batch, or a batch that is not held back)."""
        held, self._held = self._held, []
        if not held:
            return []
        last = held[-1]
        reference = {i: last.column(i).dictionary for i in _columns(last)}
        return [self._extend(_given(b, reference)) for b in held]

    def _extend(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        batch = _given(batch, self._written)
        for i in _columns(batch):
            self._written[i] = batch.column(i).dictionary
        return batch


def _columns(batch: pa.RecordBatch) -> list[int]:
    return [i for i, f in enumerate(batch.schema) if pa.types.is_dictionary(f.type)]


def _given(batch: pa.RecordBatch, dictionaries: dict) -> pa.RecordBatch:
    """``batch`` with ``dictionaries[i]`` for column ``i`` where its dictionary is a prefix."""
    for i, before in dictionaries.items():
        col = batch.column(i)
        if col.dictionary is before or not _is_prefix(col.dictionary, before):
            continue
        col = pa.DictionaryArray.from_arrays(col.indices, before, ordered=col.type.ordered,
                                             safe=False)
        batch = batch.set_column(i, batch.schema.field(i), col)
    return batch


def _is_prefix(dictionary: pa.Array, of: pa.Array) -> bool:
    return (len(dictionary) <= len(of)
            and (not len(dictionary) or of.slice(0, len(dictionary)).equals(dictionary)))
