"""A rewrite's pipeline (formats/pipeline.py): the next unit read on a thread of its own, its
errors where that unit would be, and nothing left reading when the caller stops."""

from __future__ import annotations

import threading
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fsstgpu.formats import compress_file, compressing, pipeline
from fsstgpu.formats.pipeline import read_ahead


def test_read_ahead_reads_on_another_thread_in_order():
    readers = []

    def units():
        for k in range(5):
            readers.append(threading.current_thread().name)
            yield k

    assert list(read_ahead(units())) == [0, 1, 2, 3, 4]
    assert all(name.startswith("fsstgpu-read") for name in readers)


def test_read_ahead_raises_where_the_unit_would_be():
    def units():
        yield 0
        yield 1
        raise ValueError("unit 2 is damaged")

    got = []
    with pytest.raises(ValueError, match="unit 2"):
        for unit in read_ahead(units()):
            got.append(unit)
    assert got == [0, 1]


def test_read_ahead_stopped_early_waits_for_the_read_and_closes():
    state = {"reading": False, "closed": False}

    def units():
        try:
            for k in range(10):
                state["reading"] = True
                time.sleep(0.05)
                state["reading"] = False
                yield k
        finally:
            state["closed"] = True

    ahead = read_ahead(units())
    assert next(ahead) == 0  # unit 1 is being read now
    ahead.close()
    assert not state["reading"] and state["closed"]


def test_a_failed_conversion_leaves_no_output(tmp_path, monkeypatch):
    src = tmp_path / "in.parquet"
    pq.write_table(pa.table({"s": [f"row {i}" for i in range(3000)]}), src, row_group_size=500)
    calls = []
    real = {name: getattr(compressing.ColumnStream, name) for name in ("compress", "compress_many")}

    def failing(name):
        def call(self, values):
            calls.append(1)
            if len(calls) == 3:
                raise RuntimeError("stop here")
            return real[name](self, values)
        return call

    for name in real:
        monkeypatch.setattr(compressing.ColumnStream, name, failing(name))
    monkeypatch.setattr(pipeline, "RUN_ROWS", 1000)  # runs of two row groups: some written
    with pytest.raises(RuntimeError, match="stop here"):
        compress_file(src, tmp_path / "out.parquet")
    assert not (tmp_path / "out.parquet").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["in.parquet"]  # no temporary left
