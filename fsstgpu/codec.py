"""compress / decompress / Codec: the front door from Arrow columns to CompressedStringArray.

:func:`compress` normalises the input (:mod:`fsstgpu.arrow_layout`), chooses blocks and trains
their symbol tables (:mod:`fsstgpu.blocks`, :mod:`fsstgpu.training`), encodes every block
(:mod:`fsstgpu.encoder`) and plans the split points (:mod:`fsstgpu.splits`).
:func:`decompress` gives the column back in host memory, decoded on the CPU
(:func:`fsstgpu.decoder.decode_all`) or on the GPU (:mod:`fsstgpu.gpu_decode`), the choice made in
one place, :func:`fsstgpu.device.resolve_device`; :func:`decompress_device` leaves it in device
memory.

Chunked input: a ``pyarrow.ChunkedArray`` becomes one block per chunk, each with a table trained
on that chunk alone (so a chunk's strings never use a table fitted to another chunk's data), or
one block when ``table`` is given; the chunk lengths are recorded and :func:`decompress` returns a
ChunkedArray with the same chunks.
"""

from __future__ import annotations

import warnings

import numpy as np
import pyarrow as pa

from fsstgpu import arrow_layout, inputs
from fsstgpu.arrays import CompressedStringArray
from fsstgpu.blocks import plan_blocks
from fsstgpu.decoder import decode_all
from fsstgpu.device import resolve_device
from fsstgpu.limits import MAX_TABLES, check_split_size
from fsstgpu.native import encode_blocks
from fsstgpu.scan import long_string_cuts
from fsstgpu.splits import DEFAULT_SPLIT_SIZE, plan_splits
from fsstgpu.symbol_table import SymbolTable
from fsstgpu.training import train_table
from fsstgpu.types import is_text, narrow_offsets

ALGORITHMS = ("fsst",)


def _plan(plain: arrow_layout.Plain, table, sample_bytes):
    """Return (block_starts, tables) for the column."""
    n = len(plain)
    if table is not None:
        if isinstance(table, (bytes, bytearray, memoryview)):
            table = SymbolTable.from_bytes(table)  # as SymbolTable.to_bytes wrote it
        if not isinstance(table, SymbolTable):
            raise TypeError(f"table must be a SymbolTable or its bytes, not "
                            f"{type(table).__name__}")
        return np.array([0, n], np.int64), (table,)
    if plain.chunk_lengths is not None:
        block_starts = np.zeros(len(plain.chunk_lengths) + 1, np.int64)
        np.cumsum(plain.chunk_lengths, out=block_starts[1:])
        tables = []
        for b in range(len(plain.chunk_lengths)):
            lo, hi = plain.offsets[block_starts[b]], plain.offsets[block_starts[b + 1]]
            offs = plain.offsets[block_starts[b] : block_starts[b + 1] + 1] - lo
            tables.append(train_table(plain.data[lo:hi], offs, sample_bytes=sample_bytes))
        return block_starts, tuple(tables)
    block_starts, tables = plan_blocks(plain.data, plain.offsets, sample_bytes=sample_bytes)
    return np.asarray(block_starts, np.int64), tuple(tables)


