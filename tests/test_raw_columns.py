"""formats/raw_columns.py: fsst columns read raw from Parquet equal what pyarrow's reading gives
(codecs, nulls, several tables, long strings with cuts, wide lengths, dictionary-encoded codes),
and damaged leaves raise."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import fsstgpu
from fsstgpu.errors import CorruptDataError
from fsstgpu.formats import compress_file
from fsstgpu.formats.arrow_read import from_extension_array
from fsstgpu.formats.parquet_pages import NotRaw
from fsstgpu.formats.raw_columns import RawColumns
from fsstgpu.formats.rowgroups import Source


def _lines(rng, n):
    words = [b"alpha", b"beta", b"gamma", b"\xc3\xa9t\xc3\xa9", b"/usr/share/doc", b"12345"]
    out = []
    for _ in range(n):
        k = int(rng.integers(0, 12)) if rng.random() < 0.98 else int(rng.integers(900, 3000))
        out.append(b" ".join(words[int(i)] for i in rng.integers(0, len(words), k)))
    return out


def _table(rng, n):
    text = [None if rng.random() < 0.1 else s.decode() for s in _lines(rng, n)]
    dna = [bytes(rng.choice(np.frombuffer(b"ACGT", np.uint8), int(rng.integers(0, 40))))
           for _ in range(n)]  # other text: a table of its own
    mixed = text[: n // 2] + [d.decode() for d in dna[n // 2:]]
    return pa.table({"t": pa.array(text, pa.string()), "b": pa.array(dna, pa.large_binary()),
                     "m": pa.array(mixed, pa.large_string()), "i": np.arange(n)})


def _compare(path):
    with Source(path) as source:
        raw = RawColumns(source)
        try:
            assert raw.names
            for k in range(source.num_units):
                unit = source.unit(k)
                for name in raw.names:
                    want = from_extension_array(unit.column(name))
                    got = raw.column(k, name)
                    assert got.equals(want), (k, name)
                    assert fsstgpu.decompress(got, device="cpu").equals(
                        fsstgpu.decompress(want, device="cpu"))
        finally:
            raw.close()


@pytest.mark.parametrize("codec", ["zstd", "none"])
def test_raw_columns_equal_pyarrows(tmp_path, codec):
    rng = np.random.default_rng()
    src, out = tmp_path / "a.parquet", tmp_path / "b.parquet"
    pq.write_table(_table(rng, int(rng.integers(3000, 9000))), src,
                   row_group_size=int(rng.integers(1000, 4000)))
    compress_file(src, out, parquet_codec=codec)
    _compare(out)


def test_raw_columns_edge_tables(tmp_path):
    for k, col in enumerate([pa.array([None, None], pa.string()), pa.array([""] * 5),
                             pa.array([], pa.string()), pa.array(["x" * 70000, "y"])]):
        src, out = tmp_path / f"a{k}.parquet", tmp_path / f"b{k}.parquet"
        pq.write_table(pa.table({"s": col}), src)
        compress_file(src, out)
        _compare(out)


def test_dictionary_codes(tmp_path):
    src, out = tmp_path / "a.parquet", tmp_path / "b.parquet"
    pq.write_table(pa.table({"s": ["same line", None, "other line", ""] * 2000}), src)
    compress_file(src, out)  # a repeating column: its codes dictionary-encoded
    assert "RLE_DICTIONARY" in pq.ParquetFile(out).metadata.row_group(0).column(0).encodings
    _compare(out)


def test_other_files_have_no_raw_columns(tmp_path):
    path = tmp_path / "a.arrow"
    src = tmp_path / "a.parquet"
    pq.write_table(pa.table({"s": ["x", "y"]}), src)
    compress_file(src, path)
    with Source(path) as source:
        raw = RawColumns(source)
        assert raw.names == set()
        with pytest.raises(NotRaw):
            raw.column(0, "s")


def test_damaged_leaves_raise(tmp_path):
    """A bit flipped in an fsst leaf's chunk: an error, or (a header field nobody reads, such
    as a v1 page's level encodings) the same column."""
    rng = np.random.default_rng()
    src, out = tmp_path / "a.parquet", tmp_path / "b.parquet"
    pq.write_table(_table(rng, 3000), src)
    compress_file(src, out, parquet_codec=str(rng.choice(["zstd", "none"])))
    raw_bytes = bytearray(out.read_bytes())
    md = pq.ParquetFile(out).metadata
    rg = md.row_group(0)
    spans = []
    for j in range(rg.num_columns):
        c = rg.column(j)
        if c.path_in_schema.split(".")[0] in ("t", "b", "m"):
            first = c.dictionary_page_offset if c.has_dictionary_page else c.data_page_offset
            spans.append((first, first + c.total_compressed_size))
    with Source(out) as source:
        raw = RawColumns(source)
        clean = {name: raw.column(0, name) for name in raw.names}
        raw.close()
    noticed = 0
    for _ in range(150):
        lo, hi = spans[int(rng.integers(0, len(spans)))]
        forged = bytearray(raw_bytes)
        forged[int(rng.integers(lo, hi))] ^= 1 << int(rng.integers(0, 8))
        path = tmp_path / "x.parquet"
        path.write_bytes(forged)
        with Source(path) as source:
            raw = RawColumns(source)
            try:
                got = {name: raw.column(0, name) for name in raw.names}
            except (CorruptDataError, NotRaw):
                noticed += 1
                continue
            finally:
                raw.close()
        assert all(got[name].equals(clean[name]) for name in clean)
    assert noticed > 100
