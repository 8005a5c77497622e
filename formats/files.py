"""Compress and decompress the string columns of Parquet and Arrow IPC files.

Every string-like column (``string``, ``large_string``, ``string_view``, ``binary``,
``large_binary``, ``binary_view``, and dictionaries of them) is stored as an ``fsstgpu.fsst``
extension column (``formats/arrow.md``); every other column, nested ones included, passes through
unchanged. One symbol table per column per file, trained on the first row group (record batch)
holding values of that column; then the file is rewritten one row group / record batch at a time,
so memory stays bounded by a small multiple of one row group whatever the file size.

What survives exactly, so that ``decompress_file(compress_file(f))`` reads back equal to ``f``
(values, nulls, types, field and schema metadata, nullability, row-group / batch boundaries):
everything but the physical choices of the writer (Parquet page sizes, encodings, the string
columns' codec) and the order of dictionary values, which is rebuilt in order of first
occurrence (per row group for Parquet; accumulated over the batches for IPC, as dictionary
deltas).

Formats are chosen by file name: ``.parquet``/``.pq`` Parquet, ``.arrow``/``.feather``/``.ipc``
the Arrow IPC file format, ``.arrows`` the IPC stream format; or by ``format=`` (``"parquet"``,
``"arrow"``, ``"arrows"``). Inputs are recognised by their first bytes.

Safety: an output is written to a temporary file beside it and renamed into place only when
complete; the temporary file is removed on any exception (KeyboardInterrupt too). An input is
never overwritten (also when the output names it through a link), and an existing output only
with ``force=True``.

Parquet output: fsst columns are written with the ``DELTA_LENGTH_BYTE_ARRAY`` encoding (codes back
to back, lengths delta-bit-packed: PLAIN would add 4 bytes per string), without dictionary
encoding or statistics (statistics of codes mean nothing) and, by default, without a Parquet
codec (``parquet_codec=``); other columns keep the codec of the input file (Snappy when unknown).
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc
import pyarrow.parquet as pq

from fsstgpu.errors import CorruptDataError
from fsstgpu.formats.arrow import FsstType, is_fsst_type
from fsstgpu.formats.arrow_storage import from_extension_array, to_extension_array
from fsstgpu.symbol_table import SymbolTable

FORMATS = ("parquet", "arrow", "arrows")
SUFFIXES = {
    ".parquet": "parquet",
    ".pq": "parquet",
    ".arrow": "arrow",
    ".feather": "arrow",
    ".ipc": "arrow",
    ".arrows": "arrows",
}
_STRING_TYPES = (
    pa.string(), pa.large_string(), pa.string_view(),
    pa.binary(), pa.large_binary(), pa.binary_view(),
)
_VIEW_TO_LARGE = {pa.string_view(): pa.large_string(), pa.binary_view(): pa.large_binary()}

#: progress(units_done=, units_total=, rows=, nbytes=): called after every row group / batch;
#: ``units_total`` is None for an IPC stream, ``nbytes`` counts the input's Arrow bytes so far.
ProgressCallback = Callable[..., None]


# --------------------------------------------------------------------------- format choice
def is_string_like(type_: pa.DataType) -> bool:
    """Tell whether a column of this type gets FSST (string/binary types, or dictionaries of them).

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.files import is_string_like
    >>> is_string_like(pa.dictionary(pa.int32(), pa.string()))
    True
    >>> is_string_like(pa.list_(pa.string()))
    False
    """
    if pa.types.is_dictionary(type_):
        return type_.value_type in _STRING_TYPES
    return type_ in _STRING_TYPES


def format_from_name(path, format: str | None = None) -> str | None:
    """The format named by ``format``, else by the file name's suffix, else None."""
    if format is not None:
        fmt = format.lower()
        if fmt in ("ipc", "feather"):
            fmt = "arrow"
        if fmt in ("stream", "arrow-stream", "ipc-stream"):
            fmt = "arrows"
        if fmt not in FORMATS:
            raise ValueError(f"format must be one of {FORMATS}, not {format!r}")
        return fmt
    return SUFFIXES.get(Path(path).suffix.lower())


