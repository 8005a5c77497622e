#!/usr/bin/env bash
# Session 81's device call: the GPU tests of the encode's lookups (now built by
# native.table_lookups), the lean encode table (the fast level's call with them), and issue
# #24 item 2's first measurement (benchmarks/raw_pages_gpu.py: raw pages + nvCOMP's zstd).
# Run: bash benchmarks/pending_s81/call.sh  (carry .data, .whl)
set -u
OUT=${OUT:-/tmp/out}
T0=$(date +%s)
bash benchmarks/gpu_session.sh setup || exit 1
export FSSTGPU_DBTEXT=$PWD/.data/dbtext PYTHONPATH=$PWD:/tmp/site
echo "setup $(( $(date +%s) - T0 )) s"; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 120 python3 -m pytest -q -x -m gpu -p no:cacheprovider tests/test_gpu_block_tables.py \
  tests/test_gpu_encode.py > "$OUT/pytest_new.txt" 2>&1
echo "tests: $(tail -1 "$OUT/pytest_new.txt") ($(( $(date +%s) - T0 )) s)"
grep -E "^(FAILED|ERROR)|Error|^E  " "$OUT/pytest_new.txt" | head -30
timeout 120 python3 benchmarks/pending_s79/lean_encode.py > "$OUT/encode.txt" 2>&1
echo "encode rc=$? ($(( $(date +%s) - T0 )) s)"; grep -E "level=fast" "$OUT/encode.txt" | cut -c1-300
timeout 300 python3 -X faulthandler -m benchmarks.raw_pages_gpu > "$OUT/raw_pages.txt" 2>&1
echo "raw_pages rc=$? ($(( $(date +%s) - T0 )) s)"; cat "$OUT/raw_pages.txt" | cut -c1-600
