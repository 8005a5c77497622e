"""The footer's record of where each column chunk lies (``formats/chunk_record.py``): page CRCs
do not cover where the footer says the pages are, nor the row counts, so a forged or flipped
position or count read another row group's values, or fewer rows, without an error; every
Parquet output of fsstgpu (compressed or decompressed) now records them, and a reader checks
the chunks it reads."""

from __future__ import annotations

import base64
import io
import json
import struct
import zlib

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fsstgpu.errors import CorruptDataError
from fsstgpu.formats import compress_file, decompress_file, open_reader, read_table
from fsstgpu.formats.chunk_record import (
    CHUNKS_KEY,
    ChunkRecord,
    chunk_digest,
    chunk_digests,
    chunks_footer,
)
from fsstgpu.formats.footer_records import sealed
from fsstgpu.formats.thrift_compact import I64, Field, dumps, loads

# Thrift field ids (parquet.thrift)
FILE_ROW_GROUPS, FILE_KEY_VALUES = 4, 5
RG_COLUMNS, RG_NUM_ROWS = 1, 3
CC_FILE_OFFSET, CC_META = 2, 3
CM_PLACE = (6, 7, 9, 11)  # sizes, data and dictionary page offsets


@pytest.fixture
def files(tmp_path):
    """An input in three row groups of 30 rows, its fsstgpu compression and that decompressed."""
    src = tmp_path / "in.parquet"
    table = pa.table({"s": [f"line {i} of some text" if i % 7 else None for i in range(90)],
                      "n": pa.array(range(90), pa.int64())})
    pq.write_table(table, src, row_group_size=30)
    compress_file(src, tmp_path / "c.parquet")
    decompress_file(tmp_path / "c.parquet", tmp_path / "p.parquet", device="cpu")
    return table, tmp_path / "c.parquet", tmp_path / "p.parquet"


def _forged(path, edit, out):
    """``path`` with its footer (FileMetaData) changed by ``edit``, written to ``out``."""
    raw = path.read_bytes()
    size = struct.unpack("<I", raw[-8:-4])[0]
    footer = loads(raw[-8 - size:-8])
    edit(footer)
    new = dumps(footer)
    out.write_bytes(raw[:-8 - size] + new + struct.pack("<I", len(new)) + b"PAR1")
    return out


def _chunk(footer, k, j):
    return footer.get(FILE_ROW_GROUPS).items[k].get(RG_COLUMNS).items[j]


def _reads(path):
    """Every read of ``path`` (whole, by row group, a column, a stream of batches)."""
    yield lambda: read_table(path, device="cpu")
    yield lambda: read_table(path, device="cpu", row_groups=[1])
    yield lambda: read_table(path, device="cpu", columns=["n"])
    yield lambda: open_reader(path).read_all()


def test_outputs_record_their_chunks_and_read_back(files):
    table, compressed, plain = files
    for path in (compressed, plain):
        assert CHUNKS_KEY in pq.read_metadata(path).metadata
        for read in _reads(path):
            got = read()
            assert got.to_pylist() == table.slice(30, 30).to_pylist() if got.num_rows == 30 \
                else got.select(got.schema.names).to_pylist() == table.select(
                    got.schema.names).to_pylist()


@pytest.mark.parametrize("which", ["c", "p"])
def test_a_chunk_sent_to_another_row_groups_pages_is_an_error(files, tmp_path, which):
    """Row group 1's chunk of ``n`` pointed at row group 0's pages (their CRCs hold): before,
    the read gave row group 0's values under row group 1's rows."""
    _, compressed, plain = files
    path = {"c": compressed, "p": plain}[which]
    j = pq.read_metadata(path).schema.names.index("n")

    def redirect(footer):
        src, dst = _chunk(footer, 0, j), _chunk(footer, 1, j)
        dst.set(CC_FILE_OFFSET, src.get(CC_FILE_OFFSET))
        for field in CM_PLACE:
            if src.get(CC_META).get(field) is not None:
                dst.get(CC_META).set(field, src.get(CC_META).get(field))

    bad = _forged(path, redirect, tmp_path / "bad.parquet")
    assert pq.read_table(bad).column("n").to_pylist()[30:60] == list(range(30))  # (pyarrow)
    for read in _reads(bad):
        with pytest.raises(CorruptDataError, match=r"bad.parquet: row group 1.*column chunk "
                                                   f"{j}: .*not those written"):
            read()


def test_a_changed_row_count_in_a_decompressed_file_is_an_error(files, tmp_path):
    """A plain output's footer had no record: a row count of 16 read 16 rows of 30."""
    _, _, plain = files
    bad = _forged(plain, lambda f: f.get(FILE_ROW_GROUPS).items[1].set(RG_NUM_ROWS, 16),
                  tmp_path / "bad.parquet")
    assert pq.read_table(bad).num_rows == 76  # (pyarrow: no error)
    for read in _reads(bad):
        with pytest.raises(CorruptDataError, match="bad.parquet: row group 1.*not those written"):
            read()


def _key_values(footer):
    return {p.get(1): p for p in footer.get(FILE_KEY_VALUES).items}


