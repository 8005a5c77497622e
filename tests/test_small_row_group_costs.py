"""Per-row-group costs of files of many small row groups that are not the data's: what
fsstgpu's readers and writers pay once a row group (or a column chunk) beside pyarrow's own
work, kept from coming back.

Each test watches the call that cost the time (the timings are in the commits that removed
them), on a small file of many row groups of real text (the machine's own).
"""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fsstgpu import parallel
from fsstgpu.datasets.text_tables import machine_text_table
from fsstgpu.formats import (
    compress_file,
    compressing,
    decompress_file,
    parquet_compat,
    parquet_options,
    pipeline,
    pruning,
    read_table,
    sinks,
)
from fsstgpu.formats.chunk_record import ChunkRecord, chunk_digest, chunk_digests

ROWS, PER_GROUP = 600, 50


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("small_groups")
    table = machine_text_table(ROWS)
    src = str(d / "in.parquet")
    pq.write_table(table, src, row_group_size=PER_GROUP)
    out = str(d / "c.parquet")
    compress_file(src, out)
    return table, src, out


@pytest.fixture
def opened(monkeypatch):
    """The ``pre_buffer`` of every ``pq.ParquetFile`` fsstgpu's readers open."""
    seen = []
    real = pq.ParquetFile

    def spy(source, *args, **kwargs):
        seen.append((type(source), kwargs.get("pre_buffer", True)))
        return real(source, *args, **kwargs)

    monkeypatch.setattr(parquet_options.pq, "ParquetFile", spy)
    return seen


def test_local_reads_are_not_pre_buffered(files, opened):
    # pre-buffering hands each read's column chunks to pyarrow's I/O threads and back: on a
    # local file that cost 16-33% of reading small row groups' columns one by one
    table, src, out = files
    assert read_table(out, device="cpu").equals(table)
    assert decompress_file(out, out + ".d.parquet", device="cpu")["rows"] == ROWS
    assert compress_file(src, out + ".again.parquet")["rows"] == ROWS
    local = [pre for kind, pre in opened if kind is pa.OSFile]  # (the files; not schema probes)
    assert len(local) >= 3 and not any(local), opened


def test_python_files_stay_pre_buffered(files, opened):
    # a Python file (a URL's, through fsspec) keeps pyarrow's coalesced, read-ahead fetches
    _, _, out = files
    with open(out, "rb") as raw:
        parquet_options.open_parquet(pa.PythonFile(raw, mode="r"))
    assert opened == [(pa.PythonFile, True)]


def test_files_are_the_same_either_way(files, tmp_path, monkeypatch):
    # (only how pyarrow fetches the bytes changes: the values read are the file's)
    table, src, out = files
    real = pq.ParquetFile
    monkeypatch.setattr(parquet_options.pq, "ParquetFile",
                        lambda f, *a, **k: real(f, *a, **{**k, "pre_buffer": True}))
    assert read_table(out, device="cpu").equals(table)
    compress_file(src, str(tmp_path / "b.parquet"))
    monkeypatch.undo()
    compress_file(src, str(tmp_path / "a.parquet"))
    with open(tmp_path / "a.parquet", "rb") as a, open(tmp_path / "b.parquet", "rb") as b:
        assert a.read() == b.read()
    assert os.path.getsize(tmp_path / "a.parquet") > 0


def test_chunk_digests_inline_the_public_digest(files, tmp_path):
    # chunk_digests (the writers' record) and ChunkRecord.check (every read) pack a chunk's
    # place inline (half the cost a chunk of going through chunk_digest's tuple): the same
    # CRC32 as chunk_digest gives, with and without dictionary pages
    _, src, out = files
    plain = str(tmp_path / "plain.parquet")
    pq.write_table(machine_text_table(200), plain, row_group_size=64, use_dictionary=False)
    for path in (out, src, plain):
        meta = pq.read_metadata(path)
        expected = []
        for k in range(meta.num_row_groups):
            rg = meta.row_group(k)
            row = []
            for j in range(rg.num_columns):
                c = rg.column(j)
                row.append(chunk_digest(rg.num_rows, (
                    c.file_offset, c.num_values, c.total_uncompressed_size,
                    c.total_compressed_size, c.data_page_offset, c.dictionary_page_offset)))
            expected.append(row)
        assert chunk_digests(meta) == expected, path
    record = ChunkRecord.of(pq.read_metadata(out))
    for k in range(pq.read_metadata(out).num_row_groups):
        record.check(k, None)  # (every chunk of the file fsstgpu wrote, as written)


