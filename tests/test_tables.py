"""compress_table / decompress_table: string columns compressed, the rest kept, files read back."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import fsstgpu
from fsstgpu.formats.arrow import is_fsst_type
from fsstgpu.formats.selection import ColumnSelectionError, ColumnTypeError


def sample_table(n=500):
    rng = np.random.default_rng(3)
    urls = [None if i % 11 == 0 else f"http://example.com/{rng.integers(0, 50)}/{i}"
            for i in range(n)]
    schema = pa.schema([
        pa.field("id", pa.int64(), nullable=False),
        pa.field("url", pa.string()),
        pa.field("blob", pa.large_binary()),
        pa.field("kind", pa.dictionary(pa.int8(), pa.string())),
        pa.field("score", pa.float64()),
    ], metadata={b"origin": b"test"})
    kinds = pa.array([["red", "green", None][i % 3] for i in range(n)]).dictionary_encode()
    return pa.table([pa.array(np.arange(n)), pa.array(urls),
                     pa.array([b"\x00" * (i % 5) for i in range(n)], pa.large_binary()),
                     kinds.cast(pa.dictionary(pa.int8(), pa.string())),
                     pa.array(rng.random(n))], schema=schema)


def assert_same_table(result, expected):
    """Equal schemas and values; a dictionary column's dictionary is rebuilt from its values, so
    only its type and values are compared."""
    assert result.schema == expected.schema
    for name in expected.schema.names:
        got, want = result.column(name), expected.column(name)
        if pa.types.is_dictionary(want.type):
            assert got.type == want.type and got.to_pylist() == want.to_pylist(), name
        else:
            assert got.equals(want), name


def test_string_columns_compressed_rest_kept():
    table = sample_table()
    kept = fsstgpu.compress_table(table)  # a dictionary column only when named
    assert [is_fsst_type(f.type) for f in kept.schema] == [False, True, True, False, False]
    assert kept.column("kind").equals(table.column("kind"))
    assert fsstgpu.decompress_table(kept, device="cpu").equals(table)
    comp = fsstgpu.compress_table(table, columns=["url", "blob", "kind"])
    assert comp.schema.names == table.schema.names
    assert comp.schema.metadata == table.schema.metadata
    assert [is_fsst_type(f.type) for f in comp.schema] == [False, True, True, True, False]
    assert comp.column("id").equals(table.column("id"))
    assert not comp.schema.field("id").nullable
    assert comp.schema.field("kind").type.original_type == table.schema.field("kind").type
    assert fsstgpu.decompress_table(comp, device="cpu").equals(table)
    assert fsstgpu.decompress(comp, device="cpu").equals(table)  # decompress dispatches


def _tables_of(column):
    return fsstgpu.formats.arrow_storage.from_extension_array(column).tables


def test_chunks_kept_and_one_type_per_column():
    """The chunks stay; small chunks share a table (planned together); every column of one
    string type has the same extension type, whatever its tables (issue #23)."""
    table = pa.concat_tables([sample_table(200), sample_table(0), sample_table(300)])
    comp = fsstgpu.compress_table(table, columns=["url", "blob", "kind"])
    assert isinstance(comp, pa.Table)
    for name in ("url", "blob", "kind"):
        assert [len(c) for c in comp.column(name).chunks] == [
            len(c) for c in table.column(name).chunks]
        assert len(_tables_of(comp.column(name))) == 1
        assert comp.schema.field(name).type == fsstgpu.compress_table(
            table.slice(0, 3), columns=[name]).schema.field(name).type
    back = fsstgpu.decompress_table(comp, device="cpu")
    assert back.equals(table)
    assert back.column("url").num_chunks == table.column("url").num_chunks


def test_row_operations_on_the_compressed_table():
    table = sample_table()
    comp = fsstgpu.compress_table(table)
    sliced = comp.slice(37, 101)
    assert_same_table(fsstgpu.decompress_table(sliced, device="cpu"), table.slice(37, 101))
    mask = pa.array(np.arange(len(table)) % 3 == 1)
    filtered = fsstgpu.decompress_table(comp.filter(mask), device="cpu")
    assert_same_table(filtered, table.filter(mask))


def test_record_batch_gives_record_batch():
    batch = sample_table().to_batches()[0]
    comp = fsstgpu.compress_table(batch, columns=["url"])
    assert isinstance(comp, pa.RecordBatch)
    assert is_fsst_type(comp.schema.field("url").type)
    assert comp.schema.field("blob").type == pa.large_binary()
    assert fsstgpu.decompress_table(comp, device="cpu").equals(batch)


def test_dictionary_type_restored_with_a_rebuilt_dictionary():
    kinds = pa.DictionaryArray.from_arrays(pa.array([1, 0, None, 1], pa.int16()),
                                           pa.array(["b", "a", "unused"]))
    table = pa.table({"k": kinds})
    back = fsstgpu.decompress_table(fsstgpu.compress_table(table, columns=["k"]), device="cpu")
    assert back.schema.field("k").type == kinds.type
    assert back.column("k").to_pylist() == ["a", "b", None, "a"]
    assert back.column("k").chunk(0).dictionary.to_pylist() == ["a", "b"]  # first appearance
    # ordered, the rebuilt dictionary would say a < b where the original said b < a: refused
    ordered = pa.DictionaryArray.from_arrays(kinds.indices, kinds.dictionary, ordered=True)
    with pytest.raises(ValueError, match="'k' is an ordered dictionary"):
        fsstgpu.compress_table(pa.table({"k": ordered}), columns=["k"])


def test_parquet_file_of_extension_columns(tmp_path):
    table = sample_table()
    path = tmp_path / "t.parquet"
    pq.write_table(fsstgpu.compress_table(table), path, row_group_size=128)
    read = pq.read_table(path)
    assert is_fsst_type(read.schema.field("url").type)
    url = fsstgpu.decompress(read["url"], device="cpu")
    assert url.equals(table["url"])
    assert_same_table(fsstgpu.decompress(read, device="cpu"), table)


def test_options_and_errors():
    table = sample_table(50)
    symbols = fsstgpu.train(table["url"])
    comp = fsstgpu.compress_table(table, columns=["url", "blob"], table=symbols, split_size=64)
    assert _tables_of(comp.column("url")) == (symbols,)
    assert comp.schema.field("url").type.split_size == 64
    assert comp.schema.field("kind").type == table.schema.field("kind").type
    # the files' column selector (formats/selection.py): its errors are fsstgpu's
    with pytest.raises(ColumnSelectionError, match="the table: no column named 'nope'"):
        fsstgpu.compress_table(table, columns=["nope"])
    with pytest.raises(ColumnTypeError, match="score") as err:
        fsstgpu.compress_table(table, columns=["score"])
    assert isinstance(err.value, TypeError) and isinstance(err.value, fsstgpu.FsstGpuError)
    with pytest.raises(ColumnSelectionError, match="no column chosen"):
        fsstgpu.compress_table(table, columns=[])
    named = fsstgpu.compress_table(table, columns="url, blob", table=symbols, split_size=64)
    assert named.equals(comp)
    with pytest.raises(TypeError, match="Table or RecordBatch"):
        fsstgpu.compress_table(table["url"])
    with pytest.raises(TypeError, match="Table or RecordBatch"):
        fsstgpu.decompress_table([1])


def test_empty_tables():
    empty = pa.table({"s": pa.chunked_array([], pa.string()), "i": pa.chunked_array([], pa.int8())})
    comp = fsstgpu.compress_table(empty)
    assert is_fsst_type(comp.schema.field("s").type) and comp.column("s").num_chunks == 0
    assert fsstgpu.decompress_table(comp, device="cpu").equals(empty)
    nulls = pa.table({"s": pa.array([None, None], pa.large_string())})
    assert fsstgpu.decompress_table(fsstgpu.compress_table(nulls), device="cpu").equals(nulls)


def test_columns_of_one_name_are_compressed_by_field():
    # pyarrow tables may repeat a name: the default choice went through schema.field(name),
    # a bare KeyError ("Column s does not exist in schema"); by name alone, the int64 column
    # named like a string one would have gone to the compressor
    t = pa.Table.from_arrays([pa.array(["a", None]), pa.array([1, 2]), pa.array([b"x", b"y"]),
                              pa.array(["k", "k"]).dictionary_encode()],
                             names=["s", "s", "s", "s"])
    out = fsstgpu.compress_table(t)
    assert [is_fsst_type(f.type) for f in out.schema] == [True, False, True, False]
    assert fsstgpu.decompress_table(out, device="cpu").equals(t)
    with pytest.raises(ValueError, match="ambiguous"):
        fsstgpu.compress_table(t, columns=["s"])


@pytest.mark.parametrize("bad", [b"s", 5, 1.5])
def test_columns_that_are_no_names_are_named(bad):
    # b"s" was taken for the column names 115 ("no column named 115"); 5 gave "'int' object
    # is not iterable"
    with pytest.raises(TypeError, match="columns must be a str or a sequence of str"):
        fsstgpu.compress_table(pa.table({"s": ["a"]}), columns=bad)
