"""fsstgpu.native.parquet: page headers of files pyarrow writes (codecs, page versions, dictionary,
DELTA_LENGTH_BYTE_ARRAY and DELTA_BINARY_PACKED columns, CRCs), their payloads decompressed and
decoded; DELTA_BINARY_PACKED against a Python encoder and decoder; damaged and forged headers
and runs, against the Python model of tests/parquet_model.py (the sanitizer fuzz,
tests/native_fuzz.py, runs the same model over random inputs)."""

from __future__ import annotations

import io
import sys
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fsstgpu import CorruptDataError
from fsstgpu.native import parquet as raw

sys.path.insert(0, str(Path(__file__).parent))
import parquet_model as model  # noqa: E402

ENCODINGS = {"PLAIN": raw.PLAIN, "PLAIN_DICTIONARY": raw.PLAIN_DICTIONARY, "RLE": raw.RLE,
             "DELTA_BINARY_PACKED": raw.DELTA_BINARY_PACKED,
             "DELTA_LENGTH_BYTE_ARRAY": raw.DELTA_LENGTH_BYTE_ARRAY,
             "RLE_DICTIONARY": raw.RLE_DICTIONARY}
INT64 = np.iinfo(np.int64)


def _table(rng, n):
    """Strings for DELTA_LENGTH_BYTE_ARRAY (required, and with nulls), strings for a
    dictionary, int64s for DELTA_BINARY_PACKED with extremes side by side (deltas that wrap)."""
    words = [bytes(rng.integers(97, 123, int(k), dtype=np.uint8))
             for k in rng.integers(0, 40, n)]
    ints = rng.integers(INT64.min, INT64.max, n, dtype=np.int64, endpoint=True)
    ints[::5] = INT64.min
    ints[1::5] = INT64.max
    ints[2::9] = rng.integers(-3, 3, len(ints[2::9]))
    pool = ["apple", "", "pear", "plum" * 20]
    schema = pa.schema([pa.field("dlba", pa.binary(), nullable=False), ("dlba_null", pa.binary()),
                        ("dict", pa.string()), pa.field("dbp", pa.int64(), nullable=False)])
    return pa.table([words, [None if rng.random() < 0.2 else w for w in words],
                     [None if rng.random() < 0.1 else pool[int(i)]
                      for i in rng.integers(0, len(pool), n)], ints], schema=schema)


def _write(table, **options) -> np.ndarray:
    sink = io.BytesIO()
    pq.write_table(table, sink, use_dictionary=["dict"], write_page_checksum=True,
                   column_encoding={"dlba": "DELTA_LENGTH_BYTE_ARRAY",
                                    "dlba_null": "DELTA_LENGTH_BYTE_ARRAY",
                                    "dbp": "DELTA_BINARY_PACKED"},
                   write_batch_size=64, data_page_size=1024, **options)
    return np.frombuffer(sink.getvalue(), np.uint8)


def _range(col) -> tuple[int, int]:
    start = col.dictionary_page_offset if col.has_dictionary_page else col.data_page_offset
    return start, start + col.total_compressed_size


def _values(buf, page, codec, def_levels: bool) -> np.ndarray:
    """A data page's values section: its payload decompressed, the levels dropped (a v1 page's
    definition levels are length-prefixed inside the decompressed payload; v2's lie before it,
    stored uncompressed)."""
    at, size = page[raw.PAYLOAD_OFFSET], page[raw.COMPRESSED_SIZE]
    payload = buf[at:at + size]
    levels = page[raw.DEF_LEVEL_BYTES] + page[raw.REP_LEVEL_BYTES]
    body = payload[levels:]
    want = page[raw.UNCOMPRESSED_SIZE] - levels
    if codec is not None and page[raw.IS_COMPRESSED]:
        body = np.frombuffer(codec.decompress(pa.py_buffer(body), decompressed_size=want),
                             np.uint8)
    assert len(body) == want
    if page[raw.TYPE] == raw.DATA_PAGE and def_levels:
        body = body[4 + int.from_bytes(body[:4].tobytes(), "little"):]
    return body


