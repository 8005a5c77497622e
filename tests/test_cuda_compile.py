"""Every CUDA source in fsstgpu.kernels compiles to PTX for sm_90 with nvcc (skipped without nvcc).

Runs on machines with the CUDA toolkit but no GPU, so a syntax error in a ``.cu`` file is caught
before any GPU time is spent.  Templates are only parsed here; the GPU tests instantiate them.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

import fsstgpu.kernels

SOURCES = sorted(Path(fsstgpu.kernels.__file__).resolve().parent.glob("*.cu"))


def test_sources_exist():
    names = {p.name for p in SOURCES}
    assert {"rotate.cu", "bitplane.cu"} <= names


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.name)
def test_nvcc_compiles_to_ptx(source, tmp_path):
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not on PATH")
    out = tmp_path / (source.stem + ".ptx")
    proc = subprocess.run(
        [nvcc, "-arch=sm_90", "--ptx", "-std=c++17", f"-I{source.parent}", "-o", str(out),
         str(source)],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"nvcc failed on {source.name}:\n{proc.stderr}"
    assert out.stat().st_size > 0