def compress(array, table=None, *, sample_bytes=None, split_size=DEFAULT_SPLIT_SIZE):
    """Compress a string or binary column with FSST.

    Parameters
    ----------
    array : pyarrow.Array, pyarrow.ChunkedArray, pandas.Series, numpy.ndarray, list, ...
        A column of strings or bytes in any of the forms :mod:`fsstgpu.inputs` lists: Arrow
        arrays of type string, large_string, binary, large_binary, string_view or binary_view
        (sliced arrays and nulls are fine), dictionary arrays of those (compressed as their
        values: decompression gives the value type), pandas Series of strings, 1-D numpy arrays
        of str / bytes / object / StringDType, objects with ``__arrow_c_array__`` or
        ``__arrow_c_stream__``, lists of str / bytes / None. A ``pyarrow.Table`` or
        ``RecordBatch``, or a pandas / polars DataFrame, is passed to
        :func:`fsstgpu.compress_table` (and a table returned).
    table : SymbolTable or bytes, optional
        Use this table (or one serialised by ``SymbolTable.to_bytes``) for the whole column (one
        block). By default the column is cut into blocks and a table is trained for each
        (:func:`fsstgpu.blocks.plan_blocks`); a ChunkedArray gets one block per chunk, each
        trained on its chunk.
    sample_bytes : int, optional
        Training sample size per table, passed to the trainer (its default when None).
    split_size : int
        ``S``, the target uncompressed bytes per split (the GPU decoder's work per thread);
        default :data:`fsstgpu.splits.DEFAULT_SPLIT_SIZE` (4096).

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
    >>> import numpy as np
    >>> fsstgpu.compress(np.array(["ab", "cd"])).to_arrow().to_pylist()
    ['ab', 'cd']
    """
    if inputs.is_table(array):
        from fsstgpu.tables import compress_table

        return compress_table(array, table=table, sample_bytes=sample_bytes,
                              split_size=split_size)
    plain = arrow_layout.from_arrow(inputs.as_string_column(array))
    split_size = check_split_size(int(split_size))
    block_starts, tables = _plan(plain, table, sample_bytes)
    if len(tables) > MAX_TABLES:
        raise ValueError(f"{len(tables)} blocks; at most {MAX_TABLES} (chunk the column less "
                         "finely)")
    n = len(plain)
    codes, code_offsets = encode_blocks(tables, plain.data, plain.offsets, block_starts)
    lengths = np.diff(plain.offsets)
    cuts = long_string_cuts(tables, block_starts, codes, code_offsets, lengths, split_size)
    split_codes, split_out, split_table = plan_splits(code_offsets, lengths, block_starts,
                                                      split_size, cuts, plain.offsets)
    carr = CompressedStringArray(
        type=plain.type, length=n, tables=tables, block_starts=block_starts, codes=codes,
        code_offsets=code_offsets, lengths=lengths, validity=plain.validity,
        null_count=plain.null_count, split_size=split_size, split_codes=split_codes,
        split_out=split_out, split_table=split_table, chunk_lengths=plain.chunk_lengths,
    )
    carr.validate(full=False)
    carr._checked = carr._validated = True  # the encoder's own output: the codes fit the lengths
    return carr


def _decompress_cpu(carr: CompressedStringArray):
    carr.validate(full=False)  # decode_all checks the codes of every split
    # (validate checked that the lengths add up to uncompressed_bytes)
    offsets = arrow_layout.offsets_from_lengths(carr.lengths, carr.type, carr.uncompressed_bytes)
    # The string ends (and stored code offsets) are checked in the same walk: the column decodes
    # exactly when each of its strings decodes alone (carr[i], take) and validate() passes. A
    # column validate() passed (the encoder's own, say) holds them already: the faster decode.
    # Forged codes can decode to any bytes: text is checked to be UTF-8 in the same pass, each
    # split's strings right after they are decoded.
    checked = carr._validated
    data = decode_all(carr.tables, carr.codes, carr.split_codes, carr.split_out,
                      carr.split_table, carr.uncompressed_bytes, string_ends=offsets,
                      code_offsets=None if checked else carr._code_offsets,
                      check_ends=not checked, utf8=is_text(carr.type))
    if carr.chunk_lengths is None or (offsets.dtype == np.int64 and narrow_offsets(carr.type)):
        # (past 2 GiB a 32-bit type's chunks need their own offsets: few chunks are that large)
        return arrow_layout.to_arrow(carr.type, data, offsets, carr.validity, carr.chunk_lengths)
    return _as_chunks(arrow_layout.to_arrow(carr.type, data, offsets, carr.validity),
                      carr.chunk_lengths)


def _as_chunks(whole: pa.Array, chunk_lengths) -> pa.ChunkedArray:
    """``whole`` cut into chunks of ``chunk_lengths``: slices of it, and one shared empty array
    for every empty chunk, so a chunk costs a slice (about 500 bytes), not buffers of its own
    (1.3 KB a chunk; a forged blob declares one chunk a byte: issue #20, finding 6)."""
    empty = whole.slice(0, 0)
    starts = np.zeros(len(chunk_lengths), np.int64)
    np.cumsum(chunk_lengths[:-1], out=starts[1:])
    chunks = [whole.slice(start, length) if length else empty
              for start, length in zip(starts.tolist(), chunk_lengths.tolist(), strict=True)]
    return pa.chunked_array(chunks, type=whole.type)


def _as_compressed(column) -> CompressedStringArray:
    """A CompressedStringArray, or an ``fsstgpu.fsst`` extension column read into one."""
    if isinstance(column, CompressedStringArray):
        return column
    if isinstance(column, (pa.Array, pa.ChunkedArray)):
        from fsstgpu.formats.arrow import is_fsst_type
        from fsstgpu.formats.arrow_storage import from_extension_array

        if is_fsst_type(column.type):
            return from_extension_array(column)
        raise TypeError(f"expected a compressed column, got a pyarrow array of {column.type} "
                        "(compress it first, or read it from an fsstgpu file)")
    raise TypeError(f"expected a CompressedStringArray or an fsstgpu.fsst extension array, "
                    f"got {type(column).__name__}")


