"""compress_table (and compress) take the pandas and polars DataFrames, as compress takes their
Series (issue #23, item 7); what comes back reads back as the same frame."""

from __future__ import annotations

import pyarrow as pa
import pytest

import fsstgpu
from fsstgpu.formats.arrow import is_fsst_type

URLS = [f"http://example.com/page/{i % 37}" if i % 11 else None for i in range(400)]


def pandas():
    return pytest.importorskip("pandas", reason="pandas is not installed (an optional input)")


def polars():
    return pytest.importorskip("polars", reason="polars is not installed (an optional input)")


def test_pandas_dataframe_round_trips_with_its_index_and_dtypes():
    pd = pandas()
    df = pd.DataFrame({"url": URLS, "n": range(400), "b": [s.encode() if s else None
                                                          for s in URLS]},
                      index=pd.Index(range(1000, 1400), name="row"))
    comp = fsstgpu.compress_table(df)
    assert isinstance(comp, pa.Table)
    assert is_fsst_type(comp.schema.field("url").type) and is_fsst_type(comp.schema.field("b").type)
    assert comp.schema.field("n").type == pa.int64()
    back = fsstgpu.decompress_table(comp, device="cpu").to_pandas()
    pd.testing.assert_frame_equal(back, df)
    assert fsstgpu.compress(df).equals(comp)  # compress hands tables to compress_table
    chosen = fsstgpu.compress_table(df, columns=["b"])
    assert not is_fsst_type(chosen.schema.field("url").type)


def test_pandas_categorical_and_arrow_strings_come_back():
    """A category column is kept (a dictionary) unless named; string[pyarrow] is compressed."""
    pd = pandas()
    df = pd.DataFrame({"cat": pd.Categorical(["p", "q", "p"]),
                       "s": pd.array(["u", pd.NA, "v"], dtype="string[pyarrow]")})
    comp = fsstgpu.compress_table(df)
    assert not is_fsst_type(comp.schema.field("cat").type)
    assert is_fsst_type(comp.schema.field("s").type)
    pd.testing.assert_frame_equal(fsstgpu.decompress_table(comp, device="cpu").to_pandas(), df)
    named = fsstgpu.compress_table(df, columns=["cat"])
    assert is_fsst_type(named.schema.field("cat").type)
    pd.testing.assert_frame_equal(fsstgpu.decompress_table(named, device="cpu").to_pandas(), df)


def test_polars_dataframe_round_trips():
    pl = polars()
    frame = pl.DataFrame({"url": URLS, "n": list(range(400))})
    comp = fsstgpu.compress_table(frame)
    assert isinstance(comp, pa.Table) and is_fsst_type(comp.schema.field("url").type)
    back = pl.from_arrow(fsstgpu.decompress_table(comp, device="cpu"))
    assert back.equals(frame)


def test_polars_categorical_comes_back():
    pl = polars()
    frame = pl.DataFrame({"c": pl.Series(["p", "q", None, "p"], dtype=pl.Categorical)})
    for columns in (None, ["c"]):
        comp = fsstgpu.compress_table(frame, columns=columns)
        assert is_fsst_type(comp.schema.field("c").type) == (columns is not None)
        assert pl.from_arrow(fsstgpu.decompress_table(comp, device="cpu")).equals(frame)


def test_other_inputs_are_still_refused():
    pd = pandas()
    with pytest.raises(TypeError, match="Table or RecordBatch or a pandas / polars DataFrame"):
        fsstgpu.compress_table(pd.Series(URLS))
    with pytest.raises(TypeError, match="Table or RecordBatch"):
        fsstgpu.compress_table(pa.chunked_array([URLS]))
