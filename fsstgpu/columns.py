"""The column API: Arrow string columns to CompressedStringArray and back, on the CPU.

:func:`compress_column` normalises the input (:mod:`fsstgpu.inputs`, :mod:`fsstgpu.arrow_layout`),
chooses blocks and trains their symbol tables (:mod:`fsstgpu.blocks`, :mod:`fsstgpu.training`),
encodes every block (:mod:`fsstgpu.native`) and plans the split points (:mod:`fsstgpu.splits`);
:func:`decompress_column` decodes on the CPU (:meth:`CompressedStringArray.to_arrow`). The
polymorphic front door (tables, extension arrays, blobs, the GPU) is :mod:`fsstgpu.api`, above
the GPU runtime and the formats; this layer imports neither.

Chunked input: a ``pyarrow.ChunkedArray`` becomes one block per chunk, each with a table trained
on that chunk alone (so a chunk's strings never use a table fitted to another chunk's data), or
one block when ``table`` is given; the chunk lengths are recorded and decompression returns a
ChunkedArray with the same chunks.
"""

from __future__ import annotations

import numpy as np

from fsstgpu import arrow_layout, inputs
from fsstgpu.arrays import CompressedStringArray
from fsstgpu.blocks import plan_blocks
from fsstgpu.limits import MAX_TABLES, check_split_size
from fsstgpu.native import encode_blocks
from fsstgpu.scan import long_string_cuts
from fsstgpu.splits import DEFAULT_SPLIT_SIZE, plan_splits
from fsstgpu.symbol_table import SymbolTable
from fsstgpu.training import train_table

__all__ = ["compress_column", "decompress_column"]


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


def compress_column(array, table=None, *, sample_bytes=None, split_size=DEFAULT_SPLIT_SIZE):
    """Compress a string or binary column with FSST.

    Parameters
    ----------
    array : pyarrow.Array, pyarrow.ChunkedArray, pandas.Series, numpy.ndarray, list, ...
        A column of strings or bytes in any of the forms :mod:`fsstgpu.inputs` lists: Arrow
        arrays of type string, large_string, binary, large_binary, string_view or binary_view
        (sliced arrays and nulls are fine), dictionary arrays of those (compressed as their
        values: decompression gives the value type), pandas Series of strings, 1-D numpy arrays
        of str / bytes / object / StringDType, objects with ``__arrow_c_array__`` or
        ``__arrow_c_stream__``, lists of str / bytes / None. (Tables: :func:`fsstgpu.compress`.)
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

    Raises
    ------
    TypeError
        For any other input or Arrow type (the message names it and what is accepted).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.columns import compress_column, decompress_column
    >>> col = pa.array(["http://a.example/x", None, "http://b.example/y"] * 50)
    >>> carr = compress_column(col)
    >>> carr.stats()["ratio"] > 1
    True
    >>> decompress_column(carr).equals(col)
    True
    >>> import numpy as np
    >>> compress_column(np.array(["ab", "cd"])).to_arrow().to_pylist()
    ['ab', 'cd']
    """
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


def decompress_column(carr: CompressedStringArray):
    """Decode a CompressedStringArray on the CPU, to exactly its original column.

    Returns
    -------
    pyarrow.Array or pyarrow.ChunkedArray
        The original type; a ChunkedArray with the same chunks when compressed from one.

    Raises
    ------
    TypeError
        For anything but a CompressedStringArray (:func:`fsstgpu.decompress` takes the rest).
    CorruptDataError
        If the compressed data is inconsistent.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.columns import compress_column, decompress_column
    >>> col = pa.chunked_array([["a", "b"], [None]], type=pa.large_string())
    >>> out = decompress_column(compress_column(col))
    >>> out.type, out.num_chunks, out.to_pylist()
    (DataType(large_string), 2, ['a', 'b', None])
    """
    if not isinstance(carr, CompressedStringArray):
        raise TypeError(f"expected a CompressedStringArray, got {type(carr).__name__}")
    return carr.to_arrow()
