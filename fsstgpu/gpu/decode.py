"""Decompression on the GPU, straight into Arrow layout in device memory; one launch per batch.

:func:`decompress_device` takes a column or a list of columns, on the device
(:func:`fsstgpu.to_device`) or in host memory. A list is laid out as one batch
(:class:`fsstgpu.gpu.layout.HostBatch`): one offsets scan and one decode launch give every
column, each a :class:`~fsstgpu.DeviceStringArray` whose buffers are views of the batch's output
buffers. A device column's decode is planned on its first call and replayed: one allocation and
one CUDA graph (a memset and one kernel: the decode's blocks, then the offsets scan's, the last
to finish writing the flags to host memory) through the CUDA driver
(:class:`~fsstgpu.kernels.fsst_decode.PlannedDecode`).

Host columns are uploaded while their layout is built (:func:`~fsstgpu.gpu.arrays.upload_batch`):
a worker thread enqueues the codes' upload while the caller's thread checks the columns and lays
out their split points, lengths and tables, then they decode as a device column. Pageable codes
of 8 MiB or more (``STAGE_BYTES``) are staged: pool threads copy pieces of ``chunk_bytes``
into ``nbuffers`` pinned buffers side by side and each is uploaded when full (a pageable upload
runs at one core's copy speed). Only compressed bytes cross the bus. Staging memory comes from
CuPy's pinned memory pool (``cupy.get_default_pinned_memory_pool().free_all_blocks()`` releases
it).

The host waits for the GPU once, at the end, to read the kernel's error flag: corrupt data must
raise :class:`~fsstgpu.CorruptDataError` (for a batch: :class:`~fsstgpu.BatchDecodeError`, naming
the bad columns and keeping the good ones) rather than return garbage. Callers that pipeline many
decodes use :func:`decode_async` and :meth:`DecodeJob.check`.
"""

from __future__ import annotations

import numpy as np

from fsstgpu.device import get_cupy, on_arrays_device
from fsstgpu.errors import BatchDecodeError, CorruptDataError
from fsstgpu.gpu.arrays import (
    PIECE_BYTES,
    STAGING_BUFFERS,
    DeviceCompressedStringArray,
    upload_batch,
)
from fsstgpu.gpu.layout import DEFAULT_LENGTHS, HostBatch
from fsstgpu.gpu.strings import DeviceStringArray
from fsstgpu.kernels.bitplane import bitplane_unpack_offsets, error_message as lengths_error_message
from fsstgpu.kernels.driver import driver, memset_d8, read_int32s, stream_synchronize
from fsstgpu.kernels.fsst_decode import (
    PlannedDecode,
    error_message,
    launch_check_ends,
    launch_check_utf8,
    launch_decode,
    launch_offsets,
    starts_words,
)
from fsstgpu.kernels.host_flags import SLOT_INTS, flag_slots
from fsstgpu.kernels.loader import on_stream

__all__ = ["DecodeJob", "decode_async", "decompress_device"]

DEFAULT_CHUNK_BYTES = PIECE_BYTES
DEFAULT_BUFFERS = STAGING_BUFFERS


