"""Parquet row groups written in parallel and joined (formats/parquet_parts.py): Thrift footers
read and written back byte for byte, joined files byte for byte what one writer writes, and
compress_file / decompress_file through a parallel Sink equal to a single writer's."""

from __future__ import annotations

import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fsstgpu.columns import compress_column
from fsstgpu.formats import compress_file, decompress_file, sinks as sinks_module
from fsstgpu.formats.arrow_storage import to_extension_array
from fsstgpu.formats.chunk_record import ARROW_SCHEMA_KEY, CHUNKS_KEY, chunk_digests, chunks_footer
from fsstgpu.formats.parquet_options import (
    ROW_GROUPS_KEY,
    SCHEMA_CRC_KEY,
    with_schema_crc,
    writer_options,
)
from fsstgpu.formats.parquet_parts import JoinedParquetFile, write_part
from fsstgpu.formats.pruning import STATS_CRC_KEY, statistics_digests, stats_crc_footer
from fsstgpu.formats.sinks import Sink
from fsstgpu.formats.thrift_compact import (
    BINARY,
    BOOL_TRUE,
    BYTE,
    DOUBLE,
    I16,
    I32,
    I64,
    LIST,
    MAP,
    MAX_DEPTH,
    SET,
    STRUCT,
    Field,
    Map,
    Raw,
    Seq,
    Struct,
    dumps,
    loads,
)


def _table(rng, n: int) -> pa.Table:
    words = ["alpha", "beta", "gamma", "http://example.com/", "\u00e9t\u00e9", ""]
    text = [None if rng.random() < 0.1 else "".join(rng.choice(words, int(rng.integers(0, 6))))
            for _ in range(n)]
    return pa.table({  # (typed: a column of nulls alone would be of type null)
        "s": pa.array(text, pa.string()),
        "d": pa.array(text, pa.string()).dictionary_encode(),
        "i": pa.array(rng.integers(-(2**40), 2**40, n)),
        "f": pa.array(rng.random(n)),
        "b": pa.array(rng.random(n) < 0.5),
        "l": pa.array([[int(x) for x in rng.integers(0, 9, int(rng.integers(0, 4)))]
                       for _ in range(n)], pa.list_(pa.int64())),
        "st": pa.array([{"x": int(k), "y": str(k)} for k in range(n)]),
    }).replace_schema_metadata({"origin": "test"})


def _cuts(rng, n: int) -> list[tuple[int, int]]:
    """Row groups of random sizes, an empty one among them."""
    bounds = sorted({0, n, *rng.integers(0, n + 1, 5).tolist()})
    cuts = list(zip(bounds[:-1], bounds[1:], strict=True))
    return cuts[:1] + [(cuts[0][1], cuts[0][1])] + cuts[1:]


def _footer_bytes(data: bytes) -> bytes:
    size = int.from_bytes(data[-8:-4], "little")
    return data[-8 - size : -8]


@pytest.mark.parametrize("options", [dict(compression="zstd", write_page_checksum=True),
                                     dict(compression="snappy", use_dictionary=False),
                                     dict(compression="none", data_page_version="2.0")])
def test_joined_file_is_byte_for_byte_one_writers(options, fresh_rng):
    rng = fresh_rng
    table = _table(rng, int(rng.integers(1, 3000)))
    cuts = _cuts(rng, table.num_rows)
    options = dict(store_schema=True, **options)
    extra = {"fsstgpu.k": "v", "origin": "replaced"}
    one = io.BytesIO()
    with pq.ParquetWriter(one, table.schema, **options) as writer:
        for lo, hi in cuts:
            writer.write_table(table.slice(lo, hi - lo), row_group_size=max(1, hi - lo))
        writer.add_key_value_metadata(extra)
    joined = io.BytesIO()
    parts = JoinedParquetFile(joined, table.schema, options)
    for lo, hi in cuts:
        parts.append(write_part(table.slice(lo, hi - lo), table.schema, options))
    parts.close(extra)
    assert joined.getvalue() == one.getvalue()
    # (the values: without dictionary pages a dictionary column reads back plain)
    assert pq.read_table(pa.BufferReader(joined.getvalue())).to_pylist() == table.to_pylist()


def test_a_file_without_row_groups(fresh_rng):
    schema = _table(fresh_rng, 1).schema
    one = io.BytesIO()
    pq.ParquetWriter(one, schema, store_schema=True).close()
    joined = io.BytesIO()
    JoinedParquetFile(joined, schema, dict(store_schema=True)).close({})
    assert joined.getvalue() == one.getvalue()


