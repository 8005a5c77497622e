"""Integrity of Arrow IPC files and streams: validation, checksums, positions and an end batch.

Arrow IPC carries no checksums and no count of its batches, so fsstgpu adds its own, in each
record batch's custom metadata (``formats/files.md``, "Arrow IPC specifics"):

* every batch read from outside is validated in full (offsets, indices, UTF-8, the storage of
  extension columns) before anything serialises, hashes or copies it: pyarrow's serialiser and
  writers trust their input, and a forged offset made them crash the process;
* :data:`CRC_KEY`: CRC32 of the schema, the batch, the prefix of each dictionary it uses that
  it was written with (its length in :data:`LENGTHS_KEY`: an IPC file reader applies every
  delta before the first batch) and its position, all serialised (earlier versions, still
  checked when read: :data:`CRC_V2_KEY` hashed whole dictionaries, :data:`CRC_V1_KEY` none);
* :data:`POSITION_KEY`: the batch's index and the rows up to and including it;
* the writer ends with a batch of no rows carrying :data:`END_KEY` (how many batches and rows
  came before it), and the schema carries :data:`SCHEMA_KEY`: a file or stream written by
  fsstgpu without that end batch was cut short. Readers here do not yield it; other readers see
  an empty batch.

>>> import pyarrow as pa
>>> from fsstgpu.formats.ipc_integrity import IpcChecks, batch_metadata
>>> batch = pa.record_batch({"s": ["a", "b"]})
>>> metadata = batch_metadata(batch, index=0, rows=2)
>>> checks = IpcChecks(batch.schema)
>>> checks.check(batch, metadata).num_rows
2
>>> checks.check(pa.record_batch({"s": ["c"]}), metadata)
Traceback (most recent call last):
...
fsstgpu.errors.CorruptDataError: CRC32 mismatch: the record batch was altered
"""

from __future__ import annotations

import json
import struct
import zlib
from functools import partial

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

from fsstgpu.checksum import crc32
from fsstgpu.errors import CorruptDataError
from fsstgpu.formats.dictionaries import FileDictionaries, SentDictionaries, batch_dictionaries
from fsstgpu.formats.dictionary_bits import (
    holds_dense_union,
    holds_dictionary,
    refuse_union_float_dictionaries,
)
from fsstgpu.formats.ipc_footer import last_batch_metadata
from fsstgpu.formats.nested import empty_array, map_value_types
from fsstgpu.types import is_view, large_type

__all__ = ["CRC_KEY", "CRC_V1_KEY", "CRC_V2_KEY", "END_KEY", "LENGTHS_KEY", "POSITION_KEY",
           "SCHEMA_KEY", "Dictionaries",
           "IpcChecks", "IpcWriter",
           "batch_crc", "batch_metadata", "data_batches", "end_batch", "marked_schema",
           "validate_batch"]

#: version 1 of the batch checksum (schema and data, not dictionaries): read, no longer written
CRC_V1_KEY = b"fsstgpu.crc32"
#: version 2 (whole dictionaries: wrong for an IPC file whose dictionaries grow): read only
CRC_V2_KEY = b"fsstgpu.crc32.v2"
#: CRC32 of the serialised schema, data, dictionary prefixes, position / end and lengths
CRC_KEY = b"fsstgpu.crc32.v3"
#: JSON list: the length of each dictionary the batch uses (depth first), as written
LENGTHS_KEY = b"fsstgpu.dictionary_lengths"
#: JSON ``[index, rows]``: the batch's index and the rows of the batches up to it, itself included
POSITION_KEY = b"fsstgpu.batch"
#: JSON ``{"batches": n, "rows": r}`` on the end batch (no rows) closing the file / stream
END_KEY = b"fsstgpu.end"
#: schema metadata of an IPC file / stream written by fsstgpu: its batches carry the keys above
SCHEMA_KEY = b"fsstgpu.ipc_integrity"
_SCHEMA_VALUE = b"2"


