"""Checks of ``formats/nested.py`` that no other test could fail (the mutation campaign's
``nested.py`` survivors, RELIABILITY.md "The mutation campaign, second round"): empty arrays of
each container valid in full, a subtree holding no string left as it is (an empty struct,
which a rebuild would give no rows), a required dictionary field under a null struct row; and
the fourth round's: fields, map flags and options kept and passed on, a column of no chunks."""

from __future__ import annotations

import pyarrow as pa
import pytest

import fsstgpu
from fsstgpu.columns import ColumnStream
from fsstgpu.formats import arrow_read, nested
from fsstgpu.formats.arrow_storage import to_extension_array
from fsstgpu.formats.nested import (
    NestedCompressor,
    NestedTables,
    compress_nested,
    decode_nested,
    empty_array,
    fsst_type_of,
    map_dictionaries,
    map_leaves,
)

I8 = pa.dictionary(pa.int8(), pa.string())


@pytest.mark.parametrize("type_", [
    pa.list_(pa.string()), pa.large_list(pa.binary()), pa.map_(pa.string(), pa.int8()),
    pa.list_(pa.string(), 2), pa.struct([("s", pa.string())]), I8,
    pa.list_(pa.map_(pa.large_string(), pa.list_(pa.int8()))),
], ids=str)
def test_empty_array_is_valid_in_full_for_each_container(type_):
    # offsets that are not [0] pass pyarrow's cheap checks on an empty array, not the full ones
    for t in (type_, fsst_type_of(type_)):
        arr = empty_array(t)
        arr.validate(full=True)
        assert len(arr) == 0 and arr.type == t
        if pa.types.is_map(t) or pa.types.is_list(t) or pa.types.is_large_list(t):
            assert arr.offsets.to_pylist() == [0]


def test_a_subtree_holding_no_string_is_left_as_it_is():
    # struct<> has no child to give its length: rebuilt, it would have no rows
    type_ = pa.struct([("s", pa.string()), ("e", pa.struct([])),
                       ("l", pa.list_(pa.struct([])))])
    col = pa.array([{"s": "ab", "e": {}, "l": [{}, {}]}, None,
                    {"s": None, "e": None, "l": None}, {"s": "c", "e": {}, "l": []}], type_)
    for part in (col, col.slice(1)):
        coded = compress_nested(part)
        assert coded.field(1).equals(part.field(1)) and len(coded) == len(part)
        values, _ = decode_nested(coded)
        assert values.equals(part)


def test_a_required_dictionary_field_under_a_null_struct_row():
    # the decoded dictionary leaf keeps its null under the null row ("" is for plain strings)
    type_ = pa.struct([pa.field("d", I8, nullable=False), ("n", pa.int8())])
    col = pa.StructArray.from_arrays(
        [pa.array(["a", "b", "a"]).dictionary_encode().cast(I8), pa.array([1, 2, 3], pa.int8())],
        fields=list(type_), mask=pa.array([False, True, False]))

    def leaf(key, values):
        return fsstgpu.compress_table(pa.table({"x": values}), columns=["x"]).column(0).chunk(0)

    values, nbytes = decode_nested(map_leaves(col, leaf, pa.types.is_dictionary))
    assert values.type == type_ and nbytes == 2  # the dictionary's "a" and "b"
    assert values.to_pylist() == col.to_pylist()
    assert values.field(0).to_pylist() == ["a", None, "a"]


def test_map_leaves_keys_name_each_leaf_by_its_child_indices():
    # callers find a leaf's type by its key (a fixed-size list's values are child 0, as a list's)
    type_ = pa.struct([("l", pa.list_(pa.string())), ("g", pa.large_list(pa.string())),
                       ("f", pa.list_(pa.string(), 1)), ("m", pa.map_(pa.string(), pa.string()))])
    col = pa.array([{"l": ["a"], "g": ["b"], "f": ["c"], "m": [("d", "e")]}], type_)
    keys = []
    map_leaves(col, lambda key, v: keys.append(key) or v, pa.types.is_string)
    assert keys == [(0, 0), (1, 0), (2, 0), (3, 0), (3, 1)]


