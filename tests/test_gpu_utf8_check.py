"""The GPU's UTF-8 check, kernel by itself: ranges of mostly ASCII text (whole 16-byte blocks
pass on one load) with sparse multi-byte characters and forbidden forms, at every alignment of
the buffer, against Python's own strict decoder (RFC 3629, as :mod:`fsstgpu.utf8`).

The seed is fresh each run and named in every failure.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from fsstgpu.device import get_cupy
from fsstgpu.kernels.fsst_decode import launch_check_utf8
from fsstgpu.testing import UTF8_SPOILERS

sys.path.insert(0, str(Path(__file__).parent))
from seeds import fresh_seed  # noqa: E402

pytestmark = pytest.mark.gpu

CHARS = ["a", " ", "Z", "é", "€", "😀", "\u07ff", "\uffff", "\U0010ffff"]


def _stream(rng, size: int) -> bytes:
    """About ``size`` bytes of ASCII with a few characters of 2-4 bytes and, now and then, a
    forbidden form, each placed anywhere (across 16-byte boundaries too)."""
    out = bytearray(rng.integers(32, 127, size, dtype=np.uint8).tobytes())
    for _ in range(int(rng.integers(0, 4))):
        at = int(rng.integers(0, len(out) + 1))
        out[at:at] = CHARS[int(rng.integers(3, len(CHARS)))].encode()
    if rng.random() < 0.3:
        at = int(rng.integers(0, len(out) + 1))
        out[at:at] = UTF8_SPOILERS[int(rng.integers(0, len(UTF8_SPOILERS)))]
    return bytes(out)


def _valid(data: bytes) -> bool:
    try:
        data.decode("utf-8")  # strict: no overlong forms, surrogates, nor past U+10FFFF
    except UnicodeDecodeError:
        return False
    return True


@pytest.mark.parametrize("misalign", range(16))
def test_utf8_check_matches_the_strict_decoder_at_every_alignment(misalign):
    cp = get_cupy()
    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    for case in range(20):
        streams = [_stream(rng, int(rng.integers(0, 200))) for _ in range(int(rng.integers(1, 9)))]
        joined = b"".join(streams)
        # poisoned around the ranges: a check reading past a range would see 0xFF there
        buf = cp.full(misalign + len(joined) + 32, 0xFF, cp.uint8)
        data = buf[misalign:]
        data[: len(joined)] = cp.asarray(np.frombuffer(joined, np.uint8))
        ranges, at = [], 0
        for k, s in enumerate(streams):
            ranges.append((at, at + len(s), k))
            at += len(s)
        err = cp.zeros(len(streams), cp.int32)
        launch_check_utf8(data, ranges, err)
        got = err.get().tolist()
        want = [0 if _valid(s) else 256 for s in streams]
        assert got == want, (seed, misalign, case, streams)
