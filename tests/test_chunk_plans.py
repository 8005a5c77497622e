"""The device reader's planning step in C++ (fsstgpu.native.pages.plan_chunks, used by
formats/page_plan.py) against the Python it replaced (tests/chunk_plan_model.py): the same data
page rows, dictionaries, dictionary entries and CRC rows for every chunk of real files, and on
thousands of damaged chunks the same answer or the same refusal (kind, page, message); the
first error in chunk order whatever the threads; specs outside the buffer refused."""

from __future__ import annotations

import os
import sys
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import fsstgpu
from fsstgpu.datasets import machine_text_table
from fsstgpu.formats import compress_file
from fsstgpu.formats.arrow_storage import to_extension_array
from fsstgpu.formats.page_plan import plannable
from fsstgpu.formats.raw_pages import chunk_span
from fsstgpu.formats.rowgroups import Source
from fsstgpu.native.pages import plan_chunks

sys.path.insert(0, str(Path(__file__).parent))
from chunk_plan_model import Refused, model_chunk  # noqa: E402
from damaged_pages import changed_chunk  # noqa: E402
from parquet_model import page_header  # noqa: E402


def _files(rng, tmp_path) -> list[Path]:
    """compress_file's uncompressed-page layout of real text (dictionary-coded codes and
    lengths, several row groups, nulls), and pyarrow's writes of an fsst array with PLAIN
    lengths and DELTA_LENGTH codes in version 1 and 2 data pages, with CRCs."""
    table = machine_text_table(6000)
    table = table.set_column(0, table.field(0), pa.array(
        [None if k % 9 == 0 else s for k, s in enumerate(table.column(0).to_pylist())]))
    src = tmp_path / "src.parquet"
    pq.write_table(table, src, row_group_size=2000)
    out = [tmp_path / "none.parquet"]
    compress_file(src, out[0], parquet_codec="none")
    ext = to_extension_array(fsstgpu.compress(table.column(1).combine_chunks()))
    for version in ("1.0", "2.0"):
        out.append(tmp_path / f"v{version}.parquet")
        pq.write_table(pa.table({"s": ext}), out[-1], compression="none",
                       data_page_version=version, use_dictionary=["s.table"],
                       data_page_size=int(rng.integers(2000, 9000)),
                       column_encoding={"s.codes": "DELTA_LENGTH_BYTE_ARRAY",
                                        "s.lengths": "PLAIN", "s.cuts": "PLAIN"},
                       write_page_checksum=True)
    return out


def _chunks(path) -> list[tuple[bytes, tuple]]:
    """Every chunk of the file's plannable fsst columns: its bytes and its spec (file_at and
    buf_at to be set), as plan_column makes them."""
    out = []
    with Source(path) as source:
        meta, raw = source.parquet_metadata, Path(path).read_bytes()
        for f in plannable(source):
            columns, first = source.leaf_columns[f.name], 0
            for k in range(source.num_units):
                rows = meta.row_group(k).num_rows
                for i, j in enumerate(columns):
                    col = meta.row_group(k).column(j)
                    at, size = chunk_span(col, len(raw), "")
                    wide = meta.schema.column(j).physical_type == "INT64"
                    out.append((raw[at : at + size], (rows, first, k, i, int(wide))))
                first += rows
    return out


def _compiled(chunks, tmp_path, *, check_crc: bool, threads: int, col_at: int = 1000):
    """plan_chunks of ``chunks`` written end to end to a file, each at column position
    ``col_at`` onwards."""
    path = tmp_path / "chunks.bin"
    path.write_bytes(b"".join(raw for raw, _ in chunks))
    specs, file_at = [], 0
    for raw, (rows, first, k, i, wide) in chunks:
        specs.append((file_at, len(raw), file_at, col_at + file_at, rows, first, k, i, wide))
        file_at += len(raw)
    buffer = np.zeros(max(file_at, 1), np.uint8)
    fd = os.open(path, os.O_RDONLY)
    try:
        return plan_chunks(buffer, fd, np.array(specs, np.int64).reshape(-1, 9),
                           check_crc=check_crc, threads=threads), buffer
    finally:
        os.close(fd)


