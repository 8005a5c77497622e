"""In-place rotation of a 1-D array (``std::rotate``) on the GPU, and its NumPy twin.

``rotate(x, k)`` turns ``x`` into ``numpy.roll(x, -k)`` inside x's own memory.  Elements are moved
as raw bytes, so any element size works (rotating by ``k`` elements is rotating the bytes by
``k * itemsize``); ``k`` may be negative or larger than ``len(x)`` (it is taken modulo ``len(x)``).

How (details and the deadlock argument in ``rotate.cu``): the host turns (bytes, shift) into a
short *plan* of one or more passes; each pass is one kernel that reads every byte it moves once
and writes it once, keeping tiles in shared memory, with tiles handed out by an atomic ticket in
a closed-form order so that a block only ever waits for tickets smaller than its own.

* ``short`` pass (shift ``d = min(k, n - k)`` bytes at most :data:`SCRATCH_BYTES`): the ``d``
  bytes that wrap around are saved first; destination tiles are then filled left to right (right
  to left for a right rotation), each tile waiting for the tiles that read its old contents.
* ``column`` pass (``n = L * d + s`` with ``L <= LMAX`` lanes and ``s <= SCRATCH_BYTES``): the
  array is ``L`` lanes of ``d`` bytes plus a remainder of ``s``; one block owns a column of
  ``W`` bytes across all lanes, so the lane-to-lane moves stay inside the block and only the lane
  that wraps around (shifted by ``s``) waits for a neighbouring column.
* otherwise a ``column`` pass with ``s = 0`` over the first ``min(L, LMAX)`` lanes moves them into
  place, and the plan continues on the rest (a Gries-Mills step): total traffic stays within
  ``LMAX / (LMAX - 1)`` of one pass while ``L > LMAX``, and shrinks geometrically afterwards.

Device memory beyond the array: at most :data:`SCRATCH_BYTES` of saved bytes plus a ring of
:data:`RING` ticket flags (16 KiB), well under 1 MiB.  No host synchronisation, no host-built
tables, no host-to-device copies.

Kernel variants (``rotate(x, k, variant=...)``, all running the same plan and the same per-ticket
work, so the same bytes): ``"tile"`` (one block per ticket) and ``"pipe"`` / ``"pipe14k"``
(persistent blocks that keep :data:`PIPE_STAGES` - 1 tickets' ``cp.async`` loads in flight while
publishing and storing the current ticket; 8 KiB or 14 KiB short tiles).  The pipelined kernels
bound every spin-wait (:data:`PIPE_TIMEOUT_NS`): a stuck wait makes the kernel finish early and
``rotate`` raise :class:`fsstgpu.DeviceError` (``check=True``, one synchronisation) instead of
hanging.

Default (``variant=None``): chosen per pass by :data:`DEFAULT_PASS_VARIANT`.  Measured on an
NVIDIA H200, 2026-11-29, one run (BENCHMARKS.md, section 3), 1 GiB int32
and uint8 arrays alike, % of the same run's device-to-device copy bandwidth:

* short passes (k = 1, 1000, 4096*3+5, n-1): ``pipe14k`` 41-45%, ``tile`` 33-34%, ``pipe``
  15-27%: the short pass runs ``pipe14k``;
* column pass, k = n/3 (3 lanes): ``tile`` 43-44%, ``pipe`` 25-29%, ``pipe14k`` 26-27%: the column
  pass runs ``tile``.  (At k = n/2, 2 lanes, ``pipe`` / ``pipe14k`` measured 55-57% against
  ``tile``'s 47-48%; one data point, not used: ``rotate(x, k, variant="pipe")`` gets it.)

A plan with a short pass therefore synchronises once by default (``check=True``); pass
``check=False`` to keep the call free of host synchronisation.
"""

from __future__ import annotations

import operator

import numpy as np

from fsstgpu.device import get_cupy
from fsstgpu.errors import DeviceError
from fsstgpu.kernels._loader import get_function

SOURCE = "rotate.cu"
SCRATCH_BYTES = 512 * 1024      # most bytes a pass ever saves (the wrapping head / remainder)
RING = 4096                     # ticket flag slots (uint32), plus one ticket counter
SHORT_TILE = 8192               # bytes per destination tile of the short pass
COLUMN_SMEM = 48 * 1024 - 256   # dynamic shared memory of a column block, (L+1)*(W+48) bytes
                                # (48 KiB less room for the static ticket variable)
COLUMN_MAX_W = 8192             # widest column
COLUMN_MIN_W = 256              # narrowest column worth a pass (decides LMAX)
LMAX = COLUMN_SMEM // (COLUMN_MIN_W + 48) - 1
THREADS = 256

