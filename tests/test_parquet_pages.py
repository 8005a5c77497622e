"""Parquet's value decoders (fsstgpu.native.rle_hybrid / delta_binary_packed) against pages
pyarrow wrote (read raw by formats/raw_pages.py): DELTA_BINARY_PACKED int32/int64 columns of
random values (extremes and wrapping deltas among them), dictionary indices and definition
levels (RLE / bit-packed runs), and the fsst codes' DELTA_LENGTH_BYTE_ARRAY pages split into
each row's codes. Forged runs raise CorruptDataError."""

from __future__ import annotations

import io
import struct

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fsstgpu import CorruptDataError, native
from fsstgpu.formats.raw_pages import chunk_pages, chunk_span, decompressed
from fsstgpu.types import integer_dtype


def _pages(table, **options):
    """(body of each data page as stored, uncompressed, its num_values) of column 0."""
    out = io.BytesIO()
    pq.write_table(table, out, compression="none", data_page_version="1.0", **options)
    raw = out.getvalue()
    meta = pq.ParquetFile(io.BytesIO(raw)).metadata.row_group(0).column(0)
    start, size = chunk_span(meta, len(raw), "t")
    chunk = raw[start : start + size]
    pages = chunk_pages(chunk, meta.num_values, "t")
    return [(decompressed(chunk, p, "none"), p) for p in pages]