class Dictionaries:
    """Dictionaries already validated and hashed, while they come back batch after batch (and
    the schema's canonical form).

    The batches of a dictionary column share one dictionary (or its growing delta), often much
    larger than one batch's indices; validating and serialising it again for every batch would
    cost its size per batch. A dictionary is known by its type, length, offset and buffers'
    addresses; each one remembered is held, so that its memory cannot be reused by another.
    At most ``keep`` are remembered, and those the current batch (:meth:`next_batch`) does not
    use, at most ``hold_bytes`` of them: a stream replacing a large dictionary every batch held
    16 of them, 16 times what a batch reads (153 MB read 9 MB batches).
    """

    def __init__(self, keep: int = 16, hold_bytes: int = 16 << 20):
        self.keep = keep
        self.hold_bytes = hold_bytes
        self._seen: dict = {}  # least recently used first
        self._schema: tuple | None = None
        self._batch = 0  # entries used by this batch (their "batch") stay

    def next_batch(self) -> None:
        """The dictionaries asked for from now on are another batch's."""
        self._batch += 1

    def schema_bytes(self, schema: pa.Schema) -> bytes:
        """``schema`` serialised as a reader gets it back: pyarrow's IPC writer renames a map's
        entries field (``key_value`` from Parquet) to ``entries``, so the writer's own schema
        does not serialise as the file's does. Serialised, read and serialised again, both do."""
        if self._schema is None or not self._schema[0].equals(schema, check_metadata=True):
            canonical = ipc.read_schema(pa.py_buffer(schema.serialize())).serialize()
            self._schema = (schema, canonical.to_pybytes())
        return self._schema[1]

    def _entry(self, dictionary: pa.Array) -> dict:
        key = (str(dictionary.type), len(dictionary), dictionary.offset,
               tuple((b.address, b.size) if b is not None else None
                     for b in dictionary.buffers()))
        entry = self._seen.pop(key, None)
        if entry is None:
            if len(self._seen) >= self.keep:  # the least recently used goes: a shared one
                self._seen.pop(next(iter(self._seen)))  # stays among batches' own (fsst tables)
            entry = {"array": dictionary, "bytes": dictionary.get_total_buffer_size()}
        entry["batch"] = self._batch
        self._seen[key] = entry
        held = sum(e["bytes"] for e in self._seen.values() if e["batch"] != self._batch)
        while held > self.hold_bytes:  # (the least recently used: another batch's)
            held -= self._seen.pop(next(iter(self._seen)))["bytes"]
        return entry

    def validate(self, dictionary: pa.Array) -> None:
        """``dictionary.validate(full=True)``, once."""
        entry = self._entry(dictionary)
        if not entry.get("valid"):
            dictionary.validate(full=True)
            entry["valid"] = True

    def crc(self, dictionary: pa.Array, length: int | None = None, *, deep: bool = True,
            compact: bool = True) -> int:
        """CRC32 of ``dictionary`` serialised as a one-column batch named ``dictionary``; with
        ``length`` (version 3), of its first ``length`` values copied into buffers of their own
        (a slice serialises its parent's buffers whole, a reader's dictionary may have been
        grown by deltas: the copy is the same for both)."""
        entry = self._entry(dictionary)
        key = "crc" if length is None else ("prefix", length, deep, compact)
        if key not in entry:
            if length is not None:
                dictionary = _canonical(dictionary.slice(0, length), deep, compact)
            entry[key] = crc32(
                pa.record_batch([dictionary], names=["dictionary"]).serialize())
        return entry[key]


def _canonical(values: pa.Array, deep: bool = True, compact: bool = True) -> pa.Array:
    """``values`` in buffers of their own, laid out the same whatever buffers they came in:
    copied (``concat_arrays``, which also clears the validity bits past the end), views as
    their large type (a view array's data buffers are copied as they are, those of a dictionary
    grown by deltas included; the cast keeps the bits past the end): at any depth, or, not
    ``deep``, at the top only (what files written before 2026-12-06 hashed: a dictionary of
    nested views grown by a delta did not match its own checksum). ``compact``: dense unions
    taken, each child only the values the prefix uses (sliced and concatenated, a union keeps
    its children whole: a reader's, grown by deltas, failed its checksum before session 77)."""
    large = _widened(values.type, deep)
    if large != values.type:
        values = values.cast(large)
    if compact and holds_dense_union(values.type):
        values = values.take(pa.array(range(len(values)), pa.int64()))
    return pa.concat_arrays([values])


def _widened(type_: pa.DataType, deep: bool) -> pa.DataType:
    """``type_`` with each view type in it (itself, a container's fields, a dictionary's
    values) its large type; not ``deep``, ``type_`` itself only."""
    if deep:
        return map_value_types(type_, lambda t: large_type(t) if is_view(t) else t)
    return large_type(type_) if is_view(type_) else type_


