"""The numcodecs codec FSST (id "fsst") and its zarr use; skipped without numcodecs / zarr."""

from __future__ import annotations

import json
import struct
import warnings
import zlib

import numpy as np
import pytest

numcodecs = pytest.importorskip("numcodecs")

from fsstgpu import CorruptDataError  # noqa: E402
from fsstgpu.integrations.numcodecs import FSST  # noqa: E402

WORDS = ["http://example.com/a", "", "ab\x00c", "日本語", "x" * 300, "http://example.com/b"]


def string_dtype(**kwargs):
    found = getattr(np.dtypes, "StringDType", None)
    if found is None:
        pytest.skip("NumPy < 2 has no StringDType")
    return found(**kwargs)


def arrays():
    yield np.array(WORDS, dtype=object)
    yield np.array(["a", None, "b"], dtype=object)
    yield np.array([b"\x00\xff", None, b""], dtype=object)
    yield np.array([None, None], dtype=object)
    yield np.array(WORDS).reshape(2, 3)
    yield np.asfortranarray(np.array(WORDS).reshape(3, 2))
    yield np.array([w.encode() for w in WORDS])
    yield np.array("scalar")
    yield np.zeros((0, 4), dtype="U3")
    yield np.zeros((0, 4), dtype="S3")  # (came back refused: an empty S array was taken as str)
    yield np.zeros(0, dtype="S5")
    if getattr(np.dtypes, "StringDType", None) is not None:
        yield np.array(WORDS, dtype=np.dtypes.StringDType())
        yield np.array(["a", None], dtype=np.dtypes.StringDType(na_object=None))
        yield np.array(["a", np.nan], dtype=np.dtypes.StringDType(na_object=np.nan))


def same(a, b) -> bool:
    """Equal dtype, shape and items (None and NaN compare as themselves)."""
    if a.dtype != b.dtype or a.shape != b.shape:
        return False
    return [repr(x) for x in a.ravel().tolist()] == [repr(x) for x in b.ravel().tolist()]


@pytest.mark.parametrize("arr", list(arrays()), ids=lambda a: f"{a.dtype}{a.shape}")
def test_round_trip_keeps_dtype_and_shape(arr):
    codec = FSST()
    encoded = codec.encode(arr)
    assert isinstance(encoded, bytes)
    assert same(codec.decode(encoded), arr)
    assert same(codec.decode(np.frombuffer(encoded, np.uint8)), arr)  # any buffer
    out = np.empty(arr.shape, dtype=arr.dtype)
    assert codec.decode(encoded, out=out) is out and same(out, arr)


def test_compresses():
    arr = np.array([f"https://example.com/path/{i % 100}/item" for i in range(5000)],
                   dtype=object)
    assert len(FSST().encode(arr)) < sum(len(s) for s in arr) / 2


def test_config_and_registry():
    codec = FSST()
    config = json.loads(json.dumps(codec.get_config()))
    assert config == {"id": "fsst"}
    assert numcodecs.get_codec(config) == codec
    assert FSST.from_config({}) == codec


def test_registered_by_entry_point_without_importing_fsstgpu(fresh_python):
    code = ("import sys, numpy as np, numcodecs\n"
            "assert 'fsstgpu' not in sys.modules\n"
            "c = numcodecs.get_codec({'id': 'fsst'})\n"
            "a = np.array(['x', None], dtype=object)\n"
            "assert c.decode(c.encode(a)).tolist() == ['x', None]\n"
            "print(type(c).__module__)")
    assert fresh_python(code) == "fsstgpu.integrations.numcodecs"


@pytest.mark.parametrize("bad", [np.array([1, 2]), np.array([1.5]),
                                 np.array(["a", 1], dtype=object)])
def test_refuses_non_strings(bad):
    with pytest.raises(TypeError):
        FSST().encode(bad)


def test_refuses_unsupported_missing_value():
    arr = np.array(["a", "b"], dtype=string_dtype(na_object="?"))
    with pytest.raises(TypeError, match="missing value"):
        FSST().encode(arr)


def test_corrupt_input_raises():
    encoded = FSST().encode(np.array(WORDS))
    with pytest.raises(CorruptDataError, match="magic"):
        FSST().decode(b"XXXX" + encoded[4:])
    with pytest.raises(CorruptDataError, match="truncated"):
        FSST().decode(encoded[:10])
    with pytest.raises(CorruptDataError):
        FSST().decode(encoded[:-3])
    wrong_shape = bytearray(encoded)
    wrong_shape[20] += 1  # the shape's first dimension
    with pytest.raises(CorruptDataError, match="CRC"):
        FSST().decode(bytes(wrong_shape))
    with pytest.raises(ValueError, match="items"):
        FSST().decode(encoded, out=np.empty(2, dtype=object))


