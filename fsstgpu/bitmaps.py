"""LSB-first validity bitmaps (Arrow's): joined, sliced to bit offset 0, unpacked, counted.

>>> import numpy as np
>>> from fsstgpu.bitmaps import count_set_bits, slice_bitmap
>>> count_set_bits(slice_bitmap(np.array([0b10110100], np.uint8), 2, 5))
3
"""

from __future__ import annotations

import numpy as np

from fsstgpu.native import count_set_bits as native_count_set_bits

__all__ = ["count_set_bits", "join_bitmaps", "pack_bits", "slice_bitmap", "unpack_bitmap"]


def pack_bits(bits, xp=np):
    """An LSB-first bitmap (uint8, the padding bits zero) of the bool or 0/1 array ``bits``,
    with array module ``xp`` (NumPy, or CuPy for a device array: written out, so as not to
    depend on a CuPy version's ``packbits`` taking ``bitorder``).

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.bitmaps import pack_bits
    >>> pack_bits(np.array([1, 0, 1, 1, 0, 0, 0, 0, 1], bool)).tolist()
    [13, 1]
    """
    n = len(bits)
    padded = xp.zeros(-(-n // 8) * 8, xp.uint8)
    padded[:n] = bits
    # (each bit shifted to its place: made on the device, where an uploaded table of weights
    # was a copy from the host a call)
    return (padded.reshape(-1, 8) << xp.arange(8, dtype=xp.uint8)).sum(axis=1, dtype=xp.uint8)


def join_bitmaps(parts) -> np.ndarray:
    """One LSB-first bitmap (bit offset 0) of ``parts`` end to end: ``(bitmap, n)`` pairs, each
    the first ``n`` bits of an LSB-first bitmap, or None for ``n`` valid values.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.bitmaps import join_bitmaps
    >>> join_bitmaps([(np.array([0b101], np.uint8), 3), (None, 2)]).tolist()  # 1 0 1 1 1
    [29]
    """
    bits = [unpack_bitmap(bitmap, n) if bitmap is not None else np.ones(n, bool)
            for bitmap, n in parts]
    return np.packbits(np.concatenate(bits) if bits else np.zeros(0, bool), bitorder="little")


def unpack_bitmap(bitmap: np.ndarray, n: int) -> np.ndarray:
    """Return the first ``n`` bits of an LSB-first bitmap as a bool array.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.bitmaps import unpack_bitmap
    >>> unpack_bitmap(np.array([0b101], np.uint8), 3).tolist()
    [True, False, True]
    """
    return np.unpackbits(bitmap, count=n, bitorder="little").astype(bool)


def slice_bitmap(bitmap: np.ndarray, start: int, n: int) -> np.ndarray:
    """Return bits ``start:start+n`` of an LSB-first bitmap as a new one with bit offset 0.

    Padding bits of the result are zero. Zero-copy when ``start`` is a multiple of 8 and the
    padding bits are already zero.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.bitmaps import slice_bitmap
    >>> slice_bitmap(np.array([0b10110100, 0b1], np.uint8), 2, 7).tolist() == [0b1101101]
    True
    """
    nbytes = (n + 7) // 8
    if start % 8 == 0:
        out = bitmap[start // 8 : start // 8 + nbytes]
        if n % 8 and out[-1] >> (n % 8):
            out = out.copy()
            out[-1] &= (1 << (n % 8)) - 1
        return out
    first = start // 8
    last = (start + n + 7) // 8
    bits = np.unpackbits(bitmap[first:last], bitorder="little")[start % 8 : start % 8 + n]
    return np.packbits(bits, bitorder="little")


def count_set_bits(bitmap: np.ndarray) -> int:
    """Number of 1 bits in a uint8 array.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.bitmaps import count_set_bits
    >>> count_set_bits(np.array([0xFF, 0b101], np.uint8))
    10
    """
    return native_count_set_bits(bitmap)
