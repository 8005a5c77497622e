"""Fuzz targets for the file layer and Arrow row operations (issue #20), run by ``fuzz_cases.py``.

Every case is seeded like the targets of ``fuzz_cases.py`` and replays the same way. Targets:

``ipc_passthrough``
    an IPC file (pyarrow's) with a string column and columns fsstgpu copies through unchanged
    (dictionary, list, large_list, fixed_size_list, map, struct with a map, temporal), one node
    of one column forged: a middle offset, the validity bitmap, a claimed null count, a missing
    or edited buffer (``pa.Array.from_buffers``), or an offset buffer patched in the file's
    bytes. Run through compress_file (to every output format), then the output through
    read_table, decompress_file and inspect_file. A malformed column in any output is
    ``bad_output``; a valid forged input must come out exactly as it went in.
``ipc_dictionary``
    a file or stream written by fsstgpu (compress_file or decompress_file, with dictionary
    columns) with 1-3 bits flipped inside one dictionary message (70%) or record batch message:
    fsstgpu checksums what it writes, so exit 0 with other data is ``silent_wrong``.
``ipc_truncated``
    the same files cut at a message boundary or anywhere, with or without an end-of-stream
    marker after the cut: exit 0 with fewer rows (or other data) is ``silent_wrong``.
``row_ops``
    multi-table ``fsstgpu.fsst`` arrays (several symbol tables) sliced, taken, filtered,
    concatenated and chunked by plain pyarrow (also through an IPC file), then decoded: other
    rows' strings are ``silent_wrong``; ``CorruptDataError`` is a clean refusal.
``nested_types``
    random valid tables of nested, temporal and dictionary types (a new dictionary per batch in
    streams) through compress_file and decompress_file between Parquet, IPC file and stream;
    the result must equal pyarrow's own round trip of the table to that format (or the table):
    any difference, or any error, is ``bad_output``.
``blob_bomb``
    small blobs declaring many zero-length chunks or many empty strings, decoded (the memory
    check below catches a blow-up).
``cli``
    forged ``ipc_passthrough`` files through ``fsstgpu compress / decompress / inspect /
    roundtrip`` in a subprocess: exit 0 or 4 (corrupt) are answers, a signal is ``crash``,
    another code ``wrong_type``, exit 0 with a malformed output ``bad_output``.

Memory (every target, ``fuzz_cases.worker``): the peak resident size of a case over the size
before it must stay within ``64 x input bytes + MEMORY_CONSTANT``, else ``memory``.
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.feather as feather
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
from fuzz_cases import (
    FILE_TARGETS as TARGETS,  # noqa: F401 (the targets run here)
    INPUT_BYTES,
    Rejected,
    _sections,
)
from fuzz_forge import forge, patch_offsets

import fsstgpu
from fsstgpu import CorruptDataError
from fsstgpu.formats import (
    blob as blobfmt,
    compress_file,
    decompress_file,
    inspect_file,
    intcodec,
    read_table,
)
from fsstgpu.formats.arrow_storage import from_extension_array, to_extension_array
from fsstgpu.formats.files import NotCompressedError
from fsstgpu.formats.parquet_compat import READS_NULL_FIXED_SIZE_LISTS

FORMATS = ("parquet", "arrow", "arrows")
EOS = b"\xff\xff\xff\xff\x00\x00\x00\x00"


class Failure(Exception):
    """A finding of the outcome named by ``args[0]`` (detail ``args[1]``)."""


# ------------------------------------------------------------------------------------ tables
def _kinds(rng, n: int) -> dict[str, pa.Array]:
    """One valid array of each type the issue names, ``n`` rows, about 10% nulls."""
    def nulls(values):
        return [None if rng.random() < 0.1 else v for v in values]

    words = ["alpha", "beta", "ñandú", "日本", "", "x" * 20, "http://e.com/a"]
    pick = [words[int(i)] for i in rng.integers(0, len(words), n)]
    ints = [int(x) for x in rng.integers(-1000, 1000, n)]
    lists = [[words[int(i)] for i in rng.integers(0, len(words), int(rng.integers(0, 4)))]
             for _ in range(n)]
    maps = [[(f"k{j}", ints[i] + j) for j in range(i % 3)] for i in range(n)]
    secs = [int(x) for x in rng.integers(0, 2**31, n)]
    days = [int(x) for x in rng.integers(-30000, 30000, n)]
    return {
        "s": pa.array(nulls([p + str(i % 7) for i, p in enumerate(pick)]), pa.string()),
        "d": pa.array(nulls(pick), pa.string()).dictionary_encode(),
        "d8": pa.array(nulls(pick), pa.large_string()).dictionary_encode().cast(
            pa.dictionary(pa.int8(), pa.large_string())),
        "l": pa.array(nulls(lists), pa.list_(pa.string())),
        "ll": pa.array(nulls([[int(v) for v in range(len(x))] for x in lists]),
                       pa.large_list(pa.int32())),
        # (null fixed-size lists only where pyarrow reads them back from Parquet: 26 on)
        "fl": pa.array((nulls if READS_NULL_FIXED_SIZE_LISTS else list)(
            [[i, i + 1, i + 2] for i in ints]), pa.list_(pa.int16(), 3)),
        "m": pa.array(nulls(maps), pa.map_(pa.string(), pa.int64())),
        "st": pa.array(nulls([{"a": i, "b": p, "m": [(p, p)]}
                              for i, p in zip(ints, pick, strict=True)]),
                       pa.struct([("a", pa.int32()), ("b", pa.string()),
                                  ("m", pa.map_(pa.string(), pa.string()))])),
        "d64": pa.array(nulls([d * 86_400_000 for d in days]), pa.date64()),
        "ts": pa.array(nulls(secs), pa.timestamp("s")),
        "tz": pa.array(nulls(secs), pa.timestamp("ms", tz="UTC")),
        "t32": pa.array(nulls([s % 86400 for s in secs]), pa.time32("s")),
        "t64": pa.array(nulls([s % 86400 * 10**6 for s in secs]), pa.time64("us")),
        "i": pa.array(nulls(ints), pa.int64()),
    }


def _batches(rng, names, nbatches: int, rows: int) -> list[pa.RecordBatch]:
    """Batches built one by one (offset 0, their own dictionaries)."""
    out = []
    for _ in range(nbatches):
        kinds = _kinds(rng, rows)
        out.append(pa.record_batch([kinds[k] for k in names], names=list(names)))
    return out


def _write(path: Path, batches, fmt: str) -> None:
    if fmt == "parquet":
        pq.write_table(pa.Table.from_batches(batches).unify_dictionaries(), path)
        return
    if fmt == "arrow":  # a file holds one dictionary per column: unify them first
        batches = pa.Table.from_batches(batches).unify_dictionaries().combine_chunks() \
            .to_batches() if batches else batches
    opener = ipc.new_file if fmt == "arrow" else ipc.new_stream
    with opener(path, batches[0].schema) as writer:
        for b in batches:
            writer.write_batch(b)


def _read_plain(path: Path, fmt: str) -> pa.Table:
    """The file as pyarrow reads it (fsst columns stay extension columns)."""
    if fmt == "parquet":
        return pq.read_table(path)
    with pa.OSFile(str(path)) as f:
        reader = ipc.open_file(f) if fmt == "arrow" else ipc.open_stream(f)
        return reader.read_all()


def _read_output(path: Path, fmt: str, what: str) -> pa.Table:
    """An output fsstgpu wrote, read by pyarrow: it must read, and be valid Arrow."""
    try:
        table = _read_plain(path, fmt)
    except (pa.ArrowException, OSError, ValueError) as exc:
        raise Failure("bad_output", f"{what} ({fmt}) unreadable: {exc}") from None
    _check_valid(table, f"{what} ({fmt})")
    return table


def _values(table: pa.Table):
    """Each column's type and values (dictionaries decoded), comparable with ``==``."""
    out = []
    for i in range(table.num_columns):
        col = table.column(i)
        try:
            values = col.to_pylist()
        except (OverflowError, ValueError, pa.ArrowException):  # forged temporal values
            try:
                if pa.types.is_dictionary(col.type):
                    col = col.cast(col.type.value_type)
                values = [c.to_string() for c in col.chunks]
            except pa.ArrowException as exc:
                raise Failure("bad_output", f"column {i} unreadable: {exc}") from None
        out.append((table.schema.field(i).type, values))
    return out


