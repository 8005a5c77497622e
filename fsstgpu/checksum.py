"""CRC32 of large buffers on every core: zlib's CRC32, the same number, in pieces.

The containers carry zlib's CRC32 (blob sections, IPC record batches). Each piece is hashed by
:func:`fsstgpu.native.crc32` (folding with carry-less multiplication: ~14 GB/s a core on the
VM, where ``zlib.crc32`` runs ~4 and took 11 ms of a 28 MB blob's 24 ms read), which releases
the GIL, so pieces of one buffer can run on the worker pool
(:func:`fsstgpu.parallel.run_tasks`). The pieces' CRCs are then joined as zlib's
``crc32_combine`` does (not exposed by Python's zlib): CRC(A + B) is CRC(A) times x to the
power 8 |B|, modulo the CRC polynomial, plus CRC(B), in the bit-reflected form zlib uses.

>>> import zlib
>>> from fsstgpu.checksum import combine, crc32
>>> crc32(b"hello world") == zlib.crc32(b"hello world")
True
>>> combine(zlib.crc32(b"hello "), zlib.crc32(b"world"), 5) == zlib.crc32(b"hello world")
True
"""

from __future__ import annotations

from fsstgpu.native.checksums import crc32 as _crc32
from fsstgpu.parallel import run_tasks, usable_cores

__all__ = ["PARALLEL_BYTES", "PIECE_BYTES", "combine", "crc32"]

#: buffers from this size on are hashed in pieces on the worker pool (a core hashes 16 MiB in
#: ~1.2 ms)
PARALLEL_BYTES = 16 << 20
#: the least bytes a piece gets (a piece's task and combine cost ~50 us of Python)
PIECE_BYTES = 4 << 20

_POLY = 0xEDB88320  # CRC-32's polynomial, bit-reflected (zlib's)
_X0 = 1 << 31  # the polynomial 1 (x to the power 0), bit-reflected


def _multiply(a: int, b: int) -> int:
    """a times b modulo the CRC polynomial (both bit-reflected)."""
    product = 0
    m = _X0
    while m:
        if a & m:
            product ^= b
        m >>= 1
        b = (b >> 1) ^ _POLY if b & 1 else b >> 1
    return product


def _powers() -> list[int]:
    """x to the power 2**k modulo the polynomial, for k in 0..63."""
    table, p = [], _X0 >> 1  # x
    for _ in range(64):
        table.append(p)
        p = _multiply(p, p)
    return table


_X_POW_2K = _powers()


def _x_to_8n(n: int) -> int:
    """x to the power 8 n modulo the polynomial (a shift by n zero bytes)."""
    p, k = _X0, 3  # 8 n = n * 2**3
    while n:
        if n & 1:
            p = _multiply(_X_POW_2K[k % 64], p)
        n >>= 1
        k += 1
    return p


def combine(crc_a: int, crc_b: int, length_b: int) -> int:
    """The CRC32 of A followed by B, from A's CRC32, B's and B's length in bytes (zlib's
    ``crc32_combine``).

    Examples
    --------
    >>> import zlib
    >>> from fsstgpu.checksum import combine
    >>> combine(zlib.crc32(b"ab"), zlib.crc32(b""), 0) == zlib.crc32(b"ab")
    True
    """
    if length_b < 0:
        raise ValueError(f"a length is at least 0, not {length_b}")
    return _multiply(_x_to_8n(length_b), crc_a) ^ crc_b


def crc32(data, value: int = 0) -> int:
    """``zlib.crc32(data, value)``: the same number, computed in C++, in pieces on the worker
    pool for buffers of :data:`PARALLEL_BYTES` or more.

    Parameters
    ----------
    data : bytes-like
        Any contiguous buffer (bytes, memoryview, NumPy array, pyarrow Buffer).
    value : int
        The running CRC to continue from (0 to start).

    Returns
    -------
    int

    Examples
    --------
    >>> import os, zlib
    >>> from fsstgpu.checksum import crc32
    >>> blob = os.urandom(9 << 20)
    >>> crc32(blob, 12345) == zlib.crc32(blob, 12345)
    True
    """
    view = memoryview(data).cast("B")
    size = len(view)
    pieces = min(usable_cores(), size // PIECE_BYTES)
    if size < PARALLEL_BYTES or pieces < 2:
        return _crc32(view, value)
    bounds = [size * k // pieces for k in range(pieces + 1)]
    crcs = [0] * pieces

    def piece(k: int) -> None:  # (the GIL is released while it hashes)
        crcs[k] = _crc32(view[bounds[k] : bounds[k + 1]], value if k == 0 else 0)

    run_tasks(piece, pieces)
    crc = crcs[0]
    for k in range(1, pieces):
        crc = combine(crc, crcs[k], bounds[k + 1] - bounds[k])
    return crc
