"""UTF-8 validation of a string column, at memory speed: one pass over the data buffer.

Arrow's ``string`` types promise UTF-8, but nothing enforces it for an array built from buffers
(``pa.Array.from_buffers``, an IPC or Parquet file, the C data interface), and a forged compressed
column can decode to any bytes. fsstgpu checks both ends: every text input it compresses
(:func:`fsstgpu.arrow_layout.from_arrow`) and every text column it decodes.

Checking each string separately costs a call per string (pyarrow's ``validate(full=True)`` runs
at ~1 GB/s a core on dbtext's short strings). Instead the strings are checked as one stream: a
column is valid exactly when the concatenation of its strings is valid UTF-8 *and* no string
starts on a continuation byte (in a valid stream a non-continuation byte always starts a
character, so every string is then a run of whole characters; an all-ASCII stream has no
continuation bytes at all). The stream runs through Hoehrmann's automaton in its shift form (the
next state is one table load and a shift), skipping ASCII 32 and 8 bytes at a time; a column is
cut into tasks of 256 KB for every core (:func:`fsstgpu.parallel.run_tasks`). Rules are RFC
3629's: no overlong forms, no surrogates (U+D800..U+DFFF), nothing past U+10FFFF.

>>> import numpy as np
>>> from fsstgpu.utf8 import first_invalid_string
>>> data = np.frombuffer("añb".encode() + b"\\xff", np.uint8)
>>> first_invalid_string(data, np.array([0, 1, 3, 4, 5]))  # 'a', 'ñ', 'b', b'\\xff'
3
>>> first_invalid_string(data, np.array([0, 2, 3]))  # 'a\\xc3', '\\xb1': cut inside 'ñ'
0
"""

from __future__ import annotations

import numba
import numpy as np

from fsstgpu.jit import readonly
from fsstgpu.matcher import load_u64
from fsstgpu.parallel import run_tasks

__all__ = ["check_utf8", "first_invalid_string"]

_HIGH_BITS = np.uint64(0x8080808080808080)
_TASK_BYTES = 256 << 10  # bytes per parallel task: ~0.1 ms, 10x a task's overhead
_RUN_BYTES = 64 << 10  # bytes checked as one stream, then again at string starts: in cache


def _shift_dfa() -> np.ndarray:
    """Bjoern Hoehrmann's UTF-8 automaton as a shift DFA: ``row[byte] >> state & 63`` is the
    next state, each state a multiple of 6 (0 = between characters, 6 = rejected for good)."""
    classes = np.zeros(256, np.int64)
    for lo, hi, cls in ((0x80, 0x8F, 1), (0x90, 0x9F, 9), (0xA0, 0xBF, 7), (0xC0, 0xC1, 8),
                        (0xC2, 0xDF, 2), (0xE0, 0xE0, 10), (0xE1, 0xEC, 3), (0xED, 0xED, 4),
                        (0xEE, 0xEF, 3), (0xF0, 0xF0, 11), (0xF1, 0xF3, 6), (0xF4, 0xF4, 5),
                        (0xF5, 0xFF, 8)):
        classes[lo : hi + 1] = cls
    # next state (as Hoehrmann's multiples of 12) by state row and byte class
    table = np.array([
        [0, 12, 24, 36, 60, 96, 84, 12, 12, 12, 48, 72],
        [12] * 12,
        [12, 0, 12, 12, 12, 12, 12, 0, 12, 0, 12, 12],
        [12, 24, 12, 12, 12, 12, 12, 24, 12, 24, 12, 12],
        [12, 12, 12, 12, 12, 12, 12, 24, 12, 12, 12, 12],
        [12, 24, 12, 12, 12, 12, 12, 12, 12, 24, 12, 12],
        [12, 12, 12, 12, 12, 12, 12, 36, 12, 36, 12, 12],
        [12, 36, 12, 12, 12, 12, 12, 36, 12, 36, 12, 12],
        [12, 36, 12, 12, 12, 12, 12, 12, 12, 12, 12, 12],
    ]) // 12
    rows = np.zeros(256, np.uint64)
    for byte in range(256):
        for state in range(9):
            rows[byte] |= np.uint64(6 * table[state, classes[byte]]) << np.uint64(6 * state)
    return rows


