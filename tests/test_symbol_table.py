"""SymbolTable's constructor: canonical order, the packed view, and every refusal."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

from fsstgpu import SymbolTable
from fsstgpu.errors import CorruptDataError
from fsstgpu.symbol_table import pack_tables


@given(st.sets(st.binary(min_size=1, max_size=8), max_size=255))
def test_order_and_packed_view(symbols):
    t = SymbolTable(list(symbols))
    assert t.symbols == tuple(sorted(symbols, key=lambda s: (len(s), s)))
    assert t.lengths.tolist() == [len(s) for s in t.symbols] and t.lengths.dtype == np.uint8
    assert t.packed.dtype == np.uint64 and len(t.packed) == len(t)
    assert t.packed.tolist() == [int.from_bytes(s, "little") for s in t.symbols]
    assert not t.packed.flags.writeable and not t.lengths.flags.writeable
    assert SymbolTable(reversed(t.symbols)) == t


def test_bytes_like_symbols_are_copied_as_bytes():
    t = SymbolTable([bytearray(b"ab"), memoryview(b"c")])
    assert t.symbols == (b"c", b"ab") and all(type(s) is bytes for s in t.symbols)


@pytest.mark.parametrize(("symbols", "message"), [
    ([bytes([i, j]) for i in range(16) for j in range(16)], "at most 255 symbols, not 256"),
    ([b"a", b""], "1-8 bytes long, not 0: b''"),
    ([b"123456789", b"a"], "1-8 bytes long, not 9: b'123456789'"),
    ([b"ab", b"ab"], "distinct"),
])
def test_refusals(symbols, message):
    with pytest.raises(ValueError, match=message):
        SymbolTable(symbols)


def _serialised(symbols_in_order) -> bytes:
    """A table's bytes as to_bytes writes them, for the symbols in the order given (a forger's
    order), with a correct CRC."""
    import struct
    import zlib

    counts = [sum(len(s) == n for s in symbols_in_order) for n in range(1, 9)]
    ordered = sorted(symbols_in_order, key=len)  # by length as the format says; ties as given
    body = struct.pack("<4sB8B", b"FSTT", 1, *counts) + b"".join(ordered)
    return body + struct.pack("<I", zlib.crc32(body))


@pytest.mark.parametrize("seed", range(5))
def test_from_bytes_round_trips_random_tables(seed):
    rng = np.random.default_rng(seed)
    syms = {bytes(rng.integers(0, 256, int(rng.integers(1, 9))).astype(np.uint8))
            for _ in range(int(rng.integers(0, 256)))}
    t = SymbolTable(list(syms)[:255])
    back = SymbolTable.from_bytes(t.to_bytes())
    assert back == t and back.symbols == t.symbols
    assert back.packed.tolist() == t.packed.tolist() and back.lengths.tolist() == t.lengths.tolist()


_FORGED = [
    ([b"ab", b"ab"], "must be distinct"),
    ([b"b", b"x", b"b"], "must be distinct"),
    ([b"ab", b"a\x00"], "canonical order"),
    ([b"x", b"b"], "canonical order"),
    ([b"\x00\x01", b"\x00\x00"], "canonical order"),
]


@pytest.mark.parametrize(("symbols", "message"), _FORGED)
def test_from_bytes_refuses_forged_order(symbols, message):
    with pytest.raises(CorruptDataError, match=message):
        SymbolTable.from_bytes(_serialised(symbols))


@pytest.mark.parametrize("symbols", [
    [3, 1],               # bytes(3) was three NUL bytes: a table of NUL symbols
    [b"a", np.int64(2)],
    [10**15],             # bytes(10**15): a petabyte asked for (MemoryError)
    [b"a", "b"],          # bytes("b"): "string argument without an encoding"
    [None],
])
def test_symbols_that_are_not_bytes_are_refused(symbols):
    with pytest.raises(TypeError, match="symbols must be bytes-like"):
        SymbolTable(symbols)


@pytest.mark.parametrize("symbols", [b"\x01\x02", b"ab", bytearray(b"a"), "ab"])
def test_one_string_is_not_a_list_of_symbols(symbols):
    # b"\x01\x02" iterated as the ints 1, 2: the symbols b"\x00" and b"\x00\x00"
    with pytest.raises(TypeError, match="iterable of bytes"):
        SymbolTable(symbols)


def test_buffer_symbols_are_their_bytes():
    t = SymbolTable([np.frombuffer(b"xy", np.uint8), np.bytes_(b"z")])
    assert t.symbols == (b"z", b"xy")


def test_pack_tables_into_given_arrays_overwrites_them_whole():
    """pack_tables(into=...) fills a batch's own sections: the same rows as new arrays, every
    stale byte cleared; arrays of another shape are refused."""
    tables = [SymbolTable([b"ab", b"c"]), SymbolTable([b"xyz"])]
    sym, ln = np.full((2, 256), 7, np.uint64), np.full((2, 256), 9, np.uint8)
    got = pack_tables(tables, into=(sym, ln))
    want = pack_tables(tables)
    assert got[0] is sym and got[1] is ln
    assert np.array_equal(sym, want[0]) and np.array_equal(ln, want[1])
    with pytest.raises(ValueError, match="shape"):
        pack_tables(tables, into=(np.zeros((1, 256), np.uint64), np.zeros((1, 256), np.uint8)))


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    (dict(offset=True), TypeError, "offset must be an integer, not bool"),
    (dict(offset=2.0), TypeError, "offset must be an integer, not float"),
    (dict(offset=-36), ValueError, "offset -36 is outside 0..36"),
    (dict(offset=37), ValueError, "offset 37 is outside 0..36"),
    (dict(count=True), TypeError, "count must be an integer, not bool"),
    (dict(count=-1), ValueError, "count must be >= 0, not -1"),
])
def test_read_many_refuses_a_callers_offset_or_count(kwargs, error, message):
    # offset=True read at byte 1 ("bad magic": the data blamed), offset=-36 counted from the
    # end (struct's rule) and returned an end of -18, count=True read one table, count=-1 none
    raw = SymbolTable([b"a"]).to_bytes() * 2
    assert len(raw) == 36
    with pytest.raises(error, match=message):
        SymbolTable.read_many(raw, **{"offset": 0, "count": 2, **kwargs})
    if "offset" in kwargs:
        with pytest.raises(error, match=message):
            SymbolTable.read_from(raw, kwargs["offset"])
    tables, end = SymbolTable.read_many(raw, np.int64(18), np.int64(1))
    assert end == 36 and tables[0].symbols == (b"a",)


def _sealed(body: bytes) -> bytes:
    """``body`` with the CRC32 to_bytes would append: a forgery that only the checks before the
    CRC's can refuse."""
    import struct
    import zlib

    return body + struct.pack("<I", zlib.crc32(body))


