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
>>> from fsstgpu.gpu.layout import HostBatch
>>> a, b = fsstgpu.compress(pa.array(["ab", "cd"])), fsstgpu.compress(pa.array(["xyz"]))
>>> batch = HostBatch([a, b])
>>> batch.split_out.tolist(), [col.out_start for col in batch.columns], batch.col_first.tolist()
([0, 4, 7], [0, 4], [0, 2, 3])
"""

from __future__ import annotations

import math
from itertools import accumulate

import numpy as np

from fsstgpu.arrays import CompressedStringArray
from fsstgpu.bitmaps import join_bitmaps
from fsstgpu.gpu.lengths import (
    narrow_all,
    narrowed,
    narrowest,
    packed_lengths,
    sampled_top,
)
from fsstgpu.kernels.bitplane_cpu import bitplane_unpack_offsets_cpu, parse_header
from fsstgpu.kernels.fsst_decode import utf8_range_table
from fsstgpu.limits import MAX_TABLES
from fsstgpu.native import mark_code_starts, or_bits
from fsstgpu.symbol_table import pack_tables
from fsstgpu.types import is_text, offsets_dtype

__all__ = ["LENGTHS_LAYOUTS", "ColumnLayout", "DeviceLayout", "HostBatch", "check_lengths_layout",
           "checks_code_starts", "meta_sections", "narrowed", "narrowest", "packed_lengths",
           "section_of"]

#: how the lengths travel: narrowest unsigned dtype, or bit-plane packed (FBP2) per column;
#: "auto" packs them when every column already has them packed (a blob brings them so), since
#: packing on the host costs more than it saves (BENCHMARKS.md, "Lengths to the GPU")
LENGTHS_LAYOUTS = ("auto", "narrow", "bitplane")
DEFAULT_LENGTHS = "auto"

def checks_code_starts(carr) -> bool:
    """Whether the decode must match ``carr``'s stored code offsets against its codes: a column
    not known good (:attr:`~fsstgpu.CompressedStringArray.validated`) that keeps them (a file's
    column, a blob that stores them; the CPU decoder checks them there), or a staged one with
    their marks. Columns without stored offsets derive them from the codes, so only the string
    ends decide there.

    Examples
    --------
    >>> import pyarrow as pa, fsstgpu
    >>> from fsstgpu.gpu.layout import checks_code_starts
    >>> carr = fsstgpu.compress(pa.array(["ab", "cd"]))
    >>> stored = fsstgpu.CompressedStringArray.from_bytes(carr.to_bytes(store_code_offsets=True))
    >>> checks_code_starts(carr), checks_code_starts(stored)
    (False, True)
    """
    if carr.validated:
        return False
    if isinstance(carr, CompressedStringArray):
        return carr.has_code_offsets
    return carr.code_starts is not None


def meta_sections(nsplits: int, ntables: int, lengths_dtype, nlengths: int, validity_bytes: int,
                  ncols: int, code_starts_bytes: int = 0, utf8_ranges: int = 0):
    """Where each array of a batch's metadata lies in its one buffer (``meta``): ``({name:
    (byte start, dtype, shape)}, total bytes)``, each array from a 16-byte boundary.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.gpu.layout import meta_sections
    >>> sections, size = meta_sections(3, 1, np.uint8, 10, 2, 1)
    >>> sections["split_codes"], sections["lengths"][0], size
    ((0, dtype('int64'), (4,)), 2384, 2512)
    """
    rows, splits, cols = max(ntables, 1), (nsplits + 1,), (ncols,)
    lengths_dtype = np.dtype(lengths_dtype)
    # each section's start: the one before's, plus its bytes rounded up to 16 (written out: a
    # loop over the sections' dtypes and shapes cost ~4 us a batch, twice this)
    at = [0, -(-(nsplits + 1) // 2) * 16]
    at.append(2 * at[1])
    at.append(at[2] + -(-nsplits // 8) * 16)  # split_table: uint16
    at.append(at[3] + rows * 2048)  # tab_sym: uint64
    at.append(at[4] + rows * 256)  # tab_len: uint8
    at.append(at[5] + -(-(nlengths * lengths_dtype.itemsize) // 16) * 16)
    at.append(at[6] + -(-validity_bytes // 16) * 16)
    at.append(at[7] + -(-(ncols + 1) // 2) * 16)  # col_first: int64
    at.append(at[8] + -(-ncols // 2) * 16)
    at.append(at[9] + -(-ncols // 2) * 16)
    at.append(at[10] + -(-ncols // 16) * 16)  # col_wide: uint8
    at.append(at[11] + -(-code_starts_bytes // 16) * 16)
    return {"split_codes": (0, _I64, splits), "split_out": (at[1], _I64, splits),
            "split_table": (at[2], _U16, (nsplits,)), "tab_sym": (at[3], _U64, (rows, 256)),
            "tab_len": (at[4], _U8, (rows, 256)), "lengths": (at[5], lengths_dtype, (nlengths,)),
            "validity": (at[6], _U8, (validity_bytes,)), "col_first": (at[7], _I64, (ncols + 1,)),
            "col_base": (at[8], _I64, cols), "col_obyte": (at[9], _I64, cols),
            "col_wide": (at[10], _U8, cols), "code_starts": (at[11], _U8, (code_starts_bytes,)),
            "utf8_ranges": (at[12], _I64, (4, utf8_ranges + 1))}, at[12] + 32 * (utf8_ranges + 1)


_I64, _U64, _U16, _U8 = (np.dtype(dt) for dt in (np.int64, np.uint64, np.uint16, np.uint8))


def section_of(sections: dict, buffer, name: str):
    """Section ``name`` of ``buffer`` (a batch's ``meta``, on the host or the device) as its
    array."""
    start, dtype, shape = sections[name]
    count = math.prod(shape)  # (numpy's prod of a tuple: 3-5 us, 22 calls a batch)
    if not isinstance(buffer, np.ndarray):  # CuPy: an array made on the pointer (a slice, a
        # view and a reshape cost ~5-8 us a section on the H200 host, eleven sections a column)
        if start + count * dtype.itemsize > buffer.nbytes:
            raise ValueError(f"section {name} lies past the end of its {buffer.nbytes}-byte "
                             "buffer")
        return type(buffer)(shape, dtype, memptr=buffer.data + start)
    out = buffer[start : start + count * dtype.itemsize].view(dtype)
    return out if len(shape) == 1 else out.reshape(shape)


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

    def __init__(self, *, type, length, null_count, chunk_lengths, total, code_start, ncodes,
                 out_start, split_start, nsplits, offsets_byte, offsets_dtype, validity_start):
        # (named assignments: a loop of setattr over **fields took ~2 us a column)
        self.type, self.length, self.null_count = type, length, null_count
        self.chunk_lengths, self.total, self.code_start = chunk_lengths, total, code_start
        self.ncodes, self.out_start, self.split_start = ncodes, out_start, split_start
        self.nsplits, self.offsets_byte = nsplits, offsets_byte
        self.offsets_dtype, self.validity_start = offsets_dtype, validity_start


def check_lengths_layout(lengths) -> str:
    """``lengths`` (how a batch's string lengths travel), or ValueError where it is none of
    :data:`LENGTHS_LAYOUTS`.

    Examples
    --------
    >>> from fsstgpu.gpu.layout import check_lengths_layout
    >>> check_lengths_layout("narrow")
    'narrow'
    """
    if not isinstance(lengths, str) or lengths not in LENGTHS_LAYOUTS:
        raise ValueError(f"lengths must be one of {LENGTHS_LAYOUTS}, not {lengths!r}")
    return lengths


def _runs(joined, carrs) -> list[tuple[int, int]]:
    """(first column, count) of each output column: ``joined``'s runs, checked, or one a
    column."""
    if joined is None:
        return [(k, 1) for k in range(len(carrs))]
    counts = [int(n) for n in joined]
    if any(n < 1 for n in counts) or sum(counts) != len(carrs):
        raise ValueError(f"joined must be positive counts summing to {len(carrs)} columns, "
                         f"not {counts}")
    firsts = np.cumsum([0] + counts[:-1]).tolist()
    for first, n in zip(firsts, counts, strict=True):
        if any(c.type != carrs[first].type for c in carrs[first : first + n]):
            raise ValueError(f"joined columns {first}..{first + n - 1} are of different types")
    return list(zip(firsts, counts, strict=True))


class HostBatch:
    """One or several CompressedStringArrays in the GPU's concatenated layout (host memory).

    Each column is checked first (:meth:`CompressedStringArray.validate` with ``full=False``:
    O(strings), what the kernel relies on; the kernel checks the codes). ``codes`` stays a list
    of the columns' own arrays: they are uploaded piece by piece, never concatenated on the host.
    Everything else lives in one host buffer, ``meta``, so that it crosses the bus in one copy:
    the attributes below are views into it. ``allocate(nbytes)``, when given, provides that
    buffer (a uint8 array; e.g. pinned memory). With narrow lengths it may be called twice: the
    lengths dtype is guessed from a sample of them (:mod:`fsstgpu.gpu.lengths`), and a longer
    string found while narrowing them into the first buffer lays the batch out in a second.

    ``joined`` (counts of consecutive columns, summing to their number; each a column's row
    groups, of one type) makes each run one output column: its columns' offsets come out of the
    one scan joined (``col_wide`` bit 1), its validity one bitmap; with narrow lengths only.

    Attributes
    ----------
    columns : list of ColumnLayout
    outputs : list of ColumnLayout
        The output columns: ``columns``, or one per run of ``joined`` (its ``chunk_lengths``
        its columns' lengths; its code and split fields spanning its columns').
    codes : list of numpy.ndarray of uint8
    ncodes, total : int
        Codes and output bytes of the whole batch.
    meta : numpy.ndarray of uint8
        Every array below, each 16-byte aligned (``sections`` says where).
    split_codes, split_out : numpy.ndarray of int64, shape (nsplits + 1,)
    split_table : numpy.ndarray of uint16, shape (nsplits,)
    tab_sym, tab_len : numpy.ndarray, shape (ntables, 256)
    lengths : numpy.ndarray
        ``lengths="narrow"``: every column's lengths, in one narrowest unsigned dtype;
        ``"bitplane"``: every column's FBP2 buffer (uint8), each from a 16-byte boundary
        (``packed_at``; :meth:`column_packed_lengths`), unpacked into the offsets on the GPU.
    lengths_layout : str
        ``"narrow"`` or ``"bitplane"`` (the ``lengths`` argument; ``"auto"`` resolved).
    validity : numpy.ndarray of uint8 or None
        Every column's bitmap that has nulls, each from a byte boundary.
    col_first, col_base, col_obyte : numpy.ndarray of int64, shape (ncols + 1,), (ncols,), (ncols,)
        For the offsets scan: each column's first length, output base and offsets byte position.
    col_wide : numpy.ndarray of uint8, shape (ncols,)
        Bit 0 where the column's offsets are int64, bit 1 where they continue the column
        before's (``joined``), bit 2 where its type is text (its decode is checked as UTF-8
        where the batch is not ``trusted``), bit 3 where its strings' code starts are marked
        in ``code_starts``.
    code_starts : numpy.ndarray of uint8
        Empty, or a bitmap of the batch's codes (LSB first, bit ``p`` for code ``p``) marking
        where each string's codes start, in the columns that keep stored code offsets and are
        not known good (:func:`checks_code_starts`): the checked decode matches them against
        where the strings' output starts, as the CPU decoder checks those offsets.
    utf8_ranges : numpy.ndarray of int64, shape (4, text columns with bytes + 1)
        The text columns' output ranges as the checked decode's UTF-8 check takes them
        (:func:`~fsstgpu.kernels.fsst_decode.utf8_range_table`), uploaded with the rest.
    offsets_nbytes : int
        Size of the offsets buffer.
    trusted : bool
        Whether every column is known to decode string by string
        (:attr:`~fsstgpu.CompressedStringArray.validated`); else the decode checks each string's
        end against the symbols, as the CPU decoder does.
    """

    def __init__(self, carrs, *, allocate=None, lengths: str = DEFAULT_LENGTHS, joined=None):
        check_lengths_layout(lengths)
        carrs = list(carrs)
        runs = _runs(joined, carrs)
        if lengths == "auto":
            packed_all = carrs and all(c.packed_lengths is not None for c in carrs)
            lengths = "bitplane" if packed_all and joined is None else "narrow"
        if joined is not None and lengths != "narrow":
            raise ValueError("joined columns need lengths='narrow'")
        for carr in carrs:
            carr.validate(full=False)
        self.trusted = all(carr.validated for carr in carrs)
        ntables = sum(len(c.tables) for c in carrs)
        if ntables > MAX_TABLES:
            raise ValueError(f"{ntables} symbol tables in one batch; at most {MAX_TABLES} "
                             "(decode the columns in several batches)")
        self.codes = [c.codes for c in carrs]
        self.columns = []
        self.outputs = self.columns if joined is None else []
        self.output_of = []  # each column's output column
        bitmaps, base, wide = [], [], []  # (validity byte, bitmap); col_base; col_wide
        code_pos = out_pos = split_pos = obyte = vbyte = nstrings = 0
        for first, count in runs:
            members = carrs[first : first + count]
            odt = offsets_dtype(members[0].type, sum(c.uncompressed_bytes for c in members))
            bitmap = (members[0].validity if joined is None
                      else join_bitmaps([(c.validity, c.length) for c in members])
                      if any(c.null_count for c in members)
                      else None)
            vstart = vbyte if bitmap is not None else -1
            run_out, rows = out_pos, 0
            for i, c in enumerate(members):
                total = c.uncompressed_bytes
                self.columns.append(ColumnLayout(
                    type=c.type, length=c.length, null_count=c.null_count,
                    chunk_lengths=c.chunk_lengths, total=total, code_start=code_pos,
                    ncodes=len(c.codes), out_start=out_pos, split_start=split_pos,
                    nsplits=len(c.split_table), offsets_byte=obyte + rows * odt.itemsize,
                    offsets_dtype=odt, validity_start=vstart if joined is None else -1))
                base.append(run_out)
                # (unjoined, outputs is columns: this column; joined, the run's, added below)
                self.output_of.append(len(self.outputs) - 1 if joined is None
                                      else len(self.outputs))
                wide.append((odt.itemsize == 8) | (2 if i else 0)
                            | (4 if is_text(c.type) else 0))
                code_pos += len(c.codes)
                out_pos += total
                split_pos += len(c.split_table)
                rows += c.length
            if joined is not None:
                head = self.columns[-count]
                self.outputs.append(ColumnLayout(
                    type=head.type, length=rows, null_count=sum(c.null_count for c in members),
                    chunk_lengths=np.concatenate([
                        np.array([c.length], np.int64) if c.chunk_lengths is None
                        else np.asarray(c.chunk_lengths, np.int64) for c in members]),
                    total=out_pos - run_out, code_start=head.code_start,
                    ncodes=code_pos - head.code_start, out_start=run_out,
                    split_start=head.split_start, nsplits=split_pos - head.split_start,
                    offsets_byte=obyte, offsets_dtype=odt, validity_start=vstart))
            if bitmap is not None:
                bitmaps.append((vbyte, bitmap))
                vbyte += len(bitmap)
            nstrings += rows
            obyte += -(-(rows + 1) * odt.itemsize // 8) * 8  # every output 8-byte aligned
        self.ncodes, self.total, self.offsets_nbytes = code_pos, out_pos, obyte
        self.ntables = ntables
        ncols = len(carrs)
        self.lengths_layout = lengths
        if lengths == "bitplane":  # each column's packed buffer from a 16-byte boundary
            packed = [packed_lengths(c) for c in carrs]
            self.packed_at = np.cumsum([0] + [-(-p.size // 16) * 16 for p in packed])
            self.packed_sizes = [int(p.size) for p in packed]
            # each column's lengths dtype, from its header (the GPU then reads no header back)
            self.packed_dtypes = [parse_header(p[:16].tobytes(), p.size)[1] for p in packed]
            lens_dtype, nlens = np.dtype(np.uint8), int(self.packed_at[-1])
        else:
            packed = None
            top = sampled_top(carrs)  # a guess of the lengths dtype, checked below
            lens_dtype, nlens = narrowest(top), nstrings
        marked = [checks_code_starts(c) for c in carrs]
        for k, mark in enumerate(marked):
            wide[k] |= 8 if mark else 0
        texts = utf8_range_table([(c.out_start, c.out_start + c.total, k)
                                  for k, c in enumerate(self.columns) if is_text(c.type)])
        shape = (split_pos, ntables, nlens, vbyte, ncols,
                 max(-(-code_pos // 8), 1) if any(marked) else 0, texts.shape[1] - 1)
        self._lay_out(shape, lens_dtype, allocate)
        if packed is None:
            top = narrow_all(carrs, self.lengths, top)
            if narrowest(top) != lens_dtype:  # a string longer than the sample's: lay out again
                self._lay_out(shape, narrowest(top), allocate)
                narrow_all(carrs, self.lengths, top)
        self._fill(carrs, packed, bitmaps, base, wide)
        self._mark_code_starts(carrs, marked)
        self.utf8_ranges[...] = texts
        if not vbyte:
            self.validity = None

    def _lay_out(self, shape, lens_dtype, allocate) -> None:
        """``sections``, ``meta`` (from ``allocate``) and its arrays as attributes, for lengths
        of ``lens_dtype``; ``shape``: :func:`meta_sections`' other arguments."""
        nsplits, ntables, nlens, vbyte, ncols, code_starts_bytes, utf8_ranges = shape
        self.sections, size = meta_sections(nsplits, ntables, lens_dtype, nlens, vbyte, ncols,
                                            code_starts_bytes, utf8_ranges)
        # allocate(nbytes): where ``meta`` lives (pinned memory makes its upload asynchronous)
        self.meta = meta = np.empty(size, np.uint8) if allocate is None else allocate(size)
        if type(meta) is np.ndarray:  # each view made on the buffer at once (section_of's
            # slice, view and reshape: ~0.6 us a section, thirteen a batch)
            vars(self).update({name: np.ndarray(shape, dtype, meta, start)
                               for name, (start, dtype, shape) in self.sections.items()})
        else:
            for name in self.sections:
                setattr(self, name, self.section(meta, name))

    def section(self, buffer, name: str):
        """Section ``name`` of ``buffer`` (``meta``, or its device copy) as its array."""
        return section_of(self.sections, buffer, name)

    def _fill(self, carrs, packed, bitmaps, base, wide) -> None:
        pack_tables([t for c in carrs for t in c.tables], into=(self.tab_sym, self.tab_len))
        table_pos = 0
        for c, col in zip(carrs, self.columns, strict=True):
            s = slice(col.split_start, col.split_start + col.nsplits)
            np.add(c.split_codes[:-1], col.code_start, out=self.split_codes[s])
            np.add(c.split_out[:-1], col.out_start, out=self.split_out[s])
            np.add(c.split_table, table_pos, out=self.split_table[s], casting="unsafe")
            table_pos += len(c.tables)
        if packed is not None:
            for k, buf in enumerate(packed):
                self.lengths[self.packed_at[k] : self.packed_at[k] + buf.size] = buf
        for at, bitmap in bitmaps:
            self.validity[at : at + len(bitmap)] = bitmap
        self.split_codes[-1] = self.ncodes
        self.split_out[-1] = self.total
        cols = self.columns
        self.col_first[0] = 0
        self.col_first[1:] = list(accumulate(col.length for col in cols))  # (np.cumsum of a
        # list into a view took ~5 us)
        self.col_base[...] = base
        self.col_obyte[...] = [col.offsets_byte for col in cols]
        self.col_wide[...] = wide

    def _mark_code_starts(self, carrs, marked) -> None:
        """Each marked column's code starts into ``code_starts`` at its codes' place: from its
        code offsets, or a staged column's own bitmap (compiled passes, O(strings))."""
        if not self.code_starts.size:
            return
        self.code_starts[...] = 0
        for c, col, mark in zip(carrs, self.columns, marked, strict=True):
            if not mark:
                continue
            if isinstance(c, CompressedStringArray):
                mark_code_starts(c.code_offsets, self.code_starts, col.code_start)
            else:
                or_bits(c.code_starts, col.ncodes, self.code_starts, col.code_start)

    def __len__(self) -> int:
        return len(self.columns)

    def column_packed_lengths(self, lengths, index: int):
        """Column ``index``'s bit-plane packed lengths in ``lengths`` (the section, on the host
        or the device), with ``lengths="bitplane"``."""
        start = int(self.packed_at[index])
        return lengths[start : start + self.packed_sizes[index]]

    def column_splits(self, index: int) -> slice:
        """The split indices of column ``index`` in the batch's split arrays."""
        col = self.columns[index]
        return slice(col.split_start, col.split_start + col.nsplits)

    def offsets_cpu(self) -> list[np.ndarray]:
        """Every column's Arrow offsets, computed on the CPU (the scan kernel's twin).

        Examples
        --------
        >>> import pyarrow as pa, fsstgpu
        >>> from fsstgpu.gpu.layout import HostBatch
        >>> batch = HostBatch([fsstgpu.compress(pa.array(["ab", None, "c"]))])
        >>> [o.tolist() for o in batch.offsets_cpu()]
        [[0, 2, 2, 3]]
        """
        if self.lengths_layout == "bitplane":
            return [bitplane_unpack_offsets_cpu(self.column_packed_lengths(self.lengths, c),
                                                wide=col.offsets_dtype.itemsize == 8)
                    for c, col in enumerate(self.columns)]
        out, first = [], 0
        for col in self.outputs:
            lens = self.lengths[first : first + col.length].astype(np.int64)
            offsets = np.zeros(col.length + 1, col.offsets_dtype)
            np.cumsum(lens, out=offsets[1:], dtype=col.offsets_dtype)
            out.append(offsets)
            first += col.length
        return out


class DeviceLayout:
    """The layout of one column whose arrays were made on the device
    (:func:`fsstgpu.compress_device`, or a file's pages decoded there): what :class:`HostBatch`
    says of a one-column batch, with no host arrays behind it (its ``codes`` list is empty, its
    ``meta`` lives on the device only). The decode reads a
    :class:`~fsstgpu.gpu.arrays.DeviceCompressedStringArray` built on it as it reads an
    uploaded column. ``checked``: the column is not known good (a file's): the decode checks
    its strings' ends and code starts (the ``code_starts`` section, which the maker fills) and
    a text column's bytes as UTF-8, as it checks an uploaded column that is not ``trusted``.

    Examples
    --------
    >>> import numpy as np, pyarrow as pa
    >>> from fsstgpu.gpu.layout import DeviceLayout
    >>> lay = DeviceLayout(pa.string(), 3, 0, None, total=9, ncodes=6, nsplits=2,
    ...                    lengths_dtype=np.uint8, validity_bytes=0)
    >>> lay.offsets_nbytes, lay.columns[0].offsets_dtype, lay.col_first.tolist()
    (16, dtype('int32'), [0, 3])
    >>> checked = DeviceLayout(pa.string(), 3, 0, None, total=9, ncodes=6, nsplits=2,
    ...                        lengths_dtype=np.uint8, validity_bytes=0, checked=True)
    >>> checked.trusted, checked.sections["code_starts"][2], checked.col_wide.tolist()
    (False, (1,), [12])
    """

    lengths_layout = "narrow"

    def __init__(self, type_, length: int, null_count: int, chunk_lengths, *, total: int,
                 ncodes: int, nsplits: int, lengths_dtype, validity_bytes: int,
                 ntables: int = 1, checked: bool = False):
        self.ntables = ntables
        self.trusted = not checked  # (the GPU encoder's own codes are)
        odt = offsets_dtype(type_, total)
        self.columns = [ColumnLayout(
            type=type_, length=length, null_count=null_count, chunk_lengths=chunk_lengths,
            total=total, code_start=0, ncodes=ncodes, out_start=0, split_start=0,
            nsplits=nsplits, offsets_byte=0, offsets_dtype=odt,
            validity_start=0 if validity_bytes else -1)]
        self.outputs = self.columns
        self.output_of = [0]
        self.codes = []  # no host codes: the column was made on the device
        self.ncodes, self.total = ncodes, total
        self.offsets_nbytes = -(-(length + 1) * odt.itemsize // 8) * 8
        text = checked and is_text(type_)
        self.utf8_ranges = utf8_range_table([(0, total, 0)] if text else [])
        self.sections, self.meta_nbytes = meta_sections(
            nsplits, ntables, lengths_dtype, length, validity_bytes, 1,
            max(-(-ncodes // 8), 1) if checked else 0, self.utf8_ranges.shape[1] - 1)
        self.col_first = np.array([0, length], np.int64)
        self.col_base = np.zeros(1, np.int64)
        self.col_obyte = np.zeros(1, np.int64)
        self.col_wide = np.array([(odt.itemsize == 8) | (4 if text else 0)
                                  | (8 if checked else 0)], np.uint8)

    def __len__(self) -> int:
        return 1

    def section(self, buffer, name: str):
        """Section ``name`` of the device ``meta`` buffer as its array."""
        return section_of(self.sections, buffer, name)

    def column_splits(self, index: int) -> slice:
        return slice(0, self.columns[0].nsplits)
