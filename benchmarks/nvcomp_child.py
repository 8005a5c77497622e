"""nvCOMP's GPU codecs on the benchmark's strings, in a process of its own.

:func:`benchmarks.gpu.nvcomp_rows` runs this module as a child process, with faulthandler on:
once a process died silently inside nvCOMP (a segfault at the first call, nothing on stderr) and
took every decode figure of the run with it. Each codec compresses the strings once and its decode
is timed with CUDA events on our stream (nvCOMP's ``Codec`` otherwise works on an internal stream
of its own, which the events would not measure); throughput = decompressed bytes / device time,
beside the copy bandwidth the parent measured.

Usage: ``python -X faulthandler -m benchmarks.nvcomp_child --copies N --copy-bps X --out FILE
PATH...`` (decodes of the files' strings), or ``--sizes S,... [--batch CxS,...] [--encode]``
(the dbtext corpus cut to each size: decodes, or with ``--encode`` compressions), from the
checkout's root or with it on ``PYTHONPATH``. Writes the rows as JSON to FILE (one row saying so
when ``nvidia.nvcomp`` does not import).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from benchmarks.gpu import note_row, throughput_row
from benchmarks.timing import time_device
from fsstgpu.arrow_layout import from_arrow
from fsstgpu.datasets import load_lines
from fsstgpu.device import get_cupy

ALGORITHMS = ("LZ4", "Snappy", "GDeflate", "Zstd", "ANS", "Cascaded")


def nvcomp_rows(data: np.ndarray, copy_bps: float, *, repeat: int = 5) -> list[dict]:
    """Time every codec of :data:`ALGORITHMS` decoding ``data`` (uint8) from device memory.

    A codec that raises gets a row saying so; the others still run.
    """
    from nvidia import nvcomp

    cp = get_cupy()
    print(f"nvCOMP {getattr(nvcomp, '__version__', '?')}, {data.nbytes:,} bytes", file=sys.stderr,
          flush=True)
    arr = nvcomp.as_array(cp.asarray(data))
    stream = cp.cuda.Stream(non_blocking=True)
    rows = []
    for algo in ALGORITHMS:
        print(f"nvCOMP {algo}", file=sys.stderr, flush=True)
        try:
            codec = nvcomp.Codec(algorithm=algo, cuda_stream=stream.ptr)
            comp = codec.encode(arr)
            stream.synchronize()
            seconds = time_device(lambda c=codec, x=comp: c.decode(x), repeat=repeat,
                                  stream=stream)
        except Exception as exc:  # one codec failing must not hide the others
            rows.append(note_row("overall", f"nvCOMP {algo} failed: {type(exc).__name__}: {exc}",
                                 data.nbytes, copy_bps))
            continue
        finally:
            codec = comp = None  # before the stream they use (see size_rows)
            stream.synchronize()
        rows.append(throughput_row("overall", f"nvCOMP {algo}", data.nbytes,
                                   data.nbytes / comp.buffer_size, 0, seconds, copy_bps))
    return rows


def _batch_array(nvcomp, arrays):
    """nvCOMP's batch of arrays (its batched API), however this version spells it."""
    for name in ("as_arrays", "BatchArray"):
        make = getattr(nvcomp, name, None)
        if make is not None:
            return make(arrays)
    raise TypeError("this nvCOMP has no batch array constructor (looked for as_arrays, "
                    "BatchArray): " + ", ".join(n for n in dir(nvcomp) if "rray" in n))


def _per_codec(what: str, measure) -> list[dict]:
    """``measure(nvcomp, codec, algo, stream)``'s rows for every codec of :data:`ALGORITHMS`,
    each codec on one stream of ours; a codec that raises gets a row saying so."""
    from nvidia import nvcomp

    stream = get_cupy().cuda.Stream(non_blocking=True)
    rows = []
    for algo in ALGORITHMS:
        print(f"nvCOMP {algo} {what}", file=sys.stderr, flush=True)
        codec = None
        try:
            codec = nvcomp.Codec(algorithm=algo, cuda_stream=stream.ptr)
            rows += measure(nvcomp, codec, algo, stream)
        except Exception as exc:  # one codec failing must not hide the others
            rows.append({"what": f"nvCOMP {algo} {what} failed: {type(exc).__name__}: {exc}"})
        finally:
            # nvCOMP's objects use our stream: they must go before it does (destroying the
            # stream first made the process segfault at exit, 2026-11-30)
            codec = None
            stream.synchronize()
    return rows


