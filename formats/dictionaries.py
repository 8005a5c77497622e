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

from functools import partial

import pyarrow as pa
import pyarrow.compute as pc

from fsstgpu.formats.arrow import is_fsst_type
from fsstgpu.formats.dictionary_bits import (
    concat_by_bits,
    float_bits,
    floats_taken_for_same,
    holds_floats,
    index_limit,
    read_back_same,
    same_values,
)
from fsstgpu.formats.nested import (
    child_fields,
    is_container,
    map_dictionaries,
    map_leaves,
    plain_type_of,
)
from fsstgpu.types import is_view, large_type

__all__ = ["FileDictionaries", "NestedRedictionary", "Redictionary", "SentDictionaries",
           "batch_dictionaries", "joined_table", "plain_values"]

#: what :class:`SentDictionaries` re-encodes, said of a column's dictionary
_TAKEN_FOR_SAME = ("differs from the one sent before it only where pyarrow's IPC writer does "
                   "not look (-0.0 for 0.0, a NaN of other bits)")


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
        self.limit = index_limit(type_.index_type)
        self._work_type = _work_type(type_.value_type)
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
        grown = _grown(values, self.dictionary)
        if len(grown) > self.limit and self.restart and len(self.dictionary):
            grown = _grown(values, grown.slice(0, 0))  # a new one from this unit on
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



class NestedRedictionary:
    """:class:`Redictionary` for each ``fsstgpu.fsst`` leaf made from a dictionary in a nested
    column of type ``type_`` (each leaf, found by its child indices, with a dictionary of its
    own): :meth:`encode` takes the column decoded (:func:`~fsstgpu.formats.nested.decode_nested`,
    which dictionary-encodes such a leaf chunk by chunk) and re-encodes those leaves, ``running``
    (an IPC file: one growing dictionary a leaf) and ``restart`` as a Redictionary does. Other
    leaves, dictionaries copied as they were included, are kept.

    Attributes
    ----------
    limit : int
        The fewest values a leaf's index type reaches.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.dictionaries import NestedRedictionary
    >>> from fsstgpu.formats.nested import fsst_leaf_type
    >>> dt = pa.dictionary(pa.int8(), pa.string())
    >>> redict = NestedRedictionary(pa.list_(fsst_leaf_type(dt)), running=True)
    >>> _ = redict.encode(pa.array([["a", "b"]], pa.list_(dt)))
    >>> redict.encode(pa.array([["c"]], pa.list_(dt))).values.dictionary.to_pylist()
    ['a', 'b', 'c']
    """

    def __init__(self, type_: pa.DataType, running: bool, name: str | None = None, *,
                 restart: bool = False):
        self.type = type_
        self.running = running
        self._plain = plain_type_of(type_)
        self._leaves = {key: Redictionary(t.original_type, running, name, restart=restart)
                        for key, t in _fsst_dictionary_leaves(type_)}
        self.limit = min((r.limit for r in self._leaves.values()), default=1 << 63)

    def encode(self, values):
        """Re-encode the leaves of one unit's column (an Array, or a ChunkedArray encoded chunk
        by chunk)."""
        def leaf(key, arr):
            redict = self._leaves.get(key)
            return arr if redict is None else redict.encode(plain_values(arr))

        chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
        out = [map_leaves(c, leaf, pa.types.is_dictionary) for c in chunks]
        return (pa.chunked_array(out, type=self._plain) if isinstance(values, pa.ChunkedArray)
                else out[0])


def _fsst_dictionary_leaves(type_: pa.DataType, key: tuple = ()):
    """``(child indices, leaf type)`` of each fsst leaf made from a dictionary in ``type_``."""
    if is_fsst_type(type_) and type_.index_type is not None:
        yield key, type_
    elif is_container(type_):
        for i, f in enumerate(child_fields(type_)):
            yield from _fsst_dictionary_leaves(f.type, (*key, i))