def _modelled(chunks, *, check_crc: bool, col_at: int = 1000):
    """The model's answer for the same chunks: plan_chunks' tuple, its error as it reports it."""
    rows, dicts, entries, entry_at, crcs, file_at = [], [], [], [0], [], 0
    for c, (raw, (nrows, first, k, i, wide)) in enumerate(chunks):
        try:
            r, d, e, crc = model_chunk(raw, col_at + file_at, nrows, first, k, i, bool(wide),
                                       c, check_crc)
        except Refused as exc:
            return rows, dicts, entries, entry_at, crcs, (c, exc.kind, exc.page, exc.message)
        rows += r
        dicts.append(d or (-1, -1, -1))
        entries += e
        entry_at.append(len(entries))
        crcs += crc
        file_at += len(raw)
    return rows, dicts, entries, entry_at, crcs, None


def _same(got, want) -> None:
    rows, dicts, entries, entry_at, crcs, error = got
    assert error == want[5]
    assert rows.tolist() == [list(r) for r in want[0]]
    assert dicts.tolist() == [list(d) for d in want[1]]
    assert entries.tolist() == want[2] and entry_at.tolist() == want[3]
    assert crcs.tolist() == [list(c) for c in want[4]]


def test_real_chunks_planned_as_the_model(fresh_rng, tmp_path):
    for path in _files(fresh_rng, tmp_path):
        chunks = _chunks(path)
        assert chunks
        for threads in (1, 3):
            got, buffer = _compiled(chunks, tmp_path, check_crc=True, threads=threads)
            _same(got, _modelled(chunks, check_crc=True))
            assert buffer.tobytes() == b"".join(raw for raw, _ in chunks)
            assert got[5] is None and len(got[0])


def test_damaged_chunks_answered_as_the_model(fresh_rng, tmp_path):
    """Each damaged chunk alone (a result equal to the model's, or the model's refusal), with
    and without the CRC check (without it, damaged levels and dictionaries reach the checks
    behind it)."""
    chunks = [c for path in _files(fresh_rng, tmp_path) for c in _chunks(path)]
    refused = planned = 0
    for _ in range(1500):
        raw, spec = chunks[int(fresh_rng.integers(0, len(chunks)))]
        one = [(changed_chunk(fresh_rng, raw, head=60), spec)]
        check = bool(fresh_rng.random() < 0.3)
        got, _ = _compiled(one, tmp_path, check_crc=check, threads=1)
        _same(got, _modelled(one, check_crc=check))
        refused += got[5] is not None
        planned += got[5] is None
    assert refused > 300 and planned > 100  # (both sides of the checks exercised)


