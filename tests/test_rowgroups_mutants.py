"""formats.rowgroups' behaviours that the second mutation campaign of the module (session 80)
found untested: each test names the mutants it kills."""

from __future__ import annotations

import fsspec
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

from fsstgpu.errors import CorruptDataError
from fsstgpu.formats import compress_file, rowgroups
from fsstgpu.formats.locations import Url
from fsstgpu.formats.rowgroups import Source
from fsstgpu.formats.sinks import write_table


def test_repeated_names_are_refused_naming_the_first_one(tmp_path):
    # guards the message's name: the first name used twice, not the last (mutant: repeated[-1])
    table = pa.Table.from_arrays([pa.array([1]), pa.array([2]), pa.array([3]), pa.array([4])],
                                 names=["b", "a", "b", "a"])
    with ipc.new_file(tmp_path / "t.arrow", table.schema) as writer:
        writer.write_table(table)
    with pytest.raises(ValueError, match="column name 'b' is used by more than one column"):
        Source(tmp_path / "t.arrow")


@pytest.mark.parametrize("fmt, opener", [("arrow", "open_file"), ("arrows", "open_stream")])
def test_an_ipc_input_of_an_extension_column_is_read_without_pool_threads(
        tmp_path, monkeypatch, fmt, opener):
    # guards the IPC readers' options near a Python-defined type, use_threads=False (pool
    # threads dropping the type's references later could abort the process at its end): an
    # IPC file reopened so (mutant "format == 'arrow' and not use_threads" forced False), a
    # stream read so (mutant "options=" dropped from units()' ipc.open_stream)
    write_table(pa.table({"s": ["a", "b", "c"]}), tmp_path / f"t.{fmt}", fmt)
    compress_file(tmp_path / f"t.{fmt}", tmp_path / f"c.{fmt}")
    opened = []
    plain = getattr(ipc, opener)

    def recording(source, *args, **kwargs):
        opened.append(kwargs.get("options"))
        return plain(source, *args, **kwargs)

    monkeypatch.setattr(ipc, opener, recording)
    with Source(tmp_path / f"t.{fmt}") as source:  # no extension type: pool threads allowed
        assert source.use_threads
        assert [unit.num_rows for unit in source.units()] == [3]
    opened.clear()
    with Source(tmp_path / f"c.{fmt}") as source:
        assert not source.use_threads
        units = list(source.units())
        assert [unit.num_rows for unit in units] == [3]
        assert units[0].column("s").type.extension_name == "fsstgpu.fsst"
    assert opened and opened[-1] is not None and not opened[-1].use_threads
    assert source._files == []


def test_a_chunk_metadata_check_covers_the_columns_named_or_all_for_a_dotted_name(
        tmp_path, monkeypatch):
    # guards which chunks check_chunk_metadata has pyarrow check: the columns named, every
    # column where a name has a dot (pyarrow would take "a.b" for a path into a struct "a");
    # mutant "'.' not in n"
    pq.write_table(pa.table({"a": [{"b": 1}, {"b": 2}], "a.b": ["x", "y"], "n": [1, 2]}),
                   tmp_path / "t.parquet", row_group_size=1)
    # (and with the source's use_threads, True here: mutant "use_threads=" dropped)
    checked = []

    def recording(parquet, row_group=0, *, use_threads=False, columns=None):
        checked.append((row_group, use_threads, columns))

    monkeypatch.setattr(rowgroups, "check_column_metadata", recording)
    with Source(tmp_path / "t.parquet") as source:
        source.check_chunk_metadata(1, {"n"})
        source.check_chunk_metadata(1, ["n", "a.b"])
    assert checked == [(1, True, ["n"]), (1, True, None)]


