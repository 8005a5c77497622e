"""Files compressed with the strings encoded on the GPU (issue #25: ``compress_file(...,
device="gpu")``, ``fsstgpu compress --device``).

The GPU encoder of host blocks (``GpuBlockEncoder``) is the twin of ``native.encode_blocks``:
the GPU tests compare them byte for byte on fresh random inputs (the codes buffer poisoned
first) and compare whole files written both ways. The CPU tests check the wiring without a GPU
(every encode of a file goes through the encoder it is given, and the file is the CPU's) and
that asking for a GPU that is not there fails before anything is written.
"""

from __future__ import annotations

import json
import threading

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import fsstgpu
from fsstgpu import SymbolTable, native
from fsstgpu.datasets import load_lines
from fsstgpu.errors import DeviceError
from fsstgpu.formats import compress_file, decompress_file, files as files_module

POISON = 0xAB


def _table(rng, rows: int) -> pa.Table:
    """Text that changes half way (so a file retrains), nulls, a long string, a nested
    column and a column copied through."""
    words = [b"http://", b"www.", b"example", b".com/", b"index", b"?q=", b"ACGT", b"\xc3\xa9"]
    def one(k):
        pick = words[:5] if k < rows // 2 else words[4:]
        return b"".join(pick[int(i)] for i in rng.integers(0, len(pick), int(rng.integers(0, 12))))
    text = [None if rng.random() < 0.05 else one(k).decode() for k in range(rows)]
    text[rows // 3] = "x" * 70_000  # longer than a split: cuts inside it
    nested = [[one(k).decode() for _ in range(int(rng.integers(0, 3)))] for k in range(rows)]
    return pa.table({"s": pa.array(text, pa.large_string()),
                     "b": pa.array([one(k) for k in range(rows)], pa.binary()),
                     "l": pa.array(nested, pa.list_(pa.string())),
                     "n": pa.array(np.arange(rows))})


def _input(tmp_path, rng, rows=6000) -> str:
    path = str(tmp_path / "in.parquet")
    pq.write_table(_table(rng, rows), path, row_group_size=rows // 3)
    return path


# ---------------------------------------------------------------- CPU (run everywhere)
class _CountingEncoder:
    """A stand-in for the GPU encoder on a machine without one: the CPU encoder, counted."""

    calls = 0
    strings = 0
    lock = threading.Lock()  # (a row group's columns are converted on several threads)

    def __init__(self, **_):
        pass

    def __call__(self, tables, data, offsets, block_starts):
        with self.lock:
            type(self).calls += 1
            type(self).strings += len(offsets) - 1
        return native.encode_blocks(tables, data, offsets, block_starts)


@pytest.mark.parametrize("codec", ["zstd", "none"])
def test_every_encode_of_a_file_goes_through_the_device_encoder(tmp_path, monkeypatch, codec,
                                                                fresh_rng):
    rng = fresh_rng
    src = _input(tmp_path, rng)
    cpu = str(tmp_path / "cpu.parquet")
    compress_file(src, cpu, parquet_codec=codec)
    monkeypatch.setattr(files_module, "resolve_device", lambda device: "gpu")
    monkeypatch.setattr(files_module, "GpuBlockEncoder", _CountingEncoder)
    _CountingEncoder.calls = _CountingEncoder.strings = 0
    gpu = str(tmp_path / "gpu.parquet")
    info = compress_file(src, gpu, parquet_codec=codec, device="gpu")
    assert info["device"] == "gpu"
    # three row groups of two flat columns and one nested leaf: at least one encode each
    assert _CountingEncoder.calls >= 9
    assert _CountingEncoder.strings >= 2 * 6000
    with open(cpu, "rb") as a, open(gpu, "rb") as b:
        assert a.read() == b.read()


@pytest.mark.skipif(fsstgpu.gpu_available(), reason="checks the error on a machine without a GPU")
def test_asking_for_a_missing_gpu_fails_before_writing(tmp_path, fresh_rng):
    src = _input(tmp_path, fresh_rng, 600)
    dst = tmp_path / "out.parquet"
    with pytest.raises(DeviceError, match="GPU"):
        compress_file(src, str(dst), device="gpu")
    assert not dst.exists()
    assert compress_file(src, str(dst), device="auto")["device"] == "cpu"


@pytest.mark.skipif(fsstgpu.gpu_available(), reason="checks the error on a machine without a GPU")
def test_cli_compress_device(tmp_path, fresh_rng):
    from fsstgpu.cli.app import app

    src = _input(tmp_path, fresh_rng, 600)
    runner = CliRunner()
    res = runner.invoke(app, ["compress", src, str(tmp_path / "g.parquet"), "--device", "gpu",
                              "--no-progress"])
    assert res.exit_code != 0 and "GPU" in res.output
    assert not (tmp_path / "g.parquet").exists()
    res = runner.invoke(app, ["compress", src, str(tmp_path / "c.parquet"), "--device", "auto",
                              "--no-progress", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["device"] == "cpu"


# ---------------------------------------------------------------- GPU
def _random_blocks(rng):
    """A random column as the CPU encoder takes it, cut into blocks (some empty), a table
    each (trained on the block, or made of random symbols)."""
    n = int(rng.integers(0, 5000))
    alphabet = np.frombuffer(b"abcdefgh \0\xff/.:", np.uint8)
    sizes = np.where(rng.random(n) < 0.995, rng.integers(0, 40, n), rng.integers(5000, 30000, n))
    offsets = np.zeros(n + 1, np.int64)
    np.cumsum(sizes, out=offsets[1:])
    data = rng.choice(alphabet, int(offsets[-1])).astype(np.uint8)
    cuts = np.sort(rng.integers(0, n + 1, int(rng.integers(0, 5))))
    block_starts = np.concatenate([[0], cuts, [n]]).astype(np.int64)
    tables = []
    for lo, hi in zip(block_starts[:-1], block_starts[1:], strict=True):
        if hi > lo and rng.random() < 0.7:
            strings = [data[offsets[i]:offsets[i + 1]].tobytes() for i in range(lo, hi)]
            tables.append(fsstgpu.train(strings))
        else:
            tables.append(SymbolTable({bytes(rng.choice(alphabet, int(rng.integers(1, 9))))
                                       for _ in range(200)}))
    return tables, data, offsets, block_starts


@pytest.mark.gpu
def test_gpu_block_encoder_equals_the_cpu_encoder(fresh_rng):
    from fsstgpu.gpu.block_encode import GpuBlockEncoder

    rng = fresh_rng
    encoder = GpuBlockEncoder(fill=POISON)
    for _ in range(6):
        args = _random_blocks(rng)
        codes, offsets = encoder(*args)
        want_codes, want_offsets = native.encode_blocks(*args)
        assert codes.dtype == np.uint8 and offsets.dtype == np.int64
        assert codes.tobytes() == want_codes.tobytes()
        assert np.array_equal(offsets, want_offsets)


@pytest.mark.gpu
def test_gpu_block_encoder_refuses_what_the_cpu_encoder_refuses():
    from fsstgpu.gpu.block_encode import GpuBlockEncoder

    t = [SymbolTable([b"ab"])]
    data = np.frombuffer(b"abxab", np.uint8)
    for offsets, starts in [([0, 3, 6], [0, 2]), ([0, 4, 3], [0, 2]), ([0, 3, 5], [0, 1]),
                            ([0, 3, 5], [0, 1, 2])]:
        args = (t, data, np.array(offsets), np.array(starts))
        with pytest.raises(ValueError):
            native.encode_blocks(*args)
        with pytest.raises(ValueError):
            GpuBlockEncoder()(*args)


@pytest.mark.gpu
@pytest.mark.parametrize("fmt,codec", [("parquet", "zstd"), ("parquet", "none"),
                                       ("arrow", None)])
def test_gpu_compressed_file_is_the_cpus(tmp_path, fmt, codec, fresh_rng):
    src = _input(tmp_path, fresh_rng)
    suffix = ".parquet" if fmt == "parquet" else ".arrow"
    opts = {"parquet_codec": codec} if codec else {}
    cpu, gpu = str(tmp_path / f"cpu{suffix}"), str(tmp_path / f"gpu{suffix}")
    assert compress_file(src, cpu, device="cpu", **opts)["device"] == "cpu"
    assert compress_file(src, gpu, device="gpu", **opts)["device"] == "gpu"
    with open(cpu, "rb") as a, open(gpu, "rb") as b:
        assert a.read() == b.read()
    out = str(tmp_path / "out.parquet")
    decompress_file(gpu, out, device="gpu")
    assert pq.read_table(out).equals(pq.read_table(src))


@pytest.mark.gpu
def test_gpu_compressed_dbtext_file_is_the_cpus(tmp_path, dbtext_paths):
    columns = {p.stem.replace("-", "_"): load_lines(p) for p in dbtext_paths[:4]}
    rows = min(len(c) for c in columns.values())
    src = str(tmp_path / "db.parquet")
    pq.write_table(pa.table({k: c[:rows] for k, c in columns.items()}), src,
                   row_group_size=max(1, rows // 4))
    cpu, gpu = str(tmp_path / "cpu.parquet"), str(tmp_path / "gpu.parquet")
    compress_file(src, cpu, device="cpu")
    compress_file(src, gpu, device="gpu")
    with open(cpu, "rb") as a, open(gpu, "rb") as b:
        assert a.read() == b.read()
