"""GPU fuzz: thousands of corrupt columns through the GPU decode, each against the CPU twin.

Every case changes a valid column after the host checks (codes, split points, table ids: what the
kernel itself must check; in columns the encoder made, and in the same columns loaded from blobs,
whose string ends the GPU checks as well) and asserts that the GPU raises CorruptDataError
exactly when the CPU twin does, otherwise gives its bytes, and never writes past its output
(:func:`fsstgpu.testing.gpu_decode_matches_cpu`). ``FSSTGPU_GPU_FUZZ_CASES`` sets the number of
cases (default 10,000); ``FSSTGPU_FUZZ_REPORT`` names a JSON file for the counts.
"""

from __future__ import annotations

import json
import os

import numpy as np
import pyarrow as pa
import pytest

import fsstgpu
from fsstgpu import CompressedStringArray
from fsstgpu.testing import gpu_decode_matches_cpu


def _columns():
    rng = np.random.default_rng(31)
    words = ["http://", "www.", "example", ".com/", "\xff", "日本", "x" * 30, ""]
    cols = []
    for n, long in ((300, False), (2000, True)):
        vals = ["".join(rng.choice(words, size=rng.integers(0, 6))) for _ in range(n)]
        if long:
            vals += ["y" * 9000, "z" * 5000]
        cols.append(fsstgpu.compress(pa.array(vals), split_size=int(rng.integers(16, 600))))
    binary = [bytes(rng.integers(0, 256, int(rng.integers(0, 40)), dtype=np.uint8))
              for _ in range(800)]
    cols.append(fsstgpu.compress(pa.array(binary, pa.binary()), split_size=128))
    # ... and as a blob gives them back: not known good, so the GPU checks the string ends too
    return cols + [CompressedStringArray.from_bytes(c.to_bytes()) for c in cols]


def _mutation(rng, carr):
    """One random change of what the kernel reads."""
    kind = int(rng.integers(0, 5))
    nsplits = len(carr.split_table)
    if kind == 0 or nsplits < 2:
        codes = np.array(carr.codes)
        k = int(rng.integers(1, 6))
        pos = rng.integers(0, len(codes), k)
        codes[pos] = 255 if rng.random() < 0.3 else rng.integers(0, 256, k)
        return "codes", {"codes": codes}
    k = int(rng.integers(1, nsplits))
    if kind == 1:
        sc = np.array(carr.split_codes)
        sc[k] = int(rng.integers(-3, len(carr.codes) + 50))
        return "split_codes", {"split_codes": sc}
    if kind == 2:
        so = np.array(carr.split_out)
        so[k] += int(rng.integers(-9, 10)) or 1
        return "split_out", {"split_out": so}
    if kind == 3:
        st = np.array(carr.split_table)
        st[k - 1] = int(rng.integers(0, 70000)) % 65536
        return "split_table", {"split_table": st}
    sc = np.array(carr.split_codes)  # a split start moved by one code byte
    sc[k] = min(max(sc[k] + (1 if rng.random() < 0.5 else -1), 0), len(carr.codes))
    return "split_shift", {"split_codes": sc}


@pytest.mark.gpu
def test_gpu_fuzz_agrees_with_the_cpu_twin():
    cases = int(os.environ.get("FSSTGPU_GPU_FUZZ_CASES", "10000"))
    rng = np.random.default_rng(int(os.environ.get("FSSTGPU_FUZZ_SEED", "2026")))
    cols = _columns()
    counts = {"cases": 0, "both corrupt": 0, "both decoded, equal": 0}
    kinds = {}
    for _ in range(cases):
        carr = cols[int(rng.integers(0, len(cols)))]
        kind, change = _mutation(rng, carr)
        corrupt = gpu_decode_matches_cpu(carr, **change)  # asserts agreement
        counts["cases"] += 1
        counts["both corrupt" if corrupt else "both decoded, equal"] += 1
        kinds[kind] = kinds.get(kind, 0) + 1
    counts["by mutation"] = kinds
    report = os.environ.get("FSSTGPU_FUZZ_REPORT")
    if report:
        with open(report, "w") as f:
            json.dump(counts, f, indent=1)
    print(counts)
    assert counts["both corrupt"] > 0
