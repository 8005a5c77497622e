"""Compressed string columns in GPU memory, and their upload.

:func:`to_device` checks a :class:`~fsstgpu.CompressedStringArray` on the host (its structure, in
O(strings); the decode kernel checks the codes) and uploads it once, giving a
:class:`DeviceCompressedStringArray` that :func:`fsstgpu.decompress_device` can decode any number
of times into a :class:`~fsstgpu.gpu.strings.DeviceStringArray` (the decoded column, Arrow's
buffers as CuPy arrays). Everything the GPU needs (split points, narrowed lengths, tables)
already travels with the column: nothing is derived on the way.

Peak device memory of a decode: the compressed column (codes + split points + lengths + validity)
plus the output (data + offsets + validity).
"""

from __future__ import annotations

import numpy as np

from fsstgpu.arrays import CompressedStringArray
from fsstgpu.device import get_cupy
from fsstgpu.gpu.layout import DEFAULT_LENGTHS, HostBatch, check_lengths_layout
from fsstgpu.kernels.driver import driver, memset_d8
from fsstgpu.kernels.fsst_decode import padded_size
from fsstgpu.kernels.loader import on_stream
from fsstgpu.parallel import shared_pool, upload_pool

__all__ = ["DeviceCompressedStringArray", "padded_codes", "to_device", "upload_batch",
           "upload_codes"]