def detect_format(path) -> str | None:
    """Recognise a Parquet file, Arrow IPC file or IPC stream by its first bytes (else None).

    Examples
    --------
    >>> import os, tempfile
    >>> from fsstgpu.formats.files import detect_format
    >>> p = os.path.join(tempfile.mkdtemp(), "x.txt")
    >>> _ = open(p, "w").write("hello")
    >>> detect_format(p) is None
    True
    """
    with open(path, "rb") as f:
        head = f.read(8)
    if head[:4] == b"PAR1":
        return "parquet"
    if head[:6] == b"ARROW1":
        return "arrow"
    if head[:4] == b"\xff\xff\xff\xff":  # the IPC stream's continuation marker
        return "arrows"
    return None


def sniff_format(path) -> str:
    """Like :func:`detect_format`, but raise CorruptDataError naming the file when unknown."""
    fmt = detect_format(path)
    if fmt is None:
        size = Path(path).stat().st_size
        what = "an empty file" if size == 0 else "not a Parquet or Arrow IPC file"
        raise CorruptDataError(f"{path}: {what}")
    return fmt


# --------------------------------------------------------------------------- reading
@contextlib.contextmanager
def _reading(path, what: str = ""):
    """Turn pyarrow's and fsstgpu's complaints about an input into one CorruptDataError."""
    try:
        yield
    except (FileNotFoundError, PermissionError, IsADirectoryError):
        raise
    except CorruptDataError as exc:
        raise CorruptDataError(f"{path}: {what}{exc}") from None
    except (pa.ArrowException, OSError, EOFError) as exc:
        raise CorruptDataError(f"{path}: {what}unreadable ({type(exc).__name__}: {exc})") from None


class _Source:
    """An input file seen as a schema and a sequence of units (row groups or record batches).

    Files are read, not memory-mapped: a mapping would keep every page touched resident (and
    counted in the process's memory) until the end, while reads free each unit's buffers.
    """

    def __init__(self, path):
        self.path = Path(path)
        self.format = sniff_format(self.path)
        self.file_bytes = self.path.stat().st_size
        self._pf = self._reader = None
        with _reading(self.path):
            if self.format == "parquet":
                self._pf = pq.ParquetFile(self.path, memory_map=False)
                self.schema = self._pf.schema_arrow
                self.num_units = self._pf.num_row_groups
                self.num_rows = self._pf.metadata.num_rows
            elif self.format == "arrow":
                self._reader = ipc.open_file(pa.OSFile(str(self.path)))
                self.schema = self._reader.schema
                self.num_units = self._reader.num_record_batches
                self.num_rows = None
            else:
                self.schema = ipc.open_stream(pa.OSFile(str(self.path))).schema
                self.num_units = self.num_rows = None

    def units(self, columns: list[str] | None = None) -> Iterator[pa.Table]:
        """Yield each row group / batch as a Table with this file's schema (or ``columns``)."""
        names = self.schema.names if columns is None else columns
        if self.format == "parquet":
            for i in range(self.num_units):
                with _reading(self.path, f"row group {i}: "):
                    t = self._pf.read_row_group(i, columns=columns)
                yield t
        elif self.format == "arrow":
            for i in range(self.num_units):
                with _reading(self.path, f"record batch {i}: "):
                    b = self._reader.get_batch(i)
                yield pa.Table.from_batches([b]).select(names)
        else:
            with _reading(self.path):
                reader = ipc.open_stream(pa.OSFile(str(self.path)))
            i = 0
            while True:
                with _reading(self.path, f"record batch {i}: "):
                    try:
                        b = reader.read_next_batch()
                    except StopIteration:
                        return
                yield pa.Table.from_batches([b]).select(names)
                i += 1

    def parquet_codecs(self) -> dict[str, str]:
        """Each top-level column's codec in the first row group (Parquet only)."""
        if self._pf is None or self.num_units == 0:
            return {}
        rg = self._pf.metadata.row_group(0)
        out = {}
        for j in range(rg.num_columns):
            col = rg.column(j)
            top = col.path_in_schema.split(".")[0]
            out.setdefault(top, col.compression.lower())
        return out