_DFA = _shift_dfa()
_ACCEPT = np.uint64(0)
_SIX_BITS = np.uint64(63)


@numba.njit(cache=True, nogil=True, inline="always")
def _step(dfa, state, byte):
    return (dfa[byte] >> state) & _SIX_BITS


@numba.njit(cache=True, nogil=True)
def _stream_state(data, i, end, dfa, state):
    """(state, saw a non-ASCII byte) after ``data[i:end]``, started in ``state``."""
    high = False
    while i + 8 <= end:
        w = load_u64(data, i)
        i += 8
        if (w & _HIGH_BITS) == 0 and state == _ACCEPT:
            # ASCII between characters: skip ahead 32 bytes at a time while it lasts
            while i + 32 <= end and ((load_u64(data, i) | load_u64(data, i + 8)
                                      | load_u64(data, i + 16) | load_u64(data, i + 24))
                                     & _HIGH_BITS) == 0:
                i += 32
            continue
        high = True
        for j in range(8):  # the table loads do not wait for the state: only the shifts do
            state = _step(dfa, state, (w >> np.uint64(8 * j)) & np.uint64(0xFF))
    while i < end:
        high |= data[i] >= 0x80
        state = _step(dfa, state, data[i])
        i += 1
    return state, high


@numba.njit(cache=True, nogil=True)
def _stream_valid(data, i, end, dfa):
    """(valid, saw a non-ASCII byte) for ``data[i:end]`` as one stream of characters.

    Each automaton step waits on the one before (a shift by the state), so the range runs as
    two interleaved streams: the second starts at the first byte after the middle that is no
    continuation byte (a character start in a valid stream; the range is invalid when more
    than three continuation bytes follow each other there)."""
    mid = i + (end - i) // 2
    k = 0
    while mid < end and (data[mid] & 0xC0) == 0x80 and k < 4:
        mid += 1
        k += 1
    if k == 4:
        return False, True
    a, b = i, mid
    sa = _ACCEPT
    sb = _ACCEPT
    high = False
    while a + 8 <= mid and b + 8 <= end:
        wa = load_u64(data, a)
        wb = load_u64(data, b)
        a += 8
        b += 8
        if ((wa | wb) & _HIGH_BITS) == 0 and sa == _ACCEPT and sb == _ACCEPT:
            continue
        high = True
        for j in range(8):
            sa = _step(dfa, sa, (wa >> np.uint64(8 * j)) & np.uint64(0xFF))
            sb = _step(dfa, sb, (wb >> np.uint64(8 * j)) & np.uint64(0xFF))
    sa, ha = _stream_state(data, a, mid, dfa, sa)
    sb, hb = _stream_state(data, b, end, dfa, sb)
    return sa == _ACCEPT and sb == _ACCEPT, high or ha or hb


@numba.njit(cache=True, nogil=True)
def _check_strings(data, offsets, lo, hi, dfa, bad):
    """Check strings ``lo:hi``; ``bad[0]`` gets the first invalid one (or keeps its value).

    Fast path, in runs of strings of about 64 KB (so the second look at a run's bytes finds
    them in cache): the run's bytes as one stream, and (only when it holds a non-ASCII byte) no
    string starting on a continuation byte. Only when that fails are the run's strings checked
    one by one, to name the first bad one. Offsets are clamped to ``data``: non-decreasing
    offsets inside it give the answer, and no others make it read outside."""
    size = data.shape[0]
    k = lo
    while k < hi:
        start = min(max(offsets[k], 0), size)
        # the run ends at the first string ending _RUN_BYTES or more past its start (binary
        # search: offsets are read only where a string start must be checked)
        a, j = k + 1, hi
        while a < j:
            m = (a + j) // 2
            if offsets[m] - start >= _RUN_BYTES:
                j = m
            else:
                a = m + 1
        end = min(max(offsets[j], start), size)
        ok, high = _stream_valid(data, start, end, dfa)
        m = k + 1
        while ok and high and m < j:
            p = offsets[m]
            ok = p < 0 or p >= end or (data[p] & 0xC0) != 0x80
            m += 1
        if not ok:
            for m in range(k, j):
                e = min(max(offsets[m + 1], 0), size)
                if _stream_state(data, min(max(offsets[m], 0), e), e, dfa, _ACCEPT)[0] != \
                        _ACCEPT:
                    bad[0] = m
                    return
        k = j


