"""CPU encoder and decoder: round trips, longest-match encoding, and corrupt-input errors."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fsstgpu import CorruptDataError, SymbolTable
from fsstgpu.decoder import decode_all, decode_range
from fsstgpu.encoder import encode_strings
from fsstgpu.testing import greedy_encode
from fsstgpu.training import train_table


def _offsets(items):
    offs = np.zeros(len(items) + 1, np.int64)
    np.cumsum([len(s) for s in items], out=offs[1:])
    return np.frombuffer(b"".join(items), np.uint8), offs


def _roundtrip(table, items):
    data, offs = _offsets(items)
    codes, coffs = encode_strings(table, data, offs)
    assert coffs[0] == 0 and coffs[-1] == len(codes)
    for i, s in enumerate(items):
        out = np.full(len(s) + 16, 0xAB, np.uint8)  # poisoned, larger than needed
        end = decode_range(table, codes, coffs[i], coffs[i + 1], out, 8, 8 + len(s))
        assert end == 8 + len(s)
        assert bytes(out[8 : 8 + len(s)]) == s
        assert np.all(out[:8] == 0xAB) and np.all(out[8 + len(s) :] == 0xAB)
    return data, offs, codes, coffs


OVERLAPPING = SymbolTable([b"a", b"ab", b"abc", b"abcd", b"abcdefgh", b"abx", b"\x00", b"\xff\xff",
                           b"\x00\x00\x00", b"b", b"bcd", b"xyz", b"xyzw", b"zz"])


def test_encoder_is_greedy_longest_match_even_with_shared_prefixes():
    rng = np.random.default_rng(0)
    alphabet = np.frombuffer(b"abcdxyzw\x00\xff", np.uint8)
    items = [bytes(rng.choice(alphabet, rng.integers(0, 40))) for _ in range(2000)] + [b""]
    _, _, codes, coffs = _roundtrip(OVERLAPPING, items)
    for i, s in enumerate(items):
        assert codes[coffs[i] : coffs[i + 1]].tolist() == greedy_encode(OVERLAPPING, s)


def test_trained_table_roundtrip_random_bytes_and_empty_strings():
    rng = np.random.default_rng(1)
    items = [bytes(rng.integers(0, 256, rng.integers(0, 30), dtype=np.uint8)) for _ in range(3000)]
    items += [b"", b"\x00" * 20, b"\xff" * 20, b""]
    table = train_table(*_offsets(items))
    _roundtrip(table, items)
    _roundtrip(SymbolTable([]), items[:300])  # no symbols: all escapes
    codes, _ = encode_strings(SymbolTable([]), np.frombuffer(b"\x00\xff", np.uint8),
                              np.array([0, 2]))
    assert codes.tolist() == [255, 0, 255, 255]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.binary(max_size=40), max_size=60),
       st.lists(st.binary(min_size=1, max_size=8), max_size=30, unique=True))
def test_roundtrip_any_table(items, symbols):
    table = SymbolTable(symbols)
    _, _, codes, coffs = _roundtrip(table, items)
    for i, s in enumerate(items):
        assert codes[coffs[i] : coffs[i + 1]].tolist() == greedy_encode(table, s)


def test_large_input_parallel_paths_match_serial():
    rng = np.random.default_rng(2)
    words = [b"lorem ", b"ipsum ", b"dolor ", b"sit ", b"amet, ", b"\x00\x01", b"\xfe\xff"]
    items = [b"".join(words[j] for j in rng.integers(0, 7, rng.integers(0, 30)))
             for _ in range(200_000)]
    data, offs = _offsets(items)
    assert len(data) > 5 << 20  # several encoder chunks and decoder tasks
    table = train_table(data, offs)
    codes, coffs = encode_strings(table, data, offs)
    # the same as encoding in pieces (the serial path)
    half = len(items) // 3
    c1, o1 = encode_strings(table, data, offs[: half + 1])
    c2, o2 = encode_strings(table, data, offs[half:])
    assert np.array_equal(codes, np.concatenate([c1, c2]))
    assert np.array_equal(coffs, np.concatenate([o1, o2[1:] + len(c1)]))
    # decode_all over string-aligned splits of ~64 KB
    idx = np.unique(np.concatenate(([0], np.searchsorted(offs, np.arange(0, len(data), 65536)),
                                    [len(items)])))
    out = decode_all([table], codes, coffs[idx], offs[idx], np.zeros(len(idx) - 1, np.uint16),
                     len(data))
    assert np.array_equal(out, data)


def test_decode_all_several_tables_and_mid_string_splits():
    t0 = SymbolTable([b"hello", b" ", b"world"])
    t1 = SymbolTable([b"abc", b"d"])
    c0, _ = encode_strings(t0, np.frombuffer(b"hello world", np.uint8), np.array([0, 11]))
    c1, _ = encode_strings(t1, np.frombuffer(b"abcdabcz", np.uint8), np.array([0, 8]))
    codes = np.concatenate([c0, c1])  # [hello, ' ', world | abc, d, abc, esc z]
    split_codes = np.array([0, 2, 3, 3 + 2, len(codes)])
    split_out = np.array([0, 6, 11, 15, 19])
    out = decode_all([t0, t1], codes, split_codes, split_out, np.array([0, 0, 1, 1]), 19)
    assert bytes(out) == b"hello worldabcdabcz"


def test_decode_range_errors_never_write_outside():
    t = SymbolTable([b"abcdefgh", b"x"])
    assert t.symbols == (b"x", b"abcdefgh")
    cases = [
        (np.array([0, 255], np.uint8), 9),  # escape as the last code
        (np.array([1, 7], np.uint8), 9),  # code 7 has no symbol
        (np.array([1, 1], np.uint8), 12),  # 16 bytes into 12 (fast path)
        (np.array([0, 255, 65, 1], np.uint8), 9),  # 10 bytes into 9, at the last symbol
        (np.array([0, 255, 65], np.uint8), 1),  # the escaped byte overflows
        (np.array([1] * 5 + [0], np.uint8), 40),  # 41 bytes into 40
    ]
    for codes, room in cases:
        out = np.full(60, 0xAB, np.uint8)
        with pytest.raises(CorruptDataError):
            decode_range(t, codes, 0, len(codes), out, 4, 4 + room)
        assert np.all(out[:4] == 0xAB) and np.all(out[4 + room :] == 0xAB)
    with pytest.raises(ValueError):
        decode_range(t, np.zeros(2, np.uint8), 0, 3, np.zeros(8, np.uint8), 0, 8)
    with pytest.raises(ValueError):
        decode_range(t, np.zeros(2, np.uint8), 0, 2, np.zeros(8, np.uint8), 0, 9)


def test_decode_all_corrupt_inputs():
    t = SymbolTable([b"ab"])
    codes = np.array([0, 255, 120, 0], np.uint8)  # "abxab"
    ok = (np.array([0, 3, 4]), np.array([0, 3, 5]), np.array([0, 0]))
    assert bytes(decode_all([t], codes, *ok, 5)) == b"abxab"
    bad = [
        (np.array([0, 3, 4]), np.array([0, 2, 5]), np.array([0, 0]), 5),  # split overflows
        (np.array([0, 3, 4]), np.array([0, 4, 5]), np.array([0, 0]), 5),  # split falls short
        (np.array([0, 2, 4]), np.array([0, 2, 5]), np.array([0, 0]), 5),  # cut inside an escape
        (np.array([0, 3, 4]), np.array([0, 3, 5]), np.array([0, 1]), 5),  # no table 1
        (np.array([0, 3, 4]), np.array([0, 3, 6]), np.array([0, 0]), 6),  # total too large
        (np.array([0, 3, 4]), np.array([0, 3, 5]), np.array([0, 0]), 4),  # total mismatch
        (np.array([0, 4, 3]), np.array([0, 3, 5]), np.array([0, 0]), 5),  # not monotone
        (np.array([0, 4]), np.array([0, 3, 5]), np.array([0, 0]), 5),  # lengths disagree
    ]
    for sc, so, stab, total in bad:
        with pytest.raises(CorruptDataError):
            decode_all([t], codes, sc, so, stab, total)
    with pytest.raises(CorruptDataError):
        decode_all([t], np.array([0, 9], np.uint8), np.array([0, 2]), np.array([0, 3]),
                   np.array([0]), 3)


def test_parallel_chunks_give_the_sequential_encoding():
    """Columns from 128 KB up are encoded in several chunks; the result is one thread's, and
    greedy (checked on random strings: the plain-Python oracle is slow)."""
    from fsstgpu import native

    rng = np.random.default_rng(11)
    words = [b"alpha ", b"beta", b"gamma,", b"http://x.org/", b"\x00", b"zz"]
    for nstrings in (3_000, 20_000, 90_000):
        items = [b"".join(words[j] for j in rng.integers(0, 6, rng.integers(0, 8)))
                 for _ in range(nstrings)]
        data, offs = _offsets(items)
        table = train_table(data, offs)
        codes, coffs = encode_strings(table, data, offs)
        one, one_offs = native.encode_blocks([table], data, offs, np.array([0, nstrings]),
                                             threads=1)
        assert np.array_equal(codes, one) and np.array_equal(coffs, one_offs)
        for i in rng.choice(nstrings, 2000, replace=False).tolist():
            assert codes[coffs[i] : coffs[i + 1]].tolist() == greedy_encode(table, items[i])
