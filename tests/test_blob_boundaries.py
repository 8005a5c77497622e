"""One blob, one answer (issue #20, findings 5 and 6).

Finding 5: ``decompress`` decoded split by split without looking at string boundaries, so a
CRC-valid blob whose symbol spans two strings, or whose stored code offsets contradict the codes,
decoded "successfully" while ``carr[i]``, ``take()`` and ``validate()`` raised. Now every path
gives the same strings or raises CorruptDataError. The forgers below build blobs with every size
and CRC right (the fields are forged, then written by ``blob.dumps``), as a forger would.

Finding 6: a 3 MB blob declaring millions of zero-length chunks made ``decompress`` peak at
3.78 GB (a pyarrow array per chunk); every declared count now costs memory bounded by the blob.
"""

from __future__ import annotations

import struct
import subprocess
import sys
import zlib

import numpy as np
import pyarrow as pa
import pytest

import fsstgpu
from fsstgpu import CompressedStringArray, CorruptDataError, SymbolTable
from fsstgpu.formats import blob

_FIELDS = ("type", "length", "tables", "block_starts", "codes", "lengths", "validity",
           "null_count", "split_size", "split_codes", "split_out", "split_table", "chunk_lengths")


def forge(carr: CompressedStringArray, *, store_code_offsets=False, **fields) -> bytes:
    """A CRC-valid blob of ``carr`` with ``fields`` replaced (nothing is checked on the way)."""
    kwargs = {name: getattr(carr, name) for name in _FIELDS}
    kwargs["code_offsets"] = carr.code_offsets if store_code_offsets else None
    kwargs.update(fields)
    forged = CompressedStringArray(**kwargs)
    # taken as structurally checked: dumps checks a column's structure before writing stored
    # code offsets (01aea82), and these forgeries are for the readers
    object.__setattr__(forged, "_checked", True)
    return blob.dumps(forged, store_code_offsets=store_code_offsets)


def answers(data: bytes) -> dict:
    """What each way of reading the blob gives: the strings, or "corrupt"; each on a fresh read
    (validate() and random access remember what they checked)."""

    def attempt(fn):
        try:
            return fn(CompressedStringArray.from_bytes(data))
        except CorruptDataError:
            return "corrupt"

    return {
        "decompress": attempt(lambda c: fsstgpu.decompress(c, device="cpu").to_pylist()),
        "getitem": attempt(lambda c: [c[i] for i in range(len(c))]),
        "take": attempt(lambda c: c.take(np.arange(len(c))).to_pylist()),
        "take_last": attempt(lambda c: c.take([len(c) - 1]).to_pylist() if len(c) else []),
        "validate": attempt(lambda c: c.validate() or "valid"),
    }


def assert_one_answer(data: bytes) -> str:
    """Every path agrees: all "corrupt", or all the same strings (validate: "valid");
    return which."""
    got = answers(data)
    decoded = got.pop("decompress")
    take_last = got.pop("take_last")
    if decoded == "corrupt":
        assert all(v == "corrupt" for v in [*got.values(), take_last]), got
        return "corrupt"
    assert got == {"getitem": decoded, "take": decoded, "validate": "valid"}, got
    assert take_last == decoded[-1:]
    return "ok"


# ------------------------------------------------------------------------------ hand-made
def _two_strings(table, codes, lengths, *, code_offsets=None, type=pa.binary()):
    """A one-block, one-split column of ``lengths`` over ``codes`` (fields as given)."""
    n = len(lengths)
    return CompressedStringArray(
        type=type, length=n, tables=[table], block_starts=[0, n], codes=codes,
        code_offsets=code_offsets, lengths=lengths, validity=None, null_count=0,
        split_size=4096, split_codes=[0, len(codes)], split_out=[0, sum(lengths)],
        split_table=[0])


def test_a_symbol_spanning_two_strings_is_corrupt_everywhere():
    # "abcd" as one symbol, stored as two strings of 2 bytes: the split decodes to its 4 bytes,
    # but the symbol runs across the first string's end (blob.md: corrupt).
    carr = _two_strings(SymbolTable([b"abcd"]), np.array([0], np.uint8), [2, 2])
    data = blob.dumps(carr)
    assert assert_one_answer(data) == "corrupt"
    with pytest.raises(CorruptDataError, match="string 0: a symbol runs across its end"):
        fsstgpu.decompress(CompressedStringArray.from_bytes(data), device="cpu")


def test_an_escape_cannot_span_two_strings_either():
    # "x" escaped then "ab": lengths 2 and 1 put the first end inside the symbol "ab".
    carr = _two_strings(SymbolTable([b"ab"]), np.array([255, 120, 0], np.uint8), [2, 1])
    assert assert_one_answer(blob.dumps(carr)) == "corrupt"


