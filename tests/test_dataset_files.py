"""Datasets (directories, globs, lists of files) and fsspec URLs as inputs."""

from __future__ import annotations

import errno
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

import fsstgpu.formats.datasets as datasets
from fsstgpu import CorruptDataError
from fsstgpu.cli.app import app
from fsstgpu.datasets import generate
from fsstgpu.formats import (
    compress_dataset,
    compress_file,
    decompress_dataset,
    decompress_file,
    read_dataset,
    read_dataset_device,
    read_table,
)
from fsstgpu.formats.atomic import TEMP_SUFFIX
from fsstgpu.formats.locations import dataset_files


def _table(n, seed):
    return pa.table({"u": generate("urls", n, seed), "w": generate("null_heavy", n, seed + 1),
                     "k": pa.array(range(n))})


@pytest.fixture
def dataset(tmp_path):
    """A partitioned dataset: three files in two folders, and a file that is not data."""
    root = tmp_path / "in"
    (root / "year=2025").mkdir(parents=True)
    (root / "year=2026").mkdir()
    tables = {"year=2025/a.parquet": _table(300, 1), "year=2025/b.parquet": _table(200, 3),
              "year=2026/c.parquet": _table(250, 5)}
    for rel, t in tables.items():
        pq.write_table(t, root / rel, row_group_size=90)
    (root / "_SUCCESS").write_bytes(b"")
    return root, tables


def test_directory_dataset_round_trips_file_by_file(dataset, tmp_path):
    root, tables = dataset
    done = []
    info = compress_dataset(root, tmp_path / "c", progress=lambda **kw: done.append(kw))
    assert [r["output"][len(str(tmp_path / "c")) + 1:] for r in info] == list(tables)
    assert [d["files_done"] for d in done] == [1, 2, 3] and done[-1]["files_total"] == 3
    decompress_dataset(tmp_path / "c", tmp_path / "p", device="cpu")
    for rel, t in tables.items():
        assert pq.read_table(tmp_path / "p" / rel).equals(t)
        assert (pq.ParquetFile(tmp_path / "p" / rel).metadata.num_row_groups
                == pq.ParquetFile(root / rel).metadata.num_row_groups == -(-len(t) // 90))
    whole = read_dataset(tmp_path / "c", device="cpu")  # the hive folders' year column too
    assert whole.drop_columns(["year"]).equals(pa.concat_tables(tables.values()))


@pytest.mark.parametrize("progress", ["yes", True, 1])
def test_a_progress_that_is_not_callable_is_refused_before_any_output(dataset, tmp_path,
                                                                       progress):
    # it was first called after a file (a unit) was written: the dataset's first file was left
    # written, then TypeError "'str' object is not callable" from inside the pipeline
    root, _ = dataset
    with pytest.raises(TypeError, match="progress must be a callable or None, not"):
        compress_dataset(root, tmp_path / "c", progress=progress)
    assert not (tmp_path / "c").exists()
    compress_dataset(root, tmp_path / "c")
    with pytest.raises(TypeError, match="progress must be a callable or None"):
        decompress_dataset(tmp_path / "c", tmp_path / "p", progress=progress)
    assert not (tmp_path / "p").exists()
    for write in (compress_file, decompress_file):
        with pytest.raises(TypeError, match="progress must be a callable or None"):
            write(tmp_path / "c" / "year=2025" / "a.parquet", tmp_path / "x.parquet",
                  progress=progress)
        assert not (tmp_path / "x.parquet").exists()


def test_globs_and_lists(dataset, tmp_path):
    root, tables = dataset
    assert [rel for _, rel in dataset_files(str(root / "year=2025" / "*.parquet"))] == [
        "a.parquet", "b.parquet"]
    files = [root / "year=2025" / "a.parquet", root / "year=2026" / "c.parquet"]
    compress_dataset(files, tmp_path / "c")
    assert sorted(p.name for p in (tmp_path / "c").iterdir()) == ["a.parquet", "c.parquet"]
    with pytest.raises(ValueError, match="a.parquet"):
        dataset_files([root / "year=2025" / "a.parquet", root / "year=2025" / "a.parquet"])
    with pytest.raises(FileNotFoundError, match="no Parquet or Arrow IPC file"):
        dataset_files(str(tmp_path / "nothing*.parquet"))


def test_a_glob_over_hive_folders_keeps_them(dataset, tmp_path):
    """'ds/*/*.parquet' with one file name in several partitions (Spark's part-0 in each) was
    refused as "several inputs would be written as ..."; the folders below the pattern's fixed
    part are kept instead."""
    root, tables = dataset
    for old, new in (("year=2025/a.parquet", "year=2025/part-0.parquet"),
                     ("year=2026/c.parquet", "year=2026/part-0.parquet")):
        (root / old).rename(root / new)
    expected = ["year=2025/b.parquet", "year=2025/part-0.parquet", "year=2026/part-0.parquet"]
    assert [rel for _, rel in dataset_files(str(root / "*" / "*.parquet"))] == expected
    assert [rel for _, rel in dataset_files(str(root / "year=2025" / "*.parquet"))] == [
        "b.parquet", "part-0.parquet"]
    info = compress_dataset(str(root / "*" / "*.parquet"), tmp_path / "c")
    assert [r["output"] for r in info] == [str(tmp_path / "c" / rel) for rel in expected]
    assert read_table(tmp_path / "c" / "year=2026" / "part-0.parquet", device="cpu").equals(
        tables["year=2026/c.parquet"])


def test_a_bad_file_is_named_and_the_others_are_kept(dataset, tmp_path):
    root, tables = dataset
    (root / "year=2026" / "c.parquet").write_bytes(b"PAR1 but not really")
    with pytest.raises(CorruptDataError, match="c.parquet"):
        compress_dataset(root, tmp_path / "c")
    done = sorted(p.relative_to(tmp_path / "c").as_posix()
                  for p in (tmp_path / "c").rglob("*") if p.is_file())
    assert done == ["year=2025/a.parquet", "year=2025/b.parquet"]
    assert read_table(tmp_path / "c" / "year=2025" / "a.parquet", device="cpu").equals(
        tables["year=2025/a.parquet"])
    assert not list((tmp_path / "c").rglob(f"*{TEMP_SUFFIX}"))
    # outputs are kept unless forced; an output folder that is a file is refused
    (root / "year=2026" / "c.parquet").unlink()
    with pytest.raises(FileExistsError):
        compress_dataset(root, tmp_path / "c")
    compress_dataset(root, tmp_path / "c", force=True)
    (tmp_path / "f").write_bytes(b"x")
    with pytest.raises(NotADirectoryError):
        compress_dataset(root, tmp_path / "f")


@pytest.mark.parametrize("failing", ["year=2025/a.parquet", "year=2026/c.parquet"])
def test_a_failed_dataset_leaves_no_folder_it_made_empty(dataset, tmp_path, monkeypatch,
                                                          failing):
    # a full disk, say, at one file: the outputs written before it stay; the folders made for
    # it (and the output folder, when nothing was written) go, as its temporary file does
    root, _ = dataset
    real = datasets.compress_file

    def compress(path, out, *args, **kwargs):
        if str(path).endswith(failing):
            raise OSError(errno.ENOSPC, "No space left on device", str(out))
        return real(path, out, *args, **kwargs)

    monkeypatch.setattr(datasets, "compress_file", compress)
    (tmp_path / "kept").mkdir()  # an output folder that was there stays, even empty
    for dst in (tmp_path / "out" / "deep", tmp_path / "kept"):
        with pytest.raises(OSError, match="No space left"):
            compress_dataset(root, dst)
    left = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*")
                  if p.relative_to(tmp_path).parts[0] in ("out", "kept"))
    if failing.startswith("year=2025"):
        assert left == ["kept"]
    else:
        assert left == ["kept", "kept/year=2025", "kept/year=2025/a.parquet",
                        "kept/year=2025/b.parquet", "out", "out/deep", "out/deep/year=2025",
                        "out/deep/year=2025/a.parquet", "out/deep/year=2025/b.parquet"]


def test_read_dataset_refuses_files_of_different_schemas(tmp_path):
    pq.write_table(pa.table({"s": ["a"]}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"s": [1]}), tmp_path / "b.parquet")
    with pytest.raises(ValueError, match="b.parquet: its schema differs"):
        read_dataset(tmp_path, device="cpu")


