"""Compressed and decompressed string columns in GPU memory, and the upload between them.

:func:`to_device` checks a :class:`~fsstgpu.CompressedStringArray` on the host (its structure, in
O(strings); the decode kernel checks the codes) and uploads it once, giving a
:class:`DeviceCompressedStringArray` that :func:`fsstgpu.decompress_device` can decode any number
of times. :class:`DeviceStringArray` is a decoded column: Arrow's offsets, data and validity
buffers as CuPy arrays in device memory. Everything the GPU needs (split points, narrowed lengths,
tables) already travels with the column: nothing is derived on the way.

Peak device memory of a decode: the compressed column (codes + split points + lengths + validity)
plus the output (data + offsets + validity).
"""

from __future__ import annotations

import contextlib

import numpy as np
import pyarrow as pa

from fsstgpu.device import get_cupy
from fsstgpu.symbol_table import pack_tables
from fsstgpu.types import is_text, is_view, large_type
from fsstgpu.utf8 import check_utf8

__all__ = ["DeviceCompressedStringArray", "DeviceStringArray", "HostPrepared", "to_device"]


def narrow_lengths(lengths: np.ndarray) -> np.ndarray:
    """The lengths in the narrowest unsigned dtype that holds them (fewer bytes to upload).

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.device_arrays import narrow_lengths
    >>> narrow_lengths(np.array([3, 300])).dtype
    dtype('uint16')
    """
    top = int(lengths.max()) if lengths.size else 0
    for dt in (np.uint8, np.uint16, np.uint32):
        if top <= np.iinfo(dt).max:
            return lengths.astype(dt)
    return lengths.astype(np.uint64)


class HostPrepared:
    """A CompressedStringArray checked and put in the GPU's layout, still in host memory.

    ``codes`` and the split points are the column's own arrays (not copied); the lengths are
    narrowed and the tables packed (:func:`fsstgpu.symbol_table.pack_tables`).
    """

    __slots__ = ("type", "length", "null_count", "chunk_lengths", "total", "codes", "split_codes",
                 "split_out", "split_table", "tab_sym", "tab_len", "ntables", "lengths",
                 "validity")

    def __init__(self, carr):
        carr.validate(full=False)
        self.type = carr.type
        self.length = int(carr.length)
        self.null_count = int(carr.null_count)
        self.chunk_lengths = carr.chunk_lengths
        self.total = carr.uncompressed_bytes
        self.codes = carr.codes
        self.split_codes = carr.split_codes
        self.split_out = carr.split_out
        self.split_table = carr.split_table
        self.tab_sym, self.tab_len = pack_tables(carr.tables)
        self.ntables = len(carr.tables)
        self.lengths = narrow_lengths(carr.lengths)
        self.validity = carr.validity


class DeviceCompressedStringArray:
    """A compressed string column in device memory, ready to decode (see :func:`to_device`).

    Attributes
    ----------
    codes : cupy.ndarray of uint8
        The codes, padded past ``ncodes`` so that the kernel's wide loads stay in bounds.
    split_codes, split_out : cupy.ndarray of int64
    split_table : cupy.ndarray of uint16
    tab_sym : cupy.ndarray of uint64, shape (ntables, 256)
    tab_len : cupy.ndarray of uint8, shape (ntables, 256)
    lengths : cupy.ndarray of an unsigned dtype, shape (length,)
    validity : cupy.ndarray of uint8 or None
    """

    def __init__(self, prep: HostPrepared, stream=None):
        from fsstgpu.kernels.fsst_decode import padded_size

        cp = get_cupy()
        self.type = prep.type
        self.length = prep.length
        self.null_count = prep.null_count
        self.chunk_lengths = prep.chunk_lengths
        self.total = prep.total
        self.ncodes = len(prep.codes)
        self.ntables = prep.ntables
        with on_stream(stream):
            self.codes = cp.empty(padded_size(self.ncodes), dtype=cp.uint8)
            self.codes[self.ncodes :].fill(0)  # the padding the kernel's loads may reach
            if self.ncodes:
                self.codes[: self.ncodes].set(prep.codes, stream=stream)
            self.split_codes = upload(cp, prep.split_codes, stream)
            self.split_out = upload(cp, prep.split_out, stream)
            self.split_table = upload(cp, prep.split_table, stream)
            self.tab_sym = upload(cp, prep.tab_sym, stream)
            self.tab_len = upload(cp, prep.tab_len, stream)
            self.lengths = upload(cp, prep.lengths, stream)
            self.validity = None if prep.validity is None else upload(cp, prep.validity, stream)

    @property
    def nsplits(self) -> int:
        return int(self.split_table.shape[0])

    @property
    def nbytes(self) -> int:
        """Device bytes held (codes with padding, split points, tables, lengths, validity)."""
        parts = (self.codes, self.split_codes, self.split_out, self.split_table, self.tab_sym,
                 self.tab_len, self.lengths, self.validity)
        return sum(int(p.nbytes) for p in parts if p is not None)

    def __len__(self) -> int:
        return self.length

    def __repr__(self) -> str:
        return (f"DeviceCompressedStringArray({self.type}, {self.length} strings, "
                f"{self.ncodes} codes, {self.nsplits} splits)")


