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

from fsstgpu._native import crc32 as _crc32, crc32_many as _crc32_many

__all__ = ["crc32", "crc32_many"]


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


def crc32_many(data, starts, sizes) -> np.ndarray:
    """The CRC-32 of each piece ``data[starts[k] : starts[k] + sizes[k]]`` (uint32), in one
    call: a chunk's pages, a dictionary's tables.

    Raises
    ------
    ValueError
        Where a piece lies outside ``data`` (checked before any byte is read).

    Examples
    --------
    >>> import zlib
    >>> from fsstgpu.native.checksums import crc32_many
    >>> crc32_many(b"abcdef", [0, 3], [3, 3]).tolist() == [zlib.crc32(b"abc"), zlib.crc32(b"def")]
    True
    """
    return _crc32_many(data, np.ascontiguousarray(starts, np.int64),
                       np.ascontiguousarray(sizes, np.int64))
