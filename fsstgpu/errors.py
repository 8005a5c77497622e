"""The exceptions fsstgpu raises.

One base class, :class:`FsstGpuError`, so that callers can catch everything the library raises on
purpose; bad data and device trouble are told apart because they call for different reactions
(fix or skip the input, or fall back to the CPU).
"""


class FsstGpuError(Exception):
    """Base class of every error fsstgpu raises on purpose.

    Examples
    --------
    >>> import fsstgpu
    >>> [issubclass(e, fsstgpu.FsstGpuError) for e in (fsstgpu.CorruptDataError,
    ...                                                fsstgpu.DeviceError)]
    [True, True]
    """


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
    """A GPU was asked for and is missing, or failed.

    Examples
    --------
    >>> import pyarrow as pa, fsstgpu
    >>> carr = fsstgpu.compress(pa.array(["a", None]))
    >>> try:
    ...     out = fsstgpu.decompress(carr, device="gpu")
    ... except fsstgpu.DeviceError:  # no usable GPU here: fall back to the CPU
    ...     out = fsstgpu.decompress(carr, device="cpu")
    >>> out.to_pylist()
    ['a', None]
    """


class OptionError(FsstGpuError, ValueError):
    """An option that does not fit the call's other options or its output (a usage error).

    Examples
    --------
    >>> import fsstgpu, tempfile, os, pyarrow as pa, pyarrow.parquet as pq
    >>> from fsstgpu.errors import OptionError
    >>> from fsstgpu.formats import compress_file
    >>> d = tempfile.mkdtemp()
    >>> pq.write_table(pa.table({"s": ["a", "b"]}), os.path.join(d, "in.parquet"))
    >>> try:  # an Arrow IPC output has no Parquet pages to set the zstd level of
    ...     compress_file(os.path.join(d, "in.parquet"), os.path.join(d, "x.arrow"), zstd_level=9)
    ... except OptionError:
    ...     print("refused")
    refused
    """


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


def invalid_utf8_error(data, offsets, i: int,
                       what: str = "column") -> CorruptDataError:
    """The error :func:`check_utf8` raises for string ``i``: its index and first 16 bytes
    (:func:`fsstgpu.native.decode_all` raises it for a decoded column it checked).

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.errors import invalid_utf8_error
    >>> str(invalid_utf8_error(np.frombuffer(b"a\\xff", np.uint8), np.array([0, 1, 2]), 1))
    'column: string 1 is not valid UTF-8 (bytes ff)'
    """
    s, e = int(offsets[i]), int(offsets[i + 1])
    head = " ".join(f"{b:02x}" for b in bytes(data[s : min(e, s + 16)]))
    more = " ..." if e - s > 16 else ""
    return CorruptDataError(f"{what}: string {i} is not valid UTF-8 (bytes {head}{more})")
