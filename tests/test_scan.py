"""The compiled codes walk (fsstgpu.scan.walk) against a plain-Python transcription of the
walk it replaced, on random and forged columns; and the same result and first error whatever
the thread count, on columns big enough to be walked in parallel chunks."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import fsstgpu
from fsstgpu import CorruptDataError, SymbolTable, scan
from fsstgpu.scan import CHECK, LENGTHS, LONG, OFFSETS, walk

MESSAGES = {
    1: "string {i}: a code has no symbol in its block's table",
    2: "string {i}: its codes end in an escape without its literal byte",
    3: "string {i}: its codes decode to a different length than the stored one",
    4: "string {i}: code offsets run past the codes or backwards",
    5: "string {i}: a symbol crosses the end of the string (stored length too short)",
    6: "string {i}: the codes run out before the stored length is reached",
    7: "codes left over after the last string",
    8: "split {i} does not start on a code boundary at its output position",
}


def reference_walk(tables, block_starts, codes, code_offsets, lengths, mode, cut_size,
                   split_codes, split_out):
    """The walk, one code at a time in plain Python: (code_offsets, lengths, cuts) or the
    error message. Inputs as scan.walk checks them (lengths >= 0, block_starts valid)."""
    symlen = [[int(v) for v in t.lengths] + [0] * (256 - len(t)) for t in tables]
    codes = [int(v) for v in codes]
    n = len(lengths) if mode == OFFSETS else len(code_offsets) - 1
    total = sum(int(v) for v in lengths) if mode != LENGTHS else 0
    cap = min(min(total, 8 * len(codes)) // cut_size, len(codes)) + 1 if cut_size > 0 else 0
    sc = [] if split_codes is None else [int(v) for v in split_codes]
    so = [] if split_codes is None else [int(v) for v in split_out]
    nsplit = max(len(sc) - 1, 0)
    offsets_out, lengths_out, cuts = [0] * (n + 1), [0] * n, []
    k = o = c = 0

    def fail(status, i):
        return MESSAGES[status].format(i=i)

    for b in range(len(tables)):
        for i in range(int(block_starts[b]), int(block_starts[b + 1])):
            if mode != OFFSETS:
                c, e = int(code_offsets[i]), int(code_offsets[i + 1])
                if c < 0 or e < c or e > len(codes):
                    return fail(4, i)
            else:
                offsets_out[i] = c
                e = len(codes)
            need = int(lengths[i]) if mode != LENGTHS else -1
            if mode == LONG and need <= cut_size:
                o += need
                continue
            produced = 0
            next_cut = cut_size if 0 < cut_size < need else need + 1
            while True:
                while k < nsplit and sc[k] <= c:
                    if sc[k] < c or so[k] != o + produced:
                        return fail(8, k)
                    k += 1
                if next_cut <= produced < need:
                    if len(cuts) >= cap:
                        return fail(6, i)
                    cuts.append((c, o + produced, i))
                    while next_cut <= produced:
                        next_cut += cut_size
                if mode == OFFSETS:
                    if produced == need:
                        break
                elif c >= e:
                    break
                if c >= e:
                    return fail(6, i)
                if codes[c] == 255:
                    if c + 1 >= e:
                        return fail(2, i)
                    produced, c = produced + 1, c + 2
                else:
                    ln = symlen[b][codes[c]]
                    if ln == 0:
                        return fail(1, i)
                    produced, c = produced + ln, c + 1
                if mode == OFFSETS and produced > need:
                    return fail(5, i)
            if mode == LENGTHS:
                lengths_out[i] = produced
            elif produced != need:
                return fail(3, i)
            o += produced
    if k < nsplit:
        return fail(8, k)
    if mode == OFFSETS:
        offsets_out[n] = c
        if c != len(codes):
            return fail(7, 0)
    cuts = [list(x) for x in zip(*cuts, strict=True)] if cuts else [[], [], []]
    return (offsets_out if mode == OFFSETS else [int(v) for v in code_offsets],
            lengths_out if mode == LENGTHS else [int(v) for v in lengths], cuts)


def outcome(fn, *args, **kwargs):
    """What a walk gives: its arrays as lists, or the CorruptDataError's message."""
    try:
        offsets, lengths, cuts = fn(*args, **kwargs)
    except CorruptDataError as exc:
        return str(exc)
    return [int(v) for v in offsets], [int(v) for v in lengths], [list(map(int, a)) for a in cuts]


def column(rng, n, nblocks=2, max_len=40):
    """A compressed column of n random strings over a small alphabet, nblocks tables."""
    alphabet = np.frombuffer(b"abcab \x00\xff", np.uint8)
    lens = rng.integers(0, max_len, n)
    data = rng.choice(alphabet, int(lens.sum())).astype(np.uint8)
    offs = np.zeros(n + 1, np.int64)
    np.cumsum(lens, out=offs[1:])
    strings = pa.array([bytes(data[offs[i]:offs[i + 1]]) for i in range(n)], pa.binary())
    if nblocks > 1:
        cuts = np.linspace(0, n, nblocks + 1).astype(int)
        strings = pa.chunked_array([strings[cuts[b]:cuts[b + 1]] for b in range(nblocks)])
    return fsstgpu.compress(strings, split_size=64)


