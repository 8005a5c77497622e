"""Strings nested in list, struct and map columns, FSST-coded leaf by leaf.

A column of type ``list<string>``, ``struct<a: string, b: int64>``, ``map<string, binary>``, ...
(``list``, ``large_list``, ``fixed_size_list``, ``struct`` and ``map``, nested to any depth) keeps
its nesting, and each string-like leaf (``string``, ``large_string``, ``string_view``,
``binary``, ``large_binary``, ``binary_view``; map keys too) becomes an ``fsstgpu.fsst``
extension array (``formats/arrow.md``, "fsst inside nested types"). Every value of one leaf is
compressed together, as one column (one training), whatever the number of chunks; the values
compressed are exactly those the parents reference: a sliced parent, or list offsets that do
not start at 0, is rebuilt with offsets from 0 over the values it uses, its validity kept.
Other leaves (numbers, dictionaries) and other containers (list views, unions, run-end
encoded arrays) are left as they are. pyarrow writes and reads the result in Parquet (the
extension types restored from the stored Arrow schema) and Arrow IPC.

:func:`fsst_type_of` / :func:`plain_type_of` map the types, :func:`compress_nested` and
:class:`NestedCompressor` (a file's row groups one after the other, each leaf with its own
training stream) compress, :func:`decode_nested` decodes.

>>> import pyarrow as pa
>>> from fsstgpu.formats.nested import compress_nested, decode_nested
>>> col = pa.array([["http://a.example", None], [], None, ["http://b.example"]])
>>> coded = compress_nested(col)
>>> str(coded.type.value_type)
'extension<fsstgpu.fsst[string]>'
>>> decode_nested(coded)[0].equals(col)
True
"""

from __future__ import annotations

import pyarrow as pa

from fsstgpu.columns import ColumnStream, compress_column
from fsstgpu.errors import CorruptDataError
from fsstgpu.formats.arrow import FsstType, is_fsst_type
from fsstgpu.formats.arrow_read import decode_column
from fsstgpu.formats.arrow_storage import GrowingTables, to_extension_array
from fsstgpu.formats.dictionary_encoding import dictionary_encoded
from fsstgpu.splits import DEFAULT_SPLIT_SIZE
from fsstgpu.types import is_supported, is_text, large_type

__all__ = ["NestedCompressor", "NestedTables", "child_fields", "compress_nested", "decode_nested",
           "empty_array", "fsst_leaf_type", "fsst_type_of", "has_fsst", "holds_fsst",
           "holds_fsst_dictionary", "holds_strings", "is_container", "map_dictionaries",
           "map_leaves", "map_value_types", "plain_type_of", "required_leaves", "with_children"]


# --------------------------------------------------------------------------- types
def is_container(type_: pa.DataType) -> bool:
    """Tell whether ``type_`` is a list, large list, fixed-size list, struct or map (not an
    extension type over one)."""
    return (pa.types.is_list(type_) or pa.types.is_large_list(type_)
            or pa.types.is_fixed_size_list(type_) or pa.types.is_struct(type_)
            or pa.types.is_map(type_)) and not isinstance(type_, pa.BaseExtensionType)


def child_fields(type_: pa.DataType) -> list[pa.Field]:
    """The child fields of a container type: a map's key and item, a struct's fields, a list's
    value field.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.nested import child_fields
    >>> [f.name for f in child_fields(pa.map_(pa.string(), pa.int8()))]
    ['key', 'value']
    """
    if pa.types.is_map(type_):
        return [type_.key_field, type_.item_field]
    if pa.types.is_struct(type_):
        return list(type_)
    return [type_.value_field]


