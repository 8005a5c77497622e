"""Every CUDA source in fsstgpu.kernels compiles to PTX for sm_90 with nvcc (skipped without nvcc).

Runs on machines with the CUDA toolkit but no GPU, so a syntax error in a ``.cu`` file is caught
before any GPU time is spent.  A source alone only parses its templates; the launcher module of
the same name lists the instantiations it runs (``KERNEL_NAMES``), and those are compiled too.
"""

from __future__ import annotations

import importlib
import re
import shutil
import subprocess
from pathlib import Path

import pytest

import fsstgpu.kernels

SOURCES = sorted(Path(fsstgpu.kernels.__file__).resolve().parent.glob("*.cu"))


def _nvcc_ptx(source: Path, out: Path) -> subprocess.CompletedProcess:
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not on PATH")
    return subprocess.run(
        [nvcc, "-arch=sm_90", "--ptx", "-std=c++17", f"-I{SOURCES[0].parent}", "-o", str(out),
         str(source)],
        capture_output=True, text=True, timeout=300)


def test_sources_exist():
    names = {p.name for p in SOURCES}
    assert {"transpose.cu", "rotate.cu", "bitshuffle.cu", "bitplane.cu", "fsst_decode.cu"} <= names


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.name)
def test_nvcc_compiles_to_ptx(source, tmp_path):
    out = tmp_path / (source.stem + ".ptx")
    proc = _nvcc_ptx(source, out)
    assert proc.returncode == 0, f"nvcc failed on {source.name}:\n{proc.stderr}"
    assert out.stat().st_size > 0


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.name)
def test_nvcc_compiles_every_instantiation(source, tmp_path):
    launcher = importlib.import_module(f"fsstgpu.kernels.{source.stem}")
    names = getattr(launcher, "KERNEL_NAMES", ())
    if not names:
        # a launcher that compiles name expressions must list them here, or they go unchecked
        # (fsst_decode.py once called its list otherwise, and this test skipped it)
        assert "name_expressions" not in Path(launcher.__file__).read_text(encoding="utf-8"), (
            f"{source.stem}.py compiles template instantiations but names no KERNEL_NAMES")
        pytest.skip(f"{source.stem}.py launches no template instantiations")
    # taking each kernel's address instantiates it, as NVRTC's name expressions do
    unit = tmp_path / f"{source.stem}_all.cu"
    unit.write_text(f'#include "{source.name}"\nvoid* kernels[] = {{\n'
                    + ",\n".join(f"    (void*)&{n}" for n in names) + "\n};\n")
    out = tmp_path / f"{source.stem}_all.ptx"
    proc = _nvcc_ptx(unit, out)
    assert proc.returncode == 0, f"nvcc failed on {source.name}'s instantiations:\n{proc.stderr}"
    # the plain kernels of the source come out with or without the instantiations
    plain = tmp_path / f"{source.stem}.ptx"
    assert _nvcc_ptx(source, plain).returncode == 0
    assert _entries(out) == _entries(plain) + len(set(names))


def _entries(ptx: Path) -> int:
    return len(re.findall(r"^\.visible \.entry", ptx.read_text(), re.M))


#: a ``__global__`` template's name (what a launcher's KERNEL_NAMES instantiates)
_TEMPLATE_KERNEL = re.compile(r"template\s*<[^{;]*?>\s*__global__\s+(?:void\s+)?"
                              r"(?:__launch_bounds__\([^)]*\)\s*)?(?:void\s+)?(\w+)\s*\(", re.S)


def template_kernels(source: str) -> set[str]:
    """The names of the ``__global__`` function templates in CUDA ``source``."""
    return set(_TEMPLATE_KERNEL.findall(source))


def test_template_kernel_scan_finds_each_form():
    source = ("template <typename T> __global__ void a(T x) {}\n"
              "template <int K, class L>\n__global__ void __launch_bounds__(256) b(const L* p) {}\n"
              "template <int N> __device__ void not_a_kernel() {}\n"
              'extern "C" __global__ void plain() {}\n')
    assert template_kernels(source) == {"a", "b"}


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.name)
def test_every_template_kernel_is_instantiated_by_its_launcher(source):
    # without nvcc too: a template kernel its launcher does not list in KERNEL_NAMES is never
    # compiled by test_nvcc_compiles_every_instantiation (fsst_decode.py's were not, once)
    launcher = importlib.import_module(f"fsstgpu.kernels.{source.stem}")
    listed = {name.split("<")[0] for name in getattr(launcher, "KERNEL_NAMES", ())}
    assert template_kernels(source.read_text(encoding="utf-8")) <= listed
