"""Long strings encoded in chunks on the GPU (issue #25), and the CPU twins of those kernels.

A string's greedy parse is sequential, and the encode kernel gives each string one thread, so
a column of long strings kept a few threads busy for the whole call. Strings longer than
``long_min`` bytes are cut into chunks of ``chunk`` bytes (the last one to the string's end),
one a thread (``fsst_encode_chunks_count`` / ``_write`` in ``fsst_encode.cu``). The parse
enters chunk ``k`` at one of its first 8 bytes (a symbol is at most 8 long; the first byte in
a string's first chunk), so the count pass parses each chunk from all 8 entries: where each
parse leaves the chunk (the next chunk's entry) and its codes. :func:`resolve_entries` turns
those maps into each chunk's true entry (a scan of the maps: composing them is associative),
the write pass parses each chunk once from it. The codes are the greedy parse of the whole
string, so byte for byte the CPU encoder's. The write pass can also find the cuts the GPU
decoder's split plan needs inside long strings (:func:`cut_slots`, :func:`compact_cuts`), which
otherwise bring the long strings' codes back to the host to be walked.

:func:`plan_chunks` and :func:`resolve_entries` run on NumPy or CuPy arrays alike;
:func:`chunk_maps_cpu` is the count kernel's twin (the CPU encoder on each entry's window) and
:func:`encode_chunked_cpu` the whole scheme on the CPU (what CI checks against the encoder).

>>> import numpy as np
>>> from fsstgpu import SymbolTable, native
>>> from fsstgpu.kernels.encode_chunks import encode_chunked_cpu
>>> table = SymbolTable([b"aa", b"ab", b"bab"])
>>> data = np.frombuffer(b"x" + b"ab" * 200 + b"a" * 301, np.uint8)
>>> offsets = np.array([0, 1, len(data)])
>>> codes, offs = encode_chunked_cpu(table, data, offsets, long_min=128, chunk=64)
>>> want = encode_blocks([table], data, offsets, np.array([0, 2]))
>>> codes.tobytes() == want[0].tobytes() and offs.tolist() == want[1].tolist()
True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fsstgpu.device import host_array
from fsstgpu.native import encode_blocks

__all__ = ["CHUNK", "ENTRIES", "LONG_MIN", "MIN_CHUNK", "ChunkPlan", "chunk_counts",
           "chunk_maps_cpu", "chunk_out", "compact_cuts", "cut_slots", "encode_chunked_cpu",
           "plan_chunks", "plan_from_counts", "resolve_entries", "string_codes"]

#: strings longer than this many bytes are encoded in chunks (not measured yet: issue #25)
LONG_MIN = 4096
#: a chunk's bytes (the last chunk of a string takes the rest, up to twice this)
CHUNK = 1024
#: the fewest bytes of a chunk (entries 1-7 look for entry 0's parse in its first 64 bytes)
MIN_CHUNK = 64
#: the entries of a chunk a parse may come in at: a symbol is at most 8 bytes
ENTRIES = 8


@dataclass(frozen=True)
class ChunkPlan:
    """The chunks of a column's long strings (arrays of the column's module, NumPy or CuPy).

    ``nchunks[i]``: string ``i``'s chunks (0 for strings of at most ``long_min`` bytes and
    nulls); ``chunk_first[i]``: the id of its first chunk; ``chunk_string[g]``: the string of
    chunk ``g``; ``count``: the chunks; ``most``: the most chunks of one string.
    """

    chunk: int
    nchunks: object
    chunk_first: object
    chunk_string: object
    count: int
    most: int

    def chunk_index(self, xp):
        """Each chunk's place in its string (0 for a string's first)."""
        return xp.arange(self.count) - self.chunk_first[self.chunk_string]


def valid_lengths(xp, offsets, validity=None):
    """Each string's bytes, 0 for a null (``validity``: an Arrow bitmap or None)."""
    lengths = offsets[1:] - offsets[:-1]
    if validity is None:
        return lengths
    index = xp.arange(len(lengths))
    valid = (validity[index >> 3] >> (index & 7).astype(validity.dtype)) & 1
    return xp.where(valid.astype(bool), lengths, 0)


