"""``import fsstgpu`` in one thread while another imports one of its modules (a numcodecs worker
loading the "fsst" codec, say): both must succeed. Before the modules stopped waiting for the
package's own import (``tests/test_layers.py``) and the package loaded its subpackages first,
29 of 50 fresh interpreters failed this with "cannot import name ... from partially initialized
module" or ``KeyError('fsstgpu')``, and 10 to 11 of 12 for ``formats.blob`` / ``gpu.decode``.

Not covered, as CPython's own: threads that start importing different parts of a package at the
same instant, before its subpackages are loaded (the second thread then holds its module's lock
while it imports a missing parent through the package, which needs that module). The second
thread here starts once ``fsstgpu/__init__.py`` has loaded some of them.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

CHILD = r"""
import importlib, sys, threading, time
delay, target = float(sys.argv[1]), sys.argv[2]
import numpy, pyarrow  # loaded first: the race is inside fsstgpu
errors = []

def run(fn):
    try:
        fn()
    except BaseException as exc:
        errors.append(repr(exc)[:200])

def later():
    # from when fsstgpu/__init__.py has loaded formats and gpu and begun kernels (its first
    # microseconds are the same-instant case below; a fixed delay alone could fall into them
    # under load). Before the fix that was halfway through the package: still a deadlock.
    while "fsstgpu.kernels" not in sys.modules:
        time.sleep(0.0001)
    time.sleep(delay)
    importlib.import_module(target)

threads = [threading.Thread(target=run, args=(lambda: importlib.import_module("fsstgpu"),)),
           threading.Thread(target=run, args=(later,))]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(errors or "ok")
"""


@pytest.mark.parametrize("target", ["fsstgpu.columns", "fsstgpu.formats.blob", "fsstgpu.gpu.decode",
                                    "fsstgpu.integrations.numcodecs"])
def test_import_fsstgpu_while_another_thread_imports_a_module(target):
    if target.endswith("numcodecs"):
        pytest.importorskip("numcodecs", reason="numcodecs not installed")
    for delay in (0.0, 0.002, 0.005, 0.01, 0.02):
        out = subprocess.run([sys.executable, "-c", CHILD, str(delay), target],
                             capture_output=True, text=True, timeout=120)
        assert out.stdout.strip() == "ok", (delay, out.stdout[-500:], out.stderr[-500:])
