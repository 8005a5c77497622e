"""Pieces of splits (fsstgpu.kernels.split_pieces): the planned decode's finer units of work,
planned on the host and found by a kernel whose CPU twin is tested here: every piece starts at
a code, decodes to exactly its output range, and the pieces of a split decode to the split."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

import fsstgpu
from fsstgpu.gpu.layout import HostBatch
from fsstgpu.kernels.split_pieces import WINDOW, piece_bytes, plan_pieces, split_pieces_cpu


def _column(seed: int, rows: int) -> pa.Array:
    rng = np.random.default_rng(seed)
    vocab = [b"http://", b"www.", b"example", b".com/", b"\xc3\x9f", b"id=", b"\xff", b"q"]
    out = []
    for _ in range(rows):
        k = int(rng.integers(0, 30))
        word = b"".join(vocab[j] for j in rng.integers(0, len(vocab), k))
        # raw bytes, 0xFF among them: escapes, and escapes of 0xFF
        out.append(word + bytes(rng.integers(200, 256, int(rng.integers(0, 40))).astype(np.uint8)))
    return pa.array(out, pa.binary())


def _decode(codes, sym, lens) -> bytes:
    """A byte-at-a-time FSST decode of ``codes`` with one table (escape 255: a literal)."""
    out, i = bytearray(), 0
    while i < len(codes):
        c = int(codes[i])
        if c == 255:
            out.append(int(codes[i + 1]))
            i += 2
            continue
        out += int(sym[c]).to_bytes(8, "little")[: int(lens[c])]
        i += 1
    return bytes(out)


def _batch(seed: int, rows: int, split_size: int) -> HostBatch:
    carr = fsstgpu.compress(_column(seed, rows), split_size=split_size)
    return HostBatch([carr], lengths="narrow")


@pytest.mark.parametrize("seed", range(6))
def test_pieces_decode_to_their_output_ranges(seed):
    rng = np.random.default_rng(seed)
    lay = _batch(seed, int(rng.integers(50, 1500)), int(rng.choice([512, 4096, 16384])))
    codes = np.concatenate(lay.codes) if lay.codes else np.zeros(0, np.uint8)
    ref = b"".join(_decode(codes[lay.split_codes[k]:lay.split_codes[k + 1]],
                           lay.tab_sym[lay.split_table[k]], lay.tab_len[lay.split_table[k]])
                   for k in range(len(lay.split_table)))
    w = WINDOW * int(rng.integers(1, 4))
    first, table = plan_pieces(lay.split_codes, lay.split_table, w)
    pc, po = split_pieces_cpu(codes, lay.split_codes, lay.split_out, lay.split_table,
                              lay.tab_len, lay.total, first, w)
    assert pc[0] == 0 and pc[-1] == lay.ncodes and po[0] == 0 and po[-1] == lay.total
    assert np.all(np.diff(pc) >= 0) and np.all(np.diff(po) >= 0)
    assert np.array_equal(pc[first[:-1]], lay.split_codes[:-1])
    assert len(first) - 1 < len(table), "nothing was cut: the test proves little"
    for i in range(len(table)):
        piece = _decode(codes[pc[i]:pc[i + 1]], lay.tab_sym[table[i]], lay.tab_len[table[i]])
        assert piece == ref[po[i]:po[i + 1]], f"piece {i}"


def test_a_cut_after_an_escape_moves_past_its_literal():
    lens = np.zeros((1, 256), np.uint8)
    lens[0, 0] = 1
    codes = np.zeros(600, np.uint8)
    codes[255] = codes[256] = 255  # an escape, then the literal 0xFF at the first cut
    codes[511] = 255               # an escape whose literal (0) is the second cut's byte
    sc = np.array([0, 600])
    so = np.array([0, 600 - 2])
    first, _ = plan_pieces(sc, np.zeros(1, np.uint16), 256)
    pc, po = split_pieces_cpu(codes, sc, so, [0], lens, 598, first, 256)
    assert pc.tolist() == [0, 257, 513, 600] and po.tolist() == [0, 256, 511, 598]


@settings(max_examples=60, deadline=None)
@given(st.binary(min_size=0, max_size=1200), st.integers(0, 3), st.integers(1, 3))
def test_corrupt_codes_keep_their_split_whole_or_decode(data, shift, windows):
    """Any bytes: a split either keeps one piece (the decode then judges it) or every piece
    starts at a code and the output positions grow within the split's range."""
    lens = np.zeros((1, 256), np.uint8)
    lens[0, :200] = np.arange(200) % 8 + 1  # codes 200..254 undefined
    codes = np.frombuffer(data, np.uint8)
    sc = np.array([0, shift if shift < len(codes) else 0, len(codes)])
    sc.sort()
    so = np.array([0, 3 * sc[1], 3 * sc[2] + shift])
    first, _ = plan_pieces(sc, np.zeros(2, np.uint16), WINDOW * windows)
    pc, po = split_pieces_cpu(codes, sc, so, [0, 0], lens, int(so[-1]), first, WINDOW * windows)
    assert np.all(np.diff(pc) >= 0) and np.all(np.diff(po) >= 0)
    assert pc[-1] == len(codes) and po[-1] == so[-1]
    assert np.array_equal(pc[first[:-1]], sc[:-1]) and np.array_equal(po[first[:-1]], so[:-1])


def test_piece_bytes_cut_only_long_splits():
    sc = np.array([0, 1000, 1200, 9000])
    assert piece_bytes(sc, 4) == 2304  # 9000 code bytes over 4 warps, in whole windows
    assert piece_bytes(sc, 1) == 0     # 9000 a piece: no split is longer
    with pytest.raises(ValueError):
        plan_pieces(sc, np.zeros(3, np.uint16), 100)
