"""Launchers of the split-balanced FSST decode kernel and the Arrow offsets scan.

``fsst_decode.cu`` decodes split ``k`` (codes ``split_codes[k]:split_codes[k+1]``, table
``split_table[k]``) into the output bytes ``split_out[k]:split_out[k+1]``, one warp per split
(up to eight in launches of few splits: :func:`warps_per_split`);
``offsets_one_pass`` turns the string lengths into Arrow offsets. This
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

import ctypes
import functools
import threading
from itertools import accumulate

import numpy as np

from fsstgpu.device import get_cupy, on_arrays_device
from fsstgpu.errors import DeviceError
from fsstgpu.kernels.driver import Launch, Replay, graphs, memset_d32
from fsstgpu.kernels.loader import device_limits, get_function, on_stream
from fsstgpu.kernels.split_pieces import piece_bytes, plan_pieces

__all__ = ["CODES_PAD", "FEW_SPLITS", "PlannedDecode", "error_message", "launch_check_ends",
           "launch_check_utf8", "launch_decode", "launch_offsets", "padded_size",
           "scan_scratch_nbytes", "starts_words", "utf8_range_table", "warps_per_split"]

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
KERNEL_NAMES = tuple(f"{kernel}<{lt}>" for kernel in ("offsets_one_pass", "decode_planned")
                     for lt in _LEN_CTYPES.values())

#: the one-pass scan's bound on any wait for a predecessor tile (never reached in a correct
#: launch: tiles are claimed in order, so the first unfinished one never waits)
SCAN_TIMEOUT_NS = 10_000_000_000

# decode_planned's arguments that a call rewrites
_OUT, _ORDER, _STATUS, _OFFSETS, _ERR, _NFLAGS, _HOST = 9, 12, 16, 23, 25, 26, 27
# ... that pieces of splits replace (the splits' arrays and count, warps a split, blocks), and
# the out_size argument, the last that split_pieces takes after decode_planned's first nine
_SPLIT_CODES, _SPLIT_OUT, _SPLIT_TABLE, _NSPLITS, _WPS, _BLOCKS, _OUT_SIZE = 2, 3, 4, 5, 11, 13, 10

_ERRORS = (
    (1, "a split's code or output range lies outside the buffers or is reversed"),
    (2, "a code that its symbol table does not define"),
    (4, "an escape code whose literal byte lies past the end of its split"),
    (8, "the codes decode to more bytes than the split's output range (wrong lengths?)"),
    (16, "the codes decode to fewer bytes than the split's output range (wrong lengths?)"),
    (32, "a split names a symbol table that does not exist"),
    (64, "the offsets scan timed out waiting for a tile (a GPU fault?)"),
    (128, "a symbol runs across a string's end (the string lengths cut a symbol)"),
    (256, "a text column's strings decode to bytes that are not valid UTF-8"),
    (512, "a string's codes do not start where its stored code offset says (the code offsets "
          "do not match the codes)"),
)


def error_message(bits: int) -> str:
    """Describe the kernel's error bits in words."""
    found = [text for bit, text in _ERRORS if bits & bit]
    return "GPU FSST decode found corrupt data: " + "; ".join(found or [f"error bits {bits:#x}"])


