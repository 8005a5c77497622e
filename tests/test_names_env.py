"""File names and environments the command line must take: a stdout that cannot encode a
name, ``./-`` and ``dir/`` as ``--out``, names that are not UTF-8, closed standard streams,
long values in the results table."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.parquet as pq
import pytest
from rich.console import Console
from typer.testing import CliRunner

from fsstgpu.cli.app import app
from fsstgpu.cli.output import kv_table
from fsstgpu.datasets import load

runner = CliRunner()
CLI = [sys.executable, "-c",
       "import sys; from fsstgpu.cli.app import app; app(sys.argv[1:], prog_name='fsstgpu')"]
TABLE = pa.table({"s": [f"http://example.com/{i}" for i in range(300)]})


def _cli(*args, env=None, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([*CLI, *map(str, args)], capture_output=True, timeout=120,
                          env={**os.environ, **(env or {})}, **kw)


@pytest.mark.parametrize("cmd", ["compress", "train", "inspect"])
def test_a_name_stdout_cannot_encode_is_no_failure(tmp_path, cmd):
    """PYTHONIOENCODING=ascii (or a C / Latin-1 locale): the results table naming café.parquet
    raised UnicodeEncodeError after the output was written, and the command exited 1."""
    src = tmp_path / "caf\u00e9.parquet"
    pq.write_table(TABLE, src)
    args = {"compress": ["compress", src, tmp_path / "out\u00e9.parquet"],
            "train": ["train", src, "-o", tmp_path / "t\u00e9.fsst"],
            "inspect": ["inspect", src]}[cmd]
    done = _cli(*args, env={"PYTHONIOENCODING": "ascii"})
    assert done.returncode == 0, done.stderr
    assert b"caf" in done.stdout and b"Traceback" not in done.stderr


@pytest.mark.parametrize("cmd", ["train", "generate"])
def test_out_is_taken_as_typed(tmp_path, monkeypatch, cmd):
    """``-o ./-`` names the file ``-`` (a Path made it ``-``: the bytes went to stdout), and
    ``-o dir/`` a folder (a Path dropped the slash and wrote a file ``dir``)."""
    monkeypatch.chdir(tmp_path)
    pq.write_table(TABLE, "in.parquet")
    head = (["train", "in.parquet"] if cmd == "train"
            else ["datasets", "generate", "urls", "--rows", "10", "--format", "parquet"])
    res = runner.invoke(app, [*head, "-o", "./-"])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "-").is_file() and (tmp_path / "-").stat().st_size > 0
    assert "FSTT" not in res.stdout and "PAR1" not in res.stdout
    res = runner.invoke(app, [*head, "-o", "nodir/"])
    assert res.exit_code != 0 and "nodir/" in res.stderr, res.output
    assert not (tmp_path / "nodir").exists()


@pytest.mark.parametrize("suffix", [".parquet", ".arrow"])
def test_load_a_file_whose_name_is_not_utf8(tmp_path, suffix):
    """`fsstgpu train` / `load` of a Parquet or IPC file named with a byte that is not UTF-8:
    "'utf-8' codec can't encode characters ...: surrogates not allowed", no file named."""
    path = os.path.join(tmp_path, os.fsdecode(b"bad\xff" + suffix.encode()))
    with pa.OSFile(os.fsencode(path), "wb") as f:  # (pyarrow's own opening of path fails)
        if suffix == ".parquet":
            pq.write_table(TABLE, f)
        else:
            feather.write_feather(TABLE, f)
    assert load(path).to_pylist() == TABLE.column("s").to_pylist()
    res = runner.invoke(app, ["train", path, "-o", str(tmp_path / "t.fsst")])
    assert res.exit_code == 0, res.output


def test_stdin_closed(tmp_path):
    """``compress - out <&-``: "unexpected AttributeError: 'NoneType' object has no attribute
    'buffer'"; now a usage error saying standard input is closed."""
    done = _cli("compress", "-", tmp_path / "o.parquet", preexec_fn=lambda: os.close(0))
    err = done.stderr.decode()
    assert done.returncode == 2, err
    assert err.startswith("fsstgpu: error: ") and "standard input" in err and "closed" in err
    assert len(err.strip().splitlines()) == 1, err


def test_json_with_stdout_closed(tmp_path):
    """``inspect --json f >&-``: two tracebacks (the JSON error written to the missing stdout
    again); now the one line on stderr."""
    src = tmp_path / "in.parquet"
    pq.write_table(TABLE, src)
    done = _cli("inspect", "--json", src, preexec_fn=lambda: os.close(1))
    err = done.stderr.decode()
    assert done.returncode == 1, err
    assert len(err.strip().splitlines()) == 1 and err.startswith("fsstgpu: error: "), err


def test_results_table_keeps_long_values_whole():
    """A value wider than the table (a long output path, or 400,000 under COLUMNS=20) was cut
    to "…": the results lost characters."""
    buf = io.StringIO()
    Console(file=buf, width=40).print(kv_table("t", [("written to", "x" * 100 + ".fsst")]))
    assert buf.getvalue().count("x") == 100 and ".fsst" in buf.getvalue()
