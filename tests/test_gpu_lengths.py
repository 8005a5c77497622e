"""String lengths to the GPU bit-plane packed (FBP2) and unpacked there straight into the Arrow
offsets, against the narrow lengths and the CPU decoder.

GPU outputs are poisoned first (``fill``); inputs are fresh random columns (seed from
os.urandom, named in failure messages).
"""

from __future__ import annotations

import copy
import pickle
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import fsstgpu
from fsstgpu.errors import BatchDecodeError, CorruptDataError
from fsstgpu.gpu import lengths
from fsstgpu.gpu.layout import HostBatch, packed_lengths
from fsstgpu.kernels.bitplane_cpu import bitplane_pack_cpu

sys.path.insert(0, str(Path(__file__).parent))
from seeds import fresh_seed  # noqa: E402

TYPES = [pa.string(), pa.large_string(), pa.binary(), pa.string_view()]


def _column(rng, n, type_):
    words = ["", "a", "bc", "naïve", "fsst-gpu", "x" * 70, "y" * 300, "日本語"]
    values = [None if rng.random() < 0.05 else words[int(i)]
              for i in rng.integers(0, len(words), n)]
    if type_ in (pa.binary(),):
        values = [None if v is None else v.encode() for v in values]
    return pa.array(values, type_)


def _columns(seed):
    rng = np.random.default_rng(seed)
    sizes = [0, 1, 31, 4095, 4096, 4097, 20000]
    return [_column(rng, n, TYPES[k % len(TYPES)]) for k, n in enumerate(sizes)]


# ---------------------------------------------------------------- CPU (run everywhere)
def test_packed_offsets_equal_narrow_offsets_on_the_host():
    seed = fresh_seed()
    carrs = [fsstgpu.compress(c) for c in _columns(seed)]
    narrow = HostBatch(carrs, lengths="narrow").offsets_cpu()
    packed = HostBatch(carrs, lengths="bitplane").offsets_cpu()
    for a, b in zip(narrow, packed, strict=True):
        assert a.dtype == b.dtype and np.array_equal(a, b), f"seed {seed}"


def test_packed_lengths_are_cached_and_read_only():
    carr = fsstgpu.compress(pa.array(["ab", None, "cde"] * 100))
    first = packed_lengths(carr)
    assert packed_lengths(carr) is first and not first.flags.writeable
    back = fsstgpu.CompressedStringArray.from_bytes(carr.to_bytes())
    assert bytes(back.packed_lengths) == bytes(first)       # a blob brings them as they are


def _with_packed(values, *, by_setattr: bool):
    """A column of ["abcd", "ef"] whose packed lengths (given, not the library's) say
    ``values``."""
    carr = fsstgpu.compress(pa.array(["abcd", "ef"]))
    packed = bitplane_pack_cpu(np.array(values, np.uint8))
    if by_setattr:  # on a validated column: it stays validated (no CPU check reads them)
        carr.packed_lengths = packed
        return carr
    fields = {name: getattr(carr, name) for name in (
        "type", "length", "tables", "block_starts", "codes", "code_offsets", "lengths",
        "validity", "null_count", "split_size", "split_codes", "split_out", "split_table")}
    return fsstgpu.CompressedStringArray(**fields, packed_lengths=packed)


@pytest.mark.parametrize("by_setattr", [False, True], ids=["constructor", "setattr"])
@pytest.mark.parametrize("values", [[1, 5], [200, 5], [4, 2, 0]],
                         ids=["same-total", "past-the-data", "one-too-many"])
def test_given_packed_lengths_must_be_the_lengths(values, by_setattr):
    # the GPU builds the offsets from them alone: [1, 5] would give the strings "a", "bcdef",
    # [200, 5] offsets past the 6 data bytes (offsets_cpu is the kernel's twin)
    carr = _with_packed(values, by_setattr=by_setattr)
    assert not carr.packed_lengths_checked
    with pytest.raises(CorruptDataError, match="not the column's string lengths"):
        HostBatch([carr], lengths="bitplane")
    with pytest.raises(CorruptDataError, match="not the column's string lengths"):
        HostBatch([carr])                       # "auto" takes them too


