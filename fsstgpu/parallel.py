"""The CPU worker pool every parallel path shares (encoding, decoding, training).

One pool of threads per process, one thread per usable core beyond the caller's, started
lazily; work is handed out as numbered tasks that call the compiled codec
(:mod:`fsstgpu.native`), which releases the GIL. The usable cores are those the process may
run on (``taskset``, a container's CPU set), so ``taskset -c 0 ...`` runs the codec on one
core.

>>> from fsstgpu.parallel import run_tasks
>>> done = []
>>> run_tasks(done.append, 3)
>>> sorted(done)
[0, 1, 2]
"""

from __future__ import annotations

import functools
import itertools
import os
from concurrent.futures import ThreadPoolExecutor

from fsstgpu.errors import FsstGpuError

#: The most threads one call runs on, whatever count it is given: the compiled codec's pool runs
#: no more (csrc/parallel.h's kMaxThreads), and the Python pools that start a thread per task
#: in flight (a file's reading threads, each with its file open; a rewrite's converters, one a
#: column) would otherwise start thousands for ``threads=2**31 - 1``.
MAX_THREADS = 256


def usable_cores() -> int:
    """The number of CPU cores this process may run on (its affinity mask), at least 1; at most
    ``FSSTGPU_THREADS`` when that is set (several worker processes sharing a machine, e.g. a
    Dask cluster, each get their share).

    Raises
    ------
    ValueError
        When ``FSSTGPU_THREADS`` is set to anything but a whole number.

    Examples
    --------
    >>> from fsstgpu.parallel import usable_cores
    >>> usable_cores() >= 1
    True
    """
    try:
        cores = max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # no affinity masks on this platform
        cores = os.cpu_count() or 1
    cap = os.environ.get("FSSTGPU_THREADS", "").strip()
    if not cap:
        return cores
    if not cap.isdecimal():  # a typo would otherwise run on every core without a word
        # (isdigit took "²", which int() refuses with a message naming nothing)
        raise ValueError(f"FSSTGPU_THREADS must be a whole number of threads, not {cap!r}")
    return max(1, min(cores, int(cap)))


@functools.cache
def shared_pool():
    """The process-wide worker pool: one thread per usable core beyond the caller's (at least
    one).

    Threads are started lazily by the executor and reused by every parallel CPU path
    (:func:`run_tasks`, the GPU decode's host work).
    """
    return ThreadPoolExecutor(max_workers=max(1, usable_cores() - 1),
                              thread_name_prefix="fsstgpu")


@functools.cache
def upload_pool():
    """Two threads that only enqueue host-to-device copies (which release the GIL and wait on
    the copy engine, not the cores): kept apart from :func:`shared_pool`, so an upload never
    queues behind CPU work."""
    return ThreadPoolExecutor(max_workers=2, thread_name_prefix="fsstgpu-upload")


def _forget_pools() -> None:
    """A forked child's pools are new ones: it has none of the parent's threads, and a lock of
    the parent's executor may be held by a thread that is gone (a parent thread inside
    ``submit`` while another forks: CPython's own fork hook, which takes the executors' global
    lock, forks right after such a thread let go of that lock and still holds its executor's;
    the child's next ``submit`` then waited for good)."""
    shared_pool.cache_clear()
    upload_pool.cache_clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pools)


def refuse_forked(owner: int, what: str, why: str = "its reading threads stayed in the "
                  "parent process") -> None:
    """FsstGpuError in a child forked from process ``owner`` while ``what`` was under way
    (``why`` it cannot go on here); nothing in ``owner`` itself.

    Examples
    --------
    >>> import os
    >>> from fsstgpu.parallel import refuse_forked
    >>> refuse_forked(os.getpid(), "a read")
    """
    if os.getpid() != owner:
        raise FsstGpuError(f"{what} was started before a fork; {why}. Start it again in this "
                           "process")


def run_tasks(fn, ntasks: int) -> None:
    """Call ``fn(k)`` for ``k`` in ``range(ntasks)`` on the calling thread and one pool thread
    per other usable core; ``fn`` should release the GIL (a call into :mod:`fsstgpu.native`).

    Tasks are claimed from a shared counter, so a thread that starts late (the machine busy
    with other work, or the pool thread still finishing an earlier job) just finds fewer tasks
    left: the caller never waits on a thread that has not started, unlike a fixed split of the
    work (numba's ``prange``, used before the codec was compiled C++, stalled for milliseconds
    on a loaded 2-core machine).
    """
    workers = min(ntasks, usable_cores()) - 1
    if workers <= 0:
        for k in range(ntasks):
            fn(k)
        return
    pool = shared_pool()
    counter = itertools.count()  # next() is atomic under the GIL

    def worker():
        for k in counter:
            if k >= ntasks:
                return
            fn(k)

    futures = [pool.submit(worker) for _ in range(workers)]
    worker()
    for f in futures:
        if not f.cancel():
            f.result()


def thread_count(threads=None) -> int:
    """Threads for one call of the compiled codec: ``threads`` (at least 1, at most
    :data:`MAX_THREADS`), or by default :func:`usable_cores`.

    A larger count would run on no more threads, and one past C's ``int`` (``2**31``) was
    refused by the binding with a TypeError that named no argument.

    >>> thread_count(0), thread_count(3), thread_count(2**40), thread_count() == usable_cores()
    (1, 3, 256, True)
    """
    return usable_cores() if threads is None else max(1, min(int(threads), MAX_THREADS))