# --------------------------------------------------------------------------- writing
class _Sink:
    """Writes Tables as row groups (Parquet) or record batches (IPC), one per call."""

    def __init__(self, path, fmt: str, schema: pa.Schema, *, fsst_columns=(), codecs=None,
                 fsst_codec: str = "none"):
        self.format = fmt
        self.schema = schema
        if fmt == "parquet":
            fsst = set(fsst_columns)
            others = [n for n in schema.names if n not in fsst]
            codecs = codecs or {}
            compression = {n: (fsst_codec if n in fsst else
                               _parquet_codec(codecs.get(n, "snappy"))) for n in schema.names}
            # DELTA_LENGTH_BYTE_ARRAY: the codes lie back to back in the page (not interleaved
            # with 4-byte lengths as in PLAIN), and the lengths are delta-bit-packed.
            self._writer = pq.ParquetWriter(
                str(path), schema, compression=compression,
                use_dictionary=others if fsst else True,
                write_statistics=others if fsst else True,
                column_encoding=dict.fromkeys(fsst, "DELTA_LENGTH_BYTE_ARRAY") or None,
                store_schema=True,
            )
        else:
            opts = ipc.IpcWriteOptions(emit_dictionary_deltas=True)
            self._sink = pa.OSFile(str(path), "wb")
            new = ipc.new_file if fmt == "arrow" else ipc.new_stream
            self._writer = new(self._sink, schema, options=opts)

    def write(self, columns: list) -> None:
        if self.format == "parquet":
            table = pa.Table.from_arrays(columns, schema=self.schema)
            # One call, one row group: the input's row-group boundaries survive.
            self._writer.write_table(table, row_group_size=max(1, table.num_rows))
        else:
            arrays = [c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c
                      for c in columns]
            self._writer.write_batch(pa.RecordBatch.from_arrays(arrays, schema=self.schema))

    def close(self) -> None:
        self._writer.close()
        if self.format != "parquet":
            self._sink.close()


def _parquet_codec(name: str) -> str:
    name = name.lower()
    return {"uncompressed": "none"}.get(name, name)


def check_output(dst, *, force: bool = False, inputs=()) -> Path:
    """Check that ``dst`` may be written (see :func:`atomic_output`); return it as a Path."""
    dst = Path(dst)
    for src in inputs:
        src = Path(src)
        if src.resolve() == dst.resolve() or (
            dst.exists() and src.exists() and os.path.samefile(src, dst)
        ):
            raise ValueError(f"{dst}: the output is the input file; choose another output path")
    if dst.is_dir():
        raise IsADirectoryError(f"{dst}: is a directory")
    if dst.exists() and not force:
        raise FileExistsError(f"{dst}: already exists (use --force / force=True to overwrite)")
    parent = dst.absolute().parent
    if not parent.is_dir():
        raise FileNotFoundError(f"{dst}: directory {parent} does not exist")
    return dst