def _check_valid(table: pa.Table, what: str) -> None:
    for name, col in zip(table.column_names, table.columns, strict=True):
        try:
            col.validate(full=True)
        except pa.ArrowException as exc:
            raise Failure("bad_output", f"{what}: column {name!r} malformed: {exc}") from None


# ------------------------------------------------------------------------------------ inputs
class FileInputs:
    """Files every case of the file targets starts from, in a temporary directory."""

    PASS = ("s", "d", "d8", "l", "ll", "fl", "m", "st", "d64", "ts", "t32", "i")

    def __init__(self, seed: int):
        rng = np.random.default_rng([seed, 0xF1])
        self.dir = Path(tempfile.mkdtemp(prefix="fsstgpu-fuzz-"))
        atexit.register(shutil.rmtree, self.dir, True)
        self.case = 0
        # one dictionary per column for all batches: fsstgpu's .arrow outputs need that
        self.batches = pa.Table.from_batches(_batches(rng, self.PASS, 3, 40)) \
            .unify_dictionaries().combine_chunks().to_batches()
        self.batches = [pa.record_batch(b.columns, schema=b.schema) for b in self.batches]
        plain = self.dir / "plain.arrows"
        _write(plain, self.batches, "arrows")
        self.plain_table = pa.Table.from_batches(self.batches)
        # fsstgpu's own files: kept dictionary columns (compress), re-encoded ones (decompress)
        self.written = {}
        for fmt in ("arrow", "arrows"):
            c = self.dir / f"c.{fmt}"
            compress_file(plain, c)
            d = self.dir / f"d.{fmt}"
            compress_file(plain, self.dir / f"cd.{fmt}", columns=["s", "d"])
            decompress_file(self.dir / f"cd.{fmt}", d, device="cpu")
            for p in (c, d):
                self.written[p.name] = (p.read_bytes(), read_table(p, device="cpu"))
        self.multi = self._multi(rng)

    def _multi(self, rng):
        """(extension array, plain strings) pairs with 2-4 symbol tables each."""
        out = []
        for k in range(3):
            chunks = []
            for j in range(int(rng.integers(2, 5))):
                alphabet = ["ab", "cd", "ef", "gh", "ñá", "日本"][(j + k) % 6]
                chunks.append([None if rng.random() < 0.1 else
                               alphabet * int(rng.integers(0, 30)) + str(i % 3)
                               for i in range(int(rng.integers(1, 40)))])
            col = pa.chunked_array(chunks, pa.string())
            carr = fsstgpu.compress(col, split_size=16)
            out.append((to_extension_array(carr), col.combine_chunks()))
        # Blocks whose strings have the same codes under different tables: only the table of
        # each string tells them apart (tests/test_row_operations.py).
        col = pa.chunked_array([["ab" * 4] * 30, [None, "cdcdcdcd"] * 15, ["ef" * 40] * 30])
        out.append((to_extension_array(fsstgpu.compress(col, split_size=16)),
                    col.combine_chunks()))
        return out

    def new_case(self) -> None:
        """Remove the last case's files."""
        shutil.rmtree(self.dir / "case", ignore_errors=True)
        (self.dir / "case").mkdir()
        self.case = 0

    def path(self, suffix: str) -> Path:
        self.case += 1
        return self.dir / "case" / f"{self.case}{suffix}"