def test_stored_code_offsets_that_contradict_the_codes_are_corrupt_everywhere():
    # "ab" "cd" from one-byte symbols, code offsets [0, 1, 4] instead of [0, 2, 4]: every count
    # fits its length, the split decodes, but string 0's codes do not make "ab".
    table = SymbolTable([b"a", b"b", b"c", b"d"])
    carr = _two_strings(table, np.array([0, 1, 2, 3], np.uint8), [2, 2],
                        code_offsets=[0, 1, 4])
    data = blob.dumps(carr, store_code_offsets=True)
    assert assert_one_answer(data) == "corrupt"
    with pytest.raises(CorruptDataError, match="string 1: its stored code offset 1 is not"):
        fsstgpu.decompress(CompressedStringArray.from_bytes(data), device="cpu")


def test_empty_strings_at_a_string_end_keep_decoding():
    table = SymbolTable([b"ab", b"c"])
    carr = _two_strings(table, np.array([1, 0, 1], np.uint8), [3, 0, 0, 2],  # "ab" "c" "ab"
                        code_offsets=[0, 2, 2, 2, 3])
    for store in (False, True):
        data = blob.dumps(carr, store_code_offsets=store)
        assert assert_one_answer(data) == "ok"
        assert fsstgpu.decompress(CompressedStringArray.from_bytes(data),
                                  device="cpu").to_pylist() == [b"abc", b"", b"", b"ab"]


def test_an_empty_column_with_empty_splits_gives_one_answer():
    # blob.md: a reader takes any split points that partition the codes and the output, and
    # an empty column's split (codes 0..0, output 0..0) does. It decoded to [] but validate()
    # raised "split 0 does not start on a code boundary": the walk met split starts only inside
    # strings, and an empty column has none.
    for code_offsets in (None, [0]):
        carr = CompressedStringArray(
            type=pa.string(), length=0, tables=[SymbolTable([])], block_starts=[0, 0],
            codes=np.zeros(0, np.uint8), code_offsets=code_offsets,
            lengths=np.zeros(0, np.int64), validity=None, null_count=0, split_size=4096,
            split_codes=[0, 0, 0], split_out=[0, 0, 0], split_table=[0, 0])
        data = blob.dumps(carr, store_code_offsets=code_offsets is not None)
        assert assert_one_answer(data) == "ok"


def test_split_points_off_the_code_boundaries_are_corrupt_everywhere():
    # Stored code offsets make carr[i] and take() need no walk; the split points that disagree
    # with them must still make them raise, as decompress does.
    carr = fsstgpu.compress(pa.array([b"abcabc", b"xyz"] * 40, pa.binary()), split_size=16)
    split_out = carr.split_out.copy()
    split_out[1] += 1
    data = forge(carr, store_code_offsets=True, split_out=split_out)
    assert assert_one_answer(data) == "corrupt"


# ------------------------------------------------------------------------------ forged at random
def _columns():
    rng = np.random.default_rng(20)
    words = [b"http://example.com/", b"alpha", b"\xc3\xb1and\xc3\xba", b"", b"x", b"0123456789" * 3]
    binary = [b"".join(rng.choice(words, size=int(rng.integers(0, 4)))) for _ in range(150)]
    binary = [None if rng.random() < 0.1 else s for s in binary]
    binary[7] = b"long string " * 30  # longer than the split size: cuts inside it
    return [pa.array(binary, pa.binary()), pa.array([b""] * 30 + [b"a"] * 30, pa.binary())]


def _forgeries(carr, rng):
    """Forged lengths (a few bytes moved to a neighbour: the total stays right, so only the
    string boundaries are wrong), code offsets and split points."""
    n = carr.length
    valid = np.ones(n, bool) if carr.validity is None else \
        np.unpackbits(carr.validity, bitorder="little")[:n].astype(bool)
    for _ in range(60):
        kind = int(rng.integers(0, 3))
        if kind == 0:
            lengths = carr.lengths.copy()
            i = int(rng.integers(0, n - 1))
            j = i + 1
            if not (valid[i] and valid[j]):
                continue
            d = int(rng.integers(1, 4))
            if rng.random() < 0.5:
                i, j = j, i
            d = min(d, int(lengths[i]))
            lengths[i] -= d
            lengths[j] += d
            yield forge(carr, store_code_offsets=bool(rng.random() < 0.5), lengths=lengths)
        elif kind == 1:
            co = carr.code_offsets.copy()
            i = int(rng.integers(1, n))
            co[i] = min(max(co[i] + int(rng.choice([-2, -1, 1, 2])), co[i - 1]), co[i + 1])
            yield forge(carr, store_code_offsets=True, code_offsets=co)
        else:
            which = "split_codes" if rng.random() < 0.5 else "split_out"
            arr = getattr(carr, which).copy()
            k = int(rng.integers(1, len(arr) - 1))
            arr[k] = min(max(arr[k] + int(rng.choice([-1, 1])), arr[k - 1]), arr[k + 1])
            yield forge(carr, store_code_offsets=bool(rng.random() < 0.5), **{which: arr})


