"""Inputs that change while the compiled codec works on them (another thread writing a numpy
array the call was given without a copy): whatever they hold, a call stays inside its
buffers. What was checked is what is used: the decoder reads its own copy of the split points.

The changes are made from ``alloc`` (:func:`fsstgpu.native.decode_all` calls it after the
split points are checked and before the decode reads them), the very window another thread
writing the arrays could hit. Each case runs in a subprocess: one that reads outside its
buffers crashes that process, not the test run."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

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
