"""The Arrow C Device Data Interface, exported with ctypes for arrays given by buffer address.

:func:`export_device_array` builds the two C structs a consumer of
``__arrow_c_device_array__`` expects (Arrow PyCapsule interface): an ``ArrowSchema`` in a capsule
named ``"arrow_schema"`` and an ``ArrowDeviceArray`` in one named ``"arrow_device_array"``. It
knows nothing of CuPy: the caller gives the buffers' addresses, the device, and the objects that
own the memory. :class:`fsstgpu.DeviceStringArray` uses it with CuPy buffers on a CUDA device.

The structs, as the Arrow specification declares them (``abi.h``; 64-bit sizes)::

    struct ArrowSchema {            // 72 bytes
      const char* format; const char* name; const char* metadata;
      int64_t flags; int64_t n_children;
      struct ArrowSchema** children; struct ArrowSchema* dictionary;
      void (*release)(struct ArrowSchema*); void* private_data; };
    struct ArrowArray {             // 80 bytes
      int64_t length; int64_t null_count; int64_t offset; int64_t n_buffers; int64_t n_children;
      const void** buffers; struct ArrowArray** children; struct ArrowArray* dictionary;
      void (*release)(struct ArrowArray*); void* private_data; };
    struct ArrowDeviceArray {       // 128 bytes
      struct ArrowArray array; int64_t device_id; int32_t device_type;
      void* sync_event; int64_t reserved[3]; };

Ownership. Each capsule owns its struct's memory (``PyMem_RawMalloc``). A consumer *moves* a
struct out (copies it and sets the original's ``release`` to NULL) and later calls ``release`` on
its copy; a capsule destroyed with its struct not moved calls ``release`` itself, then frees the
memory. Each struct's ``private_data`` is an owned reference to a Python list of what must outlive
it (the format string, the buffer-address array, the buffers' owners); ``release`` drops that
reference and sets ``release`` to NULL, as the specification requires. The release callbacks are
ctypes callbacks, which take the GIL, so a consumer may release from any thread.
:func:`export_device_tree` exports a nested array: each child is an ``ArrowArray`` of our own
allocation holding its own buffers' owners; a parent's release releases the children a consumer
has not moved out, then frees them.

``sync_event`` is always NULL: the caller makes the data ready (synchronises) before exporting.

>>> import numpy as np, pyarrow as pa
>>> from fsstgpu.gpu.arrow_device import ARROW_DEVICE_CPU, export_device_array
>>> offsets, data = np.array([0, 2, 3], np.int32), np.frombuffer(b"abc", np.uint8)
>>> class Host:  # host memory exported as a CPU device array, which pyarrow imports
...     def __arrow_c_device_array__(self, requested_schema=None, **kwargs):
...         return export_device_array("u", 2, 0, [None, offsets.ctypes.data, data.ctypes.data],
...                                    device_type=ARROW_DEVICE_CPU, device_id=-1,
...                                    keep_alive=(offsets, data))
>>> pa.array(Host()).to_pylist()
['ab', 'c']
"""

from __future__ import annotations

import ctypes
from ctypes import POINTER, c_char_p, c_int32, c_int64, c_size_t, c_void_p

import pyarrow as pa

from fsstgpu.types import is_text

__all__ = [
    "ARROW_DEVICE_CPU",
    "ARROW_DEVICE_CUDA",
    "ARROW_FLAG_NULLABLE",
    "ArrowArray",
    "ArrowDeviceArray",
    "ArrowSchema",
    "ExportNode",
    "export_device_array",
    "export_device_tree",
    "plain_format",
]

#: ``ArrowDeviceType`` values (the same numbers as DLPack's device types)
ARROW_DEVICE_CPU = 1
ARROW_DEVICE_CUDA = 2
#: ``ArrowSchema.flags`` bit: the field may hold nulls
ARROW_FLAG_NULLABLE = 2

SCHEMA_CAPSULE = b"arrow_schema"
DEVICE_ARRAY_CAPSULE = b"arrow_device_array"


class ArrowSchema(ctypes.Structure):
    """``struct ArrowSchema`` (fields: the module docstring)."""


SchemaRelease = ctypes.CFUNCTYPE(None, POINTER(ArrowSchema))
ArrowSchema._fields_ = [
    ("format", c_char_p),
    ("name", c_char_p),
    ("metadata", c_char_p),
    ("flags", c_int64),
    ("n_children", c_int64),
    ("children", POINTER(POINTER(ArrowSchema))),
    ("dictionary", POINTER(ArrowSchema)),
    ("release", SchemaRelease),
    ("private_data", c_void_p),
]


class ArrowArray(ctypes.Structure):
    """``struct ArrowArray`` (fields: the module docstring)."""


ArrayRelease = ctypes.CFUNCTYPE(None, POINTER(ArrowArray))
ArrowArray._fields_ = [
    ("length", c_int64),
    ("null_count", c_int64),
    ("offset", c_int64),
    ("n_buffers", c_int64),
    ("n_children", c_int64),
    ("buffers", POINTER(c_void_p)),
    ("children", POINTER(POINTER(ArrowArray))),
    ("dictionary", POINTER(ArrowArray)),
    ("release", ArrayRelease),
    ("private_data", c_void_p),
]


