"""An fsst column's row groups read from their pages raw (formats/raw_columns.py) equal
pyarrow's read of the same storage, on compress_file outputs of real text (this machine's and
dbtext), zstd and uncompressed pages, with nulls, long strings (cuts), repeating lines (codes
dictionary-encoded) and sorted ones (DELTA_BYTE_ARRAY); damaged pages raise CorruptDataError."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fsstgpu import native
from fsstgpu.datasets import dbtext_dir, dbtext_table, machine_text_table
from fsstgpu.errors import CorruptDataError
from fsstgpu.formats.arrow_read import is_fsst_type
from fsstgpu.formats.parquet_options import leaf_columns
from fsstgpu.formats.raw_columns import Unsupported, read_fsst_chunk
from fsstgpu.formats.raw_pages import chunk_pages, chunk_span, decompressed, read_span
from fsstgpu.kernels.gather import gather_segments_cpu

sys.path.insert(0, str(Path(__file__).parent))
from damaged_pages import flip_in_last_page  # noqa: E402
from long_strings import with_nulls_and_long  # noqa: E402


def _table(which: str, rng) -> pa.Table:
    if which == "dbtext":
        if dbtext_dir() is None:
            pytest.skip("dbtext corpus not found (set FSSTGPU_DBTEXT or run beside shared/)")
        table = dbtext_table()
        return table.take(np.sort(rng.choice(len(table), 50_000, replace=False)))
    # long strings: cut inside (the cuts leaf holds values)
    return with_nulls_and_long(machine_text_table(30_000), rng, null_share=0.2, longest=9000,
                               fill="x")


@pytest.fixture(scope="module", params=["machine", "dbtext"])
def files(request, tmp_path_factory, zstd_and_plain):
    rng = np.random.default_rng(81)
    table = _table(request.param, rng)
    return zstd_and_plain(table, tmp_path_factory.mktemp("rawcol"))


def _fsst_fields(path):
    f = pq.ParquetFile(path)
    schema = f.schema_arrow
    leaves = leaf_columns(schema, f.metadata.num_columns)
    return f, [(schema.field(n), leaves[n]) for n in schema.names
               if is_fsst_type(schema.field(n).type)]


@pytest.mark.parametrize("codec", ["zstd", "none"])
def test_every_fsst_row_group_reads_as_pyarrow_reads_it(files, codec):
    path = files[codec]
    f, fields = _fsst_fields(path)
    assert len(fields) >= 1
    whole = pq.read_table(path)
    for field, leaves in fields:
        for k in range(f.metadata.num_row_groups):
            got = read_fsst_chunk(path, f.metadata, field, leaves, k)
            want = f.read_row_group(k, columns=[field.name]).column(0).combine_chunks()
            want = want.storage if isinstance(want, pa.ExtensionArray) else want
            assert got.equals(want), (field.name, k)
            assert got.type == want.type
        assert whole.num_rows == f.metadata.num_rows


def test_the_files_have_the_encodings_the_reader_takes(files):
    """What the test above covered: the codes in DELTA_LENGTH_BYTE_ARRAY, and (this machine's
    text) dictionary-encoded and DELTA_BYTE_ARRAY codes, and cuts with values."""
    f = pq.ParquetFile(files["zstd"])
    found = {(f.metadata.row_group(k).column(j).path_in_schema.split(".")[-1], enc)
             for k in range(f.metadata.num_row_groups)
             for j in range(f.metadata.num_columns)
             for enc in f.metadata.row_group(k).column(j).encodings}
    assert ("codes", "DELTA_LENGTH_BYTE_ARRAY") in found or ("codes", "DELTA_BYTE_ARRAY") \
        in found
    assert ("table", "RLE_DICTIONARY") in found


def _damaged(path, tmp_path, leaf_name, fresh_rng):
    f, fields = _fsst_fields(path)
    field, leaves = fields[0]
    j = leaves[["codes", "lengths", "cuts", "table"].index(leaf_name)]
    bad = tmp_path / f"bad_{leaf_name}.parquet"
    flip_in_last_page(path, f.metadata.row_group(0).column(j), bad, fresh_rng, 0x20)
    return bad, f.metadata, field, leaves


@pytest.mark.parametrize("leaf", ["codes", "lengths", "table"])
def test_a_flipped_byte_in_a_leaf_is_corrupt_data(files, tmp_path, fresh_rng, leaf):
    bad, metadata, field, leaves = _damaged(files["zstd"], tmp_path, leaf, fresh_rng)
    with pytest.raises(CorruptDataError, match=f"row group 0, column {field.name}.{leaf}"):
        read_fsst_chunk(bad, metadata, field, leaves, 0)


def test_unchecked_damage_still_errs_or_reads_never_crashes(files, tmp_path, fresh_rng):
    """With the CRCs not checked, damaged pages reach the decoders: a clean error or a
    result, never a crash (the sanitizer fuzz covers the decoders' bounds)."""
    for leaf in ("codes", "lengths", "table") * 4:
        bad, metadata, field, leaves = _damaged(files["none"], tmp_path, leaf, fresh_rng)
        try:
            read_fsst_chunk(bad, metadata, field, leaves, 0, check=False)
        except (CorruptDataError, Unsupported):
            pass


def test_a_plain_column_is_not_taken(files):
    f = pq.ParquetFile(files["zstd"])
    schema = f.schema_arrow
    plain = next(fld for fld in schema if not is_fsst_type(fld.type))
    with pytest.raises(Unsupported):
        read_fsst_chunk(files["zstd"], f.metadata, plain, [0, 1, 2, 3], 0)


@pytest.mark.parametrize("codec", ["zstd", "none"])
def test_codes_left_in_place_are_the_codes(files, codec):
    """``decode_leaf(in_place=True)``, what a device reader will use: the codes' runs in the
    page bodies (and in ``data`` for pages that had to be decoded) end to end are the codes
    the copying decode gives, with the same offsets."""
    path = files[codec]
    f, fields = _fsst_fields(path)
    size = os.path.getsize(path)
    fd = os.open(path, os.O_RDONLY)
    left_in_place = 0
    try:
        for _, leaves in fields:
            for k in range(f.metadata.num_row_groups):
                col = f.metadata.row_group(k).column(leaves[0])  # the codes
                raw = read_span(fd, *chunk_span(col, size, "x"), "x")
                pages = chunk_pages(raw, col.num_values, "x")
                bodies = [decompressed(raw, p, col.compression) for p in pages]
                meta = np.array([({"data": 0, "data_v2": 1, "dictionary": 2}[p.kind],
                                  p.encoding, p.levels_encoding, p.num_values,
                                  p.rep_levels_size, p.levels_size) for p in pages])
                max_def = f.schema.column(leaves[0]).max_definition_level
                rows = f.metadata.row_group(k).num_rows
                copied = native.decode_leaf(bodies, meta, native.LEAF_BYTES, max_def,
                                            max_rows=rows)
                placed = native.decode_leaf(bodies, meta, native.LEAF_BYTES, max_def,
                                            max_rows=rows, in_place=True)
                assert np.array_equal(copied[2], placed[2])
                runs = [(placed[3] if b < 0 else np.frombuffer(bodies[b], np.uint8))[s : s + n]
                        for b, s, n in placed[8]]
                joined = np.concatenate(runs) if runs else np.zeros(0, np.uint8)
                assert np.array_equal(joined, copied[3])
                left_in_place += int((placed[8][:, 0] >= 0).sum()) if len(placed[8]) else 0
    finally:
        os.close(fd)
    assert left_in_place  # (some pages' codes were left where they are)


@pytest.mark.parametrize("codec", ["zstd", "none"])
def test_codes_in_place_starts_gather_the_codes(files, codec):
    """``read_fsst_chunk(codes_in_place=True)``: the storage equal but for its codes (an unread
    placeholder of their size), and each row's start in the codes chunk's bytes (or the decoded
    bytes): a segment a row, gathered by the device kernel's twin, is exactly pyarrow's
    codes."""
    path = files[codec]
    f, fields = _fsst_fields(path)
    size = os.path.getsize(path)
    in_chunk = 0
    for field, leaves in fields:
        for k in range(f.metadata.num_row_groups):
            fd = os.open(path, os.O_RDONLY)
            try:
                raws = [read_span(fd, *chunk_span(f.metadata.row_group(k).column(j), size, "x"),
                                  "x") for j in leaves]
            finally:
                os.close(fd)
            storage, starts, data = read_fsst_chunk(path, f.metadata, field, leaves, k,
                                                    raws=raws, codes_in_place=True)
            want = f.read_row_group(k, columns=[field.name]).column(0).combine_chunks()
            want = want.storage if isinstance(want, pa.ExtensionArray) else want
            for name in ("lengths", "cuts", "table"):
                assert storage.field(name).equals(want.field(name))
            codes = want.field("codes")
            assert np.array_equal(np.frombuffer(storage.field("codes").buffers()[1], np.int64),
                                  np.frombuffer(codes.buffers()[1], np.int64)[: len(codes) + 1])
            chunk = np.frombuffer(raws[0], np.uint8)
            offsets = np.frombuffer(storage.field("codes").buffers()[1], np.int64)
            gathered = gather_segments_cpu(chunk, data, starts, offsets[: len(starts) + 1])
            assert gathered.tobytes() == b"".join(v or b"" for v in codes.to_pylist())
            in_chunk += int((starts > 0).sum())
    assert (in_chunk > 0) == (codec == "none")  # (zstd pages' codes are decoded copies)
