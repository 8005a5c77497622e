"""pytest run from a checkout tests that checkout's fsstgpu, whichever editable install is active.

The package maps top-level folders of the checkout into itself (pyproject.toml's
``[tool.setuptools.package-dir]``); ``tests/checkout/sitecustomize.py`` finds them there, in this
process and, through ``PYTHONPATH``, in the Python subprocesses the tests start. The checkout's root
is taken off ``sys.path`` (``python -m pytest`` puts it there), so that its folders do not import
as top-level modules (``import kernels``): tests that need the checkout's ``benchmarks`` put the
root back themselves. ``FSSTGPU_TEST_INSTALLED=1`` turns all this off, to test an installed
wheel from the checkout's tests.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
SITE = ROOT / "tests" / "checkout"



def _test_this_checkout() -> None:
    if "fsstgpu" in sys.modules:  # imported before this file ran: it may be another checkout's
        raise RuntimeError(f"fsstgpu was imported from {sys.modules['fsstgpu'].__file__} before "
                           f"{__file__} could point it at this checkout")
    spec = importlib.util.spec_from_file_location("fsstgpu_checkout_site",
                                                  SITE / "sitecustomize.py")
    spec.loader.exec_module(importlib.util.module_from_spec(spec))  # installs the finder here
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, (str(SITE),
                                                             os.environ.get("PYTHONPATH"))))
    sys.path[:] = [p for p in sys.path if Path(p or os.curdir).resolve() != ROOT]


if not os.environ.get("FSSTGPU_TEST_INSTALLED"):
    _test_this_checkout()
