"""Strings inside list, struct and map columns FSST-coded (issue #23, item 5;
``formats/nested.py``): every string-like leaf an ``fsstgpu.fsst`` array, through memory,
compress_table / decompress_table, and compress_file / read_table / decompress_file /
open_reader for Parquet, Arrow IPC files and streams."""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

import fsstgpu
from fsstgpu import CorruptDataError
from fsstgpu.formats import (
    compress_file,
    decompress_file,
    device_reader,
    inspect_file,
    open_reader,
    parquet_compat,
    read_table,
    read_table_device,
)
from fsstgpu.formats.arrow import is_fsst_type
from fsstgpu.formats.files import NotCompressedError
from fsstgpu.formats.nested import (
    NestedCompressor,
    compress_nested,
    decode_nested,
    empty_array,
    fsst_type_of,
    holds_fsst,
    holds_strings,
    plain_type_of,
)
from fsstgpu.formats.nested_device import checked_leaves
from fsstgpu.formats.parquet_compat import READS_NULL_FIXED_SIZE_LISTS
from fsstgpu.formats.rowgroups import Source
from fsstgpu.formats.selection import ColumnTypeError
from fsstgpu.formats.sinks import write_table

WORDS = ["alpha", "beta", "gamma", "http://example.org/a/b", "", "delta epsilon"]


def _text(i: int) -> str:
    return f"{WORDS[i % len(WORDS)]}-{i % 13}"


def _lists(n, type_=None, inner=pa.string()):
    """Nulls in the parent, null and empty strings in the leaf, empty lists."""
    rows = [None if i % 7 == 3 else [] if i % 5 == 1 else
            [None if (i + j) % 6 == 0 else _text(i + j) for j in range(i % 4 + 1)]
            for i in range(n)]
    return pa.array(rows, type_ or pa.list_(inner))


def _structs(n):
    return pa.array([None if i % 9 == 4 else {"a": None if i % 4 == 0 else _text(i), "b": i}
                     for i in range(n)], pa.struct([("a", pa.string()), ("b", pa.int64())]))


def _list_of_structs(n):
    type_ = pa.list_(pa.struct([("s", pa.binary())]))
    return pa.array([None if i % 8 == 2 else [] if i % 8 == 5 else
                     [None if j == 1 else {"s": None if (i + j) % 3 == 0 else _text(i).encode()}
                      for j in range(i % 3 + 1)] for i in range(n)], type_)


def _maps(n, item=pa.string()):
    return pa.array([None if i % 6 == 1 else [] if i % 6 == 2 else
                     [(f"k{i % 5}", None if i % 4 == 0 else _text(i)), ("kk", _text(i + 1))]
                     for i in range(n)], pa.map_(pa.string(), item))


def _fixed(n):
    # null lists only where this pyarrow reads them back from Parquet (26 on; 25 cannot read
    # its own such files, and fsstgpu's writer refuses them there: test below)
    return pa.array([None if i % 5 == 0 and READS_NULL_FIXED_SIZE_LISTS
                     else [_text(i), None if i % 3 == 0 else _text(i + 2)]
                     for i in range(n)], pa.list_(pa.string(), 2))


def _deep(n):
    """list<struct<m: map<string, list<large_binary>>, t: string_view>>"""
    type_ = pa.list_(pa.struct([("m", pa.map_(pa.string(), pa.list_(pa.large_binary()))),
                                ("t", pa.string_view())]))
    return pa.array([None if i % 5 == 0 else
                     [{"m": [(f"k{i}", [_text(i).encode(), None])], "t": _text(i)},
                      None, {"m": None, "t": None}] for i in range(n)], type_)


COLUMNS = {
    "list<string>": lambda n: _lists(n),
    "large_list<large_string>": lambda n: _lists(n, pa.large_list(pa.large_string())),
    "list<binary_view>": lambda n: _lists(n, inner=pa.binary_view()),
    "struct<a: string, b: int64>": _structs,
    "list<struct<s: binary>>": _list_of_structs,
    "map<string, string>": _maps,
    "fixed_size_list<string, 2>": _fixed,
    "deep": _deep,
}


def _fsst_leaves(type_) -> int:
    """How many fsst leaves ``type_`` holds."""
    if is_fsst_type(type_):
        return 1
    return sum(_fsst_leaves(type_.field(i).type) for i in range(type_.num_fields))


def _strings(type_) -> int:
    """How many string-like leaves ``type_`` holds."""
    if type_ in (pa.string(), pa.large_string(), pa.string_view(), pa.binary(),
                 pa.large_binary(), pa.binary_view()):
        return 1
    return sum(_strings(type_.field(i).type) for i in range(type_.num_fields))


