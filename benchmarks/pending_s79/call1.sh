#!/usr/bin/env bash
# Session 79's device call (one call's budget, most wanted first: what comes back on a
# timeout is what ran): the multi-table encode and the "fast" level's tests (stopping at the
# first failure), the lean encode table, session 78's host timeline, nvCOMP's compressors.
# Run: bash benchmarks/pending_s79/call1.sh  (carry .data, .whl)
set -u
OUT=${OUT:-/tmp/out}
bash benchmarks/gpu_session.sh setup || exit 1
export FSSTGPU_DBTEXT=$PWD/.data/dbtext PYTHONPATH=$PWD:/tmp/site
nvidia-smi --query-gpu=name --format=csv,noheader
timeout 150 python3 -m pytest -q -x -m gpu -p no:cacheprovider tests/test_gpu_block_tables.py \
  tests/test_gpu_compress_file.py tests/test_gpu_encode.py > "$OUT/pytest_new.txt" 2>&1
echo "new tests: $(tail -1 "$OUT/pytest_new.txt")"
grep -E "^(FAILED|ERROR)|Error|^E  " "$OUT/pytest_new.txt" | head -30
timeout 150 python3 benchmarks/pending_s79/lean_encode.py > "$OUT/encode.txt" 2>&1
echo "encode rc=$?"; cat "$OUT/encode.txt" | cut -c1-600
timeout 40 python3 benchmarks/pending_s78/timeline.py > "$OUT/timeline.txt" 2>&1
echo "timeline rc=$?"; tail -20 "$OUT/timeline.txt"
timeout 120 python3 -c "
from benchmarks.gpu_sizes import nvcomp_rows
from benchmarks.timing import copy_bandwidth
import json
for r in nvcomp_rows(copy_bandwidth(1 << 30), (1 << 30,), '', encode=True): print(json.dumps(r, default=str))
" > "$OUT/nvcomp.txt" 2>&1
echo "nvcomp rc=$?"; grep '^{' "$OUT/nvcomp.txt" | cut -c1-300