def test_sink_walks_its_types_once(files, tmp_path, monkeypatch):
    # the columns whose values check_readable_back must look at depend on the schema alone:
    # found once a file, not once a row group (~25 us a row group of five columns)
    calls = []
    real = parquet_compat.value_checked

    def spy(schema):
        calls.append(schema)
        return real(schema)

    monkeypatch.setattr(sinks, "value_checked", spy)
    monkeypatch.setattr(parquet_compat, "value_checked", spy)
    table, src, out = files
    compress_file(src, str(tmp_path / "c.parquet"))
    decompress_file(out, str(tmp_path / "d.parquet"), device="cpu")
    assert len(calls) == 2  # (one a Sink; check_readable_back asks for none of its own)
    assert pq.ParquetFile(str(tmp_path / "c.parquet")).num_row_groups == ROWS // PER_GROUP


def test_value_checked_columns_refuse_as_the_whole_table():
    # check_readable_back given value_checked's columns refuses what it refuses alone
    fsl = pa.list_(pa.int8(), 2)
    inner = pa.struct([pa.field("f", fsl, nullable=False)])
    schema = pa.schema([("s", pa.string()), pa.field("n", pa.int64(), nullable=False),
                        ("p", inner), ("q", pa.list_(pa.string()))])
    assert parquet_compat.value_checked(schema) == [1, 2]
    good = pa.table({"s": ["a", None], "n": [1, 2], "p": [{"f": [1, 2]}, {"f": [3, 4]}],
                     "q": [["x"], None]}, schema=schema)
    for columns in (None, [1, 2]):
        parquet_compat.check_readable_back(good, 2, columns)
    bad_nulls = good.set_column(1, schema.field(1), pa.chunked_array([pa.array([1, None])]))
    bad_lists = good.set_column(2, schema.field(2), pa.chunked_array([pa.array(
        [{"f": [1, 2]}, None], inner)]))
    for bad in (bad_nulls, bad_lists):
        with pytest.raises(ValueError) as alone:
            parquet_compat.check_readable_back(bad, 2)
        with pytest.raises(ValueError) as given:
            parquet_compat.check_readable_back(bad, 2, [1, 2])
        assert str(alone.value) == str(given.value)
    with pytest.raises(ValueError, match="rows without columns"):
        parquet_compat.check_readable_back(good.select([]), 2, [])


def test_small_bounds_ask_no_cores(monkeypatch):
    # a row group's string bounds take one thread below 65,536 strings (as string_bounds
    # itself cuts them): the same bounds without asking the affinity mask and the environment
    asked = []
    monkeypatch.setattr(parallel, "usable_cores", lambda: asked.append(1) or 2)
    values = pa.array(["kiwi", None, "apple", "banana"] * 100)
    assert pruning.bounds_of(values) == (b"apple", b"kiwi")
    assert not asked


@pytest.mark.parametrize("floor", [100, 10_000])
def test_a_file_of_one_run_is_cut_into_runs(files, tmp_path, monkeypatch, floor):
    # a run is written while the next is read and converted: a file whose rows fit one run
    # went through read, convert and write one after the other, so it is cut into RUN_PARTS
    # runs (of RUN_FLOOR rows at least), each row group still its own and the file the same
    table, src, out = files
    monkeypatch.setattr(pipeline, "RUN_FLOOR", floor)
    seen = []
    real = compressing.UnitCompressor.convert_run

    def spy(self, units, first):
        seen.append(sum(u.num_rows for u in units))
        return real(self, units, first)

    monkeypatch.setattr(compressing.UnitCompressor, "convert_run", spy)
    compress_file(src, str(tmp_path / "c.parquet"))
    per_run = max(floor, -(-ROWS // pipeline.RUN_PARTS))
    expected = [min(per_run // PER_GROUP * PER_GROUP, ROWS - k)
                for k in range(0, ROWS, per_run // PER_GROUP * PER_GROUP)]
    assert seen == expected
    assert len(seen) == (pipeline.RUN_PARTS if floor < ROWS else 1)
    with open(out, "rb") as a, open(tmp_path / "c.parquet", "rb") as b:
        assert a.read() == b.read()
