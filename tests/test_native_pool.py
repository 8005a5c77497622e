"""The compiled codec's thread pool (fsstgpu/csrc/parallel.h, parallel.cpp): workers started
once and parked between calls, never more than ``threads - 1`` of them at a call, the same
output whatever the thread count; clean exits, forks that do not hang, and a stress program
clean under ThreadSanitizer and AddressSanitizer/UBSan."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

import fsstgpu
from fsstgpu import native
from fsstgpu.training import train_table

ROOT = Path(fsstgpu.__file__).resolve().parent.parent
CSRC = ROOT / "fsstgpu" / "csrc"

# The pool under stress: concurrent callers, nesting, exceptions, random thread and task
# counts; with FORK defined, forks while another thread keeps the pool busy.
STRESS = r"""
#include "parallel.h"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

using fsstgpu_native::parallel_for;

static void check(bool ok, const char* what) {
    if (!ok) {
        std::fprintf(stderr, "FAILED: %s\n", what);
        std::exit(1);
    }
}

static uint64_t mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    return x ^ (x >> 29);
}

// each task writes its own slot with plain stores: the pool orders them before the return
static void one_call(std::mt19937_64& rng) {
    const int64_t ntasks = 1 + rng() % 70;
    const int threads = 1 + rng() % 9;
    const int work = rng() % 3 == 0 ? 2000 : 0;
    std::vector<uint64_t> out(ntasks, 0);
    std::vector<int> nested(ntasks, 0);
    parallel_for(ntasks, threads, [&](int64_t k) {
        uint64_t s = 0;
        for (int i = 0; i < work; ++i) s = mix(s + i);
        out[k] = mix(static_cast<uint64_t>(k)) + (s & 0);
        if (k % 7 == 0) {
            const auto me = std::this_thread::get_id();
            std::vector<int> inner(5, 0);
            parallel_for(5, threads, [&](int64_t i) {
                // a call that itself ran inline (1 thread, 1 task) may nest on the pool
                check(std::this_thread::get_id() == me || threads == 1 || ntasks == 1,
                      "a call from inside a pool task runs inline");
                inner[i] = 1;
            });
            for (int v : inner) nested[k] += v;
        }
    });
    for (int64_t k = 0; k < ntasks; ++k) {
        check(out[k] == mix(static_cast<uint64_t>(k)), "every task ran, its writes visible");
        check(nested[k] == (k % 7 == 0 ? 5 : 0), "nested tasks ran");
    }
}

static void exceptions(std::mt19937_64& rng) {
    for (int r = 0; r < 200; ++r) {
        const int64_t ntasks = 2 + rng() % 50, bad = rng() % ntasks;
        std::atomic<int64_t> ran{0};
        try {
            parallel_for(ntasks, 2 + rng() % 6, [&](int64_t k) {
                ran.fetch_add(1);
                if (k == bad || k == bad + 1) throw std::runtime_error("task " + std::to_string(k));
            });
            check(false, "a task's exception is rethrown on the caller");
        } catch (const std::runtime_error& e) {
            const std::string m = e.what();
            check(m == "task " + std::to_string(bad) || m == "task " + std::to_string(bad + 1),
                  "the exception rethrown is one a task threw");
        }
        check(ran.load() <= ntasks, "no task runs twice");
    }
}

