"""Parquet writing and reading of issue #20: types Parquet changes, options per leaf column,
damaged footers, and files rewritten by other writers (``formats/parquet_options.py``)."""

from __future__ import annotations

import datetime
import re

import numpy as np
import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from fsstgpu.cli.app import app
from fsstgpu.errors import CorruptDataError
from fsstgpu.formats import compress_file, decompress_file, inspect_file, read_table
from fsstgpu.formats.arrow import is_fsst_type
from fsstgpu.formats.parquet_options import leaf_paths

STRINGS = [f"http://host{i % 7}.example/path/{i % 13}/item" for i in range(60)]

# Types that Parquet reads back as others (date64 as date32, timestamp[s] as timestamp[ms],
# list items named "element", ...): the footer's CRC and the read must both cope.
TYPES = {
    "list": pa.array([["x"], ["y", None]] * 30),
    "large_list": pa.array([["x"], []] * 30, pa.large_list(pa.string())),
    "fixed_size_list": pa.array([[1, 2], [3, 4]] * 30, pa.list_(pa.int32(), 2)),
    "map": pa.array([[("k", 1)], [("j", 2), ("i", 3)]] * 30, pa.map_(pa.string(), pa.int32())),
    "nested_struct": pa.array([{"a": [1], "b": {"c": "x"}}, {"a": [], "b": None}] * 30,
                              pa.struct([("a", pa.list_(pa.int64())),
                                         ("b", pa.struct([("c", pa.string())]))])),
    "date64": pa.array([datetime.datetime(2020, 1, 1 + i % 20) for i in range(60)],
                       pa.date64()),
    "timestamp_s": pa.array(range(60), pa.timestamp("s")),
    "timestamp_s_tz": pa.array(range(60), pa.timestamp("s", tz="Europe/Paris")),
    "time32_s": pa.array(range(60), pa.time32("s")),
    "dictionary_int8_large_string": pa.array(["a", "b", "c"] * 20, pa.large_string())
    .dictionary_encode().cast(pa.dictionary(pa.int8(), pa.large_string())),
    "large_string_in_list": pa.array([["x"], ["yz"]] * 30, pa.list_(pa.large_string())),
    # no cast reaches into a list view: read_table called the file corrupt ("Unsupported cast")
    "list_view_of_dictionary_large_string": pa.array(
        [["a", None], None, [], ["b", "a"]] * 15,
        pa.list_view(pa.dictionary(pa.int16(), pa.large_string()))),
    "large_list_view_of_struct_of_date64": pa.array(
        [[{"d": datetime.datetime(2020, 1, 2)}], None] * 30,
        pa.large_list_view(pa.struct([("d", pa.date64())]))),
}


def _table(name: str) -> pa.Table:
    return pa.table({"s": STRINGS, name: TYPES[name]})


def _write_ipc(table: pa.Table, path, fmt: str) -> None:
    if fmt == "arrow":
        feather.write_feather(table, path, compression="uncompressed")
    else:
        with ipc.new_stream(path, table.schema) as w:
            w.write_table(table)


def _read_any(path) -> pa.Table:
    data = open(path, "rb").read(6)
    if data.startswith(b"PAR1"):
        return pq.read_table(path)
    if data.startswith(b"ARROW1"):
        return ipc.open_file(path).read_all()
    return ipc.open_stream(path).read_all()


