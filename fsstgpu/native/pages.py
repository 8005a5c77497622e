"""The compiled decoders of Parquet's value encodings (``fsstgpu._native``, C++ in
``fsstgpu/csrc/parquet_pages*``), for reading a file's pages raw
(:mod:`fsstgpu.formats.raw_pages`): the RLE / bit-packed hybrid of definition levels and
dictionary indices, and DELTA_BINARY_PACKED, the lengths of DELTA_LENGTH_BYTE_ARRAY's strings.
"""

from __future__ import annotations

import numpy as np

from fsstgpu._native import delta_binary_packed as _delta_binary_packed, rle_hybrid as _rle_hybrid

__all__ = ["delta_binary_packed", "rle_hybrid"]


def rle_hybrid(data, bit_width: int, count: int) -> tuple[np.ndarray, int]:
    """``count`` values of Parquet's RLE / bit-packed hybrid encoding of ``bit_width``-bit
    values (0-32) from the bytes ``data`` (no length prefix), and the bytes they took.

    Raises
    ------
    fsstgpu.CorruptDataError
        Where the data ends before ``count`` values, or a run is malformed.
    ValueError
        For a bit width outside 0-32.

    Examples
    --------
    >>> from fsstgpu import native
    >>> # a run of 5 threes, then one bit-packed group of 8 values 0..7 (3 bits each)
    >>> values, end = native.rle_hybrid(bytes([5 << 1, 3, 3, 0x88, 0xC6, 0xFA]), 3, 13)
    >>> values.tolist(), end
    ([3, 3, 3, 3, 3, 0, 1, 2, 3, 4, 5, 6, 7], 6)
    """
    return _rle_hybrid(np.frombuffer(data, np.uint8), int(bit_width), int(count))


def delta_binary_packed(data, count: int) -> tuple[np.ndarray, int]:
    """The ``count`` int64 values of a DELTA_BINARY_PACKED run at the start of the bytes
    ``data`` (its header must declare ``count``), and the bytes they took.

    Raises
    ------
    fsstgpu.CorruptDataError
        Where the header is malformed or declares another count, or the data ends inside a
        block.

    Examples
    --------
    >>> from fsstgpu import native
    >>> # blocks of 128 values in 4 miniblocks, 3 values, first 10; a block: min delta 1,
    >>> # widths (1, 0, 0, 0), the first miniblock's 32 1-bit values (deltas 1 + 0, 1 + 1)
    >>> run = bytes([128, 1, 4, 3, 20, 2, 1, 0, 0, 0, 0b10, 0, 0, 0])
    >>> values, end = native.delta_binary_packed(run, 3)
    >>> values.tolist(), end
    ([10, 11, 13], 14)
    """
    return _delta_binary_packed(np.frombuffer(data, np.uint8), int(count))
