"""Output memory from pyarrow's memory pool: what a decoded column's buffers are made of.

A decode writes its bytes and offsets into fresh memory, and fresh memory costs the kernel's
page faults and zeroing before the first byte lands: on the H200 host's 16 cores, 36 ms a GiB,
as much as two thirds of the decode itself (BENCHMARKS.md section 14). NumPy's large arrays go
back to the operating system when freed, so every call pays it again; pyarrow's pool (mimalloc
or jemalloc) keeps freed memory for the next allocation, so a loop of decompress calls that
drops each result before the next reuses warm pages (1.5x on those 16 cores). (A whole-file
read keeps every chunk it decodes: no gain there, a few percent lost on 16 cores, not yet
explained: section 14.) The buffers are also counted where an Arrow user looks
(``pyarrow.total_allocated_bytes()``, a pool set with ``pyarrow.set_memory_pool``).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

__all__ = ["pool_empty"]


def pool_empty(count: int, dtype=np.uint8) -> np.ndarray:
    """An uninitialised, writable 1-D array of ``count`` items of ``dtype`` in memory of
    pyarrow's current default pool (64-byte aligned), freed there with its last reference.

    Parameters
    ----------
    count : int
    dtype : numpy dtype, optional
        Default uint8.

    Returns
    -------
    numpy.ndarray

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.memory import pool_empty
    >>> a = pool_empty(3, np.int64)
    >>> a[:] = 7
    >>> a.tolist(), a.flags.writeable
    ([7, 7, 7], True)
    """
    dtype = np.dtype(dtype)
    return np.frombuffer(pa.allocate_buffer(int(count) * dtype.itemsize), dtype)
