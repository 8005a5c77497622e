"""The GPU's view of one or several compressed columns: one concatenated layout, one launch.

:class:`HostBatch` puts columns side by side as the decode kernel reads them: their codes one
after the other, their outputs one after the other, their tables in one array, and their split
points concatenated with positions and table ids shifted, so one launch of the kernel decodes
every column (the kernel does not know about columns). The lengths are concatenated in the
narrowest unsigned type that holds all of them, and each column gets a slot in one offsets buffer
(int32 or int64 per column, as its Arrow type needs), so one scan writes every column's Arrow
offsets. Everything here is host-side numpy at memory speed (O(strings + splits)); nothing walks
the codes: the kernel checks them.

>>> import pyarrow as pa, fsstgpu
>>> from fsstgpu.gpu_layout import HostBatch
>>> a, b = fsstgpu.compress(pa.array(["ab", "cd"])), fsstgpu.compress(pa.array(["xyz"]))
>>> batch = HostBatch([a, b])
>>> batch.split_out.tolist(), [col.out_start for col in batch.columns], batch.col_first.tolist()
([0, 4, 7], [0, 4], [0, 2, 3])
"""

from __future__ import annotations

import numpy as np

from fsstgpu.splits import replan
from fsstgpu.symbol_table import pack_tables
from fsstgpu.types import offsets_dtype

__all__ = ["ColumnLayout", "HostBatch", "narrow_lengths"]

#: the most tables one launch can name (split_table is uint16)
MAX_TABLES = 65536


def narrow_lengths(lengths: np.ndarray, dtype=None) -> np.ndarray:
    """The lengths in the narrowest unsigned dtype that holds them (or in ``dtype``).

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.gpu_layout import narrow_lengths
    >>> narrow_lengths(np.array([3, 300])).dtype
    dtype('uint16')
    """
    if dtype is None:
        dtype = _narrowest(int(lengths.max()) if lengths.size else 0)
    return lengths.astype(dtype)


def _narrowest(top: int):
    for dt in (np.uint8, np.uint16, np.uint32):
        if top <= np.iinfo(dt).max:
            return np.dtype(dt)
    return np.dtype(np.uint64)


class ColumnLayout:
    """Where one column of a batch lives in the batch's buffers.

    Attributes: ``type``, ``length``, ``null_count``, ``chunk_lengths`` (as the column had them);
    ``total`` (its output bytes); ``code_start`` / ``ncodes``; ``out_start`` (its data in the
    output buffer); ``split_start`` / ``nsplits``; ``offsets_byte`` / ``offsets_dtype`` (its
    ``length + 1`` offsets in the offsets buffer); ``validity_start`` (its bitmap's first byte in
    the validity buffer, or -1 without nulls).
    """

    __slots__ = ("type", "length", "null_count", "chunk_lengths", "total", "code_start", "ncodes",
                 "out_start", "split_start", "nsplits", "offsets_byte", "offsets_dtype",
                 "validity_start")

    def __init__(self, **fields):
        for name, value in fields.items():
            setattr(self, name, value)