def with_children(type_: pa.DataType, fields: list[pa.Field]) -> pa.DataType:
    """``type_``'s container around ``fields`` (names, nullability and metadata as given).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.nested import with_children
    >>> str(with_children(pa.list_(pa.string()), [pa.field("item", pa.binary())]))
    'list<item: binary>'
    """
    if pa.types.is_map(type_):
        return pa.map_(fields[0], fields[1], keys_sorted=type_.keys_sorted)
    if pa.types.is_struct(type_):
        return pa.struct(fields)
    if pa.types.is_fixed_size_list(type_):
        return pa.list_(fields[0], type_.list_size)
    if pa.types.is_large_list(type_):
        return pa.large_list(fields[0])
    return pa.list_(fields[0])


def _holds(type_: pa.DataType, leaf) -> bool:
    return is_container(type_) and any(leaf(f.type) or _holds(f.type, leaf)
                                        for f in child_fields(type_))


def holds_strings(type_: pa.DataType) -> bool:
    """Tell whether ``type_`` is a list / struct / map type nesting a plain string-like leaf.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.nested import holds_strings
    >>> holds_strings(pa.list_(pa.struct([("s", pa.binary())]))), holds_strings(pa.string())
    (True, False)
    """
    return _holds(type_, is_supported)


def holds_fsst(type_: pa.DataType) -> bool:
    """Tell whether ``type_`` is a list / struct / map type nesting an ``fsstgpu.fsst`` leaf.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.nested import fsst_type_of, holds_fsst
    >>> holds_fsst(fsst_type_of(pa.list_(pa.string()))), holds_fsst(pa.list_(pa.string()))
    (True, False)
    """
    return _holds(type_, is_fsst_type)


def holds_fsst_dictionary(type_: pa.DataType) -> bool:
    """Tell whether ``type_`` is a list / struct / map type nesting an ``fsstgpu.fsst`` leaf
    made from a dictionary (which :func:`decode_nested` dictionary-encodes again).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.nested import fsst_leaf_type, holds_fsst_dictionary
    >>> leaf = fsst_leaf_type(pa.dictionary(pa.int8(), pa.string()))
    >>> holds_fsst_dictionary(pa.list_(leaf)), holds_fsst_dictionary(pa.list_(pa.string()))
    (True, False)
    """
    return _holds(type_, lambda t: is_fsst_type(t) and t.index_type is not None)


def has_fsst(type_: pa.DataType) -> bool:
    """Tell whether ``type_`` is ``fsstgpu.fsst`` or nests it (a column to decode).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.nested import has_fsst
    >>> has_fsst(pa.struct([("n", pa.int8())]))
    False
    """
    return is_fsst_type(type_) or holds_fsst(type_)


def _map_type(type_: pa.DataType, leaf) -> pa.DataType:
    """``type_`` with each leaf type ``t`` replaced by ``leaf(t)`` (containers kept)."""
    if not is_container(type_):
        return leaf(type_)
    return with_children(type_, [f.with_type(_map_type(f.type, leaf))
                                  for f in child_fields(type_)])


def map_value_types(type_: pa.DataType, leaf) -> pa.DataType:
    """``type_`` with each leaf type ``t`` replaced by ``leaf(t)``, through containers and
    through dictionaries to their value types (names, nullability, metadata, index types and
    order kept; other types, unions and extension types among them, are leaves).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.nested import map_value_types
    >>> t = pa.dictionary(pa.int8(), pa.list_(pa.float32()))
    >>> str(map_value_types(t, lambda x: pa.int32() if pa.types.is_float32(x) else x))
    'dictionary<values=list<item: int32>, indices=int8, ordered=0>'
    """
    if pa.types.is_dictionary(type_):
        return pa.dictionary(type_.index_type, map_value_types(type_.value_type, leaf),
                             type_.ordered)
    if is_container(type_):
        return with_children(type_, [f.with_type(map_value_types(f.type, leaf))
                                     for f in child_fields(type_)])
    return leaf(type_)


