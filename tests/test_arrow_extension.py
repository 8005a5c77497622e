"""The fsstgpu.fsst Arrow extension type: conversions, metadata validation, plain-pyarrow view."""

from __future__ import annotations

import json
import re
import struct
import subprocess
import sys
import threading
import zlib

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

import fsstgpu
from fsstgpu import CorruptDataError, SymbolTable
from fsstgpu.formats import arrow as fa, arrow_storage as fs
from fsstgpu.formats.file_reads import read_table
from fsstgpu.scan import long_string_cuts
from fsstgpu.splits import plan_splits

TYPES = [pa.string(), pa.large_string(), pa.string_view(),
         pa.binary(), pa.large_binary(), pa.binary_view()]


def _column(type_, n=200, seed=0):
    rng = np.random.default_rng(seed)
    words = ["http://", "www.", "example", ".com/", "index", "ä€", "", "x" * 40]
    vals = []
    for i in range(n):
        if rng.random() < 0.15:
            vals.append(None)
        else:
            vals.append("".join(rng.choice(words, size=rng.integers(0, 5))) + str(i % 7))
    if pa.types.is_binary(type_) or pa.types.is_large_binary(type_) or type_ == pa.binary_view():
        vals = [None if v is None else v.encode() for v in vals]
    return pa.array(vals, type=type_)


@pytest.mark.parametrize("type_", TYPES, ids=str)
def test_round_trip_every_type(type_):
    col = _column(type_)
    ext = fs.to_extension_array(fsstgpu.compress(col))
    assert ext.type.extension_name == "fsstgpu.fsst"
    assert ext.storage.type == fa.storage_type_for(type_) and ext.type.version == 4
    assert ext.type.original_type == type_
    assert ext.storage.is_null().equals(col.is_null())
    back = fs.from_extension_array(ext)
    out = fsstgpu.decompress(back, device="cpu")
    assert out.type == type_
    assert out.equals(col)


def test_storage_values_are_the_codes_and_zero_copy():
    col = pa.array(["abcabc", None, "", "zz"])
    carr = fsstgpu.compress(col)
    ext = fs.to_extension_array(carr)
    for i in range(len(col)):
        if col[i].is_valid:
            lo, hi = carr.code_offsets[i], carr.code_offsets[i + 1]
            assert ext.storage.field("codes")[i].as_py() == bytes(carr.codes[lo:hi])
            assert ext.storage.field("lengths")[i].as_py() == carr.lengths[i]
    # large_binary codes share the codes buffer
    assert ext.storage.field("codes").buffers()[2].address == carr.codes.ctypes.data


def test_binary_storage_and_chunked_input():
    col = _column(pa.string(), n=300)
    carr = fsstgpu.compress(col)
    ext = fs.to_extension_array(carr, codes_type=pa.binary())
    assert ext.storage.field("codes").type == pa.binary() and ext.type.codes_type == pa.binary()
    assert fsstgpu.decompress(fs.from_extension_array(ext), device="cpu").equals(col)
    chunked = pa.chunked_array([ext[:100], ext[100:101], ext[101:]])
    back = fs.from_extension_array(chunked)
    assert back.chunk_lengths.tolist() == [100, 1, 199]
    out = fsstgpu.decompress(back, device="cpu")
    assert [len(c) for c in out.chunks] == [100, 1, 199]
    assert out.combine_chunks().equals(col)


def test_sliced_extension_array():
    col = _column(pa.large_string(), n=120)
    ext = fs.to_extension_array(fsstgpu.compress(col))
    out = fsstgpu.decompress(fs.from_extension_array(ext[7:77]), device="cpu")
    assert out.equals(col[7:77])


@pytest.mark.parametrize("values", [[], [None, None], ["", ""], [""]], ids=repr)
def test_edge_columns(values):
    col = pa.array(values, type=pa.string())
    ext = fs.to_extension_array(fsstgpu.compress(col))
    assert fsstgpu.decompress(fs.from_extension_array(ext), device="cpu").equals(col)


