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


def with_nulls_and_long(table: pa.Table, rng, *, null_share: float, longest: int,
                        fill: str) -> pa.Table:
    """``table`` with nulls over its first string column (``null_share`` of the rows) and its
    second string column made large_string and long: each value after 0 to ``longest``
    ``fill`` characters (long enough to be split: the cuts leaf holds values)."""
    import pyarrow.compute as pc

    strings = [n for n in table.column_names if pa.types.is_string(table.schema.field(n).type)]
    first = table.column(strings[0])
    mask = pa.array(rng.random(len(table)) < null_share)
    table = table.set_column(table.schema.get_field_index(strings[0]), strings[0],
                             pc.if_else(mask, pa.scalar(None, first.type), first))
    long = pa.array([(fill * int(rng.integers(0, longest)) + s) if s else s for s in
                     table.column(strings[1]).to_pylist()], pa.large_string())
    return table.set_column(table.schema.get_field_index(strings[1]), strings[1], long)
