"""Pieces of splits: the planned decode's finer, evenly sized units of work, and their CPU twin.

A column's splits are balanced by output bytes, so their code bytes differ (dbtext at 4 MiB:
1,675 a split on average, 4,309 at most), and a decode whose blocks all fit on the GPU at once
lasts as long as the warps of its longest splits. From its second call on, such a planned
decode (:class:`fsstgpu.kernels.fsst_decode.PlannedDecode`) decodes pieces instead: split ``k``
becomes pieces ``first[k]:first[k + 1]``, piece ``i > first[k]`` starting at the window
``base0 + (i - first[k]) * W`` (``base0``: the split's first code rounded down to 8; ``W`` a
multiple of 256, a window of the decode), or one byte later where that byte is an escape's
literal. :func:`plan_pieces` plans them on the host from the split positions; the kernel
``split_pieces`` (``split_pieces.cuh``) finds where they start in codes and output, and
:func:`split_pieces_cpu` is its twin.

>>> import numpy as np
>>> from fsstgpu.kernels.split_pieces import plan_pieces
>>> first, table = plan_pieces(np.array([0, 100, 700]), np.array([0, 1], np.uint16), 256)
>>> first.tolist(), table.tolist()
([0, 1, 4], [0, 1, 1, 1])
"""

from __future__ import annotations

import numpy as np

__all__ = ["WINDOW", "piece_bytes", "plan_pieces", "split_pieces_cpu"]

#: code bytes of a window of the decode kernel (32 lanes x 8): pieces start at window bounds
WINDOW = 256


def _spans(split_codes: np.ndarray) -> np.ndarray:
    """Each split's code bytes from its first window's start (its first code rounded down to
    8, where the decode's and the walk's windows begin) to its end."""
    return split_codes[1:] - (split_codes[:-1] & ~7)


def piece_bytes(split_codes: np.ndarray, warps: int) -> int:
    """The code bytes of a piece for a decode that ``warps`` resident warps run at once: the
    column's code bytes spread over those warps, in whole windows; 0 where that cuts no split
    (no pieces then).

    >>> import numpy as np
    >>> from fsstgpu.kernels.split_pieces import piece_bytes
    >>> piece_bytes(np.array([0, 3000, 4000]), 4), piece_bytes(np.array([0, 300, 600]), 1)
    (1024, 0)
    """
    split_codes = np.asarray(split_codes, np.int64)
    if len(split_codes) < 2 or warps < 1:
        return 0
    total = int(split_codes[-1] - split_codes[0])
    w = max(WINDOW, -(-total // (warps * WINDOW)) * WINDOW)
    longest = int(np.max(_spans(split_codes)))
    return w if longest > w else 0


def plan_pieces(split_codes, split_table, w: int) -> tuple[np.ndarray, np.ndarray]:
    """Each split's first piece and each piece's table, for pieces of ``w`` code bytes.

    Parameters
    ----------
    split_codes : numpy.ndarray of int64, shape (nsplits + 1,)
    split_table : numpy.ndarray of uint16, shape (nsplits,)
    w : int
        A positive multiple of :data:`WINDOW`.

    Returns
    -------
    first : numpy.ndarray of int64, shape (nsplits + 1,)
        Split ``k``'s pieces are ``first[k]:first[k + 1]`` (at least one).
    table : numpy.ndarray of uint16, shape (first[-1],)
        Each piece's table: its split's.
    """
    if w <= 0 or w % WINDOW:
        raise ValueError(f"piece bytes must be a positive multiple of {WINDOW}, not {w}")
    split_codes = np.asarray(split_codes, np.int64)
    count = np.maximum(1, -(-_spans(split_codes) // w))
    first = np.zeros(len(count) + 1, np.int64)
    np.cumsum(count, out=first[1:])
    return first, np.repeat(np.asarray(split_table, np.uint16), count)


def split_pieces_cpu(codes, split_codes, split_out, split_table, sym_len, out_size: int,
                     first, w: int) -> tuple[np.ndarray, np.ndarray]:
    """Where every piece starts in the codes and in the output: the ``split_pieces`` kernel's
    twin (the same arrays for the same input, corrupt input included).

    ``sym_len`` holds each table's 256 symbol lengths (``pack_tables``' second array); a byte
    after an escape (code 255) is a literal. A split whose bounds or table are out of range,
    or whose walk meets an undefined code or outputs past the split, keeps one piece.

    >>> import numpy as np
    >>> from fsstgpu.kernels.split_pieces import plan_pieces, split_pieces_cpu
    >>> lens = np.zeros((1, 256), np.uint8); lens[0, 0] = 2
    >>> codes = np.zeros(300, np.uint8); codes[255] = 255  # an escape before byte 256
    >>> sc, so = np.array([0, 300]), np.array([0, 2 * 299 + 1])
    >>> first, _ = plan_pieces(sc, np.zeros(1, np.uint16), 256)
    >>> [a.tolist() for a in split_pieces_cpu(codes, sc, so, [0], lens, 599, first, 256)]
    [[0, 257, 300], [0, 511, 599]]
    """
    codes = np.asarray(codes, np.uint8)
    nsplits = len(split_table)
    npieces = int(first[-1])
    piece_codes = np.zeros(npieces + 1, np.int64)
    piece_out = np.zeros(npieces + 1, np.int64)
    for k in range(nsplits):
        cb, ce = int(split_codes[k]), int(split_codes[k + 1])
        ob, oe = int(split_out[k]), int(split_out[k + 1])
        t = int(split_table[k])
        pf, cuts = int(first[k]), int(first[k + 1] - first[k] - 1)
        piece_codes[pf], piece_out[pf] = cb, ob
        if k == nsplits - 1:
            piece_codes[pf + cuts + 1], piece_out[pf + cuts + 1] = ce, oe
        if cuts <= 0:
            continue
        whole = not (0 <= cb <= ce <= len(codes) and 0 <= ob <= oe <= out_size
                     and t < len(sym_len))
        if not whole:
            whole = not _walk(codes, cb, ce, ob, oe, sym_len[t], pf, cuts, w,
                              piece_codes, piece_out)
        if whole:
            piece_codes[pf + 1 : pf + cuts + 1] = ce
            piece_out[pf + 1 : pf + cuts + 1] = oe
    return piece_codes, piece_out


def _walk(codes, cb, ce, ob, oe, lens, pf, cuts, w, piece_codes, piece_out) -> bool:
    """Record the split's piece starts; False where the kernel keeps the split whole (every
    code before the last cut is read; the output only grows, so checking it at each cut is
    checking it after every window, as the kernel does)."""
    pos, out, literal = cb, ob, False
    for cut in range(1, cuts + 1):
        at = (cb & ~7) + cut * w
        if at >= ce:
            return False
        while pos < at:
            c = int(codes[pos])
            if literal:
                out, literal = out + 1, False
            elif c == 255:
                literal = True
            elif lens[c] == 0:
                return False
            else:
                out += int(lens[c])
            pos += 1
        if out + literal > oe:
            return False
        piece_codes[pf + cut] = at + literal
        piece_out[pf + cut] = out + literal
    return True
