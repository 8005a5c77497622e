"""Hive partition columns of a dataset: ``year=2026/kind=web/part-0.parquet`` gives every row of
that file ``year = 2026`` and ``kind = "web"``, as ``pyarrow.dataset.dataset(...,
partitioning="hive")`` reads them.

The values come from the folder names of each file's relative name (below the dataset's
directory, or below a glob pattern's fixed part: :func:`fsstgpu.formats.locations.dataset_files`),
URI-decoded; a key's column is ``int32`` when all its values are integers of that range as
Arrow's parser reads them (decimal with an optional ``-``, or ``0x`` and up to 8 hex digits,
taken as 32 bits: ``0xFFFFFFFF`` is -1), else ``string``; ``__HIVE_DEFAULT_PARTITION__`` and
a key a file's folders lack are nulls. Keys come in the order they first appear.

>>> from fsstgpu.formats.partitions import hive_columns
>>> cols = hive_columns(["year=2025/a.parquet", "year=2026/k=x%20y/b.parquet"])
>>> {name: (str(t), values) for name, (t, values) in cols.items()}
{'year': ('int32', [2025, 2026]), 'k': ('string', [None, 'x y'])}
"""

from __future__ import annotations

import re
from urllib.parse import unquote

import pyarrow as pa

__all__ = ["NULL_PARTITION", "hive_columns", "with_partition_columns", "with_partition_keys"]

#: A partition value that stands for null (Hive's, pyarrow's ``null_fallback``).
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"
_DECIMAL = re.compile(r"-?[0-9]+")  # no "+": pyarrow keeps "+5" a string
_HEX = re.compile(r"0[xX][0-9a-fA-F]{1,8}")
_INT32 = (-2**31, 2**31 - 1)


def _int32(value: str) -> int | None:
    """``value`` as the int32 pyarrow's partition inference reads it, or None when it is not
    one (then the key's column is a string column).

    >>> from fsstgpu.formats.partitions import _int32
    >>> [_int32(v) for v in ("007", "-7", "+7", "2147483648", "0x10", "0xFFFFFFFF", "1.0")]
    [7, -7, None, None, 16, -1, None]
    """
    if _DECIMAL.fullmatch(value):
        number = int(value)
        return number if _INT32[0] <= number <= _INT32[1] else None
    if _HEX.fullmatch(value):  # 32 bits, two's complement
        number = int(value[2:], 16)
        return number - 2**32 if number > _INT32[1] else number
    return None


def _folder_values(rel: str) -> dict[str, str | None]:
    """The ``key=value`` folders of relative name ``rel``, URL-decoded; a key repeated in
    deeper folders keeps its outermost value, as pyarrow's hive partitioning does."""
    values = {}
    for part in rel.split("/")[:-1]:  # folders only: a file name is no partition
        key, eq, value = part.partition("=")
        if eq and key:
            try:  # (unquote's default replaces bad bytes: two folders would read as one)
                key, value = unquote(key, errors="strict"), unquote(value, errors="strict")
            except UnicodeDecodeError:
                raise ValueError(f"partition folder {part!r} of {rel!r} is not UTF-8 after "
                                 "URL decoding") from None
            values.setdefault(key, None if value == NULL_PARTITION else value)
    return values


def hive_columns(rels) -> dict[str, tuple[pa.DataType, list]]:
    """Each partition key of the files named ``rels`` (relative names), with its type and one
    value per file.

    Examples
    --------
    See the module docstring.
    """
    per_file = [_folder_values(rel) for rel in rels]
    keys = list(dict.fromkeys(k for values in per_file for k in values))
    out = {}
    for key in keys:
        raw = [values.get(key) for values in per_file]
        present = [v for v in raw if v is not None]
        if present and all(_int32(v) is not None for v in present):
            out[key] = (pa.int32(), [None if v is None else _int32(v) for v in raw])
        else:
            out[key] = (pa.string(), raw)
    return out


def with_partition_columns(table: pa.Table, columns: dict[str, tuple[pa.DataType, object]]
                           ) -> pa.Table:
    """``table`` with a constant column per partition key (``{name: (type, value)}``) appended;
    a key the table has a column of already is left to that column.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.partitions import with_partition_columns
    >>> t = with_partition_columns(pa.table({"s": ["a", "b"]}), {"year": (pa.int32(), 2026)})
    >>> t.column("year").to_pylist(), str(t.schema.field("year").type)
    ([2026, 2026], 'int32')
    """
    for name, (type_, value) in columns.items():
        if name not in table.column_names:
            table = table.append_column(pa.field(name, type_),
                                        [pa.repeat(pa.scalar(value, type_), table.num_rows)])
    return table


def with_partition_keys(cols: dict, keys: dict) -> dict:
    """:func:`with_partition_columns` for a part read as a dict of columns (device columns
    among them, e.g. :func:`fsstgpu.formats.read_table_device`'s): a host column per key,
    constant over the part's rows, after its own columns; a key the part has a column of is
    left to that column.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.partitions import with_partition_keys
    >>> cols = with_partition_keys({"n": pa.chunked_array([[1, 2]])},
    ...                            {"year": (pa.int32(), 2026)})
    >>> cols["year"].to_pylist(), str(cols["year"].type)
    ([2026, 2026], 'int32')
    """
    rows = len(next(iter(cols.values()))) if cols else 0
    out = dict(cols)
    for name, (type_, value) in keys.items():
        if name not in out:
            out[name] = pa.chunked_array([pa.repeat(pa.scalar(value, type_), rows)], type=type_)
    return out