def _check_pages(buf, col, pages):
    """The pages tile the chunk, count its values, carry the CRCs of their payloads."""
    start, end = _range(col)
    assert pages[0, raw.HEADER_OFFSET] == start
    ends = pages[:, raw.PAYLOAD_OFFSET] + pages[:, raw.COMPRESSED_SIZE]
    assert ends[-1] == end and (ends[:-1] == pages[1:, raw.HEADER_OFFSET]).all()
    assert (pages[:, raw.PAYLOAD_OFFSET] > pages[:, raw.HEADER_OFFSET]).all()
    data = pages[np.isin(pages[:, raw.TYPE], [raw.DATA_PAGE, raw.DATA_PAGE_V2])]
    assert int(data[:, raw.NUM_VALUES].sum()) == col.num_values
    assert (pages[:, raw.TYPE] == raw.DICTIONARY_PAGE).sum() == col.has_dictionary_page
    if col.has_dictionary_page:
        assert pages[0, raw.TYPE] == raw.DICTIONARY_PAGE
    assert set(pages[:, raw.ENCODING].tolist()) <= {ENCODINGS[e] for e in col.encodings}
    assert (pages[:, raw.HAS_CRC] == 1).all()
    for page in pages:
        at, size = page[raw.PAYLOAD_OFFSET], page[raw.COMPRESSED_SIZE]
        assert page[raw.CRC] == zlib.crc32(buf[at:at + size])


@pytest.mark.parametrize("compression", ["none", "zstd", "snappy"])
@pytest.mark.parametrize("version", ["1.0", "2.0"])
def test_pages_of_pyarrow_files(compression, version):
    rng = np.random.default_rng()
    table = _table(rng, int(rng.integers(1500, 3000)))
    buf = _write(table, compression=compression, data_page_version=version,
                 row_group_size=1000)
    meta = pq.ParquetFile(io.BytesIO(buf)).metadata
    codec = None if compression == "none" else pa.Codec(compression)
    npages = 0
    for rg in range(meta.num_row_groups):
        part = table.slice(sum(meta.row_group(k).num_rows for k in range(rg)),
                           meta.row_group(rg).num_rows)
        for j in range(meta.num_columns):
            col = meta.row_group(rg).column(j)
            start, end = _range(col)
            pages = raw.page_headers(buf, start, end)
            assert pages.shape[1] == len(raw.PAGE_FIELDS)
            npages += len(pages)
            _check_pages(buf, col, pages)
            data_type = raw.DATA_PAGE_V2 if version == "2.0" else raw.DATA_PAGE
            assert set(pages[:, raw.TYPE].tolist()) - {raw.DICTIONARY_PAGE} == {data_type}
            alone = raw.page_headers(buf[start:end].copy())  # the chunk alone: offsets move
            assert (alone[:, :3] + [0, start, start] == pages[:, :3]).all()
            assert (alone[:, 3:] == pages[:, 3:]).all()
            def_levels = meta.schema.column(j).max_definition_level > 0
            _check_values(buf, col, pages, codec, def_levels, part.column(j))
    assert npages > 3 * meta.num_row_groups * meta.num_columns  # chunks of several pages


def _check_values(buf, col, pages, codec, def_levels, column):
    """Every payload decompresses to its uncompressed size; the DELTA_BINARY_PACKED runs (a
    DELTA_LENGTH_BYTE_ARRAY page's lengths, then its bytes; an int64 page's values) decode to
    the column's values; the dictionary page holds the chunk's distinct strings."""
    present = [v for v in column.to_pylist() if v is not None]
    lengths, data, ints = [], [], []
    for page in pages:
        values = _values(buf, page, codec, def_levels)
        if page[raw.TYPE] == raw.DICTIONARY_PAGE:
            assert page[raw.NUM_VALUES] == len(set(present))
        elif page[raw.ENCODING] == raw.DELTA_LENGTH_BYTE_ARRAY:
            got, past = raw.delta_binary_packed(values, 0, len(values), page[raw.NUM_VALUES])
            assert past + int(got.sum()) == len(values)
            lengths += got.tolist()
            data.append(values[past:].tobytes())
        elif page[raw.ENCODING] == raw.DELTA_BINARY_PACKED:
            got, past = raw.delta_binary_packed(values, 0, len(values), page[raw.NUM_VALUES])
            assert past == len(values) and len(got) == page[raw.NUM_VALUES]
            ints += got.tolist()
    if col.path_in_schema.startswith("dlba"):
        assert lengths == [len(v) for v in present] and b"".join(data) == b"".join(present)
    elif col.path_in_schema == "dbp":
        assert ints == present