def forged(rng, carr):
    """The column's walk inputs with one random forgery (or none)."""
    f = {name: getattr(carr, name).copy() for name in
         ("codes", "code_offsets", "lengths", "split_codes", "split_out")}
    n, kind = carr.length, int(rng.integers(0, 8))
    if kind == 0 and len(f["codes"]):
        f["codes"][rng.integers(0, len(f["codes"]), 2)] = rng.integers(0, 256, 2)
    elif kind == 1 and n:
        f["lengths"][rng.integers(0, n)] += int(rng.choice([1, 3]))
    elif kind == 2 and n:
        i = int(rng.integers(0, n))
        f["lengths"][i] = max(0, f["lengths"][i] - 1)
    elif kind == 3 and n > 1:
        f["code_offsets"][rng.integers(1, n)] += int(rng.choice([-1, 1]))
    elif kind == 4 and len(f["split_codes"]) > 2:
        f["split_codes"][rng.integers(1, len(f["split_codes"]) - 1)] += int(rng.choice([-1, 1]))
    elif kind == 5 and len(f["split_out"]) > 2:
        f["split_out"][rng.integers(1, len(f["split_out"]) - 1)] += int(rng.choice([-1, 1]))
    elif kind == 6:
        f["codes"] = f["codes"][: int(len(f["codes"]) * rng.random())]
    return f


def walks(f, cut_size):
    """(name, keyword arguments) of every mode over forged inputs f."""
    splits = {"split_codes": f["split_codes"], "split_out": f["split_out"]}
    co, ln = f["code_offsets"], f["lengths"]
    return [
        ("check", dict(code_offsets=co, lengths=ln, mode=CHECK, **splits)),
        ("check-cuts", dict(code_offsets=co, lengths=ln, mode=CHECK, cut_size=cut_size)),
        ("offsets", dict(lengths=ln, mode=OFFSETS, **splits)),
        ("offsets-cuts", dict(lengths=ln, mode=OFFSETS, cut_size=cut_size)),
        ("lengths", dict(code_offsets=co, mode=LENGTHS)),
        ("long", dict(code_offsets=co, lengths=ln, mode=LONG, cut_size=cut_size)),
    ]


@pytest.mark.parametrize("seed", range(12))
def test_walk_matches_the_plain_python_walk_on_forged_columns(seed):
    rng = np.random.default_rng(seed)
    carr = column(rng, int(rng.integers(0, 120)), int(rng.integers(1, 4)))
    for _ in range(8):
        f = forged(rng, carr)
        for name, kw in walks(f, int(rng.choice([0, 5, 17]))):
            want = reference_walk(carr.tables, carr.block_starts, f["codes"],
                                  kw.get("code_offsets"), kw.get("lengths"), kw["mode"],
                                  kw.get("cut_size", 0), kw.get("split_codes"),
                                  kw.get("split_out"))
            got = outcome(walk, carr.tables, carr.block_starts, f["codes"], **kw)
            if not isinstance(want, str):
                want = (want[0], want[1], want[2])
            assert got == want, name


@pytest.fixture(scope="module")
def big_column():
    """Over 2 M codes: walked in about ten parallel chunks (of 2**18 codes)."""
    return column(np.random.default_rng(7), 300_000, nblocks=3, max_len=56)


@pytest.mark.parametrize("seed", range(6))
def test_walk_is_the_same_whatever_the_thread_count(big_column, seed):
    rng = np.random.default_rng(seed)
    carr = big_column
    assert len(carr.codes) > 2_100_000
    f = forged(rng, carr) if seed else {n: getattr(carr, n) for n in
                                        ("codes", "code_offsets", "lengths", "split_codes",
                                         "split_out")}
    for name, kw in walks(f, int(rng.choice([0, 100]))):
        results = {t: outcome(walk, carr.tables, carr.block_starts, f["codes"], threads=t, **kw)
                   for t in (1, 2, 5)}
        assert results[2] == results[1] and results[5] == results[1], name
        if not seed and name == "offsets":
            assert results[1][0] == carr.code_offsets.tolist()


def test_parallel_offsets_walk_reports_the_first_error_of_many(big_column):
    """Errors in several chunks: the lowest string is named, as the serial walk names it."""
    carr = big_column
    lengths = carr.lengths.copy()
    bad = [50_000, 150_000, 280_000]
    lengths[bad] += 1
    for t in (1, 2, 5):
        with pytest.raises(CorruptDataError, match="^string 50000: "):
            walk(carr.tables, carr.block_starts, carr.codes, lengths=lengths, mode=OFFSETS,
                 split_codes=carr.split_codes, split_out=carr.split_out, threads=t)


def test_walk_derives_offsets_and_lengths(big_column):
    carr = big_column
    offs, _, _ = walk(carr.tables, carr.block_starts, carr.codes, lengths=carr.lengths,
                      mode=OFFSETS, threads=2)
    assert np.array_equal(offs, carr.code_offsets)
    _, lengths, _ = walk(carr.tables, carr.block_starts, carr.codes,
                         code_offsets=carr.code_offsets, mode=LENGTHS, threads=2)
    assert np.array_equal(lengths, carr.lengths)


def test_corrupt_length_at_int64_max_is_reported_not_looped():
    """need + 1 wraps around: the walk's cut test fires at once and reports the string."""
    t = SymbolTable([b"ab"])
    for cut in (0, -3):
        with pytest.raises(CorruptDataError, match="^string 0: the codes run out"):
            walk([t], [0, 1], np.array([0], np.uint8), code_offsets=np.array([0, 1]),
                 lengths=np.array([2**63 - 1]), cut_size=cut)


def test_long_string_cuts_match_the_plain_walk():
    carr = column(np.random.default_rng(3), 300, nblocks=2, max_len=200)
    got = scan.long_string_cuts(carr.tables, carr.block_starts, carr.codes, carr.code_offsets,
                                carr.lengths, 50)
    want = reference_walk(carr.tables, carr.block_starts, carr.codes, carr.code_offsets,
                          carr.lengths, LONG, 50, None, None)[2]
    assert [a.tolist() for a in got] == want and len(want[0]) > 100