# ----------------------------------------------------------------- finding 7: types
@pytest.mark.parametrize("name", sorted(TYPES))
def test_ipc_to_parquet_reads_back_and_round_trips_every_type(tmp_path, name):
    """IPC -> fsst Parquet was refused when read ("CRC32 mismatch: the file's schema was
    altered": the CRC was taken before Parquet changed the types); now it reads back with the
    input's types, and decompresses to IPC with them exactly."""
    table = _table(name)
    _write_ipc(table, tmp_path / "in.arrow", "arrow")
    compress_file(tmp_path / "in.arrow", tmp_path / "c.parquet")
    back = read_table(tmp_path / "c.parquet", device="cpu")
    assert back.schema.equals(table.schema, check_metadata=False), (back.schema, table.schema)
    assert back.equals(table)
    for suffix in (".arrow", ".arrows"):
        decompress_file(tmp_path / "c.parquet", tmp_path / f"out{suffix}", device="cpu")
        out = _read_any(tmp_path / f"out{suffix}")
        assert out.schema.equals(table.schema, check_metadata=False), (suffix, out.schema)
        assert out.equals(table)
    # to Parquet: what Parquet gives of the input (as pyarrow's own write and read)
    pq.write_table(table, tmp_path / "plain.parquet")
    decompress_file(tmp_path / "c.parquet", tmp_path / "out.parquet", device="cpu")
    assert pq.read_table(tmp_path / "out.parquet").equals(pq.read_table(tmp_path / "plain.parquet"))


def test_cli_inspect_and_decompress_of_a_list_column_from_feather(tmp_path):
    """The issue's reproduction: compress exited 0, inspect and decompress exited 4."""
    runner = CliRunner()
    feather.write_feather(pa.table({"s": ["a", "b"], "l": [["x"], ["y"]]}), tmp_path / "l.arrow")
    for args in (["compress", tmp_path / "l.arrow", tmp_path / "l.parquet"],
                 ["inspect", tmp_path / "l.parquet"],
                 ["decompress", tmp_path / "l.parquet", tmp_path / "o.arrow"]):
        result = runner.invoke(app, [str(a) for a in args])
        assert result.exit_code == 0, (args, result.stdout, result.stderr)
    assert ipc.open_file(tmp_path / "o.arrow").read_all().equals(
        feather.read_table(tmp_path / "l.arrow"))


def test_altered_arrow_schema_types_are_still_refused(tmp_path):
    """The CRC still covers the stored Arrow schema (the types read back are cast to it): a
    footer whose schema pyarrow rebuilds differently from the stored one is corrupt."""
    table = _table("timestamp_s")
    _write_ipc(table, tmp_path / "in.arrow", "arrow")
    compress_file(tmp_path / "in.arrow", tmp_path / "c.parquet")
    data = (tmp_path / "c.parquet").read_bytes()
    footer = int.from_bytes(data[-8:-4], "little")
    rng = np.random.default_rng(5)
    wrong = 0
    for k, pos in enumerate(rng.choice(np.arange(len(data) - 8 - footer, len(data) - 8), 200,
                                       replace=False)):
        bad = bytearray(data)
        bad[pos] ^= 1 << int(rng.integers(0, 8))
        (tmp_path / f"b{k}.parquet").write_bytes(bytes(bad))
        try:
            out = read_table(tmp_path / f"b{k}.parquet", device="cpu")
        except (CorruptDataError, OSError, ValueError):
            continue
        wrong += not (out.equals(table) and out.schema.equals(table.schema))
    assert wrong == 0


# ----------------------------------------------------------------- finding 8: options per leaf
@pytest.mark.parametrize("type_", [
    pa.list_(pa.string()), pa.large_list(pa.int8()), pa.list_(pa.int32(), 2),
    pa.map_(pa.string(), pa.list_(pa.int8())),
    pa.struct([("x", pa.int8()), ("l", pa.list_(pa.struct([("y", pa.string())])))]),
    pa.dictionary(pa.int8(), pa.string()), pa.string(),
])
def test_leaf_paths_are_pyarrows(tmp_path, type_):
    value = {
        "list<item: string>": [["a"]], "large_list<item: int8>": [[1]],
        "fixed_size_list<item: int32>[2]": [[1, 2]],
    }.get(str(type_))
    arr = pa.array(value, type_) if value is not None else pa.nulls(1, type_)
    pq.write_table(pa.table({"c.d": arr}), tmp_path / "t.parquet")
    rg = pq.ParquetFile(tmp_path / "t.parquet").metadata.row_group(0)
    assert leaf_paths(pa.field("c.d", type_)) == [rg.column(j).path_in_schema
                                                  for j in range(rg.num_columns)]