class DecodeJob:
    """A decode enqueued on a stream: its results and the device error flag not yet read."""

    def __init__(self, dev: DeviceCompressedStringArray, results: list, data, err, stream,
                 slot: int | None = None):
        self.dev = dev
        self.results = results
        self.data = data
        self.err = err
        self.stream = stream
        self.slot = slot  # the host slot the plan's kernel copies the flags into, if any

    def __del__(self):
        # dropped unchecked: its slot is reused once the kernel that writes it is done
        if getattr(self, "slot", None) is not None:
            try:  # (the event on the stream's device, the decode's)
                with on_arrays_device("DecodeJob", err=self.err):
                    done = get_cupy().cuda.Event(disable_timing=True)
                    done.record(self.stream)
                flag_slots().release_after(self.slot, done)
            except Exception:  # noqa: BLE001 (at interpreter exit CUDA may be gone)
                pass

    def check(self):
        """Wait for the decode (on its stream only); raise if the kernel found corrupt data.

        Returns a DeviceStringArray, or a list of them for a batch.

        Raises
        ------
        CorruptDataError
            One column: what the kernel found. A batch: :class:`~fsstgpu.BatchDecodeError`
            naming every bad column; its ``results`` keeps the good columns.
        """

        with on_arrays_device("DecodeJob.check", err=self.err):
            flags = self._flags()  # the one host sync of a decode
            bits, ncols = flags[0], len(self.dev.layout)
            failed = _corrupt_lengths(flags[1 : 1 + ncols])
            crossed = {k: error_message(b) for k, b in enumerate(flags[1 + ncols :]) if b}
            if (bits or failed or crossed) and not self.dev.is_batch:
                # (a split whose decode stopped marks no symbol starts: its own error comes first)
                raise CorruptDataError(failed[0] if failed else error_message(bits) if bits
                                       else crossed[0])
            if bits:
                failed = {**_failed_columns(self.dev, self.data, self.stream), **failed}
                if not failed:  # a flag no column's plain decode raises again (bit 64: the offsets
                    # scan stopped): any column's offsets may be unwritten, so none is good
                    failed = dict.fromkeys(range(len(self.dev.layout)), error_message(bits))
            failed = {**crossed, **failed}
            if failed:
                # an output column fails with any of its columns (joined ones: its row groups)
                bad = {self.dev.layout.output_of[k] for k in failed}
                good = [None if k in bad else r for k, r in enumerate(self.results)]
                raise BatchDecodeError(failed, good)
            self.dev.ends_checked = True  # checked now (or before): later decodes need not
            return self.results if self.dev.is_batch else self.results[0]


    def _flags(self) -> list[int]:
        """The flags once the stream's work is done: from the host slot the plan's kernel
        wrote (one stream sync), else read back."""
        if self.slot is None:
            return _read_flags(self.err, self.stream)
        stream_synchronize(self.stream.ptr)
        slot, self.slot = self.slot, None
        slots = flag_slots()
        flags = slots.read(slot, int(self.err.size))
        slots.release(slot)
        return flags


def _read_flags(err, stream) -> list[int]:
    """The device flags ``err`` once the stream's work is done: one copy and one stream sync
    through the driver (CuPy's ``get`` cost 23-49 us a call on the H200 host)."""
    if driver() is None:
        return err.get(stream=stream).tolist()
    cp = get_cupy()
    ptr = (stream if stream is not None else cp.cuda.get_current_stream()).ptr
    return read_int32s(err.data.ptr, int(err.size), ptr)


def _error_flags(cp, layout: HostBatch, check_ends: bool):
    """The device flags of a decode: [0] the decode kernel's bits, [1 + k] column k's lengths
    (bit-plane packed lengths are checked as they are unpacked), and with ``check_ends``
    [1 + n + k] column k's string ends (of n columns)."""
    return cp.zeros((2 if check_ends else 1) * len(layout) + 1, dtype=cp.int32)


def _corrupt_lengths(flags) -> dict:
    """{column: message} for the columns whose packed lengths were flagged."""
    if not any(flags):
        return {}

    return {k: f"string lengths: {lengths_error_message(int(b))}"
            for k, b in enumerate(flags) if b}


