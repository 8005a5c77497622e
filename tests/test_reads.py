"""Issue #23, item 3: reads like pyarrow's: columns=, filters= (row groups pruned by the
bounds of each fsst column's strings), row_groups=, and a streaming reader of decoded batches
that polars and DuckDB consume."""

from __future__ import annotations

import base64
import decimal
import json
import os
import sys
import zlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import fsstgpu.formats.file_reads as file_reads
import fsstgpu.formats.pruning as pruning_module
from fsstgpu import CorruptDataError
from fsstgpu.datasets.generators import generate
from fsstgpu.formats import compress_file, decompress_file, open_reader, read_table
from fsstgpu.formats.chunk_record import CHUNKS_KEY
from fsstgpu.formats.parquet_parts import MAGIC
from fsstgpu.formats.pruning import (
    STATS_CRC_KEY,
    STRING_STATS_KEY,
    bounds_of,
    may_match,
    normalized_filters,
    stats_footer,
)
from fsstgpu.formats.selection import ColumnSelectionError
from fsstgpu.formats.thrift_compact import dumps, loads

sys.path.insert(0, str(Path(__file__).parent))
from seeds import fresh_seed  # noqa: E402

ROWS, PER_GROUP = 4000, 1000


def _table() -> pa.Table:
    # sorted strings: each row group holds one range of them, so bounds prune
    keys = pa.array(sorted(f"key-{i:05d}" for i in range(ROWS)))
    return pa.table({"k": keys, "url": generate("urls", ROWS, 3), "n": pa.array(range(ROWS))})


@pytest.fixture(scope="module")
def compressed(tmp_path_factory):
    d = tmp_path_factory.mktemp("reads")
    pq.write_table(_table(), d / "in.parquet", row_group_size=PER_GROUP)
    compress_file(d / "in.parquet", d / "c.parquet")
    compress_file(d / "in.parquet", d / "c.arrow")
    return d


def _read_groups(monkeypatch):
    """The row groups the reads ask for (of parallel_units, or in runs of run_units), each
    read's list."""
    seen = []
    real, real_runs = file_reads.parallel_units, file_reads.run_units

    def spying(source, **kwargs):
        units = kwargs.get("units")
        seen.append(list(range(source.num_units)) if units is None else units)
        return real(source, **kwargs)

    def spying_runs(source, runs, *args):
        seen.append([k for run in runs for k in run])
        return real_runs(source, runs, *args)

    monkeypatch.setattr(file_reads, "parallel_units", spying)
    monkeypatch.setattr(file_reads, "run_units", spying_runs)
    return seen


@pytest.mark.parametrize("filters,groups", [
    ([("k", "==", "key-01500")], [1]),
    ([("k", ">=", "key-02000")], [2, 3]),
    ([("k", "<", "key-01000")], [0]),
    ([("k", "in", ["key-00001", "key-03999"])], [0, 3]),
    ([[("k", "<", "key-00500")], [("n", ">=", 3500)]], [0, 3]),  # either
    ([("k", ">", "zzz")], []),
    ([("k", "!=", "key-00001")], [0, 1, 2, 3]),  # prunes nothing: every unit, in order
])
def test_filters_prune_row_groups_by_the_strings_bounds(compressed, monkeypatch, filters, groups):
    seen = _read_groups(monkeypatch)
    got = read_table(compressed / "c.parquet", device="cpu", filters=filters)
    assert seen == [groups]
    expected = _table().filter(pq.filters_to_expression(filters))
    assert got.equals(expected)


def test_a_row_group_of_nulls_is_kept_where_pyarrow_selects_its_nulls(tmp_path):
    # `not in` is pyarrow's ~is_in, under which a null is not in a list without null: a row
    # group of nulls only was pruned (no bounds: "a comparison with null holds for no row"),
    # so its rows went missing from the result; likewise `in` with a null in the list
    strings = pa.array(["a", "b", None, None, "c", None], pa.string())
    table = pa.table({"s": strings, "i": pa.array([1, 2, None, None, 3, None], pa.int64()),
                      "n": pa.array(range(6))})
    pq.write_table(table, tmp_path / "p.parquet", row_group_size=2)
    compress_file(tmp_path / "p.parquet", tmp_path / "c.parquet")
    for filters in ([("s", "not in", ["a"])], [("s", "in", [None, "c"])],
                    [("s", "not in", [None, "a"])], [("s", "in", ["a"])], [("s", "!=", "a")],
                    [("s", "==", "c")], [("i", "not in", [1])], [("i", "in", [None])]):
        want = pq.read_table(tmp_path / "p.parquet", filters=filters)
        got = read_table(tmp_path / "c.parquet", filters=filters, device="cpu")
        assert got.column("n").to_pylist() == want.column("n").to_pylist(), filters