def _nested_table(n: int = 3000) -> pa.Table:
    words = [f"tag{i % 50}-{i % 7}" for i in range(n)]
    return pa.table({
        "s": [f"line {i} of the text, word {i % 97}" for i in range(n)],
        "tags": pa.array([[w, w[::-1]] for w in words]),
        "point": pa.array([{"x": i % 10, "name": words[i]} for i in range(n)]),
        "m": pa.array([[(words[i], i)] for i in range(n)], pa.map_(pa.string(), pa.int64())),
    })


def _leaves(path) -> dict:
    rg = pq.ParquetFile(path).metadata.row_group(0)
    return {rg.column(j).path_in_schema: rg.column(j) for j in range(rg.num_columns)}


def test_nested_columns_keep_codec_dictionary_and_statistics(tmp_path):
    """Options were keyed by top-level name, which pyarrow ignores for nested columns: their
    pages were written uncompressed, without dictionary or statistics."""
    table = _nested_table()
    pq.write_table(table, tmp_path / "in.parquet", compression="zstd")
    compress_file(tmp_path / "in.parquet", tmp_path / "c.parquet")
    fsst_leaves = ("tags.list.element.", "point.name.", "m.key_value.key.")  # formats/nested.py
    for path, col in _leaves(tmp_path / "c.parquet").items():
        assert col.compression == "ZSTD", path
        if path.startswith(("s.", *fsst_leaves)):
            assert not col.is_stats_set, path
        else:
            assert col.is_stats_set and col.has_dictionary_page, path
    assert {p for p in _leaves(tmp_path / "c.parquet") if p.startswith(fsst_leaves)} == {
        f"{leaf}{child}" for leaf in fsst_leaves for child in ("codes", "lengths", "cuts", "table")}
    decompress_file(tmp_path / "c.parquet", tmp_path / "d.parquet", device="cpu")
    for path, col in _leaves(tmp_path / "d.parquet").items():
        assert col.compression == "ZSTD" and col.is_stats_set, path
    assert pq.read_table(tmp_path / "d.parquet").equals(table)
    # no larger than pyarrow's own zstd Parquet of the same table, give or take
    assert (tmp_path / "d.parquet").stat().st_size < 1.2 * (tmp_path / "in.parquet").stat().st_size


def test_input_codecs_are_restored_per_leaf(tmp_path):
    """A nested column's leaves with different codecs get each its own back."""
    table = _nested_table(500)
    codecs = {"s": "gzip", "tags.list.element": "brotli", "point.x": "snappy",
              "point.name": "gzip", "m.key_value.key": "zstd", "m.key_value.value": "none"}
    pq.write_table(table, tmp_path / "in.parquet", compression=codecs)
    compress_file(tmp_path / "in.parquet", tmp_path / "c.parquet")
    decompress_file(tmp_path / "c.parquet", tmp_path / "d.parquet", device="cpu")
    got = {p: c.compression for p, c in _leaves(tmp_path / "d.parquet").items()}
    assert got == {p: c.upper().replace("NONE", "UNCOMPRESSED") for p, c in codecs.items()}


def test_compressing_an_fsst_file_again_keeps_the_fsst_page_settings(tmp_path):
    """An fsst column copied through kept none of its settings (uncompressed, dictionary,
    statistics): the file grew."""
    table = _nested_table()
    pq.write_table(table, tmp_path / "in.parquet", compression="zstd")
    compress_file(tmp_path / "in.parquet", tmp_path / "c.parquet")
    compress_file(tmp_path / "c.parquet", tmp_path / "cc.parquet")
    first, again = _leaves(tmp_path / "c.parquet"), _leaves(tmp_path / "cc.parquet")
    assert set(first) == set(again)
    for path in first:
        assert again[path].compression == first[path].compression, path
        assert again[path].encodings == first[path].encodings, path
        assert again[path].is_stats_set == first[path].is_stats_set, path
    size = (tmp_path / "c.parquet").stat().st_size
    assert (tmp_path / "cc.parquet").stat().st_size <= 1.02 * size
    assert read_table(tmp_path / "cc.parquet", device="cpu").equals(table)
    decompress_file(tmp_path / "cc.parquet", tmp_path / "d.parquet", device="cpu")
    assert {p: c.compression for p, c in _leaves(tmp_path / "d.parquet").items()} == {
        p: c.compression for p, c in _leaves(tmp_path / "in.parquet").items()}


