#!/usr/bin/env bash
# Session 80's second device call: every GPU test, memcheck of the new kernels' tests, then
# compress_file on the CPU against the GPU block encoder both ways (compress_file_ab.py).
set -u
OUT=${OUT:-/tmp/out}
bash benchmarks/gpu_session.sh setup || exit 1
export FSSTGPU_DBTEXT=$PWD/.data/dbtext PYTHONPATH=$PWD:/tmp/site
timeout 300 python3 -m pytest -q -m gpu -p no:cacheprovider tests > "$OUT/pytest_gpu.txt" 2>&1
echo "pytest -m gpu: $(tail -1 "$OUT/pytest_gpu.txt")"
grep -E "^(FAILED|ERROR)" "$OUT/pytest_gpu.txt" | head -20
timeout 100 compute-sanitizer --tool memcheck --error-exitcode 9 python3 -m pytest -q -m gpu \
  -p no:cacheprovider tests/test_gpu_block_tables.py -k "not dbtext" > "$OUT/memcheck.txt" 2>&1
echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/memcheck.txt" | tail -1) $(tail -1 "$OUT/memcheck.txt")"
timeout 120 python3 benchmarks/pending_s80/compress_file_ab.py 3 > "$OUT/compress_file.txt" 2>&1
echo "compress_file rc=$?"; cat "$OUT/compress_file.txt"
