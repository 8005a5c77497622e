"""The command line as a demanding user meets it (issue #23, item 7): usage errors exit 2, JSON
for errors too, messages that name what the user gave, help text that shows what it says."""

from __future__ import annotations

import contextlib
import errno
import io
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from rich.console import Console
from rich.progress import Progress
from typer.testing import CliRunner

from fsstgpu import train
from fsstgpu.cli import roundtrip as roundtrip_module
from fsstgpu.cli.app import app
from fsstgpu.cli.output import progress_columns
from fsstgpu.cli.stdio import stdin_file
from fsstgpu.formats.atomic import TEMP_SUFFIX, StaleTemporaryFileWarning, atomic_output, owner_tag
from fsstgpu.formats.files import NotCompressedError, compress_file, decompress_file

runner = CliRunner()


def run(*args, code=0, env=None):
    result = runner.invoke(app, [str(a) for a in args], env=env)
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout
    return result


def error_line(result) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("fsstgpu: error: "), result.stderr
    return lines[0]


@pytest.fixture
def plain(tmp_path):
    path = tmp_path / "in.parquet"
    pq.write_table(pa.table({"s": [f"http://example.com/{i}" for i in range(500)]}), path)
    return path


@pytest.mark.parametrize("args", [["info"], ["decompress", "IN", "OUT"], ["roundtrip", "IN"]])
def test_bad_device_variable_is_a_usage_error(tmp_path, plain, args):
    args = [plain if a == "IN" else tmp_path / "o.parquet" if a == "OUT" else a for a in args]
    res = run(*args, code=2, env={"FSSTGPU_DEVICE": "banana"})
    line = error_line(res)
    assert "FSSTGPU_DEVICE='banana'" in line and "auto, cpu, gpu" in line
    assert not (tmp_path / "o.parquet").exists()


def test_bench_without_paths_or_corpus_is_a_usage_error(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # no shared/datasets/dbtext above it
    res = run("bench", code=2, env={"FSSTGPU_DBTEXT": str(tmp_path / "none")})
    assert "no PATH given" in error_line(res)
    res = run("bench", tmp_path / "none.txt", code=2)
    assert "none.txt: no such file" in error_line(res)


@pytest.mark.parametrize("command", [["train", "-o", "t.fsst"], ["roundtrip"]])
def test_missing_dbtext_input_is_a_usage_error(tmp_path, monkeypatch, command):
    """A dbtext name that is not there (no such file in the corpus, or no corpus) is a missing
    input file: exit 2, as `train nope.txt` and a bench without the corpus are (it was 1)."""
    monkeypatch.chdir(tmp_path)  # no shared/datasets/dbtext above it
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "uuid").write_text("a\n")
    name, *options = command
    res = run(name, "dbtext:nope", *options, code=2, env={"FSSTGPU_DBTEXT": str(corpus)})
    assert "no dbtext file 'nope'" in error_line(res)
    res = run(name, "uuid", *options, code=2, env={"FSSTGPU_DBTEXT": str(tmp_path / "none")})
    assert "dbtext corpus not found" in error_line(res)
    assert not (tmp_path / "t.fsst").exists()


KINDS = {1: "error", 2: "usage", 3: "device", 4: "corrupt", 130: "interrupted"}


def json_error(result, code, *needles):
    """Under --json an error is one JSON object on stdout (and the message on stderr), its
    kind in a word."""
    assert result.exit_code == code
    error = json.loads(result.stdout)
    assert error["exit_code"] == code and result.stderr
    assert error["kind"] == KINDS[code], error
    for needle in needles:
        assert needle in error["error"], (needle, error)
    return error


def test_json_errors_are_json(tmp_path, plain):
    out = tmp_path / "c.parquet"
    # the option parser's errors (exit 2)
    json_error(run("compress", tmp_path / "none.parquet", out, "--json", code=2), 2, "none.parquet")
    json_error(run("decompress", plain, out, "--device", "tpu", "--json", code=2), 2, "tpu")
    # the command's own errors: a usage error (2), an existing output (1), a corrupt input (4)
    json_error(run("compress", plain, out, "--columns", "zz", "--json", code=2), 2, "zz")
    run("compress", plain, out, "--json")
    json_error(run("compress", plain, out, "--json", code=1), 1, "already exists")
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1 not parquet PAR1")
    json_error(run("inspect", bad, "--json", code=4), 4, "bad.parquet")
    json_error(run("datasets", "generate", "urls", "--rows", "5", "-o", tmp_path / "x.txt",
                   "--json", code=2), 2, "x.txt")
    # without --json, errors stay off stdout
    assert run("compress", plain, out, code=1).stdout == ""