@functools.cache
def inputs(seed: int) -> FileInputs:
    return FileInputs(seed)


# ------------------------------------------------------------------------------------ forging
def _forged_file(inp: FileInputs, rng) -> tuple[Path, pa.Table | None]:
    """A forged IPC file and its table (None when forged in its bytes: no valid reference)."""
    batches = list(inp.batches)
    k = int(rng.integers(0, len(batches)))
    path = inp.path(".arrow")
    if rng.random() < 0.25:  # bytes: every offset, first and last too
        sink = pa.BufferOutputStream()
        with ipc.new_file(sink, batches[0].schema) as writer:
            for b in pa.Table.from_batches(batches).unify_dictionaries().to_batches():
                writer.write_batch(b)
        data = patch_offsets(sink.getvalue().to_pybytes(), batches[k], rng)
        path.write_bytes(data)
        return path, None
    b = batches[k]
    j = int(rng.integers(0, b.num_columns))
    try:
        forged = forge(b.column(j), rng)
    except (pa.ArrowException, ValueError, TypeError, IndexError) as exc:
        raise Rejected(f"from_buffers: {exc}") from None
    batches[k] = pa.record_batch([forged if i == j else c for i, c in enumerate(b.columns)],
                                 schema=b.schema)
    # The stream writer takes one dictionary per batch as it is (no unification to touch it).
    with ipc.new_stream(path, b.schema) as writer:
        for x in batches:
            writer.write_batch(x)
    return path, pa.Table.from_batches(batches)