def test_numbers_prune_as_pyarrow_compares_them(tmp_path):
    # pyarrow compares a decimal or an int with a float as doubles; the bounds compared them
    # exactly (Decimal("0.10") < 0.1), so ("d", "==", 0.1) pruned the row groups holding 0.10
    table = pa.table({
        "n": pa.array(range(4)),
        "d": pa.array([decimal.Decimal(x) for x in ("0.10", "0.10", "0.30", "0.50")],
                      pa.decimal128(5, 2)),
        "f": pa.array([0.5, 1.5, 2.5, 3.0]),
        "i": pa.array([1, 2, 3, 4], pa.int8()),
    })
    pq.write_table(table, tmp_path / "p.parquet", row_group_size=1)
    compress_file(tmp_path / "p.parquet", tmp_path / "c.parquet")
    for filters in ([("d", "==", 0.1)], [("d", "in", [0.1, 0.5])], [("d", ">=", 0.3)],
                    [("d", "<=", 0.1)], [("d", "==", decimal.Decimal("0.1"))],
                    [("f", "==", decimal.Decimal("1.5"))], [("i", ">", 2.5)],
                    [("i", "in", [2.0, 300])]):
        want = pq.read_table(tmp_path / "p.parquet", filters=filters)
        got = read_table(tmp_path / "c.parquet", filters=filters, device="cpu")
        assert got.column("n").to_pylist() == want.column("n").to_pylist(), filters
    # a list mixing numbers and others is not ordered against the bounds (it raised
    # ValueError, converting "a" to a float); pyarrow refuses it as it would
    assert may_match([("i", "in", ["a", 1.0])], {"i": (1, 4)})


def _random_strings(rng, n: int, binary: bool) -> pa.Array:
    parts = ["", "a", "b", "ab", "\u00e9", "\x00", "z", "\U0001F600"]
    values = ["".join(rng.choice(parts, int(rng.integers(0, 4)))) for _ in range(n)]
    values = [None if rng.random() < 0.2 else v for v in values]
    if rng.random() < 0.3:
        values.sort(key=lambda v: (v is None, v or ""))
    if binary:
        return pa.array([None if v is None else v.encode() for v in values], pa.binary())
    return pa.array(values, pa.large_string() if rng.random() < 0.3 else pa.string())


def test_filtered_reads_equal_pyarrows_on_random_tables(tmp_path):
    """Pruning may only skip row groups no selected row is in: the rows a filtered read
    gives are pyarrow's, on random strings (nulls, empty strings, row groups of nulls only,
    sorted or not) and random filters (seed from os.urandom, named on failure)."""
    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    for case in range(40):
        n = int(rng.integers(1, 40))
        binary = bool(rng.random() < 0.3)
        strings = _random_strings(rng, n, binary)
        pq.write_table(pa.table({"s": strings, "n": pa.array(range(n))}),
                       tmp_path / "p.parquet", row_group_size=int(rng.integers(1, 8)))
        compress_file(tmp_path / "p.parquet", tmp_path / "c.parquet", force=True)
        present = [v for v in strings.to_pylist() if v is not None] or [b"" if binary else ""]
        value = present[int(rng.integers(len(present)))]
        if rng.random() < 0.4:  # a value not in the column
            value = value + (b"\x01" if binary else "\u00ff")
        op = str(rng.choice(["==", "!=", "<", "<=", ">", ">=", "in", "not in"]))
        if op in ("in", "not in"):
            value = [value] + ([None] if rng.random() < 0.3 else [])
        filters = [("s", op, value)]
        want = pq.read_table(tmp_path / "p.parquet", filters=filters)
        got = read_table(tmp_path / "c.parquet", filters=filters, device="cpu")
        assert got.column("n").to_pylist() == want.column("n").to_pylist(), (seed, case,
                                                                              filters)


def test_no_columns_reads_the_rows_as_pyarrow_does(compressed):
    # pq.read_table(f, columns=[]).num_rows counts a file's rows; fsstgpu's gave 0 rows
    # (pyarrow's concat_tables drops the rows of tables without columns)
    plain = compressed / "in.parquet"
    for path in (compressed / "c.parquet", compressed / "c.arrow"):
        assert read_table(path, columns=[], device="cpu").num_rows == ROWS
        assert read_table(path, columns=[], row_groups=[3, 1], device="cpu").num_rows == (
            2 * PER_GROUP)
        assert open_reader(path, columns=[]).read_all().num_rows == ROWS
    for filters in ([("k", ">=", "key-02500")], pc.field("n") < 10):
        want = pq.read_table(plain, columns=[], filters=filters)
        got = read_table(compressed / "c.parquet", columns=[], filters=filters, device="cpu")
        assert got.num_rows == want.num_rows > 0 and got.num_columns == 0, filters


@pytest.mark.parametrize("dotted_first", [True, False])
def test_a_dotted_name_is_its_column_not_a_struct_child(tmp_path, dotted_first):
    # a column "a.b" beside a struct "a" with a child "b": pruning took the child's
    # statistics for the column's (no rows for == 2), and pyarrow's read_row_group(columns=)
    # read the struct too, or instead
    columns = {"a.b": pa.array([1, 2, 3]), "a": pa.array([{"b": 100}, {"b": 200}, {"b": 300}]),
               "s": pa.array(["x", "y", "z"])}
    order = ["a.b", "a", "s"] if dotted_first else ["a", "a.b", "s"]
    table = pa.table({name: columns[name] for name in order})
    pq.write_table(table, tmp_path / "in.parquet", row_group_size=1)
    compress_file(tmp_path / "in.parquet", tmp_path / "c.parquet")
    for path in (tmp_path / "in.parquet", tmp_path / "c.parquet"):
        for kwargs in (dict(filters=[("a.b", "==", 2)]), dict(filters=[("a.b", "<", 5)]),
                       dict(columns=["a.b"]), dict(columns=["s", "a.b"]),
                       dict(columns=["a.b"], filters=[("s", "==", "z")])):
            want = pq.read_table(tmp_path / "in.parquet", **kwargs)
            assert read_table(path, device="cpu", **kwargs).equals(want), (path.name, kwargs)