def fsst_leaf_type(type_: pa.DataType, split_size: int = DEFAULT_SPLIT_SIZE) -> FsstType:
    """The ``fsstgpu.fsst`` type (version 4) replacing a string-like (or dictionary of
    string-like) column or leaf of type ``type_``.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.nested import fsst_leaf_type
    >>> t = fsst_leaf_type(pa.dictionary(pa.int8(), pa.string()))
    >>> str(t.value_type), str(t.index_type)
    ('string', 'int8')
    """
    if pa.types.is_dictionary(type_):
        return FsstType(pa.large_binary(), type_.value_type, None, split_size,
                        index_type=type_.index_type, ordered=type_.ordered)
    return FsstType(pa.large_binary(), type_, None, split_size)


def fsst_type_of(type_: pa.DataType, split_size: int = DEFAULT_SPLIT_SIZE) -> pa.DataType:
    """The type of a nested column with every string-like leaf ``fsstgpu.fsst`` (version 4).

    Field names, nullability and metadata are kept; other leaves are unchanged.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.nested import fsst_type_of
    >>> t = fsst_type_of(pa.map_(pa.string(), pa.int8()))
    >>> str(t.key_type), str(t.item_type)
    ('extension<fsstgpu.fsst[string]>', 'int8')
    """
    return _map_type(type_, lambda t: fsst_leaf_type(t, split_size) if is_supported(t) else t)


def plain_type_of(type_: pa.DataType) -> pa.DataType:
    """``type_`` with each ``fsstgpu.fsst`` leaf back to its original type (the inverse of
    :func:`fsst_type_of`); an ``fsstgpu.fsst`` type itself gives its original type.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.nested import fsst_type_of, plain_type_of
    >>> t = pa.struct([("a", pa.large_string()), ("b", pa.int64())])
    >>> plain_type_of(fsst_type_of(t)) == t
    True
    """
    return _map_type(type_, lambda t: t.original_type if is_fsst_type(t) else t)


# --------------------------------------------------------------------------- arrays
def empty_array(type_: pa.DataType) -> pa.Array:
    """An empty array of ``type_``, also when it nests an extension type (``pa.array([],
    type)`` and ``Schema.empty_table()`` refuse ``list<fsstgpu.fsst>``: "extension").

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.nested import empty_array, fsst_type_of
    >>> len(empty_array(fsst_type_of(pa.list_(pa.string()))))
    0
    """
    if pa.types.is_dictionary(type_):  # (older pyarrow's pa.array([], dict) gives int16 indices)
        return pa.DictionaryArray.from_arrays(pa.array([], type_.index_type),
                                              pa.array([], type_.value_type),
                                              ordered=type_.ordered)
    if not (is_container(type_) or isinstance(type_, pa.BaseExtensionType)):
        return pa.array([], type_)
    if isinstance(type_, pa.BaseExtensionType):
        return pa.ExtensionArray.from_storage(type_, empty_array(type_.storage_type))
    children = [empty_array(f.type) for f in child_fields(type_)]
    if pa.types.is_struct(type_):
        return pa.StructArray.from_arrays(children, fields=list(type_))
    if pa.types.is_fixed_size_list(type_):
        return _fixed_size_lists(children[0], type_, None)
    if pa.types.is_map(type_):
        return pa.MapArray.from_arrays(pa.array([0], pa.int32()), *children, type=type_)
    offsets = pa.array([0], pa.int64() if pa.types.is_large_list(type_) else pa.int32())
    cls = pa.LargeListArray if pa.types.is_large_list(type_) else pa.ListArray
    return cls.from_arrays(offsets, children[0], type=type_)


def _fixed_size_lists(values: pa.Array, type_: pa.DataType, like, mask=None) -> pa.Array:
    """Lists of ``type_`` over ``values`` with the length and nulls of ``like`` (none: no rows;
    ``mask``: ``like.is_null()`` where it has nulls, else None).
    ``FixedSizeListArray.from_arrays`` divides by the list size: at size 0 the process dies
    (SIGFPE, pyarrow 26), so those lists are built from ``like``'s validity buffer."""
    if type_.list_size:
        return pa.FixedSizeListArray.from_arrays(values, type=type_, mask=mask)
    if like is None:
        return pa.Array.from_buffers(type_, 0, [None], children=[values])
    return pa.Array.from_buffers(type_, len(like), like.buffers()[:1], null_count=like.null_count,
                                 offset=like.offset, children=[values])