int main() {
    std::vector<std::thread> callers;
    for (int c = 0; c < 4; ++c) {
        callers.emplace_back([c] {
            std::mt19937_64 rng(c);
            for (int r = 0; r < 1500; ++r) one_call(rng);
            exceptions(rng);
        });
    }
    for (auto& t : callers) t.join();
#ifdef FORK
    std::atomic<bool> stop{false};
    std::thread busy([&] {
        std::mt19937_64 rng(99);
        while (!stop.load()) one_call(rng);
    });
    for (int f = 0; f < 30; ++f) {
        const pid_t pid = fork();
        if (pid == 0) {
            alarm(20);  // a hang fails the test instead of stalling it
            std::mt19937_64 rng(f);
            for (int r = 0; r < 50; ++r) one_call(rng);
            _exit(0);
        }
        int status = 0;
        check(pid > 0 && waitpid(pid, &status, 0) == pid, "fork");
        check(WIFEXITED(status) && WEXITSTATUS(status) == 0, "a forked child finishes");
    }
    stop.store(true);
    busy.join();
#endif
    std::puts("ok");
    return 0;
}
"""


# ThreadSanitizer: the task counter, the join/leave accounting and the done signal; ASan and
# UBSan: the jobs on the callers' stacks. The fork run is built with UBSan only: a thread of
# the parent may hold ASan's allocator lock at the fork (its allocator has no fork handler),
# which hangs the child's first allocation, whatever the pool does.
@pytest.mark.parametrize("flags", [["-fsanitize=thread"], ["-fsanitize=address,undefined"],
                                   ["-fsanitize=undefined", "-DFORK"]],
                         ids=["tsan", "asan-ubsan", "fork-ubsan"])
def test_stress_program_is_clean_under_sanitizers(tmp_path, flags):
    cxx = os.environ.get("CXX", "g++")
    if shutil.which(cxx) is None:
        pytest.skip(f"no C++ compiler ({cxx})")
    src = tmp_path / "stress.cpp"
    src.write_text(STRESS)
    exe = tmp_path / "stress"
    build = subprocess.run([cxx, "-std=c++17", "-O1", "-g", "-pthread", *flags, f"-I{CSRC}",
                            str(src), str(CSRC / "parallel.cpp"), "-o", str(exe)],
                           capture_output=True, text=True)
    if build.returncode != 0 and "sanitize" in build.stderr:
        pytest.skip(f"{cxx} cannot build with {flags[0]}: {build.stderr[-300:]}")
    assert build.returncode == 0, build.stderr[-3000:]
    env = dict(os.environ, TSAN_OPTIONS="halt_on_error=1", UBSAN_OPTIONS="halt_on_error=1",
               ASAN_OPTIONS="detect_leaks=1")
    done = subprocess.run([str(exe)], capture_output=True, text=True, env=env, timeout=240)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-4000:]
    assert "WARNING" not in done.stderr and "runtime error" not in done.stderr, done.stderr


def _python(code: str, env: dict | None = None, timeout: float = 120):
    """Run ``code`` in a fresh interpreter that imports this checkout's fsstgpu."""
    env = dict(os.environ if env is None else env, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=timeout)


SETUP = """
import os, numpy as np
from fsstgpu import native
from fsstgpu.training import train_table

def pool_threads():
    names = []
    for t in os.listdir("/proc/self/task"):
        try:
            names.append(open(f"/proc/self/task/{t}/comm").read().strip())
        except OSError:  # gone
            pass
    return names.count("fsstgpu-pool")

rng = np.random.default_rng(0)
data = rng.integers(97, 105, 1 << 20, dtype=np.uint8)
offs = np.arange(0, len(data) + 1, 16, dtype=np.int64)
table = train_table(data, offs)
blocks = np.linspace(0, len(offs) - 1, 9).astype(np.int64)
"""


def test_workers_are_started_once_and_capped_by_the_thread_count():
    code = SETUP + """
counts = [pool_threads()]
for threads in (1, 3, 3, 2, 5, 3):
    for _ in range(50):
        native.encode_blocks([table] * 8, data, offs, blocks, threads)
    counts.append(pool_threads())
print(counts)
"""
    done = _python(code)
    assert done.returncode == 0, done.stderr[-3000:]
    # none before a threaded call, then threads - 1 for the most threads asked for, reused
    assert done.stdout.strip() == "[0, 0, 2, 2, 2, 4, 4]"


def test_fsstgpu_threads_still_caps_the_pool():
    code = SETUP + """
import fsstgpu
fsstgpu.compress([bytes(data[i:i + 40]) for i in range(0, 1 << 20, 40)])
native.encode_blocks([table] * 8, data, offs, blocks)  # default threads: the usable cores
from fsstgpu.parallel import usable_cores
print(pool_threads(), usable_cores())
"""
    for cap in (1, 2):
        done = _python(code, dict(os.environ, FSSTGPU_THREADS=str(cap)))
        assert done.returncode == 0, done.stderr[-3000:]
        workers, cores = map(int, done.stdout.split())
        assert cores <= cap and workers == cores - 1, (cap, done.stdout)