@pytest.mark.parametrize("column", range(2))
def test_forged_blobs_give_one_answer_on_every_path(column):
    carr = fsstgpu.compress(_columns()[column], split_size=16)
    rng = np.random.default_rng(column)
    outcomes = [assert_one_answer(data) for data in _forgeries(carr, rng)]
    # The forgeries do reach the decoder: some decode (to another column), most are corrupt.
    assert "corrupt" in outcomes


def test_a_forged_text_column_raises_on_every_decoding_path():
    """Lengths moved across a multi-byte character: invalid UTF-8 in both strings, which every
    decoding path checks (validate() does not decode, so it is not asked)."""
    carr = fsstgpu.compress(pa.array(["añb", "c"] * 20))
    lengths = carr.lengths.copy()
    lengths[0] -= 2
    lengths[1] += 2
    got = answers(forge(carr, lengths=lengths))
    del got["validate"]
    assert all(v == "corrupt" for v in got.values()), got


# ------------------------------------------------------------------------------ finding 6: memory
def rewrite(data: bytes, *, header=None, **payloads) -> bytes:
    """``data`` with header fields (name: value, as in blob.md) or section payloads replaced,
    every size and CRC recomputed."""
    fields = list(blob._HEADER.unpack_from(data, 0))
    names = ("magic", "version", "flags", "lengths_codec", "type", "length", "null_count",
             "ncodes", "nblocks", "nsplits", "split_size", "nchunks")
    for name, value in (header or {}).items():
        fields[names.index(name)] = value
    head = blob._HEADER.pack(*fields)
    out = [head, struct.pack("<I", zlib.crc32(head))]
    pos = blob.HEADER_SIZE
    for name in blob.SECTIONS:
        (size,) = struct.unpack_from("<Q", data, pos)
        payload = payloads.get(name, data[pos + 8 : pos + 8 + size])
        pos += 12 + size
        framed = struct.pack("<Q", len(payload))
        out += [framed, payload, struct.pack("<I", zlib.crc32(payload, zlib.crc32(framed)))]
    return b"".join(out)


def chunk_bomb(strings: int, nchunks: int, string_bytes: int = 0) -> bytes:
    """A CRC-valid blob of ``strings`` random strings in ``nchunks`` chunks: one string in each
    of the first chunks, the rest empty (chunk lengths: one byte each)."""
    rng = np.random.default_rng(6)
    values = [rng.bytes(string_bytes) for _ in range(strings)]
    col = pa.chunked_array([values[:1], values[1:]], pa.binary())
    data = fsstgpu.compress(col, table=SymbolTable([])).to_bytes()
    lengths = np.zeros(nchunks, np.int64)
    lengths[:strings] = 1
    return rewrite(data, header={"nchunks": nchunks},
                   chunk_lengths=b"\x01" + lengths.astype(np.uint8).tobytes())


_MEASURE = """
import resource, sys
import fsstgpu
from fsstgpu import CompressedStringArray, CorruptDataError
small = fsstgpu.compress(__import__("pyarrow").chunked_array([["a"], ["b"]]))
fsstgpu.decompress(CompressedStringArray.from_bytes(small.to_bytes()), device="cpu")  # compiled
data = open(sys.argv[1], "rb").read()
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    out = fsstgpu.decompress(CompressedStringArray.from_bytes(data), device="cpu")
    what = f"{out.num_chunks} chunks" if hasattr(out, "num_chunks") else f"{len(out)} strings"
except CorruptDataError as exc:
    what = f"corrupt: {exc}"
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(peak * 1024, what)
"""


def _peak(data: bytes, tmp_path) -> tuple[int, str]:
    """(bytes the process grew by while reading and decoding ``data``, what it gave), measured
    in a fresh process: pyarrow's arrays are allocated where tracemalloc does not look."""
    path = tmp_path / "blob"
    path.write_bytes(data)
    done = subprocess.run([sys.executable, "-c", _MEASURE, str(path)], capture_output=True,
                          text=True, timeout=300, check=True)
    grown, what = done.stdout.split(" ", 1)
    return int(grown), what.strip()


