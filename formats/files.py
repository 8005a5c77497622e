"""Compress and decompress the string columns of Parquet and Arrow IPC files.

Every string-like column (``string``, ``large_string``, ``string_view``, ``binary``,
``large_binary``, ``binary_view``, and dictionaries of them) is stored as an ``fsstgpu.fsst``
extension column (``formats/arrow.md``), the string-like leaves of list / struct / map columns
``fsstgpu.fsst`` leaves (:mod:`fsstgpu.formats.nested`); every other column passes through
unchanged. The file is rewritten one row group / record batch at a time
(:mod:`fsstgpu.formats.rowgroups`), so memory stays bounded by a small multiple of one row group
whatever the file size. Each column's row groups are compressed one after the other by a
:class:`fsstgpu.columns.ColumnStream`: a row group keeps the table before it while that still
fits its text (at most 15% more code bytes per byte than on its own block), else gets a table
of its own (planned into blocks where its text changes when the pages are not compressed
again). The tables travel in the data (version 4), so every file of one dataset has one
schema. Reading: :mod:`fsstgpu.formats.file_reads`. ``formats/files.md`` describes the files
and what survives a round trip.

Formats: an input is recognised by its first bytes; an output's format comes from ``format=``
or its suffix (:mod:`fsstgpu.formats.sniff`), and an unknown suffix is refused. Outputs are
written atomically, never over an input, and over an existing file only with ``force=True``
(:mod:`fsstgpu.formats.atomic`).
"""

from __future__ import annotations

import itertools
import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa

from fsstgpu.arrow_layout import buffer_values
from fsstgpu.blocks import check_level
from fsstgpu.device import resolve_device
from fsstgpu.errors import CorruptDataError, FsstGpuError, OptionError
from fsstgpu.formats.arrow import is_fsst_type
from fsstgpu.formats.atomic import atomic_output, check_output
from fsstgpu.formats.compressing import UnitCompressor
from fsstgpu.formats.decoding import CODECS_KEY, Decoder, restored_schema
from fsstgpu.formats.dictionaries import plain_values
from fsstgpu.formats.ipc_compression import IPC_CODECS
from fsstgpu.formats.locations import file_size
from fsstgpu.formats.nested import (
    fsst_leaf_type,
    fsst_type_of,
    has_fsst,
    holds_strings,
)
from fsstgpu.formats.parquet_options import input_leaf
from fsstgpu.formats.pipeline import rewrite
from fsstgpu.formats.pruning import (
    STRING_STATS_KEY,
    stats_footer,
    string_buffers,
)
from fsstgpu.formats.rowgroups import (
    Source,
    check_input,
    check_progress,
    parquet_codec_name,
    reading,
)
from fsstgpu.formats.selection import select_columns
from fsstgpu.formats.sinks import Sink
from fsstgpu.formats.sniff import output_format
from fsstgpu.gpu.block_encode import GpuBlockEncoder
from fsstgpu.limits import whole_number
from fsstgpu.native import distinct_upto
from fsstgpu.parallel import thread_count
from fsstgpu.symbol_table import SymbolTable, as_symbol_table
from fsstgpu.training import check_sample_bytes
from fsstgpu.types import INT32_MAX, large_type, narrow_offsets

__all__ = [
    "NotCompressedError",
    "compress_file",
    "decompress_file",
]


class NotCompressedError(FsstGpuError, ValueError):
    """A file given to :func:`decompress_file` has plain string columns and no fsst column:
    nothing to decompress.

    Examples
    --------
    >>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
    >>> from fsstgpu.formats.files import NotCompressedError, decompress_file
    >>> d = tempfile.mkdtemp()
    >>> pq.write_table(pa.table({"s": ["a"]}), os.path.join(d, "plain.parquet"))
    >>> try:
    ...     decompress_file(os.path.join(d, "plain.parquet"), os.path.join(d, "o.parquet"))
    ... except NotCompressedError:
    ...     print("refused;", os.listdir(d))
    refused; ['plain.parquet']
    """




# --------------------------------------------------------------------------- compress
def _whole_option(name: str, value, high: int | None, what: str) -> int | None:
    """``value`` (None: not given) as an int from 1 to ``high``; ValueError ``what`` it must be.
    Through :func:`~fsstgpu.limits.whole_number`: ``isinstance(value, int)`` took True as 1 and
    refused a NumPy integer."""
    try:
        number = None if value is None else whole_number(value)
    except TypeError:
        number = 0
    if number is not None and not (1 <= number and (high is None or number <= high)):
        raise ValueError(f"{name} {value!r}: {what}")
    return number