def _input_valid(table: pa.Table | None) -> bool:
    if table is None:
        return False
    try:
        for col in table.columns:
            col.validate(full=True)
    except pa.ArrowException:
        return False
    return True


# ------------------------------------------------------------------------------------ targets
def _through_fsstgpu(inp: FileInputs, src: Path, rng) -> pa.Table:
    """compress_file to a random format, checks of every output, decompress_file back; the
    decoded table."""
    fmt = FORMATS[int(rng.integers(0, 3))]
    out = inp.path(f".{fmt}")
    if rng.random() < 0.3:
        inspect_file(src)
    compress_file(src, out)
    _read_output(out, fmt, "compress_file output")
    inspect_file(out)
    back_fmt = FORMATS[int(rng.integers(0, 3))]
    back = inp.path(f".{back_fmt}")
    decompress_file(out, back, device="cpu")
    _read_output(back, back_fmt, "decompress_file output")
    got = read_table(out, device="cpu")
    _check_valid(got, "read_table")
    return got


def _run_passthrough(inp: FileInputs, rng):
    src, forged = _forged_file(inp, rng)
    INPUT_BYTES[0] = src.stat().st_size
    valid = _input_valid(forged)
    got = _through_fsstgpu(inp, src, rng)
    if not valid:
        return "ok_diff", "malformed input, valid output"
    if _values(got) != _values(forged):
        raise Failure("bad_output", "a valid input column did not come through unchanged")
    return ("ok_same" if _values(got) == _values(inp.plain_table) else "ok_diff"), ""


def _messages(data: bytes) -> list[tuple[int, int, int, str]]:
    """(start, metadata end, end, type) of each message of an IPC stream or file."""
    pos = 8 if data[:6] == b"ARROW1" else 0
    out = []
    while pos + 8 <= len(data):
        cont, metalen = struct.unpack_from("<Ii", data, pos)
        if cont != 0xFFFFFFFF or metalen <= 0:
            break
        msg = ipc.read_message(pa.py_buffer(data[pos:]))
        end = pos + 8 + metalen + msg.body.size
        out.append((pos, pos + 8 + metalen, end, msg.type))
        pos = end
    return out


def _read_back(inp: FileInputs, path: Path, rng) -> pa.Table:
    """What a user gets from the (damaged) file through one of fsstgpu's readers."""
    how = int(rng.integers(0, 4))
    fmt = path.suffix[1:]  # outputs in the input's format: the same types as the reference
    if how == 0:
        got = read_table(path, device="cpu")
        _check_valid(got, "read_table")
        return got
    if how == 1:
        out = inp.path(f".{fmt}")
        try:
            decompress_file(path, out, device="cpu")
        except NotCompressedError:  # a plain file (d.*: decompressed), refused by design
            got = read_table(path, device="cpu")
            _check_valid(got, "read_table")
            return got
        return _read_output(out, fmt, "decompress_file output")
    if how == 2:
        info = inspect_file(path)
        return pa.table({"rows": [info["rows"]]})
    out = inp.path(f".{fmt}")
    compress_file(path, out)
    got = read_table(out, device="cpu")
    _check_valid(got, "read_table of compress_file's output")
    return got


def _expected(how_table: pa.Table, reference: pa.Table) -> pa.Table:
    return pa.table({"rows": [reference.num_rows]}) if how_table.column_names == ["rows"] \
        else reference


