"""Serialised symbol tables read many at once (``fsstgpu._native.symbol_slots``, C++ in
``fsstgpu/csrc/table_slots.cpp``): a file holds a table a block, ~1,000 a column where a table
was trained for each run of similar text, and read one by one
(:meth:`~fsstgpu.SymbolTable.from_bytes`) they cost ~20 us each, most of a page reader's host
work (session 84).
"""

from __future__ import annotations

import numpy as np

from fsstgpu._native import symbol_slots as _symbol_slots
from fsstgpu.symbol_table import HEADER_BYTES, SymbolTable, serialised_counts

__all__ = ["read_tables"]


def read_tables(blob, offsets) -> list:
    """The serialised tables ``blob[offsets[k] : offsets[k + 1]]`` read at once, each a
    :class:`~fsstgpu.SymbolTable`, or None where :meth:`~fsstgpu.SymbolTable.from_bytes` would
    raise :class:`~fsstgpu.CorruptDataError` (bad magic, version, counts, size or CRC, or
    symbols out of canonical order).

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import SymbolTable
    >>> from fsstgpu.native.tables import read_tables
    >>> raw = [SymbolTable([b"a", b"xy"]).to_bytes(), b"junk", SymbolTable([b"b"]).to_bytes()]
    >>> offsets = np.cumsum([0] + [len(r) for r in raw])
    >>> [t if t is None else t.symbols for t in read_tables(b"".join(raw), offsets)]
    [(b'a', b'xy'), None, (b'b',)]
    """
    data = blob if isinstance(blob, np.ndarray) else np.frombuffer(blob, np.uint8)
    offsets = np.asarray(offsets, np.int64)
    ok, counts = serialised_counts(data, offsets)
    packed, lengths, ordered = _symbol_slots(data, offsets[:-1] + HEADER_BYTES, counts)
    packed.flags.writeable = lengths.flags.writeable = False  # (the tables' slices read-only)
    ordered = ordered.astype(bool)
    ok &= ordered
    written = np.where(ordered, counts.sum(axis=1, dtype=np.int64), 0)
    ends = np.cumsum(written)
    return [SymbolTable.from_canonical(packed[e - m : e], lengths[e - m : e]) if good else None
            for good, e, m in zip(ok.tolist(), ends.tolist(), written.tolist(), strict=True)]
