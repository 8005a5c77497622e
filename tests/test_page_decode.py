"""Parquet's value decoders on the GPU (kernels/page_decode.cu) against their CPU twins (the
compiled host decoders, job by job): on fresh random runs a model encoder made and on pages
pyarrow wrote, laid at random places in one buffer with other bytes between them, the device's
output poisoned first; forged runs (cut, a byte changed, counts that do not match) flagged by
the device exactly where the host refuses them."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fsstgpu.errors import CorruptDataError
from fsstgpu.formats.raw_pages import chunk_pages, chunk_span
from fsstgpu.kernels.page_decode import (
    Jobs,
    check_jobs,
    delta_binary_packed_jobs,
    delta_binary_packed_jobs_cpu,
    rle_hybrid_jobs,
    rle_hybrid_jobs_cpu,
)

sys.path.insert(0, str(Path(__file__).parent))
from gpu_poison import poison_pool  # noqa: E402
from parquet_model import delta_encode, rle_encode  # noqa: E402


def _rle_values(rng, n: int, width: int) -> list[int]:
    if not width:
        return [0] * n
    values = rng.integers(0, 1 << width, n, dtype=np.uint64)
    if rng.random() < 0.5:  # long repeats, as levels and sorted indices have
        values = np.sort(values)
    return [int(v) for v in values]


def _delta_values(rng, n: int) -> list[int]:
    kind = int(rng.integers(0, 3))
    if kind == 0:  # anything: deltas that wrap modulo 2**64
        return rng.integers(-(1 << 63), (1 << 63) - 1, n, dtype=np.int64,
                            endpoint=True).tolist()
    if kind == 1:  # code lengths
        return rng.integers(0, 400, n).tolist()
    return np.cumsum(rng.integers(-3, 50, n)).tolist()


def _laid_out(rng, runs: list[bytes]) -> tuple[np.ndarray, np.ndarray]:
    """The runs at random places in one buffer, random bytes between them; their starts."""
    parts, starts, at = [], [], 0
    for run in runs:
        gap = rng.integers(0, 256, int(rng.integers(0, 40)), dtype=np.uint8).tobytes()
        parts += [gap, run]
        starts.append(at + len(gap))
        at += len(gap) + len(run)
    parts.append(rng.integers(0, 256, 16, dtype=np.uint8).tobytes())
    return np.frombuffer(b"".join(parts), np.uint8), np.array(starts, np.int64)


def _rle_jobs(rng, njobs: int):
    runs, counts, widths, values = [], [], [], []
    for _ in range(njobs):
        width = int(rng.integers(0, 33))
        n = int(rng.choice([0, 1, 7, 8, 9, int(rng.integers(0, 3000))]))
        v = _rle_values(rng, n, width)
        runs.append(rle_encode(v, width, rng))
        counts.append(n)
        widths.append(width)
        values += v
    data, starts = _laid_out(rng, runs)
    jobs = Jobs(starts, [len(r) for r in runs], counts, width=widths)
    return data, jobs, np.array(values, np.uint32), np.array([len(r) for r in runs])


def _delta_jobs(rng, njobs: int):
    runs, counts, values = [], [], []
    for _ in range(njobs):
        n = int(rng.choice([0, 1, 2, 33, 128, 129, int(rng.integers(0, 3000))]))
        v = _delta_values(rng, n)
        per, minis = ((32, 4), (64, 2), (128, 1), (32, 8))[int(rng.integers(0, 4))]
        runs.append(delta_encode(v, per, minis))
        counts.append(n)
        values += v
    data, starts = _laid_out(rng, runs)
    jobs = Jobs(starts, [len(r) for r in runs], counts)
    return data, jobs, np.array(values, np.int64), np.array([len(r) for r in runs])


def test_the_twins_decode_model_runs(fresh_rng):
    data, jobs, want, lengths = _rle_jobs(fresh_rng, 30)
    got, ends = rle_hybrid_jobs_cpu(data, jobs)
    assert np.array_equal(got, want) and np.array_equal(ends, lengths)
    data, jobs, want, lengths = _delta_jobs(fresh_rng, 30)
    got, ends = delta_binary_packed_jobs_cpu(data, jobs)
    assert np.array_equal(got, want) and np.array_equal(ends, lengths)


def test_the_twins_name_the_forged_job(fresh_rng):
    data, jobs, _, _ = _rle_jobs(fresh_rng, 3)
    jobs.count[1] += 1 << 30  # more values than its bytes hold
    with pytest.raises(CorruptDataError, match="level run 1: "):
        rle_hybrid_jobs_cpu(data, Jobs(jobs.start, jobs.size, jobs.count, width=jobs.width),
                            what="level run")
    with pytest.raises(CorruptDataError, match="run 0: has a bit width over 32"):
        rle_hybrid_jobs_cpu(data, Jobs([0], [1], [1], width=[33]))
    with pytest.raises(ValueError, match="past the data"):
        rle_hybrid_jobs_cpu(data, Jobs([0], [data.size + 1], [1], width=[1]))
    with pytest.raises(CorruptDataError, match="page 1: ends inside a miniblock"):
        check_jobs(np.array([0, 9, 2], np.int32), what="page")


def _pyarrow_level_and_index_jobs(rng):
    """A chunk pyarrow wrote (dictionary-encoded strings with nulls, several pages): its
    definition levels' runs and its indices' runs as jobs, with pyarrow's own answers."""
    n = int(rng.integers(1, 30000))
    words = [f"w{k}" for k in range(int(rng.choice([1, 3, 200, 5000])))]
    valid = rng.random(n) < rng.choice([0.0, 0.5, 0.97, 1.0])
    picks = rng.integers(0, len(words), n)
    column = pa.array([words[k] if v else None for k, v in zip(picks, valid, strict=True)])
    out = io.BytesIO()
    pq.write_table(pa.table({"s": column}), out, compression="none", data_page_version="1.0",
                   data_page_size=int(rng.choice([1 << 10, 1 << 14])))
    raw = out.getvalue()
    meta = pq.ParquetFile(io.BytesIO(raw)).metadata.row_group(0).column(0)
    start, size = chunk_span(meta, len(raw), "s")
    levels, indices = [], []
    for page in chunk_pages(raw[start : start + size], meta.num_values, "s"):
        if page.kind == "dictionary":
            continue
        at = start + page.start
        nlevels = int.from_bytes(raw[at : at + 4], "little")
        levels.append((at + 4, nlevels, page.num_values, 1))
        width = raw[at + 4 + nlevels]
        body_end = start + page.start + page.size
        indices.append((at + 5 + nlevels, body_end - (at + 5 + nlevels), None, width))
    data = np.frombuffer(raw, np.uint8)
    lv = Jobs([s for s, *_ in levels], [z for _, z, *_ in levels], [c for _, _, c, _ in levels],
              width=[w for *_, w in levels])
    got_levels, _ = rle_hybrid_jobs_cpu(data, lv)
    valid_per_page = np.add.reduceat(got_levels, lv.at) if len(lv) else []
    ix = Jobs([s for s, *_ in indices], [z for _, z, *_ in indices],
              [int(c) for c in valid_per_page], width=[w for *_, w in indices])
    return data, lv, ix, valid, column


