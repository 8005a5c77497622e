"""One column, one answer: a compressed column forged in one field gives the same strings on
every path that consumes it (whole decode, ``carr[i]``, ``take``, slices, the blob, the
extension array), or ``CorruptDataError`` on each; never another exception, a malformed Arrow
array or a crash."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import fsstgpu
from fsstgpu import CompressedStringArray, CorruptDataError
from fsstgpu.formats.arrow_storage import to_extension_array


def _fields(carr) -> dict:
    names = ("type", "length", "tables", "block_starts", "codes", "code_offsets", "lengths",
             "validity", "null_count", "split_size", "split_codes", "split_out", "split_table")
    return {name: getattr(carr, name) for name in names}


def _decreasing_code_offsets() -> dict:
    """A column whose first string is empty and whose second code offset is -1."""
    fields = _fields(fsstgpu.compress(pa.array(["", "alpha", "x"])))
    code_offsets = fields["code_offsets"].copy()
    code_offsets[1] = -1
    fields["code_offsets"] = code_offsets
    return fields


def test_extension_array_of_forged_code_offsets_is_corrupt():
    # Built as they were, the offsets made a storage pyarrow aborts on (std::length_error in
    # its repr); the decode of the column says CorruptDataError.
    fields = _decreasing_code_offsets()
    with pytest.raises(CorruptDataError):
        CompressedStringArray(**fields).to_arrow()
    with pytest.raises(CorruptDataError, match="code_offsets"):
        to_extension_array(CompressedStringArray(**fields))


@pytest.mark.parametrize("store_code_offsets", [False, True])
def test_blob_of_forged_code_offsets_is_corrupt(store_code_offsets):
    # Stored offsets went to the offsets codec as they were: its ValueError, not the column's
    # CorruptDataError.
    carr = CompressedStringArray(**_decreasing_code_offsets())
    with pytest.raises(CorruptDataError, match="code_offsets"):
        carr.to_bytes(store_code_offsets=store_code_offsets)


def test_blob_of_forged_null_count_is_corrupt():
    # With the code offsets stored nothing was checked: the blob was written and only its
    # reader refused it.
    fields = _fields(fsstgpu.compress(pa.array(["a", None, "b"])))
    fields["null_count"] = 2
    with pytest.raises(CorruptDataError, match="null"):
        CompressedStringArray(**fields).to_bytes(store_code_offsets=True)
    assert np.array_equal(fields["lengths"], [1, 0, 1])


def test_empty_split_inside_a_string_goes_into_an_extension_array():
    # Split points only never decrease: a repeated one (an empty split) is a valid column that
    # validate() passes and every path decodes; its extension array carried the cut twice and
    # its reader refused it ("a string's cuts do not increase").
    carr = fsstgpu.compress(pa.array(["x" * 40, "abc"]), split_size=8)
    fields = _fields(carr)
    k = int(np.flatnonzero(fields["split_codes"] > 0)[0])
    fields["split_codes"] = np.insert(fields["split_codes"], k, fields["split_codes"][k])
    fields["split_out"] = np.insert(fields["split_out"], k, fields["split_out"][k])
    fields["split_table"] = np.insert(fields["split_table"], k, fields["split_table"][k])
    forged = CompressedStringArray(**fields)
    forged.validate()
    expected = ["x" * 40, "abc"]
    assert forged.to_arrow().to_pylist() == expected
    ext = to_extension_array(forged)
    assert ext.to_pylist() == expected
    assert fsstgpu.decompress(ext, device="cpu").to_pylist() == expected


def test_scalar_of_a_table_index_past_the_dictionary_is_corrupt():
    # The array's decode names the forged index; its scalar's as_py() raised pyarrow's
    # ArrowIndexError (the struct's as_py looks the dictionary up).
    storage = to_extension_array(fsstgpu.compress(pa.array(["ab", "cd"]))).storage
    table = storage.field("table")
    forged_table = pa.DictionaryArray.from_arrays(pa.array([0, 1], pa.uint16()),
                                                  table.dictionary, safe=False)
    children = [storage.field(k) for k in range(3)] + [forged_table]
    forged = pa.ExtensionArray.from_storage(
        to_extension_array(fsstgpu.compress(pa.array(["x"]))).type,
        pa.StructArray.from_arrays(children, fields=list(storage.type)))
    with pytest.raises(CorruptDataError, match="names table 1 of 1"):
        forged.to_pylist()
    assert forged[0].as_py() == "ab"
    with pytest.raises(CorruptDataError, match="names table 1 of 1"):
        forged[1].as_py()