def test_json_as_an_option_value_is_not_the_json_option(tmp_path):
    """``--columns --json`` names a column called ``--json``; it switched JSON errors on (the
    raw arguments held ``--json``). Only the option itself does, as the parser reads it."""
    src, out = tmp_path / "in.parquet", tmp_path / "c.parquet"
    pq.write_table(pa.table({"--json": ["a", "b"], "s": ["c", "d"]}), src)
    run("compress", src, out, "--columns", "--json")
    for value in (["--columns", "--json"], ["--columns=--json"]):
        res = run("compress", src, out, *value, code=1)
        assert res.stdout == "" and "already exists" in error_line(res)
    # after --, an argument (here one too many)
    assert run("compress", src, out, "--", "--json", code=2).stdout == ""
    # a short option's value: -o of train, also after a flag in one word (-fo)
    for words in (["-o", "--json"], ["-fo", "--json"]):
        res = run("train", tmp_path / "none.txt", *words, code=2)
        assert res.stdout == "" and "none.txt" in res.stderr
    # the option after such a value still counts
    json_error(run("compress", src, out, "--columns", "--json", "--json", code=1), 1,
               "already exists")


@pytest.mark.parametrize("args", [["compress", "IN", "out.parquet"], ["compress", "DS", "out"],
                                  ["train", "IN", "-o", "out.fsst"],
                                  ["datasets", "generate", "urls", "--rows", "5", "-o", "out.pq"]])
def test_a_relative_output_in_a_deleted_current_folder_is_named(tmp_path, plain, monkeypatch,
                                                                 args):
    """``cd gone; rmdir ../gone; fsstgpu compress /abs/in.parquet out.parquet``: resolving OUT
    asked os.getcwd, whose error ("[Errno 2] No such file or directory") named no file; now
    the output is named, and what is wrong with it (exit 1, as for any missing output
    folder)."""
    (tmp_path / "ds").mkdir()
    (tmp_path / "ds" / "a.parquet").write_bytes(plain.read_bytes())
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    args = [plain if a == "IN" else tmp_path / "ds" if a == "DS" else a for a in args]
    line = error_line(run(*args, code=1))
    assert f"{args[-1]}: the current folder has been deleted" in line, line


@pytest.mark.parametrize("cmd", ["train", "inspect"])
def test_a_folder_where_one_file_is_taken_is_named_as_a_folder(tmp_path, plain, cmd):
    folder = tmp_path / "ds"
    folder.mkdir()
    (folder / "a.parquet").write_bytes(plain.read_bytes())
    extra = ["-o", tmp_path / "t.fsst"] if cmd == "train" else []
    res = run(cmd, folder, *extra, code=2)
    text = " ".join(res.stderr.replace("│", " ").split())
    assert "is a folder" in text and "no such file" not in text, text
    res = run(cmd, "/dev/null", *extra, code=2)
    assert "not a regular file" in " ".join(res.stderr.replace("│", " ").split())
    assert not (tmp_path / "t.fsst").exists()


def dataset_folder(tmp_path, plain) -> Path:
    """ds/ of two hive folders, and a _temporary/ and a hidden file that are not data."""
    folder = tmp_path / "ds"
    for rel in ("y=1/a.parquet", "y=2/b.snappy.parquet", "_temporary/0/c.parquet",
                ".d.parquet"):
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(plain.read_bytes())
    return folder


def test_roundtrip_of_a_folder_or_glob_round_trips_each_file(tmp_path, plain):
    """roundtrip FOLDER said "no such file", then "is a folder"; it round-trips the dataset:
    its data files (the skipped ones named), the figures their sums."""
    folder = dataset_folder(tmp_path, plain)
    one = json.loads(run("roundtrip", plain, "--json").stdout)
    for source in (folder, folder / "*" / "*.parquet"):
        res = run("roundtrip", source, "--json")
        got = json.loads(res.stdout)
        assert got["equal"] is True and got["files"] == 2 and got["fsst_columns"] == "s"
        for key in ("rows", "row_groups", "string_bytes", "codes_bytes", "input_file_bytes"):
            assert got[key] == 2 * one[key], key
        if source == folder:
            assert "skipped 2 files" in res.stderr and "_temporary/0/c.parquet" in res.stderr
    text = run("roundtrip", folder).stdout
    assert "round trip of" in text and "files" in text and "True" in text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds", "in.parquet"]  # nothing left


def test_roundtrip_of_the_folder_that_holds_the_temporary_folder(tmp_path, plain, monkeypatch):
    """roundtrip /tmp (TMPDIR inside the dataset): its temporary outputs are not inside the
    dataset's folder as data, nor read as its files."""
    import tempfile

    folder = dataset_folder(tmp_path, plain)
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    got = json.loads(run("roundtrip", folder, "--json").stdout)
    assert got["equal"] is True and got["files"] == 2



