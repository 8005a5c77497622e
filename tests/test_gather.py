"""The segment gather (``kernels/gather.cu``, what the file -> GPU read lays a column's codes
out with): its CPU twin against a plain Python join of the segments, bad segments refused; on
the GPU, byte for byte the twin on fresh random segments (many short ones, empty ones, a few
long ones, from both sources), the output poisoned first, and a segment outside its source
flagged, never read."""

from __future__ import annotations

import numpy as np
import pytest

from fsstgpu.errors import CorruptDataError
from fsstgpu.kernels.gather import gather_segments_cpu

POISON = 0xAB


def _segments(rng, n: int, src_size: int, extra_size: int):
    """n random segments over both sources: lengths mostly short, some empty, a few long."""
    lengths = rng.integers(0, 120, n)
    lengths[rng.random(n) < 0.1] = 0
    long = rng.random(n) < 0.002
    lengths[long] = rng.integers(1000, src_size // 4, int(long.sum()))
    from_extra = (rng.random(n) < 0.2) & (lengths <= extra_size)
    starts = np.empty(n, np.int64)
    span = np.where(from_extra, extra_size, src_size) - lengths
    lengths[span < 0] = 0
    span = np.maximum(span, 0)
    at = (rng.random(n) * (span + 1)).astype(np.int64)
    starts[:] = np.where(from_extra, -1 - at, at)
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return starts, offsets


def _joined(src, extra, starts, offsets):
    return b"".join((src[s : s + n] if s >= 0 else extra[-1 - s : -1 - s + n]).tobytes()
                    for s, n in zip(starts.tolist(), np.diff(offsets).tolist(), strict=True))


def test_the_cpu_twin_joins_the_segments(fresh_rng):
    src = fresh_rng.integers(0, 256, 50_000).astype(np.uint8)
    extra = fresh_rng.integers(0, 256, 3_000).astype(np.uint8)
    starts, offsets = _segments(fresh_rng, 2_000, len(src), len(extra))
    got = gather_segments_cpu(src, extra, starts, offsets)
    assert got.tobytes() == _joined(src, extra, starts, offsets)
    assert gather_segments_cpu(src, extra, starts[:0], offsets[:1]).size == 0


@pytest.mark.parametrize("starts, offsets, match", [
    ([8], [0, 3], "outside"),          # past src's 10 bytes
    ([-3], [0, 2], "outside"),         # past extra's 3 bytes (from its byte 2)
    ([0, 1], [0, 3, 2], "decrease"),
    ([0], [1, 2], "from 0"),
    ([0], [0], "one more"),
])
def test_bad_segments_are_refused(starts, offsets, match):
    src, extra = np.arange(10, dtype=np.uint8), np.arange(3, dtype=np.uint8)
    with pytest.raises(CorruptDataError, match=match):
        gather_segments_cpu(src, extra, np.array(starts), np.array(offsets))


@pytest.mark.gpu
@pytest.mark.parametrize("n", [1, 37, 20_000])
def test_the_device_gather_is_the_twin(fresh_rng, n):
    import cupy as cp

    from fsstgpu.kernels.gather import check_gathered, gather_segments

    src = fresh_rng.integers(0, 256, 400_000).astype(np.uint8)
    extra = fresh_rng.integers(0, 256, 5_000).astype(np.uint8)
    starts, offsets = _segments(fresh_rng, n, len(src), len(extra))
    want = gather_segments_cpu(src, extra, starts, offsets)
    out = cp.full(int(offsets[-1]), POISON, cp.uint8)
    got, error = gather_segments(cp.asarray(src), cp.asarray(extra), starts, offsets, out)
    check_gathered(error)
    assert got is out and got.get().tobytes() == want.tobytes()
    # device-resident offsets and starts, output allocated by the launcher
    got, error = gather_segments(cp.asarray(src), cp.asarray(extra), cp.asarray(starts),
                                 cp.asarray(offsets))
    check_gathered(error)
    assert got.get().tobytes() == want.tobytes()


@pytest.mark.gpu
@pytest.mark.parametrize("bad", ["past src", "past extra", "offsets past the segments"])
def test_a_segment_outside_its_source_is_flagged(fresh_rng, bad):
    import cupy as cp

    from fsstgpu.kernels.gather import check_gathered, gather_segments

    src = cp.asarray(fresh_rng.integers(0, 256, 1_000).astype(np.uint8))
    extra = cp.asarray(fresh_rng.integers(0, 256, 100).astype(np.uint8))
    starts = np.array([0, 990, -1], np.int64)
    offsets = np.array([0, 500, 505, 600], np.int64)   # the middle one reaches src's end
    if bad == "past src":
        starts[1] = 996
    elif bad == "past extra":
        offsets[3] = 606
    else:  # (a segment's bytes claimed, the sizes' sum disagreeing with the output's)
        offsets = cp.asarray(offsets)
        out = cp.full(700, POISON, cp.uint8)
        with pytest.raises(ValueError, match="must be 600 bytes"):
            gather_segments(src, extra, starts, offsets, out)
        return
    out, error = gather_segments(src, extra, starts, offsets)
    with pytest.raises(CorruptDataError, match="outside its source"):
        check_gathered(error)