def test_fsspec_urls_are_inputs(tmp_path):
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")
    table = _table(400, 7)
    with fs.open("/fsstgpu-test/raw/a.parquet", "wb") as f:
        pq.write_table(table, f, row_group_size=150)
    try:
        info = compress_file("memory://fsstgpu-test/raw/a.parquet", tmp_path / "c.parquet")
        assert info["rows"] == 400 and info["columns"] == ["u", "w"]
        with fs.open("/fsstgpu-test/comp/a.parquet", "wb") as f:
            f.write((tmp_path / "c.parquet").read_bytes())
        url = "memory://fsstgpu-test/comp/a.parquet"
        assert read_table(url, device="cpu").equals(table)
        assert read_dataset("memory://fsstgpu-test/comp", device="cpu").equals(table)
        # raw/ and comp/ both hold a.parquet: names below the pattern's fixed folders differ
        assert [rel for _, rel in dataset_files("memory://fsstgpu-test/*/a.parquet")] == [
            "comp/a.parquet", "raw/a.parquet"]
        compress_dataset("memory://fsstgpu-test/raw", tmp_path / "ds")
        assert read_table(tmp_path / "ds" / "a.parquet", device="cpu").equals(table)
        with pytest.raises(FileNotFoundError, match="memory://fsstgpu-test/none.parquet"):
            read_table("memory://fsstgpu-test/none.parquet", device="cpu")
        # outputs to URLs: uploaded whole when complete, never over an existing object
        out = "memory://fsstgpu-test/out/a.parquet"
        compress_file("memory://fsstgpu-test/raw/a.parquet", out)
        assert read_table(out, device="cpu").equals(table)
        with pytest.raises(FileExistsError, match="already exists"):
            compress_file("memory://fsstgpu-test/raw/a.parquet", out)
        compress_file("memory://fsstgpu-test/raw/a.parquet", out, force=True)
        with pytest.raises(ValueError, match="the output is the input"):
            compress_file(out, out, force=True)
        compress_dataset("memory://fsstgpu-test/raw", "memory://fsstgpu-test/ds2")
        assert read_dataset("memory://fsstgpu-test/ds2", device="cpu").equals(table)
        # a write that fails half way (row group 1 of 3 is damaged) uploads nothing
        pq.write_table(table, tmp_path / "in.parquet", row_group_size=150,
                       write_page_checksum=True)
        data = bytearray((tmp_path / "in.parquet").read_bytes())
        chunk = pq.ParquetFile(tmp_path / "in.parquet").metadata.row_group(1).column(0)
        start = (chunk.dictionary_page_offset if chunk.has_dictionary_page
                 else chunk.data_page_offset)
        data[start + chunk.total_compressed_size // 2] ^= 0x20
        (tmp_path / "bad.parquet").write_bytes(bytes(data))
        with pytest.raises(CorruptDataError, match="row group 1"):
            compress_file(tmp_path / "bad.parquet", "memory://fsstgpu-test/bad.parquet")
        assert not fs.exists("/fsstgpu-test/bad.parquet")
    finally:
        fs.rm("/fsstgpu-test", recursive=True)


@pytest.mark.gpu
def test_gpu_read_dataset_joins_the_files_on_the_device(dataset, tmp_path):
    root, tables = dataset
    compress_dataset(root, tmp_path / "c")
    cols = read_dataset_device(tmp_path / "c")
    whole = pa.concat_tables(tables.values())
    assert read_dataset(tmp_path / "c", device="gpu").select(["u", "w"]).equals(
        read_dataset(tmp_path / "c", device="cpu").select(["u", "w"]))
    for name in ("u", "w"):
        assert cols[name].to_arrow().equals(whole.column(name))
    assert cols["k"].equals(whole.column("k"))
    assert cols["year"].to_pylist() == [2025] * 500 + [2026] * 250  # hive column, on the host


def test_cli_compresses_and_decompresses_a_dataset(dataset, tmp_path):
    import json

    from typer.testing import CliRunner

    from fsstgpu.cli.app import app

    root, tables = dataset
    runner = CliRunner()
    res = runner.invoke(app, ["compress", str(root), str(tmp_path / "c"), "--json"])
    assert res.exit_code == 0, res.stderr
    assert [r["rows"] for r in json.loads(res.stdout)] == [len(t) for t in tables.values()]
    res = runner.invoke(app, ["decompress", str(tmp_path / "c" / "*" / "*.parquet"),
                              str(tmp_path / "p"), "--device", "cpu"])
    assert res.exit_code == 0, res.stderr
    assert sorted(p.relative_to(tmp_path / "p").as_posix()  # the hive folders kept
                  for p in (tmp_path / "p").rglob("*.parquet")) == list(tables)
    for rel, t in tables.items():
        assert pq.read_table(tmp_path / "p" / rel).equals(t)
    res = runner.invoke(app, ["compress", str(root), str(tmp_path / "d"), "--format", "arrow"])
    assert res.exit_code == 2 and "--format" in res.stderr
    res = runner.invoke(app, ["compress", str(tmp_path / "none*.parquet"), str(tmp_path / "e")])
    assert res.exit_code == 2 and "no such file, folder or matching files" in " ".join(
        res.stderr.replace("│", " ").split())


def test_cli_reads_and_writes_urls(tmp_path):
    fsspec = pytest.importorskip("fsspec")
    from typer.testing import CliRunner

    from fsstgpu.cli.app import app

    table = _table(300, 9)
    pq.write_table(table, tmp_path / "in.parquet", row_group_size=100)
    fs = fsspec.filesystem("memory")
    runner = CliRunner()
    try:
        res = runner.invoke(app, ["compress", str(tmp_path / "in.parquet"),
                                  "memory://fsstgpu-cli/c.parquet"])
        assert res.exit_code == 0, res.stderr
        res = runner.invoke(app, ["decompress", "memory://fsstgpu-cli/c.parquet",
                                  str(tmp_path / "out.parquet"), "--device", "cpu"])
        assert res.exit_code == 0, res.stderr
        assert pq.read_table(tmp_path / "out.parquet").equals(table)
        res = runner.invoke(app, ["compress", str(tmp_path / "in.parquet"),
                                  "memory://fsstgpu-cli/c.parquet"])
        assert res.exit_code == 1 and "already exists" in res.stderr
    finally:
        fs.rm("/fsstgpu-cli", recursive=True)


def test_a_folder_that_cannot_be_read_is_an_error_not_a_smaller_dataset(dataset, tmp_path,
                                                                         monkeypatch):
    """Path.rglob skipped a subfolder it had no permission to list: `fsstgpu compress ds out`
    exited 0 without that folder's files. (Root reads every folder, so the refusal is
    simulated where os.walk lists the folder.)"""
    root, tables = dataset
    listing = os.scandir

    def scandir(path="."):
        if os.fspath(path).endswith("year=2026"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return listing(path)

    monkeypatch.setattr(os, "scandir", scandir)
    with pytest.raises(PermissionError, match="year=2026"):
        dataset_files(root)
    with pytest.raises(PermissionError):
        compress_dataset(root, tmp_path / "c")
    monkeypatch.setattr(os, "scandir", listing)
    assert [rel for _, rel in dataset_files(root)] == list(tables)


def test_an_output_that_exists_is_named_before_any_file_is_written(dataset, tmp_path):
    """With c.parquet's output already there, compress of the dataset wrote a.parquet and
    b.parquet, then failed: a rerun without --force then failed on a.parquet."""
    root, tables = dataset
    out = tmp_path / "c"
    (out / "year=2026").mkdir(parents=True)
    (out / "year=2026" / "c.parquet").write_bytes(b"keep me")
    with pytest.raises(FileExistsError, match="c.parquet: already exists"):
        compress_dataset(root, out)
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == [
        "year=2026/c.parquet"]
    assert (out / "year=2026" / "c.parquet").read_bytes() == b"keep me"
    compress_dataset(root, out, force=True)
    assert read_dataset(out, device="cpu", partitioning=None).equals(
        pa.concat_tables(tables.values()))


def test_names_starting_with_underscore_or_dot_are_not_data(dataset, tmp_path):
    """As pyarrow.dataset: _temporary/ (a job still writing), _metadata, .hidden are skipped
    below the root, in folders and globs; files named explicitly are taken."""
    import pyarrow.dataset as pads

    root, tables = dataset
    stray = _table(10, 99)
    for rel in ("_temporary/0/part-9.parquet", "year=2026/_tmp.parquet",
                "year=2026/.c.parquet.crc.parquet", ".hidden/x.parquet", "_metadata.parquet"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(stray, root / rel)
    assert [rel for _, rel in dataset_files(root)] == list(tables)
    assert [rel for _, rel in dataset_files(str(root / "*" / "*.parquet"))] == list(tables)
    assert [rel for _, rel in dataset_files(str(root / "**" / "*.parquet"))] == list(tables)
    seen = sorted(os.path.relpath(f, root) for f in pads.dataset(root, format="parquet").files)
    assert seen == list(tables)  # what pyarrow.dataset reads
    assert [rel for _, rel in dataset_files(str(root / "_temporary" / "0" / "*.parquet"))] == [
        "part-9.parquet"]  # asked for by the pattern's fixed part: taken
    assert len(dataset_files([root / "_metadata.parquet"])) == 1
    compress_dataset(root, tmp_path / "c")
    assert read_dataset(tmp_path / "c", device="cpu", partitioning=None).equals(
        pa.concat_tables(tables.values()))


def test_a_dataset_output_named_as_a_file_is_refused(dataset, tmp_path):
    """OUT 'x.parquet' silently became a folder of that name; now refused, nothing written. A
    folder of that name that exists is taken (the user made it so)."""
    root, tables = dataset
    with pytest.raises(NotADirectoryError, match="x.parquet: the output of a dataset is a folder"):
        compress_dataset(root, tmp_path / "x.parquet")
    assert not (tmp_path / "x.parquet").exists()
    (tmp_path / "y.parquet").mkdir()
    compress_dataset(root, tmp_path / "y.parquet")
    assert (tmp_path / "y.parquet" / "year=2026" / "c.parquet").is_file()
    from typer.testing import CliRunner

    from fsstgpu.cli.app import app

    res = CliRunner().invoke(app, ["compress", str(root), str(tmp_path / "z.PQ")])
    assert res.exit_code == 2 and "z.PQ: the output of a dataset is a folder" in res.stderr
    assert not (tmp_path / "z.PQ").exists()
    fsspec = pytest.importorskip("fsspec")
    with pytest.raises(NotADirectoryError, match="memory://fsstgpu-out/x.arrow"):
        compress_dataset(root, "memory://fsstgpu-out/x.arrow")
    assert not fsspec.filesystem("memory").exists("/fsstgpu-out")


def test_outputs_drop_the_codec_from_their_names(tmp_path):
    """Spark's part-00000-c000.snappy.parquet compressed is fsst + zstd: its output must not be
    named .snappy.parquet."""
    root = tmp_path / "in"
    (root / "y=1").mkdir(parents=True)
    t = _table(100, 11)
    pq.write_table(t, root / "y=1" / "part-00000-c000.snappy.parquet", compression="snappy")
    pq.write_table(t, root / "y=1" / "part-00001-c000.GZ.parquet", compression="gzip")
    info = compress_dataset(root, tmp_path / "c")
    assert [r["output"][len(str(tmp_path / "c")) + 1:] for r in info] == [
        "y=1/part-00000-c000.parquet", "y=1/part-00001-c000.parquet"]
    decompress_dataset(tmp_path / "c", tmp_path / "p", device="cpu")
    back = tmp_path / "p" / "y=1" / "part-00000-c000.parquet"
    assert pq.read_table(back).equals(t)
    assert pq.ParquetFile(back).metadata.row_group(0).column(0).compression == "SNAPPY"
    pq.write_table(t, root / "y=1" / "part-00000-c000.parquet")
    with pytest.raises(ValueError, match="part-00000-c000.parquet"):
        compress_dataset(root, tmp_path / "c2")
    assert not (tmp_path / "c2").exists()


def test_read_dataset_exposes_hive_partition_columns(dataset, tmp_path):
    """The key=value folders become columns, typed and valued as pyarrow.dataset(...,
    partitioning="hive") reads them; partitioning=None reads the files' columns only."""
    import pyarrow.dataset as pads

    root, tables = dataset
    (root / "year=2026" / "kind=a b").mkdir()
    pq.write_table(_table(30, 17), root / "year=2026" / "kind=a b" / "d.parquet")
    compress_dataset(root, tmp_path / "c")
    mine = read_dataset(tmp_path / "c", device="cpu")
    theirs = pads.dataset(root, format="parquet", partitioning="hive").to_table()
    assert mine.schema.names == theirs.schema.names == ["u", "w", "k", "year", "kind"]
    for name in ("year", "kind"):
        assert mine.schema.field(name).type == theirs.schema.field(name).type
        assert mine.column(name).to_pylist() == theirs.column(name).to_pylist()
    assert mine.column("year").to_pylist() == [2025] * 500 + [2026] * 280
    assert mine.column("kind").to_pylist() == [None] * 750 + ["a b"] * 30
    assert mine.drop_columns(["year", "kind"]).equals(
        read_dataset(tmp_path / "c", device="cpu", partitioning=None))
    files = [tmp_path / "c" / "year=2025" / "a.parquet"]  # a list of files: no folders
    assert read_dataset(files, device="cpu").schema.names == ["u", "w", "k"]
    with pytest.raises(ValueError, match="partitioning"):
        read_dataset(tmp_path / "c", device="cpu", partitioning="directory")


def test_read_dataset_merges_files_with_other_columns(tmp_path):
    """A second file with an extra column (a column added to the data later) was refused; its
    columns are merged, nulls where a file lacks one, as pyarrow's schema unification does."""
    (tmp_path / "in").mkdir()
    pq.write_table(pa.table({"s": ["a", "b"], "n": [1, 2]}), tmp_path / "in" / "a.parquet")
    pq.write_table(pa.table({"s": ["c"], "extra": ["new"]}), tmp_path / "in" / "b.parquet")
    compress_dataset(tmp_path / "in", tmp_path / "c")
    got = read_dataset(tmp_path / "c", device="cpu")
    assert got.schema.names == ["s", "n", "extra"]
    assert got.to_pydict() == {"s": ["a", "b", "c"], "n": [1, 2, None],
                               "extra": [None, None, "new"]}
    pq.write_table(pa.table({"s": [1]}), tmp_path / "c" / "z.parquet")
    with pytest.raises(ValueError, match="z.parquet: its schema differs .* column 's' is int64"):
        read_dataset(tmp_path / "c", device="cpu")


def test_read_dataset_takes_a_column_of_type_null_as_any_type(tmp_path):
    """A file whose writer saw only nulls in a column types it null; pyarrow.unify_schemas
    merges it with the other files' type (pyarrow.dataset fails on it), and so does
    read_dataset."""
    src = tmp_path / "in"
    src.mkdir()
    pq.write_table(pa.table({"s": ["a", "b"], "n": pa.nulls(2)}), src / "a.parquet")
    pq.write_table(pa.table({"s": ["c"], "n": pa.array([7], pa.int64())}), src / "b.parquet")
    pq.write_table(pa.table({"s": ["d"], "n": pa.nulls(1)}), src / "c.parquet")
    unified = pa.unify_schemas([pq.read_schema(src / f"{n}.parquet") for n in "abc"])
    compress_dataset(src, tmp_path / "out")
    got = read_dataset(tmp_path / "out", device="cpu")
    assert got.schema == unified and got.column("n").to_pylist() == [None, None, 7, None]
    assert got.column("s").to_pylist() == ["a", "b", "c", "d"]


@pytest.mark.parametrize("values", [
    ["01", "2", "-0"], ["+5", "3"], ["-2147483648", "7"], ["2147483648", "1"], ["1.5", "2"],
    ["0x10", "0X1f", "3"], ["0xFFFFFFFF", "0x80000000"], ["-0x10", "1"], ["0x", "1"],
    ["0x0000000010", "1"], ["\u0661\u0662", "1"], [" 1", "2"], ["", "1"]],
    ids=lambda v: "|".join(v))
def test_partition_values_are_typed_as_pyarrow_types_them(tmp_path, values):
    """A key is int32 exactly when pyarrow.dataset's hive inference makes it int32 (no '+',
    0x hex of up to 8 digits as 32 bits, decimal within int32), with the same values."""
    import pyarrow.dataset as pads

    for i, value in enumerate(values):
        (tmp_path / f"k={value}").mkdir()
        pq.write_table(pa.table({"s": [f"row {i}"]}), tmp_path / f"k={value}" / f"{i}.parquet")
    theirs = pads.dataset(tmp_path, format="parquet", partitioning="hive").to_table()
    mine = read_dataset(tmp_path, device="cpu")
    assert mine.schema.field("k").type == theirs.schema.field("k").type
    def rows(t):
        return sorted(zip(t.column("s").to_pylist(), t.column("k").to_pylist(), strict=True))

    assert rows(mine) == rows(theirs)


def test_a_double_star_pattern_reaches_any_depth(tmp_path):
    """'ds/**/*.parquet' took ** as * (one folder level); it is any depth, as in a shell with
    globstar and fsspec's glob, for the CLI's IN too."""
    root = tmp_path / "ds"
    rels = ["top.parquet", "y=1/a.parquet", "y=1/m=2/b.parquet", "y=1/m=2/d=3/c.parquet",
            "_temporary/y=1/x.parquet"]
    for i, rel in enumerate(rels):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(_table(10, i), root / rel)
    found = [rel for _, rel in dataset_files(str(root / "**" / "*.parquet"))]
    assert found == sorted(rels[:4])
    from typer.testing import CliRunner

    from fsstgpu.cli.app import app

    res = CliRunner().invoke(app, ["compress", str(root / "y=1" / "**" / "c.parquet"),
                                   str(tmp_path / "out")])
    assert res.exit_code == 0, res.stderr
    assert (tmp_path / "out" / "m=2" / "d=3" / "c.parquet").is_file()


def test_an_output_folder_inside_the_input_folder_is_refused(dataset, tmp_path):
    """compress ds ds/c made ds/c/..., which the next read of ds takes as data (twice the rows);
    refused before anything is written, unless the folder is one skipped as not data."""
    root, tables = dataset
    for dst in (root / "c", root / "year=2025" / "c", root / "." / "c"):
        with pytest.raises(NotADirectoryError, match="inside the input dataset's folder"):
            compress_dataset(root, dst)
        assert not dst.exists()
    with pytest.raises(NotADirectoryError, match="inside the input dataset's folder"):
        compress_dataset(str(root / "**" / "*.parquet"), root / "c")
    compress_dataset(root, root / "_compressed")  # skipped as not data: taken
    assert [rel for _, rel in dataset_files(root)] == list(tables)
    compress_dataset(str(root / "*" / "*.parquet"), root / "c")  # a pattern that cannot see c
    compress_dataset(root, tmp_path / "in-c")  # beside it: taken
    from typer.testing import CliRunner

    from fsstgpu.cli.app import app

    res = CliRunner().invoke(app, ["compress", str(root), str(root / "d")])
    assert res.exit_code == 2 and "inside the input dataset's folder" in res.stderr


def test_an_output_folder_inside_a_url_input_folder_is_refused(dataset, tmp_path):
    """As for a local folder: compress memory://b/in memory://b/in/c made in/c/..., which the
    next listing of the input (any depth) reads as data; refused before anything is written,
    unless the folder is one skipped as not data. file:// URLs are local paths, checked so."""
    fsspec = pytest.importorskip("fsspec")
    root, tables = dataset
    fs = fsspec.filesystem("memory")
    for rel in tables:
        fs.pipe(f"/fsstgpu-inside/in/{rel}", (root / rel).read_bytes())
    src = "memory://fsstgpu-inside/in"
    try:
        for dst in (f"{src}/c", f"{src}/year=2025/c", f"{src}/./c", "memory:///fsstgpu-inside/in/c"):
            with pytest.raises(NotADirectoryError, match=f"inside the input dataset's folder "
                                                         f"{src},"):
                compress_dataset(src, dst)
        with pytest.raises(NotADirectoryError, match="inside the input dataset's folder"):
            compress_dataset(f"{src}/**/*.parquet", f"{src}/c")
        assert fs.find("/fsstgpu-inside") == [f"/fsstgpu-inside/in/{rel}" for rel in tables]
        compress_dataset(src, f"{src}/_compressed")  # skipped as not data: taken
        assert [rel for _, rel in dataset_files(src)] == list(tables)
        compress_dataset(f"{src}/*/*.parquet", f"{src}/c")  # a pattern that cannot see c
        compress_dataset(src, "memory://fsstgpu-inside/in-c")  # beside it: taken
        res = CliRunner().invoke(app, ["compress", src, f"{src}/d"])
        assert res.exit_code == 2 and "inside the input dataset's folder" in res.stderr
    finally:
        fs.rm("/fsstgpu-inside", recursive=True)
    for src, dst in ((f"file://{root}", f"file://{root}/c"), (f"file://{root}", root / "c"),
                     (root, f"file://{root}/c")):
        with pytest.raises(NotADirectoryError, match="inside the input dataset's folder"):
            compress_dataset(src, dst)
    assert not (root / "c").exists()
    compress_dataset(f"file://{root}", f"file://{tmp_path}/out")  # (not a folder ./file:/...)
    assert (tmp_path / "out" / "year=2026" / "c.parquet").is_file()


def test_read_dataset_device_merges_host_columns_as_read_dataset(tmp_path, monkeypatch):
    """read_dataset_device took the first file's columns and refused a file lacking one (and
    dropped a column only later files had); host columns now merge as read_dataset's do, and
    device columns that cannot be null-filled on the device are refused by name. The per-file
    reader is replaced by host tables (no GPU here), as device_columns would return them."""
    import fsstgpu.formats.datasets as datasets
    from fsstgpu.gpu.strings import DeviceStringArray

    src = tmp_path / "in"
    for rel, table in {"y=1/a.parquet": pa.table({"n": [1, 2], "x": pa.nulls(2)}),
                       "y=2/b.parquet": pa.table({"n": [3], "x": ["s"], "extra": [1.5]})}.items():
        (src / rel).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(table, src / rel)
    monkeypatch.setattr(datasets, "device_columns", lambda path, **kw: {
        name: col for name, col in zip(pq.read_table(path).column_names,
                                       pq.read_table(path).columns, strict=True)})
    got = read_dataset_device(src)
    assert list(got) == ["n", "x", "extra", "y"]
    assert {k: v.to_pylist() for k, v in got.items()} == {
        "n": [1, 2, 3], "x": [None, None, "s"], "extra": [None, None, 1.5], "y": [1, 1, 2]}
    assert got["x"].type == pa.string() and got["extra"].type == pa.float64()
    host = read_dataset(src, device="cpu")
    assert all(got[k].to_pylist() == host.column(k).to_pylist() for k in host.column_names)

    fake = DeviceStringArray(pa.string(), 2, None, None, None, 0)  # never decoded: refused first
    monkeypatch.setattr(datasets, "device_columns", lambda path, **kw: (
        {"n": pa.chunked_array([[1, 2]]), "s": fake} if path.name == "a.parquet"
        else {"n": pa.chunked_array([[3]])}))
    with pytest.raises(ValueError, match="b.parquet: no column 's', which other files hold"):
        read_dataset_device(src)
    monkeypatch.setattr(datasets, "device_columns", lambda path, **kw: (
        {"s": fake} if path.name == "a.parquet" else {"s": pa.chunked_array([["x"]])}))
    with pytest.raises(ValueError, match="column 's' is fsst-compressed in .*a.parquet and plain"):
        read_dataset_device(src)
    monkeypatch.setattr(datasets, "device_columns", lambda path, **kw: {
        "n": pa.chunked_array([[1]] if path.name == "a.parquet" else [["one"]])})
    with pytest.raises(ValueError, match="column 'n' is string there, int64"):
        read_dataset_device(src)


def test_read_dataset_device_places_nested_columns_once_over_all_files(tmp_path, monkeypatch):
    """A nested fsst column is read compressed from every file and placed on the device once,
    over all the files' row groups (there is no device join of nested arrays); the placing
    step is replaced by the CPU decode here (no GPU)."""
    import fsstgpu.formats.datasets as datasets
    from fsstgpu.formats.nested import compress_nested, decode_nested

    src = tmp_path / "in"
    cols = {"a.parquet": pa.array([["x", None], None]), "b.parquet": pa.array([["yz"]])}
    for name, col in cols.items():
        src.mkdir(exist_ok=True)
        pq.write_table(pa.table({"l": col}), src / name)
    monkeypatch.setattr(datasets, "device_columns", lambda path, **kw: (
        {"l": pa.chunked_array([compress_nested(cols[path.name])])}
        if kw == {"nested_on_device": False} else pytest.fail("nested columns placed per file")))
    seen = []

    def place(path, name, col):
        seen.append((name, [len(c) for c in col.chunks]))
        return decode_nested(col)[0]

    monkeypatch.setattr(datasets, "nested_column_to_device", place)
    got = read_dataset_device(src)
    assert seen == [("l", [2, 1])]
    assert got["l"].to_pylist() == [["x", None], None, ["yz"]]


def test_files_are_read_in_pyarrows_order_whatever_names_them(tmp_path):
    # sorted as path strings, as pyarrow's datasets and glob patterns sort them: Path objects
    # compare folder by folder, which put k=1/ before k=1.5/ and a/ before a-b.parquet
    for rel in ("k=1/x.parquet", "k=1.5/x.parquet", "a/x.parquet", "a-b.parquet"):
        (tmp_path / "in" / rel).parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pa.table({"s": [rel]}), tmp_path / "in" / rel)
    want = pq.read_table(tmp_path / "in", partitioning=None).column("s").to_pylist()
    assert want == ["a-b.parquet", "a/x.parquet", "k=1.5/x.parquet", "k=1/x.parquet"]
    for source in (tmp_path / "in", str(tmp_path / "in" / "**" / "*.parquet")):
        got = read_dataset(source, device="cpu", partitioning=None)
        assert got.column("s").to_pylist() == want, source
    compress_dataset(tmp_path / "in", tmp_path / "c")
    got = read_dataset(tmp_path / "c", device="cpu", partitioning=None)
    assert got.column("s").to_pylist() == want


def test_partition_folders_read_as_pyarrow_reads_them(tmp_path):
    # a key repeated deeper keeps its outermost value (fsstgpu took the innermost); values
    # that are not UTF-8 once URL-decoded are refused (they read as U+FFFD, merging folders)
    (tmp_path / "in" / "k=1" / "k=2").mkdir(parents=True)
    pq.write_table(pa.table({"s": ["a"]}), tmp_path / "in" / "k=1" / "k=2" / "x.parquet")
    want = pq.read_table(tmp_path / "in").to_pylist()
    assert read_dataset(tmp_path / "in", device="cpu").to_pylist() == want == [
        {"s": "a", "k": 1}]
    for value in ("%C4", "%C5"):
        (tmp_path / "bad" / f"k={value}").mkdir(parents=True)
        pq.write_table(pa.table({"s": ["a"]}), tmp_path / "bad" / f"k={value}" / "x.parquet")
    with pytest.raises(ValueError, match="'k=%C4' .* is not UTF-8 after URL decoding"):
        read_dataset(tmp_path / "bad", device="cpu")


def test_partition_columns_come_after_every_files_own(tmp_path):
    # concat_tables orders columns by first appearance: a column only a later file has came
    # after the first file's partition key (['s', 'k', 't']; pyarrow: ['s', 't', 'k'])
    for key, table in (("k=1", pa.table({"s": ["x"]})), ("k=2", pa.table({"s": ["y"],
                                                                           "t": [1]}))):
        (tmp_path / "in" / key).mkdir(parents=True)
        pq.write_table(table, tmp_path / "in" / key / "a.parquet")
    got = read_dataset(tmp_path / "in", device="cpu")
    assert got.column_names == ["s", "t", "k"]
    assert got.to_pylist() == [{"s": "x", "t": None, "k": 1}, {"s": "y", "t": 1, "k": 2}]


def test_a_list_of_files_that_is_empty_or_names_a_folder(tmp_path):
    # read_dataset([]) raised pyarrow's "Must pass at least one table" and compress_dataset([])
    # returned [] silently; a folder in a list was "no such file"
    for call in (lambda src: read_dataset(src, device="cpu"),
                 lambda src: compress_dataset(src, tmp_path / "out")):
        with pytest.raises(FileNotFoundError, match="the list of files is empty"):
            call([])
        with pytest.raises(FileNotFoundError, match="a folder, not a file"):
            call([tmp_path])
    assert not (tmp_path / "out").exists()


def test_an_output_over_another_input_of_the_dataset_is_refused(tmp_path):
    """OUT a folder above IN, IN holding a folder of IN's name: ``ds/ds/z.parquet``'s output
    ``./ds/z.parquet`` is the input ``ds/z.parquet``. With force, ds/ds/z.parquet (sorted
    first) was written over ds/z.parquet, which was then read and compressed in its turn: its
    rows were lost, exit 0."""
    root = tmp_path / "ds"
    (root / "ds").mkdir(parents=True)
    pq.write_table(pa.table({"s": ["top"]}), root / "z.parquet")
    pq.write_table(pa.table({"s": ["inner"]}), root / "ds" / "z.parquet")
    before = (root / "z.parquet").read_bytes()
    for force in (False, True):
        with pytest.raises(ValueError, match="the output is the input file"):
            compress_dataset(root, tmp_path, force=force)
        with pytest.raises(ValueError, match="the output is the input file"):
            decompress_dataset(root, tmp_path, force=force, device="cpu")
    assert (root / "z.parquet").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds"]


def test_links_to_folders_are_followed_and_loops_are_not(tmp_path):
    """A dataset folder holding a link to a partition folder elsewhere (as datasets are put
    together from parts): its files were left out without a word (os.walk does not follow
    links), where pyarrow.dataset reads them; a loop of links is walked once."""
    elsewhere = tmp_path / "elsewhere" / "year=2026"
    elsewhere.mkdir(parents=True)
    pq.write_table(pa.table({"s": ["far"]}), elsewhere / "b.parquet")
    root = tmp_path / "ds"
    (root / "year=2025").mkdir(parents=True)
    pq.write_table(pa.table({"s": ["near"]}), root / "year=2025" / "a.parquet")
    (root / "year=2026").symlink_to(elsewhere, target_is_directory=True)
    (root / "year=2025" / "up").symlink_to(root, target_is_directory=True)  # a loop
    (elsewhere / "x").symlink_to(root / "year=2025", target_is_directory=True)  # and another
    rels = [rel for _, rel in dataset_files(root)]
    assert rels[:2] == ["year=2025/a.parquet", "year=2026/b.parquet"]
    assert len(rels) == len(set(rels)) and all(r.endswith(".parquet") for r in rels)
    got = read_dataset(root, device="cpu")
    assert got.slice(0, 2).to_pylist() == [{"s": "near", "year": 2025},
                                            {"s": "far", "year": 2026}]
    out = compress_dataset(root, tmp_path / "c")
    assert [r["output"][len(str(tmp_path / "c")) + 1:] for r in out][:2] == rels[:2]


def test_an_output_object_that_exists_is_named_before_any_is_uploaded(dataset, tmp_path):
    """As for local outputs (b75faeb): with c.parquet's object already in the output URL's
    store, a.parquet and b.parquet were uploaded, then the failure; a rerun failed on them."""
    fsspec = pytest.importorskip("fsspec")
    root, tables = dataset
    fs = fsspec.filesystem("memory")
    fs.pipe("/fsstgpu-taken/out/year=2026/c.parquet", b"keep me")
    try:
        with pytest.raises(FileExistsError, match="c.parquet: already exists"):
            compress_dataset(root, "memory://fsstgpu-taken/out")
        assert fs.find("/fsstgpu-taken") == ["/fsstgpu-taken/out/year=2026/c.parquet"]
        assert fs.cat("/fsstgpu-taken/out/year=2026/c.parquet") == b"keep me"
    finally:
        fs.rm("/fsstgpu-taken", recursive=True)


def test_a_lost_current_folder_is_named_for_a_relative_dataset_pattern(tmp_path, monkeypatch):
    # the input pattern's folder is resolved too (os.path.realpath asks os.getcwd, whose
    # error names no file): named, as a relative output is
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    with pytest.raises(FileNotFoundError, match="in: the current folder has been deleted, so "
                                                "this relative input path"):
        datasets.check_dataset_output(str(tmp_path / "out"), "in/**/*.parquet")


def test_a_single_file_is_a_dataset_of_itself_and_a_missing_one_is_named(tmp_path):
    """A path or URL naming one file is that file, under its own name; one naming nothing is
    FileNotFoundError naming it (a mutation campaign found neither read by any test: either
    branch could be negated, or the error dropped, unseen)."""
    pq.write_table(_table(10, 1), tmp_path / "a.parquet")
    assert dataset_files(tmp_path / "a.parquet") == [(tmp_path / "a.parquet", "a.parquet")]
    with pytest.raises(FileNotFoundError, match="none.parquet: no such file or directory"):
        dataset_files(tmp_path / "none.parquet")
    fsspec = pytest.importorskip("fsspec")
    fs = fsspec.filesystem("memory")
    fs.pipe("/fsstgpu-single/a.parquet", (tmp_path / "a.parquet").read_bytes())
    try:
        url = "memory://fsstgpu-single/a.parquet"
        assert [(str(f), rel) for f, rel in dataset_files(url)] == [(url, "a.parquet")]
        with pytest.raises(FileNotFoundError,
                           match="fsstgpu-single/none.parquet: no such file or directory"):
            dataset_files("memory://fsstgpu-single/none.parquet")
    finally:
        fs.rm("/fsstgpu-single", recursive=True)


def test_a_directory_dataset_is_its_files_of_dataset_suffixes(tmp_path):
    """Below a directory, only files with a dataset suffix count: not a file of another suffix,
    nor a folder whose name has one (a mutation making either condition enough survived)."""
    pq.write_table(_table(10, 1), tmp_path / "a.parquet")
    (tmp_path / "notes.txt").write_text("not data")
    (tmp_path / "b.parquet").mkdir()  # a folder named as a file
    pq.write_table(_table(10, 2), tmp_path / "b.parquet" / "c.pq")
    assert [rel for _, rel in dataset_files(tmp_path)] == ["a.parquet", "b.parquet/c.pq"]
