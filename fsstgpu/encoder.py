"""FSST encoding on the CPU: greedy longest match, string by string, in parallel over chunks.

Columns are encoded by the compiled kernel (:func:`fsstgpu.native.encode_blocks`: chunks of up to
1 MB of strings, at least four per thread as long as each keeps 64 KB, each into its own
worst-case buffer, then packed in order), so the result is identical to encoding the strings one
after the other, whatever the thread count. The tests check it against
:func:`fsstgpu.testing.greedy_encode`, FSST's definition in plain Python.
"""

from __future__ import annotations

import numpy as np

from fsstgpu.native import encode_blocks
from fsstgpu.symbol_table import SymbolTable


def encode_strings(table: SymbolTable, data: np.ndarray, offsets: np.ndarray):
    """Compress every string ``data[offsets[i]:offsets[i+1]]`` with ``table``: the one-block
    case of :func:`fsstgpu.native.encode_blocks` (whose parameters and results these are).

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import SymbolTable
    >>> from fsstgpu.encoder import encode_strings
    >>> t = SymbolTable([b"ab"])
    >>> codes, offs = encode_strings(t, np.frombuffer(b"abxab", np.uint8), np.array([0, 3, 5]))
    >>> codes.tolist(), offs.tolist()
    ([0, 255, 120, 0], [0, 3, 4])
    """
    n = len(offsets) - 1 if np.ndim(offsets) == 1 else 0
    return encode_blocks((table,), data, offsets, np.array([0, max(n, 0)], np.int64))
