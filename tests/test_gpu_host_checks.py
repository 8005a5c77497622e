"""Hand-built device columns in front of the kernels, and batch flags no column explains.

``DeviceStringArray.check_buffers`` runs on the host (metadata only), so NumPy arrays stand in
for CuPy ones in the CPU tests. GPU tests feed ``compress_device`` and
``concat_device_arrays`` views a kernel would read past (a reversed view whose first byte is
8-byte aligned is read forward from its pointer), and fake a decode flag that no column's own
decode raises again.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import fsstgpu
from fsstgpu.errors import BatchDecodeError, CorruptDataError
from fsstgpu.gpu.strings import DeviceStringArray

sys.path.insert(0, str(Path(__file__).parent))
from seeds import fresh_seed  # noqa: E402


def _column(xp, n=3, *, validity=True):
    """["ab", None, "cde"]-like buffers of ``n`` strings in ``xp`` (numpy or cupy)."""
    lengths = xp.arange(n, dtype=xp.int64) % 4
    offsets = xp.zeros(n + 1, xp.int32)
    offsets[1:] = xp.cumsum(lengths)
    data = xp.full(int(offsets[-1]), ord("x"), xp.uint8)
    bits = xp.full((n + 7) // 8, 0xFF, xp.uint8) if validity else None
    return DeviceStringArray(pa.string(), n, offsets, data, bits, 0)


# ---------------------------------------------------------------- CPU (run everywhere)
def test_well_formed_buffers_pass():
    _column(np, 100).check_buffers()
    _column(np, 0, validity=False).check_buffers()


@pytest.mark.parametrize("damage, match", [
    (lambda c: setattr(c, "data", np.zeros(20, np.uint8)[::-2]), "data buffer must be"),
    (lambda c: setattr(c, "data", np.zeros(9, np.int8)), "data buffer must be"),
    (lambda c: setattr(c, "data", np.zeros((3, 3), np.uint8)), "data buffer must be"),
    (lambda c: setattr(c, "data", None), "data buffer must be"),
    (lambda c: setattr(c, "offsets", c.offsets[::-1]), "offsets buffer must be"),
    (lambda c: setattr(c, "offsets", c.offsets.astype(np.uint32)), "offsets buffer must be"),
    (lambda c: setattr(c, "offsets", c.offsets[:-1]), "offsets buffer of 100 items"),
    (lambda c: setattr(c, "offsets", np.zeros(102, np.int32)), "offsets buffer of 102 items"),
    (lambda c: setattr(c, "validity", c.validity[:-1]), "validity buffer of 12 items"),
    (lambda c: setattr(c, "validity", np.zeros(26, np.uint8)[::2]), "validity buffer must"),
], ids=["data-strided", "data-int8", "data-2d", "data-none", "offsets-reversed",
        "offsets-uint32", "offsets-short", "offsets-long", "validity-short",
        "validity-strided"])
def test_malformed_buffers_are_named(damage, match):
    col = _column(np, 100)
    damage(col)
    with pytest.raises(CorruptDataError, match=match):
        col.check_buffers()


# ---------------------------------------------------------------- GPU
def _reversed_aligned(cp, nbytes):
    """A reversed view of ``nbytes`` whose first element sits on an 8-byte boundary."""
    first = 4096 + 8 * (nbytes // 8 + 1)   # the pool's blocks start 256-byte aligned
    raw = (cp.arange(first + 1, dtype=cp.int64) % 26 + 97).astype(cp.uint8)
    view = raw[first : first - nbytes : -1]
    assert view.size == nbytes
    assert view.data.ptr % 8 == 0 and not view.flags.c_contiguous
    return view


@pytest.mark.gpu
@pytest.mark.parametrize("buffer", ["data", "validity"])
def test_compress_device_refuses_non_contiguous_buffers(buffer):
    import cupy as cp

    col = _column(cp, 72)
    if buffer == "data":
        col.data = _reversed_aligned(cp, int(col.data.size))
    else:
        col.validity, col.null_count = _reversed_aligned(cp, 9), 1
    with pytest.raises(CorruptDataError, match=f"{buffer} buffer must be"):
        fsstgpu.compress_device(col)


@pytest.mark.gpu
def test_concat_refuses_a_reversed_last_part():
    import cupy as cp

    from fsstgpu.gpu.concat import concat_device_arrays

    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    cols = [pa.array(["ab" * int(k) for k in rng.integers(0, 9, 50)]) for _ in range(3)]
    parts = fsstgpu.decompress_device([fsstgpu.compress(c) for c in cols])
    parts[-1].data = _reversed_aligned(cp, int(parts[-1].data.size))
    for consume in (False, True):
        with pytest.raises(CorruptDataError, match="data buffer must be"):
            concat_device_arrays(parts, consume=consume)


@pytest.mark.gpu
def test_a_batch_flag_no_column_explains_fails_every_column(monkeypatch):
    # bit 64 (the offsets scan stopped) comes back from no column's plain decode: before the
    # fix the batch came back as good with offsets the scan may not have written
    from fsstgpu.gpu import decode
    from fsstgpu.gpu.decode import decompress_device

    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    carrs = [fsstgpu.compress(pa.array([f"s{int(k)}" for k in rng.integers(0, 99, 300)]))
             for _ in range(3)]
    real = decode.DecodeJob._flags

    def scan_stopped(job):
        flags = list(real(job))
        flags[0] |= 64
        return flags

    monkeypatch.setattr(decode.DecodeJob, "_flags", scan_stopped)
    with pytest.raises(BatchDecodeError) as info:
        decompress_device(carrs, lengths="narrow")
    assert sorted(info.value.failed) == [0, 1, 2], f"seed {seed}"
    assert info.value.results == [None, None, None]
    with pytest.raises(CorruptDataError):
        decompress_device(carrs[0], lengths="narrow")


@pytest.mark.gpu
@pytest.mark.parametrize("values", [[1, 5], [200, 5]], ids=["same-total", "past-the-data"])
def test_gpu_decode_refuses_given_packed_lengths_that_are_not_the_lengths(values):
    from fsstgpu.kernels.bitplane_cpu import bitplane_pack_cpu

    carr = fsstgpu.compress(pa.array(["abcd", "ef"]))
    carr.packed_lengths = bitplane_pack_cpu(np.array(values, np.uint8))
    with pytest.raises(CorruptDataError, match="not the column's string lengths"):
        fsstgpu.decompress_device(carr)
    with pytest.raises(CorruptDataError, match="not the column's string lengths"):
        fsstgpu.to_device(carr)
