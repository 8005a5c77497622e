"""fsstgpu.datasets: generators are deterministic and say what they make; loaders read exactly."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import uuid
from datetime import datetime
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings, strategies as st

from fsstgpu.datasets import (
    DBTEXT_FILES,
    DEFAULT_ROWS,
    GENERATORS,
    generate,
    is_dataset_name,
    list_datasets,
    load,
    load_dbtext,
    load_ipc,
    load_lines,
    load_parquet,
    sample_path,
)
from fsstgpu.datasets.make_sample import build_table, write_sample
from fsstgpu.formats.selection import ColumnSelectionError, ColumnTypeError

NAMES = sorted(GENERATORS)


def digest(arr: pa.Array) -> str:
    """SHA-256 over type, nulls and every value's bytes, length-prefixed (layout-independent)."""
    h = hashlib.sha256(str(arr.type).encode())
    for value in arr.to_pylist():
        if value is None:
            h.update(b"N")
        else:
            data = value if isinstance(value, bytes) else value.encode()
            h.update(b"V" + len(data).to_bytes(8, "little") + data)
    return h.hexdigest()


def values_bytes(arr: pa.Array) -> list[bytes]:
    return [v if isinstance(v, bytes) else v.encode() for v in arr.to_pylist() if v is not None]


# ---------------------------------------------------------------------------------------------
# Generators: registry, determinism, sizes, types.


def test_registry_names():
    assert set(GENERATORS) == {
        "urls", "emails", "log_lines", "json_records", "uuids", "hex_ids", "person_names",
        "multilingual", "null_heavy", "long_strings", "binary",
    }
    # load() resolves names in order; no generator may shadow a dbtext file or the sample.
    assert not set(GENERATORS) & (set(DBTEXT_FILES) | {"sample"})


@pytest.mark.parametrize("name", NAMES)
def test_same_seed_same_bytes_other_seed_differs(name):
    a = generate(name, 300, seed=5)
    assert digest(a) == digest(generate(name, 300, seed=5))
    assert digest(a) != digest(generate(name, 300, seed=6))
    assert digest(generate(name, 300, seed=0)) != digest(generate(name, 300, seed=5))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("rows", [0, 1, 17, 500])
def test_sizes_and_types(name, rows):
    arr = generate(name, rows, seed=1)
    assert isinstance(arr, pa.Array)
    assert len(arr) == rows
    assert arr.type == (pa.binary() if name == "binary" else pa.string())
    arr.validate(full=True)  # offsets in bounds, and UTF-8 for string columns


# Digests of generate(name, 200, seed=0), pinned so that a change of NumPy, pyarrow, platform or
# code that alters the bytes is caught: "same (name, rows, seed) -> same bytes on every machine".
GOLDEN = {
    "binary": "d02e3db6b0ad70151b1f3fe6858537be6afa15307e536904d0e1159b06538db2",
    "emails": "6da8ca7e6a2b4171ad55a0c153b8a1735eaf7391158dd2ce74666d10fd87acb8",
    "hex_ids": "6140a228b549b2dd1467002ebe4958129e223dc4761e4b715d96734fcae6da84",
    "json_records": "a9646ee14a0f9e603e1d5c80af31faa685ecd92afb2ff639fce84744938a51aa",
    "log_lines": "bc359168bb4fc1f2d9d63842b20f17e560718cadb3d09432dfad7f006d03b6cc",
    "long_strings": "05b11ed092e186003ec2893f6fd3b0bae4f99e0a24d827e1770f3d2f785f69a7",
    "multilingual": "8dfcd913fbd7d91d7ef0474180bf99969f8feeb4efeb8e185276e2b09b811f4e",
    "null_heavy": "b0d6af107c8afad6873e799d2f08756d45adac7e5f2754f7ee272a4770c1291b",
    "person_names": "357c73f91f7e5622046752e483fbf48722c6a85d85ba05aa40e1fbbb963a337b",
    "urls": "a9e5d8a885ff27dc0bd502eaad2f9417b60106ec1af78a75a443f863f9c83643",
    "uuids": "d6704b56811c8c526aa2690c1d81effd5b3d40baff8709750b547e145a0f27a8",
}


