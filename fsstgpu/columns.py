"""The column API: Arrow string columns to CompressedStringArray and back, on the CPU.

:func:`compress_column` normalises the input (:mod:`fsstgpu.inputs`, :mod:`fsstgpu.arrow_layout`),
chooses blocks and trains their symbol tables (:mod:`fsstgpu.blocks`, :mod:`fsstgpu.training`),
encodes every block (:mod:`fsstgpu.native`) and plans the split points (:mod:`fsstgpu.splits`);
:func:`decompress_column` decodes on the CPU (:meth:`CompressedStringArray.to_arrow`). The
polymorphic front door (tables, extension arrays, blobs, the GPU) is :mod:`fsstgpu.api`, above
the GPU runtime and the formats; this layer imports neither.

Chunked input: a ``pyarrow.ChunkedArray`` is planned in pieces of whole chunks, each piece its
chunks together until they hold :data:`MIN_PIECE_BYTES` of strings: a chunk's strings never use a
table fitted to another large chunk's data (a chunk often is another file or batch), and small
chunks share tables instead of each paying a training; one block when ``table`` is given. The
chunk lengths are recorded and decompression returns a ChunkedArray with the same chunks.
``compress_table`` compresses each column so. A column that arrives piece by piece (a file's row
groups, ``compress_file``) goes through :class:`ColumnStream`: the same block planner, run on a
piece only where the table before it no longer fits.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pyarrow as pa

from fsstgpu.arrays import CompressedStringArray
from fsstgpu.arrow_layout import Plain, from_arrow
from fsstgpu.blocks import FAST_SAMPLE_BYTES, check_level, plan_level
from fsstgpu.inputs import as_string_column
from fsstgpu.limits import check_blocks
from fsstgpu.native import differences, encode_blocks
from fsstgpu.scan import long_string_cuts
from fsstgpu.splits import DEFAULT_SPLIT_SIZE, plan_splits
from fsstgpu.symbol_table import as_symbol_table
from fsstgpu.training import check_compression_options, train

__all__ = ["MIN_PIECE_BYTES", "ColumnStream", "compress_column", "decompress_column",
           "joined_chunks", "planning_pieces"]

#: A ChunkedArray's chunks are planned together until they hold this many string bytes: a
#: training (~2 ms) per chunk of a few KB would cost more than it saves, and its table (~2 KB)
#: would be a large share of the chunk.
MIN_PIECE_BYTES = 1 << 20


def planning_pieces(chunk_bytes, min_bytes: int | None = None) -> np.ndarray:
    """Chunk indices where each planning piece starts, and the chunk count at the end: runs of
    consecutive chunks holding ``min_bytes`` (default :data:`MIN_PIECE_BYTES`) string bytes or
    more (the last may hold fewer).

    Examples
    --------
    >>> from fsstgpu.columns import planning_pieces
    >>> planning_pieces([5, 5, 20, 0, 1, 30], min_bytes=10).tolist()
    [0, 2, 3, 6]
    """
    min_bytes = MIN_PIECE_BYTES if min_bytes is None else min_bytes
    sizes = np.asarray(chunk_bytes, np.int64)
    starts, held = [0], 0
    for k, size in enumerate(sizes.tolist()):
        held += size
        if held >= min_bytes and k + 1 < len(sizes):
            starts.append(k + 1)
            held = 0
    return np.array(starts + [len(sizes)], np.int64)


def joined_chunks(parts: list) -> pa.ChunkedArray:
    """Arrays and chunked arrays of one type (consecutive pieces of a column: a run's row
    groups) as one ChunkedArray, their chunks kept (nothing copied).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.columns import joined_chunks
    >>> joined_chunks([pa.array([1]), pa.chunked_array([[2], [3]])]).num_chunks
    3
    """
    chunks = [c for p in parts for c in (p.chunks if isinstance(p, pa.ChunkedArray) else [p])]
    return pa.chunked_array(chunks, type=parts[0].type)


def _plan(plain: Plain, table, sample_bytes, level):
    """Return (block_starts, tables) for the column."""
    n = len(plain)
    if table is not None:
        return np.array([0, n], np.int64), (as_symbol_table(table),)
    if plain.chunk_lengths is None or len(plain.chunk_lengths) < 2:
        block_starts, tables = plan_level(plain.data, plain.offsets, level,
                                          sample_bytes=sample_bytes)
        return np.asarray(block_starts, np.int64), tuple(tables)
    chunk_starts = np.zeros(len(plain.chunk_lengths) + 1, np.int64)
    np.cumsum(plain.chunk_lengths, out=chunk_starts[1:])
    pieces = chunk_starts[planning_pieces(np.diff(plain.offsets[chunk_starts]))]
    starts, tables = [np.zeros(1, np.int64)], []
    for lo, hi in zip(pieces[:-1].tolist(), pieces[1:].tolist(), strict=True):
        base = plain.offsets[lo]
        offs = plain.offsets[lo : hi + 1] - base
        piece_starts, piece_tables = plan_level(plain.data[base : plain.offsets[hi]], offs,
                                                level, sample_bytes=sample_bytes)
        starts.append(np.asarray(piece_starts[1:], np.int64) + lo)
        tables.extend(piece_tables)
    return np.concatenate(starts), tuple(tables)


def compress_column(array, table=None, *, sample_bytes=None, split_size=DEFAULT_SPLIT_SIZE,
                    level: str = "default", encode=None):
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
        block). By default the column is cut into blocks and a table is trained for each, as
        ``level`` says; a ChunkedArray is planned in pieces of whole chunks of at least
        :data:`MIN_PIECE_BYTES` (see the module's docstring).
    sample_bytes : int, optional
        Training sample size per table, passed to the trainer (the level's default when None).
    split_size : int
        ``S``, the target uncompressed bytes per split (the GPU decoder's work per thread);
        default :data:`fsstgpu.splits.DEFAULT_SPLIT_SIZE` (4096).
    level : {"default", "fast"}
        ``"default"``: blocks where the text changes (:func:`fsstgpu.blocks.plan_blocks`), the
        best ratio; ``"fast"``: a block per MiB with a cheap table each
        (:func:`fsstgpu.blocks.fast_blocks`): 1.4-8x faster at 73-98% of the ratio
        (:data:`fsstgpu.blocks.LEVELS`). Either decodes the same way.
    encode : callable, optional
        What encodes the planned blocks, with :func:`fsstgpu.native.encode_blocks`' arguments
        and results (the default): the GPU's twin
        (:class:`fsstgpu.gpu.block_encode.GpuBlockEncoder`, which ``compress_file(...,
        device="gpu")`` passes) gives the same codes byte for byte, so the same column. Only
        the final encode moves; planning and training stay on the CPU.

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
    >>> decompress_column(compress_column(col, level="fast")).equals(col)
    True
    """
    level = check_level(level)
    # the caller's options before any work (the table and split size were read only after the
    # column's conversion), sample_bytes with a table too, as Codec checks it
    table, _, split_size = check_compression_options(table, sample_bytes, split_size)
    plain = from_arrow(as_string_column(array))
    if plain.offsets.base is not None:
        # A view of the caller's int64 offsets: the encoder sizes each chunk's output from
        # them, then reads them again to encode, without the GIL. Arrow buffers are immutable,
        # but memory a caller wraps (a numpy array) can change meanwhile: the encoder then ran
        # for good or wrote past the room it sized. A copy it alone sees (~1% of a compress).
        plain = dataclasses.replace(plain, offsets=plain.offsets.copy())
    block_starts, tables = _plan(plain, table, sample_bytes, level)
    check_blocks(len(tables))
    n = len(plain)
    codes, code_offsets = (encode or encode_blocks)(tables, plain.data, plain.offsets,
                                                    block_starts)
    lengths = differences(plain.offsets)
    cuts = long_string_cuts(tables, block_starts, codes, code_offsets, lengths, split_size)
    split_codes, split_out, split_table = plan_splits(code_offsets, lengths, block_starts,
                                                      split_size, cuts, plain.offsets)
    del cuts  # (24 bytes a cut, one a code at split_size=1: not held through the checks below)
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


