"""A column's consecutive row groups checked as one (``formats/unit_reads.py``: runs of up to
``GROUP_ROWS`` rows; ``formats/arrow_read.py``: several chunks read in one pass).

Checked together, chunks must give what each gives alone (CPU); a corrupt chunk among them must
still be refused, and in a whole-file device read named by its own row group (GPU). Inputs are
real text (this machine's) cut at random, with random nulls (seed from os.urandom, named in
failure messages).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import fsstgpu
from fsstgpu import CorruptDataError
from fsstgpu.formats import arrow_read, device_reader as reader, read_table, unit_reads
from fsstgpu.formats.arrow_storage import from_extension_array, to_extension_array
from fsstgpu.formats.rowgroups import Source
from fsstgpu.testing import poisoned_codes
from fsstgpu.types import INT32_MAX

sys.path.insert(0, str(Path(__file__).parent))
from seeds import fresh_seed  # noqa: E402


@pytest.fixture(scope="module")
def lines(machine_lines) -> list:
    return machine_lines


def _pieces(rng, lines, count: int) -> list:
    """``count`` columns of 0-900 random lines (a tenth null, now and then one long string),
    each compressed alone: a table of its own each."""
    out = []
    for _ in range(count):
        n = int(rng.integers(0, 900))
        picked = [lines[i] for i in rng.integers(0, len(lines), n)]
        if n and rng.random() < 0.3:
            picked[0] = "y" * 70_000
        mask = rng.random(n) < 0.1
        # (typed: an empty column of no type would be pa.null(), not a string column)
        out.append(pa.array([None if m else v for v, m in zip(picked, mask, strict=True)],
                            pa.string()))
    return out


def _ext_chunks(columns) -> list:
    return [to_extension_array(fsstgpu.compress(c, split_size=4096)) for c in columns]


@pytest.mark.parametrize("count", [2, 5])
def test_chunks_checked_together_equal_each_alone(lines, count, monkeypatch):
    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    columns = _pieces(rng, lines, count)
    chunks = _ext_chunks(columns)
    joined = arrow_read._joined_storage(chunks)  # the one pass takes them all
    assert joined is not None and arrow_read._one_pass(chunks[0].type, joined) is not None
    together = from_extension_array(pa.chunked_array(chunks))
    assert list(together.chunk_lengths) == [len(c) for c in columns], seed
    with monkeypatch.context() as mp:  # the careful read of the same chunks
        mp.setattr(arrow_read, "_one_pass", lambda ftype, storage: None)
        careful = from_extension_array(pa.chunked_array(chunks))
    assert together.equals(careful), seed
    got = fsstgpu.decompress(together, device="cpu")
    assert [len(c) for c in got.chunks] == [len(c) for c in columns], seed
    assert got.equals(pa.chunked_array(columns, pa.string())), seed


def _with_table(ext, index: np.ndarray, dictionary: pa.Array):
    """``ext`` with its ``table`` field made of ``index`` (uint16, unchecked) into
    ``dictionary``."""
    storage = ext.storage
    forged_table = pa.DictionaryArray.from_arrays(pa.array(index, pa.uint16()), dictionary,
                                                  safe=False)
    fields = [forged_table if name == "table" else storage.field(name)
              for name in storage.type.names]
    struct = pa.StructArray.from_buffers(storage.type, len(storage), [storage.buffers()[0]],
                                         storage.null_count, storage.offset, fields)
    return pa.ExtensionArray.from_storage(ext.type, struct)


def _first_valid_on(ext, k: int):
    """``ext``'s table indices with its first valid string's set to ``k``."""
    table = ext.storage.field("table")
    index = np.frombuffer(table.indices.buffers()[1], np.uint16)[: len(table)].copy()
    index[ext.storage.is_valid().to_numpy(zero_copy_only=False).argmax()] = k
    return index


def _forged_index(ext):
    """``ext`` with its first valid string's table index past the dictionary's end."""
    dictionary = ext.storage.field("table").dictionary
    return _with_table(ext, _first_valid_on(ext, len(dictionary) + 7), dictionary)


@pytest.mark.parametrize("forge", ["index", "codes"])
def test_a_corrupt_chunk_among_several_is_refused(lines, forge):
    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    chunks = _ext_chunks([c for c in _pieces(rng, lines, 4) if len(c) and c.null_count < len(c)]
                         or [pa.array(["abc", "abd"])] * 2)
    k = int(rng.integers(0, len(chunks)))
    try:
        if forge == "index":
            chunks[k] = _forged_index(chunks[k])
            from_extension_array(pa.chunked_array(chunks))
        else:  # checked together, then refused by the decoder
            chunks[k] = poisoned_codes(chunks[k])
            fsstgpu.decompress(from_extension_array(pa.chunked_array(chunks)), device="cpu")
    except CorruptDataError:
        return
    pytest.fail(f"chunk {k} of {len(chunks)} was not refused (seed {seed})")


def _write(path, ext_groups) -> None:
    """One row group per extension array, column ``s``, and an int column beside it."""
    schema = pa.schema([("s", ext_groups[0].type), ("n", pa.int64())])
    with pq.ParquetWriter(path, schema, store_schema=True, write_statistics=False) as w:
        for ext in ext_groups:
            w.write_table(pa.table([ext, pa.array(np.arange(len(ext)))], schema=schema))


def test_row_group_runs_keep_to_their_rows(tmp_path):
    sizes = [5, 5, 5, 20, 1, 1, 30, 2]
    _write(tmp_path / "r.parquet", _ext_chunks([pa.array(["ab"] * n) for n in sizes]))
    with Source(tmp_path / "r.parquet") as source:
        runs = unit_reads.row_group_runs(source, 12)
    assert runs == [(0, 1), (2,), (3,), (4, 5), (6,), (7,)]
    assert [k for run in runs for k in run] == list(range(len(sizes)))
    with Source(tmp_path / "r.parquet") as source:
        assert unit_reads.row_group_runs(source, 1 << 40) == [tuple(range(len(sizes)))]
        sizes = [source.parquet_metadata.row_group(k).total_byte_size for k in range(8)]
        by_bytes = unit_reads.row_group_runs(source, 1 << 40, sizes[0] + sizes[1])
    assert by_bytes[0] == (0, 1) and [k for run in by_bytes for k in run] == list(range(8))


def _many_row_groups(tmp_path, rng, lines, count=12):
    columns = _pieces(rng, lines, count)
    path = tmp_path / "many.parquet"
    _write(path, _ext_chunks(columns))
    return path, columns


@pytest.mark.gpu
@pytest.mark.parametrize("group_rows", [1, 1000, 1 << 40])
def test_gpu_many_small_row_groups_read_as_the_cpu_reads(tmp_path, lines, group_rows,
                                                         monkeypatch):
    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    path, columns = _many_row_groups(tmp_path, rng, lines)
    monkeypatch.setattr(unit_reads, "GROUP_ROWS", group_rows)
    cpu = read_table(path, device="cpu")
    with Source(path) as source:
        got = reader.read_to_device(source)
    arrow = got["s"].to_arrow()
    assert arrow.equals(cpu.column("s")), seed
    assert [len(c) for c in arrow.chunks] == [len(c) for c in columns], seed
    assert got["n"].equals(cpu.column("n")), seed


@pytest.mark.gpu
def test_gpu_a_run_refused_as_one_is_read_row_group_by_row_group(tmp_path, lines, monkeypatch):
    """A run that does not pass as one column (say, more table runs than a column may have)
    is checked row group by row group."""
    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    path, columns = _many_row_groups(tmp_path, rng, lines)
    monkeypatch.setattr(unit_reads, "GROUP_ROWS", 1 << 40)
    alone = reader.from_extension_array

    def refuse_runs(column):
        if isinstance(column, pa.ChunkedArray) and column.num_chunks > 1:
            raise CorruptDataError("too many table runs")
        return alone(column)

    monkeypatch.setattr(reader, "from_extension_array", refuse_runs)
    with Source(path) as source:
        got = reader.read_to_device(source)
    arrow = got["s"].to_arrow()
    assert arrow.equals(pa.chunked_array(columns, pa.string())), seed
    assert [len(c) for c in arrow.chunks] == [len(c) for c in columns], seed


def _unusable_table(ext):
    """``ext`` with its first valid string's table index on an entry appended to the
    dictionary whose bytes are no symbol table: a forged table that survives pyarrow's Parquet
    writer (an index past the dictionary does not: the writer looks it up in the dictionary,
    reading past its end, and wrote what it found there, at times the real table's index)."""
    dictionary = ext.storage.field("table").dictionary
    values = pa.concat_arrays([dictionary, pa.array([b"\x07not a table"], dictionary.type)])
    return _with_table(ext, _first_valid_on(ext, len(dictionary)), values)


def _file_with_a_bad_row_group(path, lines, forge: str) -> int:
    """A file of 8 row groups (one run), one of them forged (``forge``: ``"index"``, a table
    that is none (:func:`_unusable_table`), or its codes); returns that row group's index (the
    seed printed: pytest shows it on failure)."""
    seed = fresh_seed()
    print("seed", seed)
    rng = np.random.default_rng(seed)
    columns = [c for c in _pieces(rng, lines, 8) if len(c) > c.null_count] or [
        pa.array(["abc"])] * 8
    chunks = _ext_chunks(columns)
    bad = int(rng.integers(0, len(chunks)))
    chunks[bad] = (_unusable_table(chunks[bad]) if forge == "index"
                   else poisoned_codes(chunks[bad]))
    _write(path, chunks)
    return bad


@pytest.mark.gpu
@pytest.mark.parametrize("forge", ["index", "codes"])
def test_gpu_a_corrupt_row_group_in_a_run_is_named(tmp_path, lines, forge, monkeypatch):
    bad = _file_with_a_bad_row_group(tmp_path / "bad.parquet", lines, forge)
    monkeypatch.setattr(unit_reads, "GROUP_ROWS", 1 << 40)  # one run: every row group
    with Source(tmp_path / "bad.parquet") as source, pytest.raises(
            CorruptDataError, match=f"bad.parquet: row group {bad}, column 's'"):
        reader.read_to_device(source)


def test_runs_read_as_row_groups_do(tmp_path, lines):
    """Runs of row groups (every kind of column: fsst, nested with fsst leaves, plain) convert
    to what their row groups give one by one, in the same chunks."""
    from fsstgpu.formats import compress_file

    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    n = int(rng.integers(600, 2000))
    picked = [lines[i] for i in rng.integers(0, len(lines), 3 * n)]
    table = pa.table({
        "s": pa.array([None if i % 11 == 0 else picked[i] for i in range(n)]),
        "lst": pa.array([[picked[n + i], None, picked[2 * n + i]] if i % 4 else None
                         for i in range(n)]),
        "i": pa.array(np.arange(n)),
    })
    pq.write_table(table, tmp_path / "p.parquet", row_group_size=int(rng.integers(50, 300)))
    compress_file(tmp_path / "p.parquet", tmp_path / "c.parquet")
    with Source(tmp_path / "c.parquet") as source:
        checked = reader._compressed_columns(source)

        def convert(run, name, parts):
            if name == "s":
                return [c for _, c in reader._checked_run(source, run, name, parts)]
            return reader._joined_parts(run, name, parts, checked)

        runs = unit_reads.row_group_runs(source, int(rng.integers(1, 1000)))
        got = list(unit_reads.run_units(source, runs, source.schema.names, 3, unit_reads.WHOLE,
                                     convert))
        alone = list(unit_reads.parallel_units(source, workers=2, convert=checked))
    assert [run for run, _ in got] == runs and len(alone) == sum(map(len, runs)), seed
    s = pa.chunked_array([c for _, unit in got for carr in unit["s"]
                          for c in fsstgpu.decompress(carr, device="cpu").chunks])
    want = pa.chunked_array([c for unit in alone
                             for c in fsstgpu.decompress(unit["s"], device="cpu").chunks])
    assert s.equals(want) and [len(c) for c in s.chunks] == [len(c) for c in want.chunks], seed
    lst = [unit["lst"] for _, unit in got]
    assert pa.chunked_array([c for x in lst for c in x.column.chunks]).equals(
        pa.chunked_array([c for unit in alone for c in unit["lst"].column.chunks])), seed
    assert sum(len(x.checked) for x in lst) == sum(len(u["lst"].checked) for u in alone), seed
    assert pa.chunked_array([c for _, unit in got for c in unit["i"].chunks]).equals(
        table.column("i")), seed


def test_cpu_reads_of_runs_keep_the_row_groups(tmp_path, lines, monkeypatch):
    """A whole-file CPU read decodes runs of row groups at once: the same table, the row
    groups as its chunks, with row_groups= / filters= choosing some, and dictionary columns."""
    from fsstgpu.formats import compress_file, file_reads

    read_runs = []

    def spy(source, runs, *args):
        read_runs.extend(runs)
        return unit_reads.run_units(source, runs, *args)

    monkeypatch.setattr(file_reads, "run_units", spy)

    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    n = int(rng.integers(500, 3000))
    picked = [lines[i] for i in rng.integers(0, len(lines), n)]
    table = pa.table({
        "s": pa.array([None if i % 7 == 0 else picked[i] for i in range(n)]),
        "d": pa.array([picked[i % 13] for i in range(n)]).dictionary_encode(),
        "i": pa.array(np.arange(n)),
    })
    size = int(rng.integers(40, 400))
    pq.write_table(table, tmp_path / "p.parquet", row_group_size=size)
    compress_file(tmp_path / "p.parquet", tmp_path / "c.parquet")
    got = read_table(tmp_path / "c.parquet", device="cpu")
    assert got.equals(table), seed
    assert max(map(len, read_runs)) > 1 or n <= size, (seed, read_runs)  # read in runs
    for name in ("s", "d", "i"):
        assert [len(c) for c in got.column(name).chunks] == [
            len(c) for c in pq.read_table(tmp_path / "p.parquet").column(name).chunks], seed
    count = pq.ParquetFile(tmp_path / "p.parquet").num_row_groups
    some = sorted({int(k) for k in rng.integers(0, count, 4)})
    part = read_table(tmp_path / "c.parquet", device="cpu", row_groups=some)
    want = pa.concat_tables([pq.ParquetFile(tmp_path / "p.parquet").read_row_group(k)
                             for k in some])
    assert part.equals(want), (seed, some)
    cut = int(rng.integers(0, n))
    kept = read_table(tmp_path / "c.parquet", device="cpu", filters=[("i", ">=", cut)])
    assert kept.column("s").equals(table.column("s").slice(cut)), (seed, cut)


@pytest.mark.parametrize("forge", ["index", "codes"])
def test_cpu_read_names_a_corrupt_row_group_in_a_run(tmp_path, lines, forge):
    bad = _file_with_a_bad_row_group(tmp_path / "bad.parquet", lines, forge)
    with pytest.raises(CorruptDataError, match=f"bad.parquet: row group {bad}, column 's'"):
        read_table(tmp_path / "bad.parquet", device="cpu")


def test_decode_column_checks_small_chunks_together(lines, monkeypatch):
    """decode_column checks and decodes consecutive chunks that fit its limit together (one
    from_extension_array, one decode: a file's small row groups), in the chunks each gives
    alone; a corrupt chunk among them is refused as it is alone, with the same message."""
    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    columns = [c for c in _pieces(rng, lines, 6) if c.null_count < len(c)] or [
        pa.array(["abc", None])] * 3
    chunks = _ext_chunks(columns)
    reads = []
    real = arrow_read.from_extension_array

    def counted(arr):
        reads.append(arr.num_chunks if isinstance(arr, pa.ChunkedArray) else 1)
        return real(arr)

    monkeypatch.setattr(arrow_read, "from_extension_array", counted)
    col = pa.chunked_array(chunks)
    got, nbytes = arrow_read.decode_column(col)
    want = pa.chunked_array(columns, pa.string())
    assert reads == [len(chunks)] if len(chunks) > 1 else reads == [1], seed
    assert got.equals(want) if len(chunks) > 1 else got.equals(columns[0]), seed
    assert [len(c) for c in pa.chunked_array(got).chunks] == [len(c) for c in columns], seed
    assert nbytes == sum(pa.compute.sum(pa.compute.binary_length(c)).as_py() or 0
                         for c in columns), seed
    # a limit that fits some chunks together: groups of consecutive chunks, as each alone
    sizes = [pa.compute.sum(pa.compute.binary_length(c)).as_py() or 0 for c in columns]
    limit = max(max(sizes), 1) + 1
    reads.clear()
    got, _ = arrow_read.decode_column(col, max_chunk_bytes=limit)
    assert pa.chunked_array(got).equals(want), seed
    assert [len(c) for c in pa.chunked_array(got).chunks] == [len(c) for c in columns], seed
    assert sum(reads) == len(chunks), seed  # each chunk checked once, in some group
    # groups hold at most GROUP_BYTES string bytes (joining copies the codes): one a chunk here
    monkeypatch.setattr(arrow_read, "GROUP_BYTES", 1)
    reads.clear()
    assert pa.chunked_array(arrow_read.decode_column(col)[0]).equals(want), seed
    assert reads == [1] * len(chunks), seed
    k = int(rng.integers(0, len(chunks)))
    bad = chunks[:k] + [poisoned_codes(chunks[k])] + chunks[k + 1:]
    with pytest.raises(CorruptDataError) as alone:
        arrow_read.decode_column(bad[k])
    with pytest.raises(CorruptDataError) as together:
        arrow_read.decode_column(pa.chunked_array(bad))
    assert str(together.value) == str(alone.value), seed


@pytest.mark.parametrize("column", ["s", "n"])
def test_cpu_read_names_a_damaged_page_in_a_run(tmp_path, lines, column):
    """A page that fails its checksum in a run of row groups (a whole-file CPU read) is named
    by its row group and column."""
    seed = fresh_seed()
    rng = np.random.default_rng(seed)
    chunks = _ext_chunks([pa.array([f"{lines[int(i)]} {j}" for j, i in enumerate(
        rng.integers(0, len(lines), 200))]) for _ in range(6)])
    path = tmp_path / "bad.parquet"
    schema = pa.schema([("s", chunks[0].type), ("n", pa.int64())])
    with pq.ParquetWriter(path, schema, store_schema=True, write_page_checksum=True,
                          compression="none") as w:
        for ext in chunks:
            w.write_table(pa.table([ext, pa.array(np.arange(len(ext)))], schema=schema))
    bad = int(rng.integers(0, len(chunks)))
    meta = pq.read_metadata(path).row_group(bad)
    leaf = meta.column([meta.column(j).path_in_schema for j in range(meta.num_columns)].index(
        "s.codes" if column == "s" else "n"))
    data = bytearray(path.read_bytes())
    start = (leaf.dictionary_page_offset if leaf.has_dictionary_page
             else leaf.data_page_offset)
    data[start + leaf.total_compressed_size - 1] ^= 0xFF  # the chunk's last page's data
    path.write_bytes(bytes(data))
    with pytest.raises(CorruptDataError,
                       match=f"bad.parquet: row group {bad}, column '{column}'"):
        read_table(path, device="cpu")


def _group_bytes(chunks, limit: int) -> list:
    """``_decodable``'s groups of ``chunks`` at ``limit``, as each piece's string bytes."""
    groups = arrow_read._decodable(pa.chunked_array(chunks), limit)
    return [[arrow_read.decode_column(piece)[1] for piece in group] for group in groups]


def test_chunks_group_up_to_exactly_the_limit(monkeypatch):
    """Consecutive chunks form one group while their bytes stay within ``max_chunk_bytes`` and
    GROUP_BYTES, whichever is smaller: a sum exactly at the bound joins, one byte over starts a
    new group; a chunk exactly at the bound is kept whole, one byte over it is cut (the tests
    above never met either bound exactly: moved by one, no test failed)."""
    text = {0: [""], 2: ["ab"], 3: ["a", None, "bc"], 4: ["abcd"], 6: ["abc", "def"],
            7: ["abc", None, "defg"]}

    def chunks(*sizes):
        return [to_extension_array(fsstgpu.compress(pa.array(text[s]))) for s in sizes]

    some = chunks(2, 2, 2, 4, 3, 3)
    want = [[2, 2, 2], [4], [3, 3]]  # 6 joins; 6 + 4 and 4 + 3 do not
    assert _group_bytes(some, 6) == want
    assert _group_bytes(some, 7) != want  # (the case can tell the bound)
    assert _group_bytes(chunks(6, 0, 2), 6) == [[6, 0], [2]]  # a chunk at the bound: whole
    assert _group_bytes(chunks(7, 2), 6) == [[3], [4], [2]]  # one byte over: cut
    monkeypatch.setattr(arrow_read, "GROUP_BYTES", 6)  # the same bound from GROUP_BYTES
    assert _group_bytes(some, INT32_MAX) == want
    assert _group_bytes(some, 7) == want
    assert _group_bytes(chunks(7, 2), 6) == [[3], [4], [2]]
    assert _group_bytes(chunks(7, 2), INT32_MAX) == [[7], [2]]  # over GROUP_BYTES: alone, whole
    monkeypatch.setattr(arrow_read, "GROUP_BYTES", 7)
    assert _group_bytes(some, 6) == want
    assert pa.chunked_array(arrow_read.decode_column(pa.chunked_array(some), max_chunk_bytes=6)[0]
                            ).to_pylist() == ["ab"] * 3 + ["abcd"] + ["a", None, "bc"] * 2


def test_lengths_under_their_own_nulls_do_not_cut_a_chunk():
    """Stored lengths under the lengths field's own nulls (here 5, another writer's choice)
    count in the quick bound; over the limit, the bound from the lengths without them decides:
    two chunks of 4 bytes each, a quick bound of 9 each, form one group at 8."""
    ext = to_extension_array(fsstgpu.compress(pa.array(["ab", None, "cd"])))
    storage = ext.storage
    lengths = pa.Array.from_buffers(pa.uint32(), 3, [
        pa.py_buffer(np.packbits([1, 0, 1], bitorder="little")),
        pa.py_buffer(np.array([2, 5, 2], np.uint32))], 1)
    fields = [storage.field(i) for i in range(storage.type.num_fields)]
    fields[storage.type.get_field_index("lengths")] = lengths
    forged = pa.ExtensionArray.from_storage(ext.type, pa.StructArray.from_arrays(
        fields, fields=list(storage.type), mask=pa.array([False, True, False])))
    assert arrow_read._length_bound(forged.storage.field("lengths")) == 9
    assert _group_bytes([forged, forged], 8) == [[4, 4]]
    assert _group_bytes([forged, forged], 7) == [[4], [4]]
    # within the limit, the quick bound stands (no pass): 9 + 9 > 9, so two groups
    assert _group_bytes([forged, forged], 9) == [[4], [4]]
    got, nbytes = arrow_read.decode_column(pa.chunked_array([forged] * 2), max_chunk_bytes=8)
    assert got.to_pylist() == ["ab", None, "cd"] * 2 and nbytes == 8
