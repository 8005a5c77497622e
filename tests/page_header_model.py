"""A model of a column chunk's page headers read with the Python Thrift reader
(:mod:`fsstgpu.formats.thrift_compact`), the checks raw_pages made before they moved to C++
(:func:`fsstgpu.native.page_headers`): the rows it must give, or None where it must refuse.
Shared by tests/test_raw_pages.py and the sanitizer fuzz (tests/native_fuzz.py)."""

from __future__ import annotations

from fsstgpu.formats.thrift_compact import Struct, loads_at


def _int(header, field):
    v = header.get(field)
    return v if type(v) is int and 0 <= v <= 2**31 - 1 else None


def _page(raw, at):
    """One page's row (page_headers' columns), and where the next starts; None: refused."""
    try:
        header, pos = loads_at(raw, at)
    except ValueError:
        return None
    kind = header.get(1)
    if type(kind) is not int or kind not in (0, 2, 3):
        return None
    uncompressed, size = _int(header, 2), _int(header, 3)
    if uncompressed is None or size is None or pos + size > len(raw):
        return None
    crc = header.get(4)
    if crc is not None and (type(crc) is not int or not -2**31 <= crc < 2**31):
        return None
    sub = header.get({0: 5, 2: 7, 3: 8}[kind])
    if not isinstance(sub, Struct):
        return None
    levels, compressed, levels_encoding, rep = 0, 1, 3, 0
    if kind == 3:
        encoding, rep, defs = _int(sub, 4), _int(sub, 6), _int(sub, 5)
        if None in (encoding, rep, defs):
            return None
        levels = defs + rep
        compressed = int(sub.get(7, True) is not False)
        if levels > size or levels > uncompressed:
            return None
    else:
        encoding = _int(sub, 2)
        if encoding is None:
            return None
        if kind == 0:
            levels_encoding = _int(sub, 3)
            if levels_encoding is None:
                return None
    count = _int(sub, 1)
    if count is None:
        return None
    return [kind, encoding, count, pos, size, uncompressed,
            -1 if crc is None else crc & 0xFFFFFFFF, levels, compressed, levels_encoding, rep,
            at], pos + size


def model_headers(raw: bytes, max_pages: int):
    """Every page's row, or None where the chunk is refused."""
    rows, at = [], 0
    while at < len(raw):
        if len(rows) >= max_pages:
            return None
        got = _page(raw, at)
        if got is None:
            return None
        row, at = got
        rows.append(row)
    return rows
