"""A dataset's URL outputs are checked for clobbering with one listing per folder that holds
them (formats/datasets.py), not one ``fs.exists`` (a request to an object store) per output;
the refusal names the same outputs as before. An output URL is compared with the inputs as
an object of its store, however either is spelt."""

import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fsstgpu.formats import compress_file, decompress_file
from fsstgpu.formats.datasets import compress_dataset, dataset_outputs

fsspec = pytest.importorskip("fsspec")
MemoryFileSystem = pytest.importorskip("fsspec.implementations.memory").MemoryFileSystem

N = 12


@pytest.fixture
def source(tmp_path):
    root = tmp_path / "in"
    (root / "year=1").mkdir(parents=True)
    for i in range(N):
        pq.write_table(pa.table({"s": [f"a{i}"]}), root / f"a{i:02d}.parquet")
    pq.write_table(pa.table({"s": ["b"]}), root / "year=1" / "b.parquet")
    fs = fsspec.filesystem("memory")
    yield root, fs
    if fs.exists("/fsstgpu-outs"):
        fs.rm("/fsstgpu-outs", recursive=True)


@pytest.fixture
def calls(monkeypatch):
    """The paths under the outputs' folder that exists() and ls() were asked about."""
    seen = {"exists": [], "ls": []}
    for name in seen:
        def counted(self, path, *args, _name=name, _real=getattr(MemoryFileSystem, name),
                    **kwargs):
            if "/fsstgpu-outs/" in path:
                seen[_name].append(path)
            return _real(self, path, *args, **kwargs)
        monkeypatch.setattr(MemoryFileSystem, name, counted)
    return seen


def test_url_outputs_checked_with_one_listing_per_folder(source, calls):
    root, fs = source
    fs.pipe("/fsstgpu-outs/out/a03.parquet", b"x")
    fs.pipe("/fsstgpu-outs/out/a07.parquet", b"x")
    fs.pipe("/fsstgpu-outs/out/year=1/b.parquet", b"x")
    fs.pipe("/fsstgpu-outs/out/other.parquet", b"x")  # not an output: no clash
    with pytest.raises(FileExistsError, match=re.escape(
            "memory://fsstgpu-outs/out/a03.parquet (and 2 more): already exists (use --force")):
        dataset_outputs(root, "memory://fsstgpu-outs/out")
    # (was one per output: 13; the folder of one output is asked about it: LIST_FROM)
    assert calls["exists"] == ["/fsstgpu-outs/out/year=1/b.parquet"]
    assert calls["ls"] == ["/fsstgpu-outs/out"]
    fs.rm("/fsstgpu-outs/out/a03.parquet")
    fs.rm("/fsstgpu-outs/out/a07.parquet")
    with pytest.raises(FileExistsError, match=re.escape(
            "memory://fsstgpu-outs/out/year=1/b.parquet: already exists")):
        dataset_outputs(root, "memory://fsstgpu-outs/out")
    fs.rm("/fsstgpu-outs/out/year=1", recursive=True)  # a missing folder: nothing under it
    calls["exists"].clear()  # (rm asks)
    assert len(dataset_outputs(root, "memory://fsstgpu-outs/out")) == N + 1
    assert len(dataset_outputs(root, "memory://fsstgpu-outs/out", force=True)) == N + 1
    assert calls["exists"] == ["/fsstgpu-outs/out/year=1/b.parquet"]


def test_an_output_that_is_a_folder_is_taken(source):
    root, fs = source
    fs.pipe("/fsstgpu-outs/out/a00.parquet/part", b"x")
    with pytest.raises(FileExistsError, match=re.escape(
            "memory://fsstgpu-outs/out/a00.parquet: already exists")):
        dataset_outputs(root, "memory://fsstgpu-outs/out")


