"""How the package's numba kernels are called: one compiled signature each, and a notice.

numba compiles a kernel once per distinct argument typing, and a NumPy array's typing includes
whether it is writeable: the same kernel called with an Arrow buffer (read-only) and with a
fresh array compiles twice, and the second compile can land inside a timed call. So every
kernel's inputs go through :func:`readonly` (a read-only contiguous view of a fixed dtype),
its outputs are fresh writable arrays, and its integer scalars are Python ints (typed int64).

Compiling is slow (seconds) and happens on the first call in a fresh environment; numba caches
the result on disk (``cache=True``). While anything of this package compiles, one line says so
on stderr, whether or not that is a terminal.

>>> import numpy as np
>>> from fsstgpu.jit import readonly
>>> v = readonly([1, 2, 3], np.int64)
>>> v.flags.writeable, v.dtype.name
(False, 'int64')
"""

from __future__ import annotations

import functools
import sys

import numpy as np
from numba.core import event

#: what the notice says; measured on a 2-core machine (fsstgpu roundtrip of the sample dataset)
COMPILE_NOTICE = "fsstgpu: compiling the CPU codec (first run only, ~5 s) ..."


def readonly(a, dtype) -> np.ndarray:
    """A read-only contiguous view of ``a`` as ``dtype`` (a copy only when ``a`` is not one)."""
    view = np.ascontiguousarray(a, dtype=dtype).view()
    view.flags.writeable = False
    return view


@functools.cache
def _say_compiling() -> None:
    """Print :data:`COMPILE_NOTICE` on stderr (once per process)."""
    print(COMPILE_NOTICE, file=sys.stderr, flush=True)


class _CompileNotice(event.Listener):
    """numba fires ``numba:compile`` only when it really compiles (not on a disk-cache hit)."""

    def on_start(self, ev):
        # a user's function may have no module (None): it is not ours
        module = getattr(ev.data["dispatcher"].py_func, "__module__", None) or ""
        if module.startswith("fsstgpu."):
            _say_compiling()

    def on_end(self, ev):
        pass


event.register("numba:compile", _CompileNotice())