# ----------------------------------------------------------------- finding 11: footer names
def test_a_damaged_footer_column_name_is_corrupt_data_naming_the_file(tmp_path):
    """A column chunk's path that is not UTF-8 was a UnicodeDecodeError naming no file."""
    pq.write_table(pa.table({"s": STRINGS}), tmp_path / "in.parquet")
    compress_file(tmp_path / "in.parquet", tmp_path / "c.parquet")
    data = (tmp_path / "c.parquet").read_bytes()
    footer = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    hits = [m.start() + footer for m in re.finditer(rb"codes|lengths|cuts", data[footer:])]
    assert hits
    for k, pos in enumerate(hits):
        bad = bytearray(data)
        bad[pos] = 0xFF
        path = tmp_path / f"bad{k}.parquet"
        path.write_bytes(bytes(bad))
        for call, args in ((read_table, {"device": "cpu"}),
                           (compress_file, {"dst": tmp_path / "o.parquet", "force": True}),
                           (decompress_file, {"dst": tmp_path / "o.arrow", "device": "cpu",
                                              "force": True})):
            try:
                out = call(path, **args)
            except CorruptDataError as exc:
                assert f"bad{k}.parquet" in str(exc)
                continue
            if isinstance(out, pa.Table):
                assert out.column("s").to_pylist() == STRINGS
    result = CliRunner().invoke(app, ["compress", str(tmp_path / "bad0.parquet"),
                                      str(tmp_path / "cli.parquet")])
    assert result.exit_code in (0, 4) and "Traceback" not in result.stderr


# ----------------------------------------------------------------- copied columns are checked
def test_invalid_utf8_in_a_copied_column_is_an_error(tmp_path):
    """pyarrow's Parquet reader does not check UTF-8: a list<string> column with invalid bytes
    was copied into the output as it was."""
    values = pa.Array.from_buffers(pa.string(), 2, [None, pa.array([0, 1, 2], pa.int32())
                                                    .buffers()[1], pa.py_buffer(b"a\xff")])
    lists = pa.ListArray.from_arrays(pa.array([0, 1, 2], pa.int32()), values)
    pq.write_table(pa.table({"s": ["x", "y"], "l": lists}), tmp_path / "in.parquet")
    with pytest.raises(CorruptDataError, match=r"in\.parquet: row group 0: column 'l' is "
                                               r"invalid.*UTF8"):
        compress_file(tmp_path / "in.parquet", tmp_path / "c.parquet")


# ----------------------------------------------------------------- finding 12: other writers
@pytest.fixture
def fsst_file(tmp_path):
    table = pa.table({"s": STRINGS * 10, "n": pa.array(range(600), pa.int64()),
                      "l": pa.array([["x", "y"]] * 600)})
    pq.write_table(table, tmp_path / "in.parquet", row_group_size=200)
    compress_file(tmp_path / "in.parquet", tmp_path / "c.parquet")
    return tmp_path / "c.parquet", table


def test_pyarrow_rewrite_with_version_1_0_decodes(fsst_file, tmp_path):
    """version="1.0" changes the storage's uint32 lengths to int64, so the schema no longer
    matches the CRC, and pyarrow drops the extension type; the stored Arrow schema survives:
    the file is another writer's (no row counts), and decodes."""
    path, table = fsst_file
    pq.write_table(pq.read_table(path), tmp_path / "v1.parquet", version="1.0")
    assert read_table(tmp_path / "v1.parquet", device="cpu").equals(table)
    decompress_file(tmp_path / "v1.parquet", tmp_path / "d.arrow", device="cpu")
    assert ipc.open_file(tmp_path / "d.arrow").read_all().equals(table)


