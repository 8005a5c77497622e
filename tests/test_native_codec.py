"""The compiled codec (fsstgpu.native) against plain oracles, byte for byte: the encoder against
fsstgpu.testing.greedy_encode, the decoder and the UTF-8 check against plain-Python decoding; on
every instruction set the machine has; and a sanitizer build fuzzed in a subprocess."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings, strategies as st

import fsstgpu
from fsstgpu import CorruptDataError, SymbolTable, _native, decoder, native, utf8
from fsstgpu.arrow_layout import from_arrow
from fsstgpu.datasets import load_lines
from fsstgpu.memory import pool_empty
from fsstgpu.symbol_table import pack_tables
from fsstgpu.testing import greedy_encode
from fsstgpu.training import train_table

ISAS = native.supported_isas()
HERE = Path(__file__).resolve().parent


@pytest.fixture(params=ISAS)
def isa(request, monkeypatch):
    """Each instruction set the CPU supports, in turn (FSSTGPU_ISA is read on every call)."""
    monkeypatch.setenv("FSSTGPU_ISA", request.param)
    assert native.isa() == request.param
    return request.param


def _offsets(items):
    data = np.frombuffer(b"".join(items), np.uint8)
    offs = np.zeros(len(items) + 1, np.int64)
    np.cumsum([len(s) for s in items], out=offs[1:])
    return data, offs


def assert_same_encoding(tables, data, offs, block_starts, threads=(1, 2, 7), budget=1 << 18):
    """The compiled encoder against greedy_encode (plain Python: the oracle): the same codes
    whatever the thread count, and each block's strings greedy-encoded with its table: all of
    them while they hold fewer than ``budget`` bytes, else random ones up to that many bytes
    (greedy_encode takes ~0.7 us a byte)."""
    codes, code_offs = native.encode_blocks(tables, data, offs, block_starts, threads=threads[0])
    for t in threads[1:]:
        c, o = native.encode_blocks(tables, data, offs, block_starts, threads=t)
        assert np.array_equal(c, codes) and np.array_equal(o, code_offs), t
    assert code_offs[0] == 0 and code_offs[-1] == len(codes)
    rng = np.random.default_rng(len(data))
    for b, table in enumerate(tables):
        lo, hi = int(block_starts[b]), int(block_starts[b + 1])
        picked = np.arange(lo, hi)
        if offs[hi] - offs[lo] >= budget:
            picked = rng.permutation(picked)
            took = np.cumsum(offs[picked + 1] - offs[picked])
            picked = picked[: max(1, int(np.searchsorted(took, budget)))]
        for i in picked.tolist():
            want = greedy_encode(table, data[offs[i] : offs[i + 1]].tobytes())
            assert codes[code_offs[i] : code_offs[i + 1]].tolist() == want, (b, i)
    return codes, code_offs


_SYMBOL = st.lists(st.sampled_from(b"ab\x00\xff e"), min_size=1, max_size=8).map(bytes)


@settings(max_examples=60, deadline=None)
@given(symbols=st.lists(_SYMBOL, max_size=255, unique=True),
       items=st.lists(st.lists(st.sampled_from(b"ab\x00\xff ez"), max_size=30).map(bytes),
                      max_size=40))
def test_encoder_matches_greedy_on_hypothesis_tables(symbols, items):
    table = SymbolTable(symbols)
    data, offs = _offsets(items)
    assert_same_encoding([table], data, offs, np.array([0, len(items)]), threads=(1, 3))


def test_encoder_matches_greedy_on_random_binary(isa):
    rng = np.random.default_rng(5)
    for nstrings, maxlen in ((1, 0), (500, 20), (20_000, 60), (3, 300_000)):
        lengths = rng.integers(0, maxlen + 1, nstrings)
        offs = np.zeros(nstrings + 1, np.int64)
        np.cumsum(lengths, out=offs[1:])
        data = rng.integers(0, 256, int(offs[-1]), dtype=np.uint8)
        data[rng.random(len(data)) < 0.5] = ord("a")  # runs that the trained symbols match
        table = train_table(data, offs)
        assert_same_encoding([table], data, offs, np.array([0, nstrings]))
        # several blocks, one of them empty, and a slice not starting at byte 0
        cut = nstrings // 2
        assert_same_encoding([table, SymbolTable([b"a", b"aa", b"aaaaaaaa"]), table], data,
                             offs, np.array([0, cut, cut, nstrings]))
        assert_same_encoding([table], data, offs[cut:], np.array([0, nstrings - cut]))


def test_encoder_on_dbtext_per_file_and_as_one_column(dbtext_paths):
    columns = [from_arrow(load_lines(p, binary=True)) for p in dbtext_paths]
    tables = []
    for col in columns:
        offs = np.asarray(col.offsets, np.int64)
        tables.append(train_table(col.data, offs))
        assert_same_encoding(tables[-1:], col.data, offs, np.array([0, len(offs) - 1]),
                             threads=(1, 2), budget=32 << 10)
    # every file one block of one column, with its own table
    data = np.concatenate([c.data[int(c.offsets[0]) : int(c.offsets[-1])] for c in columns])
    lengths = np.concatenate([np.diff(np.asarray(c.offsets, np.int64)) for c in columns])
    offs = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offs[1:])
    block_starts = np.cumsum([0] + [len(c.offsets) - 1 for c in columns])
    codes, code_offs = assert_same_encoding(tables, data, offs, block_starts, threads=(1, 2, 5),
                                            budget=32 << 10)
    owner = np.searchsorted(block_starts, np.arange(len(lengths)), side="right") - 1
    back = native.decode_all(tables, codes, code_offs, offs, owner, len(data))
    assert np.array_equal(back, data)


def test_encoder_rejects_bad_offsets_and_blocks():
    t = [SymbolTable([b"ab"])]
    data = np.frombuffer(b"abcab", np.uint8)
    for offs, blocks in (([0, 3, 2], [0, 2]), ([0, 3, 6], [0, 2]), ([-1, 3, 5], [0, 2]),
                         ([], [0, 0]), ([0, 3, 5], [0, 1]), ([0, 3, 5], [0, 3, 2]),
                         ([0, 3, 5], [1, 2])):
        with pytest.raises(ValueError):
            native.encode_blocks(t if len(blocks) == 2 else t * 2, data, np.array(offs),
                                 np.array(blocks))
    with pytest.raises(ValueError):
        native.encode_blocks(t, data, np.array([[0, 5]]), np.array([0, 1]))


def test_encoder_releases_the_gil():
    """Two Python threads encoding at once both finish with the single-thread answer."""
    rng = np.random.default_rng(1)
    data = rng.integers(97, 100, 4 << 20, dtype=np.uint8)
    offs = np.arange(0, len(data) + 1, 64, dtype=np.int64)
    table = train_table(data, offs)
    want = native.encode_blocks([table], data, offs, np.array([0, len(offs) - 1]), threads=1)
    with ThreadPoolExecutor(2) as pool:
        done = list(pool.map(lambda _: native.encode_blocks(
            [table], data, offs, np.array([0, len(offs) - 1]), threads=2), range(2)))
    for codes, code_offs in done:
        assert np.array_equal(codes, want[0]) and np.array_equal(code_offs, want[1])


def _python_decode(symbols, codes, start, end, out, out_pos, out_end) -> int:
    """The oracle: the decoding rules in plain Python (``symbols[c]`` the bytes of code c, None
    for none); the output end, or -1 for an unknown code, an escape as the last code or output
    past ``out_end``."""
    i, o = start, out_pos
    while i < end:
        if codes[i] == 255:
            if i + 1 >= end or o >= out_end:
                return -1
            piece, i = bytes([codes[i + 1]]), i + 2
        else:
            piece, i = symbols[codes[i]], i + 1
            if piece is None or o + len(piece) > out_end:
                return -1
        out[o : o + len(piece)] = np.frombuffer(piece, np.uint8)
        o += len(piece)
    return o


def test_decode_codes_matches_python_on_random_and_forged_codes(isa):
    rng = np.random.default_rng(9)
    for _ in range(300):
        syms = {bytes(rng.integers(0, 4, rng.integers(1, 9)).astype(np.uint8))
                for _ in range(rng.integers(1, 60))}
        table = SymbolTable(syms)
        packed, lens = pack_tables([table])
        by_code = list(table.symbols) + [None] * (256 - len(table))
        ncodes = int(rng.integers(0, 200))
        # mostly known codes, some escapes, a few unknown ones (or none)
        known = rng.integers(0, len(syms), ncodes)
        codes = np.where(rng.random(ncodes) < 0.15, 255, known).astype(np.uint8)
        if rng.random() < 0.3:
            codes[rng.integers(0, max(ncodes, 1), 2) % max(ncodes, 1)] = 254
        start = int(rng.integers(0, ncodes + 1))
        end = int(rng.integers(start, ncodes + 1))
        size = int(rng.integers(0, 1200))
        out_pos = int(rng.integers(0, size + 1))
        out_end = int(rng.integers(out_pos, size + 1))
        want = np.full(size, 0xAA, np.uint8)
        got = want.copy()
        o = _python_decode(by_code, codes.tolist(), start, end, want, out_pos, out_end)
        assert native.decode_codes(codes, start, end, packed[0], lens[0], got, out_pos,
                                   out_end) == o
        # nothing outside the range; inside it, the decoded bytes (padding may differ)
        assert (got[:out_pos] == 0xAA).all() and (got[out_end:] == 0xAA).all()
        if o >= 0:
            assert np.array_equal(got[out_pos:o], want[out_pos:o])


def test_decode_codes_matches_python_in_long_runs_of_few_escapes(isa):
    # long runs with rare escapes: the kernel's sixteen-code rounds (a full table, so no
    # length test, or a partial one), an escape at every place of a round, unknown codes
    # inside a round, output ranges that end before the codes do
    rng = np.random.default_rng(21)
    for case in range(120):
        nsyms = 255 if case % 2 else int(rng.integers(1, 255))
        syms = set()
        while len(syms) < nsyms:
            syms.add(bytes(rng.integers(0, 256, rng.integers(1, 9)).astype(np.uint8)))
        table = SymbolTable(syms)
        packed, lens = pack_tables([table])
        by_code = list(table.symbols) + [None] * (256 - len(table))
        ncodes = int(rng.integers(0, 3000))
        codes = rng.integers(0, nsyms, ncodes).astype(np.uint8)
        codes[rng.random(ncodes) < (0, 0.005, 0.03)[case % 3]] = 255
        if case % 5 == 0 and ncodes:
            codes[int(rng.integers(0, ncodes))] = rng.integers(nsyms, 256) if nsyms < 255 else 255
        start = int(rng.integers(0, 20)) if ncodes > 20 else 0
        end = ncodes - int(rng.integers(0, 3)) if ncodes > 3 else ncodes
        size = ncodes * 8 + 200
        out_pos = int(rng.integers(0, 100))
        out_end = size - int(rng.integers(0, 8)) if case % 4 else out_pos + ncodes * 4
        want = np.full(size, 0xAA, np.uint8)
        got = want.copy()
        o = _python_decode(by_code, codes.tolist(), start, end, want, out_pos, out_end)
        assert native.decode_codes(codes, start, end, packed[0], lens[0], got, out_pos,
                                   out_end) == o, case
        assert (got[:out_pos] == 0xAA).all() and (got[out_end:] == 0xAA).all()
        if o >= 0:
            assert np.array_equal(got[out_pos:o], want[out_pos:o])


def test_compact_tables_lays_out_every_symbol_and_length():
    """Against the layout written out in numpy: symbols table after table then 255 zero
    words, the starts, one 256-length row per table (one row at least); bad tables refused."""
    rng = np.random.default_rng(22)
    tables = [SymbolTable({bytes(rng.integers(0, 256, rng.integers(1, 9)).astype(np.uint8))
                           for _ in range(rng.integers(0, 256))}) for _ in range(40)]
    tables.append(SymbolTable([bytes([k]) for k in range(255)]))  # a full table
    for n in (0, 1, 2, 7, 33, 41):
        part = tables[:n]
        packed, first, lens = native.compact_tables(part)
        counts = [len(t.lengths) for t in part]
        assert first.dtype == np.int64 and first.tolist() == np.r_[0, np.cumsum(counts)].tolist()
        want = np.concatenate([t.packed for t in part] + [np.zeros(255, np.uint64)])
        assert packed.dtype == np.uint64 and np.array_equal(packed, want)
        assert lens.dtype == np.uint8 and lens.shape == (max(n, 1), 256)
        for k, t in enumerate(part):
            assert np.array_equal(lens[k, : counts[k]], t.lengths) and not lens[k, counts[k]:].any()
        assert native.compact_tables(iter(part))[1].tolist() == first.tolist()

    class Forged:
        def __init__(self, packed, lengths):
            self.packed, self.lengths = packed, lengths

    for bad in (Forged(np.zeros(2, np.uint64), np.ones(3, np.uint8)),
                Forged(np.zeros(256, np.uint64), np.ones(256, np.uint8)),
                Forged(np.zeros(2, np.int64), np.ones(2, np.uint8)),
                Forged(np.zeros((2, 1), np.uint64), np.ones(2, np.uint8))):
        with pytest.raises(ValueError):
            native.compact_tables([tables[0], bad])


def test_decode_range_checks():
    t = SymbolTable([b"ab"])
    out = np.zeros(4, np.uint8)
    for codes in ([0, 255], [7], [0, 0, 0]):
        codes = np.array(codes, np.uint8)
        with pytest.raises(CorruptDataError, match="do not decode"):
            decoder.decode_range(t, codes, 0, len(codes), out, 0, 4)
    with pytest.raises(ValueError, match="outside"):
        native.decode_range(t, np.zeros(2, np.uint8), 0, 3, out, 0, 4)
    with pytest.raises(ValueError, match="outside"):
        native.decode_range(t, np.zeros(2, np.uint8), 0, 2, out, 2, 5)
    with pytest.raises(TypeError):  # the output is written in place: never a converted copy
        native.decode_range(t, np.zeros(2, np.uint8), 0, 2, np.zeros(4, np.int32), 0, 4)


def _misaligned(a):
    """a's values in an array whose data starts one byte past an aligned address."""
    raw = np.zeros(a.nbytes + a.itemsize + 1, np.uint8)
    start = (-raw.ctypes.data) % a.itemsize + 1
    out = raw[start : start + a.nbytes].view(a.dtype)
    out[:] = a
    assert not out.flags.aligned
    return out