@pytest.mark.parametrize("name", NAMES)
def test_golden_digests(name):
    assert digest(generate(name, 200, seed=0)) == GOLDEN[name]


def test_independent_of_python_hash_seed():
    code = ("from fsstgpu.datasets import generate; "
            "print(generate('person_names', 50, seed=3).to_pylist())")
    outputs = {
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                       env={**os.environ, "PYTHONHASHSEED": seed}).stdout
        for seed in ("1", "2")
    }
    assert len(outputs) == 1
    assert outputs.pop() == repr(generate("person_names", 50, seed=3).to_pylist()) + "\n"


def test_generate_rejects_bad_arguments():
    with pytest.raises(ValueError, match="unknown generator 'nope'"):
        generate("nope", 3)
    with pytest.raises(ValueError, match="rows"):
        generate("urls", -1)
    with pytest.raises(ValueError, match="rows"):
        generate("urls", True)
    with pytest.raises(ValueError, match="seed"):
        generate("urls", 3, seed=-1)
    with pytest.raises(ValueError, match="null_fraction"):
        generate("null_heavy", 3, null_fraction=1.5)
    with pytest.raises(ValueError, match="long_length"):
        generate("long_strings", 3, long_length=2**31)


@pytest.mark.parametrize("option, bad", [
    ("null_fraction", True), ("null_fraction", "0.5"), ("long_length", 1000.5),
    ("long_length", True), ("max_long", 2.5), ("max_long", True)])
def test_generator_options_of_the_wrong_type_are_refused(option, bad):
    # null_fraction=True made every row null, long_length=1000.5 was cut to 1000 and True
    # taken as 1, max_long=2.5 failed late inside NumPy as a slice index
    name = "null_heavy" if option == "null_fraction" else "long_strings"
    with pytest.raises(ValueError, match=f"{option}.* got .*{bad!r}"):
        generate(name, 100, **{option: bad})
    assert len(generate("long_strings", 40, long_length=np.int64(5000), max_long=np.int64(2))) == 40


# ---------------------------------------------------------------------------------------------
# Each generator makes what it says.


def test_urls():
    values = generate("urls", 2000).to_pylist()
    pattern = re.compile(r"^https?://[a-z0-9.]+\.[a-z]{2,}(\.[a-z]{2})?/[^\s]*$")
    assert all(pattern.match(v) for v in values)
    assert sum(v.startswith("https://") for v in values) > 1500
    assert any("?" in v for v in values) and any(v.startswith("https://www.") for v in values)
    assert len(set(values)) > 1900


def test_emails():
    values = generate("emails", 2000).to_pylist()
    pattern = re.compile(r"^[a-z0-9._]+@[a-z0-9]+(\.[a-z]+)+$")
    assert all(pattern.match(v) for v in values), [v for v in values if not pattern.match(v)][:5]
    assert sum(v.endswith("@gmail.com") for v in values) > 100


def test_log_lines():
    values = generate("log_lines", 3000, seed=2).to_pylist()
    pattern = re.compile(
        r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3})Z (INFO |WARN |DEBUG|ERROR) \[[a-z-]+\] .+$"
    )
    matches = [pattern.match(v) for v in values]
    assert all(matches)
    stamps = [datetime.fromisoformat(m.group(1)) for m in matches]  # valid calendar dates
    assert stamps == sorted(stamps)
    assert {m.group(2) for m in matches} == {"INFO ", "WARN ", "DEBUG", "ERROR"}


def test_log_line_dates_follow_the_calendar():
    # ~1 s per row on average: 400k rows cross day boundaries, compare each date with Python's.
    values = generate("log_lines", 400_000, seed=0)
    dates = {v[:23] for v in values.to_pylist()[::997]}
    for stamp in dates:
        assert datetime.fromisoformat(stamp).isoformat(timespec="milliseconds") == stamp
    assert len({d[:10] for d in dates}) >= 3