def test_thrift_footers_round_trip_and_malformed_ones_raise(fresh_rng):
    rng = fresh_rng
    out = io.BytesIO()
    pq.write_table(_table(rng, 500), out, row_group_size=100, write_page_index=True)
    raw = _footer_bytes(out.getvalue())
    # whole, and in the shape joining reads (the rest kept as raw bytes, skipped unread)
    shapes = (None, {4: {1: {3: {9: None}}, 5: None}, 5: None}, {})
    for shape in shapes:
        assert dumps(loads(raw, shape)) == raw
    for cut in range(len(raw)):  # every truncation: an error, never a hang or a wrong tree
        for shape in shapes:
            with pytest.raises(ValueError):
                loads(raw[:cut], shape)
    with pytest.raises(ValueError, match="after"):
        loads(raw + b"\0", shapes[1])
    for _ in range(200):  # flipped bytes: parsed or refused, nothing else
        bad = bytearray(raw)
        bad[int(rng.integers(0, len(bad)))] ^= int(rng.integers(1, 256))
        for shape in shapes:
            try:
                loads(bytes(bad), shape)
            except ValueError:
                pass


def test_a_shaped_read_keeps_what_it_skips_as_raw_bytes():
    raw = dumps(Struct([Field(1, I64, 7), Field(2, LIST, Seq(LIST, STRUCT, [
        Struct([Field(1, I64, 5), Field(2, BINARY, b"x")])])), Field(3, BINARY, b"kept")]))
    meta = loads(raw, {2: {1: None}})
    assert meta.get(1) == Raw(raw[1:2]) and meta.get(3) == Raw(b"\x04kept")
    element = meta.get(2).items[0]
    assert element.get(1) == 5 and isinstance(element.get(2), Raw)
    element.set(1, 300)  # a changed value is written anew, the raw bytes around it as read
    assert loads(dumps(meta)).get(2).items[0].get(1) == 300 and dumps(meta)[-6:] == raw[-6:]



#: every compact type, some of which Parquet footers never hold (doubles, maps, sets, bytes)
EVERY_TYPE = Struct([
    Field(1, DOUBLE, b"\x00" * 7 + b"\x40"), Field(2, MAP, Map(BINARY, I32, [(b"k", 5),
                                                                       (b"j", -1)])),
    Field(3, SET, Seq(SET, I16, [1, 2])), Field(4, BYTE, 7), Field(5, BOOL_TRUE, True),
    Field(6, BOOL_TRUE, False), Field(7, MAP, Map(0, 0, [])), Field(30, I64, -(2**63)),
    Field(31, I64, 2**63 - 1), Field(32, LIST, Seq(LIST, DOUBLE, [b"\x01" * 8] * 16)),
    Field(33, STRUCT, Struct([Field(1, MAP, Map(I64, STRUCT, [(3, Struct([]))]))])),
    Field(34, LIST, Seq(LIST, BOOL_TRUE, [True, False, True])),
    Field(35, LIST, Seq(LIST, BYTE, [0, 1, 2, 255]))])


def test_every_thrift_type_round_trips_and_every_truncation_raises():
    """Parquet footers hold no doubles, maps, sets or bytes, and no 10-byte varint (an i64
    past 2**62 in magnitude): the reader's handling of them had no test (a double read as a
    map, a map as a double, the longest varint refused went unnoticed). Read whole, read
    skipped (a shape naming none of them) and cut anywhere."""
    raw = dumps(EVERY_TYPE)
    assert loads(raw) == EVERY_TYPE and dumps(loads(raw)) == raw
    for shape in ({}, {33: {}}, {2: None, 32: None}):
        assert dumps(loads(raw, shape)) == raw
    assert loads(raw, {33: {}}).get(33).get(1) == Raw(dumps(EVERY_TYPE.get(33))[1:-1])
    for cut in range(len(raw)):
        for shape in (None, {}):
            with pytest.raises(ValueError):
                loads(raw[:cut], shape)


