"""Hive partition columns of a dataset: ``year=2026/kind=web/part-0.parquet`` gives every row of
that file ``year = 2026`` and ``kind = "web"``, as ``pyarrow.dataset.dataset(...,
partitioning="hive")`` reads them.

The values come from the folder names of each file's relative name (below the dataset's
directory, or below a glob pattern's fixed part: :func:`fsstgpu.formats.locations.dataset_files`),
URI-decoded; a key's column is ``int32`` when all its values are integers of that range, else
``string``; ``__HIVE_DEFAULT_PARTITION__`` and a key a file's folders lack are nulls. Keys come
in the order they first appear.

>>> from fsstgpu.formats.partitions import hive_columns
>>> cols = hive_columns(["year=2025/a.parquet", "year=2026/k=x%20y/b.parquet"])
>>> {name: (str(t), values) for name, (t, values) in cols.items()}
{'year': ('int32', [2025, 2026]), 'k': ('string', [None, 'x y'])}
"""

from __future__ import annotations

import re
from urllib.parse import unquote

import pyarrow as pa

__all__ = ["NULL_PARTITION", "hive_columns", "with_partition_columns"]

#: A partition value that stands for null (Hive's, pyarrow's ``null_fallback``).
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"
_INT = re.compile(r"^[+-]?[0-9]+$")
_INT32 = (-2**31, 2**31 - 1)


def _folder_values(rel: str) -> dict[str, str | None]:
    values = {}
    for part in rel.split("/")[:-1]:  # folders only: a file name is no partition
        key, eq, value = part.partition("=")
        if eq and key:
            value = unquote(value)
            values[unquote(key)] = None if value == NULL_PARTITION else value
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
        if present and all(_INT.match(v) and _INT32[0] <= int(v) <= _INT32[1] for v in present):
            out[key] = (pa.int32(), [None if v is None else int(v) for v in raw])
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