def _walk(arr: pa.Array, leaf, wanted, key=(), *, decoding: bool = False) -> pa.Array:
    """``arr`` with each leaf array replaced by ``leaf(key, values)`` (``key``: the child
    indices down to it), visiting only the subtrees whose type ``wanted`` holds; a rebuilt
    parent has offsets from 0 over exactly the child values it references, and its nulls.
    ``decoding``: the leaves are fsst leaves being decoded (:func:`required_leaves`)."""
    type_ = arr.type
    if not is_container(type_):
        return leaf(key, arr)
    if not _holds(type_, wanted):
        return arr
    mask = arr.is_null() if arr.null_count else None
    if pa.types.is_struct(type_):
        children = [arr.field(i) for i in range(type_.num_fields)]  # sliced as arr is
        if decoding:
            children = required_leaves(arr, children)
        new = [_walk(c, leaf, wanted, (*key, i), decoding=decoding)
               for i, c in enumerate(children)]
        if decoding and arr.null_count:
            new = [_filled(c) if not f.nullable and is_fsst_type(f.type) else c
                   for f, c in zip(type_, new, strict=True)]
        fields = [f.with_type(c.type) for f, c in zip(type_, new, strict=True)]
        return pa.StructArray.from_arrays(new, fields=fields, mask=mask)
    if pa.types.is_fixed_size_list(type_):
        size = type_.list_size
        values = arr.values.slice(arr.offset * size, len(arr) * size)  # .values ignores offset
        new = _walk(values, leaf, wanted, (*key, 0), decoding=decoding)
        return _fixed_size_lists(
            new, with_children(type_, [type_.value_field.with_type(new.type)]), arr, mask)
    offsets = arr.offsets  # with arr's offset applied, not from 0; no nulls
    if len(offsets) == 0:
        offsets = pa.array([0], offsets.type)
    start, end = offsets[0].as_py(), offsets[-1].as_py()
    if start or offsets.offset:  # (from_arrays refuses sliced offsets beside a null mask)
        offsets = pa.array(offsets.to_numpy() - start, offsets.type)
    values = arr.values.slice(start, end - start)
    if pa.types.is_map(type_):
        keys = _walk(values.field(0), leaf, wanted, (*key, 0), decoding=decoding)
        items = _walk(values.field(1), leaf, wanted, (*key, 1), decoding=decoding)
        new_type = with_children(type_, [type_.key_field.with_type(keys.type),
                                          type_.item_field.with_type(items.type)])
        return pa.MapArray.from_arrays(offsets, keys, items, type=new_type, mask=mask)
    new = _walk(values, leaf, wanted, (*key, 0), decoding=decoding)
    new_type = with_children(type_, [type_.value_field.with_type(new.type)])
    cls = pa.LargeListArray if pa.types.is_large_list(type_) else pa.ListArray
    return cls.from_arrays(offsets, new, type=new_type, mask=mask)


def map_leaves(arr: pa.Array, leaf, wanted) -> pa.Array:
    """``arr`` with each leaf array whose type ``wanted`` accepts replaced by ``leaf(key,
    values)``, ``key`` the child indices down to it (a map's key 0 and item 1, a list's values
    0, a struct's fields in order); other leaves as they are, parents rebuilt around the new
    ones with their nulls (list offsets from 0). An array of no container type is a leaf
    itself (``key`` is ``()``).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.nested import map_leaves
    >>> col = pa.array([{"a": "x", "b": 1}, None])
    >>> map_leaves(col, lambda key, v: v.cast(pa.large_string()), pa.types.is_string).type
    StructType(struct<a: large_string, b: int64>)
    """
    return _walk(arr, lambda key, values: leaf(key, values) if wanted(values.type) else values,
                 wanted)


