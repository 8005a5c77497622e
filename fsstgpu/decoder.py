"""FSST decoding on the CPU: the reference every GPU decode is compared with, byte for byte.

Three entry points, compiled (:mod:`fsstgpu.native`, C++ in ``fsstgpu/csrc/decode*.cpp``):

* :func:`decode_range` decodes one run of codes into a caller-given output range (random access,
  one string or many);
* :func:`decode_all` decodes a whole column from its split points (see the contract in
  :mod:`fsstgpu.arrays`), groups of splits in parallel with the GIL released, and can check in
  the same pass that every string is valid UTF-8;
* :func:`compact_tables` lays the symbol tables out as :func:`decode_all` reads them.

Both decoders check everything a corrupt input could get wrong: a code with no symbol, an escape
as the last code, output that would pass the end of its range, and (for :func:`decode_all`) a
split that does not fill its range exactly, a symbol that runs across a string's end, or a stored
code offset that is not where the string's codes start (checked in the same walk, so the whole
column decodes exactly when each string decodes alone). They raise
:class:`~fsstgpu.errors.CorruptDataError` and never write outside the output range they were
given.

Speed: eight codes are tested for an escape at once; while no escape is among them and 64 output
bytes remain, their symbols are written as eight unaligned 8-byte stores (each symbol's zero
padding is overwritten by the next, and a split's by the next split of the same thread); only
the last few bytes before the end of a task (another thread's output) are written one at a
time. A table with all 255 symbols (or a run of codes with none the table lacks) skips the test
for unknown codes.

>>> import numpy as np
>>> from fsstgpu import SymbolTable
>>> from fsstgpu.decoder import decode_all
>>> bytes(decode_all([SymbolTable([b"ab"])], np.array([0, 255, 120], np.uint8),
...                  np.array([0, 3]), np.array([0, 3]), np.array([0]), 3))
b'abx'
"""

from __future__ import annotations

from fsstgpu.native import compact_tables, decode_all, decode_range

__all__ = ["compact_tables", "decode_all", "decode_range"]
