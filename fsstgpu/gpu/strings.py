"""Decoded string columns in GPU memory: Arrow's offsets, data and validity as CuPy arrays.

:class:`DeviceStringArray` is what :func:`fsstgpu.decompress_device` returns: a column in Arrow
layout in device memory, handed to Arrow C Device consumers (pylibcudf, nanoarrow, ...) without a
copy, to cuDF, or copied back to a ``pyarrow.Array`` (:meth:`DeviceStringArray.to_arrow`, which
checks a text column as UTF-8 on the host copy).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from fsstgpu.arrow_layout import as_chunks
from fsstgpu.errors import CorruptDataError
from fsstgpu.gpu.arrow_device import ARROW_DEVICE_CUDA, export_device_array, plain_format
from fsstgpu.types import is_text, is_view, large_type
from fsstgpu.utf8 import check_utf8

__all__ = ["DeviceStringArray", "device_address", "host_copy", "physical_type"]


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
    become views in :meth:`to_arrow`. The whole column goes to Arrow C Device consumers
    (``__arrow_c_device_array__``: pylibcudf, nanoarrow, ...) without a copy, and to cuDF with
    :meth:`to_cudf`.

    Examples
    --------
    >>> import pyarrow as pa, fsstgpu
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     dev = fsstgpu.decompress_device(fsstgpu.compress(pa.array(["ab", None])))
    ...     assert (dev.length, dev.null_count) == (2, 1) and dev.offsets.dtype == "int32"
    ...     assert dev.to_arrow().to_pylist() == ["ab", None]
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

    def check_buffers(self) -> None:
        """Check the buffers' shapes, dtypes and contiguity against the length (host metadata
        only, no device sync): kernels read them by pointer, so a hand-built column must hold
        what its attributes say. The offsets' values are not checked here.

        Raises
        ------
        CorruptDataError
            Naming the buffer that is not 1-D and C-contiguous, of its dtype, or of its size.

        Examples
        --------
        >>> import fsstgpu, pyarrow as pa
        >>> if fsstgpu.gpu_available():  # doctest: +SKIP
        ...     dev = fsstgpu.decompress_device(fsstgpu.compress(pa.array(["ab", None])))
        ...     dev.check_buffers()
        """
        n = self.length
        need = (("offsets", self.offsets, ("int32", "int64"), n + 1, n + 1),
                ("data", self.data, ("uint8",), 0, None),
                ("validity", self.validity, ("uint8",), (n + 7) // 8, None))
        for name, buf, dtypes, least, most in need:
            if buf is None and name == "validity":
                continue
            if buf is None or buf.ndim != 1 or not buf.flags.c_contiguous \
                    or str(buf.dtype) not in dtypes:
                raise CorruptDataError(f"the {name} buffer must be a 1-D C-contiguous array of "
                                       f"{' or '.join(dtypes)}")
            if buf.size < least or (most is not None and buf.size > most):
                raise CorruptDataError(f"a {name} buffer of {buf.size} items for {n} strings")

    def buffers(self) -> tuple:
        """(validity or None, offsets, data): the CuPy buffers in Arrow's order."""
        return (self.validity, self.offsets, self.data)

    @property
    def physical_type(self) -> pa.DataType:
        """The plain type the buffers hold (:func:`physical_type`): what :meth:`to_arrow`
        builds before casting back to ``type``, and what the Arrow C Device export declares."""
        return physical_type(self.type, self.offsets.dtype)

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
        offsets = host_copy(self.offsets)
        data = host_copy(self.data)
        validity = None if self.validity is None else host_copy(self.validity)
        target = self.type
        if is_text(target):  # forged codes can decode to any bytes; checked on the host copy
            check_utf8(data, offsets, "decoded column")
        physical = physical_type(target, offsets.dtype)
        bufs = [None if validity is None else pa.py_buffer(validity), pa.py_buffer(offsets),
                pa.py_buffer(data)]
        arr = pa.Array.from_buffers(physical, self.length, bufs, null_count=self.null_count)
        arr = arr if physical == target else arr.cast(target)
        if self.chunk_lengths is None:
            return arr
        return as_chunks(arr, np.asarray(self.chunk_lengths, np.int64))

    # ------------------------------------------------------------------ interchange
    def __arrow_c_device_array__(self, requested_schema=None, **kwargs):
        """Arrow C Device Data Interface (PyCapsule protocol): the buffers, in place on the GPU.

        The column is exported as one array (chunks, if any, are not kept) of the plain type of
        its offsets' width: ``string`` / ``binary`` with int32 offsets, ``large_string`` /
        ``large_binary`` with int64 ones (a view type is held, and exported, in offsets layout;
        ``to_arrow`` casts back to views). The device is synchronised first, so ``sync_event`` is
        NULL and the data are ready on every stream. ``requested_schema`` is not acted on (the
        protocol lets a producer ignore it; the consumer casts); other keywords must be None.
        The exported buffers stay alive until the consumer releases the array.

        Examples
        --------
        >>> import fsstgpu, pyarrow as pa
        >>> if fsstgpu.gpu_available():  # doctest: +SKIP
        ...     import nanoarrow.device
        ...     dev = fsstgpu.decompress_device(fsstgpu.compress(pa.array(["a", None])))
        ...     assert nanoarrow.device.c_device_array(dev).device_type.value == 2  # CUDA
        """

        unsupported = sorted(name for name, value in kwargs.items() if value is not None)
        if unsupported:
            raise NotImplementedError(f"__arrow_c_device_array__ got unsupported keyword(s) "
                                      f"{unsupported}")
        device = self.data.device
        device.synchronize()
        validity = self.validity if self.null_count else None
        buffers = [None if validity is None else device_address(validity),
                   device_address(self.offsets), device_address(self.data)]
        return export_device_array(
            plain_format(self.type, self.offsets.dtype.itemsize), self.length, self.null_count,
            buffers, device_type=ARROW_DEVICE_CUDA, device_id=device.id,
            keep_alive=(validity, self.offsets, self.data))

    def to_cudf(self):
        """A ``cudf.Series`` of these strings, handed over through the Arrow C Device interface
        (:meth:`__arrow_c_device_array__`: libcudf takes the device buffers as they are).

        Raises
        ------
        ImportError
            Without cuDF (``pip install cudf-cu12``, matching your CUDA).

        Examples
        --------
        >>> import fsstgpu, pyarrow as pa
        >>> if fsstgpu.gpu_available():  # doctest: +SKIP
        ...     import cudf  # to_cudf hands the column to cuDF
        ...     dev = fsstgpu.decompress_device(fsstgpu.compress(pa.array(["a", None])))
        ...     assert dev.to_cudf().to_arrow().to_pylist() == ["a", None]
        """
        try:
            import cudf
            import pylibcudf
        except ImportError as exc:
            raise ImportError("DeviceStringArray.to_cudf needs cuDF (pip install cudf-cu12, or "
                              "the package matching your CUDA)") from exc
        # pylibcudf >= 25.x: Column.from_arrow; older releases take the object in the constructor
        from_arrow = getattr(pylibcudf.Column, "from_arrow", None)
        column = from_arrow(self) if from_arrow is not None else pylibcudf.Column(self)
        return cudf.Series.from_pylibcudf(column)


def physical_type(type_: pa.DataType, offsets_dtype) -> pa.DataType:
    """The plain type decoded strings of ``type_`` are held as with offsets of
    ``offsets_dtype``: a large type with int64 offsets (a large type, or > 2 GiB of data), a
    view type as its offsets-layout twin, else ``type_`` itself.

    Examples
    --------
    >>> import numpy as np, pyarrow as pa
    >>> from fsstgpu.gpu.strings import physical_type
    >>> physical_type(pa.string_view(), np.int32), physical_type(pa.string(), np.int64)
    (DataType(string), DataType(large_string))
    """
    if np.dtype(offsets_dtype) == np.int64:
        return large_type(type_)
    if is_view(type_):
        return pa.string() if is_text(type_) else pa.binary()
    return type_


def host_copy(buffer) -> np.ndarray:
    """A device buffer copied to the host (a NumPy array, as the CPU tests' stand-ins hold, as
    it is)."""
    return buffer if isinstance(buffer, np.ndarray) else buffer.get()


def device_address(buffer) -> int:
    """A device buffer's address, from ``__cuda_array_interface__`` (CuPy, Numba, PyTorch...)."""
    return int(buffer.__cuda_array_interface__["data"][0])