def test_empty_range_and_range_outside():
    buf = np.zeros(10, np.uint8)
    assert raw.page_headers(buf, 4, 4).shape == (0, 12)
    assert raw.page_headers(b"").shape == (0, 12)
    for start, end in ((-1, 4), (5, 4), (0, 11)):
        with pytest.raises(CorruptDataError, match="outside the 10 bytes"):
            raw.page_headers(buf, start, end)


# ---------------------------------------------------------------- damaged chunks

def _small_chunk():
    """A v2 zstd file of a few pages, and its first column chunk's range and pages."""
    rng = np.random.default_rng(7)
    buf = _write(_table(rng, 300), compression="zstd", data_page_version="2.0")
    col = pq.ParquetFile(io.BytesIO(buf)).metadata.row_group(0).column(1)
    start, end = _range(col)
    return buf, start, end, raw.page_headers(buf, start, end)


def test_truncated_at_every_position():
    """A chunk cut anywhere raises, but where it is cut between pages: then the pages before."""
    buf, start, end, pages = _small_chunk()
    bounds = dict(zip(pages[:, raw.HEADER_OFFSET].tolist(), range(len(pages)), strict=True))
    for cut in range(start, end):
        if cut in bounds:
            assert (raw.page_headers(buf, start, cut) == pages[:bounds[cut]]).all()
            continue
        with pytest.raises(CorruptDataError, match=r"Parquet page \d+ \(header at byte \d+\)"):
            raw.page_headers(buf, start, cut)
        with pytest.raises(CorruptDataError):  # the file itself cut short
            raw.page_headers(buf[:cut].copy(), start, end)


def test_byte_flips_in_headers_as_the_model_says():
    """Random bytes changed in the headers: an error wherever the model finds one, else the
    model's pages (a flipped statistics byte changes nothing); never a crash or a hang."""
    buf, start, end, pages = _small_chunk()
    heads = np.concatenate([np.arange(h, p) for h, p in pages[:, 1:3]])
    rng = np.random.default_rng()
    raised = 0
    for _ in range(2000):
        forged = buf.copy()
        at = rng.choice(heads, int(rng.integers(1, 4)))
        forged[at] = rng.integers(0, 256, len(at))
        try:
            want = model.page_headers(forged.tobytes(), start, end)
        except model.Corrupt:
            with pytest.raises(CorruptDataError, match=r"Parquet page \d+"):
                raw.page_headers(forged, start, end)
            raised += 1
            continue
        assert raw.page_headers(forged, start, end).tolist() == want
    assert raised > 100


# ---------------------------------------------------------------- hand-made headers

def _row(header: bytes, payload=b"") -> list[int]:
    return raw.page_headers(header + payload)[0].tolist()


def test_fields_of_each_page_type():
    h = model.page_header(0, 9, 3, crc=0xFFFFFFFE, num_values=7, encoding=raw.PLAIN)
    assert _row(h, b"abc") == [0, 0, len(h), 3, 9, 7, 0, 0, 0, 1, 1, 0xFFFFFFFE]
    h = model.page_header(2, 3, 3, num_values=2, encoding=raw.PLAIN_DICTIONARY)
    assert _row(h, b"abc")[:7] == [2, 0, len(h), 3, 3, 2, 2]
    h = model.page_header(3, 5, 5, num_values=4, encoding=raw.RLE, v2=(1, 4, 2, 1, False))
    assert _row(h, b"abcde")[5:11] == [4, 3, 2, 1, 0, 0]
    h = model.page_header(3, 9, 5, num_values=4, encoding=raw.RLE, v2=(1, 4, 2, 1, None))
    assert _row(h, b"abcde")[9] == 1  # is_compressed defaults to true
    h = model.page_header(1, 0, 2)  # an index page: no counts
    assert _row(h, b"ab")[:7] == [1, 0, len(h), 2, 0, 0, -1]


