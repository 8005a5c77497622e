"""The writer matrix: inputs the round trips missed (zero columns with rows, nulls in
non-nullable fields, a column named like another's Parquet leaf, compress_dataset's format=)."""

import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

from fsstgpu.formats import compress_dataset, compress_file, read_table
from fsstgpu.integrations.dask import compress_dataset as dask_compress_dataset


def _stream(table, path):
    with ipc.new_stream(path, table.schema) as w:
        w.write_table(table)
    return path


@pytest.mark.parametrize("suffix", [".arrow", ".arrows"])
def test_row_group_rows_keeps_rows_without_columns(tmp_path, suffix):
    src = _stream(pa.table({"x": [1, 2, 3]}).drop(["x"]), tmp_path / "in.arrows")
    info = compress_file(src, tmp_path / f"c{suffix}", row_group_rows=2)
    assert info["rows"] == 3
    assert read_table(tmp_path / f"c{suffix}", device="cpu").num_rows == 3


def test_parquet_output_of_rows_without_columns_is_refused(tmp_path):
    src = _stream(pa.table({"x": [1, 2, 3]}).drop(["x"]), tmp_path / "in.arrows")
    with pytest.raises(ValueError, match="without columns"):
        compress_file(src, tmp_path / "c.parquet")
    assert not (tmp_path / "c.parquet").exists()


@pytest.mark.parametrize("field, values", [
    (pa.field("s", pa.string(), nullable=False), ["a", None, "c"]),
    (pa.field("l", pa.list_(pa.string()), nullable=False), [["x"], None, ["z"]]),
    (pa.field("st", pa.struct([("a", pa.string())]), nullable=False),
     [{"a": "x"}, None, {"a": "z"}]),
    (pa.field("st", pa.struct([pa.field("a", pa.string(), nullable=False)])),
     [{"a": "x"}, {"a": None}, {"a": "z"}]),
])
def test_nulls_in_non_nullable_fields_refused_for_parquet(tmp_path, field, values):
    # IPC carries them; Parquet lost them ([] / {'a': ''}) or wrote a file fsstgpu refused
    arr = pa.array(values, field.type)
    src = _stream(pa.Table.from_arrays([arr], schema=pa.schema([field])), tmp_path / "in.arrows")
    with pytest.raises(ValueError, match="non-nullable"):
        compress_file(src, tmp_path / "c.parquet")
    compress_file(src, tmp_path / "c.arrows")  # IPC keeps them exactly
    assert read_table(tmp_path / "c.arrows", device="cpu").column(0).to_pylist() == values


def test_required_field_null_under_null_parent_still_written(tmp_path):
    typ = pa.struct([pa.field("a", pa.string(), nullable=False)])
    arr = pa.StructArray.from_arrays([pa.array(["x", None])], fields=[typ.field(0)],
                                     mask=pa.array([False, True]))
    src = _stream(pa.table({"st": arr}), tmp_path / "in.arrows")
    compress_file(src, tmp_path / "c.parquet")
    assert read_table(tmp_path / "c.parquet", device="cpu").column("st").to_pylist() == [
        {"a": "x"}, None]


def test_column_named_like_an_fsst_leaf(tmp_path):
    t = pa.table({"s": [f"a{i}" for i in range(20)], "s.codes": [f"b{i}" for i in range(20)]})
    pq.write_table(t, tmp_path / "in.parquet")
    compress_file(tmp_path / "in.parquet", tmp_path / "c.parquet", columns=["s"])
    assert read_table(tmp_path / "c.parquet", device="cpu").equals(t)


def test_compress_dataset_refuses_format(tmp_path):
    (tmp_path / "ds").mkdir()
    pq.write_table(pa.table({"s": ["a", "b"]}), tmp_path / "ds" / "a.parquet")
    with pytest.raises(ValueError, match="format"):
        compress_dataset(tmp_path / "ds", tmp_path / "out", format="arrow")
    assert not (tmp_path / "out").exists()


def test_dask_compress_dataset_refuses_format(tmp_path):
    """The Dask twin passed format= through to every file as well (refused before a client is
    looked for, so no cluster is needed here)."""
    (tmp_path / "ds").mkdir()
    pq.write_table(pa.table({"s": ["a", "b"]}), tmp_path / "ds" / "a.parquet")
    with pytest.raises(ValueError, match="format"):
        dask_compress_dataset(tmp_path / "ds", tmp_path / "out", format="arrow")
    assert not (tmp_path / "out").exists()
