"""formats.rowgroups' checks of its inputs, each on its own: progress callbacks, URLs as
outputs, paths that are no file, extension types nested anywhere, the errors `reading` turns
into CorruptDataError and the ones it lets through (a mutation campaign found these untested)."""

from __future__ import annotations

import os

import fsspec
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

import fsstgpu
from fsstgpu.errors import CorruptDataError
from fsstgpu.formats import compress_file
from fsstgpu.formats.arrow_storage import to_extension_array
from fsstgpu.formats.locations import Url
from fsstgpu.formats.rowgroups import (
    MissingInputError,
    Source,
    check_input,
    check_progress,
    holds_extension_type,
    open_file,
    reading,
)
from fsstgpu.formats.sinks import write_table


@pytest.fixture(scope="module")
def memory_files():
    fs = fsspec.filesystem("memory")
    fs.mkdir("/fsstgpu-rowgroups-guards")
    fs.pipe("/fsstgpu-rowgroups-guards/a.bin", b"ab")
    yield "memory://fsstgpu-rowgroups-guards"
    fs.rm("/fsstgpu-rowgroups-guards", recursive=True)


def test_check_progress_takes_a_callable_or_none():
    check_progress(None)
    check_progress(print)
    with pytest.raises(TypeError, match="^progress must be a callable or None, not int$"):
        check_progress(5)


def test_a_url_opens_for_reading_only(memory_files):
    assert open_file(f"{memory_files}/a.bin").read() == b"ab"
    assert open_file(Url(f"{memory_files}/a.bin")).read() == b"ab"
    for mode in ("wb", "ab"):
        with pytest.raises(ValueError, match="outputs are local paths"):
            open_file(f"{memory_files}/b.bin", mode)


def test_check_input_of_urls(memory_files):
    found = check_input(f"{memory_files}/a.bin")
    assert isinstance(found, Url) and found == f"{memory_files}/a.bin"
    with pytest.raises(IsADirectoryError, match="is a directory, not a file"):
        check_input(memory_files)
    with pytest.raises(MissingInputError, match="no such file"):
        check_input(f"{memory_files}/none.bin")


def test_check_input_of_local_paths(tmp_path):
    path = tmp_path / "a.bin"
    path.write_bytes(b"ab")
    assert check_input(str(path)) == path
    with pytest.raises(IsADirectoryError, match="is a directory, not a file"):
        check_input(tmp_path)
    with pytest.raises(MissingInputError, match="no such file"):
        check_input(tmp_path / "none.bin")
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(ValueError, match="is not a regular file"):
        check_input(tmp_path / "pipe")


def test_holds_extension_type_looks_through_every_nesting():
    fsst = to_extension_array(fsstgpu.compress(pa.array(["a"]))).type
    assert holds_extension_type(fsst)
    for outer in (pa.dictionary(pa.int32(), fsst), pa.struct([("a", pa.int8()), ("b", fsst)]),
                  pa.map_(pa.string(), fsst), pa.list_(pa.list_(fsst))):
        assert holds_extension_type(outer), outer
    for plain in (pa.string(), pa.dictionary(pa.int32(), pa.string()),
                  pa.struct([("a", pa.int8())]), pa.map_(pa.string(), pa.int8())):
        assert not holds_extension_type(plain), plain


@pytest.mark.parametrize("exc, message", [
    (CorruptDataError("bad"), "f.parquet: row group 1: bad"),
    (b"\xff".decode, "f.parquet: row group 1: a name in the file is not UTF-8"),
    (pa.ArrowInvalid("page"), "f.parquet: row group 1: unreadable (ArrowInvalid: page)"),
    (OSError("io"), "f.parquet: row group 1: unreadable (OSError: io)"),
    (EOFError("cut"), "f.parquet: row group 1: unreadable (EOFError: cut)"),
])
def test_reading_names_the_file_and_the_part(exc, message):
    with pytest.raises(CorruptDataError) as info, reading("f.parquet", "row group 1: "):
        if callable(exc):
            exc()
        raise exc
    assert str(info.value).startswith(message)


@pytest.mark.parametrize("exc", [FileNotFoundError("x"), PermissionError("x"),
                                 IsADirectoryError("x"), ValueError("x")])
def test_reading_lets_file_system_and_other_errors_through(exc):
    with pytest.raises(type(exc)) as info, reading("f.parquet"):
        raise exc
    assert info.value is exc


@pytest.mark.parametrize("fmt, what", [("parquet", "row group"), ("arrow", "record batch"),
                                       ("arrows", "record batch")])
def test_a_unit_past_either_end_is_an_index_error(tmp_path, fmt, what):
    path = tmp_path / f"t.{fmt}"
    write_table(pa.table({"s": ["a", "b", "c"]}), path, fmt, rows_per_unit=2)
    with Source(path) as source:
        assert source.unit(0)["s"].to_pylist() == ["a", "b"]
        assert source.unit(1)["s"].to_pylist() == ["c"]
        for k in (-1, 2, 5):
            # (a stream's count is known only at its end)
            counted = "" if fmt == "arrows" else r" \(it has 2\)"
            with pytest.raises(IndexError, match=f"no {what} {k}{counted}$"):
                source.unit(k)


@pytest.mark.parametrize("fmt", ["arrow", "arrows"])
def test_ipc_inputs_have_no_first_unit_codecs_or_types_to_restore(tmp_path, fmt):
    path = tmp_path / f"t.{fmt}"
    write_table(pa.table({"s": ["a", "b", "c"]}), path, fmt, rows_per_unit=2)
    with Source(path) as source:
        assert source.first_unit() is None and source.parquet_codecs() == {}
        assert source.restored("s", "anything") == "anything"