def size_rows(data: np.ndarray, sizes, batches, copy_bps: float, *, repeat: int = 10):
    """Every codec decoding the first ``size`` bytes of ``data`` for each size, and batches of
    ``count`` chunks of ``size`` bytes decoded in one call (nvCOMP's batched mode)."""
    cp = get_cupy()

    def measure(nvcomp, codec, algo, stream):
        rows = []
        for size in sizes:
            comp = codec.encode(nvcomp.as_array(cp.asarray(data[:size])))
            stream.synchronize()
            t = time_device(lambda c=codec, x=comp: c.decode(x), repeat=repeat, stream=stream)
            gbs = size / t / 1e9
            rows.append({"what": f"nvCOMP {algo}", "MiB": size / 2**20, "us": t * 1e6,
                         "GB/s": gbs, "copy GB/s": copy_bps / 1e9,
                         "of copy": gbs / (copy_bps / 1e9), "ratio": size / comp.buffer_size})
        for count, size in batches:
            chunks = _batch_array(nvcomp, [cp.asarray(data[k * size : (k + 1) * size])
                                           for k in range(count)])
            comp = codec.encode(chunks)
            stream.synchronize()
            t = time_device(lambda c=codec, x=comp: c.decode(x), repeat=repeat, stream=stream)
            gbs = count * size / t / 1e9
            rows.append({"what": f"nvCOMP {algo} batch {count} x {size >> 20} MiB",
                         "MiB": count * size / 2**20, "us": t * 1e6, "GB/s": gbs,
                         "copy GB/s": copy_bps / 1e9, "of copy": gbs / (copy_bps / 1e9)})
        return rows

    return _per_codec("sizes", measure)


def encode_rows(data: np.ndarray, sizes, copy_bps: float, *, repeat: int = 5) -> list[dict]:
    """Every codec compressing the first ``size`` bytes of ``data`` (device-resident, one
    buffer) for each size: CUDA events on our stream around ``encode``, median; GB/s of input
    bytes, with the ratio. What :mod:`benchmarks.gpu_encode` puts beside the GPU FSST encoder."""
    cp = get_cupy()

    def measure(nvcomp, codec, algo, stream):
        rows = []
        for size in sizes:
            arr = nvcomp.as_array(cp.asarray(data[:size]))
            ratio = size / codec.encode(arr).buffer_size
            stream.synchronize()
            t = time_device(lambda c=codec, x=arr: c.encode(x), repeat=repeat, stream=stream)
            rows.append({"what": f"nvCOMP {algo} compress", "MiB": size / 2**20,
                         "GB/s": size / t / 1e9, "ratio": ratio, "copy GB/s": copy_bps / 1e9})
        return rows

    return _per_codec("compress", measure)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("paths", nargs="*", type=Path, help="line files, as the parent read them")
    parser.add_argument("--copies", type=int, default=1, help="copies of all files' strings")
    parser.add_argument("--sizes", help="comma-separated sizes: the size sweep (dbtext corpus)")
    parser.add_argument("--batch", default="", help="COUNTxSIZE,...: batched decodes")
    parser.add_argument("--encode", action="store_true",
                        help="with --sizes: time the codecs' compression instead")
    parser.add_argument("--copy-bps", type=float, required=True,
                        help="the parent's device copy bandwidth, bytes/s (read + written)")
    parser.add_argument("--out", type=Path, required=True, help="where to write the JSON rows")
    args = parser.parse_args(argv)
    if args.sizes:
        from benchmarks.gpu_sizes import corpus

        sizes = [int(x) for x in args.sizes.split(",")]
        batches = [tuple(int(v) for v in b.split("x")) for b in args.batch.split(",") if b]
        one = from_arrow(corpus()).data
        need = max(sizes + [c * s for c, s in batches])
        data = np.tile(one, -(-need // one.size))
        if args.encode:
            rows = encode_rows(data, sizes, args.copy_bps)
        else:
            rows = size_rows(data, sizes, batches, args.copy_bps)
        args.out.write_text(json.dumps(rows, default=str))
        return 0
    one = np.concatenate([from_arrow(load_lines(p)).data for p in args.paths])
    try:
        from nvidia import nvcomp  # noqa: F401  (only whether it imports)
    except Exception as exc:
        rows = [note_row("overall", f"nvCOMP not measured: nvidia.nvcomp does not import "
                         f"({type(exc).__name__}; pip install nvidia-nvcomp-cu12 or -cu13)",
                         one.size * args.copies, args.copy_bps)]
    else:
        rows = nvcomp_rows(np.tile(one, args.copies), args.copy_bps)
    args.out.write_text(json.dumps(rows, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
