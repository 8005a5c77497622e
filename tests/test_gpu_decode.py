"""GPU FSST decode: byte-for-byte equal to the CPU decoder, never out of bounds on bad input.

Every GPU check poisons the output (0xAB) before the kernel and decodes into a buffer longer than
the output, so a byte the kernel misses, or one it writes past the end, shows up. The kernel's CPU
twin is fsstgpu.decoder.decode_all. The CPU tests at the top (host checks, chunking) run
everywhere.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, strategies as st

import fsstgpu
from fsstgpu.decoder import decode_all
from fsstgpu.gpu.arrays import _piece_runs
from fsstgpu.gpu.decode import decompress_device
from fsstgpu.gpu.layout import HostBatch
from fsstgpu.kernels.fsst_decode import error_message
from fsstgpu.scan import long_string_cuts
from fsstgpu.splits import plan_splits
from fsstgpu.testing import gpu_decode_matches_cpu

sys.path.insert(0, str(Path(__file__).parent))
from seeds import fresh_seed  # noqa: E402

POISON = 0xAB
TYPES = [pa.string(), pa.large_string(), pa.binary(), pa.large_binary(), pa.string_view(),
         pa.binary_view()]


def _words(rows: int, seed: int, null_every: int = 0) -> list:
    rng = np.random.default_rng(seed)
    vocab = ["http://", "www.", "example", ".com/", "user", "_id=", "ß", "日本", "data", "x"]
    out = []
    for i in range(rows):
        if null_every and i % null_every == 0:
            out.append(None)
            continue
        k = int(rng.integers(0, 12))
        out.append("".join(vocab[j] for j in rng.integers(0, len(vocab), k))
                   + chr(int(rng.integers(33, 127))) * int(rng.integers(0, 3)))
    return out


def _expected(carr):
    return fsstgpu.decompress(carr, device="cpu")


# ---------------------------------------------------------------- CPU (run everywhere)
def _twin(carr, **changes):
    """The CPU twin's bytes for ``carr``'s splits (or changed ones)."""
    fields = {name: changes.get(name, getattr(carr, name)) for name in
              ("tables", "codes", "split_codes", "split_out", "split_table")}
    total = int(np.asarray(fields["split_out"])[-1])
    return decode_all(fields["tables"], fields["codes"], fields["split_codes"],
                      fields["split_out"], fields["split_table"], total)


def test_error_bits_in_words():
    assert "table" in error_message(32) and "escape" in error_message(4 | 2)


def _rebuilt(carr, **changes):
    """A new CompressedStringArray with some fields replaced (not yet validated)."""
    names = ("type", "length", "tables", "block_starts", "codes", "code_offsets", "lengths",
             "validity", "null_count", "split_size", "split_codes", "split_out", "split_table",
             "chunk_lengths")
    fields = {name: changes.get(name, getattr(carr, name)) for name in names}
    return fsstgpu.CompressedStringArray(**fields)


HOST_CHECKS = [
    (lambda c: {"split_codes": c.split_codes[:-1]}, "split arrays"),
    (lambda c: {"split_codes": np.r_[c.split_codes[:-1], c.split_codes[-1] + 1]},
     "split code positions must run"),
    (lambda c: {"split_out": np.r_[c.split_out[:-1], c.split_out[-1] - 1]},
     "split output positions must run"),
    (lambda c: {"split_table": c.split_table + 1}, "table"),
    (lambda c: {"lengths": c.lengths[:-1]}, "lengths"),
    (lambda c: {"split_codes": np.r_[0, c.split_codes[2], c.split_codes[1],
                                     c.split_codes[3:]]}, "non-decreasing"),
]


@pytest.mark.parametrize("change, match", HOST_CHECKS)
def test_host_checks(change, match):
    """What the GPU path checks on the host before any upload (O(strings), no code walk)."""
    carr = fsstgpu.compress(pa.array(_words(2000, 4)), split_size=512)
    assert len(carr.split_table) >= 3
    with pytest.raises(fsstgpu.CorruptDataError, match=match):
        HostBatch([_rebuilt(carr, **change(carr))])


@pytest.mark.gpu
@pytest.mark.parametrize("change, match", HOST_CHECKS)
def test_host_checks_refuse_after_the_codes_upload_started(change, match, monkeypatch):
    """A host column's codes start uploading before its checks run (upload_batch): a column
    the checks refuse still raises, and the next decode on the stream is exact."""
    monkeypatch.setattr("fsstgpu.gpu.arrays.OVERLAP_BYTES", 0)  # every upload handed off
    carr = fsstgpu.compress(pa.array(_words(2000, 4)), split_size=512)
    bad = _rebuilt(carr, **change(carr))
    with pytest.raises(fsstgpu.CorruptDataError, match=match):
        fsstgpu.decompress_device(bad)
    with pytest.raises(fsstgpu.CorruptDataError, match=match):
        fsstgpu.to_device([carr, bad])
    assert decompress_device(carr, fill=0xAB).to_arrow().equals(_expected(carr))


def test_host_batch_concatenates_what_compression_stored():
    cols = [pa.array(_words(3000, 4, null_every=9)), pa.array(["x" * 300, None], pa.large_string()),
            pa.array([], pa.binary()), pa.array(_words(50, 5))]
    carrs = [fsstgpu.compress(c) for c in cols]
    batch = HostBatch(carrs)
    assert all(a is c.codes for a, c in zip(batch.codes, carrs, strict=True))  # not copied
    assert batch.lengths.dtype == np.uint16  # the widest column needs 300
    assert batch.total == sum(c.uncompressed_bytes for c in carrs)
    assert batch.ntables == sum(len(c.tables) for c in carrs)
    for k, (c, col) in enumerate(zip(carrs, batch.columns, strict=True)):
        s = batch.column_splits(k)
        assert np.array_equal(batch.split_codes[s] - col.code_start, c.split_codes[:-1])
        assert np.array_equal(batch.split_out[s] - col.out_start, c.split_out[:-1])
        assert col.offsets_byte % 8 == 0
        assert np.array_equal(batch.offsets_cpu()[k], np.concatenate([[0], np.cumsum(c.lengths)]))
    assert [col.offsets_dtype.itemsize for col in batch.columns] == [4, 8, 4, 4]
    # the whole batch decodes on the CPU from the concatenated layout: the kernel's input
    data = decode_all(sum((list(c.tables) for c in carrs), []), np.concatenate(batch.codes),
                      batch.split_codes, batch.split_out, batch.split_table, batch.total)
    expected = b"".join(bytes(decode_all(c.tables, c.codes, c.split_codes, c.split_out,
                                         c.split_table, c.uncompressed_bytes)) for c in carrs)
    assert bytes(data) == expected


@given(sizes=st.lists(st.integers(0, 40), max_size=6), piece=st.integers(1, 50))
def test_piece_runs_cut_the_parts_end_to_end(sizes, piece):
    """The staged upload's pieces hold the parts' bytes in order, every piece full but the
    last."""
    parts = [np.arange(n, dtype=np.uint8) + k for k, n in enumerate(sizes)]
    pieces = _piece_runs(parts, piece)
    flat = [bytes(part[lo:hi]) for runs in pieces for part, lo, hi in runs]
    assert b"".join(flat) == b"".join(p.tobytes() for p in parts)
    filled = [sum(hi - lo for _, lo, hi in runs) for runs in pieces]
    assert all(f == piece for f in filled[:-1]) and all(0 < f <= piece for f in filled)
    assert all(lo < hi for runs in pieces for _, lo, hi in runs)


# ---------------------------------------------------------------- GPU
def _pinned(a: np.ndarray) -> np.ndarray:
    import cupyx

    out = cupyx.empty_pinned(a.shape, a.dtype)
    out[...] = a
    return out


def _gpu_decode_checked(carr, expected=None, ingest_too=True):
    """Decode ``carr`` every way on the GPU and compare with the CPU decoder byte for byte."""
    import cupy as cp

    from fsstgpu.gpu.decode import decode_async

    ref = fsstgpu.decompress(carr, device="cpu") if expected is None else expected
    total = carr.uncompressed_bytes
    ref_flat = ref.combine_chunks() if isinstance(ref, pa.ChunkedArray) else ref
    ref_data = _twin(carr)
    dev = fsstgpu.to_device(carr)
    buf = cp.full(total + 64, POISON, dtype=cp.uint8)
    results = [("device", decode_async(dev, fill=POISON, out=buf).check())]
    assert np.all(buf[total:].get() == POISON), "wrote past the end of the output"
    stream = cp.cuda.Stream(non_blocking=True)
    results.append(("stream", fsstgpu.decompress_device(dev, stream=stream)))
    if ingest_too:
        results.append(("host", decompress_device(carr, fill=POISON)))
        import fsstgpu.gpu.arrays as device_arrays

        kept = device_arrays.OVERLAP_BYTES, device_arrays.STAGE_BYTES
        device_arrays.OVERLAP_BYTES = 0
        try:  # the codes uploaded by a worker thread while the layout is built
            results.append(("host-handed-off", decompress_device(carr, fill=POISON)))
            device_arrays.STAGE_BYTES = 0  # ... staged in pieces through pinned buffers
            ncodes = len(carr.codes)
            results.append(("host-staged", decompress_device(
                carr, chunk_bytes=max(ncodes // 5, 7), nbuffers=2, fill=POISON)))
            results.append(("host-staged-one-piece", decompress_device(
                carr, chunk_bytes=ncodes + 1, fill=POISON)))
            pinned = _rebuilt(carr, codes=_pinned(np.asarray(carr.codes)))
            results.append(("host-pinned", decompress_device(
                pinned, chunk_bytes=max(ncodes // 3, 7), fill=POISON)))
        finally:
            device_arrays.OVERLAP_BYTES, device_arrays.STAGE_BYTES = kept
    for what, res in results:
        got = res.data.get()
        assert got.shape == ref_data.shape, what
        if not np.array_equal(got, ref_data):
            bad = int(np.flatnonzero(got != ref_data)[0])
            raise AssertionError(f"{what}: first wrong byte at {bad} of {total}")
        offsets = np.zeros(carr.length + 1, np.int64)
        np.cumsum(carr.lengths, out=offsets[1:])
        assert np.array_equal(res.offsets.get().astype(np.int64), offsets), what
        arrow = res.to_arrow()
        assert arrow.type == ref.type and type(arrow) is type(ref), what
        assert arrow.equals(ref), what
        assert len(res) == len(ref_flat)
    return results


@pytest.mark.gpu
@pytest.mark.parametrize("type_", TYPES, ids=str)
def test_types_nulls_slices(type_):
    col = pa.array(_words(5000, 5, null_every=5), type_)
    _gpu_decode_checked(fsstgpu.compress(col))
    _gpu_decode_checked(fsstgpu.compress(col.slice(123, 3000)))
    chunked = pa.chunked_array([col.slice(0, 10), col.slice(10, 0), col.slice(10, 2000)], type_)
    _gpu_decode_checked(fsstgpu.compress(chunked))


@pytest.mark.gpu
@pytest.mark.parametrize("values", [[], [None], [""], ["", ""], [None, "a", None],
                                    ["x" * 17], ["\xff" * 3]], ids=repr)
def test_tiny_and_empty(values):
    for type_ in (pa.string(), pa.large_binary()):
        col = pa.array(values, type_) if type_ == pa.string() else pa.array(
            [None if v is None else v.encode() for v in values], type_)
        _gpu_decode_checked(fsstgpu.compress(col))


@pytest.mark.gpu
def test_fast_level_blocks():
    # the "fast" level's blocks (a cheap table per MiB) decode on the GPU as on the CPU
    seed = fresh_seed()  # fresh input each run
    print(f"seed {seed}")  # shown on failure
    col = pa.array(_words(120_000, seed, null_every=13))
    carr = fsstgpu.compress(col, level="fast")
    assert len(carr.tables) >= 2
    _gpu_decode_checked(carr)


@pytest.mark.gpu
@pytest.mark.parametrize("split_size", [1, 5, 64, 4096, 1 << 16])
def test_split_sizes(split_size):
    col = pa.array(_words(4000, 6, null_every=11))
    _gpu_decode_checked(fsstgpu.compress(col, split_size=split_size))


@pytest.mark.gpu
def test_dataset_generators():
    generators = pytest.importorskip("fsstgpu.datasets.generators")
    for name in sorted(generators.GENERATORS):
        for seed in (0, 1):
            col = generators.generate(name, 3000, seed)
            _gpu_decode_checked(fsstgpu.compress(col), ingest_too=seed == 0)


@pytest.mark.gpu
def test_dbtext(dbtext_paths):
    for path in dbtext_paths:
        lines = path.read_bytes().split(b"\n")
        col = pa.array(lines, pa.binary())
        _gpu_decode_checked(fsstgpu.compress(col))


@pytest.mark.gpu
def test_many_tables_in_one_cuda_block():
    """Blocks of a few strings, so a CUDA block's splits use more than two tables (global path)."""
    from fsstgpu.encoder import encode_strings

    rng = np.random.default_rng(7)
    tables = [fsstgpu.SymbolTable([bytes([97 + t]) * k for k in range(1, 9)] + [b"ab", b"yz"])
              for t in range(6)]
    strings = [bytes(rng.choice(list(b"abcdefyz"), int(rng.integers(0, 40)))) for _ in range(600)]
    data = np.frombuffer(b"".join(strings), np.uint8)
    offsets = np.zeros(len(strings) + 1, np.int64)
    np.cumsum([len(s) for s in strings], out=offsets[1:])
    block_starts = np.arange(0, 601, 20)
    codes, code_offsets, split_codes, split_out, split_table = [], [0], [0], [0], []
    for b in range(len(block_starts) - 1):
        s0, s1 = block_starts[b], block_starts[b + 1]
        t = b % len(tables)
        c, co = encode_strings(tables[t], data, offsets[s0 : s1 + 1])
        base = code_offsets[-1]
        codes.append(c)
        code_offsets.extend((co[1:] + base).tolist())
        split_codes.append(code_offsets[-1])
        split_out.append(int(offsets[s1]))
        split_table.append(t)
    codes = np.concatenate(codes)
    code_offsets, lengths = np.array(code_offsets), np.diff(offsets)
    starts = np.asarray(block_starts, np.int64)
    block_tables = [tables[b % len(tables)] for b in range(len(starts) - 1)]
    cuts = long_string_cuts(block_tables, starts, codes, code_offsets, lengths, 16)
    sc, so, st = plan_splits(code_offsets, lengths, starts, 16, cuts)
    carr = fsstgpu.CompressedStringArray(
        type=pa.binary(), length=len(strings), tables=block_tables, block_starts=starts,
        codes=codes,
        code_offsets=code_offsets, lengths=lengths, validity=None, null_count=0, split_size=16,
        split_codes=sc, split_out=so, split_table=st)
    carr.validate()
    assert len(st) > 256  # several CUDA blocks, each spanning many tables
    _gpu_decode_checked(carr, expected=pa.array(strings, pa.binary()))


