"""The NumPy twin of the bit-plane integer codec (layouts in :mod:`fsstgpu.kernels.bitplane`).

Vectorised (no Python loop per group or superblock: one pass per bit plane at most), since it runs
in CI and in the blob and file writers.  It writes the same bytes as the GPU kernels and reads both
layouts, FBP1 and FBP2; every malformed buffer raises :class:`~fsstgpu.errors.CorruptDataError`.
"""

from __future__ import annotations

import numpy as np

from fsstgpu.errors import CorruptDataError
from fsstgpu.limits import whole_number

MAGIC_V1, MAGIC = b"FBP1", b"FBP2"
HEADER_BYTES = 16
GROUP = 32                        # values per group (one plane word = one bit of 32 values)
SUPERBLOCK_GROUPS = 128           # groups per superblock of the FBP2 index
SUPERBLOCK = GROUP * SUPERBLOCK_GROUPS
INDEX_ENTRY_BYTES = 16            # word_start and prefix, uint64 each
FLAG_DELTA, FLAG_ZIGZAG = 1, 2
CODES = [np.dtype(t).newbyteorder("<") for t in ("u1", "u2", "u4", "u8", "i1", "i2", "i4", "i8")]
_U64 = np.dtype("<u8")


class Layout:
    """Byte positions of a bit-plane buffer of ``n`` values (FBP2, or FBP1 with ``version=1``).

    Examples
    --------
    >>> from fsstgpu.kernels.bitplane_cpu import Layout
    >>> lay = Layout(5000)
    >>> lay.groups, lay.sblocks, lay.index_start, lay.words_start
    (157, 2, 176, 224)
    """

    def __init__(self, n: int, version: int = 2):
        self.n = int(n)
        self.groups = -(-self.n // GROUP)
        self.sblocks = -(-self.groups // SUPERBLOCK_GROUPS)
        end = HEADER_BYTES + self.groups
        if version == 1:
            self.index_start = self.words_start = (end + 3) // 4 * 4
        else:
            self.index_start = (end + 7) // 8 * 8
            self.words_start = self.index_start + INDEX_ENTRY_BYTES * (self.sblocks + 1)

    def max_bytes(self, itemsize: int) -> int:
        """Size of the buffer when every group needs all ``8 * itemsize`` planes."""
        return self.words_start + 4 * self.groups * 8 * itemsize


def value_dtype(dtype) -> tuple[int, np.dtype, bool]:
    """(dtype code, little-endian unsigned dtype of the same width, signed) of a value dtype."""
    dt = np.dtype(dtype)
    if dt.kind not in "ui" or dt.itemsize not in (1, 2, 4, 8):
        raise TypeError(f"bitplane_pack handles uint8..uint64 and int8..int64, not {dt}")
    signed = dt.kind == "i"
    code = {1: 0, 2: 1, 4: 2, 8: 3}[dt.itemsize] + (4 if signed else 0)
    return code, np.dtype(f"<u{dt.itemsize}"), signed


def header(code: int, flags: int, n: int, magic: bytes = MAGIC) -> bytes:
    """The 16-byte header."""
    return magic + bytes([code, flags, 0, 0]) + int(n).to_bytes(8, "little")


def parse_header(head: bytes, size: int):
    """Validate the fixed header against the buffer size.

    Returns (version, dtype, unsigned dtype, flags, :class:`Layout`); raises CorruptDataError for a
    short buffer, a bad magic, dtype code or flags (the zigzag flag must be set exactly for signed
    values or delta, as the writer does), or a buffer too short for its counts (and index).
    """
    if size < HEADER_BYTES or len(head) < HEADER_BYTES:
        raise CorruptDataError(f"bit-plane buffer of {size} bytes is shorter than its "
                               f"{HEADER_BYTES}-byte header")
    if head[:4] not in (MAGIC, MAGIC_V1):
        raise CorruptDataError(f"bit-plane buffer has magic {head[:4]!r}, expected {MAGIC!r} "
                               f"or {MAGIC_V1!r}")
    version = 2 if head[:4] == MAGIC else 1
    code, flags = head[4], head[5]
    if code >= len(CODES):
        raise CorruptDataError(f"bit-plane buffer has unknown dtype code {code}")
    if flags & ~(FLAG_DELTA | FLAG_ZIGZAG) or head[6] or head[7]:
        raise CorruptDataError(f"bit-plane buffer has unknown flags {head[5:8].hex()}")
    if version == 2 and bool(flags & FLAG_ZIGZAG) != (code >= 4 or bool(flags & FLAG_DELTA)):
        raise CorruptDataError(f"bit-plane buffer has flags {flags}: zigzag must be set exactly "
                               "for signed values or delta")
    n = int.from_bytes(head[8:16], "little")
    lay = Layout(n, version)
    if lay.words_start > size:
        raise CorruptDataError(f"bit-plane buffer of {size} bytes is truncated: {n} values need "
                               f"{lay.words_start} bytes of header, plane counts and index")
    if (size - lay.words_start) % 4:
        raise CorruptDataError(f"bit-plane buffer has {size - lay.words_start} bytes of plane "
                               "words, not a multiple of 4 (truncated or padded)")
    dt = CODES[code]
    return version, dt, np.dtype(f"<u{dt.itemsize}"), flags, lay


def _as_buffer(buf) -> np.ndarray:
    if isinstance(buf, (bytes, bytearray, memoryview)):
        return np.frombuffer(buf, dtype=np.uint8)
    buf = np.asarray(buf)
    if buf.dtype != np.uint8 or buf.ndim != 1:
        raise TypeError(f"bitplane_unpack needs a 1-D uint8 buffer, not {buf.dtype} {buf.shape}")
    return buf


def _u64_at(buf: np.ndarray, start: int, count: int) -> np.ndarray:
    return np.frombuffer(buf[start:start + 8 * count].tobytes(), dtype=_U64)


def _sblock_sums(x: np.ndarray, sblocks: int) -> np.ndarray:
    """Wrapping uint64 sum of each superblock's values (zero-extended)."""
    padded = np.zeros(sblocks * SUPERBLOCK, dtype=_U64)
    padded[:x.size] = x
    return padded.reshape(sblocks, SUPERBLOCK).sum(axis=1, dtype=_U64)


def _exclusive(x: np.ndarray) -> np.ndarray:
    out = np.zeros(x.size + 1, dtype=_U64)
    np.cumsum(x, dtype=_U64, out=out[1:])             # wraps mod 2**64
    return out


# ---- pack ----------------------------------------------------------------------------------------

def _prepared(values, delta: bool, version: int):
    """(dtype code, unsigned dtype, flags, the values as stored (after delta), the values as
    packed (zigzagged too)) of ``values`` for :func:`bitplane_pack_cpu`."""
    values = np.asarray(values)
    if values.ndim != 1:
        raise ValueError(f"bitplane_pack needs a 1-D array, got shape {values.shape}")
    if isinstance(version, bool) or version not in (1, 2):   # True == 1 wrote FBP1
        raise ValueError(f"bit-plane layout version must be 1 or 2, not {version}")
    code, ut, signed = value_dtype(values.dtype)
    u = values.astype(values.dtype.newbyteorder("<"), copy=False).view(ut)
    if delta:
        u = np.diff(u, prepend=ut.type(0))              # wraps in the unsigned type
    stored = u                                          # the values before zigzag
    zig = signed or delta
    if zig:
        s = u.view(f"<i{ut.itemsize}")
        u = (u << ut.type(1)) ^ (s >> (8 * ut.itemsize - 1)).view(ut)
    flags = (FLAG_DELTA if delta else 0) | (FLAG_ZIGZAG if zig else 0)
    return code, ut, flags, stored, u


def _plane_counts(u: np.ndarray, ut) -> np.ndarray:
    """The bit planes each group of 32 values of ``u`` stores: the bit width of their OR."""
    full = u.size // GROUP
    ors = np.bitwise_or.reduce(u[:full * GROUP].reshape(full, GROUP), axis=1)
    if u.size % GROUP:
        ors = np.append(ors, np.bitwise_or.reduce(u[full * GROUP:]))
    counts = np.zeros(ors.size, dtype=np.uint8)
    for b in range(8 * ut.itemsize):
        counts += (ors >> ut.type(b)) != 0                  # bit width = number of b with or>>b
    return counts


def packed_size(values: np.ndarray, *, delta: bool = False, version: int = 2) -> int:
    """``bitplane_pack_cpu(values, delta=delta, version=version).size``, without packing: the
    layout's fixed part and 4 bytes per stored plane (one pass over the values, no planes cut).

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.kernels.bitplane_cpu import bitplane_pack_cpu, packed_size
    >>> v = np.array([3, 1, 4, 1, 5, 9, 2, 6], dtype=np.uint32)
    >>> packed_size(v), packed_size(v, version=1), bitplane_pack_cpu(v).size
    (72, 36, 72)
    """
    _, ut, _, _, u = _prepared(values, delta, version)
    return Layout(u.size, version).words_start + 4 * int(_plane_counts(u, ut).sum(dtype=np.int64))


def bitplane_pack_cpu(values: np.ndarray, *, delta: bool = False, version: int = 2) -> np.ndarray:
    """Pack integers into the bit-plane layout (the GPU path's twin).

    Parameters
    ----------
    values : numpy.ndarray
        1-D uint8..uint64 or int8..int64.
    delta : bool, default False
        Store wrapping differences of consecutive values (zigzagged): small for sorted or
        slowly varying data.
    version : {2, 1}
        2 writes FBP2 (the default, what the GPU writes); 1 writes the older FBP1 (no superblock
        index), which the blob format's bit-plane codec (id 2) stores.

    Returns
    -------
    numpy.ndarray
        uint8 buffer in the layout of :mod:`fsstgpu.kernels.bitplane`.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.kernels.bitplane import bitplane_pack_cpu, bitplane_unpack_cpu
    >>> v = np.array([3, 1, 4, 1, 5, 9, 2, 6], dtype=np.uint32)
    >>> buf = bitplane_pack_cpu(v)
    >>> buf.size, bitplane_unpack_cpu(buf).tolist()
    (72, [3, 1, 4, 1, 5, 9, 2, 6])
    >>> bitplane_pack_cpu(v, version=1).size
    36
    """
    code, ut, flags, stored, u = _prepared(values, delta, version)
    n = u.size
    lay = Layout(n, version)
    groups = lay.groups
    padded = np.zeros(groups * GROUP, dtype=ut)
    padded[:n] = u
    grid = padded.reshape(groups, GROUP)
    counts = _plane_counts(u, ut)
    top = int(counts.max()) if groups else 0
    words = np.zeros((groups, max(top, 1)), dtype="<u4")
    for b in range(top):
        bits = ((grid >> ut.type(b)) & ut.type(1)).astype(np.uint8)
        words[:, b] = np.packbits(bits, axis=1, bitorder="little").view("<u4")[:, 0]
    keep = np.arange(words.shape[1])[None, :] < counts[:, None]
    ends = _exclusive(counts.astype(_U64))
    out = np.zeros(lay.words_start + 4 * int(ends[-1]), dtype=np.uint8)
    out[:HEADER_BYTES] = np.frombuffer(header(code, flags, n, MAGIC if version == 2 else MAGIC_V1),
                                       dtype=np.uint8)
    out[HEADER_BYTES:HEADER_BYTES + groups] = counts
    out[lay.words_start:] = words[keep].view(np.uint8)
    if version == 2:
        index = np.empty((lay.sblocks + 1, 2), dtype=_U64)
        index[:, 0] = ends[np.minimum(np.arange(lay.sblocks + 1) * SUPERBLOCK_GROUPS, groups)]
        index[:, 1] = _exclusive(_sblock_sums(stored, lay.sblocks))
        out[lay.index_start:lay.words_start] = index.reshape(-1).view(np.uint8)
    return out


# ---- unpack --------------------------------------------------------------------------------------

def _check_index(buf: np.ndarray, lay: Layout, counts: np.ndarray, nwords: int) -> np.ndarray:
    """Validate FBP2's padding and word index; return the prefix column (uint64, S + 1)."""
    if buf[HEADER_BYTES + lay.groups:lay.index_start].any():
        raise CorruptDataError("bit-plane padding after the plane counts is not zero")
    index = _u64_at(buf, lay.index_start, 2 * (lay.sblocks + 1)).reshape(-1, 2)
    starts = index[:, 0]
    want = _exclusive(counts.astype(_U64))[
        np.minimum(np.arange(lay.sblocks + 1) * SUPERBLOCK_GROUPS, lay.groups)]
    if int(starts[-1]) != nwords:
        raise CorruptDataError(f"bit-plane buffer has {nwords} plane words, its index says "
                               f"{int(starts[-1])} (truncated or trailing bytes)")
    if not np.array_equal(starts, want):
        s = int(np.argmax(starts != want))
        raise CorruptDataError(f"bit-plane index: superblock {s} starts at word {int(starts[s])}, "
                               f"its plane counts say {int(want[s])}")
    return index[:, 1]


def _spread_bits() -> np.ndarray:
    """For each byte value, the 8-byte word whose byte i is its bit i (little-endian)."""
    bits = np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1, bitorder="little")
    return np.ascontiguousarray(bits).view(_U64).reshape(256)


_SPREAD = _spread_bits()


def _planes_to_values(words: np.ndarray, begins: np.ndarray, counts: np.ndarray,
                      ut) -> np.ndarray:
    """The (groups, 32) values of plane words (group g's plane b is ``words[begins[g] + b]``,
    bit i of it value i's bit b; ``counts[g]`` planes, the rest zero), byte by byte of the
    values: planes 8k .. 8k + 7 make byte k of every value. Each plane word's four bytes are
    looked up in :data:`_SPREAD` (8 values' bits, one a byte) and shifted into place, so a plane
    costs a few passes over the groups, not over their 32 values (numpy's ``unpackbits`` a
    plane made each plane 32 values' worth of work: 25 ms for 1.4 M lengths).

    >>> import numpy as np
    >>> _planes_to_values(np.array([0b101, 0b110], "<u4"), np.array([0]), np.array([2]),
    ...                   np.dtype("<u2"))[0, :4].tolist()
    [1, 2, 3, 0]
    """
    groups = counts.size
    top = int(counts.max()) if groups else 0
    out = np.zeros((groups, GROUP, ut.itemsize), dtype=np.uint8)
    plane = np.zeros(groups, dtype="<u4")
    for k in range(-(-top // 8)):
        acc = np.zeros((groups, 4), dtype=_U64)
        for j in range(min(8, top - 8 * k)):
            b = 8 * k + j
            sel = counts > b
            plane[...] = 0
            plane[sel] = words[begins[sel] + b]
            acc |= _SPREAD[plane.view(np.uint8).reshape(groups, 4)] << np.uint64(j)
        out[:, :, k] = acc.view(np.uint8).reshape(groups, GROUP)
    return out.reshape(-1).view(ut).reshape(groups, GROUP)


def _decode_words(buf, lay: Layout, ut, counts, version: int) -> np.ndarray:
    groups = lay.groups
    w = 8 * ut.itemsize
    if groups and int(counts.max()) > w:
        g = int(np.argmax(counts > w))
        raise CorruptDataError(f"bit-plane group {g} claims {int(counts[g])} planes, more than "
                               f"the {w} bits of its dtype")
    ends = np.cumsum(counts, dtype=np.int64)
    total = int(ends[-1]) if groups else 0
    nwords = (buf.size - lay.words_start) // 4
    prefix = _check_index(buf, lay, counts, nwords) if version == 2 else None
    if nwords != total:
        raise CorruptDataError(f"bit-plane buffer has {nwords} plane words, its counts say "
                               f"{total} ({'truncated' if nwords < total else 'trailing bytes'})")
    words = np.frombuffer(buf[lay.words_start:].tobytes(), dtype="<u4")
    grid = _planes_to_values(words, ends - counts, counts, ut)
    if version == 2 and groups:
        full = counts > 0
        if (words[ends[full] - 1] == 0).any():
            g = int(np.flatnonzero(full)[np.argmax(words[ends[full] - 1] == 0)])
            raise CorruptDataError(f"bit-plane group {g} claims {int(counts[g])} planes but its "
                                   "top plane is zero")
        if grid.reshape(-1)[lay.n:].any():
            raise CorruptDataError(f"bit-plane group {groups - 1} has bits set past the "
                                   f"{lay.n} values")
    return grid.reshape(-1)[:lay.n], prefix


def _unpack(buf):
    buf = _as_buffer(buf)
    version, dt, ut, flags, lay = parse_header(buf[:HEADER_BYTES].tobytes(), buf.size)
    counts = buf[HEADER_BYTES:HEADER_BYTES + lay.groups]
    u, prefix = _decode_words(buf, lay, ut, counts, version)
    if flags & FLAG_ZIGZAG:
        u = (u >> ut.type(1)) ^ (ut.type(0) - (u & ut.type(1)))
    if prefix is not None:
        sums = _sblock_sums(u, lay.sblocks)
        if prefix[0] != 0 or not np.array_equal(np.diff(prefix), sums):
            s = 0 if prefix[0] != 0 else int(np.argmax(np.diff(prefix) != sums)) + 1
            raise CorruptDataError(f"bit-plane index: prefix sum of superblock {s} does not "
                                   "match the values")
    return dt, ut, flags, u, prefix


def bitplane_unpack_cpu(buf) -> np.ndarray:
    """Decode a :func:`bitplane_pack` buffer (FBP2 or FBP1) on the CPU.

    Parameters
    ----------
    buf : numpy.ndarray or bytes
        The packed buffer (1-D uint8).

    Returns
    -------
    numpy.ndarray
        The values, with the dtype recorded in the header.

    Raises
    ------
    CorruptDataError
        For a bad header, plane counts wider than the dtype, a length that does not match the
        plane counts (truncated or with trailing bytes), and for FBP2 an index, padding or
        top plane that is not the writer's.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.kernels.bitplane import bitplane_pack_cpu, bitplane_unpack_cpu
    >>> v = np.array([-2, 5, 7, 7], dtype=np.int16)
    >>> bitplane_unpack_cpu(bitplane_pack_cpu(v, delta=True)).tolist()
    [-2, 5, 7, 7]
    """
    dt, ut, flags, u, _ = _unpack(buf)
    if flags & FLAG_DELTA:
        u = np.cumsum(u, dtype=ut)
    return np.ascontiguousarray(u, dtype=ut).view(dt).astype(dt.newbyteorder("="), copy=False)


def offsets_target(out, byte_offset: int, n: int, wide: bool, xp=np):
    """Check (or allocate) where ``n + 1`` offsets go; return the uint8 array to write into."""
    itemsize = 8 if wide else 4
    need = (n + 1) * itemsize
    whole_number(byte_offset)   # True was byte 1, False byte 0, and 8.0 failed as a slice index
    if out is None:
        if byte_offset:
            raise ValueError("byte_offset needs an out buffer")
        return xp.empty(need, dtype=xp.uint8)
    if out.dtype != np.uint8 or out.ndim != 1:
        raise TypeError(f"offsets out must be a 1-D uint8 buffer, not {out.dtype} {out.shape}")
    if not out.flags.c_contiguous:
        # checked before anything is written: the offsets are a view of out's bytes, which a
        # strided buffer cannot give (its bytes were written, then the view refused)
        raise ValueError("offsets out must be a contiguous buffer")
    if byte_offset < 0 or byte_offset + need > out.size:
        raise ValueError(f"{n + 1} offsets of {itemsize} bytes at byte {byte_offset} do not fit "
                         f"in a buffer of {out.size} bytes")
    ptr = out.ctypes.data if xp is np else out.data.ptr
    if (ptr + byte_offset) % itemsize:
        raise ValueError(f"offsets must start at an address that is a multiple of {itemsize} "
                         "(8-byte aligned is recommended)")
    return out


def bitplane_unpack_offsets_cpu(buf, out=None, *, byte_offset: int = 0, wide: bool = False):
    """Decode a buffer of unsigned lengths (no delta) straight into Arrow offsets on the CPU.

    The twin of :func:`fsstgpu.kernels.bitplane.bitplane_unpack_offsets`: same arguments, same
    bytes.  Returns the offsets (int32, or int64 with ``wide=True``), a view into ``out`` at
    ``byte_offset`` when ``out`` (a 1-D uint8 array) is given; bytes of ``out`` outside the
    ``(n + 1) * itemsize`` written ones are left alone.

    Raises
    ------
    CorruptDataError
        For a corrupt buffer, or one holding signed or delta-coded values.
    ValueError
        When the offsets overflow int32 (or int64), or ``out`` is too small or misaligned.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.kernels.bitplane import bitplane_pack_cpu, bitplane_unpack_offsets_cpu
    >>> buf = bitplane_pack_cpu(np.array([3, 0, 2], np.uint8))
    >>> bitplane_unpack_offsets_cpu(buf).tolist()
    [0, 3, 3, 5]
    >>> out = np.full(40, 0xAB, np.uint8)
    >>> bitplane_unpack_offsets_cpu(buf, out, byte_offset=8, wide=True).tolist()
    [0, 3, 3, 5]
    >>> out[:8].tolist() == [0xAB] * 8
    True
    """
    dt, ut, flags, u, prefix = _unpack(buf)
    if dt.kind != "u" or flags:
        raise CorruptDataError(f"bit-plane offsets need unsigned lengths without delta, the "
                               f"buffer holds {dt} with flags {flags}")
    limit = 2 ** 63 - 1 if wide else 2 ** 31 - 1
    u64 = u.astype(_U64)
    if u64.size and int(u64.max()) > limit:
        raise ValueError(f"bit-plane lengths overflow {'int64' if wide else 'int32'} offsets")
    running = np.cumsum(u64, dtype=_U64)               # values < 2**63: a wrap shows as a drop
    if running.size and (int(running[-1]) > limit or bool((running[1:] < running[:-1]).any())):
        raise ValueError(f"bit-plane lengths add up to more than {limit}: they overflow "
                         f"{'int64' if wide else 'int32'} offsets"
                         + ("" if wide else " (use wide=True)"))
    target = offsets_target(out, byte_offset, u.size, wide)
    offs = np.zeros(u.size + 1, dtype="<i8" if wide else "<i4")
    offs[1:] = running
    view = target[byte_offset:byte_offset + offs.nbytes]
    view[:] = offs.view(np.uint8)
    return view.view(offs.dtype)
