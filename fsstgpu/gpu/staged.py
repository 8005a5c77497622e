"""Columns whose codes go to the GPU as soon as they are read, decoded later in one batch.

A whole-file device read (:func:`fsstgpu.formats.device_reader.read_to_device`) decodes every
row group of a column in one batch (one output column, one launch), so it cannot decode them as
they arrive; holding their compressed chunks until then made its host memory grow with the file.
:func:`stage` uploads a checked column's codes the moment it is read and keeps on the host only
what the batch's layout needs of it (:class:`StagedColumn`: split points, lengths in their
narrowest type, validity, tables: a few bytes a string, where the codes and their int64 offsets
took tens; of a column not known good, a bit a code marking where its strings' codes start,
which the decode checks as the CPU decoder checks those offsets). :func:`decode_staged` lays the
staged columns out (:class:`~fsstgpu.gpu.layout.HostBatch`), gathers their codes into the
batch's one buffer on the device (a device copy at several times the bus's speed) and decodes
them in one launch.

>>> import numpy as np, pyarrow as pa, fsstgpu
>>> from fsstgpu.gpu.staged import StagedColumn
>>> carr = fsstgpu.compress(pa.array(["ab", None, "cde"]))
>>> staged = StagedColumn(carr, codes=carr.codes)  # stage() passes the device copy
>>> staged.lengths.dtype, len(staged.codes) == len(carr.codes)
(dtype('uint8'), True)
"""

from __future__ import annotations

import numpy as np

from fsstgpu.device import get_cupy
from fsstgpu.gpu.arrays import DeviceCompressedStringArray, padded_codes, upload_codes
from fsstgpu.gpu.decode import decode_async
from fsstgpu.gpu.layout import HostBatch, checks_code_starts, narrowed
from fsstgpu.kernels.loader import on_stream
from fsstgpu.limits import flag
from fsstgpu.native import mark_code_starts

__all__ = ["StagedColumn", "decode_staged", "stage"]


class StagedColumn:
    """What a batch's layout needs of a checked CompressedStringArray, its codes elsewhere.

    ``HostBatch`` takes it in place of the column: the same attribute names, the lengths in
    the narrowest unsigned dtype that holds them (the batch narrows them again to its own), no
    code offsets (the decode reads split points, not strings): where the column is not known
    good and had them, ``code_starts`` marks where each string's codes start (a bit a code,
    LSB first), else it is None. ``codes`` is the device copy :func:`stage` made (any array
    with a length will do for the layout).

    Examples
    --------
    >>> import pyarrow as pa, fsstgpu
    >>> from fsstgpu.gpu.layout import HostBatch
    >>> from fsstgpu.gpu.staged import StagedColumn
    >>> carr = fsstgpu.compress(pa.array(["ab", "cd"]))
    >>> a, b = HostBatch([carr]), HostBatch([StagedColumn(carr, codes=carr.codes)])
    >>> bool((a.lengths == b.lengths).all() and (a.split_out == b.split_out).all())
    True
    """

    __slots__ = ("type", "length", "null_count", "chunk_lengths", "uncompressed_bytes",
                 "validity", "lengths", "split_codes", "split_out", "split_table", "tables",
                 "codes", "packed_lengths", "validated", "code_starts")

    def __init__(self, carr, *, codes):
        carr.validate(full=False)  # what the layout and the kernel rely on (once per column)
        self.type, self.length, self.null_count = carr.type, carr.length, carr.null_count
        self.chunk_lengths, self.uncompressed_bytes = carr.chunk_lengths, carr.uncompressed_bytes
        self.validity, self.tables = carr.validity, carr.tables
        self.split_codes, self.split_out = carr.split_codes, carr.split_out
        self.split_table = carr.split_table
        self.lengths = narrowed(carr.lengths)
        self.codes = codes
        self.packed_lengths = None  # the batch's lengths travel narrow (joined columns need it)
        self.validated = carr.validated  # else the decode checks the string ends
        self.code_starts = None  # ... and, where it had stored code offsets, the code starts
        if checks_code_starts(carr):
            self.code_starts = np.zeros(-(-len(carr.codes) // 8), np.uint8)
            mark_code_starts(carr.code_offsets, self.code_starts)

    def validate(self, *, full: bool = False) -> None:
        """Nothing left to check: the column was checked when staged (``full=False``); the
        codes are checked by the kernel as it decodes them."""
        if flag(full, "full"):
            raise TypeError("a staged column's codes are on the device: it has no full check")


def stage(carr, stream=None, *, device: int | None = None) -> StagedColumn:
    """Upload ``carr``'s codes now, on ``stream`` of GPU ``device`` (default: the current
    one; a reading thread passes its caller's), and keep only the rest of what its decode
    needs: the host's codes and code offsets may go.

    The host's codes have been read when this returns
    (:func:`~fsstgpu.gpu.arrays.upload_codes`).

    Examples
    --------
    >>> import fsstgpu, pyarrow as pa
    >>> from fsstgpu.gpu.staged import decode_staged, stage
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     staged = [stage(fsstgpu.compress(pa.array(s))) for s in (["a"], ["b", "c"])]
    ...     out = decode_staged(staged, joined=[2])
    ...     assert out[0].to_arrow().to_pylist() == ["a", "b", "c"]
    """
    cp = get_cupy()
    device = cp.cuda.Device().id if device is None else device
    with cp.cuda.Device(device):
        where = stream if stream is not None else cp.cuda.get_current_stream()
        host = np.ascontiguousarray(carr.codes, dtype=np.uint8)
        with on_stream(where):
            codes = cp.empty(host.size, dtype=cp.uint8)
        upload_codes(host, codes, where, device)
    return StagedColumn(carr, codes=codes)


def decode_staged(staged: list, stream=None, *, joined=None) -> list:
    """Decode staged columns (:func:`stage`) in one batch, as
    :func:`fsstgpu.decompress_device` decodes a list of host columns.

    Their codes are gathered into the batch's buffer by device copies and let go (each staged
    column's ``codes`` becomes None), so the device holds them once when the output is
    allocated.

    Returns
    -------
    list of DeviceStringArray
        One per column, or per run of ``joined`` (:class:`~fsstgpu.gpu.layout.HostBatch`).

    Raises
    ------
    BatchDecodeError
        Naming the corrupt columns by index, keeping the others.

    Examples
    --------
    >>> import fsstgpu, pyarrow as pa
    >>> from fsstgpu.gpu.staged import decode_staged, stage
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     [col] = decode_staged([stage(fsstgpu.compress(pa.array(["x", None])))])
    """
    cp = get_cupy()
    import cupyx

    staged = list(staged)
    if any(s.codes is None for s in staged):
        raise ValueError("a staged column can be decoded once (its codes were let go)")
    main = stream if stream is not None else cp.cuda.get_current_stream()
    layout = HostBatch(staged, lengths="narrow", joined=joined,
                       allocate=lambda n: cupyx.empty_pinned((n,), dtype=np.uint8))
    codes = padded_codes(layout.ncodes, main)
    with on_stream(main):
        for column, col in zip(staged, layout.columns, strict=True):
            if col.ncodes:
                cp.cuda.runtime.memcpyAsync(codes.data.ptr + col.code_start,
                                            column.codes.data.ptr, col.ncodes,
                                            cp.cuda.runtime.memcpyDeviceToDevice, main.ptr)
    layout.codes = []
    for column in staged:  # back to CuPy's pool, in the stream's order
        column.codes = None
    dev = DeviceCompressedStringArray(layout, main, codes=codes)
    dev.is_batch = True
    return decode_async(dev, main).check()