def test_out_stdout_beside_json_is_refused(tmp_path, plain):
    """``--out -`` and ``--json`` would both write to stdout: train and datasets generate
    refuse the pair as a usage error, writing nothing."""
    for cmd in (["train", plain, "--column", "s"], ["datasets", "generate", "urls", "--rows", "5"]):
        json_error(run(*cmd, "--out", "-", "--json", code=2), 2,
                   "--json and --out - would both write to stdout")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.parquet"]

def test_a_dataset_output_must_be_a_folder(tmp_path, plain, monkeypatch):
    """OUT x.parquet (and OUT -) for a folder IN: a usage error before anything is written,
    instead of exit 1 (x.parquet) or a folder named - (OUT -)."""
    folder = dataset_folder(tmp_path, plain)
    monkeypatch.chdir(tmp_path)  # where a folder named - would be made
    for cmd in ("compress", "decompress"):
        line = error_line(run(cmd, folder, tmp_path / "x.parquet", code=2))
        assert "x.parquet: the output of a dataset is a folder" in line
        line = error_line(run(cmd, folder, "-", code=2))
        assert "OUT - is standard output" in line
        json_error(run(cmd, folder, tmp_path / "x.parquet", "--json", code=2), 2, "folder")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds", "in.parquet"]


def test_compressing_a_dataset_names_the_files_it_skips(tmp_path, plain):
    """_temporary/ and .hidden files are not data (as in pyarrow.dataset): skipped, and said so
    on stderr (stdout keeps the results)."""
    folder = dataset_folder(tmp_path, plain)
    res = run("compress", folder, tmp_path / "c", "--json")
    assert [Path(r["output"]).relative_to(tmp_path / "c").as_posix()
            for r in json.loads(res.stdout)] == ["y=1/a.parquet", "y=2/b.parquet"]
    assert res.stderr.startswith("fsstgpu: note: skipped 2 files named _* or .*")
    assert ".d.parquet, _temporary/0/c.parquet" in res.stderr
    res = run("decompress", tmp_path / "c", tmp_path / "d")  # nothing to skip: no note
    assert "note" not in res.stderr


def test_dash_for_generate_and_a_pipe_of_commands(tmp_path):
    """datasets generate -o - writes the file to stdout (parquet unless --format), so that
    generate | compress - - | inspect - is a pipe."""
    run("datasets", "generate", "urls", "--rows", "300", "-o", tmp_path / "u.parquet")
    res = runner.invoke(app, ["datasets", "generate", "urls", "--rows", "300", "-o", "-"])
    assert res.exit_code == 0, res.stderr
    assert res.stdout_bytes == (tmp_path / "u.parquet").read_bytes()
    assert "generated urls" in res.stderr  # the results table: stderr
    res = runner.invoke(app, ["datasets", "generate", "urls", "--rows", "300", "-o", "-",
                              "--format", "arrows"])
    assert pa.ipc.open_stream(res.stdout_bytes).read_all().num_rows == 300
    res = runner.invoke(app, ["compress", "-", "-"], input=res.stdout_bytes)
    assert res.exit_code == 0, res.stderr
    res = runner.invoke(app, ["inspect", "-", "--json"], input=res.stdout_bytes)
    got = json.loads(res.stdout)
    assert got["format"] == "arrows" and got["columns"][0]["codec"] == "fsst"
    res = runner.invoke(app, ["datasets", "generate", "urls", "--rows", "3", "-o", "-", "--json"])
    assert res.exit_code == 2 and json.loads(res.stdout)["kind"] == "usage"


def test_dash_for_inspect_train_and_roundtrip(tmp_path, plain):
    """inspect -, train - and roundtrip - read standard input; train --out - writes the table
    to stdout."""
    res = runner.invoke(app, ["inspect", "-", "--json"], input=plain.read_bytes())
    assert res.exit_code == 0, res.stderr
    got = json.loads(res.stdout)
    assert got["path"] == "<stdin>" and got["rows"] == 500 and got["format"] == "parquet"
    run("train", plain, "-o", tmp_path / "t.fsst")
    res = runner.invoke(app, ["train", "-", "-o", "-"], input=plain.read_bytes())
    assert res.exit_code == 0, res.stderr
    assert res.stdout_bytes == (tmp_path / "t.fsst").read_bytes()
    assert "symbol table from -" in res.stderr  # the results table: stderr
    res = runner.invoke(app, ["train", "-", "-o", "-"], input=b"one line\nanother line\n")
    assert res.exit_code == 0 and len(res.stdout_bytes) > 0
    res = runner.invoke(app, ["train", plain.as_posix(), "-o", "-", "--json"])
    assert res.exit_code == 2 and json.loads(res.stdout)["kind"] == "usage"
    res = runner.invoke(app, ["inspect", "-"], input=b"not a file")
    assert res.exit_code == 4 and "<stdin>: not a Parquet or Arrow IPC file" in res.stderr
    res = runner.invoke(app, ["roundtrip", "-", "--json"], input=plain.read_bytes())
    got = json.loads(res.stdout)
    assert got["source"] == "<stdin>" and got["format"] == "parquet" and got["rows"] == 500
    assert got["equal"] is True
    res = runner.invoke(app, ["roundtrip", "-", "--json"], input=b"a line\nanother\n")
    got = json.loads(res.stdout)
    assert got["source"] == "<stdin>" and got["strings"] == 2 and got["equal"] is True