def test_misaligned_arrays_are_read_aligned_and_written_in_place_or_refused():
    # an int64 array whose data starts at an odd byte (an Arrow buffer sliced there, pyarrow
    # takes it) was read through int64 pointers: undefined behaviour (the sanitizer build
    # stopped). It is read from an aligned copy now; an output written in place cannot be
    # copied (the results would be lost), so a misaligned one is refused
    offs = np.array([0, 2, 2, 5, 9], np.int64)
    data = np.frombuffer(b"ab\xffxyzwvut", np.uint8)
    assert native.first_invalid_string(data, _misaligned(offs)) == 2
    assert native.first_invalid_string(data, _misaligned(offs.astype(np.int32))) == 2
    assert native.differences(_misaligned(offs)).tolist() == [2, 0, 3, 4]
    assert native.first_decrease(_misaligned(offs[::-1].copy())) == 0
    for dtype in (np.int64, np.int32):
        out = _misaligned(np.zeros(5, dtype))
        with pytest.raises(ValueError, match="aligned"):
            native.running_sum(np.array([1, 2, 3, 4]), out)
    status, *_ = native.stored_rows(4, None, None, _misaligned(offs), 9, None,
                                    _misaligned(np.array([4, 0, 6, 8], np.uint64)), None,
                                    _misaligned(np.zeros(4, np.uint16)), np.zeros(1, np.int32))
    assert status == native.scan.ROWS_OK
    lengths_out = _misaligned(np.zeros(4, np.int64))
    with pytest.raises(ValueError, match="lengths_out must be aligned"):
        _native.stored_rows(4, None, 0, None, 0, offs, 9, None, 0,
                                   offs[1:].astype(np.uint64), None, 0, np.zeros(4, np.uint16),
                                   np.zeros(1, np.int32), lengths_out, None)


