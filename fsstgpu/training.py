"""FSST symbol-table training (the algorithm of Boncz, Neumann and Leis, PVLDB 2020).

Training builds a table from a sample of the strings in five rounds. Each round

1. compresses part of the sample greedily with the current table (the fraction grows
   8, 38, 68, 98, 128 out of 128, so early rounds are cheap), counting how often every symbol
   is used, how often every pair of adjacent symbols occurs (the pair's concatenation, cut to 8
   bytes, is a candidate symbol), and the single bytes that start multi-byte matches (so that
   frequent bytes can become 1-byte symbols instead of 2-byte escapes);
2. scores each candidate by ``count * length`` (1-byte symbols weighted up: they cut escapes,
   which cost 2 bytes each, and make compression and decompression faster), drops candidates
   seen fewer than ``5 * fraction / 128`` times, and keeps the best 255 as the next table.

Here three extra rounds over the whole sample come before the last (more rounds let longer
symbols grow; +1.5% ratio on dbtext). The last round compresses the whole sample without
counting pairs; the final table is made from
the symbol counts of the best round (by bytes saved), so symbols that turned out unused are
dropped. A symbol of 3+ bytes is admitted only when its hash slot in the encoder's lookup
(:mod:`fsstgpu.encoder`) is free, so the encoder can always find every trained symbol.

The sample is drawn the reference's way, but larger: random strings (a random 512-byte piece
of longer ones) until ``sample_bytes`` bytes are collected, from a fixed-seed generator, so the
same input always gives the same table. Input smaller than four samples is sampled evenly
instead (512-byte pieces spread over it by bytes, none twice): random draws from so few strings
repeat many of them, and the even sample holds as many bytes as the draws would have held
distinct ones on average (``n * (1 - exp(-sample_bytes / n))`` of ``n`` bytes), so it trains
as well on fewer bytes (/usr paths' 79 blocks: 18% fewer sample bytes, ratio 4.097 -> 4.100).
Input smaller than the sample is used whole. The trainer is compiled (``csrc/train.cpp``,
callable from C++ through ``csrc/train.h``); this module checks inputs and makes tables.

Where a column gets a new table is :mod:`fsstgpu.blocks`' job.
"""

from __future__ import annotations

import numpy as np

from fsstgpu.arrow_layout import as_data_offsets, exact_array, is_non_decreasing
from fsstgpu.inputs import as_string_column
from fsstgpu.limits import check_split_size, whole_number
from fsstgpu.native import train_symbols
from fsstgpu.symbol_table import SymbolTable, as_symbol_table

DEFAULT_SAMPLE_BYTES = 48 << 10
#: Larger sample sizes train as this one does (on the whole input: no column is this large).
MAX_SAMPLE_BYTES = 1 << 48
# Tuned on dbtext (corpus ratio, reference 2.094): a 48 KB sample instead of 16 KB (+1.5%),
# three extra rounds over the whole sample before the last (+1.5%), and single bytes weighted 4x
# instead of 8x (+0.2%). Lower candidate thresholds or more rounds bought < 0.3% more. The
# compiled trainer holds these numbers (csrc/train.h TrainOptions, also the block planner's).
SEED = 4637947  # csrc/train.h kTrainSeed


def _readonly(a, dtype, name: str) -> np.ndarray:
    """A read-only contiguous view of ``a`` as ``dtype`` (a copy only when ``a`` is not one),
    the same numbers or an error naming ``name`` (:func:`~fsstgpu.arrow_layout.exact_array`)."""
    view = exact_array(a, dtype, name).view()
    view.flags.writeable = False
    return view


def checked_input(data, offsets, sample_bytes):
    """Check and normalise the arguments of :func:`train_table` and :func:`plan_blocks`.

    Returns ``(data, offsets, n, target)``: read-only contiguous uint8 / int64 arrays, the string
    count and the sample size in bytes.
    """
    data = _readonly(data, np.uint8, "data")
    offsets = _readonly(offsets, np.int64, "offsets")
    if offsets.ndim != 1 or len(offsets) == 0:
        raise ValueError("offsets must be a non-empty 1-D array (n + 1 string boundaries)")
    n = len(offsets) - 1
    if n and (offsets[0] < 0 or offsets[-1] > len(data) or not is_non_decreasing(offsets)):
        raise ValueError("offsets must be non-decreasing and inside data")
    # a sample past the input is the input: capped where the compiled code's int64 (and what
    # it computes from it) cannot overflow (2**63 reached pybind11 as a type error)
    return data, offsets, n, min(check_sample_bytes(sample_bytes), MAX_SAMPLE_BYTES)


