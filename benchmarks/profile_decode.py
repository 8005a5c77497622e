"""One device-resident decode of ~1 GiB of dbtext strings, for a profiler to look at.

Usage (Nsight Compute, clocks left alone)::

    ncu --clock-control none -k regex:decode_planned -s 2 -c 1 --section SpeedOfLight \\
        --section WarpStateStats --section InstructionStats python -m benchmarks.profile_decode

The planned decode's kernel (``decode_planned``: the decode's blocks, then the offsets scan's)
runs three times (the first launched directly, the next two replayed from a CUDA graph: ``-s 2``
skips the first two); the output is checked against the CPU decoder's once.
"""

from __future__ import annotations

import sys

import numpy as np

import fsstgpu
from benchmarks.gpu_sizes import column_of_size, corpus
from fsstgpu.gpu.decode import decode_async


def main(size: int = 1 << 30) -> int:
    column = column_of_size(fsstgpu.compress(corpus()), size)
    dev = fsstgpu.to_device(column)
    for _ in range(3):
        result = decode_async(dev).check()
    expect = np.asarray(fsstgpu.decompress(column, device="cpu").buffers()[2]).view(np.uint8)
    if not np.array_equal(result.data.get(), expect[: column.uncompressed_bytes]):
        raise RuntimeError("decoded bytes differ")
    print(f"decoded {dev.total:,} bytes in {dev.nsplits:,} splits")
    return 0


if __name__ == "__main__":
    sys.exit(main())
