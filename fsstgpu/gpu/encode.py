"""Compression on the GPU (issue #25): strings encoded by a GPU kernel with a table trained on
the CPU, into a compressed column that stays on the GPU.

:func:`compress_device` takes device strings (a :class:`~fsstgpu.DeviceStringArray`) or a host
column, checks them on the device (offsets inside the data and in order, UTF-8 for text
types: one pass, :func:`fsstgpu.kernels.fsst_encode.launch_check`, whose results come back in
the encode's first wait, so a call with a table waits twice: the strings' ends, then the
codes' size with the split rows' offsets where there are no nulls), encodes them with
:mod:`fsstgpu.kernels.fsst_encode` (greedy longest match: byte for byte the codes of
``fsstgpu.compress(column, table=table)``) and plans the split points where the codes are
(:mod:`fsstgpu.gpu.encoded`): a :class:`~fsstgpu.gpu.arrays.DeviceCompressedStringArray` that
:func:`fsstgpu.decompress_device` decodes and whose ``to_host()`` is the CPU encoder's column.
The table is the caller's, or trained on the CPU from a sample of whole strings spread over the
column (copied back: at most ``sample_bytes``). One table, one block: the CPU's block planner
walks the whole column, which would bring it all back.

Long strings are encoded in chunks whose entries are resolved by a scan
(:mod:`fsstgpu.kernels.encode_chunks`), whose write pass also finds the split plan's cuts inside
them (split sizes of 64 bytes and more; smaller ones walk the long strings' codes on the host),
and text is checked as one UTF-8 stream. Not done yet (issue #25): training from a device
column samples evenly rather than as the CPU trainer does. Files:
``compress_file(..., device="gpu")`` encodes host row groups with
:class:`fsstgpu.gpu.block_encode.GpuBlockEncoder`.
"""

from __future__ import annotations

import numpy as np

from fsstgpu.arrow_layout import from_arrow
from fsstgpu.blocks import FAST_SAMPLE_BYTES
from fsstgpu.device import get_cupy, on_arrays_device, resolve_device
from fsstgpu.errors import CorruptDataError
from fsstgpu.gpu.arrays import DeviceCompressedStringArray
from fsstgpu.gpu.block_tables import fast_block_starts, fast_tables
from fsstgpu.gpu.encoded import device_column, prefetch_rows, rows_from, valid_offsets
from fsstgpu.gpu.strings import DeviceStringArray
from fsstgpu.inputs import as_string_column
from fsstgpu.kernels.fsst_encode import (
    CheckResults,
    check_results,
    encode_on_device,
    first_invalid_utf8,
    launch_check,
)
from fsstgpu.kernels.loader import on_stream
from fsstgpu.limits import check_blocks
from fsstgpu.splits import DEFAULT_SPLIT_SIZE
from fsstgpu.symbol_table import SymbolTable
from fsstgpu.training import check_compression_options, train
from fsstgpu.types import is_text

__all__ = ["compress_device"]


