"""The compiled trainer's entry points (``fsstgpu._native``, C++ in ``fsstgpu/csrc/train*``).

:mod:`fsstgpu.training` documents the algorithm and makes SymbolTables of these symbols.
"""

from __future__ import annotations

import numpy as np

from fsstgpu._native import (
    sample_of as _sample_of,
    train_range as _train_range,
    train_sample as _train_sample,
)

__all__ = ["sample_of", "train_sample", "train_symbols"]

# The compiled trainer (csrc/train.h, also called from C++): fsstgpu.training documents the
# algorithm and makes SymbolTables of these symbols. Symbols come as (values, lengths): uint64
# little-endian bytes, zero beyond each length, and uint8 lengths 1-8, in no particular order.


def train_symbols(data, offsets, lo, hi, sample_bytes, seed, extra_rounds=3):
    """Train symbols on strings ``lo:hi`` of ``data``/``offsets``: a sample of
    ``sample_bytes`` (:func:`sample_of`) and ``4 + extra_rounds + 1`` rounds of
    compress-and-count (``extra_rounds=0``: the reference's five, for cheap probe tables).

    Parameters
    ----------
    data : numpy.ndarray of uint8
    offsets : numpy.ndarray of int64
        ``offsets[lo:hi + 1]`` non-decreasing, inside ``data`` (else ValueError).
    lo, hi : int
        The strings to train on, ``0 <= lo <= hi < len(offsets)``.
    sample_bytes : int
        At least 1.
    seed : int
        The sample's generator seed (:data:`fsstgpu.training.SEED` for tables).
    extra_rounds : int, optional

    Returns
    -------
    values : numpy.ndarray of uint64
    lengths : numpy.ndarray of uint8
        At most 255 distinct symbols.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import native
    >>> data = np.frombuffer(b"hello world" * 100, np.uint8)
    >>> values, lengths = native.train_symbols(data, np.arange(0, 1101, 11), 0, 100, 4096, 1)
    >>> int.from_bytes(b"hello wo", "little") in values.tolist()
    True
    """
    return _train_range(np.ascontiguousarray(data, np.uint8),
                        np.ascontiguousarray(offsets, np.int64), int(lo), int(hi),
                        int(sample_bytes), int(seed), int(extra_rounds))


def train_sample(sample, offsets, extra_rounds=3):
    """:func:`train_symbols` on a sample as it is: strings ``sample[offsets[i]:offsets[i + 1]]``.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import native
    >>> values, lengths = native.train_sample(np.frombuffer(b"abcabcabc" * 200, np.uint8),
    ...                                       np.arange(0, 1801, 9), extra_rounds=0)
    >>> sorted(int(v).to_bytes(8, "little")[:n] for v, n in zip(values, lengths))
    [b'a', b'abcabca', b'b', b'bc']
    """
    return _train_sample(np.ascontiguousarray(sample, np.uint8),
                         np.ascontiguousarray(offsets, np.int64), int(extra_rounds))


def sample_of(data, offsets, lo, hi, sample_bytes, seed):
    """The training sample of strings ``lo:hi``: all of them (copied) when they hold fewer than
    ``sample_bytes`` bytes; when they hold fewer than four times that, 512-byte pieces spread
    evenly over them, none twice, ``n * (1 - exp(-sample_bytes / n))`` bytes of their ``n``
    (what random draws would hold of distinct bytes on average: :mod:`fsstgpu.training`); else
    random strings (a random 512-byte piece of longer ones) from a generator seeded with
    ``seed`` until ``sample_bytes`` bytes are collected.

    Returns
    -------
    sample : numpy.ndarray of uint8
    sample_offsets : numpy.ndarray of int64
        The pieces' boundaries in ``sample``, from 0.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu import native
    >>> data = np.frombuffer(b"ab" * 1000, np.uint8)
    >>> sample, offs = native.sample_of(data, np.array([0, 2000]), 0, 1, 100, seed=7)
    >>> len(sample), offs.tolist()  # one random 512-byte piece of the 2000-byte string
    (512, [0, 512])
    >>> data = np.frombuffer(b"".join(b"%d" % i for i in range(10, 30)), np.uint8)
    >>> sample, offs = native.sample_of(data, np.arange(0, 41, 2), 0, 20, 16, seed=7)
    >>> bytes(sample)  # 13 of 40 bytes wanted: every third string
    b'10131619222528'
    """
    return _sample_of(np.ascontiguousarray(data, np.uint8),
                      np.ascontiguousarray(offsets, np.int64), int(lo), int(hi),
                      int(sample_bytes), int(seed))
