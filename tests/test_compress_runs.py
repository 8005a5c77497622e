"""``compress_file`` by runs of units (``formats/pipeline.py``'s ``runs``,
``UnitCompressor.convert_run``, ``ColumnStream.compress_many``): consecutive small row groups
read, compressed and written together, each still a row group of its own.

A run must give the file that unit-by-unit compression gives (``RUN_ROWS = 1``), byte for byte
(the same tables, the same decisions to train again, the same Parquet bytes whether the row
groups are written by one writer or in joined parts), every row group decodable alone with only
its own tables, and the input's values and row groups exactly: runs of differing sizes, empty
units, nulls, text that changes inside a run, a dictionary column, a list column, and string
and number columns left plain. A faulty unit inside a run is still named by its own row
group. Inputs are real text (this machine's) cut at random (seed from os.urandom, named in
failure messages).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

import fsstgpu
from fsstgpu import CorruptDataError
from fsstgpu.columns import ColumnStream
from fsstgpu.formats import (
    compress_file,
    compressing,
    decompress_file,
    inspect_file,
    pipeline,
    read_table,
    sinks as sinks_module,
)
from fsstgpu.formats.arrow_storage import from_extension_array, to_extension_array
from fsstgpu.formats.parquet_serial import filled

sys.path.insert(0, str(Path(__file__).parent))
from seeds import fresh_seed  # noqa: E402

SUFFIX = {"parquet": ".parquet", "arrow": ".arrow", "arrows": ".arrows"}
COMPRESSED = ["s", "big", "mix", "cat", "lst"]


def _dna(rng, n: int) -> list:
    return ["".join(rng.choice(list("ACGT"), int(rng.integers(5, 60)))) for _ in range(n)]


def _plain(table: pa.Table) -> pa.Table:
    """``table`` with its dictionary column as its values, without schema metadata."""
    i = table.schema.get_field_index("cat")
    table = table.set_column(i, "cat", table.column("cat").cast(pa.string()))
    return table.replace_schema_metadata(None).combine_chunks()


def _check_row_groups_alone(path, units, seed, one_table: bool) -> None:
    """Each row group of a compressed Parquet file read alone decodes to its unit, each fsst
    column chunk holding its own table (``one_table``: one only)."""
    f = pq.ParquetFile(path)
    assert f.num_row_groups == len(units), seed
    for k, unit in enumerate(units):
        rg = f.read_row_group(k, columns=["s", "big", "mix"])
        for name in ("s", "big", "mix"):
            ext = rg.column(name).combine_chunks()
            carr = from_extension_array(ext)
            assert fsstgpu.decompress(carr, device="cpu").equals(unit.column(name)
                                                                 .combine_chunks()), (seed, k)
            tables = ext.storage.field("table")
            used = set(tables.indices.drop_null().to_pylist())  # (none under null strings)
            assert used <= set(range(len(tables.dictionary))), (seed, k, name)
            # pages compressed again: a table a unit (blocks otherwise, some maybe all null)
            assert len(tables.dictionary) == 1 or not one_table or not len(ext), (seed, k, name)


@pytest.mark.parametrize("fmt,codec", [("parquet", "zstd"), ("parquet", "none"),
                                       ("arrow", "zstd"), ("arrows", "zstd")])
def test_runs_give_the_unit_by_unit_file_and_the_input(tmp_path, machine_lines, fmt, codec,
                                                      monkeypatch, write_units,
                                                      random_units):
    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    units = random_units(rng, machine_lines, 16, mixed=True)
    src = tmp_path / f"in{SUFFIX[fmt]}"
    write_units(units, src, fmt)
    options = dict(parquet_codec=codec) if fmt == "parquet" else {}
    outputs = {}
    # one unit a run (what compressing unit by unit gives), runs of random rows, one run
    for rows in (1, int(rng.integers(2, 2000)), 1 << 40):
        monkeypatch.setattr(pipeline, "RUN_ROWS", rows)
        out = tmp_path / f"c{rows}{SUFFIX[fmt]}"
        calls = []
        info = compress_file(src, out, columns=COMPRESSED, **options,
                             progress=lambda calls=calls, **kw: calls.append(kw))
        outputs[rows] = out.read_bytes(), {k: v for k, v in info.items()
                                           if k not in ("output_bytes",)}
        assert info["units"] == len(units), seed
        assert [c["units_done"] for c in calls] == list(range(1, len(units) + 1)), seed
        assert [c["rows"] for c in calls] == np.cumsum([u.num_rows for u in units]).tolist()
        assert inspect_file(out)["unit_rows"] == [u.num_rows for u in units], seed
    assert len({data for data, _ in outputs.values()}) == 1, seed
    assert len({repr(info) for _, info in outputs.values()}) == 1, seed  # sizes counted once
    back = tmp_path / f"d{SUFFIX[fmt]}"
    decompress_file(out, back, device="cpu")
    read = (pq.read_table(back) if fmt == "parquet" else
            (ipc.open_file if fmt == "arrow" else ipc.open_stream)(back).read_all())
    expected = _plain(pa.concat_tables([u.cast(units[0].schema) for u in units]))
    assert _plain(read).equals(expected), seed
    if fmt == "parquet":
        _check_row_groups_alone(out, units, seed, one_table=codec != "none")
        assert read_table(out, device="cpu").column("s").equals(
            expected.column("s")), seed


def test_many_pieces_compress_as_each_alone(machine_lines):
    """ColumnStream.compress_many against compress piece by piece: the same arrays, the same
    state after (the next piece alike), for one table a retraining and for blocks, a fixed
    table and the fast level; empty and all-null pieces among them."""
    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    pieces = []
    for _ in range(40):
        n = int(rng.integers(0, 300)) if rng.random() > 0.15 else 0
        kind = rng.random()
        if kind < 0.2:
            pieces.append(pa.array(_dna(rng, n), pa.string()))
        elif kind < 0.25:
            pieces.append(pa.nulls(n, pa.string()))
        else:
            pieces.append(pa.chunked_array([[machine_lines[i] for i in rng.integers(
                0, len(machine_lines), n)]], pa.string()))
    fixed = fsstgpu.train(pa.array(machine_lines[:500]))
    for kwargs in (dict(blocks=False), dict(blocks=True), dict(table=fixed),
                   dict(blocks=False, level="fast")):
        one, many = ColumnStream(**kwargs), ColumnStream(**kwargs)
        alone = [one.compress(p) for p in pieces[:-1]]
        segments = many.compress_many(pieces[:-1])
        assert sum(count for _, count in segments) == len(pieces) - 1, (seed, kwargs)
        k = 0
        for carr, count in segments:
            assert count == 1 or len({t.to_bytes() for t in carr.tables}) == 1, (seed, kwargs)
            ext, start = to_extension_array(carr), 0
            for _ in range(count):
                n = len(pieces[k])
                assert ext.slice(start, n).equals(to_extension_array(alone[k])), (seed, k)
                start, k = start + n, k + 1
            assert start == len(carr), (seed, kwargs)
        last = pieces[-1]
        assert to_extension_array(many.compress(last)).equals(
            to_extension_array(one.compress(last))), (seed, kwargs)
    # runs of same text pay one encode: a single segment after the first (trained) piece
    lines = machine_lines[:200]
    same = [pa.array([lines[i] for i in rng.permutation(200)]) for _ in range(10)]
    assert [c for _, c in ColumnStream(blocks=False).compress_many(same)] == [1, 9]


def test_a_failed_run_leaves_the_stream_as_it_was(machine_lines):
    """A run that fails after a piece was trained on: the stream has no table again."""
    stream, twin = ColumnStream(blocks=False), ColumnStream(blocks=False)
    bad = pa.Array.from_buffers(pa.string(), 1, [None, pa.array([0, 2], pa.int32()).buffers()[1],
                                                 pa.py_buffer(b"\xff\xfe")])
    with pytest.raises(CorruptDataError):
        stream.compress_many([pa.array(machine_lines[:300]), bad])
    # text the lost table would keep (within tolerance), but a table of its own
    nxt = pa.array(machine_lines[:300] + machine_lines[:60])
    assert to_extension_array(stream.compress(nxt)).equals(to_extension_array(twin.compress(nxt)))


def test_a_run_that_does_not_compress_as_one_is_compressed_unit_by_unit(tmp_path, machine_lines,
                                                                       monkeypatch,
                                                                       write_units,
                                                                       random_units):
    """Where compress_many refuses a run, its units are compressed one by one: the file is the
    unit-by-unit one (bounds, sizes and tables counted once)."""
    seed = fresh_seed()
    units = random_units(np.random.default_rng(seed), machine_lines, 8, mixed=True)
    write_units(units, tmp_path / "in.parquet", "parquet")
    monkeypatch.setattr(pipeline, "RUN_ROWS", 1)
    one = compress_file(tmp_path / "in.parquet", tmp_path / "one.parquet", columns=COMPRESSED)
    monkeypatch.setattr(pipeline, "RUN_ROWS", 1 << 40)

    def refused(self, pieces):
        raise ValueError("not as one")

    monkeypatch.setattr(ColumnStream, "compress_many", refused)
    alone = compress_file(tmp_path / "in.parquet", tmp_path / "alone.parquet", columns=COMPRESSED)
    assert (tmp_path / "one.parquet").read_bytes() == (tmp_path / "alone.parquet").read_bytes()
    assert one == alone, seed


def _bad_utf8(values: list) -> pa.Array:
    data = b"".join(values)
    offsets = np.cumsum([0] + [len(v) for v in values]).astype(np.int32)
    return pa.Array.from_buffers(pa.string(), len(values),
                                 [None, pa.py_buffer(offsets.tobytes()), pa.py_buffer(data)])


@pytest.mark.parametrize("column", ["s", "p"])
def test_a_faulty_unit_inside_a_run_is_named(tmp_path, monkeypatch, column):
    """Invalid UTF-8 in one row group of a compressed column (``s``) or of one copied through
    (``p``): the error names that row group, runs or not; nothing is left behind."""
    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    bad = int(rng.integers(0, 10))
    units = []
    for k in range(10):
        values = [f"row group {k} line {i}".encode() for i in range(int(rng.integers(1, 80)))]
        good = pa.array([v.decode() for v in values])
        if k == bad:
            values[int(rng.integers(0, len(values)))] = b"\xff\xfe not text"
        units.append(pa.table({"s": _bad_utf8(values) if column == "s" else good,
                               "p": _bad_utf8(values) if column == "p" else good,
                               "n": pa.array(np.arange(len(values)))}))
    with pq.ParquetWriter(tmp_path / "bad.parquet", units[0].schema) as w:
        for unit in units:
            w.write_table(unit)
    for rows in (1, 1 << 40):
        monkeypatch.setattr(pipeline, "RUN_ROWS", rows)
        with pytest.raises(CorruptDataError, match=f"row group {bad}\\b"):
            compress_file(tmp_path / "bad.parquet", tmp_path / "o.parquet", columns=["s"])
        assert not (tmp_path / "o.parquet").exists(), seed


#: columns Parquet cannot hold, left plain: a dictionary holding a null; a type pyarrow's
#: Parquet writer refuses as it is made (an interval)
_UNWRITABLE = {
    "d": lambda: pa.DictionaryArray.from_arrays(pa.array([0, 1] * 25), pa.array(["a", None])),
    "i": lambda: pa.array([pa.MonthDayNano([1, 2, 3])] * 50, pa.month_day_nano_interval()),
}


@pytest.mark.parametrize("name", list(_UNWRITABLE))
def test_an_unwritable_column_is_named_from_a_run(tmp_path, name):
    """Such a column beside a string column: refused naming the column, compressing or
    decompressing to Parquet, whether the row groups go through one writer or joined parts
    (the one writer let pyarrow's ArrowNotImplementedError for the interval through)."""
    units = [pa.table({"s": pa.array([f"line {k} {i}" for i in range(50)]),
                       name: _UNWRITABLE[name]()}) for k in range(6)]
    src = tmp_path / "in.arrows"
    with ipc.new_stream(src, units[0].schema) as w:
        for unit in units:
            w.write_table(unit)
    with pytest.raises(ValueError, match=f"'{name}'.*cannot be written to Parquet"):
        compress_file(src, tmp_path / "o.parquet", columns=["s"])
    compress_file(src, tmp_path / "c.arrows", columns=["s"])
    with pytest.raises(ValueError, match=f"'{name}'.*cannot be written to Parquet"):
        decompress_file(tmp_path / "c.arrows", tmp_path / "o.parquet", device="cpu")
    assert sorted(os.listdir(tmp_path)) == ["c.arrows", "in.arrows"]


def test_a_footer_placeholder_must_be_there_once():
    tail = b"x" + b"\x18\x03abc\x18\x03abc\x00" + (10).to_bytes(4, "little") + b"PAR1"
    with pytest.raises(RuntimeError, match="placeholder"):
        filled(tail, {b"abc": b"v"})
    with pytest.raises(RuntimeError, match="placeholder"):
        filled(tail, {b"zz": b"v"})
    with pytest.raises(RuntimeError, match="footer"):
        filled(b"PAR1", {})


def test_a_rewrite_stopped_midway_leaves_nothing(tmp_path, machine_lines, monkeypatch,
                                                 write_units, random_units):
    """A progress callback that raises once a run is written (the row groups going through
    one writer, or joined parts): the output is abandoned, nothing is left, and the same
    compression afterwards gives the file whole."""
    units = random_units(np.random.default_rng(fresh_seed()), machine_lines, 12, mixed=True)
    write_units(units, tmp_path / "in.parquet", "parquet")
    monkeypatch.setattr(pipeline, "RUN_ROWS", 1500)

    def stop(units_done, **_):
        if units_done == 3:
            raise KeyboardInterrupt

    for serial in (True, False):
        monkeypatch.setattr(sinks_module.Sink.__init__, "__kwdefaults__",
                            {**sinks_module.Sink.__init__.__kwdefaults__, "serial": serial})
        with pytest.raises(KeyboardInterrupt):
            compress_file(tmp_path / "in.parquet", tmp_path / "o.parquet", columns=COMPRESSED,
                          progress=stop)
        assert os.listdir(tmp_path) == ["in.parquet"]
        compress_file(tmp_path / "in.parquet", tmp_path / "o.parquet", columns=COMPRESSED)
        assert inspect_file(tmp_path / "o.parquet")["unit_rows"] == [u.num_rows for u in units]
        (tmp_path / "o.parquet").unlink()


@pytest.mark.parametrize("rows", [1, 0, 1 << 40])
def test_a_recompressed_ipc_file_decodes_a_runs_copied_columns_once(tmp_path, machine_lines,
                                                                    monkeypatch, write_units,
                                                                    random_units, rows):
    """compress_file of an fsstgpu IPC file into Parquet copies its fsst columns through and
    decodes them for their bounds (the filtered reads' string statistics). Each unit was
    decoded alone, which cost more than its strings on small batches (200 of 1,000 rows:
    ~170 us a unit); a run's units are now decoded together (one call a run), for the same
    bounds and the same file as one unit a run gives (``rows`` 0: runs of random rows)."""
    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    units = random_units(rng, machine_lines, 16, mixed=True)
    write_units(units, tmp_path / "in.parquet", "parquet")
    compress_file(tmp_path / "in.parquet", tmp_path / "c.arrow", columns=["s", "big", "mix"])
    compress_file(tmp_path / "in.parquet", tmp_path / "direct.parquet",
                  columns=["s", "big", "mix"])
    monkeypatch.setattr(pipeline, "RUN_ROWS", rows or int(rng.integers(2, 2000)))
    decodes = []
    real = compressing.decode_column
    monkeypatch.setattr(compressing, "decode_column",
                        lambda col, *a, **k: decodes.append(col) or real(col, *a, **k))
    compress_file(tmp_path / "c.arrow", tmp_path / "again.parquet")
    recorded, direct = (json.loads(pq.read_metadata(tmp_path / f).metadata[
        b"fsstgpu.string_stats"])["columns"] for f in ("again.parquet", "direct.parquet"))
    assert all(recorded[name] == direct[name] for name in ("s", "big", "mix")), seed
    runs = len(decodes) // 3  # (the three copied columns, each decoded once a run)
    assert len(decodes) == 3 * runs, seed
    if rows == 1 << 40:
        assert runs == 1, seed
    monkeypatch.setattr(pipeline, "RUN_ROWS", 1)
    compress_file(tmp_path / "c.arrow", tmp_path / "alone.parquet")
    assert (tmp_path / "again.parquet").read_bytes() == (tmp_path / "alone.parquet").read_bytes()


def test_a_faulty_copied_unit_inside_a_run_is_named(tmp_path, monkeypatch):
    """An fsst column copied through with one row group's table damaged (a Parquet input
    without fsstgpu's record of bounds, so decoded for them): the error names that row group
    whether its run is decoded at once or unit by unit."""
    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    bad = int(rng.integers(0, 8))
    chunks = []
    for k in range(8):
        col = to_extension_array(fsstgpu.compress(
            pa.array([f"row group {k} line {i}" for i in range(int(rng.integers(1, 80)))])))
        if k == bad:
            table = col.storage.field("table")
            raw = bytearray(table.dictionary[0].as_py())
            raw[len(raw) // 2] ^= 0x55
            tables = pa.DictionaryArray.from_arrays(table.indices, pa.array([bytes(raw)],
                                                                            pa.binary()))
            storage = col.storage
            col = pa.ExtensionArray.from_storage(col.type, pa.StructArray.from_arrays(
                [storage.field(i) for i in range(3)] + [tables],
                fields=list(storage.type)))
        chunks.append(col)
    with pq.ParquetWriter(tmp_path / "bad.parquet", pa.schema([("p", chunks[0].type)])) as w:
        for col in chunks:
            w.write_table(pa.table({"p": col}))
    for rows in (1, 1 << 40):
        monkeypatch.setattr(pipeline, "RUN_ROWS", rows)
        with pytest.raises(CorruptDataError, match=f"row group {bad}\\b"):
            compress_file(tmp_path / "bad.parquet", tmp_path / "o.parquet")
        assert not (tmp_path / "o.parquet").exists(), seed


@pytest.mark.parametrize("rows", [1, 0, 1 << 40])
def test_a_recompressed_dictionary_column_is_decoded_once_a_run(tmp_path, machine_lines,
                                                                  monkeypatch, write_units,
                                                                  random_units, rows):
    """compress_file of an fsstgpu IPC file into Parquet with ``row_group_rows=``: a copied
    fsst column made from a dictionary is decoded to check that a reader can rebuild its
    dictionary, and for its bounds. It was decoded twice a unit (200 units of 1,000 rows:
    0.26 s against 0.19); now once a run, checked and bounded on the same values, for the
    bounds that compressing the input directly records and the file one unit a run gives."""
    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    units = random_units(rng, machine_lines, 16)
    write_units(units, tmp_path / "in.parquet", "parquet")
    group = int(rng.integers(50, 2000))
    compress_file(tmp_path / "in.parquet", tmp_path / "c.arrow", columns=["s", "cat"])
    compress_file(tmp_path / "in.parquet", tmp_path / "direct.parquet", columns=["s", "cat"],
                  row_group_rows=group)
    monkeypatch.setattr(pipeline, "RUN_ROWS", rows or int(rng.integers(2, 2000)))
    decodes, runs = [], []
    real = compressing.decode_column
    monkeypatch.setattr(compressing, "decode_column", lambda col, *a, **k: decodes.append(
        col.type.index_type is not None) or real(col, *a, **k))
    real_run = compressing.UnitCompressor.convert_run
    monkeypatch.setattr(compressing.UnitCompressor, "convert_run",
                        lambda self, units, first: runs.append(len(units))
                        or real_run(self, units, first))
    compress_file(tmp_path / "c.arrow", tmp_path / "again.parquet", row_group_rows=group)
    recorded, direct = (json.loads(pq.read_metadata(tmp_path / f).metadata[
        b"fsstgpu.string_stats"])["columns"] for f in ("again.parquet", "direct.parquet"))
    assert {name: recorded[name] for name in direct} == direct, seed
    assert sum(decodes) == len(runs) > 0, (seed, sum(decodes), runs)
    assert read_table(tmp_path / "again.parquet").equals(
        read_table(tmp_path / "direct.parquet")), seed
    monkeypatch.undo()
    monkeypatch.setattr(pipeline, "RUN_ROWS", 1)
    compress_file(tmp_path / "c.arrow", tmp_path / "alone.parquet", row_group_rows=group)
    assert (tmp_path / "again.parquet").read_bytes() == (tmp_path / "alone.parquet").read_bytes()


@pytest.mark.parametrize("rows", [1, 1 << 40])
def test_a_copied_dictionary_that_outgrows_its_index_is_refused_from_a_run(tmp_path,
                                                                          monkeypatch, rows):
    """Units of 100 distinct int8-indexed values each, compressed to IPC and joined by
    ``row_group_rows=`` into Parquet: refused naming the column, whether the run's units are
    decoded and checked together or unit by unit."""
    units = [pa.table({"d": pa.array([f"u{k} v{i}" for i in range(100)]).dictionary_encode()
                       .cast(pa.dictionary(pa.int8(), pa.string()))}) for k in range(4)]
    with ipc.new_stream(tmp_path / "in.arrows", units[0].schema) as w:
        for unit in units:
            w.write_table(unit)
    compress_file(tmp_path / "in.arrows", tmp_path / "c.arrow", columns=["d"])
    monkeypatch.setattr(pipeline, "RUN_ROWS", rows)
    with pytest.raises(ValueError, match=r"column 'd' cannot be written in row groups of "
                                         r"row_group_rows=200 rows"):
        compress_file(tmp_path / "c.arrow", tmp_path / "o.parquet", row_group_rows=200)
    assert not (tmp_path / "o.parquet").exists()
    compress_file(tmp_path / "c.arrow", tmp_path / "o.parquet", row_group_rows=100)
    assert read_table(tmp_path / "o.parquet").column("d").to_pylist() == [
        v for unit in units for v in unit.column("d").to_pylist()]
