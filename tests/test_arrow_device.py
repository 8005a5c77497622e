"""The Arrow C Device Data Interface export (fsstgpu.gpu.arrow_device) and DeviceStringArray's use
of it. On the CPU: the struct layout, host memory exported as a CPU device array and imported by
pyarrow, the release bookkeeping, and DeviceStringArray over fake device buffers; on a GPU
(marked gpu): real device columns read by nanoarrow and cuDF."""

from __future__ import annotations

import ctypes
import gc
import weakref

import numpy as np
import pyarrow as pa
import pytest

import fsstgpu
from fsstgpu.arrow_layout import from_arrow
from fsstgpu.gpu.arrow_device import (
    ARROW_DEVICE_CPU,
    ARROW_DEVICE_CUDA,
    ARROW_FLAG_NULLABLE,
    ArrowArray,
    ArrowDeviceArray,
    ArrowSchema,
    export_device_array,
    plain_format,
)
from fsstgpu.gpu.strings import DeviceStringArray

_capsule_pointer = ctypes.PYFUNCTYPE(ctypes.c_void_p, ctypes.py_object, ctypes.c_char_p)(
    ("PyCapsule_GetPointer", ctypes.pythonapi))


def structs(capsules):
    """The ArrowSchema and ArrowDeviceArray inside the two capsules (views, not copies)."""
    schema_capsule, array_capsule = capsules
    return (ArrowSchema.from_address(_capsule_pointer(schema_capsule, b"arrow_schema")),
            ArrowDeviceArray.from_address(_capsule_pointer(array_capsule, b"arrow_device_array")))


class Owner:
    """Stands for whatever owns exported memory; weakly referenced to see when it is let go."""

    def __init__(self, *arrays):
        self.arrays = arrays


def host_export(array: pa.Array, owner_ref=None):
    """Export a host pyarrow string array's buffers as a CPU device array (an int64-offsets
    copy for the large types, as the plain layout holds them)."""
    plain = from_arrow(array)
    width = 8 if pa.types.is_large_string(array.type) or pa.types.is_large_binary(
        array.type) else 4
    offsets = plain.offsets.astype(np.int64 if width == 8 else np.int32)
    data = np.ascontiguousarray(plain.data)
    validity = plain.validity
    owner = Owner(offsets, data, validity)
    if owner_ref is not None:
        owner_ref.append(weakref.ref(owner))
    addresses = [None if validity is None else validity.ctypes.data, offsets.ctypes.data,
                 data.ctypes.data if len(data) else None]
    return export_device_array(plain_format(array.type, width), len(array), plain.null_count,
                               addresses, device_type=ARROW_DEVICE_CPU, device_id=-1,
                               keep_alive=owner)


class HostDeviceArray:
    def __init__(self, array, owner_ref=None):
        self.array, self.owner_ref = array, owner_ref

    def __arrow_c_device_array__(self, requested_schema=None, **kwargs):
        return host_export(self.array, self.owner_ref)


def test_struct_layout_is_the_specification_s():
    # abi.h on a 64-bit platform: eight-byte fields, the device type an int32 padded to 8
    assert ctypes.sizeof(ArrowSchema) == 72 and ArrowSchema.release.offset == 56
    assert ctypes.sizeof(ArrowArray) == 80 and ArrowArray.buffers.offset == 40
    assert ArrowArray.release.offset == 64 and ArrowArray.private_data.offset == 72
    assert ctypes.sizeof(ArrowDeviceArray) == 128
    assert (ArrowDeviceArray.device_id.offset, ArrowDeviceArray.device_type.offset,
            ArrowDeviceArray.sync_event.offset, ArrowDeviceArray.reserved.offset) == (
                80, 88, 96, 104)


def test_plain_format():
    assert [plain_format(t, 4) for t in (pa.string(), pa.string_view(), pa.binary())] == [
        "u", "u", "z"]
    assert [plain_format(t, 8) for t in (pa.string(), pa.large_string(), pa.binary_view())] == [
        "U", "U", "Z"]
    with pytest.raises(ValueError):
        plain_format(pa.string(), 2)


@pytest.mark.parametrize("type_", [pa.string(), pa.large_string(), pa.binary(),
                                   pa.large_binary()], ids=str)
def test_pyarrow_imports_the_export(type_):
    values = ["a", None, "", "日本語" * 20, None, "z"] * 3
    array = pa.array([v if v is None or type_ in (pa.string(), pa.large_string())
                      else v.encode() for v in values], type_)
    imported = pa.array(HostDeviceArray(array))
    assert imported.type == type_
    imported.validate(full=True)
    assert imported.equals(array)
    empty = pa.array(HostDeviceArray(pa.array([], type_)))
    assert len(empty) == 0 and empty.type == type_


def test_fields_of_the_export():
    capsules = host_export(pa.array(["ab", None, "c"]))
    schema, device_array = structs(capsules)
    assert schema.format == b"u" and schema.flags == ARROW_FLAG_NULLABLE
    assert schema.n_children == 0 and not schema.children and not schema.dictionary
    array = device_array.array
    assert (array.length, array.null_count, array.offset, array.n_buffers, array.n_children) == (
        3, 1, 0, 3, 0)
    assert array.buffers[0] and array.buffers[1] and array.buffers[2]
    assert device_array.device_type == ARROW_DEVICE_CPU and device_array.device_id == -1
    assert device_array.sync_event is None and list(device_array.reserved) == [0, 0, 0]


