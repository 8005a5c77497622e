"""Fuzz cases: damaged or forged inputs through fsstgpu's public read and decode functions.

Run by ``tests/test_fuzz.py`` in worker subprocesses (a crash or a hang then fails one batch,
not the test run) and runnable alone to replay one case::

    python tests/fuzz_cases.py replay <target> <seed> <index>

Every case is seeded by (seed, target, index), so a failing case replays exactly. Targets:

``blob``
    a valid blob with bytes flipped, set, cut, added or removed; its CRCs are left as they are,
    so anything but a clean error (or a no-op mutation) is a silent wrong answer.
``blob_forged``
    the header or one section payload mutated and every size and CRC recomputed: a forger's
    blob. Decoding it to some other well-formed column is allowed; a malformed one is not.
``ext_metadata``
    the ``fsstgpu.fsst`` extension metadata mutated (CRC recomputed or not), then parsed and,
    when it parses, used to decode the original storage.
``ext_storage``
    a version-2 storage struct whose ``codes``, ``lengths``, ``cuts`` or own validity buffers,
    length or offset are forged, built with ``pa.Array.from_buffers`` (which checks little).
``ipc_file``, ``ipc_stream``, ``parquet``
    a file written by pyarrow (fsst columns, plain string / binary / view columns) with bytes
    mutated, read back with pyarrow; fsst columns are decompressed and plain ones compressed
    and decompressed. These containers carry no checksum, so a flipped byte inside a string
    comes back as a different string: counted as ``ok_diff``, not as a failure.

Outcomes (one per case): ``clean_error`` (CorruptDataError), ``rejected`` (pyarrow refused the
input before fsstgpu saw it), ``ok_same`` / ``ok_diff`` (decoded without error, equal to the
original or not), and the failures ``wrong_type`` (another exception from fsstgpu),
``bad_output`` (a decoded column that is not valid Arrow of its type, e.g. invalid UTF-8, or a
plain column that does not round-trip), ``silent_wrong`` (``ok_diff`` where a checksum covers the
change); ``crash`` and ``hang`` are seen by the parent process.
"""

from __future__ import annotations

import io
import os
import struct
import sys
import traceback
import zlib

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

if __name__ == "__main__":  # fuzz_files imports this module by name: one module, one Rejected
    sys.modules.setdefault("fuzz_cases", sys.modules["__main__"])

import fsstgpu  # noqa: E402
from fsstgpu import CorruptDataError  # noqa: E402
from fsstgpu.formats import blob as blobfmt  # noqa: E402
from fsstgpu.formats.arrow import FsstType, parse_metadata  # noqa: E402
from fsstgpu.formats.arrow_storage import from_extension_array, to_extension_array  # noqa: E402
from fsstgpu.types import SUPPORTED_TYPES  # noqa: E402

# The file targets (issue #20) live in fuzz_files.py; a target's index seeds its cases, so new
# ones go at the end.
FILE_TARGETS = ("ipc_passthrough", "ipc_dictionary", "ipc_truncated", "row_ops", "nested_types",
                "blob_bomb", "cli")
TARGETS = ("blob", "blob_forged", "ext_metadata", "ext_storage", "ipc_file", "ipc_stream",
           "parquet", *FILE_TARGETS)
FAILURES = ("wrong_type", "bad_output", "silent_wrong", "memory", "crash", "hang")
INPUT_BYTES = [0]  # the current case's input size, for the memory check
MEMORY_FACTOR = 64  # a case may peak at this many times its input bytes ...
MEMORY_CONSTANT = 128 << 20  # ... plus this (pyarrow's working set)
_INTERESTING = (0, 1, 2, 7, 8, 12, 13, 31, 32, 127, 128, 255, 256, 4095, 4096, 65535, 65536,
                2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**62, 2**63 - 1, 2**63, 2**64 - 1)