@pytest.mark.parametrize("shape", [None, {}])
def test_malformed_thrift_values_raise(shape):
    """What the reader must refuse, read into values or skipped: a varint of more than 10
    bytes (read on, it made a number past 64 bits), a container of more elements than bytes
    left (refused before reading any), a type id no value has (read as None, and the bytes
    after it as the next field), nesting past :data:`MAX_DEPTH`."""
    eleven = b"\x16" + b"\xff" * 10 + b"\x01" + b"\x00"
    with pytest.raises(ValueError, match="longer than 10 bytes"):
        loads(eleven, shape)
    ten = b"\x16" + b"\xff" * 9 + b"\x01" + b"\x00"
    assert dumps(loads(ten, shape)) == ten
    for head in (b"\x19\xf5", b"\x1b"):  # a list, a map: 2**40 elements in 8 bytes
        with pytest.raises(ValueError, match="a Thrift container of 1099511627776 elements"):
            loads(head + b"\x80\x80\x80\x80\x80\x20" + bytes(8), shape)
    for type_ in (13, 14, 15):
        for raw in (bytes([0x10 | type_, 0]), bytes([0x19, 0x10 | type_, 0, 0])):
            with pytest.raises(ValueError, match="unknown Thrift type"):
                loads(raw, shape)

    def nested(levels):  # structs in structs, the innermost holding an i64
        return b"\x1c" * levels + b"\x16\x02\x00" + b"\x00" * levels

    assert dumps(loads(nested(MAX_DEPTH + 1), shape)) == nested(MAX_DEPTH + 1)
    with pytest.raises(ValueError, match="nested too deep"):
        loads(nested(MAX_DEPTH + 2), shape)
    with pytest.raises(ValueError, match="nested too deep"):
        loads(nested(5000), shape)  # (never a RecursionError)

def test_page_indexes_are_not_moved(fresh_rng):
    table = _table(fresh_rng, 50)
    options = dict(write_page_index=True)
    parts = JoinedParquetFile(io.BytesIO(), table.schema, options)
    with pytest.raises(ValueError, match="page index"):
        parts.append(write_part(table, table.schema, options))


def _write(path, table, cuts, parallel, units=None, serial=None):
    """``table``'s rows cut at ``cuts`` through a Sink (or the tables ``units``), a unit a
    call (``serial``: all in one call, to the Sink's ``serial``)."""
    units = units or [table.slice(lo, hi - lo) for lo, hi in cuts]
    sink = Sink(str(path), "parquet", units[0].schema, parallel=parallel, serial=serial)
    if serial is not None:
        sink.write_many([(unit.columns, unit.num_rows) for unit in units])
    else:
        for unit in units:
            sink.write(unit.columns)
    sink.close()
    return path.read_bytes()


def _one_writers(path, units) -> bytes:
    """What one pyarrow writer writes of ``units`` with the Sink's options and footer (the
    oracle: the Sink writes through joined parts only)."""
    schema = with_schema_crc(units[0].schema)
    # an fsstgpu footer's CRCs of the statistics and record of the chunks: from a first write
    digests = places = stored = None
    for _ in range(2):
        with pq.ParquetWriter(str(path), schema, store_schema=True, write_page_checksum=True,
                              **writer_options(schema)) as writer:
            for unit in units:
                writer.write_table(unit.cast(schema), row_group_size=max(1, unit.num_rows))
            if digests is not None:
                # (the row counts on an fsst file's footer; the statistics' CRCs on every one)
                ours = ({ROW_GROUPS_KEY: json.dumps([u.num_rows for u in units])}
                        if SCHEMA_CRC_KEY in (schema.metadata or {}) else {})
                writer.add_key_value_metadata(
                    {**ours, STATS_CRC_KEY: stats_crc_footer(digests),
                     CHUNKS_KEY: chunks_footer(places, stored)})
        meta = pq.read_metadata(str(path))
        digests = statistics_digests(meta)
        places, stored = chunk_digests(meta), meta.metadata.get(ARROW_SCHEMA_KEY)
    return path.read_bytes()


def _units_with_fsst(rng) -> list:
    """Random units of a 4000-row table, with an fsst column too: its leaves' own options, the
    footer's checksum and row counts."""
    table = _table(rng, 4000)
    return [table.slice(lo, hi - lo).append_column(
        "fs", to_extension_array(compress_column(table.column("s").slice(lo, hi - lo))))
        for lo, hi in _cuts(rng, table.num_rows)]


def test_a_parallel_sink_writes_the_single_writers_file(tmp_path, fresh_rng):
    units = _units_with_fsst(fresh_rng)
    one = _one_writers(tmp_path / "one.parquet", units)
    for parallel in (1, 2, 3, 8):
        assert _write(tmp_path / f"p{parallel}.parquet", None, None, parallel, units) == one