def test_release_bookkeeping():
    refs = []
    capsules = host_export(pa.array(["x", "y"]), refs)
    gc.collect()
    assert refs[0]() is not None  # the capsules hold the memory's owner
    del capsules
    gc.collect()
    assert refs[0]() is None  # destroyed unconsumed: released

    # a consumer that releases the array itself: release runs once, marks it released
    capsules = host_export(pa.array(["x", "y"]), refs)
    schema, device_array = structs(capsules)
    device_array.array.release(ctypes.pointer(device_array.array))
    assert not device_array.array.release and not device_array.array.private_data
    gc.collect()
    assert refs[1]() is None
    schema.release(ctypes.pointer(schema))
    assert not schema.release
    del capsules, schema, device_array
    gc.collect()  # the capsules' destructors see NULL release callbacks and only free

    # pyarrow moves the struct out: the owner lives exactly as long as pyarrow's array
    imported = pa.array(HostDeviceArray(pa.array(["x", None]), refs))
    gc.collect()
    assert refs[2]() is not None and imported.to_pylist() == ["x", None]
    del imported
    gc.collect()
    assert refs[2]() is None


def test_nanoarrow_reads_the_export():
    device = pytest.importorskip("nanoarrow.device")
    view = device.c_device_array(HostDeviceArray(pa.array(["ab", None], pa.large_string())))
    assert view.device_type.value == ARROW_DEVICE_CPU and view.schema.format == "U"
    assert view.array.length == 2 and view.array.null_count == 1


# ---------------------------------------------------------------- DeviceStringArray, faked
class FakeDevice:
    def __init__(self, ordinal):
        self.id = ordinal
        self.synchronized = 0

    def synchronize(self):
        self.synchronized += 1


class FakeDeviceBuffer:
    """A host numpy array posing as a CuPy array: ``__cuda_array_interface__``, ``dtype``,
    ``device``."""

    def __init__(self, array: np.ndarray, device: FakeDevice):
        self.array, self.device, self.dtype = array, device, array.dtype

    @property
    def __cuda_array_interface__(self):
        return {"data": (self.array.ctypes.data, False), "shape": self.array.shape,
                "typestr": self.array.dtype.str, "version": 3}


def fake_device_column(type_, offsets_dtype, ordinal=3):
    device = FakeDevice(ordinal)
    col = pa.array(["ab", None, "cde"], type_)
    plain = from_arrow(col)
    buffers = [FakeDeviceBuffer(plain.validity, device),
               FakeDeviceBuffer(plain.offsets.astype(offsets_dtype), device),
               FakeDeviceBuffer(np.ascontiguousarray(plain.data), device)]
    return DeviceStringArray(type_, 3, buffers[1], buffers[2], buffers[0], 1), buffers, device


@pytest.mark.parametrize(("type_", "offsets_dtype", "fmt"), [
    (pa.string(), np.int32, b"u"), (pa.large_string(), np.int64, b"U"),
    (pa.string_view(), np.int32, b"u"), (pa.binary_view(), np.int64, b"Z"),
    (pa.string(), np.int64, b"U"),  # over 2 GiB of data: int64 offsets, exported large
], ids=str)
def test_device_string_array_export(type_, offsets_dtype, fmt):
    dev, buffers, device = fake_device_column(type_, offsets_dtype)
    capsules = dev.__arrow_c_device_array__()
    assert device.synchronized == 1
    schema, device_array = structs(capsules)
    assert schema.format == fmt
    array = device_array.array
    assert (array.length, array.null_count, array.n_buffers) == (3, 1, 3)
    assert [array.buffers[i] for i in range(3)] == [
        b.__cuda_array_interface__["data"][0] for b in buffers]
    assert device_array.device_type == ARROW_DEVICE_CUDA and device_array.device_id == 3
    assert device_array.sync_event is None
    watched = weakref.ref(buffers[2])
    del dev, buffers, schema, device_array, array
    gc.collect()
    assert watched() is not None  # the export keeps the buffers
    del capsules
    gc.collect()
    assert watched() is None


def test_device_string_array_export_keywords():
    dev, _, _ = fake_device_column(pa.string(), np.int32)
    dev.__arrow_c_device_array__(None, future_option=None)  # None: accepted
    with pytest.raises(NotImplementedError, match="future_option"):
        dev.__arrow_c_device_array__(None, future_option=1)


def test_to_cudf_needs_cudf():
    try:
        import cudf  # noqa: F401
    except ImportError:
        dev, _, _ = fake_device_column(pa.string(), np.int32)
        with pytest.raises(ImportError, match="cuDF"):
            dev.to_cudf()
    else:
        pytest.skip("cuDF is installed: the gpu test covers to_cudf")


# ---------------------------------------------------------------- on a GPU
def gpu_column():
    values = [None if i % 5 == 0 else f"http://example.com/{i}" for i in range(3000)]
    return pa.array(values, pa.large_string())


@pytest.mark.gpu
def test_gpu_export_read_by_nanoarrow():
    device = pytest.importorskip("nanoarrow.device")
    col = gpu_column()
    dev = fsstgpu.decompress_device(fsstgpu.compress(col))
    view = device.c_device_array(dev)
    assert view.device_type.value == ARROW_DEVICE_CUDA
    assert view.device_id == dev.data.device.id
    assert view.schema.format == "U"
    assert (view.array.length, view.array.null_count) == (len(col), col.null_count)
    assert list(view.array.buffers) == [dev.validity.data.ptr, dev.offsets.data.ptr,
                                        dev.data.data.ptr]


@pytest.mark.gpu
def test_gpu_to_cudf():
    pytest.importorskip("cudf")
    col = gpu_column()
    dev = fsstgpu.decompress_device(fsstgpu.compress(col))
    series = dev.to_cudf()
    assert series.to_arrow().cast(pa.large_string()).equals(col)
