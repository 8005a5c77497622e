"""Parquet ``DELTA_LENGTH_BYTE_ARRAY`` pages decoded on the GPU: each page's value lengths and
the join of the pages' value bytes (``dlba_pages.cu``), with a CPU twin.

An fsst column's codes leaf is written ``DELTA_LENGTH_BYTE_ARRAY`` (``formats/files.md``), so once
its pages are decompressed on the GPU, each string's codes are a byte region of its page and the
column's code stream is those regions joined; the lengths say what each string's codes weigh
(the split points need their prefix sums). :func:`dlba_lengths` launches one warp per page;
:func:`dlba_gather` one block per page; :func:`dlba_pages_cpu` is their twin (plain Python,
written to be read beside the kernel: the tests' reference, not a reader of its own).

Inputs are untrusted: a page that does not parse gets an error word (bits in ``dlba_pages.cu``,
names in :data:`ERRORS`) and no code bytes; nothing reads outside a page and its 16-byte slack.

>>> import numpy as np
>>> from fsstgpu.kernels.dlba_pages import dlba_pages_cpu
>>> # block 128, 4 miniblocks, 2 values, first 2; min delta 0, four widths 0: lengths [2, 2]
>>> page = np.frombuffer(bytes([128, 1, 4, 2, 4, 0, 0, 0, 0, 0]) + b"abcd", np.uint8)
>>> values, start, count, err, codes = dlba_pages_cpu([page], [False], [2])
>>> values.tolist(), start.tolist(), err.tolist(), bytes(codes)
([2, 2], [10], [0], b'abcd')
"""

from __future__ import annotations

import numpy as np

from fsstgpu.kernels.loader import get_function

__all__ = ["ERRORS", "SLACK", "dlba_gather", "dlba_lengths", "dlba_pages_cpu", "error_message",
           "values_gather"]

#: what each bit of a page's error word says
ERRORS = {1: "its definition levels run past the page",
          2: "a malformed DELTA_BINARY_PACKED header",
          4: "a value count other than its rows' non-null strings",
          8: "a bit width over 64 or a miniblock past the page",
          16: "a length below 0 or above 2**31 - 1",
          32: "value lengths that do not add up to the page's bytes"}
#: bytes a page's buffer must hold past its end (the kernel's unaligned unpacking reads ahead)
SLACK = 16
_MASK = (1 << 64) - 1


def error_message(bits: int) -> str:
    """The words for a page's error word."""
    return "; ".join(text for bit, text in ERRORS.items() if bits & bit)


