"""Edges of row-group pruning (formats/pruning.py) that a mutation campaign found read by no
test: each test here fails with one change to the module's comparisons or raises."""

from __future__ import annotations

import datetime
import decimal
import struct

import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

from fsstgpu import CorruptDataError
from fsstgpu.formats import read_table
from fsstgpu.formats.parquet_options import leaf_columns
from fsstgpu.formats.pruning import (
    BOUND_BYTES,
    STATS_CRC_KEY,
    STRING_STATS_KEY,
    _parquet_bounds,
    bounds_of,
    may_match,
    recorded_bounds,
    selected_units,
    stats_crc_footer,
    stats_footer,
)
from fsstgpu.formats.rowgroups import Source


def test_a_greatest_string_of_exactly_bound_bytes_is_kept_whole():
    """A string of BOUND_BYTES bytes bounds itself; one byte more is raised to the next
    prefix (<= moved to < raised a 64-byte greatest string needlessly)."""
    at = "b" * BOUND_BYTES
    assert bounds_of(pa.array([at, "a"])) == (b"a", at.encode())
    assert bounds_of(pa.array([at + "b"]))[1] == b"b" * (BOUND_BYTES - 1) + b"c"


def test_a_record_with_bounds_for_too_few_row_groups_is_corrupt(tmp_path):
    """A sealed string_stats record (its CRC sound) whose column lists bounds for one of the
    file's two row groups: a filtered read refuses it by name, as a damaged record, rather than
    pruning by bounds of other row groups (or failing with an IndexError)."""
    footer = {STRING_STATS_KEY: stats_footer({"s": [(b"a", b"b")]})}
    path = tmp_path / "short.parquet"
    pq.write_table(pa.table({"s": ["a", "b", "y", "z"]}).replace_schema_metadata(footer), path,
                   row_group_size=2)
    with pytest.raises(CorruptDataError, match="'s' has no bounds for every row group"):
        read_table(path, device="cpu", filters=[("s", "==", "z")])
    assert recorded_bounds(pq.read_metadata(path), ["s"]) == {}


def test_term_bounds_prune_exactly():
    """may_match skips what the bounds rule out, no less: a row group of nulls only under `in`
    without a null (and `not in` with one), a float column's bounds against a float, `<=`
    below the least value, `>` at the greatest (each pruned nothing under one mutation)."""
    assert not may_match([("s", "in", ["a"])], {"s": None})
    assert not may_match([("s", "not in", [None, "a"])], {"s": None})
    assert may_match([("s", "in", [None])], {"s": None})
    assert not may_match([("f", "==", 5.0)], {"f": (0.5, 1.5)})
    assert not may_match([("f", "in", [2, 3.5])], {"f": (0.5, 1.5)})
    assert may_match([("f", "==", 1.5)], {"f": (0.5, 1.5)})
    assert not may_match([("n", "<=", 0)], {"n": (1, 5)}) and may_match([("n", "<=", 1)],
                                                                            {"n": (1, 5)})
    assert not may_match([("s", ">", "b")], {"s": (b"a", b"b")})
    assert may_match([("s", ">", "a")], {"s": (b"a", b"b")})
    assert may_match([("s", ">", "zz")], {"s": (b"a", None)})  # no greatest: nothing above it
    # a Decimal against a float column: pyarrow's cast of it is not known here, so no pruning
    assert may_match([("f", "==", decimal.Decimal("5"))], {"f": (0.5, 1.5)})


def test_a_null_in_a_list_of_numbers_against_an_int_column(tmp_path):
    """`in` with None and a float against an int column: the float makes the bounds compare
    as doubles, and None is no double (it raised TypeError out of the pruning under one
    mutation); the row group of nulls and the one holding 5 are read, as pyarrow reads them."""
    path = tmp_path / "i.parquet"
    pq.write_table(pa.table({"i": pa.array([1, 5, None, 7]), "n": range(4)}), path,
                   row_group_size=1)
    filters = [("i", "in", [None, 5.0])]
    want = pq.read_table(path, filters=filters)
    assert want.column("n").to_pylist() == [1, 2]
    assert read_table(path, device="cpu", filters=filters).equals(want)


def _leaves(path):
    md = pq.read_metadata(path)
    return md, leaf_columns(md.schema.to_arrow_schema(), md.num_columns)


