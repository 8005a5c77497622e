"""Tests of fsstgpu.gpu.staged: columns whose codes go to the GPU as they are read.

The layout of staged columns must be the layout of the columns themselves, byte for byte (CPU);
their decode must equal the CPU decode, and a whole-file device read must hold a few row groups
in host memory, not the file (GPU). Inputs are real text (this machine's) cut into columns at
random, with random nulls (seed from os.urandom, named in failure messages).
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import fsstgpu
from fsstgpu.gpu.layout import HostBatch
from fsstgpu.gpu.staged import StagedColumn

sys.path.insert(0, str(Path(__file__).parent))
from seeds import fresh_seed  # noqa: E402


@pytest.fixture(scope="module")
def lines(machine_lines) -> list:
    return machine_lines


def _columns(rng, lines, sizes, type_=pa.string()):
    cols = []
    for n in sizes:
        picked = [lines[i] for i in rng.integers(0, len(lines), n)]
        if rng.random() < 0.5:  # a long string: its lengths need a wider type than the others'
            picked[: min(n, 1)] = ["x" * 70_000] * min(n, 1)
        mask = rng.random(n) < 0.1
        cols.append(pa.array([None if m else v for v, m in zip(picked, mask, strict=True)],
                             type_))
    return cols


@pytest.mark.parametrize("type_", [pa.string(), pa.large_binary()])
@pytest.mark.parametrize("sizes,joined", [([300, 0, 1200], None), ([300, 0, 1200], [3]),
                                          ([50, 700, 9, 400], [2, 2]), ([0], None)])
def test_staged_columns_lay_out_as_the_columns(lines, type_, sizes, joined):
    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    carrs = [fsstgpu.compress(c) for c in _columns(rng, lines, sizes, type_)]
    staged = [StagedColumn(c, codes=c.codes) for c in carrs]
    assert all(s.lengths.itemsize <= c.lengths.itemsize for s, c in zip(staged, carrs,
                                                                         strict=True))
    want = HostBatch(carrs, lengths="narrow", joined=joined)
    got = HostBatch(staged, lengths="narrow", joined=joined)
    assert got.sections == want.sections, f"seed {seed}"
    for name in want.sections:  # (the padding between sections is left as allocated)
        assert got.section(got.meta, name).tobytes() == want.section(want.meta, name).tobytes(), \
            f"seed {seed}: {name}"
    assert [(c.code_start, c.ncodes, c.out_start, c.offsets_byte) for c in got.outputs] == \
        [(c.code_start, c.ncodes, c.out_start, c.offsets_byte) for c in want.outputs], \
        f"seed {seed}"


def test_a_staged_column_keeps_no_host_codes_or_offsets(lines):
    carr = fsstgpu.compress(pa.array(lines[:500]))
    staged = StagedColumn(carr, codes=np.zeros(len(carr.codes), np.uint8))
    assert not hasattr(staged, "code_offsets")
    assert staged.lengths.dtype == np.uint16 or staged.lengths.dtype == np.uint8
    with pytest.raises(TypeError, match="no full check"):
        staged.validate(full=True)


def test_a_corrupt_column_is_refused_when_staged():
    carr = fsstgpu.compress(pa.array(["abc", "de"]))
    lengths = carr.lengths.copy()
    lengths[0] += 1  # its strings no longer sum to its output
    carr.lengths = lengths
    with pytest.raises(fsstgpu.CorruptDataError):
        StagedColumn(carr, codes=carr.codes)


def _whole(column) -> pa.Array:
    return column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column


@pytest.mark.gpu
@pytest.mark.parametrize("joined", [None, [2, 1]])
def test_gpu_staged_decode_matches_the_cpu(lines, joined):
    from fsstgpu.gpu.staged import decode_staged, stage

    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    cols = _columns(rng, lines, [int(n) for n in rng.integers(0, 3000, 3)])
    staged = [stage(fsstgpu.compress(c)) for c in cols]
    out = decode_staged(staged, joined=joined)
    want = cols if joined is None else [pa.chunked_array(cols[:2]), pa.chunked_array(cols[2:])]
    for got, expected in zip(out, want, strict=True):
        assert _whole(got.to_arrow()).equals(_whole(expected)), f"seed {seed}"
    assert all(s.codes is None for s in staged)
    with pytest.raises(ValueError, match="decoded once"):
        decode_staged(staged)


@pytest.mark.gpu
def test_gpu_staged_decode_names_a_corrupt_column(lines):
    from fsstgpu.gpu.staged import decode_staged, stage

    carrs = [fsstgpu.compress(pa.array(lines[:400])) for _ in range(3)]
    codes = carrs[1].codes.copy()
    codes[: len(codes) // 2] = 255  # escapes everywhere: outputs of the wrong lengths
    carrs[1].codes = codes
    with pytest.raises(fsstgpu.BatchDecodeError) as err:
        decode_staged([stage(c) for c in carrs])
    assert set(err.value.failed) == {1}


_PEAK = """
import os, sys
import pyarrow as pa
pool = pa.proxy_memory_pool(pa.default_memory_pool())
pa.set_memory_pool(pool)
import fsstgpu.formats.unit_reads as unit_reads
from fsstgpu.formats.device_reader import read_to_device
from fsstgpu.formats.rowgroups import Source
unit_reads.GROUP_ROWS = int(sys.argv[2])  # rows a reader checks at once (it holds them)
with Source(sys.argv[1]) as source:
    out = read_to_device(source, workers=2)
    rows = len(out["s"])
    del out
print(rows, pool.max_memory(), flush=True)
os._exit(0)  # the proxy pool must outlive every buffer it gave
"""


@pytest.mark.gpu
@pytest.mark.parametrize("group_rows,share", [(4000, 4), (8000, 2)])  # 1 or 2 row groups a run
def test_gpu_whole_file_read_holds_a_few_row_groups(tmp_path, lines, group_rows, share):
    import pyarrow.parquet as pq

    from fsstgpu.formats import compress_file

    rng = np.random.default_rng(fresh_seed())
    rows = 48 * 4000
    table = pa.table({"s": pa.array([lines[i] for i in rng.integers(0, len(lines), rows)])})
    pq.write_table(table, tmp_path / "p.parquet", row_group_size=4000)
    compress_file(tmp_path / "p.parquet", tmp_path / "c.parquet")
    codes = sum(len(fsstgpu.compress(c).codes) for c in table.column("s").chunks)
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(_PEAK),
                           str(tmp_path / "c.parquet"), str(group_rows)],
                          capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    got_rows, peak = map(int, done.stdout.split())
    assert got_rows == rows
    # 48 row groups, two readers: at most a handful in host memory at once (holding every
    # row group's chunks until the decode took more than the codes of the whole column); a
    # run of row groups checked as one is held with its joined copy
    assert peak < codes / share, (peak, codes, group_rows)

