"""Launchers of the Parquet value decoders on the GPU (``page_decode.cu``) and their CPU twins.

A file -> GPU read (issue #24 item 2) uploads a column chunk's pages as they are; the host
parses only the page headers (:mod:`fsstgpu.formats.raw_pages`), and the runs inside the pages
(definition levels and dictionary indices in the RLE / bit-packed hybrid, the codes' lengths in
DELTA_BINARY_PACKED) are decoded on the device, a run ("job") a block (RLE / bit-packed) or a
warp (DELTA_BINARY_PACKED). :class:`Jobs` says where each run lies in the uploaded bytes, how
many bytes it may read and how many values it holds; the values of all jobs come out end to
end (job ``j``'s at ``jobs.at[j]``).

:func:`rle_hybrid_jobs_cpu` and :func:`delta_binary_packed_jobs_cpu` are the twins: the
compiled host decoders (:mod:`fsstgpu.native.pages`) run job by job; the device's values must
equal theirs, and what they refuse the device flags (:func:`check_jobs` raises
:class:`~fsstgpu.errors.CorruptDataError` naming the job and what is wrong).

>>> import numpy as np
>>> from fsstgpu.kernels.page_decode import Jobs, rle_hybrid_jobs_cpu
>>> data = np.frombuffer(bytes([5 << 1, 3, 3 << 1, 1]), np.uint8)  # two runs: 5 x 3, 3 x 1
>>> values, ends = rle_hybrid_jobs_cpu(data, Jobs([0, 2], [2, 2], [5, 3], width=[2, 1]))
>>> values.tolist(), ends.tolist()
([3, 3, 3, 3, 3, 1, 1, 1], [2, 2])
"""

from __future__ import annotations

import numpy as np

from fsstgpu import native
from fsstgpu.device import get_cupy, host_array
from fsstgpu.errors import CorruptDataError
from fsstgpu.kernels.loader import get_function, on_stream

__all__ = ["ERRORS", "Jobs", "check_jobs", "delta_binary_packed_jobs",
           "delta_binary_packed_jobs_cpu", "rle_hybrid_jobs", "rle_hybrid_jobs_cpu"]

SOURCE = "page_decode.cu"
#: threads a block: an RLE / bit-packed job a block, a DELTA_BINARY_PACKED job a warp
THREADS = 128
#: RLE / bit-packed jobs a block (a job a block, its values unpacked 256 a step)
RLE_THREADS = 256

#: what a job's error code says (page_decode.cu's E_* codes)
ERRORS = {
    1: "ends inside a varint, or has a varint over 10 bytes",
    2: "has a bit-packed run of no groups, or of more than its bytes hold",
    3: "has a run of no values",
    4: "ends inside a run's value",
    5: "has a DELTA_BINARY_PACKED header with bad block or miniblock sizes",
    6: "has a DELTA_BINARY_PACKED header declaring another count of values",
    7: "ends inside a block's bit widths",
    8: "has a miniblock of values over 64 bits",
    9: "ends inside a miniblock",
    10: "has a bit width over 32",
    11: "has values that would run outside the output (its count or place)",
}


class Jobs:
    """Runs to decode: job ``j`` reads ``data[start[j] : start[j] + size[j]]`` and holds
    ``count[j]`` values (of ``width[j]`` bits, for the RLE / bit-packed hybrid), which go to
    ``at[j]`` of the output (the counts' running sum: the jobs' values end to end).

    Parameters
    ----------
    start, size, count : array-like of int
        Host values, checked here: each run inside the data is the caller's to check
        (:func:`rle_hybrid_jobs` takes the data's size and refuses runs outside it).
    width : array-like of int, optional
        The bit width of each RLE / bit-packed job.

    Examples
    --------
    >>> from fsstgpu.kernels.page_decode import Jobs
    >>> jobs = Jobs([0, 10], [10, 4], [3, 5], width=[1, 1])
    >>> jobs.at.tolist(), jobs.total
    ([0, 3], 8)
    """

    def __init__(self, start, size, count, *, width=None):
        self.start = np.ascontiguousarray(start, np.int64)
        self.size = np.ascontiguousarray(size, np.int64)
        self.count = np.ascontiguousarray(count, np.int64)
        self.width = None if width is None else np.ascontiguousarray(width, np.int32)
        n = len(self.start)
        if len(self.size) != n or len(self.count) != n or (
                self.width is not None and len(self.width) != n):
            raise ValueError("a job's start, size, count (and width) are one each")
        if n and (self.start.min() < 0 or self.size.min() < 0 or self.count.min() < 0):
            raise ValueError("a job's start, size and count are not negative")
        self.at = np.zeros(n, np.int64)
        if n:
            np.cumsum(self.count[:-1], out=self.at[1:])
        self.total = int(self.at[-1] + self.count[-1]) if n else 0

    def __len__(self) -> int:
        return len(self.start)

    def check_inside(self, nbytes: int) -> None:
        """Raise ValueError unless every job's bytes lie inside ``nbytes`` bytes of data."""
        if len(self) and int((self.start + self.size).max()) > nbytes:
            raise ValueError(f"a job's bytes run past the data's {nbytes}")


