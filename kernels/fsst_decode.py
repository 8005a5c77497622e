"""Launcher and CPU twin of the split-balanced FSST decode kernel (``fsst_decode.cu``).

The kernel decodes split ``k`` (codes ``split_codes[k]:split_codes[k+1]``, table
``split_table[k]``) into the output bytes ``split_out[k]:split_out[k+1]``, one thread per split
(``s*`` variants) or one warp per split (``warp*`` variants: lanes share the codes, output staged
in shared memory and written with coalesced stores); see the ``.cu`` file's comments for how.
This module packs symbol tables into the kernel's (ntables, 256) layout, pads code buffers so
that the kernel's wide loads stay in bounds, launches the kernel, turns its error bits into
:class:`fsstgpu.CorruptDataError`, and holds the CPU twin (:func:`decode_splits_cpu`) and the
split refinement (:func:`refine_splits`) used when a column's splits are too coarse to keep the
GPU busy.
"""

from __future__ import annotations

import numba
import numpy as np

from fsstgpu.errors import CorruptDataError
from fsstgpu.symbol_table import ESCAPE

SOURCE = "fsst_decode.cu"
#: bytes of padding after the last code: the kernel loads aligned 16-byte chunks up to two chunks
#: past the one it decodes from (see ``fsst_decode.cu``); 128 leaves a wide margin.
CODES_PAD = 128
#: kernel variants: name -> (CUDA function, threads per block)
VARIANTS = {
    "s16_smem_256": ("fsst_decode_s16_smem_256", 256),
    "s16_smem_128": ("fsst_decode_s16_smem_128", 128),
    "s8_smem_256": ("fsst_decode_s8_smem_256", 256),
    "s16_gmem_256": ("fsst_decode_s16_gmem_256", 256),
    "s16_smem_256_occ6": ("fsst_decode_s16_smem_256_occ6", 256),
    # warp-cooperative: one warp per split (K code bytes per lane, W warps per block)
    "warp_k16_w4": ("fsst_decode_warp_k16_w4", 128),
    "warp_k8_w8": ("fsst_decode_warp_k8_w8", 256),
    "warp_k8_w4": ("fsst_decode_warp_k8_w4", 128),
    # ... with no masking in windows wholly inside the split (warpf); occ5: 40 warps per SM
    "warpf_k16_w4": ("fsst_decode_warpf_k16_w4", 128),
    "warpf_k8_w8": ("fsst_decode_warpf_k8_w8", 256),
    "warpf_k8_w8_occ5": ("fsst_decode_warpf_k8_w8_occ5", 256),
}
#: the variants that decode one split per warp (the others: one split per thread)
WARP_VARIANTS = frozenset(name for name in VARIANTS if name.startswith("warp"))
DEFAULT_VARIANT = "warpf_k8_w8_occ5"
#: timing experiments, not decoders (they write no output)
TIMING_ONLY = {"nostore_smem_256": ("fsst_decode_nostore_smem_256", 256)}

_LEN_CTYPES = {np.dtype(np.uint8): "unsigned char", np.dtype(np.uint16): "unsigned short",
               np.dtype(np.uint32): "unsigned int", np.dtype(np.uint64): "unsigned long long"}
_OFF_CTYPES = {np.dtype(np.int32): "int", np.dtype(np.int64): "long long"}
_SCAN_EXPRESSIONS = tuple(f"offsets_tile_{step}<{lt}, {ot}>" for step in ("sums", "scan")
                          for lt in _LEN_CTYPES.values() for ot in _OFF_CTYPES.values())
SCAN_TILE = 4096

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


def pack_tables(tables) -> tuple[np.ndarray, np.ndarray]:
    """Return the kernel's table layout: symbols (ntables, 256) uint64 and lengths (ntables, 256).

    Codes a table does not define (and the escape code 255) get length 0, which the kernel
    reports as a corrupt code.

    Examples
    --------
    >>> from fsstgpu import SymbolTable
    >>> from fsstgpu.kernels.fsst_decode import pack_tables
    >>> sym, ln = pack_tables([SymbolTable([b"ab", b"c"])])
    >>> sym.shape, ln[0, :3].tolist()
    ((1, 256), [1, 2, 0])
    """
    nt = len(tables)
    sym = np.zeros((max(nt, 1), 256), dtype=np.uint64)
    ln = np.zeros((max(nt, 1), 256), dtype=np.uint8)
    for i, t in enumerate(tables):
        n = len(t)
        sym[i, :n] = t.packed
        ln[i, :n] = t.lengths
    return sym, ln