def test_columns_filters_and_row_groups_together(compressed):
    t = read_table(compressed / "c.parquet", device="cpu", columns=["url", "n"],
                   filters=[("k", ">=", "key-03990")], row_groups=[3, 0])
    assert t.schema.names == ["url", "n"]
    assert t.column("n").to_pylist() == list(range(3990, 4000))
    t = read_table(compressed / "c.parquet", device="cpu", row_groups=[2, 0], columns="n")
    assert t.column("n").to_pylist() == list(range(2000, 3000)) + list(range(1000))
    # an IPC file: row_groups are its record batches; filters filter (no bounds to prune by)
    t = read_table(compressed / "c.arrow", device="cpu", row_groups=[1],
                   filters=pc.field("k") == "key-01001")
    assert t.column("n").to_pylist() == [1001]


def test_read_errors(compressed):
    with pytest.raises(ColumnSelectionError, match="no column named 'nope'"):
        read_table(compressed / "c.parquet", device="cpu", columns=["nope"])
    with pytest.raises(ColumnSelectionError, match="no column named 'x'"):
        read_table(compressed / "c.parquet", device="cpu", filters=[("x", "==", 1)])
    with pytest.raises(ValueError, match="no row group 9"):
        read_table(compressed / "c.parquet", device="cpu", row_groups=[9])
    with pytest.raises(ValueError, match="not a .column, op, value. term"):
        read_table(compressed / "c.parquet", device="cpu", filters=[("k", "~", "a")])


@pytest.mark.parametrize("columns", [5, True, b"n"])
def test_columns_that_are_no_names_are_named(compressed, columns):
    # list(columns) failed as "'int' object is not iterable", and b"n" was the column 110
    with pytest.raises(TypeError, match="columns must be a str or a sequence of str, not"):
        read_table(compressed / "c.parquet", device="cpu", columns=columns)
    with pytest.raises(TypeError, match="columns must be a str or a sequence of str, not"):
        open_reader(compressed / "c.arrow", columns=columns)


@pytest.mark.parametrize("row_groups", ["12", [1.5], [True], ["1"], 1])
def test_row_groups_must_be_a_sequence_of_integers(compressed, row_groups):
    # int(k) read row_groups="12" as row groups 1 and 2, [1.5] and [True] as row group 1
    for read in (lambda **kw: read_table(compressed / "c.parquet", device="cpu", **kw),
                 lambda **kw: open_reader(compressed / "c.arrow", **kw)):
        with pytest.raises(TypeError, match="row_groups must be a sequence of integers"):
            read(row_groups=row_groups)
    t = read_table(compressed / "c.parquet", device="cpu", row_groups=np.array([2, 0]))
    assert t.column("n").to_pylist() == list(range(2000, 3000)) + list(range(1000))
    assert read_table(compressed / "c.parquet", device="cpu",
                      row_groups=[np.int64(1)]).num_rows == PER_GROUP


@pytest.mark.parametrize("suffix", ["parquet", "arrow"])
def test_repeated_column_names_are_refused_by_name(tmp_path, suffix):
    # Arrow and Parquet allow two columns of one name; every call raised a bare KeyError
    table = pa.Table.from_arrays([pa.array(["a", "b"]), pa.array([1, 2])], names=["s", "s"])
    path = tmp_path / f"in.{suffix}"
    if suffix == "parquet":
        pq.write_table(table, path)
    else:
        with pa.ipc.new_file(path, table.schema) as writer:
            writer.write_table(table)
    for call in (lambda: read_table(path, device="cpu"), lambda: open_reader(path),
                 lambda: compress_file(path, tmp_path / "out.parquet")):
        with pytest.raises(ValueError, match=r"in\.\w+: column name 's' is used by more"):
            call()
    assert not (tmp_path / "out.parquet").exists()


@pytest.mark.parametrize("name", ["url", "n"])
def test_a_damaged_page_is_named_by_file_row_group_and_column(compressed, tmp_path, name):
    """A flipped byte in a column chunk's first data page (an fsst column's codes, a plain
    column): the error names the file, the row group and the column."""
    md = pq.ParquetFile(compressed / "c.parquet").metadata
    chunk = next(md.row_group(2).column(i) for i in range(md.num_columns)
                 if md.row_group(2).column(i).path_in_schema.split(".")[0] == name)
    data = bytearray((compressed / "c.parquet").read_bytes())
    data[chunk.data_page_offset + chunk.total_compressed_size // 2] ^= 0x10
    (tmp_path / "bad.parquet").write_bytes(bytes(data))
    with pytest.raises(CorruptDataError, match=f"bad.parquet: row group 2, column '{name}': "):
        read_table(tmp_path / "bad.parquet", device="cpu")


def test_damaged_bounds_are_an_error_not_a_wrong_answer(compressed, tmp_path):
    table = pq.read_table(compressed / "c.parquet")
    md = pq.ParquetFile(compressed / "c.parquet").metadata.metadata
    record = json.loads(md[STRING_STATS_KEY])
    record["columns"]["k"][1][0] = record["columns"]["k"][3][0]  # row group 1 "starts later"
    bad = dict(md)
    bad[STRING_STATS_KEY] = json.dumps(record).encode()
    with pq.ParquetWriter(tmp_path / "bad.parquet", table.schema) as w:
        w.write_table(table, row_group_size=PER_GROUP)
        w.add_key_value_metadata({STRING_STATS_KEY: bad[STRING_STATS_KEY]})
    with pytest.raises(CorruptDataError, match="CRC32 mismatch"):
        read_table(tmp_path / "bad.parquet", device="cpu", filters=[("k", "==", "key-01500")])


def test_a_footer_that_pyarrow_throws_on_is_an_error_for_a_filtered_read(compressed, tmp_path):
    """Row group 2's entry for column "n" with a definition-level histogram of the wrong
    length: a filtered read pruned on "n"'s statistics and pyarrow's RowGroupMetaData.column()
    threw its C++ exception through Python, aborting the process (a helper's fuzzing); the
    chunk's metadata is now checked by pyarrow's reader first. (In a process of its own: the
    abort would take the test run with it.)"""
    import subprocess
    import sys

    from fsstgpu.formats.parquet_parts import MAGIC
    from fsstgpu.formats.thrift_compact import dumps, loads

    data = (compressed / "c.parquet").read_bytes()
    size = int.from_bytes(data[-8:-4], "little")  # the whole footer read (statistics too)
    body, meta = data[4 : len(data) - 8 - size], loads(data[len(data) - 8 - size : -8])
    n = next(j for j, name in enumerate(pq.ParquetFile(compressed / "c.parquet").schema.names)
             if name == "n")
    histogram = meta.get(4).items[2].get(1).items[n].get(3).get(16).get(3)
    histogram.items.append(0)  # (one level more than the column has)
    footer = dumps(meta)
    (tmp_path / "bad.parquet").write_bytes(
        bytes(MAGIC) + bytes(body) + footer + len(footer).to_bytes(4, "little") + bytes(MAGIC))
    script = ("import sys\nfrom fsstgpu import CorruptDataError\n"
              "from fsstgpu.formats import read_table\n"
              "try:\n    read_table(sys.argv[1], device='cpu', filters=[('n', '>=', 2500)])\n"
              "except CorruptDataError as exc:\n    print('refused:', exc)\n")
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "bad.parquet")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stdout.startswith("refused:") and "row group 2" in done.stdout, done.stdout


