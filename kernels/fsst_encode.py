"""Launchers of the GPU FSST encoder (``fsst_encode.cu``) and its UTF-8 check.

:func:`encode_lookups` turns a SymbolTable into the kernel's lookups (built on the host, a few
hundred KB, uploaded once per table); :func:`encode_on_device` encodes a column's strings in two
launches (each string parsed once into a stage at its own bytes with its codes' count, a prefix
sum, the staged codes copied into place a warp per 32 strings) and returns the codes and their
offsets on the device. The CPU twin is the compiled encoder (:func:`fsstgpu.native.encode_blocks`
with the same table): greedy longest match, so the same codes byte for byte.

>>> from fsstgpu import SymbolTable
>>> from fsstgpu.kernels.fsst_encode import bucket_of, encode_lookups
>>> look = encode_lookups(SymbolTable([b"a", b"ab", b"http", b"https"]))
>>> [hex(look["short_best"][i]) for i in (ord("a"), int.from_bytes(b"ab", "little"), ord("z"))]
['0x100', '0x201', '0x7a']
>>> r = int(look["bucket_range"][bucket_of(int.from_bytes(b"htt", "little"))])
>>> [(int(x) & 0xFF, int(x) >> 8) for x in look["cand_lc"][r & 0xFFFF : r >> 16]]  # longest first
[(5, 3), (4, 2)]
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import NamedTuple

import numpy as np

from fsstgpu.device import get_cupy, on_arrays_device
from fsstgpu.kernels.encode_chunks import (
    CHUNK,
    LONG_MIN,
    MIN_CHUNK,
    check_chunking,
    chunk_counts,
    chunk_out,
    compact_cuts,
    cut_slots,
    plan_from_counts,
    resolve_entries,
    string_codes,
    valid_lengths,
)
from fsstgpu.kernels.fsst_decode import launch_check_utf8, padded_size
from fsstgpu.kernels.loader import get_function, on_stream
from fsstgpu.kernels.table_lookups import BUCKETS, bucket_of, encode_lookups, encode_lookups_many

__all__ = ["BUCKETS", "CACHED_TABLES", "CHECK_AT", "STATUS_SIZE", "CheckResults", "bucket_of",
           "check_results", "chunk_maps_on_device", "device_lookups", "encode_lookups",
           "encode_on_device", "first_invalid_utf8", "launch_check", "many_lookups"]

SOURCE = "fsst_encode.cu"
THREADS = 256


#: the tables whose lookups :func:`device_lookups` keeps on each device (~130 KB each)
CACHED_TABLES = 16
_held: OrderedDict = OrderedDict()  # (device, id(table)) -> (table, device lookups)
_held_lock = threading.Lock()  # the cache, for callers on several threads


def device_lookups(table) -> dict:
    """``table``'s :func:`encode_lookups` on the current device, built and uploaded once per
    table (the last :data:`CACHED_TABLES` kept): a call of :func:`encode_on_device` without
    them spends ~100 us building them on the host and six uploads (the 16 MiB
    ``compress_device`` call took 1.7 ms). Uploaded on a stream of their own and waited for
    before they are kept, since any stream may read them. They live in one allocation of their
    own, outside CuPy's memory pool, released only after the device has finished its work
    (:class:`_WaitedAllocation`): a kernel on any stream may still read them when the cache and
    its last caller let them go, where the pool would hand the bytes out again at once.

    Examples
    --------
    >>> import fsstgpu
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     from fsstgpu.kernels.fsst_encode import device_lookups
    ...     t = fsstgpu.SymbolTable([b"ab"])
    ...     assert device_lookups(t) is device_lookups(t)
    """
    cp = get_cupy()
    key = (cp.cuda.Device().id, id(table))
    with _held_lock:
        held = _held.get(key)
        if held is not None and held[0] is table:  # (the table is held: its id is not reused)
            _held.move_to_end(key)
            return held[1]
    lookups = _unpooled(cp, encode_lookups(table))
    # the tables let go are freed outside the lock (their release waits for the device), and
    # only once no caller holds them either
    dropped = []
    with _held_lock:
        _held[key] = (table, lookups)
        while len(_held) > CACHED_TABLES:
            dropped.append(_held.popitem(last=False))
    del dropped
    return lookups


class _WaitedAllocation:
    """``nbytes`` of device memory from ``cudaMalloc`` on the current device, freed once the
    device has finished the work enqueued before (a device synchronisation first: ``cudaFree``
    itself only *may* wait)."""

    def __init__(self, cp, nbytes: int):
        self.device = cp.cuda.Device().id
        self.ptr = cp.cuda.runtime.malloc(nbytes)

    def __del__(self):
        try:
            cp = get_cupy()
            with cp.cuda.Device(self.device):
                cp.cuda.runtime.deviceSynchronize()
                cp.cuda.runtime.free(self.ptr)
        except Exception:  # noqa: BLE001 (at interpreter exit CUDA may be gone)
            pass


def _unpooled(cp, arrays: dict) -> dict:
    """Device copies of the host ``arrays`` in one :class:`_WaitedAllocation` (each from a
    256-byte boundary), uploaded on a stream of their own and waited for."""
    starts, size = {}, 0
    for name, host in arrays.items():
        starts[name] = size
        size += -(-max(host.nbytes, 1) // 256) * 256
    staged = np.zeros(size, np.uint8)
    for name, host in arrays.items():
        staged[starts[name] : starts[name] + host.nbytes] = host.view(np.uint8)
    block = _WaitedAllocation(cp, size)
    memory = cp.cuda.UnownedMemory(block.ptr, size, block, block.device)
    own = cp.cuda.Stream(non_blocking=True)
    cp.cuda.runtime.memcpyAsync(block.ptr, staged.ctypes.data, size,
                                cp.cuda.runtime.memcpyHostToDevice, own.ptr)
    own.synchronize()
    base = cp.cuda.MemoryPointer(memory, 0)
    return {name: cp.ndarray(host.shape, host.dtype, memptr=base + starts[name])
            for name, host in arrays.items()}


def _pointer(array):
    """A kernel argument for an optional array: the array, or a null pointer."""
    return np.uint64(0) if array is None else array


def _blocks(n: int) -> int:
    return max(1, min((n + THREADS - 1) // THREADS, 65536))


#: the encode kernels, each for one table and for several (``fsst_encode.cu``'s MULTI)
_TABLED = ("fsst_encode_stage", "fsst_encode_compact", "fsst_encode_chunks_count",
           "fsst_encode_chunks_write")
KERNEL_NAMES = tuple(f"{name}<{multi}>" for name in _TABLED for multi in ("false", "true"))


def _fn(name: str, look: tuple | None = None):
    """Kernel ``name``; an encode kernel's instantiation for the tables of ``look``
    (:func:`_in_kernel_order`'s)."""
    if name not in _TABLED:
        return get_function(SOURCE, name)
    multi = "true" if int(look[-1]) > 1 else "false"
    return get_function(SOURCE, f"{name}<{multi}>", name_expressions=KERNEL_NAMES)


def encode_on_device(table, data, offsets, validity=None, *, stream=None, fill=None,
                     lookups=None, padded=False, long_min=LONG_MIN, chunk=CHUNK, cut_size=0,
                     lengths=None, status=None, on_status=None, also=None, block_starts=None):
    """Encode strings on the device with ``table``: ``(codes, code_offsets)``, CuPy arrays;
    with ``cut_size``, ``(codes, code_offsets, cuts)``.

    ``data`` (uint8, 8-byte aligned) and ``offsets`` (int64, n + 1, checked by the caller to
    lie inside ``data`` in order) are CuPy arrays of one device, where the work runs (not
    necessarily the current one; arrays of several are refused); ``validity`` (uint8 bitmap or
    None) leaves null strings without codes. ``fill`` poisons the codes buffer
    before the codes are written (tests); ``lookups`` reuses :func:`encode_lookups`' arrays
    already on the device; ``padded`` puts the codes at the start of an allocation of
    :func:`~fsstgpu.kernels.fsst_decode.padded_size` bytes whose bytes past them are zero (the
    decoder's loads reach them). Strings longer than ``long_min`` bytes are encoded in chunks
    of ``chunk`` bytes (:mod:`fsstgpu.kernels.encode_chunks`; ``long_min=None``: one thread a
    string, whatever its length). ``cut_size`` also finds the splits' cuts inside strings
    longer than it (:func:`fsstgpu.scan.long_string_cuts`' rule) as their codes are written:
    ``cuts`` is ``(code positions, places in their strings, rows)``, or None where the write
    pass cannot (``cut_size`` under 64, or ``long_min=None``); every string longer than
    ``cut_size`` is then encoded in chunks. ``lengths``: the strings' lengths, 0 for nulls
    (:func:`~fsstgpu.kernels.encode_chunks.valid_lengths`), where the caller has them.
    ``status``: :func:`launch_check`'s array, whose offsets need not be checked yet: the first
    kernel reads its flag and leaves where they are out of bounds, and the status comes back
    with the encode's first wait, handed to ``on_status`` (a host int64 array, as
    :func:`check_results` reads it) before any other kernel reads by the offsets (it raises
    there). ``also``: a function of the code offsets (their sums before the long strings'
    codes are added, final where the summary counts no long-string chunk) giving an int64
    device array to bring back in the same copy, whose host copy is ``on_status``' second
    argument. ``block_starts``: a column of several tables, ``table`` their sequence (table
    ``b`` encodes strings ``block_starts[b]:block_starts[b + 1]``; host or device int64, from 0
    to n), as :func:`fsstgpu.native.encode_blocks` takes them; ``lookups`` then are
    :func:`many_lookups`' of them.

    Examples
    --------
    >>> import fsstgpu
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     import cupy as cp
    ...     from fsstgpu import SymbolTable
    ...     codes, offs = encode_on_device(SymbolTable([b"ab"]), cp.frombuffer(b"abx", cp.uint8),
    ...                                    cp.array([0, 3]))
    ...     assert codes.get().tolist() == [0, 255, 120] and offs.get().tolist() == [0, 3]
    """
    cp = get_cupy()
    if data.data.ptr % 8:
        raise ValueError("the encode kernel needs an 8-byte aligned data buffer")
    n = int(offsets.shape[0]) - 1
    cutting = bool(cut_size) and long_min is not None and cut_size >= MIN_CHUNK
    if cutting:  # every string with cuts in chunks
        long_min = min(long_min, cut_size)
        chunk = min(chunk, long_min)
    if (long_min is None or long_min >= data.size) and data.size >= 1 << 30:
        # the stage kernel counts a short string's bytes and codes (up to twice as many) in 32
        # bits: strings longer than check_chunking's largest long_min go in chunks (the same
        # codes); also where a long_min at or above the column's bytes left every string to it
        # (a string of 2 GiB had its bytes cut to a negative count: no codes, no error)
        long_min, chunk = (1 << 28) - 1, CHUNK
    with on_arrays_device("encode_on_device", data=data, offsets=offsets, validity=validity,
                          status=status), on_stream(stream):
        if lookups is None:
            lookups = device_lookups(table) if block_starts is None else \
                many_lookups(table, block_starts)
        code_offsets = cp.zeros(n + 1, cp.int64)
        cuts = (cp.zeros(0, cp.int64),) * 3 if cutting else None  # (no string longer yet)
        if n <= 0:
            codes = cp.zeros(padded_size(0) if padded else 0, cp.uint8)[:0]
            return (codes, code_offsets, cuts) if cut_size else (codes, code_offsets)
        look = _in_kernel_order(lookups)
        common = (data, np.int64(data.size), offsets, np.int64(n), _pointer(validity), *look)
        # no string can be long in a column of at most long_min bytes
        chunking = long_min is not None and data.size > long_min
        if chunking:
            check_chunking(long_min, chunk)  # (the stage kernel divides by chunk)
        skip = np.int64(long_min if chunking else np.iinfo(np.int64).max)
        counts = code_offsets[1:]
        # each short string parsed once, into a stage at its own bytes (BENCHMARKS.md section
        # 49); the long ones' chunks counted on the way: [chunks, most of one, codes' size]
        stage = cp.empty(max(int(data.size), 1), cp.uint8)
        # [chunks, most of one, codes' size], and the check's results behind them where given
        summary = cp.zeros(3, cp.int64) if status is None else status
        guard = _pointer(None if status is None else status[CHECK_AT:])
        _fn("fsst_encode_stage", look)((_blocks(n),), (THREADS,),
                                 (*common, counts, stage, skip, np.int64(chunk or 1), summary,
                                  guard))
        code_offsets[1:] = cp.cumsum(counts)
        summary[2:3] = code_offsets[-1:]
        if also is None:
            values, extra = summary.get(), None  # the one wait without long strings
        else:
            both = cp.concatenate((summary, also(code_offsets))).get()
            values, extra = both[: summary.size], both[summary.size :]
        if on_status is not None:
            on_status(values, extra)
        count, most, total = (int(v) for v in values[:3])
        plan = None
        if count:  # the long strings' chunks: their lengths and running sums
            if lengths is None:
                lengths = valid_lengths(cp, offsets, validity)
            nchunks, ends = chunk_counts(cp, lengths, long_min=long_min, chunk=chunk)
            plan = plan_from_counts(cp, nchunks, ends, count, most, chunk)
        if plan is not None:  # a second wait: the codes' size with the long strings'
            chunk_codes = resolve_entries(cp, plan, *_chunk_maps(cp, plan, data, offsets, look))
            # (the running sums are linear: the long strings' codes add theirs)
            code_offsets[1:] += cp.cumsum(string_codes(cp, plan, chunk_codes[1]))
            total = int(code_offsets[-1])
        codes = cp.empty(padded_size(total) if padded else max(total, 1), cp.uint8)
        if fill is not None:
            codes.fill(fill)
        if padded:
            codes[total:].fill(0)
        _fn("fsst_encode_compact", look)((_blocks(n),), (THREADS,),
                                   (*common, code_offsets, stage, codes, skip))
        del stage
        if plan is not None:
            at = chunk_out(cp, plan, chunk_codes[1], code_offsets)
            cut_lengths = lengths if cutting else None
            found = _write_chunks(cp, plan, data, offsets, look, chunk_codes[0], at, codes,
                                  cut_lengths, cut_size)
            cuts = found if cutting else cuts
    return (codes[:total], code_offsets, cuts) if cut_size else (codes[:total], code_offsets)


def _chunk_args(plan, data, offsets) -> tuple:
    return (data, np.int64(data.size), offsets, plan.chunk_string, plan.chunk_first,
            plan.nchunks, np.int64(plan.chunk), np.int64(plan.count))


def _write_chunks(cp, plan, data, offsets, look, entries, at, codes, cut_lengths, cut_size):
    """The write pass over the long strings' chunks; with ``cut_lengths`` (the strings'
    lengths, 0 for nulls) also the cuts every ``cut_size`` bytes inside them, compacted."""
    cut_args = (np.int64(0), _pointer(None), _pointer(None), _pointer(None))
    if cut_lengths is not None:
        first = cut_slots(cp, cut_lengths, cut_size)
        cut_code = cp.full(int(first[-1]), -1, cp.int64)
        cut_rel = cp.zeros_like(cut_code)
        cut_args = (np.int64(cut_size), first, cut_code, cut_rel)
    _fn("fsst_encode_chunks_write", look)(
        (_blocks(plan.count),), (THREADS,),
        (*_chunk_args(plan, data, offsets), *look, entries, at, codes, *cut_args))
    return None if cut_lengths is None else compact_cuts(cp, first, cut_code, cut_rel)


def _in_kernel_order(lookups: dict) -> tuple:
    """:func:`encode_lookups`' arrays (on the device) as the kernels take them
    (``ENC_TABLES_PARAMS`` in fsst_encode.cu), then the block starts and the table count: a
    null pointer and 1 for one table; :func:`many_lookups`' ``table_starts`` for several."""
    starts = lookups.get("table_starts")
    return (*(lookups[name] for name in ("short_best", "bucket_range", "cand_vm", "cand_lc")),
            _pointer(starts), np.int64(1 if starts is None else int(starts.size) - 1))


def many_lookups(tables, block_starts) -> dict:
    """The lookups of a column of several tables for :func:`encode_on_device`'s ``lookups``:
    :func:`~fsstgpu.kernels.table_lookups.encode_lookups_many` made on the current device, and
    ``table_starts``, the block starts (host or device int64, a table's first string each,
    then n) on the device."""
    cp = get_cupy()
    return {**encode_lookups_many(tables, cp),
            "table_starts": cp.asarray(block_starts, dtype=cp.int64)}


def _chunk_maps(cp, plan, data, offsets, look, *, poison: bool = False):
    """The count pass over the long strings' chunks: where the parse from each of a chunk's 8
    entries leaves it, and its codes (``poison``: the outputs filled first, for tests)."""
    shape = (plan.count, 8)
    exits = cp.full(shape, 0xAB, cp.uint8) if poison else cp.empty(shape, cp.uint8)
    counts = cp.full(shape, -1, cp.int32) if poison else cp.empty(shape, cp.int32)
    _fn("fsst_encode_chunks_count", look)((_blocks(plan.count),), (THREADS,),
                                    (*_chunk_args(plan, data, offsets), *look, exits, counts))
    return exits, counts


def chunk_maps_on_device(table, data, offsets, plan, *, stream=None):
    """The count kernel's maps ``(exits, counts)`` for ``plan`` (a
    :func:`~fsstgpu.kernels.encode_chunks.plan_chunks` of CuPy arrays), for tests against
    :func:`~fsstgpu.kernels.encode_chunks.chunk_maps_cpu`."""
    cp = get_cupy()
    with on_arrays_device("chunk_maps_on_device", data=data, offsets=offsets), on_stream(stream):
        look = _in_kernel_order({k: cp.asarray(v) for k, v in encode_lookups(table).items()})
        return _chunk_maps(cp, plan, data, offsets, look, poison=True)


#: where :func:`launch_check`'s results start in its status array (behind the encode's summary:
#: long strings' chunks, the most of one, the codes' size), and the array's size
CHECK_AT, STATUS_SIZE = 3, 8
_BAD, _MOST, _INSIDE, _BYTES, _UTF8 = range(CHECK_AT, CHECK_AT + 5)


class CheckResults(NamedTuple):
    """:func:`launch_check`'s results on the host (:func:`check_results`)."""

    #: a string's offsets lie outside the data or decrease
    out_of_bounds: bool
    #: the most bytes of a valid string
    most: int
    #: the valid strings' bytes
    valid_bytes: int
    #: (text) the bytes may not all be UTF-8: :func:`first_invalid_utf8` decides
    maybe_not_utf8: bool


def launch_check(data, offsets, validity=None, *, text_span=None, stream=None):
    """Enqueue the one-pass check of device strings that no kernel has read by their offsets
    yet: ``(lengths, status)``, CuPy arrays, without a wait.

    One thread a string checks its own bounds (``0 <= offsets[i] <= offsets[i + 1] <=
    data.size``: the offsets in order and inside the data), writes its length (0 for nulls
    and strings out of bounds) and adds to the column's most and total bytes. With
    ``text_span = (lo, hi)`` (the bytes the strings span, checked by the caller to lie inside
    the data) those bytes are also checked as one UTF-8 stream
    (:func:`~fsstgpu.kernels.fsst_decode.launch_check_utf8`) and no valid non-empty string may
    start, or end before ``hi``, inside a character; the two together pass exactly the
    columns whose valid strings are all UTF-8, and a fail can also come from a null string's
    bytes, for :func:`first_invalid_utf8` to decide. ``status`` (int64,
    :data:`STATUS_SIZE`) is read by :func:`check_results`, or by
    :func:`encode_on_device`'s ``status=`` in its own wait.

    Examples
    --------
    >>> import fsstgpu
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     import cupy as cp
    ...     data = cp.frombuffer(b"ab\\xc3\\xa9x", cp.uint8)
    ...     lengths, status = launch_check(data, cp.array([0, 2, 4, 5]), text_span=(0, 5))
    ...     assert lengths.get().tolist() == [2, 2, 1]
    ...     assert check_results(status.get()) == (False, 2, 5, False)
    """
    cp = get_cupy()
    n = int(offsets.shape[0]) - 1
    with on_arrays_device("launch_check", data=data, offsets=offsets, validity=validity), \
            on_stream(stream):
        status = cp.zeros(STATUS_SIZE, cp.int64)  # (the kernels add to it as unsigned)
        lengths = cp.empty(max(n, 0), cp.int64)
        if n <= 0:
            return lengths, status
        _fn("fsst_encode_check")((_blocks(n),), (THREADS,), (
            data, np.int64(data.size), offsets, np.int64(n), _pointer(validity),
            np.int32(text_span is not None), lengths, status[CHECK_AT:]))
        if text_span is not None and text_span[1] > text_span[0]:
            # (the flag's low half: FSST_ERR_UTF8 set there)
            launch_check_utf8(data, [(*text_span, 0)], status.view(cp.int32)[2 * _UTF8:])
    return lengths, status


def check_results(values) -> CheckResults:
    """:func:`launch_check`'s results from its status array's host copy."""
    return CheckResults(bool(values[_BAD]), int(values[_MOST]), int(values[_BYTES]),
                        bool(values[_INSIDE] or values[_UTF8]))


def first_invalid_utf8(data, offsets, validity=None, *, stream=None) -> int:
    """The index of the first valid string that is not UTF-8, or -1 (device arrays as for
    :func:`encode_on_device`)."""
    cp = get_cupy()
    n = int(offsets.shape[0]) - 1
    if n <= 0:
        return -1
    with on_arrays_device("first_invalid_utf8", data=data, offsets=offsets,
                          validity=validity), on_stream(stream):
        first = cp.full(1, np.iinfo(np.uint64).max, cp.uint64)
        _fn("utf8_first_invalid")((_blocks(n),), (THREADS,),
                                  (data, offsets, np.int64(n), _pointer(validity), first))
        found = int(first.get()[0])
    return -1 if found == np.iinfo(np.uint64).max else found