def test_json_records():
    records = [json.loads(v) for v in generate("json_records", 1000).to_pylist()]
    assert all(list(r) == ["id", "user", "active", "score", "tags", "address", "created"]
               for r in records)
    assert [r["id"] for r in records] == list(range(records[0]["id"], records[0]["id"] + 1000))
    assert any(r["address"] is None for r in records)
    assert any(r["address"] is not None for r in records)
    assert {len(r["tags"]) for r in records} == {0, 1, 2, 3}
    assert all(0 <= r["score"] < 100 for r in records)


def test_uuids():
    values = generate("uuids", 2000).to_pylist()
    parsed = [uuid.UUID(v) for v in values]
    assert all(u.version == 4 and u.variant == uuid.RFC_4122 for u in parsed)
    assert [str(u) for u in parsed] == values
    assert len(set(values)) == len(values)


def test_hex_ids():
    values = generate("hex_ids", 2000).to_pylist()
    digits = [v.removeprefix("0x") for v in values]
    assert all(re.fullmatch(r"[0-9a-f]+", d) for d in digits)
    assert {len(d) for d in digits} == {8, 16, 32, 40, 64}
    assert 200 < sum(v.startswith("0x") for v in values) < 600


def test_person_names():
    values = generate("person_names", 3000).to_pylist()
    assert all(" " in v and v == v.strip() for v in values)
    assert any(not v.isascii() for v in values)
    assert any(v.startswith("Dr. ") for v in values) and any("-" in v for v in values)


def test_multilingual_mixes_scripts_and_emoji():
    text = "".join(generate("multilingual", 3000).to_pylist())
    ranges = {
        "latin with accents": (0x00C0, 0x024F), "greek": (0x0370, 0x03FF),
        "cyrillic": (0x0400, 0x04FF), "arabic": (0x0600, 0x06FF), "cjk": (0x4E00, 0x9FFF),
        "kana": (0x3040, 0x30FF), "emoji": (0x1F300, 0x1FAFF),
    }
    for script, (low, high) in ranges.items():
        assert any(low <= ord(c) <= high for c in text), script
    assert {len(c.encode()) for c in text} == {1, 2, 3, 4}


def test_null_heavy():
    arr = generate("null_heavy", 1000)
    assert arr.null_count == 900
    assert generate("null_heavy", 999).null_count == 899
    assert generate("null_heavy", 50, null_fraction=0.0).null_count == 0
    assert generate("null_heavy", 50, null_fraction=1.0).null_count == 50
    assert all(v for v in arr.drop_null().to_pylist())
    # The null positions move with the seed (they are drawn, not a fixed pattern).
    other = generate("null_heavy", 1000, seed=1)
    assert arr.is_null().to_pylist() != other.is_null().to_pylist()


def test_long_strings():
    lengths = [len(v) for v in values_bytes(generate("long_strings", 16))]
    assert max(lengths) > 1_000_000
    small = [len(v) for v in values_bytes(generate("long_strings", 300, max_long=0))]
    assert max(small) < 4096 and min(small) == 0 and np.mean(small) > 200
    assert max(len(v) for v in values_bytes(generate("long_strings", 15))) < 4096
    custom = generate("long_strings", 100, long_length=10_000, max_long=2)
    assert sum(len(v) >= 10_000 for v in values_bytes(custom)) == 2


def test_binary_bytes():
    values = generate("binary", 2000).to_pylist()
    data = b"".join(values)
    assert set(data) == set(range(256))
    assert data.count(0) > 1000 and data.count(0xFF) > 1000
    assert any(v.startswith(b"\x89PNG\r\n\x1a\n") for v in values)
    assert b"" in values

    def utf8(v):
        try:
            v.decode()
            return True
        except UnicodeDecodeError:
            return False

    assert sum(not utf8(v) for v in values) > 500


# ---------------------------------------------------------------------------------------------
# Line files.


def lines_of(tmp_path, data: bytes, **kw):
    path = tmp_path / "lines.txt"
    path.write_bytes(data)
    return load_lines(path, **kw)


