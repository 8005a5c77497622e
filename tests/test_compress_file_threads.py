"""compress_file converts a row group's columns on several threads at once (rewrite's workers):
the file and its counts must be the ones the column-after-column conversion writes, byte for
byte, for Parquet and Arrow IPC outputs, flat and nested string columns."""

from __future__ import annotations

import hashlib
import threading

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import fsstgpu.formats.compressing as compressing
from fsstgpu.formats import compress_file, decompress_file
from fsstgpu.parallel import usable_cores


def table(rows: int) -> pa.Table:
    rng = np.random.default_rng(7)
    words = ["alpha", "beta", "gamma", "delta", "http://example.com/", "/usr/share/doc/"]
    def text(k):
        return [None if rng.random() < 0.05 else
                "".join(rng.choice(words, int(rng.integers(1, 6)))) + str(k * i)
                for i in range(rows)]
    return pa.table({"a": text(1), "b": text(3), "n": np.arange(rows),
                     "c": pa.array(text(5), pa.large_string()),
                     "l": pa.array([[s, s] for s in text(7)])})


@pytest.mark.parametrize("suffix", ["parquet", "arrow"])
def test_columns_converted_at_once_write_the_same_file(tmp_path, monkeypatch, suffix):
    src = tmp_path / "in.parquet"
    t = table(6000)
    pq.write_table(t, src, row_group_size=2000)
    digests, infos, threads = {}, {}, set()
    stream = compressing.ColumnStream
    compress, compress_many = stream.compress, stream.compress_many

    def noted(self, values):  # which threads converted
        threads.add(threading.current_thread().name.split("_")[0])
        return compress(self, values)

    def noted_many(self, pieces):  # (a run of row groups at once)
        threads.add(threading.current_thread().name.split("_")[0])
        return compress_many(self, pieces)

    monkeypatch.setattr(compressing.ColumnStream, "compress", noted)
    monkeypatch.setattr(compressing.ColumnStream, "compress_many", noted_many)
    for workers in (1, 4):
        monkeypatch.setattr(compressing, "thread_count", lambda threads=None, w=workers: w)
        dst = tmp_path / f"out{workers}.{suffix}"
        infos[workers] = compress_file(src, dst)
        digests[workers] = hashlib.sha256(dst.read_bytes()).hexdigest()
        assert threads == ({"MainThread"} if workers == 1 else {"fsstgpu-convert"})
        threads.clear()
    assert digests[1] == digests[4]
    assert infos[1] == infos[4] and infos[4]["string_bytes"] > 0
    back = tmp_path / "back.parquet"
    decompress_file(tmp_path / f"out4.{suffix}", back, device="cpu")
    assert pq.read_table(back).equals(t)


@pytest.mark.parametrize(("value", "cores"), [("1", 1), (" 2 ", None), ("", None), ("0", 1)])
def test_fsstgpu_threads_caps_the_cores(monkeypatch, value, cores):
    monkeypatch.setenv("FSSTGPU_THREADS", value)
    got = usable_cores()
    monkeypatch.delenv("FSSTGPU_THREADS")
    assert got == (cores if cores is not None else min(int(value or 10**6), usable_cores()))


@pytest.mark.parametrize("value", ["abc", "-2", "1.5", "4 cores", "\u00b2"])
def test_fsstgpu_threads_that_is_no_number_is_refused(monkeypatch, value):
    """A typo ran on every core without a word."""
    monkeypatch.setenv("FSSTGPU_THREADS", value)
    with pytest.raises(ValueError, match="FSSTGPU_THREADS must be a whole number"):
        usable_cores()