def _fail(job: int, what: str, detail: str, names=None) -> CorruptDataError:
    return CorruptDataError(f"{what} {job}: {detail}" if names is None else
                            f"{names[job]}: {detail}")


def rle_hybrid_jobs_cpu(data, jobs: Jobs, *, what: str = "run",
                        names=None) -> tuple[np.ndarray, np.ndarray]:
    """Every job's RLE / bit-packed hybrid values end to end (uint32) and the bytes each read:
    :func:`rle_hybrid_jobs`' twin, through :func:`fsstgpu.native.rle_hybrid`.

    Raises
    ------
    fsstgpu.CorruptDataError
        Naming the first malformed job (``what`` and its number, or ``names[job]``).

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.kernels.page_decode import Jobs, rle_hybrid_jobs_cpu
    >>> data = np.frombuffer(bytes([3, 0b10110]), np.uint8)  # a bit-packed group, 1 bit each
    >>> rle_hybrid_jobs_cpu(data, Jobs([0], [2], [5], width=[1]))[0].tolist()
    [0, 1, 1, 0, 1]
    """
    def one(run, j):
        width = int(jobs.width[j])
        if not 0 <= width <= 32:
            raise CorruptDataError(ERRORS[10])
        return native.rle_hybrid(run, width, int(jobs.count[j]))

    return _twin(data, jobs, one, np.uint32, what, names)


def delta_binary_packed_jobs_cpu(data, jobs: Jobs, *, what: str = "run",
                                 names=None) -> tuple[np.ndarray, np.ndarray]:
    """Every job's DELTA_BINARY_PACKED values end to end (int64) and the bytes each read:
    :func:`delta_binary_packed_jobs`' twin, through
    :func:`fsstgpu.native.delta_binary_packed`.

    Raises
    ------
    fsstgpu.CorruptDataError
        Naming the first malformed job (``what`` and its number, or ``names[job]``).

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.kernels.page_decode import Jobs, delta_binary_packed_jobs_cpu
    >>> run = bytes([128, 1, 4, 3, 20, 2, 1, 0, 0, 0, 0b10, 0, 0, 0])  # 10, 11, 13
    >>> values, ends = delta_binary_packed_jobs_cpu(np.frombuffer(run, np.uint8),
    ...                                            Jobs([0], [len(run)], [3]))
    >>> values.tolist(), ends.tolist()
    ([10, 11, 13], [14])
    """
    return _twin(data, jobs, lambda run, j: native.delta_binary_packed(run, int(jobs.count[j])),
                 np.int64, what, names)


def _twin(data, jobs: Jobs, decode, dtype, what: str, names) -> tuple[np.ndarray, np.ndarray]:
    """The jobs decoded one by one on the host (``decode(run bytes, job)``: values, bytes
    read), their values end to end; a refusal raised naming its job."""
    data = np.ascontiguousarray(data, np.uint8)
    jobs.check_inside(data.size)
    out = np.empty(jobs.total, dtype)
    ends = np.empty(len(jobs), np.int64)
    for j in range(len(jobs)):
        lo = int(jobs.start[j])
        try:
            values, ends[j] = decode(data[lo : lo + int(jobs.size[j])], j)
        except CorruptDataError as exc:
            raise _fail(j, what, str(exc), names) from None
        out[jobs.at[j] : jobs.at[j] + jobs.count[j]] = values
    return out, ends


