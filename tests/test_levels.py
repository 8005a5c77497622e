"""Compression levels (``fsstgpu.blocks.LEVELS``): the "fast" level's blocks and tables, its
round trips on real and random text, and a bad level refused wherever a level is taken."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import fsstgpu
from fsstgpu import native
from fsstgpu.blocks import (
    FAST_EXTRA_ROUNDS,
    FAST_SAMPLE_BYTES,
    LEVELS,
    fast_blocks,
    plan_blocks,
    plan_level,
)
from fsstgpu.cli.app import app
from fsstgpu.formats import blob, compress_file, decompress_file
from fsstgpu.symbol_table import SymbolTable
from fsstgpu.training import SEED


def _words(n, seed):
    """``n`` strings of 0-60 random words, empty strings among them (data, offsets)."""
    rng = np.random.default_rng(seed)
    vocab = [b"alpha", b"beta", b"gamma", b"/usr/lib/", b"0x1f", b" ", b"\xc3\xa9t\xc3\xa9"]
    items = [b"".join(vocab[j] for j in rng.integers(0, len(vocab), rng.integers(0, 60)))
             for _ in range(n)]
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum([len(s) for s in items], out=offsets[1:])
    return np.frombuffer(b"".join(items), np.uint8), offsets


@pytest.mark.parametrize("block_bytes", [1, 700, 4096, 1 << 20])
def test_fast_blocks_cut_every_block_bytes_and_train_each_block_alone(block_bytes):
    data, offsets = _words(3000, seed=block_bytes)
    starts, tables = fast_blocks(data, offsets, block_bytes=block_bytes)
    n = len(offsets) - 1
    assert starts[0] == 0 and starts[-1] == n and np.all(np.diff(starts) > 0)
    assert len(tables) == len(starts) - 1
    # a block starts at the first string ending at or past each multiple of block_bytes
    marks = np.arange(block_bytes, offsets[-1], block_bytes)
    expect = np.unique(np.concatenate([[0], np.searchsorted(offsets, marks), [n]]))
    assert starts.tolist() == expect.tolist()
    # each table is the trainer's on its block alone, with the fast budget
    for b in range(0, len(tables), max(1, len(tables) // 7)):
        lo, hi = int(starts[b]), int(starts[b + 1])
        if offsets[hi] == offsets[lo]:
            assert len(tables[b]) == 0
            continue
        values, lengths = native.train_symbols(data, offsets, lo, hi, FAST_SAMPLE_BYTES, SEED,
                                               FAST_EXTRA_ROUNDS)
        raw = values.astype("<u8").tobytes()
        want = SymbolTable([raw[8 * i : 8 * i + m] for i, m in enumerate(lengths.tolist())])
        assert tables[b] == want


def test_fast_blocks_are_the_same_on_any_core_count(monkeypatch):
    data, offsets = _words(6000, seed=5)
    results = []
    for cores in ({0}, {0, 1}, set(range(8))):
        monkeypatch.setattr(os, "sched_getaffinity", lambda pid, c=cores: c, raising=False)
        results.append(fast_blocks(data, offsets, block_bytes=9000))
    (s1, t1), (s2, t2), (s8, t8) = results
    assert len(t1) > 10
    assert np.array_equal(s1, s2) and np.array_equal(s1, s8) and t1 == t2 == t8


def test_fast_blocks_of_nothing_and_bad_arguments():
    starts, tables = fast_blocks(np.zeros(0, np.uint8), np.zeros(1, np.int64))
    assert starts.tolist() == [0, 0] or starts.tolist() == [0]
    empties = fast_blocks(np.zeros(0, np.uint8), np.zeros(4, np.int64))
    assert empties[0][-1] == 3 and all(len(t) == 0 for t in empties[1])
    data, offsets = _words(10, seed=1)
    for bad in (0, -5):
        with pytest.raises(ValueError, match="block_bytes must be positive"):
            fast_blocks(data, offsets, block_bytes=bad)
    with pytest.raises(ValueError, match="non-decreasing"):
        fast_blocks(data, offsets[::-1].copy())


def test_a_huge_column_gets_larger_fast_blocks(monkeypatch):
    # past FAST_MAX_BLOCKS MiB the blocks grow, so the column stays within MAX_TABLES tables
    import fsstgpu.blocks as blocks

    data, offsets = _words(20_000, seed=3)
    monkeypatch.setattr(blocks, "FAST_BLOCK_BYTES", 2000)
    monkeypatch.setattr(blocks, "FAST_MAX_BLOCKS", 10)
    starts, tables = plan_level(data, offsets, "fast")
    assert len(tables) <= 10 and len(tables) >= 9
    monkeypatch.setattr(blocks, "FAST_MAX_BLOCKS", 10**6)
    assert len(plan_level(data, offsets, "fast")[1]) == -(-int(offsets[-1]) // 2000)


def test_plan_level_picks_the_planner():
    data, offsets = _words(2000, seed=2)
    fast = plan_level(data, offsets, "fast")
    default = plan_level(data, offsets, "default")
    assert [t.to_bytes() for t in fast[1]] == [t.to_bytes() for t in fast_blocks(data, offsets)[1]]
    assert [t.to_bytes() for t in default[1]] == [t.to_bytes()
                                                  for t in plan_blocks(data, offsets)[1]]
    assert LEVELS == ("fast", "default")


@pytest.mark.parametrize("make", [
    lambda: pa.array(["x" * (k % 50) if k % 7 else None for k in range(5000)]),
    lambda: pa.chunked_array([["ab", None, "abc" * 300], [], ["q"] * 1000], pa.large_string()),
    lambda: pa.array([b"\x00\xff" * (k % 9) for k in range(3000)], pa.binary_view()),
    lambda: pa.array([], pa.string()),
    lambda: pa.array([None, None], pa.string()),
])
def test_fast_level_round_trips(make):
    col = make()
    carr = fsstgpu.compress(col, level="fast")
    back = fsstgpu.decompress(carr, device="cpu")
    assert back.equals(col)
    # what a blob stores decodes to the same column
    assert fsstgpu.decompress(blob.loads(blob.dumps(carr)), device="cpu").equals(col)


def test_fast_level_on_dbtext_tracks_changing_text(dbtext_paths):
    # the 22 files as one column: a table per MiB follows the text from file to file, where
    # one table for the column cannot (measured: ratio 1.45 -> 2.0, BENCHMARKS.md section 19)
    lines = []
    for path in dbtext_paths:
        lines += path.read_bytes().split(b"\n")[:-1]
    col = pa.array(lines, pa.large_binary())
    fast = fsstgpu.compress(col, level="fast")
    one = fsstgpu.compress(col, table=fsstgpu.train(col, sample_bytes=FAST_SAMPLE_BYTES))
    default = fsstgpu.compress(col)
    assert fsstgpu.decompress(fast, device="cpu").equals(col)
    assert fast.stats()["ratio"] > 1.2 * one.stats()["ratio"]
    assert default.stats()["ratio"] >= fast.stats()["ratio"]
    string_bytes = sum(len(s) for s in lines)
    assert len(fast.tables) == pytest.approx(string_bytes / (1 << 20), abs=1.5)


def test_fast_level_through_tables_streams_and_the_codec():
    urls = pa.array([f"http://example.com/{k}/{'ab' * (k % 5)}" for k in range(4000)])
    t = pa.table({"u": urls, "l": pa.array([[s] for s in urls.to_pylist()[:4000]]),
                  "n": range(4000)})
    out = fsstgpu.compress_table(t, level="fast")
    assert fsstgpu.decompress_table(out, device="cpu").equals(t)
    codec = fsstgpu.Codec(device="cpu", level="fast")
    assert codec.decode(codec.encode(urls)).equals(urls)


def test_fast_level_files_round_trip_and_a_bad_level_writes_nothing(tmp_path):
    t = pa.table({"s": [f"row {k} of the text" for k in range(20000)]})
    src = tmp_path / "in.parquet"
    pq.write_table(t, src, row_group_size=5000)
    for codec in ("zstd", "none"):  # one table per retraining / blocks per row group
        dst = tmp_path / f"fast-{codec}.parquet"
        info = compress_file(src, dst, level="fast", parquet_codec=codec)
        assert info["codes_bytes"] < info["string_bytes"]
        decompress_file(dst, tmp_path / f"back-{codec}.parquet", device="cpu")
        assert pq.read_table(tmp_path / f"back-{codec}.parquet").equals(t)
    with pytest.raises(ValueError, match="level must be one of 'fast', 'default'"):
        compress_file(src, tmp_path / "bad.parquet", level="fastest")
    assert not (tmp_path / "bad.parquet").exists()


@pytest.mark.parametrize("call", [
    lambda col: fsstgpu.compress(col, level="turbo"),
    lambda col: fsstgpu.compress(pa.table({"s": col}), level=1),
    lambda col: fsstgpu.Codec(device="cpu", level="Fast"),
    lambda col: fsstgpu.columns.ColumnStream(level=None),
])
def test_a_bad_level_is_refused_naming_the_levels(call):
    with pytest.raises(ValueError, match="level must be one of 'fast', 'default'"):
        call(pa.array(["a", "b"]))


def test_cli_compress_level(tmp_path):
    runner = CliRunner()
    t = pa.table({"s": [f"line {k}, some words" for k in range(3000)]})
    src = tmp_path / "in.parquet"
    pq.write_table(t, src)
    done = runner.invoke(app, ["compress", str(src), str(tmp_path / "c.parquet"), "--level",
                               "fast", "--no-progress"])
    assert done.exit_code == 0, done.stderr
    back = runner.invoke(app, ["decompress", str(tmp_path / "c.parquet"),
                               str(tmp_path / "b.parquet"), "--device", "cpu", "--no-progress"])
    assert back.exit_code == 0, back.stderr
    assert pq.read_table(tmp_path / "b.parquet").equals(t)
    bad = runner.invoke(app, ["compress", str(src), str(tmp_path / "x.parquet"), "--level",
                              "turbo"])
    assert bad.exit_code == 2 and "turbo" in bad.stderr and "fast" in bad.stderr
    assert not (tmp_path / "x.parquet").exists()