# ----------------------------------------------------------------------- in memory
@pytest.mark.parametrize("name", sorted(COLUMNS))
def test_every_nesting_round_trips_sliced_chunked_and_empty(name):
    col = COLUMNS[name](120)
    assert holds_strings(col.type)
    for arr in (col, col.slice(7), col.slice(13, 40), col.slice(120), col.slice(3, 0)):
        coded = compress_nested(arr)
        assert coded.type == fsst_type_of(arr.type) and holds_fsst(coded.type)
        assert _fsst_leaves(coded.type) == _strings(arr.type) > 0
        assert plain_type_of(coded.type) == arr.type
        coded.validate(full=True)
        back, nbytes = decode_nested(coded)
        back.validate(full=True)
        assert back.type == arr.type and back.equals(arr), name
        assert back.to_pylist() == arr.to_pylist()
    chunked = pa.chunked_array([col.slice(0, 50), col.slice(50, 0), col.slice(50)])
    coded = compress_nested(chunked)
    assert [len(c) for c in coded.chunks] == [50, 0, 70]
    back, _ = decode_nested(coded)
    assert back.equals(chunked) and back.num_chunks == 3


@pytest.mark.parametrize("type_", [pa.list_(pa.string()), pa.large_list(pa.binary()),
                                   pa.map_(pa.string(), pa.string()),
                                   pa.list_(pa.struct([("s", pa.string())]))])
def test_a_slice_starting_at_offset_zero_beside_nulls(tmp_path, type_):
    # a slice after empty or null lists starts at offset 0 but is still a slice: pyarrow's
    # from_arrays refused its offsets beside a null mask (row_group_rows=1, compress_table)
    col = pa.array([None, None, [], None], type_)
    for arr in (col.slice(1), col.slice(2), col.slice(3, 1)):
        back, _ = decode_nested(compress_nested(arr))
        assert back.equals(arr)
    table = pa.table({"l": col})
    pq.write_table(table, tmp_path / "in.parquet")
    compress_file(tmp_path / "in.parquet", tmp_path / "c.parquet", row_group_rows=1)
    assert read_table(tmp_path / "c.parquet", device="cpu").equals(table)


@pytest.mark.parametrize("fmt", ["parquet", "arrow", "arrows"])
def test_a_required_string_child_under_a_null_row(tmp_path, fmt):
    # Parquet reads a required child under a null parent as a valid row of null codes: the
    # file compress_file wrote was unreadable ("a valid string has a null 'codes' entry")
    field = pa.field("a", pa.string(), nullable=False)
    st = pa.StructArray.from_arrays([pa.array(["x", "", "y"])], fields=[field],
                                    mask=pa.array([False, True, False]))
    lst = pa.ListArray.from_arrays(pa.array([0, 2, 2, 3], pa.int32()), st)
    table = pa.table({"st": st, "l": lst})
    pq.write_table(table, tmp_path / "in.parquet")
    compress_file(tmp_path / "in.parquet", tmp_path / f"c.{fmt}")
    back = read_table(tmp_path / f"c.{fmt}", device="cpu")
    assert back.equals(table) and back.to_pylist() == table.to_pylist()
    if fmt == "parquet":  # the GPU read's host checks take it too
        col = pq.read_table(tmp_path / "c.parquet").column("st").chunk(0)
        assert [leaf.null_count for leaf in checked_leaves(col, col.type)] == [1]
    decompress_file(tmp_path / f"c.{fmt}", tmp_path / f"out.{fmt}", device="cpu")
    assert read_table(tmp_path / f"out.{fmt}", device="cpu").equals(table)


def test_only_the_referenced_leaf_values_are_compressed():
    """A sliced parent, and list offsets not starting at 0, reference a part of their values:
    exactly that part is compressed (and counted)."""
    values = pa.array(["unused-before"] * 50 + ["ab", "cd", None, "ef"] + ["unused-after"] * 50)
    offsets = pa.array([50, 52, 52, 54], pa.int32())
    lists = pa.ListArray.from_arrays(offsets, values, mask=pa.array([False, True, False]))
    assert lists.to_pylist() == [["ab", "cd"], None, [None, "ef"]]
    work = NestedCompressor(lists.type)
    coded = work.compress(lists)
    assert len(coded.values) == 4 and work.string_bytes == 6
    assert coded.offsets.to_pylist() == [0, 2, 2, 4]
    assert decode_nested(coded)[0].equals(lists)
    sliced = lists.slice(2)
    work = NestedCompressor(lists.type)
    coded = work.compress(sliced)
    assert len(coded.values) == 2 and work.string_bytes == 2
    assert decode_nested(coded)[0].to_pylist() == [[None, "ef"]]
    # a struct slice: its children are sliced with it
    st = _structs(30).slice(10, 5)
    work = NestedCompressor(st.type)
    coded = work.compress(st)
    assert len(coded.field(0)) == 5
    assert work.string_bytes == sum(len(s["a"]) for s in st.to_pylist() if s and s["a"])