class DeviceCompressedStringArray:
    """One compressed column, or a batch of them, in device memory (see :func:`to_device`).

    The columns are laid out as :class:`fsstgpu.gpu.layout.HostBatch` describes, so that one
    launch decodes all of them; :func:`fsstgpu.decompress_device` returns one DeviceStringArray
    per column (a list when ``to_device`` was given a list).

    Attributes
    ----------
    layout : HostBatch
        The host-side plan (column positions; the host arrays are not kept alive by it beyond
        what ``columns`` needs).
    codes : cupy.ndarray of uint8
        Every column's codes, padded past ``ncodes`` so that the kernel's loads stay in bounds.
    split_codes, split_out : cupy.ndarray of int64
    split_table : cupy.ndarray of uint16
    tab_sym : cupy.ndarray of uint64, shape (ntables, 256)
    tab_len : cupy.ndarray of uint8, shape (ntables, 256)
    lengths : cupy.ndarray of an unsigned dtype
        Every column's lengths, concatenated.
    validity : cupy.ndarray of uint8 or None
        The bitmaps of the columns with nulls, concatenated.
    scan_args : tuple of cupy.ndarray
        ``col_first``, ``col_base``, ``col_obyte``, ``col_wide`` for the offsets scan.
    planned_decode : fsstgpu.kernels.fsst_decode.PlannedDecode or None
        The decode's launches, planned by the first decode that can use them and replayed by
        every later one (:mod:`fsstgpu.gpu.decode`).
    call_geometry : tuple or None
        Where the planned decode's buffers lie in a call's one allocation, worked out by its
        first call (:mod:`fsstgpu.gpu.decode`).
    encoded : dict or None
        For a column :func:`fsstgpu.compress_device` made (its layout a
        :class:`fsstgpu.gpu.layout.DeviceLayout`): its device code offsets, table and split size,
        which :meth:`to_host` needs besides the decode's arrays; None for an uploaded column.
    ends_checked : bool
        Whether every string is known to decode on its own: the layout is ``trusted``, or a
        decode that checked the string ends passed. Until then decodes take the checked kernels
        (not the planned one).

    Examples
    --------
    >>> import pyarrow as pa, fsstgpu
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     dev = fsstgpu.to_device([fsstgpu.compress(pa.array(s)) for s in (["a"], ["b", "c"])])
    ...     assert len(dev) == 2 and dev.length == 3 and dev.total == 3
    ...     assert [c.to_arrow().to_pylist() for c in fsstgpu.decompress_device(dev)] == [
    ...         ["a"], ["b", "c"]]
    """

    def __init__(self, layout: HostBatch, stream=None, *, device_parts=None, codes=None):
        cp = get_cupy()
        self.layout = layout
        self.is_batch = True
        self.planned_decode = None
        self.call_geometry = None
        self.encoded = None  # compress_device's: what to_host needs besides the decode's arrays
        self.ends_checked = layout.trusted
        if device_parts is not None:  # made on the device (a DeviceLayout): nothing to upload
            self.codes, self.meta = device_parts
        else:
            with on_stream(stream):
                if codes is not None:  # uploaded already (upload_batch), padding zeroed
                    self.codes = codes
                else:
                    self.codes = padded_codes(layout.ncodes, stream)
                    for col, codes in zip(layout.columns, layout.codes, strict=True):
                        if col.ncodes:
                            self.codes[col.code_start : col.code_start + col.ncodes].set(
                                codes, stream=stream)
                # everything else in one copy: split points, tables, lengths, validity, scan
                self.meta = upload(cp, layout.meta, stream)
        for name in ("split_codes", "split_out", "split_table", "tab_sym", "tab_len", "lengths"):
            setattr(self, name, layout.section(self.meta, name))
        has_validity = layout.sections["validity"][2][0] > 0
        self.validity = layout.section(self.meta, "validity") if has_validity else None
        self.scan_args = tuple(layout.section(self.meta, name) for name in (
            "col_first", "col_base", "col_obyte", "col_wide"))

    def to_host(self, stream=None) -> CompressedStringArray:
        """The column in host memory, as :func:`fsstgpu.compress` makes it (blobs, the extension
        type and files take it): for a column :func:`fsstgpu.compress_device` made. Its arrays
        lie in pinned host memory from CuPy's pinned memory pool, which keeps what they release
        for the next call (``cupy.get_default_pinned_memory_pool().free_all_blocks()`` gives it
        back).

        Raises
        ------
        TypeError
            For a column uploaded by :func:`to_device` (its host column is the one uploaded).

        Examples
        --------
        >>> import fsstgpu, pyarrow as pa
        >>> if fsstgpu.gpu_available():  # doctest: +SKIP
        ...     col = pa.array(["ab", None, "abc"])
        ...     t = fsstgpu.train(col)
        ...     assert fsstgpu.compress_device(col, t).to_host().equals(
        ...         fsstgpu.compress(col, table=t))
        """
        if self.encoded is None:
            raise TypeError("to_host() is for columns compress_device made; this one was "
                            "uploaded from a host column")
        cp = get_cupy()
        col = self.layout.columns[0]
        with on_stream(stream):
            current = cp.cuda.get_current_stream()
            # every array into pinned memory from CuPy's pool, copied side by side, one wait: a
            # pageable copy back runs at one core's speed into fresh pages, which the device's
            # host first touches at 0.3-0.6 GB/s (BENCHMARKS.md section 63), where the pool's
            # buffers are reused call after call; the lengths widened on the device
            parts = [self.codes[: self.ncodes], self.encoded["code_offsets"],
                     self.lengths.astype(cp.int64), self.validity, self.split_codes,
                     self.split_out, self.split_table]
            host = [None if part is None else _download(part, current) for part in parts]
            current.synchronize()
        codes, code_offsets, lengths, validity, split_codes, split_out, split_table = host
        carr = CompressedStringArray(
            type=col.type, length=col.length, tables=self.encoded["tables"],
            block_starts=self.encoded.get("block_starts", np.array([0, col.length], np.int64)),
            codes=codes,
            code_offsets=code_offsets, lengths=lengths, validity=validity,
            null_count=col.null_count, split_size=self.encoded["split_size"],
            split_codes=split_codes, split_out=split_out, split_table=split_table,
            chunk_lengths=col.chunk_lengths)
        carr.validate(full=False)
        return carr

    @property
    def columns(self):
        """Where each column lives (:class:`fsstgpu.gpu.layout.ColumnLayout`)."""
        return self.layout.columns

    @property
    def ncodes(self) -> int:
        return self.layout.ncodes

    @property
    def total(self) -> int:
        """Decompressed bytes of every column together."""
        return self.layout.total

    @property
    def length(self) -> int:
        """Strings of every column together."""
        return int(self.layout.col_first[-1])

    @property
    def nsplits(self) -> int:
        return int(self.split_table.shape[0])

    @property
    def ntables(self) -> int:
        return self.layout.ntables

    @property
    def nbytes(self) -> int:
        """Device bytes held (codes with padding, split points, tables, lengths, validity)."""
        return int(self.codes.nbytes) + int(self.meta.nbytes)

    def __len__(self) -> int:
        return len(self.layout.columns)

    def __repr__(self) -> str:
        return (f"DeviceCompressedStringArray({len(self)} column(s), {self.length} strings, "
                f"{self.ncodes} codes, {self.nsplits} splits)")


