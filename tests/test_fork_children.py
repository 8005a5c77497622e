"""Forked children (``os.fork``, multiprocessing's fork start method) keep working: the
Python worker pools of :mod:`fsstgpu.parallel` are new ones in the child, and a reader
iterated in the parent says it cannot go on in the child instead of waiting for the parent's
reading threads, which the child does not have.

Each child runs in a subprocess under a timeout and its own alarm: a hang fails the test."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fsstgpu.formats import compress_file

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


CONTINUED_READER = """
import os, signal, sys
from fsstgpu import FsstGpuError
from fsstgpu.formats import open_reader

reader = open_reader(sys.argv[1])
first = reader.read_next_batch()  # the reading threads have work queued now
pid = os.fork()
if pid == 0:
    signal.alarm(10)
    try:
        reader.read_all()
    except FsstGpuError as err:
        print("child:", err, flush=True)
        os._exit(0 if "fork" in str(err) else 4)
    os._exit(5)
_, status = os.waitpid(pid, 0)
rows = first.num_rows + reader.read_all().num_rows  # the parent's reader goes on
print(status, rows)
"""

FRESH_READER_IN_CHILD = """
import os, signal, sys
from fsstgpu.formats import open_reader, read_table

read_table(sys.argv[1], device="cpu")  # the parent has read it too
pid = os.fork()
if pid == 0:
    signal.alarm(10)
    rows = sum(b.num_rows for b in open_reader(sys.argv[1]))
    os._exit(0 if rows == int(sys.argv[2]) else 6)
_, status = os.waitpid(pid, 0)
print(status)
"""


@pytest.fixture(scope="module")
def parquet_file(tmp_path_factory):
    d = tmp_path_factory.mktemp("fork")
    table = pa.table({"s": [f"http://example.com/{k % 97}/{k}" for k in range(6000)]})
    pq.write_table(table, d / "plain.parquet", row_group_size=500)
    compress_file(d / "plain.parquet", d / "c.parquet")
    return d / "c.parquet"


def test_a_reader_iterated_before_a_fork_refuses_to_go_on_in_the_child(parquet_file):
    out = _run(CONTINUED_READER, parquet_file)
    assert out.splitlines()[-1].split() == ["0", "6000"], out
    assert "child:" in out


def test_a_reader_opened_in_the_child_reads(parquet_file):
    assert _run(FRESH_READER_IN_CHILD, parquet_file, 6000).split() == ["0"]