def test_one_leaf_is_one_column_for_training():
    """The chunks of a column are compressed together: one table per leaf, not per chunk."""
    chunked = pa.chunked_array([_lists(40), _lists(40), _lists(40)])
    coded = compress_nested(chunked)
    dictionaries = {c.values.storage.field("table").dictionary[0].as_py()
                    for c in coded.chunks}
    assert len(dictionaries) == 1


def test_other_leaves_and_containers_are_left_alone():
    type_ = pa.struct([("n", pa.int32()), ("d", pa.dictionary(pa.int8(), pa.string())),
                       ("l", pa.list_(pa.float64()))])
    assert not holds_strings(type_)
    assert fsst_type_of(type_) == type_
    assert not holds_strings(pa.list_view(pa.string()))
    col = pa.array([{"n": 1, "d": "x", "l": [1.0]}], type_)
    assert compress_nested(col).equals(col)


def test_pyarrow_writes_and_reads_nested_fsst_in_parquet_and_ipc():
    """pyarrow stores extension types inside list / struct / map (map keys too) in Parquet,
    restoring them from the stored Arrow schema, and in IPC."""
    table = pa.table({name: make(60) for name, make in COLUMNS.items()})
    coded = fsstgpu.compress_table(table)
    assert all(holds_fsst(t) for t in coded.schema.types)
    assert is_fsst_type(coded.schema.field("map<string, string>").type.key_type)
    buf = io.BytesIO()
    pq.write_table(coded, buf, store_schema=True)
    buf.seek(0)
    back = pq.read_table(buf)
    assert back.schema == coded.schema and back.equals(coded)
    sink = pa.BufferOutputStream()
    with ipc.new_file(sink, coded.schema) as writer:
        writer.write_table(coded)
    back = ipc.open_file(sink.getvalue()).read_all()
    assert back.equals(coded)
    assert fsstgpu.decompress_table(back, device="cpu").equals(table)


# ----------------------------------------------------------------------- tables
def test_compress_table_compresses_nested_string_columns_by_default():
    table = pa.table({"l": pa.chunked_array([_lists(30), _lists(20)]), "s": _structs(50),
                      "m": _maps(50), "n": pa.array(range(50)),
                      "ints": pa.array([[i] for i in range(50)]),
                      "plain": [_text(i) for i in range(50)]})
    coded = fsstgpu.compress_table(table)
    assert [holds_fsst(t) for t in coded.schema.types] == [True, True, True, False, False,
                                                           False]
    assert is_fsst_type(coded.schema.field("plain").type)
    assert coded.column("l").num_chunks == 2
    assert fsstgpu.decompress_table(coded, device="cpu").equals(table)
    # columns= names nested columns too; the others are kept
    only = fsstgpu.compress_table(table, columns=["m"])
    assert holds_fsst(only.schema.field("m").type)
    assert only.column("l").equals(table.column("l"))
    assert fsstgpu.decompress_table(only, device="cpu").equals(table)
    with pytest.raises(ColumnTypeError, match="'ints'"):
        fsstgpu.compress_table(table, columns=["ints"])
    batch = table.combine_chunks().to_batches()[0]
    back = fsstgpu.decompress_table(fsstgpu.compress_table(batch), device="cpu")
    assert isinstance(back, pa.RecordBatch) and back.equals(batch)


def test_a_fixed_table_codes_every_leaf():
    table = fsstgpu.train(pa.array(WORDS * 10))
    col = _maps(40)
    coded = compress_nested(col, table=table)
    leaf = coded.values.field(1).storage.field("table").dictionary
    assert leaf.to_pylist() == [table.to_bytes()]
    assert decode_nested(coded)[0].equals(col)


# ----------------------------------------------------------------------- files
def _table(n: int = 300) -> pa.Table:
    short = {"list<string>": "l", "large_list<large_string>": "ll", "list<binary_view>": "lv",
             "struct<a: string, b: int64>": "st", "list<struct<s: binary>>": "ls",
             "map<string, string>": "m", "fixed_size_list<string, 2>": "fl", "deep": "deep"}
    cols = {short[name]: make(n) for name, make in COLUMNS.items()}
    cols["n"] = pa.array(range(n), pa.int64())
    cols["plain"] = pa.array([_text(i) for i in range(n)])
    return pa.table(cols)


def _read_plain(path) -> pa.Table:
    with Source(path) as source:
        return pa.concat_tables(list(source.units()))


