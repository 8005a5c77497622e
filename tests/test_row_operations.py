"""Arrow row operations on ``fsstgpu.fsst`` arrays, and the storage and metadata they must not
let through (issue #20: findings 2, 5, 6 and 11).

Every array records each string's table in its storage (version 4: a dictionary of the tables;
version 3, read only: an index into the type's tables), so slice, take, filter and concatenation
by plain pyarrow keep it readable with the right strings.
"""

from __future__ import annotations

import json
import tracemalloc
import zlib

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc
import pytest

import fsstgpu
from fsstgpu import CorruptDataError, SymbolTable
from fsstgpu.formats import arrow as fa, arrow_read, arrow_storage as fs

N = 30


def _plain_multi():
    return pa.chunked_array([["ab" * 4] * N, [None, "cdcdcdcd"] * (N // 2), ["ef" * 40] * N])


@pytest.fixture(scope="module")
def multi():
    """(extension array of three tables, the strings it holds as one plain array)."""
    col = _plain_multi()
    with pytest.MonkeyPatch.context() as mp:  # a table per chunk, however small
        mp.setattr(fsstgpu.columns, "MIN_PIECE_BYTES", 1)
        carr = fsstgpu.compress(col, split_size=16)  # "ef" * 40 is cut inside
    assert len(carr.tables) == 3
    return fs.to_extension_array(carr), col.combine_chunks()


def _decoded(ext):
    out = fsstgpu.decompress(fs.from_extension_array(ext), device="cpu")
    return out.combine_chunks() if isinstance(out, pa.ChunkedArray) else out


def _same(ext, expected):
    got = _decoded(ext)
    assert got.equals(expected), (got.to_pylist(), expected.to_pylist())


# ----------------------------------------------------------------- finding 2: row operations
def test_identical_codes_in_different_tables(multi):
    """The strings of the first two blocks have the same codes under different tables: nothing
    in the codes or lengths could tell a reordering (why the table is stored per string)."""
    ext, _ = multi
    codes = ext.storage.field("codes")
    assert codes[0] == codes[N + 1]


@pytest.mark.parametrize("start,length", [(0, 5), (N - 3, 6), (N - 10, 20), (25, 60),
                                          (2 * N, N), (N, 0), (0, 3 * N)])
def test_slice(multi, start, length):
    ext, plain = multi
    _same(ext.slice(start, length), plain.slice(start, length))


@pytest.mark.parametrize("order", ["reverse", "shuffle", "nulls", "repeat"])
def test_take(multi, order):
    ext, plain = multi
    n = len(plain)
    rng = np.random.default_rng(1)
    index = {"reverse": pa.array(np.arange(n)[::-1]),
             "shuffle": pa.array(rng.permutation(n)),
             "nulls": pa.array([n - 1, None, 0, N + 1, None, 2 * N], pa.int64()),
             "repeat": pa.array([N + 1] * 5 + [0] * 5)}[order]
    _same(ext.take(index), plain.take(index))


def test_filter(multi):
    ext, plain = multi
    mask = pa.array(np.arange(len(plain)) % 3 == 1)
    _same(ext.filter(mask), plain.filter(mask))
    _same(pc.filter(ext, mask), plain.filter(mask))


def test_concat_arrays(multi):
    ext, plain = multi
    pieces = [ext.slice(2 * N), ext.slice(0, N + 4), ext.slice(N - 2, 9)]
    _same(pa.concat_arrays(pieces), pa.concat_arrays([plain.slice(2 * N), plain.slice(0, N + 4),
                                                      plain.slice(N - 2, 9)]))


def test_table_filter_and_take(multi):
    ext, plain = multi
    table = pa.table({"s": ext, "i": pa.array(range(len(ext)))})
    mask = pc.greater(table["i"], N - 5)
    _same(table.filter(mask).column("s").combine_chunks(), plain.filter(mask.combine_chunks()))
    index = pa.array([3 * N - 1, 0, N + 1, 5])
    _same(table.take(index).column("s"), plain.take(index))
    assert table.take(index).column("s").to_pylist() == plain.take(index).to_pylist()
    sorted_ = table.sort_by([("i", "descending")])
    _same(sorted_.column("s"), plain.take(pa.array(np.arange(len(plain))[::-1])))


def test_chunked_array_row_operations(multi):
    """Chunks sharing the one type, cut anywhere: table-level operations on them too."""
    ext, plain = multi
    chunked = pa.chunked_array([ext.slice(0, N + 3), ext.slice(N + 3, 40), ext.slice(N + 43)])
    _same(chunked, plain)
    mask = pa.array(np.arange(len(plain)) % 2 == 0)
    _same(chunked.filter(mask), plain.filter(mask))
    _same(chunked.take(pa.array([80, 2, 31])), plain.take(pa.array([80, 2, 31])))
    table = pa.table({"s": chunked}).slice(N - 1, 4)
    _same(table.column("s"), plain.slice(N - 1, 4))
    assert fsstgpu.decompress_table(table).column("s").to_pylist() == plain[N - 1 : N + 3] \
        .to_pylist()


def test_ipc_file_of_a_filtered_array(multi, tmp_path):
    """The report's case: plain pyarrow filters, writes an IPC file; fsstgpu reads it right."""
    ext, plain = multi
    mask = pa.array(np.arange(len(plain)) % 3 != 0)
    path = tmp_path / "filtered.arrow"
    table = pa.table({"s": ext}).filter(mask)
    with ipc.new_file(path, table.schema) as writer:
        writer.write_table(table)
    back = ipc.open_file(path).read_all()
    _same(back.column("s"), plain.filter(mask))
    assert back.column("s").to_pylist() == plain.filter(mask).to_pylist()
    from fsstgpu.formats.files import decompress_file

    decompress_file(path, tmp_path / "plain.arrow", device="cpu")
    out = ipc.open_file(tmp_path / "plain.arrow").read_all().column("s")
    assert out.to_pylist() == plain.filter(mask).to_pylist()


def test_compressed_array_slicing_gives_consistent_types(multi):
    carr = fsstgpu.compress(_plain_multi(), split_size=16)
    plain = _plain_multi().combine_chunks()
    for a, b in [(0, N), (N - 2, N + 2), (N + 1, 3 * N), (5, 5)]:
        ext = fs.to_extension_array(carr[a:b])
        _same(ext, plain[a:b])
        _same(ext.slice(1), plain[a:b].slice(1))


def test_too_many_table_switches_is_a_clear_error(multi, monkeypatch):
    ext, plain = multi
    index = pa.array([0, N + 1, 1, N + 3, 2])  # four switches: five blocks
    monkeypatch.setattr(arrow_read, "MAX_BLOCKS", 4)  # the reader's limit
    with pytest.raises(CorruptDataError, match="reordered it after compression"):
        fs.from_extension_array(ext.take(index))
    monkeypatch.setattr(arrow_read, "MAX_BLOCKS", 5)
    _same(ext.take(index), plain.take(index))


def _with_table_child(ext, child):
    children = ext.storage.flatten()
    children[3] = child
    storage = pa.StructArray.from_arrays(children, fields=list(ext.type.storage_type),
                                         mask=ext.storage.is_null())
    return pa.ExtensionArray.from_storage(ext.type, storage)


def test_table_index_past_the_tables(multi):
    ext, _ = multi
    tables = ext.storage.field("table").dictionary
    assert len(tables) == 3
    past = pa.DictionaryArray.from_arrays(
        pa.array([0] * (len(ext) - 1) + [3], pa.uint16()), tables, safe=False)
    with pytest.raises(CorruptDataError, match="names table 3 of 3"):
        fs.from_extension_array(_with_table_child(ext, past))
    old = fs.to_extension_array(fs.from_extension_array(ext), version=3)  # the index of v3
    with pytest.raises(CorruptDataError, match="names table 3 of 3"):
        fs.from_extension_array(_with_table_child(
            old, pa.array([0] * (len(ext) - 1) + [3], pa.uint16())))


@pytest.mark.parametrize("damage", ["null table", "not a table", "indices null"])
def test_damaged_tables_in_the_storage(multi, damage):
    """Version 4's tables come from the data: a null or damaged table under a valid string,
    or a null index, is refused, naming it."""
    ext, _ = multi
    child = ext.storage.field("table")
    values = child.dictionary.to_pylist()
    indices = child.indices
    if damage == "null table":
        values[1] = None
    elif damage == "not a table":
        values[1] = b"FSTT" + values[1][4:-1] + bytes([values[1][-1] ^ 1])
    else:
        indices = pa.array(indices.to_pylist()[:-1] + [None], pa.uint16())
    forged = pa.DictionaryArray.from_arrays(indices, pa.array(values, pa.binary()))
    match = {"null table": "table 1 is null", "not a table": "table 1",
             "indices null": "null 'table'"}[damage]
    with pytest.raises(CorruptDataError, match=match):
        fs.from_extension_array(_with_table_child(ext, forged))


@pytest.mark.parametrize("version", [4, 2])
def test_single_table_arrays(version, monkeypatch):
    """Two blocks of one table store it once (version 4: one dictionary entry); version 2, the
    layout older readers know, is still written on request."""
    monkeypatch.setattr(fsstgpu.columns, "MIN_PIECE_BYTES", 1)
    col = pa.array(["ab", None, "cdcd", "ab" * 50] * 10)
    carr = fsstgpu.compress(pa.chunked_array([col, col]), split_size=16)
    assert len(carr.tables) == 2 and carr.tables[0] == carr.tables[1]
    ext = fs.to_extension_array(carr, version=version)
    assert ext.type.version == version
    if version == 2:
        assert ext.storage.type.names == ["codes", "lengths", "cuts"]
    else:
        assert len(ext.storage.field("table").dictionary) == 1
    plain = pa.concat_arrays([col, col])
    _same(ext.slice(3, 30), plain.slice(3, 30))
    _same(ext.take(pa.array([79, 0, 3])), plain.take(pa.array([79, 0, 3])))
    _same(ext.filter(pc.is_valid(plain)), plain.filter(pc.is_valid(plain)))
    _same(pa.concat_arrays([ext.slice(40), ext.slice(0, 3)]),
          pa.concat_arrays([plain.slice(40), plain.slice(0, 3)]))


def test_version_3_metadata_round_trip(multi):
    ext = fs.to_extension_array(fs.from_extension_array(multi[0]), version=3)
    assert ext.type.version == 3 and ext.storage.type.names[-1] == "table"
    body = json.loads(ext.type.__arrow_ext_serialize__())["fsstgpu.fsst"]
    assert body["version"] == 3 and "block_starts" not in body and len(body["tables"]) == 3
    again = fa.parse_metadata(ext.type.storage_type, ext.type.__arrow_ext_serialize__())
    assert again == ext.type
    with pytest.raises(CorruptDataError, match="storage type"):
        fa.parse_metadata(fa.storage_type_for(pa.string()), ext.type.__arrow_ext_serialize__())


# ----------------------------------------------- finding 5: null children under valid rows
def _forged(ext, field, valid_row):
    """``ext`` with child ``field`` made null at ``valid_row`` (a valid string)."""
    children = ext.storage.flatten()
    k = ext.type.storage_type.get_field_index(field)
    mask = np.zeros(len(ext), bool)
    mask[valid_row] = True
    children[k] = pc.if_else(pa.array(mask), pa.nulls(len(ext), children[k].type), children[k])
    storage = pa.StructArray.from_arrays(children, fields=list(ext.type.storage_type),
                                         mask=ext.storage.is_null())
    assert storage.is_valid()[valid_row].as_py()
    return pa.ExtensionArray.from_storage(ext.type, storage)


@pytest.mark.parametrize("field", ["codes", "lengths"])
def test_null_child_under_a_valid_row_single_table(field):
    ext = fs.to_extension_array(fsstgpu.compress(pa.array(["abc", None, "abd", "x"])))
    with pytest.raises(CorruptDataError, match=f"a valid string has a null '{field}'"):
        fs.from_extension_array(_forged(ext, field, 2))
    chunked = pa.chunked_array([ext.slice(0, 1), _forged(ext, field, 2)])
    with pytest.raises(CorruptDataError, match=r"\(chunk 1\)"):
        fs.from_extension_array(chunked)


@pytest.mark.parametrize("field", ["codes", "lengths", "table"])
def test_null_child_under_a_valid_row_multi_table(multi, field):
    ext, _ = multi
    with pytest.raises(CorruptDataError, match=f"a valid string has a null '{field}'"):
        fs.from_extension_array(_forged(ext, field, N + 1))


def test_null_child_from_buffers():
    """The same, built from buffers: the codes' own bitmap nulls a row the struct keeps."""
    ext = fs.to_extension_array(fsstgpu.compress(pa.array(["abc", "abd", "x"])))
    codes = ext.storage.field("codes")
    nulled = pa.Array.from_buffers(codes.type, 3, [pa.py_buffer(bytes([0b101])),
                                                   *codes.buffers()[1:]], null_count=1)
    storage = pa.StructArray.from_buffers(ext.storage.type, 3, [None], children=[
        nulled, ext.storage.field("lengths"), ext.storage.field("cuts"),
        ext.storage.field("table")])
    with pytest.raises(CorruptDataError, match="null 'codes'"):
        fs.from_extension_array(pa.ExtensionArray.from_storage(ext.type, storage))


def test_nulls_from_take_with_null_indices_are_struct_nulls(multi):
    """What pyarrow makes for a null index is a null struct row: read as a null string."""
    ext, _ = multi
    taken = ext.take(pa.array([None, 0, None], pa.int32()))
    assert _decoded(taken).to_pylist() == [None, "abababab", None]


# ------------------------------------------------------ finding 11: metadata JSON types
def _json_meta(body) -> bytes:
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
    return json.dumps({"crc32": zlib.crc32(canonical), "fsstgpu.fsst": body}).encode()


def _body():
    t = fa.FsstType(pa.large_binary(), pa.string(), [SymbolTable([b"ab"])], 4096)
    return t.storage_type, json.loads(t.__arrow_ext_serialize__())["fsstgpu.fsst"]


def test_deeply_nested_json_is_corrupt():
    storage, _ = _body()
    deep = b'{"crc32": 0, "fsstgpu.fsst": ' + b"[" * 1500 + b"]" * 1500 + b"}"
    with pytest.raises(CorruptDataError, match="nested deeper"):
        fa.parse_metadata(storage, deep)
    with pytest.raises(CorruptDataError, match="nested deeper"):
        fa.parse_metadata(storage, b"{" + b'"a":{' * 1500)
    # closing brackets inside a string hide the depth from the count: the parser's own
    # recursion limit is caught too
    hidden = b'{"x": "' + b"]" * 100000 + b'", "y": ' + b"[" * 100000 + b"]" * 100000 + b"}"
    with pytest.raises(CorruptDataError, match="not valid JSON"):
        fa.parse_metadata(storage, hidden)


@pytest.mark.parametrize("field,value,message", [
    ("value_type", ["string"], "unknown value type"),
    ("value_type", {"a": 1}, "unknown value type"),
    ("dictionary", {"index_type": ["int8"], "ordered": False}, "invalid dictionary"),
    ("version", [2], "unsupported version"),
    ("version", 2.0, "unsupported version"),
    ("version", True, "unsupported version"),
    ("tables", [["AAAA"]], "table 0 is not base64"),
    ("split_size", [4096], "split size"),
], ids=str)
def test_metadata_field_of_the_wrong_json_type(field, value, message):
    storage, body = _body()
    body[field] = value
    with pytest.raises(CorruptDataError, match=message):
        fa.parse_metadata(storage, _json_meta(body))


def test_version_2_metadata_with_block_starts_stays_readable():
    a, b = SymbolTable([b"ab"]), SymbolTable([b"cd"])
    legacy = fa.FsstType(pa.large_binary(), pa.string(), [a, b], 4096, [2], version=2)
    meta = legacy.__arrow_ext_serialize__()
    assert b'"block_starts":[2]' in meta and b'"version":2' in meta
    assert fa.parse_metadata(legacy.storage_type, meta) == legacy
    ca = fsstgpu.compress(pa.array(["ab", "abab"]), table=a)
    cb = fsstgpu.compress(pa.array(["cd"]), table=b)
    storage = pa.StructArray.from_arrays(
        [pa.array([bytes(ca.codes[:1]), bytes(ca.codes[1:]), bytes(cb.codes)], pa.large_binary()),
         pa.array([2, 4, 2], pa.uint32()), pa.nulls(3, pa.binary())],
        fields=list(legacy.storage_type))
    old = pa.ExtensionArray.from_storage(legacy, storage)
    assert _decoded(old).to_pylist() == ["ab", "abab", "cd"]


# ------------------------------------------------ finding 6: declared counts vs allocation
def _peak(fn) -> int:
    tracemalloc.start()
    try:
        fn()
    except CorruptDataError:
        pass
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak


def test_declared_counts_do_not_allocate_beyond_the_input():
    small = fs.to_extension_array(fsstgpu.compress(pa.array(["abc", "abd", None, "x" * 70])))
    size = small.storage.nbytes
    tables = [SymbolTable([b"ab"]), SymbolTable([])]
    forged = [
        # version 2: block starts far past the strings
        fa.FsstType(pa.large_binary(), pa.string(), tables, 4096, [2**62], version=2),
        # a split size of 1: at most one split per string, not one per byte
        fa.FsstType(pa.large_binary(), pa.string(), tables[:1], 1),
        fa.FsstType(pa.large_binary(), pa.string(), tables[:1], 2**62),
    ]
    for ftype in forged:
        arr = pa.ExtensionArray.from_storage(ftype, pa.StructArray.from_arrays(
            small.storage.flatten()[:3], fields=list(ftype.storage_type),
            mask=small.storage.is_null()))
        assert _peak(lambda arr=arr: fs.from_extension_array(arr)) <= 64 * size + 2**20
    # version 3: the table indices come from the storage; a forged type with 65535 tables
    many = fa.FsstType(pa.large_binary(), pa.string(), [SymbolTable([])] * 65535, 4096)
    storage = pa.StructArray.from_arrays(
        [*small.storage.flatten()[:3], pa.array([65534, 0, 0, 65534], pa.uint16())],
        fields=list(many.storage_type), mask=small.storage.is_null())
    arr = pa.ExtensionArray.from_storage(many, storage)
    assert _peak(lambda: fs.from_extension_array(arr)) <= 64 * size + 2**20
    # ... and parsing metadata of many tables (17 bytes each) stays within its size too
    some = fa.FsstType(pa.large_binary(), pa.string(), [SymbolTable([])] * 8192, 4096)
    meta = some.__arrow_ext_serialize__()
    assert _peak(lambda: fa.parse_metadata(some.storage_type, meta)) <= 64 * len(meta) + 2**20


# --------------------------------------------- finding 11: polars Categorical / Enum input
@pytest.mark.parametrize("kind", ["categorical", "enum"])
def test_polars_categorical_and_enum_compress(kind):
    pl = pytest.importorskip("polars")
    values = ["x", "yy", None, "x", "zzz"]
    dtype = pl.Categorical if kind == "categorical" else pl.Enum(["x", "yy", "zzz"])
    series = pl.Series(values, dtype=dtype)
    out = fsstgpu.decompress(fsstgpu.compress(series), device="cpu")
    assert out.type == pa.string_view() and out.to_pylist() == values


def test_dictionary_of_binary_view_compresses():
    col = pa.DictionaryArray.from_arrays(pa.array([1, None, 0, 1], pa.int8()),
                                         pa.array([b"a", b"\x00bb"], pa.binary_view()))
    out = fsstgpu.decompress(fsstgpu.compress(pa.chunked_array([col, col])), device="cpu")
    assert out.type == pa.binary_view()
    assert out.to_pylist() == [b"\x00bb", None, b"a", b"\x00bb"] * 2


def test_table_runs_put_nulls_in_the_run_before():
    a, b = SymbolTable([b"ab"]), SymbolTable([b"cd"])
    per_row = np.array([7, 0, 7, 1, 1, 7, 0, 7], np.uint16)  # 7: beneath a null, ignored
    valid = np.array([0, 1, 0, 1, 1, 0, 1, 0], bool)
    found, starts = fs.table_runs((a, b), per_row, np.packbits(valid, bitorder="little"))
    assert found == (a, b, a) and starts.tolist() == [0, 3, 6, 8]
    found, starts = fs.table_runs((a, b), per_row[:2], np.zeros(1, np.uint8))
    assert found == (a,) and starts.tolist() == [0, 2]
    found, starts = fs.table_runs((a, b), per_row[:0], None)
    assert found == (a,) and starts.tolist() == [0, 0]
    with pytest.raises(CorruptDataError, match="names table 7 of 2"):
        fs.table_runs((a, b), per_row, None)


def test_version_3_with_binary_codes_and_dictionary_type(multi):
    carr = fs.from_extension_array(multi[0])
    dict_type = pa.dictionary(pa.int16(), pa.string())
    ext = fs.to_extension_array(carr, codes_type=pa.binary(), dictionary_type=dict_type,
                                version=3)
    assert ext.type.version == 3 and ext.storage.type.field("codes").type == pa.binary()
    assert ext.type.with_codes_type(pa.large_binary()).version == 3
    again = fa.parse_metadata(ext.type.storage_type, ext.type.__arrow_ext_serialize__())
    assert again == ext.type and again.original_type == dict_type
    plain = _plain_multi().combine_chunks()
    _same(ext.take(pa.array([61, 0, 31])), plain.take(pa.array([61, 0, 31])))
    with pytest.raises(ValueError, match="block starts are version 2's"):
        fa.FsstType(pa.large_binary(), pa.string(), ext.type.tables, 16, [30, 60])


def test_parquet_round_trip_of_a_reversed_table(multi, tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    ext, plain = multi
    index = pa.array(np.arange(len(plain))[::-1])
    pq.write_table(pa.table({"s": ext}).take(index), tmp_path / "r.parquet")
    back = pq.read_table(tmp_path / "r.parquet").column("s")
    assert back.type.version == 4
    _same(back, plain.take(index))
