"""Nested columns with fsst leaves in Arrow layout in device memory (issue #23: nested strings
decoded on the GPU; ``formats/nested_device.py``).

The assembly (containers' validity and offsets joined and rebased over the pieces, leaves
placed) runs on the CPU here with host steps: NumPy buffers, the CPU decoder, and the Arrow C
Device export as a CPU device array, which pyarrow imports. The GPU tests decode on the GPU
with the device's memory pool poisoned first (0xAB), each against the CPU's ``decode_nested``
on fresh random columns (the seed named in a failure).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import fsstgpu
from fsstgpu.datasets.generators import generate
from fsstgpu.formats.nested import compress_nested, decode_nested
from fsstgpu.formats.nested_device import (
    DeviceNestedArray,
    assemble_with,
    device_layout_supports,
)
from fsstgpu.gpu.strings import DeviceStringArray
from fsstgpu.testing import poisoned_codes

sys.path.insert(0, str(Path(__file__).parent))
from seeds import fresh_seed  # noqa: E402

TYPES = [
    pa.list_(pa.string()),
    pa.large_list(pa.large_binary()),
    pa.list_(pa.string_view(), 3),
    pa.struct([("s", pa.string()), ("n", pa.int64()), ("b", pa.bool_()),
               ("t", pa.timestamp("ms"))]),
    pa.map_(pa.string(), pa.list_(pa.binary())),
    pa.list_(pa.struct([("k", pa.large_string()), ("v", pa.list_(pa.float32())),
                        ("d", pa.decimal128(12, 3))])),
    pa.struct([("inner", pa.struct([("s", pa.string())])), ("l", pa.list_(pa.string()))]),
    # size 0: pyarrow's FixedSizeListArray.from_arrays divides by the size (SIGFPE, cc8a0f6)
    pa.struct([("z", pa.list_(pa.string(), 0)), ("s", pa.string())]),
    pa.list_(pa.string(), 0),
]


def _pool(seed: int) -> list[str]:
    """Real-looking text: URLs and words (fsstgpu.datasets' generators), empty strings too."""
    return generate("urls", 300, seed).to_pylist() + ["", "a", "delta epsilon"]


def _value(rng, type_, pool):
    """A random Python value of ``type_`` (None one time in eight)."""
    if rng.random() < 0.125:
        return None
    if pa.types.is_struct(type_):
        return {f.name: _value(rng, f.type, pool) for f in type_}
    if pa.types.is_map(type_):
        keys = rng.choice(len(pool), int(rng.integers(0, 4)), replace=False)
        return [(pool[k] or "k", _value(rng, type_.item_type, pool)) for k in keys]
    if pa.types.is_fixed_size_list(type_):
        return [_value(rng, type_.value_type, pool) for _ in range(type_.list_size)]
    if pa.types.is_list(type_) or pa.types.is_large_list(type_):
        return [_value(rng, type_.value_type, pool) for _ in range(int(rng.integers(0, 5)))]
    if pa.types.is_boolean(type_):
        return bool(rng.integers(2))
    if pa.types.is_integer(type_) or pa.types.is_timestamp(type_):
        return int(rng.integers(-10 ** 9, 10 ** 9))
    if pa.types.is_floating(type_):
        return float(rng.normal())
    if pa.types.is_decimal(type_):
        from decimal import Decimal
        return Decimal(int(rng.integers(-10 ** 8, 10 ** 8))) / 1000
    text = pool[int(rng.integers(len(pool)))]
    return text.encode() if pa.types.is_binary(type_) or pa.types.is_large_binary(type_) \
        else text


def _column(rng, type_, n, pool) -> pa.Array:
    return pa.array([_value(rng, type_, pool) for _ in range(n)], type_)


def _pieces(rng, coded: pa.Array) -> list[pa.Array]:
    """``coded`` cut into 1-4 slices at random (offsets that do not start at 0, odd bit
    offsets), one of them possibly empty."""
    cuts = np.sort(rng.integers(0, len(coded) + 1, int(rng.integers(0, 4))))
    bounds = [0, *cuts.tolist(), len(coded)]
    return [coded.slice(a, b - a) for a, b in zip(bounds, bounds[1:], strict=False)]


# ------------------------------------------------------------------------ host steps
def _host_strings(arr: pa.Array) -> DeviceStringArray:
    """A decoded leaf as DeviceStringArray over NumPy buffers (the GPU's result, on the host)."""
    type_ = arr.type
    if pa.types.is_string_view(type_) or pa.types.is_binary_view(type_):
        arr = arr.cast(pa.string() if pa.types.is_string_view(type_) else pa.binary())
    arr = pa.concat_arrays([arr])  # offset 0
    wide = pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
    bufs = arr.buffers()
    offsets = np.frombuffer(bufs[1], np.int64 if wide else np.int32)[:len(arr) + 1].copy()
    data = (np.frombuffer(bufs[2], np.uint8)[:int(offsets[-1])].copy() if bufs[2] is not None
            else np.zeros(0, np.uint8))
    validity = (np.frombuffer(bufs[0], np.uint8)[:(len(arr) + 7) // 8].copy()
                if arr.null_count else None)
    return DeviceStringArray(type_, len(arr), offsets, data, validity, arr.null_count)


def _host_assemble(pieces, type_=None):
    type_ = type_ if type_ is not None else pieces[0].type
    return assemble_with(
        pieces, type_, upload=lambda host: np.array(host),
        decode=lambda carrs: [_host_strings(fsstgpu.decompress(c)) for c in carrs],
        join=lambda parts: _host_strings(pa.concat_arrays([p.to_arrow() for p in parts])))


def _expected(pieces, type_):
    return decode_nested(pa.chunked_array(pieces, type=type_))[0]


def _equal(got, expected: pa.ChunkedArray) -> None:
    if isinstance(got, pa.ChunkedArray):
        assert [len(c) for c in got.chunks] == [len(c) for c in expected.chunks]
        got = pa.concat_arrays(got.chunks) if got.num_chunks else pa.array([], got.type)
    whole = (pa.concat_arrays(expected.chunks) if expected.num_chunks
             else pa.array([], expected.type))
    got.validate(full=True)
    assert got.type == whole.type
    assert got.equals(whole)


@pytest.mark.parametrize("type_", TYPES, ids=str)
def test_host_assembly_matches_decode_nested(type_):
    for seed in range(4):
        rng = np.random.default_rng(seed)
        coded = compress_nested(_column(rng, type_, int(rng.integers(0, 400)), _pool(seed)))
        pieces = _pieces(rng, coded)
        node = _host_assemble(pieces, coded.type)
        expected = _expected(pieces, coded.type)
        assert isinstance(node, DeviceNestedArray) and len(node) == len(coded)
        _equal(node.to_arrow() if len(pieces) > 1 else pa.chunked_array([node.to_arrow()]),
               expected)
        assert node.null_count == expected.null_count


@pytest.mark.parametrize("type_", TYPES, ids=str)
def test_host_export_is_read_back_by_pyarrow(type_):
    """The Arrow C Device export (here as a CPU device array), children and all."""
    rng = np.random.default_rng(7)
    coded = compress_nested(_column(rng, type_, 257, _pool(7)))
    pieces = _pieces(rng, coded)
    node = _host_assemble(pieces, coded.type)
    imported = pa.array(node)
    imported.validate(full=True)
    expected = pa.concat_arrays(_expected(pieces, coded.type).chunks)
    assert imported.to_pylist() == expected.to_pylist()


def test_empty_and_no_pieces():
    type_ = compress_nested(pa.array([["a"]])).type
    for pieces in ([], [compress_nested(pa.array([], pa.list_(pa.string())))]):
        node = _host_assemble(pieces, type_)
        assert len(node) == 0 and node.to_arrow().to_pylist() == []


def test_layout_refuses_what_it_cannot_place():
    assert device_layout_supports(compress_nested(_lists_of_text()).type)
    for type_ in (pa.list_(pa.dictionary(pa.int32(), pa.string())), pa.list_(pa.null()),
                  pa.struct([("u", pa.dense_union([pa.field("i", pa.int8())]))])):
        assert not device_layout_supports(type_)


def _lists_of_text():
    return pa.array([["x", None], None, []], pa.list_(pa.string()))


# ------------------------------------------------------------------------ GPU
@pytest.mark.gpu
@pytest.mark.parametrize("type_", TYPES, ids=str)
def test_gpu_nested_matches_the_cpu(type_):
    import cupy as cp

    from fsstgpu.formats.nested_device import nested_to_device

    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    for n in (0, 1, 777, 5000):
        coded = compress_nested(_column(rng, type_, n, _pool(seed % 1000)))
        pieces = _pieces(rng, coded)
        junk = cp.full(64 << 20, 0xAB, dtype=cp.uint8)  # poison the pool the output comes from
        del junk
        node = nested_to_device(pieces, coded.type)
        got = node.to_arrow()
        expected = _expected(pieces, coded.type) if pieces else None
        if expected is None:
            assert len(got) == 0
            continue
        try:
            _equal(got if isinstance(got, pa.ChunkedArray) else pa.chunked_array([got]),
                   expected)
        except AssertionError:
            raise AssertionError(f"seed {seed}, type {type_}, n {n}") from None


def _poisoned_leaf(coded: pa.ListArray) -> pa.ListArray:
    """``coded`` (a list of fsst strings) with every code byte of its leaf forged."""
    return pa.ListArray.from_arrays(coded.offsets, poisoned_codes(coded.values), type=coded.type)


@pytest.mark.gpu
def test_gpu_corrupt_leaf_is_named_not_decoded():
    from fsstgpu import CorruptDataError
    from fsstgpu.formats.nested_device import nested_to_device

    coded = compress_nested(_column(np.random.default_rng(3), pa.list_(pa.string()), 400,
                                    _pool(3)))
    with pytest.raises(CorruptDataError, match="leaf piece 1"):
        nested_to_device([coded, _poisoned_leaf(coded)], coded.type)


@pytest.mark.gpu
def test_gpu_stream_to_device_places_nested_row_groups(tmp_path):
    from fsstgpu.formats import compress_file
    from fsstgpu.formats.device_reader import stream_to_device

    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    table = pa.table({"l": _column(rng, TYPES[5], 1500, _pool(seed % 1000)),
                      "m": _column(rng, TYPES[4], 1500, _pool(seed % 1000 + 1))})
    pq.write_table(table, tmp_path / "in.parquet", row_group_size=600)
    compress_file(tmp_path / "in.parquet", tmp_path / "c.parquet")
    start = 0
    for unit in stream_to_device(tmp_path / "c.parquet", workers=2):
        n = len(unit["l"])
        for name in ("l", "m"):
            assert isinstance(unit[name], DeviceNestedArray)
            assert unit[name].to_arrow().equals(table.column(name).slice(start, n)
                                                .combine_chunks()), f"seed {seed}"
        start += n
    assert start == 1500