def compress_file(src, dst, columns=None, *, format=None, sample_bytes=None,
                  table=None, force=False, progress=None, parquet_codec="zstd",
                  ipc_compression=None, zstd_level=None, row_group_rows=None,
                  level="default", device="cpu") -> dict:
    """Write a copy of a Parquet / Arrow IPC file with its string columns FSST-compressed.

    Parameters
    ----------
    src, dst : str or os.PathLike
        Input and output files. ``dst`` must differ from ``src``.
    columns : str or sequence of str, optional
        The columns to compress (each must be string-like, or a list / struct / map column
        holding string-like leaves; a string is split at commas); default every such column
        that is not dictionary-encoded (a dictionary column is already compact, and kept as it
        is its dictionaries survive exactly).
    format : {"parquet", "arrow", "arrows"}, optional
        Output format; default the one ``dst``'s suffix names (an unknown suffix is refused).
    sample_bytes : int, optional
        Training sample size per table (default: the level's).
    level : {"default", "fast"}
        The compression level (:func:`fsstgpu.compress`): ``"fast"`` trains cheaper tables,
        for speed over ratio.
    table : SymbolTable, bytes or path, optional
        Use this symbol table for every compressed column instead of training (by default each
        row group / batch is planned and trained on its own, as :func:`fsstgpu.compress` does).
    force : bool
        Overwrite an existing ``dst``.
    progress : callable, optional
        ``progress(units_done=, units_total=, rows=, nbytes=)`` after every row group / batch.
    parquet_codec : {"zstd", "none", "snappy", "gzip", "brotli", "lz4"}
        Parquet codec for the fsst columns' pages (default ``"zstd"``, at level 3: FSST removes
        the redundancy inside strings, zstd the repeats across them, and together they undercut
        pyarrow's zstd Parquet of the strings); ``"none"`` keeps the codes as they are, for
        readers that decode them straight from the pages. Other columns keep the input's codec
        when it is as strong as zstd (zstd, gzip, brotli) and get zstd in place of a weaker
        one (none, Snappy, LZ4); every column's input codec is recorded and restored by
        :func:`decompress_file`.
    zstd_level : int, optional
        The zstd level of the fsst columns' Parquet pages (1 to 22; default 3,
        :data:`~fsstgpu.formats.parquet_options.FSST_ZSTD_LEVEL`): higher levels write smaller
        files, slower (``formats/files.md``).
    row_group_rows : int, optional
        Rows per output row group / record batch (default: the input's units are kept).
    ipc_compression : {"lz4", "zstd", "uncompressed"}, optional
        Body codec of an Arrow IPC output; default the input's lz4 or zstd, else zstd
        (uncompressed, an fsst column's storage of codes, 8-byte code offsets, lengths and cuts
        can be larger than the strings: 12.6 MB of dbtext lines became 14.5 MB, 4.7 MB with
        zstd).
    device : {"cpu", "gpu", "auto"}
        Where the strings are encoded: ``"gpu"`` uploads each row group's strings, encodes them
        on the GPU (:class:`fsstgpu.gpu.block_encode.GpuBlockEncoder`) and copies the codes
        back; reading, training (tables are trained on the CPU), planning and writing stay on
        the CPU, and the file is byte for byte the one ``"cpu"`` writes. ``"auto"``: the GPU
        when one is usable (or ``FSSTGPU_DEVICE``).

    Returns
    -------
    dict
        ``format``, ``device``, ``rows``, ``units``, ``columns`` (the compressed ones),
        ``input_bytes``, ``output_bytes``, ``string_bytes`` (uncompressed string bytes of those
        columns) and ``codes_bytes``.

    Raises
    ------
    CorruptDataError
        When ``src`` is not a readable Parquet / Arrow IPC file (the message names it).
    FileExistsError
        When ``dst`` exists and ``force`` is false (``dst`` is left untouched).
    ColumnSelectionError
        When ``columns`` names no column, or one the file lacks (a ValueError; the message
        lists the string columns); ColumnTypeError (also a TypeError) for a column that is not
        string-like.
    ValueError
        When ``dst`` is ``src``, its format is unknown, or ``parquet_codec``,
        ``ipc_compression`` or ``device`` is.
    OptionError
        When ``zstd_level`` or a ``parquet_codec`` other than zstd is given for an Arrow IPC
        output, or ``zstd_level`` beside another codec (a ValueError; nothing is written).
    DeviceError
        When ``device="gpu"`` and no GPU is usable (checked before anything is written).

    Examples
    --------
    >>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
    >>> from fsstgpu.formats import compress_file, decompress_file
    >>> d = tempfile.mkdtemp()
    >>> t = pa.table({"url": ["http://a.example/%d" % i for i in range(100)], "n": range(100)})
    >>> pq.write_table(t, os.path.join(d, "in.parquet"))
    >>> info = compress_file(os.path.join(d, "in.parquet"), os.path.join(d, "c.parquet"))
    >>> info["columns"]
    ['url']
    >>> _ = decompress_file(os.path.join(d, "c.parquet"), os.path.join(d, "out.parquet"),
    ...                     device="cpu")
    >>> pq.read_table(os.path.join(d, "out.parquet")).equals(t)
    True
    """

    src = check_input(src)
    check_progress(progress)
    # a table given as a file is an input too: an output over it would replace it
    inputs = [src, *([table] if isinstance(table, (str, os.PathLike)) else [])]
    check_output(dst, force=force, inputs=inputs)
    out_format = output_format(dst, format)
    fsst_codec = parquet_codec_name(parquet_codec)
    level = check_level(level)
    zstd_level = _whole_option("zstd_level", zstd_level, 22, "an integer from 1 to 22")
    if zstd_level is not None and (out_format != "parquet" or fsst_codec != "zstd"):
        # (it was ignored without a word)
        this = (f"its fsst pages are {fsst_codec}" if out_format == "parquet"
                else f"this output is an {out_format} file")
        raise OptionError(f"zstd_level {zstd_level!r} sets the zstd level of a Parquet output's "
                          f"fsst pages; {this}")
    if fsst_codec != "zstd" and out_format != "parquet":
        # an IPC body codec is chosen apart (ipc_compression); this one was dropped unsaid
        raise OptionError(f"parquet_codec {fsst_codec!r} sets a Parquet output's fsst pages' "
                          f"codec; this output is an {out_format} file")
    row_group_rows = _whole_option("row_group_rows", row_group_rows, None, "a positive integer")
    if ipc_compression not in (None, "uncompressed", *IPC_CODECS):
        raise ValueError(f"ipc_compression {ipc_compression!r}: lz4, zstd or uncompressed")
    fixed_table = _symbol_table(table)
    check_sample_bytes(sample_bytes)  # (a file without strings, or with table=, took any)
    dev = resolve_device(device)
    encode = GpuBlockEncoder() if dev == "gpu" else None
    with Source(src) as source:
        chosen = set(select_columns(source.schema, columns, source=src, dictionaries=False,
                                    nested=True))
        nested = [f.name for f in source.schema if f.name in chosen and holds_strings(f.type)]
        chosen -= set(nested)  # nested columns: their string leaves (formats/nested.py)
        first = _first_values(source, list(chosen))
        types = {f.name: fsst_leaf_type(f.type) for f in source.schema if f.name in chosen}
        codecs = source.parquet_codecs()  # by leaf path, and by name (its first leaf's)
        metadata = dict(source.schema.metadata or {})
        if codecs:
            metadata[CODECS_KEY] = json.dumps(_input_record(source, codecs))
        # The other columns are stored with zstd too (unless the input's codec is as strong):
        # decompress_file gives them back their own.
        stored = {f.name: "zstd" for f in source.schema}
        stored.update({k: _as_strong_as_zstd(v) for k, v in codecs.items()})
        out_schema = pa.schema(
            [pa.field(f.name, types[f.name], f.nullable, f.metadata) if f.name in types
             else f.with_type(fsst_type_of(f.type)) if f.name in nested else f
             for f in source.schema], metadata=metadata or None)
        # each column's row groups one after the other: a new table where the text changes
        # (blocks only where nothing compresses the codes again: ColumnStream's measurement)
        again = (fsst_codec != "none" if out_format == "parquet"
                 else (ipc_compression or _compressed_ipc(source)) != "uncompressed")
        units = UnitCompressor(source, out_schema, types=types, nested=nested,
                               out_format=out_format, table=fixed_table, sample_bytes=sample_bytes,
                               again=again, level=level, encode=encode,
                               row_group_rows=row_group_rows)
        bounds = units.bounds

        with atomic_output(dst, force=force, inputs=inputs) as tmp:
            sink = Sink(tmp, out_format, out_schema, fsst_columns=list(types), codecs=stored,
                        fsst_codec=fsst_codec,
                        ipc_compression=ipc_compression or _compressed_ipc(source),
                        footer=lambda: {STRING_STATS_KEY: stats_footer(bounds)} if bounds else {},
                        zstd_level=zstd_level, restorable=True,
                        repeating=_repeating({n: first[n] for n in types if n in first})
                        + _dictionary_codes(source))
            try:
                # runs of small units compressed together (each still a unit of its own)
                rows, count = rewrite(source, sink, units.convert, progress,
                                      rows_per_unit=row_group_rows,
                                      convert_run=units.convert_run)
            finally:
                units.close()
    return {
        "format": out_format,
        "device": dev,
        "rows": rows,
        "units": count,
        "columns": [f.name for f in source.schema if f.name in types or f.name in nested],
        "input_bytes": source.file_bytes,
        "output_bytes": file_size(dst),
        **units.sizes(),
    }


