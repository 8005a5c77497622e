"""Issue #23, item 1: one extension type per logical type (version 4: the tables in the data).

Files compressed apart, with other tables, are one dataset in pyarrow.dataset, polars and
DuckDB; compressed tables concatenate and append to one Parquet writer; an IPC file's batches
bring their own tables; files of the older layouts (tables in the type) still read.
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

import fsstgpu
from fsstgpu.datasets.generators import generate
from fsstgpu.formats import compress_file, read_table
from fsstgpu.formats.arrow_storage import from_extension_array, to_extension_array

KINDS = ("urls", "uuids", "emails", "urls", "null_heavy")


def _plain(k: int, rows: int = 3000) -> pa.Table:
    return pa.table({"s": generate(KINDS[k], rows, k).cast(pa.string()),
                     "n": pa.array(range(k * rows, (k + 1) * rows))})


@pytest.fixture(scope="module")
def five_files(tmp_path_factory):
    """Five Parquet files of other text each, compressed apart: (folder, plain tables)."""
    folder = tmp_path_factory.mktemp("five")
    plain = []
    for k in range(len(KINDS)):
        pq.write_table(_plain(k), folder / f"in{k}.parquet")
        compress_file(folder / f"in{k}.parquet", folder / f"part{k}.fsst.parquet")
        plain.append(_plain(k))
    return folder, plain


def _files(folder):
    return sorted(str(p) for p in folder.glob("part*.fsst.parquet"))


def test_files_compressed_apart_share_one_schema(five_files):
    folder, _ = five_files
    schemas = [pq.read_schema(p) for p in _files(folder)]
    assert all(s.field("s").type == schemas[0].field("s").type for s in schemas)
    tables = [from_extension_array(pq.read_table(p).column("s")).tables[0] for p in _files(folder)]
    assert len({t.to_bytes() for t in tables}) >= 4  # other text, other tables


def test_pyarrow_dataset_reads_the_folder_as_one(five_files):
    folder, plain = five_files
    table = pads.dataset(_files(folder)).to_table()
    assert table.num_rows == sum(t.num_rows for t in plain)
    assert table.column("s").to_pylist() == sum((t.column("s").to_pylist() for t in plain), [])
    # a filter on a plain column, then the strings decoded through the extension type
    picked = pads.dataset(_files(folder)).to_table(filter=pads.field("n") >= 3000 * 4)
    assert picked.column("s").to_pylist() == plain[4].column("s").to_pylist()


def test_concat_tables_and_parquet_appends(five_files, tmp_path):
    folder, plain = five_files
    parts = [pq.read_table(p) for p in _files(folder)]
    both = pa.concat_tables(parts)
    assert fsstgpu.decompress_table(both, device="cpu").column("s").to_pylist() == sum(
        (t.column("s").to_pylist() for t in plain), [])
    with pq.ParquetWriter(tmp_path / "all.parquet", parts[0].schema) as writer:
        for part in parts:
            writer.write_table(part)
    assert read_table(tmp_path / "all.parquet", device="cpu").column("s").to_pylist() == \
        both.column("s").to_pylist()
    # compress_table's tables of other text concatenate too
    a = fsstgpu.compress_table(_plain(0, 100))
    b = fsstgpu.compress_table(_plain(1, 100))
    assert a.schema == b.schema
    assert pa.concat_tables([a, b]).column("s").to_pylist() == (
        _plain(0, 100).column("s").to_pylist() + _plain(1, 100).column("s").to_pylist())


def test_polars_and_duckdb_open_the_folder_as_one(five_files):
    folder, plain = five_files
    rows = sum(t.num_rows for t in plain)
    polars = pytest.importorskip("polars", reason="polars is an optional engine")
    assert polars.scan_parquet(str(folder / "part*.fsst.parquet")).collect().height == rows
    duckdb = pytest.importorskip("duckdb", reason="duckdb is an optional engine")
    got = duckdb.sql(f"select count(*) from read_parquet('{folder}/part*.fsst.parquet')")
    assert got.fetchall() == [(rows,)]


def test_an_ipc_file_of_batches_with_other_tables(tmp_path):
    batches = [_plain(k, 500).to_batches()[0] for k in range(3)]
    with ipc.new_stream(tmp_path / "in.arrows", batches[0].schema) as writer:
        for batch in batches:
            writer.write_batch(batch)
    compress_file(tmp_path / "in.arrows", tmp_path / "c.arrow")
    stored = ipc.open_file(tmp_path / "c.arrow")
    # one dictionary for the file, grown by deltas: every batch sees all three tables
    assert len(stored.get_batch(0).column(0).storage.field("table").dictionary) == 3
    back = read_table(tmp_path / "c.arrow", device="cpu")
    assert back.column("s").to_pylist() == sum((b.column(0).to_pylist() for b in batches), [])


@pytest.mark.parametrize("version", [2, 3])
def test_older_layouts_still_read(tmp_path, version):
    col = pa.chunked_array([generate("urls", 300, 1), generate("emails", 300, 2)])
    carr = fsstgpu.compress(col.combine_chunks() if version == 2 else col)
    ext = to_extension_array(carr, version=version)
    assert ext.type.version == version and ext.type.tables
    pq.write_table(pa.table({"s": ext}), tmp_path / "old.parquet")
    assert read_table(tmp_path / "old.parquet", device="cpu").column("s").to_pylist() == \
        col.to_pylist()