@pytest.mark.parametrize("fmt", ["parquet", "arrow", "arrows"])
def test_files_round_trip(tmp_path, fmt):
    table = _table()
    if fmt == "parquet":  # pyarrow cannot write view leaves of lists to Parquet ("Slicing not
        table = table.drop_columns(["lv", "deep"])  # implemented for StringView")
    src, dst, out = (tmp_path / f"{n}.{fmt}" for n in ("in", "c", "out"))
    write_table(table, src, fmt, rows_per_unit=70)
    info = compress_file(src, dst)
    nested = [n for n in table.column_names if n not in ("n", "plain")]
    assert info["columns"] == [*nested, "plain"] and info["units"] == 5
    stored = _read_plain(dst)
    assert all(holds_fsst(stored.schema.field(n).type) for n in nested)
    assert info["string_bytes"] > 0 and info["codes_bytes"] > 0
    assert read_table(dst, device="cpu").equals(table)
    assert open_reader(dst).read_all().equals(table)
    if fmt != "arrows":  # (a stream has no row_groups=)
        assert read_table(dst, device="cpu", columns=["m", "n"], row_groups=[1]).equals(
            table.select(["m", "n"]).slice(70, 70))
    decompress_file(dst, out, device="cpu")
    back = _read_plain(out)
    assert back.equals(table) and not any(holds_fsst(t) for t in back.schema.types)
    # columns= may name a nested column alone
    info = compress_file(src, tmp_path / f"one.{fmt}", columns="st")
    assert info["columns"] == ["st"]
    assert read_table(tmp_path / f"one.{fmt}", device="cpu").equals(table)


@pytest.mark.parametrize("fmt", ["parquet", "arrow", "arrows"])
def test_an_empty_file_round_trips(tmp_path, fmt):
    """pyarrow cannot make an empty list<fsstgpu.fsst> by itself (Schema.empty_table(): the
    IPC writer's end batch of a file without batches raised "extension")."""
    table = _table(0).drop_columns(["lv", "deep"])
    write_table(table, tmp_path / f"in.{fmt}", fmt)
    compress_file(tmp_path / f"in.{fmt}", tmp_path / f"c.{fmt}")
    back = read_table(tmp_path / f"c.{fmt}", device="cpu")
    assert back.num_rows == 0 and back.schema == table.schema
    assert empty_array(fsst_type_of(table.schema.field("ls").type)).type == fsst_type_of(
        table.schema.field("ls").type)


@pytest.mark.parametrize("fmt", ["parquet", "arrow", "arrows"])
def test_an_empty_stream_of_extension_types_in_nested_columns(tmp_path, fmt):
    # read_table of an IPC stream without batches made its empty table with
    # Schema.empty_table(), which pyarrow refuses for list<uuid> or struct<uuid> ("extension")
    uuids = pa.ExtensionArray.from_storage(pa.uuid(), pa.array([], pa.binary(16)))
    table = pa.table({"st": pa.StructArray.from_arrays([uuids], ["c"]),
                      "l": pa.ListArray.from_arrays(pa.array([0], pa.int32()), uuids),
                      "s": pa.array([], pa.string())})
    with ipc.new_stream(tmp_path / "in.arrows", table.schema):
        pass
    assert read_table(tmp_path / "in.arrows", device="cpu").equals(table)
    compress_file(tmp_path / "in.arrows", tmp_path / f"c.{fmt}")
    assert read_table(tmp_path / f"c.{fmt}", device="cpu").equals(table)


def test_a_parquet_output_of_no_rows_refuses_a_type_parquet_lacks(tmp_path):
    # without rows, the refusal came from the footer's writer as pyarrow's
    # ArrowNotImplementedError, not the ValueError naming the column that rows get
    table = pa.table({"i": pa.array([], pa.month_day_nano_interval()),
                      "s": pa.array([], pa.string())})
    with ipc.new_stream(tmp_path / "in.arrows", table.schema):
        pass
    with pytest.raises(ValueError, match="column 'i' .month_day_nano_interval. cannot be"):
        compress_file(tmp_path / "in.arrows", tmp_path / "c.parquet")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.arrows"]


def test_view_leaves_of_an_ipc_input_go_to_parquet_compressed(tmp_path):
    """Plain, pyarrow cannot write them to Parquet; as fsst leaves (large_binary codes) it can,
    and the stored Arrow schema gives the views back."""
    table = _table(150)
    write_table(table, tmp_path / "in.arrow", "arrow", rows_per_unit=70)
    compress_file(tmp_path / "in.arrow", tmp_path / "c.parquet")
    assert read_table(tmp_path / "c.parquet", device="cpu").equals(table)


@pytest.mark.parametrize("leaf", [pa.array(["a", "b"]),
                                  pa.ExtensionArray.from_storage(pa.uuid(),
                                                                 pa.array([b"0" * 16] * 2,
                                                                          pa.binary(16)))])