def test_decode_all_names_forged_table_starts_as_given():
    # table starts far below the last one were subtracted in int64 (an overflow: the count
    # was reported as 9223372036854775697 symbols)
    args = [np.zeros(0, np.uint8), np.zeros(2, np.int64), np.zeros(2, np.int64),
            np.zeros(1, np.int64), np.zeros(400, np.uint64),
            np.array([0, 111, -(2**63)], np.int64), np.zeros((2, 256), np.uint8), 0,
            np.zeros(0, np.int64), False, np.zeros(0, np.int64), False, 1]
    args[6][0, :111] = 1
    with pytest.raises(ValueError, match=f"table 1 has symbols 111..{-(2**63)}"):
        _native.decode_all(*args)


def _split_column(rng, nitems=30_000):
    """Strings of a few words, two blocks with their tables, splits of ~50 strings."""
    words = [b"alpha ", b"beta", b"http://x.org/", b"\x00", b"zz\xff"]
    items = [b"".join(words[j] for j in rng.integers(0, 5, rng.integers(0, 9)))
             for _ in range(nitems)]
    data, offs = _offsets(items)
    tables = [train_table(data, offs), SymbolTable([b"alpha", b"beta", b"zz"])]
    block_starts = np.array([0, nitems * 2 // 5, nitems])
    codes, code_offs = native.encode_blocks(tables, data, offs, block_starts)
    cuts = np.unique(np.concatenate((np.arange(0, nitems + 1, 50), block_starts)))
    split_table = (np.searchsorted(block_starts, cuts[:-1], side="right") - 1).astype(np.uint16)
    return tables, data, offs, codes, code_offs, cuts, split_table


def test_decode_all_writes_into_the_callers_output_once_the_splits_are_checked():
    """``alloc`` gives the output (pyarrow's pool in to_arrow): written in place, asked for only
    after the split check (a forged size never allocates), and refused unless it is exactly
    the size's writable uint8 bytes."""
    rng = np.random.default_rng(6)
    tables, data, offs, codes, code_offs, cuts, split_table = _split_column(rng)
    args = (codes, code_offs[cuts], offs[cuts], split_table, len(data))
    asked = []

    def pool(n):
        asked.append(n)
        out = pool_empty(n)
        out[:] = 0xEE  # poisoned: every byte must be written
        return out

    got = native.decode_all(tables, *args, alloc=pool)
    assert asked == [len(data)] and np.array_equal(got, data)
    with pytest.raises(CorruptDataError, match="split output positions"):
        native.decode_all(tables, *args[:4], 10**15, alloc=pool)
    assert asked == [len(data)]
    wrong = [lambda n: np.empty(n + 1, np.uint8), lambda n: np.empty(n, np.int8),
             lambda n: np.empty(2 * n, np.uint8)[::2], lambda n: np.frombuffer(bytes(n), np.uint8),
             lambda n: None]
    for alloc in wrong:
        with pytest.raises(ValueError, match="alloc must return"):
            native.decode_all(tables, *args, alloc=alloc)


def test_decoded_columns_live_in_pyarrows_pool():
    """fsstgpu.decompress's bytes and offsets are pyarrow pool memory (reused from call to
    call, counted by pyarrow.total_allocated_bytes)."""
    col = pa.array([f"row {i} of some text" for i in range(200_000)], pa.large_string())
    carr = fsstgpu.compress(col)
    before = pa.total_allocated_bytes()
    out = fsstgpu.decompress(carr, device="cpu")
    assert out.equals(col)
    held = pa.total_allocated_bytes() - before
    assert held >= out.buffers()[1].size + out.buffers()[2].size
    del out
    assert pa.total_allocated_bytes() - before < held


def test_decode_all_round_trips_and_reports_corruption(isa):
    rng = np.random.default_rng(4)
    tables, data, offs, codes, code_offs, cuts, split_table = _split_column(rng)
    args = (codes, code_offs[cuts], offs[cuts], split_table, len(data))
    for threads in (1, 3):
        assert np.array_equal(native.decode_all(tables, *args, threads=threads), data)
        assert np.array_equal(native.decode_all(tables, *args, string_ends=offs,
                                                code_offsets=code_offs, threads=threads), data)
    forged = codes.copy()
    forged[rng.integers(0, len(codes), 40)] = 250  # no symbol 250: unknown codes
    bad = [
        ((forged, *args[1:]), r"split \d+ \(codes \d+\.\.\d+, table \d\) is corrupt; expected "
                              r"output bytes \d+\.\.\d+ \(\d+ bad splits\)"),
        ((codes, code_offs[cuts], offs[cuts] + np.r_[0, np.ones(len(cuts) - 1, int)],
          split_table, len(data) + 1), r"split 0 \(.*\) ends at output byte \d+; expected"),
        ((codes, code_offs[cuts][:-1], *args[2:]), "split arrays disagree"),
        ((*args[:3], split_table + 1, len(data)), "split table index 2 but only 2 tables"),
        ((*args[:4], -1), "negative output size -1"),
        ((codes, code_offs[cuts][::-1], *args[2:]), "split code positions must run from 0"),
    ]
    for case, message in bad:
        for threads in (1, 2):
            with pytest.raises(CorruptDataError, match=message):
                native.decode_all(tables, *case, threads=threads)


def test_decode_all_walk_reports_unknown_codes_like_the_plain_decode(isa):
    """Unknown codes inside the string-end walk's eight-code groups (a table of 3 symbols):
    the same split and message as the plain decode, at any thread count."""
    rng = np.random.default_rng(5)
    tables, data, offs, codes, code_offs, cuts, split_table = _split_column(rng)
    args = (codes, code_offs[cuts], offs[cuts], split_table, len(data))
    for at in (rng.integers(0, len(codes), 1), rng.integers(0, len(codes), 30)):
        forged = codes.copy()
        forged[at] = 250
        for threads in (1, 2):
            with pytest.raises(CorruptDataError) as plain:
                native.decode_all(tables, forged, *args[1:], threads=threads)
            with pytest.raises(CorruptDataError) as walked:
                native.decode_all(tables, forged, *args[1:], string_ends=offs,
                                  code_offsets=code_offs, threads=threads)
            assert str(walked.value) == str(plain.value)


def test_decode_all_finds_a_decrease_in_any_task_of_the_string_end_check():
    """The string ends are checked in tasks of 2**20 on the threads: a decrease at either side
    of a task boundary, or in a later task, is found at any thread count."""
    n = (2 << 20) + 1000  # three tasks
    data = np.frombuffer(b"ab" * n, np.uint8)
    offs = np.arange(0, 2 * n + 1, 2, dtype=np.int64)
    tables = [SymbolTable([b"ab"])]
    codes, code_offs = native.encode_blocks(tables, data, offs, np.array([0, n]))
    cuts = np.arange(0, n + 1, 4096)
    cuts = np.unique(np.r_[cuts, n])
    args = (codes, code_offs[cuts], offs[cuts], np.zeros(len(cuts) - 1, np.uint16), len(data))
    assert np.array_equal(native.decode_all(tables, *args, string_ends=offs, threads=4), data)
    for r in ((1 << 20) - 1, 1 << 20, (2 << 20) + 7, n - 1):
        ends = offs.copy()
        ends[r] = ends[r + 1] + 1
        for threads in (1, 4):
            with pytest.raises(CorruptDataError, match="string ends must be non-decreasing"):
                native.decode_all(tables, *args, string_ends=ends, threads=threads)


def test_decode_all_checks_string_ends_and_code_offsets_at_any_thread_count(isa):
    rng = np.random.default_rng(6)
    tables, data, offs, codes, code_offs, cuts, split_table = _split_column(rng, 120_000)
    args = (codes, code_offs[cuts], offs[cuts], split_table, len(data))
    assert len(data) > 2 << 20  # several tasks
    # string ends moved by a byte: a symbol (or an escape) runs across them, or they land on a
    # symbol start and only the code offsets disagree
    for r in rng.integers(1, len(offs) - 1, 8):
        ends = offs.copy()
        ends[r] = min(ends[r] + 1, ends[r + 1])
        if ends[r] == offs[r]:
            continue
        for code_offsets in (None, code_offs):
            answers = set()
            for threads in (1, 2, 5):
                with pytest.raises(CorruptDataError) as err:
                    native.decode_all(tables, *args, string_ends=ends.astype(np.int32),
                                      code_offsets=code_offsets, threads=threads)
                answers.add(str(err.value))
            assert len(answers) == 1, answers
            assert (f"string {r - 1}: a symbol runs across its end" in answers.pop()
                    or code_offsets is not None)
    # code offsets off by one
    bad = code_offs.copy()
    bad[7] += 1
    with pytest.raises(CorruptDataError, match="string 7: its stored code offset"):
        native.decode_all(tables, *args, string_ends=offs, code_offsets=bad)
    for ends, message in ((offs + 1, "string ends must run from 0"),
                          (offs[::-1], "string ends must run from 0"),
                          (np.r_[0, 5, 3, offs[3:]], "string ends must be non-decreasing")):
        with pytest.raises(CorruptDataError, match=message):
            native.decode_all(tables, *args, string_ends=ends)
    for r in (1, 4094, 4095, 4096, 4097, len(offs) - 2):  # a decrease in any block of the test
        ends = offs.copy()
        ends[r] = ends[r + 1] + 1
        for dtype in (np.int32, np.int64):
            with pytest.raises(CorruptDataError, match="string ends must be non-decreasing"):
                native.decode_all(tables, *args, string_ends=ends.astype(dtype))
    with pytest.raises(CorruptDataError, match="code offsets must be"):
        native.decode_all(tables, *args, string_ends=offs, code_offsets=code_offs[1:])
    with pytest.raises(ValueError):
        native.decode_all(tables, *args, code_offsets=code_offs)
    with pytest.raises(ValueError):
        native.decode_all(tables, *args, utf8=True)


def test_decode_all_finds_a_crossing_end_at_the_walks_window_edges(isa):
    """The string-end walk checks its ends a window at a time (4096 output bytes when it notes
    code positions for code offsets, 16384 with marks): an end moved into a symbol just
    before, at or after a window edge of one long split is found, naming its string, with
    and without code offsets, whatever the thread count."""
    rng = np.random.default_rng(13)
    letters = np.frombuffer(b"abcdefgh", np.uint8)
    items = [rng.choice(letters, int(k)).tobytes() for k in rng.integers(1, 40, 3000)]
    data, offs = _offsets(items)
    tables = [SymbolTable([b"abcdefgh", b"abcd", b"efgh", b"ab", b"cd", b"ef", b"gh",
                           *(bytes([c]) for c in letters)])]  # no escapes
    codes, code_offs = native.encode_blocks(tables, data, offs, np.array([0, len(items)]))
    args = (codes, np.array([0, len(codes)]), np.array([0, len(data)]), np.zeros(1, np.int64),
            len(data))
    assert np.array_equal(native.decode_all(tables, *args, string_ends=offs), data)
    symbols = tables[0].symbols
    starts = set(np.cumsum([0] + [len(symbols[int(c)]) for c in codes]).tolist())
    tried = 0
    for edge in (4096, 16384, 32768):
        for at in range(edge - 9, edge + 9):
            r = int(np.searchsorted(offs, at))  # the first end at or after the byte
            if not 0 < r < len(items) or at in starts or not offs[r - 1] < at < offs[r + 1]:
                continue
            ends = offs.copy()
            ends[r] = at  # inside a symbol: no symbol starts there
            tried += 1
            for code_offsets in (None, code_offs):
                for threads in (1, 3):
                    with pytest.raises(CorruptDataError,
                                       match=f"string {r - 1}: a symbol runs across its end"):
                        native.decode_all(tables, *args, string_ends=ends,
                                          code_offsets=code_offsets, threads=threads)
    assert tried >= 6


def test_decode_all_checks_utf8_like_check_utf8_at_any_thread_count(isa):
    """The fused UTF-8 check names the first invalid string, whether it lies in one task or
    across two (columns over 1 MB decode in several tasks), whatever the thread count."""
    rng = np.random.default_rng(12)
    pieces = [b"a", "ñ".encode(), "€".encode(), "日本".encode(), b" " * 70]
    items = [b"".join(pieces[j] for j in rng.integers(0, 5, rng.integers(0, 12)))
             for _ in range(40_000)]
    items[30_000] = b"x" * 3_000_000  # one long string: across task boundaries
    table = train_table(*_offsets(items))
    for broken in ((), (5,), (20_000, 39_999), (30_000,), (39_999,), (30_000, 35_000)):
        forged = list(items)
        for r in broken:
            forged[r] = forged[r] + b"\xe2\x82"  # a character cut short
        data, offs = _offsets(forged)
        codes, code_offs = native.encode_blocks([table], data, offs, np.array([0, len(items)]))
        cuts = np.unique(np.r_[np.arange(0, len(items) + 1, 40), 30_000, 30_001])
        args = ([table], codes, code_offs[cuts], offs[cuts], np.zeros(len(cuts) - 1, np.int64),
                len(data))
        for threads in (1, 2, 5):
            for ends in (offs, offs.astype(np.int32)):
                if not broken:
                    assert np.array_equal(native.decode_all(*args, string_ends=ends,
                                                            check_ends=False, utf8=True,
                                                            threads=threads), data)
                    continue
                with pytest.raises(CorruptDataError,
                                   match=f"decoded column: string {min(broken)} is not valid"):
                    native.decode_all(*args, string_ends=ends, code_offsets=code_offs,
                                      utf8=True, threads=threads)


def _utf8_cases(rng):
    pieces = ["a", "ñ", "€", "𝄞", "日本", " " * 70, "x" * 33]
    invalid = [b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82",
               b"\x80", b"\xf0\x9d\x84"]
    for _ in range(200):
        items = ["".join(rng.choice(pieces, rng.integers(0, 6))).encode()
                 for _ in range(rng.integers(1, 60))]
        if rng.random() < 0.6:
            k = int(rng.integers(0, len(items)))
            s = items[k]
            at = int(rng.integers(0, len(s) + 1))
            items[k] = s[:at] + invalid[rng.integers(0, len(invalid))] + s[at:]
        data, offs = _offsets(items)
        if rng.random() < 0.2 and len(data) > 2:  # cut strings inside characters
            offs = np.unique(np.concatenate((offs, rng.integers(0, len(data), 3))))
        yield data, offs


def _first_invalid_by_python(data, offs) -> int:
    """The oracle: Python's own strict UTF-8 decoder, string by string (RFC 3629 too)."""
    raw = data.tobytes()
    for i in range(len(offs) - 1):
        try:
            raw[offs[i] : offs[i + 1]].decode("utf-8")
        except UnicodeDecodeError:
            return i
    return -1


def test_utf8_matches_pythons_decoder(isa):
    rng = np.random.default_rng(8)
    for data, offs in _utf8_cases(rng):
        want = _first_invalid_by_python(data, offs)
        for dtype in (np.int32, np.int64):
            assert native.first_invalid_string(data, offs.astype(dtype), threads=2) == want
        assert utf8.first_invalid_string(data, offs) == want
    big = np.frombuffer(("añb€" * 300_000).encode() + b"\xff" + b"z" * 1000, np.uint8)
    offs = np.arange(0, len(big) + 1, 7, dtype=np.int64)
    offs[-1] = len(big)
    assert native.first_invalid_string(big, offs) == _first_invalid_by_python(big, offs)
    assert native.first_invalid_string(big[:-1001], offs[offs <= len(big) - 1001]) in (-1,)
    with pytest.raises(ValueError):
        native.first_invalid_string(big, np.array([0, len(big) + 1]))


def _decode_all_first_invalid(items, threads=1) -> int:
    """decode_all's fused UTF-8 answer for the strings items, every byte an escape (a table
    of no symbols), in splits of about 4 KB."""
    data, offs = _offsets(items)
    codes = np.empty(2 * len(data), np.uint8)
    codes[0::2], codes[1::2] = 255, data
    cut = np.unique(np.r_[0, np.searchsorted(offs, np.arange(0, len(data), 4096)), len(items)])
    try:
        native.decode_all([SymbolTable([])], codes, 2 * offs[cut], offs[cut],
                          np.zeros(len(cut) - 1, np.int64), len(data), string_ends=offs,
                          check_ends=False, utf8=True, threads=threads)
    except CorruptDataError as err:
        return int(str(err).split("string ")[1].split(" ")[0])
    return -1


def test_decode_all_utf8_matches_pythons_decoder(isa):
    """The fused check (a SIMD stream check, then the per-string kernel where it fails) on
    every byte pair and the 3- and 4-byte forms around each rule's edges, at any alignment
    and cut across strings; and _utf8_cases."""
    rng = np.random.default_rng(13)
    pieces = ["a", "ñ", "€", "𝄞", "日本", " " * 40, "\U0010FFFF", "\uFFFF", "\u07FF", "\u0800"]

    def text():
        return "".join(rng.choice(pieces, rng.integers(0, 6))).encode()

    edges = [0x00, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xF0, 0xFF]
    cases = [bytes([a, b]) for a in range(0x80, 0x100) for b in range(0x100)]
    cases += [bytes([a, b, c]) for a in range(0xC0, 0x100) for b in edges for c in edges]
    cases += [bytes([a, b, c, d]) for a in range(0xF0, 0x100) for b in edges
              for c in (0x80, 0xBF, 0x00, 0xC0) for d in (0x80, 0xBF, 0x00, 0xC0)]
    for seq in cases[:: 1 if isa == ISAS[-1] else 7]:
        items = [text() for _ in range(int(rng.integers(0, 3)))]
        at = len(items)
        items.append(text() + b"z" * int(rng.integers(0, 40)) + seq + text())
        if rng.random() < 0.3:  # cut across two strings
            s, cut = items[at], int(rng.integers(0, len(items[at]) + 1))
            items[at : at + 1] = [s[:cut], s[cut:]]
        items.append(text())
        data, offs = _offsets(items)
        assert _decode_all_first_invalid(items) == _first_invalid_by_python(data, offs), seq
    for data, offs in _utf8_cases(rng):
        items = [data[offs[i] : offs[i + 1]].tobytes() for i in range(len(offs) - 1)]
        assert (_decode_all_first_invalid(items, threads=2)
                == _first_invalid_by_python(data, offs))


def test_decode_all_utf8_with_an_ascii_table_checks_the_escaped_bytes(isa):
    """A table of ASCII symbols: the splits whose escaped bytes are ASCII too skip the UTF-8
    check; a byte >= 0x80 (always escaped) is checked, in its split's strings and in a string
    that begins in ASCII splits before it, with and without the string-end walk."""
    rng = np.random.default_rng(14)
    words = [b"alpha ", b"beta", b"http://x.org/", b"\x00", b"zz"]
    items = [b"".join(words[j] for j in rng.integers(0, 5, rng.integers(0, 9)))
             for _ in range(30_000)]
    items[20_000] = b"y" * 200_000  # across many splits (and two tasks, with threads)
    table = train_table(*_offsets(items))
    assert all(b < 0x80 for s in table.symbols for b in s)
    for changed, tail in (((), b""), ((7, 29_999), "ñ".encode()), ((3,), b"\xe2\x82"),
                          ((15_000, 29_999), b"\xff"), ((20_000,), b"\xc3"),
                          ((20_000, 25_000), "€".encode() + b"\x80")):
        forged = list(items)
        for r in changed:
            forged[r] = forged[r] + tail
        data, offs = _offsets(forged)
        want = _first_invalid_by_python(data, offs)
        codes, code_offs = native.encode_blocks([table], data, offs, np.array([0, len(items)]))
        cuts = np.unique(np.r_[np.arange(0, len(items) + 1, 20), 20_000, 20_001])
        args = ([table], codes, code_offs[cuts], offs[cuts], np.zeros(len(cuts) - 1, np.int64),
                len(data))
        for threads in (1, 2):
            for check in (False, True):
                try:
                    out = native.decode_all(*args, string_ends=offs, check_ends=check,
                                            code_offsets=code_offs if check else None,
                                            utf8=True, threads=threads)
                    got = -1
                    assert np.array_equal(out, data)
                except CorruptDataError as err:
                    got = int(str(err).split("string ")[1].split(" ")[0])
                assert got == want, (changed, tail, threads, check)


def test_utf8_on_dbtext(dbtext_paths):
    for path in dbtext_paths:
        col = from_arrow(load_lines(path, binary=True))
        assert native.first_invalid_string(col.data, col.offsets) == -1, path.name


# ---- the sanitizer build ----

def _sanitizer_build(dest: Path) -> Path:
    """The extension compiled again with ASan and UBSan, one compiler process per source, as
    many at once as there are cores (the longest first).

    The codec and the bindings' bodies (every file but module.cpp) are instrumented: the codec
    at -O1 (its loops run millions of times in the fuzz), the bindings at -O0 (every access
    checked, none optimised away, in half -O1's compile time: pybind11's templates are most of
    the build). module.cpp, which only declares the bindings to pybind11 (and holds no code of
    ours that reads an array: test_the_plain_compiled_module_reads_no_array), is compiled plain
    at -O0: instrumenting its templates costs 30 s of compiling and checks nothing of ours.
    -g1 (line tables) gives the reports' file:line; full -g made a source half as slow again."""
    pybind11 = pytest.importorskip("pybind11", reason="pybind11 headers needed to build")
    csrc = Path(fsstgpu.__file__).resolve().parent / "csrc"
    cxx = os.environ.get("CXX", "g++")
    if shutil.which(cxx) is None:
        pytest.skip(f"no C++ compiler ({cxx}) to build the sanitizer copy")
    common = ["-std=c++17", "-fPIC", f"-I{pybind11.get_include()}",
              f"-I{sysconfig.get_paths()['include']}", f"-I{csrc}"]
    sanitized = ["-g1", "-fsanitize=address,undefined", "-fno-omit-frame-pointer"]

    def flags(src: Path) -> list:
        if src.name == "module.cpp":
            return ["-O0"]
        return ["-O0" if src.name.startswith("bind_") else "-O1", *sanitized]

    def compile_one(src: Path):
        return src, subprocess.run([cxx, *common, *flags(src), "-c", str(src), "-o",
                                    str(dest / f"{src.stem}.o")], capture_output=True, text=True)

    # the pybind11 sources take 5-10x a codec source's time: started first, the others fill in
    sources = sorted(csrc.glob("*.cpp"), key=lambda p: (not p.name.startswith(("bind_", "module")),
                                                        -p.stat().st_size))
    with ThreadPoolExecutor(max_workers=len(os.sched_getaffinity(0))) as pool:
        for src, done in pool.map(compile_one, sources):
            assert done.returncode == 0, (src.name, done.stderr[-4000:])
    lib = dest / f"_native{sysconfig.get_config_var('EXT_SUFFIX')}"
    subprocess.run([cxx, "-shared", "-fsanitize=address,undefined", *map(str, dest.glob("*.o")),
                    "-o", str(lib)], check=True)
    return lib


def test_the_plain_compiled_module_reads_no_array():
    """module.cpp is the one source _sanitizer_build compiles without the sanitizers: code of
    ours there that reads an array (compact_tables' copies, decode_all's copies of the split
    points, the alloc callback's output were there) would fault unseen by the fuzz. It only
    declares the bindings; their bodies are in the instrumented bind_*.cpp files."""
    src = (Path(fsstgpu.__file__).resolve().parent / "csrc" / "module.cpp").read_text()
    code = "\n".join(line.split("//")[0] for line in src.splitlines())
    found = [w for w in (".data(", "mutable_data(", ".shape(", "std::copy", "std::fill",
                         "memcpy", ".cast<", "without_gil") if w in code]
    assert not found, found


def _runtime(cxx: str, name: str) -> str:
    path = subprocess.run([cxx, f"-print-file-name={name}"], capture_output=True, text=True,
                          check=True).stdout.strip()
    if not os.path.isabs(path):
        pytest.skip(f"{cxx} has no {name}")
    return path


def _report(err: str) -> str:
    """A sanitizer's report from its first line (its tail is ASan's legend of shadow bytes)."""
    at = [i for i in (err.find("ERROR: AddressSanitizer"), err.find("runtime error")) if i >= 0]
    return err[min(at):][:4000] if at else err[-4000:]


def test_sanitizer_build_survives_the_fuzz(tmp_path):
    _sanitizer_build(tmp_path)
    cxx = os.environ.get("CXX", "g++")
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0", UBSAN_OPTIONS="halt_on_error=1",
               LD_PRELOAD=f"{_runtime(cxx, 'libasan.so')} {_runtime(cxx, 'libubsan.so')}")

    def fuzz(isa: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(HERE / "native_fuzz.py"), str(tmp_path),
                               "150"], capture_output=True, text=True,
                              env=dict(env, FSSTGPU_ISA=isa), timeout=300)

    # each instruction set's run in a process of its own, side by side
    with ThreadPoolExecutor(max_workers=len(ISAS)) as pool:
        runs = dict(zip(ISAS, pool.map(fuzz, ISAS), strict=True))
    for isa, done in runs.items():
        assert done.returncode == 0 and "fuzz ok" in done.stdout, (isa, _report(done.stderr))
        assert "runtime error" not in done.stderr, (isa, _report(done.stderr))
