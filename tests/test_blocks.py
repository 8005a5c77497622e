"""Block planning of columns larger than one block: planned piece by piece on every core."""

from __future__ import annotations

import os
import time

import numpy as np

from fsstgpu import native
from fsstgpu.blocks import plan_blocks
from fsstgpu.training import train_table


def _mixed(n_runs=24, run=2500, seed=0):
    """Runs of strings of different kinds: words, DNA, numbers, paths."""
    rng = np.random.default_rng(seed)
    words = [b"lorem", b"ipsum", b"dolor", b"sit", b"amet", b"consectetur", b" ", b", "]
    kinds = [
        lambda: b"".join(words[j] for j in rng.integers(0, 8, 6)),
        lambda: bytes(rng.choice(np.frombuffer(b"ACGT", np.uint8), 40)),
        lambda: b"%d.%02d" % (rng.integers(0, 10**6), rng.integers(0, 100)),
        lambda: b"/usr/lib/python3/%x/__init__.py" % rng.integers(0, 1 << 20),
    ]
    items = [kinds[r % 4]() for r in range(n_runs) for _ in range(run)]
    data = np.frombuffer(b"".join(items), np.uint8)
    offsets = np.zeros(len(items) + 1, np.int64)
    np.cumsum([len(s) for s in items], out=offsets[1:])
    return data, offsets


def test_large_column_is_planned_in_pieces_the_same_on_any_core_count(monkeypatch):
    data, offsets = _mixed()
    piece = 256 << 10
    results = []
    for cores in ({0}, {0, 1}, set(range(8))):
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid, c=cores: c, raising=False)
        results.append(plan_blocks(data, offsets, max_block_bytes=piece, segment_bytes=16 << 10))
    (s1, t1), (s2, t2), (s8, t8) = results
    assert np.array_equal(s1, s2) and np.array_equal(s1, s8) and t1 == t2 == t8
    assert s1[0] == 0 and s1[-1] == len(offsets) - 1 and np.all(np.diff(s1) > 0)
    assert len(t1) == len(s1) - 1
    # every piece boundary of the fixed grid starts a block, and no block exceeds a piece
    grid = np.searchsorted(offsets, np.arange(piece, offsets[-1], piece))
    assert set(grid.tolist()) <= set(s1.tolist())
    assert np.diff(offsets[s1]).max() <= piece + 64
    # the kinds change every 2500 strings: the changes inside pieces are found too
    assert len(t1) >= 20


def test_one_piece_column_plans_as_before():
    data, offsets = _mixed(n_runs=4, run=1500)
    whole = plan_blocks(data, offsets, segment_bytes=16 << 10)
    same = plan_blocks(data, offsets, segment_bytes=16 << 10, max_block_bytes=len(data))
    assert np.array_equal(whole[0], same[0]) and whole[1] == same[1]


def test_planned_tables_are_the_tables_their_symbols_make():
    # the planner hands its tables over in canonical order (SymbolTable.from_canonical trusts
    # it): each must equal the table the checking constructor makes of the same symbols, in
    # code order, values and lengths
    from fsstgpu import SymbolTable

    data, offsets = _mixed(n_runs=8, run=1500, seed=3)
    _, tables = plan_blocks(data, offsets, segment_bytes=16 << 10)
    assert len(tables) >= 4
    for t in tables:
        rebuilt = SymbolTable(reversed(t.symbols))
        assert rebuilt == t and rebuilt.symbols == t.symbols
        assert np.array_equal(rebuilt.packed, t.packed) and t.packed.dtype == np.uint64
        assert np.array_equal(rebuilt.lengths, t.lengths) and t.lengths.dtype == np.uint8
        assert not t.packed.flags.writeable and not t.lengths.flags.writeable
        assert SymbolTable.from_bytes(t.to_bytes()) == t


def _paths(n, seed, top):
    """n sorted file paths under a folder tree of `top` (short strings of one vocabulary)."""
    rng = np.random.default_rng(seed)
    parts = [b"%s%d" % (w, k) for w in (b"lib", b"share", b"site", b"doc", b"mod") for k in
             range(6)]
    return sorted(b"/".join([top] + [parts[j] for j in rng.integers(0, len(parts), 4)]) +
                  b".%x" % rng.integers(0, 1 << 12) for _ in range(n))


def test_blocks_cover_the_column_and_each_table_is_trained_on_its_own_block():
    # short strings changing vocabulary at known places: locate estimates each 4 KB piece's
    # cost from a quarter of its strings, then encodes the pieces around the switch whole
    runs = [_paths(9000, 1, b"/usr/lib/python3"), _paths(7000, 2, b"/opt/gcc-cross/x86_64"),
            _paths(9000, 3, b"/usr/lib/python3")]
    items = [p for run in runs for p in run]
    data = np.frombuffer(b"".join(items), np.uint8)
    offsets = np.zeros(len(items) + 1, np.int64)
    np.cumsum([len(p) for p in items], out=offsets[1:])
    starts, tables = plan_blocks(data, offsets)
    assert starts[0] == 0 and starts[-1] == len(items) and np.all(np.diff(starts) > 0)
    assert len(tables) == len(starts) - 1 >= 3
    for k, table in enumerate(tables):
        assert table == train_table(data, offsets[starts[k] : starts[k + 1] + 1])
    # each change starts a block within a 4 KB piece of it
    for change in (9000, 16000):
        at = starts[np.argmin(np.abs(starts - change))]
        assert abs(int(offsets[at]) - int(offsets[change])) <= 4096 + 64


def test_a_huge_thread_count_plans_as_any_other():
    # a column of several pieces ran one task a thread asked for: threads=2**31 - 1 made 2**31
    # tasks, three minutes of locking one mutex (the pool runs 256 threads at most)
    data, offsets = _mixed(n_runs=4, run=500)
    piece = 16 << 10
    want = native.plan_symbols(data, offsets, 4096, segment_bytes=4 << 10,
                               max_block_bytes=piece, threads=2)
    began = time.perf_counter()
    got = native.plan_symbols(data, offsets, 4096, segment_bytes=4 << 10, max_block_bytes=piece,
                              threads=2**31 - 1)
    assert time.perf_counter() - began < 30
    assert all(np.array_equal(a, b) for a, b in zip(got, want, strict=True))
    tables = plan_blocks(data, offsets)[1][:1]
    codes = [native.encode_blocks(tables, data, offsets, np.array([0, len(offsets) - 1]),
                                  threads=t) for t in (1, 2**31 - 1)]
    assert all(np.array_equal(a, b) for a, b in zip(*codes, strict=True))
