"""Device choice: the one place that decides between the CPU and the GPU, and says why.

CuPy is imported lazily, only when a GPU path runs, so that ``import fsstgpu`` works (and every
CPU path is tested) on machines without a GPU or without CuPy.  The environment variable
``FSSTGPU_DEVICE`` (``auto``, ``cpu`` or ``gpu``) overrides the default ``"auto"``.
"""

from __future__ import annotations

import contextlib
import functools
import os

import numpy as np

from fsstgpu.errors import DeviceError

DEVICES = ("auto", "cpu", "gpu")
#: what a user without a usable GPU path is told
INSTALL_HINT = ("The GPU paths need an NVIDIA GPU and CuPy: pip install 'fsstgpu[cuda12]' "
                "(or 'fsstgpu[cuda13]', matching your CUDA)")


@functools.lru_cache(maxsize=1)
def _probe_gpu() -> tuple[bool, str]:
    """Return (usable, reason) once per process: is CuPy importable and does it see a GPU?"""
    try:
        import cupy  # noqa: F401  (lazy by design: only a GPU path gets here)
    except Exception as exc:  # ImportError, or a CUDA library that fails to load
        return False, f"cupy is not importable ({type(exc).__name__}: {exc})"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:
        return False, f"CUDA runtime error ({type(exc).__name__}: {exc})"
    if count < 1:
        return False, "CuPy sees no CUDA device"
    return True, f"{count} CUDA device(s)"


def gpu_available() -> bool:
    """Tell whether a GPU path can run here (CuPy imports and sees a device).

    Examples
    --------
    >>> import fsstgpu
    >>> isinstance(fsstgpu.gpu_available(), bool)
    True
    """
    return _probe_gpu()[0]


def resolve_device(device: str | None = "auto") -> str:
    """Turn a requested device into the one used: ``"cpu"`` or ``"gpu"``.

    Parameters
    ----------
    device : {"auto", "cpu", "gpu"} or None
        ``None`` or ``"auto"`` take ``FSSTGPU_DEVICE`` if set, else the GPU when one is usable.

    Raises
    ------
    ValueError
        For an unknown device name.
    DeviceError
        When ``"gpu"`` is asked for and none is usable.

    Examples
    --------
    >>> from fsstgpu.device import resolve_device
    >>> resolve_device("cpu")
    'cpu'
    """
    if device is None or device == "auto":
        device = os.environ.get("FSSTGPU_DEVICE", "auto").strip().lower() or "auto"
        if device not in DEVICES:  # (the caller asked for "auto": name what overrode it)
            raise ValueError(f"FSSTGPU_DEVICE must be one of {DEVICES} or unset, not "
                             f"{device!r}")
    if device not in DEVICES:
        raise ValueError(f"device must be one of {DEVICES}, not {device!r}")
    if device == "cpu":
        return "cpu"
    usable, reason = _probe_gpu()
    if device == "gpu":
        if not usable:
            raise DeviceError(f"a GPU was requested but none is usable: {reason}. {INSTALL_HINT}")
        return "gpu"
    return "gpu" if usable else "cpu"


def array_device(x, what: str) -> str:
    """Tell where array ``x`` lives: ``"cpu"`` for NumPy, ``"gpu"`` for CuPy (CuPy not imported).

    Kernel launchers dispatch on this: NumPy input runs the CPU twin, CuPy input the kernels.

    Parameters
    ----------
    x : object
        The array a function was given.
    what : str
        The function's name, for the error message.

    Raises
    ------
    TypeError
        When ``x`` is neither a NumPy nor a CuPy array, or is a masked array (the kernels
        move the values; a mask would be dropped, its hidden values moved as data).

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.device import array_device
    >>> array_device(np.zeros(3), "bitshuffle")
    'cpu'
    """
    if isinstance(x, np.ma.MaskedArray):
        # (transpose and bitshuffle took one as its data: the mask dropped without a word)
        raise TypeError(f"{what} moves plain arrays, not masked arrays: pass x.filled(...) or "
                        "x.data")
    if isinstance(x, np.ndarray):
        return "cpu"
    if type(x).__module__.split(".")[0] == "cupy":
        return "gpu"
    raise TypeError(f"{what} needs a numpy or cupy array, not {type(x).__name__}")


