"""Tests of fsstgpu.gpu.concat: joining device columns by copy and in place (GPU rotate).

Every test compares against pyarrow's own concatenation of the host columns; inputs are fresh
random strings (seed from os.urandom, named in failure messages).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import fsstgpu
from fsstgpu.gpu.concat import concat_device_arrays, joinable_in_place
from fsstgpu.gpu.decode import decompress_device

sys.path.insert(0, str(Path(__file__).parent))
from seeds import fresh_seed  # noqa: E402

pytestmark = pytest.mark.gpu


def _column(rng, n, type_=pa.string(), nulls=True):
    words = ["", "a", "bc", "def", "fsst", "ghijklmnop", "q" * 40, "naïve", "x" * 300]
    values = [words[i] for i in rng.integers(0, len(words), n)]
    mask = rng.random(n) < 0.1 if nulls else np.zeros(n, bool)
    return pa.array([None if m else v for v, m in zip(values, mask, strict=True)], type_)


def _expected(cols):
    return pa.chunked_array([c for c in cols], type=cols[0].type)


@pytest.mark.parametrize("type_", [pa.string(), pa.large_binary()])
@pytest.mark.parametrize("sizes", [[5, 0, 7], [1], [1000, 3, 0, 0, 2500, 17], [0, 0]])
def test_in_place_join_matches_copy_join(type_, sizes):
    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    cols = [_column(rng, n, type_) for n in sizes]
    parts = decompress_device([fsstgpu.compress(c) for c in cols], fill=0xAB)
    assert joinable_in_place(parts), f"seed {seed}"
    copied = concat_device_arrays(parts)        # parts stay valid
    joined = concat_device_arrays(parts, consume=True)
    expected = _expected(cols)
    assert copied.to_arrow().equals(expected), f"seed {seed}"
    assert joined.to_arrow().equals(expected), f"seed {seed}"
    assert joined.offsets.dtype == copied.offsets.dtype, f"seed {seed}"
    # no data copy: the joined data is the batch's own buffer
    assert joined.data.data.ptr == parts[0].data.data.ptr, f"seed {seed}"


def test_in_place_join_of_many_parts_moves_offsets_by_growing_gaps():
    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    cols = [_column(rng, int(n)) for n in rng.integers(0, 400, 60)]
    parts = fsstgpu.decompress_device([fsstgpu.compress(c) for c in cols])
    joined = concat_device_arrays(parts, consume=True)
    assert joined.to_arrow().equals(_expected(cols)), f"seed {seed}"
    assert list(joined.chunk_lengths) == [len(c) for c in cols]


def test_parts_from_separate_decodes_are_copied():
    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    cols = [_column(rng, 50), _column(rng, 30)]
    parts = [fsstgpu.decompress_device(fsstgpu.compress(c)) for c in cols]
    assert not joinable_in_place(parts)
    joined = concat_device_arrays(parts, consume=True)   # falls back
    assert joined.to_arrow().equals(_expected(cols)), f"seed {seed}"
    assert parts[0].to_arrow().equals(cols[0])          # untouched


def test_out_of_order_parts_are_not_joined_in_place():
    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    cols = [_column(rng, 20), _column(rng, 20)]
    parts = fsstgpu.decompress_device([fsstgpu.compress(c) for c in cols])
    assert not joinable_in_place(parts[::-1])
    joined = concat_device_arrays(parts[::-1], consume=True)
    assert joined.to_arrow().equals(_expected(cols[::-1])), f"seed {seed}"
