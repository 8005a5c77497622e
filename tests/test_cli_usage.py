"""The command line as a demanding user meets it (issue #23, item 7): usage errors exit 2, JSON
for errors too, messages that name what the user gave, help text that shows what it says."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from fsstgpu.cli.app import app

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
