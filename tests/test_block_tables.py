"""The ``"fast"`` level's blocks and tables as the GPU path plans them
(:mod:`fsstgpu.gpu.block_tables`), run on the CPU: the cuts found by one search of the
offsets, each block's sample (the twin of the GPU's gather) and the tables trained from the
samples in one call are those of ``fsstgpu.compress(column, level="fast")``; and the many
tables' lookups (:func:`~fsstgpu.kernels.table_lookups.encode_lookups_many`) are each table's
own, so a string's greedy parse through its block's rows gives the CPU encoder's codes."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import fsstgpu
from fsstgpu import SymbolTable, native
from fsstgpu.arrow_layout import from_arrow
from fsstgpu.blocks import FAST_SAMPLE_BYTES
from fsstgpu.gpu.block_tables import fast_block_starts, tables_of_samples
from fsstgpu.inputs import as_string_column
from fsstgpu.kernels.fsst_sample import sample_blocks_cpu
from fsstgpu.kernels.table_lookups import encode_lookups, encode_lookups_many

sys.path.insert(0, str(Path(__file__).parent))
from fast_columns import fast_column  # noqa: E402


def _planned(column, sample_bytes=None):
    plain = from_arrow(as_string_column(column))
    starts = fast_block_starts(np, plain.offsets, plain.chunk_lengths)
    target = FAST_SAMPLE_BYTES if sample_bytes is None else sample_bytes
    tables = tables_of_samples(*sample_blocks_cpu(plain.data, plain.offsets, starts, target))
    return plain, starts, tables


@pytest.mark.parametrize("chunks", [1, 7])
@pytest.mark.parametrize("nbytes", [0, 5000, 40_000, 3_300_000])
def test_fast_plan_is_the_cpu_levels(fresh_rng, nbytes, chunks):
    column = fast_column(fresh_rng, nbytes, chunks=chunks)
    plain, starts, tables = _planned(column)
    want = fsstgpu.compress(column, level="fast")
    want_starts, want_tables = want.block_starts, want.tables
    assert starts.tolist() == want_starts.tolist()
    assert [t.symbols for t in tables] == [t.symbols for t in want_tables]


def test_fast_plan_of_chunks_of_a_few_strings_and_empty_ones(fresh_rng):
    """Chunks below a planning piece's MiB are joined; empty chunks make empty pieces."""
    column = fast_column(fresh_rng, 2_500_000)
    parts = [column.chunk(0).slice(a, b - a) for a, b in ((0, 10), (10, 10), (10, 5000),
                                                         (5000, len(column)))]
    chunked = pa.chunked_array(parts + [column.chunk(0).slice(0, 0)])
    plain, starts, tables = _planned(chunked, sample_bytes=3000)
    want = fsstgpu.compress(chunked, level="fast", sample_bytes=3000)
    want_starts, want_tables = want.block_starts, want.tables
    assert starts.tolist() == want_starts.tolist()
    assert [t.symbols for t in tables] == [t.symbols for t in want_tables]


def test_train_samples_refuses_offsets_that_do_not_span_the_bytes():
    data = np.frombuffer(b"abcdef", np.uint8)
    for offsets, pieces, firsts in (([1, 6], [0, 2], [0, 6]), ([0, 5], [0, 2], [0, 6]),
                                    ([0, 4, 3, 6], [0, 4], [0, 6]), ([0, 6], [0, 1], [0, 6]),
                                    ([0, 6], [0, 2], [0, 5])):
        with pytest.raises(ValueError):
            native.train_samples(data, np.array(offsets), np.array(pieces), np.array(firsts))


def _random_table(rng) -> SymbolTable:
    syms = {bytes(rng.integers(0, 256, int(rng.integers(1, 9)), dtype=np.uint8))
            for _ in range(int(rng.integers(0, 300)))}
    stem = bytes(rng.integers(0, 256, 3, dtype=np.uint8))  # candidates sharing a bucket
    syms |= {stem + bytes(rng.integers(0, 256, k, dtype=np.uint8)) for k in range(6)}
    return SymbolTable(sorted(syms)[:255])


def test_many_tables_lookups_are_each_tables(fresh_rng):
    tables = [_random_table(fresh_rng) for _ in range(6)] + [SymbolTable([])]
    many = encode_lookups_many(tables)
    for t, table in enumerate(tables):
        one = encode_lookups(table)
        k = len(one["cand_lc"])
        assert np.array_equal(many["short_best"][t], one["short_best"])
        assert np.array_equal(many["bucket_range"][t], one["bucket_range"])
        assert np.array_equal(many["cand_lc"][t, :k], one["cand_lc"])
        assert np.array_equal(many["cand_vm"][t, : 2 * k], one["cand_vm"])
        assert not many["cand_lc"][t, k:].any() and not many["cand_vm"][t, 2 * k :].any()