def _run_damaged(inp: FileInputs, rng, truncate: bool):
    names = sorted(inp.written)
    name = names[int(rng.integers(0, len(names)))]
    data, reference = inp.written[name]
    msgs = _messages(data)
    if truncate:
        if rng.random() < 0.6:
            cut = msgs[int(rng.integers(0, len(msgs)))][2]
        else:
            cut = int(rng.integers(0, len(data)))
        damaged = data[:cut] + (EOS if rng.random() < 0.5 else b"")
    else:
        kinds = [m for m in msgs if m[3] == "dictionary"]
        if not kinds or rng.random() < 0.3:
            kinds = [m for m in msgs if m[3] == "record batch"]
        start, meta_end, end, _ = kinds[int(rng.integers(0, len(kinds)))]
        lo, hi = (meta_end, end) if rng.random() < 0.7 and end > meta_end else (start + 8,
                                                                                 meta_end)
        b = bytearray(data)
        for _ in range(int(rng.integers(1, 4))):
            i = int(rng.integers(lo, hi))
            b[i] ^= 1 << int(rng.integers(0, 8))
        damaged = bytes(b)
    path = inp.path(Path(name).suffix)
    path.write_bytes(damaged)
    INPUT_BYTES[0] = len(damaged)
    got = _read_back(inp, path, rng)
    if _values(got) == _values(_expected(got, reference)):
        return "ok_same", ""
    rows = got.column(0)[0].as_py() if got.column_names == ["rows"] else got.num_rows
    cut = "cut" if truncate else "flipped"
    if rows != reference.num_rows:
        raise Failure("silent_wrong", f"{name} {cut}: exit 0 with {rows} of "
                      f"{reference.num_rows} rows")
    raise Failure("silent_wrong", f"{name} {cut}: exit 0 with other data")


def _row_op(ext, plain, rng, other):
    n = len(ext)
    op = int(rng.integers(0, 6))
    if op == 5:  # rows permuted among rows of their length: every split still fits the codes
        lengths = pc.fill_null(pc.binary_length(plain), -1).to_numpy(zero_copy_only=False)
        idx = np.arange(n)
        for length in np.unique(lengths):
            where = np.flatnonzero(lengths == length)
            idx[where] = rng.permutation(where)
        return pc.take(ext, pa.array(idx)), pc.take(plain, pa.array(idx))
    if op == 0:
        a = int(rng.integers(0, n + 1))
        b = int(rng.integers(a, n + 1))
        return ext.slice(a, b - a), plain.slice(a, b - a)
    if op == 1:
        idx = pa.array([None if rng.random() < 0.05 else int(i)
                        for i in rng.integers(0, max(n, 1), int(rng.integers(0, 2 * n + 1)))]
                       if n else [], pa.int32())
        return pc.take(ext, idx), pc.take(plain, idx)
    if op == 2:
        mask = pa.array(rng.random(n) < 0.5)
        return pc.filter(ext, mask), pc.filter(plain, mask)
    if op == 3:
        o_ext, o_plain = other
        try:
            return pa.concat_arrays([ext, o_ext]), pa.concat_arrays([plain, o_plain])
        except (pa.ArrowException, ValueError, TypeError) as exc:
            raise Rejected(f"concat: {exc}") from None
    cut = int(rng.integers(0, n + 1))
    return (pa.chunked_array([ext.slice(0, cut), ext.slice(cut)]).combine_chunks(),
            plain)


def _run_row_ops(inp: FileInputs, rng):
    k = int(rng.integers(0, len(inp.multi)))
    ext, plain = inp.multi[k]
    INPUT_BYTES[0] = ext.nbytes
    other = inp.multi[int(rng.integers(0, len(inp.multi)))]
    for _ in range(int(rng.integers(1, 4))):
        ext, plain = _row_op(ext, plain, rng, other)
    how = int(rng.integers(0, 3))
    if how == 0:
        got = fsstgpu.decompress(from_extension_array(ext), device="cpu")
    else:  # an IPC file of it (then, once in two, filtered by pyarrow after reading)
        path = inp.path(".arrow")
        with ipc.new_file(path, pa.schema([("s", ext.type)])) as w:
            w.write_table(pa.table({"s": ext}))
        if how == 2:
            t = feather.read_table(path)
            mask = pa.array(rng.random(len(ext)) < 0.7)
            feather.write_feather(t.filter(mask), path, compression="uncompressed")
            plain = pc.filter(plain, mask)
        got = read_table(path, device="cpu").column("s")
    got = got.combine_chunks() if isinstance(got, pa.ChunkedArray) else got
    if got.to_pylist() != plain.to_pylist():
        raise Failure("silent_wrong", "decoded other strings than the rows selected")
    return "ok_same", ""


