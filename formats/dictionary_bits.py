"""Dictionary values compared by their bits, where pyarrow compares them by value.

pyarrow's ``Array.equals`` and its IPC writer's dictionary comparison take -0.0 for 0.0 (also
inside a struct or a list) and, the writer, any NaN for any other: a dictionary given in
place of another so, or one the writer takes for the one it sent, reads back with other bits.
:mod:`fsstgpu.formats.dictionaries` asks these functions instead.

>>> import pyarrow as pa
>>> from fsstgpu.formats.dictionary_bits import same_values
>>> point = pa.struct([("x", pa.float64())])
>>> a, b = pa.array([{"x": 0.0}], point), pa.array([{"x": -0.0}], point)
>>> a.equals(b), same_values(a, b)
(True, False)
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

from fsstgpu.formats.nested import map_dictionaries, map_value_types

__all__ = ["concat_by_bits", "float_bits", "floats_taken_for_same", "holds_dense_union",
           "holds_dictionary", "holds_floats", "index_limit", "read_back_same",
           "refuse_union_float_dictionaries", "same_values"]

#: the integer type of each float width, for views of floats' bits
_FLOAT_BITS = {16: pa.int16(), 32: pa.int32(), 64: pa.int64()}


def same_values(a: pa.Array, b: pa.Array) -> bool:
    """Whether ``a`` and ``b`` hold the same nulls and valid values, floats compared by their
    bits, also inside structs, lists and maps (``equals`` takes -0.0 for 0.0: a batch given a
    dictionary so, of floats, read its 0.0 as -0.0; of structs of floats, {x: -0.0} as {x: 0.0};
    and no NaN for a NaN).

    What lies under a null is not compared, except where floats sit in a type this cannot view
    as integers (a union, a list view, an extension type): there the two must serialise alike.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.dictionary_bits import same_values
    >>> same_values(pa.array([0.0, None]), pa.array([0.0, None])), same_values(
    ...     pa.array([[0.0]]), pa.array([[-0.0]]))
    (True, False)
    """
    bits = _bits_type(a.type)
    if bits is None:
        return a.type == b.type and _serialised(a) == _serialised(b)
    if bits != a.type:
        a, b = a.view(bits), b.view(bits)
    return a.equals(b)


def _serialised(values: pa.Array) -> bytes:
    """``values`` copied into buffers of their own and serialised as a one-column batch."""
    return pa.record_batch([pa.concat_arrays([values])], names=["v"]).serialize().to_pybytes()


def _bits_type(type_: pa.DataType) -> pa.DataType | None:
    """``type_`` with each float in it (itself, a container's leaves, a dictionary's values) the
    integer of its width, for a view of the floats' bits; None where a float sits in a type
    this does not rebuild (a union, a list view, an extension type)."""
    if not holds_floats(type_):
        return type_
    bits = map_value_types(type_, float_bits)
    return None if holds_floats(bits) else bits


def float_bits(type_: pa.DataType) -> pa.DataType:
    """The integer type of a float type's width (``type_`` itself for any other type).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.dictionary_bits import float_bits
    >>> float_bits(pa.float16()), float_bits(pa.string())
    (DataType(int16), DataType(string))
    """
    return _FLOAT_BITS[type_.bit_width] if pa.types.is_floating(type_) else type_


def holds_floats(type_: pa.DataType) -> bool:
    """Tell whether ``type_`` is or holds a floating-point type (at any depth, dictionary values
    and extension storage included).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.dictionary_bits import holds_floats
    >>> holds_floats(pa.struct([("x", pa.list_(pa.float32()))])), holds_floats(pa.string())
    (True, False)
    """
    if pa.types.is_floating(type_):
        return True
    if pa.types.is_dictionary(type_):
        return holds_floats(type_.value_type)
    if isinstance(type_, pa.BaseExtensionType):
        return holds_floats(type_.storage_type)
    return any(holds_floats(type_.field(i).type) for i in range(type_.num_fields))


def read_back_same(before: pa.Array, now: pa.Array) -> bool:
    """Tell whether a reader holds dictionary ``now`` itself where pyarrow's IPC writer (deltas
    on) sent ``before`` last: the writer itself is asked (the two sent through an in-memory
    stream and read back), for values whose floats :func:`floats_taken_for_same` cannot reach.
    True where the writer cannot be asked (values of a type it refuses in this form).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.dictionary_bits import read_back_same
    >>> point = pa.struct([("x", pa.float64())])
    >>> read_back_same(pa.array([{"x": 0.0}], point),
    ...                pa.array([{"x": -0.0}, {"x": 1.5}], point))  # sent: [{x: 1.5}] only
    False
    """
    try:
        return same_values(_read_back(before, now), now)
    except (pa.ArrowException, ValueError, TypeError):
        return True


def _read_back(before: pa.Array, now: pa.Array) -> pa.Array:
    """The dictionary a reader holds for ``now`` where pyarrow's IPC writer sent ``before``
    last (:func:`read_back_same`)."""
    schema = pa.schema([("d", pa.dictionary(pa.int32(), now.type))])
    sink = pa.BufferOutputStream()
    no_rows = pa.array([], pa.int32())
    with ipc.new_stream(sink, schema,
                        options=ipc.IpcWriteOptions(emit_dictionary_deltas=True)) as w:
        for d in (before, now):  # (a batch of no rows still sends its dictionary)
            w.write_batch(pa.record_batch([pa.DictionaryArray.from_arrays(no_rows, d)],
                                          schema=schema))
    return list(ipc.open_stream(sink.getvalue()))[-1].column(0).dictionary


def floats_taken_for_same(a: pa.Array, b: pa.Array) -> bool:
    """Tell whether pyarrow's IPC writer takes dictionary ``a`` of floats for ``b`` (as long):
    it compares them with ``Equals``, NaNs equal, which takes -0.0 for 0.0 and any NaN for any
    other, and leaves what lies under a null alone.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.dictionary_bits import floats_taken_for_same
    >>> floats_taken_for_same(pa.array([-0.0, float("nan")]), pa.array([0.0, float("nan")]))
    True
    """
    if not a.is_valid().equals(b.is_valid()):
        return False
    dtype = np.dtype(f"float{a.type.bit_width}")
    x, y = (v.view(float_bits(a.type)).fill_null(0).to_numpy().view(dtype) for v in (a, b))
    return bool(np.all((x == y) | (np.isnan(x) & np.isnan(y))))


def concat_by_bits(arrays: list, name: str | None = None) -> pa.Array:
    """``pa.concat_arrays(arrays)``, the dictionaries inside them (a struct's field, a list's
    items, a dictionary's values') joined by bits: at each place, one dictionary that each
    array's there starts, or is a prefix of, or else is appended to (its indices moved past
    it). pyarrow's concatenation takes dictionaries equal by value (-0.0 for 0.0, a NaN for
    another) for the same and keeps the first's, so {x: [-0.0]} after {x: [0.0]} read 0.0.

    Raises
    ------
    ValueError
        Where a dictionary so joined needs more values than its index type reaches (naming
        column ``name``).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.dictionary_bits import concat_by_bits
    >>> def point(x): return pa.StructArray.from_arrays([pa.array([x]).dictionary_encode()],
    ...                                                 ["x"])
    >>> joined = concat_by_bits([point(0.0), point(-0.0)])
    >>> joined.to_pylist(), joined.field(0).dictionary.to_pylist()
    ([{'x': 0.0}, {'x': -0.0}], [0.0, -0.0])
    """
    if len(arrays) < 2 or not holds_dictionary(arrays[0].type):
        return pa.concat_arrays(arrays)
    found: dict[tuple, list] = {}  # the dictionary leaves at each key, array after array
    for arr in arrays:
        map_dictionaries(arr, lambda key, leaf: found.setdefault(key, []).append(leaf) or leaf)
    joined, starts = {}, {}
    for key, leaves in found.items():
        whole, starts[key] = leaves[0].dictionary, []
        for leaf in leaves:
            own, at = leaf.dictionary, 0
            if len(own) > len(whole) and same_values(own.slice(0, len(whole)), whole):
                whole = own
            elif not (len(own) <= len(whole) and same_values(whole.slice(0, len(own)), own)):
                whole, at = concat_by_bits([whole, own]), len(whole)
            starts[key].append(at)
        joined[key] = whole

    def moved(k):
        def leaf(key, arr):
            index_type, limit = arr.type.index_type, index_limit(arr.type.index_type)
            if len(joined[key]) > limit:
                raise ValueError((f"column {name!r}: " if name is not None else "")
                                 + f"dictionaries of {arr.type.value_type} joined need "
                                 f"{len(joined[key])} values, more than {index_type} indices "
                                 f"reach ({limit})")
            indices = pc.add(arr.indices.cast(pa.int64()), starts[key][k]).cast(index_type)
            return pa.DictionaryArray.from_arrays(indices, joined[key], ordered=arr.type.ordered,
                                                  safe=False)
        return leaf

    return pa.concat_arrays([map_dictionaries(arr, moved(k)) for k, arr in enumerate(arrays)])


def index_limit(index_type: pa.DataType) -> int:
    """How many dictionary values indices of ``index_type`` can address.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.dictionary_bits import index_limit
    >>> index_limit(pa.int8()), index_limit(pa.uint8())
    (128, 256)
    """
    bits = index_type.bit_width - (1 if pa.types.is_signed_integer(index_type) else 0)
    return 1 << bits


def refuse_union_float_dictionaries(schema: pa.Schema) -> None:
    """Refuse (ValueError naming the column) a column of an IPC output holding a dictionary of
    floats inside a union (a union's member, a dictionary of unions' values, at any depth):
    neither :func:`concat_by_bits` nor the writer's dictionary checks reach into a union, and
    pyarrow takes such a dictionary for one equal by value, so a batch's inner [-0.0] after
    [0.0] read back 0.0 with no error (the writer did not send it again; a concatenation kept
    the first).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.dictionary_bits import refuse_union_float_dictionaries
    >>> u = pa.dense_union([pa.field("x", pa.dictionary(pa.int32(), pa.float64()))])
    >>> try:
    ...     refuse_union_float_dictionaries(pa.schema([("u", u)]))
    ... except ValueError as e:
    ...     print(str(e)[:45])
    column 'u': a float dictionary inside a union
    """
    def found(type_: pa.DataType, in_union: bool) -> pa.DataType | None:
        if pa.types.is_dictionary(type_):
            if in_union and holds_floats(type_.value_type):
                return type_
            return found(type_.value_type, in_union)
        if isinstance(type_, pa.BaseExtensionType):
            return found(type_.storage_type, in_union)
        in_union = in_union or pa.types.is_union(type_)
        return next((t for t in (found(type_.field(i).type, in_union)
                                 for i in range(type_.num_fields)) if t is not None), None)

    for field in schema:
        inner = found(field.type, False)
        if inner is not None:
            raise ValueError(f"column {field.name!r}: a float dictionary inside a union "
                             f"({inner}) cannot keep its bits across an IPC output's batches "
                             "(pyarrow joins such dictionaries by value: -0.0 for 0.0); cast "
                             "or drop the column")


def holds_dense_union(type_: pa.DataType) -> bool:
    """Whether ``type_`` is or holds a dense union (through containers and extension types, not
    through a dictionary: its values are hashed apart).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.dictionary_bits import holds_dense_union
    >>> holds_dense_union(pa.list_(pa.dense_union([pa.field("x", pa.int8())])))
    True
    """
    if isinstance(type_, pa.BaseExtensionType):
        return holds_dense_union(type_.storage_type)
    return not pa.types.is_dictionary(type_) and (
        pa.types.is_union(type_) and type_.mode == "dense"
        or any(holds_dense_union(type_.field(i).type) for i in range(type_.num_fields)))


def holds_dictionary(type_: pa.DataType) -> bool:
    """Whether ``type_`` is or holds a dictionary (through containers, list views' too, and
    extension types' storage).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.dictionary_bits import holds_dictionary
    >>> holds_dictionary(pa.list_(pa.dictionary(pa.int8(), pa.string()))), holds_dictionary(
    ...     pa.list_(pa.string()))
    (True, False)
    """
    if isinstance(type_, pa.BaseExtensionType):
        return holds_dictionary(type_.storage_type)
    return pa.types.is_dictionary(type_) or any(holds_dictionary(type_.field(i).type)
                                                for i in range(type_.num_fields))