def read_only_folder(tmp_path) -> Path:
    """A folder this process cannot create files in (root writes in a 0o555 folder: /sys)."""
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    for candidate in (folder, Path("/sys")):
        try:
            (candidate / "probe").touch()
        except OSError:
            return candidate
        (candidate / "probe").unlink()
    pytest.skip("no read-only folder here")


def test_read_only_output_names_the_output_not_the_temporary_file(tmp_path, plain):
    out = read_only_folder(tmp_path) / "o.parquet"
    line = error_line(run("compress", plain, out, code=1))
    assert str(out) in line and TEMP_SUFFIX not in line and ".o.parquet." not in line, line
    assert not out.exists()


def test_errors_about_the_temporary_file_name_the_output(tmp_path):
    dst = tmp_path / "x.bin"
    with pytest.raises(OSError) as caught, atomic_output(dst) as tmp:
        raise OSError(errno.ENOSPC, "No space left on device", tmp)
    assert caught.value.errno == errno.ENOSPC and caught.value.filename == str(dst)
    assert TEMP_SUFFIX not in str(caught.value)
    assert list(tmp_path.iterdir()) == []


def test_decompress_refuses_a_plain_file(tmp_path, plain):
    """A file fsstgpu did not compress is refused (exit 2), not rewritten (re-encoded, larger)."""
    out = tmp_path / "d.parquet"
    line = error_line(run("decompress", plain, out, code=2))
    assert "in.parquet" in line and "not a file written by `fsstgpu compress`" in line
    assert not out.exists()
    with pytest.raises(NotCompressedError, match="nothing to decompress"):
        decompress_file(plain, out)
    # a compressed file, and one compressed from a table without strings, still decompress
    run("compress", plain, tmp_path / "c.parquet")
    run("decompress", tmp_path / "c.parquet", out)
    assert pq.read_table(out).equals(pq.read_table(plain))
    pq.write_table(pa.table({"n": [1, 2]}), tmp_path / "n.parquet")
    run("compress", tmp_path / "n.parquet", tmp_path / "cn.parquet")
    run("decompress", tmp_path / "cn.parquet", tmp_path / "dn.parquet")
    # a dataset of plain files is refused at its first file
    folder = tmp_path / "ds"
    folder.mkdir()
    (folder / "a.parquet").write_bytes(plain.read_bytes())
    assert "a.parquet" in error_line(run("decompress", folder, tmp_path / "dout", code=2))


COMMANDS = [["compress"], ["decompress"], ["inspect"], ["roundtrip"], ["bench"], ["train"],
            ["info"], ["datasets"], ["datasets", "list"], ["datasets", "generate"], []]


@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: "-".join(c) or "app")
def test_help_shows_what_it_says(cmd):
    """Help is rich markup: [dask] must be escaped to show; flags take no value: no <bool>."""
    out = run(*cmd, "--help", env={"COLUMNS": "250"}).stdout
    assert "<bool>" not in out
    if cmd in (["compress"], ["decompress"]):
        assert "pip install 'fsstgpu[dask]'" in out
    if cmd == ["compress"]:  # the flags are still listed, with their negative forms
        for flag in ("--force", "-f", "--progress", "--no-progress", "--json", "--help"):
            assert flag in out


@pytest.mark.parametrize("columns", ["80", "120"])
@pytest.mark.parametrize("cmd", COMMANDS, ids=lambda c: "-".join(c) or "app")
def test_help_fits_common_terminal_widths(cmd, columns):
    """At 80 and 120 columns no help text is cut short: rich crops a word wider than the help
    column with an ellipsis (the --json help's "usage|error|device|..." and bench's file paths
    were), and a later paragraph of a command's help is wrapped by the terminal, not by the
    docstring's line breaks (bench's showed as ragged lines)."""
    out = run(*cmd, "--help", env={"COLUMNS": columns}).stdout
    assert "\u2026" not in out, [line for line in out.splitlines() if "\u2026" in line]
    if cmd == ["bench"] and columns == "120":
        assert "Parquet sizes, writes, reads and reads onto the GPU" in out


