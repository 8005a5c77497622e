"""Row groups of an fsst file read with pyarrow's own threads, through a storage-typed footer.

Pyarrow builds a Parquet file's Arrow types from the ``ARROW:schema`` value in its footer; an
``fsstgpu.fsst`` type there is made by Python code (a Python-defined extension type), which
pyarrow's pool threads must not hold (``files.md``: "Reading without pyarrow's threads"), so
fsstgpu's readers read such files column chunk by column chunk on threads of their own, pyarrow's
threads off. :func:`storage_footer` gives the file's footer with that one value replaced by the
same schema with each fsst column's storage struct in place of its type. Read through it
(``pq.ParquetFile(f, metadata=footer)``), an fsst column comes back as its storage struct and no
Python type is made off the caller's threads, so a row group's columns can be read in one call
that decodes them on pyarrow's threads. :func:`storage_runs` reads a file so: a few reading
threads, each row group in one call, and the columns checked on threads of fsstgpu's own.

>>> import os, tempfile, pyarrow as pa, pyarrow.parquet as pq
>>> from fsstgpu.formats import compress_file
>>> from fsstgpu.formats.rowgroups import Source
>>> from fsstgpu.formats.storage_reads import storage_footer
>>> d = tempfile.mkdtemp()
>>> pq.write_table(pa.table({"s": ["a", "b"]}), os.path.join(d, "a.parquet"))
>>> _ = compress_file(os.path.join(d, "a.parquet"), os.path.join(d, "b.parquet"))
>>> with Source(os.path.join(d, "b.parquet")) as source:
...     footer = storage_footer(source)
>>> footer.schema.to_arrow_schema().field("s").type.names
['codes', 'lengths', 'cuts', 'table']
"""

from __future__ import annotations

import base64
import threading
from collections import deque
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa
import pyarrow.parquet as pq

from fsstgpu.errors import CorruptDataError
from fsstgpu.formats.arrow import is_fsst_type
from fsstgpu.formats.rowgroups import Source, holds_extension_type, open_file, reading

__all__ = ["storage_footer", "storage_runs"]

_SCHEMA_KEY = b"ARROW:schema"
_VALUE_FIELD = 0x18  # compact protocol: KeyValue's field 2 (binary), one past field 1


def _varint(v: int) -> bytes:
    out = bytearray()
    while True:
        if v < 0x80:
            return bytes(out + bytes([v]))
        out.append(v & 0x7F | 0x80)
        v >>= 7


def storage_footer(source: Source) -> pq.FileMetaData | None:
    """``source``'s Parquet footer with its stored Arrow schema's fsst types replaced by their
    storage types, or None where that cannot be done exactly (not Parquet, no stored schema,
    an encrypted footer, an extension type that is not a top-level fsst column, a stored
    schema that is not once in the footer as pyarrow writes it): its readers then read as
    before. Every other byte of the footer is the file's, and the result is checked against
    it (row groups, rows, the schema pyarrow makes of it)."""
    meta = source.parquet_metadata
    schema = source.schema
    stored = (meta.metadata or {}).get(_SCHEMA_KEY) if meta is not None else None
    if stored is None or not any(is_fsst_type(f.type) for f in schema) or any(
            holds_extension_type(f.type) and not is_fsst_type(f.type) for f in schema):
        return None
    try:
        read_as = source.read_schema
        storage = pa.schema([f.with_type(f.type.storage_type) if is_fsst_type(f.type) else f
                             for f in read_as], metadata=read_as.metadata)
        with open_file(source.path) as f:
            size = f.size()
            tail = f.read_at(8, size - 8) if size >= 12 else b""
            length = int.from_bytes(tail[:4], "little")
            if tail[4:] != b"PAR1" or not 0 < length <= size - 12:
                return None
            footer = f.read_at(length, size - 8 - length)
        old = bytes([_VALUE_FIELD]) + _varint(len(stored)) + stored
        if footer.count(old) != 1:
            return None
        value = base64.b64encode(storage.serialize().to_pybytes())
        new = footer.replace(old, bytes([_VALUE_FIELD]) + _varint(len(value)) + value)
        rewritten = pq.read_metadata(pa.BufferReader(
            b"PAR1" + new + len(new).to_bytes(4, "little") + b"PAR1"))
        if (rewritten.num_row_groups != meta.num_row_groups
                or rewritten.num_rows != meta.num_rows
                or not rewritten.schema.to_arrow_schema().equals(storage)):
            return None
        return rewritten
    except (pa.ArrowException, OSError, ValueError, AttributeError):
        return None


