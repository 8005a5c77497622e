"""A process that read a file with fsst columns exits cleanly (no abort at interpreter exit).

Reading a Parquet row group with pyarrow's threads leaves a Python extension type referenced by
a pool thread after the read returns; if that thread drops it while the interpreter finalises,
it is made to exit while holding C++ state and the process aborts ("terminate called without an
active exception", exit 134). Once in about a hundred runs under load; the script below makes
the unlucky timing likely (every time, for some of the calls, when the reads use threads): one
CPU, pool threads that run only when the main thread sleeps, a main thread that sleeps holding
the GIL (so a pool thread starts waiting for it) and then lets go of the GIL only once
finalisation has begun. The second test checks the cause itself: no pool thread is used.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pyarrow as pa
import pytest

from fsstgpu.datasets.generators import generate
from fsstgpu.formats import compress_file

pytestmark = pytest.mark.skipif(
    not (sys.platform.startswith("linux") and hasattr(os, "SCHED_IDLE")),
    reason="forces the thread timing with Linux scheduling")

SCRIPT = """
import ctypes, os, sys, threading, time
import pyarrow as pa, pyarrow.parquet as pq
from fsstgpu.formats import compress_file, decompress_file, inspect_file, read_table

os.sched_setaffinity(0, {0})  # one CPU: a thread runs only while the others wait
sys.setswitchinterval(30)     # a thread waiting for the GIL does not ask for it back
pq.read_table(sys.argv[1])    # starts pyarrow's pool (a plain file: nothing of ours in it)
for tid in map(int, os.listdir("/proc/self/task")):
    if tid != threading.get_native_id():  # pool threads run only when the main thread waits
        os.sched_setscheduler(tid, os.SCHED_IDLE, os.sched_param(0))

class SleepWhileFinalising:   # lets go of the GIL once the interpreter is finalising
    def __del__(self):
        time.sleep(0.05)

keep = SleepWhileFinalising()
what, path, out = sys.argv[2:5]
if what == "inspect":
    inspect_file(path)
elif what == "read":
    read_table(path, device="cpu")
elif what == "decompress":
    decompress_file(path, out, device="cpu")
else:
    compress_file(path, out)
ctypes.PyDLL(None).usleep(50_000)  # sleep holding the GIL: pool threads run, wait for it
"""


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("exit")
    table = pa.table({f"c{i}": generate("urls", 200, i) for i in range(8)})
    import pyarrow.parquet as pq

    pq.write_table(table, d / "plain.parquet")
    compress_file(d / "plain.parquet", d / "fsst.parquet")
    return d


@pytest.mark.parametrize("what", ["inspect", "read", "decompress", "compress"])
def test_no_abort_at_exit_after_reading_fsst_columns(files, tmp_path, what):
    # compress reads the fsst file too: its fsst columns pass through unchanged
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(files / "plain.parquet"), what,
         str(files / "fsst.parquet"), str(tmp_path / "out.parquet")],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])


THREADS = """
import os, sys, threading
import pyarrow as pa
pa.set_io_thread_count(1)  # reads may still go through one I/O thread: it holds bytes only

# Every thread Python starts, by native id. A Python thread that has been joined (the file
# writer's) leaves threading.enumerate() before its OS thread has exited: on a busy machine it
# is still in /proc/self/task then, and would pass for one of pyarrow's.
started = set()
def record(*_):
    started.add(threading.get_native_id())
    sys.settrace(None)  # recorded: no tracing of the thread's work
threading.settrace(record)
from fsstgpu.formats import compress_file, decompress_file, inspect_file, read_table

def native_threads():
    python = started | {t.native_id for t in threading.enumerate()}
    return [t for t in map(int, os.listdir("/proc/self/task")) if t not in python]

before = len(native_threads())
path, out = sys.argv[1:3]
inspect_file(path)
read_table(path, device="cpu")
decompress_file(path, out + "-d.parquet", device="cpu")
compress_file(path, out + "-c.parquet")
if len(sys.argv) > 3:  # the control: a read that does use pyarrow's pool must be seen
    import pyarrow.parquet as pq
    pq.ParquetFile(sys.argv[3]).read_row_group(0, use_threads=True)
print(len(native_threads()) - before)
"""


def _new_native_threads(files, tmp_path, *control) -> int:
    proc = subprocess.run([sys.executable, "-c", THREADS, str(files / "fsst.parquet"),
                           str(tmp_path / "out"), *map(str, control)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return int(proc.stdout)


def test_fsst_files_are_decoded_without_pyarrow_pool_threads(files, tmp_path):
    # The root of the abort above: pyarrow's CPU pool (started on first use) never runs a task
    # for a file with fsst columns, so no pool thread can hold its Python type at exit.
    assert _new_native_threads(files, tmp_path) <= 1  # the I/O thread, if reading used it


def test_the_thread_count_sees_pyarrow_pool_threads(files, tmp_path):
    # The check above can fail: one threaded read of a plain file (no extension type near the
    # pool: no abort at exit) starts the pool, at least one thread beside the I/O thread.
    assert _new_native_threads(files, tmp_path, files / "plain.parquet") >= 2