def _symbol_table(table) -> SymbolTable | None:
    """``table=`` of :func:`compress_file` as a SymbolTable (a file's errors name the file)."""
    if table is None:
        return None
    if isinstance(table, (SymbolTable, bytes, bytearray, memoryview)):
        return as_symbol_table(table)
    if not isinstance(table, (str, os.PathLike)):  # (pathlib's TypeError named no argument)
        raise TypeError(f"table must be a SymbolTable, its bytes or a path, not "
                        f"{type(table).__name__}")
    path = Path(table)
    try:
        return SymbolTable.from_bytes(path.read_bytes())
    except CorruptDataError as exc:
        raise CorruptDataError(f"{path}: {exc}") from None


def _input_record(source: Source, codecs: dict) -> dict:
    """The input codecs to record under :data:`CODECS_KEY`: ``codecs``, but where the input
    keeps a record (an fsst file compressed again) the codecs it holds: an fsst column's, and
    a plain column's (written as zstd the first time, whatever it had been)."""
    old = _record(source)
    fsst = {f.name for f in source.schema if has_fsst(f.type)}
    return {**{k: v for k, v in codecs.items() if not fsst.intersection(_owner_names(k))},
            **{k: v for k, v in old.items()
               if k in codecs or fsst.intersection(_owner_names(k))}}


