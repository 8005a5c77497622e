"""Launchers of the split-balanced FSST decode kernel and the Arrow offsets scan.

``fsst_decode.cu`` decodes split ``k`` (codes ``split_codes[k]:split_codes[k+1]``, table
``split_table[k]``) into the output bytes ``split_out[k]:split_out[k+1]``, one warp per split;
``offsets_tile_sums`` / ``offsets_tile_scan`` turn the string lengths into Arrow offsets. This
module pads code buffers so that the kernel's loads stay in bounds, launches both without host
synchronisation, and turns the kernel's error bits into words. The CPU twin of the decode is
:func:`fsstgpu.decoder.decode_all` (the same bytes, the same splits, CorruptDataError where the
kernel sets an error bit); tables come in :func:`fsstgpu.symbol_table.pack_tables`' layout.

>>> from fsstgpu.kernels.fsst_decode import error_message, padded_size
>>> padded_size(100)
240
>>> error_message(2)
'GPU FSST decode found corrupt data: a code that its symbol table does not define'
"""

from __future__ import annotations

import numpy as np

from fsstgpu.device import get_cupy
from fsstgpu.kernels.loader import get_function, on_stream

__all__ = ["CODES_PAD", "error_message", "launch_decode", "launch_offsets", "padded_size"]

SOURCE = "fsst_decode.cu"
#: bytes of padding after the last code: a lane loads 8 aligned bytes at most 8 bytes before the
#: split's end; 128 leaves a wide margin
CODES_PAD = 128
#: splits (warps) per block of the decode kernel: FSST_WARPS in the .cu file
WARPS_PER_BLOCK = 8
#: lengths per tile of the offsets scan: FSST_SCAN_TILE in the .cu file
SCAN_TILE = 4096

_LEN_CTYPES = {np.dtype(np.uint8): "unsigned char", np.dtype(np.uint16): "unsigned short",
               np.dtype(np.uint32): "unsigned int", np.dtype(np.uint64): "unsigned long long"}
# the template instantiations compiled with the module (one compilation serves every kernel)
KERNEL_NAMES = tuple(f"offsets_tile_{step}<{lt}>" for step in ("sums", "scan")
                     for lt in _LEN_CTYPES.values())

_ERRORS = (
    (1, "a split's code or output range lies outside the buffers or is reversed"),
    (2, "a code that its symbol table does not define"),
    (4, "an escape code whose literal byte lies past the end of its split"),
    (8, "the codes decode to more bytes than the split's output range (wrong lengths?)"),
    (16, "the codes decode to fewer bytes than the split's output range (wrong lengths?)"),
    (32, "a split names a symbol table that does not exist"),
)


def error_message(bits: int) -> str:
    """Describe the kernel's error bits in words."""
    found = [text for bit, text in _ERRORS if bits & bit]
    return "GPU FSST decode found corrupt data: " + "; ".join(found or [f"error bits {bits:#x}"])


