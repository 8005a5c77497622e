"""Deterministic dataset generators and loaders (``fsstgpu.datasets``).

>>> from fsstgpu.datasets import load
>>> load("emails", rows=2, seed=7).to_pylist() == load("emails", rows=2, seed=7).to_pylist()
True
"""

from fsstgpu.datasets.dbtext import DBTEXT_FILES, dbtext_dir, dbtext_files
from fsstgpu.datasets.generators import GENERATORS, generate
from fsstgpu.datasets.loaders import (
    DEFAULT_ROWS,
    is_dataset_name,
    list_datasets,
    load,
    load_dbtext,
    load_ipc,
    load_lines,
    load_parquet,
    sample_path,
)
from fsstgpu.datasets.text_tables import dbtext_table, machine_text_table

__all__ = [
    "DBTEXT_FILES",
    "DEFAULT_ROWS",
    "GENERATORS",
    "dbtext_dir",
    "dbtext_files",
    "dbtext_table",
    "generate",
    "is_dataset_name",
    "list_datasets",
    "load",
    "load_dbtext",
    "load_ipc",
    "load_lines",
    "load_parquet",
    "machine_text_table",
    "sample_path",
]