def test_a_row_group_of_null_lists_of_fixed_size_lists(tmp_path, leaf):
    # the readable-back check flattened the lists, and pyarrow 26 has no builder for the
    # values of all-null lists of fixed-size lists of an extension type (an fsst leaf is one):
    # compress_file to Parquet raised ArrowNotImplementedError ("MakeBuilder")
    fsl = pa.FixedSizeListArray.from_arrays(leaf, 2)
    col = pa.ListArray.from_arrays(pa.array([0, 1], pa.int32()), fsl, mask=pa.array([True]))
    table = pa.table({"c": col})
    write_table(table, tmp_path / "in.arrows", "arrows")
    compress_file(tmp_path / "in.arrows", tmp_path / "c.parquet")
    assert read_table(tmp_path / "c.parquet", device="cpu").equals(table)
    decompress_file(tmp_path / "c.parquet", tmp_path / "out.parquet", device="cpu")
    assert read_table(tmp_path / "out.parquet", device="cpu").equals(table)


def test_a_row_group_of_null_fixed_size_lists_of_structs_of_strings(tmp_path):
    # the readable-back check flattened the fixed-size lists themselves, and pyarrow 26's
    # flatten() of all-null ones has no builder for values nesting an fsst leaf: compress_file
    # of such a row group to Parquet raised ArrowNotImplementedError ("MakeBuilder")
    table = pa.table({"c": pa.array([None, None], pa.list_(pa.struct([("s", pa.string())]), 2))})
    pq.write_table(table, tmp_path / "in.parquet")
    compress_file(tmp_path / "in.parquet", tmp_path / "c.parquet")
    assert read_table(tmp_path / "c.parquet", device="cpu").equals(table)


def test_a_required_fixed_size_list_under_a_null_struct_is_refused(tmp_path):
    # pyarrow 26.0.1 writes it to Parquet and cannot read it back ("Expected all lists to be
    # of size=2"): compress_file reported success for a file nobody could read
    def column(nullable):
        fsl = pa.FixedSizeListArray.from_arrays(pa.array(["a", "b", "c", "d"]), 2)
        return pa.StructArray.from_arrays([fsl], fields=[pa.field("c", fsl.type, nullable)],
                                          mask=pa.array([False, True]))
    write_table(pa.table({"x": column(False)}), tmp_path / "in.arrow", "arrow")
    with pytest.raises(ValueError, match="'x' holds a fixed-size list field that is not nul"):
        compress_file(tmp_path / "in.arrow", tmp_path / "c.parquet")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.arrow"]
    compress_file(tmp_path / "in.arrow", tmp_path / "c.arrow")  # IPC holds it
    assert read_table(tmp_path / "c.arrow", device="cpu").equals(pa.table({"x": column(False)}))
    fine = pa.table({"x": column(True)})
    write_table(fine, tmp_path / "fine.arrow", "arrow")
    compress_file(tmp_path / "fine.arrow", tmp_path / "fine.parquet")
    assert read_table(tmp_path / "fine.parquet", device="cpu").equals(fine)


@pytest.mark.parametrize("column", [
    pa.array([["a", "b"], None], pa.list_(pa.string(), 2)),
    pa.array([{"f": ["a", "b"]}, None], pa.struct([("f", pa.list_(pa.string(), 2))]))])
def test_parquet_output_pyarrow_cannot_read_back_is_refused(tmp_path, monkeypatch, column):
    """pyarrow < 26 writes null fixed-size lists (or ones under a null struct) to Parquet and
    cannot read them back: there the writer refuses, naming the column, and leaves nothing.
    (Run on every pyarrow, as if it were 25; on 25 the files really are unreadable.)"""
    monkeypatch.setattr(parquet_compat, "READS_NULL_FIXED_SIZE_LISTS", False)
    table = pa.table({"fl": column, "s": pa.array(["x", "y"])})
    write_table(table, tmp_path / "in.arrow", "arrow")
    with pytest.raises(ValueError, match="'fl' holds null fixed-size lists.*pyarrow 26"):
        compress_file(tmp_path / "in.arrow", tmp_path / "c.parquet")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.arrow"]
    fine = pa.table({"fl": pa.array([[["a", "b"]], None], pa.list_(pa.list_(pa.string(), 2)))})
    write_table(fine, tmp_path / "fine.arrow", "arrow")  # a null list above holds no entries
    compress_file(tmp_path / "fine.arrow", tmp_path / "fine.parquet")
    assert read_table(tmp_path / "fine.parquet", device="cpu").equals(fine)


