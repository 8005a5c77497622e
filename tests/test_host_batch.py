"""HostBatch's metadata against a plain NumPy reference of the layout, on fresh random columns:
every section's values and bytes in ``meta``, the narrowed lengths equal to the int64 ones in
the narrowest dtype, whatever the longest string (< 256, < 65536, >= 65536), with and without
nulls, several columns, empty ones; and the compiled one-pass narrowing behind it
(:func:`fsstgpu.native.narrow_lengths`).

Seeds come from os.urandom and are named in failure messages.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import fsstgpu
from fsstgpu import native
from fsstgpu.gpu import layout, lengths
from fsstgpu.gpu.layout import HostBatch
from fsstgpu.kernels.fsst_decode import utf8_range_table
from fsstgpu.symbol_table import pack_tables
from fsstgpu.types import is_text, offsets_dtype

sys.path.insert(0, str(Path(__file__).parent))
from seeds import fresh_seed  # noqa: E402

TYPES = [pa.string(), pa.large_string(), pa.binary(), pa.large_binary()]
#: the longest string of a column: each lengths dtype, and a sample's miss of it (see _column)
LONGEST = [0, 1, 255, 256, 65535, 65536, 70_000]


def _column(rng, n: int, longest: int, type_, nulls: bool):
    """n strings up to 40 bytes, one of ``longest`` bytes at row 1 (between the rows a sample
    of every n/64-th length reads, for n >= 128): a batch's lengths dtype is guessed from such
    a sample and must be corrected."""
    lengths = rng.integers(0, 41, n)
    if n > 1:
        lengths[1] = longest
    values = [bytes(rng.integers(97, 100, int(k), dtype=np.uint8)) for k in lengths]
    if nulls:
        values = [None if rng.random() < 0.2 and k != 1 else v for k, v in enumerate(values)]
    if is_text(type_):
        values = [None if v is None else v.decode() for v in values]
    return fsstgpu.compress(pa.array(values, type_))


def _stored(carr):
    """carr rebuilt with its code offsets and not known good: the batch marks its code starts."""
    fields = ("type", "length", "tables", "block_starts", "codes", "code_offsets", "lengths",
              "validity", "null_count", "split_size", "split_codes", "split_out", "split_table",
              "chunk_lengths")
    return fsstgpu.CompressedStringArray(**{f: getattr(carr, f) for f in fields})


def _reference(carrs) -> dict:
    """What HostBatch(carrs, lengths="narrow") holds, in plain NumPy: {section: array}."""
    lens = np.concatenate([c.lengths for c in carrs] + [np.zeros(0, np.int64)])
    top = int(lens.max()) if lens.size else 0
    dtype = next(np.dtype(dt) for dt in (np.uint8, np.uint16, np.uint32, np.uint64)
                 if top <= np.iinfo(dt).max)
    code_start = np.cumsum([0] + [len(c.codes) for c in carrs])
    out_start = np.cumsum([0] + [c.uncompressed_bytes for c in carrs])
    table_start = np.cumsum([0] + [len(c.tables) for c in carrs])
    rows = np.cumsum([0] + [c.length for c in carrs])
    odts = [offsets_dtype(c.type, c.uncompressed_bytes) for c in carrs]
    obyte = np.cumsum([0] + [-(-(c.length + 1) * o.itemsize // 8) * 8
                             for c, o in zip(carrs, odts, strict=True)])
    marked = [not c.validated and c.has_code_offsets for c in carrs]
    starts = np.zeros(max(-(-int(code_start[-1]) // 8), 1) if any(marked) else 0, np.uint8)
    bits = np.zeros(8 * starts.size, bool)
    for k, c in enumerate(carrs):
        if marked[k]:
            co = c.code_offsets
            bits[code_start[k] + co[:-1][np.diff(co) > 0]] = True
    starts[...] = np.packbits(bits, bitorder="little")
    tab_sym, tab_len = pack_tables([t for c in carrs for t in c.tables])
    return {
        "split_codes": np.concatenate([c.split_codes[:-1] + code_start[k]
                                       for k, c in enumerate(carrs)]
                                      + [np.array([code_start[-1]])]).astype(np.int64),
        "split_out": np.concatenate([c.split_out[:-1] + out_start[k]
                                     for k, c in enumerate(carrs)]
                                    + [np.array([out_start[-1]])]).astype(np.int64),
        "split_table": np.concatenate([c.split_table.astype(np.int64) + table_start[k]
                                       for k, c in enumerate(carrs)]
                                      + [np.zeros(0, np.int64)]).astype(np.uint16),
        "tab_sym": tab_sym, "tab_len": tab_len,
        "lengths": lens.astype(dtype),
        "validity": np.concatenate([c.validity for c in carrs if c.null_count]
                                   + [np.zeros(0, np.uint8)]),
        "col_first": rows.astype(np.int64), "col_base": out_start[:-1].astype(np.int64),
        "col_obyte": obyte[:-1].astype(np.int64),
        "col_wide": np.array([(o.itemsize == 8) | (4 if is_text(c.type) else 0)
                              | (8 if m else 0) for c, o, m in zip(carrs, odts, marked,
                                                                   strict=True)], np.uint8),
        "code_starts": starts,
        "utf8_ranges": utf8_range_table([(int(out_start[k]), int(out_start[k + 1]), k)
                                         for k, c in enumerate(carrs) if is_text(c.type)]),
    }


def _check(carrs, why: str) -> HostBatch:
    want = _reference(carrs)
    batch = HostBatch(carrs, lengths="narrow")
    assert batch.lengths_layout == "narrow", why
    assert list(batch.sections) == list(want), why
    pos = 0
    for name, expect in want.items():
        got = getattr(batch, name)
        if name == "validity" and not expect.size:
            assert got is None, why
            got = batch.section(batch.meta, name)
        assert got.dtype == expect.dtype and got.shape == expect.shape, (why, name)
        assert np.array_equal(got, expect), (why, name)
        # each section from the next 16-byte boundary, in this order, its bytes in meta
        start = batch.sections[name][0]
        assert start == pos, (why, name)
        assert batch.meta[start : start + expect.nbytes].tobytes() == expect.tobytes(), (why,
                                                                                       name)
        pos += -(-expect.nbytes // 16) * 16
    assert batch.meta.nbytes == pos, why
    assert np.array_equal(batch.lengths.astype(np.int64),
                          np.concatenate([c.lengths for c in carrs] + [np.zeros(0, np.int64)]))
    return batch


@pytest.mark.parametrize("longest", LONGEST)
def test_one_column_against_the_reference(longest):
    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    for n in (0, 1, 2, 200, 3000):
        for nulls in (False, True):
            type_ = TYPES[int(rng.integers(len(TYPES)))]
            carr = _column(rng, n, longest, type_, nulls)
            batch = _check([carr], f"seed {seed} n {n} nulls {nulls} {type_}")
            top = int(carr.lengths.max()) if n else 0
            assert batch.lengths.dtype == layout.narrowest(top), seed


def test_several_columns_against_the_reference():
    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    for _ in range(12):
        carrs = []
        for _ in range(int(rng.integers(1, 6))):
            n = int(rng.choice([0, 1, 150, 2000]))
            carr = _column(rng, n, int(rng.choice(LONGEST)), TYPES[int(rng.integers(4))],
                           bool(rng.integers(2)))
            carrs.append(_stored(carr) if rng.random() < 0.3 else carr)
        _check(carrs, f"seed {seed} rows {[c.length for c in carrs]}")


def test_a_long_string_the_sample_misses_lays_the_batch_out_again():
    """The lengths dtype is guessed from a sample of each column; a longer string found while
    narrowing makes a second layout, in a new buffer from ``allocate``."""
    rng = np.random.default_rng(fresh_seed())
    small = _column(rng, 500, 3, pa.string(), False)
    long_ = _column(rng, 500, 300, pa.string(), True)
    assert int(np.bitwise_or.reduce(long_.lengths[:: -(-500 // lengths._SAMPLE)])) < 256
    sizes = []

    def allocate(n):
        sizes.append(n)
        return np.zeros(n, np.uint8)

    batch = HostBatch([small, long_], lengths="narrow", allocate=allocate)
    assert batch.lengths.dtype == np.uint16 and len(sizes) == 2 and batch.meta.size == sizes[1]
    assert np.array_equal(batch.lengths, np.concatenate([small.lengths, long_.lengths]))
    HostBatch([small], lengths="narrow", allocate=allocate)  # a right guess: one layout
    assert len(sizes) == 3


def test_lengths_of_4_gib_are_narrowed_by_the_native_pass():
    """No column holds a string of 2**32 bytes here (its codes alone would take 512 MiB): the
    compiled pass that narrows every batch's lengths is checked on such values instead."""
    lens = np.array([0, 2**32, 5, 2**40 + 7], np.int64)
    for dt in (np.uint8, np.uint16, np.uint32, np.uint64):
        out = np.empty(4, dt)
        assert native.narrow_lengths(lens, out) == 2**40 | 2**32 | 7
        assert np.array_equal(out, lens.astype(dt))
    assert layout.narrowest(2**40 | 2**32 | 7) == np.uint64