@pytest.mark.parametrize("fmt", ["parquet", "arrow", "arrows"])
def test_a_url_input_is_read_without_a_file_identity(tmp_path, fmt):
    # guards the reads of an input with no file descriptor (a URL: no identity to check it
    # against): mutant "self._identity is not None" forced True in check_unchanged
    write_table(pa.table({"s": ["a", "b", "c"]}), tmp_path / f"t.{fmt}", fmt, rows_per_unit=2)
    fs = fsspec.filesystem("memory")
    fs.pipe(f"/fsstgpu-rowgroups-mutants/t.{fmt}", (tmp_path / f"t.{fmt}").read_bytes())
    try:
        with Source(Url(f"memory://fsstgpu-rowgroups-mutants/t.{fmt}")) as source:
            assert source._identity is None
            assert [u["s"].to_pylist() for u in source.units()] == [["a", "b"], ["c"]]
            assert source.unit(1)["s"].to_pylist() == ["c"]
    finally:
        fs.rm("/fsstgpu-rowgroups-mutants", recursive=True)


def test_a_change_after_the_last_read_is_found_when_the_with_block_ends(tmp_path):
    # guards the check at a clean exit: the file grew after the reads ended (mutants of
    # __exit__'s "exc_type is None": False, negated, "is not")
    path = tmp_path / "t.parquet"
    write_table(pa.table({"s": ["a", "b", "c"]}), path, "parquet", rows_per_unit=2)
    with pytest.raises(CorruptDataError, match="the file was replaced or changed"):
        with Source(path) as source:
            assert source.unit(0).num_rows == 2
            with open(path, "ab") as f:
                f.write(b"more")
    assert source._files == []


def test_an_error_in_the_with_block_passes_through_unchanged(tmp_path):
    # guards the original error's passage: a block that raises is not checked (its file
    # changed: its error, not the change, reaches the caller); mutant "exc_type is None" True
    path = tmp_path / "t.parquet"
    write_table(pa.table({"s": ["a", "b", "c"]}), path, "parquet", rows_per_unit=2)
    with pytest.raises(KeyError, match="the caller's"):
        with Source(path) as source:
            with open(path, "ab") as f:
                f.write(b"more")
            raise KeyError("the caller's")
    assert source._files == []


def test_a_first_unit_asked_for_amid_units_is_not_yielded_again(tmp_path):
    # guards the kept first row group's place: yielded as row group 0 only, not in place of a
    # later one when first_unit() is called while units() runs (mutant "i == 0 and" dropped)
    path = tmp_path / "t.parquet"
    write_table(pa.table({"s": ["a", "b", "c"]}), path, "parquet", rows_per_unit=2)
    with Source(path) as source:
        units = source.units()
        assert next(units)["s"].to_pylist() == ["a", "b"]
        assert source.first_unit()["s"].to_pylist() == ["a", "b"]
        assert [unit["s"].to_pylist() for unit in units] == [["c"]]


def test_parquet_codecs_checks_the_first_row_groups_chunks_as_the_source_reads(
        tmp_path, monkeypatch):
    # guards parquet_codecs' check of row group 0 with the source's use_threads (True for a
    # file of plain columns): mutant "use_threads=" dropped (the check's default is False)
    pq.write_table(pa.table({"n": [1, 2]}), tmp_path / "t.parquet", compression="zstd")
    checked = []

    def recording(parquet, row_group=0, *, use_threads=False, columns=None):
        checked.append((row_group, use_threads, columns))

    monkeypatch.setattr(rowgroups, "check_column_metadata", recording)
    with Source(tmp_path / "t.parquet") as source:
        assert source.parquet_codecs() == {"n": "zstd"}
    assert checked == [(0, True, None)]


def test_a_unit_cast_back_keeps_the_schemas_metadata(tmp_path):
    # guards the metadata of a Parquet unit whose columns are cast back to the types written
    # (timestamp[s], read as [ms]): the file's schema metadata, not none (mutant "metadata="
    # dropped from _restored)
    table = pa.table({"t": pa.array([1, 2], pa.timestamp("s")), "s": ["a", "b"]})
    write_table(table.replace_schema_metadata({b"k": b"v"}), tmp_path / "t.arrow", "arrow")
    compress_file(tmp_path / "t.arrow", tmp_path / "c.parquet")
    with Source(tmp_path / "c.parquet") as source:
        assert source.schema.field("t").type == pa.timestamp("s")
        for unit in (source.unit(0), *source.units()):
            assert unit.schema.field("t").type == pa.timestamp("s")
            assert unit.schema.metadata == source.schema.metadata
            assert unit.schema.metadata[b"k"] == b"v"