@pytest.mark.parametrize("arr", [np.array(WORDS).reshape(2, 3), np.zeros((0, 3), "U3"),
                                 np.array([b"ab", None], dtype=object)], ids=str)
def test_every_header_byte_is_checked(arr):
    # the header (dtype kind, missing value, item size, shape) had no checksum: one flipped
    # byte gave U7 for U3, StringDType for objects, shape (0, 259) for (0, 3), or an item size
    # that made a 316-byte input decode into 512 MiB
    encoded = FSST().encode(arr)
    for at in range(20 + 8 * arr.ndim + 4):
        for bit in (0, 3, 7):
            damaged = bytearray(encoded)
            damaged[at] ^= 1 << bit
            with pytest.raises(CorruptDataError):
                FSST().decode(bytes(damaged))


def forged_item_size(encoded: bytes, ndim: int, itemsize: int) -> bytes:
    """``encoded`` with its header's item size replaced and the header's CRC recomputed."""
    shape_end = 20 + 8 * ndim
    head = bytearray(encoded[:shape_end])
    struct.pack_into("<Q", head, 8, itemsize)
    return bytes(head) + struct.pack("<I", zlib.crc32(head)) + encoded[shape_end + 4:]


@pytest.mark.parametrize("dtype, most", [("S1", 2**31 - 1), ("U1", (2**31 - 1) // 4)])
def test_forged_item_size_is_corrupt_data_not_memory_error(dtype, most):
    # A forged header (CRC recomputed) asking for 2**20 items of ~2 GiB each: numpy's
    # "Unable to allocate 2.00 PiB" MemoryError came through. 2 PiB is past any machine's
    # memory and x86-64's 4-level address space, so the allocation fails wherever this runs.
    arr = np.zeros(2**20, dtype)
    forged = forged_item_size(FSST().encode(arr), 1, most)
    with pytest.raises(CorruptDataError, match=r"^FSST data: the header.s item size .* cannot "
                                               r"be allocated"):  # (once, not in "shape ...: ")
        FSST().decode(forged)
    # an item size above the longest string is what the writer records for padded arrays
    padded = np.array(["ab", ""], dtype="U1000")
    assert same(FSST().decode(FSST().encode(padded)), padded)
    assert FSST().decode(forged_item_size(FSST().encode(padded), 1, 7)).dtype == "U7"


def test_version_1_data_still_decodes():
    arr = np.array(WORDS).reshape(3, 2)
    encoded = FSST().encode(arr)
    head, blob = encoded[:20 + 16], encoded[20 + 16 + 4:]
    assert struct.unpack("<I", encoded[36:40])[0] == zlib.crc32(head)
    old = head[:4] + b"\x01" + head[5:]  # version 1: no CRC after the shape
    assert same(FSST().decode(old + blob), arr)


def test_refuses_str_mixed_with_bytes():
    # pyarrow reads the str as bytes: ['a', b'b'] came back [b'a', b'b'] (numcodecs' VLenBytes
    # refuses it too)
    with pytest.raises(TypeError, match="not both"):
        FSST().encode(np.array(["a", b"b"], dtype=object))


def test_out_of_another_dtype_is_refused_and_buffers_are_taken():
    encoded = FSST().encode(np.array(["hello", "wo"]))
    with pytest.raises(ValueError, match="dtype"):  # numpy would cut "hello" to "he"
        FSST().decode(encoded, out=np.empty(2, "U2"))
    raw = bytearray(40)  # two U5 items, as numcodecs' codecs take any buffer of the size
    FSST().decode(encoded, out=raw)
    assert np.frombuffer(raw, "U5").tolist() == ["hello", "wo"]
    assert FSST().decode(encoded, out=np.empty(2, object)).tolist() == ["hello", "wo"]


def test_byte_order_and_coerce_are_kept():
    big = np.array(["abc", "d"], dtype=">U3")
    assert same(FSST().decode(FSST().encode(big)), big)
    strict = np.array(["a", None], dtype=string_dtype(na_object=None, coerce=False))
    assert FSST().decode(FSST().encode(strict)).dtype == strict.dtype


# ---------------------------------------------------------------------- zarr
def zarr_module():
    zarr = pytest.importorskip("zarr")
    if int(zarr.__version__.split(".")[0]) < 3:
        pytest.skip("zarr >= 3 needed")
    return zarr


# zarr and numcodecs find the codec by their entry points: the reader never imports fsstgpu
READ_BACK = ("import sys, zarr\n"
             "print(repr(zarr.open_array(sys.argv[1])[:].tolist()))")


@pytest.mark.parametrize("values", [WORDS, [w.encode() for w in WORDS]], ids=["U", "S"])
def test_zarr_v3_fixed_width_strings(tmp_path, values, fresh_python):
    zarr = zarr_module()
    from fsstgpu.integrations.zarr import NAME, FsstCodec

    data = np.array(values * 5).reshape(5, len(values))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zarr's note that numcodecs.* codecs are not in the spec
        z = zarr.create_array(store=str(tmp_path), shape=data.shape, chunks=(2, 4),
                              dtype=data.dtype, serializer=FsstCodec(), compressors=None)
        z[:] = data
    metadata = json.loads((tmp_path / "zarr.json").read_text())
    assert metadata["codecs"] == [{"name": NAME, "configuration": {}}]
    assert same(zarr.open_array(str(tmp_path))[:], data)
    assert fresh_python(READ_BACK, str(tmp_path)) == repr(data.tolist())


@pytest.mark.parametrize("dtype", ["i4", "f8", "bool"])
def test_zarr_v3_codec_refuses_non_string_arrays_at_creation(tmp_path, dtype):
    # the array was created, and its first write failed (FSST encodes strings only)
    zarr = zarr_module()
    from fsstgpu.integrations.zarr import FsstCodec

    with pytest.raises(TypeError, match="arrays of strings"):
        zarr.create_array(store=str(tmp_path), shape=(4,), chunks=(2,), dtype=dtype,
                          serializer=FsstCodec())


def test_zarr_v2_format_filter(tmp_path, fresh_python):
    zarr = zarr_module()
    data = np.array(WORDS * 4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        z = zarr.create_array(store=str(tmp_path), shape=data.shape, chunks=(7,),
                              dtype=data.dtype, zarr_format=2, filters=[FSST()],
                              compressors=None)
        z[:] = data
    assert json.loads((tmp_path / ".zarray").read_text())["filters"] == [{"id": "fsst"}]
    assert fresh_python(READ_BACK, str(tmp_path)) == repr(data.tolist())


@pytest.mark.parametrize("dtype", ["U25", "S25", object])
def test_fortran_order_is_kept(tmp_path, dtype):
    # numcodecs' users read a decoded array in its memory order: zarr's v2 format flattens a
    # filter's output with order="A" and reshapes it in the array's order (came back transposed)
    data = np.asfortranarray(np.array([w.encode() if dtype == "S25" else w
                                       for w in WORDS], dtype=dtype).reshape(2, 3))
    back = FSST().decode(FSST().encode(data))
    assert same(back, data) and back.flags.f_contiguous
    for out in (np.empty(data.shape, data.dtype), np.empty(data.shape, data.dtype, order="F")):
        assert same(FSST().decode(FSST().encode(data), out=out), data)  # by index, either order
    c_out = np.empty(data.shape, data.dtype, order="F")  # (came back transposed)
    assert same(FSST().decode(FSST().encode(np.ascontiguousarray(data)), out=c_out), data)
    assert back.reshape(-1, order="A").tolist() == data.reshape(-1, order="A").tolist()
    if dtype is object:
        return  # (zarr ties object arrays to its own object codecs)
    zarr = zarr_module()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        z = zarr.create_array(store=str(tmp_path), shape=data.shape, chunks=data.shape,
                              dtype=data.dtype, zarr_format=2, order="F", filters=[FSST()],
                              compressors=None)
        z[:] = data
    assert same(zarr.open_array(str(tmp_path))[:], np.ascontiguousarray(data))


def test_zarr_v3_codec_metadata_round_trip():
    zarr_module()
    from fsstgpu.integrations.zarr import NAME, FsstCodec

    assert FsstCodec.from_dict(FsstCodec().to_dict()) == FsstCodec()
    with pytest.raises(ValueError):
        FsstCodec.from_dict({"name": NAME, "configuration": {"level": 3}})


@pytest.mark.parametrize("module", ["fsstgpu.integrations.numcodecs", "fsstgpu.integrations.zarr"])
def test_docstring_examples(module):
    import doctest
    import importlib

    if module == "fsstgpu.integrations.zarr":
        zarr_module()
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
