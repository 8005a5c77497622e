"""Session 79's lean encode table (one device call's budget): at 16 MiB and 1 GiB of dbtext,
the one-table row (benchmarks.gpu_encode.size_row) and the table-a-block rows
(benchmarks.gpu_encode.fast_rows), then nvCOMP's compressors at 1 GiB in a child process."""
import json
import sys

import pyarrow as pa

from benchmarks.gpu_encode import MIB, fast_rows, size_row
from benchmarks.gpu_sizes import corpus, nvcomp_rows
from benchmarks.timing import copy_bandwidth

copy_bps = copy_bandwidth(1 << 30)
strings = corpus().cast(pa.large_binary())
rows = []
for size in (16 * MIB, 1024 * MIB):
    rows.append(size_row(strings, size, copy_bps, 4))
    print(json.dumps(rows[-1], default=str), flush=True)
    for r in fast_rows(strings, size, 4):
        rows.append(r)
        print(json.dumps(r, default=str), flush=True)
if "--nvcomp" in sys.argv:  # (or alone, after the rest: call1.sh)
    for r in nvcomp_rows(copy_bps, (1024 * MIB,), "", encode=True):
        rows.append(r)
        print(json.dumps(r, default=str), flush=True)
