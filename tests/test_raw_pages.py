"""A column chunk's pages read raw (formats/raw_pages.py), the host side of issue #24 item 2's
file -> GPU read: on compress_file's outputs of real text (this machine's, and dbtext where it
is here), every fsst leaf's chunks parse, their CRCs hold, their payloads decompress to their
headers' sizes, and a codes page (DELTA_LENGTH_BYTE_ARRAY) ends with its rows' codes exactly,
the bytes a device reader uploads and decodes. Damaged chunks raise CorruptDataError."""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fsstgpu.datasets import dbtext_dir, dbtext_table, machine_text_table
from fsstgpu.errors import CorruptDataError
from fsstgpu.formats.raw_pages import check_crcs, chunk_pages, chunk_span, decompressed, read_span

sys.path.insert(0, str(Path(__file__).parent))
from damaged_pages import changed_chunk  # noqa: E402
from page_header_model import model_headers  # noqa: E402

DELTA_LENGTH_BYTE_ARRAY = 6


def _text_table(which: str) -> pa.Table:
    if which == "dbtext":
        if dbtext_dir() is None:
            pytest.skip("dbtext corpus not found (set FSSTGPU_DBTEXT or run beside shared/)")
        table = dbtext_table()  # every 23rd line: all the corpus' files mixed, none sorted
        return table.take(np.arange(0, len(table), 23))
    table = machine_text_table(20_000)
    strings = [n for n, c in zip(table.column_names, table.columns, strict=True)
               if pa.types.is_string(c.type)]
    # some nulls, so the pages' definition levels and empty codes are in play
    first = table.column(strings[0])
    mask = pa.array(np.arange(len(table)) % 7 == 3)
    return table.set_column(table.schema.get_field_index(strings[0]), strings[0],
                            pa.compute.if_else(mask, pa.scalar(None, first.type), first))


def _chunks(path):
    """(where, meta, raw) of every fsst leaf's column chunk of the file at ``path``."""
    meta = pq.ParquetFile(path).metadata
    size = os.path.getsize(path)
    fd = os.open(path, os.O_RDONLY)
    try:
        for r in range(meta.num_row_groups):
            group = meta.row_group(r)
            for c in range(group.num_columns):
                col = group.column(c)
                leaf = col.path_in_schema
                if leaf.split(".")[-1] not in ("codes", "lengths", "cuts", "table"):
                    continue
                where = f"{path}: row group {r}, column {leaf}"
                start, n = chunk_span(col, size, where)
                yield where, col, read_span(fd, start, n, where)
    finally:
        os.close(fd)


@pytest.fixture(scope="module", params=["machine", "dbtext"])
def written(request, tmp_path_factory, zstd_and_plain):
    table = _text_table(request.param)
    return zstd_and_plain(table, tmp_path_factory.mktemp("raw"))


@pytest.mark.parametrize("codec", ["zstd", "none"])
def test_every_fsst_chunk_parses_checks_and_decompresses(written, codec):
    seen = set()
    for where, col, raw in _chunks(written[codec]):
        pages = chunk_pages(raw, col.num_values, where)
        check_crcs(raw, pages, where)
        assert all(p.crc is not None for p in pages)  # (our files carry a CRC a page)
        for page in pages:
            assert len(decompressed(raw, page, col.compression)) == page.uncompressed_size
        seen.add(col.path_in_schema.split(".")[-1])
        assert col.compression == ("ZSTD" if codec == "zstd" else "UNCOMPRESSED")
    assert {"codes", "lengths", "table"} <= seen


@pytest.mark.parametrize("codec", ["zstd", "none"])
def test_a_codes_page_ends_with_its_rows_codes(written, codec):
    """What the device reader will rely on: a DELTA_LENGTH_BYTE_ARRAY page of the codes is
    its levels and the codes' lengths, then its rows' codes end to end."""
    path = written[codec]
    storage = pq.read_table(path)  # (pyarrow's own read: the fsst columns' storage structs)
    checked = 0
    for where, col, raw in _chunks(path):
        leaf = col.path_in_schema
        if not leaf.endswith(".codes"):
            continue
        r = int(where.split("row group ")[1].split(",")[0])
        group = pq.ParquetFile(path).metadata.row_group(r)
        first_row = sum(pq.ParquetFile(path).metadata.row_group(k).num_rows for k in range(r))
        column = storage.column(leaf.split(".")[0]).combine_chunks()
        codes = (column.storage if hasattr(column, "storage") else column).field("codes")
        pages = [p for p in chunk_pages(raw, col.num_values, where) if p.kind != "dictionary"]
        if any(p.encoding != DELTA_LENGTH_BYTE_ARRAY for p in pages):
            continue  # (codes that repeat are dictionary-encoded, prefixed ones DELTA_BYTE_ARRAY)
        row = first_row
        for page in pages:
            want = b"".join(v or b"" for v in codes.slice(row, page.num_values).to_pylist())
            body = decompressed(raw, page, col.compression)
            assert body.endswith(want) and len(body) > len(want), where
            row += page.num_values
            checked += 1
        assert row == first_row + group.num_rows
    assert checked