NESTED = ("s", "d", "d8", "l", "ll", "fl", "m", "st", "d64", "ts", "tz", "t32", "t64", "i")


def _pyarrow_roundtrip(table: pa.Table, fmt: str, path: Path) -> pa.Table:
    _write(path, table.to_batches(), fmt) if table.num_rows else None
    return _read_plain(path, fmt)


def _growing_dictionaries(batches: list[pa.RecordBatch]) -> list[pa.RecordBatch]:
    """The batches with each dictionary column's dictionary growing from batch to batch (each
    one extends the one before: the stream writer sends deltas or replacements of a prefix)."""
    out, seen = [], {}
    for b in batches:
        cols = []
        for name, col in zip(b.schema.names, b.columns, strict=True):
            if pa.types.is_dictionary(col.type):
                values = col.cast(col.type.value_type).to_pylist()
                order = seen.setdefault(name, {})
                for v in values:
                    if v is not None:
                        order.setdefault(v, len(order))
                idx = pa.array([None if v is None else order[v] for v in values],
                               col.type.index_type)
                col = pa.DictionaryArray.from_arrays(
                    idx, pa.array(list(order), col.type.value_type))
            cols.append(col)
        out.append(pa.record_batch(cols, schema=b.schema))
    return out


def _run_nested(inp: FileInputs, rng):
    names = [str(x) for x in rng.choice(NESTED, size=int(rng.integers(1, 6)), replace=False)]
    if "s" not in names:
        names.append("s")
    src_fmt, mid_fmt, out_fmt = (FORMATS[int(i)] for i in rng.integers(0, 3, 3))
    batches = _batches(rng, names, int(rng.integers(1, 4)), int(rng.integers(1, 60)))
    if src_fmt == "arrows" and rng.random() < 0.4:
        batches = _growing_dictionaries(batches)
    table = pa.Table.from_batches(batches)
    src, mid, out = inp.path(f".{src_fmt}"), inp.path(f".{mid_fmt}"), inp.path(f".{out_fmt}")
    try:
        _write(src, batches, src_fmt)
        # what pyarrow itself gives back through the two formats the file went through
        expect = _pyarrow_roundtrip(_pyarrow_roundtrip(table, src_fmt, inp.path(f".{src_fmt}")),
                                    out_fmt, inp.path(f".{out_fmt}"))
    except (pa.ArrowException, ValueError, TypeError) as exc:
        raise Rejected(f"pyarrow: {exc}") from None
    INPUT_BYTES[0] = src.stat().st_size
    try:
        compress_file(src, mid)
        decompress_file(mid, out, device="cpu")
        got = _read_output(out, out_fmt, "decompress_file output")
        direct = read_table(mid, device="cpu")
    except ValueError as exc:
        if any(m in str(exc) for m in REFUSALS[1:]):  # fsstgpu's documented refusals
            raise Rejected(f"{src_fmt}->{mid_fmt}->{out_fmt}: {exc}") from None
        raise Failure("bad_output", f"{src_fmt}->{mid_fmt}->{out_fmt} {names}: valid input "
                      f"refused: {exc}") from None
    except CorruptDataError as exc:
        raise Failure("bad_output", f"{src_fmt}->{mid_fmt}->{out_fmt} {names}: valid input "
                      f"refused: {exc}") from None
    for name in names:
        want = expect.column(name)
        for what, t in (("decompress_file", got), ("read_table", direct)):
            col = t.column(name)
            if col.type not in (want.type, table.schema.field(name).type) or \
                    col.to_pylist() != table.column(name).to_pylist():
                raise Failure("bad_output", f"{src_fmt}->{mid_fmt}->{out_fmt}: {what} column "
                              f"{name!r} {col.type} differs (pyarrow: {want.type})")
    return "ok_same", ""


def _with_chunks(data: bytes, lengths: np.ndarray) -> bytes:
    """A chunked blob with its chunk lengths replaced and every size and CRC recomputed (the
    writer refuses more chunks than the reader allows; a forger does not ask it)."""
    header, payloads = _sections(data)
    header = bytearray(header)
    header[56:64] = len(lengths).to_bytes(8, "little")  # nchunks (formats/blob.md)
    payloads[blobfmt.SECTIONS.index("chunk_lengths")] = intcodec.encode_uints(lengths)
    out = [bytes(header), struct.pack("<I", zlib.crc32(header))]
    for p in payloads:
        size = struct.pack("<Q", len(p))
        out += [size, p, struct.pack("<I", zlib.crc32(p, zlib.crc32(size)))]
    return b"".join(out)


