"""The compiled codec under ThreadSanitizer, driven from C++ with no Python in the process.

``tests/tsan_driver.cpp`` builds a column from the dbtext corpus and runs every entry point that
takes a thread count (encode, the walks, split planning, the decoder and its checks, the column
checks, the layout loops, block planning, a file's column chunks planned) at several thread
counts against the one-thread result, then corrupt inputs whose first error must not depend on
the thread count, then several callers sharing the pool at once. It found the OFFSETS walk's
race fixed in session 62 (RELIABILITY.md). Opt-in: the TSan build of the codec and both runs
took 6.5 minutes on two idle cores, so ``FSSTGPU_TSAN_TESTS=1`` runs them; the quick self-test
(a deliberate race between pool tasks) shows the build sees races at all.

The build leaves out the Python bindings (``bind_*.cpp``, ``module.cpp``): whatever runs on
threads must live in the plain sources, which the last (always run) test checks.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

import fsstgpu
from fsstgpu.datasets import dbtext_dir

opt_in = pytest.mark.skipif(
    os.environ.get("FSSTGPU_TSAN_TESTS") != "1",
    reason="about 6 minutes of TSan build and runs: set FSSTGPU_TSAN_TESTS=1 to run")

HERE = Path(__file__).resolve().parent
CSRC = Path(fsstgpu.__file__).resolve().parent / "csrc"


@pytest.fixture(scope="module")
def driver(tmp_path_factory) -> Path:
    """The driver and every codec source but the Python bindings, built with -fsanitize=thread
    (one compiler process a source). FSSTGPU_TASK_SIZE_DIVISOR (parallel.h) shrinks the input
    sizes at which loops go parallel 64-fold: the corpus column's 1.4 M strings are below
    2**21, so its loops over the strings would otherwise stay on one thread (the driver checks
    that each takes its parallel path)."""
    cxx = os.environ.get("CXX", "g++")
    if shutil.which(cxx) is None:
        pytest.skip(f"no C++ compiler ({cxx}) for the TSan build")
    out = tmp_path_factory.mktemp("tsan")
    flags = ["-std=c++17", "-O1", "-g", "-pthread", "-fsanitize=thread",
             "-fno-omit-frame-pointer", "-DFSSTGPU_TASK_SIZE_DIVISOR=64", f"-I{CSRC}"]
    sources = [p for p in sorted(CSRC.glob("*.cpp"))
               if p.stem != "module" and not p.stem.startswith("bind_")]
    sources.append(HERE / "tsan_driver.cpp")
    jobs = [subprocess.Popen([cxx, *flags, "-c", str(src), "-o", str(out / f"{src.stem}.o")],
                             stderr=subprocess.PIPE, text=True) for src in sources]
    for job in jobs:
        assert job.wait() == 0, job.stderr.read()
    subprocess.run([cxx, *flags, *map(str, sorted(out.glob("*.o"))), "-o", str(out / "driver")],
                   check=True)
    return out / "driver"


def _run(driver: Path, phases: str) -> subprocess.CompletedProcess:
    corpus = dbtext_dir()
    if corpus is None:
        pytest.skip("the dbtext corpus is not here (FSSTGPU_DBTEXT)")
    env = dict(os.environ, TSAN_OPTIONS="halt_on_error=0 second_deadlock_stack=1")
    return subprocess.run([str(driver), str(corpus), "1", phases], capture_output=True,
                          text=True, env=env, timeout=1800)


@opt_in
def test_tsan_sees_a_race_between_pool_tasks(driver):
    done = _run(driver, "selftest")
    assert "WARNING: ThreadSanitizer: data race" in done.stderr, done.stderr[-2000:]


@opt_in
def test_the_codec_is_race_free_under_tsan(driver):
    done = _run(driver, "")
    assert done.returncode == 0 and "ok (0 failures)" in done.stdout, done.stdout[-2000:]
    assert "WARNING: ThreadSanitizer" not in done.stderr, done.stderr[-4000:]


def test_the_bindings_start_no_threads():
    """The TSan build has no bind_*.cpp: work they ran on threads (bind_plan.cpp sorted the
    plan's tables with parallel_for until pack_tables took that over) or state they kept for
    threads would go unchecked. Only the interpreter's own (the importing thread, bind_arrays.h)
    may stay in a binding."""
    threaded = ("parallel_for", "std::thread", "std::async", "std::mutex", "std::atomic",
                "thread_local", "pool::")
    for src in sorted(CSRC.glob("bind_*.cpp")) + [CSRC / "module.cpp"]:
        text = src.read_text()
        found = [word for word in threaded if word in text]
        assert not found, f"{src.name} runs {found}: move it into a source the driver builds"
