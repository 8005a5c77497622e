"""Each data-movement kernel once at its benchmark size (1 GiB), for Nsight Compute (issue #26).

The kernels run through their public functions, as ``fsstgpu bench kernels`` times them: rotate
(int32 and uint8; a small, a tile-ragged and a third-of-n shift), bitshuffle / bitunshuffle of
1-, 4- and 8-byte elements, the bit-plane codec on string-length-like uint32 (pack, unpack,
unpack into int64 offsets) and on a sorted int64 column (delta), and the in-place transpose of
the coprime 5003 x 53636 float32 matrix. Everything runs once unprofiled (compilation, pool
growth), then once between ``cudaProfilerStart`` / ``Stop``, so a profiler started with
profiling off sees each case exactly once; every case is named by an NVTX range.

Usage (clocks left alone, so the figures are the benchmark's)::

    ncu --profile-from-start off --clock-control none --nvtx --print-summary none \\
        --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats \\
        --section Occupancy --section LaunchStats --section InstructionStats \\
        --csv --page details python -m benchmarks.profile_kernels > kernels.csv

Nothing is checked here: the GPU tests compare every kernel with its CPU twin. Kernels appear in
the profile in the order of :func:`cases` (a case may launch more than one).
"""

from __future__ import annotations

import sys

from fsstgpu.device import get_cupy
from fsstgpu.kernels import bitplane, bitshuffle, rotate, transpose

GIB = 1 << 30


def cases(cp, size: int = GIB):
    """(name, zero-argument callable) for every kernel case, inputs allocated and filled."""
    out = []
    for dtype in ("int32", "uint8"):
        x = cp.empty(size // cp.dtype(dtype).itemsize, dtype=dtype)
        x.view(cp.uint8)[:] = cp.arange(x.nbytes, dtype=cp.uint8)
        n = x.size
        for label, k in (("1", 1), ("4096*3+5", 4096 * 3 + 5), ("n/3", n // 3)):
            out.append((f"rotate {dtype} k={label}",
                        lambda x=x, k=k: rotate.rotate(x, k, check=False)))
    for dtype in ("uint8", "uint32", "uint64"):
        es = cp.dtype(dtype).itemsize
        x = cp.random.randint(0, 1 << min(8 * es - 1, 30), size=size // es,
                              dtype=cp.int64).astype(dtype)
        s = bitshuffle.bitshuffle(x)
        out.append((f"bitshuffle {dtype}", lambda x=x: bitshuffle.bitshuffle(x)))
        out.append((f"bitunshuffle {dtype}",
                    lambda s=s, d=dtype: bitshuffle.bitunshuffle(s, d)))
    lengths = cp.random.randint(0, 200, size=size // 4, dtype=cp.int32).astype(cp.uint32)
    col = cp.cumsum(cp.random.randint(0, 1000, size=size // 8, dtype=cp.int64))
    for name, vals, delta in (("uint32 lengths <200", lengths, False),
                              ("sorted int64 delta", col, True)):
        buf = bitplane.bitplane_pack(vals, delta=delta)
        out.append((f"bitplane_pack {name}",
                    lambda v=vals, d=delta: bitplane.bitplane_pack(v, delta=d, trim=False)))
        out.append((f"bitplane_unpack {name}",
                    lambda b=buf, v=vals: bitplane.bitplane_unpack(b, count=v.size,
                                                                   dtype=v.dtype, check=False)))
        if not delta:
            out.append((f"bitplane_unpack_offsets {name}",
                        lambda b=buf, v=vals: bitplane.bitplane_unpack_offsets(
                            b, count=v.size, dtype=v.dtype, wide=True, check=False)))
    rect = cp.zeros(5003 * 53636, dtype=cp.float32).reshape(5003, 53636)
    state = {"a": rect}

    def transpose_rect():
        state["a"] = transpose.transpose(state["a"], inplace=True)

    out.append(("transpose in place f32 5003x53636", transpose_rect))
    return out


def main(size: int = GIB) -> int:
    cp = get_cupy()
    from cupy.cuda import nvtx, profiler

    todo = cases(cp, size)
    for _, run in todo:  # compile and grow the pools outside the profiled launches
        run()
    cp.cuda.Device().synchronize()
    profiler.start()
    for name, run in todo:
        nvtx.RangePush(name)
        run()
        cp.cuda.Device().synchronize()
        nvtx.RangePop()
    profiler.stop()
    print(f"{len(todo)} cases run", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
