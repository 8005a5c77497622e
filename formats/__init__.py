"""File formats: the ``fsstgpu.fsst`` Arrow extension type and Parquet / Arrow IPC files.

Specifications live beside the code: ``arrow.md`` (the extension type).
"""

from fsstgpu.formats.files import compress_file, decompress_file, inspect_file, read_table

__all__ = ["compress_file", "decompress_file", "inspect_file", "read_table"]
