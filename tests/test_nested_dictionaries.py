"""fsst leaves made from dictionaries inside nested columns (``list<dictionary<int8, string>>``,
a struct's dictionary field), decoded into an Arrow IPC *file*: one growing dictionary a leaf
over the batches (``formats/decoding.py``, ``NestedRedictionary``; ``FileDictionaries`` keeps
each nested leaf on it), as top-level dictionary columns have; where the values of all the
batches outgrow the leaf's index type, refused naming the column, nothing left."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

import fsstgpu
from fsstgpu.formats import compress_file, decompress_file, open_reader, read_table
from fsstgpu.formats.dictionaries import FileDictionaries, NestedRedictionary
from fsstgpu.formats.nested import fsst_leaf_type, map_leaves

from .test_ipc_integrity import read_plain, run_cli

I8 = pa.dictionary(pa.int8(), pa.string())
TYPES = {"l": pa.list_(I8), "s": pa.struct([("k", I8), ("n", pa.int64())])}


def _unit(k: int, distinct: int, rows: int = 60) -> pa.RecordBatch:
    """Unit ``k`` of ``distinct`` values of its own a leaf (unit 0: no value at all), with
    null lists, null values, empty lists and null structs; dictionaries in order of first
    occurrence, as ``dictionary_encode`` makes them."""
    def value(i):
        return None if k == 0 or i % 9 == 4 else f"unit {k} value {i % distinct}"

    lists = [None if i % 7 == 3 else [] if i % 5 == 1 else [value(i), value(i + 1)]
             for i in range(rows)]
    hidden = pa.array([i % 8 == 2 for i in range(rows)])  # (no value under a null struct)
    structs = pa.StructArray.from_arrays(
        [pa.array([None if i % 8 == 2 else value(i * 3) for i in range(rows)], pa.string()),
         pa.array(range(rows), pa.int64())], names=["k", "n"], mask=hidden)
    plain = pa.record_batch({"l": pa.array(lists, pa.list_(pa.string())), "s": structs})
    cols = [map_leaves(c, lambda key, leaf: leaf.dictionary_encode().cast(I8),
                       pa.types.is_string) for c in plain.columns]
    return pa.RecordBatch.from_arrays(cols, schema=pa.schema(TYPES))


def _compressed(batch: pa.RecordBatch) -> pa.RecordBatch:
    """``batch`` with each dictionary leaf an fsst leaf (compress_file leaves them alone)."""
    def leaf(key, values):
        return fsstgpu.compress_table(pa.table({"x": values}), columns=["x"]).column(0).chunk(0)

    cols = [map_leaves(c, leaf, pa.types.is_dictionary) for c in batch.columns]
    return pa.RecordBatch.from_arrays(cols, names=batch.schema.names)


def _write(batches, path: Path) -> Path:
    if path.suffix == ".parquet":
        with pq.ParquetWriter(path, batches[0].schema) as w:
            for b in batches:
                w.write_batch(b)
    else:
        with ipc.new_stream(path, batches[0].schema) as w:
            for b in batches:
                w.write_batch(b)
    return path


def _inputs(tmp_path: Path, fmt: str, distinct: int):
    """(the compressed input, pyarrow's view of the plain file it stands for: a dictionary a
    unit): 4 units, each with values of its own."""
    plain = [_unit(k, distinct) for k in range(4)]
    path = _write(plain, tmp_path / f"plain.{fmt}")
    original = pq.read_table(path) if fmt == "parquet" else read_plain(path)
    assert [c.num_chunks for c in original.columns] == [4, 4]
    return _write([_compressed(b) for b in plain], tmp_path / f"in.{fmt}"), original


def _leaf_dictionary(col, name):
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    return (arr.values if name == "l" else arr.field(0)).dictionary.to_pylist()


@pytest.mark.parametrize("fmt", ["parquet", "arrows"])
def test_nested_dictionary_leaves_grow_one_dictionary_in_an_ipc_file(tmp_path, fmt):
    src, original = _inputs(tmp_path, fmt, distinct=20)
    assert read_table(src, device="cpu").equals(original)  # a dictionary a unit, as made
    out = tmp_path / "o.arrow"
    decompress_file(src, out, device="cpu")
    back = read_plain(out, ours=True)
    assert back.schema == original.schema
    for name in TYPES:
        assert back.column(name).to_pylist() == original.column(name).to_pylist()
        # one dictionary a leaf over the file (pyarrow gives each batch the final one): every
        # unit's values in order of first occurrence, the first unit's none
        want = [v for c in original.column(name).chunks for v in _leaf_dictionary(c, name)]
        assert {tuple(_leaf_dictionary(c, name)) for c in back.column(name).chunks} == {
            tuple(want)}
    # an .arrow file of them reads back the same, and so does its decompressed copy
    compress_file(src, tmp_path / "c.arrows")
    compress_file(tmp_path / "c.arrows", tmp_path / "cc.arrow")
    for read in (read_table(tmp_path / "cc.arrow", device="cpu"),
                 open_reader(tmp_path / "cc.arrow", device="cpu").read_all()):
        assert read.schema == original.schema
        assert read.to_pylist() == original.to_pylist()
    decompress_file(tmp_path / "cc.arrow", tmp_path / "oo.arrow", device="cpu")
    assert read_plain(tmp_path / "oo.arrow", ours=True).to_pylist() == original.to_pylist()


@pytest.mark.parametrize("fmt", ["parquet", "arrows"])
def test_nested_dictionary_leaves_outgrowing_one_are_refused(tmp_path, fmt):
    """100 values a unit, 300 over the file: more than one int8 dictionary holds."""
    src, original = _inputs(tmp_path, fmt, distinct=100)
    out = tmp_path / "o.arrow"
    with pytest.raises(ValueError, match=r"column '[ls]': \d+ distinct values.*IPC stream"):
        decompress_file(src, out, device="cpu")
    assert not out.exists()
    res = run_cli("decompress", src, out)
    assert res.returncode == 1 and "column '" in res.stderr and "IPC stream" in res.stderr
    assert "Traceback" not in res.stderr and not out.exists()
    # a stream takes a dictionary a batch; an .arrow file of them reads back, each batch that
    # the growing dictionary cannot take with one of its own
    decompress_file(src, tmp_path / "o.arrows", device="cpu")
    assert read_plain(tmp_path / "o.arrows", ours=True).equals(original)
    compress_file(src, tmp_path / "c.arrows")
    compress_file(tmp_path / "c.arrows", tmp_path / "cc.arrow")
    read = read_table(tmp_path / "cc.arrow", device="cpu")
    assert read.schema == original.schema and read.to_pylist() == original.to_pylist()
    assert all(len(_leaf_dictionary(c, "l")) <= 128 for c in read.column("l").chunks)
    assert open_reader(tmp_path / "cc.arrow", device="cpu").read_all().to_pylist() == (
        original.to_pylist())
    with pytest.raises(ValueError, match="column '[ls]'"):
        decompress_file(tmp_path / "cc.arrow", out, device="cpu")
    assert not out.exists()


def test_nested_redictionary_restarts_a_leaf_in_memory():
    leaf = fsst_leaf_type(I8)
    redict = NestedRedictionary(pa.list_(leaf), running=True, name="l", restart=True)
    first = redict.encode(pa.array([[str(i) for i in range(100)]], pa.list_(I8)))
    more = [[f"x{i}" for i in range(40)] + ["0"]]  # 141 values together: a new dictionary
    second = redict.encode(pa.chunked_array([pa.array(more, pa.list_(I8))]))
    assert len(first.values.dictionary) == 100
    assert second.chunk(0).values.dictionary.to_pylist() == more[0]
    assert second.to_pylist() == more and second.type == pa.list_(I8)
    with pytest.raises(ValueError, match="column 'l'"):
        NestedRedictionary(pa.list_(leaf), running=True, name="l").encode(
            pa.array([[str(i) for i in range(200)]], pa.list_(I8)))


def test_file_dictionaries_hold_back_an_empty_nested_dictionary():
    """A nested leaf's empty dictionary, then a longer one: held back and given the longer
    one (pyarrow's file writer would take the second as a replacement); a shorter one later
    is given the written one."""
    def batch(values):
        return pa.record_batch({"l": pa.array([values], pa.list_(I8))})

    keep = FileDictionaries()
    assert keep.batches(batch([])) == []
    out = keep.batches(batch(["a", "b"])) + keep.batches(batch(["a"])) + keep.flush()
    assert [b.column(0).values.dictionary.to_pylist() for b in out] == [["a", "b"]] * 3
    assert [b.column(0).to_pylist() for b in out] == [[[]], [["a", "b"]], [["a"]]]
    sink = pa.BufferOutputStream()
    with ipc.new_file(sink, out[0].schema,
                      options=ipc.IpcWriteOptions(emit_dictionary_deltas=True)) as w:
        for b in out:
            w.write_batch(b)


def test_a_copied_nested_dictionary_an_ipc_file_cannot_hold_is_named(tmp_path):
    """A nested column's plain dictionary leaf (copied as it is) whose batches each have a
    dictionary of their own: an IPC file output re-encodes them onto one growing dictionary
    (``tests/test_plain_dictionaries.py``), and refuses them naming the column where one
    dictionary of the index type cannot hold them all."""
    batches = [pa.record_batch({"m": pa.StructArray.from_arrays(
        [pa.array([f"s{k} {i}" for i in range(100)]),
         pa.array([f"d{k} {i}" for i in range(100)]).dictionary_encode().cast(I8)],
        names=["s", "d"])}) for k in range(2)]
    src = _write(batches, tmp_path / "in.arrows")
    with pytest.raises(ValueError, match=r"column 'm'.*int8"):
        compress_file(src, tmp_path / "c.arrow")
    assert not (tmp_path / "c.arrow").exists()


def _list_views(values: pa.Array, large: bool = False, mask=None) -> pa.Array:
    """A list view of one entry a row over ``values``, in reverse order (views point anywhere)."""
    n, index = len(values), pa.int64() if large else pa.int32()
    cls = pa.LargeListViewArray if large else pa.ListViewArray
    return cls.from_arrays(pa.array(range(n - 1, -1, -1), index), pa.array([1] * n, index),
                           values, mask=mask)


def _view_batch(values: list) -> pa.RecordBatch:
    d = pa.array(values).dictionary_encode()
    return pa.record_batch({
        "lv": _list_views(d, mask=pa.array([False, True, False, False])).slice(1),
        "llv": _list_views(d, large=True).slice(1),
        "st": pa.StructArray.from_arrays([_list_views(d)], names=["a"]).slice(1),
        "lv_lv": _list_views(_list_views(d)).slice(1),
        "l_lv": pa.ListArray.from_arrays(pa.array([0, 1, 3, 3], pa.int32()),
                                         _list_views(d).slice(1)),
        "s": pa.array([f"x{v}" for v in values[1:]])})


@pytest.mark.parametrize("rows", [None, 2])
def test_dictionaries_inside_list_views_grow_one_dictionary_in_an_ipc_file(tmp_path, rows):
    """A list_view / large_list_view column (at the top, or in a struct or list) of dictionary
    values whose batches have dictionaries of their own: an IPC file output put other nested
    dictionaries on one growing dictionary, not these, and refused them (a replacement, the
    column unnamed). Now they grow one dictionary as well, and read back as written."""
    batches = [_view_batch(v) for v in (["a", "b", "c", "d"], ["q", "a", "s", "t"],
                                        ["q", "a", "s", "t"])]
    original = pa.Table.from_batches(batches)
    src = _write(batches, tmp_path / "in.arrows")
    compress_file(src, tmp_path / "c.arrow", row_group_rows=rows)
    for read in (read_table(tmp_path / "c.arrow", device="cpu"),
                 read_plain(tmp_path / "c.arrow", ours=True)):
        assert read.to_pylist() == original.to_pylist()
    assert read_table(tmp_path / "c.arrow", device="cpu").schema == original.schema
    compress_file(src, tmp_path / "c.parquet", row_group_rows=rows)
    decompress_file(tmp_path / "c.parquet", tmp_path / "o.arrow", device="cpu")
    back = read_plain(tmp_path / "o.arrow", ours=True)
    assert back.to_pylist() == original.to_pylist()
    assert back.schema == original.schema
    # one dictionary a leaf over the file: every batch's values, in order of first occurrence
    assert back.column("llv").chunk(0).values.dictionary.to_pylist() == [
        "a", "b", "c", "d", "q", "s", "t"]


@pytest.mark.parametrize("large", [False, True])
@pytest.mark.parametrize("values", [(["a", None, "b"], ["c", None, "a"]),
                                    ([{"k": 1}, {"k": 2}], [{"k": 3}, {"k": 1}])],
                         ids=["null entry", "struct values"])
def test_list_view_dictionaries_with_null_entries_or_nested_values_join(tmp_path, large, values):
    """Batches joined into larger row groups (``row_group_rows``) put a plain list's dictionary
    with a null entry or of struct values on one dictionary, but handed a list view's (at the
    top or in a struct) to pyarrow's concatenation, which unifies neither: ArrowInvalid or
    ArrowNotImplementedError, the column unnamed. Now a list view's are joined as a list's."""
    def batch(vals):
        d = pa.DictionaryArray.from_arrays(pa.array(range(len(vals)), pa.int32()), pa.array(vals))
        return pa.record_batch({"lv": _list_views(d, large=large),
                                "st": pa.StructArray.from_arrays([_list_views(d, large=large)],
                                                                 names=["a"])})

    batches = [batch(v) for v in values]
    original = pa.Table.from_batches(batches)
    src = _write(batches, tmp_path / "in.arrows")
    compress_file(src, tmp_path / "c.arrow", row_group_rows=2 * len(values[0]))
    back = read_table(tmp_path / "c.arrow", device="cpu")
    assert back.schema == original.schema
    assert back.to_pylist() == original.to_pylist()
    assert back.column("lv").num_chunks == 1
    # one dictionary a leaf: the first batch's, then the second's (the values it adds, or,
    # struct values the compute kernels cannot match, all of them)
    for leaf in (back.column("lv").chunk(0).values, back.column("st").chunk(0).field(0).values):
        got = leaf.dictionary.to_pylist()
        assert got[:len(values[0])] == values[0] and all(v in got for v in values[1])
