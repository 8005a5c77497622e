"""Stopping the command line: SIGINT, SIGTERM and SIGHUP leave no partial output and exit
128 + the signal number; interrupts Python has to ignore still count; no tracebacks."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import fsstgpu
import fsstgpu.cli.app as app_module
from fsstgpu.cli.app import main
from fsstgpu.cli.signals import Stopped, stop_signals
from fsstgpu.datasets.generators import generate
from fsstgpu.formats.atomic import TEMP_SUFFIX

CLI = [sys.executable, "-m", "fsstgpu.cli.app"]


@pytest.fixture(scope="module")
def big_input(tmp_path_factory):
    """A file that takes a second or more to compress."""
    path = tmp_path_factory.mktemp("signals") / "in.parquet"
    pq.write_table(pa.table({"u": generate("urls", 1_500_000, 1)}), path,
                   row_group_size=250_000)
    return path


def start_writing(args, out_dir):
    """Start the CLI and return it once its temporary output file exists."""
    proc = subprocess.Popen(CLI + [str(a) for a in args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not any(p.name.endswith(TEMP_SUFFIX) for p in out_dir.iterdir()):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            pytest.fail(f"no temporary file appeared: {proc.communicate()}")
        time.sleep(0.005)
    return proc


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_stop_signal_removes_the_temporary_file(big_input, tmp_path, signum):
    proc = start_writing(["compress", big_input, tmp_path / "out.parquet", "--no-progress"],
                         tmp_path)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signum, err
    name = signal.Signals(signum).name
    assert err == f"fsstgpu: error: stopped by {name}; no partial file was left\n"
    assert out == "" and list(tmp_path.iterdir()) == []


def test_killed_run_litter_is_removed_by_the_next_run_beside_it(big_input, tmp_path):
    proc = start_writing(["compress", big_input, tmp_path / "out.parquet", "--no-progress"],
                         tmp_path)
    proc.kill()
    proc.communicate(timeout=60)
    (litter,) = tmp_path.iterdir()
    res = subprocess.run(CLI + ["datasets", "generate", "urls", "--rows", "10", "--out",
                                str(tmp_path / "other.parquet")],
                         capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert res.stderr.startswith("fsstgpu: warning: removed ") and litter.name in res.stderr
    assert [p.name for p in tmp_path.iterdir()] == ["other.parquet"]


def run_main(monkeypatch, capsys, *args):
    monkeypatch.setattr(sys, "argv", ["fsstgpu", *map(str, args)])
    with pytest.raises(SystemExit) as exit_:
        main()
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err and "Exception ignored" not in err
    return exit_.value.code, out, err


def test_an_interrupt_python_had_to_ignore_still_exits_130(monkeypatch, capsys):
    # Ctrl-C inside a finaliser (or a C callback) cannot stop the command: Python prints
    # "Exception ignored" and goes on, and the command used to exit 0.
    class InterruptedFinaliser:
        def __del__(self):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.01)  # the handler runs here, inside __del__

    real = fsstgpu.backend_info

    def backend_info():
        InterruptedFinaliser()
        return real()

    monkeypatch.setattr(fsstgpu, "backend_info", backend_info)
    # a command started from a shell in the foreground: SIGINT not ignored (stop_signals keeps an
    # ignored one ignored, and the test process may have inherited or been left with SIG_IGN)
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        code, out, err = run_main(monkeypatch, capsys, "info", "--json")
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # restored
    finally:
        signal.signal(signal.SIGINT, before)
    assert code == 130 and err == "fsstgpu: error: stopped by SIGINT\n"


@pytest.mark.parametrize(("exc", "code"), [(KeyboardInterrupt(), 130),
                                           (Stopped(signal.SIGTERM), 143)])
def test_stopped_while_a_command_reads_its_file(monkeypatch, capsys, tmp_path, exc, code):
    def stop(*args, **kwargs):
        raise exc

    # the command's work is interrupted (the CLI imports its modules when it is loaded)
    monkeypatch.setattr(app_module, "inspect_file", stop)
    path = tmp_path / "x.parquet"
    path.write_bytes(b"PAR1")
    got, out, err = run_main(monkeypatch, capsys, "inspect", path)
    assert got == code and out == ""
    assert err.startswith("fsstgpu: error: ") and err.count("\n") == 1


def test_stop_signals_keeps_ignored_signals_ignored():
    old = signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as under nohup
    try:
        with stop_signals() as received:
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            with pytest.raises(Stopped) as stop:
                os.kill(os.getpid(), signal.SIGTERM)
                time.sleep(1)
            assert stop.value.exit_code == 143 and received == [signal.SIGTERM]
    finally:
        signal.signal(signal.SIGHUP, old)


def test_stopped_while_typer_builds_the_command(monkeypatch, capsys):
    """A stop signal before any command runs (typer still building it): exit 143 and one
    line, not a traceback ending in Stopped with exit 1 (session 62's hostile-environment
    round: 3 of 60 SIGTERMs at 0.42-0.45 s)."""
    def building():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.5)  # the handler raises here

    monkeypatch.setattr(app_module, "app", building)
    before = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    try:
        with pytest.raises(SystemExit) as stop:
            main()
    finally:
        signal.signal(signal.SIGTERM, before)
    out, err = capsys.readouterr()
    assert stop.value.code == 143 and out == ""
    assert err == "fsstgpu: error: stopped by SIGTERM\n"