def test_parquet_nested_fsst_leaves_get_the_fsst_treatment(tmp_path):
    table = pa.table({"l": _lists(2000), "m": _maps(2000), "n": pa.array(range(2000))})
    pq.write_table(table, tmp_path / "in.parquet")
    compress_file(tmp_path / "in.parquet", tmp_path / "c.parquet")
    rg = pq.ParquetFile(tmp_path / "c.parquet").metadata.row_group(0)
    leaves = {rg.column(j).path_in_schema: rg.column(j) for j in range(rg.num_columns)}
    for leaf in ("l.list.element", "m.key_value.key", "m.key_value.value"):
        for child in ("codes", "lengths", "cuts", "table"):
            assert not leaves[f"{leaf}.{child}"].is_stats_set, (leaf, child)
        assert "RLE_DICTIONARY" in leaves[f"{leaf}.table"].encodings
        assert "DELTA_LENGTH_BYTE_ARRAY" in leaves[f"{leaf}.codes"].encodings
        assert leaves[f"{leaf}.codes"].compression == "ZSTD"
    assert leaves["n"].is_stats_set
    info = {c["name"]: c for c in inspect_file(tmp_path / "c.parquet")["columns"]}
    assert info["l"]["codec"] == "fsst-nested" and info["l"]["type"] == "list<element: string>"
    assert info["l"]["parquet_codec"] == "zstd" and info["n"]["codec"] == "none"
    # the footer is fsstgpu's (schema CRC, row counts), with only nested fsst columns
    assert b"fsstgpu.row_groups" in pq.ParquetFile(tmp_path / "c.parquet").metadata.metadata


def test_an_arrow_file_of_many_batches_keeps_growing_tables(tmp_path):
    """An IPC file holds one dictionary per field: each nested leaf's tables grow by deltas."""
    parts = [pa.array([[f"{w} {i}"] for i in range(200)]) for w in ("alpha", "zz-9", "q")]
    table = pa.table({"l": pa.chunked_array(parts)})
    write_table(table, tmp_path / "in.arrows", "arrows", rows_per_unit=200)
    compress_file(tmp_path / "in.arrows", tmp_path / "c.arrow")
    assert read_table(tmp_path / "c.arrow", device="cpu").equals(table)


@pytest.mark.parametrize("out", ["arrow", "arrows", "parquet"])
def test_a_compressed_stream_compressed_again_copies_its_nested_leaves(tmp_path, out):
    """Copied into an IPC file, the nested leaves' per-batch tables are made one growing
    dictionary (written as they were, the writer refused the second batch's)."""
    parts = [pa.array([[f"{w} {i}"] for i in range(200)]) for w in ("alpha", "zz-9", "q")]
    table = pa.table({"l": pa.chunked_array(parts)})
    write_table(table, tmp_path / "in.arrows", "arrows", rows_per_unit=200)
    compress_file(tmp_path / "in.arrows", tmp_path / "c.arrows")
    info = compress_file(tmp_path / "c.arrows", tmp_path / f"cc.{out}")
    assert info["columns"] == []
    assert holds_fsst(_read_plain(tmp_path / f"cc.{out}").schema.field("l").type)
    assert read_table(tmp_path / f"cc.{out}", device="cpu").equals(table)


def test_decompress_file_refuses_a_plain_file_of_nested_strings(tmp_path):
    pq.write_table(pa.table({"l": _lists(10)}), tmp_path / "plain.parquet")
    with pytest.raises(NotCompressedError, match="l"):
        decompress_file(tmp_path / "plain.parquet", tmp_path / "o.parquet", device="cpu")
    assert not (tmp_path / "o.parquet").exists()


