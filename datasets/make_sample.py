"""Regenerate the bundled sample Parquet file from the generators.

Run ``python -m fsstgpu.datasets.make_sample`` (optionally ``--out PATH``). The table is fully
determined by the generators' seeds; the file's bytes are the same on every run with the same
pyarrow version (its footer names the writer, e.g. ``parquet-cpp-arrow version 26.0.1``, and a
different pyarrow may lay pages out differently), so ``tests/test_datasets.py`` compares bytes
only when the writer version matches and the decoded table otherwise.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from fsstgpu.datasets.generators import generate
from fsstgpu.datasets.loaders import sample_path

ROWS = 6_000
ROW_GROUP_SIZE = 2_000


def build_table(rows: int = ROWS, seed: int = 0) -> pa.Table:
    """Build the sample table: five string columns, an int64 id and a string column with nulls.

    Examples
    --------
    >>> from fsstgpu.datasets.make_sample import build_table
    >>> t = build_table(10)
    >>> t.column_names
    ['id', 'url', 'email', 'log_line', 'json_record', 'name', 'comment']
    >>> t.column("comment").null_count
    5
    """
    nulls = generate("null_heavy", rows, seed, null_fraction=0.5).is_null()
    comment = pc.if_else(nulls, pa.scalar(None, pa.string()), generate("multilingual", rows, seed))
    return pa.table({
        "id": pa.array(np.arange(1_000_001, 1_000_001 + rows, dtype=np.int64)),
        "url": generate("urls", rows, seed),
        "email": generate("emails", rows, seed),
        "log_line": generate("log_lines", rows, seed),
        "json_record": generate("json_records", rows, seed),
        "name": generate("person_names", rows, seed),
        "comment": comment,
    })


def write_sample(path: str | os.PathLike | None = None) -> Path:
    """Write the sample table as Parquet (snappy, 3 row groups) and return where it went.

    Parameters
    ----------
    path : str or os.PathLike, optional
        Destination; default :func:`fsstgpu.datasets.sample_path`, the bundled file.

    Examples
    --------
    >>> import tempfile, os
    >>> from fsstgpu.datasets.make_sample import write_sample
    >>> with tempfile.TemporaryDirectory() as d:
    ...     write_sample(os.path.join(d, "s.parquet")).stat().st_size < 1_000_000
    True
    """
    out = Path(path) if path is not None else sample_path()
    out.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(build_table(), out, row_group_size=ROW_GROUP_SIZE, compression="snappy")
    return out


def main(argv: list[str] | None = None) -> None:
    """Command line: ``python -m fsstgpu.datasets.make_sample [--out PATH]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help="destination (default: the bundled sample file)")
    args = parser.parse_args(argv)
    out = write_sample(args.out)
    print(f"wrote {out} ({out.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