def validate_batch(batch: pa.RecordBatch, dictionaries: Dictionaries | None = None) -> None:
    """Check every column of ``batch`` in full; CorruptDataError naming the first bad one.

    ``dictionaries``: the dictionaries of dictionary columns seen before (validated once).

    Examples
    --------
    >>> import numpy as np, pyarrow as pa
    >>> from fsstgpu.formats.ipc_integrity import validate_batch
    >>> offsets = pa.py_buffer(np.array([0, 9, 2], np.int32).tobytes())
    >>> bad = pa.Array.from_buffers(pa.string(), 2, [None, offsets, pa.py_buffer(b"ab")])
    >>> validate_batch(pa.record_batch([bad], names=["s"]))
    Traceback (most recent call last):
    ...
    fsstgpu.errors.CorruptDataError: column 's': invalid (Offset invariant failure: ...)
    """
    try:
        batch.validate()
    except pa.ArrowException as exc:
        raise CorruptDataError(f"invalid record batch ({_reason(exc)})") from None
    for name, col in zip(batch.schema.names, batch.columns, strict=True):
        try:
            if pa.types.is_dictionary(col.type) and dictionaries is not None:
                _validate_indices(col, dictionaries)
            else:
                # an extension array's full validation covers its storage; say so explicitly,
                # since that storage is what readers here take apart
                (col.storage if isinstance(col, pa.ExtensionArray) else col).validate(full=True)
        except pa.ArrowException as exc:
            raise CorruptDataError(f"column {name!r}: invalid ({_reason(exc)})") from None


def _validate_indices(col: pa.DictionaryArray, dictionaries: Dictionaries) -> None:
    """What ``col.validate(full=True)`` checks, the dictionary only once: the indices, and that
    every index of a valid slot addresses a dictionary value."""
    dictionaries.validate(col.dictionary)
    col.indices.validate(full=True)
    if col.indices.null_count < len(col):
        low, high = pc.min_max(col.indices).values()
        if low.as_py() < 0 or high.as_py() >= len(col.dictionary):
            raise pa.ArrowInvalid(f"a dictionary index out of range: [{low}, {high}] for a "
                                  f"dictionary of {len(col.dictionary)} values")


def _reason(exc: Exception) -> str:
    text = str(exc)
    return text.removeprefix("Invalid: ").replace("Invalid: ", "")


def _children(arr: pa.Array) -> list[pa.Array]:
    """The child arrays of a nested array (whose dictionaries the checksum must cover)."""
    t = arr.type
    if isinstance(arr, pa.ExtensionArray):
        return [arr.storage]
    if pa.types.is_struct(t) or pa.types.is_union(t):
        return [arr.field(i) for i in range(t.num_fields)]
    if hasattr(arr, "values"):  # lists, list views, maps, run-end encoded
        return [arr.values]
    return []


def _dictionaries(arr: pa.Array):
    """Every dictionary ``arr`` uses, nested ones included, depth first."""
    if pa.types.is_dictionary(arr.type):
        yield arr.dictionary
        yield from _dictionaries(arr.dictionary)
    elif holds_dictionary(arr.type):
        for child in _children(arr):
            yield from _dictionaries(child)


def batch_crc(batch: pa.RecordBatch, extra: bytes = b"",
              dictionaries: Dictionaries | None = None, lengths: list | None = None, *,
              deep: bool = True, compact: bool = True) -> int:
    """CRC32 of ``batch``'s schema (as read back) and data, serialised, then of the CRC32 of
    each dictionary it uses (4 bytes, little-endian), then of ``extra``.

    ``lengths`` (version 3): hash only the first ``lengths[k]`` values of dictionary ``k``, the
    dictionary as the batch was written with (an IPC file reader hands every batch the final
    dictionary, deltas applied); None (version 2): whole dictionaries.
    ``RecordBatch.serialize()`` leaves dictionaries out (IPC sends them as messages of their
    own), so each one is serialised as a batch of its own, and hashed apart so that
    ``dictionaries`` can remember it. Validate ``batch`` first: the serialiser trusts its input.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from fsstgpu.formats.ipc_integrity import batch_crc
    >>> a = pa.record_batch({"d": pa.array(["x", "y"]).dictionary_encode()})
    >>> b = pa.record_batch({"d": pa.array(["x", "z"]).dictionary_encode()})
    >>> batch_crc(a) == batch_crc(b)
    False
    >>> batch_crc(a, lengths=[1]) == batch_crc(b, lengths=[1])  # only "x" hashed
    True
    """
    dictionaries = dictionaries or Dictionaries()
    crc = crc32(batch.serialize(), zlib.crc32(dictionaries.schema_bytes(batch.schema)))
    used = [d for col in batch.columns for d in _dictionaries(col)]
    if lengths is not None:
        if not isinstance(lengths, list) or len(lengths) != len(used) or any(
                not isinstance(n, int) or isinstance(n, bool) or not 0 <= n <= len(d)
                for n, d in zip(lengths, used, strict=False)):
            raise CorruptDataError("CRC32 mismatch: the record batch's dictionaries were altered")
    for k, dictionary in enumerate(used):
        crc = zlib.crc32(struct.pack("<I", dictionaries.crc(
            dictionary, None if lengths is None else lengths[k], deep=deep, compact=compact)), crc)
    return zlib.crc32(extra, crc)


