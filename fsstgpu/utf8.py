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
continuation bytes at all). The check is compiled (:func:`fsstgpu.native.first_invalid_string`:
two interleaved automaton streams per run, ASCII skipped 64 bytes at a time, runs spread over
the cores with the GIL released); it replaced a numba kernel of the same method, 1.5-3.8x slower
on mostly-ASCII text (BENCHMARKS.md section 6). Rules are RFC 3629's: no overlong forms, no
surrogates (U+D800..U+DFFF), nothing past U+10FFFF.

>>> import numpy as np
>>> from fsstgpu.utf8 import first_invalid_string
>>> data = np.frombuffer("añb".encode() + b"\\xff", np.uint8)
>>> first_invalid_string(data, np.array([0, 1, 3, 4, 5]))  # 'a', 'ñ', 'b', b'\\xff'
3
>>> first_invalid_string(data, np.array([0, 2, 3]))  # 'a\\xc3', '\\xb1': cut inside 'ñ'
0
"""

from __future__ import annotations

import numpy as np

from fsstgpu.errors import invalid_utf8_error
from fsstgpu.native import first_invalid_string as native_first_invalid_string

__all__ = ["check_utf8", "first_invalid_string", "invalid_utf8_error"]


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
    return native_first_invalid_string(data, offsets)


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
    i = first_invalid_string(data, offsets)
    if i >= 0:
        raise invalid_utf8_error(data, offsets, i, what)
