"""compress / decompress / Codec over the six types, nulls, slices, chunks and odd bytes."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import fsstgpu
from fsstgpu import CompressedStringArray, CorruptDataError, SymbolTable
from fsstgpu.arrow_layout import from_arrow
from fsstgpu.formats import compress_file
from fsstgpu.limits import MAX_TABLES, check_split_size
from fsstgpu.scan import check_codes
from fsstgpu.splits import DEFAULT_SPLIT_SIZE
from fsstgpu.testing import check_roundtrip
from fsstgpu.types import SUPPORTED_TYPES

STRING_TYPES = [pa.string(), pa.large_string(), pa.string_view()]
BINARY_TYPES = [pa.binary(), pa.large_binary(), pa.binary_view()]

WORDS = ["alpha", "beta", "gamma", "http://example.com/", "delta", "épsilon", "日本語", ""]


def values_for(type_, n, *, seed=0, null_every=0):
    """n deterministic values for ``type_`` (str for string types, bytes for binary)."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        if null_every and i % null_every == 0:
            out.append(None)
            continue
        parts = rng.choice(len(WORDS), size=rng.integers(0, 6))
        s = "/".join(WORDS[p] for p in parts) + str(i)
        out.append(s if type_ in STRING_TYPES else s.encode())
    return out


def odd_bytes(type_):
    if type_ in STRING_TYPES:
        return ["\x00", "a\x00b", "\x00" * 40, "ÿþ", "\uffff\U0010ffff", "", None, "\x7f" * 9]
    return [b"\x00", b"\xff", b"\xff" * 300, b"\x00\xff" * 50, bytes(range(256)), b"", None,
            b"\xff\x00\xff"]


@pytest.fixture(params=SUPPORTED_TYPES, ids=str)
def type_(request):
    return request.param


def test_basic_with_nulls(type_):
    check_roundtrip(pa.array(values_for(type_, 300, null_every=7), type_))


def test_no_nulls_has_no_validity(type_):
    carr = check_roundtrip(pa.array(values_for(type_, 50), type_))
    assert carr.validity is None and carr.null_count == 0


@pytest.mark.parametrize("start,stop", [(0, 0), (3, 3), (1, 50), (5, 203), (13, 300), (8, 16)])
def test_slices(type_, start, stop):
    arr = pa.array(values_for(type_, 300, null_every=5), type_)
    sliced = arr[start:stop]
    carr = check_roundtrip(sliced)
    assert len(carr) == stop - start
    assert carr.null_count == sliced.null_count


def test_empty_array(type_):
    carr = check_roundtrip(pa.array([], type_))
    assert len(carr) == 0 and len(carr.codes) == 0 and len(carr.split_table) == 0
    assert carr.split_codes.tolist() == [0] and carr.split_out.tolist() == [0]


def test_all_null(type_):
    carr = check_roundtrip(pa.array([None] * 37, type_))
    assert carr.null_count == 37 and len(carr.codes) == 0
    assert carr.validity.tolist() == [0] * 5


def test_empty_strings(type_):
    empty = "" if type_ in STRING_TYPES else b""
    check_roundtrip(pa.array([empty] * 20 + [None] + [empty], type_))


def test_odd_bytes(type_):
    check_roundtrip(pa.array(odd_bytes(type_) * 5, type_))


def test_string_over_1mb(type_):
    rng = np.random.default_rng(1)
    if type_ in STRING_TYPES:
        letters = np.frombuffer(b"abcdefghij klmnopqrstuvwxyz", np.uint8)
        big = rng.choice(letters, size=1_300_000).tobytes().decode()
        vals = ["x", big, None, big[:5000]]
    else:
        big = rng.integers(0, 256, size=1_300_000, dtype=np.uint8).tobytes()
        vals = [b"x", big, None, big[:5000]]
    carr = check_roundtrip(pa.array(vals, type_))
    # A long string is cut into many splits: equal output work per GPU warp.
    assert len(carr.split_table) >= 1_300_000 // DEFAULT_SPLIT_SIZE
    assert int(np.diff(carr.split_out).max()) <= 2 * DEFAULT_SPLIT_SIZE + 8


def test_chunked(type_):
    base = pa.array(values_for(type_, 400, null_every=3, seed=2), type_)
    chunked = pa.chunked_array(
        [base[:100], pa.array([], type_), base[100:101], base[101:333], base[333:]], type=type_)
    carr = check_roundtrip(chunked)
    assert carr.chunk_lengths.tolist() == [100, 0, 1, 232, 67]
    assert len(carr.tables) == 1  # small chunks are planned together
    assert carr.block_starts.tolist() == [0, 400]


