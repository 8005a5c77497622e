"""Compact encodings of non-negative integer arrays: string lengths, code lengths, deltas.

The blob format (``formats/blob.md``) stores every integer array through this module. Each
encoding has a one-byte id, written in the blob's header for the per-string sections (string
lengths, and code lengths when stored), so that old blobs keep decoding when a better encoding is
added under a new id.

Encoding :data:`NARROW` (id 1)::

    width  1 byte          1, 2, 4 or 8: the narrowest unsigned width that holds the maximum
                           (1 for an empty array)
    values count * width   little-endian unsigned integers

There is deliberately no zero width: every value costs at least one byte, so a count declared in
a header can never exceed the bytes that back it, and a reader never allocates more than 8 bytes
per byte of input. A reader rejects a width wider than the values need.

Encoding :data:`BITPLANE` (id 2): the buffer of
``fsstgpu.kernels.bitplane.bitplane_pack_cpu(values, version=1)``, layout FBP1 (its own 16-byte
header with magic ``FBP1``, dtype code and count; one plane-count byte per group of 32 values; then
only the non-zero bit planes of each group, 32 bits each; the newer FBP2 layout with a superblock
index is not used in blobs, and is rejected here so that a column keeps one encoding), written
for the narrowest
unsigned dtype that holds the maximum and without delta. Per-string lengths vary little within
32 neighbouring strings, so they take about their bit width (5-7 bits for typical text columns)
instead of a whole byte or two; the GPU can decode the groups in parallel. A reader accepts only
unsigned dtypes, no delta or zigzag flag, and exactly the expected count; because a group of 32
zeros takes one byte, a count can be up to 32 values per byte of payload. It also accepts only the
one layout the writer produces (zero padding, each group's plane count its bit width, no bits past
the count, the narrowest dtype), so that a column has exactly one encoding.

Encoding :data:`BITPLANE_INDEXED` (id 3, the blob writer's default since 2026-11-30): the same
values in layout FBP2 (``bitplane_pack_cpu(values)``: the FBP1 groups plus a superblock index of
word positions and running sums every 4096 values), under the same rules (unsigned, no delta,
exactly the writer's bytes). The index lets the GPU unpack the lengths straight into Arrow offsets
in one kernel with no look-back, so a blob's lengths go to the GPU as they are stored
(``CompressedStringArray.packed_lengths``); it costs 16 bytes per 4096 values.

The count is never needed from the payload: the reader knows it from the blob's header, and
checks the payload against it before allocating anything.
"""

from __future__ import annotations

import numpy as np

from fsstgpu.errors import CorruptDataError
from fsstgpu.kernels.bitplane import bitplane_pack_cpu, bitplane_unpack_cpu
from fsstgpu.kernels.bitplane_cpu import packed_size

NARROW = 1
BITPLANE = 2
BITPLANE_INDEXED = 3
CODECS = {NARROW: "narrowest unsigned width", BITPLANE: "bit planes per group of 32",
          BITPLANE_INDEXED: "bit planes per group of 32, indexed every 4096 values"}
# Values per payload byte a codec can declare at most (the allocation bound for readers).
MAX_VALUES_PER_BYTE = {NARROW: 1, BITPLANE: 32, BITPLANE_INDEXED: 32}

_WIDTHS = (1, 2, 4, 8)
_DTYPES = {1: np.dtype("<u1"), 2: np.dtype("<u2"), 4: np.dtype("<u4"), 8: np.dtype("<u8")}


def narrowest_width(maximum: int) -> int:
    """Return the fewest bytes (1, 2, 4 or 8) that hold the unsigned value ``maximum``.

    Examples
    --------
    >>> from fsstgpu.formats.intcodec import narrowest_width
    >>> [narrowest_width(v) for v in (0, 255, 256, 70000, 2**40)]
    [1, 1, 2, 4, 8]
    """
    if maximum < 0:
        raise ValueError(f"values must be non-negative, got {maximum}")
    for width in _WIDTHS:
        if maximum < 1 << (8 * width):
            return width
    raise ValueError(f"value {maximum} does not fit in 64 bits")


def encode_uints(values, codec: int = NARROW) -> bytes:
    """Encode a 1-D array of non-negative integers.

    Parameters
    ----------
    values : array-like of integers, shape (n,)
        Non-negative values below 2**64.
    codec : int
        The encoding id: :data:`NARROW` or :data:`BITPLANE`.

    Returns
    -------
    bytes
        The payload; :func:`decode_uints` with the same ``n`` and codec reads it back.

    Examples
    --------
    >>> from fsstgpu.formats.intcodec import BITPLANE, encode_uints, decode_uints
    >>> payload = encode_uints([3, 0, 300])
    >>> len(payload)  # one width byte, then three 2-byte values
    7
    >>> decode_uints(payload, 3).tolist()
    [3, 0, 300]
    >>> payload = encode_uints([5] * 64, BITPLANE)
    >>> len(payload)  # 16-byte header, 2 plane counts (+2 padding), 2 groups x 3 planes x 4
    44
    >>> decode_uints(payload, 64, BITPLANE).tolist() == [5] * 64
    True
    """
    narrow = _narrowed(values, codec)
    if codec == BITPLANE:
        return bitplane_pack_cpu(narrow, version=1).tobytes()
    if codec == BITPLANE_INDEXED:
        return bitplane_pack_cpu(narrow).tobytes()
    return bytes([narrow.itemsize]) + narrow.tobytes()