def _run_bomb(inp: FileInputs, rng):
    plain = ["ab", "cd", None] * int(rng.integers(0, 4))
    carr = fsstgpu.compress(pa.chunked_array([plain, []], pa.string()))
    k = int(rng.choice([10, 1000, 100_000, 1_000_000, 4_000_000]))
    lengths = np.zeros(k + 1, np.int64)
    lengths[int(rng.integers(0, k + 1))] = len(carr)
    data = _with_chunks(carr.to_bytes(), lengths)
    INPUT_BYTES[0] = len(data)
    got = fsstgpu.decompress(fsstgpu.CompressedStringArray.from_bytes(data), device="cpu")
    if got.to_pylist() != plain:
        raise Failure("silent_wrong", f"{k + 1} chunks decoded to another column")
    return "ok_same", ""


def _run_cli(inp: FileInputs, rng):
    src, _ = _forged_file(inp, rng)
    INPUT_BYTES[0] = 0  # the work is in the subprocess
    cmd = ["compress", "decompress", "inspect", "roundtrip"][int(rng.integers(0, 4))]
    fmt = FORMATS[int(rng.integers(0, 3))]
    out = inp.path(f".{fmt}")
    if cmd == "decompress":  # of a compressed copy made in this process
        mid = inp.path(".arrow")
        compress_file(src, mid)
        src = mid
    args = {"inspect": [str(src)], "roundtrip": [str(src)]}.get(cmd, [str(src), str(out)])
    exe = Path(sys.executable).with_name("fsstgpu")
    proc = subprocess.run([str(exe), cmd, *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "FSSTGPU_DEVICE": "cpu"})
    tail = proc.stderr.strip().splitlines()[-1:] or [""]
    if proc.returncode < 0 or proc.returncode >= 128:
        raise Failure("crash", f"fsstgpu {cmd}: rc {proc.returncode}: {tail[0][:150]}")
    if proc.returncode == 4:
        return "clean_error", tail[0][:150]
    if proc.returncode == 1 and any(m in proc.stderr for m in REFUSALS):
        return "rejected", tail[0][:150]  # as in-process: a valid column the output cannot hold
    if proc.returncode != 0:
        raise Failure("wrong_type", f"fsstgpu {cmd}: rc {proc.returncode}: {tail[0][:150]}")
    if out.exists():
        _read_output(out, fmt, f"fsstgpu {cmd} output")
    return "ok_diff", f"fsstgpu {cmd}: exit 0"


# fsstgpu's refusals of valid columns an output format cannot hold (RELIABILITY.md)
REFUSALS = ("cannot be written to Parquet", "replaces, not extends",
            "more than one dictionary of")  # (the last two: an IPC file's dictionaries)

RUNNERS = {"ipc_passthrough": _run_passthrough,
           "ipc_dictionary": lambda inp, rng: _run_damaged(inp, rng, truncate=False),
           "ipc_truncated": lambda inp, rng: _run_damaged(inp, rng, truncate=True),
           "row_ops": _run_row_ops, "nested_types": _run_nested, "blob_bomb": _run_bomb,
           "cli": _run_cli}


def run(target: str, seed: int, rng):
    """One case of a file target; exceptions are classified by ``fuzz_cases.run_case``."""
    try:
        inp = inputs(seed)
    except Exception as exc:  # noqa: BLE001 (valid files fsstgpu cannot handle: a finding)
        return "bad_output", f"building the inputs: {type(exc).__name__}: {exc}"[:200]
    inp.new_case()
    try:
        return RUNNERS[target](inp, rng)
    except Failure as exc:
        return exc.args[0], exc.args[1].replace(str(inp.dir), "<tmp>")[:200]
    except ValueError as exc:
        if any(m in str(exc) for m in REFUSALS):  # a valid column the output cannot hold,
            return "rejected", str(exc)[:200]     # refused by name
        raise
    except (CorruptDataError, Rejected) as exc:  # the same detail in every run
        raise type(exc)(str(exc).replace(str(inp.dir), "<tmp>")) from None
