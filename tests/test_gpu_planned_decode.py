"""The planned decode call (issue #24, item 1): launches through the CUDA driver, planned once
per device column, byte for byte what the CuPy launchers and the CPU decoder give.

Every check runs on fresh random columns and poisons the output first (0xAB), decoding into a
buffer longer than the output so that a byte the kernels miss or write past the end shows.
"""

from __future__ import annotations

import threading

import numpy as np
import pyarrow as pa
import pytest

import fsstgpu

POISON = 0xAB


def _column(seed: int, rows: int) -> pa.Array:
    rng = np.random.default_rng(seed)
    vocab = [b"http://", b"www.", b"example", b".com/", b"\xc3\x9f", b"id=", b"\x00", b"q"]
    out = []
    for _ in range(rows):
        if rng.random() < 0.05:
            out.append(None)
            continue
        k = int(rng.integers(0, 14))
        word = b"".join(vocab[j] for j in rng.integers(0, len(vocab), k))
        out.append(word + bytes(rng.integers(0, 256, int(rng.integers(0, 4))).astype(np.uint8)))
    return pa.array(out, pa.binary() if seed % 2 else pa.large_binary())


def _sms(count: int):
    """A device_limits that says the GPU has ``count`` SMs (the plan's choice of finer work)."""
    from fsstgpu.kernels.loader import DeviceLimits

    return lambda device_id: DeviceLimits(count, 1 << 18, 1 << 16, 2048, 1 << 17)


def _decoded(dev, planned: bool, monkeypatch):
    """(data bytes, offsets as int64) of one decode of ``dev`` into a poisoned buffer."""
    import cupy as cp

    from fsstgpu.gpu import decode

    with monkeypatch.context() as m:
        if not planned:
            m.setattr(decode, "_planned", lambda dev: None)
        buf = cp.full(dev.total + 64, POISON, dtype=cp.uint8)
        res = decode.decode_async(dev, fill=POISON, out=buf).check()
        assert np.all(buf[dev.total:].get() == POISON), "wrote past the end of the output"
        return res.data.get(), res.offsets.get().astype(np.int64), res


@pytest.mark.gpu
@pytest.mark.parametrize("seed", range(6))
def test_planned_matches_launchers_and_cpu(seed, monkeypatch):
    from fsstgpu.gpu import decode

    rng = np.random.default_rng(seed + 1000)
    col = _column(seed, int(rng.integers(1, 40_000)))
    carr = fsstgpu.compress(col, split_size=int(rng.choice([64, 512, 4096])))
    dev = fsstgpu.to_device(carr)
    assert decode._planned(dev) is not None, "the planned path is not taken"
    data_p, offs_p, res = _decoded(dev, True, monkeypatch)
    data_l, offs_l, _ = _decoded(dev, False, monkeypatch)
    ref = fsstgpu.decompress(carr, device="cpu")
    ref_data = np.frombuffer(b"".join(v for v in ref.to_pylist() if v is not None), np.uint8)
    assert np.array_equal(data_p, ref_data) and np.array_equal(data_l, ref_data)
    assert np.array_equal(offs_p, offs_l)
    assert res.to_arrow().equals(ref)
    assert decode._planned(dev) is decode._planned(dev), "planned once, kept with the column"


@pytest.mark.gpu
def test_planned_batch_and_empty_columns():
    cols = [_column(s, n) for s, n in ((7, 3000), (8, 0), (9, 1), (10, 20_000))]
    cols[1] = pa.array([], pa.binary())
    carrs = [fsstgpu.compress(c) for c in cols]
    results = fsstgpu.decompress_device(fsstgpu.to_device(carrs))
    for res, col in zip(results, cols, strict=True):
        assert res.to_arrow().equals(col)