def _forged_string_chunk(tmp_path, forge) -> str:
    """A plain Parquet file of two row groups of a string column "s", ``forge(column_meta)``
    applied to row group 1's chunk entry (the whole footer read: statistics too)."""
    pq.write_table(pa.table({"s": ["apple", "kiwi", "pear", "plum"]}), tmp_path / "p.parquet",
                   row_group_size=2)
    data = (tmp_path / "p.parquet").read_bytes()
    size = int.from_bytes(data[-8:-4], "little")
    body, meta = data[4 : len(data) - 8 - size], loads(data[len(data) - 8 - size : -8])
    forge(meta.get(4).items[1].get(1).items[0].get(3))  # row group 1, leaf "s": ColumnMetaData
    footer = dumps(meta)
    (tmp_path / "bad.parquet").write_bytes(
        bytes(MAGIC) + bytes(body) + footer + len(footer).to_bytes(4, "little") + bytes(MAGIC))
    return str(tmp_path / "bad.parquet")


def test_a_chunk_typed_otherwise_in_the_footer_is_an_error_for_a_filtered_read(tmp_path):
    """A footer naming a string chunk BOOLEAN (one forged integer): pyarrow's reader read it
    all the same, and its statistics, which pruning reads, threw C++ through Python: the
    process aborted (a helper's fuzzing). (In a process of its own, as above.)"""
    import subprocess
    import sys

    bad = _forged_string_chunk(tmp_path, lambda cm: cm.set(1, 0))  # type: BOOLEAN
    script = ("import sys\nfrom fsstgpu import CorruptDataError\n"
              "from fsstgpu.formats import read_table\n"
              "try:\n    read_table(sys.argv[1], device='cpu', filters=[('s', '<', 'b')])\n"
              "except CorruptDataError as exc:\n    print('refused:', exc)\n")
    done = subprocess.run([sys.executable, "-c", script, bad], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-500:]
    assert done.stdout.startswith("refused:") and "row group 1" in done.stdout, done.stdout


def test_string_statistics_that_are_not_utf8_prune_nothing(tmp_path):
    """A flipped byte made a string column's maximum invalid UTF-8: pyarrow's decode of it
    raised UnicodeDecodeError out of a filtered read; such a bound bounds nothing now."""
    bad = _forged_string_chunk(tmp_path, lambda cm: cm.get(12).set(5, b"\xffz"))  # max_value
    got = read_table(bad, device="cpu", filters=[("s", ">", "p")])
    assert got.column("s").to_pylist() == ["pear", "plum"]


@pytest.mark.parametrize("compress", [False, True])
def test_timestamps_past_year_9999_prune_nothing(tmp_path, compress):
    """A timestamp past datetime's year 9999 (valid Arrow and Parquet; or a flipped byte in
    the statistics of an fsstgpu file's timestamp column, found fuzzing) made pyarrow's
    statistics raise OverflowError out of a filtered read. Such a bound bounds nothing."""
    import datetime

    path = tmp_path / "ts.parquet"
    pq.write_table(pa.table({"ts": pa.array([0, 2**62], pa.timestamp("us")),
                             "s": ["a", "b"]}), path)
    if compress:
        compress_file(path, tmp_path / "c.parquet")
        path = tmp_path / "c.parquet"
    got = read_table(path, device="cpu", filters=[("ts", ">", datetime.datetime(2026, 1, 1))])
    assert got.column("s").to_pylist() == ["b"]


def test_a_plain_columns_statistics_altered_skip_no_rows(compressed, tmp_path):
    """A byte of row group 1's maximum of "n" changed (1999 -> 1023; Parquet's statistics
    carry no checksum): a filtered read pruned on it and silently lost the row group's
    matching rows (a helper's fuzzing). The values decide where the statistics alone would
    skip a row group."""
    import struct

    data = bytearray((compressed / "c.parquet").read_bytes())
    at = data.rfind(struct.pack("<q", 1999))
    assert at > 0
    data[at:at + 8] = struct.pack("<q", 1023)
    (tmp_path / "bad.parquet").write_bytes(bytes(data))
    filters = [("n", ">=", 1500)]
    want = read_table(compressed / "c.parquet", device="cpu", filters=filters)
    assert want.num_rows == 2500
    assert read_table(tmp_path / "bad.parquet", device="cpu", filters=filters).equals(want)