def compress_device(strings, table=None, *, level=None, sample_bytes=None,
                    split_size=DEFAULT_SPLIT_SIZE, stream=None,
                    fill=None) -> DeviceCompressedStringArray:
    """Compress a string column with FSST on the GPU, into a compressed column on the GPU.

    Parameters
    ----------
    strings : DeviceStringArray or a host string column
        Device strings (e.g. :func:`fsstgpu.decompress_device`'s result; compressed on the
        device their buffers lie on, which must be one), or any column :func:`fsstgpu.compress`
        takes (uploaded first, to the current device).
    table : SymbolTable or bytes, optional
        The symbol table (one block). Default: trained on the CPU from whole strings spread
        evenly over the column, at most ``sample_bytes`` of them copied back.
    level : {None, "fast"}
        Without a table: ``"fast"`` plans a table a block as ``fsstgpu.compress(column,
        level="fast")`` does (a block a MiB of strings, a 16 KB sample each, gathered on the
        device and trained on every core: :mod:`fsstgpu.gpu.block_tables`), so ``to_host()``
        equals that call's column (dbtext: ratio 1.99 where one table gives 1.43; each table
        costs ~0.5 ms of one core's training: BENCHMARKS.md section 65); None: one table
        for the column.
    sample_bytes : int, optional
        The training sample (default the trainer's, 49152 bytes; ``"fast"``: a block's, 16384).
    split_size : int
        As for :func:`fsstgpu.compress`.
    stream : cupy.cuda.Stream, optional
    fill : int, optional
        Poison the device codes buffer with this byte before the codes are written (tests).

    Returns
    -------
    DeviceCompressedStringArray
        On the device, ready for :func:`fsstgpu.decompress_device`; its ``to_host()`` is equal
        to ``fsstgpu.compress(column, table=table)`` (blobs, the extension type, files).

    Raises
    ------
    CorruptDataError
        For device offsets outside the data or decreasing, a validity bitmap shorter than the
        column, or a text string that is not UTF-8.
    DeviceError
        Without a usable GPU.

    Examples
    --------
    >>> import fsstgpu, pyarrow as pa
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     col = pa.array(["http://a.example/x", None, "http://b.example/y"] * 100)
    ...     t = fsstgpu.train(col)
    ...     dev = fsstgpu.compress_device(col, t)
    ...     assert fsstgpu.decompress_device(dev).to_arrow().equals(col)
    ...     assert dev.to_host().equals(fsstgpu.compress(col, table=t))
    ...     fast = fsstgpu.compress_device(col, level="fast")
    ...     assert fast.to_host().equals(fsstgpu.compress(col, level="fast"))
    """
    # the caller's options first, as compress checks them (int(sample_bytes or default) took 1.5
    # and True as 1, 0 as the default)
    table, target, split_size = check_compression_options(table, sample_bytes, split_size)
    if level not in (None, "fast"):
        raise ValueError(f"level must be None or 'fast' on the device, not {level!r} (the "
                         "'default' level's planner walks the column on the CPU: "
                         "fsstgpu.compress)")
    fast = table is None and level == "fast"
    if fast and sample_bytes is None:
        target = FAST_SAMPLE_BYTES
    resolve_device("gpu")
    cp = get_cupy()
    validity, offsets, data = (strings.buffers() if isinstance(strings, DeviceStringArray)
                               else (None, None, None))
    # device strings: the work on their device (host strings go to the current one)
    with on_arrays_device("compress_device", validity=validity, offsets=offsets, data=data), \
            on_stream(stream):
        type_, n, data, offsets, validity, null_count, chunks, checked, nbytes = \
            _on_device(cp, strings)
        # one pass checks the strings (unless from the host) and finds their lengths, most and
        # total bytes; its results come back in the encode's first wait, where a table is given
        # (BENCHMARKS.md section 57): the encode's first kernel leaves on offsets out of bounds
        text_span = None if checked or not is_text(type_) else (0, nbytes)
        lengths, status = launch_check(data, offsets, validity, text_span=text_span)
        results, rows_back = [], []  # the check's (CorruptDataError where the strings fail)

        def read_back(values, extra=None):
            if not results:
                results.append(_checked(type_, data, offsets, validity, check_results(values)))
            if extra is not None and not values[0]:  # (no long strings: final code offsets)
                rows_back.append(rows_from(extra))

        if table is None or not n:  # the sample is gathered by the offsets: checked first
            read_back(status.get())
        block_starts = out_offsets = None
        if fast:  # a table a block, as the CPU's "fast" level (the offsets checked above)
            out_offsets = valid_offsets(cp, offsets, lengths, validity)
            block_starts = fast_block_starts(cp, out_offsets, chunks)
            check_blocks(len(block_starts) - 1)
            table = fast_tables(data, offsets, out_offsets, block_starts, target)
            if len(table) == 1:
                table, block_starts = table[0], None
        elif table is None:
            table = _trained(cp, data, offsets, lengths, target, results[0].valid_bytes)
        # without nulls the split rows are known before the encode (the bytes are the data's):
        # their offsets come back in the encode's wait
        also = None if validity is not None or not n else \
            prefetch_rows(cp, offsets, split_size, nbytes, block_starts)
        codes, code_offsets, cuts = encode_on_device(
            table, data, offsets, validity, stream=stream, fill=fill, padded=True,
            cut_size=split_size, lengths=lengths, status=status,
            on_status=read_back, also=also, block_starts=block_starts)
        return device_column(cp, table, type_, n, codes, code_offsets, offsets, lengths,
                             validity, null_count, chunks, split_size, cuts,
                             total=results[0].valid_bytes, most=results[0].most,
                             rows_back=rows_back[0] if rows_back else None,
                             block_starts=block_starts, out_offsets=out_offsets)