def _launch(kernel: str, data, jobs: Jobs, dtype, stream, extra=(), placed=None,
            threads: int = THREADS, per_block: int = THREADS // 32):
    cp = get_cupy()
    jobs.check_inside(int(data.size))
    n = len(jobs)
    with on_stream(stream):
        if placed is None:  # the host's counts, the values end to end
            count, at, total = jobs.count, jobs.at, jobs.total
        else:  # the caller's counts and places (a page's non-null values, often known only
            # on the device)
            count, at, total = placed
            if len(count) != n or len(at) != n:
                raise ValueError(f"{len(count)} counts and {len(at)} places for {n} jobs")
        # (the host's arrays of them in one copy; the device's taken as they are)
        arrays = [jobs.start, jobs.size, count, at]
        host = [k for k, a in enumerate(arrays) if isinstance(a, np.ndarray)]
        table = cp.asarray(np.concatenate([arrays[k].astype(np.int64) for k in host]))
        for j, k in enumerate(host):
            arrays[k] = table[j * n : (j + 1) * n]
        start, size, count, at = (cp.asarray(a, cp.int64) for a in arrays)
        out = cp.empty(total, dtype)
        ends = cp.empty(n, cp.int64)
        errors = cp.empty(n, cp.int32)
        if n:
            grid = (max(1, min(-(-n // per_block), 65535)),)
            fn = get_function(SOURCE, kernel)
            fn(grid, (threads,), (data, start, size, count, *extra, at, np.int64(n),
                                  np.int64(total), out, ends, errors))
    return out, ends, errors


def rle_hybrid_jobs(data, jobs: Jobs, *, placed=None, stream=None):
    """Every job's RLE / bit-packed hybrid values end to end on the device, in one launch on
    ``stream``: ``(values, ends, errors)``, device arrays (uint32 values; per job the bytes
    read and an error code, 0 where it decoded): :func:`check_jobs` before using the values.

    ``data``: the device's uint8 bytes the jobs index; ``jobs`` with widths. ``placed``:
    ``(counts, at, total)`` where the jobs' counts are known on the device only (a page's
    non-null values: int64 counts and output places, each on the device or the host (the
    host's copied with the jobs' starts and sizes), an output of ``total`` values; a job whose
    values would not fit there is flagged), else None (``jobs``' counts, end to end).

    Examples
    --------
    >>> import fsstgpu
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     import cupy as cp
    ...     import numpy as np
    ...     from fsstgpu.kernels.page_decode import Jobs, check_jobs, rle_hybrid_jobs
    ...     data = cp.asarray(np.frombuffer(bytes([5 << 1, 3]), np.uint8))
    ...     values, ends, errors = rle_hybrid_jobs(data, Jobs([0], [2], [5], width=[2]))
    ...     check_jobs(errors)
    ...     assert values.get().tolist() == [3] * 5
    """
    if jobs.width is None:
        raise ValueError("RLE / bit-packed jobs need their bit widths")
    cp = get_cupy()
    with on_stream(stream):
        widths = cp.asarray(jobs.width)
    return _launch("rle_hybrid_jobs", data, jobs, cp.uint32, stream, (widths,), placed,
                   threads=RLE_THREADS, per_block=1)


def delta_binary_packed_jobs(data, jobs: Jobs, *, placed=None, stream=None):
    """Every job's DELTA_BINARY_PACKED values end to end on the device (int64), in one launch
    on ``stream``: ``(values, ends, errors)`` as :func:`rle_hybrid_jobs` returns them (and
    ``placed`` as it takes it).

    Examples
    --------
    >>> import fsstgpu
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     import cupy as cp
    ...     from fsstgpu.kernels.page_decode import Jobs, check_jobs, delta_binary_packed_jobs
    ...     import numpy as np
    ...     run = np.frombuffer(bytes([128, 1, 4, 3, 20, 2, 1, 0, 0, 0, 0b10, 0, 0, 0]), np.uint8)
    ...     values, ends, errors = delta_binary_packed_jobs(cp.asarray(run),
    ...                                                     Jobs([0], [len(run)], [3]))
    ...     check_jobs(errors)
    ...     assert values.get().tolist() == [10, 11, 13]
    """
    return _launch("delta_binary_packed_jobs", data, jobs, get_cupy().int64, stream,
                   placed=placed)


def check_jobs(errors, *, what: str = "run", names=None) -> None:
    """Raise :class:`~fsstgpu.errors.CorruptDataError` naming the first job whose error code
    (device or host ``errors``) is set (``what`` and its number, or ``names[job]``; a sync with
    its stream when on the device).

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.kernels.page_decode import check_jobs
    >>> check_jobs(np.zeros(3, np.int32))  # (nothing to raise)
    >>> check_jobs(np.array([0, 9], np.int32), what="page")
    Traceback (most recent call last):
    ...
    fsstgpu.errors.CorruptDataError: page 1: ends inside a miniblock
    """
    codes = host_array(errors)
    bad = np.flatnonzero(codes)
    if bad.size:
        j = int(bad[0])
        raise _fail(j, what, ERRORS.get(int(codes[j]), f"error {int(codes[j])}"), names)
