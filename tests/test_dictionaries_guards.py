"""Each check of ``formats/dictionaries.py`` on an input that reaches it alone (the mutation
campaign's fourth round: changing any one of these checks passed the module's other tests).

The units here call the module's classes and functions directly, on small dictionaries whose
outcome is known: which dictionary a batch is given, which error is raised and what it says."""

from __future__ import annotations

import struct

import pyarrow as pa
import pytest

from fsstgpu.formats.dictionaries import (
    FileDictionaries,
    Redictionary,
    SentDictionaries,
    joined_table,
    plain_values,
)


def test_plain_values_of_dictionaries_of_other_value_types():
    """Only view dictionaries take the large-type detour; any other value type decodes as it
    is (the detour is for strings only: ``large_type`` refuses an int64 or a struct)."""
    ints = pa.array([3, None, 3, -1], pa.int64()).dictionary_encode()
    assert plain_values(ints).equals(pa.array([3, None, 3, -1], pa.int64()))
    structs = pa.array([{"a": 1}, {"a": 2}, {"a": 1}], pa.struct([("a", pa.int8())]))
    by_index = pa.DictionaryArray.from_arrays(pa.array([0, 1, 0], pa.int8()), structs.slice(0, 2))
    assert plain_values(by_index).equals(structs)
    chunked = pa.chunked_array([ints, ints.slice(1)])
    out = plain_values(chunked)
    assert isinstance(out, pa.ChunkedArray) and out.num_chunks == 2
    assert out.to_pylist() == [3, None, 3, -1, None, 3, -1] and out.type == pa.int64()
    plain = pa.array(["x"])
    assert plain_values(plain) is plain


def test_joined_table_of_tables_without_rows():
    """No batches at all (zero rows): the tables joined as they are, dictionary columns too."""
    schema = pa.schema([("s", pa.string()), ("d", pa.dictionary(pa.int8(), pa.string()))])
    empty = schema.empty_table()
    out = joined_table([empty, empty])
    assert out.num_rows == 0 and out.schema == schema
    assert all(c.num_chunks <= 1 for c in out.columns)


def _struct_unit(k: int, n: int, rows: int | None = None) -> pa.Table:
    """A table of one dictionary column of ``n`` distinct structs (int8 indices, the hash
    kernels take no struct values: joined by appending), its first ``rows`` rows."""
    values = pa.array([{"a": k * 1000 + i} for i in range(n)], pa.struct([("a", pa.int16())]))
    indices = pa.array(range(n), pa.int8())
    col = pa.DictionaryArray.from_arrays(indices, values)
    return pa.table({"d": col}).slice(0, n if rows is None else rows)


def test_struct_dictionaries_joined_are_appended_up_to_the_index_types_reach():
    out = joined_table([_struct_unit(0, 64), _struct_unit(1, 64)]).column("d").chunk(0)
    assert len(out.dictionary) == 128  # (int8 indices reach 128 values: exactly full)
    assert out.to_pylist()[63:65] == [{"a": 63}, {"a": 1000}]
    with pytest.raises(ValueError, match=r"column 'd': .* need 129 values together, more than "
                                         r"int8 indices reach \(128\)"):
        joined_table([_struct_unit(0, 64), _struct_unit(1, 65)])
    # a sliced unit: only the entries its indices use are appended, where all would not fit
    out = joined_table([_struct_unit(0, 100), _struct_unit(1, 100, rows=10)]).column("d")
    assert len(out.chunk(0).dictionary) == 110
    assert out.to_pylist()[100:] == [{"a": 1000 + i} for i in range(10)]
    # where all fit, the unused entries are appended too
    out = joined_table([_struct_unit(0, 64), _struct_unit(1, 20, rows=10)]).column("d")
    assert len(out.chunk(0).dictionary) == 84
    out = joined_table([_struct_unit(0, 64), _struct_unit(1, 64, rows=60)]).column("d")
    assert len(out.chunk(0).dictionary) == 128  # (exactly full: the 4 unused kept)


def _view_batch(values, indices) -> pa.RecordBatch:
    return pa.record_batch({"d": pa.DictionaryArray.from_arrays(
        pa.array(indices, pa.int8()), pa.array(values, pa.string_view()))})


def test_view_dictionaries_are_unified_by_their_large_type():
    """The hash kernels take no views: they are matched as large strings (not left as they
    are, which an IPC file's writer then refuses, nor appended whole where joined)."""
    keep = FileDictionaries()
    keep.batches(_view_batch(["x", "y"], [0, 1]))
    [out] = keep.batches(_view_batch(["z", "x", None], [0, 1, 2, None]))
    assert out.column(0).dictionary.to_pylist() == ["x", "y", "z"]
    assert out.column(0).type.value_type == pa.string_view()
    assert out.column(0).to_pylist() == ["z", "x", None, None]
    tables = [pa.Table.from_batches([_view_batch(["x", "y"], [0, 1])]),
              pa.Table.from_batches([_view_batch(["y", "z"], [1, 0])])]
    col = joined_table(tables).column("d").chunk(0)
    assert col.dictionary.to_pylist() == ["x", "y", "z"]
    assert col.to_pylist() == ["x", "y", "z", "y"]


