"""Datasets on a Dask cluster: compression against workers, and decoding onto 1 or 2 GPUs.

:func:`run_dask_bench` writes a dataset of ``files`` Parquet files (slices of a real-text table,
Snappy, as pyarrow writes them), then times by wall clock, in one run:

* ``single``: the single-process path (``fsstgpu.formats.compress_dataset``: files one after
  the other, each on every core through the codec's threads), as ``fsstgpu compress DIR OUT``;
* ``workers=N``: ``fsstgpu.integrations.dask.compress_dataset`` on a local cluster of N
  processes (each codec on ``cores // N`` threads), the cluster started before the clock;
* ``gpus=G`` (with ``G`` GPUs visible): ``fsstgpu.integrations.dask.read_dataset_to_gpus`` of
  the compressed dataset, by file and by row group, on G workers, each decoding into its own
  GPU, until every part is in device memory.

Speed-ups are against ``workers=1``; ``efficiency`` is speed-up over workers. Run from a checkout:
``python -m benchmarks.dask_scaling [--files N] [--rows N] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq


def write_dataset(table, root: Path, files: int) -> float:
    """``table`` cut into ``files`` Parquet files under ``root``; returns their string MB."""
    root.mkdir(parents=True, exist_ok=True)
    rows = -(-table.num_rows // files)
    for k in range(files):
        pq.write_table(table.slice(k * rows, rows), root / f"part-{k:03d}.parquet",
                       row_group_size=100_000)
    return sum(table.column(n).nbytes for n in table.column_names
               if str(table.schema.field(n).type) in ("string", "large_string")) / 1e6


def _warm() -> None:
    import pyarrow as pa

    import fsstgpu

    fsstgpu.decompress(fsstgpu.compress(pa.array(["warm up"] * 1000)), device="cpu")


def _timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def run_dask_bench(table, *, files: int = 16, workers=(1, 2, 4, 8, 16), gpus: int = 0,
                   threads: int | None = None, workdir=None) -> dict:
    """Every figure of the module docstring as one dict (seconds and speed-ups)."""
    from fsstgpu.formats import compress_dataset
    from fsstgpu.integrations import dask as on_dask

    work = Path(workdir or tempfile.mkdtemp())
    string_mb = write_dataset(table, work / "in", files)
    out = {"files": files, "rows": table.num_rows, "string_MB": string_mb, "compress_s": {}}
    _warm()
    out["compress_s"]["single"] = _timed(lambda: compress_dataset(work / "in", work / "single"))
    out["threads_per_worker"] = threads or "cores // workers"
    for n in workers:
        with on_dask.local_client(n, threads=threads) as client:
            client.run(_warm)  # imports, before the clock
            target = work / f"w{n}"
            out["compress_s"][f"workers={n}"] = _timed(
                lambda c=client, t=target: on_dask.compress_dataset(work / "in", t, client=c))
            shutil.rmtree(target)
    base = out["compress_s"][f"workers={workers[0]}"] * workers[0]
    out["efficiency"] = {f"workers={n}": base / out["compress_s"][f"workers={n}"] / n
                         for n in workers}
    if gpus:
        out["to_gpus_s"] = {}
        for g in sorted({1, gpus}):
            with on_dask.local_client(g) as client:
                client.run(_warm)
                for by in ("file", "row_group"):
                    def read(c=client, by=by):
                        bag = on_dask.read_dataset_to_gpus(work / "single", by=by)
                        c.compute(bag.map(len)).result()  # decoded where they stay
                    read()  # warm: CUDA contexts, compile caches
                    out["to_gpus_s"][f"gpus={g}, by {by}"] = _timed(read)
    shutil.rmtree(work, ignore_errors=True)
    return out


def format_dask_bench(r: dict) -> str:
    """The result as plain text.

    Examples
    --------
    >>> from benchmarks.dask_scaling import format_dask_bench
    >>> print(format_dask_bench({"files": 2, "rows": 10, "string_MB": 1.0,
    ...                          "compress_s": {"single": 1.0}, "efficiency": {}}))
    2 files, 10 rows, 1.0 MB of strings, codec threads per worker: ?
      compress single: 1.000 s (1.0 MB/s)
    """
    lines = [f"{r['files']} files, {r['rows']:,} rows, {r['string_MB']:.1f} MB of strings, "
             f"codec threads per worker: {r.get('threads_per_worker', '?')}"]
    for k, v in r["compress_s"].items():
        eff = r["efficiency"].get(k)
        lines.append(f"  compress {k}: {v:.3f} s ({r['string_MB'] / v:.1f} MB/s)"
                     + (f", efficiency {eff:.2f}" if eff is not None else ""))
    for k, v in r.get("to_gpus_s", {}).items():
        lines.append(f"  onto {k}: {v:.3f} s ({r['string_MB'] / 1e3 / v:.2f} GB/s)")
    return "\n".join(lines)


def _main(argv=None) -> None:
    from fsstgpu.datasets import machine_text_table
    from fsstgpu.device import gpu_available

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=16)
    parser.add_argument("--rows", type=int, default=1_600_000)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4, 8, 16])
    parser.add_argument("--threads", type=int, default=None,
                        help="codec threads per worker (default: the worker's share of cores)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    gpus = 0
    if gpu_available():
        import cupy as cp

        gpus = cp.cuda.runtime.getDeviceCount()
    r = run_dask_bench(machine_text_table(args.rows), files=args.files,
                       workers=tuple(args.workers), gpus=gpus, threads=args.threads)
    print(json.dumps(r, indent=1) if args.json else format_dask_bench(r))


if __name__ == "__main__":
    _main()