def test_a_folder_that_cannot_be_listed_is_asked_one_output_at_a_time(source, calls,
                                                                       monkeypatch):
    root, fs = source
    fs.pipe("/fsstgpu-outs/out/a05.parquet", b"x")

    def refused(self, path, *args, **kwargs):
        raise PermissionError(path)

    monkeypatch.setattr(MemoryFileSystem, "ls", refused)
    with pytest.raises(FileExistsError, match=re.escape(
            "memory://fsstgpu-outs/out/a05.parquet: already exists")):
        dataset_outputs(root, "memory://fsstgpu-outs/out")
    assert len(calls["exists"]) == N + 1


def test_an_entry_listed_in_another_spelling_is_asked_alone(source, calls, monkeypatch):
    root, fs = source
    fs.pipe("/fsstgpu-outs/out/a02.parquet", b"x")
    real = MemoryFileSystem.ls

    def spelled(self, path, detail=True, **kwargs):  # a store that names entries in full
        return [f"memory://{entry}" for entry in real(self, path, detail=False)]

    monkeypatch.setattr(MemoryFileSystem, "ls", spelled)
    with pytest.raises(FileExistsError, match=re.escape(
            "memory://fsstgpu-outs/out/a02.parquet: already exists")):
        dataset_outputs(root, "memory://fsstgpu-outs/out")
    # (and the one output of year=1, whose folder is not listed: LIST_FROM)
    assert calls["exists"] == ["/fsstgpu-outs/out/a02.parquet",
                               "/fsstgpu-outs/out/year=1/b.parquet"]


def test_file_urls_are_local_outputs(source, tmp_path):
    root, _ = source
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "a01.parquet").write_bytes(b"x")
    with pytest.raises(FileExistsError, match=re.escape(
            f"{tmp_path}/out/a01.parquet: already exists")):
        dataset_outputs(root, f"file://{tmp_path}/out")


def test_an_output_url_spelt_otherwise_than_its_input_is_refused():
    """memory:///b/x.parquet and memory://b/x.parquet are one object: compared as strings, the
    output replaced the input (with force) by its compressed copy."""
    fs = fsspec.filesystem("memory")
    fs.pipe("/fsstgpu-same/x.parquet", _parquet(pa.table({"s": ["hello world"] * 9})))
    compress_file("memory://fsstgpu-same/x.parquet", "memory://fsstgpu-same/c.parquet")
    before = fs.cat("/fsstgpu-same/x.parquet")
    try:
        for work, name in ((compress_file, "x"), (decompress_file, "c")):
            with pytest.raises(ValueError, match="the output is the input file"):
                work(f"memory://fsstgpu-same/{name}.parquet",
                     f"memory:///fsstgpu-same/{name}.parquet", force=True)
        assert fs.cat("/fsstgpu-same/x.parquet") == before
    finally:
        fs.rm("/fsstgpu-same", recursive=True)


def test_a_url_dataset_output_over_another_input_is_refused():
    """compress memory://b/ds memory://b --force, ds holding ds/z.parquet and ds/ds/z.parquet:
    the second's output is the first, which was replaced before it was read (its rows lost);
    refused before anything is written, as for local folders."""
    fs = fsspec.filesystem("memory")
    fs.pipe("/fsstgpu-over/ds/z.parquet", _parquet(pa.table({"s": ["top"] * 3})))
    fs.pipe("/fsstgpu-over/ds/ds/z.parquet", _parquet(pa.table({"s": ["inner"] * 2})))
    before = fs.cat("/fsstgpu-over/ds/z.parquet")
    try:
        with pytest.raises(ValueError, match="is the input file .*ds/z.parquet"):
            compress_dataset("memory://fsstgpu-over/ds", "memory://fsstgpu-over", force=True)
        assert fs.cat("/fsstgpu-over/ds/z.parquet") == before
        assert sorted(fs.find("/fsstgpu-over")) == ["/fsstgpu-over/ds/ds/z.parquet",
                                                   "/fsstgpu-over/ds/z.parquet"]
    finally:
        fs.rm("/fsstgpu-over", recursive=True)


def _parquet(table) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return sink.getvalue().to_pybytes()