# ------------------------------------------------------------------------------------ inputs
def _columns(rng: np.random.Generator) -> list[pa.Array | pa.ChunkedArray]:
    """Small columns of every supported type: text with multi-byte characters, binary, empty
    strings, nulls, strings longer than the split size used below, several chunks."""
    words = ["http://example.com/", "alpha", "ñandú", "日本語のテキスト", "emoji 😀 ok", "", "x",
             "SELECT * FROM t WHERE a = 1", "0123456789abcdef" * 3]
    n = 120
    text = ["".join(rng.choice(words, size=int(rng.integers(0, 4)))) for _ in range(n)]
    text = [None if rng.random() < 0.1 else s for s in text]
    text[5] = "ßüö" * 40  # longer than the split size: cuts inside it
    raw = [None if rng.random() < 0.1 else rng.bytes(int(rng.integers(0, 30))) for _ in range(n)]
    return [
        pa.array(text, pa.string()),
        pa.array(text, pa.large_string()),
        pa.array(text, pa.string_view()),
        pa.array(raw, pa.binary()),
        pa.array(raw, pa.large_binary()),
        pa.array(raw, pa.binary_view()),
        pa.chunked_array([text[:40], text[40:]], pa.string()),
        pa.array([""] * 64 + ["a"], pa.string()),
        pa.array([], pa.string()),
    ]


class Inputs:
    """The valid inputs every case starts from, built once per worker from the seed."""

    def __init__(self, seed: int):
        rng = np.random.default_rng([seed, 0xF0])
        self.columns = _columns(rng)
        self.carrs = [fsstgpu.compress(c, split_size=64) for c in self.columns]
        self.blobs = [c.to_bytes(store_code_offsets=bool(k % 2))
                      for k, c in enumerate(self.carrs)]
        self.blobs.append(blobfmt.dumps(self.carrs[0], lengths_codec=1))
        self.blob_columns = list(self.columns) + [self.columns[0]]
        single = [k for k, c in enumerate(self.columns) if isinstance(c, pa.Array) and len(c)]
        self.ext = {k: to_extension_array(self.carrs[k]) for k in single}
        dict_type = pa.dictionary(pa.int8(), pa.string())
        self.ext_dict = to_extension_array(self.carrs[0], dictionary_type=dict_type)
        self.table = self._table()
        self.files = {"ipc_file": self._ipc(stream=False), "ipc_stream": self._ipc(stream=True),
                      "parquet": self._parquet()}

    def _table(self) -> pa.Table:
        cols = {"s": self.columns[0], "ls": self.columns[1], "sv": self.columns[2],
                "b": self.columns[3], "fs": self.ext[0], "fb": self.ext[3], "fd": self.ext_dict,
                "fl": self.ext[1]}
        return pa.table(cols)

    def _ipc(self, stream: bool) -> bytes:
        sink = io.BytesIO()
        opener = pa.ipc.new_stream if stream else pa.ipc.new_file
        with opener(sink, self.table.schema) as writer:
            for batch in self.table.to_batches(max_chunksize=60):
                writer.write_batch(batch)
        return sink.getvalue()

    def _parquet(self) -> bytes:
        sink = io.BytesIO()
        table = self.table.drop_columns(["sv"])  # Parquet stores views as plain strings
        pq.write_table(table, sink, row_group_size=60, compression="none",
                       use_dictionary=["s"])
        return sink.getvalue()