def _values_reads(monkeypatch) -> list:
    """The row groups whose plain columns' values a filtered read looked at."""
    seen, real = [], pruning_module._values_bounds

    def spying(source, k, names):
        seen.append(k)
        return real(source, k, names)

    monkeypatch.setattr(pruning_module, "_values_bounds", spying)
    return seen


def test_fsstgpus_own_statistics_are_trusted_without_reading_values(compressed, tmp_path,
                                                                    monkeypatch):
    """fsstgpu's output records CRCs of its row groups' statistics: a filter on a plain
    column prunes on them without reading the values of the row groups it skips (the values
    check cost a read of each; session 65 measured 22.3 -> 40.8 ms). Another writer's file,
    and a record damaged or of another pyarrow, leave the values to decide."""
    filters = [("n", ">=", 3500)]
    seen = _values_reads(monkeypatch)
    got = read_table(compressed / "c.parquet", device="cpu", filters=filters)
    assert got.column("n").to_pylist() == list(range(3500, ROWS))
    assert seen == []
    # pyarrow's own file of the same table: no record, the values of three row groups read
    plain = tmp_path / "plain.parquet"
    pq.write_table(_table(), plain, row_group_size=PER_GROUP)
    assert read_table(plain, device="cpu", filters=filters).equals(pq.read_table(
        plain, filters=filters))
    assert seen == [0, 1, 2]
    # the record changed (its CRC recomputed: another pyarrow's, or not this file's)
    meta = pq.read_metadata(compressed / "c.parquet").metadata
    record = json.loads(meta[STATS_CRC_KEY])
    for change in ("pyarrow", "digest"):
        body = dict(record["body"])
        if change == "pyarrow":
            body["pyarrow"] += 1
        else:  # row group 0's CRC of n's statistics
            rg = pq.read_metadata(compressed / "c.parquet").row_group(0)
            j = [rg.column(i).path_in_schema for i in range(rg.num_columns)].index("n")
            raw = bytearray(base64.b64decode(body["row_groups"][0]))
            raw[4 * j] ^= 1
            body["row_groups"] = [base64.b64encode(bytes(raw)).decode(),
                                  *body["row_groups"][1:]]
        canonical = json.dumps(body, sort_keys=True, separators=(",", ":")).encode()
        forged = json.dumps({"crc32": zlib.crc32(canonical), "body": body}, sort_keys=True,
                            separators=(",", ":")).encode()
        table = pq.read_table(compressed / "c.parquet")
        path = tmp_path / f"{change}.parquet"
        # (the chunk record is this file's alone: another file's would be refused)
        kept = {k: v for k, v in meta.items() if k != CHUNKS_KEY}
        pq.write_table(table.replace_schema_metadata({**kept, STATS_CRC_KEY: forged}), path,
                       row_group_size=PER_GROUP)
        del seen[:]
        assert read_table(path, device="cpu", filters=filters).equals(got)
        assert seen, change


def test_a_decompressed_outputs_statistics_are_vouched_for_too(compressed, tmp_path,
                                                               monkeypatch):
    """files.md: every Parquet output of fsstgpu records its statistics' CRCs, decompress_file's
    plain output too (it lacked the record, so a filtered read of it read the values of every
    row group its statistics skipped)."""
    decompress_file(compressed / "c.parquet", tmp_path / "d.parquet", device="cpu")
    assert STATS_CRC_KEY in pq.read_metadata(tmp_path / "d.parquet").metadata
    seen = _values_reads(monkeypatch)
    got = read_table(tmp_path / "d.parquet", device="cpu", filters=[("n", ">=", 3500)])
    assert got.column("n").to_pylist() == list(range(3500, ROWS))
    assert seen == []


def test_bounds_are_cut_and_still_bound():
    long = "a" * 100 + "z"
    least, greatest = bounds_of(pa.array([long, "b", None]))
    assert least == b"a" * 64 and greatest == b"b"
    least, greatest = bounds_of(pa.array(["\xff" * 3, "x" * 70], pa.string()))
    assert greatest == "\xff".encode() * 3 and least == b"x" * 64
    assert bounds_of(pa.array([b"\xff" * 70], pa.binary()))[1] is None  # no prefix bounds it
    assert bounds_of(pa.array([None, None], pa.string())) is None
    b = {"s": bounds_of(pa.array(["m" * 80]))}
    assert may_match([("s", "==", "m" * 80)], b) and may_match([("s", ">", "m" * 79)], b)
    assert not may_match([("s", "==", "n")], b) and not may_match([("s", "==", "x")],
                                                                    {"s": None})
    footer = stats_footer({"s": [b["s"], None]})
    assert json.loads(footer)["columns"]["s"][1] is None
    assert normalized_filters([("s", "==", 1)]) == [[("s", "==", 1)]]


def test_streaming_reader(compressed):
    reader = open_reader(compressed / "c.parquet", columns=["k", "n"],
                         filters=[("n", ">=", 2500)])
    assert isinstance(reader, pa.RecordBatchReader)
    assert reader.schema.names == ["k", "n"] and reader.schema.field("k").type == pa.string()
    batches = list(reader)
    assert sum(b.num_rows for b in batches) == 1500
    assert pa.Table.from_batches(batches).equals(
        _table().select(["k", "n"]).filter(pc.field("n") >= 2500))


