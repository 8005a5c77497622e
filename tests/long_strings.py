"""Shared by the tests of cut strings' storage: three strings long enough to be split."""

from __future__ import annotations

import pyarrow as pa

import fsstgpu
from fsstgpu.formats.arrow_storage import to_extension_array


def three_long_strings():
    """Three strings long enough to be split, their extension array and each one's cuts (the
    last string's text hardly compresses: its cuts are not those of the others)."""
    text = ["".join(chr(97 + (i * 7) % 26) for i in range(600)), "ab" * 2000,
            "".join(chr(33 + (i * i * 31 + i * 17) % 90) for i in range(600))]
    col = pa.array(text)
    ext = to_extension_array(fsstgpu.compress(col, split_size=64))
    cuts = ext.storage.field("cuts").to_pylist()
    assert all(cuts)
    return col, ext, cuts