def _owner_names(key: str) -> list[str]:
    """The column names codec key ``key`` (a leaf path or a name) belongs to if a column has
    one: ``key`` itself and each part of it before a dot (a name may hold dots), e.g.
    ``l``, ``l.list`` and ``l.list.element`` for ``l.list.element``."""
    return [key[:i] for i, ch in enumerate(key) if ch == "."] + [key]


def _keys_by_column(keys, names: set) -> dict[str, list[str]]:
    """The keys of each column of ``names`` (:func:`_owner_names`), one pass over the keys (a
    test of every key against every column was quadratic: 500 columns' decompress spent a
    third of its time there)."""
    owned: dict[str, list[str]] = {}
    for key in keys:
        for name in _owner_names(key):
            if name in names:
                owned.setdefault(name, []).append(key)
    return owned


def _dictionary_codes(source: Source) -> list[str]:
    """The fsst columns of ``source`` whose codes are dictionary-encoded (Parquet): copied
    through, they keep that."""
    if source.parquet_metadata is None or source.num_units == 0:
        return []
    rg = source.parquet_metadata.row_group(0)
    paths = {}
    for j in range(rg.num_columns):
        with reading(source.path):
            paths[input_leaf(rg, j)] = rg.column(j).has_dictionary_page
    return [f.name for f in source.schema
            if is_fsst_type(f.type) and paths.get(f"{f.name}.codes")]


def _compressed_ipc(source: Source) -> str:
    """The IPC body codec of a compressed output by default: the input's lz4 / zstd, else zstd
    (see ``ipc_compression`` of :func:`compress_file`)."""
    return source.ipc_compression if source.ipc_compression in IPC_CODECS else "zstd"


def _as_strong_as_zstd(codec: str) -> str:
    """``codec``, or zstd in place of a weaker one (none, Snappy, LZ4)."""
    return "zstd" if codec in ("none", "uncompressed", "snappy", "lz4", "lz4_raw") else codec