def padded_size(ncodes: int) -> int:
    """Bytes to allocate for ``ncodes`` codes on the device (rounded to 16, plus the padding)."""
    return ((ncodes + 15) // 16) * 16 + CODES_PAD


def launch_decode(codes, ncodes: int, split_codes, split_out, split_table, tab_sym, tab_len,
                  ntables: int, out, out_size: int, err, *, variant: str = DEFAULT_VARIANT,
                  stream=None) -> None:
    """Enqueue the decode kernel on ``stream`` (no host synchronisation).

    All arrays are CuPy arrays on the current device. ``codes`` must hold at least
    :func:`padded_size` ``(ncodes)`` bytes; ``split_codes``/``split_out`` are int64 of
    ``nsplits + 1``, ``split_table`` uint16 of ``nsplits``; ``out`` uint8 of ``out_size`` bytes;
    ``err`` one int32 the kernel ORs its error bits into (zero it before).
    """
    from fsstgpu.kernels.loader import get_function

    nsplits = int(split_table.shape[0])
    if nsplits == 0:
        return
    if codes.nbytes < padded_size(ncodes):
        raise ValueError(f"codes buffer of {codes.nbytes} bytes, need {padded_size(ncodes)}")
    func_name, threads = VARIANTS[variant] if variant in VARIANTS else TIMING_ONLY[variant]
    func = get_function(SOURCE, func_name)
    per_block = threads // 32 if variant in WARP_VARIANTS else threads  # splits per block
    if variant in WARP_VARIANTS and codes.data.ptr % 16:
        raise ValueError("the warp decode kernels need a 16-byte aligned codes buffer")
    blocks = (nsplits + per_block - 1) // per_block
    import numpy as _np

    args = (codes, _np.int64(ncodes), split_codes, split_out, split_table, _np.int64(nsplits),
            tab_sym, tab_len, _np.int32(ntables), out, _np.int64(out_size), err)
    if stream is None:
        func((blocks,), (threads,), args)
    else:
        with stream:
            func((blocks,), (threads,), args)


def launch_offsets(lengths, offsets, *, stream=None) -> None:
    """Enqueue ``offsets[0] = 0, offsets[1:] = cumsum(lengths)`` on ``stream`` (no host sync).

    ``lengths``: CuPy array of uint8/16/32/64, shape (n,); ``offsets``: int32 or int64, (n + 1,).
    Two tiled passes (``offsets_tile_sums`` / ``offsets_tile_scan`` in ``fsst_decode.cu``) with a
    small CuPy scan of the tile sums between them.
    """
    from fsstgpu.device import get_cupy
    from fsstgpu.kernels.loader import get_function

    cp = get_cupy()
    n = int(lengths.shape[0])
    ctx = stream if stream is not None else _null()
    with ctx:
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


def _null():
    import contextlib

    return contextlib.nullcontext()


@numba.njit(cache=True, nogil=True)
def _decode_splits(tab_sym, tab_len, codes, split_codes, split_out, split_table, out):
    """CPU twin of the kernel: same checks, same error bits (0 when all is well)."""
    ncodes = codes.shape[0]
    out_size = out.shape[0]
    ntables = tab_sym.shape[0]
    err = 0
    for k in range(split_table.shape[0]):
        cb = split_codes[k]
        ce = split_codes[k + 1]
        ob = split_out[k]
        oe = split_out[k + 1]
        t = split_table[k]
        if not (0 <= cb <= ce <= ncodes and 0 <= ob <= oe <= out_size):
            err |= 1
            continue
        if t >= ntables:
            err |= 32
            continue
        i = cb
        o = ob
        while i < ce:
            c = codes[i]
            if c == 255:
                if i + 1 >= ce:
                    err |= 4
                    i += 2
                    break
                if o >= oe:
                    err |= 8
                    break
                out[o] = codes[i + 1]
                o += 1
                i += 2
                continue
            ln = tab_len[t, c]
            if ln == 0:
                err |= 2
                i += 1
                continue
            if o + ln > oe:
                err |= 8
                break
            sym = tab_sym[t, c]
            for j in range(ln):
                out[o + j] = (sym >> np.uint64(8 * j)) & np.uint64(0xFF)
            o += ln
            i += 1
        if o < oe and (err & 8) == 0:
            err |= 16
    return err


def decode_splits_cpu(tables, codes, split_codes, split_out, split_table, out_size: int):
    """Decode every split on the CPU exactly as the kernel does; raise CorruptDataError on error.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import SymbolTable
    >>> from fsstgpu.kernels.fsst_decode import decode_splits_cpu
    >>> out = decode_splits_cpu([SymbolTable([b"ab"])], np.array([0, 255, 120], np.uint8),
    ...                         np.array([0, 1, 3]), np.array([0, 2, 3]), np.zeros(2, np.uint16), 3)
    >>> bytes(out)
    b'abx'
    """
    sym, ln = pack_tables(tables)
    out = np.zeros(out_size, dtype=np.uint8)
    err = _decode_splits(sym, ln, np.ascontiguousarray(codes, np.uint8),
                         np.ascontiguousarray(split_codes, np.int64),
                         np.ascontiguousarray(split_out, np.int64),
                         np.ascontiguousarray(split_table, np.uint16), out)
    if err:
        raise CorruptDataError(error_message(int(err)))
    return out


@numba.njit(cache=True, nogil=True)
def _refine(codes, split_codes, split_out, split_table, tab_len, target, max_out):
    """Cut every split at the first code boundary at or after each multiple of ``target``
    bytes (from the split's start).  Stops cutting a split at a bad code: the decode reports it."""
    n = split_table.shape[0]
    new_codes = np.empty(max_out + 1, np.int64)
    new_out = np.empty(max_out + 1, np.int64)
    new_table = np.empty(max_out, np.uint16)
    m = 0
    ncodes = codes.shape[0]
    for k in range(n):
        cb = split_codes[k]
        ce = split_codes[k + 1]
        ob = split_out[k]
        t = split_table[k]
        new_codes[m] = cb
        new_out[m] = ob
        new_table[m] = t
        m += 1
        if split_out[k + 1] - ob <= target or t >= tab_len.shape[0] or ce > ncodes or cb < 0:
            continue
        i = cb
        o = ob
        nxt = ob + target
        while i < ce and m < max_out:
            c = codes[i]
            if c == ESCAPE:
                i += 2
                o += 1
            else:
                ln = tab_len[t, c]
                if ln == 0:
                    break
                i += 1
                o += ln
            if o >= nxt and i < ce:
                new_codes[m] = i
                new_out[m] = o
                new_table[m] = t
                m += 1
                while nxt <= o:
                    nxt += target
    new_codes[m] = split_codes[n]
    new_out[m] = split_out[n]
    return new_codes[: m + 1].copy(), new_out[: m + 1].copy(), new_table[:m].copy()


def refine_splits(codes, split_codes, split_out, split_table, tables, target: int):
    """Return finer split points: each split cut every ``target`` output bytes at code boundaries.

    Used to build split points for raw encodings (one split per block to start with) and to give
    the GPU enough threads when a column was compressed with a large split size.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import SymbolTable
    >>> from fsstgpu.kernels.fsst_decode import refine_splits
    >>> c, o, t = refine_splits(np.zeros(6, np.uint8), np.array([0, 6]), np.array([0, 12]),
    ...                         np.zeros(1, np.uint16), [SymbolTable([b"ab"])], 4)
    >>> c.tolist(), o.tolist(), t.tolist()
    ([0, 2, 4, 6], [0, 4, 8, 12], [0, 0, 0])
    """
    if target < 1:
        raise ValueError(f"target must be >= 1 byte, not {target}")
    split_out = np.ascontiguousarray(split_out, np.int64)
    total = int(split_out[-1] - split_out[0]) if len(split_out) else 0
    max_out = len(split_table) + total // target + 1
    _, ln = pack_tables(tables)
    return _refine(np.ascontiguousarray(codes, np.uint8),
                   np.ascontiguousarray(split_codes, np.int64), split_out,
                   np.ascontiguousarray(split_table, np.uint16), ln, int(target), max_out)
