"""A table a block on the GPU (issue #25's ratio): ``compress_device(level="fast")`` is
byte for byte ``fsstgpu.compress(level="fast")``; the samples gathered on the device are the
compiled trainer's (``native.sample_of``, through ``sample_blocks_cpu``), outputs poisoned
first; the encode with many tables is ``native.encode_blocks``'. Fresh random columns whose
text changes every MiB (``fast_columns``), nulls over bytes, long strings, chunks, and dbtext.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import fsstgpu
from fsstgpu import native
from fsstgpu.arrow_layout import from_arrow
from fsstgpu.blocks import fast_blocks
from fsstgpu.datasets import load_lines
from fsstgpu.gpu import encoded
from fsstgpu.inputs import as_string_column
from fsstgpu.kernels.fsst_encode import encode_on_device
from fsstgpu.kernels.fsst_sample import sample_blocks_cpu, sample_blocks_on_device

sys.path.insert(0, str(Path(__file__).parent))
from fast_columns import fast_column  # noqa: E402

pytestmark = pytest.mark.gpu
POISON = 0xAB


def _device_strings(column):
    """(data, raw offsets from 0, valid offsets) of ``column`` on the device: the bytes under
    nulls kept, as device strings have them."""
    import cupy as cp

    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    offs = np.frombuffer(arr.buffers()[1], np.int64)[arr.offset : arr.offset + len(arr) + 1]
    data = np.frombuffer(arr.buffers()[2], np.uint8)[offs[0] : offs[-1]]
    src = offs - offs[0]
    lengths = np.diff(src)
    if arr.null_count:
        lengths = np.where(arr.is_valid().to_numpy(zero_copy_only=False), lengths, 0)
    coord = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return cp.asarray(data.copy()), cp.asarray(src), cp.asarray(coord)


def test_gpu_samples_are_the_trainers(fresh_rng):
    rng = fresh_rng
    for nbytes in (3000, 200_000, 2_500_000):
        column = fast_column(rng, nbytes)
        plain = from_arrow(as_string_column(column))
        n = len(plain)
        # blocks of every size: all of a small one, spread over a medium one, random draws
        cuts = np.sort(rng.integers(0, n + 1, int(rng.integers(1, 12))))
        starts = np.concatenate([[0], cuts, cuts[:1], [n]]).astype(np.int64)
        starts.sort()
        for target in (1, 700, 16384):
            got = sample_blocks_on_device(*_device_strings(column), starts, target, poison=True)
            want = sample_blocks_cpu(plain.data, plain.offsets, starts, target)
            for g, w, name in zip(got, want, ("bytes", "offsets", "piece_first", "byte_first"),
                                  strict=True):
                assert np.array_equal(g, w), (nbytes, target, name)


def _same_as_cpu(dev, column, **kwargs):
    want = fsstgpu.compress(column, level="fast", **kwargs)
    got = dev.to_host()
    assert [t.symbols for t in got.tables] == [t.symbols for t in want.tables]
    assert np.array_equal(got.block_starts, want.block_starts)
    assert np.array_equal(np.asarray(got.codes), np.asarray(want.codes))
    for name in ("code_offsets", "split_codes", "split_out", "split_table", "lengths"):
        assert np.array_equal(np.asarray(getattr(got, name)), np.asarray(getattr(want, name))), \
            name
    assert got.equals(want)
    assert fsstgpu.decompress_device(dev).to_arrow().equals(
        fsstgpu.decompress(want, device="cpu"))


@pytest.mark.parametrize("chunks", [1, 4])
@pytest.mark.parametrize("nulls", [False, True])
def test_gpu_fast_level_is_the_cpus(fresh_rng, nulls, chunks):
    for nbytes in (0, 20_000, 3_300_000):
        column = fast_column(fresh_rng, nbytes, nulls=nulls, chunks=chunks)
        dev = fsstgpu.compress_device(column, level="fast", fill=POISON)
        _same_as_cpu(dev, column)
        if nbytes > 1 << 20:
            assert len(dev.to_host().tables) >= 3


def test_gpu_fast_level_of_device_strings_and_small_samples(fresh_rng):
    column = fast_column(fresh_rng, 2_200_000, chunks=3)
    carr = fsstgpu.compress(column)
    strings = fsstgpu.decompress_device(fsstgpu.to_device(carr))  # nulls' bytes, offsets
    dev = fsstgpu.compress_device(strings, level="fast", sample_bytes=3000, split_size=777)
    _same_as_cpu(dev, column, sample_bytes=3000, split_size=777)


def test_gpu_fast_level_split_points_planned_on_the_device(fresh_rng, monkeypatch):
    """Many rows: the blocks' and rule 2's rows merged on the device (no string longer than
    4096), or on the host with the cuts inside strings longer than 64."""
    monkeypatch.setattr(encoded, "DEVICE_PLAN_ROWS", 1)
    column = fast_column(fresh_rng, 3_000_000, nulls=False)
    short = pa.chunked_array([pc.binary_slice(column.chunk(0), 0, 300)])
    for split_size in (64, 4096):
        dev = fsstgpu.compress_device(short, level="fast", split_size=split_size)
        _same_as_cpu(dev, short, split_size=split_size)


def test_gpu_fast_level_of_dbtext(dbtext_paths):
    column = pa.concat_arrays([load_lines(p).cast(pa.large_binary()) for p in dbtext_paths])
    dev = fsstgpu.compress_device(column, level="fast", fill=POISON)
    _same_as_cpu(dev, column)
    host = dev.to_host()
    assert len(host.tables) >= 20 and host.stats()["ratio"] > 1.8


def test_gpu_level_refused_where_the_cpu_plans():
    with pytest.raises(ValueError, match="level"):
        fsstgpu.compress_device(pa.array(["a"]), level="default")


def test_gpu_many_tables_encode_is_the_cpus(fresh_rng):
    import cupy as cp

    rng = fresh_rng
    column = fast_column(rng, 3_000_000, nulls=False)
    plain = from_arrow(as_string_column(column))
    starts, tables = fast_blocks(plain.data, plain.offsets, block_bytes=300_000)
    n = len(plain)
    starts = np.sort(np.concatenate([starts, starts[2:3]]))  # an empty block
    tables = tables[:2] + [tables[2]] + tables[2:]
    want = native.encode_blocks(tables, plain.data, plain.offsets, starts)
    for long_min, chunk in ((None, 1024), (64, 64), (1 << 20, 1024)):  # (chunk <= long_min)
        codes, offs = encode_on_device(tables, cp.asarray(plain.data), cp.asarray(plain.offsets),
                                       fill=POISON, block_starts=starts,
                                       long_min=long_min, chunk=chunk)
        assert codes.get().tobytes() == want[0].tobytes(), long_min
        assert np.array_equal(offs.get(), want[1])
    assert n == starts[-1]


def test_gpu_codec_fast_level_encodes_as_on_the_cpu(fresh_rng):
    column = fast_column(fresh_rng, 2_100_000)
    gpu = fsstgpu.Codec(device="gpu", level="fast").encode_device([column])[0]
    assert gpu.to_host().equals(fsstgpu.Codec(level="fast").encode(column))
