"""The direct file -> GPU reader (formats/direct_reader.py, issue #24 item 2): which files it
takes (its plan, CPU-tested), and on the GPU its columns equal to the CPU read of the same file
byte for byte (fresh random rows of real text with nulls and long strings; the device pool
poisoned first), compressed-page files left to the usual reader, damaged pages refused."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from fsstgpu.datasets import machine_text_table
from fsstgpu.errors import CorruptDataError
from fsstgpu.formats import read_table
from fsstgpu.formats.direct_reader import _host_part, direct_plan, read_fsst_direct
from fsstgpu.formats.rowgroups import Source
from fsstgpu.kernels.gather import gather_segments_cpu

sys.path.insert(0, str(Path(__file__).parent))
from damaged_pages import flip_in_last_page  # noqa: E402
from gpu_poison import poison_pool  # noqa: E402
from long_strings import with_nulls_and_long  # noqa: E402


def _table(rng, rows: int = 20_000) -> pa.Table:
    table = machine_text_table(rows)
    table = table.take(np.sort(rng.choice(len(table), rows // 2, replace=False)))
    return with_nulls_and_long(table, rng, null_share=0.15, longest=6000, fill="y")


@pytest.fixture
def files(fresh_rng, tmp_path, zstd_and_plain):
    return zstd_and_plain(_table(fresh_rng), tmp_path)


def test_the_plan_takes_uncompressed_pages_only(files):
    with Source(files["none"]) as source:
        plan = direct_plan(source)
        names = [f.name for f in source.schema if "fsst" in str(f.type)]
    assert plan is not None and [f.name for f, _, _ in plan] == names
    assert all(len(spans) == 4 for _, _, groups in plan for _, spans in groups)
    with Source(files["zstd"]) as source:
        assert direct_plan(source) is None


def test_a_file_without_fsst_columns_is_not_planned(tmp_path):
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"x": [1, 2]}), tmp_path / "p.parquet")
    with Source(tmp_path / "p.parquet") as source:
        assert direct_plan(source) is None


def test_the_host_part_lays_out_every_codes_chunk(files):
    """What the device does, on the CPU: the chunks read into one buffer, each row group's
    host part, its rows' segments gathered by the kernel's twin: pyarrow's codes for that row
    group and column; dictionary-encoded codes among them, left in their dictionary page."""
    import pyarrow.parquet as pq

    path = files["none"]
    with Source(path) as source:
        plan = direct_plan(source)
        jobs = [(field, columns, k, spans) for field, columns, groups in plan
                for k, spans in groups]
        raw = np.frombuffer(path.read_bytes(), np.uint8)
        buffer, where = [], []
        at = 0
        for *_, spans in jobs:
            where.append([])
            for start, size in spans:
                buffer.append(raw[start : start + size])
                where[-1].append((at, size))
                at += size
        buffer = np.concatenate(buffer)
        decoded = [_host_part(source, *job, w, buffer) for job, w in
                   zip(jobs, where, strict=True)]
    f = pq.ParquetFile(path)
    in_place = 0
    for (field, columns, k, _), (_, starts, offsets, extra) in zip(jobs, decoded, strict=True):
        want = f.read_row_group(k, columns=[field.name]).column(0).chunk(0).storage
        want_bytes = b"".join(v for v in want.field("codes").to_pylist() if v)
        assert gather_segments_cpu(buffer, extra, starts, offsets).tobytes() == want_bytes
        encodings = f.metadata.row_group(k).column(columns[0]).encodings
        in_place += "RLE_DICTIONARY" in encodings and not len(extra)
    assert in_place  # (dictionary-encoded codes gathered from their dictionary page)


@pytest.mark.gpu
def test_the_direct_read_is_the_cpu_read(files):
    import cupy as cp

    poison_pool(cp)
    got = read_fsst_direct(files["none"])
    want = read_table(files["none"], device="cpu")
    assert got and set(got) <= set(want.column_names)
    for name, column in got.items():
        arr = column.to_arrow()
        arr = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
        assert arr.equals(want.column(name).combine_chunks()), name
    assert read_fsst_direct(files["zstd"]) is None


@pytest.mark.gpu
def test_a_damaged_codes_page_is_corrupt_data(files, tmp_path, fresh_rng):
    path = files["none"]
    with Source(path) as source:
        field, columns, groups = direct_plan(source)[0]
        meta = source.parquet_metadata
    bad = tmp_path / "bad.parquet"
    flip_in_last_page(path, meta.row_group(0).column(columns[0]), bad, fresh_rng, 0x04)
    with pytest.raises(CorruptDataError, match="CRC"):
        read_fsst_direct(bad)