@pytest.mark.gpu
@pytest.mark.parametrize("seed", range(3))
def test_planned_kernel_with_no_codes_or_few_splits(seed):
    """The planned kernel's scan tiles with no decode blocks before them (a column without
    codes) and far more tiles than splits (mostly empty strings): offsets, data and validity
    equal the CPU twin's on the first call (launched directly) and on the graph's replays."""
    from fsstgpu.gpu import decode

    rng = np.random.default_rng(seed + 3000)
    rows = int(rng.integers(20_000, 60_000))
    cols = [pa.array([None] * rows, pa.large_binary()), pa.array([b""] * rows, pa.binary())]
    sparse = [b""] * rows
    for i in rng.integers(0, rows, 2):
        sparse[int(i)] = bytes(rng.integers(0, 256, int(rng.integers(1, 3000))).astype(np.uint8))
    cols.append(pa.array(sparse, pa.binary()))
    for col in cols:
        dev = fsstgpu.to_device(fsstgpu.compress(col))
        assert decode._planned(dev) is not None, "the planned path is not taken"
        for _ in range(3):  # the first call launches directly, the next ones replay the graph
            assert decode.decompress_device(dev, fill=POISON).to_arrow().equals(col)


@pytest.mark.gpu
@pytest.mark.parametrize("seed", range(4))
def test_long_splits_first_gives_the_same_bytes(seed, monkeypatch):
    """From the second call of a plan whose decode takes a few waves of blocks, the warps take
    the long splits first (``long_splits_first``): offsets, data and validity stay the CPU
    twin's, the output poisoned first, on that call (the order made and the graph captured)
    and on replays. One SM and no bound on the waves here, so small columns get the order."""
    from fsstgpu.gpu import decode
    from fsstgpu.kernels import fsst_decode

    monkeypatch.setattr(fsst_decode, "device_limits", _sms(1))
    monkeypatch.setattr(fsst_decode, "ORDER_WAVES", 1 << 40)
    rng = np.random.default_rng(seed + 5000)
    cols = [_column(seed, int(rng.integers(2_000, 40_000))) for _ in range(1 + seed % 2)]
    carrs = [fsstgpu.compress(c, split_size=int(rng.choice([64, 256, 1024]))) for c in cols]
    dev = fsstgpu.to_device(carrs if len(carrs) > 1 else carrs[0])
    plan = decode._planned(dev)
    assert plan is not None, "the planned path is not taken"
    import cupy as cp

    for call in range(3):
        buf = cp.full(dev.total + 64, POISON, dtype=cp.uint8)
        res = decode.decode_async(dev, fill=POISON, out=buf).check()
        assert np.all(buf[dev.total:].get() == POISON), "wrote past the end of the output"
        if call == 0:
            assert plan.order is None, "the first call launches in index order"
        for got, col in zip(res if dev.is_batch else [res], cols, strict=True):
            assert got.to_arrow().equals(col)
    order = plan.order.get()
    assert np.array_equal(np.sort(order), np.arange(dev.nsplits)), "not a permutation"
    assert not np.array_equal(order, np.arange(dev.nsplits)), "the order changed nothing"


def _twin_pieces(dev, codes=None):
    """split_pieces_cpu on the device column's host layout (its codes, or ``codes``), with the
    piece size the plan chose."""
    from fsstgpu.kernels import fsst_decode
    from fsstgpu.kernels.split_pieces import piece_bytes, split_pieces_cpu

    lay, plan = dev.layout, dev.planned_decode
    if codes is None:
        codes = np.concatenate([np.asarray(c) for c in lay.codes])
    warps = (fsst_decode.WARPS_PER_BLOCK * fsst_decode.BLOCKS_PER_SM
             * fsst_decode.device_limits(0).sms)
    return split_pieces_cpu(codes, lay.split_codes, lay.split_out, lay.split_table,
                            lay.tab_len, lay.total, plan.pieces[0].get(),
                            piece_bytes(lay.split_codes, warps))


@pytest.mark.gpu
@pytest.mark.parametrize("seed", range(4))
def test_pieces_equal_the_cpu_twin_and_decode_the_same_bytes(seed, monkeypatch):
    """From the second call the plan decodes pieces of splits (pieces of one window here: a GPU
    of many SMs assumed): the kernel's piece starts equal the twin's, and offsets, data and
    validity the CPU decoder's, output poisoned, on that call and on replays."""
    import cupy as cp

    from fsstgpu.gpu import decode
    from fsstgpu.kernels import fsst_decode

    monkeypatch.setattr(fsst_decode, "device_limits", _sms(10_000))
    rng = np.random.default_rng(seed + 6000)
    cols = [_column(seed + j, int(rng.integers(2_000, 30_000))) for j in range(1 + seed % 3)]
    carrs = [fsstgpu.compress(c, split_size=int(rng.choice([2048, 4096, 16384]))) for c in cols]
    dev = fsstgpu.to_device(carrs if len(carrs) > 1 else carrs[0])
    plan = decode._planned(dev)
    for call in range(3):
        buf = cp.full(dev.total + 64, POISON, dtype=cp.uint8)
        res = decode.decode_async(dev, fill=POISON, out=buf).check()
        assert np.all(buf[dev.total:].get() == POISON), "wrote past the end of the output"
        assert (plan.pieces is None) == (call == 0)
        for got, col in zip(res if dev.is_batch else [res], cols, strict=True):
            assert got.to_arrow().equals(col)
    first, table, piece_codes, piece_out = plan.pieces
    assert len(table) > dev.nsplits, "no split was cut: the test proves little"
    want_codes, want_out = _twin_pieces(dev)
    assert np.array_equal(piece_codes.get(), want_codes)
    assert np.array_equal(piece_out.get(), want_out)