def test_a_required_fsst_field_under_a_null_row_grows_its_tables_as_it_is():
    # its null under the parent's null row stays a null of the fsst leaf (nothing decoded)
    type_ = pa.struct([pa.field("s", pa.string(), nullable=False), ("n", pa.int8())])
    col = pa.StructArray.from_arrays([pa.array(["a", None, "b"]), pa.array([1, 2, 3], pa.int8())],
                                     fields=list(type_), mask=pa.array([False, True, False]))
    grown = NestedTables().extend(compress_nested(col))
    assert grown.type == fsst_type_of(type_) and grown.field(0).null_count == 1
    assert grown.to_pylist() == col.to_pylist()


@pytest.mark.parametrize("type_", [
    pa.list_(pa.string(), 0), pa.struct([("z", pa.list_(pa.binary(), 0)), ("s", pa.string())]),
], ids=str)
def test_fixed_size_lists_of_size_zero(type_):
    # FixedSizeListArray.from_arrays divides by the size: before, the process died (SIGFPE)
    rows = ([[], None, [], []] if pa.types.is_fixed_size_list(type_) else
            [{"z": [], "s": "a"}, None, {"z": None, "s": None}, {"z": [], "s": "b"}])
    col = pa.array(rows, type_)
    for part in (col, col.slice(1), col.slice(1, 0)):
        coded = compress_nested(part)
        coded.validate(full=True)
        values, _ = decode_nested(coded)
        assert values.equals(part) and values.to_pylist() == part.to_pylist()
    empty_array(fsst_type_of(type_)).validate(full=True)


def test_a_list_views_dictionary_has_the_key_a_lists_has():
    """A leaf's key is its path of child indices: a list view's one child is 0 as a list's is
    (batch_dictionaries and _rebuilt address a file's dictionaries by these keys; the
    campaign's survivors: a list view's child numbered 1 or -1)."""
    d = pa.array(["a", "b", "a"]).dictionary_encode()
    keys = {}

    def leaf(name):
        def seen(key, values):
            keys[name] = key
            return values
        return seen

    view = pa.ListViewArray.from_arrays(pa.array([1, 0], pa.int32()), pa.array([2, 1], pa.int32()),
                                        d)
    plain = pa.ListArray.from_arrays(pa.array([0, 2, 3], pa.int32()), d)
    nested = pa.StructArray.from_arrays([pa.array([1, 2]), view], names=["i", "v"])
    for name, col in (("view", view), ("list", plain), ("struct", nested)):
        assert map_dictionaries(col, leaf(name)).equals(col)
    assert keys == {"view": (0,), "list": (0,), "struct": (1, 0)}


def test_a_leaf_decoded_in_chunks_is_joined(monkeypatch):
    """A leaf past 2 GiB decodes as a ChunkedArray (decode_column cuts it); a list holds one
    child array, so the chunks are joined. Here a 4-byte limit stands for 2 GiB (the campaign's
    survivor: the join skipped, which no test of a small column could see)."""
    def small(values, device):
        return arrow_read.decode_column(values, device, max_chunk_bytes=4)

    monkeypatch.setattr(nested, "decode_column", small)
    col = pa.array([["abc", "de"], None, ["fgh", "ij", "k"], []], pa.list_(pa.string()))
    values, nbytes = decode_nested(compress_nested(col))
    assert values.equals(col) and nbytes == 11


@pytest.mark.parametrize("stream", [True, False])
def test_a_streams_leaf_keeps_its_table_from_call_to_call(stream):
    """``stream=True``: a leaf's ColumnStream lives across calls, so text the first call's
    table still fits is encoded with it; without it each call trains anew (the campaign's
    survivors: a new stream each call, or the stream used or skipped whatever ``stream``)."""
    type_ = pa.list_(pa.string())
    first = pa.array([[f"the quick brown fox jumps over the lazy dog {i % 10}"
                       for i in range(200)]], type_)
    then = pa.array([[f"the quick brown fox jumps over the lazy dog {i % 7}" for i in range(150)]
                     + ["the quick brown cat"] * 10], type_)
    compressor = NestedCompressor(type_, stream=stream)
    a, b = (compressor.compress(c).values.storage.field("table").dictionary for c in (first, then))
    assert a.equals(b) == stream
    assert decode_nested(compressor.compress(then))[0].equals(then)


