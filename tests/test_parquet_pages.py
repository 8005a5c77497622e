"""formats/parquet_pages.py: DELTA_LENGTH_BYTE_ARRAY column chunks read raw, against pyarrow's
reading of the same files (codecs, page versions, several pages, nulls), and damaged chunks."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fsstgpu.errors import CorruptDataError
from fsstgpu.formats import compress_file
from fsstgpu.formats.parquet_pages import (
    NotRaw,
    parse_page_header,
    read_dlba_chunk,
    read_leaf_chunk,
)


def _column(rng, n, *, nulls=True):
    lengths = rng.integers(0, rng.choice([3, 40, 3000]), n)
    data = rng.integers(0, 256, int(lengths.sum()), dtype=np.uint8).tobytes()
    ends = np.cumsum(lengths)
    values = [data[int(e - ln):int(e)] for e, ln in zip(ends, lengths, strict=True)]
    if nulls:
        values = [None if rng.random() < 0.1 else v for v in values]
    return pa.array(values, pa.binary())


def _write(path, col, **options):
    pq.write_table(pa.table({"b": col}), path, use_dictionary=False,
                   column_encoding={"b": "DELTA_LENGTH_BYTE_ARRAY"}, write_page_checksum=True,
                   **options)


def _read(path, *, rg=0, col=0, max_def=1):
    meta = pq.ParquetFile(path).metadata.row_group(rg).column(col)
    with open(path, "rb") as f:
        return read_dlba_chunk(f, meta, max_definition_level=max_def)


def _expect(col):
    values = [v for v in col.to_pylist() if v is not None]
    return [len(v) for v in values], b"".join(values)


@pytest.mark.parametrize("codec", ["none", "zstd", "snappy", "gzip", "brotli"])
@pytest.mark.parametrize("version", ["1.0", "2.0"])
def test_raw_read_equals_pyarrow(tmp_path, codec, version):
    rng = np.random.default_rng()
    for nulls in (True, False):
        col = _column(rng, int(rng.integers(0, 3000)), nulls=nulls)
        path = tmp_path / f"{nulls}.parquet"
        # small pages: a chunk of many pages
        _write(path, col, compression=codec, data_page_version=version,
               data_page_size=int(rng.choice([512, 4096, 1 << 20])))
        got = _read(path)
        lengths, data = _expect(col)
        assert got.lengths.tolist() == lengths and got.data.tobytes() == data
        assert got.rows == len(col)


def test_raw_codes_of_an_fsst_file(tmp_path):
    """The codes leaf of compress_file's output, raw, is the storage's codes."""
    rng = np.random.default_rng()
    lines = [f"https://example.org/{rng.integers(0, 500)}/page{i}.html" if i % 13 else None
             for i in range(20000)]
    src, out = tmp_path / "a.parquet", tmp_path / "b.parquet"
    pq.write_table(pa.table({"s": lines}), src, row_group_size=7000)
    compress_file(src, out, parquet_codec=str(rng.choice(["zstd", "none"])))
    f = pq.ParquetFile(out)
    leaves = [f.metadata.schema.column(j).path for j in range(f.metadata.num_columns)]
    j = leaves.index("s.codes")
    max_def = f.metadata.schema.column(j).max_definition_level
    for rg in range(f.metadata.num_row_groups):
        got = _read(out, rg=rg, col=j, max_def=max_def)
        storage = f.read_row_group(rg, columns=["s"]).column(0).combine_chunks().storage
        codes = storage.field("codes").filter(storage.is_valid())
        assert got.lengths.tolist() == [len(v) for v in codes.to_pylist()]
        assert got.data.tobytes() == b"".join(codes.to_pylist())


@pytest.mark.parametrize("kind", ["bytes plain", "bytes dictionary", "int32 plain",
                                  "int32 dictionary", "int64 plain", "int64 dictionary"])
@pytest.mark.parametrize("version", ["1.0", "2.0"])
def test_leaf_layouts_equal_pyarrow(tmp_path, kind, version):
    """Every layout an fsst column's leaves are written in: definition levels and values as
    pyarrow reads them, over several pages, with and without nulls, required or not."""
    rng = np.random.default_rng()
    n = int(rng.integers(0, 5000))
    what, how = kind.split()
    if what == "bytes":
        pool = [bytes(rng.integers(0, 256, int(rng.integers(0, 30)), dtype=np.uint8))
                for _ in range(int(rng.integers(1, 40)))]
        values = [pool[int(i)] for i in rng.integers(0, len(pool), n)]
        type_ = pa.binary()
    else:
        top = 2**31 if what == "int32" else 2**63
        values = rng.integers(-top, top, n).tolist() if how == "plain" else \
            rng.integers(0, 50, n).tolist()
        type_ = pa.int32() if what == "int32" else pa.int64()
    nullable = bool(rng.random() < 0.7)
    if nullable:
        values = [None if rng.random() < 0.2 else v for v in values]
    field = pa.field("c", type_, nullable=nullable)
    path = tmp_path / "a.parquet"
    pq.write_table(pa.table({"c": pa.array(values, type_)}, schema=pa.schema([field])), path,
                   use_dictionary=how == "dictionary", write_page_checksum=True,
                   data_page_version=version, data_page_size=int(rng.choice([256, 1 << 20])),
                   compression=str(rng.choice(["none", "zstd", "snappy"])))
    got = _read_leaf(path, max_def=int(nullable))
    present = [v for v in values if v is not None]
    assert got.rows == n
    if nullable and None in values:
        assert got.defs.tolist() == [int(v is not None) for v in values]
    else:
        assert got.defs is None  # every row at the leaf's maximum level
    if what != "bytes":
        assert got.ints.tolist() == present
    elif got.indices is not None:
        assert how == "dictionary"
        assert [got.dictionary[i] for i in got.indices.tolist()] == present
    else:
        assert got.lengths.tolist() == [len(v) for v in present]
        assert got.data.tobytes() == b"".join(present)


def _read_leaf(path, *, max_def):
    meta = pq.ParquetFile(path).metadata.row_group(0).column(0)
    with open(path, "rb") as f:
        return read_leaf_chunk(f, meta, max_definition_level=max_def)


def test_other_layouts_are_not_raw(tmp_path):
    path = tmp_path / "a.parquet"
    pq.write_table(pa.table({"b": [b"x", b"y"] * 50}), path, use_dictionary=False,
                   column_encoding={"b": "DELTA_BYTE_ARRAY"})
    with pytest.raises(NotRaw, match="encoding 7"):
        _read(path, max_def=1)
    pq.write_table(pa.table({"b": [b"x", b"y"] * 50}), path)  # dictionary-encoded
    with pytest.raises(NotRaw, match="dictionary"):
        _read(path, max_def=1)
    pq.write_table(pa.table({"d": [1.5, 2.5]}), path)
    with pytest.raises(NotRaw, match="physical type DOUBLE"):
        _read_leaf(path, max_def=1)
    pq.write_table(pa.table({"l": [[1, 2], [3]]}), path, use_dictionary=False,
                   data_page_version="2.0")
    with pytest.raises(NotRaw, match="repetition"):
        _read_leaf(path, max_def=3)  # v2 pages say so themselves
    meta = pq.ParquetFile(path).metadata.row_group(0).column(0)
    with open(path, "rb") as f, pytest.raises(NotRaw, match="repetition"):
        read_leaf_chunk(f, meta, max_definition_level=3, max_repetition_level=1)


def test_damaged_chunks_raise(tmp_path):
    rng = np.random.default_rng()
    col = _column(rng, 2000)
    path = tmp_path / "a.parquet"
    _write(path, col, compression="zstd", data_page_size=2048)
    raw = bytearray(path.read_bytes())
    meta = pq.ParquetFile(path).metadata.row_group(0).column(0)
    start, size = meta.data_page_offset, meta.total_compressed_size
    header, body = parse_page_header(bytes(raw), start, start + size)
    flipped = bytearray(raw)
    flipped[body + 3] ^= 0x10  # inside the first page's payload: its CRC says so
    (tmp_path / "f.parquet").write_bytes(flipped)
    with open(tmp_path / "f.parquet", "rb") as f, pytest.raises(CorruptDataError, match="CRC"):
        read_dlba_chunk(f, meta, max_definition_level=1)
    (tmp_path / "t.parquet").write_bytes(raw[:start + size // 2])  # the chunk cut short
    with open(tmp_path / "t.parquet", "rb") as f, pytest.raises(CorruptDataError,
                                                                   match="does not fit"):
        read_dlba_chunk(f, meta, max_definition_level=1)
    # any damage to the chunk: an error naming it, or (a header's unused field) the same values
    lengths, data = _expect(col)
    for _ in range(300):
        forged = bytearray(raw)
        for _ in range(int(rng.integers(1, 4))):
            forged[start + int(rng.integers(0, size))] = int(rng.integers(0, 256))
        (tmp_path / "x.parquet").write_bytes(forged)
        try:
            with open(tmp_path / "x.parquet", "rb") as f:
                got = read_dlba_chunk(f, meta, max_definition_level=1)
        except (CorruptDataError, NotRaw):
            continue
        assert got.lengths.tolist() == lengths and got.data.tobytes() == data


def test_page_header_garbage_raises():
    for raw in (b"", b"\x15", b"\x15\x00\x15\x0a", b"\x1c" * 20, b"\x19\xfc" + b"\x11" * 30,
                b"\x15\x00\x15\x01\x15\x01\x8f"):
        with pytest.raises(CorruptDataError):
            parse_page_header(raw, 0, len(raw))
    header, end = parse_page_header(b"\x15\x00\x15\x0a\x15\x08\x00", 0, 7)
    assert (header.type, header.uncompressed_size, header.compressed_size, end) == (0, 5, 4, 7)