@contextlib.contextmanager
def atomic_output(dst, *, force: bool = False, inputs=()):
    """Yield a temporary path beside ``dst``; rename it to ``dst`` when the block succeeds.

    The temporary file is removed if the block raises anything (KeyboardInterrupt too), so an
    interrupted run leaves neither a partial ``dst`` nor litter.

    Raises
    ------
    ValueError
        When ``dst`` is one of ``inputs`` (also through links).
    FileExistsError
        When ``dst`` exists and ``force`` is false (``dst`` is not touched).

    Examples
    --------
    >>> import os, tempfile
    >>> from fsstgpu.formats.files import atomic_output
    >>> dst = os.path.join(tempfile.mkdtemp(), "x.bin")
    >>> with atomic_output(dst) as tmp:
    ...     _ = open(tmp, "wb").write(b"done")
    >>> open(dst, "rb").read()
    b'done'
    """
    dst = check_output(dst, force=force, inputs=inputs)
    parent = dst.absolute().parent
    fd, tmp = tempfile.mkstemp(prefix=f".{dst.name}.", suffix=".fsstgpu-tmp", dir=parent)
    os.close(fd)
    try:
        yield tmp
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp makes 0600; give the usual file mode
        if dst.exists() and not force:  # appeared while we worked
            raise FileExistsError(f"{dst}: already exists (use --force / force=True)")
        os.replace(tmp, dst)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def write_table(table: pa.Table, path, format: str, *, rows_per_unit: int | None = None) -> None:
    """Write ``table`` to ``path`` as a plain Parquet or Arrow IPC file, with pyarrow only.

    Parameters
    ----------
    table : pyarrow.Table
    path : str or os.PathLike
    format : {"parquet", "arrow", "arrows"}
        Parquet, an Arrow IPC file or an Arrow IPC stream.
    rows_per_unit : int, optional
        Rows per Parquet row group / IPC record batch (default: pyarrow's).

    Examples
    --------
    >>> import os, tempfile, pyarrow as pa, pyarrow.ipc as ipc
    >>> from fsstgpu.formats.files import write_table
    >>> path = os.path.join(tempfile.mkdtemp(), "t.arrows")
    >>> write_table(pa.table({"s": ["a", "b", "c"]}), path, "arrows", rows_per_unit=2)
    >>> [b.num_rows for b in ipc.open_stream(path)]
    [2, 1]
    """
    if format == "parquet":
        pq.write_table(table, path, row_group_size=rows_per_unit)
    else:
        new = ipc.new_file if format == "arrow" else ipc.new_stream
        with new(path, table.schema) as writer:
            writer.write_table(table, max_chunksize=rows_per_unit)


def _check_paths(src) -> Path:
    src = Path(src)
    if not src.exists():
        raise FileNotFoundError(f"{src}: no such file")
    if src.is_dir():
        raise IsADirectoryError(f"{src}: is a directory, not a file")
    return src


# --------------------------------------------------------------------------- helpers
def _single(col) -> pa.Array:
    """One Array from a ChunkedArray (zero-copy when it has one chunk)."""
    if isinstance(col, pa.Array):
        return col
    if col.num_chunks == 1:
        return col.chunk(0)
    if col.num_chunks == 0:
        return pa.array([], type=col.type) if not is_fsst_type(col.type) else \
            pa.ExtensionArray.from_storage(col.type, pa.array([], col.type.storage_type))
    return pa.concat_arrays(col.chunks)


def _values(col) -> pa.Array:
    """The plain string values of a (possibly dictionary-encoded) column, as one Array."""
    arr = _single(col)
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    return arr


class _Redictionary:
    """Re-encodes decoded strings as a dictionary column, in order of first occurrence.

    ``running=True`` keeps one growing dictionary across units (IPC: later batches add deltas);
    otherwise each unit gets a fresh one (Parquet: dictionaries are per row group).
    """

    def __init__(self, type_: pa.DictionaryType, running: bool):
        self.type = type_
        self.running = running
        self.dictionary = pa.array([], type=type_.value_type)

    def encode(self, values: pa.Array) -> pa.DictionaryArray:
        if not self.running:
            self.dictionary = pa.array([], type=self.type.value_type)
        fresh = pc.unique(values.filter(pc.invert(pc.is_in(values, self.dictionary))).drop_null())
        if len(fresh):
            self.dictionary = pa.concat_arrays([self.dictionary, fresh.cast(self.type.value_type)])
        indices = pc.index_in(values, value_set=self.dictionary).cast(self.type.index_type)
        return pa.DictionaryArray.from_arrays(indices, self.dictionary, ordered=self.type.ordered)


def _resolve_table(table) -> SymbolTable | None:
    if table is None or isinstance(table, SymbolTable):
        return table
    if isinstance(table, (bytes, bytearray, memoryview)):
        return SymbolTable.from_bytes(table)
    path = Path(table)
    try:
        return SymbolTable.from_bytes(path.read_bytes())
    except CorruptDataError as exc:
        raise CorruptDataError(f"{path}: {exc}") from None


def _progress(progress, done, total, rows, nbytes):
    if progress is not None:
        progress(units_done=done, units_total=total, rows=rows, nbytes=nbytes)