def test_lengths_and_splits_travel_with_the_codes():
    col = pa.concat_arrays([_column(pa.string(), n=2000, seed=3), pa.array(["x" * 300] * 3)])
    carr = fsstgpu.compress(col, split_size=64, table=fsstgpu.train(col))
    ext = fs.to_extension_array(carr)
    cut_rows = np.flatnonzero(ext.storage.field("cuts").is_valid().to_numpy(zero_copy_only=False))
    assert set(cut_rows) <= set(np.flatnonzero(carr.lengths > 64))  # only long strings
    assert {len(col) - 3, len(col) - 2, len(col) - 1} <= set(cut_rows)
    back = fs.from_extension_array(ext)
    assert back.split_size == 64
    np.testing.assert_array_equal(back.lengths, carr.lengths)
    np.testing.assert_array_equal(back.split_codes, carr.split_codes)
    np.testing.assert_array_equal(back.split_out, carr.split_out)
    np.testing.assert_array_equal(back.split_table, carr.split_table)


def test_multi_block_array_keeps_each_strings_table():
    a, b = _column(pa.string(), 50, 1), _column(pa.string(), 70, 2)
    ta, tb = SymbolTable([b"http://", b"www."]), SymbolTable([b"example", b".com/"])
    ca, cb = fsstgpu.compress(a, table=ta), fsstgpu.compress(b, table=tb)
    codes = np.concatenate([ca.codes, cb.codes])
    offsets = np.concatenate([ca.code_offsets, cb.code_offsets[1:] + len(ca.codes)])
    lengths = np.concatenate([ca.lengths, cb.lengths])
    starts = np.array([0, 50, 120])
    valid = np.concatenate([a.is_valid().to_numpy(zero_copy_only=False),
                            b.is_valid().to_numpy(zero_copy_only=False)])
    cuts = long_string_cuts([ta, tb], starts, codes, offsets, lengths, 32)
    sc, so, st = plan_splits(offsets, lengths, starts, 32, cuts)
    carr = fsstgpu.CompressedStringArray(
        type=pa.string(), length=120, tables=[ta, tb], block_starts=starts, codes=codes,
        code_offsets=offsets, lengths=lengths,
        validity=np.packbits(valid, bitorder="little"), null_count=int((~valid).sum()),
        split_size=32, split_codes=sc, split_out=so, split_table=st)
    carr.validate()
    ext = fs.to_extension_array(carr)
    assert ext.type.tables == () and ext.type.version == 4
    assert ext.storage.field("table").indices.to_pylist() == [0] * 50 + [1] * 70
    assert ext.storage.field("table").dictionary.to_pylist() == [ta.to_bytes(), tb.to_bytes()]
    out = fsstgpu.decompress(fs.from_extension_array(ext), device="cpu")
    assert out.equals(pa.concat_arrays([a, b]))
    # each string carries its table: a slice reads back as those strings (issue #20)
    out = fsstgpu.decompress(fs.from_extension_array(ext[40:60]), device="cpu")
    assert out.equals(pa.concat_arrays([a, b])[40:60])
    # version 3 (the tables in the type, an index per string) is still read and written
    v3 = fs.to_extension_array(carr, version=3)
    assert len(v3.type.tables) == 2 and v3.storage.field("table").to_pylist() == [0] * 50 + [1] * 70
    assert fsstgpu.decompress(fs.from_extension_array(v3[40:60]), device="cpu").equals(
        pa.concat_arrays([a, b])[40:60])
    # version 2 (block starts in the metadata) is still read; a shorter slice cannot hold them
    legacy = fa.FsstType(pa.large_binary(), pa.string(), (ta, tb), 32, [50], version=2)
    storage = pa.StructArray.from_arrays(ext.storage.flatten()[:3],
                                         fields=list(legacy.storage_type),
                                         mask=ext.storage.is_null())
    old = pa.ExtensionArray.from_storage(legacy, storage)
    back = fsstgpu.decompress(fs.from_extension_array(old), device="cpu")
    assert back.equals(pa.concat_arrays([a, b]))
    with pytest.raises(CorruptDataError, match="block starts"):
        fs.from_extension_array(old[:40])


def test_identical_block_tables_collapse():
    t = SymbolTable([b"ab"])
    ftype = fa.FsstType(pa.large_binary(), pa.string(), [t], 4096)
    carr = fsstgpu.compress(pa.array(["ab"] * 10), table=t, split_size=4096)
    assert fa.extension_type_for(carr, version=2) == ftype
    assert len(fs.to_extension_array(carr).storage.field("table").dictionary) == 1


