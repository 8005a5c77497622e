"""A rewrite's pipeline (formats/pipeline.py): the next unit read on a thread of its own, its
errors where that unit would be, and nothing left reading when the caller stops."""

from __future__ import annotations

import threading
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from fsstgpu.formats import compress_file, compressing, pipeline
from fsstgpu.formats.pipeline import read_ahead

UNIT_ROWS = 100_000  # 800 KB units of int64


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


@pytest.mark.parametrize("rows", [UNIT_ROWS // 2, 3 * UNIT_ROWS // 4, UNIT_ROWS - 1,
                                  UNIT_ROWS + 1, 3 * UNIT_ROWS // 2])
def test_regrouped_holds_one_input_and_one_output_unit(rows):
    # pyarrow's pool at each output unit: the unit read and the one given hold it, nothing
    # else. Before, a tail slice of the unit before (and the first unit, kept for an empty
    # output) held theirs too: 4 units beside an output of one (rows UNIT_ROWS - 1).
    pool = pa.default_memory_pool()
    base = pool.bytes_allocated()
    unit_bytes = 8 * UNIT_ROWS

    def units():
        for k in range(6):  # each in pool memory of its own
            yield pa.table({"x": pc.add(pa.array(np.arange(UNIT_ROWS) + k * UNIT_ROWS), 0)})

    peak, got = 0, []
    for out in pipeline.regrouped(units(), rows):
        peak = max(peak, pool.bytes_allocated() - base)
        got.append(out.column("x")[0].as_py())
        del out
    assert got == list(range(0, 6 * UNIT_ROWS, rows))
    assert peak <= 8 * rows + unit_bytes + (64 << 10)