@pytest.mark.parametrize("cmd", [["compress"], ["decompress"], ["roundtrip"]])
def test_device_help_names_the_variable_auto_takes(cmd):
    """--device auto takes FSSTGPU_DEVICE first (fsstgpu.device.resolve_device): the help said
    only "auto picks the GPU when one is usable", which FSSTGPU_DEVICE=cpu or gpu contradicts."""
    out = run(*cmd, "--help", env={"COLUMNS": "250"}).stdout
    assert "auto takes FSSTGPU_DEVICE when it is set" in out


def test_dash_is_stdin_and_stdout(tmp_path, plain):
    """compress - - < in > out, as gzip / zstd users pipe; errors name <stdin>, stdout gets the
    file only when it is complete."""
    res = runner.invoke(app, ["compress", "-", "-"], input=plain.read_bytes())
    assert res.exit_code == 0, res.stderr
    assert res.stdout_bytes[:4] == b"PAR1" and "compressed - -> -" in res.stderr  # table: stderr
    (tmp_path / "c.parquet").write_bytes(res.stdout_bytes)
    res = runner.invoke(app, ["decompress", "-", "-", "--format", "arrows"],
                        input=res.stdout_bytes)
    assert res.exit_code == 0, res.stderr
    assert pa.ipc.open_stream(res.stdout_bytes).read_all().equals(pq.read_table(plain))
    res = runner.invoke(app, ["decompress", "-", str(tmp_path / "d.parquet"), "--json"],
                        input=(tmp_path / "c.parquet").read_bytes())
    assert res.exit_code == 0 and json.loads(res.stdout)["rows"] == 500
    assert pq.read_table(tmp_path / "d.parquet").equals(pq.read_table(plain))
    res = runner.invoke(app, ["compress", "-", "-"], input=b"not a file")
    assert res.exit_code == 4 and res.stdout_bytes == b""
    line = error_line(res)
    assert "<stdin>" in line and "fsstgpu-stdin" not in line, line
    res = runner.invoke(app, ["compress", str(plain), "-", "--json"])
    assert res.exit_code == 2 and json.loads(res.stdout)["exit_code"] == 2


def _fed_fifo(path: Path, data: bytes) -> Path:
    """A named pipe at ``path`` that a thread fills with ``data`` once a reader opens it."""
    os.mkfifo(path)

    def feed():
        with open(path, "wb") as f:
            f.write(data)

    threading.Thread(target=feed, daemon=True).start()
    return path


#: the command line in a process of its own (the console script may not be on the PATH)
CLI = [sys.executable, "-c",
       "import sys; from fsstgpu.cli.app import app; app(sys.argv[1:], prog_name='fsstgpu')"]


def _cli(*args) -> subprocess.CompletedProcess:
    """The command line in a process of its own, bounded in time (a read that waits for a
    writer the pipe no longer has would otherwise hang the test run)."""
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, text=True, timeout=120)