def test_parquet_bounds_of_what_has_none(tmp_path):
    """Parquet's statistics bound a top-level primitive column: not one whose leaves are not
    known, nor the one leaf of a struct; a row group of nulls only has no value (None), one
    written without statistics no bounds."""
    path = tmp_path / "p.parquet"
    table = pa.table({"a": pa.array([{"b": 1}, {"b": 2}]), "i": pa.array([None, None],
                                                                          pa.int64()),
                      "n": [1, 2], "u": [3, 4]})
    pq.write_table(table, path, write_statistics=["a.b", "i", "n"])
    md, leaves = _leaves(path)
    assert _parquet_bounds(md, 0, {"n"}, leaves) == {"n": (1, 2)}
    assert _parquet_bounds(md, 0, {"n"}, None) == {}
    assert _parquet_bounds(md, 0, {"a", "i", "u"}, leaves) == {"i": None}


@pytest.mark.parametrize("suffix", ["parquet", "arrow", "arrows"])
def test_row_groups_past_the_last_or_of_a_stream_are_refused(tmp_path, suffix):
    table = pa.table({"n": range(4)})
    path = tmp_path / f"t.{suffix}"
    if suffix == "parquet":
        pq.write_table(table, path, row_group_size=2)
    else:
        with (ipc.new_file if suffix == "arrow" else ipc.new_stream)(path, table.schema) as w:
            w.write_table(table, max_chunksize=2)
    for filters in (None, [("n", ">=", 0)]):
        if suffix == "arrows":
            with pytest.raises(ValueError, match="needs a Parquet or Arrow IPC file"):
                read_table(path, device="cpu", row_groups=[0], filters=filters)
        else:
            with pytest.raises(ValueError, match="no row group 2 \\(it has 2\\)"):
                read_table(path, device="cpu", row_groups=[0, 2], filters=filters)


def test_row_groups_in_their_order_when_the_filter_keeps_them_all(tmp_path):
    """row_groups=[2, 0] with a filter every row group may match: those two, in that order (a
    mutation read the whole file then, every row group in order)."""
    path = tmp_path / "p.parquet"
    pq.write_table(pa.table({"n": range(8)}), path, row_group_size=2)
    got = read_table(path, device="cpu", row_groups=[2, 0], filters=[("n", "!=", 1)])
    assert got.column("n").to_pylist() == [4, 5, 0]


def test_values_prune_what_unvouched_statistics_would(tmp_path):
    """pyarrow's file (no CRC record of its statistics): where they alone would skip a row
    group its values are read and skip it as well; a record listing fewer CRCs than the file
    has columns vouches for none of them (it raised IndexError under one mutation)."""
    table = pa.table({"s": [str(i) for i in range(8)], "n": range(8)})
    path = tmp_path / "p.parquet"
    pq.write_table(table, path, row_group_size=2)
    short = tmp_path / "short.parquet"
    footer = {STATS_CRC_KEY: stats_crc_footer([[0]] * 4)}  # a CRC of column "s" only
    pq.write_table(table.replace_schema_metadata(footer), short, row_group_size=2)
    for p in (path, short):
        with Source(p) as source:
            assert selected_units(source, None, [("n", ">=", 6)]) == [3]
            assert selected_units(source, [3, 1], [("n", "<", 3)]) == [1]


def test_statistics_altered_over_values_python_cannot_order(tmp_path):
    """A timestamp column of year 10000 (valid Arrow, past Python's datetime) whose footer
    statistics were altered to 2020: they would skip the row group, its values decide, and
    values Python cannot hold bound nothing, so the row is read (one mutation took the bounds
    of the column before, or failed with UnboundLocalError)."""
    micros = 253_402_300_800_000_000  # 10000-01-01
    table = pa.table({"ts": pa.array([micros], pa.timestamp("us")), "n": [0]})
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    data = bytearray(sink.getvalue().to_pybytes())
    forged = struct.pack("<q", 1_577_836_800_000_000)  # 2020-01-01
    for _ in range(2):  # min and max, in the footer's statistics
        at = data.rfind(struct.pack("<q", micros))
        assert at > 0
        data[at:at + 8] = forged
    path = tmp_path / "forged.parquet"
    path.write_bytes(bytes(data))
    assert pq.read_metadata(path).row_group(0).column(0).statistics.max.year == 2020
    filters = [("ts", ">", datetime.datetime(2030, 1, 1))]
    assert read_table(path, device="cpu", filters=filters).column("n").to_pylist() == [0]
