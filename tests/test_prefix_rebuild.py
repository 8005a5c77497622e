"""DELTA_BYTE_ARRAY values rebuilt (kernels/prefix_rebuild.py): the chain links against a
brute-force search, the host's pointer jumping and the device's warp a value against a model
that rebuilds the values one after another, on fresh random pages (prefix shapes real text has
and shapes it has not: rising prefixes, long runs of one prefix), the device's output poisoned
first; a broken chain or a suffix outside the bytes refused by both."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from fsstgpu.errors import CorruptDataError
from fsstgpu.kernels.prefix_rebuild import prefix_links, rebuild_prefixed

sys.path.insert(0, str(Path(__file__).parent))
from gpu_poison import poison_pool  # noqa: E402


def _values(rng, m: int) -> list[bytes]:
    """``m`` values of one page in one of a few prefix shapes."""
    shape = int(rng.integers(0, 4))
    if shape == 0:  # paths: sorted, sharing directories
        parts = [b"usr", b"lib", b"share", b"x86_64", b"doc", b"a", b"bb"]
        out = sorted(b"/" + b"/".join(parts[int(i)] for i in rng.integers(0, 7, int(
            rng.integers(1, 6)))) for _ in range(m))
        return out
    if shape == 1:  # rising: each value the one before and a byte (a chain as long as the page)
        return [b"a" * (k + 1) for k in range(m)]
    if shape == 2:  # one long shared prefix, then short differing tails
        head = bytes(rng.integers(0, 256, int(rng.integers(0, 70)), dtype=np.uint8))
        return [head + bytes(rng.integers(0, 256, int(rng.integers(0, 4)), dtype=np.uint8))
                for _ in range(m)]
    return [bytes(rng.integers(97, 99, int(rng.integers(0, 12)), dtype=np.uint8))
            for _ in range(m)]


def _page(rng, pages: int):
    """Pages' values laid out as page_prefixes lays them (places without a value between
    pages), their suffixes at random places of one buffer: the arrays, the levels and the
    values end to end."""
    pre, tail, tail_start, values, data = [], [], [], [], bytearray()
    most = 1
    for _ in range(pages):
        for _ in range(int(rng.integers(0, 3))):  # places without a value
            pre.append(0), tail.append(0), tail_start.append(len(data))
        page = _values(rng, int(rng.integers(1, 300)))
        most = max(most, len(page))
        data += bytes(rng.integers(0, 256, int(rng.integers(0, 20)), dtype=np.uint8))
        before = b""
        for k, v in enumerate(page):
            shared = 0
            while k and shared < min(len(v), len(before)) and v[shared] == before[shared]:
                shared += 1
            shared = int(rng.integers(0, shared + 1)) if rng.random() < 0.1 else shared
            pre.append(shared), tail.append(len(v) - shared), tail_start.append(len(data))
            data += v[shared:]
            values.append(v)
            before = v
    pre, tail = np.array(pre, np.int64), np.array(tail, np.int64)
    at = np.concatenate([[0], np.cumsum(pre + tail)]).astype(np.int64)
    return (np.frombuffer(bytes(data), np.uint8), pre, tail, at,
            np.array(tail_start, np.int64), most.bit_length(), b"".join(values))


def _links_brute(pre):
    return [next((i for i in range(k - 1, -1, -1) if pre[i] < pre[k]), -1) if pre[k] else -1
            for k in range(len(pre))]


def test_links_are_the_last_shorter_prefix(fresh_rng):
    for _ in range(30):
        n = int(fresh_rng.integers(1, 200))
        pre = fresh_rng.integers(0, int(fresh_rng.integers(1, 20)), n)
        pre[0] = 0
        levels = int(fresh_rng.integers(n.bit_length(), n.bit_length() + 3))
        assert prefix_links(np, pre, levels).tolist() == _links_brute(pre.tolist())


def test_the_host_rebuilds_the_values(fresh_rng):
    for _ in range(10):
        data, pre, tail, at, tail_start, levels, want = _page(fresh_rng, int(
            fresh_rng.integers(1, 5)))
        assert bytes(rebuild_prefixed(np, data, pre, tail, at, tail_start, levels)) == want


def _broken(rng, data, pre, tail, at, tail_start):
    """A copy with a chain broken (a prefix where none shorter lies before) or a suffix moved
    outside the bytes."""
    pre, tail_start = pre.copy(), tail_start.copy()
    if rng.random() < 0.5 or not tail.any():
        pre[0] = 1 + int(rng.integers(0, 3))
        at = np.concatenate([[0], np.cumsum(pre + tail)]).astype(np.int64)
    else:
        k = int(rng.choice(np.flatnonzero(tail)))
        tail_start[k] = len(data) - int(rng.integers(0, tail[k]))
    return pre, at, tail_start


def test_the_host_refuses_a_broken_chain_or_a_suffix_outside(fresh_rng):
    data, pre, tail, at, tail_start, levels, _ = _page(fresh_rng, 2)
    bad_pre, bad_at, bad_start = _broken(fresh_rng, data, pre, tail, at, tail_start)
    with pytest.raises(CorruptDataError):
        rebuild_prefixed(np, data, bad_pre, tail, bad_at, bad_start, levels)


@pytest.mark.gpu
def test_the_device_rebuilds_the_values_as_the_twin(fresh_rng):
    import cupy as cp

    for _ in range(5):
        poison_pool(cp)
        data, pre, tail, at, tail_start, levels, want = _page(fresh_rng, int(
            fresh_rng.integers(1, 6)))
        link = prefix_links(cp, cp.asarray(pre), levels)
        assert link.get().tolist() == prefix_links(np, pre, levels).tolist()
        got = rebuild_prefixed(cp, cp.asarray(data), *(cp.asarray(a) for a in (
            pre, tail, at, tail_start)), levels)
        assert bytes(got.get()) == want == bytes(rebuild_prefixed(
            np, data, pre, tail, at, tail_start, levels))


@pytest.mark.gpu
def test_the_device_refuses_what_the_host_refuses(fresh_rng):
    import cupy as cp

    data, pre, tail, at, tail_start, levels, _ = _page(fresh_rng, 3)
    for _ in range(4):
        bad_pre, bad_at, bad_start = _broken(fresh_rng, data, pre, tail, at, tail_start)
        with pytest.raises(CorruptDataError):
            rebuild_prefixed(np, data, bad_pre, tail, bad_at, bad_start, levels)
        with pytest.raises(CorruptDataError):
            rebuild_prefixed(cp, cp.asarray(data), *(cp.asarray(a) for a in (
                bad_pre, tail, bad_at, bad_start)), levels)
