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
    return blob.dumps(CompressedStringArray(**kwargs), store_code_offsets=store_code_offsets)


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