def storage_runs(source: Source, footer: pq.FileMetaData, runs: list, names: list, convert,
                 *, readers: int, checkers: int):
    """Yield ``(run, unit)`` for each run of row groups of ``source``, in order: each row
    group read in one call through ``footer`` (:func:`storage_footer`) with pyarrow's threads
    on, by one of ``readers`` threads; each column of a run converted (``convert(run, name,
    parts)``, ``parts`` its row groups' ChunkedArrays, fsst columns as their fsst types again)
    on one of ``checkers`` threads. At most ``readers + checkers`` runs are held read and not
    yet converted. A read error names the row group and, read again alone, the column."""
    types = {f.name: f.type for f in source.schema}
    slots = threading.Semaphore(readers + checkers)
    lock = threading.Lock()
    local = threading.local()
    handles: list = []
    stop = threading.Event()

    def parquet() -> pq.ParquetFile:
        if getattr(local, "parquet", None) is None:
            f = open_file(source.path)
            with lock:
                handles.append(f)
            local.parquet = pq.ParquetFile(f, metadata=footer, memory_map=False,
                                           page_checksum_verification=True)
        return local.parquet

    def restored(name: str, column: pa.ChunkedArray) -> pa.ChunkedArray:
        if is_fsst_type(types[name]):
            return pa.chunked_array([pa.ExtensionArray.from_storage(types[name], c)
                                     for c in column.chunks], types[name])
        return source.restored(name, column)

    def read_group(k: int) -> pa.Table:
        try:
            with reading(source.path, f"row group {k}: "):
                return source.rows_checked(k, parquet().read_row_group(
                    k, columns=names, use_threads=True))
        except CorruptDataError:
            for name in names:  # name the column, where it fails alone
                with reading(source.path, f"row group {k}, column {name!r}: "):
                    parquet().read_row_group(k, columns=[name], use_threads=True)
            raise

    def read(run: tuple) -> dict:
        while not slots.acquire(timeout=0.05):
            if stop.is_set():
                raise RuntimeError("the read was left")
        left = [len(names)]
        try:
            tables = [read_group(k) for k in run]
            parts = {name: [restored(name, t.column(name)) for t in tables] for name in names}
        except BaseException:
            slots.release()
            raise

        def check(name: str):
            try:
                return convert(run, name, parts.pop(name))
            finally:
                with lock:
                    left[0] -= 1
                    if not left[0]:
                        slots.release()

        return {name: checking.submit(check, name) for name in names}

    reading_pool = ThreadPoolExecutor(max_workers=readers, thread_name_prefix="fsstgpu-read")
    checking = ThreadPoolExecutor(max_workers=checkers, thread_name_prefix="fsstgpu-check")
    finished = False
    try:
        jobs = deque(reading_pool.submit(read, run) for run in runs)
        for run in runs:
            checks = jobs.popleft().result()
            yield run, {name: job.result() for name, job in checks.items()}
        finished = True
    finally:
        # Left early, nothing waits (see parallel_units): reads still running end on their
        # threads; a reader waiting for a slot gives up.
        stop.set()
        reading_pool.shutdown(wait=finished, cancel_futures=not finished)
        checking.shutdown(wait=finished, cancel_futures=not finished)
        if finished:
            for f in handles:
                f.close()
        # (left early: a handle a read still holds closes when that thread's reader goes)
