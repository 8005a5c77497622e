"""In-place rotation of a 1-D array (``std::rotate``) on the GPU, and its NumPy twin.

``rotate(x, k)`` turns ``x`` into ``numpy.roll(x, -k)`` inside x's own memory.  Elements are moved
as raw bytes, so any element size works (rotating by ``k`` elements is rotating the bytes by
``k * itemsize``); ``k`` may be negative or larger than ``len(x)`` (it is taken modulo ``len(x)``).

How (details, memory ordering and the deadlock argument in ``rotate.cu``): the host turns
(bytes, shift) into a *plan* of passes (:func:`plan`, one pass unless noted below); each pass is
one kernel that reads every byte it moves once and writes it once, streaming tiles through
shared memory with :data:`PREFETCH` tiles of ``cp.async`` loads in flight per block.  Work items
are handed out by an atomic ticket in a closed-form order and a block only ever waits for a
ticket smaller than its own, after publishing its own flag, so no grid size or residency can
deadlock it.

* ``short`` pass (shift ``d = min(k, n - k)`` bytes at most :data:`SHORT_DMAX`): the ``d`` bytes
  that wrap around are copied first; the destination is cut into one contiguous chunk per block
  (:data:`SHORT_BLOCKS_PER_SM` per SM; one measured best).  A block streams its chunk
  backwards (left rotation; forwards for a right one) through a ring of tiles in shared
  memory: each tile loads exactly its own old bytes and
  stores the destination bytes, which are ``d`` bytes further and already in the ring (a copy
  with carry).  The only cross-block hazard is the ``d`` bytes at a chunk's edge, which the
  neighbouring block loads first and flags; the owner waits for that flag before its very last
  stores, so no wait sits on the critical path.
* ``column`` pass (lane streaming, ``n = L * d + s``): the array is ``L`` lanes of ``d`` bytes
  plus a remainder of ``s``.  A block owns a column of ``W`` bytes of a run of lanes (a
  *segment*) and streams through them: load lane ``l + 1``, store it into lane ``l``.  When
  ``d + s`` fits in :data:`SCRATCH_BYTES` (*stash*), lane 0 and the remainder are saved first
  and a column may be split into segments, each waiting only for its predecessor (which loads
  the shared lane first); otherwise (*chain*) only the remainder is saved and the block keeps its
  column of lane 0 in shared memory and stores it into lane ``L - 1`` (shifted by ``s``) at the
  end, once the columns owning those bytes have loaded them.
* a remainder larger than :data:`SCRATCH_BYTES` cannot be saved: the plan then rotates the
  ``L`` whole lanes first (``s = 0``: one pass), leaving a rotation of ``d + s`` bytes by ``s``
  (a Gries-Mills step); this repeats while the remainder stays large, shrinking geometrically.

Device memory beyond the array: at most :data:`SCRATCH_BYTES` of saved bytes, a ring of
:data:`RING` ticket flags (16 KiB) and an error flag, under 1 MiB.  No host-built tables; the
only host synchronisation is ``check`` at the end.
"""

from __future__ import annotations

import ctypes
import functools
import math
import numbers
import threading

import numpy as np

from fsstgpu.device import array_device, get_cupy, on_arrays_device
from fsstgpu.errors import DeviceError
from fsstgpu.kernels.driver import Launch, Replay, graphs, read_int32s
from fsstgpu.kernels.loader import DEFAULT_OPTIONS, device_limits, get_function
from fsstgpu.kernels.transpose import resident_blocks
from fsstgpu.limits import whole_number

SOURCE = "rotate.cu"
SCRATCH_BYTES = 960 * 1024      # most bytes a pass saves before its kernel (wrapped bytes, stash)
RING = 4096                     # ticket flag slots (uint32), plus one ticket counter
THREADS = 256                   # threads per block (THREADS in rotate.cu)
SHORT_THREADS = 512             # threads per block of the short pass (one block per SM; H200:
                                # 79-80% of copy against 72-78 with 256 and 56-67 with 1024)