@pytest.mark.parametrize("suffix", ["parquet", "arrow", "arrows"])
def test_the_reader_yields_a_batch_per_unit_empty_ones_too(tmp_path, suffix):
    # open_reader streams "one row group (record batch) at a time": a unit of no rows was
    # dropped (to_batches() drops empty chunks), so read_all() lost the chunks read_table keeps
    t = pa.table({"s": ["ab", "cd", None, "ef", "gh", "ij"], "n": [1, 2, 3, 4, 5, 6]},
                 metadata={b"k": b"v"})
    with pq.ParquetWriter(tmp_path / "p.parquet", t.schema) as writer:
        for start, rows in [(0, 2), (2, 0), (2, 4), (6, 0)]:
            writer.write_table(t.slice(start, rows))
    out = tmp_path / f"c.{suffix}"
    compress_file(tmp_path / "p.parquet", out)
    assert [b.num_rows for b in open_reader(out)] == [2, 0, 4, 0]
    for kwargs in [{}, {"columns": ["n"]}, {"filters": [("n", ">", 2)]},
                   {"filters": pc.field("s") == "zz"}]:
        got, want = open_reader(out, **kwargs).read_all(), read_table(out, "cpu", **kwargs)
        assert got.equals(want) and got.schema.metadata == {b"k": b"v"}, kwargs
        if "filters" not in kwargs:  # (read_table's filtered runs of row groups may join them)
            assert [len(c) for c in got.column(0).chunks] == [2, 0, 4, 0]
            assert [len(c) for c in want.column(0).chunks] == [2, 0, 4, 0]
    if suffix != "arrows":
        assert [b.num_rows for b in open_reader(out, row_groups=[1, 0, 3])] == [0, 2, 0]
        assert [b.num_rows for b in open_reader(out, row_groups=[1], filters=[("n", ">", 2)])
                ] == [0]


def test_engines_consume_the_reader(compressed):
    polars = pytest.importorskip("polars", reason="polars is an optional engine")
    df = polars.from_arrow(open_reader(compressed / "c.parquet", columns=["k"]))
    assert df.height == ROWS and df["k"][0] == "key-00000"
    duckdb = pytest.importorskip("duckdb", reason="duckdb is an optional engine")
    reader = open_reader(compressed / "c.parquet", columns=["k", "n"])
    got = duckdb.from_arrow(reader).filter("k like 'key-03%'").aggregate(
        "count(*), max(k)").fetchall()
    assert got == [(1000, "key-03999")]


@pytest.mark.parametrize("type_", [pa.string(), pa.large_string(), pa.binary(), pa.binary_view()])
def test_bounds_match_python_min_and_max(type_):
    """The compiled bounds (native.string_bounds) against Python's order of the values, on
    random strings of few letters (ties, empty strings, nulls, slices, chunks)."""
    rng = np.random.default_rng(5)
    text = not (pa.types.is_binary(type_) or type_ == pa.binary_view())
    for _ in range(60):
        n = int(rng.integers(0, 30))
        values = [None if rng.random() < 0.2 else "".join(rng.choice(list("ab\u00e9z"),
                  int(rng.integers(0, 6)))) for _ in range(n)]
        if not text:
            values = [None if v is None else v.encode() for v in values]
        col = pa.chunked_array([pa.array(values, type_)[1:], pa.array(values[:3], type_)])
        present = [v.encode() if text else v for v in col.to_pylist() if v is not None]
        expected = (min(present), max(present)) if present else None
        assert bounds_of(col) == expected


@pytest.mark.parametrize("limit", [7, 40, 1 << 20])
def test_decode_column_cuts_sliced_chunks_with_nulls_at_the_limit(limit):
    # the lengths' stored sum (nulls' values included) decides whether a chunk is cut: a
    # sliced struct storage and null rows must give the same values at any limit
    import fsstgpu
    from fsstgpu.formats.arrow_read import decode_column
    from fsstgpu.formats.arrow_storage import to_extension_array

    values = ["ab", None, "cdef", "", "ghijk", None, "lm"] * 6
    ext = to_extension_array(fsstgpu.compress(pa.array(values)))
    for lo, hi in ((0, len(values)), (3, 30), (5, 6), (8, 8)):
        got, nbytes = decode_column(ext.slice(lo, hi - lo), max_chunk_bytes=limit)
        want = values[lo:hi]
        assert got.to_pylist() == want and nbytes == sum(len(v or "") for v in want)
        chunks = got.chunks if isinstance(got, pa.ChunkedArray) else [got]
        assert all(len(c.buffers()[2] or b"") <= max(limit, 5) for c in chunks)


def test_a_reader_left_early_waits_for_nothing_and_closes_its_handles(compressed, monkeypatch):
    """Leaving parallel_units early must not join its threads: the collector may finalize an
    abandoned reader on any thread, one inside threading's own bookkeeping included, where a
    join deadlocked. A read still running closes its handle when it ends."""
    import threading

    import fsstgpu.formats.unit_reads as unit_reads
    from fsstgpu.formats.rowgroups import Source

    opened = []
    release, blocked = threading.Event(), threading.Event()

    def convert(k, name, column):
        if k == 1:  # the second row group's read holds its thread until released
            blocked.set()
            assert release.wait(30)
        return column

    with Source(compressed / "c.parquet") as source:
        real_reopen = source.reopen  # the reading threads' handles
        monkeypatch.setattr(source, "reopen", lambda: opened.append(real_reopen()) or opened[-1])
        reader = unit_reads.parallel_units(source, workers=4, convert=convert)
        assert len(next(reader)) == len(source.schema.names)
        assert blocked.wait(30)
        reader.close()  # returns with a read still running
        assert opened and any(not f.closed for f in opened)
        release.set()
        for _ in range(3000):
            if all(f.closed for f in opened):
                break
            threading.Event().wait(0.01)
        assert all(f.closed for f in opened)