def padded_size(ncodes: int) -> int:
    """Bytes to allocate for ``ncodes`` codes on the device (rounded to 16, plus the padding)."""
    return ((ncodes + 15) // 16) * 16 + CODES_PAD


def _function(name: str):
    """Kernel ``name`` of ``fsst_decode.cu``, compiled once (with every template instance) and
    looked up once per device: a lookup made a new CuPy kernel object (~20 us on the H200 host,
    paid by every plan and every launch)."""
    return _function_on(name, get_cupy().cuda.Device().id)


@functools.cache
def _function_on(name: str, device_id: int):
    return get_function(SOURCE, name, name_expressions=KERNEL_NAMES)


def launch_decode(codes, ncodes: int, split_codes, split_out, split_table, tab_sym, tab_len,
                  ntables: int, out, out_size: int, err, *, stream=None, starts=None,
                  code_starts=None, mapped=None) -> None:
    """Enqueue the decode kernel on ``stream`` (no host synchronisation).

    All arrays are CuPy arrays of one device, where the kernel runs (``codes``, ``out`` and
    ``err`` on several are refused). ``codes`` must hold at least
    :func:`padded_size` ``(ncodes)`` bytes and be 16-byte aligned; ``split_codes``/``split_out``
    are int64 of ``nsplits + 1``, ``split_table`` uint16 of ``nsplits``; ``tab_sym`` uint64 and
    ``tab_len`` uint8 of shape (ntables, 256); ``out`` uint8 of ``out_size`` bytes; ``err`` one
    int32 the kernel ORs its error bits into (zero it before). ``starts``, a zeroed uint64 array
    of :func:`starts_words` ``(out_size)``, takes the checked kernel, which also marks there
    where each symbol's output starts, for :func:`launch_check_ends`; with it, ``code_starts``
    (uint8, a bit a code from the batch's first, LSB first: where strings' codes start; at
    least ``(ncodes + 7) // 8`` bytes) and ``mapped`` (like ``starts``, zeroed) make it set in
    ``mapped`` the output start of every marked code, which :func:`launch_check_ends` tests.

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
    _check_codes(codes, ncodes)
    wps = warps_per_split(nsplits)
    args = (codes, np.int64(ncodes), split_codes, split_out, split_table, np.int64(nsplits),
            tab_sym, tab_len, np.int32(ntables), out, np.int64(out_size), err, np.int32(wps))
    if starts is not None:
        if starts.dtype != np.uint64 or starts.size < starts_words(out_size):
            raise ValueError(f"starts must be uint64 of {starts_words(out_size)} words")
        args += (starts,)
        if code_starts is not None:
            if code_starts.dtype != np.uint8 or code_starts.size < -(-ncodes // 8):
                raise ValueError(f"code_starts must be uint8 of {-(-ncodes // 8)} bytes")
            if mapped is None or mapped.dtype != np.uint64 or mapped.size < starts.size:
                raise ValueError("mapped must be uint64 of as many words as starts")
            args += (code_starts, mapped, np.int32(1))
        else:  # not read by the kernel: any pointers
            args += (starts, starts, np.int32(0))
    with on_arrays_device("launch_decode", codes=codes, out=out, err=err), on_stream(stream):
        kernel = _function("fsst_decode" if starts is None else "fsst_decode_checked")
        kernel((_decode_blocks(nsplits, wps),), (32 * WARPS_PER_BLOCK,), args)


def starts_words(out_size: int) -> int:
    """uint64 words of the symbol-starts bitmap of ``out_size`` output bytes (their bits start
    at the output pointer's offset within 16 bytes).

    >>> starts_words(0), starts_words(100)
    (2, 3)
    """
    return (out_size + 16) // 64 + 2


def launch_check_ends(starts, out, out_size: int, offsets, n: int, col_first, col_base,
                      col_obyte, col_wide, col_err, *, stream=None, mapped=None) -> None:
    """Enqueue the check of every string's end against the symbol starts that the checked
    decode of ``out`` marked in ``starts``: column ``c``'s flag in ``col_err[c]`` gets bit 128
    where one of its strings ends inside a symbol (the CPU decoder raises there), and bit 256
    where a string of a text column (``col_wide`` bit 2) starts on a UTF-8 continuation byte,
    and bit 512 where a non-empty string of a column whose code starts were marked
    (``col_wide`` bit 3) starts where no marked code's output did (``mapped``, as the checked
    decode set it; needed when a column has bit 3).

    ``offsets`` holds the ``n`` strings' Arrow offsets as the offsets scan wrote them (the
    scan's column arrays ``col_first``, ``col_base``, ``col_obyte``, ``col_wide`` say where);
    run it after the decode and the offsets, on the same stream.

    Examples
    --------
    >>> import fsstgpu
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     import cupy as cp
    ...     out = cp.empty(4, cp.uint8)  # "abab" decoded from two symbols "ab": starts 0 and 2
    ...     starts = cp.array([0b101 << (out.data.ptr & 15), 0], cp.uint64)
    ...     ends = cp.array([0, 1, 4], cp.int32).view(cp.uint8)  # cut as "a" "bab"
    ...     col = [cp.array(v) for v in ([0, 2], [0], [0])] + [cp.zeros(1, cp.uint8)]
    ...     err = cp.zeros(1, cp.int32)
    ...     launch_check_ends(starts, out, 4, ends, 2, *col, err)
    ...     assert err.get().tolist() == [128]
    """
    if n == 0:
        return
    args = (starts, out, np.int64(out.data.ptr & 15), np.int64(out_size), offsets, np.int64(n),
            col_first, col_base, col_obyte, col_wide, np.int32(col_base.size), col_err,
            starts if mapped is None else mapped)  # read for bit-3 columns only
    with on_arrays_device("launch_check_ends", starts=starts, out=out, offsets=offsets,
                          col_err=col_err), on_stream(stream):
        _function("fsst_check_ends")((min(-(-n // 256), 65536),), (256,), args)


#: output bytes a thread of the UTF-8 check takes (FSST_UTF8_CHUNK in utf8_check.cuh)
UTF8_CHUNK = 16


def utf8_range_table(ranges) -> np.ndarray:
    """The UTF-8 check's table of ``ranges`` (``(start, end, column)``, the empty ones left
    out): int64 rows of starts, ends, columns and first chunk ids, ``nranges + 1`` columns.

    A range gets one chunk per 16-byte block of memory it can touch at any alignment of the
    output (its length / 16 rounded up, plus one); the kernel skips a chunk past its range.
    So the table does not depend on where the output lies, and a batch uploads it once with
    its metadata (:class:`~fsstgpu.gpu.layout.HostBatch`) instead of once a call.

    >>> utf8_range_table([(0, 6, 0), (6, 6, 1), (6, 40, 2)]).tolist()
    [[0, 6, 0], [6, 40, 0], [0, 2, 0], [0, 2, 6]]
    """
    ranges = [r for r in ranges if r[1] > r[0]]
    if not ranges:
        return np.zeros((4, 1), np.int64)
    if len(ranges) <= _FEW_RANGES:  # (NumPy's calls cost ~12 us for one range, lists ~3)
        starts, ends, columns = zip(*ranges, strict=True)
        firsts = accumulate((-(-(e - s) // UTF8_CHUNK) + 1
                             for s, e in zip(starts, ends, strict=True)),
                            initial=0)
        return np.array([(*starts, 0), (*ends, 0), (*columns, 0), tuple(firsts)], np.int64)
    table = np.zeros((4, len(ranges) + 1), np.int64)  # starts, ends, columns, first chunks
    table[:3, :-1] = np.array(ranges, np.int64).T
    np.cumsum(-(-(table[1, :-1] - table[0, :-1]) // UTF8_CHUNK) + 1, out=table[3, 1:])
    return table


#: up to this many ranges utf8_range_table builds its table from Python lists
_FEW_RANGES = 64


def launch_check_utf8(out, ranges, col_err, *, stream=None, device_table=None) -> None:
    """Enqueue the check of text columns' decoded bytes as UTF-8 streams (RFC 3629): column
    ``c``'s flag in ``col_err[c]`` gets bit 256 where its bytes are not valid UTF-8.

    ``ranges`` is a host sequence of ``(start, end, column)`` (the output bytes
    ``out[start:end]`` of column ``column``), or their :func:`utf8_range_table`;
    ``device_table``, that table already on the device (a batch's metadata), saves its upload.
    With :func:`launch_check_ends`' test of the string starts, a column's strings pass exactly
    when :func:`fsstgpu.utf8.check_utf8` passes them.

    Examples
    --------
    >>> import fsstgpu
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     import cupy as cp, numpy as np
    ...     data = cp.asarray(np.frombuffer(b"ok \\xc3\\xa9 \\xff", np.uint8))
    ...     err = cp.zeros(2, cp.int32)
    ...     launch_check_utf8(data, [(0, 6, 0), (6, 7, 1)], err)
    ...     assert err.get().tolist() == [0, 256]
    """
    table = ranges if isinstance(ranges, np.ndarray) else utf8_range_table(ranges)
    nranges, chunks = table.shape[1] - 1, int(table[3, -1])
    if not chunks:
        return
    cp = get_cupy()
    with on_arrays_device("launch_check_utf8", out=out, col_err=col_err), on_stream(stream):
        dev = cp.asarray(table) if device_table is None else device_table
        _function("fsst_check_utf8")((-(-chunks // 256),), (256,), (
            out, np.int64(out.data.ptr % UTF8_CHUNK), dev[0], dev[1], dev[2], dev[3],
            np.int32(nranges), col_err))


#: splits under which each split gets two warps, eight (see :func:`warps_per_split`)
FEW_SPLITS = 6144
_FEWEST_SPLITS = 512


def warps_per_split(nsplits: int) -> int:
    """Warps that share each split of a launch of ``nsplits`` splits (the kernel takes 1, 2, 4
    or 8).

    A split's windows (256 code bytes) decode one after another, and a launch of few splits
    ends with its longest (dbtext at 16 MiB: 7.5 windows a split on average, 21 at most): more
    warps to a split cut that tail, each walking the windows before its own with the first pass
    alone to find where its output starts. That walk costs about half a window's decode, so
    it pays only while the GPU has room to spare. H200, GPU time of the decode kernel alone,
    warps a split 1 / 2 / 4 / 8 (BENCHMARKS.md section 30): 256 splits 12.8 / 11.1 / 10.3 /
    9.7 us; 1,027 splits 25.7 / 21.2 / 20.4 / 24.0; 4,105 splits 48.5 / 45.5 / 56.3 / 77.1;
    from 16,421 one warp is best (section 28). In the planned call, where the scan's tiles
    follow the decode's blocks, 2 beat 4 at 1,027 splits (22.4 against 23.1 us) and 8 beat 2
    at 256 (12.4 against 13.2). The thresholds lie between the measured points.

    >>> [warps_per_split(n) for n in (256, 1000, 4000, 10**6)]
    [8, 2, 2, 1]
    """
    if nsplits < _FEWEST_SPLITS:
        return 8
    return 2 if nsplits < FEW_SPLITS else 1


#: resident blocks of the decode per SM (``__launch_bounds__(256, 5)``, and the shared memory)
BLOCKS_PER_SM = 5
#: a split with more than this many times the mean code bytes is long: the planned call's
#: second and later launches take the long splits first (:func:`long_splits_first`)
LONG_SPLIT = 1.25
#: the waves of decode blocks (over every SM's resident blocks) up to which that order pays
ORDER_WAVES = 4


def long_splits_first(split_codes) -> np.ndarray:
    """The order in which the decode's warps take the splits: every long split (more than
    :data:`LONG_SPLIT` times the mean code bytes), then the others, each part in index order.

    Blocks start in index order, so a launch of a few waves used to end with whatever long
    splits its last blocks drew; with the long ones first the last wave holds short ones, and
    neighbours stay neighbours (their blocks keep their tables in shared memory). H200, GPU
    time of the planned kernel, dbtext (BENCHMARKS.md section 31): 8 MiB 27.5 -> 26.3 us,
    16 MiB 44.9 -> 41.0, 32 MiB 70.5 -> 64.8, 64 MiB 119.4 -> 117.2, 1 GiB even; sorting the
    long ones longest first lost from 24 MiB on (their tables mix), and within one wave (4 MiB)
    there is no last wave to spare.

    Parameters
    ----------
    split_codes : numpy.ndarray of int64, shape (nsplits + 1,)
        The splits' code positions (the host layout's).

    Returns
    -------
    numpy.ndarray of uint32, shape (nsplits,)
        A permutation of the split indices.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.kernels.fsst_decode import long_splits_first
    >>> long_splits_first(np.array([0, 10, 40, 50, 60, 100])).tolist()
    [1, 4, 0, 2, 3]
    """
    lengths = np.diff(np.asarray(split_codes, dtype=np.int64))
    if not lengths.size:
        return np.zeros(0, np.uint32)
    long = lengths > LONG_SPLIT * lengths.mean()
    return np.concatenate([np.flatnonzero(long), np.flatnonzero(~long)]).astype(np.uint32)


def _check_codes(codes, ncodes: int) -> None:
    """Refuse a codes buffer the decode kernel's aligned loads could read past."""
    if codes.nbytes < padded_size(ncodes):
        raise ValueError(f"codes buffer of {codes.nbytes} bytes, need {padded_size(ncodes)}")
    if codes.data.ptr % 16:
        raise ValueError("the decode kernel needs a 16-byte aligned codes buffer")


