"""Kernel launches through the CUDA driver API, for calls whose host cost matters.

A CuPy ``Function`` call converts every argument on every launch (20-33 us for the decode
kernel's twelve arguments on the H200 host, BENCHMARKS.md section 13). :class:`Launch` instead
holds a kernel's ``kernelParams`` array built once: the arguments that stay the same live in
ctypes cells it points to, the ones that change (output pointers) are rewritten in place, and
``cuLaunchKernel`` is called through ctypes. The functions come from CuPy's compiled modules
(:mod:`fsstgpu.kernels.loader`) and the streams from CuPy: both are the driver's own handles.

:class:`Replay` goes one step further for a fixed sequence of a memset and launches: it is
captured once into a CUDA graph, and a call rewrites the nodes' pointers and launches the graph
(one ``cuGraphLaunch`` costs what one kernel launch does, and the GPU runs the nodes without the
gaps between separate launches; BENCHMARKS.md section 24).

:func:`driver` is None where ``libcuda`` cannot be loaded; callers then take CuPy's way.
:func:`graphs` is None where the driver lacks the graph calls; callers then launch one by one.

>>> from fsstgpu.kernels.driver import check_result
>>> check_result(0, "cuLaunchKernel")
"""

from __future__ import annotations

import ctypes
import functools
import threading

from fsstgpu.device import get_cupy
from fsstgpu.errors import DeviceError

__all__ = ["Launch", "Replay", "alloc_host_mapped", "check_result", "driver", "ensure_context",
           "graphs", "launch_kept", "memset_d32", "memset_d8", "read_int32s",
           "stream_synchronize"]

_PTR = ctypes.c_void_p
_U64 = ctypes.c_uint64
#: the most blocks of a one-dimensional grid (gridDim.x) and threads of a block
MAX_GRID, MAX_BLOCK = 2**31 - 1, 1024


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
        "cuCtxGetCurrent": [_PTR],
    }
    return lib if _bound(lib, signatures) else None


_context = threading.local()   # .current: this thread has had a context made current


def ensure_context() -> None:
    """Make the current device's primary context current on this thread where none is.

    The driver's calls act on the calling thread's current context. CuPy's runtime calls make
    one current on first use, but a thread whose CUDA work so far was served from CuPy's pool
    (no runtime call at all) has none: a launch then fails, and a graph update crashed the
    process (a rotate on a worker thread, session 72). ``cudaSetDevice`` makes the primary
    context current (CUDA 12 on), as CuPy's own calls would.

    Examples
    --------
    >>> from fsstgpu.kernels.driver import ensure_context
    >>> ensure_context()  # doctest: +SKIP
    """
    if getattr(_context, "current", False):   # once a thread: the check cost 0.7 us a call,
        return                                  # a few a decode (CuPy never unsets a context)
    current = _PTR()
    check_result(driver().cuCtxGetCurrent(ctypes.byref(current)), "cuCtxGetCurrent")
    if not current.value:
        runtime = get_cupy().cuda.runtime
        runtime.setDevice(runtime.getDevice())
    _context.current = True


def _bound(lib, signatures: dict) -> bool:
    """Give ``lib``'s functions their argument types (results: CUresult); False where one is
    missing."""
    for name, argtypes in signatures.items():
        fn = getattr(lib, name, None)
        if fn is None:
            return False
        fn.argtypes = argtypes
        fn.restype = ctypes.c_int
    return True


