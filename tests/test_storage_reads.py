"""Row groups read through a storage-typed footer (``formats/storage_reads.py``), pyarrow's
threads on.

The footer must be the file's but for its stored schema (or not be made at all); what is read
through it must equal the reading threads' read of the same runs; no fsst type may be made on
pyarrow's threads; damage must be named by row group and column; a read left early must not
hang. Inputs are real text (this machine's) cut at random (seed from os.urandom, named in
failure messages).
"""

from __future__ import annotations

import os
import threading

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import fsstgpu
from fsstgpu import CorruptDataError
from fsstgpu.datasets.text_tables import machine_text_table
from fsstgpu.formats import compress_file
from fsstgpu.formats import device_reader as reader
from fsstgpu.formats.arrow import FsstType
from fsstgpu.formats.arrow_storage import from_extension_array, to_extension_array
from fsstgpu.formats.rowgroups import Source
from fsstgpu.formats.storage_reads import storage_footer, storage_runs


def _seed() -> int:
    return int.from_bytes(os.urandom(8), "little")


@pytest.fixture(scope="module")
def text() -> pa.Table:
    return machine_text_table(6_000)


def _file(tmp_path, text, rng, row_groups: int):
    rows = int(rng.integers(row_groups, text.num_rows))
    table = text.slice(int(rng.integers(0, text.num_rows - rows + 1)), rows)
    plain = tmp_path / "plain.parquet"
    pq.write_table(table, plain, row_group_size=-(-rows // row_groups))
    compress_file(plain, tmp_path / "c.parquet")
    return tmp_path / "c.parquet", table


def _checked(source):
    fsst = {f.name for f in source.schema if isinstance(f.type, FsstType)}

    def convert(run, name, parts):
        column = pa.chunked_array([c for p in parts for c in p.chunks], type=parts[0].type)
        if name in fsst:
            return fsstgpu.decompress(from_extension_array(column), device="cpu")
        return column

    return convert


@pytest.mark.parametrize("row_groups", [1, 7])
def test_storage_footer_is_the_files_but_its_schema(tmp_path, text, row_groups):
    seed = _seed()
    path, _ = _file(tmp_path, text, np.random.default_rng(seed), row_groups)
    with Source(path) as source:
        footer = storage_footer(source)
        meta = source.parquet_metadata
        read_as = source.read_schema
    assert footer is not None, seed
    stored = footer.schema.to_arrow_schema()
    for field in read_as:
        want = field.type.storage_type if isinstance(field.type, FsstType) else field.type
        assert stored.field(field.name).type == want, (seed, field.name)
    assert footer.num_row_groups == meta.num_row_groups
    for k in range(meta.num_row_groups):
        assert footer.row_group(k).to_dict() == meta.row_group(k).to_dict(), (seed, k)
    assert footer.metadata[b"ARROW:schema"] != meta.metadata[b"ARROW:schema"]


def test_no_storage_footer_where_it_cannot_be_exact(tmp_path):
    pq.write_table(pa.table({"s": ["a", "b"]}), tmp_path / "plain.parquet")
    ext = to_extension_array(fsstgpu.compress(pa.array(["ab", "cd"])))
    nested = pa.table({"l": pa.ListArray.from_arrays([0, 1, 2], ext)})
    pq.write_table(nested, tmp_path / "nested.parquet")
    for name in ("plain", "nested"):
        with Source(tmp_path / f"{name}.parquet") as source:
            assert storage_footer(source) is None, name


@pytest.mark.parametrize("group_rows", [1, 2_000, 1 << 40])
def test_storage_runs_read_as_the_reading_threads_do(tmp_path, text, group_rows):
    seed = _seed()
    path, table = _file(tmp_path, text, np.random.default_rng(seed), 9)
    made_on = set()
    deserialize = FsstType.__arrow_ext_deserialize__.__func__

    def spy(cls, storage_type, serialized):
        made_on.add(threading.current_thread().name)
        return deserialize(cls, storage_type, serialized)

    with Source(path) as source:
        footer = storage_footer(source)
        runs = reader.row_group_runs(source, group_rows)
        names = source.schema.names
        want = list(reader.parallel_units(source, convert=None))
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(FsstType, "__arrow_ext_deserialize__", classmethod(spy))
            got = list(storage_runs(source, footer, runs, names, _checked(source),
                                    readers=2, checkers=3))
    assert [run for run, _ in got] == runs, seed
    assert not made_on, (seed, made_on)  # no fsst type made on any thread, pyarrow's above all
    for name in names:
        joined = pa.chunked_array([c for _, unit in got for c in unit[name].chunks])
        cpu = pa.chunked_array([c for unit in want for c in unit[name].chunks])
        if name in {f.name for f in source.schema if isinstance(f.type, FsstType)}:
            cpu = fsstgpu.decompress(from_extension_array(cpu), device="cpu")
        assert joined.equals(cpu), (seed, name)
        assert joined.equals(table.column(name)), (seed, name)


def test_storage_runs_name_a_damaged_column(tmp_path, text):
    seed = _seed()
    rng = np.random.default_rng(seed)
    path, _ = _file(tmp_path, text, rng, 4)
    meta = pq.read_metadata(path)
    k = int(rng.integers(0, meta.num_row_groups))
    leaf = next(i for i in range(meta.num_columns)
                if meta.schema.column(i).path.endswith(".codes"))
    chunk = meta.row_group(k).column(leaf)
    start = chunk.data_page_offset
    raw = bytearray(path.read_bytes())
    where = start + chunk.total_compressed_size - 5  # inside the last page's payload
    raw[where] ^= 0x40
    path.write_bytes(bytes(raw))
    name = meta.schema.column(leaf).path.split(".")[0]
    with Source(path) as source:
        footer = storage_footer(source)
        runs = reader.row_group_runs(source, 1)
        with pytest.raises(CorruptDataError, match=f"row group {k}, column {name!r}"):
            list(storage_runs(source, footer, runs, source.schema.names, _checked(source),
                              readers=2, checkers=2))


def test_a_storage_read_left_early_does_not_hang(tmp_path, text):
    seed = _seed()
    path, _ = _file(tmp_path, text, np.random.default_rng(seed), 9)
    with Source(path) as source:
        footer = storage_footer(source)
        runs = reader.row_group_runs(source, 1)
        units = storage_runs(source, footer, runs, source.schema.names, _checked(source),
                             readers=1, checkers=1)
        next(units)
        units.close()  # nine runs queued, one slot each: the rest give up
