"""Long strings encoded in chunks (issue #25): the GPU scheme's CPU twins against the CPU
encoder and against FSST's definition, on tables whose parses from nearby entries never meet
("aa" over "aaaa..."), tables with escapes and real text; then the GPU kernels (marker ``gpu``)
against these twins. ``compress_device`` of long strings: ``tests/test_gpu_encode.py``."""

from __future__ import annotations

import numpy as np
import pytest

from fsstgpu import SymbolTable, native, train
from fsstgpu.datasets import load_lines
from fsstgpu.kernels.encode_chunks import (
    ChunkPlan,
    chunk_bounds,
    chunk_maps_cpu,
    encode_chunked_cpu,
    plan_chunks,
    resolve_entries,
    valid_lengths,
)
from fsstgpu.kernels.fsst_encode import chunk_maps_on_device, encode_on_device
from fsstgpu.scan import long_string_cuts
from fsstgpu.testing import greedy_encode

POISON = 0xAB
#: string sizes of the GPU rounds: around the 64-byte chunk and over 1024-byte ones
GPU_SIZES = (0, 5, 64, 65, 1000, 5000)
ALPHABET = np.frombuffer(b"aabab\xffc\x00", np.uint8)


def adversarial_tables(rng) -> list[SymbolTable]:
    """Tables whose parses from neighbouring entries stay apart ("aa", eight a's: 2 and 8
    parses of a run of a's), overlap ("ab" / "ba" / "bab") or escape (random symbols over
    part of the alphabet)."""
    syms: set[bytes] = set()
    while len(syms) < 200:
        syms.add(bytes(rng.choice(ALPHABET[:5], int(rng.integers(1, 9)))))
    return [SymbolTable([b"aa"]), SymbolTable([b"aaaaaaaa", b"aaa", b"b"]),
            SymbolTable([b"ab", b"ba", b"aba", b"bab", b"abab", b"babab", b"x"]),
            SymbolTable(sorted(syms))]


def random_strings(rng, n: int, sizes=(0, 3, 200, 1000, 3000)):
    values = [bytes(rng.choice(ALPHABET, int(rng.choice(sizes)))) for _ in range(n)]
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum([len(v) for v in values], out=offsets[1:])
    return np.frombuffer(b"".join(values), np.uint8), offsets


def cpu_encoder(table, data, offsets, validity=None):
    """The CPU encoder's codes and code offsets, null strings without codes."""
    n = len(offsets) - 1
    if validity is not None:
        valid = np.unpackbits(validity, bitorder="little")[:n].astype(bool)
        parts = [data[offsets[i] : offsets[i + 1]] for i in np.flatnonzero(valid)]
        lengths = np.where(valid, np.diff(offsets), 0)
        offsets = np.zeros(n + 1, np.int64)
        np.cumsum(lengths, out=offsets[1:])
        data = np.concatenate(parts) if parts else data[:0]
    return native.encode_blocks([table], data, offsets, np.array([0, n], np.int64))


def random_case(rng, tables, round_: int, sizes=(0, 3, 200, 1000, 3000)):
    """Round ``round_``'s table (in turn), strings and validity (every third round)."""
    table = tables[round_ % len(tables)]
    data, offsets = random_strings(rng, int(rng.integers(1, 30)), sizes)
    validity = None
    if round_ % 3 == 0:
        validity = np.packbits(rng.random(len(offsets) - 1) < 0.7, bitorder="little")
    return table, data, offsets, validity


def test_chunked_scheme_equals_the_cpu_encoder(fresh_rng):
    rng = fresh_rng
    tables = adversarial_tables(rng)
    for round_ in range(80):
        table, data, offsets, validity = random_case(rng, tables, round_)
        chunk = int(rng.choice([64, 100, 256]))
        long_min = chunk + int(rng.integers(0, 300))
        codes, code_offsets = encode_chunked_cpu(table, data, offsets, validity,
                                                 long_min=long_min, chunk=chunk)
        want_codes, want_offsets = cpu_encoder(table, data, offsets, validity)
        assert codes.tobytes() == want_codes.tobytes()
        assert np.array_equal(code_offsets, want_offsets)


def _cuts_of_the_cpu(table, codes, code_offsets, lengths, cut_size):
    """long_string_cuts' cuts with their output positions made places in their strings."""
    n = len(lengths)
    code, out, rows = long_string_cuts([table], np.array([0, n]), codes, code_offsets, lengths,
                                       cut_size)
    starts = np.concatenate([[0], np.cumsum(lengths)])
    return code.tolist(), (out - starts[rows]).tolist(), rows.tolist()


