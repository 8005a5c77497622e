"""The planned decode call (issue #24, item 1): launches through the CUDA driver, planned once
per device column, byte for byte what the CuPy launchers and the CPU decoder give.

Every check runs on fresh random columns and poisons the output first (0xAB), decoding into a
buffer longer than the output so that a byte the kernels miss or write past the end shows.
"""

from __future__ import annotations

import threading

import numpy as np
import pyarrow as pa
import pytest

import fsstgpu

POISON = 0xAB


def _column(seed: int, rows: int) -> pa.Array:
    rng = np.random.default_rng(seed)
    vocab = [b"http://", b"www.", b"example", b".com/", b"\xc3\x9f", b"id=", b"\x00", b"q"]
    out = []
    for _ in range(rows):
        if rng.random() < 0.05:
            out.append(None)
            continue
        k = int(rng.integers(0, 14))
        word = b"".join(vocab[j] for j in rng.integers(0, len(vocab), k))
        out.append(word + bytes(rng.integers(0, 256, int(rng.integers(0, 4))).astype(np.uint8)))
    return pa.array(out, pa.binary() if seed % 2 else pa.large_binary())


def _decoded(dev, planned: bool, monkeypatch):
    """(data bytes, offsets as int64) of one decode of ``dev`` into a poisoned buffer."""
    import cupy as cp

    from fsstgpu.gpu import decode

    with monkeypatch.context() as m:
        if not planned:
            m.setattr(decode, "_planned", lambda dev: None)
        buf = cp.full(dev.total + 64, POISON, dtype=cp.uint8)
        res = decode.decode_async(dev, fill=POISON, out=buf).check()
        assert np.all(buf[dev.total:].get() == POISON), "wrote past the end of the output"
        return res.data.get(), res.offsets.get().astype(np.int64), res


@pytest.mark.gpu
@pytest.mark.parametrize("seed", range(6))
def test_planned_matches_launchers_and_cpu(seed, monkeypatch):
    from fsstgpu.gpu import decode

    rng = np.random.default_rng(seed + 1000)
    col = _column(seed, int(rng.integers(1, 40_000)))
    carr = fsstgpu.compress(col, split_size=int(rng.choice([64, 512, 4096])))
    dev = fsstgpu.to_device(carr)
    assert decode._planned(dev) is not None, "the planned path is not taken"
    data_p, offs_p, res = _decoded(dev, True, monkeypatch)
    data_l, offs_l, _ = _decoded(dev, False, monkeypatch)
    ref = fsstgpu.decompress(carr, device="cpu")
    ref_data = np.frombuffer(b"".join(v for v in ref.to_pylist() if v is not None), np.uint8)
    assert np.array_equal(data_p, ref_data) and np.array_equal(data_l, ref_data)
    assert np.array_equal(offs_p, offs_l)
    assert res.to_arrow().equals(ref)
    assert decode._planned(dev) is decode._planned(dev), "planned once, kept with the column"


@pytest.mark.gpu
def test_planned_batch_and_empty_columns():
    cols = [_column(s, n) for s, n in ((7, 3000), (8, 0), (9, 1), (10, 20_000))]
    cols[1] = pa.array([], pa.binary())
    carrs = [fsstgpu.compress(c) for c in cols]
    results = fsstgpu.decompress_device(fsstgpu.to_device(carrs))
    for res, col in zip(results, cols, strict=True):
        assert res.to_arrow().equals(col)


@pytest.mark.gpu
def test_threads_share_a_plan():
    import cupy as cp

    col = _column(11, 30_000)
    dev = fsstgpu.to_device(fsstgpu.compress(col))
    errors = []

    def work():
        try:
            with cp.cuda.Stream(non_blocking=True) as stream:
                for _ in range(20):
                    assert fsstgpu.decompress_device(dev, stream=stream).to_arrow().equals(col)
        except Exception as e:  # reported below: an assert in a thread is lost otherwise
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


@pytest.mark.gpu
def test_planned_corrupt_codes_raise():
    from fsstgpu.gpu import decode
    from fsstgpu.testing import gpu_decode_matches_cpu

    assert decode.driver() is not None, "the planned path needs the driver here"
    carr = fsstgpu.compress(_column(12, 5000), split_size=256)
    rng = np.random.default_rng(12)
    failures = 0
    for trial in range(20):
        codes = np.array(carr.codes)
        pos = rng.integers(0, len(codes), int(rng.integers(1, 6)))
        codes[pos] = 255 if trial % 2 else rng.integers(0, 256, len(pos))
        failures += gpu_decode_matches_cpu(carr, codes=codes)
    assert failures > 0


@pytest.mark.gpu
def test_out_too_small_is_refused():
    import cupy as cp

    from fsstgpu.gpu.decode import decode_async

    dev = fsstgpu.to_device(fsstgpu.compress(_column(13, 100)))
    with pytest.raises(ValueError, match="at least"):
        decode_async(dev, out=cp.empty(max(dev.total - 1, 0), cp.uint8))
    with pytest.raises(ValueError, match="contiguous"):
        decode_async(dev, out=cp.empty(2 * dev.total + 2, cp.uint8)[::2])


@pytest.mark.gpu
def test_without_the_driver_cupy_does_it(monkeypatch):
    """Where ctypes cannot load libcuda, decodes take CuPy's launches, fill and get."""
    from fsstgpu.gpu import arrays, decode

    monkeypatch.setattr(decode, "driver", lambda: None)
    monkeypatch.setattr(arrays, "driver", lambda: None)
    col = _column(14, 20_000)
    carr = fsstgpu.compress(col, split_size=512)
    dev = fsstgpu.to_device(carr)
    assert decode._planned(dev) is None
    _, _, res = _decoded(dev, True, monkeypatch)
    assert res.to_arrow().equals(col)
    assert fsstgpu.decompress_device(carr).to_arrow().equals(col)  # host column, one chunk
