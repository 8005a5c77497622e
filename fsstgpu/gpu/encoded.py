"""The device-resident result of a GPU encode (issue #25): a column's codes and code offsets,
made on the device, turned into the :class:`~fsstgpu.gpu.arrays.DeviceCompressedStringArray`
that :func:`fsstgpu.decompress_device` decodes, without the per-string arrays leaving the
device.

What the CPU encoder computes on the host (:func:`fsstgpu.columns.compress_column`), done here
where the arrays are: the string lengths (0 for nulls) and their narrowest dtype, the output
offsets, the split starts of :mod:`fsstgpu.splits`' rules 1 and 2 (a search of the output
offsets on the device, then, without long strings, :func:`fsstgpu.splits.one_block_starts` on
the device too; with long strings the ~``total / S`` rows found come back and the host puts the
split arrays together with :func:`fsstgpu.splits.assemble_splits`, the CPU planner's own code),
and rule 3's cuts inside strings longer than ``S`` (found by the encode, or, without them, only
those strings' codes come back, walked by :func:`fsstgpu.scan.long_string_cuts`). The result
has the CPU encoder's split points, so ``to_host()`` equals ``fsstgpu.compress(column,
table=table)``.
"""

from __future__ import annotations

import numpy as np

from fsstgpu.bitmaps import pack_bits
from fsstgpu.gpu.arrays import DeviceCompressedStringArray
from fsstgpu.gpu.layout import DeviceLayout, narrowest, section_of
from fsstgpu.kernels.fsst_decode import padded_size
from fsstgpu.scan import long_string_cuts
from fsstgpu.splits import assemble_splits, one_block_starts, rule2_rows
from fsstgpu.symbol_table import pack_tables

__all__ = ["DEVICE_PLAN_ROWS", "device_column", "prefetch_rows", "rows_from", "split_rows",
           "valid_offsets"]

#: Rule 2's rows from which a column without long strings has its split points planned on the
#: device (:func:`fsstgpu.splits.one_block_starts`); fewer come back to the host's merge, which
#: is quicker for them (H100, device_column of dbtext: 16 MiB, 4,105 rows: 0.62 ms with the
#: host's merge, 0.94 on the device; 256 MiB, 65,719 rows: 2.37 against 1.02; 1 GiB, 262,896
#: rows: 16.1 against 1.5, of which the merge alone took 9.2 ms on the host)
DEVICE_PLAN_ROWS = 16384

#: the sections of a device column's ``meta`` that come from the host (split points, tables),
#: in front of the lengths; and those behind the validity (the offsets scan's plan)
_HOST_HEAD = ("split_codes", "split_out", "split_table", "tab_sym", "tab_len")
_HOST_TAIL = ("col_first", "col_base", "col_obyte", "col_wide")


