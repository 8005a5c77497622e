"""fsstgpu.datasets.text_tables: machine and dbtext tables are deterministic and read exactly."""

from __future__ import annotations

import gzip
import json
import os

import pyarrow as pa
import pytest

from fsstgpu.datasets import dbtext_table, load_lines, machine_text_table
from fsstgpu.datasets.text_tables import METADATA_KEY

TYPES = {
    "doc_line": pa.string(), "path": pa.large_string(), "py_line": pa.string(),
    "summary": pa.string(), "package": pa.dictionary(pa.int32(), pa.string()),
    "dpkg_line": pa.string(), "line_no": pa.int64(), "size": pa.int64(),
}
STDLIB_LINES = ["import os", "", "   ", "print(1)", "x = 1"]

STATUS = """\
Package: zlib1g
Status: install ok installed
Architecture: amd64
Version: 1:1.2.13
Description: compression library - runtime
 zlib is a library implementing the deflate compression method.

Package: gone
Status: deinstall ok config-files
Architecture: all
Version: 1.0
Description: removed, config files left

Package: adduser
Status: install ok installed
Architecture: all
Version: 3.134
Description: add and remove users and groups
"""


def _write(path, data: bytes):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


@pytest.fixture
def roots(tmp_path):
    """A small fake machine: a doc tree with a .gz, a binary and a non-UTF-8 file, a usr tree
    with a symlink, a stdlib with blank lines and a site-packages to skip, a dpkg status."""
    _write(tmp_path / "doc/a/changelog.gz", gzip.compress(b"x\r\ny"))
    _write(tmp_path / "doc/a/copyright", b"one\ntwo\n")
    _write(tmp_path / "doc/b/image.png", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR")
    _write(tmp_path / "doc/b/latin1.txt", b"caf\xe9\n")
    os.symlink("../a/copyright", tmp_path / "doc/b/link")
    _write(tmp_path / "usr/bin/tool", b"0123456789")
    _write(tmp_path / "usr/lib/x/y.so", b"abc")
    os.symlink("../bin/tool", tmp_path / "usr/lib/link")
    _write(tmp_path / "stdlib/a.py", b"import os\n\n   \nprint(1)\n")
    _write(tmp_path / "stdlib/pkg/b.py", b"x = 1\n")
    _write(tmp_path / "stdlib/pkg/notes.txt", b"not python\n")
    _write(tmp_path / "stdlib/site-packages/z.py", b"skipped = True\n")
    _write(tmp_path / "status", STATUS.encode())
    (tmp_path / "empty").mkdir()
    return {"doc": tmp_path / "doc", "usr": tmp_path / "usr", "stdlib": tmp_path / "stdlib",
            "dpkg_status": tmp_path / "status", "site": tmp_path / "empty"}


def test_machine_table_is_deterministic_with_the_documented_columns():
    t = machine_text_table(rows=3000)
    assert t.equals(machine_text_table(rows=3000))
    assert {name: t.schema.field(name).type for name in t.column_names} == TYPES
    assert t.num_rows == 3000 and all(len(c) == 3000 for c in t.columns)
    assert t.column("py_line").null_count > 0  # the stdlib has blank lines
    assert t.column("summary").null_count == 2000  # one summary every 3 rows
    used = json.loads(t.schema.metadata[METADATA_KEY])
    assert used["rows"] == 3000 and set(used["columns"]) == set(TYPES)
    assert machine_text_table(rows=0).num_rows == 0


def test_fake_machine_is_read_exactly(roots):
    t = machine_text_table(rows=5, roots=roots)
    # doc: sorted walk, .gz decompressed, \r kept, binary / non-UTF-8 / symlinked files skipped;
    # four lines cycled to five rows
    assert t.column("doc_line").to_pylist() == ["x\r", "y", "one", "two", "x\r"]
    assert t.column("line_no").to_pylist() == [1, 2, 1, 2, 1]
    usr = os.fspath(roots["usr"])
    assert t.column("path").to_pylist() == [
        f"{usr}/bin/tool", f"{usr}/lib/link", f"{usr}/lib/x/y.so", f"{usr}/bin/tool",
        f"{usr}/lib/link"]
    assert t.column("size").to_pylist() == [10, len("../bin/tool"), 3, 10, len("../bin/tool")]
    # stdlib: only .py, site-packages skipped, whitespace-only lines null
    assert t.column("py_line").to_pylist() == ["import os", None, None, "print(1)", "x = 1"]
    # packages: installed only, sorted by name, description's first line
    assert t.column("summary").to_pylist() == [
        "add and remove users and groups", None, None, "compression library - runtime", None]
    assert t.column("dpkg_line").to_pylist() == [
        "ii  adduser  3.134  all  add and remove users and groups",
        "ii  zlib1g  1:1.2.13  amd64  compression library - runtime"] * 2 + [
        "ii  adduser  3.134  all  add and remove users and groups"]
    assert t.column("package").to_pylist() == ["adduser"] * 5  # runs of 500 rows
    used = json.loads(t.schema.metadata[METADATA_KEY])["columns"]
    assert used["doc_line"] == {"source": os.fspath(roots["doc"]), "values": 4,
                                "complete": True}
    assert used["dpkg_line"]["values"] == 2


def test_default_rows_are_the_stdlib_lines(roots):
    t = machine_text_table(roots=roots)
    assert t.num_rows == len(STDLIB_LINES)
    assert t.equals(machine_text_table(roots=roots))


def test_empty_sources_fall_back_to_stdlib_lines(roots, tmp_path):
    roots = {**roots, "doc": tmp_path / "empty", "usr": tmp_path / "missing",
             "dpkg_status": tmp_path / "missing"}
    t = machine_text_table(rows=7, roots=roots)
    cycled = (STDLIB_LINES * 2)[:7]
    assert t.column("doc_line").to_pylist() == cycled
    assert t.column("line_no").to_pylist() == [1, 2, 3, 4, 1, 1, 2]
    assert t.column("path").to_pylist() == cycled
    assert t.column("size").to_pylist() == [len(s) for s in cycled]
    assert t.column("dpkg_line").to_pylist() == cycled
    assert t.column("summary").to_pylist() == ["import os", None, None, "", None, None, "   "]
    used = json.loads(t.schema.metadata[METADATA_KEY])["columns"]
    assert used["path"]["source"] == "stdlib lines (fallback)"
    assert {name: t.schema.field(name).type for name in t.column_names} == TYPES


def test_dist_info_metadata_when_there_is_no_dpkg(roots, tmp_path):
    site = tmp_path / "site"
    _write(site / "b_pkg-2.0.dist-info/METADATA",
           b"Metadata-Version: 2.1\nName: b-pkg\nVersion: 2.0\nSummary: the b package\n\nBody\n")
    _write(site / "a-1.0.dist-info/METADATA", b"Name: a\nVersion: 1.0\n")
    t = machine_text_table(rows=3, roots={**roots, "dpkg_status": tmp_path / "missing",
                                          "site": site})
    assert t.column("dpkg_line").to_pylist() == [
        "ii  a  1.0  all  ", "ii  b-pkg  2.0  all  the b package", "ii  a  1.0  all  "]
    assert t.column("summary").to_pylist() == ["the b package", None, None]


@pytest.mark.parametrize("roots", ["doc", ["doc"], 5])
def test_roots_that_are_not_a_dict_are_refused(roots):
    # a str was walked by its letters: "unknown roots keys ['c', 'd', 'o']"
    with pytest.raises(TypeError, match="roots must be a dict of sources by key"):
        machine_text_table(rows=5, roots=roots)


def test_unknown_roots_key_is_refused():
    with pytest.raises(ValueError, match="unknown roots"):
        machine_text_table(rows=1, roots={"docs": "/usr/share/doc"})


def test_dbtext_table_holds_every_line_in_corpus_order(dbtext_paths):
    t = dbtext_table()
    counts = [len(load_lines(p)) for p in dbtext_paths]
    assert t.num_rows == sum(counts)
    assert t.schema.field("file").type == pa.dictionary(pa.int32(), pa.string())
    assert t.schema.field("line").type == pa.string()
    assert t.column("file").chunk(0).dictionary.to_pylist() == [p.stem for p in dbtext_paths]
    first = load_lines(dbtext_paths[0], rows=3).to_pylist()
    assert t.slice(0, 3).to_pylist() == [{"file": dbtext_paths[0].stem, "line": s}
                                         for s in first]
    head = dbtext_table(rows=counts[0] + 2)  # only the files the rows need are read
    assert head.column("file").chunk(0).dictionary.to_pylist() == [
        p.stem for p in dbtext_paths[:2]]
    assert head.column("line").equals(t.column("line").slice(0, counts[0] + 2))
    assert head.column("file").cast(pa.string()).equals(
        t.column("file").slice(0, counts[0] + 2).cast(pa.string()))


def test_dbtext_table_without_the_corpus(monkeypatch, tmp_path):
    monkeypatch.setenv("FSSTGPU_DBTEXT", os.fspath(tmp_path / "nowhere"))
    with pytest.raises(FileNotFoundError, match="FSSTGPU_DBTEXT"):
        dbtext_table()