class ArrowDeviceArray(ctypes.Structure):
    """``struct ArrowDeviceArray`` (fields: the module docstring)."""

    _fields_ = [
        ("array", ArrowArray),
        ("device_id", c_int64),
        ("device_type", c_int32),
        ("sync_event", c_void_p),
        ("reserved", c_int64 * 3),
    ]


# The few C-API functions needed, as prototypes of our own (ctypes.pythonapi's shared attributes
# are left as they are). PYFUNCTYPE: called with the GIL held.
_api = ctypes.pythonapi
_incref = ctypes.PYFUNCTYPE(None, ctypes.py_object)(("Py_IncRef", _api))
_decref = ctypes.PYFUNCTYPE(None, c_void_p)(("Py_DecRef", _api))
_raw_malloc = ctypes.PYFUNCTYPE(c_void_p, c_size_t)(("PyMem_RawMalloc", _api))
_raw_free = ctypes.PYFUNCTYPE(None, c_void_p)(("PyMem_RawFree", _api))
_capsule_new = ctypes.PYFUNCTYPE(ctypes.py_object, c_void_p, c_char_p, c_void_p)(
    ("PyCapsule_New", _api))
_capsule_pointer = ctypes.PYFUNCTYPE(c_void_p, c_void_p, c_char_p)(
    ("PyCapsule_GetPointer", _api))
CapsuleDestructor = ctypes.CFUNCTYPE(None, c_void_p)


def _hold(objects: list) -> int:
    """An owned reference to ``objects``, as the address ``private_data`` carries."""
    _incref(objects)
    return id(objects)  # CPython: the object's address


def _release(struct, null_release) -> None:
    """What both release callbacks do: drop the owned reference, mark the struct released."""
    if struct.private_data:
        _decref(struct.private_data)
    struct.private_data = None
    struct.release = null_release


def _release_schema(schema_ptr) -> None:
    _release(schema_ptr.contents, SchemaRelease())  # a NULL function pointer


def _release_array(array_ptr) -> None:
    array = array_ptr.contents
    # The children are ours (allocated by _fill_array): released unless a consumer moved one
    # out, then freed; their pointers live in memory private_data holds, so before dropping it.
    for i in range(array.n_children):
        child = array.children[i]
        if child.contents.release:
            child.contents.release(child)
        _raw_free(ctypes.cast(child, c_void_p))
    _release(array, ArrayRelease())


def _destroy(capsule, name: bytes, struct_type, inner) -> None:
    """A capsule's destructor: release the struct unless a consumer moved it out; free it."""
    address = _capsule_pointer(capsule, name)
    struct = inner(struct_type.from_address(address))
    if struct.release:
        struct.release(ctypes.pointer(struct))
    _raw_free(address)


def _destroy_schema_capsule(capsule) -> None:
    _destroy(capsule, SCHEMA_CAPSULE, ArrowSchema, lambda schema: schema)


def _destroy_device_array_capsule(capsule) -> None:
    _destroy(capsule, DEVICE_ARRAY_CAPSULE, ArrowDeviceArray, lambda device: device.array)


# The C function pointers handed out: module constants, alive as long as the module.
RELEASE_SCHEMA = SchemaRelease(_release_schema)
RELEASE_ARRAY = ArrayRelease(_release_array)
_DESTROY_SCHEMA = CapsuleDestructor(_destroy_schema_capsule)
_DESTROY_DEVICE_ARRAY = CapsuleDestructor(_destroy_device_array_capsule)


def _allocate(struct_type):
    address = _raw_malloc(ctypes.sizeof(struct_type))
    if not address:
        raise MemoryError(f"cannot allocate a {struct_type.__name__}")
    ctypes.memset(address, 0, ctypes.sizeof(struct_type))
    return address, struct_type.from_address(address)


def plain_format(type_: pa.DataType, offsets_itemsize: int) -> str:
    """The Arrow format string of a string / binary column held in offsets layout.

    ``u`` / ``z`` (string / binary) with 4-byte offsets, ``U`` / ``Z`` (large_string /
    large_binary) with 8-byte offsets, whatever ``type_``'s own layout: a view type decoded into
    offsets is exported as the plain type of its offsets' width.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.gpu.arrow_device import plain_format
    >>> plain_format(pa.string_view(), 4), plain_format(pa.large_binary(), 8)
    ('u', 'Z')
    """
    if offsets_itemsize not in (4, 8):
        raise ValueError(f"offsets are 4 or 8 bytes wide, not {offsets_itemsize}")
    code = "u" if is_text(type_) else "z"
    return code if offsets_itemsize == 4 else code.upper()


