"""Joining device columns whose offsets start inside their data (fsstgpu.gpu.concat).

A hand-built :class:`~fsstgpu.DeviceStringArray` may have ``offsets[0] > 0`` and data past its
last offset (Arrow allows both; ``compress_device`` takes them). The joins took each part's data
buffer for its strings' bytes: string 0 of such a part gained the bytes before it and later
parts' strings moved. The CPU test runs the copy join on NumPy stand-ins (the join's steps are
array calls NumPy also has); the GPU tests join CuPy parts, by copy and in place, with the pool
poisoned first, against pyarrow's concatenation of the host columns.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from fsstgpu.errors import CorruptDataError
from fsstgpu.gpu import concat
from fsstgpu.gpu.concat import concat_device_arrays, joinable_in_place
from fsstgpu.gpu.strings import DeviceStringArray

sys.path.insert(0, str(Path(__file__).parent))
from seeds import fresh_seed  # noqa: E402


def _columns(rng, sizes, type_=pa.string()):
    words = ["", "a", "bc", "def", "naïve", "x" * 70]
    return [pa.array([None if rng.random() < 0.2 else words[int(rng.integers(len(words)))]
                      for _ in range(n)], type_) for n in sizes]


def _host_parts(rng, cols, leads, trails):
    """Each column as (offsets from ``lead``, data with ``lead`` junk bytes before the strings
    and ``trail`` after them, validity or None)."""
    out = []
    for col, lead, trail in zip(cols, leads, trails, strict=True):
        width = np.int64 if pa.types.is_large_string(col.type) else np.int32
        bufs = col.buffers()
        offs = np.frombuffer(bufs[1], width)[: len(col) + 1]
        body = (np.frombuffer(bufs[2], np.uint8)[offs[0] : offs[-1]] if bufs[2] is not None
                else np.zeros(0, np.uint8))
        junk = rng.integers(0, 256, lead + trail, dtype=np.uint8)
        data = np.concatenate([junk[:lead], body, junk[lead:]])
        validity = (np.frombuffer(bufs[0], np.uint8)[: (len(col) + 7) // 8].copy()
                    if col.null_count else None)
        out.append(((offs - offs[0] + lead).astype(width), data, validity, col))
    return out


def _parts(xp, host):
    return [DeviceStringArray(col.type, len(col), xp.asarray(offs), xp.asarray(data),
                              None if validity is None else xp.asarray(validity),
                              col.null_count)
            for offs, data, validity, col in host]


def _one_allocation(cp, host):
    """The parts as one batch decode lays them out (data end to end in one buffer, offsets in
    8-byte aligned slots of another), so that :func:`joinable_in_place` says yes."""
    data = cp.asarray(np.concatenate([d for _, d, _, _ in host]))
    slots = [-(-o.nbytes // 8) * 8 for o, _, _, _ in host]
    raw = cp.zeros(sum(slots), cp.uint8)
    parts, at, byte = [], 0, 0
    for (offs, d, validity, col), slot in zip(host, slots, strict=True):
        raw[byte : byte + offs.nbytes] = cp.asarray(offs.view(np.uint8))
        offsets = raw[byte : byte + offs.nbytes].view(offs.dtype)
        parts.append(DeviceStringArray(col.type, len(col), offsets, data[at : at + d.size],
                                       None if validity is None else cp.asarray(validity),
                                       col.null_count))
        at, byte = at + d.size, byte + slot
    return parts


CASES = {  # sizes, junk before each part's strings, junk after
    "leading": ([5, 7], [3, 0], [0, 0]),
    "trailing": ([5, 7, 4], [0, 0, 0], [2, 9, 1]),
    "both, every part": ([40, 1, 33], [11, 1, 5], [3, 0, 8]),
    "empty parts": ([0, 6, 0, 0, 9], [4, 2, 0, 7, 1], [1, 0, 3, 0, 0]),
    "all empty": ([0, 0], [5, 0], [0, 2]),
}


# ---------------------------------------------------------------- CPU (NumPy stand-ins)
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("type_", [pa.string(), pa.large_string()])
def test_copy_join_takes_the_bytes_the_offsets_span(case, type_, monkeypatch):
    monkeypatch.setattr(concat, "get_cupy", lambda: np)
    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    sizes, leads, trails = CASES[case]
    cols = _columns(rng, sizes, type_)
    joined = concat_device_arrays(_parts(np, _host_parts(rng, cols, leads, trails)))
    assert joined.to_arrow().equals(pa.chunked_array(cols, type_)), f"seed {seed}"
    assert int(joined.offsets[0]) == 0 and int(joined.offsets[-1]) == joined.data.size


@pytest.mark.parametrize("first, last, size", [(-1, 3, 5), (4, 3, 5), (0, 6, 5)])
def test_offsets_outside_the_data_are_named(first, last, size, monkeypatch):
    monkeypatch.setattr(concat, "get_cupy", lambda: np)
    good = DeviceStringArray(pa.string(), 1, np.array([0, 1], np.int32), np.zeros(1, np.uint8),
                             None, 0)
    bad = DeviceStringArray(pa.string(), 1, np.array([first, last], np.int32),
                            np.zeros(size, np.uint8), None, 0)
    with pytest.raises(CorruptDataError, match=r"part 1: its offsets run from"):
        concat_device_arrays([good, bad])


# ---------------------------------------------------------------- GPU
def _poison_pool(cp, nbytes=64 << 20):
    """Fill the pool's free memory with 0xAB so that bytes a join forgot to write show up."""
    junk = cp.full(nbytes, 0xAB, dtype=cp.uint8)
    del junk


@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("type_", [pa.string(), pa.large_string()])
def test_gpu_copy_join_takes_the_bytes_the_offsets_span(case, type_):
    import cupy as cp

    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    sizes, leads, trails = CASES[case]
    cols = _columns(rng, sizes, type_)
    parts = _parts(cp, _host_parts(rng, cols, leads, trails))
    _poison_pool(cp)
    for consume in (False, True):   # separate allocations: copied either way
        joined = concat_device_arrays(parts, consume=consume)
        assert joined.to_arrow().equals(pa.chunked_array(cols, type_)), f"seed {seed} {consume}"
        assert int(joined.offsets[0]) == 0, f"seed {seed}"


@pytest.mark.gpu
@pytest.mark.parametrize("case", CASES)
def test_gpu_in_place_join_only_of_abutting_strings(case):
    import cupy as cp

    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    sizes, leads, trails = CASES[case]
    cols = _columns(rng, sizes)
    host = _host_parts(rng, cols, leads, trails)
    _poison_pool(cp)
    parts = _one_allocation(cp, host)
    assert joinable_in_place(parts), f"seed {seed}"
    joined = concat_device_arrays(parts, consume=True)
    assert joined.to_arrow().equals(pa.chunked_array(cols)), f"seed {seed}"
    # data left where it lies only when each part's strings run on from the previous part's
    abutting = all(t == 0 for t in trails[:-1]) and all(lead == 0 for lead in leads[1:])
    assert (joined.data.data.ptr == parts[0].data.data.ptr) == abutting, f"seed {seed}"