@pytest.mark.parametrize("isa", native.supported_isas())
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32, np.uint64])
def test_narrow_lengths_one_pass_on_every_thread_count(dtype, isa, monkeypatch):
    """Each instruction set's copy of the loop, on one and several threads."""
    monkeypatch.setenv("FSSTGPU_ISA", isa)
    assert native.isa() == isa
    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    for n in (0, 1, 7, 1000, (1 << 21) + 13):  # the last in several tasks
        lens = rng.integers(0, 1 << 62, n) >> rng.integers(0, 63, n)
        want_or = int(np.bitwise_or.reduce(lens)) if n else 0
        for threads in (1, 2, 5):
            out = np.full(n, 0xAB, dtype)
            assert native.narrow_lengths(lens, out, threads) == want_or, seed
            assert np.array_equal(out, lens.astype(dtype)), (seed, n, threads)


def test_narrow_lengths_refuses_outputs_it_cannot_write_in_place():
    lens = np.arange(6, dtype=np.int64)
    raw = np.zeros(13, np.uint8)
    bad = [np.empty(5, np.uint8), np.empty(7, np.uint8), np.empty(6, np.int16),
           np.empty(6, ">u2"), np.empty(6, np.float32), np.empty((2, 3), np.uint8),
           np.empty(12, np.uint16)[::2], raw[1:13].view(np.uint16)]
    for out in bad:
        with pytest.raises((ValueError, TypeError)):
            native.narrow_lengths(lens, out)
    frozen = np.zeros(6, np.uint8)
    frozen.flags.writeable = False
    with pytest.raises(ValueError):
        native.narrow_lengths(lens, frozen)
    assert not frozen.any()