def test_one_type_per_logical_type():
    """Version 4's type does not depend on the tables: columns of one string type compressed
    apart share it (issue #23), so pyarrow concatenates them and writes them to one file."""
    a = fs.to_extension_array(fsstgpu.compress(pa.array(["http://a.example/x"] * 100)))
    b = fs.to_extension_array(fsstgpu.compress(pa.array(["zzz", None, "qqq" * 9])))
    assert a.type == b.type and hash(a.type) == hash(b.type)
    assert a.type.__arrow_ext_serialize__() == b.type.__arrow_ext_serialize__()
    assert fs.to_extension_array(fsstgpu.compress(pa.array(["x"], pa.large_string()))).type \
        != a.type  # another logical type, another type
    both = pa.concat_arrays([a, b])
    assert both.to_pylist() == a.to_pylist() + b.to_pylist()
    table = pa.concat_tables([pa.table({"s": a}), pa.table({"s": b})])
    assert table.column("s").to_pylist() == a.to_pylist() + b.to_pylist()


def test_type_equality_includes_metadata():
    t1 = fa.FsstType(pa.large_binary(), pa.string(), [SymbolTable([b"ab"])], 4096)
    t2 = fa.FsstType(pa.large_binary(), pa.string(), [SymbolTable([b"ac"])], 4096)
    t3 = fa.FsstType(pa.large_binary(), pa.string(), [SymbolTable([b"ab"])], 4096)
    assert t1 != t2 and t1 == t3 and hash(t1) == hash(t3)
    assert t1 != t1.with_codes_type(pa.binary())
    assert pa.schema([("a", t1)]) != pa.schema([("a", t2)])


def test_dictionary_type_recorded():
    dt = pa.dictionary(pa.int16(), pa.large_string())
    carr = fsstgpu.compress(pa.array(["a", "b"], pa.large_string()))
    ext = fs.to_extension_array(carr, dictionary_type=dt)
    again = fa.parse_metadata(ext.type.storage_type, ext.type.__arrow_ext_serialize__())
    assert again.original_type == dt and again == ext.type
    # an ordered dictionary is not compressed (its order would not come back); files that
    # recorded the flag before still read it
    ordered = pa.dictionary(pa.int16(), pa.large_string(), ordered=True)
    with pytest.raises(ValueError, match="ordered dictionary"):
        fs.to_extension_array(carr, dictionary_type=ordered)
    old = fa.FsstType(ext.type.storage_type.field("codes").type, pa.large_string(), None,
                      ext.type.split_size, None, pa.int16(), True)
    assert fa.parse_metadata(old.storage_type, old.__arrow_ext_serialize__()).original_type == \
        ordered
    with pytest.raises(TypeError):
        fs.to_extension_array(carr, dictionary_type=pa.dictionary(pa.int8(), pa.string()))


def test_register_is_idempotent():
    fa.register()
    fa.register()
    ext = fs.to_extension_array(fsstgpu.compress(pa.array(["a", None, "bc"])))
    sink = pa.BufferOutputStream()
    with ipc.new_file(sink, pa.schema([("s", ext.type)])) as w:
        w.write_batch(pa.record_batch([ext], names=["s"]))
    col = ipc.open_file(sink.getvalue()).read_all().column("s")
    assert isinstance(col.type, fa.FsstType) and col.type == ext.type


