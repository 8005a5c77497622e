"""File formats: the ``fsstgpu.fsst`` Arrow extension type and Parquet / Arrow IPC files.

Specifications live beside the code: ``arrow.md`` (the extension type), ``blob.md`` (the blob),
``files.md`` (Parquet / IPC files). Modules: ``arrow`` (the extension type), ``arrow_values``
(its arrays, scalars and pandas dtype, which decode), ``files`` (compress and decompress files),
``file_reads`` (read them: tables, batch readers, the GPU), ``decoding`` (what decompressing and
reading share), ``inspection`` (describe one), ``rowgroups`` (reading them one row group at a
time), ``sinks`` (writing them so), ``device_reader`` (row groups read in parallel, onto the
GPU), ``pruning`` (which row groups a ``filters=`` read needs), ``datasets`` (directories, globs
and lists of files), ``partitions`` (their Hive partition columns), ``locations`` (local paths
and fsspec URLs), ``sniff`` (which format a file holds), ``atomic`` (safe output), ``selection``
(choosing columns), ``dictionaries`` (dictionary columns), ``tables`` (the string columns of a
Table compressed), ``nested`` (strings inside list, struct and map columns), ``nested_device``
(those columns in device memory), ``arrow_storage`` / ``arrow_read`` (a compressed column to and
from its extension array), ``blob`` (the standalone blob).
"""

from __future__ import annotations

import importlib

# The file functions load on first use (PEP 562), not with the package: `import fsstgpu`
# registers the extension type (fsstgpu.formats.arrow) and needs none of pyarrow.parquet,
# pyarrow.fs or pyarrow.compute, which cost ~80 ms of the import.
_HOMES = {"compress_dataset": "datasets", "decompress_dataset": "datasets",
          "read_dataset": "datasets", "read_dataset_device": "datasets",
          "compress_file": "files", "decompress_file": "files", "read_table": "file_reads",
          "read_table_device": "file_reads", "open_reader": "file_reads",
          "inspect_file": "inspection"}

__all__ = sorted(_HOMES)


def __getattr__(name: str):
    if name in _HOMES:
        value = getattr(importlib.import_module(f"fsstgpu.formats.{_HOMES[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted({*globals(), *_HOMES})