def test_unknown_fields_of_every_thrift_type_are_skipped():
    rng = np.random.default_rng(3)
    plain = model.page_header(0, 4, 4, num_values=1, encoding=raw.PLAIN)
    for ttype in range(1, 14):
        for fid in (6, 9, 15, 16, 300, 32767):  # short and long field headers
            value = b"" if ttype in (model.TRUE, model.FALSE) else \
                model.random_value(rng, ttype, 0)
            h = model.page_header(0, 4, 4, num_values=1, encoding=raw.PLAIN,
                                  extra=[(fid, ttype, value)])
            assert _row(h, b"abcd")[3:] == _row(plain, b"abcd")[3:], (ttype, fid)


SIZES = bytes([0x15, 0x00, 0x15, 0x08, 0x15, 0x08])  # a data page of 4 bytes
PAYLOAD = b"\0" * 4


@pytest.mark.parametrize(("chunk", "message"), [
    (b"\x15", "runs past the chunk's end"),
    (SIZES[:4], "runs past the chunk's end"),
    (SIZES[:4] + b"\x00", "lacks the page type or a size"),
    (SIZES[:4] + bytes([0x16, 0x08, 0x00]), "lacks the page type"),  # an i64 size: skipped
    (SIZES[:4] + bytes([0x15, 0x03, 0x00]), "compressed_page_size is -2"),
    (SIZES + b"\x00" + PAYLOAD[:3], "payload of 4 bytes at byte 7 runs past"),
    (SIZES + b"\x00" + PAYLOAD, "has no data_page_header, which its type needs"),
    (SIZES + bytes([0x2C, 0x15, 0x02, 0x00, 0x00]) + PAYLOAD,
     "data_page_header lacks its encoding"),
    (bytes([0x15]) + b"\xff" * 9 + b"\x02", "a varint of over 64 bits"),
    (bytes([0x15, 0x80, 0x80, 0x80, 0x80, 0x10, 0x00]), "an i32 field holds 2147483648"),
    (bytes([0x19, 0xF8]) + model.uleb(1 << 40), "container of 1099511627776 elements"),
    (bytes([0x1E]), "unknown Thrift type 14"),
    (bytes([0x0C]) + model.uleb(80000), "a field id of 40000"),
    (bytes([0x69]) + model.nested_list(17) + b"\0" * 20, "nest over 16 deep"),
])
def test_malformed_headers(chunk, message):
    with pytest.raises(CorruptDataError, match=message):
        raw.page_headers(chunk)
    with pytest.raises(model.Corrupt):
        model.page_headers(chunk, 0, len(chunk))


def test_nesting_up_to_the_limit_is_read():
    h = model.page_header(0, 4, 4, num_values=1, encoding=raw.PLAIN)
    deep = bytes([0x69]) + model.nested_list(16)  # field 11: a list 16 containers deep
    assert _row(h[:-1] + deep + b"\0", PAYLOAD)[3:] == _row(h, PAYLOAD)[3:]


def test_errors_name_the_page():
    good = model.page_header(0, 4, 4, num_values=1, encoding=raw.PLAIN) + b"abcd"
    bad = model.page_header(3, 4, 4, num_values=1, encoding=raw.PLAIN, v2=(0, 1, 3, 2, None))
    with pytest.raises(CorruptDataError, match=rf"page 2 \(header at byte {2 * len(good)}\): "
                                               "levels of 5 bytes in a page of 4 bytes"):
        raw.page_headers(good + good + bad + b"abcd")
    with pytest.raises(CorruptDataError, match="page 1 .*payload of 4 bytes at byte"):
        raw.page_headers(good + good[:-1])
    with pytest.raises(CorruptDataError, match="page 2 .*runs past the chunk's end"):
        raw.page_headers(good + good + b"\x15")  # a byte left after the last page


# ---------------------------------------------------------------- DELTA_BINARY_PACKED

def _sequences(rng):
    """int64 sequences: random over the whole range (deltas wrap), small steps either way,
    constant, extremes side by side; of counts around the block and miniblock sizes."""
    for n in (0, 1, 2, 31, 32, 33, 127, 128, 129, 130, 255, 256, 257, 513, 1000):
        yield rng.integers(INT64.min, INT64.max, n, dtype=np.int64, endpoint=True).tolist()
        yield np.cumsum(rng.integers(-100, 100, n)).tolist()
        yield [int(rng.integers(-5, 5))] * n
        yield [[INT64.min, INT64.max, 0, -1][k % 4] for k in range(n)]


