"""The AVX-512 job kernel (fsstgpu/csrc/encode_jobs_impl.h) at its edges: batches cut by their
string count and their bytes, strings around its long-string limit (1 KB) and runs of them,
strings of 1-7 bytes, runs of empty strings, and tables whose 2-byte symbols leave only one
second byte unused (the lookup of a string's last byte). Every instruction set and loop gives
the same codes, and they are FSST's greedy longest match (fsstgpu.testing.greedy_encode)."""

from __future__ import annotations

import numpy as np
import pytest

from fsstgpu import SymbolTable
from fsstgpu.arrow_layout import as_data_offsets
from fsstgpu.testing import greedy_encode, symbol_slot


def one_per_slot(symbols):
    """The symbols, less 3+ byte ones whose hash slot an earlier one holds (as trained
    tables are: the lane and job kernels need it)."""
    seen, keep = set(), []
    for s in symbols:
        if len(s) >= 3:
            if symbol_slot(s) in seen:
                continue
            seen.add(symbol_slot(s))
        keep.append(s)
    return keep


def check_greedy(table, strings, codes, code_offsets, picks):
    for i in picks:
        got = codes[code_offsets[i] : code_offsets[i + 1]].tolist()
        assert got == greedy_encode(table, strings[i]), i


def random_table(rng, alphabet, n=200):
    syms = set()
    while len(syms) < n:
        syms.add(bytes(rng.choice(alphabet, int(rng.integers(1, 9)))))
    return SymbolTable(one_per_slot(sorted(syms)))


@pytest.mark.parametrize("seed", [0, 1])
def test_batches_cut_by_count_and_bytes(seed, encode_everywhere):
    rng = np.random.default_rng(seed)
    alphabet = np.frombuffer(b"\x00\xffabc\x00\xff", np.uint8)
    table = random_table(rng, alphabet)
    strings = []
    # 20,000 strings of 0-2 bytes (batches end at their string count), then 1-7 byte ones,
    # then strings around the 1 KB limit, alone and in runs, among short ones (batches end at
    # their bytes and before each long string)
    strings += [bytes(rng.choice(alphabet, int(rng.integers(0, 3)))) for _ in range(20_000)]
    strings += [bytes(rng.choice(alphabet, int(rng.integers(1, 8)))) for _ in range(30_000)]
    for _ in range(300):
        r = rng.random()
        if r < 0.3:
            n = int(rng.integers(1020, 1030))
        elif r < 0.4:
            n = int(rng.integers(2000, 5000))
        else:
            n = int(rng.integers(0, 60))
        strings.append(bytes(rng.choice(alphabet, n)))
    strings += [b""] * 500 + [bytes(rng.integers(0, 256, 200_000, dtype=np.uint8))]
    strings += [bytes(rng.choice(alphabet, int(rng.integers(1, 8)))) for _ in range(5_000)]
    codes, code_offsets = encode_everywhere([table], *as_data_offsets(strings),
                                            np.array([0, len(strings)]), threads=(1, 2))
    n = len(strings)
    picks = np.concatenate([rng.integers(0, n, 3000), np.arange(n - 5_600, n - 5_000),
                            np.arange(50_000, 50_300), np.arange(n - 30, n)])
    check_greedy(table, strings, codes, code_offsets, picks)
    assert code_offsets[-1] == len(codes)


def test_last_byte_lookup_with_one_free_second_byte(encode_everywhere):
    # 255 two-byte symbols, one for each second byte but 0xFF: a string's last byte is looked
    # up with that byte; then the same with 0x00 free (and every 1-byte code an escape)
    rng = np.random.default_rng(5)
    for free in (0xFF, 0x00):
        seconds = [b for b in range(256) if b != free]
        table = SymbolTable([bytes([int(rng.integers(0, 256)), b]) for b in seconds])
        strings = [bytes(rng.integers(0, 256, int(rng.integers(0, 12)), dtype=np.uint8))
                   for _ in range(40_000)]
        strings += [bytes([free]) * int(k) for k in range(1, 9)]
        codes, code_offsets = encode_everywhere([table], *as_data_offsets(strings),
                                            np.array([0, len(strings)]), threads=(1,))
        picks = np.concatenate([rng.integers(0, len(strings), 2000),
                                np.arange(len(strings) - 20, len(strings))])
        check_greedy(table, strings, codes, code_offsets, picks)


def test_symbols_with_zero_bytes_past_a_strings_end(encode_everywhere):
    # symbols ending in 0x00 must not match a string that ends where the symbol's zeros start
    # (the bytes past a string are whatever follows it: here zeros)
    table = SymbolTable(one_per_slot([b"ab\x00", b"ab\x00\x00\x00", b"a", b"b", b"\x00",
                                      b"abcdefg\x00", b"abcdefgh", b"ab"]))
    strings = []
    for k in range(30_000):
        strings.append([b"ab", b"a", b"abcdefg", b"abcdefgh", b"ab\x00", b"b"][k % 6])
        strings.append(b"\x00" * (k % 9))
    codes, code_offsets = encode_everywhere([table], *as_data_offsets(strings),
                                            np.array([0, len(strings)]), threads=(1,))
    check_greedy(table, strings, codes, code_offsets, range(0, len(strings), 7))
    check_greedy(table, strings, codes, code_offsets, range(len(strings) - 30, len(strings)))
