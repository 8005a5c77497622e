"""Guard checks of formats/sinks.py that no other test could fail (a mutation round)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet  # noqa: F401  (pa.parquet)
import pytest

from fsstgpu.formats.parquet_parts import PartWriter
from fsstgpu.formats.sinks import Sink


def test_a_sink_that_cannot_be_made_raises(tmp_path):
    """An IPC writer refused (an unknown codec) must fail the Sink, not leave a half-made one
    whose writes fail later with an AttributeError."""
    with pytest.raises(ValueError, match="compression"):
        Sink(str(tmp_path / "x.arrow"), "arrow", pa.schema([("s", pa.string())]),
             ipc_compression="bogus")


def test_a_parquet_sink_refuses_rows_it_could_not_read_back(tmp_path):
    sink = Sink(str(tmp_path / "x.parquet"), "parquet", pa.schema([]))
    with pytest.raises(ValueError, match="rows without columns"):
        sink.write([], 3)
    sink.abandon()
    field = pa.field("s", pa.string(), nullable=False)
    sink = Sink(str(tmp_path / "y.parquet"), "parquet", pa.schema([field]))
    with pytest.raises(ValueError, match="declared non-nullable"):
        sink.write([pa.array(["a", None], pa.string())], 2)
    sink.abandon()


def test_an_ipc_unit_without_columns_keeps_its_rows(tmp_path):
    path = tmp_path / "x.arrow"
    sink = Sink(str(path), "arrow", pa.schema([]))
    sink.write([], 3)
    sink.close()
    assert [b.num_rows for b in pa.ipc.open_file(path).read_all().to_batches()][:1] == [3]


def test_serial_false_never_writes_serially(tmp_path):
    table = pa.table({"n": pa.array(range(8), pa.int64())})
    sink = Sink(str(tmp_path / "x.parquet"), "parquet", table.schema, serial=False, parallel=2)
    sink.write_many([(table.slice(k, 1).columns, 1) for k in range(8)])
    assert isinstance(sink._parts, PartWriter)
    sink.close()
    sink = Sink(str(tmp_path / "y.parquet"), "parquet", table.schema, serial=True, parallel=2)
    sink.write_many([(table.slice(k, 1).columns, 1) for k in range(8)])
    assert not isinstance(sink._parts, PartWriter)
    sink.close()


def test_a_parquet_sink_of_no_row_groups_closes_to_a_file(tmp_path):
    path = tmp_path / "x.parquet"
    sink = Sink(str(path), "parquet", pa.schema([("s", pa.string())]))
    sink.close()
    assert pa.parquet.ParquetFile(path).metadata.num_row_groups == 0