def _one_chunk(written):
    where, col, raw = next(c for c in _chunks(written["zstd"])
                           if c[0].endswith(".codes"))
    return where, col, raw


def test_a_flipped_byte_in_a_page_fails_its_crc(written):
    where, col, raw = _one_chunk(written)
    pages = chunk_pages(raw, col.num_values, where)
    page = pages[-1]
    bad = bytearray(raw)
    bad[page.start + page.size // 2] ^= 0x10
    with pytest.raises(CorruptDataError, match="fails its CRC check"):
        check_crcs(bytes(bad), pages, where)


def test_damaged_chunks_raise_naming_the_chunk(written, fresh_rng):
    where, col, raw = _one_chunk(written)
    with pytest.raises(CorruptDataError, match="runs past|ends inside|malformed"):
        chunk_pages(raw[: len(raw) - 5], col.num_values, where)
    with pytest.raises(CorruptDataError, match="footer says"):
        chunk_pages(raw, col.num_values + 1, where)
    with pytest.raises(CorruptDataError, match="page type"):
        chunk_pages(b"\x15\x08" + raw[2:], col.num_values, where)  # PageType 4 (no such)
    # any damage of the headers: CorruptDataError or the same pages, never another error
    pages = chunk_pages(raw, col.num_values, where)
    heads = [0] + [p.start + p.size for p in pages[:-1]]
    for _ in range(300):
        bad = bytearray(raw)
        at = heads[int(fresh_rng.integers(0, len(heads)))] + int(fresh_rng.integers(0, 12))
        bad[min(at, len(bad) - 1)] = int(fresh_rng.integers(0, 256))
        try:
            chunk_pages(bytes(bad), col.num_values, where)
        except CorruptDataError as exc:
            assert where in str(exc)


def test_a_chunk_outside_the_file_or_cut_short_is_refused(written, tmp_path):
    path = written["zstd"]
    col = pq.ParquetFile(path).metadata.row_group(0).column(0)
    size = os.path.getsize(path)
    with pytest.raises(CorruptDataError, match="lies outside the file"):
        chunk_span(col, col.total_compressed_size, "x")  # (a file too short for it)
    start, n = chunk_span(col, size, "x")
    cut = tmp_path / "cut.parquet"
    cut.write_bytes(open(path, "rb").read()[: start + n // 2])
    fd = os.open(cut, os.O_RDONLY)
    try:
        with pytest.raises(CorruptDataError, match="the file ends"):
            read_span(fd, start, n, "x")
    finally:
        os.close(fd)


def test_a_page_that_does_not_decompress_to_its_size_is_refused(written):
    where, col, raw = _one_chunk(written)
    page = chunk_pages(raw, col.num_values, where)[-1]
    import dataclasses

    with pytest.raises(CorruptDataError):
        decompressed(raw, dataclasses.replace(page, uncompressed_size=page.uncompressed_size + 1),
                     col.compression)
    with pytest.raises(CorruptDataError):
        decompressed(raw, dataclasses.replace(page, start=page.start + 1), col.compression)


def _pyarrow_chunks(rng) -> list[bytes]:
    """Real column chunks (pyarrow's: dictionary and plain, version 1 and 2 pages, with and
    without CRCs and statistics, compressed and not), several pages each."""
    out = []
    for version in ("1.0", "2.0"):
        for crc in (True, False):
            buf = io.BytesIO()
            n = int(rng.integers(50, 3000))
            table = pa.table({"s": [None if k % 7 == 0 else f"v{k % 13}" * (k % 5)
                                    for k in range(n)],
                              "x": rng.integers(0, 1 << 40, n)})
            pq.write_table(table, buf, data_page_version=version, write_page_checksum=crc,
                           data_page_size=int(rng.integers(64, 2000)),
                           compression=str(rng.choice(["none", "zstd", "snappy"])),
                           write_statistics=bool(rng.integers(0, 2)))
            raw = buf.getvalue()
            meta = pq.ParquetFile(io.BytesIO(raw)).metadata.row_group(0)
            for j in range(meta.num_columns):
                start, size = chunk_span(meta.column(j), len(raw), "x")
                out.append(raw[start : start + size])
    return out


def test_the_compiled_headers_read_as_the_thrift_model(fresh_rng):
    """page_headers against the Python Thrift reader's model: the same rows for real chunks,
    and for damaged ones the same refusals (a CorruptDataError naming a header's byte) and the
    same rows where both read them."""
    from fsstgpu.native.pages import page_headers

    chunks = _pyarrow_chunks(fresh_rng)
    for raw in chunks:
        assert page_headers(raw, 1 << 20).tolist() == model_headers(raw, 1 << 20)
    refused = 0
    for _ in range(400):
        raw = changed_chunk(fresh_rng, chunks[int(fresh_rng.integers(0, len(chunks)))])
        limit = int(fresh_rng.choice([1, 2, 1 << 20]))
        want = model_headers(raw, limit)
        try:
            got = page_headers(raw, limit).tolist()
        except CorruptDataError as exc:
            assert want is None, (raw, str(exc))
            assert "byte" in str(exc) or "pages in one column chunk" in str(exc)
            refused += 1
            continue
        assert got == want, raw
    assert refused
