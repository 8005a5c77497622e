"""File formats: the ``fsstgpu.fsst`` Arrow extension type and Parquet / Arrow IPC files.

Specifications live beside the code: ``arrow.md`` (the extension type), ``blob.md`` (the blob),
``files.md`` (Parquet / IPC files). Modules: ``arrow`` (the extension type), ``files``
(compress, decompress and read files), ``inspection`` (describe one), ``rowgroups`` (reading and
writing them one row group at a time), ``device_reader`` (row groups read in parallel, onto the
GPU), ``datasets`` (directories, globs and lists of files), ``partitions`` (their Hive
partition columns), ``locations`` (local paths and fsspec URLs), ``sniff`` (which format a file
holds), ``atomic`` (safe output), ``columns`` (choosing columns), ``dictionaries`` (dictionary
columns).
"""

from fsstgpu.formats.datasets import compress_dataset, decompress_dataset, read_dataset
from fsstgpu.formats.files import compress_file, decompress_file, read_table
from fsstgpu.formats.inspection import inspect_file

__all__ = ["compress_dataset", "compress_file", "decompress_dataset", "decompress_file",
           "inspect_file", "read_dataset", "read_table"]
