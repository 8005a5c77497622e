"""Where a small device-resident decode call's time goes on this host (issue #24: 1 MiB in
25 us): decompress_device of a 1 MiB and a 16 MiB dbtext column (planned, replayed), timed
(a) whole, CUDA events around the call as the sweep does; (b) host time of each step, by
wrapping decode.py's module functions with perf_counter_ns; (c) the GPU time of the plan's
replay alone (events right around it). Medians of 2000 calls (200 at 16 MiB) after 50 warm-up."""
import sys
import time

import numpy as np
import pyarrow as pa

import fsstgpu
from benchmarks.gpu_encode import column_of
from benchmarks.gpu_sizes import corpus
from fsstgpu.device import get_cupy
from fsstgpu.gpu import decode as D
from fsstgpu.kernels import fsst_decode as K

cp = get_cupy()
MIB = 1 << 20
spent = {}


def timed(name, fn):
    def wrapper(*a, **k):
        t0 = time.perf_counter_ns()
        r = fn(*a, **k)
        spent.setdefault(name, []).append(time.perf_counter_ns() - t0)
        return r
    return wrapper


def run(size, calls):
    col = column_of(corpus(), size)
    dev = fsstgpu.to_device(fsstgpu.compress(col))
    stream = cp.cuda.Stream(non_blocking=True)
    a, b = cp.cuda.Event(), cp.cuda.Event()
    with stream:
        for _ in range(50):
            fsstgpu.decompress_device(dev, stream)
        stream.synchronize()
        whole, wall = [], []
        for _ in range(calls):
            t0 = time.perf_counter_ns()
            a.record(stream)
            fsstgpu.decompress_device(dev, stream)
            b.record(stream)
            b.synchronize()
            wall.append(time.perf_counter_ns() - t0)
            whole.append(cp.cuda.get_elapsed_time(a, b) * 1e3)
        # the steps' host time (wrapped: each wrapper adds ~0.2 us)
        saved = {n: getattr(D, n) for n in ("_planned", "_views", "flag_slots", "decode_async")}
        saved_check, saved_call = D.DecodeJob.check, K.PlannedDecode.__call__
        D._planned = timed("_planned", saved["_planned"])
        D._views = timed("_views (result arrays)", saved["_views"])
        D.flag_slots = timed("flag_slots", saved["flag_slots"])
        D.DecodeJob.check = timed("DecodeJob.check (sync + flags)", saved_check)
        K.PlannedDecode.__call__ = timed("plan(...) (replay enqueue)", saved_call)
        D.decode_async = timed("decode_async (all before check)", saved["decode_async"])
        for _ in range(calls):
            fsstgpu.decompress_device(dev, stream)
        for n, f in saved.items():
            setattr(D, n, f)
        D.DecodeJob.check, K.PlannedDecode.__call__ = saved_check, saved_call
        # the replay's GPU time alone
        plan = dev.planned_decode
        gpu = []
        job = D.decode_async(dev, stream)
        job.check()
        geo = dev.call_geometry
        mem = cp.cuda.alloc(geo[3])
        for _ in range(calls):
            a.record(stream)
            plan(mem.ptr, mem.ptr + geo[0], mem.ptr + geo[1], mem.ptr + geo[2], stream.ptr,
                 zero_words=geo[5], flags_to=0, nflags=geo[4])
            b.record(stream)
            b.synchronize()
            gpu.append(cp.cuda.get_elapsed_time(a, b) * 1e3)
    med = lambda v: float(np.median(v))  # noqa: E731
    print(f"{size // MIB} MiB: events around the call {med(whole):.1f} us "
          f"({dev.total / med(whole) / 1e3:.1f} GB/s), host wall {med(wall) / 1e3:.1f} us, "
          f"the replay's GPU time alone {med(gpu):.1f} us")
    for n, v in spent.items():
        print(f"    {n:38s} {med(v) / 1e3:7.1f} us")
    spent.clear()


for size, calls in ((1 * MIB, 2000), (16 * MIB, 200)):
    run(size, calls)
print("nothing wrapped", pa.__version__, sys.version.split()[0])