@pytest.mark.gpu
@pytest.mark.parametrize("seed", range(3))
def test_pieces_of_corrupt_codes_equal_the_twin_and_raise(seed, monkeypatch):
    import cupy as cp

    from fsstgpu.gpu import decode
    from fsstgpu.kernels import fsst_decode

    monkeypatch.setattr(fsst_decode, "device_limits", _sms(10_000))
    rng = np.random.default_rng(seed + 7000)
    dev = fsstgpu.to_device(fsstgpu.compress(_column(seed, 20_000), split_size=4096))
    # some windows of random bytes (undefined codes, stray escapes), the rest intact
    codes = dev.codes[: dev.ncodes].get()
    for at in rng.integers(0, dev.ncodes, 4 + seed):
        span = codes[at : at + int(rng.integers(1, 300))]
        span[:] = rng.integers(0, 256, len(span), np.uint8)
    dev.codes[: dev.ncodes] = cp.asarray(codes)
    raised = 0
    for _ in range(3):
        try:
            decode.decode_async(dev).check()
        except fsstgpu.CorruptDataError:
            raised += 1
    assert raised == 3
    want_codes, want_out = _twin_pieces(dev, codes)
    _, _, piece_codes, piece_out = dev.planned_decode.pieces
    assert np.array_equal(piece_codes.get(), want_codes)
    assert np.array_equal(piece_out.get(), want_out)


@pytest.mark.gpu
@pytest.mark.parametrize("pieces", [True, False])
def test_a_call_on_another_stream_waits_for_the_refinement(pieces, monkeypatch):
    """The second call plans pieces (or the order) on its stream, behind a 50 ms kernel there;
    a third call at once on another stream must wait for them: equal to the CPU decoder."""
    import cupy as cp

    from fsstgpu.gpu import decode
    from fsstgpu.kernels import fsst_decode

    monkeypatch.setattr(fsst_decode, "device_limits", _sms(10_000 if pieces else 1))
    monkeypatch.setattr(fsst_decode, "ORDER_WAVES", 1 << 40)
    spin = cp.RawKernel(r"""extern "C" __global__ void spin(long long ns) {
        long long t0, t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
        do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns); }""",
                        "spin")
    col = _column(21, 30_000)
    dev = fsstgpu.to_device(fsstgpu.compress(col, split_size=4096))
    a, b = cp.cuda.Stream(non_blocking=True), cp.cuda.Stream(non_blocking=True)
    decode.decode_async(dev, a).check()
    spin((1,), (1,), (np.int64(50_000_000),), stream=a)
    second = decode.decode_async(dev, a)
    third = decode.decode_async(dev, b)
    plan = decode._planned(dev)
    assert (plan.pieces is not None) == pieces and (plan.order is not None) != pieces
    assert third.check().to_arrow().equals(col)
    assert second.check().to_arrow().equals(col)


@pytest.mark.gpu
def test_one_wave_takes_no_order():
    """A decode whose blocks all fit on the GPU at once has no last wave to spare: no order
    (pieces of splits instead, where a split is long)."""
    from fsstgpu.gpu import decode

    dev = fsstgpu.to_device(fsstgpu.compress(_column(3, 5_000)))
    for _ in range(3):
        decode.decompress_device(dev)
    assert decode._planned(dev).order is None