def padded_size(ncodes: int) -> int:
    """Bytes to allocate for ``ncodes`` codes on the device (rounded to 16, plus the padding)."""
    return ((ncodes + 15) // 16) * 16 + CODES_PAD


def _function(name: str):
    """Kernel ``name`` of ``fsst_decode.cu``, compiled once (with every template instance)."""

    return get_function(SOURCE, name, name_expressions=KERNEL_NAMES)


def launch_decode(codes, ncodes: int, split_codes, split_out, split_table, tab_sym, tab_len,
                  ntables: int, out, out_size: int, err, *, stream=None) -> None:
    """Enqueue the decode kernel on ``stream`` (no host synchronisation).

    All arrays are CuPy arrays on the current device. ``codes`` must hold at least
    :func:`padded_size` ``(ncodes)`` bytes and be 16-byte aligned; ``split_codes``/``split_out``
    are int64 of ``nsplits + 1``, ``split_table`` uint16 of ``nsplits``; ``tab_sym`` uint64 and
    ``tab_len`` uint8 of shape (ntables, 256); ``out`` uint8 of ``out_size`` bytes; ``err`` one
    int32 the kernel ORs its error bits into (zero it before).

    Examples
    --------
    >>> import fsstgpu
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     import cupy as cp
    ...     from fsstgpu.symbol_table import SymbolTable, pack_tables
    ...     from fsstgpu.kernels.fsst_decode import launch_decode, padded_size
    ...     codes = cp.zeros(padded_size(2), cp.uint8)  # two codes 0: "ab" "ab"
    ...     sym, ln = (cp.asarray(a) for a in pack_tables([SymbolTable([b"ab"])]))
    ...     out, err = cp.empty(4, cp.uint8), cp.zeros(1, cp.int32)
    ...     launch_decode(codes, 2, cp.array([0, 2]), cp.array([0, 4]), cp.zeros(1, cp.uint16),
    ...                   sym, ln, 1, out, 4, err)
    ...     assert bytes(out.get()) == b"abab" and int(err.get()[0]) == 0
    """
    nsplits = int(split_table.shape[0])
    if nsplits == 0:
        return
    if codes.nbytes < padded_size(ncodes):
        raise ValueError(f"codes buffer of {codes.nbytes} bytes, need {padded_size(ncodes)}")
    if codes.data.ptr % 16:
        raise ValueError("the decode kernel needs a 16-byte aligned codes buffer")
    func = _function("fsst_decode")
    blocks = (nsplits + WARPS_PER_BLOCK - 1) // WARPS_PER_BLOCK
    args = (codes, np.int64(ncodes), split_codes, split_out, split_table, np.int64(nsplits),
            tab_sym, tab_len, np.int32(ntables), out, np.int64(out_size), err)
    with on_stream(stream):
        func((blocks,), (32 * WARPS_PER_BLOCK,), args)


def launch_offsets(lengths, out, col_first, col_base, col_obyte, col_wide, *,
                   stream=None) -> None:
    """Enqueue the Arrow offsets of one column or a batch on ``stream`` (no host sync).

    Column ``c``'s lengths are ``lengths[col_first[c]:col_first[c + 1]]``; its offsets (0, then
    the running sum) are written to the bytes of ``out`` from ``col_obyte[c]``, as int64 where
    ``col_wide[c]`` else int32; ``col_base[c]`` is the sum of every length before the column.
    All CuPy arrays: ``lengths`` uint8/16/32/64; ``col_first`` int64 (ncols + 1); ``col_base``,
    ``col_obyte`` int64 (ncols); ``col_wide`` uint8 (ncols); ``out`` uint8, 8-byte aligned.
    Three launches (``fsst_decode.cu``): tile sums, one block scanning them, the tile scan.

    Examples
    --------
    >>> import fsstgpu
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     import cupy as cp
    ...     from fsstgpu.kernels.fsst_decode import launch_offsets
    ...     out = cp.empty(16, cp.uint8)
    ...     launch_offsets(cp.array([3, 0, 2], cp.uint8), out, cp.array([0, 3]), cp.array([0]),
    ...                    cp.array([0]), cp.array([0], cp.uint8))
    ...     assert out.view(cp.int32)[:4].get().tolist() == [0, 3, 3, 5]
    """
    cp = get_cupy()
    n = int(lengths.shape[0])
    ncols = int(col_base.shape[0])
    with on_stream(stream):
        lt = _LEN_CTYPES[np.dtype(lengths.dtype)]
        sums_f = _function(f"offsets_tile_sums<{lt}>")
        scan_f = _function(f"offsets_tile_scan<{lt}>")
        base_f = _function("offsets_scan_tile_sums")
        ntiles = max(1, (n + SCAN_TILE - 1) // SCAN_TILE)
        sums = cp.empty(ntiles, dtype=cp.int64)
        sums_f((ntiles,), (256,), (lengths, np.int64(n), sums))
        base_f((1,), (1024,), (sums, np.int64(ntiles)))
        scan_f((ntiles,), (256,), (lengths, np.int64(n), sums, col_first, col_base, col_obyte,
                                   col_wide, np.int32(ncols), out))
