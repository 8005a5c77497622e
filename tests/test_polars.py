"""polars: its Series go into fsstgpu.compress (Arrow PyCapsule interface), and it opens the
files fsstgpu writes (every plain column as it was; fsst columns as their storage)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import fsstgpu
from fsstgpu.formats import compress_file

pl = pytest.importorskip("polars")


def test_polars_series_round_trip():
    s = pl.Series("u", ["https://a.example/x", None, "ftp://b", ""] * 100)
    back = fsstgpu.decompress(fsstgpu.compress(s), device="cpu")
    assert pl.from_arrow(back).to_list() == s.to_list()


def test_polars_opens_compressed_files(tmp_path):
    table = pa.table({"u": [f"https://a.example/{i}" for i in range(500)],
                      "n": pa.array(range(500)),
                      "d": pa.array(["x", "y"] * 250).dictionary_encode()})
    pq.write_table(table, tmp_path / "in.parquet", row_group_size=200)
    compress_file(tmp_path / "in.parquet", tmp_path / "c.parquet")
    df = pl.read_parquet(tmp_path / "c.parquet")
    assert df.get_column("n").to_list() == list(range(500))
    assert df.get_column("d").cast(pl.String).to_list() == ["x", "y"] * 250
    assert df.height == 500