def _decode_blocks(nsplits: int, wps: int = 1) -> int:
    """Blocks of the decode kernel: ``wps`` warps per split, WARPS_PER_BLOCK warps a block."""
    return (nsplits * wps + WARPS_PER_BLOCK - 1) // WARPS_PER_BLOCK


def _tiles(nlengths: int) -> int:
    """Tiles of the offsets scan (at least one: tile 0 writes the first offsets)."""
    return max(1, (nlengths + SCAN_TILE - 1) // SCAN_TILE)


def scan_scratch_nbytes(nlengths: int) -> int:
    """Bytes of zeroed device scratch the offsets scan of ``nlengths`` lengths needs: a status
    word per tile of :data:`SCAN_TILE` lengths and the tile counter.

    >>> scan_scratch_nbytes(0), scan_scratch_nbytes(4097)
    (16, 24)
    """
    return 8 * (_tiles(nlengths) + 1)


def launch_offsets(lengths, out, col_first, col_base, col_obyte, col_wide, err, *,
                   stream=None) -> None:
    """Enqueue the Arrow offsets of one column or a batch on ``stream`` (no host sync).

    Column ``c``'s lengths are ``lengths[col_first[c]:col_first[c + 1]]``; its offsets (0, then
    the running sum) are written to the bytes of ``out`` from ``col_obyte[c]``, as int64 where
    ``col_wide[c]`` else int32; ``col_base[c]`` is the sum of every length before the column.
    All CuPy arrays: ``lengths`` uint8/16/32/64; ``col_first`` int64 (ncols + 1); ``col_base``,
    ``col_obyte`` int64 (ncols); ``col_wide`` uint8 (ncols); ``out`` uint8, 8-byte aligned;
    ``err`` one int32 that a scan which cannot finish ORs 64 into (never in a correct launch).
    One launch (``offsets_one_pass`` in ``fsst_decode.cu``) and a zeroed scratch allocation.

    Examples
    --------
    >>> import fsstgpu
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     import cupy as cp
    ...     from fsstgpu.kernels.fsst_decode import launch_offsets
    ...     out, err = cp.empty(16, cp.uint8), cp.zeros(1, cp.int32)
    ...     launch_offsets(cp.array([3, 0, 2], cp.uint8), out, cp.array([0, 3]), cp.array([0]),
    ...                    cp.array([0]), cp.array([0], cp.uint8), err)
    ...     assert out.view(cp.int32)[:4].get().tolist() == [0, 3, 3, 5]
    """
    cp = get_cupy()
    n = int(lengths.shape[0])
    ntiles = _tiles(n)
    with on_arrays_device("launch_offsets", lengths=lengths, out=out, err=err), \
            on_stream(stream):
        status = cp.zeros(scan_scratch_nbytes(n) // 8, dtype=cp.uint64)
        scan = _function(f"offsets_one_pass<{_LEN_CTYPES[np.dtype(lengths.dtype)]}>")
        scan((ntiles,), (256,), (lengths, np.int64(n), status, np.int64(ntiles), col_first,
                                 col_base, col_obyte, col_wide, np.int32(col_base.shape[0]), out,
                                 err, np.uint64(SCAN_TIMEOUT_NS)))


class PlannedDecode:
    """:func:`launch_decode` and :func:`launch_offsets` of one device column or batch, planned
    once and launched through the CUDA driver (:mod:`fsstgpu.kernels.driver`) as a memset and
    one kernel (``decode_planned`` in ``fsst_decode.cu``): the decode's blocks, then the
    scan's tiles, and the last block to finish copies the flags into host memory.

    Everything but the output, the scan's scratch, the error flag and the flags' host slot is
    fixed when the plan is made: the function, the grid, the inputs' device addresses (the plan
    holds no reference to them: its owner keeps them alive) and every scalar. A call rewrites
    six arguments, zeroes the scratch and flags and makes the launch, under a lock, so threads
    may share a plan.
    Where the driver has CUDA graphs the memset and the launch are captured into one on the
    second call and replayed from then on (:class:`~fsstgpu.kernels.driver.Replay`;
    ``use_graph`` False launches them one by one). The same device functions, the same bytes
    as the two launchers.

    Parameters
    ----------
    codes, split_codes, split_out, split_table, tab_sym, tab_len, lengths, col_first, col_base,
    col_obyte, col_wide : cupy.ndarray
        As :func:`launch_decode` and :func:`launch_offsets` take them.
    ncodes, ntables, out_size : int
        Likewise.
    host_splits : callable, optional
        Returns the split positions and tables on the host (``split_codes`` and
        ``split_table``'s host copies). Where given, the second call plans finer work from
        them (:meth:`_refine`): pieces of splits (:mod:`fsstgpu.kernels.split_pieces`) for a
        decode of one wave of blocks, the long splits first (:func:`long_splits_first`) for
        one of up to :data:`ORDER_WAVES` waves; the same bytes either way.

    Attributes
    ----------
    scratch_nbytes : int
        Bytes of 8-byte aligned device scratch a call needs, zeroed before each call: the
        scan's (:func:`scan_scratch_nbytes`) and the count of finished blocks.
    use_graph : bool
        Whether calls replay a CUDA graph (default: where the driver has the calls).
    order : cupy.ndarray of uint32 or None
        The split order the launches use, once made.
    pieces : tuple of cupy.ndarray or None
        Once made: each split's first piece, each piece's table, and where the pieces start
        in the codes and in the output (``npieces + 1`` each).

    Examples
    --------
    >>> import fsstgpu
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     import cupy as cp, pyarrow as pa
    ...     from fsstgpu.kernels.fsst_decode import PlannedDecode
    ...     dev = fsstgpu.to_device(fsstgpu.compress(pa.array(["ab", "ab"])))
    ...     plan = PlannedDecode(dev.codes, dev.ncodes, dev.split_codes, dev.split_out,
    ...                          dev.split_table, dev.tab_sym, dev.tab_len, dev.ntables,
    ...                          dev.total, dev.lengths, *dev.scan_args)
    ...     out, offsets = cp.empty(4, cp.uint8), cp.empty(16, cp.uint8)
    ...     scratch = cp.zeros(plan.scratch_nbytes + 4, cp.uint8)  # then the error word
    ...     at = scratch.data.ptr
    ...     plan(out.data.ptr, offsets.data.ptr, at, at + plan.scratch_nbytes,
    ...          cp.cuda.get_current_stream().ptr)
    ...     assert bytes(out.get()) == b"abab"
    """

    def __init__(self, codes, ncodes: int, split_codes, split_out, split_table, tab_sym,
                 tab_len, ntables: int, out_size: int, lengths, col_first, col_base, col_obyte,
                 col_wide, *, host_splits=None):
        ptr, i64, i32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int32
        n = int(lengths.shape[0])
        ntiles = _tiles(n)
        lt = _LEN_CTYPES[np.dtype(lengths.dtype)]
        self.scratch_nbytes = scan_scratch_nbytes(n) + 8
        nsplits = int(split_table.shape[0])
        wps, decode_blocks = 1, 0
        if nsplits:
            _check_codes(codes, ncodes)
            wps = warps_per_split(nsplits)
            decode_blocks = _decode_blocks(nsplits, wps)
        # the cells a call rewrites: the output, the scratch, the offsets, the flags and their
        # host slot (_OUT, _STATUS, _OFFSETS, _ERR, _NFLAGS, _HOST)
        self._ntiles = ntiles
        self._args = [
                (ptr, codes.data.ptr), (i64, ncodes), (ptr, split_codes.data.ptr),
                (ptr, split_out.data.ptr), (ptr, split_table.data.ptr), (i64, nsplits),
                (ptr, tab_sym.data.ptr), (ptr, tab_len.data.ptr), (i32, ntables), (ptr, 0),
                (i64, out_size), (i32, wps), (ptr, 0),
                (i64, decode_blocks), (ptr, lengths.data.ptr),
                (i64, n), (ptr, 0), (i64, ntiles), (ptr, col_first.data.ptr),
                (ptr, col_base.data.ptr), (ptr, col_obyte.data.ptr), (ptr, col_wide.data.ptr),
                (i32, int(col_base.shape[0])), (ptr, 0), (ctypes.c_uint64, SCAN_TIMEOUT_NS),
                (ptr, 0), (i32, 0), (ptr, 0)]
        self._launch = Launch(_function(f"decode_planned<{lt}>"), decode_blocks + ntiles,
                              32 * WARPS_PER_BLOCK, self._args)
        self._lock = threading.Lock()
        self.use_graph = graphs() is not None
        self._replay = None
        self._calls = 0
        # finer work (pieces or an order) is planned on the second call, as the graph is: a
        # column decoded once does not pay for it
        slots = BLOCKS_PER_SM * device_limits(get_cupy().cuda.Device().id).sms
        self._host = host_splits
        self._decode_blocks, self._slots = decode_blocks, slots
        self.order = self.pieces = None
        self._ready = None  # (stream, event) after the refinement's uploads and kernel

    def __call__(self, out: int, offsets: int, scratch: int, err: int, stream: int,
                 zero_words: int = 0, flags_to: int = 0, nflags: int = 0) -> None:
        """Enqueue the offsets into device address ``offsets`` and the decode into ``out`` on
        ``stream`` (a CUstream handle), with ``scratch_nbytes`` of scratch at ``scratch`` and
        the decode's error word at ``err``, after zeroing ``zero_words`` 32-bit words from
        ``scratch`` (the caller zeroes what this does not: the scratch, then the error word);
        then, with ``nflags``, the ``nflags`` int32 from ``err`` copied to ``flags_to`` (a
        device address of host memory: :mod:`fsstgpu.kernels.host_flags`)."""
        with self._lock:
            self._calls += 1
            if self._calls == 2 and self._host is not None:
                self._refine(stream)
            if self._ready is not None:
                self._wait_ready(stream)
            launch = self._launch
            launch.set(_OUT, out)
            launch.set(_STATUS, scratch)
            launch.set(_OFFSETS, offsets)
            launch.set(_ERR, err)
            launch.set(_NFLAGS, nflags if flags_to else 0)
            launch.set(_HOST, flags_to)
            # a graph from the second call on: capturing and instantiating one costs more than
            # the launch it replaces, so a column decoded once (a host column's upload makes
            # a new device column every call) launches directly
            if self.use_graph and self._calls > 1 and (
                    self._replay is None or self._replay.memset_words != zero_words):
                try:  # captured with this call's pointers, then replayed
                    self._replay = Replay([launch], zero_words, scratch)
                except DeviceError:  # a driver that cannot: one launch at a time from now on
                    self.use_graph, self._replay = False, None
            if self.use_graph and self._replay is not None:
                self._replay(stream, memset_dst=scratch)
                return
            if zero_words:
                memset_d32(scratch, 0, zero_words, stream)
            launch(stream)

    def _refine(self, stream: int) -> None:
        """The second call's plan, from the host's split positions and tables (uploads and
        the pieces' kernel enqueued on ``stream``, before the launch): a decode whose blocks
        all fit on the GPU at once decodes pieces of splits, where some split is longer than
        the codes spread over every resident warp; one of one to ORDER_WAVES waves takes the
        long splits first. H200, GPU time, dbtext (BENCHMARKS.md section 31): pieces 4 MiB
        20.8 -> 17.0 us, 8 MiB 27.4 -> 25.3, even with the order at 16 MiB and behind it at
        32 MiB; pieces sized for two or four waves lost everywhere."""
        cp = get_cupy()
        split_codes, split_table = self._host()
        self._host = None
        with cp.cuda.ExternalStream(stream):
            if self._decode_blocks <= self._slots:
                w = piece_bytes(split_codes, WARPS_PER_BLOCK * self._slots)
                if w:
                    self._use_pieces(cp, split_codes, split_table, w, stream)
            elif self._decode_blocks <= ORDER_WAVES * self._slots:
                self.order = cp.asarray(long_splits_first(split_codes))
                self._launch.set(_ORDER, self.order.data.ptr)
            else:
                return
            done = cp.cuda.Event(disable_timing=True)
            done.record()
        self._ready = (stream, done)

    def _wait_ready(self, stream: int) -> None:
        """A launch on another stream than the refinement's waits for its uploads and kernel
        (an event wait, until the event has passed: no host sync)."""
        at, done = self._ready
        if done.done:
            self._ready = None
        elif stream != at:
            get_cupy().cuda.ExternalStream(stream).wait_event(done)

    def _use_pieces(self, cp, split_codes, split_table, w: int, stream: int) -> None:
        """Find the pieces on the GPU (``split_pieces``) and decode them from now on."""
        first, table = plan_pieces(split_codes, split_table, w)
        npieces, nsplits = len(table), len(split_table)
        first, table = cp.asarray(first), cp.asarray(table)
        piece_codes = cp.empty(npieces + 1, cp.int64)
        piece_out = cp.empty(npieces + 1, cp.int64)
        ptr, i64 = ctypes.c_void_p, ctypes.c_int64
        # the codes, the splits and the tables as the decode has them, then the pieces' arrays
        Launch(_function("split_pieces"), -(-nsplits // WARPS_PER_BLOCK), 32 * WARPS_PER_BLOCK,
               [*self._args[:_OUT], self._args[_OUT_SIZE], (ptr, first.data.ptr), (i64, w),
                (ptr, piece_codes.data.ptr), (ptr, piece_out.data.ptr)])(stream)
        self.pieces = (first, table, piece_codes, piece_out)
        blocks = _decode_blocks(npieces)  # a warp a piece
        args = list(self._args)
        args[_SPLIT_CODES] = (ptr, piece_codes.data.ptr)
        args[_SPLIT_OUT] = (ptr, piece_out.data.ptr)
        args[_SPLIT_TABLE] = (ptr, table.data.ptr)
        args[_NSPLITS], args[_BLOCKS] = (i64, npieces), (i64, blocks)
        args[_WPS] = (ctypes.c_int32, 1)
        self._launch = Launch(self._launch.function, blocks + self._ntiles,
                              32 * WARPS_PER_BLOCK, args)
