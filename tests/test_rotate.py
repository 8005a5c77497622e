"""Tests of fsstgpu.kernels.rotate: the plan, a model of the two kernels, the NumPy twin, the GPU.

The kernel model is a line-by-line Python port of the index arithmetic of ``rotate.cu`` executed
under random legal schedules (blocks claim tickets in order, load, publish, wait only for what the
kernel waits for, store); a missing wait shows up as a wrong result, a wait on a later ticket as
an assertion.  GPU tests draw a fresh seed from os.urandom and name it in failure messages.
"""

from __future__ import annotations

import importlib
import os
import random
from pathlib import Path

import numpy as np
import pytest

from fsstgpu.kernels.rotate import plan, rotate, rotate_cpu

# the module itself: fsstgpu.kernels exports the function under the same name
rmod = importlib.import_module("fsstgpu.kernels.rotate")

DTYPES = [np.uint8, np.uint16, np.int32, np.float64, np.complex128]


def _seed() -> int:
    return int.from_bytes(os.urandom(8), "little")


def _random(n, dtype, seed):
    raw = np.random.default_rng(seed).integers(0, 256, size=n * np.dtype(dtype).itemsize,
                                               dtype=np.uint8)
    return raw.view(dtype)


def _adversarial_ks(n: int, tile: int = 4096) -> list[int]:
    ks = {0, 1, 2, n - 1, n - 2, n // 2, n // 2 + 1, n // 3, n // 3 + 1, 2 * n // 3, n, n + 3,
          -1, -n // 3, 3 * n + 7, 1000, 4096 * 3 + 5, 7919, tile - 1, tile, tile + 1,
          2 * tile - 1, 2 * tile + 1}
    return sorted(k for k in ks)


# ------------------------------------------------------------------------------------------------
# Plan
# ------------------------------------------------------------------------------------------------

def _apply_plan(n, shift):
    buf = np.arange(n, dtype=np.int64)
    for step in plan(n, shift):
        _, off, length, d, left = step[:5]
        assert 0 <= off and off + length <= n and 0 < d < length
        if step[0] == "short":
            assert d <= rmod.SCRATCH_BYTES
        else:
            lanes, rem = step[5], step[6]
            assert length == lanes * d + rem and lanes <= rmod.LMAX and rem <= rmod.SCRATCH_BYTES
            assert rmod.column_width(lanes) >= rmod.COLUMN_MIN_W
        part = buf[off:off + length]
        part[:] = np.roll(part, -d if left else d)
    return buf


