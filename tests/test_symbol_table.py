"""SymbolTable's constructor: canonical order, the packed view, and every refusal."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fsstgpu import SymbolTable


@given(st.sets(st.binary(min_size=1, max_size=8), max_size=255))
def test_order_and_packed_view(symbols):
    t = SymbolTable(list(symbols))
    assert t.symbols == tuple(sorted(symbols, key=lambda s: (len(s), s)))
    assert t.lengths.tolist() == [len(s) for s in t.symbols] and t.lengths.dtype == np.uint8
    assert t.packed.dtype == np.uint64 and len(t.packed) == len(t)
    assert t.packed.tolist() == [int.from_bytes(s, "little") for s in t.symbols]
    assert not t.packed.flags.writeable and not t.lengths.flags.writeable
    assert SymbolTable(reversed(t.symbols)) == t


def test_bytes_like_symbols_are_copied_as_bytes():
    t = SymbolTable([bytearray(b"ab"), memoryview(b"c")])
    assert t.symbols == (b"c", b"ab") and all(type(s) is bytes for s in t.symbols)


@pytest.mark.parametrize(("symbols", "message"), [
    ([bytes([i, j]) for i in range(16) for j in range(16)], "at most 255 symbols, not 256"),
    ([b"a", b""], "1-8 bytes long, not 0: b''"),
    ([b"123456789", b"a"], "1-8 bytes long, not 9: b'123456789'"),
    ([b"ab", b"ab"], "distinct"),
])
def test_refusals(symbols, message):
    with pytest.raises(ValueError, match=message):
        SymbolTable(symbols)
