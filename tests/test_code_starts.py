"""The code starts a batch marks for the GPU's check of stored code offsets (CPU side).

A column that keeps stored code offsets and is not known good (a file's column, a blob that
stores them) has, in its batch's ``code_starts`` bitmap, the code start of every string with
codes at its place among the batch's codes (``col_wide`` bit 3 says which columns); the checked
decode on the GPU matches them against the output starts (``tests/test_gpu_string_ends.py``).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import fsstgpu
from fsstgpu import CompressedStringArray, native
from fsstgpu.gpu.layout import HostBatch, checks_code_starts
from fsstgpu.gpu.staged import StagedColumn

FIELDS = ("type", "length", "tables", "block_starts", "codes", "lengths", "validity",
          "null_count", "split_size", "split_codes", "split_out", "split_table", "chunk_lengths")


def _bits(positions, nbits: int) -> np.ndarray:
    """The LSB-first bitmap of ``positions`` (the reference, with numpy's packbits)."""
    flags = np.zeros(max(nbits, 1), bool)
    flags[np.asarray(positions, np.int64)] = True
    return np.packbits(flags, bitorder="little")


def test_marks_and_bit_copies_match_a_reference():
    rng = np.random.default_rng(7)
    for _ in range(200):
        counts = rng.integers(0, 4, size=int(rng.integers(0, 40)))
        co = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        bit = int(rng.integers(0, 20))
        nbits = bit + int(co[-1]) + int(rng.integers(1, 9))
        out = np.zeros(-(-nbits // 8), np.uint8)
        native.mark_code_starts(co, out, bit)
        want = _bits(bit + co[:-1][counts > 0], nbits)
        assert np.array_equal(out, want[: out.size])
        src = rng.integers(0, 256, size=int(rng.integers(1, 40)), dtype=np.uint8)  # words too
        n = int(rng.integers(0, 8 * src.size + 1))
        dst = rng.integers(0, 256, size=-(-(bit + n) // 8) + 1, dtype=np.uint8)
        before = dst.copy()
        native.or_bits(src, n, dst, bit)
        ones = np.flatnonzero(np.unpackbits(src, bitorder="little")[:n]) + bit
        assert np.array_equal(dst, before | _bits(ones, 8 * dst.size)[: dst.size])


def test_marks_refuse_positions_outside_the_bitmap():
    out = np.zeros(1, np.uint8)
    with pytest.raises(ValueError, match="outside"):
        native.mark_code_starts(np.array([0, 1, 8, 9]), out, 0)  # string 2 starts at code 8
    with pytest.raises(ValueError, match="outside"):
        native.mark_code_starts(np.array([0, 1, 2]), out, 7)  # 7 + 1 = bit 8 of an 8-bit map
    with pytest.raises(ValueError):
        native.or_bits(np.zeros(2, np.uint8), 16, out, 0)


def _stored(carr) -> CompressedStringArray:
    return CompressedStringArray(code_offsets=carr.code_offsets,
                                 **{name: getattr(carr, name) for name in FIELDS})


@pytest.mark.parametrize("staged", [False, True], ids=["columns", "staged"])
def test_a_batch_marks_the_code_starts_of_columns_with_stored_offsets(staged):
    rng = np.random.default_rng(11)
    carrs = []
    for k in range(4):
        values = [None if rng.random() < 0.1 else "x" * int(rng.integers(0, 30)) + str(i)
                  if rng.random() < 0.8 else "" for i in range(int(rng.integers(1, 300)))]
        carr = fsstgpu.compress(pa.array(values))
        carrs.append(carr if k == 1 else _stored(carr))  # column 1 the encoder's: trusted
    assert [checks_code_starts(c) for c in carrs] == [True, False, True, True]
    cols = [StagedColumn(c, codes=c.codes) for c in carrs] if staged else carrs
    batch = HostBatch(cols, lengths="narrow", joined=[1, 1, 2] if staged else None)
    assert [bool(w & 8) for w in batch.col_wide] == [True, False, True, True]
    want = []
    for carr, col in zip(carrs, batch.columns, strict=True):
        if checks_code_starts(carr):
            co = np.asarray(carr.code_offsets)
            want.extend(col.code_start + co[:-1][np.diff(co) > 0])
    assert np.array_equal(batch.code_starts, _bits(want, 8 * batch.code_starts.size))
    assert batch.code_starts.size == -(-batch.ncodes // 8)
    trusted = HostBatch([carrs[1]])  # nothing to match: no bitmap, no bit 3
    assert trusted.code_starts.size == 0 and not trusted.col_wide[0] & 8


def test_bit_copies_refuse_sizes_past_int64():
    # the checks summed bit + nbits in int64: a forged bit near 2**63 wrapped past them and the
    # copy wrote at bit / 8 (a segfault), a forged nbits near 2**63 was accepted
    out = np.zeros(4, np.uint8)
    with pytest.raises(ValueError, match="out must hold"):
        native.or_bits(np.ones(2, np.uint8), 8, out, 2**63 - 4)
    with pytest.raises(ValueError, match="src must hold"):
        native.or_bits(np.ones(2, np.uint8), 2**63 - 1, out, 0)
    assert not out.any()
