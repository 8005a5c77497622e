#!/usr/bin/env bash
# Session 80's short device call (when little device time is left): only session 79's GPU
# tests, stopping at the first failure. Run: bash benchmarks/pending_s80/tests_only.sh
set -u
OUT=${OUT:-/tmp/out}
bash benchmarks/gpu_session.sh setup || exit 1
export FSSTGPU_DBTEXT=$PWD/.data/dbtext PYTHONPATH=$PWD:/tmp/site
timeout 200 python3 -m pytest -q -x -m gpu -p no:cacheprovider tests/test_gpu_encode.py \
  tests/test_gpu_block_tables.py tests/test_gpu_compress_file.py > "$OUT/pytest_new.txt" 2>&1
echo "new tests: $(tail -1 "$OUT/pytest_new.txt")"
grep -E "^(FAILED|ERROR)|Error|^E  " "$OUT/pytest_new.txt" | head -30
