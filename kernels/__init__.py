"""GPU kernels (CUDA sources, Python launchers) and their NumPy CPU twins.

Every public function takes NumPy or CuPy input and runs the CPU twin or the GPU kernel
accordingly; both give the same bytes.  CuPy is imported only when a GPU path runs.

>>> import numpy as np
>>> from fsstgpu.kernels import rotate
>>> rotate(np.arange(4), 1).tolist()
[1, 2, 3, 0]
"""

from fsstgpu.kernels.bitplane import (
    bitplane_pack,
    bitplane_pack_cpu,
    bitplane_unpack,
    bitplane_unpack_cpu,
    bitshuffle,
    bitshuffle_cpu,
    bitunshuffle,
    bitunshuffle_cpu,
)
from fsstgpu.kernels.rotate import rotate, rotate_cpu
from fsstgpu.kernels.transpose import transpose, transpose_cpu

__all__ = [
    "bitplane_pack",
    "bitplane_pack_cpu",
    "bitplane_unpack",
    "bitplane_unpack_cpu",
    "bitshuffle",
    "bitshuffle_cpu",
    "bitunshuffle",
    "bitunshuffle_cpu",
    "rotate",
    "rotate_cpu",
    "transpose",
    "transpose_cpu",
]