def test_chunked_scheme_finds_the_cpu_cuts(fresh_rng):
    """The write pass's cuts every cut_size bytes inside long strings, one slot a multiple,
    against the CPU's walk (fsstgpu.scan.long_string_cuts)."""
    rng = fresh_rng
    tables = adversarial_tables(rng)
    for round_ in range(60):
        table, data, offsets, validity = random_case(rng, tables, round_,
                                                     (0, 3, 64, 200, 1000, 3000))
        chunk = int(rng.choice([64, 100]))
        cut_size = chunk + int(rng.integers(0, 300))
        long_min = int(rng.integers(chunk, cut_size + 1))
        codes, code_offsets, cuts = encode_chunked_cpu(table, data, offsets, validity,
                                                       long_min=long_min, chunk=chunk,
                                                       cut_size=cut_size)
        lengths = valid_lengths(np, offsets, validity)
        want = _cuts_of_the_cpu(table, codes, code_offsets, lengths, cut_size)
        assert [c.tolist() for c in cuts] == list(want)
    with pytest.raises(ValueError, match="every string longer in chunks"):
        encode_chunked_cpu(table, data, offsets, long_min=200, chunk=64, cut_size=100)


def test_chunked_scheme_on_real_text(dbtext_paths, fresh_rng):
    """dbtext files as a few long strings (lines joined), the table trained on their lines."""
    rng = fresh_rng
    for path in dbtext_paths[:8]:
        lines = load_lines(path, binary=True)
        table = train(lines)
        raw = np.frombuffer(lines.buffers()[2], np.uint8)[: 200_000]
        cuts = np.sort(rng.integers(0, len(raw), 6))
        offsets = np.concatenate([[0], cuts, [len(raw)]]).astype(np.int64)
        codes, code_offsets = encode_chunked_cpu(table, raw, offsets)
        want_codes, want_offsets = cpu_encoder(table, raw, offsets)
        assert codes.tobytes() == want_codes.tobytes()
        assert np.array_equal(code_offsets, want_offsets)


def test_chunk_maps_follow_fsst_definition(fresh_rng):
    """Each entry's exit and codes by the plain-Python greedy parse of FSST's definition."""
    rng = fresh_rng
    for table in adversarial_tables(rng):
        data, offsets = random_strings(rng, 4, sizes=(300, 700))
        plan = plan_chunks(np, offsets, long_min=200, chunk=64)
        exits, counts = chunk_maps_cpu(table, data, offsets, plan)
        s, e, end = chunk_bounds(np, plan, offsets)
        first = plan.chunk_index(np) == 0
        lengths = dict(zip(table.symbols, table.lengths, strict=True))
        for g in rng.choice(plan.count, 12):
            for j in range(8):
                start = int(s[g]) + (0 if first[g] else j)
                parsed = greedy_encode(table, bytes(data[start : int(end[g])]))
                pos, t = start, 0
                while pos < e[g]:
                    step = 1 if parsed[t] == 255 else int(lengths[table.symbols[parsed[t]]])
                    t, pos = t + (2 if parsed[t] == 255 else 1), pos + step
                assert (int(exits[g, j]), int(counts[g, j])) == (pos - int(e[g]), t)


def test_resolve_entries_walks_each_string(fresh_rng):
    """The scan's entries equal walking each string's maps chunk by chunk."""
    rng = fresh_rng
    for _ in range(50):
        nchunks = rng.integers(0, 40, int(rng.integers(1, 8)))
        ends = np.cumsum(nchunks)
        count = int(ends[-1])
        if count == 0:
            continue
        plan = ChunkPlan(64, nchunks, ends - nchunks,
                         np.searchsorted(ends, np.arange(count), side="right"), count,
                         int(nchunks.max()))
        exits = rng.integers(0, 8, (count, 8)).astype(np.uint8)
        counts = rng.integers(0, 1000, (count, 8)).astype(np.int32)
        first = plan.chunk_index(np) == 0
        exits[first] = exits[first, :1]  # a string's first chunk: one entry
        entries, codes = resolve_entries(np, plan, exits, counts)
        entry = 0
        for g in range(count):
            entry = 0 if first[g] else entry
            assert (entries[g], codes[g]) == (entry, counts[g, entry])
            entry = int(exits[g, entry])


def test_plan_chunks_checks_its_sizes():
    offsets = np.array([0, 10_000])
    for chunk, long_min in ((32, 4096), (1024, 1000), (1 << 20, 1 << 28)):
        with pytest.raises(ValueError, match="chunks of at least 64"):
            plan_chunks(np, offsets, long_min=long_min, chunk=chunk)
    assert plan_chunks(np, np.array([0, 5, 9]), long_min=64, chunk=64) is None
    assert plan_chunks(np, np.array([0]), long_min=64, chunk=64) is None
    nulls = plan_chunks(np, np.array([0, 500, 1000]), np.array([0b10], np.uint8), long_min=64,
                        chunk=64)
    assert nulls.nchunks.tolist() == [0, 7] and nulls.count == 7


