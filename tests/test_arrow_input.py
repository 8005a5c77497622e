"""Arrow input is checked before any loop reads it: offsets, views, null counts, UTF-8.

Regression tests for issue #12, findings 1-3: an IPC file whose last string offset points past
the data made ``fsstgpu compress`` segfault or copy process heap into its output; text that is
not UTF-8 was compressed as it came; bad offsets raised a plain ValueError.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import fsstgpu
from fsstgpu import CorruptDataError
from fsstgpu.arrow_layout import (
    as_data_offsets,
    buffer_values,
    check_arrow,
    exact_array,
    from_arrow,
    to_arrow,
)
from fsstgpu.formats.arrow_storage import from_extension_array, to_extension_array

sys.path.insert(0, str(Path(__file__).parent))
from long_strings import three_long_strings  # noqa: E402


def _ipc_bytes(arr: pa.Array) -> bytes:
    sink = io.BytesIO()
    table = pa.table({"s": arr})
    with pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


def _ipc_column(data: bytes) -> pa.ChunkedArray:
    return pa.ipc.open_file(pa.BufferReader(data)).read_all().column("s")


def _three_strings() -> pa.Array:
    """The finding's array: offsets 0, 4, 8, 12, the middle string null."""
    offsets = pa.py_buffer(np.array([0, 4, 8, 12], np.int32))
    validity = pa.py_buffer(np.packbits([1, 0, 1], bitorder="little"))
    return pa.Array.from_buffers(pa.string(), 3, [validity, offsets, pa.py_buffer(b"abcdEFGHijkl")],
                                 1)


@pytest.mark.parametrize("last", [2**31 - 1, 12 + 20_000])
def test_ipc_offset_past_the_data(last):
    """Finding 1, reproduced as reported: the last offset overwritten in the file's bytes."""
    data = bytearray(_ipc_bytes(_three_strings()))
    at = bytes(data).find(np.array([0, 4, 8, 12], "<i4").tobytes())
    data[at + 12 : at + 16] = np.int32(last).tobytes()
    col = _ipc_column(bytes(data))
    with pytest.raises(CorruptDataError, match="offsets"):
        fsstgpu.compress(col)
    with pytest.raises(CorruptDataError):
        fsstgpu.train(col)


@pytest.mark.parametrize("type_", [pa.string(), pa.binary(), pa.large_string(),
                                   pa.large_binary()])
def test_decreasing_offsets(type_):
    width = np.int32 if type_ in (pa.string(), pa.binary()) else np.int64
    offsets = pa.py_buffer(np.array([0, 3, 2, 4], width))
    arr = pa.Array.from_buffers(type_, 3, [None, offsets, pa.py_buffer(b"abcd")])
    with pytest.raises(CorruptDataError, match=r"offsets decrease at string 1 \(3 to 2\)"):
        fsstgpu.compress(arr)
    # A slice that leaves the bad offset out is fine.
    assert fsstgpu.decompress(fsstgpu.compress(arr.slice(2)), "cpu").to_pylist() == \
        arr.slice(2).to_pylist()


def test_offsets_that_decrease_by_more_than_the_int32_range_are_caught():
    """np.diff of int32 offsets wraps around: 1,828,716,605 then -989,855,743 'differ' by
    +1,476,394,944 (fuzz: ipc_file seed 20261130 case 1155 raised IndexError)."""
    offsets = pa.py_buffer(np.array([0, 1_828_716_605, -989_855_743, 4], np.int32))
    arr = pa.Array.from_buffers(pa.string(), 3, [None, offsets, pa.py_buffer(b"abcd")])
    with pytest.raises(CorruptDataError,
                       match=r"offsets decrease at string 1 \(1828716605 to -989855743\)"):
        fsstgpu.compress(arr)