def test_chunked_planning_pieces(type_, monkeypatch):
    """Chunks of MIN_PIECE_BYTES or more are planned apart: one block (at least) each."""
    base = pa.array(values_for(type_, 400, null_every=3, seed=2), type_)
    chunked = pa.chunked_array(
        [base[:100], pa.array([], type_), base[100:101], base[101:333], base[333:]], type=type_)
    monkeypatch.setattr(fsstgpu.columns, "MIN_PIECE_BYTES", 1)
    carr = check_roundtrip(chunked)
    assert len(carr.tables) == 4  # the empty chunk joins the next one's piece
    assert carr.block_starts.tolist() == [0, 100, 101, 333, 400]


def test_chunked_with_table_is_one_block(type_):
    chunked = pa.chunked_array([values_for(type_, 30), values_for(type_, 20, seed=4)], type_)
    carr = check_roundtrip(chunked, table=SymbolTable([b"alpha", b"/", b"http://"]))
    assert len(carr.tables) == 1 and carr.chunk_lengths.tolist() == [30, 20]


def test_chunked_empty_and_no_chunks(type_):
    check_roundtrip(pa.chunked_array([], type=type_))
    check_roundtrip(pa.chunked_array([pa.array([], type_)], type=type_))
    check_roundtrip(pa.chunked_array([pa.array([None, None], type_)], type=type_))


def test_garbage_bytes_under_nulls(type_):
    storage = pa.large_binary() if type_ in BINARY_TYPES else pa.large_string()
    data = pa.py_buffer(b"keepGARBAGEkeep2")
    offsets = pa.py_buffer(np.array([0, 4, 11, 16], np.int64))
    validity = pa.py_buffer(np.array([0b101], np.uint8))
    arr = pa.Array.from_buffers(storage, 3, [validity, offsets, data], null_count=1)
    arr = arr.cast(type_)
    plain = from_arrow(arr)
    assert bytes(plain.data) == b"keepkeep2" and plain.offsets.tolist() == [0, 4, 4, 9]
    carr = check_roundtrip(arr)
    assert carr.lengths.tolist() == [4, 0, 5]


def test_given_table_and_empty_table(type_):
    arr = pa.array(values_for(type_, 120, null_every=4), type_)
    carr = check_roundtrip(arr, table=SymbolTable([b"alpha", b"gamma", b"/"]))
    assert carr.tables == (SymbolTable([b"alpha", b"gamma", b"/"]),)
    empty = check_roundtrip(arr, table=SymbolTable([]))
    assert len(empty.codes) == 2 * empty.uncompressed_bytes  # every byte escaped


@pytest.mark.parametrize("split_size", [1, 2, 7, 64, 1 << 20])
def test_split_sizes(split_size):
    arr = pa.array(values_for(pa.string(), 200, null_every=9))
    carr = check_roundtrip(arr, split_size=split_size)
    assert carr.split_size == split_size
    sizes = np.diff(carr.split_out)
    assert (sizes > 0).all()
    assert int(sizes.max()) <= 2 * split_size + 7  # module docstring of fsstgpu.splits


