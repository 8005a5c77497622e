"""An input replaced or rewritten while it is read is an error, never a table of both versions
or of part of one (formats/file_identity.py; found by the hostile-environment round of session
62). Each test fails on the code before it: reads reopened the file by path per thread, and a
stream's reader stopped at the first end it met."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

import fsstgpu.formats.rowgroups as rowgroups
from fsstgpu import CorruptDataError
from fsstgpu.formats import compress_file, decompress_file, pipeline, read_table
from fsstgpu.formats.file_identity import descriptor

ROWS = 40_000


def _table(name: str) -> pa.Table:
    return pa.table({"s": [f"{name} row {i}" for i in range(ROWS)], "n": list(range(ROWS))})


def _stream(path, table: pa.Table) -> bytes:
    with pa.OSFile(str(path), "wb") as f, ipc.new_stream(f, table.schema) as writer:
        writer.write_table(table, max_chunksize=5_000)
    return path.read_bytes()


def _replacing_on_open(monkeypatch, path, replacement, at: int) -> None:
    """Replace ``path`` by ``replacement`` (os.replace) as the input is opened the at-th time:
    another process swapping the file in mid-read."""
    real, opens = rowgroups.open_file, []

    def open_file(p, mode="rb"):
        opens.append(p)
        if len(opens) == at:
            os.replace(replacement, path)
        return real(p, mode)

    monkeypatch.setattr(rowgroups, "open_file", open_file)


def test_read_table_refuses_a_parquet_file_replaced_mid_read(tmp_path, monkeypatch):
    """Replaced as the first reading thread opens it (the footer read from the old file):
    before, its row groups came from the new file and the others' from the old."""
    path, new = tmp_path / "data.parquet", tmp_path / "new.parquet"
    pq.write_table(_table("old"), path, row_group_size=5_000)
    pq.write_table(_table("new"), new, row_group_size=5_000)
    _replacing_on_open(monkeypatch, path, new, 2)
    with pytest.raises(CorruptDataError, match="replaced or changed while it was being read"):
        read_table(path, device="cpu")


def test_compress_file_refuses_an_input_rewritten_in_place(tmp_path, monkeypatch):
    """The input written again in place while it is read (cp over it; here the same bytes,
    which a reader cannot tell from others): found when the read ends, before the output is
    written. (A cut or changed stream fails on its own, as damage.) Runs of one batch, as in a
    file longer than a run: a run is read whole before it is written and progress told."""
    monkeypatch.setattr(pipeline, "RUN_ROWS", 5_000)
    src, dst = tmp_path / "in.arrows", tmp_path / "out.parquet"
    data = _stream(src, _table("old"))

    def rewrite(**_):
        with open(src, "r+b") as f:  # same inode, written again
            f.write(data)

    with pytest.raises(CorruptDataError, match="changed while it was being read"):
        compress_file(src, dst, progress=rewrite)
    assert not dst.exists()
    assert [p.name for p in tmp_path.iterdir()] == ["in.arrows"]


def test_a_stream_with_bytes_after_its_end_is_refused(tmp_path):
    """Two streams joined (cat a b): pyarrow reads the first and stops; its rows alone are not
    the file's."""
    one = tmp_path / "one.arrows"
    data = _stream(one, _table("a"))
    two = tmp_path / "two.arrows"
    two.write_bytes(data + data)
    with pytest.raises(CorruptDataError, match=f"{len(data)} bytes after the end of the stream"):
        compress_file(two, tmp_path / "out.arrows")
    assert read_table(one, device="cpu").num_rows == ROWS  # one stream alone reads
    with pytest.raises(CorruptDataError, match="after the end of the stream"):
        read_table(two, device="cpu")


def test_unchanged_inputs_read_as_before(tmp_path):
    """Every format read whole through the checked handles: the same table as pyarrow's."""
    table = _table("x")
    paths = {"parquet": tmp_path / "t.parquet", "arrows": tmp_path / "t.arrows",
             "arrow": tmp_path / "t.arrow"}
    pq.write_table(table, paths["parquet"], row_group_size=5_000)
    _stream(paths["arrows"], table)
    with pa.OSFile(str(paths["arrow"]), "wb") as f, ipc.new_file(f, table.schema) as w:
        w.write_table(table, max_chunksize=5_000)
    for fmt, path in paths.items():
        out = tmp_path / f"c.{fmt}"
        compress_file(path, out)
        assert read_table(out, device="cpu").equals(table), fmt
        decompress_file(out, tmp_path / f"d.{fmt}")
        assert read_table(tmp_path / f"d.{fmt}", device="cpu").equals(table), fmt


class _Raising:
    """A file whose ``fileno`` raises ``exc``: the ways a file that is not an OS file says so."""

    def __init__(self, exc: type[Exception]):
        self.exc = exc

    def fileno(self):
        raise self.exc("not a file of this machine")


@pytest.mark.parametrize("exc", [AttributeError, OSError, NotImplementedError, ValueError])
def test_a_file_without_a_descriptor_is_not_checked(exc):
    """``descriptor`` is None (the file is not checked) for each way a file says it has no OS
    descriptor (a mutation campaign found that any one of them could be dropped unseen, and
    such a read then failed with that error instead of reading the file unchecked)."""
    assert descriptor(_Raising(exc)) is None


def test_descriptor_of_local_and_in_memory_files(tmp_path):
    path = tmp_path / "f.bin"
    path.write_bytes(b"x")
    with pa.OSFile(str(path)) as f:
        assert descriptor(f) == f.fileno()
    assert descriptor(pa.BufferReader(b"x")) is None  # (io.UnsupportedOperation)
    assert descriptor(object()) is None
