"""Files with fsst columns read through their storage footer (``formats/storage_footer.py``),
pyarrow's threads on.

The footer must be the file's but for its stored schema (or not be made at all); what every
reader gives through it must equal what it gives without it (``Source.storage_footer`` forced
to None); damage must still be named by row group and column. Inputs are real text (this
machine's) cut at random (seed from os.urandom, named in failure messages).
"""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import fsstgpu
import fsstgpu.formats.rowgroups as rowgroups
from fsstgpu import CorruptDataError
from fsstgpu.datasets.text_tables import machine_text_table
from fsstgpu.formats import compress_file, decompress_file, read_table
from fsstgpu.formats.arrow import FsstType
from fsstgpu.formats.arrow_storage import to_extension_array
from fsstgpu.formats.rowgroups import Source, open_file
from fsstgpu.formats.storage_footer import fsst_types, storage_footer, with_fsst_types
from fsstgpu.formats.unit_reads import parallel_units


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


def _footer(path):
    parquet = pq.ParquetFile(path)
    with open_file(path) as f:
        return storage_footer(f, parquet.metadata, parquet.schema_arrow), parquet


@pytest.mark.parametrize("row_groups", [1, 7])
def test_the_storage_footer_is_the_files_but_its_schema(tmp_path, text, row_groups):
    seed = _seed()
    path, _ = _file(tmp_path, text, np.random.default_rng(seed), row_groups)
    footer, parquet = _footer(path)
    assert footer is not None, seed
    stored = footer.schema.to_arrow_schema()
    for field in parquet.schema_arrow:
        want = field.type.storage_type if isinstance(field.type, FsstType) else field.type
        assert stored.field(field.name).type == want, (seed, field.name)
    assert footer.num_row_groups == parquet.metadata.num_row_groups
    for k in range(footer.num_row_groups):
        assert footer.row_group(k).to_dict() == parquet.metadata.row_group(k).to_dict(), seed
    assert footer.metadata[b"ARROW:schema"] != parquet.metadata.metadata[b"ARROW:schema"]
    with Source(path) as source:
        assert source.storage_footer is not None
        for k in range(footer.num_row_groups):  # through it, the file's own row groups
            got = pq.ParquetFile(path, metadata=footer).read_row_group(k)
            assert with_fsst_types(got, fsst_types(parquet.schema_arrow)).equals(
                parquet.read_row_group(k, use_threads=False)), (seed, k)


def test_no_storage_footer_where_it_cannot_be_exact(tmp_path):
    pq.write_table(pa.table({"s": ["a", "b"]}), tmp_path / "plain.parquet")
    ext = to_extension_array(fsstgpu.compress(pa.array(["ab", "cd"])))
    pq.write_table(pa.table({"l": pa.ListArray.from_arrays([0, 1, 2], ext)}),
                   tmp_path / "nested.parquet")
    pq.write_table(pa.table({"s": ext}), tmp_path / "no_schema.parquet", store_schema=False)
    for name in ("plain", "nested", "no_schema"):
        footer, _ = _footer(tmp_path / f"{name}.parquet")
        assert footer is None, name
        if name != "no_schema":  # (which Source refuses: its tables were in that schema)
            with Source(tmp_path / f"{name}.parquet") as source:
                assert source.storage_footer is None, name
    (tmp_path / "cut.parquet").write_bytes((tmp_path / "plain.parquet").read_bytes()[:-3])
    with open_file(tmp_path / "cut.parquet") as f:
        assert storage_footer(f, pq.read_metadata(tmp_path / "plain.parquet"),
                              pa.schema([("s", ext.type)])) is None


@pytest.mark.parametrize("row_groups", [1, 9])
def test_every_reader_gives_the_same_through_it(tmp_path, text, row_groups, monkeypatch):
    seed = _seed()
    path, table = _file(tmp_path, text, np.random.default_rng(seed), row_groups)
    results = {}
    for through in (True, False):
        if not through:
            monkeypatch.setattr(rowgroups, "storage_footer", lambda *a: None)
        with Source(path) as source:
            assert (source.storage_footer is not None) == through, seed
            units = [source.unit(k) for k in range(source.num_units)]
            assert pa.concat_tables(list(source.units())).equals(pa.concat_tables(units))
            parallel = [u for u in parallel_units(source, workers=3)]
        out = tmp_path / f"d{through}.parquet"
        decompress_file(path, out)
        results[through] = (units, parallel, read_table(path, device="cpu"),
                            pq.read_table(out))
    for got, want in zip(results[True], results[False], strict=True):
        assert got == want if isinstance(got, list) else got.equals(want), seed
    assert results[True][2].equals(table), seed


def test_a_damaged_column_is_named_through_it(tmp_path, text):
    seed = _seed()
    rng = np.random.default_rng(seed)
    path, _ = _file(tmp_path, text, rng, 4)
    meta = pq.read_metadata(path)
    k = int(rng.integers(0, meta.num_row_groups))
    leaf = next(i for i in range(meta.num_columns)
                if meta.schema.column(i).path.endswith(".codes"))
    chunk = meta.row_group(k).column(leaf)
    raw = bytearray(path.read_bytes())
    raw[chunk.data_page_offset + chunk.total_compressed_size - 5] ^= 0x40  # a page payload's
    path.write_bytes(bytes(raw))
    name = meta.schema.column(leaf).path.split(".")[0]
    with Source(path) as source:
        assert source.storage_footer is not None
        with pytest.raises(CorruptDataError, match=f"row group {k}, column {name!r}"):
            list(parallel_units(source, workers=2))
        with pytest.raises(CorruptDataError, match=f"row group {k}"):
            list(source.units())
    with pytest.raises(CorruptDataError, match=f"row group {k}"):
        read_table(path, device="cpu")
