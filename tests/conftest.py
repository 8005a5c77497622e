"""Shared fixtures: the GPU marker skips cleanly without a usable GPU; dbtext is found by path."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest

import fsstgpu
from fsstgpu import native
from fsstgpu.datasets import dbtext_files

sys.path.insert(0, os.path.dirname(__file__))
from seeds import fresh_seed  # noqa: E402

# The CLI's tables and panels take their width from COLUMNS (a runner's 80 squashes names
# into "4.…"): the tests see what a pipe gets, whatever terminal started them.
for _name in ("COLUMNS", "LINES"):
    os.environ.pop(_name, None)

#: FSSTGPU_ENCODER's loops (None: the default choice)
ENCODER_LOOPS = (None, "chained", "lanes", "vector", "gather")


def pytest_collection_modifyitems(config, items):
    if fsstgpu.gpu_available():
        return
    reason = fsstgpu.backend_info()["gpu_reason"]
    skip = pytest.mark.skip(reason=f"no usable GPU: {reason}")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture
def fresh_rng(request):
    """A NumPy generator on a fresh seed (:func:`seeds.fresh_seed`), which a failing test's
    report names (``pytest_runtest_makereport``)."""
    seed = fresh_seed()
    request.node.user_properties.append(("seed", seed))
    return np.random.default_rng(seed)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    seeds = [value for name, value in item.user_properties if name == "seed"]
    if report.failed and seeds:
        report.sections.append(("random seed", f"FSSTGPU_TEST_SEED={seeds[0]} to draw it again"))
    return report


@pytest.fixture(scope="session")
def dbtext_paths():
    """Every dbtext file on this machine; skips the test when the corpus is absent."""
    paths = dbtext_files()
    if not paths:
        pytest.skip("dbtext corpus not found (set FSSTGPU_DBTEXT or run beside shared/)")
    return paths


@pytest.fixture
def encode_everywhere(monkeypatch):
    """``encode_blocks`` under every instruction set this CPU has, every encoder loop and (for
    the default loop) each of ``threads``; asserts that all give the same codes and code offsets
    and returns them."""

    def run(tables, data, offsets, block_starts, threads=(1, 2, 3)):
        first = None
        for isa in native.supported_isas():
            monkeypatch.setenv("FSSTGPU_ISA", isa)
            for loop in ENCODER_LOOPS:
                if loop:
                    monkeypatch.setenv("FSSTGPU_ENCODER", loop)
                else:
                    monkeypatch.delenv("FSSTGPU_ENCODER", raising=False)
                for t in threads if not loop else (1,):
                    got = native.encode_blocks(tables, data, offsets, block_starts, threads=t)
                    if first is None:
                        first = got
                    else:
                        assert np.array_equal(got[0], first[0]), (isa, loop, t)
                        assert np.array_equal(got[1], first[1]), (isa, loop, t)
        return first

    return run


@pytest.fixture
def fresh_python():
    """Run Python code in a new process started outside the checkout (so the current folder
    hides nothing: fsstgpu is this checkout's through the root conftest.py's finder, entry points
    are the installed ones) and return its stdout; a failure shows its stderr."""

    def run(code: str, *args: str) -> str:
        done = subprocess.run([sys.executable, "-W", "ignore", "-c", code, *args],
                              capture_output=True, text=True, cwd="/", check=False)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    return run


@pytest.fixture
def table_per_chunk(monkeypatch):
    """Plan every chunk of a ChunkedArray on its own, however small (fsstgpu.columns plans
    chunks under 1 MiB together): tests of multi-table columns build them from small chunks."""
    monkeypatch.setattr(fsstgpu.columns, "MIN_PIECE_BYTES", 1)


@pytest.fixture(scope="session")
def machine_lines() -> list:
    """Lines of this machine's own text (every string column of 20,000 rows of
    ``machine_text_table``, nulls left out): real text to cut columns from."""
    import pyarrow as pa

    from fsstgpu.datasets.text_tables import machine_text_table

    table = machine_text_table(20_000)
    return [v for name in table.column_names if pa.types.is_string(table.schema.field(name).type)
            for v in table.column(name).to_pylist() if v is not None]


def _write_units(units, path, fmt) -> None:
    """Each of ``units`` (Tables of one schema) a row group / record batch of its own, in a
    Parquet, Arrow IPC file or stream (``fmt``)."""
    schema = units[0].schema
    if fmt == "parquet":
        with pq.ParquetWriter(path, schema) as w:
            for unit in units:
                w.write_table(unit.cast(schema), row_group_size=max(1, unit.num_rows))
        return
    # slices of one batch: one dictionary for every batch (an IPC file holds one a column)
    whole = pa.concat_tables([u.cast(schema) for u in units]).unify_dictionaries()
    whole = whole.combine_chunks().to_batches()[0]
    new = ipc.new_file if fmt == "arrow" else ipc.new_stream
    with new(path, schema) as w:
        start = 0
        for unit in units:
            w.write_batch(whole.slice(start, unit.num_rows))
            start += unit.num_rows


def _random_units(rng, lines, count: int, *, mixed: bool = False) -> list:
    """``count`` tables of 0-600 rows of ``lines`` (some empty), each column with its own
    nulls; ``mixed`` adds ``mix``, which turns to other text (DNA) in some units so that its
    stream trains again inside a run, and a float column."""
    out = []
    for _ in range(count):
        n = 0 if rng.random() < 0.2 else int(rng.integers(1, 600))

        def text(null_share, n=n):
            picked = [lines[i] for i in rng.integers(0, len(lines), n)]
            return [None if rng.random() < null_share else v for v in picked]

        words = text(0.1)
        columns = {
            "s": pa.array(text(0.1), pa.string()),
            "big": pa.array([None if v is None else v * int(rng.integers(1, 4))
                             for v in text(0.3)], pa.large_string())}
        if mixed:
            dna = ["".join(rng.choice(list("ACGT"), int(rng.integers(5, 60))))
                   for _ in range(n)]
            columns["mix"] = pa.array(dna if rng.random() < 0.3 else text(0.05), pa.string())
        columns.update({
            "cat": pa.array([None if w is None else w[:2] for w in words],
                            pa.string()).dictionary_encode(),
            "plain": pa.array(text(0.2), pa.string()),
            "lst": pa.array([None if w is None else [w, w[:3]] for w in words],
                            pa.list_(pa.string())),
            "n": pa.array(rng.integers(0, 1 << 40, n), pa.int64())})
        if mixed:
            columns["x"] = pa.array(rng.random(n))
        out.append(pa.table(columns))
    return out


@pytest.fixture
def random_units():
    """Random units of real text for the runs tests: ``random_units(rng, lines, count, *,
    mixed=False)``."""
    return _random_units


@pytest.fixture
def write_units():
    """Writes units each a row group / record batch of its own: ``write_units(units, path,
    fmt)``."""
    return _write_units


def _zstd_and_plain(table, folder) -> dict:
    """``table`` written as Parquet in three row groups into ``folder``, and that file's
    ``compress_file`` outputs there: fsst pages zstd and uncompressed, keyed "zstd" and
    "none"."""
    import pyarrow.parquet as pq

    from fsstgpu.formats import compress_file

    src = folder / "src.parquet"
    pq.write_table(table, src, row_group_size=len(table) // 3 + 1)
    out = {}
    for codec in ("zstd", "none"):
        out[codec] = folder / f"fsst_{codec}.parquet"
        compress_file(src, out[codec], parquet_codec=codec)
    return out


@pytest.fixture(scope="session")
def zstd_and_plain():
    """``zstd_and_plain(table, folder)``: fsstgpu files of ``table`` with zstd and
    uncompressed pages (the raw page reader's tests)."""
    return _zstd_and_plain
