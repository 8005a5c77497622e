"""The column contract's limits (the field table of :mod:`fsstgpu.arrays`), in one place.

The compressor, the structural checks (:mod:`fsstgpu.checks`), the GPU batches and the readers
and writers of every format take them from here, so that a column one part accepts no other part
refuses:

* :data:`MAX_TABLES`: symbol tables (blocks) in a column, in one GPU batch, in a multi-table
  extension array: ``split_table`` (and the extension storage's per-string table index) is
  uint16.
* :data:`MAX_SPLIT_SIZE`: the split size ``S`` is an int64 everywhere (the split planner, the
  decoders, the extension type's metadata), so at most ``2**63 - 1``; at least 1.

>>> from fsstgpu.limits import MAX_TABLES, check_split_size
>>> MAX_TABLES, check_split_size(4096)
(65536, 4096)
>>> check_split_size(0)
Traceback (most recent call last):
...
ValueError: split_size 0 is not a split size in 1..2**63 - 1
"""

from __future__ import annotations

import operator

import numpy as np

__all__ = ["MAX_SPLIT_SIZE", "MAX_TABLES", "SPLIT_SIZES", "check_blocks", "check_split_size",
           "flag", "whole_number"]

#: the most symbol tables (blocks) a column holds: ``split_table`` is uint16
MAX_TABLES = 1 << 16
#: the largest split size: an int64
MAX_SPLIT_SIZE = 2**63 - 1
#: the split sizes allowed, as messages name them
SPLIT_SIZES = "1..2**63 - 1"


def check_blocks(count: int) -> None:
    """ValueError where a compressor's plan has more than :data:`MAX_TABLES` blocks (a table
    each).

    Examples
    --------
    >>> from fsstgpu.limits import check_blocks
    >>> check_blocks(70000)
    Traceback (most recent call last):
    ...
    ValueError: 70000 blocks; at most 65536 (chunk the column less finely)
    """
    if count > MAX_TABLES:
        raise ValueError(f"{count} blocks; at most {MAX_TABLES} (chunk the column less finely)")


def check_split_size(split_size, error: type[Exception] = ValueError, *,
                     what: str = "split_size") -> int:
    """Return ``split_size`` as an int, or raise ``error`` when it is outside
    1..\\ :data:`MAX_SPLIT_SIZE`.

    Parameters
    ----------
    split_size : int
    error : exception class
        ValueError for an argument, :class:`~fsstgpu.errors.CorruptDataError` for stored data.
    what : str
        What the message calls it.

    Examples
    --------
    >>> from fsstgpu.errors import CorruptDataError
    >>> from fsstgpu.limits import check_split_size
    >>> check_split_size(2**63, CorruptDataError, what="S")
    Traceback (most recent call last):
    ...
    fsstgpu.errors.CorruptDataError: S 9223372036854775808 is not a split size in 1..2**63 - 1
    """
    try:
        split_size = whole_number(split_size)
    except TypeError:  # (read from a file or blob: corrupt data, not a caller's mistake)
        raise (TypeError if error is ValueError else error)(
            f"{what} must be an integer, not {type(split_size).__name__}: "
            f"{split_size!r}") from None
    if not 1 <= split_size <= MAX_SPLIT_SIZE:
        raise error(f"{what} {split_size} is not a split size in {SPLIT_SIZES}")
    return int(split_size)


def whole_number(value) -> int:
    """``value`` as an int where it is one: ``operator.index`` (``int()`` took 1.5 as 1 and
    "4096" as 4096), a bool refused too (``operator.index`` takes True as 1); TypeError else.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.limits import whole_number
    >>> whole_number(np.int64(4096))
    4096
    >>> whole_number(True)
    Traceback (most recent call last):
    ...
    TypeError: True is a bool, not a whole number
    """
    if isinstance(value, bool):
        raise TypeError(f"{value!r} is a bool, not a whole number")
    return operator.index(value)


def flag(value, name: str) -> bool:
    """``value`` as a bool where it is one (a bool or a NumPy bool); TypeError naming the
    parameter ``name`` else: a truthy object was taken as True (``force="no"`` overwrote).

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.limits import flag
    >>> flag(np.bool_(True), "force")
    True
    >>> flag("no", "force")
    Traceback (most recent call last):
    ...
    TypeError: force must be a bool, not str: 'no'
    """
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise TypeError(f"{name} must be a bool, not {type(value).__name__}: {value!r}")
