"""A model of one fsst column chunk planned for the device reader, as
:mod:`fsstgpu.formats.page_plan` planned it in Python before the step moved to C++
(:func:`fsstgpu.native.pages.plan_chunks`): the page headers and their checks against the
footer (:func:`~fsstgpu.formats.raw_pages.chunk_pages`), the CRCs, each data page's row and the
dictionary page's sizes or values. Shared by tests/test_chunk_plans.py and the sanitizer fuzz
(tests/native_fuzz.py)."""

from __future__ import annotations

import zlib

import numpy as np

from fsstgpu import native
from fsstgpu.errors import CorruptDataError
from fsstgpu.formats.raw_pages import chunk_pages

PLAIN, PLAIN_DICTIONARY, RLE, DELTA_LENGTH, DELTA, RLE_DICTIONARY = 0, 2, 3, 6, 7, 8
DICTIONARY = (PLAIN_DICTIONARY, RLE_DICTIONARY)
TAKES = {0: (DELTA_LENGTH, DELTA, *DICTIONARY), 1: (PLAIN, *DICTIONARY), 2: (PLAIN,),
         3: DICTIONARY}


class Refused(Exception):
    """The model's refusal: ``kind`` (1 corrupt, 2 unsupported), ``page`` (-1 the chunk, -2
    its dictionary page) and the message, as plan_chunks reports them."""

    def __init__(self, kind: int, page: int, message: str):
        super().__init__(message)
        self.kind, self.page, self.message = kind, page, message


def model_chunk(raw: bytes, col_at: int, num_values: int, first: int, group: int, leaf: int,
                wide: bool, chunk: int = 0, check_crc: bool = True):
    """``(rows, dictionary, entries, crcs)`` of one chunk (plan_chunks' per chunk), or
    :class:`Refused`."""
    try:
        pages = chunk_pages(raw, num_values, "")
    except CorruptDataError as exc:
        raise Refused(1, -1, str(exc)[2:]) from None
    crcs = []
    for p, page in enumerate(pages):
        crc = -1 if page.crc is None else page.crc
        if check_crc and crc >= 0 and \
                zlib.crc32(raw[page.start : page.start + page.size]) != crc:
            raise Refused(1, -1, f"page {p} fails its CRC check (the file is damaged)")
        crcs.append((chunk, page.start, page.size, crc))
    rows, dictionary, start = [], None, first
    for p, page in enumerate(pages):
        body = col_at + page.start
        if page.size != page.uncompressed_size:
            raise Refused(1, p, f"a stored page of {page.size} bytes, its header says "
                                f"{page.uncompressed_size}")
        if page.kind == "dictionary":
            if page.encoding not in (PLAIN, PLAIN_DICTIONARY):
                raise Refused(2, p, f"a dictionary page of encoding {page.encoding}")
            dictionary = (body, page.size, page.num_values)
            continue
        if page.encoding not in TAKES[leaf]:
            raise Refused(2, p, f"values of encoding {page.encoding}")
        end = body + page.size
        if page.kind == "data":
            if page.levels_encoding != RLE:
                raise Refused(2, p, f"levels of encoding {page.levels_encoding}")
            if page.size < 4:
                raise Refused(1, p, f"a page of {page.size} bytes has no levels")
            nlevels = int.from_bytes(raw[page.start : page.start + 4], "little")
            if nlevels > page.size - 4:
                raise Refused(1, p, f"{nlevels} bytes of levels in a page of {page.size}")
            levels = (body + 4, nlevels)
        else:
            if page.rep_levels_size:
                raise Refused(1, p, "repetition levels in a top-level column")
            levels = (body, page.levels_size)
        values, width = levels[0] + levels[1], 0
        if page.encoding in DICTIONARY:
            if values >= end:
                raise Refused(1, p, "no room for the indices' bit width")
            if dictionary is None:
                raise Refused(1, p, "dictionary indices without a dictionary page")
            width = raw[values - col_at]
            if width > 32:
                raise Refused(1, p, f"dictionary indices of {width} bits")
            values += 1
        rows.append((*levels, values, end, page.num_values, first, page.encoding, width, group,
                     chunk, p))
        first += page.num_values
    if first != start + num_values:
        raise Refused(1, -1, f"its pages hold {first - start} rows, not {num_values}")
    entries = []
    if dictionary is not None and leaf in (0, 1):
        at, size, count = dictionary
        page = np.frombuffer(raw, np.uint8)[at - col_at : at - col_at + size]
        if leaf == 1:
            dtype = np.dtype(np.uint64 if wide else np.uint32)
            if count * dtype.itemsize > size:
                raise Refused(1, -2, f"{count} values in {size} bytes")
            entries = page[: count * dtype.itemsize].view(dtype).tolist()
        else:
            try:
                _, offsets, _ = native.plain_byte_arrays(page, count, values=False)
            except CorruptDataError as exc:
                raise Refused(1, -2, str(exc)) from None
            entries = np.diff(offsets).tolist()
    return rows, dictionary, entries, crcs
