"""File formats: the ``fsstgpu.fsst`` Arrow extension type and Parquet / Arrow IPC files.

Specifications live beside the code: ``arrow.md`` (the extension type), ``blob.md`` (the blob),
``files.md`` (Parquet / IPC files). Modules: ``arrow`` (the extension type), ``files``
(compress, decompress, inspect and read files), ``rowgroups`` (reading and writing them one row
group at a time), ``sniff`` (which format a file holds), ``atomic`` (safe output),
``columns`` (choosing columns), ``dictionaries`` (dictionary columns).
"""

from fsstgpu.formats.files import compress_file, decompress_file, inspect_file, read_table

__all__ = ["compress_file", "decompress_file", "inspect_file", "read_table"]