@pytest.mark.parametrize(("data", "expected"), [
    (b"", []),
    (b"\n", [""]),
    (b"\n\n", ["", ""]),
    (b"a", ["a"]),
    (b"a\n", ["a"]),
    (b"a\nb", ["a", "b"]),
    (b"\n\na\n\n", ["", "", "a", ""]),
    (b"a\r\nb\r\n", ["a\r", "b\r"]),
    (b"a\r\n\r\nb", ["a\r", "\r", "b"]),
    ("é\n日本\n🙂".encode(), ["é", "日本", "🙂"]),
])
def test_line_file_edge_cases(tmp_path, data, expected):
    arr = lines_of(tmp_path, data)
    assert arr.type == pa.string()
    assert arr.to_pylist() == expected


@pytest.mark.parametrize("data", [
    b"ok\n\xff\xfe\n",
    b"\xc3\n\xa9\n",  # a 2-byte sequence cut by the newline: invalid line by line
    b"a\x00b\nplain\n\x80",
])
def test_line_file_non_utf8_is_binary(tmp_path, data):
    arr = lines_of(tmp_path, data)
    assert arr.type == pa.binary()
    expected = data.split(b"\n")
    if data.endswith(b"\n"):
        expected.pop()
    assert arr.to_pylist() == expected


@pytest.mark.parametrize("data", [b"", b"a\r\nb", b"ok\n\xff\xfe\n", "é\n\n日本\n".encode()])
def test_line_file_as_binary(tmp_path, data):
    # binary=True: the same values as bytes, whatever they hold, for the benchmarks
    arr = lines_of(tmp_path, data, binary=True)
    assert arr.type == pa.binary()
    assert arr.to_pylist() == [v.encode() if isinstance(v, str) else v
                               for v in lines_of(tmp_path, data).to_pylist()]
    assert lines_of(tmp_path, data, binary=True, rows=1).to_pylist() == arr.to_pylist()[:1]


@pytest.mark.slow
def test_line_file_large(tmp_path):
    # About 10 s and 6 GB. Past 2**31 - 1 bytes the offsets are 64-bit (large_string); the
    # sparse file reads as zeros.
    path = tmp_path / "big.txt"
    with open(path, "wb") as f:
        f.truncate(2**31 + 2)
        f.seek(2**31 - 1)
        f.write(b"\n")
    arr = load_lines(path)
    assert arr.type == pa.large_string() and len(arr) == 2
    assert pa.compute.binary_length(arr).to_pylist() == [2**31 - 1, 2]


def test_line_file_rows(tmp_path):
    data = b"a\nbb\n\nccc\nd"
    assert lines_of(tmp_path, data, rows=0).to_pylist() == []
    assert lines_of(tmp_path, data, rows=3).to_pylist() == ["a", "bb", ""]
    assert lines_of(tmp_path, data, rows=99).to_pylist() == ["a", "bb", "", "ccc", "d"]
    # rows cuts before the invalid line, so the column stays a string column.
    assert lines_of(tmp_path, b"x\n\xff\n", rows=1).type == pa.string()
    with pytest.raises(ValueError, match="rows"):
        lines_of(tmp_path, data, rows=-1)


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.binary(max_size=12).map(lambda b: b.replace(b"\n", b"")), max_size=20),
       final_newline=st.booleans())
def test_line_file_roundtrip(tmp_path_factory, values, final_newline):
    data = b"\n".join(values) + (b"\n" if final_newline and values else b"")
    path = tmp_path_factory.mktemp("lines") / "x"
    path.write_bytes(data)
    arr = load_lines(path)
    # Without a final newline, a trailing empty value leaves data ending in "\n", which reads
    # back as the end of the previous line: that one empty value is not there.
    trailing_empty = not final_newline and values and values[-1] == b""
    expected = values[:-1] if trailing_empty else values
    assert values_bytes(arr) == expected
    assert len(arr) == len(expected)


# ---------------------------------------------------------------------------------------------
# Parquet and Arrow IPC.


@pytest.fixture
def table():
    return pa.table({
        "n": pa.array(range(30), pa.int64()),
        "s": pa.array([f"row{i}" for i in range(30)]),
        "big": pa.array([f"x{i}" for i in range(30)], pa.large_string()),
        "raw": pa.array([bytes([i, 0, 255]) for i in range(30)], pa.binary()),
        "dict": pa.array([["lo", "hi"][i % 2] for i in range(30)]).dictionary_encode(),
    })