# Pipelined persistent variants (rotate.cu, "Pipelined persistent variants")
VARIANTS = ("tile", "pipe", "pipe14k")
# variant=None: the kernel of each pass of the plan (H200, 2026-11-29; see the module docstring):
# short passes pipe14k (41-45% of copy vs tile 33-34%), column passes tile (k=n/3: 43-44% vs
# pipe 25-29%, pipe14k 26-27%).
DEFAULT_PASS_VARIANT = {"short": "pipe14k", "column": "tile"}
PIPE_STAGES = 3                  # must match PIPE_STAGES in rotate.cu
PIPE_SHORT_TILE = {"pipe": 8192, "pipe14k": 14336}
PIPE_SMEM = 48 * 1024 - 256      # dynamic shared memory budget of one pipelined block
PIPE_MIN_W = 256                 # narrower pipelined columns fall back to the "tile" kernel
PIPE_BLOCKS_PER_SM = {"short": 5, "column": 4}   # resident blocks per SM (registers, smem)
PIPE_TIMEOUT_NS = 2_000_000_000  # a single wait longer than this aborts the kernel


# ------------------------------------------------------------------------------------------------
# The plan (shared by both paths, so the CPU twin checks it in CI)
# ------------------------------------------------------------------------------------------------

def column_width(lanes: int) -> int:
    """Bytes per lane of one column block with ``lanes`` lanes (a multiple of 16)."""
    w = (COLUMN_SMEM // (lanes + 1) - 48) // 16 * 16
    return min(COLUMN_MAX_W, w)


def pipe_column_width(lanes: int) -> int:
    """Bytes per lane of a pipelined column (``PIPE_STAGES`` stages of ``lanes + 1`` buffers of
    ``W + 64`` bytes in :data:`PIPE_SMEM`), a multiple of 16; below :data:`PIPE_MIN_W` the pass
    runs on the ``"tile"`` kernel instead."""
    w = (PIPE_SMEM // (PIPE_STAGES * (lanes + 1)) - 64) // 16 * 16
    return min(COLUMN_MAX_W, w)


def pipe_short_scratch(nb: int, d: int, left: bool, base: int, scratch_ptr: int):
    """Where the pipelined short pass keeps its copy of old bytes.

    Returns ``(pad, sbase, fills)``: the copy region starts at ``scratch_ptr + pad`` and holds
    virtual source positions ``[v0, v0 + d + 32)`` (left: ``v0 = nb - 16``, right:
    ``v0 = -d - 16``) at address ``sbase + v`` (mod 2**64), aligned like ``base + v``; ``fills``
    lists ``(scratch offset, array offset, length)`` copies of old array bytes to make first
    (left: the last ``min(16, nb)`` bytes, then ``[0, d)``; right: ``[nb - d, nb)``, then the
    first ``min(16, nb)`` bytes).

    Examples
    --------
    >>> from fsstgpu.kernels.rotate import pipe_short_scratch
    >>> pipe_short_scratch(100, 3, True, 0x1000, 0x2000)
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
    """Passes that rotate ``nbytes`` bytes left by ``shift`` bytes.

    Returns a list of ``("short", offset, length, d, left)`` and
    ``("column", offset, length, d, left, lanes, remainder)`` tuples; each rotates the byte range
    ``[offset, offset + length)`` left (``left``) or right by ``d`` bytes.

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

def rotate(x, k: int, *, stream=None, variant: str | None = None, check: bool = True):
    """Rotate a 1-D array left by ``k`` elements in place; NumPy runs the CPU twin.

    Parameters
    ----------
    x : numpy.ndarray or cupy.ndarray
        1-D contiguous array of any fixed-size dtype (1, 2, 4, 8, 16 bytes ... all work).
    k : int
        Elements to rotate by (``x`` becomes ``roll(x, -k)``); negative rotates right.
    stream : cupy.cuda.Stream, optional
        Stream for the GPU work (default: the current stream).  Nothing synchronises, except
        ``check`` after pipelined passes.
    variant : str, optional
        GPU kernel variant for every pass, one of :data:`VARIANTS`; ignored on the CPU.  None
        (default) picks per pass from :data:`DEFAULT_PASS_VARIANT`: ``"pipe14k"`` for the short
        pass, ``"tile"`` for column passes (the fastest measured on an H200, 2026-11-29).
    check : bool, default True
        When a pass ran a pipelined kernel (``"pipe"``, ``"pipe14k"``, and the default's short
        pass): synchronise once at the end and raise ``DeviceError`` when a bounded wait timed
        out (the result is then garbage).  With False nothing synchronises.

    Returns
    -------
    numpy.ndarray or cupy.ndarray
        ``x`` itself.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.kernels import rotate
    >>> rotate(np.arange(5, dtype=np.uint8), -1)
    array([4, 0, 1, 2, 3], dtype=uint8)
    """
    if variant is not None and variant not in VARIANTS:
        raise ValueError(f"rotate variant must be one of {VARIANTS}, not {variant!r}")
    if isinstance(x, np.ndarray):
        return rotate_cpu(x, k)
    if not type(x).__module__.startswith("cupy"):
        raise TypeError(f"rotate needs a numpy or cupy array, not {type(x).__name__}")
    cp = get_cupy()
    k = _normalise(x, k)
    steps = plan(x.nbytes, k * x.dtype.itemsize)
    if not steps:
        return x
    kernels = [pass_variant(step[0], variant) for step in steps]
    stream = stream or cp.cuda.get_current_stream()
    with stream:
        raw = x.view(cp.uint8)
        # scratch: saved bytes plus slack for alignment ("tile": 16 bytes; pipelined: the copy
        # region needs d + 32 bytes plus alignment, see pipe_short_scratch); control: flag ring +
        # ticket, reset by every launch.
        piped = [v for v in kernels if v != "tile"]
        scratch = cp.empty(SCRATCH_BYTES + (64 if piped else 32), dtype=cp.uint8)
        ctrl = cp.empty(RING + 1, dtype=cp.uint32)
        err = cp.zeros(1, dtype=cp.uint32) if piped else None
        for step, v in zip(steps, kernels, strict=True):
            if v == "tile":
                _launch(cp, raw, step, scratch, ctrl, stream)
            else:
                _launch_pipe(cp, raw, step, scratch, ctrl, err, stream, v)
        if piped and check and int(err.get(stream=stream)[0]):
            raise DeviceError(f"rotate variant {piped[0]!r}: a wait timed out after "
                              f"{PIPE_TIMEOUT_NS / 1e9:g} s (kernel aborted; the array is "
                              "garbage)")
    return x


def pass_variant(kind: str, variant: str | None = None) -> str:
    """Kernel variant that runs a ``kind`` pass (``"short"`` / ``"column"``) of the plan.

    Examples
    --------
    >>> from fsstgpu.kernels.rotate import pass_variant
    >>> pass_variant("short"), pass_variant("column"), pass_variant("column", "pipe")
    ('pipe14k', 'tile', 'pipe')
    """
    return DEFAULT_PASS_VARIANT[kind] if variant is None else variant


def _sm_count(cp) -> int:
    return int(cp.cuda.Device().attributes["MultiProcessorCount"])


def _launch_pipe(cp, raw, step, scratch, ctrl, err, stream, variant) -> None:
    kind, off, length, d, left = step[:5]
    base = raw.data.ptr + off
    if kind == "short":
        tile = PIPE_SHORT_TILE[variant]
        ctrl.fill(0)
        pad, sbase, fills = pipe_short_scratch(length, d, left, base, scratch.data.ptr)
        for s_off, a_off, ln in fills:
            scratch[s_off:s_off + ln] = raw[off + a_off: off + a_off + ln]
        al0 = base % 16
        ntiles = -(-(length + al0) // tile)
        grid = max(1, min(ntiles, _sm_count(cp) * PIPE_BLOCKS_PER_SM["short"]))
        fn = get_function(SOURCE, "rotate_short_pipe")
        fn((grid,), (THREADS,),
           (cp.uint64(base), cp.int64(length), cp.int64(d), cp.int32(bool(left)),
            cp.uint64(sbase), ctrl, cp.int64(tile), cp.int32(al0), cp.int64(ntiles), err,
            cp.uint64(PIPE_TIMEOUT_NS)),
           shared_mem=PIPE_STAGES * (tile + 64), stream=stream)
        return
    lanes, rem = step[5], step[6]
    width = pipe_column_width(lanes)
    if width < PIPE_MIN_W:
        _launch(cp, raw, step, scratch, ctrl, stream)     # too many lanes to pipeline
        return
    ctrl.fill(0)
    rem_start = lanes * d if left else 0
    pad = 0
    if rem:
        pad = (base + rem_start - scratch.data.ptr) % 16
        scratch[pad:pad + rem] = raw[off + rem_start: off + rem_start + rem]
    ncols = -(-d // width)
    grid = max(1, min(ncols, _sm_count(cp) * PIPE_BLOCKS_PER_SM["column"]))
    fn = get_function(SOURCE, "rotate_column_pipe")
    fn((grid,), (THREADS,),
       (cp.uint64(base), cp.int64(length), cp.int64(d), cp.int32(lanes), cp.int64(rem),
        cp.int32(bool(left)), cp.uint64(scratch.data.ptr + pad), ctrl, cp.int64(width),
        cp.int64(ncols), err, cp.uint64(PIPE_TIMEOUT_NS)),
       shared_mem=PIPE_STAGES * (lanes + 1) * (width + 64), stream=stream)


def _launch(cp, raw, step, scratch, ctrl, stream) -> None:
    kind, off, length, d, left = step[:5]
    ctrl.fill(0)
    base = raw.data.ptr + off
    if kind == "short":
        saved_from = 0 if left else length - d
        # align the saved bytes like the bytes they continue, so tiles load them with 16 B words
        pad = ((base + length) if left else (base - d)) - scratch.data.ptr
        pad %= 16
        scratch[pad:pad + d] = raw[off + saved_from: off + saved_from + d]
        al0 = base % 16
        ntiles = -(-(length + al0) // SHORT_TILE)
        fn = get_function(SOURCE, "rotate_short")
        fn((ntiles,), (THREADS,),
           (cp.uint64(base), cp.int64(length), cp.int64(d), cp.int32(bool(left)),
            cp.uint64(scratch.data.ptr + pad), ctrl, cp.int64(SHORT_TILE), cp.int32(al0),
            cp.int64(ntiles)),
           shared_mem=SHORT_TILE + 48, stream=stream)
        return
    lanes, rem = step[5], step[6]
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