def test_given_packed_lengths_that_are_the_lengths_are_used():
    good = _with_packed([4, 2], by_setattr=False)
    batch = HostBatch([good])
    assert batch.lengths_layout == "bitplane"
    assert [o.tolist() for o in batch.offsets_cpu()] == [[0, 4, 6]]
    delta = fsstgpu.compress(pa.array(["abcd", "ef"]))
    delta.packed_lengths = bitplane_pack_cpu(np.array([4, 2], np.uint8), delta=True)
    with pytest.raises(CorruptDataError, match="FBP2, unsigned, without delta"):
        HostBatch([delta])


def test_a_blobs_packed_lengths_are_trusted_until_its_lengths_change(monkeypatch):
    col = pa.array(["abcd", None, "ef"] * 50)
    blob = fsstgpu.CompressedStringArray.from_bytes(fsstgpu.compress(col).to_bytes())
    assert blob.packed_lengths_checked     # unpacked into its lengths at load: not re-checked
    monkeypatch.setattr(lengths, "bitplane_unpack_cpu", None)  # a check would call it
    assert HostBatch([blob]).lengths_layout == "bitplane"
    monkeypatch.undo()
    blob.lengths = blob.lengths[::-1].copy()    # same total, other strings
    assert not blob.packed_lengths_checked
    with pytest.raises(CorruptDataError, match="not the column's string lengths"):
        HostBatch([blob])


@pytest.mark.parametrize("duplicate", [copy.copy, copy.deepcopy,
                                       lambda c: pickle.loads(pickle.dumps(c))],
                         ids=["copy", "deepcopy", "pickle"])
def test_a_copy_keeps_the_validation_and_the_packed_lengths_trust(duplicate):
    # copy and pickle restore the slots one by one: the trust flag, restored after the packed
    # lengths it follows, must not count as a replaced field (it dropped the validation)
    carr = fsstgpu.compress(pa.array(["ab", None, "abc"] * 100))
    packed_lengths(carr)  # what an upload does (the cache, known good)
    dup = duplicate(carr)
    assert dup.validated and dup.packed_lengths_checked
    blob = fsstgpu.CompressedStringArray.from_bytes(carr.to_bytes())
    assert duplicate(blob)._checked and duplicate(blob).packed_lengths_checked
    given = _with_packed([4, 2], by_setattr=False)
    assert not duplicate(given).packed_lengths_checked   # a given buffer stays to be checked


def test_blob_size_ignores_given_packed_lengths():
    from fsstgpu.formats import blob

    carr = _with_packed([4, 2] + [0] * 5000, by_setattr=True)
    assert blob.dumped_size(carr) == len(blob.dumps(carr))


def test_unknown_lengths_layout_is_refused():
    with pytest.raises(ValueError, match="lengths must be one of"):
        HostBatch([fsstgpu.compress(pa.array(["a"]))], lengths="wide")


# ---------------------------------------------------------------- GPU
@pytest.mark.gpu
def test_batch_with_packed_lengths_matches_the_cpu():
    from fsstgpu.gpu.decode import decompress_device

    seed = fresh_seed()
    cols = _columns(seed)
    carrs = [fsstgpu.compress(c) for c in cols]
    out = decompress_device(carrs, lengths="bitplane", fill=0xAB)
    for col, dev in zip(cols, out, strict=True):
        assert dev.to_arrow().equals(col), f"seed {seed}"


@pytest.mark.gpu
@pytest.mark.parametrize("type_", TYPES)
def test_resident_column_with_packed_lengths(type_):
    seed = fresh_seed()
    col = _column(np.random.default_rng(seed), 50_000, type_)
    dev = fsstgpu.to_device(fsstgpu.compress(col), lengths="bitplane")
    for _ in range(2):           # decoded twice from the same device column
        assert fsstgpu.decompress_device(dev).to_arrow().equals(col), f"seed {seed}"