@pytest.mark.gpu
def test_skewed_lengths_and_a_huge_string():
    rng = np.random.default_rng(8)
    words = np.array([b"lorem", b"ipsum", b"dolor", b"sit", b"amet", b"\x00\x01", b"\xff"])
    huge = b" ".join(words[rng.integers(0, len(words), 24_000_000)].tolist())[: 100 << 20]
    tiny = [bytes(rng.integers(0, 256, int(n), dtype=np.uint8)) for n in rng.integers(0, 4, 5000)]
    mid = [b"ipsum" * int(n) for n in rng.zipf(1.5, 2000) % 5000]
    values = tiny[:2500] + [huge] + mid + [None] * 10 + tiny[2500:]
    col = pa.array(values, pa.large_binary())
    carr = fsstgpu.compress(col)
    assert carr.uncompressed_bytes > 100 << 20
    _gpu_decode_checked(carr)


# ---------------------------------------------------------------- GPU, corrupt input
def _decode_corrupt(carr, **changes):
    return gpu_decode_matches_cpu(carr, poison=POISON, **changes)


@pytest.mark.gpu
def test_corrupt_codes_flipped():
    col = pa.array(_words(3000, 9))
    carr = fsstgpu.compress(col, split_size=300)
    rng = np.random.default_rng(9)
    failures = 0
    for trial in range(40):
        codes = carr.codes.copy()
        k = int(rng.integers(1, 6))
        pos = rng.integers(0, len(codes), k)
        codes[pos] = rng.integers(0, 256, k) if trial % 2 else 255
        failed = _decode_corrupt(carr, codes=codes)
        failures += failed
        if failed:  # the full walk catches the same damage
            with pytest.raises(fsstgpu.CorruptDataError):
                _rebuilt(carr, codes=codes).validate()
    assert failures > 0