@pytest.mark.gpu
def test_threads_share_a_plan():
    import cupy as cp

    col = _column(11, 30_000)
    dev = fsstgpu.to_device(fsstgpu.compress(col))
    errors = []

    def work():
        try:
            with cp.cuda.Stream(non_blocking=True) as stream:
                for _ in range(20):
                    assert fsstgpu.decompress_device(dev, stream=stream).to_arrow().equals(col)
        except Exception as e:  # reported below: an assert in a thread is lost otherwise
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


@pytest.mark.gpu
def test_planned_decode_on_a_fresh_thread():
    """A thread whose only CUDA work is the decode (its buffers served by CuPy's pool, so no
    runtime call has made a context current there) replays the plan's graph: the driver's calls
    need the context made current first (``driver.ensure_context``)."""
    col = _column(13, 20_000)
    dev = fsstgpu.to_device(fsstgpu.compress(col))
    for _ in range(3):   # planned and replayed; the outputs' memory goes back to the pool
        assert fsstgpu.decompress_device(dev).to_arrow().equals(col)
    results = []

    def work():
        try:
            results.append(fsstgpu.decompress_device(dev).to_arrow().equals(col))
        except Exception as e:  # reported below: an assert in a thread is lost otherwise
            results.append(e)

    for _ in range(3):
        thread = threading.Thread(target=work)
        thread.start()
        thread.join()
    assert results == [True] * 3, results


@pytest.mark.gpu
def test_planned_corrupt_codes_raise():
    from fsstgpu.gpu import decode
    from fsstgpu.testing import gpu_decode_matches_cpu

    assert decode.driver() is not None, "the planned path needs the driver here"
    carr = fsstgpu.compress(_column(12, 5000), split_size=256)
    rng = np.random.default_rng(12)
    failures = 0
    for trial in range(20):
        codes = np.array(carr.codes)
        pos = rng.integers(0, len(codes), int(rng.integers(1, 6)))
        codes[pos] = 255 if trial % 2 else rng.integers(0, 256, len(pos))
        failures += gpu_decode_matches_cpu(carr, codes=codes)
    assert failures > 0


@pytest.mark.gpu
def test_out_too_small_is_refused():
    import cupy as cp

    from fsstgpu.gpu.decode import decode_async

    dev = fsstgpu.to_device(fsstgpu.compress(_column(13, 100)))
    with pytest.raises(ValueError, match="at least"):
        decode_async(dev, out=cp.empty(max(dev.total - 1, 0), cp.uint8))
    with pytest.raises(ValueError, match="contiguous"):
        decode_async(dev, out=cp.empty(2 * dev.total + 2, cp.uint8)[::2])


@pytest.mark.gpu
def test_without_the_driver_cupy_does_it(monkeypatch):
    """Where ctypes cannot load libcuda, decodes take CuPy's launches, fill and get."""
    from fsstgpu.gpu import arrays, decode

    monkeypatch.setattr(decode, "driver", lambda: None)
    monkeypatch.setattr(arrays, "driver", lambda: None)
    col = _column(14, 20_000)
    carr = fsstgpu.compress(col, split_size=512)
    dev = fsstgpu.to_device(carr)
    assert decode._planned(dev) is None
    _, _, res = _decoded(dev, True, monkeypatch)
    assert res.to_arrow().equals(col)
    assert fsstgpu.decompress_device(carr).to_arrow().equals(col)  # host column, one chunk


def _graph_plan(dev):
    """The device column's plan, with the graph calls asserted available (they are in every
    driver since CUDA 10: a GPU machine without them is worth a failure, not a skip)."""
    from fsstgpu.gpu import decode
    from fsstgpu.kernels.driver import graphs

    assert graphs() is not None, "the CUDA driver lacks the graph calls"
    plan = decode._planned(dev)
    assert plan is not None and plan.use_graph
    return plan