def device_column(cp, table, type_, n: int, codes, code_offsets, offsets, lengths, validity,
                  null_count: int, chunk_lengths, split_size: int, cuts=None, *,
                  total: int | None = None, most: int | None = None, rows_back=None,
                  block_starts=None, out_offsets=None, checked: bool = False):
    """The DeviceCompressedStringArray of ``n`` strings encoded on the device with ``table``
    (with ``block_starts``, host int64 from 0 to n: a table a block, ``table`` their sequence).

    ``codes`` (uint8, ``code_offsets[-1]`` of them, in an allocation of at least
    ``padded_size`` bytes whose padding is zero: ``encode_on_device(..., padded=True)``) and
    ``code_offsets`` (int64, n + 1) are the encoder's; ``offsets`` (int64 from 0, n + 1),
    ``lengths`` (:func:`~fsstgpu.kernels.encode_chunks.valid_lengths` of them) and
    ``validity`` (uint8 bitmap or None) the strings'. The result keeps ``code_offsets`` for
    ``to_host()``. ``cuts``: the encoder's cuts every ``split_size`` bytes inside the long
    strings (``encode_on_device(..., cut_size=split_size)``), or None to find them here (the
    long strings' codes walked on the host). ``total`` and ``most``: the valid strings' bytes
    and the most of one, where the caller has them (each a wait otherwise). ``rows_back``:
    :func:`split_rows`' rows and the code and output offsets there, brought back by the caller
    (:func:`prefetch_rows`), for a column without cuts whose split points the host plans.
    ``out_offsets``: the running sum of ``lengths`` from 0, where the caller has it.
    ``checked``: the arrays are not the encoder's but a file's
    (:mod:`fsstgpu.formats.page_columns`): the decode checks each string's code start and end,
    and a text column's bytes as UTF-8.

    Examples
    --------
    >>> import fsstgpu, pyarrow as pa
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     import cupy as cp
    ...     from fsstgpu.gpu.encoded import device_column
    ...     from fsstgpu.kernels.encode_chunks import valid_lengths
    ...     from fsstgpu.kernels.fsst_encode import encode_on_device
    ...     t = fsstgpu.SymbolTable([b"ab"])
    ...     data, offs = cp.frombuffer(b"abab", cp.uint8), cp.array([0, 2, 4])
    ...     codes, code_offsets = encode_on_device(t, data, offs, padded=True)
    ...     dev = device_column(cp, t, pa.binary(), 2, codes, code_offsets, offs,
    ...                         valid_lengths(cp, offs), None, 0, None, 4096)
    ...     assert fsstgpu.decompress_device(dev).to_arrow().to_pylist() == [b"ab", b"ab"]
    """
    tables = (table,) if block_starts is None else tuple(table)
    block_starts = np.array([0, n], np.int64) if block_starts is None else \
        np.asarray(block_starts, np.int64)
    if out_offsets is None:
        out_offsets = valid_offsets(cp, offsets, lengths, validity)
    ncodes = int(codes.size)
    if total is None:
        total = int(out_offsets[-1]) if n else 0
    on_device = False  # the split points planned on the device (one block, no cut)
    if ncodes and rows_back is not None and cuts is not None and not cuts[0].size:
        split_codes, split_out, split_table = assemble_splits(
            block_starts, *rows_back, (np.zeros(0, np.int64),) * 3, ncodes, total)
    elif ncodes:
        row = split_rows(cp, out_offsets, split_size, total, block_starts)
        on_device = (cuts is not None and not cuts[0].size
                     and int(row.size) >= DEVICE_PLAN_ROWS)
        if on_device:
            split_codes, split_out, split_table = _starts_on_device(
                cp, row, block_starts, code_offsets, out_offsets, ncodes, total)
        else:
            if cuts is None:
                cuts = _long_cuts(cp, tables, block_starts, codes, code_offsets, lengths,
                                  out_offsets, split_size)
            elif not cuts[0].size:  # (nothing to read back)
                cuts = (np.zeros(0, np.int64),) * 3
            else:  # (code positions, places in their strings, rows)
                cuts = (cuts[0].get(), (out_offsets[cuts[2]] + cuts[1]).get(), cuts[2].get())
            # the rows and their code and output offsets in one copy back
            rows_h, codes_h, outs_h = cp.stack([row, code_offsets[row], out_offsets[row]]).get()
            split_codes, split_out, split_table = assemble_splits(
                block_starts, rows_h, codes_h, outs_h, cuts, ncodes, total)
    else:  # no codes, no splits (plan_splits' answer)
        split_codes, split_out = np.zeros(1, np.int64), np.zeros(1, np.int64)
        split_table = np.zeros(0, np.uint16)
    layout = DeviceLayout(
        type_, n, null_count, chunk_lengths, total=total, ncodes=ncodes,
        nsplits=len(split_table),
        lengths_dtype=narrowest(most if most is not None else int(lengths.max()) if n else 0),
        validity_bytes=0 if validity is None else int(validity.size), ntables=len(tables),
        checked=checked)
    meta = cp.empty(layout.meta_nbytes, cp.uint8)
    if checked:  # where each string's codes start (a bit a code), and the UTF-8 check's table
        nbits = layout.sections["code_starts"][2][0] * 8
        marks = cp.zeros(nbits + 1, cp.uint8)  # (an empty string's start marks the spare bit
        starts = code_offsets[:-1]               # past them: a scatter, no count to wait for)
        marks[cp.where(code_offsets[1:] > starts, starts, nbits)] = 1
        section_of(layout.sections, meta, "code_starts")[...] = pack_bits(marks[:nbits], cp)
        _upload_sections(cp, layout, meta, {"utf8_ranges": layout.utf8_ranges},
                         ("utf8_ranges",))
    tab_sym, tab_len = pack_tables(tables)
    head = {"split_codes": split_codes, "split_out": split_out, "split_table": split_table,
            "tab_sym": tab_sym, "tab_len": tab_len}
    if on_device:  # (the split points copied on the device; their tables and the tables
        # uploaded)
        for name in ("split_codes", "split_out"):
            section_of(layout.sections, meta, name)[...] = head.pop(name)
    _upload_sections(cp, layout, meta, head, tuple(name for name in _HOST_HEAD if name in head))
    if n:
        cp.copyto(section_of(layout.sections, meta, "lengths"), lengths, casting="unsafe")
    if validity is not None:
        section_of(layout.sections, meta, "validity")[...] = validity
    _upload_sections(cp, layout, meta, {name: getattr(layout, name) for name in _HOST_TAIL},
                     _HOST_TAIL)
    padded = cp.ndarray((padded_size(ncodes),), cp.uint8, memptr=codes.data) if ncodes else \
        cp.zeros(padded_size(0), cp.uint8)
    dev = DeviceCompressedStringArray(layout, device_parts=(padded, meta))
    dev.is_batch = False  # one column: its decode gives a DeviceStringArray, not a list
    dev.encoded = {"code_offsets": code_offsets, "tables": tables, "split_size": split_size,
                   "block_starts": block_starts}
    return dev