class HostBatch:
    """One or several CompressedStringArrays in the GPU's concatenated layout (host memory).

    Each column is checked first (:meth:`CompressedStringArray.validate` with ``full=False``:
    O(strings), what the kernel relies on; the kernel checks the codes). ``codes`` stays a list
    of the columns' own arrays: they are uploaded piece by piece, never concatenated on the host.

    Parameters
    ----------
    carrs : sequence of CompressedStringArray
    split_size : int, optional
        Decode with finer splits than the columns were compressed with, so that a small column
        still gives every SM work: columns with a larger split size whose code offsets are at
        hand are re-planned (:func:`fsstgpu.splits.replan`, memory speed). None: as stored.

    Attributes
    ----------
    columns : list of ColumnLayout
    codes : list of numpy.ndarray of uint8
    ncodes, total : int
        Codes and output bytes of the whole batch.
    split_codes, split_out : numpy.ndarray of int64, shape (nsplits + 1,)
    split_table : numpy.ndarray of uint16, shape (nsplits,)
    tab_sym, tab_len : numpy.ndarray, shape (ntables, 256)
    lengths : numpy.ndarray, shape (sum of lengths,)
        Every column's lengths, in one narrowest unsigned dtype.
    validity : numpy.ndarray of uint8 or None
        Every column's bitmap that has nulls, each from a byte boundary.
    col_first, col_base, col_obyte : numpy.ndarray of int64, shape (ncols + 1,), (ncols,), (ncols,)
        For the offsets scan: each column's first length, output base and offsets byte position.
    col_wide : numpy.ndarray of uint8, shape (ncols,)
        1 where the column's offsets are int64.
    offsets_nbytes : int
        Size of the offsets buffer.
    """

    def __init__(self, carrs, split_size: int | None = None):
        carrs = list(carrs)
        for carr in carrs:
            carr.validate(full=False)
        ntables = sum(len(c.tables) for c in carrs)
        if ntables > MAX_TABLES:
            raise ValueError(f"{ntables} symbol tables in one batch; at most {MAX_TABLES} "
                             "(decode the columns in several batches)")
        self.codes = [c.codes for c in carrs]
        self.columns = []
        sc, so, st, tables, lens, valid = [], [], [], [], [], []
        code_pos = out_pos = split_pos = table_pos = obyte = vbyte = 0
        for c in carrs:
            total = c.uncompressed_bytes
            odt = offsets_dtype(c.type, total)
            nsplits = len(c.split_table)
            self.columns.append(ColumnLayout(
                type=c.type, length=c.length, null_count=c.null_count,
                chunk_lengths=c.chunk_lengths, total=total, code_start=code_pos,
                ncodes=len(c.codes), out_start=out_pos, split_start=split_pos, nsplits=nsplits,
                offsets_byte=obyte, offsets_dtype=odt,
                validity_start=vbyte if c.validity is not None else -1))
            c_sc, c_so, c_st = c.split_codes, c.split_out, c.split_table
            if split_size is not None and split_size < c.split_size and c.has_code_offsets:
                c_sc, c_so, c_st = replan(c, split_size)
                nsplits = len(c_st)
                self.columns[-1].nsplits = nsplits
            sc.append(c_sc[:-1] + code_pos)
            so.append(c_so[:-1] + out_pos)
            st.append(c_st.astype(np.int64) + table_pos)
            tables.extend(c.tables)
            lens.append(c.lengths)
            if c.validity is not None:
                valid.append(c.validity)
                vbyte += len(c.validity)
            code_pos += len(c.codes)
            out_pos += total
            split_pos += nsplits
            table_pos += len(c.tables)
            obyte += -(-(c.length + 1) * odt.itemsize // 8) * 8  # every column 8-byte aligned
        self.ncodes, self.total, self.offsets_nbytes = code_pos, out_pos, obyte
        self.split_codes = np.concatenate([*sc, [code_pos]]).astype(np.int64)
        self.split_out = np.concatenate([*so, [out_pos]]).astype(np.int64)
        self.split_table = np.concatenate(st).astype(np.uint16) if st else np.zeros(0, np.uint16)
        self.tab_sym, self.tab_len = pack_tables(tables)
        self.ntables = len(tables)
        top = max((int(x.max()) for x in lens if x.size), default=0)
        dtype = _narrowest(top)
        self.lengths = (np.concatenate([x.astype(dtype) for x in lens]) if lens
                        else np.zeros(0, dtype))
        self.validity = np.concatenate(valid) if valid else None
        cols = self.columns
        self.col_first = np.zeros(len(cols) + 1, np.int64)
        np.cumsum([col.length for col in cols], out=self.col_first[1:])
        self.col_base = np.array([col.out_start for col in cols], np.int64)
        self.col_obyte = np.array([col.offsets_byte for col in cols], np.int64)
        self.col_wide = np.array([col.offsets_dtype.itemsize == 8 for col in cols], np.uint8)

    def __len__(self) -> int:
        return len(self.columns)

    def column_splits(self, index: int) -> slice:
        """The split indices of column ``index`` in the batch's split arrays."""
        col = self.columns[index]
        return slice(col.split_start, col.split_start + col.nsplits)

    def offsets_cpu(self) -> list[np.ndarray]:
        """Every column's Arrow offsets, computed on the CPU (the scan kernel's twin).

        Examples
        --------
        >>> import pyarrow as pa, fsstgpu
        >>> from fsstgpu.gpu_layout import HostBatch
        >>> batch = HostBatch([fsstgpu.compress(pa.array(["ab", None, "c"]))])
        >>> [o.tolist() for o in batch.offsets_cpu()]
        [[0, 2, 2, 3]]
        """
        out = []
        for c, col in enumerate(self.columns):
            lens = self.lengths[self.col_first[c] : self.col_first[c + 1]].astype(np.int64)
            offsets = np.zeros(col.length + 1, col.offsets_dtype)
            np.cumsum(lens, out=offsets[1:], dtype=col.offsets_dtype)
            out.append(offsets)
        return out
