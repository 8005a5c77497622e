"""Launcher of the training-sample kernel (``fsst_sample.cu``) and its CPU twin.

:func:`sample_blocks_on_device` gathers, on the GPU, each block's training sample as the
compiled trainer samples a range of strings (:func:`fsstgpu.native.sample_of`: all of a small
block, pieces spread evenly over a medium one, random draws from a large one), so that the
tables trained from them on the CPU (:func:`fsstgpu.native.train_samples`) are those of
``fsstgpu.compress(column, level="fast")``; only the samples come back (16 KB a block at that
level). :func:`sample_blocks_cpu` is its twin, the same four arrays from ``sample_of``.

>>> import numpy as np
>>> from fsstgpu.kernels.fsst_sample import sample_blocks_cpu
>>> data = np.frombuffer(b"abcdefgh" * 4, np.uint8)
>>> sample, offsets, piece_first, byte_first = sample_blocks_cpu(
...     data, np.arange(0, 33, 8), np.array([0, 2, 4]), 1000)
>>> bytes(sample), offsets.tolist(), piece_first.tolist(), byte_first.tolist()
(b'abcdefghabcdefghabcdefghabcdefgh', [0, 8, 16, 0, 8, 16], [0, 3, 6], [0, 16, 32])
"""

from __future__ import annotations

import numpy as np

from fsstgpu.device import get_cupy, on_arrays_device
from fsstgpu.kernels.loader import get_function, on_stream
from fsstgpu.native import sample_of
from fsstgpu.training import SEED

__all__ = ["sample_blocks_cpu", "sample_blocks_on_device"]

SOURCE = "fsst_sample.cu"
THREADS = 256  # eight warps a block of threads, a warp a block of strings


def sample_blocks_on_device(data, src, coord, block_starts, target: int, seed: int = SEED, *,
                            stream=None, poison: bool = False):
    """Each block's training sample, gathered on the device: ``(sample, offsets, piece_first,
    byte_first)``, host arrays as :func:`fsstgpu.native.train_samples` takes them.

    ``data`` (uint8) holds the strings; ``coord`` (int64, n + 1) their ends as the planner
    counts them (null strings empty) and ``src`` (int64, n + 1, or the same array) where each
    one's bytes start in ``data``: both checked by the caller (inside the data, in order).
    ``block_starts`` (host int64): each block's first string, then n. ``target``: the sample's
    bytes (>= 1), ``seed`` the draws' (:data:`fsstgpu.training.SEED`, as the trainer's).
    ``poison`` fills the outputs first (tests). Two passes, two waits: the samples' sizes,
    then the samples.

    Examples
    --------
    >>> import fsstgpu
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     import cupy as cp
    ...     import numpy as np
    ...     from fsstgpu.kernels.fsst_sample import sample_blocks_cpu, sample_blocks_on_device
    ...     data, offs = np.frombuffer(b"ab" * 5000, np.uint8), np.arange(0, 10001, 5)
    ...     d_offs = cp.asarray(offs)
    ...     got = sample_blocks_on_device(cp.asarray(data), d_offs, d_offs, [0, 2000], 4096)
    ...     want = sample_blocks_cpu(data, offs, [0, 2000], 4096)
    ...     assert all(np.array_equal(a, b) for a, b in zip(got, want))
    """
    import cupyx  # (with CuPy: the device's pinned pool)

    cp = get_cupy()
    starts = np.ascontiguousarray(block_starts, np.int64)
    m = len(starts) - 1
    if int(target) < 1:
        raise ValueError(f"the sample's bytes must be at least 1, not {target}")
    with on_arrays_device("sample_blocks_on_device", data=data, src=src, coord=coord), \
            on_stream(stream):
        d_starts = cp.asarray(starts)
        sizes = cp.zeros(max(2 * m, 1), cp.int64)
        grid = (max(1, min(-(-m // (THREADS // 32)), 65535)),)
        fn = get_function(SOURCE, "fsst_sample_blocks")
        head = (data, src, coord, d_starts, np.int64(m), np.int64(target), np.uint64(seed))
        null = np.uint64(0)
        fn(grid, (THREADS,), (*head, sizes, null, null, null, null))
        counts = sizes[: 2 * m].get().reshape(m, 2)
        byte_first = np.zeros(m + 1, np.int64)
        piece_first = np.zeros(m + 1, np.int64)
        np.cumsum(counts[:, 0], out=byte_first[1:])
        np.cumsum(counts[:, 1], out=piece_first[1:])
        nbytes, npieces = int(byte_first[-1]), int(piece_first[-1])
        out_bytes = cp.empty(max(nbytes, 1), cp.uint8)
        out_offsets = cp.empty(max(npieces, 1), cp.int64)
        if poison:
            out_bytes.fill(0xAB)
            out_offsets.fill(-7)
        if m:
            fn(grid, (THREADS,), (*head, sizes, cp.asarray(byte_first), cp.asarray(piece_first),
                                  out_bytes, out_offsets))
        # into pinned memory, both copies then one wait: a pageable copy back first touches
        # fresh pages at 0.3-0.6 GB/s on the device's host (BENCHMARKS.md section 63), 16 MB
        # of samples at 1 GiB
        current = cp.cuda.get_current_stream()
        host = []
        for part in (out_bytes[:nbytes], out_offsets[:npieces]):
            host.append(cupyx.empty_pinned(part.shape, part.dtype))
            if part.size:
                part.get(stream=current, out=host[-1], blocking=False)
        current.synchronize()
        return host[0], host[1], piece_first, byte_first


def sample_blocks_cpu(data, offsets, block_starts, target: int, seed: int = SEED):
    """:func:`sample_blocks_on_device`'s twin: each block's :func:`fsstgpu.native.sample_of`
    (``data``, ``offsets``: host strings, nulls empty, as the planner sees them)."""
    samples = [sample_of(data, offsets, int(lo), int(hi), target, seed)
               for lo, hi in zip(block_starts[:-1], block_starts[1:], strict=True)]
    byte_first = np.zeros(len(samples) + 1, np.int64)
    piece_first = np.zeros(len(samples) + 1, np.int64)
    np.cumsum([len(s[0]) for s in samples], out=byte_first[1:])
    np.cumsum([len(s[1]) for s in samples], out=piece_first[1:])
    sample = np.concatenate([s[0] for s in samples] + [np.zeros(0, np.uint8)])
    offsets = np.concatenate([s[1] for s in samples] + [np.zeros(0, np.int64)])
    return sample, offsets, piece_first, byte_first
