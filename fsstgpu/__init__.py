"""fsstgpu: FSST string compression for Arrow columns, decompressed on NVIDIA GPUs.

The whole public API lives here. Train a symbol table, compress an Arrow string column, and get
exactly the column back, on the CPU or (with CuPy and an NVIDIA GPU) on the GPU:

>>> import pyarrow as pa, fsstgpu
>>> col = pa.array(["http://example.com/a", None, "http://example.com/b"])
>>> carr = fsstgpu.compress(col)
>>> fsstgpu.decompress(carr, device="cpu").equals(col)
True

The package in layers, each importing only itself and the layers below (``tests/test_layers.py``
holds the map): the base (``errors``, ``limits``, ``types``, ``parallel``, ``device``,
``memory``); the CPU codec (the compiled ``_native`` and its face ``native``, ``training``,
``blocks``, ``scan``, ``checks``, ``splits``, ``symbol_table``, ``arrow_layout``, ``inputs``,
``utf8``); the column API
(``arrays``: CompressedStringArray, ``columns``: compress_column / decompress_column, ``rows``,
``slicing``); the GPU runtime (``fsstgpu.gpu``, ``fsstgpu.kernels``); the formats
(``fsstgpu.formats``: blob, extension type, tables, files, datasets); the integrations
(``fsstgpu.integrations``: dask, numcodecs, zarr; ``testing``; ``fsstgpu.datasets``); and the face:
this module, ``api`` (the front door that dispatches columns, tables, extension arrays and blobs
to the CPU or the GPU) and ``fsstgpu.cli``.
"""

# The subpackages this file loads, first (their __init__ files are small). CPython imports a
# missing parent package through the top one, waiting for this file to finish; a thread importing
# one of our modules meanwhile would wait holding that module's lock, which this file may need
# next: both stuck (tests/test_import_threads.py). Loaded here first, the parents are found.
from fsstgpu import formats, gpu, kernels, native  # noqa: F401
from fsstgpu.api import Codec, compress, decompress, decompress_device
from fsstgpu.arrays import CompressedStringArray
from fsstgpu.device import backend_info, gpu_available
from fsstgpu.errors import BatchDecodeError, CorruptDataError, DeviceError, FsstGpuError
from fsstgpu.formats.tables import compress_table, decompress_table
from fsstgpu.gpu.arrays import DeviceCompressedStringArray, to_device
from fsstgpu.gpu.encode import compress_device
from fsstgpu.gpu.strings import DeviceStringArray
from fsstgpu.symbol_table import SymbolTable
from fsstgpu.training import train

__version__ = "0.1.0"

__all__ = [
    "BatchDecodeError",
    "Codec",
    "CompressedStringArray",
    "CorruptDataError",
    "DeviceCompressedStringArray",
    "DeviceError",
    "DeviceStringArray",
    "FsstGpuError",
    "SymbolTable",
    "backend_info",
    "compress",
    "compress_device",
    "compress_table",
    "decompress",
    "decompress_device",
    "decompress_table",
    "gpu_available",
    "to_device",
    "train",
]