@pytest.mark.parametrize("s", [5, 50])
def test_split_rule_matches_brute_force(s):
    """Splits: each block start, the first string start at/after each multiple of S, and the
    first code boundary at/after each multiple of S inside strings longer than S."""
    vals = values_for(pa.binary(), 500, seed=5) + [b"long " * 40, b"", b"tail"]
    carr = fsstgpu.compress(pa.chunked_array([vals[:200], vals[200:]]), split_size=s)
    starts = {}  # code position -> (output position, table): the last string starting there wins
    out = 0
    for b in range(len(carr.tables)):
        for i in range(int(carr.block_starts[b]), int(carr.block_starts[b + 1])):
            starts[int(carr.code_offsets[i])] = (out, b, i)
            out += int(carr.lengths[i])
    expected = {}
    for k in range(0, out // s + 1):
        first = min((c for c, (o, _, _) in starts.items() if o >= k * s), default=None)
        if first is not None:
            expected[first] = starts[first][:2]
    for b in range(len(carr.tables)):
        c = int(carr.code_offsets[carr.block_starts[b]])
        expected[c] = starts[c][:2]
    for c0, (o0, b, i) in starts.items():
        length, c, o = int(carr.lengths[i]), c0, 0
        target = s
        while o < length:
            if o >= target:
                expected[c] = (o0 + o, b)
                while target <= o:
                    target += s
            code = int(carr.codes[c])
            step = 1 if code == 255 else len(carr.tables[b].symbols[code])
            o, c = o + step, c + (2 if code == 255 else 1)
    expected.pop(len(carr.codes), None)
    keys = sorted(expected)
    assert carr.split_codes[:-1].tolist() == keys
    assert carr.split_out[:-1].tolist() == [expected[c][0] for c in keys]
    assert carr.split_table.tolist() == [expected[c][1] for c in keys]


def test_escape_never_split():
    arr = pa.array([bytes(range(256)) * 4], pa.binary())
    carr = check_roundtrip(arr, table=SymbolTable([]), split_size=3)
    # With an empty table every code pair is (255, literal): splits start on even positions.
    assert (carr.split_codes % 2 == 0).all()


def test_many_blocks_split_at_block_starts():
    chunks = [values_for(pa.string(), 40, seed=k) for k in range(6)]
    carr = check_roundtrip(pa.chunked_array(chunks, pa.string()), split_size=100)
    for b in range(len(carr.tables)):
        start = int(carr.code_offsets[carr.block_starts[b]])
        assert start in carr.split_codes.tolist()
        k = carr.split_codes.tolist().index(start)
        assert carr.split_table[k] == b


def test_random_access_and_take():
    vals = values_for(pa.string(), 100, null_every=6)
    carr = fsstgpu.compress(pa.array(vals))
    for i in (0, 1, 6, 50, 99, -1, -100):
        assert carr[i] == vals[i]
    assert carr[np.int64(5)] == vals[5]
    with pytest.raises(IndexError):
        carr[100]
    with pytest.raises(IndexError):
        carr[-101]
    with pytest.raises(TypeError):
        carr["a"]
    assert carr.take([]).to_pylist() == []
    assert carr.take(np.array([3, 3, -1])).to_pylist() == [vals[3], vals[3], vals[-1]]
    assert carr.take(pa.array([2, None, 0])).to_pylist() == [vals[2], None, vals[0]]
    assert carr.take([2, None, -1]).to_pylist() == [vals[2], None, vals[-1]]  # as pc.take
    assert carr.take([None]).to_pylist() == [None]
    with pytest.raises(IndexError):
        carr.take([0, 100])
    with pytest.raises(TypeError):
        carr.take([0.5])
    with pytest.raises(TypeError):
        carr.take([None, 0.5])  # (was read as index 0)
    # unsigned indices past int64 wrapped to negative ones: 2**64 - 1 took the last string
    for huge in (pa.array([2**64 - 1], pa.uint64()), np.array([2**64 - 3], np.uint64)):
        with pytest.raises(IndexError):
            carr.take(huge)
    with pytest.raises(IndexError):
        carr[np.uint64(2**64 - 1)]
    # null indices into an empty column are nulls, as pc.take gives (the stand-in 0 was
    # range-checked)
    empty = fsstgpu.compress(pa.array([], pa.string()))
    assert empty.take([None]).to_pylist() == [None]
    assert empty.take(pa.array([None, None], pa.int32())).equals(pa.nulls(2, pa.string()))
    with pytest.raises(IndexError):
        empty.take([None, 0])


def test_chunked_slices_keep_the_chunks_pyarrow_keeps():
    # pyarrow's slice(offset) asks for the whole length and keeps the empty chunks past the
    # end; slice(offset, n) and [a:b] keep those the length reaches
    rng = np.random.default_rng(11)
    for _ in range(300):
        chunks = [pa.array([f"s{v}" for v in rng.integers(0, 9, rng.choice([0, 0, 1, 2, 3]))],
                           pa.string()) for _ in range(rng.integers(0, 5))]
        col = pa.chunked_array(chunks, pa.string())
        carr, n = fsstgpu.compress(col), len(col)
        offset, length = int(rng.integers(0, n + 1)), int(rng.integers(0, n + 3))
        a, b = int(rng.integers(0, n + 2)), int(rng.integers(0, n + 2))
        for want, got in ((col.slice(offset), carr.slice(offset)),
                          (col.slice(offset, length), carr.slice(offset, length)),
                          (col[a:b], carr[a:b])):
            back = fsstgpu.decompress(got, device="cpu")
            assert [len(c) for c in back.chunks] == [len(c) for c in want.chunks]
            assert back.equals(want)


def test_bytes_vs_str_items():
    assert fsstgpu.compress(pa.array([b"ab"], pa.binary_view()))[0] == b"ab"
    assert fsstgpu.compress(pa.array(["ab"], pa.string_view()))[0] == "ab"


def test_list_input_and_exact_types_out():
    carr = fsstgpu.compress(["a", None, "b"])
    assert carr.type == pa.string()
    out = fsstgpu.decompress(carr, device="cpu")
    assert out.type == pa.string() and out.to_pylist() == ["a", None, "b"]


# (dictionary arrays of strings and all-null arrays are accepted: tests/test_inputs.py)
@pytest.mark.parametrize("bad", [pa.array([1, 2], pa.int32()), pa.array([[1]]),
                                 pa.array([1, 2]).dictionary_encode(),
                                 pa.chunked_array([pa.array([1.5])])])
def test_unsupported_types(bad):
    with pytest.raises(TypeError, match=str(bad.type).split("<")[0]):
        fsstgpu.compress(bad)


def test_non_arrow_input():
    with pytest.raises(TypeError, match="int"):
        fsstgpu.compress(5)
    with pytest.raises(TypeError, match="SymbolTable"):
        fsstgpu.compress(pa.array(["a"]), table=[b"a"])
    with pytest.raises(ValueError, match="split_size"):
        fsstgpu.compress(pa.array(["a"]), split_size=0)


def test_decompress_devices(monkeypatch):
    carr = fsstgpu.compress(pa.array(["a", "b"]))
    monkeypatch.delenv("FSSTGPU_DEVICE", raising=False)
    with pytest.raises(ValueError, match="device"):
        fsstgpu.decompress(carr, device="tpu")
    with pytest.raises(TypeError):
        fsstgpu.decompress(pa.array(["a"]), device="cpu")
    if not fsstgpu.gpu_available():
        with pytest.raises(fsstgpu.DeviceError):
            fsstgpu.decompress(carr, device="gpu")
        assert fsstgpu.decompress(carr).equals(pa.array(["a", "b"]))  # auto -> CPU here
    monkeypatch.setenv("FSSTGPU_DEVICE", "cpu")
    assert fsstgpu.decompress(carr, device="auto").equals(pa.array(["a", "b"]))


def test_codec_object():
    codec = fsstgpu.Codec(algorithm="FSST", device="cpu")
    assert codec.algorithm == "fsst"
    cols = [pa.array(values_for(t, 30, null_every=4), t) for t in SUPPORTED_TYPES]
    carrs = codec.encode(cols)
    assert all(isinstance(c, CompressedStringArray) for c in carrs)
    for out, col in zip(codec.decode(carrs), cols, strict=True):
        assert out.type == col.type and out.equals(col)
    assert codec.encode([]) == [] and codec.decode([]) == []
    # a tuple of columns, numpy arrays: several columns, as decode takes them (a tuple and a
    # list of numpy arrays were taken for one column and failed in pyarrow's inference)
    pair = codec.encode((cols[0], np.array(["x", "yz"])))
    assert [c.to_pylist() for c in codec.decode(tuple(pair))] == [
        cols[0].to_pylist(), ["x", "yz"]]
    assert codec.decode(codec.encode(["a", None])).to_pylist() == ["a", None]  # one column
    one = codec.encode(cols[0])
    assert codec.decode(one).equals(cols[0])
    table = SymbolTable([b"alpha"])
    assert fsstgpu.Codec(table=table, device="cpu").encode(cols[0]).tables == (table,)
    with pytest.raises(ValueError, match="algorithm"):
        fsstgpu.Codec(algorithm="lz4")
    with pytest.raises(ValueError, match="device"):
        fsstgpu.Codec(device="tpu")


def test_stats():
    arr = pa.array([f"http://example.com/page/{i % 50}" for i in range(2000)])
    carr = fsstgpu.compress(arr)
    s = carr.stats()
    assert s["uncompressed_bytes"] == sum(len(v.as_py().encode()) for v in arr)
    assert s["codes_bytes"] == len(carr.codes)
    assert s["table_bytes"] == sum(len(t.to_bytes()) for t in carr.tables)
    assert s["stored_bytes"] == len(carr.to_bytes())
    assert s["ratio"] == s["uncompressed_bytes"] / (s["codes_bytes"] + s["table_bytes"])
    assert s["stored_ratio"] == s["uncompressed_bytes"] / s["stored_bytes"]
    assert s["ratio"] > 2 and s["stored_ratio"] > 1
    assert s["arrow_bytes"] == s["uncompressed_bytes"] + 4 * 2001
    assert carr.nbytes >= len(carr.codes) + carr.lengths.nbytes
    empty = fsstgpu.compress(pa.array([], pa.string())).stats()
    assert empty["uncompressed_bytes"] == 0
    assert empty["ratio"] == 0 or np.isnan(empty["ratio"])


def test_replacing_a_field_needs_validation_again():
    carr = fsstgpu.compress(pa.array(["abc", "abd"]))
    carr.validate()
    carr.lengths = np.array([3, 4])
    with pytest.raises(CorruptDataError):
        carr.validate()


def test_validation_is_kept_until_a_checked_field_changes(monkeypatch):
    # issue #22: any write, the packed-lengths cache included, dropped the validation, so the
    # next decode re-ran check_structure
    import fsstgpu.arrays

    col = pa.array(["abc", None, "abd"] * 40)
    carr = fsstgpu.compress(col)  # the encoder's own output comes validated
    checks = []
    real = fsstgpu.arrays.check_structure
    monkeypatch.setattr(fsstgpu.arrays, "check_structure", lambda c: checks.append(real(c)))
    carr.packed_lengths = np.zeros(16, np.uint8)  # a cache no check reads
    carr.lengths = carr.lengths  # the object already held
    carr.code_offsets = carr.code_offsets
    assert fsstgpu.decompress(carr, device="cpu").equals(col) and checks == []
    carr.lengths = carr.lengths.copy()  # another object: checked again, once
    assert fsstgpu.decompress(carr, device="cpu").equals(col)
    assert fsstgpu.decompress(carr, device="cpu").equals(col) and len(checks) == 1


def _stats_columns():
    words = [f"http://example.com/page/{i % 50}" for i in range(3000)]
    yield fsstgpu.compress(pa.array(words))
    yield fsstgpu.compress(pa.array([None if i % 3 else w for i, w in enumerate(words)]))
    yield fsstgpu.compress(pa.chunked_array([words[:100], words[100:], []]))
    yield fsstgpu.compress(pa.array(["x" * 70000, "", "y" * 300] * 5, pa.large_binary()))
    yield fsstgpu.compress(pa.array(words, pa.string_view()), split_size=256)
    yield fsstgpu.compress(pa.array([], pa.string()))
    blob = fsstgpu.CompressedStringArray.from_bytes(fsstgpu.compress(pa.array(words)).to_bytes())
    assert blob.packed_lengths is not None
    yield blob


@pytest.mark.parametrize("carr", list(_stats_columns()), ids=lambda c: str(c.type))
def test_stats_sizes_the_blob_without_writing_it(carr, monkeypatch):
    from fsstgpu.formats import blob

    stored = len(carr.to_bytes())
    monkeypatch.setattr(blob, "dumps", lambda *a, **k: pytest.fail("stats() serialised"))
    assert carr.stats()["stored_bytes"] == stored


def test_constructor_rejects_values_that_do_not_fit(sample_carr):
    with pytest.raises(ValueError, match="codes"):
        _fields(sample_carr, codes=np.array(sample_carr.codes, np.int64) + 300)
    with pytest.raises(TypeError, match="lengths"):
        _fields(sample_carr, lengths=np.array(sample_carr.lengths, np.float64))


def test_zero_copy_input():
    arr = pa.array(["abc", None, "de"], pa.large_binary())
    plain = from_arrow(arr)
    assert np.shares_memory(plain.offsets, np.frombuffer(arr.buffers()[1], np.int64))
    assert np.shares_memory(plain.data, np.frombuffer(arr.buffers()[2], np.uint8))


def test_arrays_are_read_only():
    carr = fsstgpu.compress(pa.array(["abc", None]))
    for name in ("codes", "code_offsets", "lengths", "validity", "split_codes"):
        with pytest.raises(ValueError):
            getattr(carr, name)[0] = 1


def _fields(carr, **changes):
    fields = {name: getattr(carr, name) for name in (
        "type", "length", "tables", "block_starts", "codes", "code_offsets", "lengths",
        "validity", "null_count", "split_size", "split_codes", "split_out", "split_table",
        "chunk_lengths")}
    fields.update(changes)
    return CompressedStringArray(**fields)


def _plus(arr, index, delta):
    out = np.array(arr)
    out[index] += delta
    return out


def _first_code_unused(carr):
    assert len(carr.tables[0]) < 255
    codes = np.array(carr.codes)
    codes[0] = len(carr.tables[0])  # string 0 is null: the first code is string 1's
    return codes


@pytest.fixture(scope="module")
def sample_carr():
    vals = values_for(pa.string(), 300, null_every=7, seed=9)
    with pytest.MonkeyPatch.context() as mp:  # two blocks: a table per chunk, however small
        mp.setattr(fsstgpu.columns, "MIN_PIECE_BYTES", 1)
        return fsstgpu.compress(pa.chunked_array([vals[:100], vals[100:]]), split_size=64)


# Each corruption, the message validate() gives, and whether decoding alone notices it: the
# decoders check every split's codes against its output range, so a corruption that leaves every
# split decodable to its range (code offsets, which decoding does not read; lengths shifted
# between two strings) is found by validate() (the full walk) but not by decompress.
CORRUPTIONS = [
    (lambda c: {"type": pa.int32()}, "type", True),
    (lambda c: {"length": c.length + 1}, "block_starts", True),
    (lambda c: {"tables": c.tables[:1]}, "block_starts", True),
    (lambda c: {"block_starts": _plus(c.block_starts, 1, 1)}, "split", True),
    (lambda c: {"block_starts": _plus(c.block_starts, 1, 500)}, "non-decreasing", True),
    (lambda c: {"codes": c.codes[:-1]}, "code_offsets", True),
    (lambda c: {"codes": _first_code_unused(c)}, "string 1: a code has no symbol", True),
    (lambda c: {"code_offsets": _plus(c.code_offsets, 5, 1)}, "string", False),
    (lambda c: {"code_offsets": _plus(c.code_offsets, 5, 10**6)}, "non-decreasing", False),
    (lambda c: {"lengths": _plus(c.lengths, 3, 1)}, "split output positions must run", True),
    (lambda c: {"lengths": _plus(_plus(c.lengths, 3, 1), 4, -1)}, "string 3", False),
    (lambda c: {"lengths": _plus(c.lengths, 0, -10**6)}, "non-negative", True),
    (lambda c: {"lengths": _plus(c.lengths, 1, 10**15)}, "exceeds", True),
    (lambda c: {"validity": None}, "null_count", True),
    (lambda c: {"validity": _plus(c.validity, 0, 1)}, "null", True),
    (lambda c: {"validity": c.validity[:-1]}, "validity", True),
    (lambda c: {"null_count": c.null_count + 1}, "null", True),
    (lambda c: {"null_count": 0}, "null_count", True),
    (lambda c: {"split_size": 0}, "split_size", True),
    (lambda c: {"split_codes": _plus(c.split_codes, 2, 1)}, "split", True),
    (lambda c: {"split_out": _plus(c.split_out, 2, 1)}, "split 2", True),
    (lambda c: {"split_table": np.zeros_like(c.split_table)}, "split", True),
    (lambda c: {"split_table": c.split_table + 5}, "split table index", True),
    (lambda c: {"split_codes": c.split_codes[1:], "split_out": c.split_out[1:],
                "split_table": c.split_table[1:]}, "split code positions must run", True),
    (lambda c: {"chunk_lengths": _plus(c.chunk_lengths, 0, 1)}, "chunk_lengths", True),
]


@pytest.mark.parametrize("change,message,decoding_notices", CORRUPTIONS)
def test_validate_catches(sample_carr, change, message, decoding_notices):
    sample_carr.validate()
    bad = _fields(sample_carr, **change(sample_carr))
    with pytest.raises(CorruptDataError, match=message):
        bad.validate()
    bad = _fields(sample_carr, **change(sample_carr))
    if decoding_notices and message != "type":  # an unsupported type never reaches decoding
        with pytest.raises(CorruptDataError):
            fsstgpu.decompress(bad, device="cpu")


@pytest.mark.parametrize("change,message,decoding_notices", CORRUPTIONS)
def test_blob_of_a_corrupt_array_is_never_valid(sample_carr, change, message, decoding_notices):
    # The blob drops the code offsets and its reader derives them again from the codes: a
    # forged offset must not come back from to_bytes() as a blob that decodes where the array
    # itself raises (it did, for the two code_offsets rows)
    bad = _fields(sample_carr, **change(sample_carr))
    with pytest.raises((CorruptDataError, ValueError)):
        fsstgpu.decompress(CompressedStringArray.from_bytes(bad.to_bytes()), device="cpu")



def test_code_offsets_misfit_at_the_first_string_are_refused():
    """Stored code offsets giving string 0 more codes than its 2 bytes can take (two a byte
    at most, as escapes), string 1 still fitting, decode right (decoding does not read them)
    but are wrong for whatever does (slices, a string's codes): the first string is checked
    as every other is."""
    carr = fsstgpu.compress(pa.array(["ab", "ab" * 8]), table=SymbolTable([b"ab"]))
    assert carr.code_offsets.tolist() == [0, 1, 9]
    forged = _fields(carr, code_offsets=np.array([0, 5, 9]))
    with pytest.raises(CorruptDataError,
                       match=r"code count does not fit its length \(string 0\)"):
        forged.validate(full=False)



@pytest.mark.parametrize("null", [0, 2])
def test_a_null_string_with_bytes_is_refused(null):
    """A validity bitmap that makes a string of bytes and codes null (the null count
    agreeing): its bytes would decode under a null. Checked on every string, the first too."""
    carr = fsstgpu.compress(pa.array(["abc", None, "abd", "x"]))
    bits = [k != null and k != 1 for k in range(4)]
    forged = _fields(carr, validity=np.packbits(bits, bitorder="little"), null_count=2)
    with pytest.raises(CorruptDataError,
                       match=rf"a null string has bytes or codes \(string {null}\)"):
        forged.validate(full=False)

def test_a_column_of_the_most_tables_is_valid_and_one_more_is_not():
    def empty(tables):
        return CompressedStringArray(
            type=pa.string(), length=0, tables=[SymbolTable([])] * tables,
            block_starts=np.zeros(tables + 1, np.int64), codes=np.zeros(0, np.uint8),
            code_offsets=np.zeros(1, np.int64), lengths=np.zeros(0, np.int64), validity=None,
            null_count=0, split_size=4096, split_codes=np.zeros(1, np.int64),
            split_out=np.zeros(1, np.int64), split_table=np.zeros(0, np.uint16))

    empty(MAX_TABLES).validate()
    with pytest.raises(CorruptDataError, match=f"{MAX_TABLES + 1} blocks, at most {MAX_TABLES}"):
        empty(MAX_TABLES + 1).validate(full=False)

def test_validate_padding_and_32bit_limit(sample_carr):
    n = 301
    vals = [None] + ["x"] * (n - 1)
    carr = fsstgpu.compress(pa.array(vals))
    padded = _fields(carr, validity=_plus(carr.validity, -1, 1 << 7))
    with pytest.raises(CorruptDataError, match="padding"):
        padded.validate()
    big = _fields(carr, lengths=_plus(carr.lengths, 1, 2**31))
    with pytest.raises(CorruptDataError):
        big.validate()


def test_a_split_outside_its_block_is_named_past_the_first_slice_checked():
    # the check of each split against its table's block runs a slice of splits at a time (its
    # masks took ~35 bytes a split at once); the split it names is the column's, not the slice's
    rng = np.random.default_rng(3)
    words = [bytes(rng.integers(97, 123, 40, dtype=np.uint8)).decode() for _ in range(60_000)]
    carr = fsstgpu.compress(pa.array(words), split_size=1, level="fast")  # a block a MiB
    assert len(carr.tables) >= 2 and len(carr.split_table) > 3 * 2**15
    k = int(np.flatnonzero(carr.split_table == len(carr.tables) - 1)[-1])
    table = carr.split_table.copy()
    table[k] = 0
    with pytest.raises(CorruptDataError, match=rf"^split {k} \(output bytes .*\) lies outside "
                                               r"the block of its table 0$"):
        _fields(carr, split_table=table).validate()


def test_code_walk_reports_bad_codes():
    t = SymbolTable([b"ab"])
    with pytest.raises(CorruptDataError, match="escape"):
        check_codes([t], np.array([0, 1]), np.array([0, 255], np.uint8), np.array([0, 2]),
                    np.array([3]))
    with pytest.raises(CorruptDataError, match="no symbol"):
        check_codes([t], np.array([0, 1]), np.array([1], np.uint8), np.array([0, 1]),
                    np.array([1]))
    with pytest.raises(CorruptDataError, match="block_starts"):
        check_codes([t], np.array([0, 2]), np.array([0], np.uint8), np.array([0, 1]),
                    np.array([2]))
    with pytest.raises(CorruptDataError, match="split 1 does not start on a code boundary"):
        check_codes([t], np.array([0, 1]), np.array([0, 255, 120], np.uint8), np.array([0, 3]),
                    np.array([3]), split_codes=np.array([0, 2, 3]), split_out=np.array([0, 2, 3]))


def test_is_valid_takes_indices_as_getitem_does():
    # is_valid(-1) read bit 7 of the last bitmap byte (False for a valid last string), and an
    # index past the end was True (no validity) or numpy's "index 1 is out of bounds"
    col = pa.array(["a", None, "ccc"])
    carr = fsstgpu.compress(col)
    assert [carr.is_valid(i) for i in range(-3, 3)] == [v.is_valid for v in col] * 2
    for column in (carr, fsstgpu.compress(pa.array(["a", "b"]))):
        for bad in (len(column), -len(column) - 1, 9, 100):
            with pytest.raises(IndexError, match="index out of range"):
                column.is_valid(bad)
        with pytest.raises(TypeError, match="indices must be integers"):
            column.is_valid("x")


def test_decompress_takes_a_blob_in_a_pyarrow_buffer():
    # a pa.Buffer is bytes-like (from_bytes takes it); decompress said "got Buffer"
    col = pa.array(["a", None, "ccc"])
    blob = pa.py_buffer(fsstgpu.compress(col).to_bytes())
    assert fsstgpu.decompress(blob, device="cpu").equals(col)
    assert fsstgpu.Codec(device="cpu").decode(blob).equals(col)


@pytest.mark.parametrize("bad", [1.5, 4096.0, np.float64(3.9), "4096", None, float("nan"),
                                 float("inf"), [4]])
def test_split_size_must_be_an_integer(bad):
    # int() took 1.5 as 1 and "4096" as 4096 without a word; None, NaN and inf raised int()'s
    # own errors, naming no parameter (OverflowError for inf)
    with pytest.raises(TypeError, match="split_size must be an integer"):
        fsstgpu.compress(pa.array(["a"]), split_size=bad)
    assert fsstgpu.compress(pa.array(["a"]), split_size=np.int16(7)).split_size == 7


@pytest.mark.parametrize("bad", [1.5, "100", float("nan"), [3]])
@pytest.mark.parametrize("level", ["default", "fast"])
def test_sample_bytes_must_be_an_integer(bad, level):
    # int() took 1.5 as 1 and "100" as 100; NaN and a list raised int()'s own errors
    with pytest.raises(TypeError, match="sample_bytes must be an integer"):
        fsstgpu.compress(pa.array(["abc"] * 100), sample_bytes=bad, level=level)
    with pytest.raises(TypeError, match="sample_bytes must be an integer"):
        fsstgpu.train(["abc"] * 100, sample_bytes=bad)


@pytest.mark.parametrize(("option", "bad", "error", "message"), [
    ("sample_bytes", -1, ValueError, "sample_bytes must be positive"),
    ("sample_bytes", True, TypeError, "sample_bytes must be an integer"),
    ("split_size", 0, ValueError, "split_size 0 is not a split size"),
    ("table", 5, TypeError, "table must be a SymbolTable"),
])
def test_compression_options_are_checked_where_nothing_uses_them(tmp_path, option, bad, error,
                                                                 message):
    # sample_bytes is unused with a table, and a table without string columns uses none of
    # them: compress(col, table=t, sample_bytes=-1), compress_table of such a table with
    # split_size=0 or table=5, and compress_file of such a file wrote their output without a
    # word (Codec refuses them)
    col = pa.array(["abc", "abd"] * 50)
    given = {"table": fsstgpu.train(col), option: bad}
    with pytest.raises(error, match=message):
        fsstgpu.compress(col, **given)
    with pytest.raises(error, match=message):
        fsstgpu.compress_table(pa.table({"n": [1, 2]}), **{option: bad})
    pq.write_table(pa.table({"n": [1, 2]}), tmp_path / "n.parquet")
    pq.write_table(pa.table({"s": col}), tmp_path / "s.parquet")
    if option == "sample_bytes":  # (compress_file has no split_size, and reads a table first)
        for name, options in (("n", {option: bad}), ("s", given)):
            with pytest.raises(error, match=message):
                compress_file(tmp_path / f"{name}.parquet", tmp_path / "out.parquet", **options)
        assert not (tmp_path / "out.parquet").exists()


@pytest.mark.parametrize(("option", "bad", "error", "message"), [
    ("sample_bytes", 1.5, TypeError, "sample_bytes must be an integer"),
    ("sample_bytes", True, TypeError, "sample_bytes must be an integer"),
    ("sample_bytes", 0, ValueError, "sample_bytes must be positive"),
    ("table", 5, TypeError, "table must be a SymbolTable"),
    ("split_size", 0, ValueError, "split_size 0 is not a split size"),
])
def test_compress_device_checks_its_options_first(option, bad, error, message):
    # with or without a GPU, as compress does: int(sample_bytes or default) took 1.5 and True
    # as 1 and 0 as the default, and a wrong table was found after the column's upload
    with pytest.raises(error, match=message):
        fsstgpu.compress_device(pa.array(["abc"] * 10), **{option: bad})


def test_a_bad_fsstgpu_device_is_named(monkeypatch):
    # device="auto" with FSSTGPU_DEVICE=xyz said "device must be one of ..., not 'xyz'"
    monkeypatch.setenv("FSSTGPU_DEVICE", "xyz")
    carr = fsstgpu.compress(pa.array(["a"]))
    with pytest.raises(ValueError, match="FSSTGPU_DEVICE must be one of"):
        fsstgpu.decompress(carr)
    assert fsstgpu.decompress(carr, device="cpu").to_pylist() == ["a"]


def test_a_stored_split_size_that_is_no_integer_is_corrupt_data():
    """Read from a file or a blob, a non-integer S is the data's fault, not the caller's."""
    with pytest.raises(CorruptDataError, match="S must be an integer"):
        check_split_size(4096.0, CorruptDataError, what="S")
    with pytest.raises(TypeError, match="split_size must be an integer"):
        check_split_size(4096.0)


def test_split_sizes_from_one_to_the_int64_maximum_are_taken():
    """Both ends of 1..2**63 - 1 are split sizes (the largest is what a column of one split
    a block may store), the numbers just outside are not."""
    assert check_split_size(1) == 1 and check_split_size(2**63 - 1) == 2**63 - 1
    for bad in (0, -1, 2**63):
        with pytest.raises(CorruptDataError, match="not a split size in 1..2"):
            check_split_size(bad, CorruptDataError)


@pytest.mark.parametrize("options, error", [
    ({"split_size": 0}, ValueError), ({"sample_bytes": -1}, ValueError),
    ({"sample_bytes": 1.5}, TypeError), ({"table": "junk"}, TypeError),
    ({"table": b"junk"}, CorruptDataError)])
def test_a_codec_checks_its_options_when_made(options, error):
    """Codec(split_size=0), a table that is none, ... were taken and failed at the first
    encode, in the middle of whatever encoded first."""
    with pytest.raises(error):
        fsstgpu.Codec(device="cpu", **options)
