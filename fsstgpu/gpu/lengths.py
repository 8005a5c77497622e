"""A batch's string lengths as they travel to the GPU (:class:`~fsstgpu.gpu.layout.HostBatch`):
narrowed to the narrowest unsigned dtype that holds them, or bit-plane packed (FBP2).

The narrow layout reads each column's int64 lengths once: a compiled pass
(:func:`fsstgpu.native.narrow_lengths`) narrows them into the batch's buffer and ORs them, in a
dtype guessed from a sample (:func:`sampled_top`); the OR tells whether the guess held.

>>> import numpy as np
>>> from fsstgpu.gpu.lengths import narrowed, narrowest
>>> narrowest(255), narrowest(256), narrowed(np.array([1, 70_000])).dtype
(dtype('uint8'), dtype('uint16'), dtype('uint32'))
"""

from __future__ import annotations

import numpy as np

from fsstgpu.errors import CorruptDataError
from fsstgpu.kernels.bitplane_cpu import bitplane_pack_cpu, bitplane_unpack_cpu, parse_header
from fsstgpu.native import narrow_lengths
from fsstgpu.parallel import run_tasks, thread_count

__all__ = ["narrow_all", "narrowed", "narrowest", "packed_lengths", "sampled_top"]

#: lengths per task when narrowing in parallel (numpy releases the GIL for the copies)
_TASK_LENGTHS = 1 << 20
#: lengths a column's sample holds (at most), to guess the batch's lengths dtype from
_SAMPLE = 64
#: lengths from which the compiled narrowing runs on several threads (it cuts fewer into one
#: task: csrc/checks_column.h's kParallelItems), so smaller columns skip counting the cores
_PARALLEL_LENGTHS = 1 << 21


