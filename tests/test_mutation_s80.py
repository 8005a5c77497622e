"""Tests added by the mutation round of session 80 (harness outside the repository): each
guards a change to the ``"fast"`` level's GPU-side planning (:mod:`fsstgpu.gpu.block_tables`,
its CPU twins) or to the checks beside it that no earlier test could see."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import fsstgpu
import fsstgpu.blocks as blocks
from fsstgpu import SymbolTable, native
from fsstgpu.blocks import check_level, fast_blocks, plan_blocks, plan_level
from fsstgpu.gpu.block_tables import fast_block_starts
from fsstgpu.kernels.table_lookups import BUCKETS, CANDIDATES, TABLE_STRIDES
from fsstgpu.limits import MAX_TABLES, check_blocks
from fsstgpu.scan import CHECK, walk


def _fast_starts(column) -> list:
    return fsstgpu.compress(column, level="fast").block_starts.tolist()


def test_fast_block_starts_of_two_chunks_is_two_pieces():
    # guards `len(chunk_lengths) >= 2` (a column of exactly two chunks, each a planning piece
    # of more than 1 MiB, is cut at the chunks' boundary, as compress plans it)
    value = b"x" * 1000
    first, second = pa.array([value] * 1500, pa.binary()), pa.array([value] * 1700, pa.binary())
    offsets = np.arange(0, 3200 * 1000 + 1, 1000, dtype=np.int64)
    got = fast_block_starts(np, offsets, [1500, 1700])
    assert 1500 in got.tolist()
    assert got.tolist() == _fast_starts(pa.chunked_array([first, second]))


def test_a_mark_inside_a_pieces_last_string_cuts_nothing():
    # guards `cut < hi` (a mark that falls inside the piece's last string finds the piece's
    # end, which is no block start: no empty block)
    lengths = [100, 3 << 20]
    offsets = np.array([0, 100, 100 + (3 << 20)], np.int64)
    assert fast_block_starts(np, offsets).tolist() == [0, 2]
    column = pa.array([b"a" * k for k in lengths], pa.binary())
    assert _fast_starts(column) == [0, 2]


def test_check_blocks_takes_exactly_max_tables():
    # guards `count > MAX_TABLES` (MAX_TABLES blocks, a uint16 table index each, are allowed;
    # one more is refused) and MAX_TABLES itself
    check_blocks(MAX_TABLES)
    check_blocks(0)
    with pytest.raises(ValueError, match="65537 blocks; at most 65536"):
        check_blocks(MAX_TABLES + 1)


def test_fast_block_starts_do_not_depend_on_the_first_offset():
    # guards `fast_block_bytes(top - base)` (a piece's size, not its end: offsets from 40 GiB
    # would otherwise get blocks of 2.5 MiB)
    offsets = np.arange(0, 5_000_001, 1000, dtype=np.int64)
    want = [0, 1049, 2098, 3146, 4195, 5000]
    assert fast_block_starts(np, offsets).tolist() == want
    assert fast_block_starts(np, offsets + (40 << 30)).tolist() == want
    chunks = [2000, 3000]  # the second piece starts 2 MB in
    assert fast_block_starts(np, offsets + (40 << 30), chunks).tolist() == \
        fast_block_starts(np, offsets, chunks).tolist()


def _train(offsets, pieces, firsts, data=b"abcdef"):
    return native.train_samples(np.frombuffer(data, np.uint8), np.array(offsets, np.int64),
                                np.array(pieces, np.int64), np.array(firsts, np.int64))


def test_train_samples_takes_two_samples_and_empty_pieces():
    # guards check_samples' `offsets[p] < offsets[p - 1]` (equal offsets, an empty string in
    # a sample, are no decrease) and its per-sample bounds on a valid two-sample input
    packed, lengths, first = _train([0, 3, 0, 0, 1, 1, 3], [0, 2, 7], [0, 3, 6])
    assert len(first) == 3


def test_train_samples_refuses_each_bad_sample_of_several():
    # guards check_samples' checks of the first sample's start (piece_first[0] and
    # byte_first[0] must be 0: a mutant skipping them trained on offsets and bytes after
    # the first), of a sample with no offsets, and of a decrease at a sample's last offset
    # (the loop runs to p1)
    for offsets, pieces, firsts, message in (
            ([5, 0, 6], [1, 3], [0, 6], "cover their bytes"),
            ([0, 5], [0, 2], [1, 6], "cover their bytes"),
            ([0, 3, 0, 3], [0, 2, 2, 4], [0, 3, 3, 6], "sample 1 has no offsets"),
            ([0, 3, 0, 1, 4, 3], [0, 2, 6], [0, 3, 6], "sample 1's offsets decrease"),
            ([0, 4, 3, 0, 3], [0, 3, 5], [0, 3, 6], "sample 0's offsets decrease")):
        with pytest.raises(ValueError, match=message):
            _train(offsets, pieces, firsts)
    # guards the bounds refused by name before any offset is read: byte starts that decrease
    # (a mutant refused them later, as offsets that do not span) and a piece start past the
    # offsets (a mutant read the offset past the end: here a 99 in the same buffer)
    with pytest.raises(ValueError, match="sample 1 has no offsets or lies outside"):
        _train([0, 4, 0, 0, 3], [0, 2, 4, 5], [0, 4, 3, 6])
    beyond = np.array([0, 3, 0, 3, 99], np.int64)
    with pytest.raises(ValueError, match="sample 0 has no offsets or lies outside"):
        native.train_samples(np.frombuffer(b"abcdef", np.uint8), beyond[:4],
                             np.array([0, 5, 4]), np.array([0, 3, 6]))


def _text(nbytes: int, seed: int):
    rng = np.random.default_rng(seed)
    words = [b"alpha", b"beta", b"gamma", b"/usr/lib/", b"0x1f", b" ", b"delta-", b"q"]
    data = b"".join(words[k] for k in rng.integers(0, len(words), nbytes // 4))[:nbytes]
    return np.frombuffer(data, np.uint8), np.arange(0, nbytes + 1, 50, dtype=np.int64)


def test_check_level_refuses_what_only_compares_equal_to_a_level():
    # guards check_level's `not isinstance(level, str)` (a 0-d array equal to "fast" passed
    # `in LEVELS` and came back as an array)
    with pytest.raises(ValueError, match="level must be one of"):
        check_level(np.array("fast"))


@pytest.mark.parametrize("level, planner", [("fast", fast_blocks), ("default", plan_blocks)])
def test_plan_level_passes_sample_bytes_on(level, planner):
    # guards plan_level's `sample_bytes=sample_bytes` to each planner (dropped, every block
    # trained on the level's default sample whatever the caller asked)
    data, offsets = _text(60_000, seed=5)
    got = plan_level(data, offsets, level, sample_bytes=1000)[1]
    want = planner(data, offsets, sample_bytes=1000)[1]
    assert [t.symbols for t in got] == [t.symbols for t in want]
    assert [t.symbols for t in got] != [t.symbols for t in planner(data, offsets)[1]]


def test_plan_level_fast_sizes_blocks_by_the_strings_bytes(monkeypatch):
    # guards `int(offsets[-1]) - int(offsets[0])` (the column's bytes, not its last offset
    # plus its first: offsets from 10000 would otherwise get larger blocks)
    data, offsets = _text(20_000, seed=6)
    monkeypatch.setattr(blocks, "FAST_BLOCK_BYTES", 2000)
    monkeypatch.setattr(blocks, "FAST_MAX_BLOCKS", 10)
    late = offsets[offsets >= 10_000]
    starts = plan_level(data, late, "fast")[0]
    assert starts.tolist() == fast_blocks(data, late, block_bytes=2000)[0].tolist()
    assert len(starts) == 6


def test_walk_ignores_split_out_without_split_codes():
    # guards walk's `split_out = None` where split_codes is None (the compiled walk refuses
    # one without the other)
    codes = np.array([0, 0, 255, 33], np.uint8)
    got = walk([SymbolTable([b"ab"])], [0, 2], codes, code_offsets=np.array([0, 2, 4]),
               lengths=np.array([4, 1]), mode=CHECK, split_out=np.zeros(1, np.int64))
    assert got[1].tolist() == [4, 1]


def test_table_lookups_strides_are_the_encode_kernels():
    # guards BUCKETS and CANDIDATES (the GPU encoder reads the lookups at the .cu file's
    # strides: 1025 buckets or 255 / 257 candidates a table passed every CPU test)
    source = (Path(__file__).parents[1] / "kernels" / "fsst_encode.cu").read_text()
    names = "ENC_BUCKETS|ENC_CAND_STRIDE|ENC_SHORT_STRIDE"
    defined = dict(re.findall(rf"^#define ({names}) (.+?)\s*(?://.*)?$", source, re.M))
    assert int(defined["ENC_BUCKETS"]) == BUCKETS == TABLE_STRIDES["bucket_range"] == 1024
    assert int(defined["ENC_CAND_STRIDE"]) == CANDIDATES == TABLE_STRIDES["cand_lc"] == 256
    assert TABLE_STRIDES["cand_vm"] == 2 * CANDIDATES
    assert defined["ENC_SHORT_STRIDE"] == "(65536 + 256)" and \
        TABLE_STRIDES["short_best"] == 65536 + 256