def encoded_size(values, codec: int = NARROW) -> int:
    """``len(encode_uints(values, codec))``, computed without encoding (no planes packed, no
    bytes copied).

    Examples
    --------
    >>> from fsstgpu.formats.intcodec import BITPLANE, encoded_size
    >>> encoded_size([3, 0, 300]), encoded_size([5] * 64, BITPLANE)
    (7, 44)
    """
    narrow = _narrowed(values, codec)
    if codec == BITPLANE:
        return packed_size(narrow, version=1)
    if codec == BITPLANE_INDEXED:
        return packed_size(narrow)
    return 1 + narrow.nbytes


def _narrowed(values, codec: int) -> np.ndarray:
    """``values`` checked, in the narrowest unsigned dtype that holds them (what is encoded)."""
    if codec not in CODECS:
        raise ValueError(f"unknown integer codec {codec}; known: {sorted(CODECS)}")
    values = np.asarray(values)
    if values.ndim != 1:
        raise ValueError(f"expected a 1-D array, got shape {values.shape}")
    if values.size and values.dtype.kind not in "iu":
        raise TypeError(f"expected integers, got {values.dtype}")
    if values.size and values.dtype.kind == "i" and int(values.min()) < 0:
        raise ValueError("values must be non-negative")
    width = narrowest_width(int(values.max())) if values.size else 1
    return values.astype(_DTYPES[width], copy=False)


def decode_uints(payload, count: int, codec: int = NARROW, *, what: str = "integers"):
    """Decode ``count`` values written by :func:`encode_uints`; return them as uint64.

    Parameters
    ----------
    payload : bytes-like
        Exactly the bytes :func:`encode_uints` returned.
    count : int
        How many values were encoded (the caller knows it from elsewhere).
    codec : int
        The encoding id.
    what : str
        Named in error messages.

    Raises
    ------
    CorruptDataError
        If the payload does not hold exactly ``count`` values in the codec's layout (for
        :data:`NARROW`: size ``1 + count * width``, width 1, 2, 4 or 8).

    Examples
    --------
    >>> from fsstgpu.formats.intcodec import decode_uints
    >>> decode_uints(bytes([1, 7, 9]), 2).tolist()
    [7, 9]
    """
    if codec not in CODECS:
        raise CorruptDataError(f"{what}: unknown integer codec {codec}")
    payload = memoryview(payload).cast("B")
    if count < 0:
        raise CorruptDataError(f"{what}: negative count {count}")
    if codec in (BITPLANE, BITPLANE_INDEXED):
        return _decode_bitplane(payload, count, what, b"FBP1" if codec == BITPLANE else b"FBP2")
    if len(payload) < 1:
        raise CorruptDataError(f"{what}: empty payload, expected at least the width byte")
    width = payload[0]
    if width not in _WIDTHS:
        raise CorruptDataError(f"{what}: invalid integer width {width} (1, 2, 4 or 8)")
    expected = 1 + count * width
    if len(payload) != expected:
        raise CorruptDataError(
            f"{what}: payload is {len(payload)} bytes, expected {expected} "
            f"({count} values of {width} bytes)"
        )
    values = np.frombuffer(payload[1:], dtype=_DTYPES[width])
    # no values: the narrowest width is 1 (a wider one would be a second encoding)
    if width > 1 and (not count or int(values.max()) < 1 << (4 * width)):
        raise CorruptDataError(f"{what}: values stored {width} bytes wide fit in {width // 2} "
                               "(the narrowest width is required)")
    return values.astype(np.uint64, copy=False)


def _decode_bitplane(payload, count: int, what: str, magic: bytes):
    """Check a :data:`BITPLANE` payload's header against ``count``, and its layout for the one
    encoding the writer produces, before unpacking it."""
    head = bytes(payload[:16])
    if len(head) < 16:
        raise CorruptDataError(f"{what}: bit-plane payload of {len(payload)} bytes is shorter "
                               "than its 16-byte header")
    n = int.from_bytes(head[8:16], "little")
    if n != count:
        raise CorruptDataError(f"{what}: bit-plane payload holds {n} values, expected {count}")
    if head[:4] != magic:
        raise CorruptDataError(f"{what}: bit-plane payload has magic {head[:4]!r}, expected "
                               f"{magic!r}")
    if head[4] > 3 or head[5]:
        raise CorruptDataError(f"{what}: bit-plane payload must hold unsigned values without "
                               f"delta (dtype code {head[4]}, flags {head[5]})")
    buf = np.frombuffer(payload, dtype=np.uint8)
    if magic == b"FBP1":  # the FBP2 reader accepts only the writer's layout itself
        _check_canonical(buf, n, 8 << head[4], what)
    try:
        values = bitplane_unpack_cpu(buf)
    except CorruptDataError as exc:
        raise CorruptDataError(f"{what}: {exc}") from None
    if magic == b"FBP2":  # ... but any dtype: the format's is the narrowest
        _check_narrowest(int(values.max()).bit_length() if n else 0, 8 << head[4], what)
    return values.astype(np.uint64, copy=False)