def _zero(cp, buf, start: int, stream) -> None:
    """Zero ``buf[start:]`` on ``stream``: one driver memset where the driver is at hand (a
    CuPy fill is a kernel launch and a slice)."""
    if driver() is None:
        buf[start:].fill(0)
        return
    where = stream if stream is not None else cp.cuda.get_current_stream()
    memset_d8(buf.data.ptr + start, 0, int(buf.nbytes) - start, where.ptr)


def padded_codes(ncodes: int, stream=None):
    """A device buffer for ``ncodes`` codes, on ``stream``, with the padding the decode
    kernel's loads reach past them zeroed.

    Examples
    --------
    >>> import fsstgpu
    >>> from fsstgpu.gpu.arrays import padded_codes
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     assert padded_codes(10).size >= 10
    """
    cp = get_cupy()
    with on_stream(stream):
        codes = cp.empty(padded_size(ncodes), dtype=cp.uint8)
        _zero(cp, codes, ncodes, stream)
    return codes


def upload_codes(host: np.ndarray, codes, stream, device: int) -> None:
    """``codes[:host.size] = host`` (a uint8 host array) on ``stream`` of GPU ``device``,
    ``host`` read by the time this returns: pageable codes of :data:`STAGE_BYTES` or more
    through pinned staging buffers, smaller ones in one copy (CUDA reads pageable memory into
    its own buffers before the call returns), pinned ones waited for (the copy engine reads
    them later).

    Examples
    --------
    >>> import numpy as np, fsstgpu
    >>> from fsstgpu.gpu.arrays import upload_codes
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     import cupy as cp
    ...     dev = cp.empty(3, cp.uint8)
    ...     s = cp.cuda.get_current_stream()
    ...     upload_codes(np.arange(3, dtype=np.uint8), dev, s, 0)
    """
    pinned = host.size > 0 and _is_pinned(host)
    if host.size >= STAGE_BYTES and not pinned:
        _copy_parts_staged(device, codes.data.ptr, [host], stream.ptr, PIECE_BYTES,
                           STAGING_BUFFERS)
    else:
        _copy_parts(device, codes.data.ptr, [host], stream.ptr)
        if pinned:
            stream.synchronize()


#: codes from which upload_batch overlaps their upload with the layout (one of the two on a
#: worker thread): below it the handoff costs more than the copy it hides (H200 host: 282 KB
#: of codes, 41 us to upload, ran 15-30 us slower handed off; 1.7 MB, 165 us, 150-210 us
#: faster)
OVERLAP_BYTES = 1 << 20

#: pageable codes from which upload_batch stages them (:func:`_copy_parts_staged`: two pieces or
#: more), the size of a staged piece, and the pinned buffers in flight. H200 host, host column
#: call (BENCHMARKS.md section 32): pieces of 4 MiB x 8 took a 64 MiB column from 4.0 to 2.6 ms
#: and x 16 were as fast or faster from 32 MiB to 1 GiB; pieces of 1 MiB or less lost to a plain
#: pageable upload (each piece's handoff costs more than its copy), as did staging one piece
STAGE_BYTES = 8 << 20
PIECE_BYTES = 4 << 20
STAGING_BUFFERS = 16


