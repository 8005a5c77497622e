#!/usr/bin/env bash
# Session 80's one device call, most wanted first (what comes back on a timeout is what ran):
# the GPU tests of session 79's code (-x), the lean encode table (one table and a table a
# block at 16 MiB and 1 GiB beside the CPU's compress(level="fast")), compress_file on the
# CPU against the GPU block encoder both ways, session 78's host timeline.
# Run: bash benchmarks/pending_s80/call.sh  (carry .data, .whl)
set -u
OUT=${OUT:-/tmp/out}
T0=$(date +%s)
bash benchmarks/gpu_session.sh setup || exit 1
export FSSTGPU_DBTEXT=$PWD/.data/dbtext PYTHONPATH=$PWD:/tmp/site
echo "setup $(( $(date +%s) - T0 )) s"; nvidia-smi --query-gpu=name --format=csv,noheader
timeout 150 python3 -m pytest -q -x -m gpu -p no:cacheprovider tests/test_gpu_block_tables.py \
  tests/test_gpu_encode.py tests/test_gpu_compress_file.py > "$OUT/pytest_new.txt" 2>&1
echo "new tests: $(tail -1 "$OUT/pytest_new.txt") ($(( $(date +%s) - T0 )) s)"
grep -E "^(FAILED|ERROR)|Error|^E  " "$OUT/pytest_new.txt" | head -30
timeout 150 python3 benchmarks/pending_s79/lean_encode.py > "$OUT/encode.txt" 2>&1
echo "encode rc=$? ($(( $(date +%s) - T0 )) s)"; cut -c1-700 "$OUT/encode.txt"
timeout 110 python3 benchmarks/pending_s80/compress_file_ab.py 2 > "$OUT/compress_file.txt" 2>&1
echo "compress_file rc=$? ($(( $(date +%s) - T0 )) s)"; cat "$OUT/compress_file.txt"
timeout 40 python3 benchmarks/pending_s78/timeline.py > "$OUT/timeline.txt" 2>&1
echo "timeline rc=$?"; tail -20 "$OUT/timeline.txt"