def test_pyarrow_rewrite_with_other_row_groups_decodes(fsst_file, tmp_path):
    path, table = fsst_file
    pq.write_table(pq.read_table(path), tmp_path / "rg.parquet", row_group_size=250)
    assert pq.ParquetFile(tmp_path / "rg.parquet").num_row_groups == 3
    assert read_table(tmp_path / "rg.parquet", device="cpu").equals(table)


def test_pyarrow_rewrite_without_the_schema_says_the_type_was_dropped(fsst_file, tmp_path):
    path, _ = fsst_file
    pq.write_table(pq.read_table(path), tmp_path / "ns.parquet", store_schema=False)
    with pytest.raises(CorruptDataError, match=r"ns\.parquet: column 's' is fsstgpu\.fsst "
                                               r"storage whose extension type .* dropped"):
        read_table(tmp_path / "ns.parquet", device="cpu")


def test_pandas_reads_the_strings_and_rewrites_them_plain(fsst_file, tmp_path):
    """pandas converts an fsst column through the type's pandas dtype, which decodes (issue
    #23, item 4): it sees the strings, and writes them back as plain strings."""
    pd = pytest.importorskip("pandas", reason="pandas is not installed")
    path, table = fsst_file
    df = pd.read_parquet(path)
    assert df["s"].tolist() == table.column("s").to_pylist()
    df.to_parquet(tmp_path / "pd.parquet")
    back = read_table(tmp_path / "pd.parquet", device="cpu")
    assert back.column("s").to_pylist() == table.column("s").to_pylist()
    assert pa.types.is_string(back.schema.field("s").type) or pa.types.is_large_string(
        back.schema.field("s").type)


def test_polars_rewrite_says_why_it_does_not_decode(fsst_file, tmp_path):
    pl = pytest.importorskip("polars", reason="polars is not installed")
    path, _ = fsst_file
    pl.read_parquet(path).write_parquet(tmp_path / "pl.parquet")
    with pytest.raises(CorruptDataError) as info:
        read_table(tmp_path / "pl.parquet", device="cpu")
    message = str(info.value)
    assert "pl.parquet" in message
    assert "Polars" in message or "dropped" in message, message


def test_duckdb_rewrite_says_the_tables_were_dropped(fsst_file, tmp_path):
    duckdb = pytest.importorskip("duckdb", reason="duckdb is not installed")
    path, _ = fsst_file
    duckdb.sql(f"COPY (SELECT * FROM '{path}') TO '{tmp_path / 'dd.parquet'}' (FORMAT parquet)")
    with pytest.raises(CorruptDataError, match=r"dd\.parquet: column .s. .*DuckDB.*dropped"):
        read_table(tmp_path / "dd.parquet", device="cpu")


def test_our_footer_altered_is_still_refused(fsst_file, tmp_path):
    """The row counts' key marks a footer fsstgpu wrote: a schema that does not match its CRC
    there is an error, not another writer's file. Column "n" renamed "o" in the footer's
    Parquet schema (the name is a 1-byte Thrift string, 0x18 0x01 "n"; the other copy, in
    the column chunk's path, is not used for reading)."""
    path, table = fsst_file
    data = path.read_bytes()
    footer = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    found = [m.start() + footer + 2 for m in re.finditer(rb"\x18\x01n", data[footer:])]
    assert found
    refused = 0
    for k, pos in enumerate(found):
        bad = bytearray(data)
        bad[pos] = ord("o")
        (tmp_path / f"bad{k}.parquet").write_bytes(bytes(bad))
        try:
            out = read_table(tmp_path / f"bad{k}.parquet", device="cpu")
        except CorruptDataError as exc:
            assert "altered" in str(exc)
            refused += 1
            continue
        assert out.equals(table) and out.schema.equals(table.schema)
    assert refused


