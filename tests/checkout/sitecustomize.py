"""Python started by the tests imports this checkout's fsstgpu, laid out as pyproject.toml maps it.

The package's subpackages live in top-level folders of the checkout (``kernels/``, ``formats/``,
``cli/``, ``datasets/``), which ``[tool.setuptools.package-dir]`` maps to ``fsstgpu.kernels`` and so
on. An install (a wheel, or ``pip install -e .`` of this checkout) knows the mapping; a checkout
tested with another checkout's editable install (a git worktree, say) would import this
checkout's ``fsstgpu`` from the current folder and the other one's subpackages. The root
``conftest.py`` therefore installs :class:`CheckoutFinder` in the pytest process and puts this
folder on ``PYTHONPATH``, so that the Python subprocesses the tests start run this file (Python
imports ``sitecustomize`` at start-up) and find the same modules. Only the mapped packages are
found here: ``fsstgpu.fsstgpu`` or a top-level ``kernels`` are not.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python 3.10: pytest depends on tomli there
    import tomli as tomllib

#: the checkout's root (this file is ``tests/checkout/sitecustomize.py``)
ROOT = Path(__file__).resolve().parents[2]


def package_dirs(root: Path = ROOT) -> dict[str, Path]:
    """The packages pyproject.toml installs and the checkout folder of each."""
    with open(root / "pyproject.toml", "rb") as f:
        mapping = tomllib.load(f)["tool"]["setuptools"]["package-dir"]
    return {name: root / folder for name, folder in mapping.items()}


class CheckoutFinder(importlib.abc.MetaPathFinder):
    """Finds each mapped package in its checkout folder, as setuptools' editable finder does for
    its own checkout, and their modules in their folders. A module of a mapped package that this
    checkout lacks but another finder has (the compiled ``fsstgpu._native`` not built here, found
    in the editable install's checkout) is refused: the tests would run another tree's code."""

    #: marks every copy of this finder: conftest.py runs this file as another module than the
    #: ``sitecustomize`` Python ran at start-up, so ``isinstance`` misses the other copy's finder
    #: (each would then ask the other, without end)
    checkout_finder = True

    def __init__(self, packages: dict[str, Path]):
        self.packages = packages

    def find_spec(self, fullname, path=None, target=None):
        folder = self.packages.get(fullname)
        if folder is not None:
            return importlib.util.spec_from_file_location(
                fullname, folder / "__init__.py", submodule_search_locations=[str(folder)])
        parent = self.packages.get(fullname.rpartition(".")[0])
        if parent is None:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, [str(parent)])
        if spec is None:
            elsewhere = [f.find_spec(fullname, path, target) for f in sys.meta_path
                         if not getattr(f, "checkout_finder", False) and hasattr(f, "find_spec")]
            found = [s.origin for s in elsewhere if s is not None]
            if found:
                raise ModuleNotFoundError(
                    f"{fullname} is not in {parent} (another tree has it: {found[0]}; build this "
                    "checkout's extension with `python setup.py build_ext --inplace`)",
                    name=fullname)
        return spec


def install(root: Path = ROOT) -> None:
    """Put the finder of ``root``'s packages first on ``sys.meta_path`` (once)."""
    if not any(getattr(f, "checkout_finder", False) for f in sys.meta_path):
        sys.meta_path.insert(0, CheckoutFinder(package_dirs(root)))


install()
