"""Benchmarks of bitshuffle and the bit-plane codec, plus the codec's ratio on dbtext lengths.

GPU rows count bytes read plus bytes written, are timed with CUDA events (median) and carry the
same run's copy bandwidth.  The dbtext rows (CPU only, no GPU needed) pack each file's string
lengths (one string per line) and compare with 4-byte Arrow offsets.
"""

from __future__ import annotations

import time

import numpy as np

from fsstgpu.device import get_cupy
from fsstgpu.kernels._timing import bench_row, copy_bandwidth, time_device
from fsstgpu.kernels.bitplane import (
    BITSHUFFLE_VARIANTS,
    CODEC_VARIANTS,
    bitplane_pack,
    bitplane_pack_cpu,
    bitplane_unpack,
    bitshuffle,
    bitunshuffle,
)

GIB = 1 << 30


def _row(op, variant, dtype, n, moved, seconds, copy_bps, **extra):
    return bench_row(op, variant, dtype, (n,), moved, seconds, copy_bps, **extra)


def _shuffle_rows(cp, dtype, size_bytes, repeat, copy_bps):
    es = np.dtype(dtype).itemsize
    n = size_bytes // es
    x = cp.random.randint(0, 1 << min(8 * es - 1, 30), size=n, dtype=cp.int64).astype(dtype)
    t = time_device(lambda: bitshuffle(x), repeat=repeat)
    rows = [_row("bitshuffle", "fsstgpu", dtype, n, 2 * x.nbytes, t, copy_bps)]
    s = bitshuffle(x)
    t = time_device(lambda: bitunshuffle(s, dtype), repeat=repeat)
    rows.append(_row("bitunshuffle", "fsstgpu", dtype, n, 2 * x.nbytes, t, copy_bps))
    return rows


def _codec_rows(name, vals, delta, repeat, copy_bps):
    t = time_device(lambda: bitplane_pack(vals, delta=delta), repeat=repeat)
    buf = bitplane_pack(vals, delta=delta)
    moved = vals.nbytes + int(buf.size)
    rows = [_row("bitplane_pack", name, str(vals.dtype), vals.size, moved, t, copy_bps,
                 input_gbps=vals.nbytes / t / 1e9, ratio=vals.nbytes / int(buf.size))]
    t = time_device(lambda: bitplane_unpack(buf, check=False), repeat=repeat)
    rows.append(_row("bitplane_unpack", name, str(vals.dtype), vals.size, moved, t, copy_bps,
                     output_gbps=vals.nbytes / t / 1e9))
    return rows