def test_the_twins_read_pyarrows_pages(fresh_rng):
    data, lv, ix, valid, column = _pyarrow_level_and_index_jobs(fresh_rng)
    levels, _ = rle_hybrid_jobs_cpu(data, lv)
    assert np.array_equal(levels.astype(bool), valid)
    indices, _ = rle_hybrid_jobs_cpu(data, ix)
    assert len(indices) == int(valid.sum())
    # (the indices index the chunk's dictionary, in order of first appearance)
    firsts = column.drop_null().to_pylist()
    seen = {}
    for word in firsts:
        seen.setdefault(word, len(seen))
    assert indices.tolist() == [seen[w] for w in firsts]


def _forged(rng, data: np.ndarray, jobs: Jobs) -> tuple[np.ndarray, Jobs]:
    """The jobs with damage: bytes changed inside runs, runs cut short, counts changed; the
    first job always refused (a million values more than its run holds)."""
    data = data.copy()
    size, count = jobs.size.copy(), jobs.count.copy()
    count[0] += 1 << 20
    for j in range(1, len(jobs)):
        what = int(rng.integers(0, 4))
        if what == 0 and size[j]:
            at = int(jobs.start[j] + rng.integers(0, size[j]))
            data[at] ^= np.uint8(1 << int(rng.integers(0, 8)))
        elif what == 1 and size[j]:
            size[j] = int(rng.integers(0, size[j]))
        elif what == 2:
            count[j] = max(0, int(count[j] + rng.integers(-3, 4)))
    width = None if jobs.width is None else jobs.width
    return data, Jobs(jobs.start, size, count, width=width)