def test_positions_that_decrease_by_more_than_the_int64_range_are_caught():
    """The same wrap-around for int64 positions (split points, block starts): the decrease from
    2**63 - 1 to -2**63 + 1 'is' +2 to np.diff."""
    from fsstgpu.arrow_layout import first_decrease, is_non_decreasing
    from fsstgpu.decoder import decode_all

    positions = np.array([0, 2**63 - 1, -(2**63) + 1, 0, 5], np.int64)
    assert np.all(np.diff(positions) >= 0)  # what the old check saw
    assert not is_non_decreasing(positions) and first_decrease(positions) == 1
    with pytest.raises(CorruptDataError, match="non-decreasing"):
        decode_all([fsstgpu.SymbolTable([])], np.zeros(5, np.uint8), positions,
                   np.array([0, 1, 2, 3, 5]), np.zeros(4, np.uint16), 5)


def test_decreasing_offsets_in_a_later_chunk_are_named():
    good = pa.array(["ab", "c"])
    bad = pa.Array.from_buffers(pa.string(), 2, [None, pa.py_buffer(np.array([0, 2, 1], np.int32)),
                                                 pa.py_buffer(b"ab")])
    with pytest.raises(CorruptDataError, match=r"string array \(chunk 1\): offsets decrease"):
        fsstgpu.compress(pa.chunked_array([good, bad]))


def test_null_count_must_match_the_bitmap():
    arr = _three_strings()
    forged = pa.Array.from_buffers(pa.string(), 3, arr.buffers(), null_count=2)
    with pytest.raises(CorruptDataError, match="null count says 2.*holds 1"):
        fsstgpu.compress(forged)


@pytest.mark.parametrize("field,value,message", [
    (2, 7, "outside"),       # buffer index of the long view: no such buffer
    (3, 1000, "outside"),    # its offset past the buffer's end
    (3, -1, "outside"),
    (0, -5, "length -5"),    # a negative length
    (2, 1, "outside"),       # the buffer index one past the last buffer
    (2, -1, "outside"),      # (a negative index read the last buffer's size)
])
def test_views_outside_their_buffers(field, value, message):
    arr = pa.array(["a" * 20, "b", None], pa.string_view())
    views = np.frombuffer(arr.buffers()[1], np.int32).copy().reshape(-1, 4)
    views[0, field] = value
    bufs = arr.buffers()
    forged = pa.Array.from_buffers(arr.type, 3, [bufs[0], pa.py_buffer(views), *bufs[2:]], 1)
    with pytest.raises(CorruptDataError, match=message):
        fsstgpu.compress(forged)


@pytest.mark.parametrize("garbage", [[50, 0, 9, 999], [-2**31, 0, 0, 0]])
def test_views_under_nulls_are_not_read(garbage):
    """Arrow leaves the views under nulls undefined; pyarrow's cast to the large type reads
    them anyway, and segfaulted on a length of -2**31 (found by the long fuzz run)."""
    arr = pa.array(["a" * 20, None], pa.binary_view())
    views = np.frombuffer(arr.buffers()[1], np.int32).copy().reshape(-1, 4)
    views[1] = garbage
    bufs = arr.buffers()
    forged = pa.Array.from_buffers(arr.type, 2, [bufs[0], pa.py_buffer(views), *bufs[2:]], 1)
    assert fsstgpu.decompress(fsstgpu.compress(forged), "cpu").to_pylist() == [b"a" * 20, None]


def test_buffers_may_be_longer_than_needed():
    """Arrow allows buffers longer than their values (any size): not an error."""
    offsets = pa.py_buffer(np.array([0, 1, 3], np.int32).tobytes() + b"\x01\x02\x03")
    arr = pa.Array.from_buffers(pa.binary(), 2, [None, offsets, pa.py_buffer(b"abcXYZ")])
    assert fsstgpu.decompress(fsstgpu.compress(arr), "cpu").to_pylist() == [b"a", b"bc"]


