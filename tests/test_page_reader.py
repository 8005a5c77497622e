"""formats/page_reader.py: fsst column chunks read from their Parquet pages give exactly what
pyarrow's read and ``from_extension_array`` give, on real text, every codec fsstgpu writes,
nulls, repeating (dictionary-coded) codes, 64-bit lengths, long strings with cuts, several
tables a chunk; damaged chunks are left to the careful read (None), which names them."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import fsstgpu
from fsstgpu.formats import compress_file
from fsstgpu.formats.arrow_read import from_extension_array
from fsstgpu.formats.page_reader import PageReader, fsst_leaves
from fsstgpu.native import parquet as pages


@pytest.fixture(scope="module")
def lines(dbtext_paths):
    out = []
    for path in dbtext_paths[:6]:
        with open(path, "rb") as f:
            out += f.read().decode("utf-8", "replace").split("\n")[:4000]
    return out


def _table(lines, rng, n):
    pick = rng.integers(0, len(lines), n)
    text = [None if rng.random() < 0.08 else lines[int(i)] for i in pick]
    long = [None if i % 5 == 0 else " ".join(lines[j % len(lines)] for j in range(i, i + 300))
            for i in range(n // 50)] + [""] * (n - n // 50)
    shifted = ([lines[int(i)] for i in pick[: n // 2]]  # the text changes half way: new tables
               + [lines[int(i)][::-1].upper() for i in pick[n // 2 :]])
    return pa.table({
        "text": text,
        "repeating": pa.array([["alpha", "beta", None, "gamma"][i % 4] for i in range(n)]),
        "wide": pa.array(text, pa.large_string()),
        "long": long,
        "shifted": shifted,
        "empty": pa.array([None] * n, pa.string()),
        "n": np.arange(n),
    })


def _compare(path) -> int:
    """Every (row group, fsst column) read both ways: equal; returns how many the page
    reader took."""
    md, schema = pq.read_metadata(path), pq.read_schema(path)
    reader = PageReader(path, md, schema)
    careful = pq.ParquetFile(path, page_checksum_verification=True)
    taken = 0
    try:
        for k in range(md.num_row_groups):
            for name in reader.leaves:
                got = reader.read(k, name)
                want = from_extension_array(careful.read_row_group(k, columns=[name]).column(0))
                if got is None:
                    continue
                taken += 1
                assert got.equals(want), (k, name)
                assert got.chunk_lengths.tolist() == want.chunk_lengths.tolist()
                assert fsstgpu.decompress(got, device="cpu").equals(
                    fsstgpu.decompress(want, device="cpu"))
    finally:
        reader.close()
    return taken


@pytest.mark.parametrize("codec", ["zstd", "none", "snappy"])
def test_pages_equal_pyarrow(tmp_path, lines, codec):
    rng = np.random.default_rng()
    src = tmp_path / "in.parquet"
    pq.write_table(_table(lines, rng, 6000), src, row_group_size=2500)
    out = tmp_path / "out.parquet"
    compress_file(src, out, parquet_codec=codec)
    md, schema = pq.read_metadata(out), pq.read_schema(out)
    assert set(fsst_leaves(md, schema)) == {"text", "repeating", "wide", "long", "shifted",
                                            "empty"}
    # every chunk of every column is taken (3 row groups x 6 columns)
    assert _compare(out) == 18


def test_several_tables_a_chunk(tmp_path, lines):
    """A chunk whose strings name several tables (an fsst column of two 1 MiB+ pieces of
    different text, compressed apart, copied into an fsst file)."""
    from fsstgpu.formats.arrow_storage import to_extension_array

    rng = np.random.default_rng()
    first = [lines[int(i)] for i in rng.integers(0, len(lines), 40000)]
    second = [line[::-1].upper() + "~" for line in first]
    carr = fsstgpu.compress(pa.chunked_array([first, second]))
    assert len(carr.tables) == 2
    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"s": to_extension_array(carr)}), src)
    out = tmp_path / "out.parquet"
    compress_file(src, out, parquet_codec="none")
    reader = PageReader(out, pq.read_metadata(out), pq.read_schema(out))
    got = reader.read(0, "s")
    reader.close()
    assert got is not None and len(got.tables) == 2
    assert _compare(out) == 1


def test_damage_left_to_the_careful_read(tmp_path, lines):
    """A flipped byte inside a page fails its CRC: the page reader declines, and the read
    through pyarrow names the damage."""
    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"s": lines[:3000]}), src)
    out = tmp_path / "out.parquet"
    compress_file(src, out)
    md = pq.read_metadata(out)
    codes = md.row_group(0).column(0)
    raw = bytearray(out.read_bytes())
    raw[codes.data_page_offset + codes.total_compressed_size // 2] ^= 0x10
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(bytes(raw))
    reader = PageReader(bad, md, pq.read_schema(out))
    assert reader.read(0, "s") is None
    reader.close()
    with pytest.raises((OSError, fsstgpu.CorruptDataError)):
        fsstgpu.formats.read_table(bad, device="cpu")


def test_not_taken(tmp_path):
    """Columns the reader does not know, and chunks it cannot find, are not taken."""
    path = tmp_path / "plain.parquet"
    pq.write_table(pa.table({"s": ["a", "b"]}), path)
    reader = PageReader(path, pq.read_metadata(path), pq.read_schema(path))
    assert reader.leaves == {} and reader.read(0, "s") is None
    reader.close()


def test_hybrid_runs():
    """RLE runs, bit-packed groups of each width, and runs that cannot be right."""
    rng = np.random.default_rng()
    for width in (0, 1, 2, 3, 7, 8, 13, 32):
        values = rng.integers(0, 1 << width, 37, dtype=np.uint64) if width else np.zeros(37)
        bits = "".join(format(int(v), f"0{width}b")[::-1] if width else "" for v in values)
        bits += "0" * (-len(bits) % (8 * max(width, 1)) if width else 0)
        groups = -(-len(values) // 8)
        bits = bits.ljust(groups * 8 * width, "0")
        packed = bytes(int(bits[i : i + 8][::-1], 2) for i in range(0, len(bits), 8))
        run = bytes([(groups << 1) | 1]) + packed
        got, past = pages.rle_hybrid(run, 0, len(run), width, len(values))
        assert got.tolist() == values.astype(np.int64).tolist() and past == len(run)
    with pytest.raises(fsstgpu.CorruptDataError):
        pages.rle_hybrid(bytes([0x06, 9]), 0, 2, 3, 3)  # 9 needs 4 bits
    with pytest.raises(fsstgpu.CorruptDataError):
        pages.rle_hybrid(bytes([0x03, 0xFF]), 0, 2, 2, 8)  # a group of 2 bytes, one there
    with pytest.raises(fsstgpu.CorruptDataError):
        pages.rle_hybrid(bytes([0x00]), 0, 1, 1, 1)  # an empty run


def test_leaf_rows_levels_above_two():
    page = bytes([2, 0, 0, 0, 0x02, 3])  # one RLE level 3
    with pytest.raises(fsstgpu.CorruptDataError, match="level above 2"):
        pages.leaf_rows(pages.LEAF_INT32, 1, np.array([[0, 1, 0]]),
                        [np.frombuffer(page, np.uint8)])


def test_reads_use_pages(tmp_path, lines, monkeypatch):
    """A device read's reading threads take fsst chunks from their pages (no GPU needed to
    see it: the reading phase is host work)."""
    from fsstgpu.formats import device_reader
    from fsstgpu.formats.rowgroups import Source

    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"s": lines[:2000], "n": np.arange(2000)}), src, row_group_size=700)
    out = tmp_path / "out.parquet"
    compress_file(src, out)
    taken = []
    real = PageReader.read

    def spy(self, k, name):
        got = real(self, k, name)
        taken.append((k, name, got is not None))
        return got

    monkeypatch.setattr(PageReader, "read", spy)
    with Source(os.fspath(out)) as source, device_reader._page_reader(source) as reader:
        units = list(device_reader.parallel_units(
            source, workers=2, convert=device_reader._compressed_columns(source),
            pages=reader.read))
    assert sorted(t for t in taken if t[1] == "s") == [(k, "s", True) for k in range(3)]
    assert not any(t[2] for t in taken if t[1] == "n")  # (a plain column: pyarrow's)
    assert [type(u["s"]).__name__ for u in units] == ["CompressedStringArray"] * 3
    assert [len(u["n"]) for u in units] == [700, 700, 600]