def bench_bitplane_gpu(size_bytes: int = GIB, *, repeat: int = 5,
                       copy_bps: float | None = None) -> list[dict]:
    """Time bitshuffle / bitunshuffle and bitplane_pack / unpack on ``size_bytes`` of data."""
    cp = get_cupy()
    copy_bps = copy_bps or copy_bandwidth(size_bytes)
    pool = cp.get_default_memory_pool()
    rows = []
    for dtype in ("uint8", "uint32", "uint64"):
        rows += _shuffle_rows(cp, dtype, size_bytes, repeat, copy_bps)
        pool.free_all_blocks()
    # string-length-like data (uint32 in [0, 200)) and a sorted int64 column (delta)
    lengths = cp.random.randint(0, 200, size=size_bytes // 4, dtype=cp.int32).astype(cp.uint32)
    rows += _codec_rows("uint32 lengths <200", lengths, False, repeat, copy_bps)
    del lengths
    pool.free_all_blocks()
    col = cp.cumsum(cp.random.randint(0, 1000, size=size_bytes // 8, dtype=cp.int64))
    rows += _codec_rows("sorted int64, delta", col, True, repeat, copy_bps)
    del col
    pool.free_all_blocks()
    return rows


def dbtext_length_ratios(paths=None) -> list[dict]:
    """Pack the string lengths of every dbtext file (CPU); one row per file plus the total.

    Examples
    --------
    >>> from fsstgpu.kernels.bench_bitplane import dbtext_length_ratios
    >>> rows = dbtext_length_ratios()  # reads the dbtext corpus  # doctest: +SKIP
    """
    from fsstgpu.datasets import dbtext_files, load_lines

    rows = []
    total_n = total_packed = 0
    for path in paths if paths is not None else dbtext_files():
        arr = load_lines(path)
        offsets = np.frombuffer(arr.buffers()[1], dtype=np.int64 if arr.type in (
            "large_string", "large_binary") else np.int32)[arr.offset:arr.offset + len(arr) + 1]
        lengths = np.diff(offsets).astype(np.uint32)
        packed = bitplane_pack_cpu(lengths).size
        total_n += lengths.size
        total_packed += packed
        rows.append({"op": "bitplane_ratio", "variant": "lengths", "file": path.name,
                     "values": int(lengths.size), "packed_bytes": int(packed),
                     "ratio_vs_int32": 4 * lengths.size / packed,
                     "bits_per_value": 8 * packed / max(1, lengths.size)})
    if rows:
        rows.append({"op": "bitplane_ratio", "variant": "lengths", "file": "(all files)",
                     "values": total_n, "packed_bytes": total_packed,
                     "ratio_vs_int32": 4 * total_n / total_packed,
                     "bits_per_value": 8 * total_packed / max(1, total_n)})
    return rows


def bench_bitplane(size_bytes: int = GIB, *, repeat: int = 5, copy_bps=None,
                   gpu: bool = True) -> list[dict]:
    """GPU rows (when ``gpu``) followed by the dbtext length ratios."""
    rows = bench_bitplane_gpu(size_bytes, repeat=repeat, copy_bps=copy_bps) if gpu else []
    return rows + dbtext_length_ratios()


# ------------------------------------------------------------------------------------------------
# Every kernel variant in one run (old and new side by side), verified before timing
# ------------------------------------------------------------------------------------------------

def _shuffle_variant_rows(cp, dtype, size_bytes, repeat, copy_bps, variants, rows):
    es = np.dtype(dtype).itemsize
    n = size_bytes // es
    x = cp.random.randint(0, 1 << min(8 * es - 1, 30), size=n, dtype=cp.int64).astype(dtype)
    ref = bitshuffle(x, variant="tile")
    for v in variants:
        ok = bool(cp.array_equal(bitshuffle(x, variant=v), ref))
        back_ok = bool(cp.array_equal(bitunshuffle(ref, dtype, variant=v), x))
        t = time_device(lambda v=v: bitshuffle(x, variant=v), repeat=repeat)
        rows.append(_row("bitshuffle", v, dtype, n, 2 * x.nbytes, t, copy_bps, verified=ok))
        t = time_device(lambda v=v: bitunshuffle(ref, dtype, variant=v), repeat=repeat)
        rows.append(_row("bitunshuffle", v, dtype, n, 2 * x.nbytes, t, copy_bps,
                         verified=back_ok))


def _codec_variant_rows(name, vals, delta, repeat, copy_bps, variants, rows):
    cp = get_cupy()
    ref = bitplane_pack(vals, delta=delta, variant="split")
    moved = vals.nbytes + int(ref.size)
    for v in variants:
        ok = bool(cp.array_equal(bitplane_pack(vals, delta=delta, variant=v), ref))
        back_ok = bool(cp.array_equal(bitplane_unpack(ref, variant=v), vals))
        t = time_device(lambda v=v: bitplane_pack(vals, delta=delta, variant=v), repeat=repeat)
        rows.append(_row("bitplane_pack", f"{v}: {name}", str(vals.dtype), vals.size, moved, t,
                         copy_bps, input_gbps=vals.nbytes / t / 1e9,
                         ratio=vals.nbytes / int(ref.size), verified=ok))
        t = time_device(lambda v=v: bitplane_unpack(ref, check=False, variant=v), repeat=repeat)
        rows.append(_row("bitplane_unpack", f"{v}: {name}", str(vals.dtype), vals.size, moved, t,
                         copy_bps, output_gbps=vals.nbytes / t / 1e9, verified=back_ok))


def bench_bitplane_variants(size_bytes: int = GIB, *, repeat: int = 5, copy_bps=None,
                            shuffle_variants=BITSHUFFLE_VARIANTS,
                            codec_variants=CODEC_VARIANTS,
                            time_budget_s: float = 120.0) -> list[dict]:
    """bitshuffle / bitunshuffle and bitplane_pack / unpack, every variant in the same run.

    Each row carries ``verified`` (the variant's bytes equal the default variant's / the input)
    and the same run's copy bandwidth.  Work units (a dtype, a codec data set) stop once
    ``time_budget_s`` of wall time has passed; a last row says what was skipped.

    Examples
    --------
    >>> from fsstgpu.kernels.bench_bitplane import bench_bitplane_variants
    >>> rows = bench_bitplane_variants(time_budget_s=60)  # needs a GPU  # doctest: +SKIP
    """
    cp = get_cupy()
    t_end = time.monotonic() + time_budget_s
    copy_bps = copy_bps or copy_bandwidth(size_bytes)
    pool = cp.get_default_memory_pool()
    rows: list[dict] = []

    def over(what):
        if time.monotonic() > t_end:
            rows.append({"op": "bitplane", "variant": "(time budget reached)", "skipped": what})
            return True
        return False

    for dtype in ("uint8", "uint32", "uint64"):
        if over(f"bitshuffle {dtype} and later"):
            return rows
        _shuffle_variant_rows(cp, dtype, size_bytes, repeat, copy_bps, shuffle_variants, rows)
        pool.free_all_blocks()
    if over("bitplane codec"):
        return rows
    lengths = cp.random.randint(0, 200, size=size_bytes // 4, dtype=cp.int32).astype(cp.uint32)
    _codec_variant_rows("uint32 lengths <200", lengths, False, repeat, copy_bps, codec_variants,
                        rows)
    del lengths
    pool.free_all_blocks()
    if over("bitplane codec sorted int64"):
        return rows
    col = cp.cumsum(cp.random.randint(0, 1000, size=size_bytes // 8, dtype=cp.int64))
    _codec_variant_rows("sorted int64, delta", col, True, repeat, copy_bps, codec_variants, rows)
    del col
    pool.free_all_blocks()
    return rows
