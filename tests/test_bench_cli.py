"""`fsstgpu bench`'s command line: what it refuses before it measures, and how it says so.

The benchmarks themselves are in tests/test_benchmarks.py; the bench's other command-line
checks in tests/test_cli.py and tests/test_cli_usage.py.
"""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from fsstgpu.cli.app import app

runner = CliRunner()


def run(*args, code=0):
    result = runner.invoke(app, [str(a) for a in args])
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr and "Traceback" not in result.stdout
    return result


@pytest.mark.parametrize("content", [b"", b"\n\n\n"], ids=["empty", "empty-lines"])
@pytest.mark.parametrize("options", [[], ["--threads", "1"], ["--reference", "LIB"]],
                         ids=["cpu", "threads", "reference"])
def test_bench_refuses_a_file_without_string_bytes(tmp_path, content, options):
    """A file with no string bytes has nothing to time: exit 2 naming it (the CPU bench printed
    rows of 0 MB/s, --threads failed with an unexplained CalledProcessError and --reference
    with a ZeroDivisionError)."""
    good, empty = tmp_path / "good.txt", tmp_path / "empty.txt"
    good.write_text("".join(f"http://example.com/{i}\n" for i in range(500)))
    empty.write_bytes(content)
    options = [tmp_path if o == "LIB" else o for o in options]  # refused before it is loaded
    res = run("bench", good, empty, *options, "--json", code=2)
    error = json.loads(res.stdout)
    assert error["kind"] == "usage" and "empty.txt: no string bytes" in error["error"], error


def test_bench_times_a_file_of_carriage_returns(tmp_path):
    """A line of "\\r" is a one-byte string (load_lines keeps it): not an empty input."""
    path = tmp_path / "cr.txt"
    path.write_bytes(b"\r\n" * 3000)
    rows = json.loads(run("bench", path, "--json").stdout)
    assert rows[0]["bytes"] == 3000