def test_a_blob_of_millions_of_empty_chunks_is_refused_before_allocating(tmp_path):
    data = chunk_bomb(0, 3_000_000)
    assert len(data) < 3_100_000
    grown, what = _peak(data, tmp_path)
    assert what.startswith("corrupt: 3000000 chunks declared"), what
    assert grown < 64 * len(data), f"{grown / len(data):.0f} x the blob"


def test_the_most_chunks_a_blob_may_declare_decode_in_bounded_memory(tmp_path):
    """At the limit (one per 16 bytes beyond 65536), every chunk non-empty (a slice each):
    under 64 times the blob plus what 65536 chunks take (32 MB)."""
    strings = 130_000
    base = len(chunk_bomb(strings, 1, string_bytes=10)) - 1  # each chunk adds one byte
    nchunks = strings
    while blob.chunk_limit(base + nchunks) > nchunks:
        nchunks = blob.chunk_limit(base + nchunks)
    data = chunk_bomb(strings, nchunks, string_bytes=10)
    grown, what = _peak(data, tmp_path)
    assert what == f"{nchunks} chunks", what
    assert grown < 64 * len(data) + 32 * 2**20, f"{grown / len(data):.0f} x the blob"
    print(f"{nchunks} chunks from {len(data)} bytes: grew {grown / len(data):.0f} x")
    with pytest.raises(CorruptDataError, match="chunks declared"):
        CompressedStringArray.from_bytes(chunk_bomb(strings, nchunks + 1, string_bytes=10))


def test_the_writer_refuses_what_the_reader_would():
    col = pa.chunked_array([[b""]] * 80_000, pa.binary())  # a byte a chunk: 65536 + 5000
    carr = fsstgpu.compress(col, table=SymbolTable([]))
    with pytest.raises(ValueError, match="80000 chunks in a .*combine chunks"):
        carr.to_bytes()


def test_a_blob_declaring_more_blocks_than_a_column_can_have_is_refused_at_once():
    data = fsstgpu.compress(pa.array(["a"])).to_bytes()
    forged = rewrite(data, header={"nblocks": 65537}, tables=b"\0" * (17 * 65537))
    with pytest.raises(CorruptDataError, match="65537 blocks declared"):
        CompressedStringArray.from_bytes(forged)


def block_bomb(nblocks: int) -> bytes:
    """A CRC-valid blob of ``nblocks`` distinct one-symbol tables (19 bytes each), one binary
    string of one code in each block, a split each: every table is used."""
    from fsstgpu.formats import intcodec

    tables = b"".join(SymbolTable([bytes([k & 255, k >> 8])]).to_bytes() for k in range(nblocks))
    steps = np.arange(nblocks + 1)
    base = fsstgpu.compress(pa.array([], pa.binary())).to_bytes()
    return rewrite(
        base, header={"nblocks": nblocks, "length": nblocks, "ncodes": nblocks,
                      "nsplits": nblocks},
        tables=tables, block_starts=intcodec.encode_offsets(steps), codes=bytes(nblocks),
        lengths=intcodec.encode_uints(np.full(nblocks, 2, np.int64), intcodec.BITPLANE_INDEXED),
        split_codes=intcodec.encode_offsets(steps), split_out=intcodec.encode_offsets(2 * steps),
        split_table=intcodec.encode_uints(steps[:-1]))


def test_the_most_blocks_a_blob_may_declare_decode_in_bounded_memory(tmp_path):
    """65536 tables of 19 bytes: the decoder's tables took 2.3 KB each (135 times the blob),
    now 256 bytes and 8 a symbol."""
    data = block_bomb(65536)
    grown, what = _peak(data, tmp_path)
    assert what == "65536 strings", what
    assert grown < 64 * len(data), f"{grown / len(data):.0f} x the blob"


def test_the_most_splits_a_blob_may_declare_decode_in_bounded_memory(tmp_path):
    """A million empty splits (three bytes each: two deltas and a table index) of a column with
    no codes: the decoder's per-split arrays, 40 bytes a split, stay under 64 times the blob."""
    from fsstgpu.formats import intcodec

    nsplits = 1_000_000
    zeros = np.zeros(nsplits + 1, np.int64)
    base = fsstgpu.compress(pa.array([""], pa.binary())).to_bytes()
    data = rewrite(base, header={"nsplits": nsplits},
                   split_codes=intcodec.encode_offsets(zeros),
                   split_out=intcodec.encode_offsets(zeros),
                   split_table=intcodec.encode_uints(zeros[:-1]))
    grown, what = _peak(data, tmp_path)
    assert what == "1 strings", what
    assert grown < 64 * len(data), f"{grown / len(data):.0f} x the blob"
