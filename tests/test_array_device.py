"""GPU launchers run on the device their arrays lie on (fsstgpu.device.on_arrays_device).

The launchers took an array's address and ran on the current device: an array of another GPU
was addressed from the wrong device's kernels (an illegal address where peer access is off, a
sticky error that ends the process's CUDA), and outputs and scratch landed on the wrong device.
The CPU tests check the helper on stand-ins (its choice and its refusal of mixed devices); the
GPU tests need two GPUs (skipped otherwise): every public launcher is given arrays of device 1
while device 0 is current, and must give what it gives on device 0, on device 1.
"""

from __future__ import annotations

import contextlib
import sys
import timeit
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import fsstgpu
from fsstgpu.device import on_arrays_device
from fsstgpu.gpu.strings import DeviceStringArray

sys.path.insert(0, str(Path(__file__).parent))
from seeds import fresh_seed  # noqa: E402


class _Memory:
    def __init__(self, device_id):
        self.device_id = device_id


class _Array:
    """What the helper reads of a CuPy array: ``.data.device_id`` and ``.device``."""

    def __init__(self, device_id):
        self.data = _Memory(device_id)
        self.device = f"device {device_id}"


# ---------------------------------------------------------------- CPU (stand-ins)
@pytest.fixture
def current_is_0(monkeypatch):
    """Device 0 current, as the runtime would say (no GPU here)."""
    monkeypatch.setattr(fsstgpu.device, "_current_device", lambda: 0)


def test_the_arrays_device_is_entered(current_is_0):
    assert on_arrays_device("f", x=_Array(1), out=None, err=_Array(1)) == "device 1"
    assert on_arrays_device("f", x=None, y=_Array(3)) == "device 3"


def test_arrays_on_the_current_device_switch_nothing(current_is_0):
    # (no Device object entered and left: ~1 us a launcher on the H200's host)
    assert isinstance(on_arrays_device("f", x=_Array(0), y=None, z=_Array(0)),
                      contextlib.nullcontext)


@pytest.mark.parametrize("arrays", [{}, {"x": None}, {"x": np.zeros(3), "y": None},
                                    {"x": b"bytes", "y": 5}])
def test_no_device_arrays_enter_nothing(arrays):
    assert isinstance(on_arrays_device("f", **arrays), contextlib.nullcontext)


def test_arrays_of_several_devices_are_refused_naming_each():
    with pytest.raises(ValueError, match=r"^bitplane_unpack_offsets needs its arrays on one GPU, "
                                         r"not buf on GPU 1, out on GPU 0, err on GPU 1"):
        on_arrays_device("bitplane_unpack_offsets", buf=_Array(1), out=_Array(0), err=_Array(1),
                         none=None)


def test_the_helper_costs_little(current_is_0):
    # a hot path's per-call cost (launchers take 16-47 us on the host): a few attribute reads
    x, y = _Array(0), _Array(0)
    best = min(timeit.repeat(lambda: on_arrays_device("f", a=x, b=y, c=None), number=2000,
                             repeat=5)) / 2000
    assert best < 20e-6, best     # ~1 us on a slow CPU; loose, so never flaky


# ---------------------------------------------------------------- GPU (two of them)
@pytest.fixture
def cp():
    import cupy

    if cupy.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("needs two GPUs (arrays on device 1 while device 0 is current)")
    return cupy


def _on(cp, device, host):
    with cp.cuda.Device(device):
        return cp.asarray(host)


def _host(cp, x):
    with x.device:
        return cp.asnumpy(x)


@pytest.mark.gpu
def test_gpu_bitplane_on_the_arrays_device(cp):
    from fsstgpu.kernels.bitplane import (
        bitplane_pack,
        bitplane_pack_cpu,
        bitplane_unpack,
        bitplane_unpack_offsets,
        bitplane_unpack_offsets_cpu,
    )

    seed = fresh_seed()
    values = np.random.default_rng(seed).integers(0, 1000, 300_007).astype(np.uint32)
    packed = bitplane_pack_cpu(values)
    with cp.cuda.Device(0):
        for trim in (True, False):
            got = bitplane_pack(_on(cp, 1, values), trim=trim)
            buf = got if trim else got[0]
            assert buf.device.id == 1, seed
            if trim:
                assert np.array_equal(_host(cp, buf), packed), seed
        out = bitplane_unpack(_on(cp, 1, packed))
        assert out.device.id == 1 and np.array_equal(_host(cp, out), values), seed
        offs = bitplane_unpack_offsets(_on(cp, 1, packed), wide=True)
        assert offs.device.id == 1, seed
        assert np.array_equal(_host(cp, offs), bitplane_unpack_offsets_cpu(packed, wide=True))
        dst = _on(cp, 1, np.zeros(8 * (values.size + 1), np.uint8))
        err = _on(cp, 1, np.zeros(1, np.int32))
        bitplane_unpack_offsets(_on(cp, 1, packed), dst, wide=True, err=err)
        assert int(_host(cp, err)[0]) == 0, seed
        with pytest.raises(ValueError, match="buf on GPU 1, out on GPU 0"):
            bitplane_unpack_offsets(_on(cp, 1, packed), cp.zeros(dst.size, cp.uint8), wide=True)
        with pytest.raises(ValueError, match="buf on GPU 1, out on GPU 1, err on GPU 0"):
            bitplane_unpack_offsets(_on(cp, 1, packed), dst, wide=True,
                                    err=cp.zeros(1, cp.int32))