@pytest.mark.gpu
def test_blob_lengths_go_to_the_gpu_as_stored():
    seed = fresh_seed()
    col = _column(np.random.default_rng(seed), 10_000, pa.large_string())
    carr = fsstgpu.CompressedStringArray.from_bytes(fsstgpu.compress(col).to_bytes())
    stored = carr.packed_lengths
    out = fsstgpu.decompress_device(fsstgpu.to_device(carr, lengths="bitplane"))
    assert out.to_arrow().equals(col) and carr.packed_lengths is stored, f"seed {seed}"


def _forged(carr, flip_at):
    """``carr`` with one byte of its packed lengths' plane words flipped, planted as the
    library's own buffer (past the host check of given ones), so the kernel's check is what
    finds it."""
    bad = packed_lengths(carr).copy()
    bad[flip_at] ^= 0x10
    forged = fsstgpu.CompressedStringArray(
        type=carr.type, length=carr.length, tables=carr.tables, block_starts=carr.block_starts,
        codes=carr.codes, code_offsets=None, lengths=carr.lengths, validity=carr.validity,
        null_count=carr.null_count, split_size=carr.split_size, split_codes=carr.split_codes,
        split_out=carr.split_out, split_table=carr.split_table)
    object.__setattr__(forged, "packed_lengths", bad)
    return forged


@pytest.mark.gpu
def test_corrupt_packed_lengths_raise_and_name_the_column():
    from fsstgpu.gpu.decode import decompress_device

    seed = fresh_seed()
    cols = _columns(seed)[4:]
    carrs = [fsstgpu.compress(c) for c in cols]
    bad = _forged(carrs[1], packed_lengths(carrs[1]).size - 3)   # a plane word of the end
    with pytest.raises(CorruptDataError, match="string lengths"):
        decompress_device(bad, lengths="bitplane")
    with pytest.raises(BatchDecodeError) as info:
        decompress_device([carrs[0], bad, carrs[2]], lengths="bitplane")
    assert list(info.value.failed) == [1], f"seed {seed}"
    good = info.value.results
    assert good[0].to_arrow().equals(cols[0]) and good[2].to_arrow().equals(cols[2])


def test_auto_packs_only_lengths_that_came_packed():
    carr = fsstgpu.compress(pa.array(["ab", None, "cde"] * 100))
    assert HostBatch([carr]).lengths_layout == "narrow"          # nothing packed to reuse
    assert carr.packed_lengths is None                           # and nothing packed for it
    blob = fsstgpu.CompressedStringArray.from_bytes(carr.to_bytes())
    assert HostBatch([blob]).lengths_layout == "bitplane"
    assert HostBatch([blob, carr]).lengths_layout == "narrow"


def test_packing_the_lengths_keeps_the_columns_validation():
    # packed_lengths() caches a function of the column's own lengths: the column stays
    # validated, so its next CPU decode skips the checks it passed (issue #22)
    from fsstgpu.kernels.bitplane import bitplane_unpack_cpu

    carr = fsstgpu.compress(pa.array(["ab", None, "cde"] * 10))
    carr.validate()
    assert bitplane_unpack_cpu(packed_lengths(carr)).tolist() == carr.lengths.tolist()
    assert carr._validated and carr._checked


@pytest.mark.parametrize("lengths", ["bogus", 5, None])
def test_to_device_refuses_an_unknown_lengths_layout_on_any_machine(lengths):
    # checked before the GPU is asked for: a CPU machine said "GPU path unavailable" instead
    carr = fsstgpu.compress(pa.array(["ab", None]))
    with pytest.raises(ValueError, match="lengths must be one of"):
        fsstgpu.to_device(carr, lengths=lengths)
