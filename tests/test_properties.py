"""Property tests: arbitrary byte strings, nulls, slices, chunks, tables and split sizes."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import HealthCheck, given, settings, strategies as st

from fsstgpu import CorruptDataError, SymbolTable, compress
from fsstgpu.arrow_layout import from_arrow, to_arrow
from fsstgpu.formats.intcodec import decode_offsets, decode_uints, encode_offsets, encode_uints
from fsstgpu.testing import check_roundtrip

SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])

# Small alphabets make repeats (and so real symbols) likely; full bytes cover 0x00 / 0xFF.
byte_strings = st.one_of(st.binary(max_size=40),
                         st.text(alphabet="ab\x00\xff", max_size=60).map(
                             lambda s: s.encode("latin-1")))
text_strings = st.text(max_size=30)
binary_types = st.sampled_from([pa.binary(), pa.large_binary(), pa.binary_view()])
string_types = st.sampled_from([pa.string(), pa.large_string(), pa.string_view()])
split_sizes = st.sampled_from([1, 3, 16, 4096])


@st.composite
def columns(draw):
    """An Array or ChunkedArray of one of the six types, maybe sliced, with nulls."""
    if draw(st.booleans()):
        type_ = draw(binary_types)
        values = draw(st.lists(st.one_of(st.none(), byte_strings), max_size=60))
    else:
        type_ = draw(string_types)
        values = draw(st.lists(st.one_of(st.none(), text_strings), max_size=60))
    arr = pa.array(values, type_)
    if draw(st.booleans()) and len(arr):
        start = draw(st.integers(0, len(arr)))
        arr = arr[start : draw(st.integers(start, len(arr)))]
    if draw(st.booleans()):
        cuts = sorted(draw(st.lists(st.integers(0, len(arr)), max_size=4)))
        bounds = [0, *cuts, len(arr)]
        pieces = [arr[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]
        return pa.chunked_array(pieces, type=type_)
    return arr


@SETTINGS
@given(columns(), split_sizes)
def test_roundtrip_trained(column, split_size):
    check_roundtrip(column, split_size=split_size, samples=16)


symbols = st.lists(st.binary(min_size=1, max_size=8), unique=True, max_size=255)


@SETTINGS
@given(columns(), symbols, split_sizes)
def test_roundtrip_any_table(column, syms, split_size):
    check_roundtrip(column, table=SymbolTable(syms), split_size=split_size, samples=16)


@SETTINGS
@given(st.lists(st.one_of(st.none(), byte_strings), max_size=50), st.integers(0, 2**32))
def test_random_access_matches(values, seed):
    carr = compress(pa.array(values, pa.binary()))
    rng = np.random.default_rng(seed)
    for i in rng.integers(0, max(1, len(values)), size=min(10, len(values))):
        assert carr[int(i)] == values[int(i)]


@SETTINGS
@given(columns())
def test_plain_layout_roundtrip(column):
    plain = from_arrow(column)
    assert plain.offsets[0] == 0 and (np.diff(plain.offsets) >= 0).all()
    assert (plain.validity is None) == (plain.null_count == 0)
    back = to_arrow(plain.type, plain.data, plain.offsets, plain.validity, plain.chunk_lengths)
    assert back.type == column.type and back.equals(column)


@SETTINGS
@given(st.lists(st.integers(0, 2**64 - 1), max_size=30))
def test_uint_codec(values):
    arr = np.array(values, dtype=np.uint64)
    payload = encode_uints(arr)
    assert decode_uints(payload, len(arr)).tolist() == values
    assert len(payload) <= 1 + 8 * len(arr)
    if values:
        try:
            decode_uints(payload[:-1], len(arr))
        except CorruptDataError:
            pass
        else:
            raise AssertionError("a truncated payload decoded")


@SETTINGS
@given(st.lists(st.integers(0, 2**40), max_size=30))
def test_offsets_codec(deltas):
    offsets = np.concatenate([[0], np.cumsum(np.array(deltas, dtype=np.int64))]).astype(np.int64)
    total = int(offsets[-1])
    assert decode_offsets(encode_offsets(offsets), len(offsets), total=total).tolist() == (
        offsets.tolist())
    try:
        decode_offsets(encode_offsets(offsets), len(offsets), total=total + 1)
    except CorruptDataError:
        pass
    else:
        raise AssertionError("a wrong total was accepted")