def _max(lengths) -> int:
    """The largest length (0 for none), over the cores for long arrays."""
    n = len(lengths)
    if n <= _TASK_LENGTHS:
        return int(lengths.max()) if n else 0
    tops = [0] * (-(-n // _TASK_LENGTHS))
    run_tasks(lambda k: tops.__setitem__(
        k, int(lengths[k * _TASK_LENGTHS : (k + 1) * _TASK_LENGTHS].max())), len(tops))
    return max(tops)


def _narrow_into(lengths, out) -> None:
    """``out[...] = lengths`` (a narrower dtype that holds them), over the cores for long arrays."""
    n = len(lengths)
    ntasks = -(-n // _TASK_LENGTHS)
    if ntasks <= 1:
        np.copyto(out, lengths, casting="unsafe")
        return
    run_tasks(lambda k: np.copyto(out[k * _TASK_LENGTHS : (k + 1) * _TASK_LENGTHS],
                                  lengths[k * _TASK_LENGTHS : (k + 1) * _TASK_LENGTHS],
                                  casting="unsafe"), ntasks)


def sampled_top(carrs) -> int:
    """A guess of the columns' longest length, never above it (so ``narrowest`` of it is at most
    the batch's lengths dtype): the OR of a sample of each column's int64 lengths (about
    ``_SAMPLE`` of them, evenly spaced), the exact maximum of narrower ones (a staged column's).
    Its dtype is the batch's unless a string the sample missed needs a wider one, which
    :func:`narrow_all` tells.

    Examples
    --------
    >>> import pyarrow as pa, fsstgpu
    >>> from fsstgpu.gpu.lengths import sampled_top
    >>> sampled_top([fsstgpu.compress(pa.array(["ab", "c"]))])
    3
    """
    top = 0
    for c in carrs:
        lens = c.lengths
        n = len(lens)
        if not n:
            continue
        if lens.dtype == np.int64:
            top |= int(np.bitwise_or.reduce(lens[:: -(-n // _SAMPLE)]))
        else:
            top |= _max(lens)
    return top


def narrow_all(carrs, out, top: int) -> int:
    """Every column's lengths into ``out`` one after the other, each kept to ``out``'s low
    bytes, and ``top`` ORed with the int64 ones: those lengths fit ``out``'s dtype exactly when
    ``narrowest`` of the result is at most it. Each int64 column is read once (a compiled pass
    that narrows and ORs), where a max and then a copy read it twice; the narrower lengths of
    staged columns are copied, their maximum being in ``top`` already (:func:`sampled_top`).

    Examples
    --------
    >>> import numpy as np, pyarrow as pa, fsstgpu
    >>> from fsstgpu.gpu.lengths import narrow_all
    >>> out = np.empty(3, np.uint8)
    >>> cols = [fsstgpu.compress(pa.array(["ab", "c"])), fsstgpu.compress(pa.array(["x" * 300]))]
    >>> narrow_all(cols, out, 0), out.tolist()  # 300 needs uint16: the caller lays out again
    (303, [2, 1, 44])
    """
    pos = 0
    for c in carrs:
        lens, n = c.lengths, c.length
        if lens.dtype == np.int64:
            top |= narrow_lengths(lens, out[pos : pos + n],
                                  thread_count() if n >= _PARALLEL_LENGTHS else 1)
        else:
            _narrow_into(lens, out[pos : pos + n])
        pos += n
    return top


def packed_lengths(carr) -> np.ndarray:
    """``carr``'s lengths as a bit-plane buffer (FBP2): the one it came with (a blob stores them
    so; ones the library did not make are checked against the lengths first), else packed now
    and kept on the column for its next upload.

    Raises
    ------
    CorruptDataError
        When ``carr.packed_lengths`` were given (constructor or attribute) and are not its
        lengths packed as the GPU unpacks them into offsets (FBP2, unsigned, no delta).

    Examples
    --------
    >>> import pyarrow as pa, fsstgpu
    >>> from fsstgpu.gpu.lengths import packed_lengths
    >>> from fsstgpu.kernels.bitplane import bitplane_unpack_cpu
    >>> carr = fsstgpu.compress(pa.array(["ab", None, "cde"]))
    >>> bitplane_unpack_cpu(packed_lengths(carr)).tolist()
    [2, 0, 3]
    """
    packed = carr.packed_lengths
    if packed is None:
        packed = bitplane_pack_cpu(narrowed(carr.lengths))
        packed.flags.writeable = False
        # a cache of the column's own lengths, so known good: written past the column's
        # __setattr__, which would mark it unchecked (the column keeps its validation too)
        object.__setattr__(carr, "packed_lengths", packed)
    elif not getattr(carr, "packed_lengths_checked", True):
        _check_packed(packed, carr.lengths)
    return packed


def _check_packed(packed, lengths) -> None:
    """CorruptDataError unless ``packed`` is ``lengths`` in FBP2 (unsigned, no delta): the
    decode builds the Arrow offsets from it alone, so wrong values would give wrong strings or
    offsets past the data. One CPU unpack, paid by columns the library did not pack."""
    why = "packed_lengths are not the column's string lengths"
    version, dtype, _, flags, _ = parse_header(packed[:16].tobytes(), len(packed))
    if version != 2 or dtype.kind != "u" or flags:
        raise CorruptDataError(f"{why} (the GPU unpacks FBP2, unsigned, without delta)")
    if not np.array_equal(bitplane_unpack_cpu(packed), lengths):
        raise CorruptDataError(why)


def narrowed(lengths) -> np.ndarray:
    """A copy of ``lengths`` in the narrowest unsigned dtype that holds them.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.gpu.lengths import narrowed
    >>> narrowed(np.array([3, 300], np.int64)).dtype
    dtype('uint16')
    """
    return lengths.astype(narrowest(_max(lengths)))


def narrowest(top: int):
    """The narrowest unsigned dtype that holds ``top`` (a column's longest string).

    Examples
    --------
    >>> from fsstgpu.gpu.lengths import narrowest
    >>> narrowest(0), narrowest(65536), narrowest(2**32)
    (dtype('uint8'), dtype('uint32'), dtype('uint64'))
    """
    for limit, dt in _NARROWER:  # (np.iinfo a dtype: ~0.6 us)
        if top <= limit:
            return dt
    return np.dtype(np.uint64)


_NARROWER = tuple((np.iinfo(dt).max, np.dtype(dt)) for dt in (np.uint8, np.uint16, np.uint32))