class ColumnStream:
    """Compress a column that arrives in pieces, one after the other (a file's row groups or
    record batches), with the policy :func:`compress_column` applies to a ChunkedArray's chunks.

    Each piece is first encoded with the table of the last block before it ("encode as you
    go", the block planner's rule at the scale of pieces): kept when its cost (code bytes per
    string byte) is within ``tolerance`` of what that table cost on the block it was trained
    for, else trained anew: planned into blocks where its text changes
    (:func:`fsstgpu.blocks.plan_blocks`) with ``blocks``, else one table for the piece. So a
    file pays a training where its text changes, not one per row group, and no row group keeps
    a table fitted to other text.

    ``blocks=False`` is for codes that a general-purpose codec compresses again (zstd pages):
    it catches what blocks would win and pays for their tables and for codes that differ from
    block to block. Measured on 89 MB of this machine's text (formats/files.md): in 64K-row
    batches, zstd Parquet 11.32 MB with one table per retraining, 11.58 with blocks, 11.41 with
    the first batch's table for all; uncompressed pages 30.6, 26.7 and 34.3 MB.

    Parameters
    ----------
    sample_bytes : int, optional
        Training sample per table (the trainer's default when None).
    split_size : int
        As for :func:`compress_column`.
    tolerance : float
        Relative cost increase at which a piece gets tables of its own.
    blocks : bool
        Plan a retrained piece into blocks (the default), or give it one table.
    table : SymbolTable or bytes, optional
        Compress every piece with this table instead (nothing is trained).
    level : {"default", "fast"}
        How a retrained piece is planned and trained (:func:`compress_column`).
    encode : callable, optional
        What encodes each piece's blocks (:func:`compress_column`'s ``encode``).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.columns import ColumnStream
    >>> stream = ColumnStream()
    >>> a = stream.compress(pa.array(["http://a.example/%d" % i for i in range(500)]))
    >>> b = stream.compress(pa.array(["http://a.example/%d" % i for i in range(499, 0, -1)]))
    >>> c = stream.compress(pa.array(["ACGTTGCA" * 3] * 500))  # other text: a table of its own
    >>> b.tables == a.tables, c.tables == a.tables
    (True, False)
    """

    def __init__(self, *, sample_bytes=None, split_size: int = DEFAULT_SPLIT_SIZE,
                 tolerance: float = 0.15, blocks: bool = True, table=None,
                 level: str = "default", encode=None):
        self.level = check_level(level)
        self.encode = encode
        self.sample_bytes = sample_bytes
        self.split_size = split_size
        self.tolerance = tolerance
        self.blocks = blocks
        self.fixed_table = table
        self._table = None  # the last block's table, and its cost on that block
        self._cost = None

    def compress(self, values) -> CompressedStringArray:
        """The next piece, compressed (a :class:`CompressedStringArray`)."""
        column = as_string_column(values)
        if self.fixed_table is not None:
            return compress_column(column, table=self.fixed_table, split_size=self.split_size,
                                   encode=self.encode)
        if self._table is not None:
            carr = compress_column(column, table=self._table, split_size=self.split_size,
                                   encode=self.encode)
            nbytes = int(np.asarray(carr.lengths).sum())
            if len(carr.codes) <= nbytes * self._cost * (1 + self.tolerance):
                return carr
        return self._retrained(column)

    def compress_many(self, pieces) -> list[tuple[CompressedStringArray, int]]:
        """The next ``pieces``, compressed as :meth:`compress` of each in turn would compress
        them (the same tables, codes and decisions), in fewer calls: consecutive pieces that
        keep one table are encoded together. Returns ``(carr, count)`` pairs in order, each
        ``carr`` holding the next ``count`` pieces' strings (their chunks); a ``carr`` of
        several pieces has one table (one block).

        A small piece's encode costs more in fixed costs (planning, checks, the encoder's
        lookup tables) than in encoding: a file's row groups of 500 short lines took 0.2 ms
        each alone, 0.06 ms each encoded 60 together. Where a piece needs a table of its own
        the pieces after it are tried in spans that double from one, so that text changing
        at every piece encodes each piece at most about three times, not once per piece
        after it. On an error the stream's state is left as it was before the call.

        Examples
        --------
        >>> import pyarrow as pa
        >>> from fsstgpu.columns import ColumnStream
        >>> pieces = [pa.array(["http://a.example/%d" % (i % 100) for i in range(k, k + 200)])
        ...           for k in (0, 7, 13)] + [pa.array(["ACGTTGCA" * 3] * 200)]
        >>> [(len(carr), count) for carr, count in ColumnStream().compress_many(pieces)]
        [(200, 1), (400, 2), (200, 1)]
        """
        columns = [as_string_column(p) for p in pieces]
        saved = self._table, self._cost
        try:
            return self._compress_many(columns)
        except BaseException:
            self._table, self._cost = saved
            raise

    def _compress_many(self, columns: list) -> list:
        out, k, span = [], 0, len(columns)
        while k < len(columns):
            table = self.fixed_table if self.fixed_table is not None else self._table
            if table is None:  # nothing to encode with yet: trained on this piece
                out.append((self.compress(columns[k]), 1))
                k += 1
                continue
            group = columns[k : k + span]
            carr = compress_column(joined_chunks(group), table=table, split_size=self.split_size,
                                   encode=self.encode)
            rows = np.zeros(len(group) + 1, np.int64)
            np.cumsum([len(c) for c in group], out=rows[1:])
            kept = len(group) if self.fixed_table is not None else self._kept(carr, rows)
            if kept:
                out.append((carr if kept == len(group) else carr.slice(0, int(rows[kept])),
                            kept))
                span *= 2
            if kept < len(group):  # piece k + kept gets a table of its own (compress's rule)
                out.append((self._retrained(columns[k + kept]), 1))
                k, span = k + 1, 1
            k += kept
        return out

    def _kept(self, carr, rows) -> int:
        """How many leading pieces (their rows' bounds in ``rows``) of ``carr``, encoded with
        the last table, stay within :meth:`compress`'s tolerance (the same arithmetic)."""
        out_offsets = np.zeros(len(carr.lengths) + 1, np.int64)
        np.cumsum(carr.lengths, out=out_offsets[1:])
        nbytes = np.diff(out_offsets[rows])
        codes = np.diff(np.asarray(carr.code_offsets)[rows])
        over = np.flatnonzero(codes > nbytes * self._cost * (1 + self.tolerance))
        return int(over[0]) if len(over) else len(rows) - 1

    def _retrained(self, column) -> CompressedStringArray:
        """``column`` with a table (or, with ``blocks``, blocks) trained on it."""
        table = None if self.blocks else train(column, sample_bytes=self._one_table_sample())
        carr = compress_column(column, table, sample_bytes=self.sample_bytes,
                               split_size=self.split_size, level=self.level, encode=self.encode)
        self._remember_last_block(carr)
        return carr

    def _one_table_sample(self):
        if self.sample_bytes is None and self.level == "fast":
            return FAST_SAMPLE_BYTES
        return self.sample_bytes

    def _remember_last_block(self, carr) -> None:
        first = int(carr.block_starts[-2])
        string_bytes = int(np.asarray(carr.lengths[first:]).sum())
        if string_bytes:
            code_bytes = int(carr.code_offsets[-1]) - int(carr.code_offsets[first])
            self._table, self._cost = carr.tables[-1], code_bytes / string_bytes