@pytest.mark.parametrize("type_", [pa.string(), pa.large_string(), pa.string_view()])
def test_text_input_must_be_utf8(type_):
    """Finding 2 (input side): bytes that are not UTF-8 under a string type are refused."""
    good = pa.array(["ok", "ñ"], type_)
    view = type_ == pa.string_view()
    for bad in (b"\xff\xff", b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf"):
        raw = pa.array([b"ok", bad], pa.binary() if type_ == pa.string() else pa.large_binary())
        arr = pa.Array.from_buffers(pa.large_string() if view else type_, 2, raw.buffers())
        with pytest.raises(CorruptDataError, match="string 1 is not valid UTF-8"):
            fsstgpu.compress(arr.cast(type_) if view else arr)
    assert fsstgpu.decompress(fsstgpu.compress(good), "cpu").equals(good)


def test_a_string_cut_inside_a_character():
    """Each string must be UTF-8 on its own, not only their concatenation."""
    data = pa.py_buffer("añ".encode())  # 61 c3 b1
    arr = pa.Array.from_buffers(pa.string(), 2, [None, pa.py_buffer(np.array([0, 2, 3], np.int32)),
                                                 data])
    with pytest.raises(CorruptDataError, match="string 0 is not valid UTF-8"):
        fsstgpu.compress(arr)
    binary = pa.Array.from_buffers(pa.binary(), 2, [None, arr.buffers()[1], data])
    assert fsstgpu.compress(binary)[0] == b"a\xc3"


def test_as_data_offsets_checks_and_skips_nulls():
    data, offsets = as_data_offsets(pa.array(["ab", None, "c"]))
    assert bytes(data) == b"abc" and offsets.tolist() == [0, 2, 3]
    bad = pa.Array.from_buffers(pa.binary(), 2, [None, pa.py_buffer(np.array([0, 9, 2], np.int32)),
                                                 pa.py_buffer(b"ab")])
    with pytest.raises(CorruptDataError):
        as_data_offsets(bad)


def test_check_arrow_of_a_struct_names_the_field():
    child = pa.Array.from_buffers(pa.binary(), 2, [None, pa.py_buffer(np.array([0, 2, 1],
                                                                             np.int32)),
                                                   pa.py_buffer(b"ab")])
    struct = pa.StructArray.from_arrays([child], names=["codes"])
    with pytest.raises(CorruptDataError, match="field 'codes': offsets decrease"):
        check_arrow(struct, "storage")


def test_extension_storage_with_bad_code_offsets():
    """Finding 1 for fsst columns: decompress / inspect read the codes by their offsets."""
    ext = to_extension_array(fsstgpu.compress(pa.array(["abc", "de", "f"])))
    codes = ext.storage.field("codes")
    offsets = np.frombuffer(codes.buffers()[1], np.int64).copy()
    offsets[2] = 10**6
    forged_codes = pa.Array.from_buffers(codes.type, 3, [None, pa.py_buffer(offsets),
                                                         codes.buffers()[2]])
    storage = pa.StructArray.from_arrays([forged_codes, ext.storage.field("lengths"),
                                          ext.storage.field("cuts"), ext.storage.field("table")],
                                         fields=list(ext.storage.type))
    forged = pa.ExtensionArray.from_storage(ext.type, storage)
    with pytest.raises(CorruptDataError, match="codes"):
        fsstgpu.decompress(forged, "cpu")
    with pytest.raises(CorruptDataError):
        from_extension_array(forged)


def test_check_arrow_is_memory_speed():
    """No per-string Python: a million strings are checked in well under a second."""
    import time

    arr = pa.array(["x" * (i % 7) for i in range(1_000_000)])
    from_arrow(arr)  # compile
    t = time.perf_counter()
    from_arrow(arr)
    assert time.perf_counter() - t < 0.5


def test_extension_column_without_chunks():
    ext = to_extension_array(fsstgpu.compress(pa.array(["a"])))
    empty = pa.chunked_array([], type=ext.type)
    out = fsstgpu.decompress(empty, "cpu")
    assert len(out) == 0 and out.type == pa.string()


def test_many_small_chunks_are_checked_as_one_array(monkeypatch):
    """A ChunkedArray of 10,000 one-row chunks: checked and laid out once, not chunk by chunk
    (30 us of Python per chunk made compress / train 300x slower than on the same strings in
    one chunk); the chunks still come back, and a bad chunk among them is still named."""
    import fsstgpu.arrow_layout as layout

    calls = []
    real = layout.check_arrow
    monkeypatch.setattr(layout, "check_arrow", lambda *a, **k: (calls.append(1), real(*a, **k)))
    strings = [f"row {i}" if i % 7 else None for i in range(10_000)]
    column = pa.chunked_array([pa.array([s], pa.string()) for s in strings])
    out = fsstgpu.decompress(fsstgpu.compress(column), device="cpu")
    assert len(calls) <= 2
    assert out.equals(column) and out.num_chunks == column.num_chunks
    bad = pa.Array.from_buffers(pa.string(), 2, [None, pa.py_buffer(np.array([0, 2, 1], np.int32)),
                                                 pa.py_buffer(b"ab")])
    with pytest.raises(CorruptDataError, match=r"string array \(chunk 500\): offsets decrease"):
        fsstgpu.compress(pa.chunked_array(column.chunks[:500] + [bad] + column.chunks[500:]))
    zero = pa.Array.from_buffers(pa.string(), 2, [pa.py_buffer(np.array([1], np.uint8)),
                                                  pa.py_buffer(np.array([0, 1, 2], np.int32)),
                                                  pa.py_buffer(b"ab")], 0)  # 0 over a null
    joined = fsstgpu.compress(pa.chunked_array(column.chunks[:3] + [zero] + column.chunks[3:]))
    alone = fsstgpu.compress(pa.chunked_array([column.chunks[0], zero]))  # chunk by chunk
    assert fsstgpu.decompress(alone, device="cpu").chunk(1).to_pylist() == ["a", "b"]
    assert fsstgpu.decompress(joined, device="cpu").chunk(3).to_pylist() == ["a", "b"]


def test_offsets_decreasing_at_the_first_string_are_caught():
    """A decrease at string 0 (first offset above the second) was the one place a check of
    ``k > 0`` for ``k >= 0`` would miss: pyarrow checks only the first and last offsets."""
    arr = pa.Array.from_buffers(pa.binary(), 3, [None, pa.py_buffer(np.array([3, 1, 2, 4],
                                                                             np.int32)),
                                                 pa.py_buffer(b"abcd")])
    with pytest.raises(CorruptDataError, match=r"offsets decrease at string 0 \(3 to 1\)"):
        check_arrow(arr)


@pytest.mark.parametrize("type_", [pa.string_view(), pa.binary_view()])
def test_a_thirteen_byte_view_is_checked_against_its_buffer(type_):
    """Views of more than 12 bytes live out of line: the shortest of them (13 bytes) must be
    checked like any other, a 13-byte view past its buffer's end refused."""
    arr = pa.array(["a" * 13, "b"], type_)
    views = np.frombuffer(arr.buffers()[1], np.int32).copy().reshape(-1, 4)
    views[0, 3] = 1000
    forged = pa.Array.from_buffers(arr.type, 2, [None, pa.py_buffer(views), *arr.buffers()[2:]])
    with pytest.raises(CorruptDataError, match="view 0 .13 bytes at 1000 in buffer 0"):
        check_arrow(forged)


def test_a_negative_view_length_is_named_after_empty_views():
    arr = pa.array(["", "b" * 20], pa.string_view())
    views = np.frombuffer(arr.buffers()[1], np.int32).copy().reshape(-1, 4)
    views[1, 0] = -1
    forged = pa.Array.from_buffers(arr.type, 2, [None, pa.py_buffer(views), *arr.buffers()[2:]])
    with pytest.raises(CorruptDataError, match="view 1 has length -1"):
        check_arrow(forged)


def test_buffer_values_bounds():
    """A buffer must hold every value asked for; none asked for is an empty view."""
    buf = pa.py_buffer(np.arange(4, dtype=np.int32))
    assert buffer_values(buf, np.int32, 1, 3).tolist() == [1, 2, 3]
    assert buffer_values(buf, np.int32, 4, 0).tolist() == []
    for start, count in ((2, 3), (-1, 2), (0, -1), (0, 5)):
        with pytest.raises(CorruptDataError, match="cannot hold int32 values"):
            buffer_values(buf, np.int32, start, count)


def test_exact_array_takes_every_value_its_dtype_holds_and_no_other():
    assert exact_array(np.array([-128, 0, 127]), np.int8, "x").tolist() == [-128, 0, 127]
    assert exact_array(np.array([0, 255], np.int64), np.uint8, "x").tolist() == [0, 255]
    for values in ([-129, 0], [0, 128]):
        with pytest.raises(ValueError, match="outside int8"):
            exact_array(np.array(values), np.int8, "x")
    with pytest.raises(TypeError, match="must hold integers"):
        exact_array(np.array([1.0]), np.int64, "x")


def test_from_arrow_and_to_arrow_refuse_what_they_cannot_take():
    with pytest.raises(TypeError, match="expected a pyarrow Array or ChunkedArray, got list"):
        from_arrow(["a"])
    data, offsets = np.frombuffer(b"abc", np.uint8), np.array([0, 1, 2, 3])
    assert to_arrow(pa.string(), data, offsets, None, [2, 1]).num_chunks == 2
    with pytest.raises(ValueError, match="chunk lengths add up to 2, not 3"):
        to_arrow(pa.string(), data, offsets, None, [1, 1])


def _long_string_with_cuts():
    """A one-string column long enough to be split, its extension array, the width of its
    stored offsets, and its first cut (code offset, output offset)."""
    col = pa.array(["".join(chr(97 + (i * 7) % 26) for i in range(600))])
    ext = to_extension_array(fsstgpu.compress(col, split_size=64))
    cuts = ext.storage.field("cuts")
    assert cuts.is_valid()[0].as_py()
    width = 8 if ext.storage.field("lengths").type == pa.uint64() else 4
    code, out = np.frombuffer(cuts[0].as_py()[: 2 * width], f"<u{width}")
    return col, ext, width, (int(code), int(out))


def _with_cuts(ext, cuts):
    """``ext`` with its ``cuts`` field replaced by ``cuts`` (a pyarrow array)."""
    storage = pa.StructArray.from_arrays(
        [ext.storage.field("codes"), ext.storage.field("lengths"), cuts,
         ext.storage.field("table")], fields=list(ext.storage.type))
    return pa.ExtensionArray.from_storage(ext.type, storage)


def test_repeated_cuts_are_refused():
    """A long string's stored cuts must increase strictly: a second cut at the same code
    offset, or at the same output offset (each inside its string), is CorruptDataError, not a
    split of no bytes (a mutation campaign of formats/arrow_read.py let it through: <= moved
    to < on either side, or the raise dropped)."""
    col, ext, width, (code, out) = _long_string_with_cuts()
    cuts_type = ext.storage.field("cuts").type
    one = np.array([code, out], f"<u{width}").tobytes()
    # a second cut at the same code offset, then at the same output offset
    for second in (None, (code, out + 1), (code + 1, out)):
        value = one if second is None else one + np.array(second, f"<u{width}").tobytes()
        forged = _with_cuts(ext, pa.array([value], cuts_type))
        if second is None:  # the first cut alone: read as it is
            assert fsstgpu.decompress(forged, "cpu").equals(col)
        else:
            with pytest.raises(CorruptDataError, match="cuts do not increase"):
                from_extension_array(forged)


@pytest.mark.parametrize("where", ["zero code", "zero output", "code end", "output end"])
def test_a_cut_on_or_past_its_strings_edge_is_refused(where):
    """A cut must lie strictly inside its string on both sides: at code or output offset 0,
    or at the string's code count or length, it would split off no bytes (the mutation
    campaign's survivors: the raise dropped, ``>=`` moved to ``>``)."""
    _, ext, width, (code, out) = _long_string_with_cuts()
    ncodes, length = len(ext.storage.field("codes")[0].as_py()), 600
    pair = {"zero code": (0, out), "zero output": (code, 0), "code end": (ncodes, out),
            "output end": (code, length)}[where]
    value = np.array(pair, f"<u{width}").tobytes()
    with pytest.raises(CorruptDataError, match="a cut lies outside its string"):
        from_extension_array(_with_cuts(ext, pa.array([value], ext.storage.field("cuts").type)))


def test_cuts_that_are_not_whole_pairs_are_refused():
    """A string's cuts are whole (code, output) pairs of the lengths' width (the campaign's
    survivor: the raise dropped, after which a view of the bytes raised ValueError). (The
    offsets' own check, out of order or bounds, is not reached through pyarrow's constructors,
    which validate them.)"""
    _, ext, width, (code, out) = _long_string_with_cuts()
    cuts_type = ext.storage.field("cuts").type
    pair = np.array([code, out], f"<u{width}").tobytes()
    for value in (pair[:-1], pair + pair[:width]):
        with pytest.raises(CorruptDataError, match="cuts are not pairs"):
            from_extension_array(_with_cuts(ext, pa.array([value], cuts_type)))


def test_cuts_under_a_null_entry_are_skipped_and_empty_cuts_read():
    """A ``cuts`` child may hold bytes under a null entry (its offsets span them: another
    writer's choice) and empty entries that are not null: the cuts around the skipped bytes
    are read from where they lie, and a column whose every entry is empty has no cut (the
    campaign's survivors: the contiguous shortcut taken whatever the layout, the no-cut case
    dropped)."""
    col, ext, cuts = three_long_strings()
    ends = np.cumsum([0] + [len(c) for c in cuts])
    cuts_type = ext.storage.field("cuts").type
    skipped = pa.Array.from_buffers(cuts_type, 3, [
        pa.py_buffer(np.packbits([1, 0, 1], bitorder="little")),
        pa.py_buffer(ends.astype(np.int32)), pa.py_buffer(b"".join(cuts))], 1)
    assert skipped.to_pylist() == [cuts[0], None, cuts[2]]
    for forged in (skipped, pa.array([b""] * 3, cuts_type), pa.array(cuts, cuts_type)):
        got = from_extension_array(_with_cuts(ext, forged))
        assert fsstgpu.decompress(got, "cpu").equals(col)


def test_a_null_table_in_a_later_chunk_is_named_with_its_chunk():
    """A valid string whose table is null is CorruptDataError naming the chunk that holds it
    when there are several (the campaign's survivor: the chunk left out of the message)."""
    ext = to_extension_array(fsstgpu.compress(pa.array(["ab", "cd"])))
    table = ext.storage.field("table")
    nulled = pa.DictionaryArray.from_arrays(table.indices, pa.array([None], table.type.value_type))
    storage = pa.StructArray.from_arrays(
        [ext.storage.field(name) for name in ("codes", "lengths", "cuts")] + [nulled],
        fields=list(ext.storage.type))
    bad = pa.ExtensionArray.from_storage(ext.type, storage)
    with pytest.raises(CorruptDataError, match=r"storage: a string's table 0 is null"):
        from_extension_array(bad)
    with pytest.raises(CorruptDataError, match=r"storage \(chunk 1\): a string's table 0 is "):
        from_extension_array(pa.chunked_array([ext, bad]))


def test_a_length_past_two_to_the_62_is_named():
    """A stored length of 2**62 bytes or more (uint64 lengths, 64-bit offset types) is refused
    by its value before any sum is taken (the campaign's survivor: the raise dropped)."""
    ext = to_extension_array(fsstgpu.compress(pa.array(["ab", "cd"], pa.large_string())))
    assert ext.storage.field("lengths").type == pa.uint64()
    storage = pa.StructArray.from_arrays(
        [ext.storage.field("codes"), pa.array([2, 2**62], pa.uint64()),
         ext.storage.field("cuts"), ext.storage.field("table")], fields=list(ext.storage.type))
    with pytest.raises(CorruptDataError, match=f"a length of {2**62} bytes"):
        from_extension_array(pa.ExtensionArray.from_storage(ext.type, storage))