def _header(counts, magic=b"FSTT", version=1) -> bytes:
    import struct

    return struct.pack("<4sB8B", magic, version, *counts, *[0] * (8 - len(counts)))


_ONE_BYTE = bytes(range(255))  # 255 distinct one-byte symbols, in canonical order


_DAMAGES = [
    (_sealed(_header([1], magic=b"FSTX") + b"a"), r"bad magic b'FSTX'"),
    (_sealed(_header([1], version=0) + b"a"), "unsupported version 0"),
    (_sealed(_header([1], version=2) + b"a"), "unsupported version 2"),
    (_sealed(_header([255, 1]) + _ONE_BYTE + b"ab"), "256 symbols, at most 255"),
    (_sealed(_header([2]) + b"a"), "truncated: needs 19 bytes, has 18"),
    (_sealed(_header([1]) + b"a")[:-1], "truncated: needs 18 bytes, has 17"),
    (_sealed(_header([]))[:-1], "truncated: 16 bytes, need at least 17"),
    (b"", "truncated: 0 bytes, need at least 17"),
    (_header([1]) + b"b" + _sealed(_header([1]) + b"a")[-4:], "CRC32 mismatch"),
    (_sealed(_header([1]) + b"a") + b"\x00", "1 trailing bytes after a 18-byte table"),
]


@pytest.mark.parametrize(("data", "message"), _DAMAGES)
def test_from_bytes_refuses_each_damage_on_its_own(data, message):
    """Each check of the reader against bytes that pass every other one (the CRC recomputed
    after the forgery): dropping any one check lets its damage through."""
    with pytest.raises(CorruptDataError, match=message):
        SymbolTable.from_bytes(data)


def test_from_bytes_at_its_bounds():
    """The smallest table (17 bytes, no symbol) and the largest count of symbols (255) are
    read; the reader checks sizes at the table's offset, not the buffer's start."""
    assert len(SymbolTable.from_bytes(_sealed(_header([])))) == 0
    t = SymbolTable.from_bytes(_sealed(_header([255]) + _ONE_BYTE))
    assert t.symbols == tuple(bytes([i]) for i in range(255))
    raw = SymbolTable([b"a"]).to_bytes()
    table, end = SymbolTable.read_from(b"\x00" * 5 + raw, 5)
    assert table.symbols == (b"a",) and end == 5 + len(raw)
    with pytest.raises(CorruptDataError, match="truncated: needs 18 bytes, has 17"):
        SymbolTable.read_from(b"\x00" * 5 + raw[:-1], 5)
    with pytest.raises(CorruptDataError, match="truncated: 0 bytes, need at least 17"):
        SymbolTable.read_from(raw, len(raw))  # an offset at the end is in range, the data short
    with pytest.raises(ValueError, match="offset -1 is outside"):
        SymbolTable.read_from(raw, -1)