def _batch(values, index=pa.int32()) -> pa.RecordBatch:
    col = pa.array(values, pa.string()).dictionary_encode()
    return pa.record_batch({"d": col.cast(pa.dictionary(index, pa.string()))})


def test_redictionary_encodes_a_chunked_array_chunk_by_chunk():
    redict = Redictionary(pa.dictionary(pa.int8(), pa.string()), running=True)
    out = redict.encode(pa.chunked_array([["b", "a"], ["c", None, "b"]], pa.string()))
    assert isinstance(out, pa.ChunkedArray) and out.num_chunks == 2
    assert out.type == pa.dictionary(pa.int8(), pa.string())
    assert out.chunk(0).dictionary.to_pylist() == ["b", "a"]
    assert out.chunk(1).dictionary.to_pylist() == ["b", "a", "c"]
    assert out.to_pylist() == ["b", "a", "c", None, "b"]


def test_file_dictionaries_write_an_empty_dictionary_at_once_after_the_first_write():
    keep = FileDictionaries()
    [first] = keep.batches(_batch(["x", "y"]))
    [out] = keep.batches(_batch([]))  # not held back: a dictionary was written
    assert out.column(0).dictionary.to_pylist() == ["x", "y"] and out.num_rows == 0
    assert keep.flush() == []
    # a batch without dictionaries is never held back
    plain = pa.record_batch({"s": pa.array(["a"], pa.string())})
    assert FileDictionaries().batches(plain) == [plain]


def test_file_dictionaries_hold_back_up_to_hold_bytes():
    empty = _batch([None] * 40)  # (rows, and an empty dictionary: all null)
    size = empty.nbytes
    assert size > 0
    keep = FileDictionaries(hold_bytes=2 * size)
    assert keep.batches(empty) == [] and keep.batches(empty) == []  # 2 * size: still held
    out = keep.batches(empty)  # 3 * size: all written, on their own (empty) dictionaries
    assert len(out) == 3 and all(len(b.column(0).dictionary) == 0 for b in out)
    assert len(FileDictionaries(hold_bytes=size - 1).batches(empty)) == 1
    keep = FileDictionaries(hold_bytes=size)
    assert keep.batches(empty) == []
    # the held batches are given the first non-empty dictionary
    out = keep.batches(_batch(["q"]))
    assert [b.column(0).dictionary.to_pylist() for b in out] == [["q"], ["q"]]
    assert [b.num_rows for b in out] == [40, 1]


def test_file_dictionaries_take_an_ordered_one_extending_one_entry_as_a_delta():
    def ordered(values, indices):
        return pa.record_batch({"d": pa.DictionaryArray.from_arrays(
            pa.array(indices, pa.int8()), pa.array(values, pa.string()), ordered=True)})

    keep = FileDictionaries()
    keep.batches(ordered(["lo"], [0]))
    [out] = keep.batches(ordered(["lo", "hi"], [1, 0]))  # (a delta: not refused as ordered)
    assert out.column(0).dictionary.to_pylist() == ["lo", "hi"]
    [out] = keep.batches(ordered(["lo", "hi"], [0]))  # (the same again, in other memory)
    assert out.column(0).to_pylist() == ["lo"]
    with pytest.raises(ValueError, match="column 'd': an ordered dictionary"):
        keep.batches(ordered(["hi", "lo", "mid"], [2]))


def test_sent_dictionaries_give_an_ordered_float_dictionary_its_tail():
    """A float dictionary whose start holds the one sent before, bit for bit, is given that
    one with its tail: not re-encoded (which an ordered dictionary refuses)."""
    def batch(values, indices):
        return pa.record_batch({"f": pa.DictionaryArray.from_arrays(
            pa.array(indices, pa.int8()), pa.array(values, pa.float64()), ordered=True)})

    sent = SentDictionaries()
    first = sent.batch(batch([0.0, -0.0], [0, 1]))
    out = sent.batch(batch([0.0, -0.0, 1.5, 1.5], [2, 1, 0, 3]))
    col = out.column(0)
    assert col.type.ordered and len(col.dictionary) == 4  # (the duplicate entry kept)
    assert [struct.pack("<d", v) for v in col.to_pylist()] == [
        struct.pack("<d", v) for v in (1.5, -0.0, 0.0, 1.5)]
    assert col.dictionary.slice(0, 2).equals(first.column(0).dictionary)


def _floats(values, indices, ordered=False) -> pa.DictionaryArray:
    return pa.DictionaryArray.from_arrays(pa.array(indices, pa.int8()),
                                          pa.array(values, pa.float64()), ordered=ordered)