def _first_values(source: Source, names: list[str]) -> dict[str, pa.Array]:
    """Each column's plain values in the first unit holding any (columns without values are
    left out)."""
    first: dict[str, pa.Array] = {}
    missing = list(names)
    if not missing:
        return first
    head = source.first_unit()  # Parquet: kept, so that the rewrite does not read it again
    units = (source.units(columns=names) if head is None
             else itertools.chain([head.select(names)], (source.unit(k, columns=names)
                                                         for k in range(1, source.num_units))))
    for unit in units:
        for name in list(missing):
            values = plain_values(unit.column(name))
            if len(values) - values.null_count > 0:
                first[name] = values
                missing.remove(name)
        if not missing:
            break
    return first


# A column whose first unit has at most this share of distinct values gets its codes dictionary-
# encoded (with dictionary pages of up to FSST_DICTIONARY_PAGE_BYTES: parquet_options.py).
# Measured (formats/files.md): a column of 710 distinct lines shrinks 4x; doc lines of 25%
# distinct values 15.7 -> 12.4 MB; the next columns of that table, 61% and 74% distinct, grow.
REPEATING_SHARE = 0.5


def _repeating(first: dict) -> list:
    """The columns whose first unit's values repeat enough for dictionary-encoded codes, the
    columns counted at once (pyarrow's count releases the GIL; one after another, the counts
    were 10% of a 5-column compress_file on two cores, more on many)."""
    workers = min(len(first), thread_count())
    if workers < 2:
        return [n for n, values in first.items() if _repeats(values)]
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="fsstgpu-count") as pool:
        flags = list(pool.map(_repeats, first.values()))
    return [n for n, flag in zip(first, flags, strict=True) if flag]


def _repeats(values) -> bool:
    """Tell whether ``values`` repeat enough for Parquet's dictionary encoding of their codes.

    Counted by :func:`fsstgpu.native.distinct_upto`, which stops once the share is passed and
    copies no value: pyarrow's ``count_distinct`` copied every distinct value (VM: 31 ms for a
    200 k-row column of paths, on the critical path of a 520 ms ``compress_file``)."""
    if isinstance(values, pa.ChunkedArray):
        values = _one_array(values)
    data, offsets, validity = string_buffers(values)
    limit = int(REPEATING_SHARE * (len(values) - values.null_count))
    try:
        return distinct_upto(data, offsets, limit, validity) <= limit
    except ValueError as exc:  # offsets the array's own checks would refuse
        raise CorruptDataError(f"string column: {exc}") from None


#: The most bytes pyarrow concatenates into one ``string`` / ``binary`` array (int32 offsets)
MAX_NARROW_BYTES = INT32_MAX


def _one_array(values: pa.ChunkedArray) -> pa.Array:
    """``values``' chunks as one array, of the large type where a 32-bit-offset type's chunks
    hold more than :data:`MAX_NARROW_BYTES` together: pyarrow refuses to concatenate them
    ("offset overflow"), as a Parquet row group of over 2 GiB of ``string`` reads."""
    if narrow_offsets(values.type) and sum(
            int(ends[-1]) - int(ends[0]) for ends in (
                buffer_values(c.buffers()[1], "int32", c.offset, len(c) + 1)
                for c in values.chunks if len(c))) > MAX_NARROW_BYTES:
        values = values.cast(large_type(values.type))
    return values.combine_chunks()


# --------------------------------------------------------------------------- decompress
def _restored_codecs(source: Source) -> dict[str, str]:
    """The Parquet codec of every column of a decompressed file: the input's, recorded under
    :data:`CODECS_KEY` (Snappy, pyarrow's default, when the input was not Parquet or the
    record is unreadable; a column of a file without the record keeps its codec, and an fsst
    column gets Snappy)."""
    return restored_codecs(source.schema, source.parquet_codecs(), _record(source),
                           CODECS_KEY in (source.schema.metadata or {}))