def _parse(look: dict, t: int, s: bytes) -> list[int]:
    """The kernel's greedy parse through table ``t``'s rows of the many tables' lookups."""
    out, i = [], 0
    while i < len(s):
        rem = len(s) - i
        w = int.from_bytes(s[i : i + 8].ljust(8, b"\0"), "little")
        best = int(look["short_best"][t, w & 0xFFFF if rem >= 2 else 65536 + (w & 0xFF)])
        code, length = best & 0xFF, best >> 8
        if rem >= 3:
            r = int(look["bucket_range"][t, ((w & 0xFFFFFF) * 0x9E3779B1 & 0xFFFFFFFF) >> 22])
            for j in range(r & 0xFFFF, r >> 16):
                lc = int(look["cand_lc"][t, j])
                val, mask = (int(v) for v in look["cand_vm"][t, 2 * j : 2 * j + 2])
                if lc & 0xFF <= rem and w & mask == val:
                    code, length = lc >> 8, lc & 0xFF
                    break
        out += [code] if length else [255, s[i]]
        i += max(length, 1)
    return out


def test_a_parse_through_each_blocks_rows_is_the_cpu_encoders(fresh_rng):
    rng = fresh_rng
    tables = [_random_table(rng) for _ in range(4)]
    look = encode_lookups_many(tables)
    strings = []
    for _ in range(400):
        syms = list(tables[int(rng.integers(0, 4))].symbols) or [b"x"]
        strings.append(b"".join(syms[int(k)] for k in rng.integers(0, len(syms), 6)))
    data = np.frombuffer(b"".join(strings), np.uint8)
    offsets = np.zeros(len(strings) + 1, np.int64)
    np.cumsum([len(s) for s in strings], out=offsets[1:])
    starts = np.array([0, 100, 100, 250, 400])  # an empty block among them
    codes, code_offsets = native.encode_blocks(tables, data, offsets, starts)
    for i, s in enumerate(strings):
        t = int(np.searchsorted(starts, i, side="right")) - 1  # the kernel's enc_table_of
        assert _parse(look, t, s) == codes[code_offsets[i] : code_offsets[i + 1]].tolist()


@pytest.mark.parametrize("length", [1024, 4096])
def test_fast_cuts_on_string_boundaries(fresh_rng, length):
    """Marks that fall on a string's start cut there (the search's left side)."""
    n = (3 << 20) // length + 5
    values = [bytes(fresh_rng.integers(97, 100, length, dtype=np.uint8)) for _ in range(n)]
    column = pa.array(values, pa.binary())
    plain, starts, tables = _planned(column)
    want = fsstgpu.compress(column, level="fast")
    want_starts, want_tables = want.block_starts, want.tables
    assert starts.tolist() == want_starts.tolist()
    assert len(starts) == 5
    assert [t.symbols for t in tables] == [t.symbols for t in want_tables]


def _laid_end_to_end(tables) -> tuple:
    first = np.zeros(len(tables) + 1, np.int64)
    np.cumsum([len(t.lengths) for t in tables], out=first[1:])
    return (np.concatenate([t.packed for t in tables] + [np.zeros(0, np.uint64)]),
            np.concatenate([t.lengths for t in tables] + [np.zeros(0, np.uint8)]), first)


def test_table_lookups_are_the_same_at_every_thread_count(fresh_rng):
    tables = [_random_table(fresh_rng) for _ in range(40)]  # several tasks of 16 tables
    one, *rest = (native.table_lookups(*_laid_end_to_end(tables), threads=k) for k in (1, 2, 5))
    for other in rest:
        assert all(np.array_equal(a, b) for a, b in zip(one, other, strict=True))


def test_table_lookups_refuse_what_no_symbol_table_holds():
    packed, lengths, first = _laid_end_to_end([SymbolTable([b"a", b"bc", b"http"]),
                                               SymbolTable([b"x", b"yz"])])
    native.table_lookups(packed, lengths, first)  # (the valid call)

    def refused(p=packed, ln=lengths, f=first, match=None):
        with pytest.raises(ValueError, match=match):
            native.table_lookups(p, ln, f)

    for bad in (0, 9):
        refused(ln=np.where(np.arange(len(lengths)) == 1, bad, lengths).astype(np.uint8),
                match="table 0's symbol 1 is not 1-8 bytes")
    refused(p=packed | np.uint64(1 << 40) * (np.arange(len(packed)) == 4),
            match="table 1's symbol 1 has bytes past its length")
    refused(p=packed[[1, 0, 2, 3, 4]].copy(), ln=lengths[[1, 0, 2, 3, 4]].copy(),
            match="table 0's symbol 1 is out of canonical order")
    twice = [0, 1, 1, 3, 4]  # b"bc" twice, where b"http" was
    refused(p=packed[twice].copy(), ln=lengths[twice].copy(), match="symbol 2 is out of "
            "canonical order \\(or twice\\)")
    for f in ([0, 3, 4], [1, 3, 5], [0, 4, 3, 5], [0, 3, 6]):
        refused(f=np.array(f, np.int64))
    wide = SymbolTable([bytes([a, b]) for a in range(16) for b in range(16)][:255])
    p2, l2, _ = _laid_end_to_end([wide, SymbolTable([b"q"])])
    refused(p=p2, ln=l2, f=np.array([0, 256, 256]), match="over 255")