@pytest.mark.gpu
@pytest.mark.parametrize("seed", range(4))
def test_graph_replay_matches_one_launch_at_a_time(seed, monkeypatch):
    """The plan's graph (memset, scan, decode captured once, replayed with new pointers) gives
    what the same plan's separate launches give, call after call into fresh poisoned buffers;
    a plan's first call makes no graph."""
    rng = np.random.default_rng(seed + 2000)
    col = _column(seed + 20, int(rng.integers(1, 30_000)))
    carr = fsstgpu.compress(col, split_size=int(rng.choice([64, 512, 4096])))
    dev = fsstgpu.to_device(carr)
    plan = _graph_plan(dev)
    plan.use_graph = False
    data_l, offs_l, _ = _decoded(dev, True, monkeypatch)
    assert plan._replay is None, "launched one by one, no graph made"
    plan.use_graph = True  # (the plan's second call: graphs start there)
    replays = set()
    for _ in range(3):  # every call its own output, scratch and flags: the pointers move
        data_g, offs_g, res = _decoded(dev, True, monkeypatch)
        replays.add(id(plan._replay))
        assert np.array_equal(data_g, data_l) and np.array_equal(offs_g, offs_l)
        assert res.to_arrow().equals(col)
    assert len(replays) == 1 and plan._replay is not None, "captured once, then replayed"


def _corrupt_device_column(carr, seed: int):
    """``carr`` on the device with 40 of its codes turned into escapes after the host's checks
    (fsstgpu.testing's way), and whether the CPU twin finds that corrupt."""
    from fsstgpu.decoder import decode_all
    from fsstgpu.errors import CorruptDataError
    from fsstgpu.gpu.arrays import DeviceCompressedStringArray
    from fsstgpu.gpu.layout import HostBatch

    layout = HostBatch([carr])
    codes = np.array(carr.codes)
    codes[np.random.default_rng(seed).integers(0, len(codes), 40)] = 255
    layout.codes = [codes]
    dev = DeviceCompressedStringArray(layout)
    dev.is_batch = False
    try:
        decode_all(carr.tables, codes, layout.split_codes, layout.split_out, layout.split_table,
                   dev.total)
    except CorruptDataError:
        return dev, True
    return dev, False


@pytest.mark.gpu
def test_graph_replay_reports_corrupt_codes():
    """The graph zeroes the error flags it then reads: a corrupt column after a good one still
    raises, and the good one still decodes after it."""
    from fsstgpu.errors import CorruptDataError

    col = _column(30, 8000)
    carr = fsstgpu.compress(col, split_size=256)
    good = fsstgpu.to_device(carr)
    bad, corrupt = _corrupt_device_column(carr, 30)
    assert corrupt, "the CPU twin should find the damaged codes corrupt"
    plans = [_graph_plan(dev) for dev in (good, bad)]
    for _ in range(3):  # the first call of each launches one by one, the next replay graphs
        assert fsstgpu.decompress_device(good).to_arrow().equals(col)
        with pytest.raises(CorruptDataError):
            fsstgpu.decompress_device(bad)
    assert fsstgpu.decompress_device(good).to_arrow().equals(col)
    assert all(plan._replay is not None for plan in plans)


@pytest.mark.gpu
def test_replay_memset_writes_where_each_call_says():
    import cupy as cp

    from fsstgpu.kernels.driver import Replay, graphs

    assert graphs() is not None, "the CUDA driver lacks the graph calls"
    a, b = cp.full(16, 7, cp.int32), cp.full(16, 7, cp.int32)
    replay = Replay([], 8, a.data.ptr)
    assert a.get().tolist() == [7] * 16, "capturing runs nothing"
    stream = cp.cuda.get_current_stream()
    replay(stream.ptr, memset_dst=b.data.ptr + 16)
    stream.synchronize()
    assert a.get().tolist() == [7] * 16
    assert b.get().tolist() == [7] * 4 + [0] * 8 + [7] * 4


@pytest.mark.gpu
def test_graph_from_the_second_call():
    """A column decoded once (a host column's upload makes a new device column each call)
    pays no graph capture: the plan's first call launches one by one, the second captures."""
    col = _column(31, 2000)
    carr = fsstgpu.compress(col)
    dev = fsstgpu.to_device(carr)
    plan = _graph_plan(dev)
    assert fsstgpu.decompress_device(dev).to_arrow().equals(col)
    assert plan._replay is None
    assert fsstgpu.decompress_device(dev).to_arrow().equals(col)
    assert plan._replay is not None
    assert fsstgpu.decompress_device(carr).to_arrow().equals(col)  # host column: no graph