# ---------------------------------------------------------------- GPU
@pytest.mark.gpu
def test_gpu_chunk_maps_equal_the_twins(fresh_rng):
    """fsst_encode_chunks_count's exits and codes from all 8 entries (outputs poisoned)
    against chunk_maps_cpu, on tables whose entries' parses never meet and on ones that do."""
    import cupy as cp

    rng = fresh_rng
    for round_ in range(6):
        for table in adversarial_tables(rng):
            data, offsets = random_strings(rng, int(rng.integers(1, 12)))
            chunk = int(rng.choice([64, 100, 1024]))
            long_min = chunk + int(rng.integers(0, 400))
            plan = plan_chunks(np, offsets, long_min=long_min, chunk=chunk)
            if plan is None:
                continue
            d_data, d_offsets = cp.asarray(data), cp.asarray(offsets)
            d_plan = plan_chunks(cp, d_offsets, long_min=long_min, chunk=chunk)
            exits, counts = chunk_maps_on_device(table, d_data, d_offsets, d_plan)
            want_exits, want_counts = chunk_maps_cpu(table, data, offsets, plan)
            assert np.array_equal(exits.get(), want_exits), round_
            assert np.array_equal(counts.get(), want_counts), round_


@pytest.mark.gpu
def test_gpu_long_strings_equal_the_cpu_encoders(fresh_rng):
    """encode_on_device with long strings in chunks of 64-1024 bytes, and with one thread a
    string (long_min=None), against the CPU encoder: codes poisoned first, padding zero, nulls
    over long byte ranges."""
    import cupy as cp

    rng = fresh_rng
    tables = adversarial_tables(rng)
    for round_ in range(40):
        table, data, offsets, validity = random_case(rng, tables, round_, GPU_SIZES)
        want_codes, want_offsets = cpu_encoder(table, data, offsets, validity)
        chunk = int(rng.choice([64, 100, 1024]))
        for long_min in (None, chunk + int(rng.integers(0, 300))):
            codes, code_offsets = encode_on_device(
                table, cp.asarray(data), cp.asarray(offsets),
                None if validity is None else cp.asarray(validity), fill=POISON, padded=True,
                long_min=long_min, chunk=chunk)
            assert codes.get().tobytes() == want_codes.tobytes(), (round_, long_min)
            assert np.array_equal(code_offsets.get(), want_offsets), (round_, long_min)
            padding = codes.base if codes.base is not None else codes
            assert not padding[codes.size :].any()


@pytest.mark.gpu
def test_gpu_encode_refuses_chunks_it_cannot_make_without_long_strings():
    # the stage kernel divides a long string's bytes by the chunk size: the launcher checks the
    # sizes before it, also where no string turns out long (chunk_counts, which checked them
    # before, now runs only where some string is)
    import cupy as cp

    table = SymbolTable([b"ab"])
    data, offsets = cp.asarray(np.frombuffer(b"ab" * 100, np.uint8)), cp.asarray([0, 50, 200])
    for long_min, chunk in ((100, 0), (100, 10), (100, 101)):
        with pytest.raises(ValueError, match="chunks of at least 64"):
            encode_on_device(table, data, offsets, long_min=long_min, chunk=chunk)


@pytest.mark.gpu
def test_gpu_write_pass_finds_the_cpu_cuts(fresh_rng):
    """encode_on_device(..., cut_size=) against the CPU's walk of the CPU encoder's codes;
    under 64 bytes it leaves the cuts to the host (None)."""
    import cupy as cp

    rng = fresh_rng
    tables = adversarial_tables(rng)
    for round_ in range(24):
        table, data, offsets, validity = random_case(rng, tables, round_, GPU_SIZES)
        want_codes, want_offsets = cpu_encoder(table, data, offsets, validity)
        lengths = valid_lengths(np, offsets, validity)
        for cut_size in (40, 64, int(rng.integers(64, 2000)), 4096):
            codes, code_offsets, cuts = encode_on_device(
                table, cp.asarray(data), cp.asarray(offsets),
                None if validity is None else cp.asarray(validity), fill=POISON,
                cut_size=cut_size)
            assert codes.get().tobytes() == want_codes.tobytes(), (round_, cut_size)
            if cut_size < 64:
                assert cuts is None
                continue
            want = _cuts_of_the_cpu(table, want_codes, want_offsets, lengths, cut_size)
            assert [c.get().tolist() for c in cuts] == list(want), (round_, cut_size)
