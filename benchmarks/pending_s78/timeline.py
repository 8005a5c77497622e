"""A planned device decode's host timeline, step by step (issue #24 item 1; no Nsight Systems
on these machines): the calls decompress_device's planned path makes, in its order, each
timed with perf_counter_ns; medians over 3000 calls of 1 MiB after 100. Then the enqueue's
parts alone: Launch.set x 6, the Replay's call, a bare cuGraphLaunch of the same exec."""
import ctypes
import time

import numpy as np

import fsstgpu
from benchmarks.gpu_encode import column_of
from benchmarks.gpu_sizes import corpus
from fsstgpu.device import get_cupy, on_arrays_device
from fsstgpu.gpu import decode as D
from fsstgpu.kernels.driver import graphs, stream_synchronize
from fsstgpu.kernels.host_flags import flag_slots

cp = get_cupy()
col = column_of(corpus(), 1 << 20)
dev = fsstgpu.to_device(fsstgpu.compress(col))
stream = cp.cuda.Stream(non_blocking=True)
with stream:
    for _ in range(100):
        fsstgpu.decompress_device(dev, stream)
    stream.synchronize()
steps = {}


def run():
    t = [time.perf_counter_ns()]
    names = []

    def mark(name):
        t.append(time.perf_counter_ns())
        names.append(name)

    ctx = on_arrays_device("decode_async", codes=dev.codes, out=None)
    ctx.__enter__()
    mark("on_arrays_device enter")
    plan = D._planned(dev)
    geo = dev.call_geometry
    mark("_planned + geometry")
    at_offsets, at_scratch, at_err, nbytes, nflags, zero_words = geo
    stream.__enter__()
    mark("with stream: enter")
    mem = cp.cuda.alloc(nbytes)
    mark("cp.cuda.alloc")
    stream.__exit__(None, None, None)
    mark("with stream: exit")
    slots = flag_slots()
    slot = slots.acquire()
    mark("flag slot")
    base = mem.ptr
    plan(base, base + at_offsets, base + at_scratch, base + at_err, stream.ptr,
         zero_words=zero_words, flags_to=slots.device_address(slot), nflags=nflags)
    mark("plan(...): sets + replay")
    data = D._view(cp, mem, 0, dev.layout.total, cp.uint8)
    offsets = D._view(cp, mem, at_offsets, dev.layout.offsets_nbytes, cp.uint8)
    err = D._view(cp, mem, at_err, nflags, cp.int32)
    mark("three _view")
    views = D._views(dev.layout, dev, data, offsets)
    mark("_views (DeviceStringArray)")
    job = D.DecodeJob(dev, views, data, err, stream, slot)
    mark("DecodeJob")
    stream_synchronize(stream.ptr)
    mark("stream sync (GPU work)")
    job.slot = None
    flags = slots.read(slot, nflags)
    slots.release(slot)
    mark("flags read + release")
    assert not any(flags)
    ctx.__exit__(None, None, None)
    mark("on_arrays_device exit")
    for k, name in enumerate(names):
        steps.setdefault(name, []).append(t[k + 1] - t[k])
    steps.setdefault("TOTAL", []).append(t[-1] - t[0])


for _ in range(3000):
    run()
for name, v in steps.items():
    print(f"{name:32s} {np.median(v) / 1e3:7.2f} us")
# the enqueue's parts
plan = dev.planned_decode
launch = plan._launch
geo = dev.call_geometry
mem = cp.cuda.alloc(geo[3])
b = mem.ptr  # the graph's pointers into this allocation, no flags copied to the host
plan(b, b + geo[0], b + geo[1], b + geo[2], stream.ptr, zero_words=geo[5], flags_to=0, nflags=0)
sets, replays, bare = [], [], []
lib = graphs()
for k in range(3000):
    t0 = time.perf_counter_ns()
    for i in range(6):
        launch.set(i, launch.cells[i].value)
    t1 = time.perf_counter_ns()
    plan._replay(stream.ptr, memset_dst=plan._replay._memset_at)
    t2 = time.perf_counter_ns()
    lib.cuGraphLaunch(plan._replay._exec, ctypes.c_void_p(stream.ptr))
    t3 = time.perf_counter_ns()
    sets.append(t1 - t0), replays.append(t2 - t1), bare.append(t3 - t2)
    if k % 64 == 0:
        stream.synchronize()
stream.synchronize()
print(f"6 x Launch.set (unchanged)        {np.median(sets) / 1e3:7.2f} us")
print(f"Replay call, nothing to update   {np.median(replays) / 1e3:7.2f} us")
print(f"bare cuGraphLaunch (ctypes)      {np.median(bare) / 1e3:7.2f} us")