def _assert_quiet_when_stdout_goes(*args) -> None:
    """The command ``args`` ends with exit 141 and nothing on stderr when its reader of
    stdout goes away after 100 bytes."""
    proc = subprocess.Popen([*CLI, *map(str, args)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    assert len(proc.stdout.read(100)) == 100
    proc.stdout.close()  # the reader goes away mid-stream
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141, err
    assert err == "", err


def test_a_pipe_named_as_a_file_is_read_as_stdin_is(tmp_path, plain):
    """compress <(command) out: the pipe (/dev/fd/63) failed with exit 4, "unreadable
    (OSError: lseek failed)", and a named pipe hung at its second opening; a pipe is now
    copied whole first, as - is, and named in messages. A device is not a pipe: /dev/zero
    would never end (exit 2)."""
    fifo = _fed_fifo(tmp_path / "in.fifo", plain.read_bytes())
    done = _cli("compress", fifo, tmp_path / "c.parquet")
    assert done.returncode == 0, done.stderr
    fifo.unlink()
    fifo = _fed_fifo(tmp_path / "in.fifo", (tmp_path / "c.parquet").read_bytes())
    done = _cli("decompress", fifo, tmp_path / "d.parquet")
    assert done.returncode == 0, done.stderr
    assert pq.read_table(tmp_path / "d.parquet").equals(pq.read_table(plain))
    fifo.unlink()
    fifo = _fed_fifo(tmp_path / "in.fifo", b"not a file")
    done = _cli("inspect", fifo)
    assert done.returncode == 4, done.stderr
    line = done.stderr.strip().splitlines()[-1]
    assert str(fifo) in line and "fsstgpu-stdin" not in line, line
    if os.path.exists("/dev/zero"):
        res = runner.invoke(app, ["compress", "/dev/zero", str(tmp_path / "z.parquet")])
        assert res.exit_code == 2 and "not a regular file" in res.stderr
        assert not (tmp_path / "z.parquet").exists()


def test_a_reader_of_stdout_that_goes_away_ends_the_command_quietly(tmp_path):
    """`fsstgpu ... - | head -c 100` printed "fsstgpu: error: [Errno 32] Broken pipe" (exit 1);
    now it ends as a tool killed by SIGPIPE does: exit 141, nothing on stderr."""
    _assert_quiet_when_stdout_goes("datasets", "generate", "urls", "--rows", "2000000", "-o",
                                   "-", "--format", "arrows")


def test_inputs_behind_stdin_or_a_table_option_are_not_outputs(tmp_path, plain):
    """`compress - f --force < f`, `train - -o f --force < f` and `compress in f --table f
    --force` replaced f, the user's input: stdin's file and the table file are inputs too."""
    before = plain.read_bytes()
    with open(plain, "rb") as stdin:
        done = subprocess.run([*CLI, "compress", "-", str(plain), "--force"], stdin=stdin,
                              capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "the output is the input" in done.stderr, done.stderr
    assert plain.read_bytes() == before
    text = tmp_path / "lines.txt"
    text.write_text("alpha\nbeta\n")
    with open(text, "rb") as stdin:
        done = subprocess.run([*CLI, "train", "-", "-o", str(text), "--force"], stdin=stdin,
                              capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "the output is the input" in done.stderr, done.stderr
    assert text.read_text() == "alpha\nbeta\n"
    table = tmp_path / "t.arrow"  # (a table file whose name an output could take)
    table.write_bytes(train(["http://example.com/a", "http://example.com/b"]).to_bytes())
    kept = table.read_bytes()
    done = _cli("compress", plain, table, "--table", table, "--force")
    assert done.returncode == 1 and "the output is the input" in done.stderr, done.stderr
    assert table.read_bytes() == kept


def test_an_empty_out_and_a_closed_stdout_are_usage_errors(tmp_path, plain):
    """OUT '' was taken as the current folder (the file written there under IN's name), and
    OUT - with stdout closed (`>&-`) ended in "unexpected AttributeError"."""
    res = runner.invoke(app, ["compress", str(plain), ""])
    assert res.exit_code == 2 and "an empty path" in res.stderr, res.stderr
    done = subprocess.run(["sh", "-c", 'exec "$@" >&-', "sh", *CLI, "compress", str(plain), "-"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == ("fsstgpu: error: OUT - writes the file to standard output, "
                                   "which is closed here"), done.stderr


def test_a_spooled_file_whose_reader_goes_away_is_not_reported_written(tmp_path):
    """`fsstgpu compress in.parquet - | head -c 100`: the spooled file went out through
    shutil.copyfileobj, whose short write to the closed pipe passed unnoticed; the command
    printed its results table and exited 0 with part of the file written."""
    # random hex: a file far larger than a pipe's buffer, whatever the compression
    rng = random.Random(7)
    pq.write_table(pa.table({"s": [f"{rng.getrandbits(128):032x}" for _ in range(40_000)]}),
                   tmp_path / "big.parquet")
    _assert_quiet_when_stdout_goes("compress", tmp_path / "big.parquet", "-")


def test_a_results_table_whose_reader_goes_away_ends_as_a_file_does(tmp_path):
    # `fsstgpu inspect wide.parquet | head`: rich ended such a command with exit 1
    pq.write_table(pa.table({f"c{i}": [f"value {j} {i}" for j in range(5)] for i in range(400)}),
                   tmp_path / "w.parquet")
    run("compress", tmp_path / "w.parquet", tmp_path / "c.parquet")  # 100 KB of inspect text
    _assert_quiet_when_stdout_goes("inspect", tmp_path / "c.parquet")


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs Linux's /dev/full")
def test_a_full_disk_behind_stdout_is_named(tmp_path, plain):
    with open("/dev/full", "wb") as full:
        done = subprocess.run([*CLI, "compress", str(plain), "-"], stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip() == ("fsstgpu: error: [Errno 28] No space left on device: "
                                   "'<stdout>'"), done.stderr
    # --json: the error's JSON went to the same full stdout, and a traceback followed
    with open("/dev/full", "wb") as full:
        done = subprocess.run([*CLI, "info", "--json"], stdout=full, stderr=subprocess.PIPE,
                              text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip() == "fsstgpu: error: [Errno 28] No space left on device", (
        done.stderr)


def test_a_folder_as_the_output_of_one_file_gets_it_under_its_name(tmp_path, plain):
    """compress in.parquet out/ said "cannot tell the output format from 'no suffix'"; an
    existing folder takes the file under the input's name, as cp does (a codec name before the
    suffix dropped, as in a dataset's outputs)."""
    out = tmp_path / "out"
    out.mkdir()
    run("compress", plain, out)
    assert [p.name for p in out.iterdir()] == ["in.parquet"]
    assert "already exists" in error_line(run("compress", plain, out, code=1))
    spark = tmp_path / "part-0.snappy.parquet"
    spark.write_bytes(plain.read_bytes())
    res = run("compress", spark, out, "--json")
    assert json.loads(res.stdout)["output_bytes"] == (out / "part-0.parquet").stat().st_size
    back = tmp_path / "back"
    back.mkdir()
    run("decompress", out / "in.parquet", back)
    assert pq.read_table(back / "in.parquet").equals(pq.read_table(plain))
    res = runner.invoke(app, ["compress", "-", str(out)], input=plain.read_bytes())
    assert res.exit_code == 2 and "standard input has no name" in res.stderr
    # a folder that does not exist is named as such (it was "cannot tell the output format")
    res = runner.invoke(app, ["compress", str(plain), str(tmp_path / "nodir") + "/"])
    assert res.exit_code == 2 and "nodir/: no such directory" in res.stderr, res.stderr


def test_a_file_named_like_a_glob_pattern_is_that_file(tmp_path):
    """A real file whose name holds glob characters is that file, not a pattern: before, IN
    'br[1].parquet' matched br1.parquet and compressed it (session 62's hostile-environment
    round)."""
    named = tmp_path / "br[1].parquet"
    pq.write_table(pa.table({"s": ["the real one"] * 10}), named)
    pq.write_table(pa.table({"s": ["another file"] * 10}), tmp_path / "br1.parquet")
    folder = tmp_path / "out"
    folder.mkdir()
    run("compress", named, folder)
    assert [p.name for p in folder.iterdir()] == ["br[1].parquet"]
    run("decompress", folder / "br[1].parquet", tmp_path / "back.parquet")
    assert pq.read_table(tmp_path / "back.parquet")["s"][0].as_py() == "the real one"
    run("compress", named, tmp_path / "one.parquet")  # a file OUT, not "a dataset's folder"
    run("roundtrip", named)


@pytest.mark.parametrize("command", ["compress", "decompress", "inspect", "roundtrip", "train"])
def test_an_input_that_cannot_be_looked_at_is_a_usage_error(tmp_path, command):
    """A name too long (or a folder without permission) is a usage error naming the reason,
    not a PermissionError / OSError traceback from pathlib's exists()."""
    name = tmp_path / ("x" * 300 + ".parquet")
    outs = {"compress": [tmp_path / "o.parquet"], "decompress": [tmp_path / "o.parquet"],
            "train": [tmp_path / "t.fsst"]}
    res = run(command, name, *outs.get(command, []), code=2)
    said = " ".join((res.stderr + res.stdout).replace("│", " ").split())  # rich's box unwrapped
    assert "File name too long" in said


def test_spools_of_killed_processes_are_removed_by_the_next(tmp_path, plain, monkeypatch):
    """A process killed (SIGKILL) while spooling stdin leaves its copy of the input in the
    temporary folder; the next run that spools removes it, naming it, and keeps live ones."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead, alive = int(done.stdout), os.getpid()
    host = owner_tag().split("@")[1]
    stale = tmp_path / f"fsstgpu-stdin-{dead}@{host}-abc123"
    live = tmp_path / f"fsstgpu-stdout-{alive}@{host}-def456"
    for folder in (stale, live):
        folder.mkdir()
        (folder / "stdin.parquet").write_bytes(plain.read_bytes())
    with pytest.warns(StaleTemporaryFileWarning, match="a spool left by a process"):
        with open(plain, "rb") as f:
            monkeypatch.setattr(sys, "stdin", type("In", (), {"buffer": f})())
            with stdin_file("-") as path:
                assert Path(path).read_bytes() == plain.read_bytes()
    assert not stale.exists() and live.exists()



def test_round_trip_copies_of_killed_processes_are_removed_by_the_next(tmp_path, plain,
                                                                       monkeypatch):
    """`roundtrip` writes two copies of its input to a temporary folder; one killed (SIGKILL)
    left them there for good (an untagged name no run removed), as the stdin spools once did."""
    spools = tmp_path / "tmp"
    spools.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spools))
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    stale = spools / f"_fsstgpu-roundtrip-{int(done.stdout)}@{owner_tag().split('@')[1]}-ab1"
    stale.mkdir()
    (stale / "c.parquet").write_bytes(plain.read_bytes())
    with pytest.warns(StaleTemporaryFileWarning, match="a spool left by a process"):
        run("roundtrip", plain, "--device", "cpu")
    assert list(spools.iterdir()) == []


def test_a_full_temporary_folder_is_named_when_spooling(tmp_path, plain, monkeypatch):
    """ENOSPC while spooling standard input: the message names the temporary folder (TMPDIR),
    not a disk behind <stdin> (before: '[Errno 28] No space left on device', no file)."""
    spools = tmp_path / "tmp"
    spools.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(spools))

    def full(src, dst, length=0):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("shutil.copyfileobj", full)
    with open(plain, "rb") as f:
        monkeypatch.setattr(sys, "stdin", type("In", (), {"buffer": f})())
        with pytest.raises(OSError, match=f"temporary folder {spools} .TMPDIR.") as err:
            with stdin_file("-"):
                pass
    assert err.value.filename == "<stdin>"
    assert not any(spools.iterdir())  # the spool removed


@pytest.mark.parametrize("width", [80, 100, 120])
def test_progress_line_keeps_its_numbers_at_common_widths(width):
    """The progress bar's line fits the terminal with its numbers whole: at 80 columns a file
    name of 30 characters left no room for the bar, and rich cropped the rate and the times
    ('53.8 MiB…', '0:0…'); now the description is cut instead."""
    description = "compress events-2024-part-00001.parquet"
    buf = io.StringIO()
    console = Console(file=buf, width=width, force_terminal=True, color_system=None)
    progress = Progress(*progress_columns(description, width), console=console)
    task = progress.add_task(description, total=56, rows=0, mib=0.0, rate=0.0)
    progress.update(task, completed=30, rows=11_146_400, mib=12345.6, rate=1234.5)
    console.print(progress.make_tasks_table(progress.tasks))
    line = buf.getvalue().rstrip("\n")
    assert len(line) <= width and "\n" not in line, line
    numbers = line[line.index("54%"):]
    assert "\u2026" not in numbers and numbers.endswith("-:--:--"), line
    assert "11,146,400 rows" in numbers and "1234.5 MiB/s" in numbers, line
    assert "\u2501" in line, line  # the bar


def test_roundtrip_tells_its_steps(monkeypatch):
    """`fsstgpu roundtrip` of a 275 MB file ran 18 s with nothing on a terminal; it now names
    each step on stderr (a spinner, terminals only)."""
    told = []

    @contextlib.contextmanager
    def recording(what):
        told.append(str(what))
        yield told.append

    monkeypatch.setattr(roundtrip_module, "phases", recording)
    sample = Path(roundtrip_module.__file__).parents[1] / "datasets/sample/sample.parquet"
    result = roundtrip_module.roundtrip_file(sample, "cpu", 2)
    assert result["equal"]
    assert told == [str(sample), "compressing (run 1 of 2)", "decompressing (run 1 of 2)",
                    "compressing (run 2 of 2)", "decompressing (run 2 of 2)",
                    "comparing with the input"]
    with roundtrip_module.phases("x") as phase:  # stderr is no terminal here: nothing drawn
        phase("compressing")


def test_json_of_a_pipe_input_names_the_pipe_not_the_spooled_copy(tmp_path, plain):
    """`inspect --json <pipe>` and `roundtrip --json <pipe>` reported the path of the
    temporary copy (/tmp/fsstgpu-stdin-.../stdin.parquet), which is gone when they end, as
    the file's path; only `-` was renamed (<stdin>)."""
    fifo = _fed_fifo(tmp_path / "in.fifo", plain.read_bytes())
    done = _cli("inspect", "--json", fifo)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["path"] == str(fifo)
    fifo.unlink()
    fifo = _fed_fifo(tmp_path / "in.fifo", plain.read_bytes())
    done = _cli("roundtrip", "--json", fifo)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["source"] == str(fifo)


def test_a_missing_url_input_is_a_usage_error(tmp_path):
    """The help says a missing input file exits 2; a URL's missing object exited 1 (its
    FileNotFoundError was an 'other error'). The Python API still raises FileNotFoundError."""
    pytest.importorskip("fsspec", reason="fsspec is optional (URL inputs)")
    done = _cli("compress", "memory://fsstgpu-test-none/x.parquet", tmp_path / "o.parquet")
    assert done.returncode == 2, done.stderr
    assert "no such file" in done.stderr and not (tmp_path / "o.parquet").exists()
    with pytest.raises(FileNotFoundError, match="no such file"):
        compress_file("memory://fsstgpu-test-none/x.parquet", tmp_path / "o.parquet")


def test_train_column_on_a_text_file_is_a_usage_error(tmp_path):
    """`train --column` of a text file (one string a line, no columns) exited 1 with the
    API's wording; it is a usage error (exit 2) naming --column."""
    (tmp_path / "x.txt").write_text("a\nb\n")
    res = run("train", str(tmp_path / "x.txt"), "--column", "s", "-o",
              str(tmp_path / "t.fsst"), code=2)
    assert "--column" in error_line(res) and not (tmp_path / "t.fsst").exists()
