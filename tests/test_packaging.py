"""Packaging and style: one import namespace, sources that compile, ruff clean."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("name", ["kernels", "cli", "formats", "datasets"])
def test_no_top_level_module(name, tmp_path, monkeypatch):
    # Run from an empty folder so the current directory cannot hide a stray top-level module.
    monkeypatch.chdir(tmp_path)
    code = f"import importlib.util, sys; sys.exit(importlib.util.find_spec({name!r}) is not None)"
    assert subprocess.run([sys.executable, "-c", code], cwd=tmp_path).returncode == 0


@pytest.mark.parametrize("name", ["kernels", "cli", "formats", "datasets"])
def test_subpackage_in_namespace(name):
    assert importlib.util.find_spec(f"fsstgpu.{name}") is not None


def test_cupy_not_imported_by_default():
    code = "import sys, fsstgpu; sys.exit('cupy' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_ruff_clean():
    ruff = shutil.which("ruff") or str(Path(sys.executable).with_name("ruff"))
    if not Path(ruff).exists():
        pytest.skip("ruff not installed")
    result = subprocess.run([ruff, "check", str(REPO)], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """A wheel built from a copy of the checkout's sources (a build/ folder left in the checkout
    by an earlier build would ship modules deleted since)."""
    src = tmp_path_factory.mktemp("src") / "fsstgpu"
    shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(
        ".*", "build", "dist", "*.egg-info", "__pycache__"))
    out = tmp_path_factory.mktemp("wheel")
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(src)],
        capture_output=True, text=True,
    )
    if result.returncode != 0 and "No matching distribution" in result.stderr:
        pytest.skip("no package registry to fetch the build backend from")
    assert result.returncode == 0, result.stderr
    (path,) = out.glob("fsstgpu-*.whl")
    return path


def test_wheel_ships_package_data(wheel):
    """A built wheel holds the CUDA sources, format specs and sample data, under fsstgpu/ only
    (no benchmarks/)."""
    import zipfile

    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top == {"fsstgpu"}
    for expected in ("fsstgpu/kernels/loader.py", "fsstgpu/kernels/fsst_decode.py",
                     "fsstgpu/cli/app.py",
                     "fsstgpu/formats/blob.md", "fsstgpu/datasets/dbtext.py"):
        assert expected in names
    assert any(n.startswith("fsstgpu/kernels/") and n.endswith(".cu") for n in names)
    assert any(n.startswith("fsstgpu/datasets/sample/") for n in names)


def test_installed_bench_asks_for_a_checkout(wheel, tmp_path):
    """Without the checkout's benchmarks/ folder, `fsstgpu bench` says so (usage error, 2)."""
    site = tmp_path / "site"
    result = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps",
                             "--target", str(site), str(wheel)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    text = tmp_path / "lines.txt"
    text.write_text("a\nb\n")
    env = {**os.environ, "PYTHONPATH": str(site)}
    code = "import sys; from fsstgpu.cli.app import main; sys.argv[0] = 'fsstgpu'; main()"
    result = subprocess.run([sys.executable, "-c", code, "bench", str(text)], cwd=tmp_path,
                            env=env, capture_output=True, text=True)
    assert result.returncode == 2, result.stderr
    assert "source checkout" in result.stderr and "Traceback" not in result.stderr