@pytest.mark.parametrize("dtype", [pa.int32(), pa.int64()])
def test_delta_binary_packed_is_pyarrows(fresh_rng, dtype):
    info = np.iinfo(integer_dtype(dtype))
    n = int(fresh_rng.integers(1, 5000))
    kind = fresh_rng.integers(0, 3, n)
    values = np.where(kind == 0, fresh_rng.integers(info.min, info.max, n, endpoint=True),
                      np.where(kind == 1, fresh_rng.integers(-5, 5, n),
                               np.cumsum(fresh_rng.integers(0, 300, n)) % (info.max // 2)))
    values[: int(fresh_rng.integers(0, 3))] = info.max  # extremes: deltas that wrap
    table = pa.table({"x": pa.array(values.astype(integer_dtype(dtype)), dtype)},
                     schema=pa.schema([pa.field("x", dtype, nullable=False)]))
    got = []
    for body, page in _pages(table, use_dictionary=False,
                             column_encoding={"x": "DELTA_BINARY_PACKED"},
                             data_page_size=int(fresh_rng.choice([1 << 10, 1 << 20]))):
        if page.kind == "dictionary":
            continue
        decoded, end = native.delta_binary_packed(body, page.num_values)
        assert end == len(body)
        got.append(decoded)
    # (int32 values are delta-coded in 32 bits: the int64 decode holds them modulo 2**32)
    assert np.array_equal(np.concatenate(got).astype(integer_dtype(dtype)), values.astype(
        integer_dtype(dtype)))


def test_dictionary_indices_and_definition_levels_are_pyarrows(fresh_rng):
    n = int(fresh_rng.integers(1, 20000))
    words = [f"w{k}" for k in range(int(fresh_rng.choice([1, 3, 200, 5000])))]
    picks = fresh_rng.integers(0, len(words), n)
    valid = fresh_rng.random(n) < fresh_rng.choice([0.0, 0.5, 0.97, 1.0])
    column = pa.array([words[k] if v else None for k, v in zip(picks, valid, strict=True)])
    table = pa.table({"s": column})
    pages = _pages(table, use_dictionary=True)
    dictionary = pa.array([])
    levels, indices = [], []
    for body, page in pages:
        if page.kind == "dictionary":
            # PLAIN byte arrays: a 4-byte length, then the bytes, each
            got, at = [], 0
            for _ in range(page.num_values):
                (size,) = struct.unpack_from("<i", body, at)
                got.append(body[at + 4 : at + 4 + size].decode())
                at += 4 + size
            dictionary = pa.array(got)
            continue
        (size,) = struct.unpack_from("<i", body)  # the definition levels' length
        lv, end = native.rle_hybrid(body[4 : 4 + size], 1, page.num_values)
        assert end == size
        levels.append(lv)
        width = body[4 + size]
        idx, _ = native.rle_hybrid(body[5 + size :], width, int(lv.sum()))
        indices.append(idx)
    levels, indices = np.concatenate(levels), np.concatenate(indices)
    assert np.array_equal(levels.astype(bool), valid)
    assert dictionary.take(pa.array(indices)).to_pylist() == column.drop_null().to_pylist()


def test_forged_runs_are_refused():
    with pytest.raises(CorruptDataError):
        native.rle_hybrid(bytes([0x81, 0x01]), 8, 16)  # 64 bit-packed groups in 1 byte
    with pytest.raises(CorruptDataError):
        native.rle_hybrid(bytes([0xFF] * 11), 3, 4)  # a varint of 11 bytes
    with pytest.raises(CorruptDataError):
        native.rle_hybrid(bytes([10, 1]), 3, 6)  # 5 values where 6 are wanted
    with pytest.raises(CorruptDataError):
        native.rle_hybrid(bytes([0]), 3, 1)  # a run of no values
    with pytest.raises(ValueError, match="0-32"):
        native.rle_hybrid(b"\x02\x01", 33, 1)
    with pytest.raises(CorruptDataError):
        native.rle_hybrid(b"\x02\x01", 3, 1 << 40)  # more values than the bytes can hold
    # a bit-packed run of 0-bit values claiming 2**62 groups: the wanted ones only
    assert native.rle_hybrid(bytes([0xFF] * 8 + [0x7F]), 0, 9)[0].tolist() == [0] * 9
    run = bytes([128, 1, 4, 3, 20, 2, 1, 0, 0, 0, 0b10, 0, 0, 0])
    assert native.delta_binary_packed(run, 3)[0].tolist() == [10, 11, 13]
    for bad, count, why in ((run, 4, "expected"), (run[:12], 3, "miniblock"),
                            (run[:6], 3, "widths"), (bytes([100, 1, 4, 0, 0]), 0, "blocks"),
                            (bytes([128, 1, 3, 0, 0]), 0, "blocks"),
                            (run[:6] + bytes([65]) + run[7:], 3, "65-bit")):
        with pytest.raises(CorruptDataError, match=why):
            native.delta_binary_packed(bad, count)


@pytest.mark.parametrize("encoding", ["PLAIN", "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY"])
def test_byte_array_pages_are_pyarrows(fresh_rng, encoding):
    n = int(fresh_rng.integers(1, 6000))
    stems = [bytes(fresh_rng.integers(0, 256, int(fresh_rng.integers(0, 30)), dtype=np.uint8))
             for _ in range(20)]
    values = sorted(stems[int(fresh_rng.integers(0, 20))] +
                    bytes(fresh_rng.integers(0, 256, int(fresh_rng.integers(0, 9)),
                                             dtype=np.uint8)) for _ in range(n))
    valid = fresh_rng.random(n) < 0.9
    column = pa.array([v if ok else None for v, ok in zip(values, valid, strict=True)],
                      pa.binary())
    got = []
    for body, page in _pages(pa.table({"b": column}), use_dictionary=False,
                             column_encoding={"b": encoding},
                             data_page_size=int(fresh_rng.choice([1 << 12, 1 << 20]))):
        (size,) = struct.unpack_from("<i", body)
        levels, _ = native.rle_hybrid(body[4 : 4 + size], 1, page.num_values)
        rest, count = body[4 + size :], int(levels.sum())
        if encoding == "DELTA_LENGTH_BYTE_ARRAY":
            offsets, start = native.delta_length_byte_arrays(rest, count)
            data, end = rest[start:], start + int(offsets[-1])
        elif encoding == "PLAIN":
            data, offsets, end = native.plain_byte_arrays(rest, count)
        else:
            data, offsets, end = native.delta_byte_arrays(rest, count)
        assert end == len(rest)
        data = bytes(data)
        got += [data[a:b] for a, b in zip(offsets[:-1], offsets[1:], strict=True)]
    assert got == column.drop_null().to_pylist()


def test_forged_byte_arrays_are_refused():
    lengths_2_3 = bytes([128, 1, 4, 2, 4, 2, 0, 0, 0, 0])
    with pytest.raises(CorruptDataError, match="runs past"):
        native.delta_length_byte_arrays(lengths_2_3 + b"abcd", 2)
    negative = bytes([128, 1, 4, 2, 1, 0, 0, 0, 0, 0])  # lengths -1, -1
    with pytest.raises(CorruptDataError, match="length -1"):
        native.delta_length_byte_arrays(negative + b"ab", 2)
    with pytest.raises(CorruptDataError, match="runs past"):
        native.plain_byte_arrays(b"\x05\x00\x00\x00abcd", 1)
    with pytest.raises(CorruptDataError, match="inside a length"):
        native.plain_byte_arrays(b"\x01\x00\x00\x00a\x01\x00\x00", 2)
    with pytest.raises(CorruptDataError):
        native.plain_byte_arrays(b"\x01\x00\x00\x00a", 1 << 40)
    ones = bytes([128, 1, 4, 2, 2, 0, 0, 0, 0, 0])  # prefixes 1, 1: the first has no string
    with pytest.raises(CorruptDataError, match="keeps 1 bytes of a string of 0"):
        native.delta_byte_arrays(ones + lengths_2_3 + b"abcde", 2)


def test_decode_leaf_refuses_forged_counts_and_unsupported_layouts():
    levels = bytes([3, 0b101])
    body = len(levels).to_bytes(4, "little") + levels + b"\1\0\0\0a\2\0\0\0bc"
    page = np.array([[0, 0, 3, 3, 0, 0]])
    assert native.decode_leaf([body], page, native.LEAF_BYTES, 1, max_rows=3)[1] == 2
    with pytest.raises(CorruptDataError, match="cannot hold"):
        native.decode_leaf([body], page, native.LEAF_BYTES, 1, max_rows=2)  # 3 rows in 2
    with pytest.raises(CorruptDataError, match="cannot hold"):
        native.decode_leaf([body], np.array([[0, 0, 3, 1 << 40, 0, 0]]), native.LEAF_BYTES, 1,
                           max_rows=1 << 50)
    with pytest.raises(CorruptDataError, match="cannot be in"):  # a dictionary page's count
        native.decode_leaf([b"\1\0\0\0a", body], np.array([[2, 0, 3, 1 << 40, 0, 0], page[0]]),
                           native.LEAF_BYTES, 1, max_rows=3)
    with pytest.raises(ValueError, match="not RLE") as info:
        native.decode_leaf([body], np.array([[0, 0, 4, 3, 0, 0]]), native.LEAF_BYTES, 1,
                           max_rows=3)
    assert not isinstance(info.value, CorruptDataError)  # (a layout not taken: not damage)
    with pytest.raises(ValueError, match="0-2"):
        native.decode_leaf([body], page, 5, 1, max_rows=3)