PREFETCH = 3                    # tiles / lanes of loads in flight per block (PREFETCH in rotate.cu)
SHORT_TILE = 32768              # bytes per tile of the short pass
SHORT_DMAX = 64 * 1024          # largest short-pass shift (ring: PREFETCH + 1 + d / tile tiles)
SHORT_BLOCKS_PER_SM = 1         # at most this many short-pass blocks (= chunks) per SM
LANE_W = 16384                  # widest column of a column pass (bytes per lane tile)
LANE_SMEM = 47 * 1024           # shared memory of a column-pass block (its buffers; no opt-in)
LANE_MIN_W = 512                # narrowest column of a chain-mode column pass
LANE_MIN_SEG = 8                # fewest lanes a segment of a stash-mode column streams
COLUMN_BLOCKS_PER_SM = 4        # column-pass work items aimed at per SM (one wave when possible)
WAIT_TIMEOUT_S = 2.0            # default bound on one wait of a kernel


# ------------------------------------------------------------------------------------------------
# The plan (shared by both paths, so the CPU twin checks it in CI)
# ------------------------------------------------------------------------------------------------

def column_stash(d: int, rem: int) -> bool:
    """Whether a column pass saves lane 0 as well as the remainder (*stash* mode).

    Both copies fit in the scratch buffer: lane 0 at offset 0, the remainder at the next
    multiple of 16.

    Examples
    --------
    >>> from fsstgpu.kernels.rotate import column_stash
    >>> column_stash(100_000, 5), column_stash(1 << 20, 5)
    (True, False)
    """
    return -(-d // 16) * 16 + rem <= SCRATCH_BYTES


def column_smem(width: int, lanes: int) -> int:
    """Dynamic shared memory of a column-pass block: buffers P and K, and ring slots for the
    lanes it streams (at most ``PREFETCH + 1``, at least one, reused for the top's moves), each
    ``width + 48`` bytes (``rotate.cu``).

    Examples
    --------
    >>> from fsstgpu.kernels.rotate import column_smem
    >>> column_smem(4096, 2), column_smem(4096, 100)
    (12432, 24864)
    """
    return _column_buffers(lanes) * (width + 48)


def _column_buffers(lanes: int) -> int:
    return 2 + max(1, min(PREFETCH + 1, lanes - 2))


def column_layout(d: int, lanes: int, rem: int, blocks: int) -> tuple[int, int]:
    """Column width and segments per column of a column pass.

    Parameters
    ----------
    d, lanes, rem : int
        Lane length, lanes and remainder bytes of the pass.
    blocks : int
        Work items (tickets) aimed at: the blocks resident on the device at once.

    Returns
    -------
    tuple of int
        ``(W, G)``: ``W`` bytes per column (a multiple of 16, at most :data:`LANE_W`, buffers
        within :data:`LANE_SMEM`), ``ceil(d / W)`` columns of about equal width, each split into
        ``G`` segments (``G = 1`` in chain mode; else at most ``(lanes - 1) // LANE_MIN_SEG``);
        columns times segments stays within ``blocks`` when there are segments.

    Examples
    --------
    >>> from fsstgpu.kernels.rotate import column_layout
    >>> column_layout(65537, 16383, 65535, 528)
    (7296, 58)
    >>> column_layout(1 << 29, 2, 0, 528)
    (15872, 1)
    """
    blocks = max(1, blocks)
    stash = column_stash(d, rem)
    wmax = min(LANE_W, (LANE_SMEM // _column_buffers(lanes) - 48) // 128 * 128)
    ncols = -(-d // wmax)
    if not stash:   # no segments: more, narrower columns
        ncols = max(ncols, min(blocks, max(1, d // LANE_MIN_W)))
    w = -(-d // (16 * ncols)) * 16
    ncols = -(-d // w)
    if not stash:
        return w, 1
    return w, max(1, min(blocks // ncols, (lanes - 1) // LANE_MIN_SEG))


def short_scratch(nb: int, d: int, left: bool, base: int, scratch_ptr: int):
    """Where the short pass keeps its copy of old bytes.

    Parameters
    ----------
    nb, d : int
        Bytes of the range and of the shift.
    left : bool
        Rotate left (else right).
    base, scratch_ptr : int
        Device addresses of the range and of the scratch buffer.

    Returns
    -------
    tuple
        ``(pad, sbase, fills)``: the copy region starts at ``scratch_ptr + pad`` and holds
        virtual source positions ``[v0, v0 + d + 32)`` (left: ``v0 = nb - 16``, right:
        ``v0 = -d - 16``) at address ``sbase + v`` (mod 2**64), aligned like ``base + v``;
        ``fills`` lists ``(scratch offset, array offset, length)`` copies of old array bytes to
        make first (left: the last ``min(16, nb)`` bytes, then ``[0, d)``; right:
        ``[nb - d, nb)``, then the first ``min(16, nb)`` bytes).

    Examples
    --------
    >>> from fsstgpu.kernels.rotate import short_scratch
    >>> short_scratch(100, 3, True, 0x1000, 0x2000)
    (4, 8112, [(4, 84, 16), (20, 0, 3)])
    """
    m = min(16, nb)
    v0 = nb - 16 if left else -d - 16
    pad = (base + v0 - scratch_ptr) % 16
    sbase = (scratch_ptr + pad - v0) % (1 << 64)
    if left:
        fills = [(pad + 16 - m, nb - m, m), (pad + 16, 0, d)]
    else:
        fills = [(pad + 16, nb - d, d), (pad + 16 + d, 0, m)]
    return pad, sbase, fills


def plan(nbytes: int, shift: int) -> list[tuple]:
    """Passes that rotate ``nbytes`` bytes left by ``shift`` bytes (both paths run them).

    Parameters
    ----------
    nbytes : int
        Bytes of the array.
    shift : int
        Bytes to rotate left by (taken modulo ``nbytes``).

    Returns
    -------
    list of tuple
        ``("short", offset, length, d, left)`` and
        ``("column", offset, length, d, left, lanes, remainder)`` passes in order; each rotates
        the byte range ``[offset, offset + length)`` left (``left``) or right by ``d`` bytes,
        ``0 < d <= length / 2``; a short pass has ``d <= SHORT_DMAX``, a column pass
        ``d > SHORT_DMAX``, ``length = lanes * d + remainder`` and
        ``remainder <= SCRATCH_BYTES``.  One pass unless that remainder would be larger, then
        one column pass per Gries-Mills step plus a last pass.  Empty when there is nothing to
        do.

    Examples
    --------
    >>> from fsstgpu.kernels.rotate import plan
    >>> plan(100, 1)
    [('short', 0, 100, 1, True)]
    >>> plan(1 << 30, (1 << 30) // 2)
    [('column', 0, 1073741824, 536870912, True, 2, 0)]
    >>> for step in plan(10 << 20, 4 << 20):  # remainder 2 MiB: whole lanes first, then the rest
    ...     print(step)
    ('column', 0, 8388608, 4194304, True, 2, 0)
    ('column', 4194304, 6291456, 2097152, False, 3, 0)
    """
    steps: list[tuple] = []
    off, nb, k = 0, int(nbytes), int(shift)
    while nb > 1:
        k %= nb
        if k == 0:
            break
        left = k <= nb - k
        d = k if left else nb - k
        if d <= SHORT_DMAX:
            steps.append(("short", off, nb, d, left))
            break
        lanes, rem = divmod(nb, d)
        if rem <= SCRATCH_BYTES:
            steps.append(("column", off, nb, d, left, lanes, rem))
            break
        # The remainder is too big to save: rotate the whole lanes (no remainder), which leaves
        # lane 0 next to the remainder in the wrong order; swapping those two is a rotation of
        # d + rem bytes by rem (left: [lane 0 | rem] right by rem, right: [rem | lane 0] left).
        if left:
            steps.append(("column", off, lanes * d, d, True, lanes, 0))
            off += (lanes - 1) * d
            nb = d + rem
            k = d
        else:
            steps.append(("column", off + rem, lanes * d, d, False, lanes, 0))
            nb = d + rem
            k = rem
    return steps


def _normalise(x, k) -> int:
    if x.ndim != 1:
        raise ValueError(f"rotate needs a 1-D array, got shape {x.shape}")
    if x.dtype.hasobject:
        raise TypeError("rotate cannot move object arrays")
    if not x.flags.c_contiguous:
        raise ValueError("rotate needs a contiguous array (it works in place)")
    k = whole_number(k)   # operator.index took True as a shift of 1
    n = x.shape[0]
    return k % n if n else 0


# ------------------------------------------------------------------------------------------------
# CPU twin
# ------------------------------------------------------------------------------------------------

def rotate_cpu(x: np.ndarray, k: int) -> np.ndarray:
    """Rotate a 1-D NumPy array left by ``k`` elements in place (``x[:] = numpy.roll(x, -k)``).

    Runs the same plan of passes as the GPU path, each pass on its byte range, so the plan is
    checked wherever the tests run.

    Parameters
    ----------
    x : numpy.ndarray
        1-D, contiguous, writeable array of any fixed-size dtype.
    k : int
        Elements to rotate by; negative rotates right; taken modulo ``len(x)``.

    Returns
    -------
    numpy.ndarray
        ``x`` itself.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.kernels.rotate import rotate_cpu
    >>> rotate_cpu(np.arange(6), 2)
    array([2, 3, 4, 5, 0, 1])
    """
    if array_device(x, "rotate_cpu") != "cpu":   # (which refuses a masked array: its mask)
        raise TypeError(f"rotate_cpu needs a numpy.ndarray, not {type(x).__name__}")
    k = _normalise(x, k)
    if not x.flags.writeable:
        raise ValueError("rotate_cpu needs a writeable array")
    raw = x.view(np.uint8)
    for step in plan(raw.size, k * x.dtype.itemsize):
        _, off, length, d, left = step[:5]
        part = raw[off:off + length]
        part[:] = np.roll(part, -d if left else d)
    return x


# ------------------------------------------------------------------------------------------------
# GPU path
# ------------------------------------------------------------------------------------------------

_ERR_AT = 4 * (RING + 1)                       # the error flag, after the ring and the counter
_SCRATCH_AT = -(-(_ERR_AT + 4) // 256) * 256  # saved bytes (the copies align themselves)
_WORK_BYTES = _SCRATCH_AT + SCRATCH_BYTES + 64
_PREPARE_BLOCKS = 1024                         # most blocks of rotate_prepare (64 bytes a thread)
_PASSES_CACHED = 64                            # pass geometries whose launches (graphs) are kept
_PTR, _U64, _I64 = ctypes.c_void_p, ctypes.c_uint64, ctypes.c_int64   # the kernels' argument types
_I32, _U32 = ctypes.c_int32, ctypes.c_uint32


def rotate(x, k: int, *, stream=None, check: bool = True, timeout: float = WAIT_TIMEOUT_S):
    """Rotate a 1-D array left by ``k`` elements in place; NumPy runs the CPU twin.

    Parameters
    ----------
    x : numpy.ndarray or cupy.ndarray
        1-D contiguous array of any fixed-size dtype (1, 2, 4, 8, 16 bytes ... all work), at any
        address (``buf[3:]`` views included).
    k : int
        Elements to rotate by (``x`` becomes ``roll(x, -k)``); negative rotates right.
    stream : cupy.cuda.Stream, optional
        Stream for the GPU work (default: the current stream).  Nothing synchronises, except
        ``check``.
    check : bool, default True
        Synchronise once at the end and raise ``DeviceError`` when one of the kernels' bounded
        waits timed out (the result is then garbage).  With False nothing synchronises.
    timeout : float, default 2.0
        Seconds one wait may spin before the kernel gives up: finite and above 0 (checked for
        NumPy input too).

    Returns
    -------
    numpy.ndarray or cupy.ndarray
        ``x`` itself.

    Raises
    ------
    fsstgpu.DeviceError
        When a wait timed out (``check=True``).
    ValueError
        When ``timeout`` is NaN, infinite, 0 or negative, or 2**64 ns or more.
    TypeError
        When ``timeout`` is not a real number.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.kernels.rotate import rotate
    >>> rotate(np.arange(5, dtype=np.uint8), -1)
    array([4, 0, 1, 2, 3], dtype=uint8)
    >>> import cupy as cp  # doctest: +SKIP
    >>> rotate(cp.arange(5), 2).tolist()  # doctest: +SKIP
    [2, 3, 4, 0, 1]
    """
    timeout_ns = _timeout_ns(timeout)
    if isinstance(x, np.ndarray):
        return rotate_cpu(x, k)
    if not type(x).__module__.startswith("cupy"):
        raise TypeError(f"rotate needs a numpy or cupy array, not {type(x).__name__}")
    cp = get_cupy()
    k = _normalise(x, k)
    steps = plan(x.nbytes, k * x.dtype.itemsize)
    if not steps:
        return x
    # on x's device, whichever is current: the kernels (and their scratch) ran on the current
    # one, addressing another device's memory (an illegal address where peers cannot reach it)
    with on_arrays_device("rotate", x=x):
        _rotate_steps(cp, x, steps, stream, check, timeout, timeout_ns)
    return x


def _timeout_ns(timeout) -> int:
    """``timeout`` (seconds) as the kernels' u64 nanoseconds (at least 1).

    Checked up front: NaN and inf failed only at ``int()`` (an OverflowError or an unclear
    ValueError), and 0 or a negative value became a 1 ns bound (every wait giving up)."""
    if isinstance(timeout, bool) or not isinstance(timeout, numbers.Real):
        raise TypeError(f"rotate's timeout is a number of seconds, not {type(timeout).__name__}")
    seconds = float(timeout)
    if not (math.isfinite(seconds) and 0 < seconds and seconds * 1e9 < 2.0**64):
        raise ValueError(f"rotate's timeout must be a finite number of seconds above 0 (below "
                         f"2**64 ns), not {timeout!r}")
    return max(1, int(seconds * 1e9))


def _rotate_steps(cp, x, steps, stream, check: bool, timeout: float, timeout_ns: int) -> None:
    """The passes of ``steps`` on ``x`` (on the current device, x's)."""
    stream = stream or cp.cuda.get_current_stream()
    # One allocation holds the flag ring + ticket counter (zeroed before every pass), the error
    # flag (zeroed before the first; set by a wait that timed out) and the saved bytes.  A pass is
    # two driver launches (rotate_prepare: the zeroing and the saves; then the pass): a 1 GiB
    # rotate's kernel takes ~0.6-0.8 ms, and the host time before it shows in the call's time
    # (CuPy's slice copies and fills cost ~90 us, its memset, two copies and a kernel call with
    # twelve arguments 40-160 us on an H100 host; BENCHMARKS.md sections 34 and 56).
    with stream:   # the pool hands out memory ordered on this stream
        work = cp.empty(_WORK_BYTES, dtype=cp.uint8)
    ctrl = work.data.ptr
    err = ctrl + _ERR_AT
    device = cp.cuda.Device().id
    base = x.data.ptr
    for i, step in enumerate(steps):
        words = RING + 2 if i == 0 else RING + 1      # the error flag follows the counter
        launch = _launch_short if step[0] == "short" else _launch_column
        launch(device, base, step, ctrl + _SCRATCH_AT, ctrl, words, err, timeout_ns, stream.ptr)
    if check and read_int32s(err, 1, stream.ptr)[0]:
        raise DeviceError(f"rotate: a wait timed out after {timeout:g} s "
                          "(kernel aborted; the array is garbage)")


@functools.cache
def _function_on(device_id: int, name: str, smem: int, per_sm_cap: int, threads: int):
    # cached: the attribute write and the occupancy arithmetic cost host time on every call
    options = DEFAULT_OPTIONS
    if threads != THREADS:   # one block per SM: no register cap from MIN_BLOCKS
        options = (*options, f"-DTHREADS={threads}", "-DMIN_BLOCKS=1")
    fn = get_function(SOURCE, name, options=options)
    sms, sm_smem, sm_regs, sm_threads, optin = device_limits(device_id)
    static = int(fn.shared_size_bytes)   # the kernel's own __shared__ variables
    if smem + static > optin:
        raise ValueError(f"{name} needs {smem + static} bytes of shared memory per block, the "
                         f"device allows {optin}")
    if smem > 48 * 1024:
        # the opt-in limit covers static and dynamic shared memory together
        fn.max_dynamic_shared_size_bytes = optin - static
    per_sm = resident_blocks(threads, smem + static, int(fn.num_regs), sm_smem, sm_regs,
                             sm_threads)
    return fn, sms * max(1, min(per_sm, per_sm_cap))


class _Pass:
    """One pass's two launches, rotate_prepare then the pass, their geometry fixed: a call sets
    the pointers (the only arguments that differ between calls of one geometry) and launches
    them; from the second call of a geometry on as one CUDA graph (one launch instead of two,
    and the kernels back to back on the GPU), as the planned decode does."""

    def __init__(self, prepare: Launch, main: Launch):
        self.prepare, self.main = prepare, main
        self.lock = threading.Lock()
        self.calls = 0
        self.replay = None

    def __call__(self, prepare_ptrs, main_ptrs, stream_ptr: int) -> None:
        with self.lock:   # from the cells' values to the launch
            for launch, ptrs in ((self.prepare, prepare_ptrs), (self.main, main_ptrs)):
                for index, value in ptrs:
                    launch.set(index, value)
            self.calls += 1
            if self.calls == 2 and graphs() is not None:
                try:
                    self.replay = Replay([self.prepare, self.main], 0)
                except DeviceError:   # a driver that cannot capture: launch one by one
                    self.replay = None
            if self.replay is not None:
                self.replay(stream_ptr)
            else:
                self.prepare(stream_ptr)
                self.main(stream_ptr)


def _prepare(device: int, words: int, n0: int, n1: int) -> Launch:
    """rotate_prepare zeroing ``words`` control words and copying ranges of ``n0`` and ``n1``
    bytes (arguments 0, 2, 3, 5 and 6 are the pointers: control words, destinations, sources)."""
    fn, _ = _function_on(device, "rotate_prepare", 0, 1, THREADS)
    blocks = max(1, min(_PREPARE_BLOCKS, -(-(n0 + n1) // (64 * THREADS))))
    return Launch(fn, blocks, THREADS, [(_PTR, 0), (_U32, words), (_U64, 0), (_U64, 0),
                                        (_I64, n0), (_U64, 0), (_U64, 0), (_I64, n1)])


@functools.lru_cache(maxsize=_PASSES_CACHED)
def _short_pass(device: int, step: tuple, align: int, words: int, nfill: tuple,
                timeout_ns: int) -> _Pass:
    _, _, length, d, left = step
    tile = SHORT_TILE
    ns = PREFETCH + 1 + -(-d // tile)          # ring slots: prefetch + current + the carry
    smem = ns * tile + 16                      # + slot 0's first word repeated after the ring
    fn, blocks = _function_on(device, "rotate_short", smem, SHORT_BLOCKS_PER_SM, SHORT_THREADS)
    span = length + align                      # tiles start on 16-byte aligned addresses
    chunk_tiles = max(-(-span // (tile * blocks)), -(-(d + 16) // tile))   # chunk > d bytes
    nchunks = -(-span // (chunk_tiles * tile))
    main = Launch(fn, nchunks, SHORT_THREADS,
                  [(_PTR, 0), (_I64, length), (_I64, d), (_I32, int(left)), (_U64, 0),
                   (_PTR, 0), (_I64, tile), (_I32, ns), (_I64, chunk_tiles), (_I64, nchunks),
                   (_PTR, 0), (_U64, timeout_ns)], shared=smem)
    return _Pass(_prepare(device, words, *nfill), main)


def _launch_short(device, base0, step, scratch, ctrl, words, err, timeout_ns, stream_ptr):
    _, off, length, d, left = step
    base = base0 + off
    pad, sbase, fills = short_scratch(length, d, left, base, scratch)
    (f0, a0, n0), (f1, a1, n1) = fills
    run = _short_pass(device, step, base % 16, words, (n0, n1), timeout_ns)
    run([(0, ctrl), (2, scratch + f0), (3, base + a0), (5, scratch + f1), (6, base + a1)],
        [(0, base), (4, sbase), (5, ctrl), (10, err)], stream_ptr)


@functools.lru_cache(maxsize=_PASSES_CACHED)
def _column_pass(device: int, step: tuple, words: int, timeout_ns: int) -> _Pass:
    _, _, length, d, left, lanes, rem = step
    stash = column_stash(d, rem)
    fn, blocks = _function_on(device, "rotate_column", LANE_SMEM, COLUMN_BLOCKS_PER_SM, THREADS)
    width, segments = column_layout(d, lanes, rem, blocks)
    ncols = -(-d // width)
    main = Launch(fn, ncols * segments, THREADS,
                  [(_PTR, 0), (_I64, length), (_I64, d), (_I64, lanes), (_I64, rem),
                   (_I32, int(left)), (_PTR, 0), (_PTR, 0), (_PTR, 0), (_I64, width),
                   (_I64, ncols), (_I64, segments), (_PTR, 0), (_U64, timeout_ns)],
                  shared=column_smem(width, lanes))
    return _Pass(_prepare(device, words, rem, d if stash else 0), main)


def _launch_column(device, base0, step, scratch, ctrl, words, err, timeout_ns, stream_ptr):
    _, off, length, d, left, lanes, rem = step
    base = base0 + off
    stash = column_stash(d, rem)
    rem_off = -(-d // 16) * 16 if stash else 0
    lane0 = base + (0 if left else length - d)
    run = _column_pass(device, step, words, timeout_ns)
    # the saves: the remainder, then (stash) lane 0; the pass reads them at the same addresses
    run([(0, ctrl), (2, scratch + rem_off), (3, base + (lanes * d if left else 0)),
         (5, scratch), (6, lane0)],
        [(0, base), (6, scratch if stash else 0), (7, scratch + rem_off), (8, ctrl), (12, err)],
        stream_ptr)