def on_stream(stream):
    """Context making ``stream`` current (a no-op context for None)."""
    return stream if stream is not None else contextlib.nullcontext()


def upload(cp, host: np.ndarray, stream):
    """A device copy of ``host`` enqueued on ``stream``."""
    dev = cp.empty(host.shape, dtype=host.dtype)
    if host.size:
        dev.set(np.ascontiguousarray(host), stream=stream)
    return dev


class DeviceStringArray:
    """A decompressed string column in Arrow layout in device memory.

    Attributes
    ----------
    type : pyarrow.DataType
        The original Arrow type; :meth:`to_arrow` returns exactly it.
    offsets : cupy.ndarray of int32 or int64, shape (length + 1,)
        int64 for ``large_*`` types or when the data exceeds 2**31 - 1 bytes.
    data : cupy.ndarray of uint8
        Every string's bytes, concatenated (Arrow's data buffer).
    validity : cupy.ndarray of uint8 or None
        Arrow validity bitmap (LSB first, bit offset 0), None when there are no nulls.

    The buffers are CuPy arrays, so they expose ``__cuda_array_interface__`` and DLPack
    (``cupy.from_dlpack``/``torch.from_dlpack(arr.data)``); :meth:`buffers` lists them in
    Arrow's order.  View types (``string_view``, ``binary_view``) are held in offsets layout and
    become views in :meth:`to_arrow`.
    """

    def __init__(self, type_, length, offsets, data, validity, null_count, chunk_lengths=None):
        self.type = type_
        self.length = int(length)
        self.offsets = offsets
        self.data = data
        self.validity = validity
        self.null_count = int(null_count)
        self.chunk_lengths = chunk_lengths

    def __len__(self) -> int:
        return self.length

    def __repr__(self) -> str:
        return (f"DeviceStringArray({self.type}, {self.length} strings, "
                f"{int(self.data.nbytes)} data bytes)")

    @property
    def nbytes(self) -> int:
        """Device bytes of the three buffers."""
        return sum(int(b.nbytes) for b in (self.offsets, self.data, self.validity)
                   if b is not None)

    def buffers(self) -> tuple:
        """(validity or None, offsets, data): the CuPy buffers in Arrow's order."""
        return (self.validity, self.offsets, self.data)

    def to_arrow(self):
        """Copy to the host as a pyarrow Array (ChunkedArray when compressed from one).

        Text (the ``string`` types) is checked to be UTF-8 on the host copy; the device buffers
        themselves are not checked (a forged column decodes on the GPU to whatever its codes
        say, within its buffers).

        Raises
        ------
        CorruptDataError
            When a ``string`` column decoded to bytes that are not UTF-8.

        Examples
        --------
        >>> import fsstgpu, pyarrow as pa
        >>> if fsstgpu.gpu_available():  # doctest: +SKIP
        ...     col = pa.array(["a", None, "bc"])
        ...     dev = fsstgpu.decompress_device(fsstgpu.compress(col))
        ...     assert dev.to_arrow().equals(col)
        """
        offsets = self.offsets.get()
        data = self.data.get()
        validity = None if self.validity is None else self.validity.get()
        target = self.type
        if is_text(target):  # forged codes can decode to any bytes; checked on the host copy
            check_utf8(data, offsets, "decoded column")
        if offsets.dtype == np.int64:  # a large type, or > 2 GiB of data: cast below
            physical = large_type(target)
        elif is_view(target):
            physical = pa.string() if is_text(target) else pa.binary()
        else:
            physical = target
        bufs = [None if validity is None else pa.py_buffer(validity), pa.py_buffer(offsets),
                pa.py_buffer(data)]
        arr = pa.Array.from_buffers(physical, self.length, bufs, null_count=self.null_count)
        if self.chunk_lengths is None:
            return arr if physical == target else arr.cast(target)
        chunks, start = [], 0
        for n in self.chunk_lengths:
            piece = arr.slice(start, int(n))
            chunks.append(piece if physical == target else piece.cast(target))
            start += int(n)
        return pa.chunked_array(chunks, type=target)




def to_device(carr, stream=None) -> DeviceCompressedStringArray:
    """Check ``carr``'s structure on the host and upload it once, for any number of decodes.

    Parameters
    ----------
    carr : CompressedStringArray
    stream : cupy.cuda.Stream, optional
        Stream for the copies (default: the current stream).

    Raises
    ------
    CorruptDataError
        When the split points, lengths or tables are inconsistent.
    DeviceError
        Without a usable GPU.

    Examples
    --------
    >>> import fsstgpu, pyarrow as pa
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     dev = fsstgpu.to_device(fsstgpu.compress(pa.array(["ab", "cd"])))
    ...     assert fsstgpu.decompress_device(dev).to_arrow().to_pylist() == ["ab", "cd"]
    """
    get_cupy()
    return DeviceCompressedStringArray(HostPrepared(carr), stream)
