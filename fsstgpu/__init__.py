"""fsstgpu: FSST string compression for Arrow columns, decompressed on NVIDIA GPUs.

The whole public API lives here. Train a symbol table, compress an Arrow string column, and get
exactly the column back, on the CPU or (with CuPy and an NVIDIA GPU) on the GPU:

>>> import pyarrow as pa, fsstgpu
>>> col = pa.array(["http://example.com/a", None, "http://example.com/b"])
>>> carr = fsstgpu.compress(col)
>>> fsstgpu.decompress(carr, device="cpu").equals(col)
True
"""

from fsstgpu.errors import BatchDecodeError, CorruptDataError, DeviceError, FsstGpuError  # noqa: I001
from fsstgpu.device import backend_info, gpu_available
from fsstgpu.symbol_table import SymbolTable
from fsstgpu.training import train
from fsstgpu.arrays import CompressedStringArray
from fsstgpu.codec import Codec, compress, decompress, decompress_device
from fsstgpu.tables import compress_table, decompress_table
from fsstgpu.device_arrays import DeviceCompressedStringArray, DeviceStringArray, to_device
from fsstgpu.formats import arrow as _arrow_extension  # noqa: F401  (registers fsstgpu.fsst)

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
    "compress_table",
    "decompress",
    "decompress_device",
    "decompress_table",
    "gpu_available",
    "to_device",
    "train",
]