def _up16(nbytes: int) -> int:
    """``nbytes`` rounded up to 16: where the next buffer of one allocation starts."""
    return -(-nbytes // 16) * 16


def _allocate(cp, layout: HostBatch, *, out=None, fill=None):
    """The output buffers of a batch: data (``out`` when given) and the offsets of every
    column, in one allocation."""
    if out is not None:
        data = out[: layout.total]
        offsets = cp.empty(layout.offsets_nbytes, dtype=cp.uint8)
    else:
        at = _up16(layout.total)
        both = cp.empty(at + layout.offsets_nbytes, dtype=cp.uint8)
        data, offsets = both[: layout.total], both[at:]
    if fill is not None:
        data.fill(fill)
    return data, offsets


def _view(cp, memptr, start: int, count: int, dtype):
    """``count`` items of ``dtype`` from byte ``start`` past CuPy pointer ``memptr``: an array
    made on the pointer (1.5 us on the H200 host; a slice took 2.9, a view 1.1 more)."""
    return cp.ndarray((count,), dtype, memptr=memptr + start)


def _views(layout: HostBatch, dev, data, offsets) -> list:
    """One DeviceStringArray per output column (a column, or a run of joined ones): views of
    the batch's buffers (the validity bitmaps are the uploaded ones: Arrow buffers are
    immutable)."""
    cp = get_cupy()
    results = []
    for col in layout.outputs:
        bitmap = None
        if col.validity_start >= 0:
            bitmap = _view(cp, dev.validity.data, col.validity_start, (col.length + 7) // 8,
                           cp.uint8)
        results.append(DeviceStringArray(
            col.type, col.length,
            _view(cp, offsets.data, col.offsets_byte, col.length + 1, col.offsets_dtype),
            _view(cp, data.data, col.out_start, col.total, cp.uint8), bitmap, col.null_count,
            col.chunk_lengths))
    return results


def _failed_columns(dev, data, stream) -> dict:
    """Decode each column of a batch alone to find which are corrupt: {index: message}."""

    cp = get_cupy()
    layout = dev.layout
    errs = cp.zeros(len(layout), dtype=cp.int32)
    with on_stream(stream):
        for k in range(len(layout)):
            s = layout.column_splits(k)
            launch_decode(dev.codes, dev.ncodes, dev.split_codes[s.start : s.stop + 1],
                          dev.split_out[s.start : s.stop + 1], dev.split_table[s],
                          dev.tab_sym, dev.tab_len, dev.ntables, data, layout.total,
                          errs[k : k + 1], stream=stream)
    bits = errs.get(stream=stream)
    return {k: error_message(int(b)) for k, b in enumerate(bits) if b}


def _launch_offsets(dev, offsets, stream, err) -> None:
    """Every column's Arrow offsets into ``offsets``: one scan of the narrow lengths (its rare
    failure in ``err[0]``, the decode's word), or one fused unpack + scan per column of bit-plane
    packed lengths (flagging corrupt ones in ``err[1 + k]``); all read with the decode's."""

    layout = dev.layout
    if layout.lengths_layout == "narrow":
        launch_offsets(dev.lengths, offsets, *dev.scan_args, err[:1], stream=stream)
        return

    for k, col in enumerate(layout.columns):
        if col.length == 0:  # nothing to unpack: the one offset is 0
            offsets[col.offsets_byte : col.offsets_byte + col.offsets_dtype.itemsize].fill(0)
            continue
        bitplane_unpack_offsets(layout.column_packed_lengths(dev.lengths, k), offsets,
                                byte_offset=col.offsets_byte,
                                wide=col.offsets_dtype.itemsize == 8, count=col.length,
                                dtype=layout.packed_dtypes[k], stream=stream, check=False,
                                err=err[1 + k : 2 + k])


def _planned(dev: DeviceCompressedStringArray) -> PlannedDecode | None:
    """The device column's decode, planned on first use and kept with it; None where the
    driver is not at hand or the lengths are bit-plane packed (one launch per column: the
    launchers' way)."""
    if dev.layout.lengths_layout != "narrow" or driver() is None:
        return None
    plan = dev.planned_decode
    if plan is None:
        layout = dev.layout  # an uploaded column's host layout has the split positions
        host = ((lambda: (layout.split_codes, layout.split_table))
                if isinstance(layout, HostBatch) else None)
        plan = PlannedDecode(dev.codes, dev.ncodes, dev.split_codes, dev.split_out,
                             dev.split_table, dev.tab_sym, dev.tab_len, dev.ntables, dev.total,
                             dev.lengths, *dev.scan_args, host_splits=host)
        dev.planned_decode, dev.call_geometry = plan, None
    return plan


def _call_geometry(layout: HostBatch, plan: PlannedDecode, with_data: bool) -> tuple:
    """Where a planned call's buffers lie in its one allocation: (offsets, scratch, flags, bytes,
    flags count, words the plan zeroes), the data first when ``with_data``."""
    at_offsets = _up16(layout.total) if with_data else 0
    at_scratch = _up16(at_offsets + layout.offsets_nbytes)
    at_err = at_scratch + plan.scratch_nbytes
    nflags = 1 + len(layout)
    return (at_offsets, at_scratch, at_err, at_err + 4 * nflags, nflags,
            plan.scratch_nbytes // 4 + nflags)


def _decode_planned(cp, dev, plan: PlannedDecode, stream, fill, out) -> DecodeJob:
    """decode_async through the plan: one allocation (output, offsets, scratch and flags), a
    host slot for the flags, and the plan's call (a memset of the scratch and flags, then the
    decode and the scan in one kernel, which copies the flags into the slot: one graph
    replayed where the driver has graphs); no CuPy kernel call."""
    layout = dev.layout
    if out is None:  # the geometry is the plan's: worked out once
        geometry = dev.call_geometry
        if geometry is None:
            geometry = dev.call_geometry = _call_geometry(layout, plan, True)
    else:
        geometry = _call_geometry(layout, plan, False)
    at_offsets, at_scratch, at_err, nbytes, nflags, zero_words = geometry
    # the pool's memory itself (an array on it cost 2 us more), on the stream the call runs on
    if stream is None:
        stream = cp.cuda.get_current_stream()
        mem = cp.cuda.alloc(nbytes)
    else:
        with stream:
            mem = cp.cuda.alloc(nbytes)
    base = mem.ptr
    at_data = base if out is None else out.data.ptr
    if fill is not None and layout.total:
        memset_d8(at_data, fill, layout.total, stream.ptr)
    slots = flag_slots()
    slot = slots.acquire() if nflags <= SLOT_INTS else None
    # the scan's status words and the error flags zeroed by the plan, in one memset (they are
    # adjacent), then its launch; the arrays on the buffers are made while the GPU works
    plan(at_data, base + at_offsets, base + at_scratch, base + at_err, stream.ptr,
         zero_words=zero_words,
         flags_to=0 if slot is None else slots.device_address(slot), nflags=nflags)
    data = _view(cp, mem if out is None else out.data, 0, layout.total, cp.uint8)
    offsets = _view(cp, mem, at_offsets, layout.offsets_nbytes, cp.uint8)
    err = _view(cp, mem, at_err, nflags, cp.int32)
    return DecodeJob(dev, _views(layout, dev, data, offsets), data, err, stream, slot)


def _code_starts(dev: DeviceCompressedStringArray):
    """The device's marks of where strings' codes start (a bitmap of the codes, for the
    columns with stored code offsets not known good: ``HostBatch.code_starts``), or None."""
    has_marks = dev.layout.sections["code_starts"][2][0] > 0
    return dev.layout.section(dev.meta, "code_starts") if has_marks else None


def decode_async(dev: DeviceCompressedStringArray, stream=None, *, fill: int | None = None,
                 out=None) -> DecodeJob:
    """Enqueue the decode of ``dev`` (one column or a batch) on ``stream`` without waiting.

    ``fill`` fills the output with that byte first (tests: bytes the kernel misses show);
    ``out`` reuses a contiguous uint8 buffer of at least ``dev.total`` bytes (benchmarks). The
    work runs on the device ``dev`` lies on (``out`` must lie there too), not necessarily the
    current one.

    Examples
    --------
    >>> import fsstgpu, pyarrow as pa
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     from fsstgpu.gpu.decode import decode_async
    ...     job = decode_async(fsstgpu.to_device(fsstgpu.compress(pa.array(["a", "b"]))))
    ...     assert job.check().to_arrow().to_pylist() == ["a", "b"]
    """

    cp = get_cupy()
    with on_arrays_device("decode_async", codes=dev.codes, out=out):
        # the kernel writes by pointer: both paths need room, one byte per element, no strides
        if out is not None and (out.dtype != cp.uint8 or out.size < dev.total
                                or not out.flags.c_contiguous):
            raise ValueError(f"out must be a contiguous uint8 buffer of at least {dev.total} "
                             "bytes")
        # Until a column is known to decode string by string, the decode also marks where its
        # symbols start and a second kernel checks every string's end against them (and, where
        # the column keeps stored code offsets, every string's start against its marked code
        # start), a third a text column's bytes as UTF-8 (the CPU decoder's checks: one blob,
        # one answer); the planned kernel runs the scan beside the decode, so it takes checked
        # columns only.
        check = not dev.ends_checked
        plan = None if check else _planned(dev)
        if plan is not None:
            return _decode_planned(cp, dev, plan, stream, fill, out)
        layout = dev.layout
        with on_stream(stream):
            data, offsets = _allocate(cp, layout, out=out, fill=fill)
            err = _error_flags(cp, layout, check)
            _launch_offsets(dev, offsets, stream, err)
            starts = cp.zeros(starts_words(dev.total), cp.uint64) if check else None
            # columns with stored code offsets: where their marked codes' output starts
            marks = _code_starts(dev) if check else None
            mapped = None if marks is None else cp.zeros(starts_words(dev.total), cp.uint64)
            launch_decode(dev.codes, dev.ncodes, dev.split_codes, dev.split_out, dev.split_table,
                          dev.tab_sym, dev.tab_len, dev.ntables, data, dev.total, err[:1],
                          stream=stream, starts=starts, code_starts=marks, mapped=mapped)
            if check:
                col_err = err[1 + len(layout) :]
                launch_check_ends(starts, data, dev.total, offsets, int(layout.col_first[-1]),
                                  *dev.scan_args, col_err, stream=stream, mapped=mapped)
                launch_check_utf8(data, layout.utf8_ranges, col_err, stream=stream,
                                  device_table=layout.section(dev.meta, "utf8_ranges"))
        # the per-column views are made while the GPU works (with many columns it takes a while)
        return DecodeJob(dev, _views(layout, dev, data, offsets), data, err, stream)


def decompress_device(carr, stream=None, *, chunk_bytes: int = DEFAULT_CHUNK_BYTES,
                      nbuffers: int = DEFAULT_BUFFERS, fill: int | None = None,
                      lengths: str = DEFAULT_LENGTHS, joined=None):
    """Decompress one column or a batch into Arrow layout in device memory.

    Parameters
    ----------
    carr : CompressedStringArray, a list of them, or a DeviceCompressedStringArray
        Host columns are uploaded while their layout is built; a device column or batch
        (:func:`fsstgpu.to_device`) is decoded where it is.
    stream : cupy.cuda.Stream, optional
        The result is ready on this stream (default: the current stream) when this returns.
    chunk_bytes, nbuffers : int
        Host columns with pageable codes: the size of a staged piece of the codes and the pinned
        staging buffers in flight (filled by pool threads side by side).
    fill : int, optional
        Fill the output with this byte before decoding (tests).
    lengths : {"auto", "narrow", "bitplane"}
        Host columns: how the string lengths travel (:func:`fsstgpu.to_device`).
    joined : list of int, optional
        A list of host columns: counts of consecutive columns (of one type) decoded as one
        output column each, its chunks theirs (a file's row groups), with no join after the
        decode (:class:`~fsstgpu.gpu.layout.HostBatch`).

    Returns
    -------
    DeviceStringArray, or a list of them (one per column, or per run of ``joined``) for a list
    or a batch.

    Raises
    ------
    CorruptDataError
        When the host checks or the kernel find the data inconsistent; for a batch, a
        :class:`~fsstgpu.BatchDecodeError` naming the bad columns and keeping the others.
    DeviceError
        Without a usable GPU.

    Examples
    --------
    >>> import fsstgpu, pyarrow as pa
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     col = pa.array(["x", None, "yz"], pa.large_string())
    ...     assert fsstgpu.decompress_device(fsstgpu.compress(col)).to_arrow().equals(col)
    """
    if isinstance(carr, DeviceCompressedStringArray):
        if joined is not None:
            raise ValueError("joined= takes host columns (a device column keeps the layout "
                             "to_device gave it)")
        return decode_async(carr, stream, fill=fill).check()
    import cupyx

    if chunk_bytes < 1 or nbuffers < 1:
        raise ValueError("chunk_bytes and nbuffers must be positive")
    single = not isinstance(carr, (list, tuple))
    carrs = [carr] if single else list(carr)
    pinned = lambda n: cupyx.empty_pinned((n,), dtype=np.uint8)  # noqa: E731
    # the codes upload while the layout is built, then decode as a device column (the decode
    # takes a few percent of the upload's time: BENCHMARKS.md section 32)
    main = stream if stream is not None else get_cupy().cuda.get_current_stream()
    if joined is not None and single:
        raise ValueError("joined= takes a list of columns")
    dev = upload_batch(carrs, main, lengths=lengths, allocate=pinned, piece_bytes=chunk_bytes,
                       nbuffers=nbuffers, joined=joined)
    dev.is_batch = not single
    return decode_async(dev, main, fill=fill).check()
