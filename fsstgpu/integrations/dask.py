"""Datasets across a Dask cluster: one task per file, each worker compressing, decompressing or
decoding onto its own GPU (``pip install 'fsstgpu[dask]'``).

The tasks are :func:`fsstgpu.formats.compress_file` / ``decompress_file`` / ``read_table`` of one
file of the dataset (:func:`fsstgpu.formats.locations.dataset_files`), with every promise they
make: each output is written atomically, so a worker that dies mid-file leaves no partial output
(Dask runs the task again elsewhere, and that run removes the dead process's temporary file);
outputs finished before a failure are kept, the tasks not yet started are cancelled, and the
folders made for outputs that it leaves empty are removed, as without Dask. Files and their results
pass between the client and the workers as names and small dicts; decoded GPU columns stay on
the workers (:func:`read_dataset_to_gpus` is a Dask bag of them, by file or by row group).

Without ``client=``, the current ``dask.distributed`` client is used (:func:`local_client`
starts a local one). Each worker process runs the CPU codec on ``FSSTGPU_THREADS`` cores (set by
:func:`local_client` to its share of the machine) so that workers do not oversubscribe it.

>>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
>>> from fsstgpu.integrations.dask import compress_dataset, local_client
>>> d = tempfile.mkdtemp()
>>> for k in range(3):
...     pq.write_table(pa.table({"s": [f"row {i} of {k}" for i in range(100)]}),
...                    os.path.join(d, f"part-{k}.parquet"))
>>> with local_client(workers=2, processes=False) as client:  # doctest: +SKIP
...     done = compress_dataset(os.path.join(d, "*.parquet"), os.path.join(d, "c"),
...                             client=client)
"""

from __future__ import annotations

import contextlib
import logging
import os
import warnings
from pathlib import Path

from fsstgpu.device import get_cupy, resolve_device
from fsstgpu.formats.datasets import (
    dataset_outputs,
    file_options,
    make_parent,
    partitioned_files,
    refuse_output_format,
)
from fsstgpu.formats.device_reader import read_unit_to_device
from fsstgpu.formats.file_reads import read_table_device
from fsstgpu.formats.files import compress_file, decompress_file
from fsstgpu.formats.locations import is_url
from fsstgpu.formats.partitions import with_partition_keys
from fsstgpu.formats.rowgroups import Source, check_progress
from fsstgpu.limits import flag, whole_number
from fsstgpu.parallel import usable_cores

__all__ = ["compress_dataset", "dataset_parts", "decompress_dataset", "local_client",
           "read_dataset_to_gpus"]


def _distributed():
    try:
        import distributed
    except ImportError:
        raise ImportError("fsstgpu.integrations.dask needs dask.distributed: pip install "
                          "'fsstgpu[dask]'") from None
    return distributed