def valid_offsets(cp, offsets, lengths, validity):
    """The running sum of the strings' ``lengths`` (0 for nulls) from 0: ``offsets`` itself
    without nulls (int64 from 0, as the encoder takes them), else a new device array.

    Examples
    --------
    >>> import fsstgpu
    >>> if fsstgpu.gpu_available():  # doctest: +SKIP
    ...     import cupy as cp
    ...     from fsstgpu.gpu.encoded import valid_offsets
    ...     got = valid_offsets(cp, cp.array([0, 2, 5]), cp.array([0, 3]), cp.array([2], cp.uint8))
    ...     assert got.get().tolist() == [0, 0, 3]
    """
    if validity is None:
        return offsets  # no length zeroed: the input's offsets, from 0
    out_offsets = cp.zeros(int(offsets.shape[0]), cp.int64)
    cp.cumsum(lengths, out=out_offsets[1:])
    return out_offsets


def split_rows(cp, out_offsets, split_size: int, total: int, block_starts=None):
    """The rows whose code and output offsets plan a column's split points: the blocks' starts
    (host ``block_starts``; one block: 0), then rule 2's (:func:`fsstgpu.splits.rule2_rows`),
    int64 on the device, without a wait."""
    return _rows_buffer(cp, out_offsets, split_size, total, 1, block_starts)


def _rows_buffer(cp, out_offsets, split_size: int, total: int, slots: int, block_starts=None):
    """A zeroed int64 buffer of ``slots`` times :func:`split_rows`' count, those rows in its
    first slot (the others for values gathered at them)."""
    heads = np.zeros(1, np.int64) if block_starts is None else \
        np.asarray(block_starts[:-1], np.int64)
    rows = rule2_rows(out_offsets, split_size, xp=cp, total=total)
    buffer = cp.zeros(slots * (int(rows.size) + len(heads)), cp.int64)
    if len(heads) > 1:
        buffer[: len(heads)] = cp.asarray(heads)
    buffer[len(heads) : int(rows.size) + len(heads)] = rows
    return buffer


def _starts_on_device(cp, row, block_starts, code_offsets, out_offsets, ncodes: int,
                      total: int):
    """:func:`fsstgpu.splits.assemble_splits` without cuts, on the device: ``row``
    (:func:`split_rows`') in order, of the rows at one code position the last kept (its
    codes follow), each split's table the block of its row; the split table comes back."""
    if len(block_starts) == 2:  # (one block: the rows are in order, every table 0)
        split_codes, split_out = one_block_starts(code_offsets[row], out_offsets[row], ncodes,
                                                  total, xp=cp)
        return split_codes, split_out, np.zeros(int(split_codes.size) - 1, np.uint16)
    row = cp.sort(row)
    split_codes, split_out = one_block_starts(code_offsets[row], out_offsets[row], ncodes,
                                              total, xp=cp)
    # the kept rows again: the last row of each kept code position (one search of the codes)
    kept = cp.searchsorted(code_offsets[row], split_codes[:-1], side="right") - 1
    table = cp.searchsorted(cp.asarray(block_starts), row[kept], side="right") - 1
    return split_codes, split_out, table.astype(cp.uint16).get()