def test_real_text_in_lists_gets_smaller(dbtext_paths, tmp_path):
    lines = []
    for path in sorted(dbtext_paths)[:8]:
        lines += path.read_bytes().decode("utf-8", "replace").splitlines()[:4000]
    lists = pa.ListArray.from_arrays(pa.array(np.arange(0, len(lines) // 5 * 5 + 1, 5,
                                                        dtype=np.int32)),
                                     pa.array(lines[:len(lines) // 5 * 5]))
    table = pa.table({"lines": lists})
    pq.write_table(table, tmp_path / "in.parquet", compression="none")
    info = compress_file(tmp_path / "in.parquet", tmp_path / "c.parquet", parquet_codec="none")
    assert info["columns"] == ["lines"]
    assert info["string_bytes"] == sum(len(s.encode()) for s in lines[:len(lines) // 5 * 5])
    assert info["string_bytes"] / info["codes_bytes"] > 1.5
    assert (tmp_path / "c.parquet").stat().st_size < (tmp_path / "in.parquet").stat().st_size
    assert read_table(tmp_path / "c.parquet", device="cpu").equals(table)
    # before, the column was copied through (zstd pages): the fsst file is smaller than that
    pq.write_table(table, tmp_path / "zstd.parquet", compression="zstd")
    compress_file(tmp_path / "zstd.parquet", tmp_path / "cz.parquet")
    assert (tmp_path / "cz.parquet").stat().st_size < (tmp_path / "zstd.parquet").stat().st_size


def test_nested_column_the_device_layout_refuses_is_decoded_on_the_host(tmp_path):
    """Without a GPU here: a nested column holding a leaf the device layout does not take (a
    dictionary, which compress_nested leaves uncoded) is decoded on the CPU by read_table_device's
    placing step, every row group."""
    rows = [None if i % 7 == 3 else {"s": _text(i), "d": _text(i % 3)} for i in range(300)]
    col = pa.array(rows, pa.struct([("s", pa.string()),
                                    ("d", pa.dictionary(pa.int32(), pa.string()))]))
    table = pa.table({"st": col})
    write_table(table, tmp_path / "in.parquet", "parquet", rows_per_unit=100)
    compress_file(tmp_path / "in.parquet", tmp_path / "c.parquet")
    with Source(tmp_path / "c.parquet") as source:
        units = list(source.units())
        stored = source.restored("st", pa.chunked_array(
            [c for u in units for c in u.column("st").chunks]))
        got = device_reader.nested_column_to_device(source.path, "st", stored)
    assert got.equals(table.column("st")) and got.num_chunks == 3


@pytest.mark.gpu
def test_gpu_readers_give_nested_columns_decoded_on_the_device(tmp_path):
    """read_table_device places nested columns in device memory (DeviceNestedArray: containers
    and decoded leaves in Arrow layout, the row groups as chunks); device="gpu" decodes each
    leaf there and returns host data."""
    from fsstgpu.formats.nested_device import DeviceNestedArray

    table = _table(500).drop_columns(["lv", "deep"])
    write_table(table, tmp_path / "in.parquet", "parquet", rows_per_unit=200)
    compress_file(tmp_path / "in.parquet", tmp_path / "c.parquet")
    cols = read_table_device(tmp_path / "c.parquet")
    for name in ("l", "st", "m", "ls", "fl", "ll"):
        assert isinstance(cols[name], DeviceNestedArray), name
        got = cols[name].to_arrow()
        assert [len(c) for c in got.chunks] == [200, 200, 100]
        assert got.equals(table.column(name)), name
    assert cols["plain"].to_arrow().equals(table.column("plain"))
    assert read_table(tmp_path / "c.parquet", device="gpu").equals(table)
    coded = fsstgpu.compress_table(table)
    assert fsstgpu.decompress_table(coded, device="gpu").equals(table)


# ----------------------------------------------------------------------- damage
def _damaged(coded: pa.ListArray) -> pa.ListArray:
    """``coded`` with its leaf's string lengths far beyond what its codes can hold."""
    leaf = coded.values
    storage = leaf.storage
    lengths = pa.array(np.full(len(storage), 10**6, np.uint32))
    children = [storage.field(0), lengths, storage.field(2), storage.field(3)]
    bad = pa.StructArray.from_arrays(children, fields=list(storage.type),
                                     mask=storage.is_null() if storage.null_count else None)
    return pa.ListArray.from_arrays(coded.offsets, pa.ExtensionArray.from_storage(leaf.type, bad),
                                    type=coded.type)


def test_a_damaged_nested_leaf_is_corrupt_data(tmp_path):
    coded = compress_nested(pa.array([["abc", "abd"], ["xyz"]]))
    bad = _damaged(coded)
    with pytest.raises(CorruptDataError):
        decode_nested(bad)
    with pytest.raises(CorruptDataError):
        fsstgpu.decompress_table(pa.table({"l": bad}), device="cpu")
    # in a file: written by pyarrow (its page CRCs intact), refused by fsstgpu's reader
    pq.write_table(pa.table({"l": bad}), tmp_path / "bad.parquet", store_schema=True)
    with pytest.raises(CorruptDataError, match=r"bad\.parquet: row group 0, column 'l'"):
        read_table(tmp_path / "bad.parquet", device="cpu")
    with pytest.raises(CorruptDataError):
        decompress_file(tmp_path / "bad.parquet", tmp_path / "o.parquet", device="cpu")
    assert not (tmp_path / "o.parquet").exists()
    # a table that is not a table
    storage = coded.values.storage
    tables = pa.DictionaryArray.from_arrays(storage.field(3).indices,
                                            pa.array([b"FSTT-not-a-table"]))
    bad = pa.StructArray.from_arrays([storage.field(i) for i in range(3)] + [tables],
                                     fields=list(storage.type))
    bad = pa.ListArray.from_arrays(coded.offsets,
                                   pa.ExtensionArray.from_storage(coded.values.type, bad),
                                   type=coded.type)
    with pytest.raises(CorruptDataError):
        decode_nested(bad)


@pytest.mark.parametrize("nest", ["list", "struct", "map", "none"])
def test_inspect_refuses_a_damaged_nested_leaf(tmp_path, nest):
    """inspect_file checks a nested column's fsst leaves as it checks a top-level fsst column
    (``nest="none"``): it summed their sizes only, and called a file sound that every reader
    refuses."""
    bad = _damaged(compress_nested(pa.array([["abc", "abd"], ["xyz"]])))
    col = {"list": bad, "struct": pa.StructArray.from_arrays([bad.values], names=["s"]),
           "map": pa.MapArray.from_arrays(bad.offsets, pa.array(["k", "l", "m"]), bad.values),
           "none": bad.values}[nest]
    pq.write_table(pa.table({"c": col}), tmp_path / "bad.parquet", store_schema=True)
    with pytest.raises(CorruptDataError, match=r"bad\.parquet: unit 0, column 'c': the lengths"):
        inspect_file(tmp_path / "bad.parquet")


@pytest.mark.parametrize("nest", [True, False])
@pytest.mark.parametrize("out", ["parquet", "arrows"])
def test_joined_units_outgrowing_a_dictionary_are_refused_when_written(tmp_path, nest, out):
    """fsst columns made from ``dictionary<int8, string>`` (nested or not) of 100 distinct
    values a unit, 300 together: ``row_group_rows`` joined the units into one that no reader
    could dictionary-encode again (a ValueError on every read, the file written): refused."""
    dt = pa.dictionary(pa.int8(), pa.string())
    parts = [pa.array([f"value {i}" for i in range(k, k + 100)]).dictionary_encode().cast(dt)
             for k in (0, 100, 200)]
    coded = fsstgpu.compress_table(pa.table({"d": pa.chunked_array(parts)}), columns=["d"])
    coded = coded.column("d")
    offsets = pa.array(range(101), pa.int32())
    col = pa.chunked_array([pa.ListArray.from_arrays(offsets, c) for c in coded.chunks]
                           if nest else coded.chunks)
    src, dst = tmp_path / "in.parquet", tmp_path / f"out.{out}"
    pq.write_table(pa.table({"c": col}), src, row_group_size=100)
    compress_file(src, tmp_path / "kept.parquet")  # units kept: reads back
    assert read_table(tmp_path / "kept.parquet", device="cpu").column("c").num_chunks == 3
    with pytest.raises(ValueError, match="row_group_rows=300") as info:
        compress_file(src, dst, row_group_rows=300)
    assert not isinstance(info.value, CorruptDataError) and not dst.exists()


@pytest.mark.parametrize("fmt", ["arrow", "arrows"])
def test_an_empty_file_with_a_list_of_an_ordered_dictionary(tmp_path, fmt):
    # empty_array gave an ordered dictionary type an unordered array: a list of one was
    # "Mismatching list value type", and compress_file of a file of no batches failed on it
    ordered = pa.dictionary(pa.int8(), pa.int64(), ordered=True)
    for type_ in (ordered, pa.list_(ordered), pa.struct([("d", ordered)])):
        assert empty_array(type_).type == type_
    schema = pa.schema([("s", pa.string()), ("l", pa.list_(ordered))])
    with pa.ipc.new_file(tmp_path / "in.arrow", schema):
        pass
    compress_file(tmp_path / "in.arrow", tmp_path / f"c.{fmt}")
    back = read_table(tmp_path / f"c.{fmt}", device="cpu")
    assert back.num_rows == 0 and back.schema.field("l").type == pa.list_(ordered)


def _required_under_null_rows(container):
    field = pa.field("a", pa.string(), nullable=False)
    st = pa.StructArray.from_arrays([pa.array(["x", "", "y", "z"])], fields=[field],
                                    mask=pa.array([False, True, False, False]))
    if container == "fixed_size_list":
        return pa.FixedSizeListArray.from_arrays(st, 2)
    if container == "struct":
        return pa.StructArray.from_arrays([st, pa.array([1, 2, 3, 4], pa.int8())], names=["s", "n"])
    if container == "required_int":  # a required field of no string under a null struct row
        return pa.StructArray.from_arrays(
            [pa.array(["x", "", "y", "z"]), pa.array([1, 0, 3, 4], pa.int8())],
            fields=[pa.field("a", pa.string()), pa.field("n", pa.int8(), nullable=False)],
            mask=pa.array([False, True, False, False]))
    if container == "map_item":
        return pa.MapArray.from_arrays(pa.array([0, 2, 2, 4], pa.int32()),
                                       pa.array(["k", "l", "m", "n"]), st)
    return pa.MapArray.from_arrays(pa.array([0, 2, 4], pa.int32()),
                                   pa.StructArray.from_arrays([st], names=["s"]),
                                   pa.array([1, 2, 3, 4], pa.int8()))


@pytest.mark.parametrize("container", ["fixed_size_list", "map_item", "map_key", "struct",
                                       "required_int"])
def test_a_required_string_child_under_a_null_row_inside_other_containers(tmp_path, container):
    # the fourth round's survivors: a fixed-size list's or a map's children walked without
    # ``decoding``, so a required field under a null struct row came back null (as Parquet
    # stores it) where its writer refuses a null
    col = _required_under_null_rows(container)
    table = pa.table({"c": col})
    pq.write_table(table, tmp_path / "in.parquet")
    compress_file(tmp_path / "in.parquet", tmp_path / "c.parquet")
    assert read_table(tmp_path / "c.parquet", device="cpu").equals(table)
    decompress_file(tmp_path / "c.parquet", tmp_path / "out.parquet", device="cpu")
    assert pq.read_table(tmp_path / "out.parquet").equals(table)