def test_a_reader_abandoned_at_exit_lets_the_interpreter_end_cleanly(compressed):
    """A reader left unfinished when the program ends, a read still running on its thread: the
    process exits with 0 and no abort (pyarrow's own threads, which outlive a call holding an
    extension type, aborted it at exit; ours are joined before the interpreter finalizes)."""
    import subprocess
    import sys

    script = f"""
import time
from fsstgpu.formats.unit_reads import parallel_units
from fsstgpu.formats.rowgroups import Source

def slow(k, name, column):
    if k == 1:
        time.sleep(0.3)
    return column

source = Source({str(compressed / "c.parquet")!r})
reader = parallel_units(source, workers=2, convert=slow)
first = next(reader)
print("read", len(first))
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "read 3"
    assert "terminate" not in done.stderr and "Exception ignored" not in done.stderr


def test_device_reads_take_a_thread_per_rows_of_fsst_chunks(compressed, monkeypatch):
    """One reading thread per ROWS_PER_READER rows of fsst column chunks, from 2 up to the
    usable cores: each chunk's check holds the GIL for a fixed time, so more threads than its
    compiled work only queue for the GIL. A file without fsst columns gets every usable core;
    IPC files are read on the calling thread."""
    import fsstgpu.formats.device_reader as device_reader
    from fsstgpu.formats.rowgroups import Source

    monkeypatch.setattr(device_reader, "default_workers", lambda: 16)
    with Source(compressed / "c.parquet") as source:  # 4000 rows, two fsst columns
        assert device_reader._fsst_names(source) == {"k", "url"}
        assert device_reader._device_readers(source) == 2  # 8000 rows: one reader, at least 2
        monkeypatch.setattr(device_reader, "ROWS_PER_READER", 1000)
        assert device_reader._device_readers(source) == 8
        monkeypatch.setattr(device_reader, "ROWS_PER_READER", 100)
        assert device_reader._device_readers(source) == 16  # at most the usable cores
    with Source(compressed / "c.arrow") as source:
        assert device_reader._device_readers(source) == 1
    with Source(compressed / "in.parquet") as source:  # no fsst column: nothing checked
        assert device_reader._device_readers(source) == 16


@pytest.mark.parametrize("view", [pa.string_view(), pa.binary_view()], ids=str)
def test_filters_on_a_file_with_view_columns(tmp_path, view):
    # pyarrow has no filter kernel for view types: any filters= on a file holding one raised
    # "Function 'array_filter' has no kernel matching input types (string_view, bool)", as
    # pq.read_table of the plain file does; the view columns are filtered as large types
    values = ["a", "b", None, "b"] if pa.types.is_string_view(view) else [b"a", b"b", None, b"b"]
    table = pa.table({"v": pa.array(values, view), "n": [1, 2, 3, 4]})
    pq.write_table(table, tmp_path / "p.parquet")
    compress_file(tmp_path / "p.parquet", tmp_path / "c.parquet")
    for filters, rows in (([("n", ">", 1)], [1, 2, 3]), ([("v", "==", values[1])], [1, 3])):
        want = pa.table({"v": pa.array([values[i] for i in rows], view),
                         "n": pa.array([i + 1 for i in rows], pa.int64())})
        got = read_table(tmp_path / "c.parquet", device="cpu", filters=filters)
        assert got.equals(want) and got.schema.field("v").type == view
        with open_reader(tmp_path / "c.parquet", device="cpu", filters=filters) as reader:
            assert reader.read_all().equals(want)


def _required_under_null():
    fsl = pa.list_(pa.field("x", pa.string(), nullable=False), 1)  # Parquet reads [None] there
    col = pa.FixedSizeListArray.from_arrays(pa.array(["a", "b", "c", None]), type=fsl,
                                            mask=pa.array([False, False, False, True]))
    return pa.StructArray.from_arrays([col, pa.array(["p", "q", None, "s"], pa.string_view())],
                                      names=["f", "v"])


@pytest.mark.parametrize("column", [
    pa.array([["a", None], None, [], ["b"]], pa.list_(pa.string_view())),
    pa.array([{"s": b"a", "n": 1}, None, {"s": None, "n": 2}, {"s": b"b"}],
             pa.struct([("s", pa.binary_view()), ("n", pa.int8())])),
    pa.array([[("a", ["x"])], None, [], [("b", [None])]],
             pa.map_(pa.string_view(), pa.list_(pa.string_view()))),
    _required_under_null()], ids=lambda column: str(column.type))
def test_filters_on_a_file_with_nested_view_leaves(tmp_path, column):
    # only top-level view columns were filtered as their large types: any filters= on a file
    # with a view leaf in a list, struct or map raised pyarrow's "Function 'array_take' has no
    # kernel matching input types (string_view, int32)"
    table = pa.table({"v": column, "n": [1, 2, 3, 4]})
    pq.write_table(table, tmp_path / "p.parquet")
    compress_file(tmp_path / "p.parquet", tmp_path / "c.parquet")
    want = read_table(tmp_path / "c.parquet", device="cpu").slice(1)
    got = read_table(tmp_path / "c.parquet", device="cpu", filters=[("n", ">", 1)])
    assert got.schema == table.schema and got.to_pylist() == want.to_pylist()
    with open_reader(tmp_path / "c.parquet", device="cpu", filters=[("n", ">", 1)]) as reader:
        assert reader.read_all().to_pylist() == want.to_pylist()


def test_reading_threads_keep_to_fsstgpu_threads(monkeypatch):
    """A CPU read decodes its fsst columns on its reading threads: with ``FSSTGPU_THREADS=1``
    (a worker process's share of the machine) there is one, not one per core."""
    from fsstgpu.formats.unit_reads import default_workers

    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one core: nothing to cap")
    monkeypatch.setenv("FSSTGPU_THREADS", "1")
    assert default_workers() == 1
    monkeypatch.setenv("FSSTGPU_THREADS", "2")
    assert default_workers() == 2


@pytest.mark.parametrize("suffix", [".parquet", ".arrow", ".arrows"])
def test_a_filter_the_columns_cannot_take_is_a_value_error(tmp_path, suffix):
    """read_table documents ValueError for a malformed filter: a struct compared with a str and
    `not in []` (an untyped empty set) raised pyarrow's ArrowNotImplementedError /
    ArrowTypeError when the filter was bound."""
    table = pa.table({"s": ["x", "y", None], "st": pa.array([{"a": "q"}, None, {"a": "r"}])})
    pq.write_table(table, tmp_path / "in.parquet")
    out = tmp_path / f"out{suffix}"
    compress_file(tmp_path / "in.parquet", out)
    for filters in ([("st", "==", "x")], [("s", "not in", [])]):
        with pytest.raises(ValueError, match="do not apply to the file's columns"):
            read_table(out, device="cpu", filters=filters)
        with pytest.raises(ValueError, match="do not apply to the file's columns"):
            open_reader(out, filters=filters).read_all()


@pytest.mark.parametrize("suffix", [".parquet", ".arrow", ".arrows"])
def test_a_filter_the_columns_cannot_take_is_an_error_where_pruning_reads_nothing(tmp_path,
                                                                                  suffix):
    """`("s", "in", [])` on a string column (pyarrow: ArrowTypeError) read 0 rows of a Parquet
    file, whose bounds pruned every row group before the filter met a column, and raised for an
    IPC file; so did a str compared with 5 where the column holds only nulls. The filter is now
    bound to the columns' types first, as pyarrow binds it, whatever is pruned."""
    table = pa.table({"s": ["x", "y", None] * 10, "z": pa.array([None] * 30, pa.string()),
                      "n": range(30)})
    pq.write_table(table, tmp_path / "in.parquet", row_group_size=10)
    out = tmp_path / f"out{suffix}"
    compress_file(tmp_path / "in.parquet", out)
    for filters in ([("s", "in", [])], [("z", "==", 5)], [("s", "in", [None])]):
        with pytest.raises(pa.ArrowException):
            pq.read_table(tmp_path / "in.parquet", filters=filters)
        for source in (tmp_path / "in.parquet", out):
            with pytest.raises(ValueError, match="do not apply to the file's columns"):
                read_table(source, device="cpu", filters=filters)
            with pytest.raises(ValueError, match="do not apply to the file's columns"):
                open_reader(source, filters=filters).read_all()
    # a filter the columns take still prunes to nothing, as pyarrow reads it
    assert read_table(out, device="cpu", filters=[("n", "in", [])]).num_rows == 0
    assert pq.read_table(tmp_path / "in.parquet", filters=[("n", "in", [])]).num_rows == 0


@pytest.mark.parametrize("rows", [None, 1500])
@pytest.mark.parametrize("source", ["c.parquet", "c.arrow", "bad.parquet"])
def test_a_recompressed_file_keeps_its_string_bounds(compressed, tmp_path, monkeypatch, source,
                                                     rows):
    """compress_file of an fsstgpu output copies its fsst columns through: it wrote no
    fsstgpu.string_stats record, so filtered reads of the copy pruned nothing. The bounds are
    now carried from the input's sound record (same row groups) or decoded for (an IPC input,
    regrouped rows, a damaged record), as a direct compress records them."""
    if source == "bad.parquet":  # the input's record damaged (its CRC no longer matches)
        md = pq.ParquetFile(compressed / "c.parquet").metadata.metadata
        record = json.loads(md[STRING_STATS_KEY])
        record["columns"]["k"][1][0] = record["columns"]["k"][3][0]
        with pq.ParquetWriter(tmp_path / source, pq.read_schema(compressed / "c.parquet")) as w:
            w.write_table(pq.read_table(compressed / "c.parquet"), row_group_size=PER_GROUP)
            w.add_key_value_metadata({STRING_STATS_KEY: json.dumps(record).encode()})
    src = tmp_path / source if source == "bad.parquet" else compressed / source
    compress_file(src, tmp_path / "again.parquet", row_group_rows=rows)
    compress_file(compressed / "in.parquet", tmp_path / "direct.parquet", row_group_rows=rows)
    recorded = pq.read_metadata(tmp_path / "again.parquet").metadata.get(STRING_STATS_KEY)
    assert recorded is not None
    assert recorded == pq.read_metadata(tmp_path / "direct.parquet").metadata[STRING_STATS_KEY]
    seen = _read_groups(monkeypatch)
    filters = [("k", "==", "key-01500")]
    got = read_table(tmp_path / "again.parquet", device="cpu", filters=filters)
    assert seen == [[1]]
    assert got.equals(_table().filter(pq.filters_to_expression(filters)))