def test_has_fsst_of_an_fsst_type_itself_and_of_nested_ones():
    # files.py picks the columns to decode by has_fsst: a top-level fsst column among them (the
    # fourth round's survivor: `or` as `and`, which only a nested fsst type passed)
    leaf = nested.fsst_leaf_type(pa.string())
    assert nested.has_fsst(leaf) and nested.has_fsst(fsst_type_of(pa.list_(pa.string())))
    assert not nested.has_fsst(pa.string()) and not nested.has_fsst(pa.list_(pa.string()))


NAMED = [pa.list_(pa.field("url", pa.string(), nullable=False, metadata={b"k": b"v"})),
         pa.large_list(pa.field("url", pa.binary(), nullable=False)),
         pa.list_(pa.field("n", pa.int8(), nullable=False))]


@pytest.mark.parametrize("type_", NAMED, ids=str)
def test_a_lists_value_field_keeps_its_name_nullability_and_metadata(type_):
    # a list rebuilt without type= gets pyarrow's "item" field, nullable, no metadata (the
    # fourth round's survivors: `type=` dropped in empty_array's and _walk's from_arrays)
    assert empty_array(type_).type == type_
    assert empty_array(fsst_type_of(type_)).type == fsst_type_of(type_)
    col = pa.array([["ab", "c"], None, []] if not pa.types.is_int8(type_.value_type)
                   else [[1, 2], None, []], type_).slice(1)
    coded = compress_nested(col)
    assert coded.type == fsst_type_of(type_)
    values, _ = decode_nested(coded)
    assert values.type == type_ and values.equals(col)


def test_compress_nested_passes_each_option_to_every_leaf():
    # each option gives the leaf the same table and codes as a plain column compressed with it
    # (the fourth round's survivors: sample_bytes=, split_size= or level= not passed on)
    values = pa.array([f"{'abcdefgh'[i % 8] * 3}-{i * 7919 % 100003:06d}-row"
                       for i in range(20000)], pa.string())
    col = pa.ListArray.from_arrays(pa.array([0, 10000, 20000], pa.int32()), values)
    default = compress_nested(col).values.storage
    for option in ({"sample_bytes": 512}, {"level": "fast"}, {"split_size": 1 << 14}):
        leaf = compress_nested(col, **option).values
        plain = fsstgpu.compress(values, **option)
        assert leaf.storage.field("table").dictionary[0].as_py() == plain.tables[0].to_bytes()
        assert leaf.type.split_size == plain.split_size == option.get("split_size", 4096)
        same = leaf.storage.field("codes").equals(default.field("codes"))
        assert not same or "split_size" in option
        assert decode_nested(compress_nested(col, **option))[0].equals(col)


@pytest.mark.parametrize("type_", [
    pa.map_(pa.string(), pa.int8(), keys_sorted=True),
    pa.map_(pa.field("k", pa.string(), nullable=False), pa.field("v", pa.binary(), nullable=False)),
    pa.list_(pa.dictionary(pa.int8(), pa.string(), ordered=True)),
], ids=str)
def test_a_maps_fields_and_an_ordered_dictionary_are_kept(type_):
    # the fourth round's survivors: keys_sorted=, ordered= or a map's type= not passed on
    # (pyarrow's defaults: keys unsorted, "key" and "value", an unordered dictionary)
    assert empty_array(type_).type == type_
    assert empty_array(fsst_type_of(type_)).type == fsst_type_of(type_)
    assert nested.plain_type_of(fsst_type_of(type_)) == type_
    leaf = fsst_type_of(type_)
    if pa.types.is_list(type_):  # an ordered dictionary is left as it is (its order is meaning)
        assert leaf == type_
        ordered = nested.fsst_leaf_type(type_.value_type)  # as a leaf type, its flag is kept
        assert ordered.ordered and ordered.original_type == type_.value_type
        col = pa.array([["a", "b"], None, ["a"]], pa.list_(pa.string())).cast(type_)
    else:
        assert leaf.keys_sorted == type_.keys_sorted
        col = pa.array([[("a", b"x" if pa.types.is_binary(type_.item_type) else 1)], None, []],
                       type_)
    coded = compress_nested(col)
    assert coded.type == leaf
    values, _ = decode_nested(coded)
    assert values.type == type_ and values.to_pylist() == col.to_pylist()


