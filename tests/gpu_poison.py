"""Shared by the GPU codec tests (test_bitplane.py, test_bitshuffle.py): the input size limit
under compute-sanitizer and a poisoned memory pool (their seeds come from seeds.py)."""

from __future__ import annotations

import os

# The largest GPU test input, in elements (FSSTGPU_GPU_TEST_MAX_ELEMENTS; unset: none): under
# compute-sanitizer's racecheck the kernels run 100-1000x slower, and a run over the full sizes
# does not finish (BENCHMARKS.md section 21). Small inputs still reach every kernel path.
MAX_ELEMENTS = int(os.environ.get("FSSTGPU_GPU_TEST_MAX_ELEMENTS") or 0) or None


def small_enough(n: int) -> bool:
    """Whether an input of ``n`` elements is within :data:`MAX_ELEMENTS`."""
    return MAX_ELEMENTS is None or n <= MAX_ELEMENTS


def poison_pool(cp, nbytes=64 << 20):
    """Fill the pool's free memory with 0xAB so that bytes a kernel forgot to write show up."""
    if MAX_ELEMENTS is not None:
        nbytes = min(nbytes, 64 * MAX_ELEMENTS)
    junk = cp.full(nbytes, 0xAB, dtype=cp.uint8)
    del junk
