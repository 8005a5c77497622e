"""Where a CPU compress goes: each stage of ``fsstgpu.compress`` timed alone, per thread count.

``python -m benchmarks.compress_stages FILE LEVEL THREADS...`` loads FILE (one string per line)
as one ``large_binary`` column and prints, per thread count (``FSSTGPU_THREADS``; give the
largest first: the pool keeps its first size), the whole call and its stages, best of three,
in ms: normalising the input (``arrow_layout.from_arrow``), planning and training
(``blocks.plan_level``), encoding (``native.encode_blocks``), the lengths
(``native.differences``), the long strings' cuts (``scan.long_string_cuts``), the split plan
(``splits.plan_splits``) and the result's structural check (``checks.check_structure``, what
``validate(full=False)`` runs). A stage that does not shrink with threads is a serial pass
(BENCHMARKS.md section 19).
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pyarrow as pa

import fsstgpu
from benchmarks.timing import best_of
from fsstgpu import arrow_layout, native
from fsstgpu.blocks import plan_level
from fsstgpu.checks import check_structure
from fsstgpu.scan import long_string_cuts
from fsstgpu.splits import DEFAULT_SPLIT_SIZE, plan_splits


def _best(fn):
    """Best of three, in ms, and the result."""
    seconds, result = best_of(fn, 3)
    return seconds * 1e3, result


def stages(column, level: str = "default") -> dict:
    """The whole call's and each stage's best time in ms (module docstring), on the threads
    ``FSSTGPU_THREADS`` allows.

    Examples
    --------
    >>> import pyarrow as pa
    >>> from benchmarks.compress_stages import stages
    >>> row = stages(pa.array([f"http://example.com/{i}" for i in range(5000)]), "fast")
    >>> sorted(row) == sorted(["whole", "normalise", "plan", "encode", "lengths", "cuts",
    ...                        "splits", "validate"])
    True
    """
    whole, carr = _best(lambda: fsstgpu.compress(column, level=level))
    t = {"whole": whole}
    t["normalise"], plain = _best(lambda: arrow_layout.from_arrow(column))
    t["plan"], (starts, tables) = _best(lambda: plan_level(plain.data, plain.offsets, level))
    starts = np.asarray(starts, np.int64)
    t["encode"], (codes, code_offsets) = _best(
        lambda: native.encode_blocks(tables, plain.data, plain.offsets, starts))
    t["lengths"], lengths = _best(lambda: native.differences(plain.offsets))
    t["cuts"], cuts = _best(lambda: long_string_cuts(tables, starts, codes, code_offsets,
                                                     lengths, DEFAULT_SPLIT_SIZE))
    t["splits"], _ = _best(lambda: plan_splits(code_offsets, lengths, starts,
                                               DEFAULT_SPLIT_SIZE, cuts, plain.offsets))
    t["validate"], _ = _best(lambda: check_structure(carr))
    return t


def _main(argv: list[str]) -> None:
    if len(argv) < 3:
        raise SystemExit("usage: python -m benchmarks.compress_stages FILE LEVEL THREADS...")
    with open(argv[0], "rb") as f:
        column = pa.array(f.read().split(b"\n"), pa.large_binary())
    mb = column.buffers()[2].size / 1e6
    for threads in argv[2:]:
        os.environ["FSSTGPU_THREADS"] = threads
        t = stages(column, argv[1])
        print(f"{argv[1]} threads {threads}: whole {t['whole']:.0f} ms "
              f"({mb / t['whole'] * 1e3:.0f} MB/s); "
              + ", ".join(f"{k} {v:.1f}" for k, v in t.items() if k != "whole"), flush=True)


if __name__ == "__main__":
    _main(sys.argv[1:])
