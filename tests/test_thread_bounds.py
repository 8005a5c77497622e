"""A thread count as large as a caller likes (``threads=2**31 - 1``, ``workers=10**6``) runs on
at most :data:`fsstgpu.parallel.MAX_THREADS` threads: the native calls (whose pool runs no more),
and the Python pools that start a thread per task in flight (a file's reading threads, a
rewrite's column converters), which otherwise started one thread (and one open file, for a
reader) per row group and column."""

import os
import threading
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from fsstgpu import native
from fsstgpu.formats.pipeline import rewrite
from fsstgpu.formats.rowgroups import Source
from fsstgpu.formats.sinks import Sink
from fsstgpu.formats.unit_reads import parallel_units
from fsstgpu.parallel import MAX_THREADS, thread_count
from fsstgpu.training import train_table

HUGE = (2**31 - 1, 2**31, 2**63, 10**30)


def test_thread_count_is_at_most_what_the_native_pool_runs():
    assert MAX_THREADS == 256
    assert [thread_count(t) for t in (0, 1, 255, 256, 257, *HUGE)] == [1, 1, 255, 256, 256,
                                                                       *[256] * len(HUGE)]


def test_native_calls_take_a_huge_thread_count():
    """A count past C's int was a TypeError naming no argument; now the same answer as two."""
    rng = np.random.default_rng(5)
    data = rng.integers(97, 105, 200_000, dtype=np.uint8)
    offs = np.arange(0, len(data) + 1, 20, dtype=np.int64)
    table = train_table(data, offs)
    blocks = np.array([0, len(offs) - 1], np.int64)
    want = native.encode_blocks([table], data, offs, blocks, threads=2)
    for threads in HUGE:
        got = native.encode_blocks([table], data, offs, blocks, threads=threads)
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1]), threads
        assert native.first_invalid_string(data, offs, threads=threads) == -1


def _slow(seen: set, lock, column: int):
    """A converter that records its thread and holds it a while (so that tasks overlap); it
    returns its argument ``column`` (the column given) as it is."""
    def convert(*args):
        with lock:
            seen.add(threading.get_ident())
        time.sleep(0.2)
        return args[column]
    return convert


def test_reading_threads_are_bounded(tmp_path):
    path = os.path.join(tmp_path, "many.parquet")
    pq.write_table(pa.table({"n": np.arange(2 * (MAX_THREADS + 250))}), path, row_group_size=2)
    seen, lock = set(), threading.Lock()
    with Source(path) as source:
        units = list(parallel_units(source, workers=10**6, ahead=10**6,
                                    convert=_slow(seen, lock, 2)))
    assert len(units) == MAX_THREADS + 250
    assert [u["n"].to_pylist() for u in units[:2]] == [[0, 1], [2, 3]]
    assert 1 < len(seen) <= MAX_THREADS, len(seen)


def test_rewrite_converters_are_bounded(tmp_path):
    ncols = MAX_THREADS + 200
    table = pa.table({f"c{i}": [i, i + 1] for i in range(ncols)})
    src, dst = os.path.join(tmp_path, "in.parquet"), os.path.join(tmp_path, "out.parquet")
    pq.write_table(table, src)
    seen, lock = set(), threading.Lock()
    with Source(src) as source:
        sink = Sink(dst, "parquet", source.schema)
        assert rewrite(source, sink, _slow(seen, lock, 1), workers=10**6) == (2, 1)
    assert pq.read_table(dst).equals(table)
    assert 1 < len(seen) <= MAX_THREADS, len(seen)
