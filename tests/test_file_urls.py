"""``file://`` and ``local://`` URLs name the local file RFC 8089 gives them, as pyarrow's
``FileSystem.from_uri`` and ``urllib``'s ``url2pathname`` read them: the path percent-decoded,
a ``?`` query and a ``#`` fragment no part of it (formats/locations.py, ``local_text``). The
scheme was stripped and the rest taken as the path: ``file:///tmp/a%20b.parquet`` named the
file ``a%20b.parquet``, not ``a b.parquet``, ``file://localhost/x`` the relative path
``localhost/x``."""

from __future__ import annotations

import urllib.parse
import urllib.request
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from fsstgpu.cli.app import app
from fsstgpu.formats import compress_file, decompress_file, read_table
from fsstgpu.formats.datasets import compress_dataset, read_dataset
from fsstgpu.formats.locations import local_text

TABLE = pa.table({"s": ["hello world", "hello there", None] * 5})
URLS = ["file:///tmp/a%20b.pq", "file:///tmp/%41x#y.pq", "file:///tmp/a?q.pq",
        "file:///tmp/a%23b.pq", "file:///tmp/a%3Fb.pq", "file:///tmp/a%2Fb", "file:///tmp/a;b",
        "file:///tmp/caf%C3%A9", "file:///tmp/100%25", "local:///tmp/a%20b"]


@pytest.mark.parametrize("url", URLS)
def test_a_file_url_names_the_path_pyarrow_and_urllib_give_it(url):
    _, path = pafs.FileSystem.from_uri(url)
    assert local_text(url) == path
    assert local_text(url) == urllib.request.url2pathname(urllib.parse.urlparse(url).path)


def test_a_file_url_of_localhost_is_local_and_of_another_host_refused():
    assert local_text("file://localhost/tmp/x.pq") == "/tmp/x.pq"
    with pytest.raises(ValueError, match="host.*'server'"):
        local_text("file://server/tmp/x.pq")
    with pytest.raises(ValueError, match="names no file"):
        local_text("file://")


def _odd_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "in dir #1?%41"
    folder.mkdir()
    return folder


def test_files_are_read_and_written_through_encoded_file_urls(tmp_path):
    folder = _odd_folder(tmp_path)
    pq.write_table(TABLE, folder / "x y.parquet")
    src = (folder / "x y.parquet").as_uri()  # (percent-encoded: %20, %23, %3F, %25)
    assert "%20" in src and "%23" in src and "%3F" in src and "%2541" in src
    compress_file(src, folder.as_uri() + "/c%20d.parquet")
    assert read_table(folder / "c d.parquet", device="cpu").equals(TABLE)
    assert read_table(folder.as_uri() + "/c%20d.parquet", device="cpu").equals(TABLE)
    decompress_file(f"local://{folder.as_uri()[7:]}/c%20d.parquet",
                    folder.as_uri() + "/%41.arrow#a fragment", device="cpu")
    assert read_table(folder / "A.arrow", device="cpu").equals(TABLE)
    assert sorted(p.name for p in folder.iterdir()) == ["A.arrow", "c d.parquet", "x y.parquet"]
    assert not any(p.name != folder.name for p in tmp_path.iterdir())  # no ./file:/... either
    # the output is the input, spelt as a path and as a URL
    with pytest.raises(ValueError, match="the output is the input"):
        compress_file(folder / "c d.parquet", folder.as_uri() + "/c%20d.parquet", force=True)


def test_datasets_are_read_and_written_through_encoded_file_urls(tmp_path):
    folder = _odd_folder(tmp_path)
    (folder / "k=1").mkdir()
    pq.write_table(TABLE, folder / "k=1" / "x y.parquet")
    out = tmp_path / "out put"
    compress_dataset(folder.as_uri(), out.as_uri())
    assert [p.relative_to(out).as_posix() for p in out.rglob("*.parquet")] == [
        "k=1/x y.parquet"]
    assert read_dataset(out.as_uri(), device="cpu").column("s").to_pylist() == TABLE.column(
        "s").to_pylist()


def test_the_command_line_takes_encoded_file_urls(tmp_path):
    folder = _odd_folder(tmp_path)
    pq.write_table(TABLE, folder / "x y.parquet")
    runner = CliRunner()
    res = runner.invoke(app, ["compress", (folder / "x y.parquet").as_uri(),
                              folder.as_uri() + "/c%20d.parquet"])
    assert res.exit_code == 0, res.stderr
    res = runner.invoke(app, ["decompress", folder.as_uri() + "/c%20d.parquet",
                              folder.as_uri() + "/o.parquet", "--device", "cpu"])
    assert res.exit_code == 0, res.stderr
    assert pq.read_table(folder / "o.parquet").equals(TABLE)
    res = runner.invoke(app, ["compress", "file://server/x.parquet", "x.parquet"])
    assert res.exit_code == 2  # a usage error, in a panel that wraps lines
    assert "localhost,not'server'" in "".join(res.stderr.replace("│", "").split())