@contextlib.contextmanager
def local_client(workers: int | None = None, *, processes: bool = True, scheduler=None,
                 threads: int | None = None, quiet: bool = False):
    """A ``dask.distributed`` client: of the scheduler at ``scheduler`` (an address), or of a
    local cluster of ``workers`` processes (default: one per core), one task at a time each,
    each running the codec on ``threads`` cores (``FSSTGPU_THREADS``; default its share of the
    machine's). Worker processes get ``FSSTGPU_THREADS`` in their environment; thread workers
    (``processes=False``) share this process, whose ``FSSTGPU_THREADS`` is then set (unless set
    already) while the cluster runs, and restored after. ``quiet``: the local cluster logs
    nothing short of a critical error (a task's error reaches the caller as an exception;
    distributed's worker logs it on stderr too, with its traceback, and warns of the tasks it
    cancels then), nor warns that port 8787 is taken, and this process's asyncio never logs
    the ends of a gather stopped early (:func:`_quiet_gather_exits`): the command line's
    one-line errors.

    Examples
    --------
    >>> from fsstgpu.integrations.dask import local_client
    >>> with local_client(workers=1, processes=False) as client:  # doctest: +SKIP
    ...     print(len(client.scheduler_info()["workers"]))
    1
    """
    # (whole numbers, limits.whole_number: int(threads) took 1.5 and True, which the workers
    # then refused on first use as FSSTGPU_THREADS '1.5'; workers=-1 made a cluster of no
    # workers, on which every task waited for ever, and True one of 1 worker)
    try:
        workers, threads = (None if n is None else whole_number(n) for n in (workers, threads))
    except TypeError:
        raise TypeError(f"workers and threads must be whole numbers or None, not {workers!r} "
                        f"and {threads!r}") from None
    if workers is not None and workers < 0:
        raise ValueError(f"workers must not be negative (0 or None: one per core), not {workers}")
    if threads is not None and threads < 0:  # the workers would refuse it on first use
        raise ValueError(f"threads must not be negative (0 or None: each worker's share), "
                         f"not {threads}")
    processes, quiet = flag(processes, "processes"), flag(quiet, "quiet")
    distributed = _distributed()
    if quiet:
        _quiet_gather_exits()
    if scheduler is not None:
        with distributed.Client(scheduler) as client:
            yield client
        return

    cores = usable_cores()
    workers = workers or cores
    env = {"FSSTGPU_THREADS": str(threads or max(1, cores // workers))}
    with contextlib.ExitStack() as stack:
        if processes:  # (a thread worker takes no env= at all: a TypeError)
            options = {"env": env}
        else:  # thread workers run the codec in this process
            options = {}
            stack.enter_context(_environ_default(env))
        if quiet:
            options["silence_logs"] = logging.CRITICAL
            # (the scheduler's HTTP server takes port 8787 even without a dashboard, and warns
            # when another cluster holds it: a line for nothing)
            stack.enter_context(warnings.catch_warnings())
            warnings.filterwarnings("ignore", "Port .* is already in use", UserWarning)
        cluster = stack.enter_context(distributed.LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=processes, dashboard_address=None,
            **options))
        yield stack.enter_context(distributed.Client(cluster))


class _NoGatherExits(logging.Filter):
    """Drops asyncio's "Task exception was never retrieved" of distributed's ``AllExit``."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return type(exc).__name__ != "AllExit"


def _quiet_gather_exits() -> None:
    """Keep asyncio from logging, with a traceback each, the waits of a ``Client.gather`` left
    behind when the gather stops (a stop signal, a task's error): "Task exception was never
    retrieved ... distributed.client.AllExit", four of them on stderr around the command
    line's one line. For good: they are logged when the tasks are collected, after the client
    has closed."""
    asyncio_log = logging.getLogger("asyncio")
    if not any(isinstance(f, _NoGatherExits) for f in asyncio_log.filters):
        asyncio_log.addFilter(_NoGatherExits())


@contextlib.contextmanager
def _environ_default(env: dict):
    """``os.environ`` with the variables of ``env`` it lacks, until the block ends."""
    added = {k: v for k, v in env.items() if k not in os.environ}
    os.environ.update(added)
    try:
        yield
    finally:
        for k in added:
            os.environ.pop(k, None)


def _client(client):
    return client if client is not None else _distributed().get_client()


def _outputs(src, dst, force: bool) -> list[tuple[str, str]]:
    """The dataset's (input, output) pairs as strings: what travels to the workers; without
    ``force``, every output that exists already named before any task runs."""
    return [(str(path), str(out)) for path, out in dataset_outputs(src, dst, force=force)]


def _compress_one(src: str, dst: str, columns, force: bool, options: dict, on_unit) -> dict:
    make_parent(dst)
    with _on_worker_gpu(options.get("device", "cpu")):
        info = compress_file(src, dst, columns, force=force, progress=on_unit,
                             **file_options(dst, options))
    return {"input": src, "output": dst, **info}


def _decompress_one(src: str, dst: str, device: str, force: bool, on_unit) -> dict:
    make_parent(dst)
    with _on_worker_gpu(device):
        info = decompress_file(src, dst, device=device, force=force, progress=on_unit)
    return {"input": src, "output": dst, **info}


def _on_worker_gpu(device: str):
    """This worker's GPU (:func:`_worker_gpu`) made current while a file is compressed or
    decompressed on it (``device`` "gpu", or "auto" with a GPU): workers of a several-GPU host
    spread over its GPUs instead of all using the first."""
    if resolve_device(device) != "gpu":
        return contextlib.nullcontext()
    return _worker_gpu(get_cupy())


def _run(client, fn, pairs, *args) -> list[dict]:
    """``fn`` of each (input, output) pair of ``pairs`` as one task; a failure cancels the tasks
    of the pairs after it, as the serial path stops at it, and its error is raised once those
    before it are done: the first failing pair's in their order, as the serial path's (a
    Ctrl-C cancels them all). The folders made for the outputs that it leaves empty are
    removed, as the serial path does (a task already running when it came can't be stopped:
    its output, written atomically, may still appear)."""
    client = _client(client)
    missing = _missing_folders(pairs)
    futures = [client.submit(fn, src, dst, *args, pure=False) for src, dst in pairs]
    try:
        first = _first_failure(client, futures)
        if first is not None:
            first.result()  # (raises its error, with its traceback)
        return client.gather(futures)
    except BaseException:
        # (without the cancel the other tasks ran on while the error's traceback held their
        # futures, writing outputs after the call had failed: a rerun met them as existing)
        client.cancel(futures)
        for folder in missing:  # (the outputs already written stay, whole)
            with contextlib.suppress(OSError):
                folder.rmdir()  # only an empty one
        raise


def _first_failure(client, futures: list):
    """The first of ``futures`` in their order that fails, or None when none does; the ones
    after a failure cancelled as it comes. Only a failure waits on more than ``futures`` do
    (the ones before it), and a failure's error is told by that order, not by the timing."""
    index = {future.key: i for i, future in enumerate(futures)}
    first, before = len(futures), len(futures)  # (``before``: those before ``first`` not done)
    done = set()
    for future in _distributed().as_completed(futures):
        i = index[future.key]
        done.add(i)
        if i > first:
            continue  # (cancelled, or run on before the cancel came)
        before -= 1
        if future.status in ("error", "cancelled"):  # (as client.gather takes them)
            client.cancel(futures[i + 1:])  # (the serial path never reaches them)
            first, before = i, sum(j not in done for j in range(i))
        if first < len(futures) and not before:
            return futures[first]
    return None


def _missing_folders(pairs) -> list[Path]:
    """The local folders the outputs of ``pairs`` go in that do not exist yet, deepest first
    (made by the tasks, on their workers, which see the folders the client sees)."""
    missing = {folder for _, out in pairs if not is_url(out)
               for folder in (Path(out).parent, *Path(out).parent.parents) if not folder.exists()}
    return sorted(missing, key=lambda folder: len(folder.parts), reverse=True)


def compress_dataset(src, dst, columns=None, *, client=None, force=False, on_unit=None,
                     **options) -> list[dict]:
    """Compress every file of a dataset into the folder ``dst``, one Dask task per file.

    Parameters
    ----------
    src, dst, columns, force, **options
        As for :func:`fsstgpu.formats.compress_dataset`.
    client : distributed.Client, optional
        Default: the current client.
    on_unit : callable, optional
        Run on the worker after each row group is written (``compress_file``'s ``progress``).

    Returns
    -------
    list of dict
        One per file, in the dataset's order, as :func:`fsstgpu.formats.compress_dataset`.

    Examples
    --------
    See the module docstring.
    """
    refuse_output_format(options)
    # before any task, as the serial path checks progress=: each task failed on a wrong one,
    # on the worker, after making its file's folder
    check_progress(on_unit)
    return _run(client, _compress_one, _outputs(src, dst, force), columns, force, options, on_unit)


def decompress_dataset(src, dst, *, client=None, device="auto", force=False, on_unit=None
                       ) -> list[dict]:
    """Decompress every file of a compressed dataset into the folder ``dst``, one Dask task
    per file (``device="auto"``: each worker's GPU when it has one).

    Examples
    --------
    See the module docstring.
    """
    check_progress(on_unit)  # before any task (compress_dataset)
    return _run(client, _decompress_one, _outputs(src, dst, force), device, force, on_unit)


def _worker_gpu(cp):
    """This worker's GPU: ``worker name mod devices`` (``CUDA_VISIBLE_DEVICES`` may already
    have given each worker its own, making it device 0)."""
    ndev = cp.cuda.runtime.getDeviceCount()
    name = _distributed().get_worker().name
    index = name if isinstance(name, int) else abs(hash(name))
    return cp.cuda.Device(index % ndev)


def _read_part_to_gpu(src: str, unit: int | None, keys: dict | None = None) -> list[dict]:
    """One partition: file ``src`` (``unit`` None) or its row group ``unit``, decoded onto this
    worker's GPU, as a one-element list (a bag partition); ``keys``: the file's partition
    values (:func:`fsstgpu.formats.partitions.with_partition_keys`)."""

    cp = get_cupy()
    with _worker_gpu(cp):  # src: a path or URL string, resolved by the readers
        cols = (read_table_device(src) if unit is None
                else read_unit_to_device(src, unit))
        cp.cuda.get_current_stream().synchronize()
    return [with_partition_keys(cols, keys or {})]


def dataset_parts(src, by: str = "file") -> list[tuple[str, int | None]]:
    """The partitions of a dataset read onto GPUs: ``(file, None)`` per file, or with
    ``by="row_group"`` ``(file, k)`` per row group (record batch; an IPC stream counts as one
    part: its batches are known only by reading it). Reads only the files' footers.

    Examples
    --------
    >>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
    >>> from fsstgpu.integrations.dask import dataset_parts
    >>> d = tempfile.mkdtemp()
    >>> pq.write_table(pa.table({"s": ["a", "b", "c"]}), os.path.join(d, "a.parquet"),
    ...                row_group_size=2)
    >>> [k for _, k in dataset_parts(d, by="row_group")]
    [0, 1]
    """

    return [(path, unit) for path, unit, _ in _parts_and_keys(src, by, None)]


def _parts_and_keys(src, by: str, partitioning) -> list[tuple[str, int | None, dict]]:
    """:func:`dataset_parts` with each part's partition values (``{name: (type, value)}``,
    none with ``partitioning=None``), found as :func:`fsstgpu.formats.read_dataset` finds
    them."""
    if by not in ("file", "row_group"):
        raise ValueError(f"by must be 'file' or 'row_group', not {by!r}")
    files, _, values = partitioned_files(src, partitioning)
    parts = []
    for (path, _), keys in zip(files, values, strict=True):
        if by == "file":
            parts.append((str(path), None, keys))
            continue
        with Source(path) as source:
            units = source.num_units
        parts.extend([(str(path), k, keys) for k in range(units)] if units is not None
                     else [(str(path), None, keys)])
    return parts


def read_dataset_to_gpus(src, *, by: str = "file", partitioning="hive"):
    """A Dask bag of a compressed dataset decoded on the workers' GPUs, one partition per file
    (or per row group with ``by="row_group"``).

    Each partition holds one dict, the part's columns as
    :func:`fsstgpu.formats.read_table_device` gives them, in the memory of the GPU of the worker
    that decoded it, then its hive partition keys as host columns (``partitioning``: as for
    :func:`fsstgpu.formats.read_dataset`, whose keys and types these are; None for none).
    The bag is lazy: ``bag.persist()`` decodes and keeps the partitions on the workers;
    ``bag.map(fn)`` runs ``fn`` where they are (nothing comes back to the client unless it is
    computed there).

    Examples
    --------
    >>> from fsstgpu.integrations.dask import read_dataset_to_gpus
    >>> bag = read_dataset_to_gpus("data/compressed/", by="row_group")  # doctest: +SKIP
    >>> rows = bag.map(lambda cols: len(cols["url"])).compute()  # doctest: +SKIP
    """
    import dask
    import dask.bag

    return dask.bag.from_delayed([dask.delayed(_read_part_to_gpu, pure=False)(path, unit, keys)
                                  for path, unit, keys in _parts_and_keys(src, by, partitioning)])