def _each_job(twin, data, jobs: Jobs):
    """The twin job by job: each job's values, or None where the host refuses it."""
    out = []
    for j in range(len(jobs)):
        one = Jobs(jobs.start[j : j + 1], jobs.size[j : j + 1], jobs.count[j : j + 1],
                   width=None if jobs.width is None else jobs.width[j : j + 1])
        try:
            out.append(twin(data, one))
        except CorruptDataError:
            out.append(None)
    return out


@pytest.mark.gpu
@pytest.mark.parametrize("kind", ["rle", "delta"])
def test_the_device_decodes_runs_as_the_twin(fresh_rng, kind):
    import cupy as cp

    poison_pool(cp)
    make, twin, device = ((_rle_jobs, rle_hybrid_jobs_cpu, rle_hybrid_jobs) if kind == "rle"
                          else (_delta_jobs, delta_binary_packed_jobs_cpu,
                                delta_binary_packed_jobs))
    data, jobs, want, lengths = make(fresh_rng, int(fresh_rng.integers(1, 400)))
    values, ends, errors = device(cp.asarray(data), jobs)
    check_jobs(errors)
    assert np.array_equal(values.get(), want)
    assert np.array_equal(ends.get(), lengths)
    # forged: each job flagged exactly where the host refuses it, its values equal otherwise
    bad, forged = _forged(fresh_rng, data, jobs)
    values, ends, errors = device(cp.asarray(bad), forged)
    values, ends, errors = values.get(), ends.get(), errors.get()
    refused = 0
    for j, host in enumerate(_each_job(twin, bad, forged)):
        if host is None:
            assert errors[j] != 0, j
            refused += 1
            continue
        assert errors[j] == 0, j
        lo, hi = forged.at[j], forged.at[j] + forged.count[j]
        assert np.array_equal(values[lo:hi], host[0]) and ends[j] == host[1][0], j
    assert refused and errors[0], "the job of a million values too many was not refused"


@pytest.mark.gpu
def test_the_device_reads_pyarrows_pages(fresh_rng):
    import cupy as cp

    poison_pool(cp)
    data, lv, ix, _, _ = _pyarrow_level_and_index_jobs(fresh_rng)
    device = cp.asarray(data)
    for jobs in (lv, ix):
        values, ends, errors = rle_hybrid_jobs(device, jobs)
        check_jobs(errors)
        want, want_ends = rle_hybrid_jobs_cpu(data, jobs)
        assert np.array_equal(values.get(), want) and np.array_equal(ends.get(), want_ends)


@pytest.mark.gpu
def test_a_forged_zero_width_run_of_many_groups_takes_only_what_is_wanted():
    import cupy as cp

    data = np.frombuffer(bytes([0xFF] * 8 + [0x7F]), np.uint8)  # 2**62 groups of 0 bits
    values, _, errors = rle_hybrid_jobs(cp.asarray(data), Jobs([0], [9], [9], width=[0]))
    check_jobs(errors)
    assert values.get().tolist() == [0] * 9


@pytest.mark.gpu
def test_counts_and_places_from_the_device(fresh_rng):
    """The indices' counts known on the device only (each page's non-null levels), their
    values placed at each page's first row: equal to the twin's; a count that would run past
    the output flagged."""
    import cupy as cp

    poison_pool(cp)
    data, lv, ix, _, _ = _pyarrow_level_and_index_jobs(fresh_rng)
    device = cp.asarray(data)
    levels, _, errors = rle_hybrid_jobs(device, lv)
    check_jobs(errors)
    page = cp.asarray(np.repeat(np.arange(len(lv)), lv.count))
    counts = cp.bincount(page, weights=levels, minlength=len(lv)).astype(cp.int64)
    at = cp.asarray(lv.at)
    values, _, errors = rle_hybrid_jobs(device, ix, placed=(counts, at, lv.total))
    check_jobs(errors)
    want, _ = rle_hybrid_jobs_cpu(data, ix)
    got = values.get()
    for j in range(len(lv)):
        lo = int(lv.at[j])
        assert np.array_equal(got[lo : lo + int(ix.count[j])], want[ix.at[j] : ix.at[j] +
                                                                    ix.count[j]]), j
    counts[-1] += int(lv.count[-1]) + 1
    _, _, errors = rle_hybrid_jobs(device, ix, placed=(counts, at, lv.total))
    with pytest.raises(CorruptDataError, match=f"run {len(lv) - 1}: has values that would run"):
        check_jobs(errors)