def dlba_lengths(page_ptr, page_size, has_levels, expected, value_base, values, stream=None):
    """Launch the lengths pass over ``len(page_ptr)`` decompressed pages.

    Parameters
    ----------
    page_ptr : cupy.ndarray of uint64
        Each page's device address (its buffer holding :data:`SLACK` bytes past its size).
    page_size, expected, value_base : cupy.ndarray of int64
        Each page's bytes, the non-null values its rows hold, and where its values go in
        ``values``.
    has_levels : cupy.ndarray of uint8
        1 for a data page v1 whose definition levels come first.
    values : cupy.ndarray of int64
        Output: every page's value lengths.

    Returns
    -------
    code_start, code_count : cupy.ndarray of int64
        Where each page's value bytes start in the page, and how many (0 for a page in error).
    err : cupy.ndarray of int32
        Each page's error word (0: decoded).
    """
    import cupy as cp  # noqa: PLC0415 (imported on first use)

    npages = len(page_ptr)
    code_start = cp.empty(npages, cp.int64)
    code_count = cp.empty(npages, cp.int64)
    err = cp.empty(npages, cp.int32)
    if npages:
        threads = 128
        blocks = -(-npages * 32 // threads)
        get_function("dlba_pages.cu", "dlba_lengths")(
            (blocks,), (threads,),
            (page_ptr, page_size, has_levels, expected, value_base, np.int64(npages), values,
             code_start, code_count, err), stream=stream)
    return code_start, code_count, err


def dlba_gather(page_ptr, code_start, code_count, code_base, err, codes, stream=None):
    """Launch the copy of every page's value bytes (not a page's in error) to
    ``codes[code_base[p]:]``."""
    npages = len(page_ptr)
    if npages:
        get_function("dlba_pages.cu", "dlba_gather")(
            (npages,), (256,), (page_ptr, code_start, code_count, code_base, err, codes),
            stream=stream)


def values_gather(src, src_at, dst_at, size, dst, stream=None):
    """Launch the copy of ``len(src_at)`` values: ``size[v]`` bytes from ``src[src_at[v]:]`` to
    ``dst[dst_at[v]:]`` (cupy arrays, int64 positions and sizes); the caller has checked every
    range. Its twin is ``fsstgpu.formats.arrow_read.gather_bytes``."""
    n = len(src_at)
    if n:
        blocks = min(-(-n * 32 // 256), 8192)
        get_function("dlba_pages.cu", "values_gather")(
            (blocks,), (256,), (src, src_at, dst_at, size, np.int64(n), dst), stream=stream)


class _Reader:
    def __init__(self, page: bytes, pos: int):
        self.p, self.pos, self.end, self.bad = page, pos, len(page), False

    def varint(self) -> int:
        v = 0
        for shift in range(0, 64, 7):
            if self.pos >= self.end:
                self.bad = True
                return 0
            b = self.p[self.pos]
            self.pos += 1
            v |= (b & 0x7F) << shift
            if not b & 0x80:
                return v & _MASK
        self.bad = True
        return 0

    def zigzag(self) -> int:
        z = self.varint()
        return _signed((z >> 1) ^ (-(z & 1) & _MASK))


def _signed(u: int) -> int:
    u &= _MASK
    return u - (1 << 64) if u >> 63 else u


def _page_cpu(page: bytes, has_levels: bool, expected: int):
    """One page as the kernel decodes it: (values, code start, error bits)."""
    r = _Reader(page, 0)
    if has_levels:
        if r.end < 4:
            return [], 0, 1
        n = int.from_bytes(page[:4], "little")
        if n > r.end - 4:
            return [], 0, 1
        r.pos = 4 + n
    block, nmini, total = r.varint(), r.varint(), r.varint()
    value = r.zigzag()
    if (r.bad or block == 0 or block % 128 or nmini == 0 or block % nmini
            or (block // nmini) % 32 or block > 1 << 20):
        return [], 0, 2
    if total != expected:
        return [], 0, 4
    per_mini = block // nmini
    out, bits = [], 0
    if total:
        out.append(value)
        bits |= 16 if not 0 <= value <= 0x7FFFFFFF else 0
    left = total - 1 if total else 0
    while left > 0 and not bits:
        min_delta = r.zigzag()
        widths_at = r.pos
        if r.bad or r.end - r.pos < nmini:
            return [], 0, 2
        r.pos += nmini
        for m in range(nmini):
            if left <= 0 or bits:
                break
            width = page[widths_at + m]
            if width > 64:
                return [], 0, 8
            nbytes = per_mini * width // 8
            if nbytes > r.end - r.pos:
                return [], 0, 8
            stream = int.from_bytes(page[r.pos : r.pos + nbytes], "little")
            for j in range(min(per_mini, left)):
                delta = (stream >> (j * width)) & ((1 << width) - 1)
                value = _signed(value + min_delta + delta)
                out.append(value)
                bits |= 16 if not 0 <= value <= 0x7FFFFFFF else 0
            left -= min(per_mini, left)
            r.pos += nbytes
    if bits:
        return [], 0, bits
    if sum(v & _MASK for v in out) & _MASK != r.end - r.pos:
        return [], 0, 32
    return out, r.pos, 0


def dlba_pages_cpu(pages, has_levels, expected):
    """The kernels' twin over host pages (each a uint8 array or bytes).

    Returns ``(values, code_start, code_count, err, codes)``: every page's value lengths joined
    (a page in error contributes ``expected`` zeros, whose values the kernel leaves unwritten),
    each page's code region, its error word, and the joined value bytes.
    """
    values, starts, counts, errs, regions = [], [], [], [], []
    for page, levels, want in zip(pages, has_levels, expected, strict=True):
        raw = bytes(page)
        vals, start, bits = _page_cpu(raw, bool(levels), int(want))
        values.extend(vals if not bits else [0] * int(want))
        starts.append(start if not bits else 0)
        counts.append(len(raw) - start if not bits else 0)
        errs.append(bits)
        regions.append(raw[start:] if not bits else b"")
    return (np.array(values, np.int64), np.array(starts, np.int64),
            np.array(counts, np.int64), np.array(errs, np.int32),
            np.frombuffer(b"".join(regions), np.uint8).copy())