def test_a_parquet_file_of_no_row_groups(tmp_path):
    path = tmp_path / "z.parquet"
    pq.ParquetWriter(path, pa.schema([("s", pa.string())])).close()
    with Source(path) as source:
        assert source.num_units == 0 and source.first_unit() is None
        assert source.parquet_codecs() == {} and list(source.units()) == []


def test_a_parquet_first_unit_is_read_once_and_yielded_by_units(tmp_path, monkeypatch):
    path = tmp_path / "t.parquet"
    write_table(pa.table({"s": ["a", "b", "c"]}), path, "parquet", rows_per_unit=2)
    with Source(path) as source:
        first = source.first_unit()
        assert first["s"].to_pylist() == ["a", "b"] and source.first_unit() is first
        reads = []
        plain = Source.read_row_group
        monkeypatch.setattr(Source, "read_row_group",
                            lambda self, parquet, k, columns: reads.append(k) or plain(
                                self, parquet, k, columns))
        units = list(source.units())
        assert units[0] is first and reads == [1]


def test_a_row_group_read_short_of_the_footers_rows_is_corrupt(tmp_path, monkeypatch):
    # (a damaged column chunk entry made pyarrow 25 read a column alone as empty)
    path = tmp_path / "t.parquet"
    write_table(pa.table({"s": ["a", "b", "c"]}), path, "parquet", rows_per_unit=2)
    plain = Source.read_row_group
    monkeypatch.setattr(Source, "read_row_group",
                        lambda self, parquet, k, columns: plain(self, parquet, k, columns)
                        .slice(0, 1))
    with Source(path) as source:
        with pytest.raises(CorruptDataError, match="1 rows read, where the footer has 2"):
            source.unit(0)
        with pytest.raises(CorruptDataError, match="row group 0: 1 rows read"):
            list(source.units())


def test_an_end_batch_amid_the_data_is_corrupt_when_read_alone(tmp_path):
    # an fsstgpu IPC file of two batches and its end batch, forged as batch 0, the end batch
    # twice: the footer's count (the end batch's "batches": 2) still holds, and batch 1 read
    # alone is the end batch
    write_table(pa.table({"s": ["a", "b", "c"]}), tmp_path / "t.arrow", "arrow",
                rows_per_unit=2)
    compress_file(tmp_path / "t.arrow", tmp_path / "c.arrow")
    reader = ipc.open_file(tmp_path / "c.arrow")
    batches = [reader.get_batch_with_custom_metadata(i) for i in range(3)]
    with ipc.new_file(tmp_path / "f.arrow", reader.schema) as writer:
        for batch, metadata in (batches[0], batches[2], batches[2]):
            writer.write_batch(batch, custom_metadata=metadata)
    with Source(tmp_path / "f.arrow") as source:
        assert source.num_units == 2 and source.unit(0).num_rows == 2
        with pytest.raises(CorruptDataError,
                           match="record batch 1: it is the end batch, amid the data"):
            source.unit(1)


def test_parquet_columns_are_cast_back_to_the_types_written(tmp_path):
    # Parquet keeps timestamp[s] as [ms] and date64 as date32: fsstgpu's outputs record the
    # types, and each read column (Source.restored, as the parallel reads take it) and each
    # unit is cast back
    table = pa.table({"t": pa.array([1, 2], pa.timestamp("s")),
                      "d": pa.array([0, 86_400_000], pa.date64()), "s": ["a", "b"]})
    write_table(table, tmp_path / "t.arrow", "arrow")
    compress_file(tmp_path / "t.arrow", tmp_path / "c.parquet")
    raw = pq.ParquetFile(tmp_path / "c.parquet").read_row_group(0)
    assert raw.schema.field("t").type == pa.timestamp("ms")
    with Source(tmp_path / "c.parquet") as source:
        assert source.restored("t", raw.column("t")).equals(table.column("t"))
        assert source.restored("d", raw.column("d")).equals(table.column("d"))
        kept = raw.column("s")
        assert source.restored("s", kept) is kept
        for unit in (source.unit(0), next(source.units())):
            assert unit.select(["t", "d"]).equals(table.select(["t", "d"]))


def test_parquet_codecs_by_leaf_path_and_by_column(tmp_path):
    path = tmp_path / "t.parquet"
    pq.write_table(pa.table({"s": ["a"], "n": [1], "l": [[1]]}), path,
                   compression={"s": "zstd", "n": "gzip", "l.list.element": "snappy"})
    with Source(path) as source:
        assert source.parquet_codecs() == {"s": "zstd", "n": "gzip",
                                           "l.list.element": "snappy", "l": "snappy"}


def test_a_stream_cut_inside_a_batch_is_unreadable_not_short_of_dictionaries(tmp_path):
    # only pyarrow's "ended without reading the expected number" (a cut between a batch's
    # dictionary messages) is called that; another ArrowInvalid is named as pyarrow gave it
    table = pa.table({"s": ["abc" * 100, "def" * 100]})
    sink = pa.BufferOutputStream()
    with ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table, max_chunksize=1)
    whole = sink.getvalue().to_pybytes()
    path = tmp_path / "cut.arrows"
    path.write_bytes(whole[:620])  # inside batch 1's metadata
    with Source(path) as source, pytest.raises(CorruptDataError) as info:
        list(source.units())
    assert "record batch 1: unreadable (ArrowInvalid: Expected to read" in str(info.value)