# the graph calls (their first, ABI-stable versions: every driver since CUDA 10 exports them)
_GRAPH_SIGNATURES = {
    "cuStreamCreate": [_PTR, ctypes.c_uint],
    "cuStreamDestroy_v2": [_PTR],
    "cuStreamBeginCapture_v2": [_PTR, ctypes.c_int],
    "cuStreamEndCapture": [_PTR, _PTR],
    "cuGraphInstantiateWithFlags": [_PTR, _PTR, ctypes.c_ulonglong],
    "cuGraphGetNodes": [_PTR, _PTR, _PTR],
    "cuGraphNodeGetType": [_PTR, _PTR],
    "cuGraphKernelNodeGetParams": [_PTR, _PTR],
    "cuGraphExecKernelNodeSetParams": [_PTR, _PTR, _PTR],
    "cuGraphMemsetNodeGetParams": [_PTR, _PTR],
    "cuGraphExecMemsetNodeSetParams": [_PTR, _PTR, _PTR, _PTR],
    "cuGraphLaunch": [_PTR, _PTR],
    "cuGraphExecDestroy": [_PTR],
    "cuGraphDestroy": [_PTR],
    "cuCtxGetCurrent": [_PTR],
}


@functools.cache
def graphs():
    """:func:`driver` with the CUDA graph calls :class:`Replay` uses, or None where any is
    missing."""
    lib = driver()
    return lib if lib is not None and _bound(lib, _GRAPH_SIGNATURES) else None


def check_result(code: int, what: str) -> None:
    """Raise :class:`~fsstgpu.DeviceError` for a non-zero CUDA driver result ``code``."""
    if code:
        raise DeviceError(f"{what} failed: CUDA driver error {code}")


def memset_d32(ptr: int, value: int, count: int, stream_ptr: int) -> None:
    """Enqueue ``count`` 32-bit words of ``value`` at device address ``ptr``."""
    ensure_context()
    check_result(driver().cuMemsetD32Async(ptr, value, count, stream_ptr), "cuMemsetD32Async")


def memset_d8(ptr: int, value: int, count: int, stream_ptr: int) -> None:
    """Enqueue ``count`` bytes of ``value`` at device address ``ptr``."""
    ensure_context()
    check_result(driver().cuMemsetD8Async(ptr, value, count, stream_ptr), "cuMemsetD8Async")


def stream_synchronize(stream_ptr: int) -> None:
    """Wait until the work enqueued on the stream is done."""
    ensure_context()
    check_result(driver().cuStreamSynchronize(stream_ptr), "cuStreamSynchronize")


def read_int32s(ptr: int, count: int, stream_ptr: int) -> list[int]:
    """The ``count`` int32 at device address ``ptr`` once the stream's work before is done.

    One copy into host memory and one stream synchronisation: the host's one wait of a decode.
    """
    host = (ctypes.c_int32 * max(count, 1))()
    ensure_context()
    check_result(driver().cuMemcpyDtoHAsync_v2(ctypes.addressof(host), ptr, 4 * count,
                                               stream_ptr), "cuMemcpyDtoHAsync")
    stream_synchronize(stream_ptr)
    return list(host[:count])


_HOST_SIGNATURES = {
    "cuMemHostAlloc": [_PTR, ctypes.c_size_t, ctypes.c_uint],
    "cuMemHostGetDevicePointer_v2": [_PTR, _PTR, ctypes.c_uint],
}
_HOST_PORTABLE, _HOST_DEVICEMAP = 1, 2  # CU_MEMHOSTALLOC_*