@pytest.mark.gpu
def test_gpu_bitshuffle_on_the_arrays_device(cp):
    from fsstgpu.kernels.bitshuffle import bitshuffle, bitshuffle_cpu, bitunshuffle

    seed = fresh_seed()
    x = np.random.default_rng(seed).integers(0, 2**31, 1_000_003).astype(np.int32)
    with cp.cuda.Device(0):
        shuffled = bitshuffle(_on(cp, 1, x))
        assert shuffled.device.id == 1, seed
        assert np.array_equal(_host(cp, shuffled), bitshuffle_cpu(x)), seed
        back = bitunshuffle(shuffled, np.int32)
        assert back.device.id == 1 and np.array_equal(_host(cp, back), x), seed


def _device_strings(cp, device, col):
    """A DeviceStringArray of ``col`` (offset 0) built on ``device``."""
    bufs = col.buffers()
    offs = np.frombuffer(bufs[1], np.int32)[: len(col) + 1]
    data = np.frombuffer(bufs[2], np.uint8)[: int(offs[-1])].copy()
    validity = (np.frombuffer(bufs[0], np.uint8)[: (len(col) + 7) // 8].copy()
                if col.null_count else None)
    with cp.cuda.Device(device):
        return DeviceStringArray(col.type, len(col), cp.asarray(offs), cp.asarray(data),
                                 None if validity is None else cp.asarray(validity),
                                 col.null_count)


def _column(rng, n):
    words = ["", "a", "fsst", "naïve", "x" * 90, "http://example.com/" + "q" * 300]
    return pa.array([None if rng.random() < 0.1 else words[int(rng.integers(len(words)))]
                     for _ in range(n)], pa.string())  # (n 0 or all nulls: not of type null)


@pytest.mark.gpu
def test_gpu_compress_and_decode_on_the_arrays_device(cp):
    from fsstgpu.gpu.decode import decode_async

    seed = fresh_seed()
    col = _column(np.random.default_rng(seed), 20_000)
    strings = _device_strings(cp, 1, col)
    with cp.cuda.Device(0):
        dev = fsstgpu.compress_device(strings)
        assert dev.codes.device.id == 1, seed
        for _ in range(2):   # checked decode, then the planned one
            out = decode_async(dev).check()
            assert out.data.device.id == 1 and out.offsets.device.id == 1, seed
            with out.data.device:
                assert out.to_arrow().equals(col), seed
        mixed = _device_strings(cp, 1, col)
        mixed.validity = cp.asarray(_host(cp, mixed.validity))     # on device 0
        with pytest.raises(ValueError, match="validity on GPU 0, offsets on GPU 1"):
            fsstgpu.compress_device(mixed)


@pytest.mark.gpu
def test_gpu_encode_launchers_on_the_arrays_device(cp):
    from fsstgpu.kernels.fsst_encode import (
        encode_on_device,
        first_invalid_utf8,
        launch_check,
    )
    from fsstgpu.symbol_table import SymbolTable

    seed = fresh_seed()
    col = _column(np.random.default_rng(seed), 5000)
    table = SymbolTable([b"fsst", b"http://", b"xx", b"q"])
    results = {}
    for device in (0, 1):
        strings = _device_strings(cp, device, col)
        with cp.cuda.Device(device):
            offsets = strings.offsets.astype(cp.int64)
        with cp.cuda.Device(0):
            lengths, status = launch_check(strings.data, offsets, strings.validity)
            codes, code_offsets = encode_on_device(table, strings.data, offsets,
                                                   strings.validity)
            assert codes.device.id == device and lengths.device.id == device, seed
            assert first_invalid_utf8(strings.data, offsets, strings.validity) == -1, seed
            results[device] = [_host(cp, a) for a in (lengths, codes, code_offsets)]
    for a, b in zip(results[0], results[1], strict=True):
        assert np.array_equal(a, b), seed


@pytest.mark.gpu
def test_gpu_concat_on_the_arrays_device(cp):
    from fsstgpu.gpu.concat import concat_device_arrays

    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    cols = [_column(rng, int(n)) for n in (300, 0, 1000)]
    with cp.cuda.Device(1):
        batch = fsstgpu.decompress_device([fsstgpu.compress(c) for c in cols])
    with cp.cuda.Device(0):
        for consume in (False, True):
            joined = concat_device_arrays(batch, consume=consume)
            assert joined.data.device.id == 1, seed
            with joined.data.device:
                assert joined.to_arrow().equals(pa.chunked_array(cols)), seed
        other = [_device_strings(cp, 1, cols[0]), _device_strings(cp, 0, cols[2])]
        with pytest.raises(ValueError,
                           match="part 0's offsets on GPU 1.*part 1's offsets on GPU 0"):
            concat_device_arrays(other)


@pytest.mark.gpu
def test_gpu_transpose_inplace_steps_on_the_arrays_device(cp):
    from fsstgpu.kernels import transpose_inplace as tin

    seed = fresh_seed()
    a, g, b = tin.block_shape(6000, 8000, 1)
    host = np.random.default_rng(seed).integers(0, 256, a * g * b * g, dtype=np.uint8)
    results = {}
    for device in (0, 1):
        x = _on(cp, device, host)
        with cp.cuda.Device(0):
            tin.square_blocks(x, a, g, b)
            tin.permute_chunks(x, a, g, b)
        results[device] = _host(cp, x)
    assert np.array_equal(results[0], results[1]), seed
    assert not np.array_equal(results[0], host), seed