def _check_narrowest(widest: int, bits: int, what: str) -> None:
    """Refuse values of at most ``widest`` bits stored as wider integers than they need."""
    if bits > 8 and widest <= bits // 2:
        raise CorruptDataError(f"{what}: bit-plane values of at most {widest} bits stored as "
                               f"{bits}-bit integers (the narrowest dtype is required)")


def _check_canonical(buf: np.ndarray, n: int, bits: int, what: str) -> None:
    """Reject every bit-plane layout but the writer's, so one column has one encoding: zero
    padding after the plane counts, each count the bit width of its group (its top plane not
    all zero), no bits past ``n`` in the last group, and the narrowest dtype."""
    groups = -(-n // 32)
    start = (16 + groups + 3) // 4 * 4
    if len(buf) < start:
        return  # truncated: the unpacker says so
    counts = buf[16 : 16 + groups].astype(np.int64)
    if buf[16 + groups : start].any():
        raise CorruptDataError(f"{what}: bit-plane padding after the plane counts is not zero")
    ends = np.cumsum(counts)
    if (groups and int(counts.max()) > bits) or (len(buf) - start) != 4 * (
            int(ends[-1]) if groups else 0):
        return  # the unpacker names the inconsistency
    words = buf[start:].view("<u4") if start % 4 == 0 else buf[start:].copy().view("<u4")
    full = counts > 0
    if (words[ends[full] - 1] == 0).any():
        g = int(np.flatnonzero(full)[np.argmax(words[ends[full] - 1] == 0)])
        raise CorruptDataError(f"{what}: bit-plane group {g} claims {int(counts[g])} planes but "
                               "its top plane is zero")
    tail = n % 32
    if tail and counts[-1] and (words[ends[-1] - counts[-1] : ends[-1]] >> np.uint32(tail)).any():
        raise CorruptDataError(f"{what}: bit-plane group {groups - 1} has bits set past the "
                               f"{n} values")
    _check_narrowest(int(counts.max()) if groups else 0, bits, what)


def encode_offsets(offsets, codec: int = NARROW) -> bytes:
    """Encode a non-decreasing array that starts at 0 as its ``len - 1`` deltas (in ``codec``).

    Examples
    --------
    >>> from fsstgpu.formats.intcodec import encode_offsets, decode_offsets
    >>> decode_offsets(encode_offsets([0, 2, 2, 9]), 4, total=9).tolist()
    [0, 2, 2, 9]
    """
    return encode_uints(_deltas(offsets), codec)


def encoded_offsets_size(offsets, codec: int = NARROW) -> int:
    """``len(encode_offsets(offsets, codec))``, computed without encoding.

    Examples
    --------
    >>> from fsstgpu.formats.intcodec import encoded_offsets_size
    >>> encoded_offsets_size([0, 2, 2, 9])
    4
    """
    return encoded_size(_deltas(offsets), codec)


def _deltas(offsets) -> np.ndarray:
    offsets = np.asarray(offsets, dtype=np.int64)
    if offsets.size == 0 or offsets[0] != 0:
        raise ValueError("offsets must be non-empty and start at 0")
    deltas = np.diff(offsets)
    if deltas.size and int(deltas.min()) < 0:
        raise ValueError("offsets must be non-decreasing")
    return deltas


def decode_offsets(payload, count: int, *, total: int, what: str = "offsets",
                   codec: int = NARROW):
    """Decode ``count`` offsets (``count - 1`` deltas) and check that the last one is ``total``.

    Returns int64 offsets starting at 0, non-decreasing, ending at ``total``.

    Raises
    ------
    CorruptDataError
        On a size mismatch, or when the deltas do not add up to ``total``.

    Examples
    --------
    >>> from fsstgpu.formats.intcodec import decode_offsets, encode_offsets
    >>> decode_offsets(encode_offsets([0, 5]), 2, total=5).tolist()
    [0, 5]
    """
    if count < 1:
        raise CorruptDataError(f"{what}: needs at least one offset, got count {count}")
    deltas = decode_uints(payload, count - 1, codec, what=what)
    # Every delta must be <= total (< 2**63), so a wrap-around in the uint64 running sum shows
    # as a decrease; then the sum must land exactly on total.
    if deltas.size and int(deltas.max()) > total:
        raise CorruptDataError(f"{what}: a delta exceeds the declared total {total}")
    out = np.zeros(count, dtype=np.uint64)
    np.cumsum(deltas, out=out[1:])
    if count > 1 and bool(np.any(out[1:] < out[:-1])):
        raise CorruptDataError(f"{what}: deltas overflow")
    if int(out[-1]) != total:
        raise CorruptDataError(f"{what}: deltas add up to {int(out[-1])}, expected {total}")
    return out.astype(np.int64)