def test_same_codes_whatever_the_thread_count_and_concurrent_callers():
    rng = np.random.default_rng(3)
    data = rng.integers(97, 110, 3 << 20, dtype=np.uint8)
    offs = np.concatenate([[0], np.sort(rng.integers(0, len(data), 60_000)), [len(data)]])
    tables = [train_table(data, offs)] * 40
    blocks = np.linspace(0, len(offs) - 1, 41).astype(np.int64)
    want = native.encode_blocks(tables, data, offs, blocks, threads=1)
    for threads in (2, 3, 4, 7, 16, 300):
        got = native.encode_blocks(tables, data, offs, blocks, threads=threads)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1]), threads
    # several Python threads, each on the pool at once (as fsstgpu.parallel.run_tasks does)
    with ThreadPoolExecutor(4) as ex:
        done = list(ex.map(lambda t: native.encode_blocks(tables, data, offs, blocks, threads=t),
                           [2, 3, 5, 9] * 3))
    for codes, code_offs in done:
        assert np.array_equal(codes, want[0]) and np.array_equal(code_offs, want[1])


def test_python_exits_cleanly_after_using_the_pool():
    # parked workers neither keep the process alive nor crash its exit (no destructor of ours
    # runs at exit; the workers are never joined). Not tested: a daemon thread inside a codec
    # call at exit, which aborts with or without the pool (pybind11's gil_scoped_release
    # reacquires the GIL in a destructor, and Python 3.11 ends such a thread with pthread_exit)
    code = SETUP + """
import sys
native.encode_blocks([table] * 8, data, offs, blocks, int(sys.argv[1]))
print("done")
"""
    for run in range(8):
        done = subprocess.run([sys.executable, "-c", code, str(2 + run)], capture_output=True,
                              text=True, env=dict(os.environ, PYTHONPATH=str(ROOT)), cwd=ROOT,
                              timeout=60)
        assert done.returncode == 0 and done.stdout.strip() == "done", (run, done.stderr[-3000:])


def _encode_in_child(args):
    data, offs, blocks, threads = args
    table = train_table(data, offs)
    return native.encode_blocks([table] * (len(blocks) - 1), data, offs, blocks, threads)


@pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(),
                    reason="no fork on this platform")
def test_forked_children_get_a_pool_of_their_own():
    rng = np.random.default_rng(4)
    data = rng.integers(97, 105, 1 << 20, dtype=np.uint8)
    offs = np.arange(0, len(data) + 1, 20, dtype=np.int64)
    blocks = np.linspace(0, len(offs) - 1, 9).astype(np.int64)
    want = _encode_in_child((data, offs, blocks, 1))
    assert np.array_equal(_encode_in_child((data, offs, blocks, 3))[0], want[0])  # pool up
    stop = threading.Event()

    def busy():  # the parent's pool mid-call when it forks
        while not stop.is_set():
            _encode_in_child((data, offs, blocks, 3))

    hammer = threading.Thread(target=busy)
    hammer.start()
    try:
        with multiprocessing.get_context("fork").Pool(2) as pool:
            got = pool.map_async(_encode_in_child, [(data, offs, blocks, t) for t in
                                                    (2, 3, 4, 1, 3, 2)]).get(timeout=120)
    finally:
        stop.set()
        hammer.join()
    for codes, code_offs in got:
        assert np.array_equal(codes, want[0]) and np.array_equal(code_offs, want[1])


def test_a_large_column_gives_the_same_codes_on_any_thread_count():
    """Over 32 MB the threaded encode hands each chunk's region back once copied (madvise),
    while other chunks are still copied: the codes must not notice."""
    rng = np.random.default_rng(4)
    words = rng.integers(97, 123, (4096, 8), dtype=np.uint8)
    data = words[rng.integers(0, 4096, 5 << 20)].reshape(-1)[: 36 << 20].copy()
    data[rng.integers(0, len(data), 1 << 16)] = 0xFF  # escapes: regions fill unevenly
    offs = np.concatenate([[0], np.sort(rng.integers(0, len(data), 400_000)), [len(data)]])
    tables = [train_table(data[: 1 << 20], np.array([0, 1 << 20]))] * 30
    blocks = np.linspace(0, len(offs) - 1, 31).astype(np.int64)
    want = native.encode_blocks(tables, data, offs, blocks, threads=1)
    for threads in (2, 5):
        got = native.encode_blocks(tables, data, offs, blocks, threads=threads)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1]), threads