# ------------------------------------------------------------------------------------ mutations
def mutate(data: bytes, rng: np.random.Generator) -> bytes:
    """1-3 random edits: bit flips, set bytes, an interesting integer written over 4 or 8
    bytes, a cut, bytes appended, a range removed or repeated."""
    b = bytearray(data)
    for _ in range(int(rng.integers(1, 4))):
        # edits that keep the size are likelier: a changed size is mostly caught by framing
        op = int(rng.choice(8, p=[0.25, 0.2, 0.15, 0.2, 0.05, 0.05, 0.05, 0.05]))
        n = len(b)
        if op <= 1 and n:  # bit flips (most likely: what damage looks like)
            for _ in range(int(rng.integers(1, 9))):
                i = int(rng.integers(0, n))
                b[i] ^= 1 << int(rng.integers(0, 8))
        elif op == 2 and n:
            for _ in range(int(rng.integers(1, 5))):
                b[int(rng.integers(0, n))] = int(rng.choice([0, 0xFF, 0x7F, 0x80, 0xC3, 0xED,
                                                             int(rng.integers(0, 256))]))
        elif op == 3 and n >= 8:
            width = int(rng.choice([4, 8]))
            i = int(rng.integers(0, n - width + 1))
            old = int.from_bytes(b[i : i + width], "little")
            value = int(rng.choice([*_INTERESTING, old + 1, old - 1, old * 2, n, n + 1]))
            b[i : i + width] = (value % (1 << (8 * width))).to_bytes(width, "little")
        elif op == 4 and n:
            del b[int(rng.integers(0, n)) :]
        elif op == 5:
            b += rng.bytes(int(rng.integers(1, 64)))
        elif op == 6 and n:
            i = int(rng.integers(0, n))
            del b[i : i + int(rng.integers(1, 32))]
        elif n:
            i = int(rng.integers(0, n))
            b[i:i] = b[i : i + int(rng.integers(1, 32))]
    return bytes(b)


def _sections(data: bytes):
    """(header, payloads) of a valid blob."""
    pos = blobfmt.HEADER_SIZE
    payloads = []
    for _ in blobfmt.SECTIONS:
        (size,) = struct.unpack_from("<Q", data, pos)
        payloads.append(data[pos + 8 : pos + 8 + size])
        pos += 12 + size
    return data[: blobfmt.HEADER_SIZE - 4], payloads


def forge_blob(data: bytes, rng: np.random.Generator) -> bytes:
    """Mutate the header or one section's payload, then recompute every size and CRC."""
    header, payloads = _sections(data)
    k = int(rng.integers(-1, len(payloads)))
    if k < 0:
        header = bytearray(header)
        if rng.random() < 0.5:  # one of the seven u64 counts
            i = 8 + 8 * int(rng.integers(0, 7))
            old = int.from_bytes(header[i : i + 8], "little")
            value = int(rng.choice([*_INTERESTING, old + 1, old - 1, old * 32, old + 32]))
            header[i : i + 8] = (value % 2**64).to_bytes(8, "little")
        else:
            header[int(rng.integers(4, 8))] = int(rng.integers(0, 8))
        header = bytes(header)
    else:
        payloads[k] = mutate(payloads[k], rng)
    out = [header, struct.pack("<I", zlib.crc32(header))]
    for p in payloads:
        size = struct.pack("<Q", len(p))
        out += [size, p, struct.pack("<I", zlib.crc32(p, zlib.crc32(size)))]
    return b"".join(out)


def _with_crc(body: bytes) -> bytes:
    return body + struct.pack("<I", zlib.crc32(body))


def _rebuild(arr: pa.Array, rng: np.random.Generator) -> pa.Array:
    """``arr`` (a plain array, no children) with one buffer mutated, or its length / offset
    changed; built with ``from_buffers`` (pyarrow's cheap checks only)."""
    buffers = list(arr.buffers())
    length, offset, null_count = len(arr), arr.offset, -1
    choice = int(rng.integers(0, 4))
    if choice == 0:
        length = max(0, length + int(rng.integers(-3, 4)))
    elif choice == 1:
        offset = max(0, offset + int(rng.integers(-2, 3)))
    else:
        live = [i for i, buf in enumerate(buffers) if buf is not None]
        i = int(rng.choice(live)) if live else 0
        old = b"" if buffers[i] is None else buffers[i].to_pybytes()
        buffers[i] = pa.py_buffer(mutate(old, rng))
    if rng.random() < 0.2:
        null_count = int(rng.integers(0, length + 2))
    return pa.Array.from_buffers(arr.type, length, buffers, null_count, offset)