def test_read_many_names_the_bad_table_and_reads_none():
    raw = SymbolTable([b"a"]).to_bytes() + SymbolTable([b"bc"]).to_bytes()
    bad = raw[:-1] + bytes([raw[-1] ^ 1])
    with pytest.raises(CorruptDataError, match=r"^table 1: symbol table: CRC32 mismatch$"):
        SymbolTable.read_many(bad, 0, 2)
    assert SymbolTable.read_many(raw, 18, 0) == ([], 18)


def test_the_most_symbols_a_table_holds():
    syms = [bytes([i]) for i in range(255)]
    assert len(SymbolTable(syms)) == 255
    with pytest.raises(ValueError, match="at most 255 symbols, not 256"):
        SymbolTable(syms + [b"ab"])


def test_pack_tables_of_no_table_is_one_empty_row():
    sym, ln = pack_tables([])
    assert sym.shape == ln.shape == (1, 256) and not sym.any() and not ln.any()


@pytest.mark.parametrize("table", ["ab", None, [b"ab"], 3])
def test_as_symbol_table_refuses_what_is_no_table(table):
    from fsstgpu.symbol_table import as_symbol_table

    with pytest.raises(TypeError, match="table must be a SymbolTable or its bytes"):
        as_symbol_table(table)


def test_a_too_long_symbol_is_named_after_one_of_eight_bytes():
    with pytest.raises(ValueError, match="not 9: b'123456789'"):
        SymbolTable([b"12345678", b"123456789"])


def test_tables_differ_by_their_symbols():
    a, b = SymbolTable([b"a"]), SymbolTable([b"b"])
    assert a != b and not a == b and a == SymbolTable([b"a"])
    assert a != b"a" and a != (b"a",) and a is not None  # no AttributeError for a non-table


def test_repr_shows_the_first_six_symbols():
    six = SymbolTable([bytes([c]) for c in b"abcdef"])
    assert repr(six) == "SymbolTable(6 symbols: b'a', b'b', b'c', b'd', b'e', b'f')"
    seven = SymbolTable([bytes([c]) for c in b"abcdefg"])
    assert repr(seven) == "SymbolTable(7 symbols: b'a', b'b', b'c', b'd', b'e', b'f', ...)"


def test_tables_read_from_bytes_are_read_only():
    t = SymbolTable.from_bytes(SymbolTable([b"ab", b"c"]).to_bytes())
    assert not t.packed.flags.writeable and not t.lengths.flags.writeable


def test_pack_tables_keeps_eight_byte_symbols_exact():
    sym, ln = pack_tables([SymbolTable([b"\xff" * 7 + b"\x01"])])
    assert sym.dtype == np.uint64 and ln.dtype == np.uint8
    assert int(sym[0, 0]) == int.from_bytes(b"\xff" * 7 + b"\x01", "little")


@pytest.mark.parametrize("bad", ["symbols", "lengths"])
def test_pack_tables_refuses_either_array_of_the_wrong_shape(bad):
    sym, ln = np.zeros((1, 256), np.uint64), np.zeros((1, 256), np.uint8)
    if bad == "symbols":
        sym = np.zeros((2, 256), np.uint64)
    else:
        ln = np.zeros((1, 255), np.uint8)
    with pytest.raises(ValueError, match="shape"):
        pack_tables([SymbolTable([b"a"])], into=(sym, ln))


def _read_one(raw: bytes):
    try:
        return SymbolTable.from_bytes(raw)
    except CorruptDataError:
        return None


def test_read_tables_reads_what_from_bytes_reads(fresh_rng):
    """The batch reader against the one-by-one reader on random tables, each damaged in one
    of the ways from_bytes refuses (or left whole): the same tables, None where it raises."""
    from fsstgpu.native.tables import read_tables

    rng = fresh_rng
    damages = [data for data, _ in _DAMAGES] + [_serialised(s) for s, _ in _FORGED]
    raws = []
    for _ in range(300):
        syms = {bytes(rng.integers(0, 256, int(rng.integers(1, 9))).astype(np.uint8))
                for _ in range(int(rng.integers(0, 256)))}
        raw = SymbolTable(list(syms)[:255]).to_bytes()
        pick = rng.integers(0, 4)
        if pick == 1:  # a flipped byte anywhere
            k = int(rng.integers(0, len(raw)))
            raw = raw[:k] + bytes([raw[k] ^ int(rng.integers(1, 256))]) + raw[k + 1 :]
        elif pick == 2:
            raw = damages[int(rng.integers(0, len(damages)))]
        raws.append(raw)
    offsets = np.cumsum([0] + [len(r) for r in raws])
    got = read_tables(np.frombuffer(b"".join(raws), np.uint8), offsets)
    want = [_read_one(r) for r in raws]
    assert [g is None for g in got] == [w is None for w in want]
    assert 0 < sum(w is None for w in want) < len(want)
    for g, w in zip(got, want, strict=True):
        if w is not None:
            assert g == w and g.packed.tolist() == w.packed.tolist()
            assert g.lengths.tolist() == w.lengths.tolist() and g.symbols == w.symbols
    assert read_tables(b"", [0]) == []
