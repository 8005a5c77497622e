"""A host column's blocks encoded on the GPU (issue #25, for files): the twin of
:func:`fsstgpu.native.encode_blocks`, same arguments, same results byte for byte.

``compress_file(..., device="gpu")`` hands a :class:`GpuBlockEncoder` to the column API
(:func:`fsstgpu.columns.compress_column`'s ``encode``): the CPU still reads the file, plans the
blocks, trains their tables (the codec's design: tables are trained on the CPU), finds the
lengths, cuts and split points and writes the file; only the encode, the pass over every
string byte, moves to the GPU. Each call uploads the strings and their offsets, encodes every
block in one :func:`fsstgpu.kernels.fsst_encode.encode_on_device` (a table a block; greedy
longest match, so the codes of the compiled CPU encoder) and copies the codes and code offsets
back.
"""

from __future__ import annotations

import threading

import numpy as np

from fsstgpu.arrow_layout import is_non_decreasing
from fsstgpu.device import get_cupy, resolve_device
from fsstgpu.gpu.arrays import upload
from fsstgpu.kernels.fsst_encode import encode_on_device
from fsstgpu.kernels.loader import on_stream

__all__ = ["GpuBlockEncoder"]


class GpuBlockEncoder:
    """``encode(tables, data, offsets, block_starts) -> (codes, code_offsets)`` on the GPU.

    Parameters
    ----------
    stream : cupy.cuda.Stream, optional
        Where the copies and kernels go (default: a stream of each calling thread's own, so
        that columns encoded on several threads at once overlap). Every call runs on the GPU
        that was current when the encoder was made, whichever thread calls.
    fill : int, optional
        Poison the device codes buffer with this byte before the codes are written (tests).

    Raises
    ------
    DeviceError
        Without a usable GPU (when made).

    Examples
    --------
    >>> import fsstgpu, numpy as np
    >>> from fsstgpu import SymbolTable, native
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     from fsstgpu.gpu.block_encode import GpuBlockEncoder
    ...     args = ([SymbolTable([b"ab"]), SymbolTable([b"xa"])],
    ...             np.frombuffer(b"abxab", np.uint8), np.array([0, 3, 5]), np.array([0, 1, 2]))
    ...     codes, offs = GpuBlockEncoder()(*args)
    ...     want = native.encode_blocks(*args)
    ...     assert codes.tobytes() == want[0].tobytes() and (offs == want[1]).all()
    """

    def __init__(self, *, stream=None, fill=None):
        resolve_device("gpu")
        # the device current where it is made: the calls may come from other threads (a file's
        # columns are converted on a pool), whose current device is CuPy's default
        self._device = get_cupy().cuda.Device()
        self._stream, self._fill = stream, fill
        self._local = threading.local()  # each thread's stream

    def __call__(self, tables, data, offsets, block_starts):
        """The codes of every block's strings (uint8) and their offsets (int64, n + 1, from 0),
        as :func:`fsstgpu.native.encode_blocks` returns them.

        Raises
        ------
        ValueError
            If the offsets or block starts are out of order or outside their arrays (the CPU
            encoder's checks).
        """
        cp = get_cupy()
        tables = list(tables)
        data = np.ascontiguousarray(data, np.uint8)
        offsets = np.ascontiguousarray(offsets, np.int64)
        block_starts = np.ascontiguousarray(block_starts, np.int64)
        n = len(offsets) - 1
        _check(tables, len(data), offsets, block_starts)
        code_offsets = np.zeros(n + 1, np.int64)
        if n == 0:
            return np.zeros(0, np.uint8), code_offsets
        with self._device, on_stream(self._stream or self._thread_stream(cp)):
            stream = cp.cuda.get_current_stream()
            d_data = upload(cp, data, stream)  # CuPy's allocations: 8-byte aligned
            d_offsets = upload(cp, offsets, stream)
            # every block in one encode (a table a block: many_lookups), where a loop over the
            # blocks launched the kernels and waited for the codes' size once a block
            several = len(tables) > 1
            codes, offs = encode_on_device(
                tables if several else tables[0], d_data, d_offsets, fill=self._fill,
                block_starts=block_starts if several else None)
            out = np.empty(int(codes.size), np.uint8)
            if codes.size:
                codes.get(out=out)
            offs.get(out=code_offsets)
            stream.synchronize()
        return out, code_offsets

    def _thread_stream(self, cp):
        stream = getattr(self._local, "stream", None)
        if stream is None:
            stream = self._local.stream = cp.cuda.Stream(non_blocking=True)
        return stream


def _check(tables: list, data_size: int, offsets: np.ndarray, block_starts: np.ndarray) -> None:
    """The CPU encoder's argument checks (``native.encode_blocks`` raises the same
    ValueError): no kernel reads by offsets that lie outside the data."""
    n = len(offsets) - 1
    if n < 0:
        raise ValueError("offsets must hold at least one value")
    if len(block_starts) != len(tables) + 1:
        raise ValueError(f"{len(block_starts)} block starts for {len(tables)} tables")
    if block_starts[0] != 0 or block_starts[-1] != n or not is_non_decreasing(block_starts):
        raise ValueError("block starts must go from 0 to the string count, non-decreasing")
    if n and (offsets[0] < 0 or offsets[-1] > data_size or not is_non_decreasing(offsets)):
        raise ValueError("offsets must be non-decreasing and inside the data")
