"""A process that read a file with fsst columns exits cleanly (no abort at interpreter exit).

Reading a Parquet row group with pyarrow's threads leaves a Python extension type referenced by
a pool thread after the read returns; if that thread drops it while the interpreter finalises,
it is made to exit while holding C++ state and the process aborts ("terminate called without an
active exception", exit 134). Once in about a hundred runs under load; the script below makes
the unlucky timing likely (every time, for some of the calls, when the reads use threads): one
CPU, pool threads that run only when the main thread sleeps, a main thread that sleeps holding
the GIL (so a pool thread starts waiting for it) and then lets go of the GIL only once
finalisation has begun (on the VM's pyarrow 26 a threaded read of the file as pyarrow opens it
did not abort in six runs of it: the timing is no proof). The second test checks the cause
itself: pyarrow's threads never read with a schema that holds the fsst type.
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


THREADED = """
import sys
import pyarrow.parquet as pq
from fsstgpu.formats import compress_file, decompress_file, inspect_file, read_table
from fsstgpu.formats.storage_footer import holds_extension_type

# Every read that hands work to pyarrow's threads, and whether the Arrow schema it reads
# with holds a Python-defined type (which those threads must never hold).
calls = []
real = pq.ParquetFile.read_row_group
def spy(self, i, columns=None, use_threads=True, use_pandas_metadata=False):
    if use_threads:
        calls.append(any(holds_extension_type(f.type) for f in self.schema_arrow))
    return real(self, i, columns=columns, use_threads=use_threads,
                use_pandas_metadata=use_pandas_metadata)
pq.ParquetFile.read_row_group = spy

path, out = sys.argv[1:3]
inspect_file(path)
read_table(path, device="cpu")
decompress_file(path, out + "-d.parquet", device="cpu")
compress_file(path, out + "-c.parquet")
if len(sys.argv) > 3:  # the control: a threaded read of the file as pyarrow opens it
    pq.ParquetFile(path).read_row_group(0, use_threads=True)
print(len(calls), sum(calls))
"""


def _threaded_reads(files, tmp_path, *control) -> tuple[int, int]:
    proc = subprocess.run([sys.executable, "-c", THREADED, str(files / "fsst.parquet"),
                           str(tmp_path / "out"), *control],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    threaded, with_python_types = map(int, proc.stdout.split())
    return threaded, with_python_types


def test_pyarrow_threads_never_read_fsst_types(files, tmp_path):
    # The root of the abort above: pyarrow's pool threads never hold the fsst type, because
    # a file with fsst columns is read through a footer of their storage types
    # (formats/storage_footer.py: the row group's columns then decode on those threads) or
    # with those threads off.
    threaded, with_python_types = _threaded_reads(files, tmp_path)
    assert threaded > 0 and with_python_types == 0, (threaded, with_python_types)


def test_the_spy_sees_a_threaded_read_of_fsst_types(files, tmp_path):
    # The check above can fail: a threaded read of the file as pyarrow opens it is counted.
    assert _threaded_reads(files, tmp_path, "control")[1] == 1
