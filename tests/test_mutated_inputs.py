"""Inputs that change while the compiled codec works on them (another thread writing a numpy
array the call was given without a copy): whatever they hold, a call stays inside its
buffers. What was checked is what is used: the decoder reads its own copy of the split points,
the encoder its own copy of the string offsets.

The changes are made from ``alloc`` (:func:`fsstgpu.native.decode_all` calls it after the
split points are checked and before the decode reads them), the very window another thread
writing the arrays could hit. Each case runs in a subprocess: one that reads outside its
buffers crashes that process, not the test run."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pyarrow as pa
import pytest

import fsstgpu
from fsstgpu.columns import compress_column
from fsstgpu.native import encode_blocks

DECODE_WITH_CHANGED_SPLITS = """
import sys
import numpy as np, pyarrow as pa, fsstgpu
from fsstgpu import native

col = pa.array([f"hello world {i}" for i in range(100_000)])
carr = fsstgpu.compress(col, split_size=4096)
assert len(carr.tables) > 1
sc, so = np.array(carr.split_codes), np.array(carr.split_out)
st = np.array(carr.split_table, np.int64)
want = native.decode_all(carr.tables, carr.codes, sc, so, st, carr.uncompressed_bytes)
total = carr.uncompressed_bytes

def alloc(size):
    # after the check, before the decode: what another thread could write meanwhile
    if sys.argv[1] == "table":
        st[-1] = 1 << 20
    elif sys.argv[1] == "out":
        so[-2], so[-1] = total, total + (1 << 30)
    else:
        sc[-2] = 1 << 40
    return np.empty(size, np.uint8)

got = native.decode_all(carr.tables, carr.codes, sc, so, st, total, alloc=alloc)
print(bool(np.array_equal(got, want)))
"""


@pytest.mark.parametrize("changed", ["table", "out", "codes"])
def test_decode_all_uses_the_split_points_it_checked(changed):
    res = subprocess.run([sys.executable, "-c", textwrap.dedent(DECODE_WITH_CHANGED_SPLITS),
                          changed], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, f"rc {res.returncode}: {res.stderr[-2000:]}"
    assert res.stdout.split() == ["True"]


def test_compress_encodes_the_offsets_it_checked():
    """The encoder sizes its output from the offsets and reads them again to encode: it must
    read a copy, not the caller's array (changed here between the two, as another thread could:
    before, the codes were of the changed offsets, or the encoder ran for good)."""
    words = [f"row {i} of some text" for i in range(5000)]
    data = np.frombuffer("".join(words).encode(), np.uint8).copy()
    offsets = np.concatenate([[0], np.cumsum([len(w) for w in words])]).astype(np.int64)
    column = pa.LargeStringArray.from_buffers(len(words), pa.py_buffer(offsets),
                                              pa.py_buffer(data))
    want = fsstgpu.compress(column)

    def encode(tables, data_, offsets_, block_starts):
        offsets[1:-1] = offsets[1:-1] // 2  # the caller's array changes mid-call
        return encode_blocks(tables, data_, offsets_, block_starts)

    got = compress_column(column, encode=encode)
    assert got.equals(want)
    assert fsstgpu.decompress(got).to_pylist() == words
