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