@pytest.mark.parametrize("n", [2, 3, 17, 1000, 10 ** 6 + 3, (1 << 30) + 1, 1 << 34])
def test_plan_is_a_rotation(n):
    S = rmod.SCRATCH_BYTES
    ks = {1, n - 1, n // 2, n // 3, n // 3 + 1, S, S + 1, n // 7, n // 200 + 1, 2 * n // 5 + 3,
          n // (rmod.LMAX + 5) + 11, (n * 5) // 8 + 1}
    for k in sorted(k for k in ks if 0 < k < n):
        steps = plan(n, k)
        # one pass per LMAX - 1 lanes, plus a Euclid-like tail
        assert len(steps) <= 64 + n // ((rmod.LMAX - 1) * min(k, n - k)), (n, k, len(steps))
        if n <= 10 ** 7:
            assert np.array_equal(_apply_plan(n, k), np.roll(np.arange(n), -k)), (n, k)
        # traffic bound: within LMAX/(LMAX-1) of one pass plus a geometric tail
        assert sum(s[2] for s in steps) <= 3 * n


def test_plan_single_pass_for_benchmark_shifts():
    for es, n in ((4, 1 << 28), (1, 1 << 30)):
        for k in (1, 1000, 4096 * 3 + 5, n // 3, n // 2, n - 1):
            assert len(plan(n * es, k * es)) == 1, (es, k)


def test_plan_trivial():
    assert plan(0, 5) == [] and plan(1, 5) == [] and plan(10, 0) == [] and plan(10, 30) == []


# ------------------------------------------------------------------------------------------------
# Model of the kernels (port of rotate.cu index arithmetic), run under random schedules
# ------------------------------------------------------------------------------------------------

class _Block:
    def __init__(self, ticket, reads, waits, writes):
        self.ticket, self.reads, self.waits, self.writes = ticket, reads, waits, writes


def _short_tiles(nb, d, left, tile, al0):
    """The short-shift kernels' tiles, by ticket: ``(j, p0, p1, s0, waits)``.

    Tile ``[p0, p1)`` of the result comes from source offset ``s0``; ``waits`` are the tickets
    whose tiles it overwrites before they have read them (tickets run backward for right shifts).
    """
    ntiles = -(-(nb + al0) // tile)

    def bound(t):
        return 0 if t <= 0 else min(nb, t * tile - al0)

    for j in range(ntiles):
        t = j if left else ntiles - 1 - j
        p0, p1 = bound(t), bound(t + 1)
        s0 = p0 + d if left else p0 - d
        r0, r1 = (p0 - d, p1 - d) if left else (p0 + d, p1 + d)
        r0, r1 = max(r0, 0), min(r1, nb)
        waits = []
        if r0 < r1:
            for u in range((r0 + al0) // tile, (r1 - 1 + al0) // tile + 1):
                if u != t:
                    waits.append(u if left else ntiles - 1 - u)
        yield j, p0, p1, s0, waits


def _short_blocks(nb, d, left, tile, al0):
    """reads: (kind 'a' array / 's' saved, start, len); writes: (dst, offset in buffer, len)."""
    blocks = []
    for j, p0, p1, s0, waits in _short_tiles(nb, d, left, tile, al0):
        ln = p1 - p0
        if left:
            in_a = max(0, min(ln, nb - s0))
            reads = [("a", s0, in_a), ("s", max(0, s0 + in_a - nb), ln - in_a)]
        else:
            in_s = max(0, min(ln, -s0))
            reads = [("s", s0 + d, in_s), ("a", max(0, s0), ln - in_s)]
        blocks.append(_Block(j, reads, waits, [(p0, 0, ln)]))
    return blocks


def _column_tiles(D, S, left, W):
    """The column kernels' tiles, by ticket: ``(j, X0, X1, q0, q1, y0, y1, r0, r1, waits)``.

    Columns ``[X0, X1)`` of every lane; ``[q0, q1)`` of them also take saved remainder bytes;
    the first lane's bytes land at ``[y0, y1)``, of which ``[r0, r1)`` inside the last lane;
    ``waits`` are the tickets whose columns those overwrite.
    """
    ncols = -(-D // W)
    for j in range(ncols):
        c = ncols - 1 - j if left else j
        X0, X1 = c * W, min(D, c * W + W)
        q0, q1 = (X0, min(X1, S)) if left else (max(X0, D - S), X1)
        y0 = X0 + S if left else X0 - S
        y1 = y0 + (X1 - X0)
        r0, r1 = max(y0, 0), min(y1, D)
        waits = []
        if r0 < r1:
            for u in range(r0 // W, (r1 - 1) // W + 1):
                if u != c:
                    waits.append(ncols - 1 - u if left else u)
        yield j, X0, X1, q0, q1, y0, y1, r0, r1, waits


def _column_blocks(nb, D, L, S, left, W):
    def lane_start(l):
        return l * D if left else nb - (l + 1) * D

    rem0 = L * D if left else 0
    blocks = []
    for j, X0, X1, q0, q1, y0, y1, r0, r1, waits in _column_tiles(D, S, left, W):
        ln = X1 - X0
        reads, writes = [], []
        pos = 0
        lane_pos = []
        for l in range(L):
            reads.append(("a", lane_start(l) + X0, ln))
            lane_pos.append(pos)
            pos += ln
        rpos = pos
        if q0 < q1:
            reads.append(("s", q0 if left else q0 - (D - S), q1 - q0))
        for l in range(1, L):
            writes.append((lane_start(l - 1) + X0, lane_pos[l], ln))
        if q0 < q1:
            writes.append((lane_start(L - 1) + q0, rpos, q1 - q0))
        if r0 < r1:
            writes.append((lane_start(L - 1) + r0, lane_pos[0] + (r0 - y0), r1 - r0))
        if left:
            e0 = max(y0, D)
            if e0 < y1:
                writes.append((rem0 + (e0 - D), lane_pos[0] + (e0 - y0), y1 - e0))
        else:
            e1 = min(y1, 0)
            if y0 < e1:
                writes.append((rem0 + (y0 + S), lane_pos[0], e1 - y0))
        blocks.append(_Block(j, reads, waits, writes))
    return blocks


def _run_model(a, blocks, saved, rng, window):
    """Execute blocks under a random legal schedule: claims in ticket order, at most `window`
    blocks resident, loads then publish, stores only after every waited ticket published."""
    n_blocks = len(blocks)
    published = [False] * n_blocks
    bufs = {}
    resident = []
    nxt = 0
    done = 0
    while done < n_blocks:
        while nxt < n_blocks and len(resident) < window:
            resident.append(nxt)
            nxt += 1
        b = blocks[rng.choice(resident)]
        j = b.ticket
        assert all(w < j for w in b.waits), "a block waits for a later ticket"
        if j not in bufs:                       # load phase
            parts = []
            for kind, start, ln in b.reads:
                if ln > 0:
                    parts.append((a if kind == "a" else saved)[start:start + ln].copy())
            bufs[j] = np.concatenate(parts) if parts else np.zeros(0, np.uint8)
            published[j] = True
            continue
        if not all(published[w] for w in b.waits):
            continue
        buf = bufs.pop(j)
        for dst, src, ln in b.writes:
            a[dst:dst + ln] = buf[src:src + ln]
        resident.remove(j)
        done += 1


@pytest.mark.parametrize("trial", range(40))
def test_kernel_model_short(trial):
    rng = random.Random(trial)
    nb = rng.choice([1, 2, 5, 64, 200, 1000, 4099, 5000])
    if nb < 2:
        return
    d = rng.randrange(1, nb)
    left = rng.random() < 0.5
    tile = rng.choice([16, 32, 48, 64])
    al0 = rng.randrange(16)
    a = np.random.default_rng(trial).integers(0, 256, nb, dtype=np.uint8)
    expect = np.roll(a, -d if left else d)
    saved = a[:d].copy() if left else a[nb - d:].copy()
    _run_model(a, _short_blocks(nb, d, left, tile, al0), saved, rng, rng.choice([1, 2, 3, 64]))
    assert np.array_equal(a, expect), (nb, d, left, tile, al0)


def _column_case(rng):
    """A random column-kernel case ``(D, L, S, nb, left, W)``: shift D, L lanes, remainder S."""
    D = rng.randrange(1, 300)
    L = rng.randrange(2, 6)
    S = rng.randrange(0, D)
    nb = L * D + S
    left = rng.random() < 0.5
    W = rng.choice([16, 32, 48])
    return D, L, S, nb, left, W


@pytest.mark.parametrize("trial", range(60))
def test_kernel_model_column(trial):
    rng = random.Random(1000 + trial)
    D, L, S, nb, left, W = _column_case(rng)
    a = np.random.default_rng(trial).integers(0, 256, nb, dtype=np.uint8)
    expect = np.roll(a, -D if left else D)
    rem0 = L * D if left else 0
    saved = a[rem0:rem0 + S].copy()
    _run_model(a, _column_blocks(nb, D, L, S, left, W), saved, rng, rng.choice([1, 2, 4, 100]))
    assert np.array_equal(a, expect), (nb, D, L, S, left, W)


# ------------------------------------------------------------------------------------------------
# Model of the pipelined persistent kernels (variant "pipe"): word-level port of rotate.cu's
# short_issue / column_issue / stores over a simulated address space, run by P persistent blocks
# that each hold up to PIPE_STAGES claimed tickets, under random interleavings.
# ------------------------------------------------------------------------------------------------

class _Mem:
    """A simulated allocation: absolute addresses [start, start + size)."""

    def __init__(self, start, size, fill):
        self.start, self.buf = start, np.full(size, fill, np.uint8)

    def word(self, addr, must_cover=None):
        assert addr % 16 == 0, "cp.async word not 16-byte aligned"
        o = addr - self.start
        assert 0 <= o and o + 16 <= self.buf.size, "word outside its allocation"
        if must_cover is not None:           # an array word must hold a byte of the array
            lo, hi = must_cover
            assert addr < hi and addr + 16 > lo, "word holds no byte of the array"
        return self.buf[o:o + 16].copy()


class _PipeBlockWork:
    def __init__(self, ticket, loads, waits, stores):
        # loads: (mem, address, stage offset, cover); stores: (dst address, stage offset, len)
        self.ticket, self.loads, self.waits, self.stores = ticket, loads, waits, stores


def _pipe_short_work(nb, d, left, tile, al0, base, sbase, mem_a, mem_s):
    work = []
    for j, p0, p1, s0, waits in _short_tiles(nb, d, left, tile, al0):
        w0 = (base + s0) & ~15
        nw = (((base + s0 + p1 - p0 + 15) & ~15) - w0) >> 4
        v0 = w0 - base
        loads = []
        for i in range(nw):
            v = v0 + 16 * i
            from_copy = (v + 16 > nb) if left else (v < 0)
            if from_copy:
                loads.append((mem_s, (sbase + v) % (1 << 64), 16 * i, None))
            else:
                loads.append((mem_a, base + v, 16 * i, (base, base + nb)))
        stores = [(base + p0, (base + s0) & 15, p1 - p0)]
        work.append(_PipeBlockWork(j, loads, waits, stores))
    return work


def _pipe_column_work(nb, D, L, S, left, W, base, saved, mem_a, mem_s):
    stride = W + 64

    def ls(l):
        return l * D if left else nb - (l + 1) * D

    def words(mem, g, ln, at, cover):
        w0 = g & ~15
        nw = (((g + ln + 15) & ~15) - w0) >> 4
        return [(mem, w0 + 16 * i, at + 16 * i, cover) for i in range(nw)], at + (g & 15)

    rem0 = L * D if left else 0
    work = []
    for j, X0, X1, q0, q1, y0, y1, r0, r1, waits in _column_tiles(D, S, left, W):
        ln = X1 - X0
        loads, bufs = [], []
        for l in range(L):
            ws, b = words(mem_a, base + ls(l) + X0, ln, l * stride, (base, base + nb))
            loads += ws
            bufs.append(b)
        rbuf = None
        if q0 < q1:
            ws, rbuf = words(mem_s, saved + (q0 if left else q0 - (D - S)), q1 - q0, L * stride,
                             None)
            loads += ws
        stores = [(base + ls(l - 1) + X0, bufs[l], ln) for l in range(1, L)]
        if q0 < q1:
            stores.append((base + ls(L - 1) + q0, rbuf, q1 - q0))
        if r0 < r1:
            stores.append((base + ls(L - 1) + r0, bufs[0] + (r0 - y0), r1 - r0))
        if left:
            e0 = max(y0, D)
            if e0 < y1:
                stores.append((base + rem0 + (e0 - D), bufs[0] + (e0 - y0), y1 - e0))
        else:
            e1 = min(y1, 0)
            if y0 < e1:
                stores.append((base + rem0 + (y0 + S), bufs[0], e1 - y0))
        work.append(_PipeBlockWork(j, loads, waits, stores))
    return work


def _run_pipe_model(mem_a, work, rng, blocks, stages, ring):
    """P persistent blocks; each claims `stages` tickets up front, then one per iteration (only
    while its last claim is < nt).  An iteration: [loads of the current ticket performed (as late
    as possible: worst case), publish (after ticket - ring published), claim] then [wait for the
    readers, store].  Deadlock = no block can move while tickets remain: an assertion."""
    nt = len(work)
    counter = [0]

    def claim():
        counter[0] += 1
        return counter[0] - 1

    published = [False] * nt
    held = []
    for _ in range(blocks):
        h = []
        for _ in range(stages):
            h.append(claim() if not h or h[-1] < nt else nt)
        held.append({"tk": h, "phase": 0, "stage": None})
    stored = 0
    while True:
        movable = []
        for b in held:
            if not b["tk"] or b["tk"][0] >= nt:
                continue
            j = b["tk"][0]
            w = work[j]
            if b["phase"] == 0:
                if j < ring or published[j - ring]:
                    movable.append(b)
            else:
                assert all(x < j for x in w.waits), "waits for a later ticket"
                if all(published[x] for x in w.waits):
                    movable.append(b)
        if not movable:
            break
        b = rng.choice(movable)
        j = b["tk"][0]
        w = work[j]
        if b["phase"] == 0:
            stage = np.zeros(max([o + 16 for _, _, o, _ in w.loads] + [16]) + 64, np.uint8)
            for mem, addr, o, cover in w.loads:
                stage[o:o + 16] = mem.word(addr, cover)
            b["stage"] = stage
            published[j] = True
            last = b["tk"][-1]
            b["tk"].append(claim() if last < nt else nt)
            b["phase"] = 1
        else:
            for dst, o, ln in w.stores:
                mem_a.buf[dst - mem_a.start: dst - mem_a.start + ln] = b["stage"][o:o + ln]
            b["tk"].pop(0)
            b["phase"] = 0
            stored += 1
    assert stored == nt, f"deadlock: {stored} of {nt} tickets stored"


def _arena(nb, al0, rng):
    start = 0x100000 + 256 * rng.randrange(4)
    base = start + 32 + al0
    mem = _Mem(start, nb + 96, 0xEE)
    return mem, base


@pytest.mark.parametrize("trial", range(60))
def test_pipe_model_short(trial):
    rng = random.Random(5000 + trial)
    nb = rng.choice([2, 5, 17, 64, 200, 1000, 4099, 5000])
    d = rng.randrange(1, nb)
    left = rng.random() < 0.5
    tile = rng.choice([16, 32, 48, 64])
    al0 = rng.randrange(16)
    mem_a, base = _arena(nb, al0, rng)
    a0 = np.random.default_rng(trial).integers(0, 256, nb, dtype=np.uint8)
    mem_a.buf[base - mem_a.start: base - mem_a.start + nb] = a0
    sptr = 0x900000 + 16 * rng.randrange(64)
    mem_s = _Mem(sptr, d + 64 + 16, 0xDD)        # what the kernel may touch of the scratch
    pad, sbase, fills = rmod.pipe_short_scratch(nb, d, left, base, sptr)
    for s_off, a_off, ln in fills:
        mem_s.buf[s_off:s_off + ln] = a0[a_off:a_off + ln]
    work = _pipe_short_work(nb, d, left, tile, al0, base, sbase, mem_a, mem_s)
    _run_pipe_model(mem_a, work, rng, rng.choice([1, 2, 3, 7]), rmod.PIPE_STAGES,
                    rng.choice([2, 4, 4096]))
    got = mem_a.buf[base - mem_a.start: base - mem_a.start + nb]
    assert np.array_equal(got, np.roll(a0, -d if left else d)), (nb, d, left, tile, al0)
    # nothing outside the array was written
    assert (mem_a.buf[:base - mem_a.start] == 0xEE).all()
    assert (mem_a.buf[base - mem_a.start + nb:] == 0xEE).all()


@pytest.mark.parametrize("trial", range(60))
def test_pipe_model_column(trial):
    rng = random.Random(7000 + trial)
    D, L, S, nb, left, W = _column_case(rng)
    al0 = rng.randrange(16)
    mem_a, base = _arena(nb, al0, rng)
    a0 = np.random.default_rng(trial).integers(0, 256, nb, dtype=np.uint8)
    mem_a.buf[base - mem_a.start: base - mem_a.start + nb] = a0
    rem0 = L * D if left else 0
    sptr = 0x900000 + 16 * rng.randrange(64)
    pad = (base + rem0 - sptr) % 16                 # as rotate._launch_pipe places the remainder
    mem_s = _Mem(sptr, max(S, 1) + pad + 16, 0xDD)
    mem_s.buf[pad:pad + S] = a0[rem0:rem0 + S]
    work = _pipe_column_work(nb, D, L, S, left, W, base, sptr + pad, mem_a, mem_s)
    _run_pipe_model(mem_a, work, rng, rng.choice([1, 2, 5]), rmod.PIPE_STAGES,
                    rng.choice([2, 3, 4096]))
    got = mem_a.buf[base - mem_a.start: base - mem_a.start + nb]
    assert np.array_equal(got, np.roll(a0, -D if left else D)), (nb, D, L, S, left, W)
    assert (mem_a.buf[:base - mem_a.start] == 0xEE).all()
    assert (mem_a.buf[base - mem_a.start + nb:] == 0xEE).all()


def test_pipe_geometry():
    for lanes in range(2, rmod.LMAX + 1):
        w = rmod.pipe_column_width(lanes)
        assert w % 16 == 0
        if w >= rmod.PIPE_MIN_W:
            assert rmod.PIPE_STAGES * (lanes + 1) * (w + 64) <= rmod.PIPE_SMEM
    for tile in rmod.PIPE_SHORT_TILE.values():
        assert tile % 16 == 0 and rmod.PIPE_STAGES * (tile + 64) <= rmod.PIPE_SMEM
    src = (Path(rmod.__file__).parent / "rotate.cu").read_text()
    assert f"#define PIPE_STAGES {rmod.PIPE_STAGES}" in src
    with pytest.raises(ValueError):
        rotate(np.arange(4), 1, variant="nope")


def test_default_variant_per_pass():
    """variant=None: pipe14k for the short pass, tile for column passes (H200, 2026-11-29)."""
    assert rmod.DEFAULT_PASS_VARIANT == {"short": "pipe14k", "column": "tile"}
    assert set(rmod.DEFAULT_PASS_VARIANT.values()) <= set(rmod.VARIANTS)
    assert rmod.pass_variant("short") == "pipe14k"
    assert rmod.pass_variant("column") == "tile"
    for v in rmod.VARIANTS:                      # an explicit variant runs every pass
        assert rmod.pass_variant("short", v) == v and rmod.pass_variant("column", v) == v
    # every pass kind a plan can produce has a default
    for nb, k in [(1 << 30, 1), (1 << 30, (1 << 30) // 3), (3 * rmod.SCRATCH_BYTES * 4 + 12345,
                                                         2 * (3 * rmod.SCRATCH_BYTES * 4) // 5)]:
        for step in plan(nb, k):
            assert step[0] in rmod.DEFAULT_PASS_VARIANT


# ------------------------------------------------------------------------------------------------
# CPU twin
# ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [1, 2, 3, 7, 100, 4096, 4097, 3 * 4096 - 1, 10007])
def test_rotate_cpu_matches_roll(dtype, n):
    x0 = _random(n, dtype, 7 + n)
    for k in _adversarial_ks(n):
        x = x0.copy()
        out = rotate_cpu(x, k)
        assert out is x
        assert np.array_equal(x.view(np.uint8), np.roll(x0, -k).view(np.uint8)), (n, k)


def test_rotate_cpu_multi_pass_plan():
    # shifts that need several passes (lanes > LMAX, remainder > scratch) on a few MB of bytes
    n = 3 * rmod.SCRATCH_BYTES * 4 + 12345
    x0 = _random(n, np.uint8, 3)
    assert len(plan(n, n // 2 - rmod.SCRATCH_BYTES - 77)) >= 2
    assert len(plan(n, 2 * n // 5 + 1)) >= 2
    for k in (rmod.SCRATCH_BYTES + 1, n // 2 - rmod.SCRATCH_BYTES - 77, 2 * n // 5 + 1, -n // 3):
        x = x0.copy()
        rotate_cpu(x, k)
        assert np.array_equal(x, np.roll(x0, -k)), k


def test_rotate_dispatch_and_errors():
    x = np.arange(10, dtype=np.int16)
    assert rotate(x, 3) is x and x[0] == 3
    rotate(np.zeros(0, np.int8), 5)                        # empty: no-op
    with pytest.raises(ValueError):
        rotate(np.zeros((2, 2)), 1)
    with pytest.raises(ValueError):
        rotate(np.arange(10)[::2], 1)
    with pytest.raises(TypeError):
        rotate([1, 2, 3], 1)
    with pytest.raises(TypeError):
        rotate(np.arange(4), 1.5)
    with pytest.raises(TypeError):
        rotate(np.array([None, 1], dtype=object), 1)


# ------------------------------------------------------------------------------------------------
# GPU against the twin
# ------------------------------------------------------------------------------------------------

@pytest.mark.gpu
@pytest.mark.parametrize("dtype", DTYPES)
def test_gpu_rotate_adversarial(dtype):
    import cupy as cp

    seed = _seed()
    es = np.dtype(dtype).itemsize
    tile_elems = rmod.SHORT_TILE // es
    for n in (1, 2, 3, 100, tile_elems, tile_elems + 1, 3 * tile_elems - 1, 5 * tile_elems + 7,
              100003, 1 << 20):
        x0 = _random(n, dtype, seed + n)
        ks = _adversarial_ks(n, tile_elems) + [rmod.SCRATCH_BYTES // es + 1, n // 5 + 3]
        for k in ks:
            x = cp.asarray(x0)
            rotate(x, k)
            expect = rotate_cpu(x0.copy(), k)
            assert np.array_equal(cp.asnumpy(x).view(np.uint8), expect.view(np.uint8)), \
                (dtype, n, k, seed)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype,n", [(np.uint8, 100_000_007), (np.int32, 25_000_003)])
def test_gpu_rotate_larger_than_l2(dtype, n):
    import cupy as cp

    seed = _seed()
    x0 = _random(n, dtype, seed)
    for k in (1, 1000, 4096 * 3 + 5, n // 3, n // 2, n - 1, 2 * n // 5 + 1,
              rmod.SCRATCH_BYTES + 9, -(n // 7)):
        x = cp.asarray(x0)
        rotate(x, k)
        assert np.array_equal(cp.asnumpy(x), np.roll(x0, -k)), (dtype, n, k, seed)


@pytest.mark.gpu
def test_gpu_rotate_offset_views_and_stream():
    import cupy as cp

    seed = _seed()
    base = cp.asarray(_random(300_001, np.uint8, seed))
    for off in (1, 3, 7, 15):
        x = base[off:off + 200_000]
        x0 = cp.asnumpy(x)
        s = cp.cuda.Stream()
        rotate(x, 12_345, stream=s)
        s.synchronize()
        assert np.array_equal(cp.asnumpy(x), np.roll(x0, -12_345)), (off, seed)


# ------------------------------------------------------------------------------------------------
# GPU: every kernel variant against the twin (same adversarial sizes as the default variant)
# ------------------------------------------------------------------------------------------------

# every variant explicitly (the default mixes pipe14k short passes with tile column passes, so
# "tile" short passes and pipelined column passes are only covered here)
NEW_VARIANTS = list(rmod.VARIANTS)


@pytest.mark.gpu
@pytest.mark.parametrize("variant", NEW_VARIANTS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_gpu_rotate_variant_adversarial(variant, dtype):
    import cupy as cp

    seed = _seed()
    es = np.dtype(dtype).itemsize
    # the "tile" kernels have one tile size; the pipelined ones may add their own
    for tile in sorted({rmod.SHORT_TILE, rmod.PIPE_SHORT_TILE.get(variant, rmod.SHORT_TILE)}):
        tile_elems = tile // es
        for n in (1, 2, 3, 100, tile_elems, tile_elems + 1, 3 * tile_elems - 1,
                  5 * tile_elems + 7, 100003, 1 << 20):
            x0 = _random(n, dtype, seed + n)
            ks = _adversarial_ks(n, tile_elems) + [rmod.SCRATCH_BYTES // es + 1, n // 5 + 3]
            for k in ks:
                x = cp.asarray(x0)
                rotate(x, k, variant=variant)
                expect = rotate_cpu(x0.copy(), k)
                assert np.array_equal(cp.asnumpy(x).view(np.uint8), expect.view(np.uint8)), \
                    (variant, dtype, n, k, seed)


@pytest.mark.gpu
@pytest.mark.parametrize("variant", NEW_VARIANTS)
@pytest.mark.parametrize("dtype,n", [(np.uint8, 100_000_007), (np.int32, 25_000_003)])
def test_gpu_rotate_variant_larger_than_l2(variant, dtype, n):
    import cupy as cp

    seed = _seed()
    x0 = _random(n, dtype, seed)
    for k in (1, 1000, 4096 * 3 + 5, n // 3, n // 2, n - 1, 2 * n // 5 + 1,
              rmod.SCRATCH_BYTES + 9, -(n // 7), n // 60 + 1):
        x = cp.asarray(x0)
        rotate(x, k, variant=variant)
        assert np.array_equal(cp.asnumpy(x), np.roll(x0, -k)), (variant, dtype, n, k, seed)


@pytest.mark.gpu
@pytest.mark.parametrize("variant", NEW_VARIANTS)
def test_gpu_rotate_variant_offset_views_stream_and_neighbours(variant):
    import cupy as cp

    seed = _seed()
    host = _random(300_001, np.uint8, seed)
    for off in (1, 3, 7, 15):
        base = cp.asarray(host)
        x = base[off:off + 200_000]
        x0 = cp.asnumpy(x)
        s = cp.cuda.Stream()
        rotate(x, 12_345, stream=s, variant=variant)
        s.synchronize()
        assert np.array_equal(cp.asnumpy(x), np.roll(x0, -12_345)), (variant, off, seed)
        # the bytes around the view are untouched (aligned-word loads never write)
        whole = cp.asnumpy(base)
        assert np.array_equal(whole[:off], host[:off]), (variant, off, seed)
        assert np.array_equal(whole[off + 200_000:], host[off + 200_000:]), (variant, off, seed)


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.int32, np.uint8])
def test_gpu_rotate_default_runs_per_pass_variants(dtype, monkeypatch):
    """rotate(x, k) runs pipe14k for short passes and tile for column passes, and is right."""
    import cupy as cp

    calls = []
    real_tile, real_pipe = rmod._launch, rmod._launch_pipe

    def tile(cp_, raw, step, *a):
        calls.append((step[0], "tile"))
        return real_tile(cp_, raw, step, *a)

    def pipe(cp_, raw, step, scratch, ctrl, err, stream, variant):
        calls.append((step[0], variant))
        return real_pipe(cp_, raw, step, scratch, ctrl, err, stream, variant)

    monkeypatch.setattr(rmod, "_launch", tile)
    monkeypatch.setattr(rmod, "_launch_pipe", pipe)
    seed = _seed()
    n = 3_000_017
    es = np.dtype(dtype).itemsize
    x0 = _random(n, dtype, seed)
    for k in (1, 1000, 4096 * 3 + 5, n - 1, n // 3, n // 2, 2 * n // 5 + 1, -(n // 7)):
        calls.clear()
        x = cp.asarray(x0)
        assert rotate(x, k) is x
        assert np.array_equal(cp.asnumpy(x), np.roll(x0, -k)), (dtype, k, seed)
        kinds = [s[0] for s in plan(n * es, (k % n) * es)]
        assert calls == [(kind, rmod.DEFAULT_PASS_VARIANT[kind]) for kind in kinds], (k, calls)
    assert {c[0] for c in calls} <= {"short", "column"}


@pytest.mark.gpu
def test_gpu_rotate_default_timeout_raises(monkeypatch):
    import cupy as cp

    from fsstgpu.errors import DeviceError

    monkeypatch.setattr(rmod, "PIPE_TIMEOUT_NS", 1)   # see test_gpu_rotate_pipe_timeout_raises
    x0 = _random(1 << 24, np.uint8, _seed())
    x = cp.asarray(x0)
    try:
        rotate(x, 1)                                   # short pass: pipe14k by default
    except DeviceError:
        return
    assert np.array_equal(cp.asnumpy(x), np.roll(x0, -1))


@pytest.mark.gpu
def test_gpu_rotate_pipe_timeout_raises(monkeypatch):
    import cupy as cp

    from fsstgpu.errors import DeviceError

    # a 1 ns deadline makes every wait that is not already satisfied give up: the kernel must
    # finish and rotate must raise (or, if no wait ever spun, return the right answer)
    monkeypatch.setattr(rmod, "PIPE_TIMEOUT_NS", 1)
    x0 = _random(1 << 24, np.uint8, _seed())
    x = cp.asarray(x0)
    try:
        rotate(x, 1, variant="pipe")
    except DeviceError:
        return
    assert np.array_equal(cp.asnumpy(x), np.roll(x0, -1))
