"""Forked children (``os.fork``, multiprocessing's fork start method) keep working: the
Python worker pools of :mod:`fsstgpu.parallel` are new ones in the child.

Each child runs in a subprocess under a timeout and its own alarm: a hang fails the test."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork on this platform")


def _run(script: str, *args) -> str:
    res = subprocess.run([sys.executable, "-c", textwrap.dedent(script), *map(str, args)],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stdout + res.stderr
    return res.stdout


# A parent thread inside the shared pool's submit (holding its executor's lock) while the
# main thread forks: what CPython's fork hook makes likely (it waits for the executors'
# global lock, which such a thread lets go of before its executor's). Held here for sure.
FORK_DURING_SUBMIT = """
import os, signal, sys, threading
from fsstgpu.parallel import run_tasks, shared_pool

run_tasks(lambda k: None, 4)  # the pool's threads started
pool = shared_pool()
held, release = threading.Event(), threading.Event()

def inside_submit():
    with pool._shutdown_lock:
        held.set()
        release.wait()

t = threading.Thread(target=inside_submit)
t.start()
held.wait()
pid = os.fork()
if pid == 0:
    signal.alarm(10)  # a child that hangs is killed: the parent reports it
    done = []
    run_tasks(done.append, 8)
    fresh = shared_pool() is not pool
    os._exit(0 if sorted(done) == list(range(8)) and fresh else 3)
release.set()
t.join()
_, status = os.waitpid(pid, 0)
print(status)
"""


def test_a_child_forked_during_a_submit_still_runs_tasks():
    assert _run(FORK_DURING_SUBMIT).split() == ["0"]
