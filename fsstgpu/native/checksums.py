"""zlib's CRC-32 at memory speed (C++ in ``fsstgpu/csrc/crc32.cpp``): carry-less multiplication
folding where the CPU has PCLMULQDQ (~14 GB/s a core on the VM, against zlib 1.2.13's ~4), else
a table 8 bytes a step (``FSSTGPU_ISA=scalar`` asks for it). The same numbers as
``zlib.crc32``; the GIL is released while hashing.

>>> import zlib
>>> from fsstgpu.native.checksums import crc32
>>> crc32(b"hello world") == zlib.crc32(b"hello world")
True
"""

from __future__ import annotations

import numpy as np

from fsstgpu._native import crc32 as _crc32, page_crcs as _page_crcs

__all__ = ["crc32", "page_crcs"]


def crc32(data, value: int = 0) -> int:
    """``zlib.crc32(data, value)``, computed in C++ on one core.

    Parameters
    ----------
    data : bytes-like
        Any C-contiguous buffer (bytes, bytearray, memoryview, NumPy array).
    value : int
        The running CRC to continue from (0 to start).

    Examples
    --------
    >>> import zlib
    >>> from fsstgpu.native.checksums import crc32
    >>> crc32(b"world", crc32(b"hello ")) == zlib.crc32(b"hello world")
    True
    """
    return _crc32(data, value)


def page_crcs(data, starts, sizes, expected) -> int:
    """The first page whose CRC-32 (of ``data[starts[k] : starts[k] + sizes[k]]``) is not
    ``expected[k]`` (-1 where a page has none to check), or -1 when every page holds.

    Raises
    ------
    ValueError
        Where a page lies outside ``data`` (checked before any byte is read).

    Examples
    --------
    >>> import zlib
    >>> from fsstgpu.native.checksums import page_crcs
    >>> data = b"abcdef"
    >>> page_crcs(data, [0, 3], [3, 3], [zlib.crc32(b"abc"), zlib.crc32(b"dex")])
    1
    >>> page_crcs(data, [0, 3], [3, 3], [-1, zlib.crc32(b"def")])
    -1
    """
    return _page_crcs(data, np.ascontiguousarray(starts, np.int64),
                       np.ascontiguousarray(sizes, np.int64),
                       np.ascontiguousarray(expected, np.int64))