def test_a_changed_arrow_schema_or_record_is_an_error(files, tmp_path):
    _, compressed, plain = files

    def retype(footer):  # the stored schema with `s` as large_string: pyarrow reads it so
        pair = _key_values(footer)[b"ARROW:schema"]
        schema = pq.read_schema(plain)
        large = schema.set(0, schema.field(0).with_type(pa.large_string()))
        pair.set(2, base64.b64encode(large.serialize().to_pybytes()))

    bad = _forged(plain, retype, tmp_path / "bad.parquet")
    assert pq.read_table(bad).schema.field("s").type == pa.large_string()  # (no error)
    with pytest.raises(CorruptDataError, match="ARROW:schema"):
        read_table(bad, device="cpu")

    def damage(footer):
        pair = _key_values(footer)[CHUNKS_KEY]
        pair.set(2, pair.get(2).replace(b'"row_groups":["', b'"row_groups":["AAAA', 1))

    for path in (compressed, plain):
        bad = _forged(path, damage, tmp_path / "bad.parquet")
        with pytest.raises(CorruptDataError, match="record of its column chunks"):
            read_table(bad, device="cpu")


def test_a_file_without_the_record_reads_as_before(files, tmp_path):
    """Another writer's file (or one of an earlier fsstgpu) has no record: nothing to check."""
    table, _, plain = files

    def drop(footer):
        pairs = footer.get(FILE_KEY_VALUES)
        pairs.items = [p for p in pairs.items if p.get(1) != CHUNKS_KEY]

    old = _forged(plain, drop, tmp_path / "old.parquet")
    assert read_table(old, device="cpu").equals(pq.read_table(plain))
    assert read_table(old, device="cpu").to_pylist() == table.to_pylist()


def test_a_resealed_record_of_other_chunks_is_an_error(files, tmp_path):
    """A record whose own CRC holds but that lists another number of chunks for a row group
    (or other digests) than the footer has is refused when that row group is read."""
    _, compressed, _ = files
    meta = pq.read_metadata(compressed)
    digests = chunk_digests(meta)
    stored = meta.metadata[b"ARROW:schema"]
    for forged in ([digests[0][:-1], *digests[1:]],
                   [digests[0], [d ^ 1 for d in digests[1]], *digests[2:]]):
        def reseal(footer, forged=forged):
            _key_values(footer)[CHUNKS_KEY].set(2, chunks_footer(forged, stored))

        bad = _forged(compressed, reseal, tmp_path / "bad.parquet")
        k = 0 if len(forged[0]) != len(digests[0]) else 1
        with pytest.raises(CorruptDataError, match=f"row group {k}[:,].*(column chunk|written)"):
            read_table(bad, device="cpu")


def test_a_row_groups_record_is_decoded_once(tmp_path, monkeypatch):
    """A whole-file CPU read checks one column chunk at a time: each check decoded its row
    group's whole record (O(columns) a chunk, quadratic in a wide file's columns: half of a
    3000-column file's read time); it is decoded once a row group."""
    import fsstgpu.formats.chunk_record as chunk_record

    src = tmp_path / "wide.parquet"
    table = pa.table({**{f"c{i}": pa.array(range(40)) for i in range(60)},
                      "s": [f"v{i % 7}" for i in range(40)]})
    pq.write_table(table, src, row_group_size=20)
    compress_file(src, tmp_path / "c.parquet")
    calls = []

    class Counted:  # (chunk_record's base64 alone: pruning decodes its own record too)
        def b64decode(self, *args, **kwargs):
            calls.append(1)
            return base64.b64decode(*args, **kwargs)

    monkeypatch.setattr(chunk_record, "base64", Counted())
    assert read_table(tmp_path / "c.parquet", device="cpu").equals(table)
    assert len(calls) == 2  # (one a row group)


def test_a_record_of_a_later_version_is_skipped(files, tmp_path):
    """A later fsstgpu's record (another version, its own CRC holding) is not refused: this
    reader cannot check it, and reads the file as one without a record."""
    table, compressed, _ = files

    def later(footer):
        pair = _key_values(footer)[CHUNKS_KEY]
        body = {"row_groups": "something else", "version": 2}
        inner = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
        pair.set(2, json.dumps({"crc32": zlib.crc32(inner), "fsstgpu.chunks": body},
                               sort_keys=True, separators=(",", ":")).encode())

    newer = _forged(compressed, later, tmp_path / "newer.parquet")
    assert read_table(newer, device="cpu").to_pylist() == table.to_pylist()


@pytest.fixture
def plain_with_dictionary(tmp_path):
    """A decompressed output (it has the record, no fsstgpu schema CRC) with a string, a nested
    string and a dictionary column."""
    table = pa.table({"s": ["a", None, "bc"] * 10, "l": [["x", None], [], None] * 10,
                      "d": pa.array(["p", "q", None] * 10).dictionary_encode()})
    pq.write_table(table, tmp_path / "in.parquet", row_group_size=10)
    compress_file(tmp_path / "in.parquet", tmp_path / "c.parquet")
    decompress_file(tmp_path / "c.parquet", tmp_path / "p.parquet", device="cpu")
    assert read_table(tmp_path / "p.parquet", device="cpu").equals(table)
    return tmp_path / "p.parquet"


