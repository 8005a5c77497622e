"""Nested columns with fsst leaves decoded on the GPU, in Arrow layout in device memory.

A ``list`` / ``large_list`` / ``fixed_size_list`` / ``struct`` / ``map`` column whose string
leaves are ``fsstgpu.fsst`` (:mod:`fsstgpu.formats.nested`) becomes a
:class:`DeviceNestedArray`: every container's validity bitmap and offsets uploaded (rebased to
start at 0, bit offset 0: the pieces a file's row groups give are joined into one array), every
fsst leaf decoded on the GPU into a :class:`fsstgpu.DeviceStringArray` (all leaves of a column
in one batched launch), every other leaf (numbers, booleans, temporal, decimal, fixed-size
binary) uploaded with its buffers as Arrow has them. The result goes to Arrow C Device
consumers whole (``__arrow_c_device_array__``, children included) and back to the host with
:meth:`DeviceNestedArray.to_arrow`, which gives exactly what the CPU's
:func:`fsstgpu.formats.nested.decode_nested` gives.

Leaves the layout does not take (dictionary leaves, which compress_nested leaves uncoded,
unions, null, extension types) make :func:`device_layout_supports` false: such a column is
decoded on the CPU.

>>> import pyarrow as pa
>>> from fsstgpu.formats.nested_device import device_layout_supports
>>> device_layout_supports(pa.list_(pa.struct([("s", pa.string()), ("n", pa.int64())])))
True
>>> device_layout_supports(pa.list_(pa.dictionary(pa.int32(), pa.string())))
False
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from fsstgpu.arrow_layout import as_chunks
from fsstgpu.bitmaps import join_bitmaps, slice_bitmap
from fsstgpu.device import get_cupy
from fsstgpu.errors import BatchDecodeError, CorruptDataError
from fsstgpu.formats.arrow import is_fsst_type
from fsstgpu.formats.arrow_read import from_extension_array
from fsstgpu.formats.nested import (
    child_fields,
    empty_array,
    plain_type_of,
    required_leaves,
    with_children,
)
from fsstgpu.gpu.arrow_device import (
    ARROW_DEVICE_CPU,
    ARROW_DEVICE_CUDA,
    ExportNode,
    export_device_tree,
)
from fsstgpu.gpu.concat import concat_device_arrays
from fsstgpu.gpu.decode import decompress_device
from fsstgpu.gpu.strings import DeviceStringArray, device_address, host_copy
from fsstgpu.kernels.loader import on_stream
from fsstgpu.parallel import run_tasks
from fsstgpu.types import narrow_offsets

__all__ = ["DeviceNestedArray", "checked_leaves", "device_layout_supports", "leaf_slices",
           "nested_to_device"]


def _flat(type_: pa.DataType) -> bool:
    """A leaf uploaded with its buffers as they are (fixed width, or plain offsets layout)."""
    t = pa.types
    return (t.is_integer(type_) or t.is_floating(type_) or t.is_boolean(type_)
            or t.is_temporal(type_) or t.is_decimal(type_) or t.is_fixed_size_binary(type_)
            or t.is_string(type_) or t.is_large_string(type_) or t.is_binary(type_)
            or t.is_large_binary(type_)) and not isinstance(type_, pa.BaseExtensionType)


def _container(type_: pa.DataType) -> bool:
    t = pa.types
    return (t.is_list(type_) or t.is_large_list(type_) or t.is_fixed_size_list(type_)
            or t.is_struct(type_) or t.is_map(type_)) and not isinstance(type_,
                                                                          pa.BaseExtensionType)


def device_layout_supports(type_: pa.DataType) -> bool:
    """Tell whether a nested column of ``type_`` (fsst leaves, or their plain types) can be laid
    out in device memory by :func:`nested_to_device`.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.nested_device import device_layout_supports
    >>> device_layout_supports(pa.map_(pa.string(), pa.list_(pa.float32())))
    True
    >>> device_layout_supports(pa.list_(pa.null()))  # a leaf it does not take: on the CPU
    False
    """
    if is_fsst_type(type_):
        return not pa.types.is_dictionary(type_.original_type)
    if _container(type_):
        return all(device_layout_supports(f.type) for f in child_fields(type_))
    return _flat(type_)


class DeviceNestedArray:
    """A nested column (or one of its non-string leaves) in Arrow layout in device memory.

    Attributes
    ----------
    type : pyarrow.DataType
        The column's plain Arrow type (its fsst leaves as their original types).
    length, null_count : int
    buffers : tuple of cupy.ndarray or None
        Arrow's buffers of this array, in Arrow's order, offset 0: ``(validity,)`` for a
        struct or fixed-size list, ``(validity, offsets)`` for a list, large list or map,
        ``(validity, values)`` for a fixed-width leaf, ``(validity, offsets, data)`` for a
        plain string leaf. A validity of None: no nulls.
    children : list
        The child arrays (:class:`DeviceNestedArray`, or :class:`fsstgpu.DeviceStringArray`
        for the decoded string leaves); a map's one child is its entries struct.
    chunk_lengths : list of int or None
        The pieces (a file's row groups) the column was joined from; :meth:`to_arrow` gives
        them back as chunks.
    """

    def __init__(self, type_, length, null_count, buffers, children=(), chunk_lengths=None):
        self.type = type_
        self.length = int(length)
        self.null_count = int(null_count)
        self.buffers = tuple(buffers)
        self.children = list(children)
        self.chunk_lengths = chunk_lengths

    def __len__(self) -> int:
        return self.length

    def __repr__(self) -> str:
        return f"DeviceNestedArray({self.type}, {self.length} rows, {self.nbytes} bytes)"

    @property
    def nbytes(self) -> int:
        """Device bytes of every buffer, the children's included."""
        own = sum(int(b.nbytes) for b in self.buffers if b is not None)
        return own + sum(int(c.nbytes) for c in self.children)

    def to_arrow(self):
        """Copy to the host as a pyarrow Array (a ChunkedArray when joined from pieces).

        Examples
        --------
        >>> import os, tempfile, fsstgpu, pyarrow as pa, pyarrow.parquet as pq
        >>> from fsstgpu.formats import compress_file, read_table_device
        >>> path = os.path.join(tempfile.mkdtemp(), "events.parquet")
        >>> pq.write_table(pa.table({"tags": [["a", "b"], None, ["c"]]}), path)
        >>> _ = compress_file(path, path + ".fsst.parquet")
        >>> if fsstgpu.gpu_available():  # doctest: +SKIP
        ...     tags = read_table_device(path + ".fsst.parquet")["tags"]  # a list<string> column
        ...     host = tags.to_arrow()  # a ChunkedArray: one chunk per row group
        ...     assert host.to_pylist() == [["a", "b"], None, ["c"]]
        """
        arr = _host_array(self, self.type)
        if self.chunk_lengths is None:
            return arr
        return as_chunks(arr, np.asarray(self.chunk_lengths, np.int64))

    def __arrow_c_device_array__(self, requested_schema=None, **kwargs):
        """Arrow C Device Data Interface (PyCapsule protocol): the whole tree, in place.

        The string leaves are exported as the plain type of their offsets' width (as
        :meth:`fsstgpu.DeviceStringArray.__arrow_c_device_array__` does); the device is
        synchronised first, so ``sync_event`` is NULL. ``requested_schema`` is not acted on;
        other keywords must be None. The buffers stay alive until the consumer releases the
        array.

        Examples
        --------
        >>> import os, tempfile, fsstgpu, pyarrow as pa, pyarrow.parquet as pq
        >>> from fsstgpu.formats import compress_file, read_table_device
        >>> path = os.path.join(tempfile.mkdtemp(), "events.parquet")
        >>> pq.write_table(pa.table({"tags": [["a"], None]}), path)
        >>> _ = compress_file(path, path + ".fsst.parquet")
        >>> if fsstgpu.gpu_available():  # doctest: +SKIP
        ...     import nanoarrow.device
        ...     tags = read_table_device(path + ".fsst.parquet")["tags"]
        ...     assert nanoarrow.device.c_device_array(tags).device_type.value == 2  # CUDA
        """
        unsupported = sorted(name for name, value in kwargs.items() if value is not None)
        if unsupported:
            raise NotImplementedError(f"__arrow_c_device_array__ got unsupported keyword(s) "
                                      f"{unsupported}")
        device = _device_of(self)
        if device is not None:
            device.synchronize()
        schema = pa.field("", _export_type(self)).__arrow_c_schema__()
        return export_device_tree(
            schema, _export_node(self),
            device_type=ARROW_DEVICE_CPU if device is None else ARROW_DEVICE_CUDA,
            device_id=-1 if device is None else device.id)


# ------------------------------------------------------------------------------ the host side
def _host_array(node, declared: pa.DataType) -> pa.Array:
    """``node`` copied to the host as an Array of type ``declared``."""
    if isinstance(node, DeviceStringArray):
        return node.to_arrow()  # one Array: assemble_with left a leaf no chunks
    children = [_host_array(c, f.type) for c, f in zip(
        node.children, _array_children(declared) if node.children else [], strict=True)]
    bufs = [None if b is None else pa.py_buffer(host_copy(b)) for b in node.buffers]
    return pa.Array.from_buffers(declared, node.length, bufs, null_count=node.null_count,
                                 children=children or None)


def _export_type(node) -> pa.DataType:
    """The type the tree is exported as: string leaves as their offsets' plain type."""
    if isinstance(node, DeviceStringArray):
        return node.physical_type
    if not node.children:
        return node.type
    fields = [f.with_type(_export_type(c)) for f, c in zip(_array_children(node.type),
                                                           node.children, strict=True)]
    return _around(node.type, fields)


def _address(buffer) -> int | None:
    if buffer is None:
        return None
    if hasattr(buffer, "__cuda_array_interface__"):
        return device_address(buffer)
    return int(buffer.ctypes.data)  # a NumPy buffer (the CPU tests' stand-ins)


def _export_node(node) -> ExportNode:
    if isinstance(node, DeviceStringArray):
        validity = node.validity if node.null_count else None
        bufs = (validity, node.offsets, node.data)
        return ExportNode(node.length, node.null_count, [_address(b) for b in bufs], bufs)
    bufs = node.buffers
    if bufs and bufs[0] is not None and not node.null_count:
        bufs = (None, *bufs[1:])
    return ExportNode(node.length, node.null_count, [_address(b) for b in bufs], bufs,
                      [_export_node(c) for c in node.children])


def _device_of(node):
    """The CUDA device of the tree's buffers (None: host buffers, as the CPU tests build)."""
    bufs = node.buffers() if isinstance(node, DeviceStringArray) else node.buffers
    for b in bufs:
        if b is not None and hasattr(b, "__cuda_array_interface__"):
            return b.device
    children = [] if isinstance(node, DeviceStringArray) else node.children
    for c in children:
        device = _device_of(c)
        if device is not None:
            return device
    return None


# ------------------------------------------------------------------------------ assembly
class _Leaf:
    """An fsst leaf waiting for the batched decode: where the result goes, and how many pieces
    (one a piece of the column) are joined into it."""

    def __init__(self, parent, index, npieces):
        self.parent, self.index, self.npieces = parent, index, npieces


def _validity(pieces, upload):
    """The pieces' validity joined into one bitmap at bit offset 0 (None when no nulls)."""
    nulls = sum(p.null_count for p in pieces)
    if not nulls:
        return None, 0
    parts = [(None if p.null_count == 0 else
              slice_bitmap(np.frombuffer(p.buffers()[0], np.uint8), p.offset, len(p)), len(p))
             for p in pieces]
    return upload(join_bitmaps(parts)), nulls


def _list_parts(pieces):
    """The pieces' offsets joined (rebased to run on from 0) and the child slices they use."""
    joined, children, base = [], [], 0
    for p in pieces:
        offs = p.offsets.to_numpy()  # with p's offset applied
        if len(offs) == 0:
            offs = np.zeros(1, np.int64)
        start, end = int(offs[0]), int(offs[-1])
        children.append(p.values.slice(start, end - start))
        rebased = offs.astype(np.int64) - start + base
        joined.append(rebased if not joined else rebased[1:])
        base += end - start
    if not joined:
        joined = [np.zeros(1, np.int64)]
    return np.concatenate(joined), children


def _child_pieces(pieces, type_):
    """Each child array's pieces (the values each piece references), and for a list, large
    list or map the pieces' offsets joined (else None)."""
    if pa.types.is_struct(type_):  # (a required fsst leaf null under a null row: nested.py)
        kids = [required_leaves(p, [p.field(i) for i in range(type_.num_fields)])
                for p in pieces]
        return [[k[i] for k in kids] for i in range(type_.num_fields)], None
    if pa.types.is_fixed_size_list(type_):
        size = type_.list_size
        return [[p.values.slice(p.offset * size, len(p) * size) for p in pieces]], None
    offsets, values = _list_parts(pieces)
    return [values], offsets


def leaf_slices(piece: pa.Array, type_: pa.DataType) -> list[pa.Array]:
    """The fsst leaves of one nested array, each sliced to the values it uses, depth first.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.nested import compress_nested
    >>> from fsstgpu.formats.nested_device import leaf_slices
    >>> coded = compress_nested(pa.array([{"a": "x", "b": ["y", "z"]}]))
    >>> [len(leaf) for leaf in leaf_slices(coded, coded.type)]
    [1, 2]
    """
    found: list[pa.Array] = []

    def walk(pieces, t):
        kids, _ = _child_pieces(pieces, t)
        for child, field in zip(kids, _array_children(t), strict=True):
            if is_fsst_type(field.type):
                found.append(child[0])
            elif _container(field.type):
                walk(child, field.type)

    walk([piece], type_)
    return found


def checked_leaves(piece: pa.Array, type_: pa.DataType) -> list:
    """The fsst leaves of one nested array (:func:`leaf_slices`) checked and planned for the
    decode (:func:`fsstgpu.formats.arrow_read.from_extension_array`): host work a reader runs
    on its reading threads, as each row group arrives.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.nested import compress_nested
    >>> from fsstgpu.formats.nested_device import checked_leaves
    >>> coded = compress_nested(pa.array([["ab", None]]))
    >>> [leaf.null_count for leaf in checked_leaves(coded, coded.type)]
    [1]
    """
    return [from_extension_array(leaf) for leaf in leaf_slices(piece, type_)]


def _assemble(pieces, type_, upload, leaves):
    """The device node of ``pieces`` (host arrays of ``type_``, joined end to end); fsst
    leaves are appended to ``leaves`` as :class:`_Leaf` placeholders in the children lists."""
    n = sum(len(p) for p in pieces)
    if not _container(type_):
        return _flat_node(pieces, type_, n, upload)
    validity, nulls = _validity(pieces, upload)
    plain = plain_type_of(type_)
    kids, offsets = _child_pieces(pieces, type_)
    if offsets is None:  # struct, fixed-size list
        node = DeviceNestedArray(plain, n, nulls, (validity,))
    else:  # list, large list, map
        width = np.int64 if pa.types.is_large_list(type_) else np.int32
        node = DeviceNestedArray(plain, n, nulls, (validity, upload(offsets.astype(width))))
    for i, (child_pieces, field) in enumerate(zip(kids, _array_children(type_), strict=True)):
        child_type = field.type
        if is_fsst_type(child_type):
            node.children.append(None)
            leaves.append(_Leaf(node, i, len(child_pieces)))
        else:
            node.children.append(_assemble(child_pieces, child_type, upload, leaves))
    return node


def _array_children(type_: pa.DataType) -> list[pa.Field]:
    """The child arrays' fields as Arrow lays them out: a map's one child is its entries."""
    if pa.types.is_map(type_):
        return [pa.field("entries", pa.struct([type_.key_field, type_.item_field]), False)]
    return child_fields(type_)


def _around(type_: pa.DataType, fields: list[pa.Field]) -> pa.DataType:
    """``type_``'s container around child arrays of ``fields`` (:func:`_array_children`)."""
    if pa.types.is_map(type_):
        return with_children(type_, list(fields[0].type))
    return with_children(type_, fields)


def _flat_node(pieces, type_, n, upload) -> DeviceNestedArray:
    """A leaf uploaded as it is (after joining its pieces: offset 0)."""
    joined = pa.concat_arrays(pieces) if len(pieces) != 1 or pieces[0].offset else pieces[0]
    bufs = joined.buffers()
    validity = None
    if joined.null_count:
        validity = upload(np.frombuffer(bufs[0], np.uint8)[:(n + 7) // 8])
    if pa.types.is_boolean(type_):
        values = (upload(np.frombuffer(bufs[1], np.uint8)[:(n + 7) // 8]),)
    elif len(bufs) == 3:  # plain strings: offsets, data
        offsets = np.frombuffer(bufs[1], np.int32 if narrow_offsets(type_) else np.int64)[:n + 1]
        data = (np.frombuffer(bufs[2], np.uint8)[:int(offsets[-1])] if bufs[2] is not None
                else np.zeros(0, np.uint8))
        values = (upload(offsets), upload(data))
    else:
        width = type_.bit_width // 8
        values = (upload(np.frombuffer(bufs[1], np.uint8)[:n * width]),)
    return DeviceNestedArray(type_, n, joined.null_count, (validity, *values))


def assemble_with(pieces, type_, *, upload, decode, join, checked=None) -> DeviceNestedArray:
    """:func:`nested_to_device` with the steps given: ``upload(ndarray)`` places a host array,
    ``decode(list of CompressedStringArray)`` decodes every fsst leaf's pieces in one batch
    (``DeviceStringArray`` each, in order), ``join(parts)`` joins one leaf's decoded pieces;
    ``checked``: each piece's :func:`checked_leaves`, when the caller has them.

    The CPU tests give host steps (NumPy buffers, the CPU decoder), so the assembly is tested
    without a GPU; :func:`nested_to_device` gives CuPy's.
    """
    pieces = list(pieces)
    if not pieces:
        pieces, checked = [empty_array(type_)], None
    leaves: list[_Leaf] = []
    root = _assemble(pieces, type_, upload, leaves)
    if checked is None:
        # each piece's leaves checked and planned (from_extension_array: compiled passes that
        # release the GIL) on the worker pool: serial, they were a third of placing a column
        checked = [None] * len(pieces)

        def check(k: int) -> None:
            checked[k] = checked_leaves(pieces[k], type_)

        run_tasks(check, len(pieces))
    if len(checked) != len(pieces) or any(len(c) != len(leaves) for c in checked):
        raise ValueError("checked: one list of the fsst leaves per piece")
    carrs = [piece[j] for j in range(len(leaves)) for piece in checked]  # leaf by leaf
    decoded = iter(decode(carrs) if carrs else [])
    for leaf in leaves:
        parts = [next(decoded) for _ in range(leaf.npieces)]
        joined = join(parts) if len(parts) > 1 else parts[0]
        joined.chunk_lengths = None  # a child is one array
        leaf.parent.children[leaf.index] = joined
    root.chunk_lengths = [len(p) for p in pieces] if len(pieces) > 1 else None
    return root


def nested_to_device(pieces, type_=None, *, decode=None, stream=None,
                     checked=None) -> DeviceNestedArray:
    """A nested column with fsst leaves, decoded on the GPU into Arrow layout in device memory.

    Parameters
    ----------
    pieces : list of pyarrow.Array
        The column's pieces (a file's row groups), each a nested array with fsst leaves
        (:func:`fsstgpu.formats.nested.compress_nested`); joined end to end.
    type_ : pyarrow.DataType, optional
        Their type (default: the first piece's; needed when there are none).
    decode : callable, optional
        ``decode(list of CompressedStringArray) -> list of DeviceStringArray`` (default:
        :func:`fsstgpu.decompress_device` on ``stream``: every leaf's pieces in one launch; a
        corrupt piece raises CorruptDataError naming it, "leaf piece K", in the order the
        leaves are met depth first).
    stream : cupy.cuda.Stream, optional
    checked : list of list, optional
        Each piece's :func:`checked_leaves` (default: computed here, on the worker pool).

    Returns
    -------
    DeviceNestedArray
        Its :meth:`~DeviceNestedArray.to_arrow` equals
        :func:`fsstgpu.formats.nested.decode_nested` of the pieces.

    Raises
    ------
    CorruptDataError
        When a leaf's storage or codes are damaged.
    DeviceError
        Without a usable GPU.
    ValueError
        When :func:`device_layout_supports` refuses the type.

    Examples
    --------
    >>> import fsstgpu, pyarrow as pa
    >>> from fsstgpu.formats.nested import compress_nested
    >>> from fsstgpu.formats.nested_device import nested_to_device
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     col = pa.array([{"k": "x", "n": 1}, None])
    ...     assert nested_to_device([compress_nested(col)]).to_arrow().equals(col)
    """
    pieces = list(pieces)
    type_ = type_ if type_ is not None else pieces[0].type
    if not device_layout_supports(type_):
        raise ValueError(f"{type_}: not laid out in device memory (device_layout_supports)")
    cp = get_cupy()

    def decode_leaves(carrs):
        try:
            return decompress_device(list(carrs), stream=stream)
        except BatchDecodeError as exc:  # name the leaf pieces, as a file's reader names columns
            raise CorruptDataError("; ".join(f"leaf piece {k}: {msg}"
                                             for k, msg in sorted(exc.failed.items()))) from None

    decode = decode or decode_leaves

    def upload(host: np.ndarray):
        dev = cp.empty(host.shape, host.dtype)
        if host.size:
            dev.set(np.ascontiguousarray(host), stream=stream)
        return dev

    with on_stream(stream):
        return assemble_with(pieces, type_, upload=upload, decode=decode,
                             join=lambda parts: concat_device_arrays(parts, stream,
                                                                     consume=True),
                             checked=checked)
