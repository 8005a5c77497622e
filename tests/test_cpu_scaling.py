"""The CPU scaling benchmark (benchmarks/cpu_scaling.py, run from the checkout) runs and
reports one row per core count, with its yardsticks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_cpu_scaling_runs_and_its_examples_hold(tmp_path):
    lines = [f"https://example.com/{i % 331}/item?id={i}" for i in range(30_000)]
    text = tmp_path / "urls.txt"
    text.write_text("\n".join(lines) + "\n")
    out = subprocess.run([sys.executable, "-m", "benchmarks.cpu_scaling", str(text),
                          "--threads", "1", "--repeats", "1", "--json"], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout
    (row,) = json.loads(out)
    assert row["cores"] == 1 and row["string_bytes"] == sum(len(s) for s in lines)
    assert row["ratio"] > 2 and row["lz4_ratio"] > 1 and row["zstd_ratio"] > 1
    assert min(v for k, v in row.items() if k.endswith("MB_s")) > 0
    doc = subprocess.run([sys.executable, "-m", "doctest", "benchmarks/cpu_scaling.py"],
                         cwd=ROOT, capture_output=True, text=True)
    assert doc.returncode == 0, doc.stdout + doc.stderr


def test_a_failed_core_count_says_why():
    """A worker's error reaches the caller (it was a bare CalledProcessError, "returned
    non-zero exit status 1", the worker's traceback captured and dropped)."""
    import pyarrow as pa
    import pytest

    sys.path.insert(0, str(ROOT))
    try:
        from benchmarks.cpu_scaling import cpu_scaling
    finally:
        sys.path.remove(str(ROOT))
    with pytest.raises(RuntimeError, match="1-core run failed.*ZeroDivisionError"):
        cpu_scaling(pa.array([""] * 3), threads=1, repeats=1)  # no bytes: 0 / 0 MB/s