def test_parquet_columns_and_rows(tmp_path, table):
    path = tmp_path / "t.parquet"
    pq.write_table(table, path, row_group_size=10)
    col = load_parquet(path)
    assert isinstance(col, pa.ChunkedArray)
    assert col.to_pylist() == table.column("s").to_pylist()
    assert load_parquet(path, column="big").type == pa.large_string()
    assert load_parquet(path, column="raw").to_pylist()[3] == b"\x03\x00\xff"
    decoded = load_parquet(path, column="dict")
    assert decoded.type == pa.string() and decoded.to_pylist()[:3] == ["lo", "hi", "lo"]
    for rows in (0, 5, 10, 25, 30, 99):
        assert load_parquet(path, rows=rows).to_pylist() == table.column("s").to_pylist()[:rows]


def test_dataset_names_are_what_load_resolves(tmp_path):
    for name in ["urls", "sample", "dbtext:uuid", "uuid"]:
        assert is_dataset_name(name)
    path = tmp_path / "x.txt"
    path.write_text("a\n")
    assert not is_dataset_name(str(path)) and not is_dataset_name(path)
    assert load(str(path)).to_pylist() == ["a"]


def test_parquet_column_errors(tmp_path, table):
    path = tmp_path / "t.parquet"
    pq.write_table(table, path)
    with pytest.raises(ColumnSelectionError, match="no column 'zz'.*string columns: s"):
        load_parquet(path, column="zz")
    with pytest.raises(ColumnTypeError, match="'n'.*int64.*string columns: s"):
        load_parquet(path, column="n")
    only_ints = tmp_path / "ints.parquet"
    pq.write_table(pa.table({"a": [1], "b": [2.0]}), only_ints)
    with pytest.raises(TypeError, match="no string or binary column"):
        load_parquet(only_ints)


@pytest.mark.parametrize(("suffix", "fmt"), [
    (".arrow", "file"), (".feather", "file"), (".ipc", "file"), (".arrows", "stream"),
    (".arrow", "stream"),  # .arrow is also used for streams: load falls back to the stream reader
])
def test_ipc_formats_through_load(tmp_path, table, suffix, fmt):
    path = tmp_path / f"t{suffix}"
    batches = table.to_batches(max_chunksize=7)
    open_writer = pa.ipc.new_file if fmt == "file" else pa.ipc.new_stream
    with open_writer(path, table.schema) as writer:
        for batch in batches:
            writer.write_batch(batch)
    col = load(path)
    assert isinstance(col, pa.ChunkedArray) and col.num_chunks == len(batches)
    assert col.to_pylist() == table.column("s").to_pylist()
    assert load(path, column="raw", rows=12).to_pylist() == table.column("raw").to_pylist()[:12]
    assert load(str(path), column="dict").type == pa.string()


def test_ipc_explicit_format(tmp_path, table):
    path = tmp_path / "t.arrow"
    feather.write_feather(table, path)
    assert load_ipc(path, stream=False).to_pylist() == table.column("s").to_pylist()
    with pytest.raises(pa.ArrowInvalid):
        load_ipc(path, stream=True)


# ---------------------------------------------------------------------------------------------
# load() dispatch and list_datasets().


def test_load_generator_names():
    assert len(load("uuids")) == DEFAULT_ROWS
    assert load("emails", rows=40, seed=9).equals(generate("emails", 40, seed=9))
    with pytest.raises(ValueError, match="column="):
        load("urls", rows=3, column="x")


def test_load_paths(tmp_path, monkeypatch, table):
    monkeypatch.chdir(tmp_path)
    Path("urls").write_bytes(b"not\ngenerated\n")
    assert load("./urls").to_pylist() == ["not", "generated"]
    assert load(Path("urls")).to_pylist() == ["not", "generated"]
    pq.write_table(table, "t.parquet")
    assert load("t.parquet", column="s", rows=2).to_pylist() == ["row0", "row1"]
    with pytest.raises(FileNotFoundError, match="no such file: 'missing.txt'.*dataset name"):
        load("missing.txt")
    with pytest.raises(ValueError, match="column="):
        load("./urls", column="s")


