"""SymbolTable.from_packed: the trainer's packed symbols make the constructor's table."""

from __future__ import annotations

import numpy as np
import pytest

from fsstgpu import SymbolTable


@pytest.mark.parametrize("seed", range(4))
def test_from_packed_equals_the_constructor(seed):
    rng = np.random.default_rng(seed)
    for _ in range(300):
        found = set()
        n = int(rng.integers(0, 256))
        while len(found) < n:  # a small alphabet: many shared prefixes and equal lengths
            found.add(bytes(rng.choice([0, 1, 97, 255], int(rng.integers(1, 9))).astype(np.uint8)))
        syms = list(found)
        vals = np.array([int.from_bytes(s.ljust(8, b"\0"), "little") for s in syms], np.uint64)
        a = SymbolTable(syms)
        b = SymbolTable.from_packed(vals, np.array([len(s) for s in syms]))
        assert a == b and a.symbols == b.symbols
        for x, y in ((a.packed, b.packed), (a.lengths, b.lengths)):
            assert x.dtype == y.dtype and np.array_equal(x, y) and not y.flags.writeable


@pytest.mark.parametrize(("values", "lengths", "message"), [
    ([1], [1, 1], "differ in length"),
    ([0x6100], [1], "beyond its length"),
    ([1, 1], [1, 1], "distinct"),
    ([1], [0], "1-8 bytes"),
    ([1], [9], "1-8 bytes"),
    (list(range(1, 257)), [1] * 256, "at most 255"),
])
def test_from_packed_rejects_what_the_constructor_rejects(values, lengths, message):
    with pytest.raises(ValueError, match=message):
        SymbolTable.from_packed(np.array(values, np.uint64), np.array(lengths))
