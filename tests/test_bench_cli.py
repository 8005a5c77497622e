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


class _FakeGpuBench:
    """Stands in for benchmarks.gpu, gpu_sizes and gpu_encode (no GPU here): records each run
    and returns a sweep that sweep_plot can draw."""

    def __init__(self):
        self.ran = []

    def run_gpu_bench(self, paths, target_bytes, *, nvcomp, progress):
        self.ran.append("files")
        return [{"file": "f", "variant": "kernel only", "GB/s": 100.0}]

    def run(self, *, nvcomp, progress):
        self.ran.append("run")
        return [{"what": "fsstgpu", "MiB": m, "GB/s": 10.0 * m, "copy GB/s": 4000.0}
                for m in (1.0, 4.0)]

    def format_gpu_bench(self, rows):
        return "files table"

    format_sweep = format_encode = format_gpu_bench


@pytest.fixture
def fake_gpu(monkeypatch, tmp_path):
    """`bench --device gpu` with the GPU modules faked, sweep_plot real and a dbtext corpus
    of one file (what the sweep needs to run)."""
    import fsstgpu.cli.run_bench as run_bench

    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "uuid").write_text("a\n")
    monkeypatch.setenv("FSSTGPU_DBTEXT", str(tmp_path / "corpus"))
    fake, real = _FakeGpuBench(), run_bench._benchmarks
    monkeypatch.setattr(run_bench, "resolve_device", lambda device: device)
    monkeypatch.setattr(run_bench, "_benchmarks",
                        lambda name: real(name) if name == "sweep_plot" else fake)
    return fake


@pytest.fixture
def lines(tmp_path):
    path = tmp_path / "lines.txt"
    path.write_text("".join(f"http://example.com/{i}\n" for i in range(100)))
    return path


def test_plot_never_replaces_a_file_without_force(tmp_path, fake_gpu, lines):
    """--plot onto an existing file is refused before anything runs (it was replaced after
    the run); --force replaces it."""
    plot = tmp_path / "sweep.svg"
    plot.write_text("mine")
    res = run("bench", lines, "--device", "gpu", "--plot", plot, code=1)
    assert "already exists" in res.stderr and "--force" in res.stderr
    assert plot.read_text() == "mine" and fake_gpu.ran == []
    run("bench", lines, "--device", "gpu", "--plot", plot, "--force")
    assert plot.read_text().count("<polyline") == 1


def test_plot_into_a_missing_folder_is_refused_before_the_run(tmp_path, fake_gpu, lines):
    res = run("bench", lines, "--device", "gpu", "--plot", tmp_path / "no" / "s.svg", code=1)
    assert "does not exist" in res.stderr and fake_gpu.ran == []


def test_a_plot_that_fails_to_draw_loses_no_result(tmp_path, fake_gpu, lines, monkeypatch):
    """The results are printed before the plot is drawn: a failed draw (a full disk) costs the
    plot only (it was drawn before the encode bench ran and anything was printed)."""
    import fsstgpu.cli.run_bench as run_bench

    sweep_plot = run_bench._benchmarks("sweep_plot")   # (puts the checkout on sys.path)

    def full(rows, path, **kwargs):
        raise OSError(28, "No space left on device", str(path))

    monkeypatch.setattr(sweep_plot, "draw_sweep", full)
    res = run("bench", lines, "--device", "gpu", "--plot", tmp_path / "s.svg", "--json",
              code=1)
    out = json.loads(res.stdout)
    assert set(out) == {"files", "sweep", "encode"} and "No space left" in res.stderr
    # drawn through a temporary: nothing left beside the inputs
    assert sorted(p.name for p in tmp_path.iterdir()) == ["corpus", "lines.txt"]


class _NoCorpusGpuBench(_FakeGpuBench):
    """benchmarks.gpu_sizes.run and gpu_encode.run fail as theirs do without the corpus."""

    def run(self, *, nvcomp, progress):
        raise FileNotFoundError("no dbtext files found (set FSSTGPU_DBTEXT)")


def test_gpu_bench_of_named_files_without_the_corpus(tmp_path, fake_gpu, lines, monkeypatch):
    """Named files and no dbtext corpus: the per-file bench's rows are printed and the sweep and
    encode bench (dbtext only) left out with a note; --plot, which draws the sweep, is refused
    before the run. It failed after the per-file bench, exit 1, nothing printed."""
    import fsstgpu.cli.run_bench as run_bench

    monkeypatch.setenv("FSSTGPU_DBTEXT", str(tmp_path / "none"))  # (fake_gpu's corpus gone)
    monkeypatch.chdir(tmp_path)  # no shared/datasets/dbtext above it
    fake, real = _NoCorpusGpuBench(), run_bench._benchmarks
    monkeypatch.setattr(run_bench, "_benchmarks",
                        lambda name: real(name) if name == "sweep_plot" else fake)
    res = run("bench", lines, "--device", "gpu", "--json")
    assert json.loads(res.stdout) == {"files": fake.run_gpu_bench(None, 0, nvcomp=True,
                                                                  progress=None),
                                      "sweep": [], "encode": []}
    assert "dbtext corpus was not found" in res.stderr
    res = run("bench", lines, "--device", "gpu", code=0)
    assert "files table" in res.stdout
    fake.ran.clear()
    res = run("bench", lines, "--device", "gpu", "--plot", tmp_path / "s.svg", code=2)
    assert "dbtext corpus" in res.stderr and fake.ran == []


@pytest.mark.parametrize("args, needle", [
    (["LINES", "--reference-table-mb", "1"], "--reference-table-mb goes with --reference"),
    (["files", "--threads", "2"], "`fsstgpu bench files` takes no --threads"),
    (["files", "--level", "fast"], "takes no --level"),
    (["files", "--reference", "LIB"], "takes no --reference"),
    (["kernels", "--device", "gpu", "--plot", "s.svg"], "`fsstgpu bench kernels` takes no "
                                                        "--plot"),
], ids=["table-mb", "files-threads", "files-level", "files-reference", "kernels-plot"])
def test_options_the_chosen_bench_does_not_read_are_refused(tmp_path, lines, args, needle):
    """Exit 2 before anything runs (they were ignored without a word: --reference-table-mb
    without --reference ran the plain CPU bench, `bench files --threads 2` the files bench)."""
    args = [lines if a == "LINES" else tmp_path if a == "LIB" else a for a in args]
    res = run("bench", *args, "--rows", "1", code=2)
    assert needle in res.stderr, res.stderr
    assert not (tmp_path / "s.svg").exists()