def _legacy_forms(batch: pa.RecordBatch) -> list[dict]:
    """Earlier versions' hashes of ``batch``'s dictionaries (dense unions, nested views)."""
    used = [d.type for col in batch.columns for d in _dictionaries(col)]
    return ([{"compact": False}] if any(map(holds_dense_union, used)) else []) + (
        [{"deep": False, "compact": False}]
        if any(_widened(t, True) != _widened(t, False) for t in used) else [])


def _lengths(batch: pa.RecordBatch) -> list[int]:
    return [len(d) for col in batch.columns for d in _dictionaries(col)]


def _crc_metadata(batch, key: bytes, value: bytes, dictionaries) -> dict:
    lengths = json.dumps(_lengths(batch)).encode()
    return {key: value, LENGTHS_KEY: lengths,
            CRC_KEY: str(batch_crc(batch, value + lengths, dictionaries,
                                   json.loads(lengths))).encode()}


def _v1_crc(batch: pa.RecordBatch) -> int:
    return crc32(batch.serialize(), zlib.crc32(batch.schema.serialize()))


def batch_metadata(batch: pa.RecordBatch, *, index: int, rows: int,
                   dictionaries: Dictionaries | None = None) -> dict:
    """The custom metadata of data batch ``index`` (``rows``: rows up to and including it)."""
    return _crc_metadata(batch, POSITION_KEY, json.dumps([index, rows]).encode(), dictionaries)


def end_batch(schema: pa.Schema, last: pa.RecordBatch | None, *, batches: int, rows: int,
              dictionaries: Dictionaries | None = None) -> tuple[pa.RecordBatch, dict]:
    """The end batch and its metadata, after ``batches`` batches of ``rows`` rows in all.

    It has no rows, and the dictionaries of the ``last`` batch written (a writer would otherwise
    see new, empty dictionaries: a replacement, which an IPC file cannot hold).
    """
    batch = (last.slice(0, 0) if last is not None  # (empty_array: nested fsst types too)
             else pa.RecordBatch.from_arrays([empty_array(f.type) for f in schema],
                                             schema=schema))
    end = json.dumps({"batches": batches, "rows": rows}).encode()
    return batch, _crc_metadata(batch, END_KEY, end, dictionaries)