def _rewrite(source, sink, schema: pa.Schema, convert, progress) -> tuple[int, int]:
    """Write every unit of ``source`` to ``sink``, each column through ``convert``; close ``sink``.

    ``convert(field, column, unit_index)`` returns the column to write.  Returns ``(rows,
    units)`` and reports progress after each unit.
    """
    rows = units = nbytes = 0
    try:
        for unit in source.units():
            sink.write([convert(field, unit.column(field.name), units) for field in schema])
            rows += unit.num_rows
            units += 1
            nbytes += unit.nbytes
            _progress(progress, units, source.num_units, rows, nbytes)
    finally:
        sink.close()
    return rows, units


# --------------------------------------------------------------------------- compress
def compress_file(src, dst, columns=None, *, format=None, sample_bytes=None,
                  table=None, force=False, progress=None, parquet_codec="none") -> dict:
    """Write a copy of a Parquet / Arrow IPC file with its string columns FSST-compressed.

    Parameters
    ----------
    src, dst : str or os.PathLike
        Input and output files. ``dst`` must differ from ``src``.
    columns : sequence of str, optional
        The columns to compress (each must be string-like); default every string-like column.
    format : {"parquet", "arrow", "arrows"}, optional
        Output format; default from ``dst``'s suffix, else the input's format.
    sample_bytes : int, optional
        Training sample size per column (default: :func:`fsstgpu.train`'s, 64 KiB).
    table : SymbolTable, bytes or path, optional
        Use this symbol table for every compressed column instead of training.
    force : bool
        Overwrite an existing ``dst``.
    progress : callable, optional
        ``progress(units_done=, units_total=, rows=, nbytes=)`` after every row group / batch.
    parquet_codec : str
        Parquet codec for the fsst columns' pages (default ``"none"``: the codes are already
        compressed, and a GPU can decode them straight from the pages); e.g. ``"zstd"`` trades
        decode work for a smaller file. Other columns keep the input's codec.

    Returns
    -------
    dict
        ``format``, ``rows``, ``units``, ``columns`` (the compressed ones), ``input_bytes``,
        ``output_bytes``, ``string_bytes`` (uncompressed string bytes of those columns) and
        ``codes_bytes``.

    Raises
    ------
    CorruptDataError
        When ``src`` is not a readable Parquet / Arrow IPC file (the message names it).
    FileExistsError
        When ``dst`` exists and ``force`` is false (``dst`` is left untouched).
    ValueError
        When ``dst`` is ``src``, or a named column does not exist.
    TypeError
        When a named column is not string-like.

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
    from fsstgpu.codec import compress
    from fsstgpu.splits import DEFAULT_SPLIT_SIZE
    from fsstgpu.training import train

    src = _check_paths(src)
    check_output(dst, force=force, inputs=[src])
    fixed_table = _resolve_table(table)
    source = _Source(src)
    out_format = format_from_name(dst, format) or source.format
    schema = source.schema
    if columns is None:
        chosen = [f.name for f in schema if is_string_like(f.type)]
    else:
        if isinstance(columns, str):
            columns = [c for c in columns.split(",") if c]
        chosen = list(dict.fromkeys(columns))
        for name in chosen:
            if schema.get_field_index(name) < 0:
                raise ValueError(f"{src}: no column named {name!r} (columns: "
                                 f"{', '.join(schema.names)})")
            if schema.names.count(name) > 1:
                raise ValueError(f"{src}: column name {name!r} is ambiguous")
            ftype = schema.field(name).type
            if not is_string_like(ftype):
                raise TypeError(f"{src}: column {name!r} is {ftype}, not a string/binary column")

    # Train one table per column on the first unit that holds values of it.
    tables: dict[str, SymbolTable] = {}
    if fixed_table is not None:
        tables = dict.fromkeys(chosen, fixed_table)
    else:
        missing = list(chosen)
        for unit in (source.units(columns=chosen) if missing else ()):
            for name in list(missing):
                values = _values(unit.column(name))
                if len(values) - values.null_count > 0:
                    if values.type in _VIEW_TO_LARGE:  # train wants offsets, not views
                        values = values.cast(_VIEW_TO_LARGE[values.type])
                    tables[name] = train(values, sample_bytes=sample_bytes)
                    missing.remove(name)
            if not missing:
                break
        for name in missing:  # no values anywhere: any table will do
            tables[name] = SymbolTable([])

    fields, types = [], {}
    for field in schema:
        if field.name in tables:
            ftype = FsstType(pa.large_binary(), field.type.value_type
                             if pa.types.is_dictionary(field.type) else field.type,
                             [tables[field.name]], DEFAULT_SPLIT_SIZE,
                             index_type=field.type.index_type
                             if pa.types.is_dictionary(field.type) else None,
                             ordered=field.type.ordered
                             if pa.types.is_dictionary(field.type) else False)
            types[field.name] = ftype
            field = pa.field(field.name, ftype, field.nullable, field.metadata)
        fields.append(field)
    out_schema = pa.schema(fields, metadata=schema.metadata)

    string_bytes = codes_bytes = 0

    def convert(field, col, unit_index):
        nonlocal string_bytes, codes_bytes
        if field.name in types:
            values = _values(col)
            carr = compress(values, table=tables[field.name], split_size=DEFAULT_SPLIT_SIZE)
            string_bytes += int(carr.uncompressed_bytes)
            codes_bytes += len(carr.codes)
            col = to_extension_array(carr, ext_type=types[field.name])
        return col

    with atomic_output(dst, force=force, inputs=[src]) as tmp:
        sink = _Sink(tmp, out_format, out_schema, fsst_columns=list(types),
                     codecs=source.parquet_codecs(), fsst_codec=_parquet_codec(parquet_codec))
        rows, units = _rewrite(source, sink, schema, convert, progress)
    return {
        "format": out_format,
        "rows": rows,
        "units": units,
        "columns": list(types),
        "input_bytes": source.file_bytes,
        "output_bytes": Path(dst).stat().st_size,
        "string_bytes": string_bytes,
        "codes_bytes": codes_bytes,
    }


# --------------------------------------------------------------------------- decompress
def _restored_schema(schema: pa.Schema) -> pa.Schema:
    fields = []
    for field in schema:
        if is_fsst_type(field.type):
            field = pa.field(field.name, field.type.original_type, field.nullable, field.metadata)
        fields.append(field)
    return pa.schema(fields, metadata=schema.metadata)


def _decode_column(col, ftype: FsstType, device: str, path, where: str):
    """Decode one fsst column chunk: its plain values (host Arrow array) and string bytes."""
    from fsstgpu.codec import decompress, decompress_device

    with _reading(path, where):  # reading checks the structure, decoding the codes
        carr = from_extension_array(_single(col))
        if device == "gpu":
            out = decompress_device(carr).to_arrow()
        else:
            out = decompress(carr, device=device)
    return _single(out), int(carr.uncompressed_bytes)


def decompress_file(src, dst, *, device="auto", format=None, force=False,
                    progress=None) -> dict:
    """Write a copy of a file made by :func:`compress_file` with its string columns restored.

    Parameters
    ----------
    src, dst : str or os.PathLike
    device : {"auto", "cpu", "gpu"}
        Where to decode (``"gpu"`` decodes on the GPU and copies each column back).
    format : {"parquet", "arrow", "arrows"}, optional
        Output format; default from ``dst``'s suffix, else the input's format.
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
    DeviceError
        When ``device="gpu"`` and no GPU is usable (checked before anything is written).
    FileExistsError, ValueError
        As for :func:`compress_file`.

    Examples
    --------
    See :func:`compress_file`.
    """
    from fsstgpu.device import resolve_device

    src = _check_paths(src)
    check_output(dst, force=force, inputs=[src])
    dev = resolve_device(device)
    source = _Source(src)
    out_format = format_from_name(dst, format) or source.format
    schema = source.schema
    out_schema = _restored_schema(schema)
    fsst = {f.name: f.type for f in schema if is_fsst_type(f.type)}
    redict = {name: _Redictionary(t.original_type, running=out_format != "parquet")
              for name, t in fsst.items() if t.index_type is not None}
    string_bytes = 0

    def convert(field, col, unit_index):
        nonlocal string_bytes
        if field.name in fsst:
            where = f"row group {unit_index}, column {field.name!r}: "
            col, size = _decode_column(col, fsst[field.name], dev, src, where)
            string_bytes += size
            if field.name in redict:
                col = redict[field.name].encode(col)
        return col

    with atomic_output(dst, force=force, inputs=[src]) as tmp:
        sink = _Sink(tmp, out_format, out_schema, codecs=source.parquet_codecs())
        rows, units = _rewrite(source, sink, schema, convert, progress)
    return {
        "format": out_format,
        "device": dev,
        "rows": rows,
        "units": units,
        "columns": list(fsst),
        "input_bytes": source.file_bytes,
        "output_bytes": Path(dst).stat().st_size,
        "string_bytes": string_bytes,
    }


# --------------------------------------------------------------------------- inspect / read
def inspect_file(path) -> dict:
    """Describe a Parquet / Arrow IPC file: per column codec, sizes, ratio, symbol tables.

    Returns
    -------
    dict
        ``path``, ``format``, ``file_bytes``, ``rows``, ``units`` (row groups or record
        batches), ``unit_rows`` (rows per unit), ``schema_metadata`` (keys), and ``columns``: a
        list of dicts with ``name``, ``type`` (the original type), ``stored_type``, ``codec``
        (``"fsst"`` or ``"none"``), ``stored_bytes`` (bytes in the file: Parquet column-chunk
        sizes, or IPC buffer sizes), ``null_count``; for fsst columns also ``string_bytes``
        (uncompressed), ``codes_bytes``, ``ratio`` (string bytes / (codes + table bytes)),
        ``file_ratio`` (string bytes / stored bytes) and ``tables``: one summary per symbol table
        (``symbols``, ``bytes``, ``mean_symbol_length``, ``by_length``: symbol counts for lengths
        1..8, ``longest``: up to 8 of the longest symbols, as Python ``repr`` strings).

    Raises
    ------
    CorruptDataError
        When the file is not a readable Parquet / Arrow IPC file, or its codes are corrupt.

    Examples
    --------
    >>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
    >>> from fsstgpu.formats import compress_file, inspect_file
    >>> d = tempfile.mkdtemp()
    >>> pq.write_table(pa.table({"s": ["abc"] * 10}), os.path.join(d, "a.parquet"))
    >>> _ = compress_file(os.path.join(d, "a.parquet"), os.path.join(d, "b.parquet"))
    >>> [c["codec"] for c in inspect_file(os.path.join(d, "b.parquet"))["columns"]]
    ['fsst']
    """
    path = _check_paths(path)
    source = _Source(path)
    schema = source.schema
    cols = {f.name: {"name": f.name,
                     "type": str(f.type.original_type if is_fsst_type(f.type) else f.type),
                     "stored_type": str(f.type.storage_type if is_fsst_type(f.type) else f.type),
                     "codec": "fsst" if is_fsst_type(f.type) else "none",
                     "stored_bytes": 0, "null_count": 0} for f in schema}
    for f in schema:
        if is_fsst_type(f.type):
            cols[f.name].update(string_bytes=0, codes_bytes=0,
                                tables=[_table_summary(t) for t in f.type.tables])
    if source.format == "parquet":
        md = source._pf.metadata
        for i in range(md.num_row_groups):
            rg = md.row_group(i)
            for j in range(rg.num_columns):
                c = rg.column(j)
                top = c.path_in_schema.split(".")[0]
                if top in cols:
                    cols[top]["stored_bytes"] += c.total_compressed_size
                    if cols[top]["codec"] == "none":
                        cols[top]["parquet_codec"] = c.compression.lower()
    unit_rows = []
    for k, unit in enumerate(source.units()):
        unit_rows.append(unit.num_rows)
        for f in schema:
            col = unit.column(f.name)
            info = cols[f.name]
            info["null_count"] += col.null_count
            if source.format != "parquet":
                info["stored_bytes"] += col.nbytes
            if is_fsst_type(f.type):
                arr = _single(col)
                with _reading(path, f"unit {k}, column {f.name!r}: "):
                    carr = from_extension_array(arr)
                info["string_bytes"] += int(carr.lengths.sum())
                info["codes_bytes"] += len(carr.codes)
    for f in schema:
        info = cols[f.name]
        if is_fsst_type(f.type):
            tb = sum(t.nbytes_serialised() for t in f.type.tables)
            info["ratio"] = (info["string_bytes"] / (info["codes_bytes"] + tb)
                             if info["codes_bytes"] + tb else float("nan"))
            info["file_ratio"] = (info["string_bytes"] / info["stored_bytes"]
                                  if info["stored_bytes"] else float("nan"))
    return {
        "path": str(path),
        "format": source.format,
        "file_bytes": source.file_bytes,
        "rows": sum(unit_rows),
        "units": len(unit_rows),
        "unit_rows": unit_rows,
        "schema_metadata": sorted(k.decode("utf-8", "replace")
                                  for k in (schema.metadata or {})),
        "columns": list(cols.values()),
    }


def _table_summary(table: SymbolTable) -> dict:
    lengths = table.lengths.astype(np.int64)
    longest = sorted(table.symbols, key=len, reverse=True)[:8]
    return {
        "symbols": len(table),
        "bytes": table.nbytes_serialised(),
        "mean_symbol_length": float(lengths.mean()) if len(lengths) else 0.0,
        "by_length": np.bincount(lengths, minlength=9)[1:9].tolist(),
        "longest": [repr(s) for s in longest],
    }


def read_table(path, device="gpu"):
    """Read a Parquet / Arrow IPC file, decompressing its fsst columns.

    Parameters
    ----------
    path : str or os.PathLike
    device : {"gpu", "cpu", "auto"}
        ``"cpu"`` (or ``"auto"`` without a GPU): a ``pyarrow.Table`` exactly like the one
        :func:`decompress_file` would write. ``"gpu"``: a ``dict`` from column name to a
        :class:`fsstgpu.DeviceStringArray` (each fsst column, all row groups in one array,
        decoded straight into GPU memory; dictionary columns as their plain values) or a
        ``pyarrow.ChunkedArray`` (every other column, on the host).

    Raises
    ------
    DeviceError
        When ``device="gpu"`` and no GPU is usable.
    CorruptDataError
        When the file is unreadable or its codes do not decode.

    Examples
    --------
    >>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
    >>> from fsstgpu.formats import compress_file, read_table
    >>> d = tempfile.mkdtemp()
    >>> pq.write_table(pa.table({"s": ["x", None, "yz"]}), os.path.join(d, "a.parquet"))
    >>> _ = compress_file(os.path.join(d, "a.parquet"), os.path.join(d, "b.parquet"))
    >>> read_table(os.path.join(d, "b.parquet"), device="cpu").column("s").to_pylist()
    ['x', None, 'yz']
    """
    from fsstgpu.codec import decompress
    from fsstgpu.device import resolve_device

    path = _check_paths(path)
    dev = resolve_device(device)
    source = _Source(path)
    schema = source.schema
    fsst = {f.name: f.type for f in schema if is_fsst_type(f.type)}
    if dev == "gpu":
        parts: dict[str, list] = {f.name: [] for f in schema}
        for unit in source.units():
            for f in schema:
                parts[f.name].extend(unit.column(f.name).chunks)
        out = {}
        for f in schema:
            chunks = parts[f.name]
            if f.name in fsst:
                col = pa.chunked_array(chunks, type=f.type)
                with _reading(path, f"column {f.name!r}: "):
                    carr = from_extension_array(col)
                out[f.name] = decompress(carr, device="gpu")
            else:
                out[f.name] = pa.chunked_array(chunks, type=f.type)
        return out
    out_schema = _restored_schema(schema)
    redict = {name: _Redictionary(t.original_type, running=source.format != "parquet")
              for name, t in fsst.items() if t.index_type is not None}
    batches = []
    for k, unit in enumerate(source.units()):
        cols = []
        for f in schema:
            col = unit.column(f.name)
            if f.name in fsst:
                col, _ = _decode_column(col, f.type, "cpu", path,
                                        f"unit {k}, column {f.name!r}: ")
                if f.name in redict:
                    col = redict[f.name].encode(col)
            cols.append(_single(col))
        batches.append(pa.RecordBatch.from_arrays(cols, schema=out_schema))
    return pa.Table.from_batches(batches, schema=out_schema)
