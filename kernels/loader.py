"""Memoised loading of the CUDA sources shipped in this package, one compiled module per device.

Each kernel family is one ``.cu`` file beside this module; launchers ask for a function by file
and name and get it compiled once per (file, device, options) through ``cupy.RawModule``.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
from pathlib import Path
from typing import NamedTuple

from fsstgpu.device import get_cupy

SOURCE_DIR = Path(__file__).resolve().parent
DEFAULT_OPTIONS = ("-std=c++17",)


def on_stream(stream):
    """A context making ``stream`` current (a CuPy stream), or doing nothing for None.

    Examples
    --------
    >>> from fsstgpu.kernels.loader import on_stream
    >>> with on_stream(None):
    ...     pass
    """
    return stream if stream is not None else contextlib.nullcontext()


def cuda_source(name: str) -> str:
    """Return the text of the CUDA source ``name`` shipped in ``fsstgpu.kernels``.

    Examples
    --------
    >>> from fsstgpu.kernels.loader import cuda_source
    >>> "rotate_column" in cuda_source("rotate.cu")
    True
    """
    return (SOURCE_DIR / name).read_text()


def headers_digest(folder: Path = SOURCE_DIR) -> str:
    """A digest of every header (``*.cuh``) in ``folder``, names and contents.

    Examples
    --------
    >>> from fsstgpu.kernels.loader import headers_digest
    >>> len(headers_digest())
    16
    """
    digest = hashlib.sha256()
    for path in sorted(folder.glob("*.cuh")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def module_source(name: str) -> str:
    """The text compiled for source ``name``: its own, after a line naming the digest of the
    headers it may include (:func:`headers_digest`). CuPy's kernel cache keys a binary by the
    source text and the options, not by the files the source includes, so a changed header
    under an unchanged ``.cu`` file (a new fsstgpu release, a developer's edit) would reuse the
    binary compiled from the old one; ``#line`` keeps the compiler's line numbers the file's.

    Examples
    --------
    >>> from fsstgpu.kernels.loader import cuda_source, module_source
    >>> module_source("rotate.cu").endswith(cuda_source("rotate.cu"))
    True
    """
    return (f"// fsstgpu.kernels headers {_digest_of_headers()}\n#line 1 \"{name}\"\n"
            + cuda_source(name))


@functools.cache
def _digest_of_headers() -> str:
    return headers_digest()  # once a process: the headers ship with the package


@functools.cache
def _compiled(name: str, device_id: int, options: tuple, name_expressions: tuple):
    cupy = get_cupy()
    with cupy.cuda.Device(device_id):
        module = cupy.RawModule(
            code=module_source(name),
            options=(*options, f"-I{SOURCE_DIR}"),
            name_expressions=name_expressions or None,
        )
        module.compile()
    return module


def get_function(name: str, function: str, *, options: tuple = DEFAULT_OPTIONS,
                 name_expressions: tuple = ()):
    """Return kernel ``function`` of source ``name``, compiled for the current device.

    Parameters
    ----------
    name : str
        File name of the ``.cu`` source in this package, e.g. ``"transpose.cu"``.
    function : str
        An ``extern "C"`` kernel name, or one of ``name_expressions`` for templates.
    options : tuple of str
        NVRTC options (part of the cache key).
    name_expressions : tuple of str
        Template instantiations to compile, e.g. ``("transpose_tiles<4,2>",)``.

    Examples
    --------
    >>> from fsstgpu.kernels.loader import get_function
    >>> fn = get_function("rotate.cu", "rotate_column")  # doctest: +SKIP
    """
    cupy = get_cupy()
    device_id = cupy.cuda.Device().id
    module = _compiled(name, device_id, tuple(options), tuple(name_expressions))
    return module.get_function(function)


class DeviceLimits(NamedTuple):
    """What bounds a device's resident blocks (:func:`device_limits`)."""

    sms: int             # streaming multiprocessors
    smem_per_sm: int     # shared memory per SM, bytes
    regs_per_sm: int     # 32-bit registers per SM
    threads_per_sm: int  # resident threads per SM
    smem_optin: int      # the most shared memory a block may opt in to, bytes


@functools.cache
def device_limits(device_id: int) -> DeviceLimits:
    """The limits of device ``device_id`` that launch geometry is planned from, read once.

    Examples
    --------
    >>> import fsstgpu
    >>> from fsstgpu.kernels.loader import device_limits
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     assert device_limits(0).sms > 0
    """
    at = get_cupy().cuda.Device(device_id).attributes
    return DeviceLimits(int(at["MultiProcessorCount"]), int(at["MaxSharedMemoryPerMultiprocessor"]),
                        int(at["MaxRegistersPerMultiprocessor"]),
                        int(at["MaxThreadsPerMultiProcessor"]),
                        int(at["MaxSharedMemoryPerBlockOptin"]))
