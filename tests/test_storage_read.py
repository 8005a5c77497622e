"""The one-pass read of a stored fsst array (``formats/arrow_read.py``: ``_one_pass``, the
compiled ``native.stored_rows``) against the careful read it stands in for: the same
CompressedStringArray on every array a file or a row operation can give (nulls, several tables,
cut long strings, slices at any bit offset, reorderings), and the careful read, with its
errors, wherever anything is unusual."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

import fsstgpu
from fsstgpu import CorruptDataError
from fsstgpu.checks import check_structure
from fsstgpu.formats import arrow_read, arrow_storage as fs


def _careful(arr, monkeypatch):
    with monkeypatch.context() as mp:
        mp.setattr(arrow_read, "_one_pass", lambda ftype, storage: None)
        return fs.from_extension_array(arr)


def _column(rng, type_):
    """Strings of 0-300 bytes from a few alphabets (so tables differ by chunk), nulls here and
    there, in three chunks: a table each."""
    chunks = []
    for k in range(3):
        alphabet = np.frombuffer([b"abcdefgh ", b"0123456789/.", b"xyz-_ ~QRS"][k], np.uint8)
        n = int(rng.integers(50, 400))
        values = []
        for _ in range(n):
            if rng.random() < 0.15:
                values.append(None)
                continue
            size = int(rng.choice([rng.integers(0, 20), rng.integers(0, 300)]))
            values.append(rng.choice(alphabet, size).tobytes())
        chunks.append(pa.array(values, pa.binary()).cast(type_))
    return pa.chunked_array(chunks, type_)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("type_", [pa.string(), pa.large_binary()])
def test_one_pass_read_equals_the_careful_read(seed, type_, monkeypatch):
    rng = np.random.default_rng(seed)
    col = _column(rng, type_)
    with monkeypatch.context() as mp:  # a table per chunk, however small
        mp.setattr(fsstgpu.columns, "MIN_PIECE_BYTES", 1)
        carr = fsstgpu.compress(col, split_size=64)  # strings over 64 bytes are cut
    ext = fs.to_extension_array(carr)
    assert ext.type.version == 4 and len(carr.tables) == 3
    n = len(ext)
    a, b = sorted(int(x) for x in rng.integers(0, n + 1, 2))
    order = pa.array(rng.permutation(n)[: n // 3])
    views = [ext, ext.slice(a, b - a), ext.slice(int(rng.integers(1, 8))), ext.take(order),
             ext.filter(pa.array(rng.random(n) < 0.5)), pa.chunked_array([ext.slice(a)]),
             pa.concat_arrays([ext.slice(b), ext.slice(0, a)])]
    for view in views:
        chunk = view.chunks[0] if isinstance(view, pa.ChunkedArray) else view
        if len(chunk):
            assert arrow_read._one_pass(chunk.type, chunk.storage) is not None
        quick, careful = fs.from_extension_array(view), _careful(view, monkeypatch)
        assert quick.equals(careful)
        got = fsstgpu.decompress(quick, device="cpu")
        assert got.equals(fsstgpu.decompress(careful, device="cpu"))


def _rebuilt(ext, **children):
    """``ext`` with some of its struct's children replaced (the struct's own nulls kept)."""
    storage = ext.storage
    names = storage.type.names
    fields = [children.get(name, storage.field(i)) for i, name in enumerate(names)]
    struct = pa.StructArray.from_buffers(storage.type, len(storage), [storage.buffers()[0]],
                                         storage.null_count, storage.offset, fields)
    return pa.ExtensionArray.from_storage(ext.type, struct)


def test_codes_under_a_null_string_are_read_carefully(monkeypatch):
    """Another writer may leave bytes under a null: the careful read drops them."""
    ext = fs.to_extension_array(fsstgpu.compress(pa.array(["abc", None, "abd"])))
    codes = ext.storage.field("codes")
    raw = [codes[0].as_py(), b"\x01\x02", codes[2].as_py()]
    forged = _rebuilt(ext, codes=pa.array(raw, pa.large_binary()))
    assert arrow_read._one_pass(forged.type, forged.storage) is None
    out = fsstgpu.decompress(fs.from_extension_array(forged), device="cpu")
    assert out.to_pylist() == ["abc", None, "abd"]


@pytest.mark.parametrize("length", [1000, 0])  # more than 8 bytes a code; fewer than a code
def test_a_length_its_codes_cannot_make_is_refused(length):
    """The one pass fits every length to its code count (so the structural check need not
    walk the rows again); a forged length leaves it to the careful read, which names it."""
    ext = fs.to_extension_array(fsstgpu.compress(pa.array(["abcdefgh" * 3, None, "xyz"])))
    lengths = ext.storage.field("lengths").to_pylist()
    lengths[2] = length
    forged = _rebuilt(ext, lengths=pa.array(lengths, ext.storage.field("lengths").type))
    assert arrow_read._one_pass(forged.type, forged.storage) is None
    with pytest.raises(CorruptDataError, match="codes can hold|does not fit its length"):
        fs.from_extension_array(forged)


def test_a_child_whose_null_count_is_wrong_is_refused():
    """A bitmap that disagrees with its declared null count leaves the one pass to the careful
    read, which names it."""
    ext = fs.to_extension_array(fsstgpu.compress(pa.array(["abc", None, "abd", "x"])))
    lengths = ext.storage.field("lengths")
    bitmap = pa.py_buffer(np.array([0b1101], np.uint8))  # one null, under the null string
    forged = _rebuilt(ext, lengths=pa.Array.from_buffers(
        lengths.type, len(lengths), [bitmap, lengths.buffers()[1]], 2, lengths.offset))
    assert arrow_read._one_pass(forged.type, forged.storage) is None
    with pytest.raises(CorruptDataError, match="null count"):
        fs.from_extension_array(forged)


def test_only_the_tables_rows_name_are_read(monkeypatch):
    """A dictionary of many entries, all garbage but the one the rows name: read in one pass
    (the garbage never parsed), as the careful read does."""
    ext = fs.to_extension_array(fsstgpu.compress(pa.array(["abc", None, "abd", "x"] * 10)))
    table = ext.storage.field("table")
    real = table.dictionary[0].as_py()
    values = [b"FSTT garbage %d" % k for k in range(3000)] + [real]
    forged = _rebuilt(ext, table=pa.DictionaryArray.from_arrays(
        pa.array([3000] * len(ext), pa.uint16()), pa.array(values, pa.binary())))
    parsed = []
    from fsstgpu.formats import table_child

    real_table_of = table_child.table_of.__wrapped__
    monkeypatch.setattr(table_child, "table_of", lambda b: parsed.append(b) or real_table_of(b))
    assert arrow_read._one_pass(forged.type, forged.storage) is not None
    assert parsed == [real]
    out = fsstgpu.decompress(fs.from_extension_array(forged), device="cpu")
    assert out.to_pylist() == ["abc", None, "abd", "x"] * 10


def test_rows_checked_still_checks_what_the_rows_do_not_say():
    """With the rows checked by the one pass, the structural check still refuses code offsets
    that do not end at the codes, lengths past what the codes make, broken splits and a wrong
    null count."""
    def column():
        return fsstgpu.compress(pa.array(["abcdefgh" * 40, None, "xyz", ""]), split_size=64)

    def rows_of(lengths):
        return np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)

    carr = column()
    check_structure(carr, rows_checked=rows_of(carr.lengths))  # as read: passes
    short = carr.code_offsets.copy()
    short[-1] -= 1
    bad_splits = carr.split_codes.copy()
    bad_splits[1] = bad_splits[2] + 1
    big = carr.lengths.copy()
    big[0] = 8 * len(carr.codes) + 1
    for name, value in [("code_offsets", short), ("split_codes", bad_splits), ("lengths", big),
                        ("null_count", 2)]:
        changed = column()
        setattr(changed, name, value)
        with pytest.raises(CorruptDataError):
            check_structure(changed, rows_checked=rows_of(changed.lengths))


def test_a_bitmap_offset_past_int64_is_refused():
    # the bitmap check summed first + n + 7 in int64: a forged first bit near 2**63 wrapped past
    # it and the rows' bits were read at first / 8 (a segfault)
    n = 3
    args = (None, np.zeros(n + 1, np.int64), 0, None, np.zeros(n, np.uint32), None,
            np.zeros(n, np.uint16), np.zeros(1, np.int32))
    for first in (2**63 - 1 - n, 2**63 - 1):
        with pytest.raises(ValueError, match="row_bits must hold the rows' bits"):
            fsstgpu.native.stored_rows(n, (np.zeros(1, np.uint8), first), *args)


def test_codes_of_eight_bytes_each_are_read_in_one_pass():
    """Every code making 8 bytes (the most a code makes): the lengths add up to exactly
    8 codes' worth, which the one pass's check must take (``total > 8 * ncodes``)."""
    col = pa.array(["abcdefgh" * 3, None, "abcdefgh", ""])
    carr = fsstgpu.compress(col, table=fsstgpu.SymbolTable([b"abcdefgh"]))
    assert int(carr.lengths.sum()) == 8 * len(carr.codes)
    ext = fs.to_extension_array(carr)
    assert arrow_read._one_pass(ext.type, ext.storage) is not None
    assert fsstgpu.decompress(fs.from_extension_array(ext), device="cpu").equals(col)