def plan_chunks(xp, offsets, validity=None, *, long_min: int = LONG_MIN, chunk: int = CHUNK,
                lengths=None) -> ChunkPlan | None:
    """The chunks of the strings longer than ``long_min`` bytes, or None where there are none
    (one wait for the device: the chunks' count); ``lengths``: :func:`valid_lengths`' answer,
    where the caller has it. (:func:`chunk_counts` and :func:`plan_from_counts` are its two
    halves, for a caller that brings back more in the same wait.)

    Examples
    --------
    >>> import numpy as np
    >>> plan = plan_chunks(np, np.array([0, 5, 300, 310, 700]), long_min=200, chunk=128)
    >>> plan.nchunks.tolist(), plan.chunk_string.tolist(), plan.count, plan.most
    ([0, 2, 0, 3], [1, 1, 3, 3, 3], 5, 3)
    """
    if lengths is None:
        lengths = valid_lengths(xp, offsets, validity)
    nchunks, ends = chunk_counts(xp, lengths, long_min=long_min, chunk=chunk)
    if len(lengths) == 0:
        return None
    count, most = (int(v) for v in host_array(xp.stack([ends[-1], nchunks.max()])))
    return plan_from_counts(xp, nchunks, ends, count, most, chunk)


def check_chunking(long_min: int, chunk: int) -> None:
    """ValueError unless strings longer than ``long_min`` bytes can go in chunks of ``chunk``:
    at least 64 bytes (every long string gets a chunk) and below 2**28 (a chunk's codes fit the
    count kernel's int32).

    >>> from fsstgpu.kernels.encode_chunks import check_chunking
    >>> check_chunking(4096, 1024)
    """
    if not MIN_CHUNK <= chunk <= long_min < 1 << 28:
        raise ValueError(f"chunks of at least 64 bytes for strings longer than them, below "
                         f"2**28 (chunk={chunk}, long_min={long_min})")