def map_dictionaries(arr: pa.Array, leaf, wanted=pa.types.is_dictionary) -> pa.Array:
    """``arr`` with each dictionary array in it (itself, a container's leaves, and the values of
    list views, which :func:`map_leaves` leaves alone) replaced by ``leaf(key, it)``, an
    array of as many entries, ``key`` as :func:`map_leaves` gives it (a list view's values 0).
    ``wanted``: the types of the leaves replaced, dictionaries unless told (not list views).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.nested import map_dictionaries
    >>> d = pa.array(["x", "y"]).dictionary_encode()
    >>> col = pa.ListViewArray.from_arrays(pa.array([1, 0], pa.int32()), [1, 2], d)
    >>> def leaf(key, v): return pa.DictionaryArray.from_arrays(v.indices, ["a", "b"])
    >>> map_dictionaries(col, leaf).to_pylist()
    [['b'], ['a', 'b']]
    """
    def visit(key, values):
        if wanted(values.type):
            return leaf(key, values)
        # a list view's entries may lie anywhere in its values: all of them, in their places
        new = map_leaves(values.values, lambda k, v: visit((*key, 0, *k), v), holds)
        large = pa.types.is_large_list_view(values.type)
        cls, make = ((pa.LargeListViewArray, pa.large_list_view) if large
                     else (pa.ListViewArray, pa.list_view))
        own = (pa.array(a.to_numpy(zero_copy_only=False), a.type)  # (no slices beside a mask)
               for a in (values.offsets, values.sizes))
        return cls.from_arrays(*own, new, type=make(values.type.value_field.with_type(new.type)),
                               mask=values.is_null() if values.null_count else None)

    def holds(type_):  # a wanted type, or a list view holding one (at any depth)
        if pa.types.is_list_view(type_) or pa.types.is_large_list_view(type_):
            return holds(type_.value_type) or _holds(type_.value_type, holds)
        return wanted(type_)

    return map_leaves(arr, visit, holds)


def required_leaves(arr: pa.StructArray, children: list) -> list:
    """``arr``'s ``children`` (its fields, sliced as it is) with the fsst leaves of required
    fields null under its null rows.

    Parquet stores nothing under a null parent and reads a required child there as a valid
    row of its storage struct whose codes are null, which the storage's checks refuse as a
    forged row; under the parent's nulls (``flatten``) the row is null, as it should be."""
    required = [i for i, f in enumerate(arr.type) if not f.nullable and is_fsst_type(f.type)]
    if not required or not arr.null_count:
        return children
    flat = arr.flatten()
    return [flat[i] if i in required else c for i, c in enumerate(children)]


def _filled(arr: pa.Array) -> pa.Array:
    """A required string field's decoded values with "" under its parent's nulls (pyarrow's
    Parquet writer refuses a null in a field not nullable, even under a null parent);
    dictionaries as they are."""
    if not arr.null_count or pa.types.is_dictionary(arr.type):
        return arr
    wide = large_type(arr.type)
    empty = "" if is_text(arr.type) else b""
    return arr.cast(wide).fill_null(pa.scalar(empty, wide)).cast(arr.type)


def _chunks(col) -> list[pa.Array]:
    return col.chunks if isinstance(col, pa.ChunkedArray) else [col]


def _like(col, chunks: list[pa.Array], type_: pa.DataType):
    """``chunks`` as ``col`` was: a ChunkedArray of them, or the one Array."""
    if isinstance(col, pa.ChunkedArray):
        return pa.chunked_array(chunks, type=type_)
    return chunks[0]


