"""FSST-compressed columns on the GPU, and their decompression straight into Arrow device layout.

:func:`to_device` uploads a :class:`~fsstgpu.CompressedStringArray` once (validated on the host
first), giving a :class:`DeviceCompressedStringArray` that can be decoded many times without
another copy.  :func:`decompress_on_gpu` decodes either kind into a :class:`DeviceStringArray`:
Arrow's offsets, data and validity buffers as CuPy arrays in device memory.  A host input goes
through :func:`fsstgpu.ingest.ingest`, which overlaps the upload of one chunk of splits with the
decoding of the previous one.

The decode itself (one launch of the split-balanced kernel, ``kernels/fsst_decode.cu``, and one
scan of the lengths for the offsets) never waits on the host; :func:`decompress_on_gpu` then
synchronises once, on its stream, to read the kernel's error flag, because corrupt data must raise
:class:`~fsstgpu.CorruptDataError` rather than return garbage.  Callers that pipeline many decodes
use :func:`decode_async` and :meth:`DecodeJob.check` instead.

Peak device memory of a decode: the compressed column (codes + split points + lengths + validity)
plus the output (data + offsets + validity).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from fsstgpu.device import get_cupy
from fsstgpu.errors import CorruptDataError
from fsstgpu.types import SUPPORTED_TYPES

#: below this many splits, :func:`to_device` cuts splits finer so that the GPU has enough threads
#: (one thread per split; an H200 holds ~170k resident threads)
MIN_SPLITS = 1 << 16
#: ... but never into splits of fewer output bytes than this
MIN_SPLIT_BYTES = 2048

_LARGE = {pa.large_string(), pa.large_binary()}
_VIEW_TO_PLAIN = {pa.string_view(): (pa.string(), pa.large_string()),
                  pa.binary_view(): (pa.binary(), pa.large_binary())}
_PLAIN_TO_LARGE = {pa.string(): pa.large_string(), pa.binary(): pa.large_binary()}


def _offsets_dtype(type_, total: int):
    return np.int64 if (type_ in _LARGE or total > np.iinfo(np.int32).max) else np.int32


def _narrow_lengths(lengths: np.ndarray) -> np.ndarray:
    """The lengths in the narrowest unsigned dtype that holds them (fewer bytes to upload)."""
    if lengths.size == 0:
        return lengths.astype(np.uint8)
    top = int(lengths.max())
    for dt in (np.uint8, np.uint16, np.uint32):
        if top <= np.iinfo(dt).max:
            return lengths.astype(dt)
    return lengths.astype(np.uint64)


class HostPrepared:
    """A CompressedStringArray checked and put in the GPU's layout, still in host memory.

    Shared by :func:`to_device` and :mod:`fsstgpu.ingest`.  ``codes`` is the caller's array
    (not copied); the split points may be finer than the array's (see :data:`MIN_SPLITS`).
    """

    __slots__ = ("type", "length", "null_count", "chunk_lengths", "total", "codes", "split_codes",
                 "split_out", "split_table", "tab_sym", "tab_len", "ntables", "lengths",
                 "validity")

    def __init__(self, carr, *, min_splits: int = MIN_SPLITS):
        from fsstgpu.kernels.fsst_decode import pack_tables, refine_splits

        validate = getattr(carr, "validate", None)
        if callable(validate):
            validate()
        _check_host(carr)
        self.type = carr.type
        self.length = int(carr.length)
        self.null_count = int(carr.null_count)
        cl = getattr(carr, "chunk_lengths", None)
        self.chunk_lengths = None if cl is None else np.asarray(cl, np.int64)
        lengths = np.asarray(carr.lengths)
        self.total = int(lengths.sum(dtype=np.int64)) if lengths.size else 0
        self.codes = np.ascontiguousarray(carr.codes, np.uint8)
        sc = np.ascontiguousarray(carr.split_codes, np.int64)
        so = np.ascontiguousarray(carr.split_out, np.int64)
        st = np.ascontiguousarray(carr.split_table, np.uint16)
        nsplits = len(st)
        if 0 < nsplits < min_splits and self.total > nsplits * MIN_SPLIT_BYTES:
            target = max(MIN_SPLIT_BYTES, -(-self.total // min_splits))
            sc, so, st = refine_splits(self.codes, sc, so, st, carr.tables, target)
        self.split_codes, self.split_out, self.split_table = sc, so, st
        self.tab_sym, self.tab_len = pack_tables(carr.tables)
        self.ntables = len(carr.tables)
        self.lengths = _narrow_lengths(lengths)
        v = carr.validity
        self.validity = None if v is None else np.ascontiguousarray(v, np.uint8)


def _check_host(carr) -> None:
    """The checks the kernel relies on the host for (it re-checks each split's bounds itself)."""
    if carr.type not in SUPPORTED_TYPES:
        raise TypeError(f"unsupported Arrow type {carr.type}; expected one of {SUPPORTED_TYPES}")
    n = int(carr.length)
    lengths = np.asarray(carr.lengths)
    if lengths.shape != (n,):
        raise CorruptDataError(f"lengths has shape {lengths.shape}, expected ({n},)")
    if lengths.size and lengths.dtype.kind == "i" and int(lengths.min()) < 0:
        raise CorruptDataError("lengths holds negative values")
    total = int(lengths.sum(dtype=np.int64)) if lengths.size else 0
    ncodes = len(carr.codes)
    sc = np.asarray(carr.split_codes)
    so = np.asarray(carr.split_out)
    st = np.asarray(carr.split_table)
    if sc.ndim != 1 or so.shape != sc.shape or st.shape != (max(len(sc) - 1, 0),):
        raise CorruptDataError(
            f"split arrays disagree: split_codes {sc.shape}, split_out {so.shape}, "
            f"split_table {st.shape}")
    if len(sc) == 0:
        if ncodes or total:
            raise CorruptDataError("no split points for a non-empty column")
        return
    if sc[0] != 0 or sc[-1] != ncodes:
        raise CorruptDataError(
            f"split_codes runs {sc[0]}..{sc[-1]}, expected 0..{ncodes} (the number of codes)")
    if so[0] != 0 or so[-1] != total:
        raise CorruptDataError(
            f"split_out runs {so[0]}..{so[-1]}, expected 0..{total} (the sum of the lengths)")
    if np.any(np.diff(sc) < 0) or np.any(np.diff(so) < 0):
        raise CorruptDataError("split points are not non-decreasing")
    if st.size and int(st.max()) >= len(carr.tables):
        raise CorruptDataError(
            f"split_table names table {int(st.max())}, but there are {len(carr.tables)} tables")
    v = carr.validity
    if v is not None and len(v) < (n + 7) // 8:
        raise CorruptDataError(f"validity has {len(v)} bytes, {n} strings need {(n + 7) // 8}")


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
        with _on(stream):
            self.codes = cp.zeros(padded_size(self.ncodes), dtype=cp.uint8)
            if self.ncodes:
                self.codes[: self.ncodes].set(prep.codes, stream=stream)
            self.split_codes = _upload(cp, prep.split_codes, stream)
            self.split_out = _upload(cp, prep.split_out, stream)
            self.split_table = _upload(cp, prep.split_table, stream)
            self.tab_sym = _upload(cp, prep.tab_sym, stream)
            self.tab_len = _upload(cp, prep.tab_len, stream)
            self.lengths = _upload(cp, prep.lengths, stream)
            self.validity = None if prep.validity is None else _upload(cp, prep.validity, stream)

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


def _on(stream):
    """Context making ``stream`` current (a no-op context for None)."""
    import contextlib

    return stream if stream is not None else contextlib.nullcontext()


def _upload(cp, host: np.ndarray, stream):
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

        Examples
        --------
        >>> import fsstgpu, pyarrow as pa
        >>> if fsstgpu.gpu_available():  # doctest: +SKIP
        ...     col = pa.array(["a", None, "bc"])
        ...     dev = fsstgpu.device_array.decompress_on_gpu(fsstgpu.compress(col))
        ...     assert dev.to_arrow().equals(col)
        """
        offsets = self.offsets.get()
        data = self.data.get()
        validity = None if self.validity is None else self.validity.get()
        large = offsets.dtype == np.int64
        target = self.type
        if target in _VIEW_TO_PLAIN:
            physical = _VIEW_TO_PLAIN[target][1 if large else 0]
        elif large and target in _PLAIN_TO_LARGE:
            physical = _PLAIN_TO_LARGE[target]  # > 2 GiB of data: cast (per chunk) below
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


class DecodeJob:
    """A decode enqueued on a stream: its result and the device error flag not yet read."""

    def __init__(self, result: DeviceStringArray, err, stream):
        self.result = result
        self.err = err
        self.stream = stream

    def check(self) -> DeviceStringArray:
        """Wait for the decode (on its stream only), raise CorruptDataError if it found any."""
        from fsstgpu.kernels.fsst_decode import error_message

        bits = int(self.err.get(stream=self.stream)[0])  # the one host sync of a decode
        if bits:
            raise CorruptDataError(error_message(bits))
        return self.result


def to_device(carr, stream=None) -> DeviceCompressedStringArray:
    """Validate ``carr`` on the host and upload it once, for any number of GPU decodes.

    Parameters
    ----------
    carr : CompressedStringArray
    stream : cupy.cuda.Stream, optional
        Stream for the copies (default: the current stream).

    Raises
    ------
    CorruptDataError
        When the split points, lengths or tables are inconsistent.
    TypeError
        For an unsupported Arrow type.
    DeviceError
        Without a usable GPU.

    Examples
    --------
    >>> import fsstgpu, pyarrow as pa
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     dev = fsstgpu.to_device(fsstgpu.compress(pa.array(["ab", "cd"])))
    ...     out = fsstgpu.device_array.decompress_on_gpu(dev).to_arrow()
    ...     assert out.to_pylist() == ["ab", "cd"]
    """
    get_cupy()
    return DeviceCompressedStringArray(HostPrepared(carr), stream)


def decode_async(dev: DeviceCompressedStringArray, stream=None, *, variant: str | None = None,
                 fill: int | None = None, out=None) -> DecodeJob:
    """Enqueue a decode of ``dev`` on ``stream`` without waiting; :meth:`DecodeJob.check` it.

    ``fill`` (tests) fills the output with that byte first, so bytes the kernel misses show;
    ``out`` reuses a uint8 buffer of at least ``dev.total`` bytes (benchmarks).
    """
    from fsstgpu.kernels.fsst_decode import DEFAULT_VARIANT, launch_decode, launch_offsets

    cp = get_cupy()
    with _on(stream):
        odt = _offsets_dtype(dev.type, dev.total)
        offsets = cp.empty(dev.length + 1, dtype=odt)
        launch_offsets(dev.lengths, offsets, stream=stream)
        data = cp.empty(dev.total, dtype=cp.uint8) if out is None else out[: dev.total]
        if fill is not None:
            data.fill(fill)
        err = cp.zeros(1, dtype=cp.int32)
        launch_decode(dev.codes, dev.ncodes, dev.split_codes, dev.split_out, dev.split_table,
                      dev.tab_sym, dev.tab_len, dev.ntables, data, dev.total, err,
                      variant=variant or DEFAULT_VARIANT, stream=stream)
        validity = None if dev.validity is None else dev.validity.copy()
    result = DeviceStringArray(dev.type, dev.length, offsets, data, validity, dev.null_count,
                               dev.chunk_lengths)
    return DecodeJob(result, err, stream)


def decompress_on_gpu(carr, stream=None) -> DeviceStringArray:
    """Decompress into Arrow device layout; ``carr`` on the host or from :func:`to_device`.

    A host ``carr`` is uploaded chunk by chunk with the upload overlapped with decoding
    (:func:`fsstgpu.ingest.ingest`).  Waits once, at the end, to read the kernel's error flag.

    Raises
    ------
    CorruptDataError
        When the data is inconsistent (found on the host or by the kernel).
    DeviceError
        Without a usable GPU.

    Examples
    --------
    >>> import fsstgpu, pyarrow as pa
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     col = pa.array(["x", None, "yz"], pa.large_string())
    ...     out = fsstgpu.device_array.decompress_on_gpu(fsstgpu.compress(col))
    ...     assert out.to_arrow().equals(col)
    """
    if isinstance(carr, DeviceCompressedStringArray):
        return decode_async(carr, stream).check()
    from fsstgpu.ingest import ingest

    return ingest(carr, stream=stream)