def upload_batch(carrs, stream=None, *, lengths: str = DEFAULT_LENGTHS, allocate=None,
                 piece_bytes: int = PIECE_BYTES, nbuffers: int = STAGING_BUFFERS,
                 joined=None) -> DeviceCompressedStringArray:
    """``DeviceCompressedStringArray(HostBatch(carrs), stream)``, with the codes' upload and the
    layout overlapped: a worker thread builds the layout while this one copies the codes, or,
    for staged codes, copies them while this one builds it.

    The codes are plain bytes whatever the columns hold, so sending them before the columns are
    checked is safe: a column the layout refuses raises here once the copies have been
    enqueued. Columns whose codes are not one contiguous uint8 array are laid out first, then
    uploaded (the constructor's way), as are codes under :data:`OVERLAP_BYTES`. Pageable codes
    of :data:`STAGE_BYTES` or more are staged: pool threads copy pieces of ``piece_bytes`` into
    ``nbuffers`` pinned buffers side by side, each uploaded as soon as it is full (a pageable
    upload runs at one core's copy speed). ``joined``: as for
    :class:`~fsstgpu.gpu.layout.HostBatch`.

    Examples
    --------
    >>> import fsstgpu, pyarrow as pa
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     from fsstgpu.gpu.arrays import upload_batch
    ...     dev = upload_batch([fsstgpu.compress(pa.array(["ab", "cd"]))])
    ...     assert fsstgpu.decompress_device(dev)[0].to_arrow().to_pylist() == ["ab", "cd"]
    """
    cp = get_cupy()
    carrs = list(carrs)
    parts = [c.codes for c in carrs]
    plain = all(isinstance(p, np.ndarray) and p.dtype == np.uint8 and p.ndim == 1
                and p.flags.c_contiguous for p in parts)
    ncodes = sum(p.size for p in parts) if plain else 0
    if ncodes < OVERLAP_BYTES:
        return DeviceCompressedStringArray(
            HostBatch(carrs, lengths=lengths, allocate=allocate, joined=joined), stream)
    where = stream if stream is not None else cp.cuda.get_current_stream()
    codes = padded_codes(ncodes, where)
    staged = ncodes >= STAGE_BYTES and not all(_is_pinned(p) for p in parts if p.size)
    device = cp.cuda.Device().id
    if not staged:
        return _copy_here(cp, carrs, parts, codes, where, device, lengths, allocate, joined)
    pending = upload_pool().submit(_copy_parts_staged, device, codes.data.ptr, parts, where.ptr,
                                   max(1, piece_bytes), max(1, nbuffers))
    try:
        layout = HostBatch(carrs, lengths=lengths, allocate=allocate, joined=joined)
    except BaseException:
        pending.exception()  # the copies enqueued (or failed) first; the layout's error wins
        raise
    pending.result()  # the copies are enqueued: the decode launched next follows them
    return DeviceCompressedStringArray(layout, where, codes=codes)


def _copy_here(cp, carrs, parts, codes, where, device, lengths, allocate, joined):
    """upload_batch's codes below :data:`STAGE_BYTES` (or pinned): the layout handed to a
    worker and the codes copied by this thread. A pageable copy holds the calling thread for its
    whole length with the GIL released, so the worker, already woken, takes the GIL at once and
    builds the layout meanwhile; a copy handed to a worker instead waited for the GIL until the
    layout's Python let it go (70-110 us after its submit, BENCHMARKS.md section 55). H100,
    median of 100 calls, six interleaved pairs (section 62): a 16 MiB host column 827-1010 ->
    830-862 us; 4 MiB the same (425-482 against 433-506)."""
    pending = upload_pool().submit(_layout_on, device, carrs, lengths, allocate, joined)
    try:
        _copy_parts(device, codes.data.ptr, parts, where.ptr)
    except BaseException:
        pending.exception()  # the layout finished (or failed) first; the copy's error wins
        raise
    return DeviceCompressedStringArray(pending.result(), where, codes=codes)


def _layout_on(device: int, carrs, lengths, allocate, joined) -> HostBatch:
    """HostBatch of ``carrs`` on a worker thread, with ``device`` current (its pinned buffer)."""
    with get_cupy().cuda.Device(device):
        return HostBatch(carrs, lengths=lengths, allocate=allocate, joined=joined)


def _copy_parts(device_id: int, dst: int, parts, stream_ptr: int) -> None:
    """Enqueue the copies of ``parts`` (host arrays) one after another from device address
    ``dst`` on the stream (a worker thread: the copies release the GIL)."""
    cp = get_cupy()
    with cp.cuda.Device(device_id):
        for part in parts:
            if part.size:
                cp.cuda.runtime.memcpyAsync(dst, part.ctypes.data, part.size,
                                            cp.cuda.runtime.memcpyHostToDevice, stream_ptr)
            dst += part.size


def _piece_runs(parts, piece_bytes: int):
    """The parts' bytes, laid end to end, cut every ``piece_bytes``: per piece, its runs
    ``(part, lo, hi)`` in order."""
    pieces, runs, room = [], [], piece_bytes
    for part in parts:
        lo = 0
        while lo < part.size:
            hi = min(part.size, lo + room)
            runs.append((part, lo, hi))
            room -= hi - lo
            lo = hi
            if room == 0:
                pieces.append(runs)
                runs, room = [], piece_bytes
    if runs:
        pieces.append(runs)
    return pieces