def test_fsst_columns_are_written_as_fsst(fsst_file):
    path, _ = fsst_file
    assert is_fsst_type(pq.ParquetFile(path).schema_arrow.field("s").type)


@pytest.mark.parametrize("seed", [1, 3])
def test_flips_in_a_file_of_every_type_are_errors_never_crashes(tmp_path, seed):
    """Random bit flips, mostly in the footer, of a file holding every type above: each read
    gives the table or a CorruptDataError (seed 1 once aborted the process: pyarrow's
    ``RowGroupMetaData.column()`` throws a C++ exception through Python on a size-statistics
    histogram of the wrong length; seed 3 gave a UnicodeDecodeError from ``created_by``)."""
    table = pa.table({"s": STRINGS, **TYPES})
    _write_ipc(table, tmp_path / "in.arrow", "arrow")
    compress_file(tmp_path / "in.arrow", tmp_path / "c.parquet")
    data = (tmp_path / "c.parquet").read_bytes()
    footer = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    rng = np.random.default_rng(seed)
    path = tmp_path / "bad.parquet"
    for _ in range(300):
        bad = bytearray(data)
        pos = int(rng.integers(footer - 200 if rng.random() < 0.7 else 0, len(data)))
        bad[pos] ^= 1 << int(rng.integers(0, 8))
        path.write_bytes(bytes(bad))
        try:
            out = read_table(path, device="cpu")
            assert out.equals(table) and out.schema.equals(table.schema), pos
        except CorruptDataError:
            pass
        try:
            compress_file(path, tmp_path / "o.parquet", force=True)
        except CorruptDataError:
            pass
        try:
            inspect_file(path)
        except CorruptDataError:
            pass


def test_files_with_the_former_schema_crc_still_read(tmp_path):
    """Files written before: the CRC was of the schema as given to the writer, serialised
    as it was (a map read from Parquet has its entries named after the column, which the
    stored schema does not keep)."""
    import json
    import zlib

    import fsstgpu
    from fsstgpu.formats.arrow_storage import to_extension_array
    from fsstgpu.formats.parquet_options import ROW_GROUPS_KEY, SCHEMA_CRC_KEY

    pq.write_table(pa.table({"m": TYPES["map"]}), tmp_path / "map.parquet")
    maps = pq.read_table(tmp_path / "map.parquet").column("m").combine_chunks()
    fsst = to_extension_array(fsstgpu.compress(pa.array(STRINGS)))
    schema = pa.schema([("s", fsst.type), ("m", maps.type)])
    schema = schema.with_metadata({SCHEMA_CRC_KEY: str(zlib.crc32(schema.serialize()))})
    with pq.ParquetWriter(tmp_path / "old.parquet", schema, store_schema=True) as writer:
        writer.write_table(pa.Table.from_arrays([fsst, maps], schema=schema))
        writer.add_key_value_metadata({ROW_GROUPS_KEY: json.dumps([60])})
    back = read_table(tmp_path / "old.parquet", device="cpu")
    assert back.column("s").to_pylist() == STRINGS and back.column("m").equals(
        pa.chunked_array([maps]))


def test_parallel_units_give_the_written_types(tmp_path):
    """The reading threads of read_table and stream_to_device cast each column back too."""
    from fsstgpu.formats.rowgroups import Source
    from fsstgpu.formats.unit_reads import parallel_units

    table = _table("date64")
    _write_ipc(table, tmp_path / "in.arrow", "arrow")
    compress_file(tmp_path / "in.arrow", tmp_path / "c.parquet")
    with Source(tmp_path / "c.parquet") as source:
        units = list(parallel_units(source, workers=2))
    assert [u["date64"].type for u in units] == [pa.date64()]