def forge_storage(ext: pa.ExtensionArray, rng: np.random.Generator) -> pa.ExtensionArray:
    """A version-2 storage with one child, or the struct's validity, length or offset, forged."""
    storage = ext.storage
    children = [storage.field(i) for i in range(storage.type.num_fields)]
    validity, length, offset = storage.buffers()[0], len(storage), 0
    k = int(rng.integers(0, 5))
    if k < 3:
        children[k] = _rebuild(children[k], rng)
    elif k == 3:
        raw = b"" if validity is None else validity.to_pybytes()
        validity = pa.py_buffer(mutate(raw or b"\xff" * ((length + 7) // 8), rng))
    else:
        length = max(0, length + int(rng.integers(-3, 2)))
        offset = int(rng.integers(0, 3))
    forged = pa.StructArray.from_buffers(storage.type, length, [validity], offset=offset,
                                         children=children, null_count=-1)
    return pa.ExtensionArray.from_storage(ext.type, forged)


# ------------------------------------------------------------------------------------ checks
class Rejected(Exception):
    """pyarrow refused the input before fsstgpu saw it."""


def _check_output(out, type_) -> None:
    """A decoded column must be valid Arrow of exactly its type (UTF-8 for text)."""
    if out.type != type_:
        raise AssertionError(f"decoded type {out.type}, expected {type_}")
    chunks = out.chunks if isinstance(out, pa.ChunkedArray) else [out]
    for chunk in chunks:
        try:
            chunk.validate(full=True)
        except pa.ArrowInvalid as exc:
            raise AssertionError(f"decoded column is invalid: {exc}") from None


def _same(a, b) -> bool:
    return (a.to_pylist() if a is not None else None) == (b.to_pylist() if b is not None
                                                          else None)


def _decode_carr(carr):
    """Everything a reader does with a CompressedStringArray; returns the decoded column."""
    out = fsstgpu.decompress(carr, device="cpu")
    _check_output(out, carr.type)
    n = len(carr)
    if n:
        picks = [0, n - 1, n // 2]
        got = carr.take(picks)
        _check_output(got, carr.type)
        for i in picks[:2]:
            carr[i]
    return out


def _run_blob(inputs: Inputs, rng, forged: bool):
    k = int(rng.integers(0, len(inputs.blobs)))
    original = inputs.blobs[k]
    data = forge_blob(original, rng) if forged else mutate(original, rng)
    INPUT_BYTES[0] = len(data)
    carr = fsstgpu.CompressedStringArray.from_bytes(data)
    out = _decode_carr(carr)
    carr.validate()
    same = _same(out, inputs.blob_columns[k])
    if not same and not forged and data != original:
        return "silent_wrong", f"blob {k} decoded to another column"
    return ("ok_same" if same else "ok_diff"), ""


def _run_ext_metadata(inputs: Inputs, rng):
    keys = sorted(inputs.ext)
    ext = inputs.ext[keys[int(rng.integers(0, len(keys)))]] if rng.random() < 0.8 \
        else inputs.ext_dict
    meta = ext.type.__arrow_ext_serialize__()
    if rng.random() < 0.6:  # the header fields (the tables carry their own CRCs)
        data = mutate(meta[:18], rng)[:18].ljust(18, b"\0") + meta[18:]
    else:
        data = mutate(meta, rng)
    if rng.random() < 0.7 and len(data) >= 4:
        data = _with_crc(data[:-4])
    INPUT_BYTES[0] = ext.nbytes + len(data)
    ftype = parse_metadata(ext.type.storage_type, data)
    if not isinstance(ftype, FsstType):
        raise AssertionError("parse_metadata returned no FsstType")
    if ftype.index_type is not None:  # what a file reader asks for next
        assert pa.types.is_dictionary(ftype.original_type)
    try:
        arr = pa.ExtensionArray.from_storage(ftype, ext.storage)
    except (pa.ArrowException, ValueError, TypeError) as exc:
        raise Rejected(str(exc)) from None
    out = fsstgpu.decompress(from_extension_array(arr), device="cpu")
    _check_output(out, ftype.value_type)
    return ("ok_same" if _same(out, fsstgpu.decompress(ext, device="cpu")) else "ok_diff"), ""


def _run_ext_storage(inputs: Inputs, rng):
    keys = sorted(inputs.ext)
    k = keys[int(rng.integers(0, len(keys)))]
    try:
        forged = forge_storage(inputs.ext[k], rng)
    except (pa.ArrowException, ValueError, TypeError) as exc:
        raise Rejected(str(exc)) from None
    INPUT_BYTES[0] = inputs.ext[k].nbytes
    carr = from_extension_array(forged)
    out = _decode_carr(carr)
    return ("ok_same" if _same(out, inputs.columns[k]) else "ok_diff"), ""


def _read_container(target: str, data: bytes) -> tuple[pa.Table, list[str]]:
    """The table pyarrow reads from ``data`` and its column names (pyarrow fails to decode a
    damaged name only when asked for it)."""
    # Read as fsstgpu reads files: from memory pyarrow owns (not Python bytes, which a pyarrow
    # I/O thread may drop last, taking the GIL, as the worker exits: the process then aborts,
    # "terminate called without an active exception", apache/arrow#34314; 1 worker in 2 of
    # one batch, seed 20261204) and with pyarrow's threads off (files.md).
    owned = pa.allocate_buffer(len(data))
    np.frombuffer(owned, np.uint8)[:] = np.frombuffer(data, np.uint8)
    options = pa.ipc.IpcReadOptions(use_threads=False)
    try:
        if target == "ipc_file":
            table = pa.ipc.open_file(pa.BufferReader(owned), options=options).read_all()
        elif target == "ipc_stream":
            table = pa.ipc.open_stream(pa.BufferReader(owned), options=options).read_all()
        else:
            table = pq.read_table(pa.BufferReader(owned), use_threads=False)
        return table, table.column_names
    except CorruptDataError:  # fsstgpu's own check, run by pyarrow (the extension metadata)
        raise
    except (pa.ArrowException, OSError, ValueError, TypeError, KeyError, IndexError,
            OverflowError, MemoryError) as exc:
        raise Rejected(f"{type(exc).__name__}: {exc}") from None


def _run_container(inputs: Inputs, rng, target: str):
    data = mutate(inputs.files[target], rng)
    INPUT_BYTES[0] = len(data)
    table, names = _read_container(target, data)
    original = inputs.table
    differs = False
    for i, name in enumerate(names):
        col = table.column(i)
        if isinstance(col.type, FsstType):
            out = fsstgpu.decompress(col, device="cpu")
            _check_output(out, col.type.value_type)
            expect = fsstgpu.decompress(original.column(name), device="cpu") \
                if name in original.column_names else None
        elif col.type in SUPPORTED_TYPES:
            carr = fsstgpu.compress(col, split_size=64)
            out = fsstgpu.decompress(carr, device="cpu")
            _check_output(out, col.type)
            if not _same(out, col):
                return "bad_output", f"column {name!r} does not round-trip"
            expect = original.column(name) if name in original.column_names else None
        else:
            continue
        differs |= expect is None or not _same(out, expect)
    return ("ok_diff" if differs else "ok_same"), ""


def run_case(inputs: Inputs, target: str, seed: int, index: int, phase=lambda p: None):
    """Run one case; return (outcome, detail)."""
    rng = np.random.default_rng([seed, TARGETS.index(target), index])
    INPUT_BYTES[0] = 0
    try:
        if target in FILE_TARGETS:
            import fuzz_files

            return fuzz_files.run(target, seed, rng)
        if target in ("blob", "blob_forged"):
            return _run_blob(inputs, rng, forged=target == "blob_forged")
        if target == "ext_metadata":
            return _run_ext_metadata(inputs, rng)
        if target == "ext_storage":
            return _run_ext_storage(inputs, rng)
        return _run_container(inputs, rng, target)
    except Rejected as exc:
        return "rejected", str(exc)[:200]
    except CorruptDataError as exc:
        return "clean_error", str(exc)[:200]
    except AssertionError as exc:
        return "bad_output", str(exc)[:200]
    except Exception as exc:  # noqa: BLE001 (every other exception is a finding)
        if isinstance(exc, ValueError) and "to Parquet but cannot read back" in str(exc):
            return "rejected", str(exc)[:200]  # a (forged) null fixed-size list, pyarrow < 26
        frames = traceback.extract_tb(exc.__traceback__)
        ours = [f for f in frames if "site-packages" not in f.filename
                and not f.filename.endswith((".pxi", ".pyx"))] or frames
        # the innermost frame, and the innermost of fsstgpu or the harness when that differs
        where = " < ".join(dict.fromkeys(f"{os.path.basename(f.filename)}:{f.lineno}"
                                         for f in (frames[-1], ours[-1])))
        return "wrong_type", f"{type(exc).__name__} at {where}: {exc}"[:200]


# ------------------------------------------------------------------------------------ worker
def _status_bytes(key: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) << 10
    raise KeyError(key)


def _peak_growth(inputs: Inputs, target: str, seed: int, index: int):
    """(outcome, detail, peak resident bytes over those before the case, or None where Linux's
    peak reset, ``clear_refs`` 5, is not available)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        before = _status_bytes("VmRSS")
    except OSError:
        return (*run_case(inputs, target, seed, index), None)
    outcome, detail = run_case(inputs, target, seed, index)
    return outcome, detail, _status_bytes("VmHWM") - before


def measured_case(inputs: Inputs, target: str, seed: int, index: int):
    """:func:`run_case` with the memory check: a case peaking over ``MEMORY_FACTOR`` times its
    input plus ``MEMORY_CONSTANT`` twice in a row (the first run warms caches and the thread
    pool) is a ``memory`` finding."""
    outcome, detail, growth = _peak_growth(inputs, target, seed, index)
    budget = MEMORY_FACTOR * INPUT_BYTES[0] + MEMORY_CONSTANT
    if growth is not None and growth > budget:
        outcome, detail, growth = _peak_growth(inputs, target, seed, index)
        if growth > budget:
            return "memory", (f"peak +{growth >> 20} MiB for {INPUT_BYTES[0]} input bytes "
                              f"({outcome}: {detail})")
    return outcome, detail


def worker(target: str, seed: int, start: int, count: int) -> None:
    """Run cases ``start:start + count``, one line per event on stdout: ``S i`` before case i,
    ``R i outcome detail`` after it (the parent finds a crashed or hung case from these)."""
    import faulthandler
    import resource

    faulthandler.enable()  # a crash prints where, on stderr
    # An unbounded allocation fails here as MemoryError (a finding) instead of paging the
    # machine to death or drawing the OOM killer.
    limit = 6 << 30
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    inputs = Inputs(seed)
    out = sys.stdout
    selftest = os.environ.get("FSSTGPU_FUZZ_SELFTEST")  # the runner's own test: crash or hang
    for i in range(start, start + count):
        out.write(f"S {i}\n")
        out.flush()
        if selftest == "crash" and i == 1:
            import ctypes

            ctypes.string_at(0)  # a segfault
        if selftest == "hang" and i == 1:
            import time

            time.sleep(3600)
        outcome, detail = measured_case(inputs, target, seed, i)
        detail = detail.replace("\n", " ")
        out.write(f"R {i} {outcome} {detail}\n")
        out.flush()


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "worker":
        worker(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
    elif len(sys.argv) == 5 and sys.argv[1] == "replay":
        target, seed, index = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
        print(measured_case(Inputs(seed), target, seed, index))
    else:
        sys.exit(__doc__)