def _work_type(value_type: pa.DataType) -> pa.DataType:
    """The type the compute kernels re-encode ``value_type`` values in: its large type for a
    view type (see the module docstring), else itself."""
    return large_type(value_type) if is_view(value_type) else value_type


def _grown(values: pa.Array, dictionary: pa.Array) -> pa.Array:
    """``dictionary`` with the ``values`` it lacks appended, in order of first occurrence."""
    fresh = _lacking(values, dictionary)
    return pa.concat_arrays([dictionary, fresh]) if len(fresh) else dictionary


class FileDictionaries:
    """Keeps each dictionary of an IPC file output on one dictionary, which only grows (an IPC
    file holds one dictionary per field, extended by deltas): a top-level dictionary column's,
    and each dictionary leaf's of a nested column (:func:`batch_dictionaries`).

    Pyarrow's file writer takes a batch's dictionary as a delta only when it is longer than the
    one written before, which it starts with, and that one is not empty; anything else is a
    replacement, which a file cannot hold. So a batch whose dictionary is a prefix of the one
    written (an empty one included) is given the written one (its indices stay valid); any
    other dictionary (a Parquet row group's own, an IPC stream's replacement) is unified with
    it: the written one with the values it lacks appended, the batch's indices re-encoded onto
    that (the same values and nulls; the order of entries may change, unused ones are dropped
    only where all would not fit), so that the writer takes a delta. Batches before the first
    write whose dictionaries are empty are held back (up to ``hold_bytes``) and given the first
    non-empty ones: an IPC file reader hands every batch the final dictionary anyway.

    Raises
    ------
    ValueError
        From :meth:`batches` and :meth:`flush`, naming the column, where the values of the
        batches so far need more dictionary entries than the index type reaches.

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
    >>> [out] = keep.batches(batch(["z", "x"]))  # unified: a delta of "z"
    >>> out.column(0).dictionary.to_pylist(), out.column(0).to_pylist()
    (['x', 'y', 'z'], ['z', 'x'])
    """

    def __init__(self, hold_bytes: int = 64 << 20):
        self.hold_bytes = hold_bytes
        self._written: dict[tuple, pa.Array] = {}  # batch_dictionaries' key: the one written last
        self._held: list[pa.RecordBatch] = []

    def batches(self, batch: pa.RecordBatch) -> list[pa.RecordBatch]:
        """The batches to write now for ``batch`` (none while it is held back)."""
        found = batch_dictionaries(batch)
        if self._written or not found:
            return [*self.flush(), self._extend(batch)]
        self._held.append(batch)
        if (any(not len(d) for d in found.values())
                and sum(b.nbytes for b in self._held) <= self.hold_bytes):
            return []
        return self.flush()

    def flush(self) -> list[pa.RecordBatch]:
        """The batches held back, given the dictionaries of the last one where theirs are
        prefixes of those (before the end batch, or a batch that is not held back)."""
        held, self._held = self._held, []
        if not held:
            return []
        reference = batch_dictionaries(held[-1])
        return [self._extend(_given(b, reference)) for b in held]

    def _extend(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        batch = _given(batch, self._written, unify=True)
        self._written.update(batch_dictionaries(batch))
        return batch


class SentDictionaries:
    """Gives each batch that pyarrow's IPC writer is to write (a stream's or a file's) the
    dictionaries a reader will hold, bit for bit, so that what the batch's checksum covers is
    what is read.

    The writer compares a batch's dictionary with the one it sent last by value, not by bits:
    ``Equals`` with NaNs equal, which takes -0.0 for 0.0 and any NaN for any other, and leaves
    what lies under a null alone. One of the same length taken for the same is not sent again;
    a longer one whose start is taken for it is sent as a delta, its tail only. A reader then
    holds the one sent before (and that tail) in place of the batch's own: a -0.0 read as 0.0,
    and the batch's checksum, of its own dictionary, refused. So, where the start of a
    dictionary holds the values of the one sent before, bit for bit
    (:func:`~fsstgpu.formats.dictionary_bits.same_values`), the batch is given that one (with
    the tail appended); where their values differ but the writer would take them for the same,
    the batch is re-encoded onto the one sent before, grown by the values it lacks
    (:func:`_unified`), which the writer sends as a delta; where the floats sit inside the
    values (a struct's fields, a list's items), which the hash kernels cannot match, the writer
    is asked what a reader would hold (:func:`~fsstgpu.formats.dictionary_bits.read_back_same`)
    and, where that is not the batch's own, the batch's whole dictionary is appended to the one
    sent before (:func:`_appended`). Any other dictionary
    the writer sends whole (a replacement; an IPC file, which cannot hold one, is kept on one
    dictionary by :class:`FileDictionaries` first).

    Raises
    ------
    ValueError
        From :meth:`batch`, naming the column, where such a dictionary is ordered or, grown, more
        than its index type reaches.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.dictionaries import SentDictionaries
    >>> def batch(v): return pa.record_batch({"f": pa.array(v).dictionary_encode()})
    >>> sent = SentDictionaries()
    >>> _ = sent.batch(batch([0.0]))
    >>> out = sent.batch(batch([-0.0, 1.5]))  # the writer would send [1.5] as a delta
    >>> out.column(0).dictionary.to_pylist(), out.column(0).to_pylist()
    ([0.0, -0.0, 1.5], [-0.0, 1.5])
    """

    def __init__(self):
        self._sent: dict[tuple, pa.Array] = {}  # batch_dictionaries' key: the one sent last

    def batch(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """``batch`` as it is to be written and hashed."""
        edits = {}
        found = batch_dictionaries(batch)
        for key, now in found.items():
            before = self._sent.get(key)
            if (before is None or len(now) < len(before) or not len(before)
                    or _same_buffers(now, before)):
                continue  # (sent whole, or not at all: a reader holds ``now``)
            head = now.slice(0, len(before))
            if same_values(head, before):
                edits[key] = partial(_tail_given, before=before)
            elif pa.types.is_floating(now.type):
                if floats_taken_for_same(head, before):
                    edits[key] = partial(_unified, before=before,
                                         name=batch.schema.field(key[0]).name, why="stream")
            elif holds_floats(now.type) and not read_back_same(before, now):
                # (floats inside structs or lists, which the hash kernels cannot match; values
                # without floats the writer compares as same_values just did)
                edits[key] = partial(_appended, before=before,
                                     name=batch.schema.field(key[0]).name)
        if edits:
            batch = _rebuilt(batch, edits)
            found = batch_dictionaries(batch)
        self._sent.update(found)
        return batch


def batch_dictionaries(batch: pa.RecordBatch) -> dict[tuple, pa.Array]:
    """The dictionary of each dictionary column of ``batch`` (key ``(column index,)``) and of
    each dictionary leaf of its nested columns, list views' too (``(column index, *child
    indices)``, as :func:`~fsstgpu.formats.nested.map_dictionaries` gives them).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.dictionaries import batch_dictionaries
    >>> d = pa.array(["x"]).dictionary_encode()
    >>> batch = pa.record_batch({"d": d, "l": pa.ListArray.from_arrays([0, 1], d)})
    >>> {k: v.to_pylist() for k, v in batch_dictionaries(batch).items()}
    {(0,): ['x'], (1, 0): ['x']}
    """
    found = {}

    def collect(i):
        def leaf(key, arr):
            found[(i, *key)] = arr.dictionary
            return arr
        return leaf

    for i, f in enumerate(batch.schema):
        if pa.types.is_dictionary(f.type):
            found[(i,)] = batch.column(i).dictionary
        else:  # (list views' dictionaries too: an IPC file's were replaced, which it refused)
            map_dictionaries(batch.column(i), collect(i))
    return found


def joined_table(tables: list) -> pa.Table:
    """``tables`` (of one schema) as one Table of one chunk a column: as
    ``pa.concat_tables(tables).combine_chunks()``, with each dictionary column's (and nested
    dictionary leaf's) chunks put on one dictionary by bits. pyarrow's concatenation takes
    dictionaries it finds equal by value (-0.0 for 0.0) for the same, keeping the first, and
    unifies no dictionary with a null entry nor of nested values; here each chunk's dictionary
    is unified onto the one of the chunks before it (:func:`_unified`, or appended to it).

    Raises
    ------
    ValueError
        Naming the column, where the dictionaries joined need more values than their index
        type reaches, or an ordered one's chunks have different dictionaries.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.dictionaries import joined_table
    >>> def unit(v): return pa.table({"f": pa.array(v).dictionary_encode()})
    >>> col = joined_table([unit([0.0]), unit([-0.0, None])]).column("f")
    >>> col.num_chunks, col.chunk(0).dictionary.to_pylist(), col.to_pylist()
    (1, [0.0, -0.0], [0.0, -0.0, None])
    """
    table = pa.concat_tables(tables)
    batches, final = [], {}
    for batch in table.to_batches():
        batch = _given(batch, final, unify=True, why="join")
        final.update(batch_dictionaries(batch))
        batches.append(batch)
    if not final:
        return table.combine_chunks()
    types = {}

    def indices(key, leaf):
        types[key] = leaf.type
        return leaf.indices

    def wrapped(i, key, leaf):
        return (leaf if key not in types else pa.DictionaryArray.from_arrays(
            leaf, final[(i, *key)], ordered=types[key].ordered))

    columns = []
    for i in range(table.num_columns):  # indices joined, then given the final dictionary
        types.clear()
        chunks = [map_dictionaries(b.column(i), indices) for b in batches]  # list views' too
        columns.append(map_dictionaries(pa.concat_arrays(chunks), partial(wrapped, i),
                                        pa.types.is_integer) if types else pa.concat_arrays(chunks))
    return pa.Table.from_arrays(columns, schema=table.schema)


def _given(batch: pa.RecordBatch, dictionaries: dict, *, unify: bool = False,
           why: str = "file") -> pa.RecordBatch:
    """``batch`` with ``dictionaries[key]`` for the dictionary at ``key``
    (:func:`batch_dictionaries`) where its own is a prefix of it; with ``unify``, a dictionary
    that is neither a prefix of that one nor extends it (the writer would take it for a
    replacement) is re-encoded onto it, grown by the values it lacks (:func:`_unified`, ``why``
    as it takes it)."""
    changed: dict[tuple, bool] = {}  # key: unified (True) or given ``dictionaries[key]``
    for key, now in batch_dictionaries(batch).items():
        before = dictionaries.get(key)
        if before is None or now is before:
            continue
        if _is_prefix(now, before):
            if len(now) < len(before) or len(key) == 1:
                changed[key] = False  # (cheap: no values touched)
        elif unify and not (len(now) > len(before) and (len(before) or why == "join")
                            and _is_prefix(before, now)):
            # (a longer one that starts with ``before`` is a delta; joined, one after an empty
            # ``before`` too, kept as it is: an ordered one was refused)
            changed[key] = True
    return _rebuilt(batch, {
        key: (partial(_unified, before=dictionaries[key], name=batch.schema.field(key[0]).name,
                      why=why) if unified else partial(_prefix_given, before=dictionaries[key]))
        for key, unified in changed.items()})


def _rebuilt(batch: pa.RecordBatch, edits: dict) -> pa.RecordBatch:
    """``batch`` with the dictionary column or leaf at each key of ``edits``
    (:func:`batch_dictionaries`) replaced by ``edits[key](it)``."""
    for i in sorted({key[0] for key in edits}):
        col = batch.column(i)

        def onto(key, leaf, i=i):
            edit = edits.get((i, *key))
            return leaf if edit is None else edit(leaf)

        new = map_dictionaries(col, onto)
        batch = batch.set_column(i, batch.schema.field(i), new)
    return batch


def _prefix_given(col: pa.DictionaryArray, before: pa.Array) -> pa.DictionaryArray:
    """``col`` with dictionary ``before``, of which its own is a prefix."""
    return pa.DictionaryArray.from_arrays(col.indices, before, ordered=col.type.ordered,
                                          safe=False)


def _unified(col: pa.DictionaryArray, before: pa.Array, name: str, *,
             why: str = "file") -> pa.DictionaryArray:
    """``col`` re-encoded onto ``before`` with the values of its dictionary that ``before``
    lacks appended (in their order; those its indices use only where all of them would not
    fit the index type): the same values and nulls, ``before`` a prefix of its dictionary.
    Floats are matched by their bits (-0.0 is not 0.0, a NaN only the NaN of its bits).

    A ValueError naming column ``name`` where that outgrows the index type or the dictionary is
    ordered (its order is its meaning), said (``why``) of an IPC file (``"file"``), of a
    dictionary that pyarrow's IPC writer takes for ``before`` (``"stream"``,
    :class:`SentDictionaries`) or of units joined (``"join"``, :func:`joined_table`). Where the
    compute kernels take no values of its type, ``col`` as it is (the writer then refuses it as
    a replacement, naming the column too), or joined, :func:`_appended` to ``before``."""
    _refuse_ordered(col, name, why)
    limit = index_limit(col.type.index_type)
    value_type = col.type.value_type
    own, old = _keyed(col.dictionary), _keyed(before)
    try:
        fresh = _lacking(own, old)
        if len(old) + len(fresh) > limit:  # unused entries (a sliced batch's) left out
            fresh = _lacking(own.take(pc.unique(col.indices.drop_null())), old)
        if len(old) + len(fresh) > limit:
            raise _outgrown(col, name, len(old) + len(fresh), why)
        grown = pa.concat_arrays([old, fresh]) if len(fresh) else old
        # (an entry of own that is null maps to a null index, or to before's null entry)
        indices = pc.take(pc.index_in(own, value_set=grown), col.indices)
    except pa.ArrowNotImplementedError:
        return _appended(col, before, name, why) if why == "join" else col
    dictionary = before if not len(fresh) else (
        pa.concat_arrays([before, _unkeyed(fresh, value_type)]))
    return pa.DictionaryArray.from_arrays(indices.cast(col.type.index_type), dictionary,
                                          ordered=col.type.ordered, safe=False)


def _appended(col: pa.DictionaryArray, before: pa.Array, name: str,
              why: str = "stream") -> pa.DictionaryArray:
    """``col`` with dictionary ``before`` followed by its own (its indices moved past
    ``before``; only the entries they use where all would not fit the index type): the same
    values, bit for bit, and the writer, finding ``before`` at the start, sends the rest as a
    delta. For values the hash kernels cannot match (:func:`_unified`); a ValueError naming
    column ``name`` where the dictionary is ordered or that outgrows the index type (``why``:
    :func:`_unified`'s)."""
    _refuse_ordered(col, name, why)
    own, indices = col.dictionary, col.indices
    limit = index_limit(col.type.index_type)
    if len(before) + len(own) > limit:  # unused entries (a sliced batch's) left out
        used = pc.unique(indices.drop_null())
        own, indices = own.take(used), pc.index_in(indices, value_set=used)
    if len(before) + len(own) > limit:
        raise _outgrown(col, name, len(before) + len(own), why)
    moved = pc.add(indices.cast(pa.int64()), len(before)).cast(col.type.index_type)
    return pa.DictionaryArray.from_arrays(moved, concat_by_bits([before, own], name),
                                          ordered=col.type.ordered, safe=False)


#: how :func:`_refuse_ordered` and :func:`_outgrown` say where dictionaries are joined (``why``)
_JOINED = "units joined into one row group / record batch (row_group_rows=)"


def _refuse_ordered(col: pa.DictionaryArray, name: str, why: str) -> None:
    """The ValueError of :func:`_unified` and :func:`_appended` for an ordered ``col``."""
    if col.type.ordered:  # (entries appended in another order would change what "<" means)
        raise ValueError(f"column {name!r}: an ordered dictionary column " + {
            "stream": f"whose dictionary {_TAKEN_FOR_SAME} cannot be sent as it is, nor grown "
                      "without changing its order: write Parquet instead",
            "join": f"whose {_JOINED} have different dictionaries cannot share one without "
                    "changing its order: leave out row_group_rows=",
        }.get(why, "whose record batches have different dictionaries cannot share one "
                   "dictionary without changing its order, and an Arrow IPC file holds one per "
                   "column: write an IPC stream (.arrows) or Parquet instead"))


def _outgrown(col: pa.DictionaryArray, name: str, needed: int, why: str) -> ValueError:
    """The ValueError of :func:`_unified` and :func:`_appended` where ``col``'s dictionary,
    grown, needs ``needed`` values, more than its index type reaches."""
    limit = index_limit(col.type.index_type)
    reach = f"more than {col.type.index_type} indices reach ({limit})"
    return ValueError(f"column {name!r}: " + {
        "stream": f"a record batch's dictionary {_TAKEN_FOR_SAME}, so it is sent as that one "
                  f"grown, which needs {needed} values, {reach}: write Parquet instead",
        "join": f"the dictionaries of the {_JOINED} need {needed} values together, {reach}: "
                "give a smaller row_group_rows= or leave it out",
    }.get(why, f"its record batches' dictionaries hold {needed} distinct values together, "
               f"{reach}: an Arrow IPC file holds one dictionary per column (growing by "
               "deltas); write an IPC stream (.arrows) or Parquet instead"))


def _keyed(values: pa.Array) -> pa.Array:
    """``values`` as the hash kernels are to match them: floats as integers of their bits (as
    floats, the kernels' equality takes -0.0 for 0.0 and any NaN for another, and they take no
    half floats), others in their :func:`_work_type`."""
    if pa.types.is_floating(values.type):
        return values.view(float_bits(values.type))
    return values.cast(_work_type(values.type))


def _unkeyed(values: pa.Array, value_type: pa.DataType) -> pa.Array:
    """:func:`_keyed` ``values`` back in ``value_type``."""
    return values.view(value_type) if pa.types.is_floating(value_type) else (
        values.cast(value_type))


def _lacking(values: pa.Array, dictionary: pa.Array) -> pa.Array:
    """The distinct non-null ``values`` that ``dictionary`` lacks, in order of first occurrence."""
    return pc.unique(values.filter(pc.invert(pc.is_in(values, value_set=dictionary)))
                     .drop_null())


def _is_prefix(dictionary: pa.Array, of: pa.Array) -> bool:
    if len(dictionary) > len(of):
        return False
    return not len(dictionary) or same_values(of.slice(0, len(dictionary)), dictionary)


def _same_buffers(a: pa.Array, b: pa.Array) -> bool:
    """Whether ``a`` and ``b`` are the same values in the same memory (nothing to compare)."""
    def layout(arr):
        return (arr.offset, len(arr), [None if buf is None else (buf.address, buf.size)
                                       for buf in arr.buffers()])
    return layout(a) == layout(b)


def _tail_given(col: pa.DictionaryArray, before: pa.Array) -> pa.DictionaryArray:
    """``col`` with ``before`` in place of the start of its dictionary, which holds the same
    values (:func:`~fsstgpu.formats.dictionary_bits.same_values`), the rest appended."""
    own = col.dictionary
    return _prefix_given(col, before if len(own) == len(before) else concat_by_bits(
        [before, own.slice(len(before))]))