def prefetch_rows(cp, out_offsets, split_size: int, total: int, block_starts=None):
    """For a column planned on the host (fewer than :data:`DEVICE_PLAN_ROWS` rows), a function
    of the encode's ``code_offsets`` giving :func:`split_rows`' rows and the code and output
    offsets there as one device array, read back with the encode's summary (no wait of their
    own); :func:`rows_from` splits its host copy into ``device_column``'s ``rows_back``. None
    for a column the device plans.

    Examples
    --------
    >>> import numpy as np
    >>> from fsstgpu.gpu.encoded import rows_from
    >>> [a.tolist() for a in rows_from(np.array([0, 2, 0, 5, 0, 6]))]
    [[0, 2], [0, 5], [0, 6]]
    """
    heads = 1 if block_starts is None else len(block_starts) - 1
    if (total - 1) // split_size + heads >= DEVICE_PLAN_ROWS:
        return None
    # [rows | their code offsets | their output offsets] in one buffer: the rows and output
    # offsets now, the code offsets once encoded (no concatenation after the encode)
    back = _rows_buffer(cp, out_offsets, split_size, total, 3, block_starts)
    m = back.size // 3
    row = back[:m]
    cp.take(out_offsets, row, out=back[2 * m :])

    def gathered(code_offsets):
        cp.take(code_offsets, row, out=back[m : 2 * m])
        return back

    return gathered


def rows_from(values: np.ndarray) -> tuple:
    """:func:`prefetch_rows`' host copy as (rows, code offsets, output offsets)."""
    m = len(values) // 3
    return values[:m], values[m : 2 * m], values[2 * m :]


def _upload_sections(cp, layout: DeviceLayout, meta, arrays: dict, names) -> None:
    """Host ``arrays`` into their sections of the device ``meta``, adjacent sections ``names``
    in one copy."""
    first = layout.sections[names[0]][0]
    last_start, last_dtype, last_shape = layout.sections[names[-1]]
    end = last_start + int(np.prod(last_shape)) * last_dtype.itemsize
    staging = np.zeros(end - first, np.uint8)
    shifted = {name: (start - first, dtype, shape)
               for name, (start, dtype, shape) in layout.sections.items() if name in names}
    for name in names:
        section_of(shifted, staging, name)[...] = arrays[name]
    meta[first:end].set(staging)


def _long_cuts(cp, tables, block_starts, codes, code_offsets, lengths, out_offsets,
               split_size: int):
    """Rule 3's cuts (code positions, output positions, rows) inside the strings longer than
    ``split_size``: their codes gathered on the device and walked on the host, each with its
    block's table."""
    long_rows = cp.flatnonzero(lengths > split_size)
    m = int(long_rows.size)
    if m == 0:
        empty = np.zeros(0, np.int64)
        return empty, empty, empty
    first = code_offsets[long_rows]
    local = cp.zeros(m + 1, cp.int64)  # each long string's codes in the gathered run
    cp.cumsum(code_offsets[long_rows + 1] - first, out=local[1:])
    at = cp.arange(int(local[-1]), dtype=cp.int64)
    owner = cp.searchsorted(local[1:], at, side="right")
    gathered = codes[first[owner] + at - local[owner]].get()
    sizes = lengths[long_rows].get()
    local_out = np.zeros(m + 1, np.int64)
    np.cumsum(sizes, out=local_out[1:])
    local_h = local.get()
    rows_h, first_h = long_rows.get(), first.get()
    # each block's first long string among them
    local_starts = np.searchsorted(rows_h, block_starts, side="left").astype(np.int64)
    cut_code, cut_out, cut_row = long_string_cuts(tables, local_starts, gathered, local_h,
                                                  sizes, split_size)
    out_start = out_offsets[long_rows].get()
    return (first_h[cut_row] + cut_code - local_h[cut_row],
            out_start[cut_row] + cut_out - local_out[cut_row], rows_h[cut_row])