def test_sent_dictionaries_unify_only_floats_the_writer_takes_for_the_same():
    sent = SentDictionaries()
    sent.batch(pa.record_batch({"f": _floats([0.0], [0])}))
    # taken for [0.0] + a delta: unified onto it by bits (-0.0 appended, 0.0 found)
    col = sent.batch(pa.record_batch({"f": _floats([-0.0, 0.0], [0, 1])})).column(0)
    assert [struct.pack("<d", v) for v in col.dictionary.to_pylist()] == [
        struct.pack("<d", v) for v in (0.0, -0.0)]
    assert [struct.pack("<d", v) for v in col.to_pylist()] == [
        struct.pack("<d", v) for v in (-0.0, 0.0)]
    # a dictionary the writer sends whole (a replacement) is left as it is
    col = sent.batch(pa.record_batch({"f": _floats([2.0, 3.0], [1, 0])})).column(0)
    assert col.dictionary.to_pylist() == [2.0, 3.0]


def test_sent_dictionaries_name_the_column_of_a_nested_leaf():
    """The refusals name the column (``key[0]``), not the leaf's child index."""
    ordered = pa.dictionary(pa.int8(), pa.float64(), ordered=True)

    def batch(values, indices):
        leaf = _floats(values, indices, ordered=True)
        return pa.record_batch({"first": pa.array([1] * len(indices), pa.int8()),
                                "s": pa.StructArray.from_arrays([leaf], names=["f"])})

    sent = SentDictionaries()
    sent.batch(batch([0.0], [0]))
    assert sent.batch(batch([0.0], [0])).schema.field(1).type.field(0).type == ordered
    with pytest.raises(ValueError, match="column 's': an ordered dictionary"):
        sent.batch(batch([-0.0, 1.5], [0, 1]))
    xy = pa.struct([("x", pa.float64())])

    def structs(values, indices):
        leaf = pa.DictionaryArray.from_arrays(pa.array(indices, pa.int8()),
                                              pa.array(values, xy), ordered=True)
        return pa.record_batch({"first": pa.array([1] * len(indices), pa.int8()),
                                "s": pa.StructArray.from_arrays([leaf], names=["f"])})

    sent = SentDictionaries()
    sent.batch(structs([{"x": 0.0}], [0]))
    with pytest.raises(ValueError, match="column 's': an ordered dictionary"):
        sent.batch(structs([{"x": -0.0}, {"x": 1.5}], [0, 1]))


def test_file_dictionaries_unify_up_to_exactly_the_index_types_reach():
    def batch(values, indices):
        return pa.record_batch({"d": pa.DictionaryArray.from_arrays(
            pa.array(indices, pa.int8()), pa.array(values, pa.string()))})

    keep = FileDictionaries()
    keep.batches(batch([f"a{i}" for i in range(100)], list(range(100))))
    # 28 new values, not an extension of the 100: unified onto 128 entries, all int8 reach
    [out] = keep.batches(batch([f"b{i}" for i in range(28)] + ["a0"], list(range(29))))
    assert len(out.column(0).dictionary) == 128
    keep = FileDictionaries()
    keep.batches(batch([f"a{i}" for i in range(100)], list(range(100))))
    # and with 5 unused entries more (a sliced batch's): those are left out, 128 again
    unused = [f"b{i}" for i in range(28)] + [f"u{i}" for i in range(5)]
    [out] = keep.batches(batch(unused, list(range(28))))
    assert len(out.column(0).dictionary) == 128
    assert out.column(0).to_pylist() == [f"b{i}" for i in range(28)]
    # where all fit, unused entries are kept (only dropped where all would not fit)
    keep = FileDictionaries()
    keep.batches(batch([f"a{i}" for i in range(100)], list(range(100))))
    [out] = keep.batches(batch([f"b{i}" for i in range(28)], list(range(25))))
    assert len(out.column(0).dictionary) == 128


def test_redictionary_bounds_views_and_fresh_dictionaries():
    full = Redictionary(pa.dictionary(pa.int8(), pa.string()), running=False)
    out = full.encode(pa.array([f"v{i}" for i in range(128)], pa.string()))
    assert len(out.dictionary) == 128  # (exactly what int8 indices reach)
    with pytest.raises(ValueError, match="129 distinct values"):
        full.encode(pa.array([f"v{i}" for i in range(129)], pa.string()))
    # not running: each call starts a fresh dictionary
    fresh = Redictionary(pa.dictionary(pa.int8(), pa.string()), running=False)
    fresh.encode(pa.array(["a", "b"], pa.string()))
    assert fresh.encode(pa.array(["c"], pa.string())).dictionary.to_pylist() == ["c"]
    # a view type comes back in its own type, not the large type it was matched in
    views = pa.dictionary(pa.int8(), pa.string_view())
    out = Redictionary(views, running=True).encode(pa.array(["x", None, "x"], pa.string_view()))
    assert out.type == views and out.to_pylist() == ["x", None, "x"]
    # restart: a running dictionary that reaches exactly the reach keeps growing
    grow = Redictionary(pa.dictionary(pa.int8(), pa.string()), running=True, restart=True)
    grow.encode(pa.array([f"a{i}" for i in range(100)], pa.string()))
    out = grow.encode(pa.array([f"b{i}" for i in range(28)], pa.string()))
    assert len(out.dictionary) == 128