def decompress(carr, device="auto", stream=None):
    """Decompress to the original column, in host memory.

    Parameters
    ----------
    carr : CompressedStringArray, or an ``fsstgpu.fsst`` extension Array / ChunkedArray
        (a column read from a file that ``fsstgpu compress`` or :func:`fsstgpu.compress_table`
        wrote). A ``pyarrow.Table`` / ``RecordBatch`` is passed to
        :func:`fsstgpu.decompress_table` (and a table returned).
    device : {"auto", "cpu", "gpu"}
        Where to decode: ``"auto"`` (or None) decodes on the GPU when one is usable
        (``FSSTGPU_DEVICE`` overrides). Deprecated: ``device="gpu"`` still returns a
        :class:`fsstgpu.DeviceStringArray` for this release; use :func:`decompress_device`.
    stream : cupy.cuda.Stream, optional
        GPU paths only: the stream to work on.

    Returns
    -------
    pyarrow.Array or pyarrow.ChunkedArray
        Exactly the original type; a ChunkedArray with the same chunks when the input was one.

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
    if inputs.is_table(carr):
        from fsstgpu.tables import decompress_table

        return decompress_table(carr, device=device, stream=stream)
    carr = _as_compressed(carr)
    if device == "gpu":
        warnings.warn("decompress(..., device='gpu') returns a DeviceStringArray in this "
                      "release only; use fsstgpu.decompress_device for device memory (decompress "
                      "will return a pyarrow array)", DeprecationWarning, stacklevel=2)
        return decompress_device(carr, stream)
    if resolve_device(device) == "cpu":
        return _decompress_cpu(carr)
    return decompress_device(carr, stream).to_arrow()


def decompress_device(carr, stream=None):
    """Decompress on the GPU into Arrow layout in device memory.

    Parameters
    ----------
    carr : CompressedStringArray, fsstgpu.fsst extension array, a list of those, or a
        DeviceCompressedStringArray
        Host columns are uploaded overlapped with decoding; a column from
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
    from fsstgpu.device_arrays import DeviceCompressedStringArray
    from fsstgpu.gpu_decode import decompress_device as decode

    if isinstance(carr, (list, tuple)):
        carr = [_as_compressed(c) for c in carr]
    elif not isinstance(carr, DeviceCompressedStringArray):
        carr = _as_compressed(carr)
    return decode(carr, stream)


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
    sample_bytes, split_size
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
                 split_size=DEFAULT_SPLIT_SIZE):
        algo = str(algorithm).lower()
        if algo not in ALGORITHMS:
            raise ValueError(f"unknown algorithm {algorithm!r}; available: {ALGORITHMS}")
        if device is not None and device not in ("auto", "cpu", "gpu"):
            raise ValueError(f"device must be 'auto', 'cpu' or 'gpu', not {device!r}")
        if device == "gpu":
            resolve_device("gpu")  # fail here, not at the first decode
        self.algorithm = algo
        self.device = device
        self._options = {"table": table, "sample_bytes": sample_bytes, "split_size": split_size}

    def __repr__(self) -> str:
        return f"Codec(algorithm={self.algorithm!r}, device={self.device!r})"

    def encode(self, arrays):
        """Compress one column, or each column of a list; returns the same shape.

        Examples
        --------
        >>> import pyarrow as pa, fsstgpu
        >>> codec = fsstgpu.Codec(device="cpu")
        >>> codec.encode(pa.array(["a", "b"]))
        CompressedStringArray(type=string, length=2, null_count=0, blocks=1, ...)
        >>> [len(c) for c in codec.encode([pa.array(["a"]), pa.array(["b", "c"])])]
        [1, 2]
        """
        if isinstance(arrays, list) and all(
                isinstance(a, (pa.Array, pa.ChunkedArray)) for a in arrays):
            return [compress(a, **self._options) for a in arrays]
        return compress(arrays, **self._options)

    def decode(self, carrs, stream=None):
        """Decompress one compressed column, or each of a list; returns the same shape.

        With ``device="gpu"`` the results are :class:`fsstgpu.DeviceStringArray` (device
        memory, as nvCOMP's codecs return); otherwise pyarrow arrays.

        Examples
        --------
        >>> import pyarrow as pa, fsstgpu
        >>> codec = fsstgpu.Codec(device="cpu")
        >>> codec.decode(codec.encode(pa.array([b"z", None], pa.binary()))).to_pylist()
        [b'z', None]
        """
        if isinstance(carrs, (list, tuple)):
            return [self.decode(c, stream) for c in carrs]
        if self.device == "gpu":
            return decompress_device(carrs, stream)
        return decompress(carrs, device=self.device, stream=stream)