class NestedCompressor:
    """Compresses the string-like leaves of one nested column, piece after piece (a file's row
    groups): each leaf is one column, trained on all its values in a piece (with ``stream``,
    through a :class:`fsstgpu.columns.ColumnStream` per leaf, which keeps a table while it still
    fits the next pieces).

    Parameters
    ----------
    type_ : pyarrow.DataType
        The column's (plain) type.
    table : SymbolTable, optional
        One table for every leaf instead of training.
    sample_bytes, split_size, level
        As for :func:`fsstgpu.compress`.
    stream : bool
        Train through a ColumnStream per leaf (``blocks`` as it takes it).
    growing : bool
        For an Arrow IPC *file*: keep each leaf's tables on one growing dictionary
        (:class:`fsstgpu.formats.arrow_storage.GrowingTables`).
    encode : callable, optional
        What encodes the leaves' blocks (:func:`fsstgpu.columns.compress_column`'s ``encode``).

    Attributes
    ----------
    type : pyarrow.DataType
        The compressed column's type (:func:`fsst_type_of`).
    string_bytes, codes_bytes : int
        The leaves' string bytes and code bytes compressed so far.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.nested import NestedCompressor
    >>> work = NestedCompressor(pa.list_(pa.string()))
    >>> out = work.compress(pa.array([["ab", "cd"], ["ab"]]))
    >>> out.type == work.type, work.string_bytes
    (True, 6)
    """

    def __init__(self, type_: pa.DataType, *, table=None, sample_bytes=None,
                 split_size: int = DEFAULT_SPLIT_SIZE, stream: bool = False,
                 blocks: bool = True, growing: bool = False, level: str = "default",
                 encode=None):
        self.type = fsst_type_of(type_, split_size)
        self._level, self._encode = level, encode
        self.string_bytes = self.codes_bytes = 0
        self._table, self._sample_bytes, self._split_size = table, sample_bytes, split_size
        self._stream, self._blocks = stream, blocks
        self._streams: dict[tuple, ColumnStream] = {}
        self._growing: dict[tuple, GrowingTables] | None = {} if growing else None

    def compress(self, col):
        """``col`` (an Array or ChunkedArray of the column's type) with its string leaves
        compressed; a ChunkedArray keeps its chunks."""
        chunks = _chunks(col)
        found: dict[tuple, list[pa.Array]] = {}

        def collect(key, values):
            if is_supported(values.type):
                found.setdefault(key, []).append(values)
            return values

        for chunk in chunks:  # first every leaf's values, so that one leaf trains once
            _walk(chunk, collect, is_supported)
        coded = {key: iter(self._leaf(key, pieces)) for key, pieces in found.items()}

        def replace(key, values):
            return next(coded[key]) if is_supported(values.type) else values

        return _like(col, [_walk(chunk, replace, is_supported) for chunk in chunks], self.type)

    def _leaf(self, key: tuple, pieces: list[pa.Array]) -> list[pa.ExtensionArray]:
        """One leaf's values (one piece per chunk) compressed together, cut back into pieces."""
        values = pa.chunked_array(pieces, type=pieces[0].type)
        if self._stream:
            if key not in self._streams:
                self._streams[key] = ColumnStream(sample_bytes=self._sample_bytes,
                                                  blocks=self._blocks, table=self._table,
                                                  split_size=self._split_size,
                                                  level=self._level, encode=self._encode)
            carr = self._streams[key].compress(values)
        else:
            carr = compress_column(values, table=self._table, sample_bytes=self._sample_bytes,
                                   split_size=self._split_size, level=self._level,
                                   encode=self._encode)
        self.string_bytes += int(carr.uncompressed_bytes)
        self.codes_bytes += len(carr.codes)
        ext = to_extension_array(carr, ext_type=fsst_leaf_type(values.type, self._split_size))
        if self._growing is not None:
            ext = self._growing.setdefault(key, GrowingTables()).extend(ext)
        out, start = [], 0
        for piece in pieces:
            out.append(ext.slice(start, len(piece)))
            start += len(piece)
        return out


