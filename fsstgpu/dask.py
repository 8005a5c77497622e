"""Datasets across a Dask cluster: one task per file, each worker compressing, decompressing or
decoding onto its own GPU (``pip install 'fsstgpu[dask]'``).

The tasks are :func:`fsstgpu.formats.compress_file` / ``decompress_file`` / ``read_table`` of one
file of the dataset (:func:`fsstgpu.formats.locations.dataset_files`), with every promise they
make: each output is written atomically, so a worker that dies mid-file leaves no partial output
(Dask runs the task again elsewhere, and that run removes the dead process's temporary file);
outputs finished before a failure are kept. Files and their results pass between the client and
the workers as names and small dicts; decoded GPU columns stay on the workers
(:func:`read_dataset_to_gpus` returns futures).

Without ``client=``, the current ``dask.distributed`` client is used (:func:`local_client`
starts a local one). Each worker process runs the CPU codec on ``FSSTGPU_THREADS`` cores (set by
:func:`local_client` to its share of the machine) so that workers do not oversubscribe it.

>>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
>>> from fsstgpu.dask import compress_dataset, local_client
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
import os
from pathlib import Path

from fsstgpu.formats.locations import Url, dataset_files, is_url

__all__ = ["compress_dataset", "decompress_dataset", "local_client", "read_dataset_to_gpus"]


def _distributed():
    try:
        import distributed
    except ImportError:
        raise ImportError("fsstgpu.dask needs dask.distributed: pip install 'fsstgpu[dask]'"
                          ) from None
    return distributed


@contextlib.contextmanager
def local_client(workers: int | None = None, *, processes: bool = True, scheduler=None):
    """A ``dask.distributed`` client: of the scheduler at ``scheduler`` (an address), or of a
    local cluster of ``workers`` processes (default: one per core), one task at a time each,
    each running the codec on its share of the cores (``FSSTGPU_THREADS``).

    Examples
    --------
    >>> from fsstgpu.dask import local_client
    >>> with local_client(workers=1, processes=False) as client:  # doctest: +SKIP
    ...     print(len(client.scheduler_info()["workers"]))
    1
    """
    distributed = _distributed()
    if scheduler is not None:
        with distributed.Client(scheduler) as client:
            yield client
        return
    from fsstgpu.parallel import usable_cores

    cores = usable_cores()
    workers = workers or cores
    env = {"FSSTGPU_THREADS": str(max(1, cores // workers))}
    os.environ.setdefault("FSSTGPU_THREADS", env["FSSTGPU_THREADS"])  # threads workers
    with distributed.LocalCluster(n_workers=workers, threads_per_worker=1,
                                  processes=processes, dashboard_address=None,
                                  env=env if processes else None) as cluster:
        with distributed.Client(cluster) as client:
            yield client


def _client(client):
    return client if client is not None else _distributed().get_client()


def _outputs(src, dst) -> list[tuple[str, str]]:
    remote = is_url(dst)
    if not remote:
        out_dir = Path(dst)
        if out_dir.exists() and not out_dir.is_dir():
            raise NotADirectoryError(f"{dst}: the output of a dataset is a folder, and this "
                                     "is a file")
    pairs = []
    for path, rel in dataset_files(src):
        out = f"{str(dst).rstrip('/')}/{rel}" if remote else str(Path(dst) / rel)
        pairs.append((str(path), out))
    return pairs


def _compress_one(src: str, dst: str, columns, force: bool, options: dict, on_unit) -> dict:
    from fsstgpu.formats import compress_file

    if not is_url(dst):
        Path(dst).parent.mkdir(parents=True, exist_ok=True)
    info = compress_file(Url(src) if is_url(src) else src, dst, columns, force=force,
                         progress=on_unit, **options)
    return {"input": src, "output": dst, **info}


def _decompress_one(src: str, dst: str, device: str, force: bool, on_unit) -> dict:
    from fsstgpu.formats import decompress_file

    if not is_url(dst):
        Path(dst).parent.mkdir(parents=True, exist_ok=True)
    info = decompress_file(Url(src) if is_url(src) else src, dst, device=device, force=force,
                           progress=on_unit)
    return {"input": src, "output": dst, **info}


def _run(client, fn, pairs, *args) -> list[dict]:
    client = _client(client)
    futures = [client.submit(fn, src, dst, *args, pure=False) for src, dst in pairs]
    return client.gather(futures)


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
    return _run(client, _compress_one, _outputs(src, dst), columns, force, options, on_unit)


def decompress_dataset(src, dst, *, client=None, device="auto", force=False, on_unit=None
                       ) -> list[dict]:
    """Decompress every file of a compressed dataset into the folder ``dst``, one Dask task
    per file (``device="auto"``: each worker's GPU when it has one).

    Examples
    --------
    See the module docstring.
    """
    return _run(client, _decompress_one, _outputs(src, dst), device, force, on_unit)


def _read_one_to_gpu(src: str) -> dict:
    """Decode one file onto this worker's GPU: device ``worker name mod devices`` unless
    ``CUDA_VISIBLE_DEVICES`` already gave the worker its own."""
    from fsstgpu.device import get_cupy
    from fsstgpu.formats import read_table

    cp = get_cupy()
    ndev = cp.cuda.runtime.getDeviceCount()
    name = _distributed().get_worker().name
    index = name if isinstance(name, int) else abs(hash(name))
    with cp.cuda.Device(index % ndev):
        cols = read_table(Url(src) if is_url(src) else src, device="gpu")
        cp.cuda.get_current_stream().synchronize()
    return cols


def read_dataset_to_gpus(src, *, client=None) -> list:
    """Decode every file of a compressed dataset on the workers' GPUs, one task per file.

    Returns
    -------
    list of distributed.Future
        One per file, in the dataset's order; each holds, on its worker, the file's columns as
        :func:`fsstgpu.formats.read_table` (``device="gpu"``) gives them. Nothing comes back
        to the client until it asks (``future.result()`` copies through it).

    Examples
    --------
    >>> from fsstgpu.dask import read_dataset_to_gpus
    >>> futures = read_dataset_to_gpus("data/compressed/")  # doctest: +SKIP
    """
    client = _client(client)
    return [client.submit(_read_one_to_gpu, str(path), pure=False)
            for path, _ in dataset_files(src)]