def test_register_again_never_unregisters(monkeypatch):
    """Repeated calls (several threads at once) must not take the type away even briefly: a
    read in another thread would see the bare storage struct (a helper's race test: 6 runs of
    100 raised ArrowKeyError, one read saw the struct)."""
    fa.register()
    dropped = []
    monkeypatch.setattr(pa, "unregister_extension_type", dropped.append)
    errors = []

    def again():
        try:
            for _ in range(50):
                fa.register()
        except Exception as exc:  # noqa: BLE001 (the test reports whatever it was)
            errors.append(repr(exc))

    threads = [threading.Thread(target=again) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert (dropped, errors) == ([], [])


def test_parquet_keeps_the_extension(tmp_path):
    col = _column(pa.string(), n=500)
    ext = fs.to_extension_array(fsstgpu.compress(col))
    pq.write_table(pa.table({"s": ext}), tmp_path / "x.parquet", row_group_size=100)
    back = pq.read_table(tmp_path / "x.parquet").column("s")
    assert back.type == ext.type and back.num_chunks == 5
    out = fsstgpu.decompress(fs.from_extension_array(back), device="cpu")
    assert out.combine_chunks().equals(col)


# ----------------------------------------------------------------------- corrupt metadata
def _meta(version=2):
    ftype = fa.FsstType(pa.large_binary(), pa.string(), [SymbolTable([b"abc", b"d"])], 4096,
                        version=version)
    return ftype.storage_type, ftype.__arrow_ext_serialize__()


def _with_crc(body: bytes) -> bytes:
    return body + struct.pack("<I", zlib.crc32(body))


def _json_with(**changes) -> bytes:
    """Version-2 metadata with body fields changed and a CRC that matches them."""
    outer = json.loads(_meta()[1])
    body = dict(outer["fsstgpu.fsst"], **changes)
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    return json.dumps({"crc32": zlib.crc32(canonical), "fsstgpu.fsst": body}).encode()


def test_a_missing_field_names_the_fields_of_every_version():
    # a version-4 body without "dictionary" was told to have version 2's fields (tables and
    # block_starts, which version 4 refuses)
    body = {"split_size": 4096, "value_type": "string", "version": 4}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    meta = json.dumps({"crc32": zlib.crc32(canonical), "fsstgpu.fsst": body}).encode()
    with pytest.raises(CorruptDataError, match=re.escape(
            "expected at least the fields ['dictionary', 'split_size', 'value_type', 'version']")):
        fa.parse_metadata(_meta()[0], meta)


def test_metadata_is_utf8_json():
    storage, meta = _meta()
    body = json.loads(meta.decode("utf-8"))["fsstgpu.fsst"]
    assert body["value_type"] == "string" and body["split_size"] == 4096
    assert fa.parse_metadata(storage, meta).tables == (SymbolTable([b"abc", b"d"]),)


@pytest.mark.parametrize("version", [1, 2])
def test_every_truncation_is_rejected(version):
    storage, meta = _meta(version)
    for cut in range(len(meta)):
        with pytest.raises(CorruptDataError, match="fsstgpu.fsst metadata"):
            fa.parse_metadata(storage, meta[:cut])


@pytest.mark.parametrize("version", [1, 2])
def test_every_byte_flip_is_rejected(version):
    storage, meta = _meta(version)
    for i in range(len(meta)):
        bad = bytearray(meta)
        bad[i] ^= 0x41
        with pytest.raises(CorruptDataError):
            fa.parse_metadata(storage, bytes(bad))


@pytest.mark.parametrize("change,message", [
    ({"version": 5}, "unsupported version"),
    ({"version": 4}, "version 4 expects the fields"),
    ({"version": 3}, "version 3 expects the fields"),
    ({"version": [2]}, "unsupported version"),
    ({"value_type": "int32"}, "unknown value type"),
    ({"dictionary": {"index_type": "float", "ordered": False}}, "invalid dictionary"),
    ({"dictionary": {"index_type": "int8"}}, "invalid dictionary"),
    ({"split_size": 0}, "split size"),
    ({"split_size": 2.5}, "split size"),
    ({"split_size": 2**63}, "split size"),
    ({"tables": []}, "tables expected"),
    ({"tables": ["!!"]}, "base64"),
    ({"tables": ["AAAA"]}, "table 0"),
    ({"block_starts": [3]}, "block starts"),
    ({"extra": 1}, "fields"),
], ids=str)
def test_bad_fields_with_valid_crc(change, message):
    with pytest.raises(CorruptDataError, match=message):
        fa.parse_metadata(_meta()[0], _json_with(**change))


@pytest.mark.parametrize("index,value,message", [
    (4, 3, "unsupported version"),
    (5, 9, "unknown value type"),
    (6, 12, "unknown dictionary index type"),
    (7, 1, "invalid flags"),
], ids=["version", "value-type", "index-type", "flags"])
def test_bad_version_1_fields_with_valid_crc(index, value, message):
    storage, meta = _meta(1)
    body = bytearray(meta[:-4])
    body[index] = value
    with pytest.raises(CorruptDataError, match=message):
        fa.parse_metadata(storage, _with_crc(bytes(body)))


def test_bad_version_1_split_size_and_table_count():
    storage, meta = _meta(1)
    body = bytearray(meta[:-4])
    body[8:16] = struct.pack("<Q", 0)
    with pytest.raises(CorruptDataError, match="split size"):
        fa.parse_metadata(storage, _with_crc(bytes(body)))
    body = bytearray(meta[:-4])
    body[16:18] = struct.pack("<H", 0)
    with pytest.raises(CorruptDataError, match="no symbol table"):
        fa.parse_metadata(storage, _with_crc(bytes(body)))
    body = bytearray(meta[:-4]) + b"xx"
    with pytest.raises(CorruptDataError, match="trailing"):
        fa.parse_metadata(storage, _with_crc(bytes(body)))


@pytest.mark.parametrize("version", [1, 2])
def test_storage_type_must_fit_the_version(version):
    with pytest.raises(CorruptDataError, match="storage type"):
        fa.parse_metadata(pa.string(), _meta(version)[1])
    other = _meta(3 - version)[0]
    with pytest.raises(CorruptDataError, match="storage type"):
        fa.parse_metadata(other, _meta(version)[1])


@pytest.mark.parametrize("value_type", fa.VALUE_TYPES)
def test_every_header_value_parses_or_is_corrupt(value_type):
    """Every value of every byte of the version-1 binary header, the CRC recomputed (a forger's
    metadata, dictionary fields included): parse_metadata gives a usable type or
    CorruptDataError, never a pyarrow or numpy exception (issue #12, finding 3). Version 2's
    JSON fields are forged in test_bad_fields_with_valid_crc."""
    storage = pa.large_binary()
    dict_type = pa.dictionary(pa.int16(), value_type)
    meta = fa.FsstType(pa.large_binary(), value_type, [SymbolTable([b"ab"]), SymbolTable([])],
                       64, [3], index_type=dict_type.index_type,
                       version=1).__arrow_ext_serialize__()
    parsed = 0
    for i in range(18 + 8):  # the header and the block start
        for value in range(256):
            body = bytearray(meta[:-4])
            body[i] = value
            try:
                t = fa.parse_metadata(storage, _with_crc(bytes(body)))
            except CorruptDataError:
                continue
            parsed += 1
            assert isinstance(t, fa.FsstType) and t.storage_type == storage
            if t.index_type is not None:
                assert t.original_type.value_type == t.value_type
    assert parsed > 18 + 8  # the unchanged bytes, at least


def test_corrupt_metadata_surfaces_through_pyarrow(tmp_path):
    ext = fs.to_extension_array(fsstgpu.compress(pa.array(["abc"])), version=2)
    sink = pa.BufferOutputStream()
    with ipc.new_file(sink, pa.schema([("s", ext.type)])) as w:
        w.write_batch(pa.record_batch([ext], names=["s"]))
    data = bytearray(sink.getvalue().to_pybytes())
    positions = [i for i in range(len(data)) if data[i:i + 8] == b'"tables"']
    assert positions  # the schema is written twice in an IPC file: header and footer
    for pos in positions:
        data[pos + 12] ^= 0x01  # inside the base64 table: the CRC no longer matches
    with pytest.raises(CorruptDataError):
        ipc.open_file(pa.py_buffer(bytes(data))).read_all()


# ----------------------------------------------------------------------- corrupt codes
def _ext_from_storage(storage, table=SymbolTable([b"ab", b"c"])):
    """A version-1 array (codes alone): reading derives the lengths by walking the codes."""
    ftype = fa.FsstType(pa.large_binary(), pa.string(), [table], 4096, version=1)
    return pa.ExtensionArray.from_storage(ftype, storage)


def test_code_without_symbol_is_rejected():
    ext = _ext_from_storage(pa.array([b"\x00\x01", b"\x07"], pa.large_binary()))
    with pytest.raises(CorruptDataError, match="string 1"):
        fs.from_extension_array(ext)


def test_escape_at_string_end_is_rejected():
    ext = _ext_from_storage(pa.array([b"\x00", b"\x01\xff"], pa.large_binary()))
    with pytest.raises(CorruptDataError, match="string 1"):
        fs.from_extension_array(ext)


def test_valid_hand_made_codes_decode():
    ext = _ext_from_storage(pa.array([b"\x00\xffz\x01", None, b""], pa.large_binary()))
    out = fsstgpu.decompress(fs.from_extension_array(ext), device="cpu")
    # canonical order: code 0 is b"c" (shorter symbols first), code 1 is b"ab"
    assert out.to_pylist() == ["czab", None, ""]


def test_not_an_fsst_array():
    with pytest.raises(TypeError):
        fs.from_extension_array(pa.array([b"x"]))


# ----------------------------------------------------------------------- plain pyarrow
PLAIN_READER = """
import sys, pyarrow as pa, pyarrow.ipc as ipc, pyarrow.parquet as pq
assert "fsstgpu" not in sys.modules
path = sys.argv[1]
if path.endswith(".parquet"):
    t = pq.read_table(path)
else:
    t = ipc.open_file(path).read_all()
f = t.schema.field("s")
print(f.type.names, f.metadata[b"ARROW:extension:name"].decode(), t.num_rows,
      t.column("s").null_count, t.column("s").combine_chunks().field("lengths").to_pylist()[::2])
"""


@pytest.mark.parametrize("suffix", [".parquet", ".arrow"])
def test_plain_pyarrow_sees_the_storage_struct(tmp_path, suffix):
    ext = fs.to_extension_array(fsstgpu.compress(pa.array(["abc", None, "abd"])))
    table = pa.table({"s": ext})
    path = tmp_path / f"x{suffix}"
    if suffix == ".parquet":
        pq.write_table(table, path)
    else:
        with ipc.new_file(path, table.schema) as w:
            w.write_table(table)
    res = subprocess.run([sys.executable, "-c", PLAIN_READER, str(path)],
                         capture_output=True, text=True, check=True)
    assert res.stdout.split("] ")[0] == "['codes', 'lengths', 'cuts', 'table'"
    assert res.stdout.split("] ")[1].split() == ["fsstgpu.fsst", "3", "1", "[3,", "3]"]


def test_fsst_columns_decode_on_to_pylist_cast_and_to_pandas():
    from fsstgpu.formats.arrow import FsstArray
    from fsstgpu.formats.arrow_storage import to_extension_array

    col = pa.array(["http://a.example/x", None, "ftp://b", ""] * 50, pa.large_string())
    ext = to_extension_array(fsstgpu.compress(col))
    assert isinstance(ext, FsstArray)
    assert ext.to_pylist() == col.to_pylist()
    assert pa.chunked_array([ext, ext]).to_pylist() == col.to_pylist() * 2
    assert pa.table({"s": ext}).to_pylist() == [{"s": v} for v in col.to_pylist()]
    assert ext.cast(pa.string()).equals(col.cast(pa.string()))
    assert ext.storage.type.names == ["codes", "lengths", "cuts", "table"]  # the stored struct
    assert ext.cast(ext.type.storage_type).equals(ext.storage)  # (was: cast from string)
    assert ext.cast(ext.type).equals(ext)
    pd = pytest.importorskip("pandas")
    assert ext.to_pandas().equals(pd.Series(col.to_pylist()))


def test_a_column_of_the_most_tables_has_an_extension_type():
    # issue #22: a column holds up to 65536 tables (split_table is uint16), the extension type
    # took 65535 (version 1's 16-bit count), so such a column could not become an Arrow array
    from fsstgpu.limits import MAX_TABLES

    n = MAX_TABLES
    tables = [SymbolTable([i.to_bytes(2, "little")]) for i in range(n)]
    carr = fsstgpu.CompressedStringArray(
        type=pa.binary(), length=n, tables=tables, block_starts=np.arange(n + 1),
        codes=np.zeros(n, np.uint8), code_offsets=np.arange(n + 1), lengths=np.full(n, 2),
        validity=None, null_count=0, split_size=4096, split_codes=np.arange(n + 1),
        split_out=np.arange(0, 2 * n + 1, 2), split_table=np.arange(n))
    assert len(fs.to_extension_array(carr).storage.field("table").dictionary) == n
    ext = fs.to_extension_array(carr, version=3)
    assert len(ext.type.tables) == n and ext.type.version == 3
    meta = ext.type.__arrow_ext_serialize__()
    assert fa.parse_metadata(ext.type.storage_type, meta) == ext.type
    out = fsstgpu.decompress(fs.from_extension_array(ext), device="cpu")
    assert out.to_pylist() == [i.to_bytes(2, "little") for i in range(n)]
    with pytest.raises(ValueError, match="1 to 65536 tables"):
        fa.FsstType(pa.large_binary(), pa.string(), tables + tables[:1], 4096)
    with pytest.raises(ValueError, match="version 1 holds 1 to 65535 tables"):  # not struct.error
        fa.FsstType(pa.large_binary(), pa.string(), tables, 4096, version=1)


def test_scalars_and_table_to_pandas_show_the_strings():
    """Issue #23, item 4: ``t["s"][0]`` and ``Table.to_pandas()`` decode (they showed the
    storage struct's dicts); pandas gets the dtypes of the decoded values."""
    pd = pytest.importorskip("pandas", reason="pandas is optional")
    col = pa.array(["http://a.example/x", None, "ftp://b"])
    ext = fs.to_extension_array(fsstgpu.compress(col))
    kinds = fs.to_extension_array(fsstgpu.compress(col), dictionary_type=pa.dictionary(
        pa.int8(), pa.string()))
    blobs = fs.to_extension_array(fsstgpu.compress(col.cast(pa.binary())))
    table = pa.table({"s": ext, "k": kinds, "b": blobs})
    assert [table["s"][i].as_py() for i in range(3)] == col.to_pylist()
    assert table["b"][2].as_py() == b"ftp://b"
    df = table.to_pandas()
    plain = pa.table({"s": col, "k": col.dictionary_encode(), "b": col.cast(pa.binary())})
    expected = plain.to_pandas()
    assert df.dtypes.tolist()[:2] == expected.dtypes.tolist()[:2]
    assert df["b"].dtype.kind == expected["b"].dtype.kind == "O"  # bytes as objects
    assert df.astype(object).where(df.notna(), None).values.tolist() == \
        expected.astype(object).where(expected.notna(), None).values.tolist()
    assert isinstance(df["k"].dtype, pd.CategoricalDtype)


@pytest.mark.parametrize("type_", [pa.string(), pa.large_binary()])
def test_cuts_past_the_binary_offsets_refused(monkeypatch, type_):
    """The ``cuts`` child is ``binary`` (int32 offsets): at 2**31 bytes of cuts (2**27 cuts of a
    large type, 2**28 of a 32-bit one, e.g. split_size=1 on ~140 MB of random bytes) its
    offsets wrapped, and pyarrow refused them as "Negative offsets" (past 2**32 they would come
    back positive and wrong). The limit is lowered here to exercise the check with 4 KB."""
    value = "abcdefghij" * 400
    col = pa.array([value, value], type_ if type_ == pa.string() else None)
    if type_ != pa.string():
        col = pa.array([value.encode()] * 2, type_)
    carr = fsstgpu.compress(col, split_size=16)
    fs.to_extension_array(carr)  # fits the real limit
    monkeypatch.setattr(fs, "MAX_CUT_BYTES", 100)
    with pytest.raises(ValueError, match="cuts"):
        fs.to_extension_array(carr)
    with pytest.raises(ValueError, match="split_size"):
        fsstgpu.compress(pa.table({"s": col}), split_size=16)


# ----------------------------------------------------------------------- the first version 2
def _binary_v2_meta(value_type, tables, starts, split_size) -> bytes:
    """Version-2 metadata as its first writer wrote it (2026-11-30, ed56295 to c4fe48e, before
    35755c4 made it JSON): version 1's binary layout with version byte 2."""
    head = struct.pack("<4sBBBBQH", b"FSAX", 2, fa.VALUE_TYPES.index(value_type), 0, 0,
                       split_size, len(tables))
    return _with_crc(head + np.asarray(starts, "<i8").tobytes()
                     + b"".join(t.to_bytes() for t in tables))


def _binary_v2_field(storage, meta) -> pa.Field:
    return pa.field("s", storage.type, metadata={b"ARROW:extension:name": b"fsstgpu.fsst",
                                                 b"ARROW:extension:metadata": meta})


def test_binary_version_2_metadata_is_read(tmp_path):
    """Files of the first version-2 writer: struct storage, binary metadata (version byte 2),
    two tables and a block start; they were refused as 'unsupported version 2'."""
    parts = [pa.array(["alpha beta gamma"] * 50 + [None, ""]),
             pa.array(["zz 0123456789"] * 40 + [None, "q"])]
    carrs = [fsstgpu.compress(p) for p in parts]
    assert all(len(c.tables) == 1 for c in carrs)
    storage = pa.concat_arrays([fs.to_extension_array(c, version=2).storage for c in carrs])
    meta = _binary_v2_meta(pa.string(), [c.tables[0] for c in carrs], [len(parts[0])],
                           carrs[0].split_size)
    schema = pa.schema([_binary_v2_field(storage, meta)])
    path = tmp_path / "v2.arrow"
    with ipc.new_file(path, schema) as w:
        w.write_batch(pa.record_batch([storage], schema=schema))
    col = ipc.open_file(path).read_all().column("s")
    assert col.type.version == 2 and len(col.type.tables) == 2
    assert list(col.type.block_starts) == [len(parts[0])]
    want = pa.concat_arrays(parts)
    assert col.chunk(0).decoded().equals(want)
    assert read_table(path, device="cpu").column("s").combine_chunks().equals(want)
    # version 2's storage is required: the codes alone (version 1's) are refused
    with pytest.raises(CorruptDataError, match="not that of version 2"):
        fa.parse_metadata(pa.large_binary(), meta)


def test_binary_layout_unknown_version_is_refused():
    storage_type, meta = _meta(version=1)
    with pytest.raises(CorruptDataError, match="unsupported version 3 of the binary layout"):
        fa.parse_metadata(storage_type, _with_crc(meta[:4] + b"\x03" + meta[5:-4]))


def test_fsst_array_to_numpy_and_asarray_decode():
    """``FsstArray.to_numpy`` (and ``np.asarray``, which calls it) gave the stored struct's
    dicts of codes, lengths and serialised tables, not the strings."""
    col = pa.array(["http://a.example/x", None, "ftp://b", ""], pa.string())
    ext = fs.to_extension_array(fsstgpu.compress(col))
    expected = col.to_numpy(zero_copy_only=False)
    assert ext.to_numpy(zero_copy_only=False).tolist() == expected.tolist()
    assert np.asarray(ext).tolist() == expected.tolist()
    assert np.asarray(ext.slice(1, 2)).tolist() == expected[1:3].tolist()
    with pytest.raises(pa.ArrowInvalid):  # as a plain string array: a copy is needed
        ext.to_numpy()


def test_dictionary_fsst_columns_to_pandas_are_categoricals():
    """A dictionary column's ``to_pandas()``: the array's gave plain strings (the original's
    gives a Categorical). An ordered one is not compressed: its categories came back in order
    of first occurrence, still ordered (``lo < hi`` became ``hi < lo``)."""
    pd = pytest.importorskip("pandas", reason="pandas is optional")
    col = pa.DictionaryArray.from_arrays(pa.array([1, 0, None, 1], pa.int8()),
                                         pa.array(["lo", "hi"]))
    ext = fsstgpu.compress_table(pa.table({"k": col}), columns=["k"])["k"]
    for got, want in [(ext.chunk(0).to_pandas(), col.to_pandas()),
                      (ext.to_pandas(), col.to_pandas()),
                      (pa.table({"k": ext}).to_pandas()["k"], col.to_pandas())]:
        assert isinstance(got.dtype, pd.CategoricalDtype)
        assert got.cat.ordered == want.cat.ordered is False
        assert got.astype(object).where(got.notna(), None).tolist() == ["hi", "lo", None, "hi"]
    ordered = pa.DictionaryArray.from_arrays(col.indices, col.dictionary, ordered=True)
    with pytest.raises(ValueError, match="ordered dictionary"):
        fsstgpu.compress_table(pa.table({"k": ordered}), columns=["k"])


def test_decompress_table_names_a_dictionary_column_that_outgrew_its_index_type():
    """Two int8 dictionary columns compressed apart and combined into one chunk (which pyarrow
    refuses for the plain columns, and allows for the compressed ones) decoded with pyarrow's
    "Integer value 128 not in range: -128 to 127", naming no column."""
    def part(prefix):
        plain = pa.array([f"{prefix}{i}" for i in range(100)]).dictionary_encode()
        return fsstgpu.compress_table(pa.table({"k": plain.cast(pa.dictionary(
            pa.int8(), pa.string()))}), columns=["k"])
    joined = pa.concat_tables([part("v"), part("w")])
    assert fsstgpu.decompress_table(joined, device="cpu")["k"].num_chunks == 2  # each fits
    with pytest.raises(ValueError, match="column 'k': a chunk of 200 distinct values .* int8"):
        fsstgpu.decompress_table(joined.combine_chunks(), device="cpu")
