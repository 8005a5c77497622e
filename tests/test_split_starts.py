"""The split plan's merge (native.assemble_splits, the last step of splits.plan_splits) against
the NumPy sort it replaced, kept here as the model: on real plans of random columns (empty
strings, empty blocks, long strings cut), on ties, and on unsorted forged rows (the fallback
sort), both with gathered positions and read by row."""

from __future__ import annotations

import numpy as np
import pytest

from fsstgpu import compress, native, splits
from fsstgpu.scan import long_string_cuts
from fsstgpu.splits import rule2_rows


def model(block_starts, row, code, out, cuts, ncodes, total):
    """Rules 1-3's starts as NumPy computed them before: lexsort by (code, row, block), the
    last of equal code positions, none at or past ncodes."""
    block_starts = np.asarray(block_starts, np.int64)
    row, code, out = (np.asarray(a, np.int64) for a in (row, code, out))
    nblocks = len(block_starts) - 1
    block = np.concatenate([np.arange(nblocks, dtype=np.int64),
                            np.searchsorted(block_starts, row[nblocks:], side="right") - 1])
    cut_code, cut_out, cut_row = (np.asarray(a, np.int64) for a in cuts)
    code = np.concatenate([code, cut_code])
    out = np.concatenate([out, cut_out])
    row = np.concatenate([row, cut_row])
    block = np.concatenate([block, np.searchsorted(block_starts, cut_row, side="right") - 1])
    order = np.lexsort((block, row, code))
    code, out, block = code[order], out[order], block[order]
    keep = np.ones(len(code), bool)
    keep[:-1] = code[1:] != code[:-1]
    keep &= code < ncodes
    return (np.append(code[keep], ncodes), np.append(out[keep], total),
            block[keep].astype(np.uint16))


def same(got, want):
    assert [a.dtype for a in got] == [np.int64, np.int64, np.uint16]
    for g, w in zip(got, want, strict=True):
        assert np.array_equal(g, w)


def random_column(rng):
    """Strings of 0 to 3 bytes mostly, some of thousands (cut), runs of empty ones."""
    out = []
    for _ in range(int(rng.integers(1, 3000))):
        r = rng.random()
        n = (0 if r < 0.3 else int(rng.integers(3000, 20000)) if r < 0.32
             else int(rng.integers(1, 4)))
        out.append(bytes(rng.integers(97, 100, n, dtype=np.uint8)))
    return out


@pytest.mark.parametrize("seed", range(12))
def test_the_merge_is_the_sort_on_real_plans(seed):
    rng = np.random.default_rng(seed)
    carr = compress(random_column(rng), level="fast")
    split_size = int(rng.choice([1, 5, 64, 4096]))
    bs, co, lengths = carr.block_starts, carr.code_offsets, carr.lengths
    # blocks cut anywhere, empty ones too (the merge needs no tables)
    n = len(lengths)
    bs = np.unique(np.r_[0, rng.integers(0, n + 1, int(rng.integers(0, 6))), n])
    bs = np.sort(np.r_[bs, bs[rng.integers(0, len(bs), 2)]])  # repeated starts: empty blocks
    out_offsets = np.r_[0, np.cumsum(lengths)].astype(np.int64)
    cuts = long_string_cuts(carr.tables, carr.block_starts, carr.codes, co, lengths,
                            split_size)
    ncodes, total = int(co[-1]), int(out_offsets[-1])
    row = np.concatenate([bs[:-1], rule2_rows(out_offsets, split_size)])
    want = model(bs, row, co[row], out_offsets[row], cuts, ncodes, total)
    same(native.assemble_splits(bs, row, co[row], out_offsets[row], cuts, ncodes, total), want)
    same(native.assemble_splits(bs, row, co, out_offsets, cuts, ncodes, total, by_row=True),
         want)


@pytest.mark.parametrize("seed", range(30))
def test_forged_rows_in_any_order_give_the_sort(seed):
    """Unsorted rows, cuts and ties (the fallback sort): still the model's answer (block
    starts are non-decreasing wherever they come from; forged ones are the fuzz's)."""
    rng = np.random.default_rng(100 + seed)
    k = int(rng.integers(0, 40))
    bs = np.sort(rng.integers(-2, 30, int(rng.integers(1, 6))))
    row = np.r_[bs[:-1], rng.integers(-3, 35, k)]
    code, out = rng.integers(-2, 12, len(row)), rng.integers(0, 50, len(row))
    cuts = tuple(rng.integers(-2, 12, int(rng.integers(0, 5))) for _ in range(3))
    m = min(len(c) for c in cuts)
    cuts = tuple(c[:m] for c in cuts)
    ncodes, total = int(rng.integers(0, 12)), 77
    same(native.assemble_splits(bs, row, code, out, cuts, ncodes, total),
         model(bs, row, code, out, cuts, ncodes, total))


def test_rows_outside_the_offsets_are_refused():
    empty = (np.zeros(0, np.int64),) * 3
    co = np.arange(5, dtype=np.int64)
    for bad in (5, -1):
        with pytest.raises(ValueError, match="outside the 5 code offsets"):
            native.assemble_splits(np.array([0, 4]), np.array([0, bad]), co, co, empty, 4, 4,
                                   by_row=True)
    with pytest.raises(ValueError, match="a position per row"):
        native.assemble_splits(np.array([0, 4]), np.array([0, 1]), co, co, empty, 4, 4)
    with pytest.raises(ValueError, match="differ in length"):
        native.assemble_splits(np.array([0, 4]), np.array([0]), co[:1], co[:1],
                               (co, co, co[:2]), 4, 4)


@pytest.mark.parametrize("seed", range(20))
def test_one_block_starts_are_the_merge_without_cuts(seed):
    """splits.one_block_starts (the GPU encoder's plan of a column of one block without long
    strings, run here with NumPy) against the merge on real plans: empty strings, repeated
    rule 2 rows, tiny and large split sizes, a last row at the end of the codes."""
    rng = np.random.default_rng(500 + seed)
    strings = [s[:3] for s in random_column(rng)]  # (no string longer than 3 bytes: no cuts)
    carr = compress(strings, level="fast", table=compress(strings, level="fast").tables[0])
    co, lengths = carr.code_offsets, carr.lengths
    out_offsets = np.r_[0, np.cumsum(lengths)].astype(np.int64)
    ncodes, total, n = int(co[-1]), int(out_offsets[-1]), len(lengths)
    if not ncodes:
        return
    empty = (np.zeros(0, np.int64),) * 3
    for split_size in (1, 2, 3, 5, 64, 4096):
        row = np.concatenate([[0], rule2_rows(out_offsets, split_size)]).astype(np.int64)
        want = native.assemble_splits(np.array([0, n]), row, co[row], out_offsets[row], empty,
                                      ncodes, total)
        got = splits.one_block_starts(co[row], out_offsets[row], ncodes, total)
        same((*got, np.zeros(len(got[0]) - 1, np.uint16)), want)