def test_load_dbtext_without_corpus(tmp_path, monkeypatch):
    monkeypatch.setenv("FSSTGPU_DBTEXT", str(tmp_path / "absent"))
    with pytest.raises(FileNotFoundError, match="dbtext corpus not found.*FSSTGPU_DBTEXT"):
        load("uuid")
    with pytest.raises(FileNotFoundError, match="dbtext corpus not found"):
        load("dbtext:urls2")
    monkeypatch.setenv("FSSTGPU_DBTEXT", str(tmp_path))
    (tmp_path / "uuid").write_bytes(b"u1\nu2\n")
    assert load("uuid").to_pylist() == ["u1", "u2"]
    assert load("dbtext:uuid", rows=1).to_pylist() == ["u1"]
    with pytest.raises(FileNotFoundError, match="no dbtext file 'hex' in"):
        load("dbtext:hex")
    with pytest.raises(ValueError, match="bare file name"):
        load_dbtext("../uuid")


def test_dbtext_corpus_loads(dbtext_paths):
    for path in dbtext_paths:
        arr = load(f"dbtext:{path.name}")
        raw = path.read_bytes()
        expected = raw.split(b"\n")
        if raw.endswith(b"\n"):
            expected.pop()
        assert len(arr) == len(expected), path.name
        assert values_bytes(arr)[:50] == expected[:50]
        assert sum(map(len, values_bytes(arr))) == len(raw) - raw.count(b"\n")


def test_list_datasets():
    entries = list_datasets()
    assert all({"name", "kind", "description", "available"} <= set(e) for e in entries)
    by_name = {e["name"]: e for e in entries}
    for name in GENERATORS:
        assert by_name[name]["kind"] == "generator" and by_name[name]["description"]
    assert by_name["sample"]["kind"] == "sample" and by_name["sample"]["available"]
    assert {f"dbtext:{n}" for n in DBTEXT_FILES} <= set(by_name)
    assert all(e["description"] for e in entries)


# ---------------------------------------------------------------------------------------------
# The bundled sample file.


def test_sample_file():
    path = sample_path()
    assert path.is_file() and path.stat().st_size <= 1_100_000
    parquet = pq.ParquetFile(path)
    assert parquet.num_row_groups == 3
    assert parquet.schema_arrow.names == [
        "id", "url", "email", "log_line", "json_record", "name", "comment",
    ]
    table = parquet.read()
    assert table.column("id").type == pa.int64()
    assert 0 < table.column("comment").null_count < table.num_rows
    assert table.equals(build_table())
    assert load("sample").to_pylist() == table.column("url").to_pylist()


def test_sample_regenerates_byte_for_byte(tmp_path):
    out = write_sample(tmp_path / "sample.parquet")
    bundled = pq.ParquetFile(sample_path()).metadata.created_by
    if pq.ParquetFile(out).metadata.created_by == bundled:
        assert out.read_bytes() == sample_path().read_bytes()
    else:  # another pyarrow writes other bytes; the data must still be the same
        assert pq.read_table(out).equals(pq.read_table(sample_path()))


# ---------------------------------------------------------------------------------------------
# Every generator through the shared codec round-trip check (fsstgpu.testing, from the codec).


@pytest.mark.parametrize("name", NAMES)
def test_generators_roundtrip_through_codec(name):
    from fsstgpu.testing import check_roundtrip

    rows = 16 if name == "long_strings" else 300  # 16 rows hold one string over 1 MiB
    check_roundtrip(generate(name, rows, seed=11))


def test_sample_columns_roundtrip_through_codec():
    from fsstgpu.testing import check_roundtrip

    for column in ("comment", "log_line"):  # ChunkedArray input, with and without nulls
        check_roundtrip(load("sample", column=column, rows=1500))


@pytest.mark.parametrize("module", ["loaders", "generators"])
def test_docstring_examples_run(module):
    import doctest
    import importlib

    result = doctest.testmod(importlib.import_module(f"fsstgpu.datasets.{module}"))
    assert result.failed == 0 and result.attempted > 0


def test_dataset_descriptions_are_plain_text():
    """``datasets list`` printed the generators' reST quotes (``round(...)``)."""
    entries = list_datasets()
    assert entries and not any("``" in e["description"] for e in entries)