def _on_device(cp, strings):
    """(type, n, data, int64 offsets from 0, validity or None, null count, chunk lengths,
    checked, the strings' bytes) of ``strings`` on the device, data 8-byte aligned and starting
    at the first string; ``checked``: a host column, whose offsets and UTF-8
    :func:`fsstgpu.arrow_layout.from_arrow` checked before its upload (device strings get
    :func:`fsstgpu.kernels.fsst_encode.launch_check`; their first and last offsets are read
    here, one wait)."""
    if isinstance(strings, DeviceStringArray):
        strings.check_buffers()  # the kernels read data and validity by pointer
        n = strings.length
        lo = hi = 0
        if n:  # (offsets 0 and n: a strided view's copy back, no concatenation)
            lo, hi = (int(v) for v in strings.offsets[::n].get())
        if not 0 <= lo <= hi <= int(strings.data.size):
            raise CorruptDataError("the device strings' offsets lie outside their data or "
                                   "decrease")
        # int64 offsets from 0 (a decode's, say) are taken as they are: the kernels only read
        # them
        offsets = strings.offsets if lo == 0 and strings.offsets.dtype == cp.int64 else \
            cp.subtract(strings.offsets, lo, dtype=cp.int64)
        data = strings.data[lo:hi]
        if data.data.ptr % 8:  # the kernel's aligned loads
            data = data.copy()
        return (strings.type, n, data, offsets, strings.validity, strings.null_count,
                strings.chunk_lengths, False, hi - lo)
    plain = from_arrow(as_string_column(strings))
    data = cp.asarray(np.ascontiguousarray(plain.data)) if len(plain.data) else \
        cp.zeros(0, cp.uint8)
    validity = None if plain.validity is None else cp.asarray(plain.validity)
    return (plain.type, len(plain), data, cp.asarray(plain.offsets), validity,
            plain.null_count, plain.chunk_lengths, True, int(plain.offsets[-1]))


def _checked(type_, data, offsets, validity, results: CheckResults) -> CheckResults:
    """``results`` where the strings passed, else CorruptDataError: offsets outside the data
    or decreasing, or the first valid string that is not UTF-8 (named by the check string by
    string, slow for long strings, where the stream check failed)."""
    if results.out_of_bounds:
        raise CorruptDataError("the device strings' offsets lie outside their data or decrease")
    if results.maybe_not_utf8:
        bad = first_invalid_utf8(data, offsets, validity)
        if bad >= 0:
            raise CorruptDataError(f"string {bad} of a {type_} column is not UTF-8")
    return results


def _trained(cp, data, offsets, lengths, target: int, total: int) -> SymbolTable:
    """A table trained on the CPU from whole strings of the device column (its device
    ``offsets`` and ``lengths``, 0 for nulls, ``total`` bytes of them) spread over it
    (:func:`_sample_picks`, :func:`_sample_layout`): the candidates' starts and lengths and the
    sample's bytes come back, nothing per string; ``target``: the sample's bytes."""
    picked = _sample_picks(cp, lengths, target, total)
    index, sample_offsets = _sample_layout(offsets[picked].get(), lengths[picked].get(), target)
    if len(sample_offsets) == 1:
        return train([b""])
    sample = data[cp.asarray(index)].get()  # one gather on the device, one copy back
    return train((sample, sample_offsets), sample_bytes=target)


def _sample_picks(xp, lengths, target: int, total: int | None = None):
    """The candidates of a training sample (``xp``: NumPy or CuPy, as ``lengths``): every
    non-empty string when they all fit ``target`` bytes, else every k-th string from the first
    (k = ``total`` bytes, their sum where not given, // target)."""
    total = int(lengths.sum()) if total is None else total
    if total <= target:
        return xp.flatnonzero(lengths)
    return xp.arange(0, len(lengths), max(1, total // target))


def _sample_layout(starts: np.ndarray, sizes: np.ndarray, target: int):
    """The byte positions and the sample's own offsets of the candidates (their ``starts`` and
    ``sizes``) that fit ``target`` bytes, in order.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.gpu.encode import _sample_layout, _sample_picks
    >>> offsets = np.array([0, 2, 4, 6, 9, 12])
    >>> lengths = np.diff(offsets)
    >>> def sample(target):
    ...     picked = _sample_picks(np, lengths, target)
    ...     return _sample_layout(offsets[picked], lengths[picked], target)
    >>> sample(100)[1].tolist()  # all fit
    [0, 2, 4, 6, 9, 12]
    >>> index, offs = sample(6)  # every 2nd string
    >>> index.tolist(), offs.tolist()
    ([0, 1, 4, 5], [0, 2, 4])
    """
    keep = np.cumsum(sizes) <= target
    starts, sizes = starts[keep], sizes[keep]
    sample_offsets = np.zeros(len(sizes) + 1, np.int64)
    np.cumsum(sizes, out=sample_offsets[1:])
    index = np.repeat(starts - sample_offsets[:-1], sizes) + np.arange(sample_offsets[-1])
    return index, sample_offsets