def first_invalid_string(data: np.ndarray, offsets: np.ndarray) -> int:
    """Index of the first string that is not valid UTF-8, or -1 when all are.

    Parameters
    ----------
    data : numpy.ndarray of uint8
    offsets : numpy.ndarray of int32 or int64, shape (n + 1,)
        String ``i`` is ``data[offsets[i]:offsets[i+1]]``; non-decreasing, inside ``data``
        (the ends are checked: ValueError; nothing outside ``data`` is read in any case).

    Returns
    -------
    int
    """
    # read-only views of fixed dtypes: one compiled kernel per offsets width (fsstgpu.jit)
    data = readonly(data, np.uint8)
    offsets = np.asarray(offsets)
    offsets = readonly(offsets, offsets.dtype if offsets.dtype in (np.int32, np.int64)
                       else np.int64)
    n = len(offsets) - 1
    if n <= 0:
        return -1
    if int(offsets[0]) < 0 or int(offsets[-1]) > len(data):
        raise ValueError(f"offsets {int(offsets[0])}..{int(offsets[-1])} outside the "
                         f"{len(data)} data bytes")
    # Tasks of about _TASK_BYTES each (a column of a few MB uses every core), cut at string
    # boundaries.
    total = int(offsets[-1]) - int(offsets[0])
    ntasks = max(1, min(n, total // _TASK_BYTES))
    targets = int(offsets[0]) + (total * np.arange(ntasks + 1)) // ntasks
    bounds = np.searchsorted(offsets, targets.astype(offsets.dtype))  # same dtype: no copy
    bounds[0], bounds[-1] = 0, n
    bounds = np.unique(np.minimum(bounds, n))
    bad = np.full(len(bounds), n, np.int64)  # one slot per task: no shared writes
    run_tasks(lambda k: _check_strings(data, offsets, bounds[k], bounds[k + 1], _DFA,
                                       bad[k : k + 1]), len(bounds) - 1)
    first = int(bad.min())
    return -1 if first >= n else first


def check_utf8(data: np.ndarray, offsets: np.ndarray, what: str = "column") -> None:
    """Raise :class:`~fsstgpu.errors.CorruptDataError` unless every string is valid UTF-8.

    Parameters are those of :func:`first_invalid_string`; ``what`` names the strings' owner in
    the message.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.utf8 import check_utf8
    >>> check_utf8(np.frombuffer(b"ok", np.uint8), np.array([0, 2]))
    >>> check_utf8(np.frombuffer(b"\\xed\\xa0\\x80", np.uint8), np.array([0, 3]), "input")
    Traceback (most recent call last):
    ...
    fsstgpu.errors.CorruptDataError: input: string 0 is not valid UTF-8 (bytes ed a0 80)
    """
    from fsstgpu.errors import CorruptDataError

    i = first_invalid_string(data, offsets)
    if i >= 0:
        s, e = int(offsets[i]), int(offsets[i + 1])
        head = " ".join(f"{b:02x}" for b in np.asarray(data[s : min(e, s + 16)]).tolist())
        more = " ..." if e - s > 16 else ""
        raise CorruptDataError(f"{what}: string {i} is not valid UTF-8 (bytes {head}{more})")
