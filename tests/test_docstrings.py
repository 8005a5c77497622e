"""Every docstring example of the installed package runs: one test per docstring with examples.

Examples run on a CPU-only machine; GPU-only ones say ``# doctest: +SKIP`` and are collected but
not run. Options: ELLIPSIS and NORMALIZE_WHITESPACE.
"""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import pkgutil
import re

import pytest

import fsstgpu

#: the subpackages that pyproject.toml maps into fsstgpu
SUBPACKAGES = ("kernels", "formats", "cli", "datasets")
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
#: the examples that run (not +SKIP) must be at least this many: the docs show the API at work
MIN_RUNNING = 100


def package_modules() -> list[str]:
    """fsstgpu and every module of it and of the subpackages pyproject.toml maps into it (they
    live outside ``fsstgpu.__path__``, so they are walked by name)."""
    names = ["fsstgpu"] + [m.name for m in pkgutil.walk_packages(fsstgpu.__path__, "fsstgpu.")]
    for sub in SUBPACKAGES:
        package = importlib.import_module(f"fsstgpu.{sub}")
        names.append(package.__name__)
        names += [m.name for m in pkgutil.walk_packages(package.__path__, f"{package.__name__}.")]
    return names


#: optional dependencies: a module that needs one is skipped where it is not installed
OPTIONAL = {"numcodecs", "zarr", "cudf", "pylibcudf", "nanoarrow"}


def _docstrings() -> list[doctest.DocTest]:
    finder = doctest.DocTestFinder()
    found = []
    for name in package_modules():
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name not in OPTIONAL:
                raise
            continue
        found += [t for t in finder.find(module, name) if t.examples]
    return sorted(found, key=lambda t: t.name)


DOCSTRINGS = _docstrings()


@pytest.mark.parametrize("test", DOCSTRINGS, ids=[t.name for t in DOCSTRINGS])
def test_docstring_examples(test):
    report = []
    result = doctest.DocTestRunner(optionflags=FLAGS).run(test, out=report.append)
    assert result.failed == 0, "".join(report)


def test_enough_examples_run():
    running = sum(not e.options.get(doctest.SKIP) for t in DOCSTRINGS for e in t.examples)
    assert running >= MIN_RUNNING, f"{running} examples run"


def test_every_subpackage_and_core_module_is_collected():
    names = package_modules()
    for expected in ("fsstgpu.api", "fsstgpu.columns", "fsstgpu.gpu.decode",
                     "fsstgpu.integrations.numcodecs", "fsstgpu.kernels.fsst_decode",
                     "fsstgpu.formats.blob", "fsstgpu.cli.app", "fsstgpu.datasets.loaders"):
        assert expected in names
    assert not [n for n in names if n.split(".")[1:2] in (["tests"], ["benchmarks"], ["fsstgpu"])]
    assert len(names) == len(set(names))


def _unskipped(test: doctest.DocTest) -> doctest.DocTest:
    """``test`` with its ``+SKIP`` examples made to run, on a copy of its globals taken now
    (a run clears a test's globals)."""
    examples = [doctest.Example(e.source, e.want, e.exc_msg, e.lineno, e.indent,
                                {k: v for k, v in e.options.items() if k != doctest.SKIP})
                for e in test.examples]
    return doctest.DocTest(examples, dict(test.globs), test.name, test.filename, test.lineno,
                           test.docstring)


#: the docstrings with examples skipped on a CPU (GPU ones, mostly), to run on a GPU
GPU_DOCSTRINGS = [_unskipped(t) for t in DOCSTRINGS
                  if any(e.options.get(doctest.SKIP) for e in t.examples)]
#: skipped examples that need more than one GPU with CuPy (why, by docstring)
NOT_ON_ONE_GPU = {
    "fsstgpu.integrations.dask": "a Dask cluster (distributed)",
    "fsstgpu.integrations.dask.local_client": "a Dask cluster (distributed)",
    "fsstgpu.integrations.dask.read_dataset_to_gpus": "a Dask cluster and a dataset folder",
    "fsstgpu.kernels.driver.launch_kept": "a kernel of the caller's (the example names one)",
}


def _absent_optional_imports(test: doctest.DocTest) -> list[str]:
    """The optional dependencies (:data:`OPTIONAL`) ``test``'s examples import that are absent."""
    named = {m.group(1) for e in test.examples
             for m in re.finditer(r"^\s*(?:import|from)\s+(\w+)", e.source, re.MULTILINE)}
    return sorted(n for n in named & OPTIONAL if importlib.util.find_spec(n) is None)


def test_absent_optional_imports_are_found():
    example = doctest.Example("import nanoarrow.device\nfrom fsstgpu import x\n", "")
    found = _absent_optional_imports(doctest.DocTest([example], {}, "t", None, 0, None))
    assert found == ([] if importlib.util.find_spec("nanoarrow") else ["nanoarrow"])


@pytest.mark.gpu
@pytest.mark.parametrize("test", GPU_DOCSTRINGS, ids=[t.name for t in GPU_DOCSTRINGS])
def test_gpu_docstring_examples(test):
    """The examples a CPU skips, run where there is a GPU: the docs show the GPU API at work."""
    if test.name in NOT_ON_ONE_GPU:
        pytest.skip(f"needs {NOT_ON_ONE_GPU[test.name]}")
    for missing in _absent_optional_imports(test):
        pytest.skip(f"its example imports {missing}, which is not installed here")
    report = []
    result = doctest.DocTestRunner(optionflags=FLAGS).run(test, out=report.append)
    assert result.failed == 0, "".join(report)