def test_a_list_views_value_field_keeps_its_name_and_nullability():
    # the fourth round's survivor: the list view rebuilt without type=, its field then "item"
    d = pa.array(["x", "y"]).dictionary_encode()
    type_ = pa.list_view(pa.field("v", d.type, nullable=False))
    col = pa.ListViewArray.from_arrays(pa.array([1, 0], pa.int32()), pa.array([1, 2], pa.int32()),
                                       d, type=type_)

    def leaf(key, v):
        return pa.DictionaryArray.from_arrays(v.indices, ["a", "b"])

    out = map_dictionaries(col, leaf)
    assert out.type == type_ and out.to_pylist() == [["b"], ["a", "b"]]


def test_a_chunked_column_of_no_chunks():
    # a ChunkedArray of no chunks needs its type given (the fourth round's survivor: type=
    # dropped in _like, where pyarrow cannot infer one from no chunks)
    type_ = pa.list_(pa.string())
    coded = compress_nested(pa.chunked_array([], type_))
    assert coded.type == fsst_type_of(type_) and coded.num_chunks == 0
    values, nbytes = decode_nested(coded)
    assert values.type == type_ and values.num_chunks == 0 and nbytes == 0


@pytest.mark.parametrize("stream", [False, True])
def test_the_encode_given_encodes_every_leaf(stream):
    # the fourth round's survivors: encode= not passed to compress_column or ColumnStream
    calls = []

    def encode(*args, **kwargs):
        calls.append(1)
        return fsstgpu.native.encode_blocks(*args, **kwargs)

    col = pa.array([{"a": "abc", "b": ["de", "fg"]}, None])
    work = NestedCompressor(col.type, encode=encode, stream=stream)
    values, _ = decode_nested(work.compress(col))
    assert values.equals(col) and len(calls) == 2


def test_a_streams_leaf_takes_each_option_as_a_column_stream_does():
    # stream=True: each leaf's ColumnStream is made with the compressor's options (the fourth
    # round's survivors: sample_bytes=, blocks=, table=, split_size= or level= not passed on)
    from_words = [f"word{i % 97} and then some more words {i % 13}" for i in range(6000)]
    values = pa.array(from_words + [f"{i * 7919 % 100003:08d}" for i in range(6000)])
    col = pa.ListArray.from_arrays(pa.array([0, 6000, 12000], pa.int32()), values)
    table = fsstgpu.compress(pa.array(["qwerty uiop"] * 50)).tables[0]

    def stored(leaf):
        return leaf.storage.field("codes"), leaf.storage.field("table").dictionary, leaf.type

    default = stored(NestedCompressor(col.type, stream=True).compress(col).values)
    for option in ({"sample_bytes": 512}, {"level": "fast"}, {"split_size": 1 << 14},
                   {"blocks": False}, {"table": table}):
        leaf = NestedCompressor(col.type, stream=True, **option).compress(col).values
        plain = ColumnStream(**option).compress(pa.chunked_array([values]))
        assert stored(leaf) == stored(to_extension_array(plain, ext_type=leaf.type))
        assert stored(leaf) != default
        assert decode_nested(NestedCompressor(col.type, stream=True, **option).compress(col))[
            0].equals(col)