@pytest.mark.parametrize("column", [
    pa.DictionaryArray.from_arrays(pa.array([0, 1, 0], pa.int32()), pa.array(["a", None])),
    pa.array([2**62, 0, 1], pa.timestamp("s")),
], ids=["dictionary_holding_null", "seconds_past_milliseconds"])
def test_columns_parquet_cannot_hold_are_named(tmp_path, column):
    # pyarrow's Parquet writer refuses these legal Arrow columns; the error names the column and
    # the outputs that can hold it, instead of pyarrow's bare message.
    src = tmp_path / "in.arrow"
    feather.write_feather(pa.table({"odd": column, "s": STRINGS[:3]}), src)
    with pytest.raises(ValueError, match=r"column 'odd' .* cannot be written to Parquet .*\.arrow"):
        compress_file(src, tmp_path / "out.parquet")
    assert not (tmp_path / "out.parquet").exists()
    compress_file(src, tmp_path / "out.arrow")
    decompress_file(tmp_path / "out.arrow", tmp_path / "back.arrow")
    assert feather.read_table(tmp_path / "back.arrow").column("odd").combine_chunks().equals(column)


def test_a_flip_in_the_stored_schema_that_parquet_normalises_is_an_error(tmp_path):
    """The former (legacy) schema CRC covers the schema pyarrow rebuilds, not the stored one:
    for a Parquet input both CRCs are equal, so a flip in ``ARROW:schema`` that Parquet's
    read-back normalises (a list's item name) passed both checks, and the flipped name went
    into decompress's output."""
    import base64

    pq.write_table(pa.table({"l": pa.array([[s] for s in STRINGS])}), tmp_path / "in.parquet")
    compress_file(tmp_path / "in.parquet", tmp_path / "c.parquet")
    data = bytearray((tmp_path / "c.parquet").read_bytes())
    kv = pq.ParquetFile(tmp_path / "c.parquet").metadata.metadata
    raw = base64.b64decode(kv[b"ARROW:schema"])
    i = raw.index(b"\x07\x00\x00\x00element\x00") + 4  # the item field's name
    flipped = base64.b64encode(raw[:i + 1] + b"L" + raw[i + 2:])  # "element" -> "eLement"
    at = bytes(data).index(kv[b"ARROW:schema"])
    assert len(flipped) == len(kv[b"ARROW:schema"])
    data[at:at + len(flipped)] = flipped
    (tmp_path / "bad.parquet").write_bytes(data)
    with pytest.raises(CorruptDataError, match="schema"):
        decompress_file(tmp_path / "bad.parquet", tmp_path / "out.arrow")
    with pytest.raises(CorruptDataError, match="schema"):
        inspect_file(tmp_path / "bad.parquet")


def test_inspect_refuses_a_column_chunk_size_altered_in_the_footer(tmp_path):
    """A flipped bit in a column chunk's total_compressed_size (footer thrift, no checksum)
    was read as before, and `inspect` reported the altered size and file ratio as the truth."""
    pq.write_table(pa.table({"s": STRINGS, "n": list(range(60))}), tmp_path / "in.parquet")
    compress_file(tmp_path / "in.parquet", tmp_path / "c.parquet")
    good = inspect_file(tmp_path / "c.parquet")
    md = pq.ParquetFile(tmp_path / "c.parquet").metadata
    data = (tmp_path / "c.parquet").read_bytes()
    footer_at = len(data) - 8 - md.serialized_size
    size = md.row_group(0).column(0).total_compressed_size
    # the size as a zigzag varint (thrift compact i64) in the footer; bump it by 2 ** 10
    def varint(v):
        v, out = v << 1, bytearray()
        while True:
            out.append((v & 0x7F) | (0x80 if v > 0x7F else 0))
            v >>= 7
            if not out[-1] & 0x80:
                return bytes(out)
    old, new = varint(size), varint(size + 1024)
    assert len(old) == len(new) and data.count(old, footer_at) >= 1
    at = data.index(old, footer_at)
    bad = data[:at] + new + data[at + len(old):]
    (tmp_path / "bad.parquet").write_bytes(bad)
    try:
        info = inspect_file(tmp_path / "bad.parquet")
    except CorruptDataError:
        return
    assert [c["stored_bytes"] for c in info["columns"]] == [
        c["stored_bytes"] for c in good["columns"]]
