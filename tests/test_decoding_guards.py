"""Guards of :mod:`fsstgpu.formats.decoding` that no other test could fail (a mutation round:
each test names the check it holds)."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fsstgpu.errors import CorruptDataError
from fsstgpu.formats import compress_file, decompress_file
from fsstgpu.formats.decoding import Decoder
from fsstgpu.formats.rowgroups import Source


def _bad_utf8() -> pa.Array:
    offsets = pa.array([0, 1, 2], pa.int32()).buffers()[1]
    return pa.Array.from_buffers(pa.string(), 2, [None, offsets, pa.py_buffer(b"a\xff")])


@pytest.fixture(scope="module")
def compressed(tmp_path_factory):
    d = tmp_path_factory.mktemp("decoding_guards")
    table = pa.table({"s": ["ab", "cd", None, "ab"], "t": pa.array([1, 2, 3, 4], pa.int64())})
    pq.write_table(table, d / "p.parquet")
    compress_file(d / "p.parquet", d / "c.parquet")
    with pa.ipc.new_file(d / "p.arrow", table.schema) as writer:
        writer.write_table(table)
    compress_file(d / "p.arrow", d / "c.arrow")
    return d


def test_a_parquet_column_copied_through_is_fully_validated(compressed):
    # copied(): pyarrow's Parquet reader hands out strings without checking their UTF-8; a
    # column copied through must not carry damage on (an IPC unit's are checked by its reader)
    with Source(compressed / "c.parquet") as source:
        decoder = Decoder(source, "parquet", "cpu")
        with pytest.raises(CorruptDataError, match=r"row group 3.*column 'u'.*UTF8"):
            decoder.decode("u", _bad_utf8(), 3)
        values, nbytes = decoder.decode("t", pa.array([5, 6], pa.int64()), 0)
        assert values.to_pylist() == [5, 6] and nbytes == 0


@pytest.mark.parametrize("suffix", [".parquet", ".arrow"])
def test_a_run_of_row_groups_counts_its_string_bytes_once(tmp_path, suffix):
    # convert_run: small row groups decoded as one count the run's string bytes with its first
    # unit only; each unit counted them all (decompress_file's string_bytes 4x too many here)
    strings = [f"row {i:03d}" for i in range(40)]
    pq.write_table(pa.table({"s": strings, "t": pa.array(range(40), pa.int64())}),
                   tmp_path / "p.parquet", row_group_size=10)
    compress_file(tmp_path / "p.parquet", tmp_path / f"c{suffix}")
    stats = decompress_file(tmp_path / f"c{suffix}", tmp_path / f"d{suffix}", device="cpu")
    assert stats["units"] == 4
    assert stats["string_bytes"] == sum(len(s) for s in strings)


def _dictionary_file(tmp_path, sizes, index):
    """A compressed IPC file made from a Parquet file of one dictionary column, each row group
    its own dictionary of new words."""
    chunks, start = [], 0
    for n in sizes:
        col = pa.array([f"word {i}" for i in range(start, start + n)]).dictionary_encode()
        chunks.append(pa.DictionaryArray.from_arrays(col.indices.cast(index), col.dictionary))
        start += n
    table = pa.table({"d": pa.chunked_array(chunks, pa.dictionary(index, pa.string()))})
    pq.write_table(table, tmp_path / "p.parquet", row_group_size=max(sizes))
    compress_file(tmp_path / "p.parquet", tmp_path / "c.arrow")
    return tmp_path / "c.arrow"


def test_an_ipc_file_written_keeps_one_growing_dictionary(tmp_path):
    # Decoder(running=out_format == "arrow"): an IPC file holds one dictionary a column, so
    # the batches' dictionaries grow as one (a round trip of row groups with dictionaries of
    # their own; the mutation round's running=False still passed it: the writer copes too)
    path = _dictionary_file(tmp_path, [3, 4, 2], pa.int32())
    decompress_file(path, tmp_path / "d.arrow", device="cpu")
    with pa.ipc.open_file(tmp_path / "d.arrow") as reader:
        got = reader.read_all()
    assert got.column("d").to_pylist() == [f"word {i}" for i in range(9)]
