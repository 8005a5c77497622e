"""The exceptions fsstgpu raises.

One base class, :class:`FsstGpuError`, so that callers can catch everything the library raises on
purpose; bad data and device trouble are told apart because they call for different reactions
(fix or skip the input, or fall back to the CPU).
"""


class FsstGpuError(Exception):
    """Base class of every error fsstgpu raises on purpose."""


class CorruptDataError(FsstGpuError, ValueError):
    """Compressed data is truncated, mis-sized or altered; the message says what is wrong.

    Examples
    --------
    >>> import fsstgpu
    >>> try:
    ...     fsstgpu.CompressedStringArray.from_bytes(b"not a blob")
    ... except fsstgpu.CorruptDataError as err:
    ...     print("corrupt")
    corrupt
    """


class DeviceError(FsstGpuError, RuntimeError):
    """A GPU was asked for and is missing, or failed."""


class BatchDecodeError(CorruptDataError):
    """Some columns of a batch decode are corrupt; the others are kept.

    Attributes
    ----------
    failed : dict of int to str
        Index of each corrupt column in the batch, and what the decoder found.
    results : list
        The decoded columns, None at the corrupt ones.

    Examples
    --------
    >>> from fsstgpu.errors import BatchDecodeError
    >>> err = BatchDecodeError({2: "a code that its symbol table does not define"},
    ...                        ["a", "b", None])
    >>> str(err)
    'column 2 of the batch: a code that its symbol table does not define'
    >>> err.results[:2]
    ['a', 'b']
    """

    def __init__(self, failed: dict, results: list):
        self.failed = dict(failed)
        self.results = list(results)
        super().__init__("; ".join(f"column {k} of the batch: {msg}"
                                   for k, msg in sorted(self.failed.items())))