def export_device_array(format: str, length: int, null_count: int, buffers, *, device_type: int,
                        device_id: int, keep_alive) -> tuple:
    """Export a flat array (no children, no dictionary, offset 0) as Arrow PyCapsules.

    Parameters
    ----------
    format : str
        The Arrow format string (e.g. from :func:`plain_format`).
    length, null_count : int
    buffers : sequence of int or None
        The buffers' addresses in Arrow's order (None: a NULL buffer, e.g. no validity bitmap).
    device_type : int
        :data:`ARROW_DEVICE_CUDA`, :data:`ARROW_DEVICE_CPU`, ...
    device_id : int
        The device's ordinal (-1 for the CPU).
    keep_alive
        What owns the buffers' memory: held until the consumer releases the array.

    Returns
    -------
    (PyCapsule, PyCapsule)
        The ``"arrow_schema"`` and ``"arrow_device_array"`` capsules, as
        ``__arrow_c_device_array__`` returns them.
    """
    format_bytes = ctypes.create_string_buffer(format.encode("ascii"))
    name_bytes = ctypes.create_string_buffer(b"")
    schema_address, schema = _allocate(ArrowSchema)
    schema.format = ctypes.cast(format_bytes, c_char_p)
    schema.name = ctypes.cast(name_bytes, c_char_p)
    schema.flags = ARROW_FLAG_NULLABLE
    schema.private_data = _hold([format_bytes, name_bytes])
    schema.release = RELEASE_SCHEMA
    schema_capsule = _capsule_new(schema_address, SCHEMA_CAPSULE,
                                  ctypes.cast(_DESTROY_SCHEMA, c_void_p))
    return export_device_tree(schema_capsule, ExportNode(length, null_count, buffers, keep_alive),
                              device_type=device_type, device_id=device_id)


class ExportNode:
    """One array of a tree to export (:func:`export_device_tree`): its length, null count,
    buffer addresses in Arrow's order (None: a NULL buffer), what owns their memory, and its
    children (ExportNodes, in the schema's order)."""

    def __init__(self, length: int, null_count: int, buffers, keep_alive, children=()):
        self.length, self.null_count = int(length), int(null_count)
        self.buffers, self.keep_alive, self.children = list(buffers), keep_alive, list(children)


def _fill_array(array: ArrowArray, node: ExportNode) -> None:
    """Fill ``array`` (zeroed) from ``node``, its children allocated and filled too."""
    addresses = (c_void_p * len(node.buffers))(*node.buffers)
    children = (POINTER(ArrowArray) * len(node.children))()
    for i, child in enumerate(node.children):
        address, struct = _allocate(ArrowArray)
        _fill_array(struct, child)
        children[i] = ctypes.cast(address, POINTER(ArrowArray))
    array.length = node.length
    array.null_count = node.null_count
    array.n_buffers = len(node.buffers)
    array.buffers = ctypes.cast(addresses, POINTER(c_void_p))
    array.n_children = len(node.children)
    array.children = ctypes.cast(children, POINTER(POINTER(ArrowArray)))
    array.private_data = _hold([addresses, children, node.keep_alive])
    array.release = RELEASE_ARRAY


def export_device_tree(schema_capsule, root: ExportNode, *, device_type: int,
                       device_id: int) -> tuple:
    """Export a nested array (a tree of :class:`ExportNode`) as Arrow PyCapsules.

    ``schema_capsule`` describes it (e.g. ``pa.field("", type).__arrow_c_schema__()``: its
    children in the nodes' order). Each child array is a struct of its own, holding its own
    buffers' owners, released by its parent's release unless a consumer moved it out.

    Returns
    -------
    (PyCapsule, PyCapsule)
        ``schema_capsule`` and the ``"arrow_device_array"`` capsule.

    Examples
    --------
    >>> import numpy as np, pyarrow as pa
    >>> from fsstgpu.gpu.arrow_device import ARROW_DEVICE_CPU, ExportNode, export_device_tree
    >>> offsets, values = np.array([0, 2, 3], np.int32), np.array([7, 8, 9], np.int64)
    >>> class Host:  # a list<int64> in host memory, exported as a CPU device array
    ...     def __arrow_c_device_array__(self, requested_schema=None, **kwargs):
    ...         child = ExportNode(3, 0, [None, values.ctypes.data], values)
    ...         root = ExportNode(2, 0, [None, offsets.ctypes.data], offsets, [child])
    ...         return export_device_tree(pa.field("", pa.list_(pa.int64())).__arrow_c_schema__(),
    ...                                   root, device_type=ARROW_DEVICE_CPU, device_id=-1)
    >>> pa.array(Host()).to_pylist()
    [[7, 8], [9]]
    """
    array_address, device_array = _allocate(ArrowDeviceArray)
    _fill_array(device_array.array, root)
    device_array.device_id = int(device_id)
    device_array.device_type = int(device_type)
    array_capsule = _capsule_new(array_address, DEVICE_ARRAY_CAPSULE,
                                 ctypes.cast(_DESTROY_DEVICE_ARRAY, c_void_p))
    return schema_capsule, array_capsule