def restored_codecs(schema: pa.Schema, codecs: dict, recorded: dict, has_record: bool) -> dict:
    """:func:`_restored_codecs` of a file of ``schema`` whose leaves have ``codecs`` (by leaf
    path, and by name: each top-level column's first leaf's) and whose record of its input's
    codecs is ``recorded`` (``has_record``: it has one at all, maybe unreadable).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.files import restored_codecs
    >>> schema = pa.schema([("s", pa.string()), ("n", pa.int64())])
    >>> restored_codecs(schema, {"s": "zstd", "n": "zstd"}, {"s": "gzip", "n": "lz4"}, True)
    {'s': 'gzip', 'n': 'lz4'}
    """
    codecs = dict(codecs)
    names = set(schema.names)
    recorded_of = _keys_by_column(recorded, names)
    held = _keys_by_column(codecs, names)  # the keys in codecs, by column
    for f in schema:
        # by leaf path (by name in files written before nested columns had theirs)
        mine = {k: recorded[k] for k in recorded_of.get(f.name, ())}
        if mine or has_record or has_fsst(f.type):
            for key in held.pop(f.name, ()):
                codecs.pop(key, None)
            added = mine or {f.name: "snappy"}
            codecs.update(added)
            for name, keys in _keys_by_column(added, names).items():
                held.setdefault(name, []).extend(keys)
    return codecs


def _record(source: Source) -> dict[str, str]:
    """The codecs recorded under :data:`CODECS_KEY` (none when unreadable)."""
    try:
        recorded = json.loads((source.schema.metadata or {}).get(CODECS_KEY, b"{}"))
    except (ValueError, RecursionError):  # (a forged record nested past the recursion limit)
        return {}
    if not isinstance(recorded, dict):
        return {}
    return {k: v for k, v in recorded.items() if isinstance(v, str)}


def _check_compressed(source: Source) -> None:
    """Refuse a plain file: string columns that compress_file would have compressed, and no
    fsst column. (A file without such columns, only numbers or dictionaries, is what
    compress_file writes for it: it is copied.)"""
    if any(has_fsst(f.type) for f in source.schema):
        return
    plain = select_columns(source.schema, None, dictionaries=False, nested=True)
    if plain:
        raise NotCompressedError(
            f"{source.path}: not a file written by `fsstgpu compress`: its string columns "
            f"({', '.join(plain)}) are plain and it has no fsst column, so there is nothing to "
            "decompress (rewritten it would only be re-encoded, often larger; copy it to have "
            "it under another name)")


def decompress_file(src, dst, *, device="auto", format=None, force=False,
                    progress=None) -> dict:
    """Write a copy of a file made by :func:`compress_file` with its string columns restored.

    Parameters
    ----------
    src, dst : str or os.PathLike
    device : {"auto", "cpu", "gpu"}
        Where to decode (``"gpu"`` decodes on the GPU and copies each column back).
    format : {"parquet", "arrow", "arrows"}, optional
        Output format; default the one ``dst``'s suffix names (an unknown suffix is refused).
    force : bool
        Overwrite an existing ``dst``.
    progress : callable, optional
        As for :func:`compress_file`.

    Returns
    -------
    dict
        ``format``, ``device``, ``rows``, ``units``, ``columns`` (the decoded ones),
        ``input_bytes``, ``output_bytes``, ``string_bytes``.

    Raises
    ------
    CorruptDataError
        When ``src`` is not a readable Parquet / Arrow IPC file or its codes do not decode.
    NotCompressedError
        When ``src`` is a plain file, not one :func:`compress_file` wrote (string columns and no
        fsst column): it would only be rewritten, re-encoded and often larger (nothing is
        written).
    DeviceError
        When ``device="gpu"`` and no GPU is usable (checked before anything is written).
    FileExistsError, ValueError
        As for :func:`compress_file`; a ValueError too (no output left) for an IPC file output
        of a dictionary column whose values outgrow one dictionary of its type.

    Examples
    --------
    See :func:`compress_file`.
    """

    src = check_input(src)
    check_progress(progress)
    check_output(dst, force=force, inputs=[src])
    out_format = output_format(dst, format)
    dev = resolve_device(device)
    with Source(src) as source:
        _check_compressed(source)
        decoder = Decoder(source, out_format, dev)
        with atomic_output(dst, force=force, inputs=[src]) as tmp:
            sink = Sink(tmp, out_format, restored_schema(source.schema),
                        codecs=_restored_codecs(source), ipc_compression=source.ipc_compression)
            rows, units = rewrite(source, sink, decoder.convert, progress,
                                  convert_run=decoder.convert_run)
    return {
        "format": out_format,
        "device": dev,
        "rows": rows,
        "units": units,
        "columns": [f.name for f in source.schema if has_fsst(f.type)],
        "input_bytes": source.file_bytes,
        "output_bytes": file_size(dst),
        "string_bytes": decoder.string_bytes,
    }
