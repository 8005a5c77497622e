"""The checkout's benchmarks (not installed): the CPU parts, and the GPU benchmark's inputs.

The GPU benchmark times columns built by :mod:`benchmarks.columns`; these tests check that they
are valid columns that decode to the strings they stand for. The CLI runs the CPU benchmark
(tests/test_cli.py).
"""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

import fsstgpu
from fsstgpu.datasets import generate

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture
def load(monkeypatch):
    """Import ``benchmarks.<name>`` from the checkout."""
    monkeypatch.syspath_prepend(str(REPO))
    return lambda name: importlib.import_module(f"benchmarks.{name}")


def _strings(carr):
    return fsstgpu.decompress(carr, device="cpu").to_pylist()


def test_concat_is_a_valid_column(load):
    columns = load("columns")
    parts = [pa.array(["http://a.example/1", None, ""] * 50),
             generate("null_heavy", 300, 1),
             generate("long_strings", 20, 2, long_length=20_000),  # cuts inside strings
             pa.chunked_array([generate("emails", 200, 3), generate("urls", 100, 4)])]
    carrs = [fsstgpu.compress(p.cast(pa.large_string()), split_size=1024) for p in parts]
    order = [0, 1, 1, 2, 3, 0]
    joined = columns.concat([carrs[k] for k in order])
    assert not joined.has_code_offsets  # derived on first use (the GPU path needs none)
    joined.validate(full=True)  # every code walked, every split start checked
    expected = [s for k in order for s in parts[k].to_pylist()]
    assert _strings(joined) == expected
    assert joined.null_count == sum(carrs[k].null_count for k in order)
    # parts 1, 1 share their table: one block; part 3 (chunked) brings two
    assert len(joined.tables) == 1 + 1 + 1 + 2 + 1


def test_replicate_keeps_one_table(load):
    columns = load("columns")
    col = generate("log_lines", 500, 5)
    carr = fsstgpu.compress(col)
    big = columns.replicate(carr, 40)
    big.validate(full=True)
    assert len(big.tables) == 1 and big.block_starts.tolist() == [0, 40 * len(col)]
    assert big.uncompressed_bytes == 40 * carr.uncompressed_bytes
    assert len(big.split_table) == 40 * len(carr.split_table)
    assert _strings(big) == col.to_pylist() * 40


def test_concat_refuses_mixed_types_and_nothing(load):
    columns = load("columns")
    a = fsstgpu.compress(pa.array(["x"]))
    b = fsstgpu.compress(pa.array([b"x"], pa.binary()))
    with pytest.raises(TypeError, match="different types"):
        columns.concat([a, b])
    with pytest.raises(ValueError):
        columns.concat([])
    with pytest.raises(ValueError):
        columns.replicate(a, 0)


def test_cpu_bench_rows(load, tmp_path):
    cpu = load("cpu")
    path = tmp_path / "crlf.txt"
    path.write_bytes(b"".join(b"line %d\r\n" % i for i in range(3000)))
    rows = cpu.run_cpu_bench([path], repeats=1)
    assert [r["name"] for r in rows] == ["crlf.txt", "TOTAL"]
    row = rows[0]
    assert row["strings"] == 3000 and row["bytes"] == path.stat().st_size - 3000  # \r kept
    assert row["ratio"] > 1 and np.isfinite(row["lz4_decompress_mbs"])
    assert cpu.format_cpu_bench(rows).row_count == 2


# ids name the module in full: a bare "gpu" id would make the item look GPU-marked
@pytest.mark.parametrize("name", ["columns", "cpu", "gpu"],
                         ids=lambda n: f"benchmarks.{n}")
def test_docstring_examples(load, name):
    if name == "gpu":
        pytest.importorskip("benchmarks.timing", reason="benchmarks/timing.py not in this tree")
    module = load(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0
