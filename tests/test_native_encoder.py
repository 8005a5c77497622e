"""The compiled encoder's lane kernels (fsstgpu/csrc/encode_lanes*.h): every instruction set
and thread count gives the same codes and code offsets, and those are FSST's greedy longest
match (fsstgpu.testing.greedy_encode, plain Python) on dbtext, random binary, strings full of
0x00/0xFF, empty and long strings, and on tables whose hash slots chain several symbols."""

from __future__ import annotations

import numpy as np
import pytest

from fsstgpu import SymbolTable
from fsstgpu.arrow_layout import as_data_offsets, from_arrow
from fsstgpu.datasets import load_lines
from fsstgpu.testing import greedy_encode, symbol_slot
from fsstgpu.training import train_table


def check_greedy(table, data, offsets, codes, code_offsets, strings):
    for i in strings:
        s = bytes(data[offsets[i] : offsets[i + 1]])
        got = codes[code_offsets[i] : code_offsets[i + 1]].tolist()
        assert got == greedy_encode(table, s), i


def test_dbtext_per_file_and_as_one_column(dbtext_paths, encode_everywhere):
    columns = [from_arrow(load_lines(p, binary=True)) for p in dbtext_paths]
    rng = np.random.default_rng(21)
    for col in columns:
        data = np.ascontiguousarray(col.data)
        offs = np.asarray(col.offsets, np.int64)
        table = train_table(data, offs)
        n = len(offs) - 1
        codes, code_offs = encode_everywhere([table], data, offs, np.array([0, n]))
        check_greedy(table, data, offs, codes, code_offs, rng.integers(0, n, 300))
        check_greedy(table, data, offs, codes, code_offs, range(max(0, n - 20), n))
    data = np.concatenate([c.data[int(c.offsets[0]) : int(c.offsets[-1])] for c in columns])
    lengths = np.concatenate([np.diff(np.asarray(c.offsets, np.int64)) for c in columns])
    offs = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offs[1:])
    table = train_table(data, offs)
    codes, code_offs = encode_everywhere([table], data, offs, np.array([0, len(lengths)]))
    check_greedy(table, data, offs, codes, code_offs, rng.integers(0, len(lengths), 1000))


def binary_table(rng):
    """Symbols over bytes where 0x00 and 0xFF are common, one per hash slot (as trained
    tables are), with symbols that are prefixes of others and zero bytes at their ends."""
    # 3+ byte symbols differ in their first 3 bytes (the hashed ones): 216 choices here
    alphabet = np.frombuffer(b"\x00\xffabcd\x00\xff", np.uint8)
    syms, slots = {}, set()
    for b in (b"\x00", b"\xff", b"a", b"\x00\x00", b"\xff\x00", b"a\x00", b"\x00\x00\x00",
              b"\xff\xff\xff\xff\xff\xff\xff\xff", b"ab\x00"):
        if len(b) < 3 or symbol_slot(b) not in slots:
            syms[b] = None
            if len(b) >= 3:
                slots.add(symbol_slot(b))
    while len(syms) < 150:
        s = bytes(rng.choice(alphabet, int(rng.integers(1, 9))))
        if len(s) >= 3:
            if symbol_slot(s) in slots or s in syms:
                continue
            slots.add(symbol_slot(s))
        syms[s] = None
    return SymbolTable(list(syms))


@pytest.mark.parametrize("seed", [0, 1])
def test_binary_with_empty_and_long_strings(seed, encode_everywhere):
    rng = np.random.default_rng(seed)
    table = binary_table(rng)
    alphabet = np.frombuffer(b"\x00\xffab\x00\xffc", np.uint8)
    strings, total = [], 0
    while total < 1_500_000:  # chunks large enough for every kernel
        r = rng.random()
        n = 0 if r < 0.1 else int(rng.integers(1, 9)) if r < 0.5 else int(rng.integers(9, 80))
        strings.append(bytes(rng.choice(alphabet, n)))
        total += n
    strings[1000] = bytes(rng.choice(alphabet, 70_000))  # longer than 64 KB
    strings[5000] = bytes(rng.integers(0, 256, 100_000, dtype=np.uint8))  # random binary
    strings += [b"", b"\x00", b"", b"ab\x00", b"\xff"]  # at the data's very end
    data, offs = as_data_offsets(strings)
    n = len(strings)
    codes, code_offs = encode_everywhere([table], data, offs, np.array([0, n]))
    picks = np.concatenate([rng.integers(0, n, 2000), [1000, 5000], np.arange(n - 30, n)])
    check_greedy(table, data, offs, codes, code_offs, picks)
    # two blocks with different tables, one of them empty
    bs = np.array([0, n // 3, n // 3, n])
    other = SymbolTable([b"a", b"ab", b"\x00\x00\x00\x00"])
    codes2, code_offs2 = encode_everywhere([table, other, other], data, offs, bs)
    check_greedy(other, data, offs, codes2, code_offs2, rng.integers(n // 3, n, 500))
    assert np.array_equal(codes2[: code_offs2[n // 3]], codes[: code_offs[n // 3]])


def test_tables_whose_slots_chain_keep_the_chain_walk(encode_everywhere):
    # two 3+ byte symbols in one hash slot: the lane tables cannot hold them
    rng = np.random.default_rng(3)
    first = {}
    pair = None
    while pair is None:
        s = bytes(rng.integers(97, 101, 3, dtype=np.uint8)) + bytes(
            rng.integers(97, 101, int(rng.integers(0, 5)), dtype=np.uint8))
        h = symbol_slot(s)
        if h in first and first[h][:3] != s[:3]:
            pair = first[h], s
        first.setdefault(h, s)
    table = SymbolTable([pair[0], pair[1], b"a", b"ab"])
    strings = [bytes(rng.choice(np.frombuffer(b"abcd", np.uint8), int(rng.integers(0, 40))))
               + pair[int(rng.integers(0, 2))] for _ in range(20_000)]
    data, offs = as_data_offsets(strings)
    codes, code_offs = encode_everywhere([table], data, offs, np.array([0, len(strings)]))
    check_greedy(table, data, offs, codes, code_offs, range(0, len(strings), 7))


def test_tiny_inputs(encode_everywhere):
    table = SymbolTable([b"ab", b"abc", b"\x00", b"abcdefgh"])
    for strings in ([], [b""], [b"a"], [b"abcdefgh"], [b"", b"abc", b""], [b"abcdefghab"] * 9):
        data, offs = as_data_offsets(strings)
        codes, code_offs = encode_everywhere([table], data, offs,
                                     np.array([0, len(strings)]))
        check_greedy(table, data, offs, codes, code_offs, range(len(strings)))
        assert code_offs[-1] == len(codes)
