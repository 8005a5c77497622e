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


CONTINUED_STREAM_READER = """
import os, signal, sys
from fsstgpu import FsstGpuError
from fsstgpu.formats import open_reader

reader = open_reader(sys.argv[1])
first = reader.read_next_batch()
pid = os.fork()
if pid == 0:
    signal.alarm(10)
    try:
        reader.read_all()  # would move the file offset the parent's stream reads from
    except FsstGpuError as err:
        print("child:", err, flush=True)
        os._exit(0 if "fork" in str(err) else 4)
    os._exit(5)
_, status = os.waitpid(pid, 0)
rows = first.num_rows + reader.read_all().num_rows
print(status, rows)
"""


@pytest.mark.parametrize("plain", [False, True])
def test_a_stream_reader_iterated_before_a_fork_refuses_in_the_child(tmp_path, plain):
    """An IPC stream is read sequentially from one descriptor, whose offset a forked child
    shares: a child going on with it left the parent's reader at the end (a plain stream
    read short without a word; fsstgpu's a false "truncated")."""
    import pyarrow.ipc as ipc

    table = pa.table({"s": [f"http://example.com/{k % 97}/{k}" for k in range(6000)]})
    with ipc.new_stream(tmp_path / "plain.arrows", table.schema) as w:
        for batch in table.to_batches(max_chunksize=500):
            w.write_batch(batch)
    path = tmp_path / "plain.arrows"
    if not plain:
        compress_file(path, tmp_path / "c.arrows")
        path = tmp_path / "c.arrows"
    out = _run(CONTINUED_STREAM_READER, path)
    assert out.splitlines()[-1].split() == ["0", "6000"], out
    assert "child:" in out


FORK_IN_PROGRESS = """
import os, signal, sys
import pyarrow.parquet as pq
from fsstgpu import FsstGpuError
from fsstgpu.formats import compress_file, read_table

src, dst, how = sys.argv[1], sys.argv[2], sys.argv[3]
child = []

def progress(**kw):
    if kw["units_done"] == 2 and not child:
        child.append(os.fork())
        if child[0] == 0:
            signal.alarm(10)
            if how == "exit":
                sys.exit(0)  # the child ends itself, unwinding through the parent's write

try:
    compress_file(src, dst, progress=progress)
except SystemExit:
    os._exit(0)
except FsstGpuError as err:  # the child going on
    print("child:", err, flush=True)
    os._exit(0 if child == [0] and "fork" in str(err) else 4)
if child == [0]:
    os._exit(5)  # the child wrote the parent's output
_, status = os.waitpid(child[0], 0)
print(status, read_table(dst, device="cpu").equals(pq.read_table(src)))
"""


@pytest.mark.parametrize("how", ["exit", "return"])
def test_a_child_forked_by_a_progress_callback_leaves_the_parents_write_alone(
        parquet_file, tmp_path, how):
    """A progress callback that forks: a child ending with sys.exit() removed the parent's
    temporary output (its compress_file then failed: FileNotFoundError); a child returning
    into the rewrite waited for the parent's threads for good."""
    src = parquet_file.parent / "plain.parquet"
    out = _run(FORK_IN_PROGRESS, src, tmp_path / "out.parquet", how)
    assert out.splitlines()[-1].split() == ["0", "True"], out
