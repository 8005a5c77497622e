"""In-place rotation of a 1-D array (``std::rotate``) on the GPU, and its NumPy twin.

``rotate(x, k)`` turns ``x`` into ``numpy.roll(x, -k)`` inside x's own memory.  Elements are moved
as raw bytes, so any element size works (rotating by ``k`` elements is rotating the bytes by
``k * itemsize``); ``k`` may be negative or larger than ``len(x)`` (it is taken modulo ``len(x)``).

How (details and the deadlock arguments in ``rotate.cu``): the host turns (bytes, shift) into a
short *plan* of one or more passes (:func:`plan`); each pass is one kernel that reads every byte
it moves once and writes it once, keeping tiles in shared memory, with tiles handed out by an
atomic ticket in a closed-form order so that a block only ever waits for tickets smaller than its
own.

* ``short`` pass (shift ``d = min(k, n - k)`` bytes at most :data:`SCRATCH_BYTES`): the bytes
  that wrap around are copied first; destination tiles of :data:`SHORT_TILE` bytes are then
  filled left to right (right to left for a right rotation), each tile waiting for the tiles that
  read its old contents.  Persistent blocks keep the ``cp.async`` loads of
  :data:`SHORT_STAGES` - 1 tiles in flight while they publish and store the current one; every
  wait is bounded (``timeout``): a stuck wait makes the kernel finish early and :func:`rotate`
  raise :class:`fsstgpu.DeviceError` (``check=True``, one synchronisation) instead of hanging.
* ``column`` pass (``n = L * d + s`` with ``L <= LMAX`` lanes and ``s <= SCRATCH_BYTES``): the
  array is ``L`` lanes of ``d`` bytes plus a remainder of ``s``; one block owns a column of
  ``W`` bytes across all lanes, so the lane-to-lane moves stay inside the block and only the lane
  that wraps around (shifted by ``s``) waits for a neighbouring column.
* otherwise a ``column`` pass with ``s = 0`` over the first ``min(L, LMAX)`` lanes moves them into
  place, and the plan continues on the rest (a Gries-Mills step): total traffic stays within
  ``LMAX / (LMAX - 1)`` of one pass while ``L > LMAX``, and shrinks geometrically afterwards.

Device memory beyond the array: at most :data:`SCRATCH_BYTES` of saved bytes plus a ring of
:data:`RING` ticket flags (16 KiB), well under 1 MiB.  No host-built tables, no host-to-device
copies; the only host synchronisation is ``check`` after a short pass.
"""

from __future__ import annotations

import operator

import numpy as np

from fsstgpu.device import get_cupy
from fsstgpu.errors import DeviceError
from fsstgpu.kernels.loader import get_function

SOURCE = "rotate.cu"
SCRATCH_BYTES = 512 * 1024      # most bytes a pass ever saves (the wrapping head / remainder)
RING = 4096                     # ticket flag slots (uint32), plus one ticket counter
COLUMN_SMEM = 48 * 1024 - 256   # dynamic shared memory of a column block, (L+1)*(W+48) bytes
                                # (48 KiB less room for the static ticket variable)
COLUMN_MAX_W = 8192             # widest column
COLUMN_MIN_W = 256              # narrowest column worth a pass (decides LMAX)
LMAX = COLUMN_SMEM // (COLUMN_MIN_W + 48) - 1
THREADS = 256
SHORT_TILE = 14336              # bytes per destination tile of the short pass
SHORT_STAGES = 3                # tiles in flight per short-pass block (PIPE_STAGES in rotate.cu)
SHORT_BLOCKS_PER_SM = 5         # resident short-pass blocks per SM (registers, shared memory)
WAIT_TIMEOUT_S = 2.0            # default bound on one wait of the short pass


# ------------------------------------------------------------------------------------------------
# The plan (shared by both paths, so the CPU twin checks it in CI)
# ------------------------------------------------------------------------------------------------

