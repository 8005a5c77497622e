"""Guards of :mod:`fsstgpu.formats.file_reads` that no other test could fail (a mutation
round: each test names the check it holds)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import fsstgpu
from fsstgpu.errors import DeviceError
from fsstgpu.formats import compress_file, open_reader, read_table, read_table_device


def _ipc(tmp_path, batches):
    with pa.ipc.new_file(tmp_path / "p.arrow", batches[0].schema) as writer:
        for batch in batches:
            writer.write_batch(batch)
    compress_file(tmp_path / "p.arrow", tmp_path / "c.arrow")
    return tmp_path / "c.arrow"


def _batches(column, n):
    """Three batches of ``column`` (a pyarrow array of 4) and an int64 ``n``: rows 0-1, none,
    rows 2-3 (pyarrow's filter leaves a table of no rows no chunk at all)."""
    table = pa.table({"v": column, "n": pa.array(n, pa.int64())})
    return [table.slice(0, 2).combine_chunks().to_batches()[0],
            pa.RecordBatch.from_arrays([pa.nulls(0, f.type) for f in table.schema],
                                       schema=table.schema),
            table.slice(2).combine_chunks().to_batches()[0]]


def test_an_empty_unit_filtered_keeps_its_chunk(tmp_path):
    # _ReadPlan._table: filtered, an empty unit has no chunk; read_table keeps one chunk per
    # unit read (as open_reader yields one batch a unit), empty ones too
    path = _ipc(tmp_path, _batches(pa.array(["a", "b", "c", "d"]), [1, 2, 9, 3]))
    got = read_table(path, device="cpu", filters=pc.field("n") < 9)
    assert [len(c) for c in got.column("v").chunks] == [2, 0, 1]
    assert got.column("v").to_pylist() == ["a", "b", "d"]


@pytest.mark.parametrize("column", [
    pa.array(["a", "b", None, "b"], pa.string_view()),
    pa.array([["a"], None, [], ["b", None]], pa.list_(pa.string_view()))], ids=str)
def test_a_view_column_of_an_empty_unit_filtered_keeps_its_type(tmp_path, column):
    # _with_leaves: the view columns cast back keep the field given; an empty unit filtered has
    # no chunk to take the type from, so it came back as its large type (large_string)
    path = _ipc(tmp_path, _batches(column, [1, 2, 3, 4]))
    for filters, rows in ((pc.field("n") > 1, 3), (pc.field("n") > 10, 0)):
        got = read_table(path, device="cpu", filters=filters)
        assert got.num_rows == rows and got.schema.field("v").type == column.type
        with open_reader(path, device="cpu", filters=filters) as reader:
            assert reader.read_all().schema.field("v").type == column.type


def test_read_table_device_without_a_gpu_is_a_device_error(tmp_path):
    # device_columns: resolve_device("gpu") names the missing GPU before anything is read
    if fsstgpu.gpu_available():
        pytest.skip("a GPU is usable here")
    # a file of no fsst column too: it has nothing to decode on the device
    for k, table in enumerate((pa.table({"s": ["a", "b"]}),
                               pa.table({"n": pa.array([1, 2], pa.int64())}))):
        pq.write_table(table, tmp_path / f"p{k}.parquet")
        compress_file(tmp_path / f"p{k}.parquet", tmp_path / f"c{k}.parquet")
        with pytest.raises(DeviceError):
            read_table_device(tmp_path / f"c{k}.parquet")
