"""Each row's dictionary entry looked up (kernels/page_rows.cu and its twin): the twin against
a row-by-row model of the rule on fresh random rows (indices past their row group's entries,
groups without entries, every row or the selected ones, one output or two), and the device
against the twin on the same rows, its outputs poisoned first, byte for byte."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from fsstgpu.kernels.page_rows import dictionary_lookup

sys.path.insert(0, str(Path(__file__).parent))
from gpu_poison import poison_pool  # noqa: E402

DTYPES = (np.int32, np.uint32, np.int64, np.uint64)


def _case(rng, dtype, n=None):
    """Rows of a few pages in a few row groups, their indices mostly inside their group's
    entries, some past them, and dictionaries' values to look up."""
    n = int(rng.integers(0, 3000)) if n is None else n
    groups = int(rng.integers(1, 6))
    counts = rng.integers(0, 50, groups).astype(np.int64)
    base = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
    entries = int(counts.sum())
    pages = int(rng.integers(1, 9))
    page_group = np.sort(rng.integers(0, groups, pages)).astype(np.int64)
    page = np.sort(rng.integers(0, pages, n)).astype(np.int64)
    index = rng.integers(0, 60, n).astype(np.uint32)  # (past 50: some beyond every group)
    at = rng.integers(0, max(n, 1), n).astype(np.int64)
    rows = rng.random(n) < 0.8
    info = np.iinfo(dtype)
    high = min(int(info.max), 1 << 40)
    values = rng.integers(max(int(info.min), -high), high, max(entries, 1)).astype(dtype)
    values2 = rng.integers(max(int(info.min), -high), high, max(entries, 1)).astype(dtype)
    return rows, index, at, page, page_group, counts, base, entries, values, values2


def _model(rows, index, at, page, page_group, counts, base, entries, values, out, every,
           values2=None, out2=None):
    past = False
    for i in range(len(out)):
        g = page_group[page[i]]
        k = int(index[at[i]])
        past |= bool(rows[i]) and k >= counts[g]
        e = min(max(int(base[g]) + k, 0), max(entries - 1, 0))
        if rows[i] or every:
            out[i] = values[e]
            if values2 is not None:
                out2[i] = values2[e]
    return past


@pytest.mark.parametrize("dtype", DTYPES)
def test_the_twin_is_the_rule(fresh_rng, dtype):
    for _ in range(20):
        rows, index, at, page, page_group, counts, base, entries, values, values2 = \
            _case(fresh_rng, dtype, int(fresh_rng.integers(0, 300)))
        every, two = bool(fresh_rng.integers(2)), bool(fresh_rng.integers(2))
        start = fresh_rng.integers(0, 100, len(rows)).astype(dtype)
        got, want = start.copy(), start.copy()
        got2, want2 = start[::-1].copy(), start[::-1].copy()
        past = dictionary_lookup(np, rows, index, at, page, page_group, counts, base, entries,
                                 values, got, every=every, values2=values2 if two else None,
                                 out2=got2 if two else None)
        expect = _model(rows, index, at, page, page_group, counts, base, entries, values, want,
                        every, values2 if two else None, want2 if two else None)
        assert got.tobytes() == want.tobytes() and got2.tobytes() == want2.tobytes()
        assert bool(past[0]) == expect


def test_wrong_dtypes_are_refused_on_the_device_path():
    class FakeXp:  # (the checks run before any launch: no device needed)
        pass
    rows, index = np.ones(2, bool), np.zeros(2, np.int64)
    with pytest.raises(TypeError, match="uint32"):
        dictionary_lookup(FakeXp, rows, index, np.arange(2), np.zeros(2, np.int64),
                          np.zeros(1, np.int64), np.array([2]), np.array([0]), 2,
                          np.zeros(2, np.int32), np.zeros(2, np.int32))


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_the_device_looks_up_as_the_twin(fresh_rng, dtype):
    import cupy as cp

    poison_pool(cp)
    for n in (0, 1, 257, int(fresh_rng.integers(1000, 300_000))):
        rows, index, at, page, page_group, counts, base, entries, values, values2 = \
            _case(fresh_rng, dtype, n)
        for every in (False, True):
            for two in (False, True):
                poison = fresh_rng.integers(0, 255, (2, n * np.dtype(dtype).itemsize),
                                            dtype=np.uint8)
                want, want2 = (poison[k].view(dtype).copy() for k in range(2))
                past = dictionary_lookup(np, rows, index, at, page, page_group, counts, base,
                                         entries, values, want, every=every,
                                         values2=values2 if two else None,
                                         out2=want2 if two else None)
                got, got2 = (cp.asarray(poison[k].view(dtype)) for k in range(2))
                dev = [cp.asarray(a) for a in (rows, index, at, page, page_group, counts,
                                               base)]
                hit = dictionary_lookup(cp, *dev, entries, cp.asarray(values), got,
                                        every=every,
                                        values2=cp.asarray(values2) if two else None,
                                        out2=got2 if two else None)
                assert got.get().tobytes() == want.tobytes(), (n, every, two)
                assert got2.get().tobytes() == want2.tobytes(), (n, every, two)
                assert bool(hit.get()[0]) == bool(past[0]), (n, every, two)