@pytest.mark.parametrize(("block", "minis"), [(128, 4), (128, 1), (256, 8), (256, 2),
                                              (512, 16)])
def test_delta_binary_packed_round_trip(block, minis):
    rng = np.random.default_rng()
    for values in _sequences(rng):
        junk = rng.random() < 0.5  # unused miniblocks' widths and padding: anything
        run = model.dbp_encode(values, block, minis, rng if junk else None)
        lead, tail = b"\x07" * int(rng.integers(0, 3)), b"\xff" * int(rng.integers(0, 3))
        buf = lead + run + tail
        got, past = raw.delta_binary_packed(buf, len(lead), len(buf), len(values) + 3)
        assert got.dtype == np.int64 and got.tolist() == values and past == len(lead + run)
        assert model.dbp_decode(buf, len(lead), len(buf), len(values)) == (values, past)


def test_delta_binary_packed_truncated_anywhere():
    rng = np.random.default_rng(5)
    values = np.cumsum(rng.integers(-1000, 1000, 300)).tolist()
    run = model.dbp_encode(values, 128, 4)
    raw.delta_binary_packed(run, 0, len(run), 300)
    for cut in range(len(run)):
        with pytest.raises(CorruptDataError, match="DELTA_BINARY_PACKED run at byte 0"):
            raw.delta_binary_packed(run, 0, cut, 300)
        with pytest.raises(CorruptDataError):
            raw.delta_binary_packed(run[:cut], 0, len(run), 300)  # end outside the buffer


def _header(block, minis, count, first=0):
    return model.uleb(block) + model.uleb(minis) + model.uleb(count) + model.zigzag(first)


@pytest.mark.parametrize(("run", "max_values", "message"), [
    (_header(100, 4, 3), 3, "block size 100 is not a multiple of 128"),
    (_header(0, 1, 3), 3, "block size 0"),
    (_header(1 << 32, 4, 3), 3, "below 2\\*\\*32"),
    (_header(128, 3, 3), 3, "3 miniblocks do not divide"),
    (_header(128, 8, 3), 3, "8 miniblocks do not divide"),  # 16 a miniblock
    (_header(128, 0, 3), 3, "0 miniblocks"),
    (_header(128, 4, 5), 4, "5 values where at most 4"),
    (_header(128, 4, 2) + b"\x00" + bytes([65, 0, 0, 0]), 2, "bit width of 65"),
    (_header(128, 4, 2) + b"\x00" + bytes([1, 0, 0]), 2, "bit widths run past the end"),
    (_header(128, 4, 2) + b"\x00" + bytes([8, 0, 0, 0]) + b"\0" * 31, 2, "a miniblock of 32"),
    (b"\x80" * 10 + b"\x02", 3, "over 64 bits"),
])
def test_delta_binary_packed_refuses(run, max_values, message):
    with pytest.raises(CorruptDataError, match=message):
        raw.delta_binary_packed(run, 0, len(run), max_values)
    with pytest.raises(model.Corrupt):
        model.dbp_decode(run, 0, len(run), max_values)


def test_delta_binary_packed_arguments():
    run = model.dbp_encode([1, 2, 3])
    with pytest.raises(ValueError, match="max_values must be >= 0"):
        raw.delta_binary_packed(run, 0, len(run), -1)
    for pos, end in ((-1, len(run)), (2, 1), (0, len(run) + 1)):
        with pytest.raises(CorruptDataError, match="lies outside"):
            raw.delta_binary_packed(run, pos, end, 3)
    # deltas -2**63 and 2**63 - 1: a miniblock of width 64
    values = [0, int(INT64.min), -1]
    run = model.dbp_encode(values)
    widths = len(_header(128, 4, 3)) + len(model.zigzag(int(INT64.min)))  # past the min delta
    assert run[widths] == 64
    assert raw.delta_binary_packed(run, 0, len(run), 3)[0].tolist() == values
