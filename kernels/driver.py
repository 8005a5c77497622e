"""Kernel launches through the CUDA driver API, for calls whose host cost matters.

A CuPy ``Function`` call converts every argument on every launch (20-33 us for the decode
kernel's twelve arguments on the H200 host, BENCHMARKS.md section 13). :class:`Launch` instead
holds a kernel's ``kernelParams`` array built once: the arguments that stay the same live in
ctypes cells it points to, the ones that change (output pointers) are rewritten in place, and
``cuLaunchKernel`` is called through ctypes. The functions come from CuPy's compiled modules
(:mod:`fsstgpu.kernels.loader`) and the streams from CuPy: both are the driver's own handles.

:func:`driver` is None where ``libcuda`` cannot be loaded; callers then take CuPy's way.

>>> from fsstgpu.kernels.driver import check_result
>>> check_result(0, "cuLaunchKernel")
"""

from __future__ import annotations

import ctypes
import functools

from fsstgpu.errors import DeviceError

__all__ = ["Launch", "check_result", "driver", "memset_d32", "memset_d8", "read_int32s"]

_PTR = ctypes.c_void_p
_U64 = ctypes.c_uint64


@functools.cache
def driver():
    """The CUDA driver library with the signatures used here, or None where it is missing.

    Examples
    --------
    >>> from fsstgpu.kernels.driver import driver
    >>> lib = driver()  # None on a machine without the NVIDIA driver
    """
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    signatures = {
        "cuLaunchKernel": [_PTR] + [ctypes.c_uint] * 7 + [_PTR, _PTR, _PTR],
        "cuMemsetD32Async": [_U64, ctypes.c_uint, ctypes.c_size_t, _PTR],
        "cuMemsetD8Async": [_U64, ctypes.c_ubyte, ctypes.c_size_t, _PTR],
        "cuMemcpyDtoHAsync_v2": [_PTR, _U64, ctypes.c_size_t, _PTR],
        "cuStreamSynchronize": [_PTR],
    }
    for name, argtypes in signatures.items():
        fn = getattr(lib, name, None)
        if fn is None:
            return None
        fn.argtypes = argtypes
        fn.restype = ctypes.c_int
    return lib


def check_result(code: int, what: str) -> None:
    """Raise :class:`~fsstgpu.DeviceError` for a non-zero CUDA driver result ``code``."""
    if code:
        raise DeviceError(f"{what} failed: CUDA driver error {code}")


def memset_d32(ptr: int, value: int, count: int, stream_ptr: int) -> None:
    """Enqueue ``count`` 32-bit words of ``value`` at device address ``ptr``."""
    check_result(driver().cuMemsetD32Async(ptr, value, count, stream_ptr), "cuMemsetD32Async")


def memset_d8(ptr: int, value: int, count: int, stream_ptr: int) -> None:
    """Enqueue ``count`` bytes of ``value`` at device address ``ptr``."""
    check_result(driver().cuMemsetD8Async(ptr, value, count, stream_ptr), "cuMemsetD8Async")


def read_int32s(ptr: int, count: int, stream_ptr: int) -> list[int]:
    """The ``count`` int32 at device address ``ptr`` once the stream's work before is done.

    One copy into host memory and one stream synchronisation: the host's one wait of a decode.
    """
    lib = driver()
    host = (ctypes.c_int32 * max(count, 1))()
    check_result(lib.cuMemcpyDtoHAsync_v2(ctypes.addressof(host), ptr, 4 * count, stream_ptr),
                 "cuMemcpyDtoHAsync")
    check_result(lib.cuStreamSynchronize(stream_ptr), "cuStreamSynchronize")
    return list(host[:count])


class Launch:
    """One kernel with its launch geometry and arguments, launched by :meth:`__call__`.

    Parameters
    ----------
    function : cupy.RawKernel or cupy.cuda.Function
        The compiled kernel (kept alive here); its CUfunction handle is read once.
    grid, block : int
        One-dimensional grid and block sizes.
    args : sequence of (ctype, value)
        Each kernel argument in order: ``ctypes.c_void_p`` for a pointer, ``ctypes.c_int64`` /
        ``ctypes.c_int32`` for scalars, with its value.

    Examples
    --------
    >>> import ctypes
    >>> from fsstgpu.kernels.driver import Launch
    >>> launch = Launch(None, 1, 32, [(ctypes.c_void_p, 0), (ctypes.c_int64, 5)])
    >>> launch.set(0, 4096)
    >>> launch.cells[0].value, launch.cells[1].value
    (4096, 5)
    """

    def __init__(self, function, grid: int, block: int, args):
        self.function = function
        # a RawModule's RawKernel holds the driver's Function as .kernel (for this device)
        self.handle = 0 if function is None else getattr(function, "kernel", function).ptr
        self.grid, self.block = int(grid), int(block)
        self.cells = [ctype(value) for ctype, value in args]
        self.params = (_PTR * max(len(self.cells), 1))(
            *[ctypes.addressof(c) for c in self.cells])

    def set(self, index: int, value: int) -> None:
        """Argument ``index`` takes ``value`` from the next launch on (callers that share a
        Launch between threads hold a lock from here to the launch)."""
        self.cells[index].value = value

    def __call__(self, stream_ptr: int) -> None:
        """Enqueue the kernel on the stream (the driver copies the arguments at once)."""
        code = driver().cuLaunchKernel(self.handle, self.grid, 1, 1, self.block, 1, 1, 0,
                                       stream_ptr, self.params, None)
        check_result(code, "cuLaunchKernel")