def host_array(values) -> np.ndarray:
    """``values`` as a host NumPy array: a CuPy array copied back (a sync with its stream), a
    NumPy one (or anything array-like) as it is.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.device import host_array
    >>> host_array(np.arange(3)).tolist(), host_array([1, 2]).dtype.kind
    ([0, 1, 2], 'i')
    """
    return values.get() if hasattr(values, "get") else np.asarray(values)


def on_arrays_device(what: str, **arrays):
    """A context making current the one GPU that CuPy ``arrays`` lie on (None values skipped).

    GPU launchers take an array's address and run on the current device: an array of another
    device was addressed from the wrong device's kernels (an illegal address where peer access
    is off, a sticky error that ends the process's CUDA), and outputs and scratch were allocated
    on the wrong device. Entered around a launcher's work (before it picks its default stream,
    which is per device), the kernels, their scratch and outputs are on the arrays' device.
    The cost is a few attribute reads and CuPy's device switch: no synchronisation, no
    allocation.

    Parameters
    ----------
    what : str
        The function's name, for the error message.
    **arrays : cupy.ndarray or None
        The device arrays the work reads or writes, by argument name. Values that are not CuPy
        arrays (None, host arrays the launcher refuses itself) are skipped.

    Returns
    -------
    contextlib.AbstractContextManager
        ``cupy.cuda.Device`` of the arrays, or a context doing nothing when all are None.

    Raises
    ------
    ValueError
        When the arrays lie on more than one device (naming each array's).

    Examples
    --------
    >>> from fsstgpu.device import on_arrays_device
    >>> with on_arrays_device("bitshuffle", x=None):
    ...     pass
    >>> import cupy as cp  # doctest: +SKIP
    >>> with on_arrays_device("bitshuffle", x=cp.zeros(3)):  # doctest: +SKIP
    ...     assert cp.cuda.Device().id == 0
    """
    first = device = None
    for x in arrays.values():  # (a hot path: 2-4 calls a decode, ~0.3 us each on a slow host)
        here = getattr(getattr(x, "data", None), "device_id", None)
        if here is None or here == device:
            continue
        if first is not None:
            where = ", ".join(f"{name} on GPU {_device_id(x)}" for name, x in arrays.items()
                              if _device_id(x) is not None)
            raise ValueError(f"{what} needs its arrays on one GPU, not {where}: copy them to "
                             "one device first")
        first, device = x, here
    if first is None or device == _current_device():
        return _STAY  # already current: no Device object, nothing to switch back (~1 us saved)
    return first.device


def _current_device() -> int:
    """The calling thread's current CUDA device (the runtime's, one C call)."""
    return _cuda_runtime().getDevice()


@functools.cache
def _cuda_runtime():
    """CuPy's CUDA runtime module, looked up once (``get_cupy`` costs ~0.3 us a call)."""
    return get_cupy().cuda.runtime


#: the context of work whose arrays are on the current device (reusable: it does nothing)
_STAY = contextlib.nullcontext()


def _device_id(x) -> int | None:
    """The device of CuPy array ``x`` (its memory's), or None for anything else."""
    return getattr(getattr(x, "data", None), "device_id", None)


def get_cupy():
    """Import and return CuPy, or raise :class:`DeviceError` saying why it cannot be used."""
    usable, reason = _probe_gpu()
    if not usable:
        raise DeviceError(f"GPU path unavailable: {reason}. {INSTALL_HINT}")
    import cupy

    return cupy


def backend_info() -> dict:
    """Report what is available and what ``device="auto"`` picks here.

    Examples
    --------
    >>> import fsstgpu
    >>> sorted(fsstgpu.backend_info())
    ['auto_choice', 'cupy', 'env_override', 'gpu', 'gpu_reason']
    """
    usable, reason = _probe_gpu()
    cupy_version = None
    if usable:
        import cupy

        cupy_version = cupy.__version__
    try:
        auto_choice = resolve_device("auto")
    except DeviceError as exc:  # FSSTGPU_DEVICE=gpu on a machine without one
        auto_choice = f"error: {exc}"
    return {
        "gpu": usable,
        "gpu_reason": reason,
        "cupy": cupy_version,
        "env_override": os.environ.get("FSSTGPU_DEVICE"),
        "auto_choice": auto_choice,
    }