@pytest.mark.gpu
@pytest.mark.parametrize("wps", [1, 2, 4, 8])
def test_warps_share_a_split(wps, monkeypatch):
    """Several warps per split, each a run of the split's windows after a walk of the ones
    before: the CPU twin's bytes on text, escape-heavy noise (splits of ~16 windows), splits of
    fewer windows than warps, every decode path (planned first call, graph, launchers, the
    chunked upload), and corrupt codes flagged exactly when the twin finds them."""
    import fsstgpu.kernels.fsst_decode as fd

    monkeypatch.setattr(fd, "warps_per_split", lambda nsplits: wps)
    rng = np.random.default_rng(40 + wps)
    text = pa.array(_words(4000, 40 + wps, null_every=7), pa.binary())
    noise = pa.array([rng.integers(0, 256, int(rng.integers(0, 300)), dtype=np.uint8).tobytes()
                      for _ in range(800)], pa.binary())
    mixed = pa.concat_arrays([text[:2000], noise])
    for col, split in ((text, 4096), (noise, 2048), (mixed, 1024), (text, 64)):
        carr = fsstgpu.compress(col, split_size=split)
        assert not gpu_decode_matches_cpu(carr, poison=POISON)
        dev = fsstgpu.to_device(carr)
        for _ in range(3):  # the plan's first call, its graph's capture, a replay
            assert decompress_device(dev, fill=POISON).to_arrow().equals(col)
        total = carr.uncompressed_bytes
        assert decompress_device(carr, chunk_bytes=max(total // 4, 64),
                                 fill=POISON).to_arrow().equals(col)
    carr = fsstgpu.compress(noise, split_size=2048)
    failures = 0
    for trial in range(20):
        codes = carr.codes.copy()
        pos = rng.integers(0, len(codes), 3)
        codes[pos] = 255 if trial % 2 else rng.integers(0, 256, 3)
        failures += _decode_corrupt(carr, codes=codes)
    assert failures > 0


@pytest.mark.gpu
def test_corrupt_split_points_and_lengths():
    col = pa.array(_words(3000, 10))
    carr = fsstgpu.compress(col, split_size=256)
    prep = HostBatch([carr])
    sc, so, st = prep.split_codes, prep.split_out, prep.split_table
    n = len(st)
    rng = np.random.default_rng(10)
    cases = []
    for _ in range(10):
        k = int(rng.integers(1, n))
        cases.append({"split_codes": _with(sc, k, int(rng.integers(-5, sc[-1] + 100)))})
        cases.append({"split_out": _with(so, k, int(rng.integers(-5, so[-1] + 100)))})
        cases.append({"split_out": _with(so, k, so[k] + int(rng.integers(-3, 4)))})
        cases.append({"split_table": _with(st, k - 1, int(rng.integers(1, 60000)))})
    cases.append({"split_codes": sc[::-1].copy()})
    cases.append({"split_codes": np.full_like(sc, 1 << 40)})
    for case in cases:
        _decode_corrupt(carr, **case)
    assert _decode_corrupt(carr, split_out=_with(so, n // 2, so[n // 2] + 1))


def _with(a, k, value):
    b = a.copy()
    b[k] = value
    return b


@pytest.mark.gpu
def test_device_arrays_export():
    import cupy as cp

    carr = fsstgpu.compress(pa.array(["abc", None, "de"]))
    res = fsstgpu.decompress_device(carr)
    assert isinstance(res, fsstgpu.DeviceStringArray)
    host = fsstgpu.decompress(carr, device="gpu")  # decoded on the GPU, returned on the host
    assert isinstance(host, pa.Array) and host.equals(pa.array(["abc", None, "de"]))
    assert bytes(cp.from_dlpack(res.data).get()) == b"abcde"
    assert res.offsets.__cuda_array_interface__["shape"] == (4,)
    assert res.validity is not None and res.nbytes >= 5 + 16
    assert fsstgpu.decompress(carr, device="auto").equals(pa.array(["abc", None, "de"]))


@pytest.mark.gpu
def test_unaligned_output_and_long_symbols():
    """An output buffer that is not 16-byte aligned (head and tail chunks written byte by byte)
    and 8-byte symbols only (a window's largest output)."""
    import cupy as cp

    from fsstgpu.gpu.decode import decode_async

    col = pa.array([b"abcdefgh" * int(n) for n in np.random.default_rng(11).integers(0, 900, 60)]
                   + [b"x\xff\xffabcdefgh"], pa.binary())
    carr = fsstgpu.compress(col, split_size=3000)
    total = carr.uncompressed_bytes
    assert total > 7 * len(carr.codes)  # nearly every code is an 8-byte symbol
    ref = _twin(carr)
    dev = fsstgpu.to_device(carr)
    for shift in (0, 1, 5, 15):
        buf = cp.full(total + 64, POISON, dtype=cp.uint8)
        res = decode_async(dev, fill=POISON, out=buf[shift:]).check()
        got = buf.get()
        assert np.array_equal(res.data.get(), ref), shift
        assert np.all(got[:shift] == POISON) and np.all(got[shift + total:] == POISON)


# ---------------------------------------------------------------- GPU, batches
def _batch_columns(seed: int, count: int):
    rng = np.random.default_rng(seed)
    types = [pa.string(), pa.large_string(), pa.binary(), pa.string_view()]
    cols = []
    for k in range(count):
        type_ = types[k % len(types)]
        words = _words(int(rng.integers(0, 3000)), seed + k, null_every=int(rng.integers(0, 9)))
        if type_ in (pa.binary(),):
            words = [None if w is None else w.encode() for w in words]
        cols.append(pa.array(words, type_))
    cols.append(pa.array([], pa.string()))
    cols.append(pa.array(["y" * 9000, None], pa.large_binary()))
    return cols


@pytest.mark.gpu
def test_batch_decodes_every_column_in_one_launch():
    import cupy as cp

    cols = _batch_columns(20, 40)
    carrs = [fsstgpu.compress(c) for c in cols]
    dev = fsstgpu.to_device(carrs)
    assert len(dev) == len(cols)
    for results in (fsstgpu.decompress_device(dev), fsstgpu.decompress_device(carrs),
                    fsstgpu.gpu.decode.decompress_device(carrs, chunk_bytes=4096, nbuffers=2,
                                                         fill=POISON)):
        assert len(results) == len(cols)
        for res, col, carr in zip(results, cols, carrs, strict=True):
            assert res.to_arrow().equals(col)
            assert np.array_equal(res.data.get(), _twin(carr))
            offsets = np.concatenate([[0], np.cumsum(carr.lengths)])
            assert np.array_equal(res.offsets.get().astype(np.int64), offsets)
    stream = cp.cuda.Stream(non_blocking=True)
    assert [r.to_arrow() for r in fsstgpu.decompress_device(carrs, stream=stream)] == list(cols)


@pytest.mark.gpu
def test_batch_names_the_corrupt_column_and_keeps_the_others():
    cols = _batch_columns(21, 6)
    carrs = [fsstgpu.compress(c) for c in cols]
    bad = 2
    codes = np.array(carrs[bad].codes)
    codes[len(codes) // 2] = 254 if len(carrs[bad].tables[0]) < 255 else 255
    carrs[bad] = _rebuilt(carrs[bad], codes=codes)
    with pytest.raises(fsstgpu.BatchDecodeError, match=f"column {bad} of the batch") as info:
        fsstgpu.decompress_device(carrs)
    assert set(info.value.failed) == {bad}
    for k, (res, col) in enumerate(zip(info.value.results, cols, strict=True)):
        assert (res is None) if k == bad else res.to_arrow().equals(col)


def _row_groups(seed: int):
    """A file column's row groups: columns of one type, some with nulls, one empty."""
    rng = np.random.default_rng(seed)
    type_ = [pa.string(), pa.large_binary()][seed % 2]
    cols = []
    for k in range(int(rng.integers(2, 6))):
        n = 0 if k == 1 else int(rng.integers(1, 3000))
        words = _words(n, 4, null_every=int(rng.integers(2, 9)) if k % 2 == 0 else 0)
        cols.append(pa.array(words, type_))
    return cols


@pytest.mark.parametrize("seed", range(4))
def test_joined_columns_lay_out_one_output_each(seed):
    """``joined`` runs of a batch: one output column each, whose offsets (the CPU twin of the
    scan, from the batch's own arrays) and validity are those of its columns end to end."""
    runs = [_row_groups(seed), _row_groups(seed + 10)]
    carrs = [fsstgpu.compress(c) for run in runs for c in run]
    batch = HostBatch(carrs, joined=[len(r) for r in runs])
    assert len(batch.outputs) == 2 and len(batch.columns) == len(carrs)
    first = 0
    for out, run, offsets in zip(batch.outputs, runs, batch.offsets_cpu(), strict=True):
        joined = pa.chunked_array(run).combine_chunks()
        assert out.length == len(joined) and out.chunk_lengths.tolist() == [len(c) for c in run]
        lens = np.concatenate([np.asarray(c.lengths) for c in carrs[first : first + len(run)]])
        assert np.array_equal(offsets, np.concatenate([[0], np.cumsum(lens)]))
        if joined.null_count:
            bits = batch.validity[out.validity_start : out.validity_start + (len(joined) + 7) // 8]
            got = np.unpackbits(bits, count=len(joined), bitorder="little").astype(bool)
            assert got.tolist() == joined.is_valid().to_pylist()
        members = batch.col_wide[first : first + len(run)]
        assert members[0] & 2 == 0 and all(w & 2 for w in members[1:])
        assert set(batch.output_of[first : first + len(run)]) == {batch.outputs.index(out)}
        first += len(run)


def test_joined_columns_are_checked():
    a, b = fsstgpu.compress(pa.array(["x"])), fsstgpu.compress(pa.array([b"y"], pa.binary()))
    with pytest.raises(ValueError, match="summing to 2"):
        HostBatch([a, a], joined=[1])
    with pytest.raises(ValueError, match="different types"):
        HostBatch([a, b], joined=[2])
    with pytest.raises(ValueError, match="narrow"):
        HostBatch([a, a], joined=[2], lengths="bitplane")


@pytest.mark.gpu
@pytest.mark.parametrize("seed", range(4))
def test_joined_columns_decode_to_their_columns_end_to_end(seed):
    """Runs of ``joined`` columns decode, output poisoned first, to their columns end to end
    (chunks kept), byte for byte what the CPU decoder gives, on the first call and replayed;
    a corrupt column names itself and fails its run only."""
    import cupy as cp

    from fsstgpu.gpu.arrays import upload_batch
    from fsstgpu.gpu.decode import decode_async

    runs = [_row_groups(seed), _row_groups(seed + 20), [pa.array(_words(50, 3))]]
    carrs = [fsstgpu.compress(c, split_size=512) for run in runs for c in run]
    joined = [len(r) for r in runs]
    got = decompress_device(carrs, joined=joined, fill=POISON)
    dev = upload_batch(carrs, joined=joined)
    replayed = [decode_async(dev).check() for _ in range(3)][-1]
    for results in (got, replayed):
        assert len(results) == len(runs)
        first = 0
        for res, run in zip(results, runs, strict=True):
            members = carrs[first : first + len(run)]
            expect = pa.chunked_array([fsstgpu.decompress(c, device="cpu") for c in members])
            assert res.to_arrow().equals(expect) and expect.equals(pa.chunked_array(run))
            assert res.to_arrow().num_chunks == len(run)
            assert np.array_equal(res.data.get(), np.concatenate([_twin(c) for c in members]))
            first += len(run)
    at = len(runs[0])  # the second run's first column (never empty)
    codes = np.array(carrs[at].codes)
    codes[: max(1, codes.size // 2)] = 255
    carrs[at] = _rebuilt(carrs[at], codes=codes)
    with pytest.raises(fsstgpu.BatchDecodeError) as err:
        decompress_device(carrs, joined=joined)
    assert list(err.value.failed) == [at]
    assert err.value.results[1] is None and err.value.results[0] is not None
    cp.cuda.get_current_stream().synchronize()