def check_sample_bytes(sample_bytes) -> int:
    """``sample_bytes`` as the training sample's size: a positive integer, or None for
    :data:`DEFAULT_SAMPLE_BYTES` (TypeError or ValueError naming it otherwise).

    Examples
    --------
    >>> from fsstgpu.training import check_sample_bytes
    >>> check_sample_bytes(None) > 0, check_sample_bytes(4096)
    (True, 4096)
    """
    try:
        target = DEFAULT_SAMPLE_BYTES if sample_bytes is None else whole_number(sample_bytes)
    except TypeError:
        raise TypeError(f"sample_bytes must be an integer or None, not "
                        f"{type(sample_bytes).__name__}: {sample_bytes!r}") from None
    if target < 1:
        raise ValueError(f"sample_bytes must be positive, not {target}")
    return target


def check_compression_options(table, sample_bytes, split_size) -> tuple:
    """A compression's ``split_size``, ``sample_bytes`` and ``table`` checked before any work,
    as every entry point checks them: a wrong one is the caller's mistake even where nothing
    uses it (``compress(table=t, sample_bytes=-1)`` passed, a table without string columns took
    ``split_size=-1`` or ``table=5``, ``compress_device`` read them after its upload).

    Returns
    -------
    tuple
        ``(table, sample bytes, split_size)``: the table as a :class:`SymbolTable` (or None),
        the sample's bytes (:func:`check_sample_bytes`), the split size
        (:func:`~fsstgpu.limits.check_split_size`).

    Examples
    --------
    >>> from fsstgpu.training import check_compression_options
    >>> check_compression_options(None, 4096, 1024)
    (None, 4096, 1024)
    """
    split_size = check_split_size(split_size)
    target = check_sample_bytes(sample_bytes)
    return (None if table is None else as_symbol_table(table)), target, split_size


def train_table(data: np.ndarray, offsets: np.ndarray, *, sample_bytes=None) -> SymbolTable:
    """Train a symbol table on the strings ``data[offsets[i]:offsets[i+1]]``.

    Parameters
    ----------
    data : numpy.ndarray of uint8
        The strings' bytes, concatenated.
    offsets : numpy.ndarray of int64, shape (n + 1,)
        String boundaries in ``data`` (non-decreasing; ``offsets[0]`` need not be 0).
    sample_bytes : int, optional
        Bytes of sample to train on (default 49152; the reference uses 16384). Inputs smaller
        than this are used whole.

    Returns
    -------
    SymbolTable
        At most 255 symbols of 1-8 bytes; the same input always gives the same table.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.training import train_table
    >>> data = np.frombuffer(b"hello world" * 100, np.uint8)
    >>> t = train_table(data, np.arange(0, 1101, 11))
    >>> b"hello wo" in t.symbols
    True
    """
    data, offsets, n, target = checked_input(data, offsets, sample_bytes)
    if n == 0 or offsets[-1] == offsets[0]:
        return SymbolTable([])
    return train_range(data, offsets, 0, n, target)


def train_range(data, offsets, lo, hi, target):
    """Train on strings ``lo:hi`` of checked arrays (:func:`checked_input`) holding at least one
    byte, with a sample of ``target`` bytes."""
    return _table_of_symbols(*train_symbols(data, offsets, lo, hi, target, SEED))


def _table_of_symbols(values, lengths) -> SymbolTable:
    """The SymbolTable of trained symbols (uint64 little-endian ``values``, zero beyond each
    of ``lengths``), as the compiled trainer returns them."""
    raw = np.ascontiguousarray(values, "<u8").tobytes()
    return SymbolTable([raw[8 * i : 8 * i + n] for i, n in enumerate(lengths.tolist())])


def train(strings, *, sample_bytes=None) -> SymbolTable:
    """Train an FSST symbol table on a column of strings.

    Parameters
    ----------
    strings : pyarrow.Array, pyarrow.ChunkedArray, sequence of bytes or str, or (data, offsets)
        Any of the six Arrow string/binary types (sliced arrays and nulls are fine: nulls are
        ignored), Python strings (UTF-8 encoded) or bytes, or numpy ``(data, offsets)``.
    sample_bytes : int, optional
        Bytes of sample to train on (default 49152).

    Returns
    -------
    SymbolTable

    Raises
    ------
    TypeError
        For anything :func:`fsstgpu.compress` does not take (a list of integers, an Arrow
        array that is not of a string or binary type).

    Examples
    --------
    >>> from fsstgpu.training import train
    >>> t = train(["http://example.com/%d" % i for i in range(1000)])
    >>> 0 < len(t) <= 255
    True
    """
    if not (isinstance(strings, tuple) and len(strings) == 2
            and isinstance(strings[0], np.ndarray)):
        # compress's normaliser: what compress takes, train takes (a list of ints was trained
        # on as bytes, a dictionary array refused)
        strings = as_string_column(strings)
    data, offsets = as_data_offsets(strings)
    return train_table(data, offsets, sample_bytes=sample_bytes)


