"""CompressedStringArray as other libraries see it: slices, to_arrow, the Arrow C interface,
NumPy. (fsstgpu.testing.check_roundtrip also slices every column the other tests compress.)"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import fsstgpu
from fsstgpu.types import SUPPORTED_TYPES


def column(type_, n=400):
    text = [None if i % 9 == 4 else f"http://example.com/{i % 37}/{'x' * (i % 50)}"
            for i in range(n)]
    values = text if type_ in (pa.string(), pa.large_string(), pa.string_view()) else [
        None if v is None else v.encode() for v in text]
    return pa.array(values, type_)


@pytest.mark.parametrize("type_", SUPPORTED_TYPES, ids=str)
def test_to_arrow_and_c_interface_keep_the_type(type_):
    col = column(type_)
    carr = fsstgpu.compress(col)
    for out in (carr.to_arrow(), pa.array(carr)):
        assert out.type == type_ and out.equals(col)
    chunked = pa.chunked_array([col[:100], col[100:100], col[100:]])
    ccarr = fsstgpu.compress(chunked)
    via_stream = pa.chunked_array(ccarr)  # __arrow_c_stream__ keeps the chunks
    assert via_stream.type == type_ and [len(c) for c in via_stream.chunks] == [100, 0, 300]
    assert pa.array(ccarr).equals(col)  # __arrow_c_array__: one array


def test_c_interface_requested_schema_is_passed_on():
    carr = fsstgpu.compress(column(pa.string()))
    out = pa.array(carr, type=pa.large_string())
    assert out.type == pa.large_string() and out.equals(column(pa.large_string()))


def test_numpy_conversion():
    col = column(pa.large_string())
    carr = fsstgpu.compress(col)
    arr = np.asarray(carr)
    assert arr.dtype == object and arr.tolist() == col.to_pylist()
    assert np.asarray(fsstgpu.compress(column(pa.binary()))).tolist() == column(
        pa.binary()).to_pylist()
    no_nulls = fsstgpu.compress(pa.array(["ab", "c"]))
    assert np.asarray(no_nulls, dtype="U2").tolist() == ["ab", "c"]
    with pytest.raises(ValueError, match="copy"):
        np.asarray(no_nulls, copy=False)
    assert list(carr) == col.to_pylist()


def test_slices_share_codes_and_decode_exactly():
    col = pa.array([("y" * 5000 if i % 10 == 3 else f"s{i}") for i in range(200)] + [None])
    carr = fsstgpu.compress(col, split_size=256)
    part = carr[30:150]
    assert isinstance(part, fsstgpu.CompressedStringArray)
    assert np.shares_memory(part.codes, carr.codes)
    part.validate()
    assert part.to_arrow().equals(col[30:150])
    # the 5000-byte strings are still cut: no split decodes to much more than 2 S bytes
    assert int(np.diff(part.split_out).max()) <= 2 * 256 + 16
    assert carr[-5:].to_arrow().equals(col[-5:])
    assert carr.slice(7).to_arrow().equals(col.slice(7))
    assert carr.slice(7, 3).to_arrow().equals(col.slice(7, 3))
    assert len(carr[150:30]) == 0
    assert carr[30:150][5] == col[35].as_py()


def test_slices_across_blocks_and_chunks(table_per_chunk):
    chunks = [[f"alpha{i}" for i in range(50)], [], [f"beta{i}" * 3 for i in range(70)],
              [None, "gamma"]]
    col = pa.chunked_array(chunks, pa.large_string())
    carr = fsstgpu.compress(col)
    assert len(carr.tables) == 3  # the empty chunk is planned with the one after it
    for a, b in [(0, 122), (10, 60), (50, 50), (49, 51), (120, 122), (122, 122)]:
        part = carr[a:b]
        out = part.to_arrow()
        expected = col.slice(a, b - a)
        assert out.equals(expected) and [len(c) for c in out.chunks] == [
            len(c) for c in expected.chunks], (a, b)
        part.validate()
    # the tables of the blocks a slice overlaps, no others
    assert carr[0:50].tables == carr.tables[:1]
    assert carr[60:120].tables == carr.tables[1:2]
    assert carr[10:60].tables == carr.tables[:2]


def test_slice_errors():
    carr = fsstgpu.compress(pa.array(["a", "b", "c"]))
    with pytest.raises(ValueError, match="step"):
        carr[::2]
    with pytest.raises(IndexError):
        carr.slice(4)
    with pytest.raises(ValueError, match="non-negative"):
        carr.slice(1, -1)
    for offset, length in ((1.7, None), (0, 1.5), ("1", None)):  # as pyarrow: not truncated
        with pytest.raises(TypeError):
            carr.slice(offset, length)
    assert carr.slice(np.int64(1), np.uint8(1)).to_arrow().to_pylist() == ["b"]


def _fields(carr, **changed):
    names = ("type", "length", "tables", "block_starts", "codes", "code_offsets", "lengths",
             "validity", "null_count", "split_size", "split_codes", "split_out", "split_table")
    return fsstgpu.CompressedStringArray(**{k: changed.get(k, getattr(carr, k)) for k in names})


@pytest.mark.parametrize("changed", [
    {"validity": np.array([0b111], np.uint8)},  # null_count 1, no null in the bitmap
    {"block_starts": np.array([0, 2])},  # the blocks end before the last string
    {"block_starts": np.array([0, 3, 3])},  # one table, two blocks
    {"block_starts": np.zeros(0, np.int64)},
], ids=["validity", "short-blocks", "extra-block", "no-blocks"])
def test_a_slice_of_an_inconsistent_column_is_corrupt(changed):
    # fields from elsewhere: slicing reads them as the whole-column decode does, so it raises
    # as that does (it sliced them unchecked: a null came back as "", or an IndexError)
    carr = _fields(fsstgpu.compress(pa.array(["ab", None, "cd"])), **changed)
    with pytest.raises(fsstgpu.CorruptDataError):
        carr.to_arrow()
    for part in (lambda: carr[0:3], lambda: carr[1:], lambda: carr.slice(0, 2)):
        with pytest.raises(fsstgpu.CorruptDataError):
            part()
