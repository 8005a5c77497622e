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

import contextlib

import numpy as np

from fsstgpu.device import get_cupy

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
_OFF_CTYPES = {np.dtype(np.int32): "int", np.dtype(np.int64): "long long"}
_SCAN_EXPRESSIONS = tuple(f"offsets_tile_{step}<{lt}, {ot}>" for step in ("sums", "scan")
                          for lt in _LEN_CTYPES.values() for ot in _OFF_CTYPES.values())

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


def _on(stream):
    return stream if stream is not None else contextlib.nullcontext()


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
    from fsstgpu.kernels.loader import get_function

    nsplits = int(split_table.shape[0])
    if nsplits == 0:
        return
    if codes.nbytes < padded_size(ncodes):
        raise ValueError(f"codes buffer of {codes.nbytes} bytes, need {padded_size(ncodes)}")
    if codes.data.ptr % 16:
        raise ValueError("the decode kernel needs a 16-byte aligned codes buffer")
    func = get_function(SOURCE, "fsst_decode")
    blocks = (nsplits + WARPS_PER_BLOCK - 1) // WARPS_PER_BLOCK
    args = (codes, np.int64(ncodes), split_codes, split_out, split_table, np.int64(nsplits),
            tab_sym, tab_len, np.int32(ntables), out, np.int64(out_size), err)
    with _on(stream):
        func((blocks,), (32 * WARPS_PER_BLOCK,), args)


def launch_offsets(lengths, offsets, *, stream=None) -> None:
    """Enqueue ``offsets[0] = 0, offsets[1:] = cumsum(lengths)`` on ``stream`` (no host sync).

    ``lengths``: CuPy array of uint8/16/32/64, shape (n,); ``offsets``: int32 or int64, (n + 1,).
    Two tiled passes (``offsets_tile_sums`` / ``offsets_tile_scan`` in ``fsst_decode.cu``) with a
    small CuPy scan of the tile sums between them.

    Examples
    --------
    >>> import fsstgpu
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     import cupy as cp
    ...     from fsstgpu.kernels.fsst_decode import launch_offsets
    ...     offsets = cp.empty(4, cp.int64)
    ...     launch_offsets(cp.array([3, 0, 2], cp.uint8), offsets)
    ...     assert offsets.get().tolist() == [0, 3, 3, 5]
    """
    from fsstgpu.kernels.loader import get_function

    cp = get_cupy()
    n = int(lengths.shape[0])
    with _on(stream):
        if n == 0:
            offsets[:1].fill(0)
            return
        lt, ot = _LEN_CTYPES[np.dtype(lengths.dtype)], _OFF_CTYPES[np.dtype(offsets.dtype)]
        sums_f = get_function(SOURCE, f"offsets_tile_sums<{lt}, {ot}>",
                              name_expressions=_SCAN_EXPRESSIONS)
        scan_f = get_function(SOURCE, f"offsets_tile_scan<{lt}, {ot}>",
                              name_expressions=_SCAN_EXPRESSIONS)
        ntiles = (n + SCAN_TILE - 1) // SCAN_TILE
        sums = cp.empty(ntiles, dtype=offsets.dtype)
        sums_f((ntiles,), (256,), (lengths, np.int64(n), sums))
        base = cp.empty(ntiles, dtype=offsets.dtype)
        base[:1].fill(0)
        if ntiles > 1:
            cp.cumsum(sums[:-1], out=base[1:])
        scan_f((ntiles,), (256,), (lengths, np.int64(n), base, offsets))
