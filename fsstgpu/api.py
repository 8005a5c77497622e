"""The front door: compress / decompress / decompress_device / Codec, whatever they are given.

The face of the package (``fsstgpu/__init__.py`` re-exports it), above every layer it dispatches
to: columns go to the column API (:mod:`fsstgpu.columns`), tables to :mod:`fsstgpu.formats.tables`,
``fsstgpu.fsst`` extension columns and blobs are read by their formats
(:mod:`fsstgpu.formats.arrow_storage`, :mod:`fsstgpu.formats.blob`), and decoding runs on the CPU
(:meth:`CompressedStringArray.to_arrow`) or the GPU (:mod:`fsstgpu.gpu.decode`), the choice made in
one place, :func:`fsstgpu.device.resolve_device`. One return type per function:
:func:`decompress` gives host Arrow columns, :func:`decompress_device` device ones.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from fsstgpu.arrays import CompressedStringArray
from fsstgpu.blocks import check_level
from fsstgpu.columns import compress_column, decompress_column
from fsstgpu.device import resolve_device
from fsstgpu.formats.arrow import is_fsst_type
from fsstgpu.formats.arrow_storage import from_extension_array
from fsstgpu.formats.blob import loads as blob_loads
from fsstgpu.formats.tables import compress_table, decompress_table
from fsstgpu.gpu.arrays import DeviceCompressedStringArray
from fsstgpu.gpu.decode import decompress_device as gpu_decompress_device
from fsstgpu.gpu.encode import compress_device
from fsstgpu.inputs import is_table
from fsstgpu.limits import check_split_size
from fsstgpu.splits import DEFAULT_SPLIT_SIZE
from fsstgpu.symbol_table import as_symbol_table
from fsstgpu.training import check_sample_bytes

__all__ = ["ALGORITHMS", "Codec", "compress", "decompress", "decompress_device"]

ALGORITHMS = ("fsst",)


def compress(array, table=None, *, sample_bytes=None, split_size=DEFAULT_SPLIT_SIZE,
             level="default"):
    """Compress a string or binary column with FSST (a table: each string column of it).

    Parameters
    ----------
    array : pyarrow.Array, pyarrow.ChunkedArray, pandas.Series, numpy.ndarray, list, ...
        A column of strings or bytes in any form :func:`fsstgpu.columns.compress_column` takes
        (Arrow string / binary / view / dictionary arrays, pandas Series, numpy arrays, Arrow
        C data producers, lists of str / bytes / None). A ``pyarrow.Table`` or
        ``RecordBatch``, or a pandas / polars DataFrame, is passed to
        :func:`fsstgpu.compress_table` (and a table returned).
    table, sample_bytes, split_size
        As for :func:`fsstgpu.columns.compress_column` (the symbol table to use instead of
        planned blocks, the training sample per table, ``S``: the target uncompressed bytes per
        split, 4096 by default); for a table, passed to :func:`fsstgpu.compress_table`.
    level : {"default", "fast"}
        ``"default"``: a table for each stretch of similar text, the best ratio; ``"fast"``:
        a cheaper table per MiB, 1.4-8x faster at 73-98% of that ratio (about the reference
        FSST's speed per core, at a better ratio than its). Decoding is the same.

    Returns
    -------
    CompressedStringArray
        (a pyarrow Table / RecordBatch for a table input)

    Raises
    ------
    TypeError
        For any other input or Arrow type (the message names it and what is accepted).

    Examples
    --------
    >>> import pyarrow as pa, fsstgpu
    >>> col = pa.array(["http://a.example/x", None, "http://b.example/y"] * 50)
    >>> carr = fsstgpu.compress(col)
    >>> carr.stats()["ratio"] > 1
    True
    >>> fsstgpu.decompress(carr, device="cpu").equals(col)
    True
    >>> fsstgpu.compress(pa.table({"s": ["ab", None]})).schema.field("s").type.extension_name
    'fsstgpu.fsst'
    >>> fsstgpu.decompress(fsstgpu.compress(col, level="fast"), device="cpu").equals(col)
    True
    """
    if is_table(array):
        return compress_table(array, table=table, sample_bytes=sample_bytes,
                              split_size=split_size, level=level)
    return compress_column(array, table, sample_bytes=sample_bytes, split_size=split_size,
                           level=level)


def _as_compressed(column) -> CompressedStringArray:
    """A CompressedStringArray; an ``fsstgpu.fsst`` extension column or a blob read into one."""
    if isinstance(column, CompressedStringArray):
        return column
    if isinstance(column, (bytes, bytearray, memoryview, pa.Buffer)):  # (from_bytes' inputs)
        return blob_loads(column)
    if isinstance(column, (pa.Array, pa.ChunkedArray)):
        if is_fsst_type(column.type):
            return from_extension_array(column)
        raise TypeError(f"expected a compressed column, got a pyarrow array of {column.type} "
                        "(compress it first, or read it from an fsstgpu file)")
    raise TypeError(f"expected a CompressedStringArray, an fsstgpu.fsst extension array or a "
                    f"blob, got {type(column).__name__}")


def decompress(carr, device="auto", stream=None):
    """Decompress to the original column, in host memory.

    Parameters
    ----------
    carr : CompressedStringArray, an ``fsstgpu.fsst`` extension Array / ChunkedArray, or a blob
        An extension column is one read from a file that ``fsstgpu compress`` or
        :func:`fsstgpu.compress_table` wrote; a blob (bytes-like) one that
        :meth:`CompressedStringArray.to_bytes` wrote. A ``pyarrow.Table`` / ``RecordBatch`` is
        passed to :func:`fsstgpu.decompress_table` (and a table returned). A
        :func:`fsstgpu.compress_device` result decodes on the GPU, or with ``device="cpu"``
        from its ``to_host()``.
    device : {"auto", "cpu", "gpu"}
        Where to decode: ``"auto"`` (or None) decodes on the GPU when one is usable
        (``FSSTGPU_DEVICE`` overrides). The result is in host memory either way;
        :func:`decompress_device` leaves it in device memory.
    stream : cupy.cuda.Stream, optional
        GPU paths only: the stream to work on.

    Returns
    -------
    pyarrow.Array or pyarrow.ChunkedArray
        The compressed column's Arrow type, the input's (a dictionary-encoded input comes back
        as its values' type: :func:`compress` decoded the dictionary); a ChunkedArray with the
        same chunks when the input was one.

    Raises
    ------
    CorruptDataError
        If the compressed data is inconsistent.
    DeviceError
        When ``device="gpu"`` and no GPU is usable.

    Examples
    --------
    >>> import pyarrow as pa, fsstgpu
    >>> col = pa.chunked_array([["a", "b"], [None]], type=pa.large_string())
    >>> out = fsstgpu.decompress(fsstgpu.compress(col), device="cpu")
    >>> out.type, out.num_chunks, out.to_pylist()
    (DataType(large_string), 2, ['a', 'b', None])
    """
    if is_table(carr):
        return decompress_table(carr, device=device, stream=stream)
    if isinstance(carr, DeviceCompressedStringArray):  # e.g. compress_device's
        if resolve_device(device) == "cpu":
            return decompress_column(carr.to_host(stream))
        out = gpu_decompress_device(carr, stream)
        return [r.to_arrow() for r in out] if isinstance(out, list) else out.to_arrow()
    carr = _as_compressed(carr)
    if resolve_device(device) == "cpu":
        return decompress_column(carr)
    return gpu_decompress_device(carr, stream).to_arrow()


def decompress_device(carr, stream=None):
    """Decompress on the GPU into Arrow layout in device memory.

    Parameters
    ----------
    carr : CompressedStringArray, fsstgpu.fsst extension array, a list of those, or a
        DeviceCompressedStringArray
        Host columns are uploaded while their layout is built; a column from
        :func:`fsstgpu.to_device` is decoded where it is; a list is decoded as one batch (one
        launch) and gives a list.
    stream : cupy.cuda.Stream, optional
        The result is ready on this stream when this returns.

    Returns
    -------
    DeviceStringArray

    Raises
    ------
    CorruptDataError
        If the compressed data is inconsistent.
    DeviceError
        Without a usable GPU.

    Examples
    --------
    >>> import pyarrow as pa, fsstgpu
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     dev = fsstgpu.decompress_device(fsstgpu.compress(pa.array(["a", None])))
    ...     assert dev.to_arrow().to_pylist() == ["a", None]
    """
    resolve_device("gpu")
    if isinstance(carr, (list, tuple)) and carr and all(
            isinstance(c, DeviceCompressedStringArray) for c in carr):
        return [gpu_decompress_device(c, stream) for c in carr]  # each where it is
    if isinstance(carr, (list, tuple)):
        carr = [_as_compressed(c) for c in carr]
    elif not isinstance(carr, DeviceCompressedStringArray):
        carr = _as_compressed(carr)
    return gpu_decompress_device(carr, stream)


def _is_column(value) -> bool:
    """Whether ``value`` is a column (not one string): a pyarrow or numpy array, or anything
    with the Arrow PyCapsule interface (pandas and polars Series)."""
    return (isinstance(value, (pa.Array, pa.ChunkedArray, np.ndarray))
            or hasattr(value, "__arrow_c_array__") or hasattr(value, "__arrow_c_stream__"))


class Codec:
    """An nvCOMP-style codec object: ``encode`` Arrow columns, ``decode`` them back.

    Parameters
    ----------
    algorithm : str
        ``"fsst"`` (the only one; case-insensitive).
    device : {"auto", "cpu", "gpu"}
        Where :meth:`decode` runs (see :func:`decompress`).
    table : SymbolTable, optional
        Passed to :func:`compress`: one table for every column encoded.
    sample_bytes, split_size, level
        Passed to :func:`compress`.

    Raises
    ------
    ValueError
        For an unknown algorithm or device name.

    Examples
    --------
    >>> import pyarrow as pa, fsstgpu
    >>> codec = fsstgpu.Codec(algorithm="fsst", device="cpu")
    >>> cols = [pa.array(["x", "yy"]), pa.array([b"z"], pa.binary())]
    >>> [c.to_pylist() for c in codec.decode(codec.encode(cols))]
    [['x', 'yy'], [b'z']]
    """

    def __init__(self, algorithm="fsst", device="auto", *, table=None, sample_bytes=None,
                 split_size=DEFAULT_SPLIT_SIZE, level="default"):
        algo = str(algorithm).lower()
        if algo not in ALGORITHMS:
            raise ValueError(f"unknown algorithm {algorithm!r}; available: {ALGORITHMS}")
        if device not in (None, "auto"):
            resolve_device(device)  # a bad name or a missing GPU fails here, not at a decode
        # every option checked here, not at the first encode (a bad table or size passed
        # construction and failed in the middle of whatever encoded first)
        check_split_size(split_size)
        check_sample_bytes(sample_bytes)
        if table is not None:
            table = as_symbol_table(table)
        self.algorithm = algo
        self.device = device
        self._options = {"table": table, "sample_bytes": sample_bytes, "split_size": split_size}
        self._level = check_level(level)  # (encode_device plans "fast" alone)

    def __repr__(self) -> str:
        return f"Codec(algorithm={self.algorithm!r}, device={self.device!r})"

    def encode(self, arrays):
        """Compress one column, or each column of a list or tuple of columns (pyarrow or numpy
        arrays, or anything with the Arrow PyCapsule interface: pandas and polars Series), as a
        list (a list of strings is one column).

        Examples
        --------
        >>> import pyarrow as pa, fsstgpu
        >>> codec = fsstgpu.Codec(device="cpu")
        >>> codec.encode(pa.array(["a", "b"]))
        CompressedStringArray(type=string, length=2, null_count=0, blocks=1, ...)
        >>> [len(c) for c in codec.encode([pa.array(["a"]), pa.array(["b", "c"])])]
        [1, 2]
        """
        if isinstance(arrays, (list, tuple)) and all(map(_is_column, arrays)):
            return [compress(a, level=self._level, **self._options) for a in arrays]
        return compress(arrays, level=self._level, **self._options)

    def encode_device(self, arrays, stream=None):
        """Compress on the GPU, into device memory: :func:`compress_device` of one column or
        of each of a list (device strings, or host columns uploaded first): the codec's table;
        else at ``level="fast"`` a table a block, as :meth:`encode` plans them (its column
        again), at ``"default"`` one table a column trained on the CPU from a sample (that
        level's planner walks the column on the CPU). :meth:`decode_device` decodes the
        results; their ``to_host()`` gives what :meth:`encode` gives with the same tables.

        Examples
        --------
        >>> import pyarrow as pa, fsstgpu
        >>> if fsstgpu.gpu_available():  # doctest: +SKIP
        ...     codec = fsstgpu.Codec(device="gpu")
        ...     dev = codec.decode_device(codec.encode_device(pa.array(["ab", None, "ab"])))
        ...     assert dev.to_arrow().to_pylist() == ["ab", None, "ab"]
        """
        if isinstance(arrays, list):
            return [self.encode_device(a, stream) for a in arrays]
        return compress_device(arrays, stream=stream,
                               level="fast" if self._level == "fast" else None, **self._options)

    def decode(self, carrs, stream=None):
        """Decompress one compressed column, or each of a list; returns the same shape.

        The results are pyarrow arrays in host memory, decoded where ``device`` says;
        :meth:`decode_device` leaves them in device memory (as nvCOMP's codecs do).

        Examples
        --------
        >>> import pyarrow as pa, fsstgpu
        >>> codec = fsstgpu.Codec(device="cpu")
        >>> codec.decode(codec.encode(pa.array([b"z", None], pa.binary()))).to_pylist()
        [b'z', None]
        """
        if isinstance(carrs, (list, tuple)):
            return [self.decode(c, stream) for c in carrs]
        return decompress(carrs, device=self.device, stream=stream)

    def decode_device(self, carrs, stream=None):
        """Decompress on the GPU into device memory: :func:`decompress_device` of ``carrs``
        (a list is decoded as one batch).

        Examples
        --------
        >>> import pyarrow as pa, fsstgpu
        >>> if fsstgpu.gpu_available():  # doctest: +SKIP
        ...     codec = fsstgpu.Codec(device="gpu")
        ...     dev = codec.decode_device(codec.encode(pa.array(["a", None])))
        ...     assert dev.to_arrow().to_pylist() == ["a", None]
        """
        return decompress_device(carrs, stream)