@pytest.mark.gpu
def test_flags_reach_their_host_slots_when_many_decodes_are_in_flight():
    """Each planned decode's flags come back through a host slot of its own: more decodes in
    flight than slots (the rest read their flags back), good and corrupt ones interleaved,
    checked in reverse order; dropped unchecked decodes give their slots back."""
    import gc

    from fsstgpu.errors import CorruptDataError
    from fsstgpu.gpu.decode import decode_async
    from fsstgpu.kernels.host_flags import NSLOTS, flag_slots

    col = _column(32, 3000)
    carr = fsstgpu.compress(col, split_size=256)
    good = fsstgpu.to_device(carr)
    bad, corrupt = _corrupt_device_column(carr, 32)
    assert corrupt, "the CPU twin should find the damaged codes corrupt"
    jobs = [(k % 3 == 2, decode_async(bad if k % 3 == 2 else good, fill=POISON))
            for k in range(NSLOTS + 40)]
    assert sum(job.slot is not None for _, job in jobs) <= NSLOTS
    assert any(job.slot is None for _, job in jobs), "more decodes than slots"
    for is_bad, job in reversed(jobs):
        if is_bad:
            with pytest.raises(CorruptDataError, match="GPU FSST decode"):
                job.check()
        else:
            assert job.check().to_arrow().equals(col)
    slots = flag_slots()
    for _ in range(NSLOTS):  # dropped unchecked: their slots come back once their kernels end
        decode_async(bad)
    gc.collect()
    import cupy as cp

    cp.cuda.get_current_stream().synchronize()
    taken = [slots.acquire() for _ in range(NSLOTS)]
    assert None not in taken, "a dropped decode kept its slot"
    for slot in taken:
        slots.release(slot)


class _CountingDriver:
    """The driver library, counting the graph node updates a Replay makes."""

    def __init__(self, lib):
        self.lib, self.updates = lib, []

    def __getattr__(self, name):
        call = getattr(self.lib, name)
        if not (name.startswith("cuGraphExec") and name.endswith("SetParams")):
            return call

        def counted(*args):
            self.updates.append(name)
            return call(*args)
        return counted


@pytest.mark.gpu
def test_replay_updates_only_the_nodes_whose_arguments_moved():
    """A replay at the memset address it last had makes no update, and one at another address
    writes there, wherever the calls before wrote."""
    import cupy as cp

    from fsstgpu.kernels.driver import Replay, graphs

    assert graphs() is not None, "the CUDA driver lacks the graph calls"
    a, b = cp.full(8, 7, cp.int32), cp.full(8, 7, cp.int32)
    replay = Replay([], 8, a.data.ptr)
    counting = replay._lib = _CountingDriver(replay._lib)
    stream = cp.cuda.get_current_stream()
    for dst, updates in ((a, 0), (a, 0), (b, 1), (b, 0), (a, 1)):
        a.fill(7)
        b.fill(7)
        counting.updates.clear()
        replay(stream.ptr, memset_dst=dst.data.ptr)
        stream.synchronize()
        assert len(counting.updates) == updates
        other = b if dst is a else a
        assert dst.get().tolist() == [0] * 8 and other.get().tolist() == [7] * 8


@pytest.mark.gpu
@pytest.mark.parametrize("seed", range(3))
def test_replays_whose_pointers_stay_or_move_match_the_cpu(seed):
    """Outputs kept or dropped, into one of two poisoned buffers in a random order: the graph's
    nodes keep or take new pointers, and every decode is the CPU twin's, nothing past its end."""
    import cupy as cp

    from fsstgpu.gpu.decode import decode_async

    rng = np.random.default_rng(seed + 3000)
    col = _column(seed + 50, int(rng.integers(1, 20_000)))
    carr = fsstgpu.compress(col, split_size=int(rng.choice([64, 512, 4096])))
    dev = fsstgpu.to_device(carr)
    _graph_plan(dev)
    want = np.frombuffer(fsstgpu.decompress(carr, device="cpu").buffers()[2] or b"", np.uint8)
    want = want[: dev.total]
    bufs = [cp.empty(dev.total + 64, cp.uint8) for _ in range(2)]
    kept = []
    for k in rng.integers(0, 2, 12):
        bufs[k].fill(POISON)
        res = decode_async(dev, out=bufs[k]).check()
        got = bufs[k].get()
        assert np.array_equal(got[: dev.total], want) and (got[dev.total :] == POISON).all()
        assert res.to_arrow().equals(col)
        if rng.random() < 0.5:
            kept.append(res)  # its offsets stay allocated: the next call's pointers move