def test_a_flip_that_hides_the_key_values_from_pyarrow_is_an_error(plain_with_dictionary,
                                                                    tmp_path):
    """The key-value list's header as a set (one byte, 0x19 -> 0x1a): pyarrow skips it, and
    with it the record and ARROW:schema; the file read as another writer's, `d` as strings."""
    def as_set(footer):
        next(f for f in footer.fields if f.id == FILE_KEY_VALUES).type = 10  # (SET)

    bad = _forged(plain_with_dictionary, as_set, tmp_path / "bad.parquet")
    assert pq.read_metadata(bad).metadata is None
    assert pq.read_table(bad).schema.field("d").type == pa.string()  # (pyarrow: no error)
    for read in _reads(bad):
        with pytest.raises(CorruptDataError, match="record of its column chunks.*altered"):
            read()


@pytest.mark.parametrize("name", [b"s", b"element"])
def test_a_string_leaf_made_binary_in_a_decompressed_file_is_an_error(
        plain_with_dictionary, tmp_path, name):
    """A decompressed output's Parquet schema was not checked against its (CRC-checked) Arrow
    schema: a string leaf's logical and converted types dropped read it as binary."""
    def binary(footer):
        for element in footer.get(2).items:  # (FileMetaData.schema)
            if element.get(4) == name:  # (its name; 6: converted type, 10: logical type)
                element.fields = [f for f in element.fields if f.id not in (6, 10)]

    bad = _forged(plain_with_dictionary, binary, tmp_path / "bad.parquet")
    assert pa.binary() in (pq.read_schema(bad).field(0).type,
                           pq.read_schema(bad).field(1).type.value_type)  # (no error)
    with pytest.raises(CorruptDataError, match="Parquet schema .*altered"):
        read_table(bad, device="cpu")


@pytest.mark.parametrize("value", [0, -3])
def test_a_dictionary_page_offset_of_zero_or_less_is_none(files, tmp_path, value):
    """Readers take a dictionary page offset of 0 or less for none, and so must the record:
    the writer hashes a chunk without one as none (-1), the reader hashes what the footer says.
    A footer saying 0 where the writer wrote nothing reads as written."""
    _, compressed, _ = files

    def edit(footer):
        meta = _chunk(footer, 1, 0).get(CC_META)
        assert meta.get(CM_PLACE[-1]) is None  # (the codes: no dictionary)
        k = next(i for i, f in enumerate(meta.fields) if f.id > CM_PLACE[-1])
        meta.fields.insert(k, Field(CM_PLACE[-1], I64, value))

    forged = _forged(compressed, edit, tmp_path / "f.parquet")
    assert pq.read_metadata(forged).row_group(1).column(0).dictionary_page_offset == value
    assert read_table(forged, device="cpu").equals(read_table(compressed, device="cpu"))
    assert chunk_digest(3, (4, 3, 60, 50, 4, value)) == chunk_digest(3, (4, 3, 60, 50, 4, None))


def _footer_with_record(record: bytes, row_groups: int = 1) -> pq.FileMetaData:
    """The metadata of a file of ``row_groups`` row groups whose footer holds ``record``
    (without ``ARROW:schema``: the record's schema CRC is then null)."""
    table = pa.table({"n": list(range(2 * row_groups))})
    out = io.BytesIO()
    with pq.ParquetWriter(out, table.schema, store_schema=False) as writer:
        writer.write_table(table, row_group_size=2)
        writer.add_key_value_metadata({CHUNKS_KEY: record})
    metadata = pq.read_metadata(pa.BufferReader(out.getvalue()))
    assert b"ARROW:schema" not in metadata.metadata
    return metadata


def _record(row_groups, schema=None):
    return sealed("fsstgpu.chunks", {"row_groups": row_groups, "schema": schema, "version": 1})


@pytest.mark.parametrize("record, match", [
    (b"not json", "not readable"), (b'{"crc32": 1}', "not readable"), (b"[]", "not readable"),
    (_record([5]), "not readable"), (_record("AAAA"), "not readable"),
    (_record(["AAAA"], "1"), "not readable"), (_record(["AAAA"], True), "not readable"),
    (_record(["AAAA", "AAAA"]), "the footer has 1 row groups, where 2 were written"),
    (_record(["AAAA"], 7), "Arrow schema"),
    (_record(["AAAA"]).replace(b"AAAA", b"AAAB"), "CRC32 mismatch")])
def test_a_record_sealed_but_malformed_is_corrupt(record, match):
    """Every check of the record's own shape (a forger seals what he likes): each one alone,
    its message named (the tests of altered footers were refused by whichever came first)."""
    with pytest.raises(CorruptDataError, match=match):
        ChunkRecord.of(_footer_with_record(record))


def test_a_record_without_a_stored_schema_is_checked_and_read():
    metadata = _footer_with_record(b"")
    good = _footer_with_record(chunks_footer(chunk_digests(metadata), None))
    assert chunk_digests(good) == chunk_digests(metadata)  # (the footer comes after the pages)
    record = ChunkRecord.of(good)
    record.check(0, None)