def test_units_written_several_a_call_give_the_single_writers_file(tmp_path, fresh_rng):
    """Sink.write_many: consecutive row groups share a part (cut into at most ``parallel``),
    the fsst column's encoding trial still taken on the first unit with rows."""
    rng = fresh_rng
    units = _units_with_fsst(rng)
    one = _one_writers(tmp_path / "one.parquet", units)
    for parallel, serial in ((1, None), (2, None), (3, False), (8, False), (2, True)):
        path = tmp_path / f"m{parallel}.parquet"
        sink = Sink(str(path), "parquet", units[0].schema, parallel=parallel, serial=serial)
        bounds = sorted({0, len(units), *rng.integers(0, len(units) + 1, 2).tolist()})
        for lo, hi in zip(bounds[:-1], bounds[1:], strict=True):
            sink.write_many([(u.columns, u.num_rows) for u in units[lo:hi]])
        sink.close()
        assert path.read_bytes() == one, (parallel, serial, bounds)


def test_one_writer_only_after_the_encodings_trial(tmp_path):
    """Row groups without rows before the first with rows are written with the default
    encodings (the trial needs rows), the others with the trial's (here DELTA_BYTE_ARRAY for
    codes of shared prefixes): one writer, whose options never change, is not taken for
    them, and the file is the parts' (and without them, one writer's is)."""
    urls = pa.array([f"https://www.example.com/a/long/shared/path/item-{i:06d}"
                     for i in range(3000)])
    units = [pa.table({"fs": to_extension_array(compress_column(urls.slice(lo, hi - lo)))})
             for lo, hi in [(0, 0), (0, 0), (0, 1000), (1000, 2000), (2000, 3000)]]
    for lead in (2, 0):
        files = [_write(tmp_path / f"{serial}.parquet", None, None, 2, units[lead:],
                        serial=serial) for serial in (False, True)]
        assert files[0] == files[1], lead
    meta = pq.read_metadata(tmp_path / "True.parquet")
    assert "DELTA_BYTE_ARRAY" in meta.row_group(2).column(0).encodings


def test_a_parallel_sink_names_an_unwritable_column(tmp_path):
    table = pa.table({"n": [1, 2],
                      "d": pa.DictionaryArray.from_arrays(pa.array([0, 1]), pa.array(["a", None]))})
    for serial in (None, False, True):  # (a unit a call, parts, one writer)
        with pytest.raises(ValueError, match="'d'.*cannot be written to Parquet"):
            _write(tmp_path / "x.parquet", table, [(0, 1), (1, 2), (0, 2)], 2, serial=serial)


@pytest.mark.parametrize("codec", ["zstd", "none"])
def test_compress_and_decompress_file_in_parallel_are_unchanged(tmp_path, monkeypatch, codec,
                                                                fresh_rng):
    rng = fresh_rng
    src = tmp_path / "in.parquet"
    pq.write_table(_table(rng, 5000), src, row_group_size=700)
    outputs = {}
    for threads in (1, 4):
        monkeypatch.setattr(sinks_module, "part_threads", lambda t=threads: t)
        c, d = tmp_path / f"c{threads}.parquet", tmp_path / f"d{threads}.parquet"
        compress_file(src, c, parquet_codec=codec)
        decompress_file(c, d, device="cpu")
        outputs[threads] = c.read_bytes(), d.read_bytes()
    assert outputs[1] == outputs[4]
    assert pq.read_table(tmp_path / "d4.parquet").equals(pq.read_table(src))


def test_an_fsst_file_without_row_groups_in_parallel(tmp_path, monkeypatch):
    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"s": pa.array([], pa.string()), "n": pa.array([], pa.int64())}),
                   src)
    outputs = []
    for threads in (1, 2):
        monkeypatch.setattr(sinks_module, "part_threads", lambda t=threads: t)
        out = tmp_path / f"c{threads}.parquet"
        compress_file(src, out)
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]
    assert pq.ParquetFile(tmp_path / "c2.parquet").metadata.num_rows == 0


def test_row_groups_in_flight_are_bounded_by_their_bytes(tmp_path, monkeypatch, fresh_rng):
    """Over MAX_HELD_BYTES beyond the oldest, a write waits for the oldest: with a bound of
    nothing, one row group at a time; the file is the same."""
    from fsstgpu.formats import parquet_parts

    table = _table(fresh_rng, 3000)
    cuts = [(k, k + 500) for k in range(0, 3000, 500)]
    one = _one_writers(tmp_path / "one.parquet", [table.slice(lo, hi - lo) for lo, hi in cuts])
    monkeypatch.setattr(parquet_parts, "MAX_HELD_BYTES", 0)
    sink = Sink(str(tmp_path / "b.parquet"), "parquet", table.schema, parallel=4)
    for lo, hi in cuts:
        sink.write(table.slice(lo, hi - lo).columns)
        assert len(sink._parts._pending) == 1
    sink.close()
    assert (tmp_path / "b.parquet").read_bytes() == one