def chunk_counts(xp, lengths, *, long_min: int, chunk: int):
    """Each string's chunks (0 for strings of at most ``long_min`` bytes and nulls: their
    ``lengths`` are 0) and their running sum, on the strings' device."""
    check_chunking(long_min, chunk)
    nchunks = xp.where(lengths > long_min, lengths // chunk, 0)
    return nchunks, xp.cumsum(nchunks)


def plan_from_counts(xp, nchunks, ends, count: int, most: int, chunk: int) -> ChunkPlan | None:
    """The plan of :func:`chunk_counts`' arrays, given their ``count`` (``ends[-1]``) and
    ``most`` (``nchunks.max()``) brought back; None without chunks."""
    if count == 0:
        return None
    chunk_string = xp.searchsorted(ends, xp.arange(count), side="right")
    return ChunkPlan(chunk, nchunks, ends - nchunks, chunk_string, count, most)


def chunk_bounds(xp, plan: ChunkPlan, offsets):
    """``(s, e, end)`` of every chunk: its bytes ``[s, e)`` and its string's end."""
    k = plan.chunk_index(xp)
    string = plan.chunk_string
    s = offsets[string] + k * plan.chunk
    end = offsets[string + 1]
    e = xp.where(k == plan.nchunks[string] - 1, end, s + plan.chunk)
    return s, e, end


def resolve_entries(xp, plan: ChunkPlan, exits, counts):
    """Each chunk's true entry (uint8, 0-7) and its codes (int64), from the count pass's maps
    ``exits`` (uint8, ``(count, 8)``: where the parse from entry ``j`` leaves the chunk, as the
    next chunk's entry) and ``counts`` (its codes).

    The entry of chunk ``g`` is the composition of the maps of the chunks before it in its
    string applied to 0; a string's first chunk's map is constant, so the prefix compositions
    (doubled ``log2(most)`` times, every chunk at once) need no segment bounds.

    Examples
    --------
    >>> import numpy as np
    >>> plan = ChunkPlan(64, np.array([3]), np.array([0]), np.array([0, 0, 0]), 3, 3)
    >>> exits = np.array([[2] * 8, [5, 0, 4, 0, 0, 0, 0, 0], [0] * 8], np.uint8)
    >>> counts = np.arange(24).reshape(3, 8)
    >>> [v.tolist() for v in resolve_entries(np, plan, exits, counts)]
    [[0, 2, 4], [0, 10, 20]]
    """
    prefix = exits.astype(np.int64)
    step = 1
    while step < plan.most:
        composed = prefix.copy()
        composed[step:] = xp.take_along_axis(prefix[step:], prefix[:-step], axis=1)
        prefix, step = composed, 2 * step
    entries = xp.zeros(plan.count, np.int64)
    entries[1:] = prefix[:-1, 0]
    entries = xp.where(plan.chunk_index(xp) == 0, 0, entries)
    codes = xp.take_along_axis(counts, entries[:, None], axis=1)[:, 0].astype(np.int64)
    return entries.astype(np.uint8), codes


def _codes_before(xp, plan: ChunkPlan, chunk_codes):
    """The codes of each chunk's string before it, and the inclusive sums with a leading 0."""
    sums = xp.zeros(plan.count + 1, np.int64)
    sums[1:] = xp.cumsum(chunk_codes)
    first = xp.arange(plan.count) - plan.chunk_index(xp)
    return sums[:-1] - sums[first], sums


def string_codes(xp, plan: ChunkPlan, chunk_codes):
    """Each string's codes from its chunks (0 for strings not in chunks)."""
    _, sums = _codes_before(xp, plan, chunk_codes)
    ends = plan.chunk_first + plan.nchunks
    return sums[ends] - sums[plan.chunk_first]


def chunk_out(xp, plan: ChunkPlan, chunk_codes, code_offsets):
    """Where each chunk's codes go, given the column's code offsets."""
    before, _ = _codes_before(xp, plan, chunk_codes)
    return code_offsets[plan.chunk_string] + before


def cut_slots(xp, lengths, cut_size: int):
    """Each string's first cut slot (int64, n + 1: the last is the slots' count): a slot per
    multiple of ``cut_size`` inside a string longer than it (``lengths``: 0 for nulls), where
    the write pass puts that multiple's cut (``cut_size >= 8``: one multiple a symbol at most).

    Examples
    --------
    >>> import numpy as np
    >>> cut_slots(np, np.array([5, 12, 13, 0, 30]), 6).tolist()
    [0, 0, 1, 3, 3, 7]
    """
    slots = xp.where(lengths > cut_size, (lengths - 1) // cut_size, 0)
    first = xp.zeros(len(lengths) + 1, np.int64)
    first[1:] = xp.cumsum(slots)
    return first


def compact_cuts(xp, first, cut_code, cut_rel):
    """The cuts the write pass found (slots still -1 had a multiple whose boundary is the
    string's end): ``(code positions, places in their strings, rows)``, in order."""
    kept = xp.flatnonzero(cut_code >= 0)
    rows = xp.searchsorted(first[1:], kept, side="right")
    return cut_code[kept], cut_rel[kept], rows


# ---------------------------------------------------------------- CPU twins
def _windows_codes(table, data, starts, stops, ends, *, walk=True):
    """The CPU encoder's codes of each window ``[starts[w], min(stops[w] + 8, ends[w]))`` and
    for each the codes and position of its parse up to ``stops[w]`` (its symbols end where the
    whole string's would: none starting before ``stops[w]`` reaches past the window); without
    ``walk`` the windows are whole strings (``stops == ends``), parsed to their ends."""
    lims = np.minimum(stops + ENTRIES, ends)
    sizes = lims - starts
    offs = np.zeros(len(sizes) + 1, np.int64)
    np.cumsum(sizes, out=offs[1:])
    index = np.repeat(starts - offs[:-1], sizes) + np.arange(offs[-1])
    codes, code_offs = encode_blocks([table], data[index], offs,
                                     np.array([0, len(sizes)], np.int64))
    if not walk:
        return codes, code_offs, np.diff(code_offs), lims
    lengths = np.asarray(table.lengths, np.int64)
    counts, exits = np.zeros(len(sizes), np.int64), np.zeros(len(sizes), np.int64)
    for w in range(len(sizes)):
        t, pos, limit = int(code_offs[w]), 0, int(stops[w] - starts[w])
        while pos < limit:
            c = int(codes[t])
            t, pos = (t + 2, pos + 1) if c == 255 else (t + 1, pos + int(lengths[c]))
        counts[w], exits[w] = t - code_offs[w], starts[w] + pos
    return codes, code_offs, counts, exits


def chunk_maps_cpu(table, data: np.ndarray, offsets: np.ndarray, plan: ChunkPlan):
    """The count kernel's twin: ``(exits, counts)`` as ``fsst_encode_chunks_count`` writes
    them, shape ``(plan.count, 8)``, from the CPU encoder's parse of each entry's window."""
    s, e, end = chunk_bounds(np, plan, offsets)
    first = plan.chunk_index(np) == 0
    entry = np.where(first[:, None], 0, np.arange(ENTRIES)[None, :])
    starts = (s[:, None] + entry).ravel()
    stops, ends = np.repeat(e, ENTRIES), np.repeat(end, ENTRIES)
    _, _, counts, exits = _windows_codes(table, data, starts, stops, ends)
    return ((exits - stops).reshape(-1, ENTRIES).astype(np.uint8),
            counts.reshape(-1, ENTRIES).astype(np.int32))


def encode_chunked_cpu(table, data: np.ndarray, offsets: np.ndarray, validity=None, *,
                       long_min: int = LONG_MIN, chunk: int = CHUNK, cut_size: int = 0):
    """The GPU scheme on the CPU, step for step: the short strings by the CPU encoder, the
    long ones by :func:`chunk_maps_cpu`, :func:`resolve_entries` and each chunk's parse from
    its entry. ``(codes, code_offsets)``, equal to :func:`fsstgpu.native.encode_blocks`' with
    ``table`` for every input (the module's example); with ``cut_size`` (at least 8 and
    ``long_min``), also the cuts inside strings longer than it as the write pass finds them
    (:func:`compact_cuts`), equal to :func:`fsstgpu.scan.long_string_cuts`' but for the
    output positions, here places in their strings."""
    if cut_size and not 8 <= long_min <= cut_size:
        raise ValueError(f"cuts of at least 8 bytes, every string longer in chunks (cut_size="
                         f"{cut_size}, long_min={long_min})")
    data = np.ascontiguousarray(data, np.uint8)
    offsets = np.ascontiguousarray(offsets, np.int64)
    n = len(offsets) - 1
    lengths = valid_lengths(np, offsets, validity)
    plan = plan_chunks(np, offsets, long_min=long_min, chunk=chunk, lengths=lengths)
    short = np.where(lengths > long_min, 0, lengths)
    starts = offsets[:-1]
    codes, offs, counts, _ = _windows_codes(table, data, starts, starts + short, starts + short,
                                           walk=False)
    if plan is not None:
        exits, maps = chunk_maps_cpu(table, data, offsets, plan)
        entries, chunk_codes = resolve_entries(np, plan, exits, maps)
        counts = counts + string_codes(np, plan, chunk_codes)
    code_offsets = np.zeros(n + 1, np.int64)
    np.cumsum(counts, out=code_offsets[1:])
    out = np.empty(int(code_offsets[-1]), np.uint8)
    for i in np.flatnonzero(short):
        out[code_offsets[i] : code_offsets[i + 1]] = codes[offs[i] : offs[i + 1]]
    first = cut_slots(np, lengths, cut_size) if cut_size else None
    cut_code = np.full(0 if first is None else int(first[-1]), -1, np.int64)
    cut_rel = np.zeros_like(cut_code)
    if plan is not None:
        s, e, end = chunk_bounds(np, plan, offsets)
        wcodes, woffs, wcounts, _ = _windows_codes(table, data, s + entries, e, end)
        at = chunk_out(np, plan, chunk_codes, code_offsets)
        lengths_of = np.asarray(table.lengths, np.int64)
        for g in range(plan.count):
            assert wcounts[g] == chunk_codes[g]  # the entry's parse is the one counted
            mine = wcodes[woffs[g] : woffs[g] + wcounts[g]]
            out[at[g] : at[g] + wcounts[g]] = mine
            if first is not None:
                i = int(plan.chunk_string[g])
                _chunk_cuts(mine, lengths_of, int(s[g] + entries[g] - offsets[i]),
                            int(lengths[i]), int(at[g]), cut_size, int(first[i]), cut_code,
                            cut_rel)
    if first is None:
        return out, code_offsets
    return out, code_offsets, compact_cuts(np, first, cut_code, cut_rel)


def _chunk_cuts(codes, symbol_lengths, rel: int, length: int, at: int, cut_size: int,
                first: int, cut_code, cut_rel) -> None:
    """The write pass's cuts of one chunk: its ``codes`` (from place ``rel`` of a string of
    ``length`` bytes, written at code position ``at``) into slots from ``first``."""
    t = 0
    while t < len(codes):
        before = rel
        step = 2 if codes[t] == 255 else 1
        rel += 1 if codes[t] == 255 else int(symbol_lengths[codes[t]])
        t += step
        if rel < length and rel // cut_size > before // cut_size:
            slot = first + rel // cut_size - 1
            cut_code[slot], cut_rel[slot] = at + t, rel