def _copy_parts_staged(device_id: int, dst: int, parts, stream_ptr: int, piece_bytes: int,
                       nbuffers: int) -> None:
    """:func:`_copy_parts` through pinned staging: pool threads fill up to ``nbuffers`` pinned
    buffers with pieces of the parts side by side; each is uploaded once full, and refilled
    once its upload has read it."""
    import cupyx

    cp = get_cupy()
    pieces = _piece_runs(parts, piece_bytes)
    nbuf = min(nbuffers, len(pieces))
    with cp.cuda.Device(device_id):
        staging = [cupyx.empty_pinned((piece_bytes,), np.uint8) for _ in range(nbuf)]
        released = [None] * nbuf  # the event after the upload that last read each buffer
        pool = shared_pool()

        def fill(j):
            buf, at = staging[j % nbuf], 0
            if released[j % nbuf] is not None:
                released[j % nbuf].synchronize()
            for part, lo, hi in pieces[j]:
                np.copyto(buf[at : at + hi - lo], part[lo:hi])
                at += hi - lo
            return at

        stream = cp.cuda.ExternalStream(stream_ptr)
        pending = {j: pool.submit(fill, j) for j in range(nbuf)}
        done = None
        try:
            for j in range(len(pieces)):
                size = pending.pop(j).result()
                cp.cuda.runtime.memcpyAsync(dst, staging[j % nbuf].ctypes.data, size,
                                            cp.cuda.runtime.memcpyHostToDevice, stream_ptr)
                dst += size
                released[j % nbuf] = done = cp.cuda.Event(disable_timing=True)
                done.record(stream)
                if j + nbuf < len(pieces):
                    pending[j + nbuf] = pool.submit(fill, j + nbuf)
        finally:
            for job in pending.values():  # after a failure: no fill left writing
                if not job.cancel():
                    job.exception()
            # the staging buffers go back to CuPy's pinned pool, which does not know about
            # the stream: they must have been read before another upload can take them
            if done is not None:
                done.synchronize()


def _download(arr, stream) -> np.ndarray:
    """A host copy of the contiguous device array ``arr`` in pinned memory from CuPy's pool,
    enqueued on ``stream`` (not waited for)."""
    import cupyx

    out = cupyx.empty_pinned(arr.shape, arr.dtype)
    if arr.size:
        arr.get(stream=stream, out=out, blocking=False)
    return out


def _is_pinned(arr: np.ndarray) -> bool:
    """Whether ``arr``'s memory is pinned (page-locked) host memory CUDA knows."""
    cp = get_cupy()
    if arr.size == 0:
        return False
    try:
        attrs = cp.cuda.runtime.pointerGetAttributes(arr.ctypes.data)
    except Exception:  # pageable memory unknown to CUDA: older runtimes raise
        return False
    return getattr(attrs, "type", 0) in (1, 3)  # cudaMemoryTypeHost, cudaMemoryTypeManaged


def upload(cp, host: np.ndarray, stream):
    """A device copy of ``host`` enqueued on ``stream``."""
    dev = cp.empty(host.shape, dtype=host.dtype)
    if host.size:
        dev.set(np.ascontiguousarray(host), stream=stream)
    return dev


def to_device(carr, stream=None, *,
              lengths: str = DEFAULT_LENGTHS) -> DeviceCompressedStringArray:
    """Check the column(s) on the host and upload them once, for any number of decodes.

    Parameters
    ----------
    carr : CompressedStringArray, or a list of them
        A list is laid out as one batch: :func:`fsstgpu.decompress_device` then decodes every
        column in one launch and returns a list.
    stream : cupy.cuda.Stream, optional
        Stream for the copies (default: the current stream).
    lengths : {"auto", "narrow", "bitplane"}
        How the string lengths travel: in their narrowest unsigned dtype (scanned into offsets
        on the GPU), or bit-plane packed (unpacked into the offsets on the GPU in one kernel;
        packed on the host first unless the column has them packed already). ``"auto"``
        (default): packed when every column has them packed (read from a blob), else narrow.

    Raises
    ------
    CorruptDataError
        When the split points, lengths or tables are inconsistent (O(strings) checks; the
        kernel checks the codes).
    DeviceError
        Without a usable GPU.
    ValueError
        For a ``lengths`` that is none of the three (before the GPU is asked for).

    Examples
    --------
    >>> import fsstgpu, pyarrow as pa
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     dev = fsstgpu.to_device(fsstgpu.compress(pa.array(["ab", "cd"])))
    ...     assert fsstgpu.decompress_device(dev).to_arrow().to_pylist() == ["ab", "cd"]
    """
    check_lengths_layout(lengths)  # (a usage error says so on any machine)
    get_cupy()
    single = not isinstance(carr, (list, tuple))
    dev = upload_batch([carr] if single else carr, stream, lengths=lengths)
    dev.is_batch = not single
    return dev