def marked_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with :data:`SCHEMA_KEY`: what an IPC output of fsstgpu is written with."""
    return schema.with_metadata({**(schema.metadata or {}), SCHEMA_KEY: _SCHEMA_VALUE})


def _unmarked(schema: pa.Schema) -> pa.Schema:
    metadata = {k: v for k, v in (schema.metadata or {}).items() if k != SCHEMA_KEY}
    return schema.with_metadata(metadata) if metadata else schema.remove_metadata()


def _json(metadata, key: bytes):
    try:
        return json.loads(metadata[key])
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        raise CorruptDataError(f"unreadable {key.decode()} metadata") from None


class IpcChecks:
    """Checks the record batches of one IPC file or stream, read in order from the start.

    Parameters
    ----------
    schema : pyarrow.Schema
        The file's schema as read; :attr:`schema` is it without :data:`SCHEMA_KEY`.
    ours : bool
        The file is known to be fsstgpu's (an IPC file whose last batch is the end batch, read
        out of order: an unmarked schema does not then tell).
    """

    def __init__(self, schema: pa.Schema, ours: bool = False):
        self.marked = ours or SCHEMA_KEY in (schema.metadata or {})
        self.schema = _unmarked(schema)
        self.batches = self.rows = 0
        self.end: dict | None = None
        self._dictionaries = Dictionaries()

    @classmethod
    def stream_schema(cls, f) -> pa.Schema:
        """The schema of the IPC stream open in ``f``, checked by the first record batch's
        CRC32 where fsstgpu wrote the stream: a stream's schema is covered by its batches'
        checksums only (a flipped byte in a column name read as a usage error, "no column
        named ...", before any batch was read). That batch is read without threads (an fsst
        column's type is Python-defined), and again by the read proper.

        Examples
        --------
        >>> import pyarrow as pa, pyarrow.ipc as ipc
        >>> from fsstgpu.formats.ipc_integrity import IpcChecks
        >>> sink = pa.BufferOutputStream()
        >>> with ipc.new_stream(sink, pa.schema([("n", pa.int8())])) as writer:
        ...     writer.write_batch(pa.record_batch({"n": pa.array([1, 2], pa.int8())}))
        >>> IpcChecks.stream_schema(pa.BufferReader(sink.getvalue())).names  # (not fsstgpu's)
        ['n']
        """
        reader = ipc.open_stream(f, options=ipc.IpcReadOptions(use_threads=False))
        checks = cls(reader.schema)
        if checks.marked:
            try:
                checks.check(*reader.read_next_batch_with_custom_metadata())
            except (StopIteration, pa.ArrowInvalid):  # (no batch, or cut amid its
                pass  # dictionaries: the read proper says which)
            except CorruptDataError as exc:
                raise CorruptDataError(f"record batch 0: {exc}") from None
        return reader.schema

    def check(self, batch: pa.RecordBatch, metadata, index: int | None = None):
        """``batch`` validated and compared with its checksum and position; None for the end
        batch. ``index``: the batch's index in an IPC file read out of order (then the rows
        before it are unknown and not compared)."""
        self._dictionaries.next_batch()
        validate_batch(batch, self._dictionaries)
        metadata = metadata or {}
        if self.end is not None:
            raise CorruptDataError("a record batch follows the end batch")
        ours = (self.marked or CRC_KEY in metadata or CRC_V2_KEY in metadata
                or END_KEY in metadata)
        extra = metadata.get(END_KEY, metadata.get(POSITION_KEY, b""))
        if CRC_KEY in metadata:
            lengths = _json(metadata, LENGTHS_KEY) if LENGTHS_KEY in metadata else None
            if END_KEY in metadata and lengths != _lengths(batch):
                # the end batch holds the final dictionaries: nothing may follow their prefix
                raise CorruptDataError("CRC32 mismatch: the dictionaries were altered")
            want = _int(metadata, CRC_KEY)
            crc = partial(batch_crc, batch, extra + metadata.get(LENGTHS_KEY, b""),
                          self._dictionaries, lengths if lengths is not None else [])
            # (earlier versions' forms, looked for only where the checksum does not match)
            if crc() != want and not any(crc(**form) == want for form in _legacy_forms(batch)):
                raise CorruptDataError("CRC32 mismatch: the record batch was altered")
        elif CRC_V2_KEY in metadata:
            if batch_crc(batch, extra, self._dictionaries) != _int(metadata, CRC_V2_KEY):
                raise CorruptDataError("CRC32 mismatch: the record batch was altered")
        elif ours:
            raise CorruptDataError(f"the record batch has no {CRC_KEY.decode()} checksum")
        elif CRC_V1_KEY in metadata and _v1_crc(batch) != _int(metadata, CRC_V1_KEY):
            raise CorruptDataError("CRC32 mismatch: the record batch was altered")
        if ours and not self.marked and self.batches:
            # an unmarked file / stream (written before the schema mark) tells it is fsstgpu's
            # only from its batches: those read before this one lacked the checksum
            raise CorruptDataError(f"record batch {self.batches - 1} has no "
                                   f"{CRC_KEY.decode()} checksum, record batch {self.batches} "
                                   "has: a batch's metadata was removed")
        self.marked = self.marked or ours
        if END_KEY in metadata:
            self._check_end(batch, _json(metadata, END_KEY))
            return None
        if self.marked:
            self._check_position(batch, _json(metadata, POSITION_KEY) if POSITION_KEY in metadata
                                 else None, index)
        self.batches += 1
        self.rows += batch.num_rows
        return batch.replace_schema_metadata(self.schema.metadata)

    def _check_position(self, batch, position, index) -> None:
        expected = self.batches if index is None else index
        if not (isinstance(position, list) and len(position) == 2
                and all(isinstance(v, int) for v in position)):
            raise CorruptDataError(f"unreadable {POSITION_KEY.decode()} metadata")
        if position[0] != expected:
            raise CorruptDataError(f"record batch {expected} says it is batch {position[0]}: "
                                   "batches were lost, repeated or reordered")
        if index is None and position[1] != self.rows + batch.num_rows:
            raise CorruptDataError(f"record batch {expected} ends at row {position[1]} but "
                                   f"{self.rows + batch.num_rows} rows were read: rows were lost")

    def _check_end(self, batch, end) -> None:
        if batch.num_rows or not (isinstance(end, dict) and set(end) == {"batches", "rows"}):
            raise CorruptDataError(f"unreadable {END_KEY.decode()} metadata")
        self.end = end

    def finish(self, stats=None) -> None:
        """Check, after the last batch, that the end batch was read and counts what was read;
        CorruptDataError ``truncated`` otherwise. ``stats``: a stream reader's ``ReadStats``,
        which tell a stream of any writer that ends after its dictionaries, before the batch
        they were written for (writers send dictionaries with a batch)."""
        if stats is not None and stats.num_dictionary_batches and not stats.num_record_batches:
            raise CorruptDataError("truncated: it ends after its dictionaries, before any record "
                                   "batch")
        if not self.marked:
            return
        if self.end is None:
            raise CorruptDataError(f"truncated: it ends after {self.batches} record batches "
                                   f"({self.rows} rows) without fsstgpu's end batch")
        if self.end != {"batches": self.batches, "rows": self.rows}:
            raise CorruptDataError(
                f"truncated: {self.batches} record batches ({self.rows} rows) were read, the "
                f"end batch counts {self.end['batches']} ({self.end['rows']} rows)")


def data_batches(reader, f=None) -> int:
    """How many data batches an open IPC file (``pyarrow.ipc.RecordBatchFileReader``) holds:
    all of them, or for one written by fsstgpu all but its end batch, which is checked here
    (read first, it tells a file whose footer lost or gained batches).

    A file is fsstgpu's when its schema has :data:`SCHEMA_KEY` or, ``f`` given (the file, open
    again), when its last batch carries :data:`END_KEY` (found from the footer without reading
    the batch: :func:`fsstgpu.formats.ipc_footer.last_batch_metadata`).
    """

    count = reader.num_record_batches
    if SCHEMA_KEY not in (reader.schema.metadata or {}) and (
            f is None or END_KEY not in (last_batch_metadata(f) or {})):
        return count
    if count == 0:
        raise CorruptDataError("truncated: the file has no record batch, not even its end batch")
    checks = IpcChecks(reader.schema)
    if checks.check(*reader.get_batch_with_custom_metadata(count - 1), index=count - 1) is not None:
        raise CorruptDataError(f"truncated: its last record batch ({count - 1}) is not the end "
                               "batch")
    if checks.end["batches"] != count - 1:
        raise CorruptDataError(f"the file holds {count - 1} record batches, its end batch "
                               f"counts {checks.end['batches']}: batches were lost or added")
    return count - 1


def _int(metadata, key: bytes) -> int:
    try:
        return int(metadata[key])
    except ValueError:
        raise CorruptDataError(f"unreadable {key.decode()} metadata") from None


class IpcWriter:
    """Writes an IPC file or stream whose batches carry :func:`batch_metadata`, closed (by
    :meth:`close`) with the :func:`end_batch`.

    Parameters
    ----------
    f : pyarrow.NativeFile
    fmt : {"arrow", "arrows"}
    schema : pyarrow.Schema
    compression : {"lz4", "zstd", "uncompressed"}, optional
        The bodies' codec (default zstd).
    mark : bool
        Write the schema with :data:`SCHEMA_KEY` (default), so that even a stream cut before
        its first batch reads as truncated; fsstgpu's readers remove it (plain readers see it).

    Examples
    --------
    >>> import pyarrow as pa, pyarrow.ipc as ipc
    >>> from fsstgpu.formats.ipc_integrity import IpcWriter
    >>> sink = pa.BufferOutputStream()
    >>> writer = IpcWriter(sink, "arrows", pa.schema([("n", pa.int8())]))
    >>> writer.write(pa.record_batch({"n": pa.array([1, 2], pa.int8())}))
    >>> writer.close()
    >>> [b.num_rows for b in ipc.open_stream(sink.getvalue())]  # the end batch has no rows
    [2, 0]
    """

    def __init__(self, f, fmt: str, schema: pa.Schema, *, compression: str | None = None,
                 mark: bool = True):
        refuse_union_float_dictionaries(schema)  # (joined by value: -0.0 read back as 0.0)
        self.schema = marked_schema(schema) if mark else schema
        self.batches = self.rows = 0
        self._last, self._failed = None, False
        self._dictionaries = Dictionaries()
        codec = compression or "zstd"
        new = ipc.new_file if fmt == "arrow" else ipc.new_stream
        self._writer = new(f, self.schema, options=ipc.IpcWriteOptions(
            emit_dictionary_deltas=True, compression=None if codec == "uncompressed" else codec))
        # an IPC file: one dictionary per column, growing (a prefix of it is given it)
        self._grown = FileDictionaries() if fmt == "arrow" else None
        # each dictionary as a reader will hold it, which the checksum covers: the writer takes
        # one for the one it sent before by value, not by bits (-0.0 for 0.0)
        self._sent = SentDictionaries()

    def write(self, batch: pa.RecordBatch) -> None:
        """Write one data batch (ValueError when an IPC file would need a new dictionary, or
        one its index type cannot hold), on the writer's :attr:`schema`: the checksum covers
        the schema's metadata, and a reader reads the batch with the file's (a batch of the
        caller's unmarked schema wrote a checksum the reader refused)."""
        if not batch.schema.equals(self.schema, check_metadata=True):
            # (from_arrays of no columns makes no rows: a batch of rows and no columns keeps them)
            batch = (pa.RecordBatch.from_arrays(batch.columns, schema=self.schema)
                     if batch.num_columns else batch.replace_schema_metadata(self.schema.metadata))
        for b in self._grown_batches(batch) if self._grown is not None else [batch]:
            self._write(b)

    def _grown_batches(self, batch: pa.RecordBatch | None) -> list[pa.RecordBatch]:
        """The batches to write for ``batch`` (None: those held back), each dictionary on the
        one written before (an IPC file's; a failure abandons the output)."""
        try:
            return self._grown.flush() if batch is None else self._grown.batches(batch)
        except BaseException:
            self._failed = True
            raise

    def _write(self, batch: pa.RecordBatch) -> None:
        try:
            batch = self._sent.batch(batch)
            self._dictionaries.next_batch()
            self._writer.write_batch(batch, custom_metadata=batch_metadata(
                batch, index=self.batches, rows=self.rows + batch.num_rows,
                dictionaries=self._dictionaries))
        except pa.ArrowInvalid as exc:
            self._failed = True
            if "replacement" not in str(exc):
                raise
            raise ValueError(
                f"record batch {self.batches}{self._replaced(batch)} has a dictionary that "
                "replaces, not extends, the one before: an Arrow IPC file holds one dictionary "
                "per column (growing by deltas); write an IPC stream (.arrows) or Parquet "
                "instead") from None
        except BaseException:
            self._failed = True
            raise
        self.batches, self.rows, self._last = self.batches + 1, self.rows + batch.num_rows, batch

    def _replaced(self, batch: pa.RecordBatch) -> str:
        """``", column 'name'"`` for the first column whose dictionary (or a nested column's
        dictionary leaf's) ``batch`` replaces (empty when none is found)."""
        last = batch_dictionaries(self._last) if self._last is not None else {}
        for key, now in batch_dictionaries(batch).items():
            before = last.get(key)
            if before is not None and not (
                    now.equals(before) or len(now) > len(before) > 0
                    and now.slice(0, len(before)).equals(before)):  # pyarrow's delta rule
                return f", column {batch.schema.field(key[0]).name!r},"
        return ""

    def close(self) -> None:
        """Write the end batch (unless a write failed: the output is then abandoned) and finish
        the file / stream; the file itself stays open."""
        for b in self._grown_batches(None) if self._grown is not None and not self._failed else []:
            self._write(b)
        if not self._failed:
            batch, metadata = end_batch(self.schema, self._last, batches=self.batches,
                                        rows=self.rows, dictionaries=self._dictionaries)
            self._writer.write_batch(batch, custom_metadata=metadata)
        self._writer.close()