class NestedTables:
    """:class:`fsstgpu.formats.arrow_storage.GrowingTables` for every fsst leaf of a nested
    column copied into an Arrow IPC *file* (one dictionary per field, growing by deltas), as
    an fsst column copied from another file gets: :meth:`extend` takes one array per batch.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.nested import NestedTables, compress_nested
    >>> grow = NestedTables()
    >>> a = grow.extend(compress_nested(pa.array([["http://a.example/"] * 4])))
    >>> b = grow.extend(compress_nested(pa.array([["qwerty qwerty"] * 4])))
    >>> len(b.values.storage.field("table").dictionary), b.to_pylist()[0][0]
    (2, 'qwerty qwerty')
    """

    def __init__(self):
        self._growing: dict[tuple, GrowingTables] = {}

    def extend(self, arr: pa.Array) -> pa.Array:
        """``arr`` with each fsst leaf (version 4) given its growing list of tables."""
        def grow(key, values):
            if not (is_fsst_type(values.type) and values.type.tables_in_data):
                return values
            return self._growing.setdefault(key, GrowingTables()).extend(values)

        return _walk(arr, grow, is_fsst_type)


def compress_nested(col, *, table=None, sample_bytes=None, split_size=DEFAULT_SPLIT_SIZE,
                    level="default"):
    """A nested column (Array or ChunkedArray) with every string-like leaf ``fsstgpu.fsst``.

    Each leaf is compressed as one column (all its values together, trained as
    :func:`fsstgpu.compress` trains); the chunks, offsets' meaning, nulls and other leaves are
    kept. The result has type :func:`fsst_type_of` of ``col.type``.

    Parameters
    ----------
    col : pyarrow.Array or pyarrow.ChunkedArray
    table, sample_bytes, split_size, level
        As for :func:`fsstgpu.compress`.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.nested import compress_nested
    >>> col = pa.array([{"a": "x", "b": 1}, None], pa.struct([("a", pa.string()),
    ...                                                        ("b", pa.int64())]))
    >>> compress_nested(col).to_pylist()  # the fsst leaf decodes on to_pylist
    [{'a': 'x', 'b': 1}, None]
    """
    work = NestedCompressor(col.type, table=table, sample_bytes=sample_bytes,
                            split_size=split_size, level=level)
    return work.compress(col)


def decode_nested(col, device: str = "cpu"):
    """Decode every ``fsstgpu.fsst`` leaf of a nested column (Array or ChunkedArray).

    Returns ``(values, string_bytes)`` as :func:`fsstgpu.formats.arrow_read.decode_column`
    does: the column with its original type (:func:`plain_type_of`) and chunks, and the
    decoded bytes. ``device`` decodes each leaf there (the result is in host memory).

    Raises
    ------
    CorruptDataError
        When a leaf's storage or codes are damaged, or a parent does not fit its children.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.nested import compress_nested, decode_nested
    >>> col = pa.array([{"k": "v"}], pa.map_(pa.string(), pa.string()))
    >>> values, nbytes = decode_nested(compress_nested(col))
    >>> values.equals(col), nbytes
    (True, 2)
    """
    total = 0

    def decode(key, values):
        nonlocal total
        if not is_fsst_type(values.type):
            return values
        plain, nbytes = decode_column(values, device)
        total += nbytes
        if isinstance(plain, pa.ChunkedArray):  # a parent holds one child array
            plain = pa.concat_arrays(plain.chunks) if plain.num_chunks else \
                pa.array([], values.type.value_type)
        original = values.type.original_type
        if pa.types.is_dictionary(original):  # (more values than its indices: a ValueError)
            plain = dictionary_encoded(plain, original, f"a nested column's leaf {key}")
        return plain

    try:
        chunks = [_walk(chunk, decode, is_fsst_type, decoding=True) for chunk in _chunks(col)]
    except pa.ArrowException as exc:
        raise CorruptDataError(f"a nested column does not decode ({type(exc).__name__}: "
                               f"{exc})") from None
    return _like(col, chunks, plain_type_of(col.type)), total