def alloc_host_mapped(nbytes: int) -> tuple[int, int]:
    """``nbytes`` of pinned host memory that every device and context can write, never freed:
    (host address, the address kernels write it through)."""
    lib = driver()
    if lib is None or not _bound(lib, _HOST_SIGNATURES):
        raise DeviceError("the CUDA driver has no mapped host memory")
    host, dev = _PTR(), _U64()
    check_result(lib.cuMemHostAlloc(ctypes.byref(host), nbytes,
                                    _HOST_PORTABLE | _HOST_DEVICEMAP), "cuMemHostAlloc")
    check_result(lib.cuMemHostGetDevicePointer_v2(ctypes.byref(dev), host, 0),
                 "cuMemHostGetDevicePointer")
    return int(host.value), int(dev.value)


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
    shared : int, default 0
        Bytes of dynamic shared memory a block gets (above 48 KiB the function must have been
        allowed them, as CuPy's ``max_dynamic_shared_size_bytes`` does).

    Examples
    --------
    >>> import ctypes
    >>> from fsstgpu.kernels.driver import Launch
    >>> launch = Launch(None, 1, 32, [(ctypes.c_void_p, 0), (ctypes.c_int64, 5)])
    >>> launch.set(0, 4096)
    >>> launch.cells[0].value, launch.cells[1].value
    (4096, 5)
    """

    def __init__(self, function, grid: int, block: int, args, shared: int = 0):
        self.function = function
        self.shared = int(shared)
        # a RawModule's RawKernel holds the driver's Function as .kernel (for this device)
        self.handle = 0 if function is None else getattr(function, "kernel", function).ptr
        self.grid, self.block = int(grid), int(block)
        # cuLaunchKernel takes unsigned ints, which ctypes wraps without a word: a grid of
        # 2**32 + 5 blocks launched 5 and left the rest of the output unwritten
        if not 0 <= self.grid <= MAX_GRID or not 0 <= self.block <= MAX_BLOCK:
            raise ValueError(f"a launch of {self.grid} blocks of {self.block} threads: at most "
                             f"{MAX_GRID} blocks of {MAX_BLOCK}")
        self.cells = [_cell(ctype, value) for ctype, value in args]
        self.changed = True
        self.params = (_PTR * max(len(self.cells), 1))(
            *[ctypes.addressof(c) for c in self.cells])

    def set(self, index: int, value: int) -> None:
        """Argument ``index`` takes ``value`` from the next launch on (callers that share a
        Launch between threads hold a lock from here to the launch). ``changed`` records that
        a value differs, for :class:`Replay`, which then hands the driver the new ones."""
        cell = self.cells[index]
        if cell.value != value:
            cell.value = value
            self.changed = True

    def __call__(self, stream_ptr: int) -> None:
        """Enqueue the kernel on the stream (the driver copies the arguments at once)."""
        ensure_context()
        code = driver().cuLaunchKernel(self.handle, self.grid, 1, 1, self.block, 1, 1,
                                       self.shared, stream_ptr, self.params, None)
        check_result(code, "cuLaunchKernel")


def _cell(ctype, value):
    """``ctype(value)``, refused where the value does not fit (ctypes wraps integers silently:
    a size past 2**63 reached a kernel as a negative one)."""
    cell = ctype(value)
    if (cell.value or 0) != (value or 0):   # (a null c_void_p reads None)
        raise ValueError(f"kernel argument {value} does not fit {ctype.__name__}")
    return cell


_kept_lock = threading.Lock()


@functools.lru_cache(maxsize=256)
def _kept(get_function, device: int, name: str, grid: int, block: int, cells: tuple,
          shared: int) -> Launch:
    return Launch(get_function(name), grid, block, list(cells), shared=shared)


def launch_kept(get_function, name: str, grid: int, block: int, cells: tuple, pointers,
                stream_ptr: int, *, shared: int = 0) -> None:
    """Launch kernel ``name`` with a :class:`Launch` kept for its geometry, setting only this
    call's pointers.

    A CuPy kernel call converts every argument on every launch (~15-20 us of the 16-47 us these
    launchers spent on the host before their kernels started, BENCHMARKS.md section 34), and
    building a ``Launch`` a call cost as much (section 56); a geometry's ``Launch`` is built
    once here (an LRU of 256) and a call sets its pointers under a lock.

    Parameters
    ----------
    get_function : callable
        ``get_function(name)``: the compiled kernel for the current device (part of the key).
    name : str
        The kernel's name.
    grid, block : int
        Launch geometry.
    cells : tuple of (ctype, value)
        Every argument, pointers with value 0 (they come in ``pointers``); hashable.
    pointers : iterable of (int, int)
        ``(argument index, device address)`` of this call.
    stream_ptr : int
        The stream to enqueue on.
    shared : int, default 0
        Dynamic shared memory of a block.

    Examples
    --------
    >>> import ctypes
    >>> from fsstgpu.kernels.driver import launch_kept
    >>> cells = ((ctypes.c_void_p, 0), (ctypes.c_int64, 5))
    >>> launch_kept(my_function, "k", 1, 32, cells, [(0, ptr)], 0)  # doctest: +SKIP
    """
    launch = _kept(get_function, get_cupy().cuda.Device().id, name, grid, block, cells, shared)
    with _kept_lock:   # from the pointers' cells to the launch, which copies them
        for index, address in pointers:
            launch.set(index, address)
        launch(stream_ptr)


class _KernelNodeParams(ctypes.Structure):
    # CUDA_KERNEL_NODE_PARAMS (v1)
    _fields_ = [("func", _PTR), ("grid_x", ctypes.c_uint), ("grid_y", ctypes.c_uint),
                ("grid_z", ctypes.c_uint), ("block_x", ctypes.c_uint), ("block_y", ctypes.c_uint),
                ("block_z", ctypes.c_uint), ("shared_bytes", ctypes.c_uint),
                ("kernel_params", _PTR), ("extra", _PTR)]


class _MemsetNodeParams(ctypes.Structure):
    # CUDA_MEMSET_NODE_PARAMS
    _fields_ = [("dst", _U64), ("pitch", ctypes.c_size_t), ("value", ctypes.c_uint),
                ("element_size", ctypes.c_uint), ("width", ctypes.c_size_t),
                ("height", ctypes.c_size_t)]


_KERNEL_NODE, _MEMSET_NODE = 0, 2  # CUgraphNodeType
_CAPTURE_RELAXED = 2  # CUstreamCaptureMode
_NON_BLOCKING = 1  # CU_STREAM_NON_BLOCKING


class Replay:
    """A memset of 32-bit zeros followed by kernel launches, captured once into a CUDA graph
    and replayed with new pointers.

    Parameters
    ----------
    launches : sequence of Launch
        The kernels, in order, each after the one before; distinct functions. A call launches
        them with their cells' values at that moment, set through :meth:`Launch.set` (which
        marks what changed: a cell written directly is not seen).
    memset_words : int
        32-bit words the memset zeroes before the first kernel (0: no memset).
    memset_dst : int
        A device address the memset may write ``memset_words`` words at (the capture records
        a call with it; each replay names its own).

    Raises
    ------
    DeviceError
        Where the driver cannot capture or instantiate the graph (callers then launch one by
        one).

    Examples
    --------
    >>> import fsstgpu
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     import cupy as cp
    ...     from fsstgpu.kernels.driver import Replay
    ...     buf = cp.ones(8, cp.int32)
    ...     replay = Replay([], 8, buf.data.ptr)
    ...     replay(cp.cuda.get_current_stream().ptr, memset_dst=buf.data.ptr)
    ...     assert int(buf.sum()) == 0
    """

    def __init__(self, launches, memset_words: int, memset_dst: int = 0):
        lib = graphs()
        if lib is None:
            raise DeviceError("the CUDA driver has no graph calls")
        self._lib = lib
        self.launches = list(launches)
        self.memset_words = int(memset_words)
        self._graph, self._exec = _PTR(), _PTR()
        self._memset_node, self._memset = None, _MemsetNodeParams()
        self._kernel_nodes = []
        self._ctx = _PTR()
        ensure_context()
        check_result(lib.cuCtxGetCurrent(ctypes.byref(self._ctx)), "cuCtxGetCurrent")
        # captured on a stream of its own: the caller's may be the legacy default stream,
        # which cannot be captured; capturing records the calls, runs nothing
        stream = _PTR()
        check_result(lib.cuStreamCreate(ctypes.byref(stream), _NON_BLOCKING), "cuStreamCreate")
        try:
            check_result(lib.cuStreamBeginCapture_v2(stream, _CAPTURE_RELAXED),
                         "cuStreamBeginCapture")
            try:
                if self.memset_words:
                    memset_d32(memset_dst, 0, self.memset_words, stream.value)
                for launch in self.launches:
                    launch(stream.value)
            finally:
                end = lib.cuStreamEndCapture(stream, ctypes.byref(self._graph))
            check_result(end, "cuStreamEndCapture")
        finally:
            lib.cuStreamDestroy_v2(stream)
        check_result(lib.cuGraphInstantiateWithFlags(ctypes.byref(self._exec), self._graph, 0),
                     "cuGraphInstantiateWithFlags")
        self._find_nodes()
        # the graph holds the values the launches had when captured, the memset its address
        self._memset_at = memset_dst
        for launch in self.launches:
            launch.changed = False

    def _find_nodes(self) -> None:
        lib = self._lib
        count = ctypes.c_size_t(0)
        check_result(lib.cuGraphGetNodes(self._graph, None, ctypes.byref(count)),
                     "cuGraphGetNodes")
        nodes = (_PTR * max(count.value, 1))()
        check_result(lib.cuGraphGetNodes(self._graph, nodes, ctypes.byref(count)),
                     "cuGraphGetNodes")
        by_function = {}
        for node in nodes[: count.value]:
            kind = ctypes.c_int(-1)
            check_result(lib.cuGraphNodeGetType(node, ctypes.byref(kind)), "cuGraphNodeGetType")
            if kind.value == _MEMSET_NODE:
                self._memset_node = node
                check_result(lib.cuGraphMemsetNodeGetParams(node, ctypes.byref(self._memset)),
                             "cuGraphMemsetNodeGetParams")
            elif kind.value == _KERNEL_NODE:
                params = _KernelNodeParams()
                check_result(lib.cuGraphKernelNodeGetParams(node, ctypes.byref(params)),
                             "cuGraphKernelNodeGetParams")
                by_function[params.func] = node
        for launch in self.launches:
            node = by_function.get(launch.handle)
            if node is None:
                raise DeviceError("a captured kernel is missing from its graph")
            params = _KernelNodeParams(launch.handle, launch.grid, 1, 1, launch.block, 1, 1,
                                       launch.shared, ctypes.cast(launch.params, _PTR), None)
            self._kernel_nodes.append((node, params))
        if (self._memset_node is not None) != bool(self.memset_words) or (
                len(by_function) != len(self.launches)):
            raise DeviceError("the captured graph does not hold the calls made")

    def __call__(self, stream_ptr: int, memset_dst: int = 0) -> None:
        """Enqueue the memset (at ``memset_dst``) and the kernels, with the launches' current
        arguments, on the stream. Callers sharing a Replay hold a lock from the launches'
        :meth:`Launch.set` to here (a graph's launches run one after the other, in order)."""
        lib = self._lib
        ensure_context()
        # A node keeps the values it was last given, so only those that differ go to the
        # driver: each update cost 0.8-1.5 us of a 7.5 us replay (H200 host), and a decode whose
        # buffer is the pool's last one (the caller dropped the result before) updates none.
        if self._memset_node is not None and memset_dst != self._memset_at:
            self._memset.dst = memset_dst
            check_result(lib.cuGraphExecMemsetNodeSetParams(
                self._exec, self._memset_node, ctypes.byref(self._memset), self._ctx),
                "cuGraphExecMemsetNodeSetParams")
            self._memset_at = memset_dst
        for launch, (node, params) in zip(self.launches, self._kernel_nodes, strict=True):
            if launch.changed:  # the driver copies the arguments now
                check_result(lib.cuGraphExecKernelNodeSetParams(self._exec, node,
                                                                ctypes.byref(params)),
                             "cuGraphExecKernelNodeSetParams")
                launch.changed = False
        check_result(lib.cuGraphLaunch(self._exec, stream_ptr), "cuGraphLaunch")

    def __del__(self):
        try:  # (at interpreter exit the driver may be gone: nothing to hand back then)
            if self._exec:
                self._lib.cuGraphExecDestroy(self._exec)
            if self._graph:
                self._lib.cuGraphDestroy(self._graph)
        except Exception:  # noqa: BLE001
            pass