def column_width(lanes: int) -> int:
    """Bytes per lane of one column block with ``lanes`` lanes (a multiple of 16).

    Examples
    --------
    >>> from fsstgpu.kernels.rotate import column_width
    >>> column_width(2), column_width(100)
    (8192, 432)
    """
    w = (COLUMN_SMEM // (lanes + 1) - 48) // 16 * 16
    return min(COLUMN_MAX_W, w)


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
        ``0 < d < length``.  Empty when there is nothing to do.

    Examples
    --------
    >>> from fsstgpu.kernels.rotate import plan
    >>> plan(100, 1)
    [('short', 0, 100, 1, True)]
    >>> plan(1 << 30, (1 << 30) // 2)
    [('column', 0, 1073741824, 536870912, True, 2, 0)]
    """
    steps: list[tuple] = []
    off, nb, k = 0, int(nbytes), int(shift)
    while nb > 1:
        k %= nb
        if k == 0:
            break
        left = k <= nb - k
        d = k if left else nb - k
        if d <= SCRATCH_BYTES:
            steps.append(("short", off, nb, d, left))
            break
        lanes, rem = divmod(nb, d)
        if lanes <= LMAX and rem <= SCRATCH_BYTES:
            steps.append(("column", off, nb, d, left, lanes, rem))
            break
        # Move min(lanes, LMAX) whole lanes into place (no remainder: no scratch), then finish the
        # rest, which is again a rotation by d of a shorter range.
        used = min(lanes, LMAX)
        if left:
            steps.append(("column", off, used * d, d, True, used, 0))
            off += (used - 1) * d
            nb -= (used - 1) * d
            k = d
        else:
            steps.append(("column", off + nb - used * d, used * d, d, False, used, 0))
            nb -= (used - 1) * d
            k = nb - d
    return steps


def _normalise(x, k) -> int:
    if x.ndim != 1:
        raise ValueError(f"rotate needs a 1-D array, got shape {x.shape}")
    if x.dtype.hasobject:
        raise TypeError("rotate cannot move object arrays")
    if not x.flags.c_contiguous:
        raise ValueError("rotate needs a contiguous array (it works in place)")
    k = operator.index(k)
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
    if not isinstance(x, np.ndarray):
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

def rotate(x, k: int, *, stream=None, check: bool = True, timeout: float = WAIT_TIMEOUT_S):
    """Rotate a 1-D array left by ``k`` elements in place; NumPy runs the CPU twin.

    Parameters
    ----------
    x : numpy.ndarray or cupy.ndarray
        1-D contiguous array of any fixed-size dtype (1, 2, 4, 8, 16 bytes ... all work).
    k : int
        Elements to rotate by (``x`` becomes ``roll(x, -k)``); negative rotates right.
    stream : cupy.cuda.Stream, optional
        Stream for the GPU work (default: the current stream).  Nothing synchronises, except
        ``check`` after a short pass.
    check : bool, default True
        When the plan has a short pass: synchronise once at the end and raise ``DeviceError``
        when one of its bounded waits timed out (the result is then garbage).  With False
        nothing synchronises.
    timeout : float, default 2.0
        Seconds one wait of the short pass may spin before the kernel gives up.

    Returns
    -------
    numpy.ndarray or cupy.ndarray
        ``x`` itself.

    Raises
    ------
    fsstgpu.DeviceError
        When a wait of the short pass timed out (``check=True``).

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
    if isinstance(x, np.ndarray):
        return rotate_cpu(x, k)
    if not type(x).__module__.startswith("cupy"):
        raise TypeError(f"rotate needs a numpy or cupy array, not {type(x).__name__}")
    cp = get_cupy()
    k = _normalise(x, k)
    steps = plan(x.nbytes, k * x.dtype.itemsize)
    if not steps:
        return x
    has_short = any(step[0] == "short" for step in steps)
    stream = stream or cp.cuda.get_current_stream()
    with stream:
        raw = x.view(cp.uint8)
        # scratch: saved bytes plus slack for alignment (column: 16 bytes; short: the copy
        # region needs d + 32 bytes plus alignment, see short_scratch); control: flag ring +
        # ticket, reset by every launch.
        scratch = cp.empty(SCRATCH_BYTES + (64 if has_short else 32), dtype=cp.uint8)
        ctrl = cp.empty(RING + 1, dtype=cp.uint32)
        err = cp.zeros(1, dtype=cp.uint32) if has_short else None
        timeout_ns = cp.uint64(max(1, int(timeout * 1e9)))
        for step in steps:
            if step[0] == "short":
                _launch_short(cp, raw, step, scratch, ctrl, err, timeout_ns, stream)
            else:
                _launch_column(cp, raw, step, scratch, ctrl, stream)
        if has_short and check and int(err.get(stream=stream)[0]):
            raise DeviceError(f"rotate: a wait of the short pass timed out after {timeout:g} s "
                              "(kernel aborted; the array is garbage)")
    return x


def _launch_short(cp, raw, step, scratch, ctrl, err, timeout_ns, stream) -> None:
    _, off, length, d, left = step
    base = raw.data.ptr + off
    ctrl.fill(0)
    pad, sbase, fills = short_scratch(length, d, left, base, scratch.data.ptr)
    for s_off, a_off, ln in fills:
        scratch[s_off:s_off + ln] = raw[off + a_off: off + a_off + ln]
    al0 = base % 16
    ntiles = -(-(length + al0) // SHORT_TILE)
    sms = int(cp.cuda.Device().attributes["MultiProcessorCount"])
    grid = max(1, min(ntiles, sms * SHORT_BLOCKS_PER_SM))
    fn = get_function(SOURCE, "rotate_short")
    fn((grid,), (THREADS,),
       (cp.uint64(base), cp.int64(length), cp.int64(d), cp.int32(bool(left)),
        cp.uint64(sbase), ctrl, cp.int64(SHORT_TILE), cp.int32(al0), cp.int64(ntiles), err,
        timeout_ns),
       shared_mem=SHORT_STAGES * (SHORT_TILE + 64), stream=stream)


def _launch_column(cp, raw, step, scratch, ctrl, stream) -> None:
    _, off, length, d, left, lanes, rem = step
    ctrl.fill(0)
    base = raw.data.ptr + off
    rem_start = lanes * d if left else 0
    pad = 0
    if rem:
        pad = (base + rem_start - scratch.data.ptr) % 16
        scratch[pad:pad + rem] = raw[off + rem_start: off + rem_start + rem]
    width = column_width(lanes)
    ncols = -(-d // width)
    fn = get_function(SOURCE, "rotate_column")
    fn((ncols,), (THREADS,),
       (cp.uint64(base), cp.int64(length), cp.int64(d), cp.int32(lanes), cp.int64(rem),
        cp.int32(bool(left)), cp.uint64(scratch.data.ptr + pad), ctrl, cp.int64(width),
        cp.int64(ncols)),
       shared_mem=(lanes + 1) * (width + 48), stream=stream)