def test_the_first_error_in_chunk_order_whatever_the_threads(fresh_rng, tmp_path):
    chunks = _chunks(_files(fresh_rng, tmp_path)[0])
    bad = sorted(fresh_rng.choice(len(chunks), 3, replace=False).tolist())
    for c in bad:
        raw, spec = chunks[c]
        chunks[c] = (raw[: len(raw) // 2], spec)  # (cut: its pages run past it)
    want = _modelled(chunks, check_crc=True)
    assert want[5][0] == bad[0]
    for threads in (1, 2, 8):
        got, _ = _compiled(chunks, tmp_path, check_crc=True, threads=threads)
        _same(got, want)


def _page(rng, kind, payload: bytes, values: int, encoding: int) -> bytes:
    return page_header(rng, kind, len(payload), values, None, encoding) + payload


def _v1(levels: int, size: int, width: int | None = None) -> bytes:
    """A version 1 data page's payload: ``levels`` bytes of levels declared, then a bit width
    byte (dictionary indices) where given, ``size`` bytes in all."""
    head = levels.to_bytes(4, "little") + bytes(levels)
    head += b"" if width is None else bytes([width])
    return head + bytes(size - len(head))


@pytest.mark.parametrize("case", [
    # (leaf, wide, pages as (kind, payload, values, encoding), refusal or None)
    ("levels fill the page", 1, 0, [(0, _v1(6, 10), 5, 0)], None),
    ("levels one past", 1, 0, [(0, _v1(6, 10)[:9], 5, 0)], "6 bytes of levels in a page of 9"),
    ("no room for levels", 1, 0, [(0, b"\0\0\0", 5, 0)], "has no levels"),
    ("a 32-bit width", 0, 0, [(2, bytes(8), 2, 0), (0, _v1(0, 8, 32), 5, 8)], None),
    ("a 33-bit width", 0, 0, [(2, bytes(8), 2, 0), (0, _v1(0, 8, 33), 5, 8)],
     "indices of 33 bits"),
    ("no width byte", 0, 0, [(2, bytes(8), 2, 0), (0, _v1(0, 4), 5, 8)], "no room"),
    ("indices without a dictionary", 0, 0, [(0, _v1(0, 8, 3), 5, 8)], "without a dictionary"),
    ("a dictionary page second", 1, 0, [(0, _v1(0, 8), 5, 0), (2, bytes(8), 2, 0)],
     "after the chunk's first page"),
    ("narrow lengths fill their page", 1, 0, [(2, bytes(16), 4, 0), (0, _v1(0, 8, 2), 5, 8)],
     None),
    ("wide lengths overrun their page", 1, 1, [(2, bytes(16), 3, 0), (0, _v1(0, 8, 2), 5, 8)],
     "3 values in 16 bytes"),
    ("wide lengths fill their page", 1, 1, [(2, bytes(16), 2, 0), (0, _v1(0, 8, 2), 5, 8)],
     None),
    ("codes' entries fill their page", 0, 0, [(2, bytes(8), 2, 0), (0, _v1(0, 8, 1), 5, 8)],
     None),
    ("more codes' entries than 4-byte lengths", 0, 0,
     [(2, bytes(8), 3, 0), (0, _v1(0, 8, 1), 5, 8)], "3 values cannot be in these bytes"),
    ("codes' entries overrun", 0, 0, [(2, b"\5\0\0\0abc", 1, 0), (0, _v1(0, 8, 1), 5, 8)],
     "runs past"),
    ("a dictionary page of RLE", 0, 0, [(2, bytes(8), 2, 3), (0, _v1(0, 8, 1), 5, 8)],
     "dictionary page of encoding 3"),
    ("cuts dictionary-encoded", 2, 0, [(2, bytes(8), 2, 0), (0, _v1(0, 8, 1), 5, 8)],
     "values of encoding 8"),
    ("plain lengths", 1, 0, [(0, _v1(0, 8), 5, 0)], None),
    ("two data pages", 0, 0, [(0, _v1(0, 8), 2, 6), (0, _v1(0, 8), 3, 6)], None),
    ("rows short of the footer's", 0, 0, [(0, _v1(0, 8), 2, 6)], "hold 2 values"),
], ids=lambda c: c[0])
def test_forged_chunks_at_each_bound(fresh_rng, tmp_path, case):
    """Chunks of model-written pages at each check's edge (one byte inside and one outside),
    planned as the model plans them, the refusal named."""
    _, leaf, wide, pages, refusal = case
    raw = b"".join(_page(fresh_rng, *page) for page in pages)
    one = [(raw, (5, 0, 0, leaf, wide))]
    got, _ = _compiled(one, tmp_path, check_crc=True, threads=1)
    _same(got, _modelled(one, check_crc=True))
    if refusal is None:
        assert got[5] is None, got[5]
    else:
        assert got[5] is not None and refusal in got[5][3], got[5]


#: plan_chunks' read pieces (chunk_plan.cpp's kReadPiece)
PIECE = 4 << 20


def test_chunks_read_in_pieces(fresh_rng, tmp_path):
    """Chunks of several read pieces (plan_chunks reads a chunk in 4 MiB pieces, every chunk's
    at once): planned as the model plans them; a byte changed in any piece found by the same
    page's CRC; a file cut inside a later piece of a chunk named by the bytes that chunk lacks,
    the chunk before it whole."""
    def chunk():  # (two pages, the second's payload over 4 MiB: it ends in a later piece)
        pages = b""
        for values, least, most in ((2, 8, 1 << 20), (3, PIECE + 8, PIECE + (2 << 20))):
            payload = _v1(0, int(fresh_rng.integers(least, most)))
            pages += page_header(fresh_rng, 0, len(payload), values, zlib.crc32(payload), 6) + \
                payload
        return pages, (5, 0, 0, 0, 0)

    chunks = [chunk() for _ in range(3)]
    for threads in (1, 3):
        got, buffer = _compiled(chunks, tmp_path, check_crc=True, threads=threads)
        _same(got, _modelled(chunks, check_crc=True))
        assert got[5] is None and buffer.tobytes() == b"".join(raw for raw, _ in chunks)
    c = int(fresh_rng.integers(3))
    raw = bytearray(chunks[c][0])
    at = int(fresh_rng.integers(len(raw) - (1 << 20), len(raw)))  # (the second page's body)
    raw[at] ^= 1 << int(fresh_rng.integers(8))
    damaged = chunks[:c] + [(bytes(raw), chunks[c][1])] + chunks[c + 1 :]
    got, _ = _compiled(damaged, tmp_path, check_crc=True, threads=3)
    _same(got, _modelled(damaged, check_crc=True))
    assert got[5][:3] == (c, 1, -1) and "page 1 fails its CRC" in got[5][3]
    whole = b"".join(raw for raw, _ in chunks)
    cut = len(chunks[0][0]) + int(fresh_rng.integers(PIECE + 1, len(chunks[1][0])))
    path = tmp_path / "cut.bin"
    path.write_bytes(whole[:cut])
    specs, file_at = [], 0
    for raw, (rows, first, k, i, wide) in chunks:
        specs.append((file_at, len(raw), file_at, file_at, rows, first, k, i, wide))
        file_at += len(raw)
    fd = os.open(path, os.O_RDONLY)
    try:
        got = plan_chunks(np.zeros(len(whole), np.uint8), fd, np.array(specs, np.int64),
                          check_crc=True, threads=3)
    finally:
        os.close(fd)
    lacks = len(chunks[0][0]) + len(chunks[1][0]) - cut
    assert got[5] == (1, 3, -1, f"the file ends {lacks} bytes into a column chunk")
    assert got[0].shape[0] == 2 and set(got[0][:, 9].tolist()) == {0}  # (chunk 0's pages)


def test_a_file_shorter_than_its_chunks_and_bad_specs(tmp_path):
    path = tmp_path / "short.bin"
    path.write_bytes(b"\0" * 10)
    fd = os.open(path, os.O_RDONLY)
    try:
        buffer = np.zeros(64, np.uint8)
        got = plan_chunks(buffer, fd, np.array([[4, 20, 0, 0, 1, 0, 0, 0, 0]]))
        assert got[5] == (0, 3, -1, "the file ends 14 bytes into a column chunk")
        for spec in ([0, 70, 0, 0, 1, 0, 0, 0, 0], [0, 8, 60, 0, 1, 0, 0, 0, 0],
                     [0, 8, 0, 0, 1, 0, 0, 4, 0], [-1, 8, 0, 0, 1, 0, 0, 0, 0],
                     [0, 8, 0, 0, 1, 0, 0, 0, 2]):
            with pytest.raises(ValueError, match="chunk 0"):
                plan_chunks(buffer, fd, np.array([spec]))
        with pytest.raises(ValueError, match="chunk 1.*overlapping"):  # (two threads, one range)
            plan_chunks(buffer, fd, np.array([[0, 8, 0, 0, 1, 0, 0, 0, 0],
                                              [0, 8, 4, 0, 1, 0, 0, 0, 0]]))
    finally:
        os.close(fd)
    got = plan_chunks(np.zeros(8, np.uint8), -1, np.array([[0, 8, 0, 0, 1, 0, 0, 0, 0]]))
    assert got[5][:3] == (0, 4, 9)  # (EBADF: an OSError where plan_column meets it)
