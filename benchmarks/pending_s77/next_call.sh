#!/usr/bin/env bash
# Session 77's GPU work left for the next session's first device call (about 400 s):
#   1. every GPU test on this tree (1301b30's and 3ac7fb5's large-column tests and 6c9ff6c's
#      shared test helpers have not run on a GPU);
#   2. the pooled stage (pool_kernels.patch = a7af734's kernels and launcher, applied here):
#      its A/B against the v3 stage at 16 MiB and 1 GiB, the encode GPU tests with each pool,
#      memcheck of the encode tests with the pool of 128.
# Here, before the call: git describe --always > .data/commit.txt; carry [".data", ".whl"].
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
bash benchmarks/gpu_session.sh setup
export FSSTGPU_DBTEXT=$PWD/.data/dbtext PYTHONPATH=$PWD:/tmp/site:$PWD/benchmarks/pending_s77
timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests > "$OUT/pytest_gpu.txt" 2>&1
echo "pytest -m gpu (HEAD): $(tail -1 "$OUT/pytest_gpu.txt")"
grep -E "^FAILED|SKIPPED.*(GiB|memory)" "$OUT/pytest_gpu.txt" | head
patch -p1 -s < benchmarks/pending_s77/pool_kernels.patch && echo "pool patch applied"
timeout 100 python3 -m benchmarks.pending_s77.pool_ab > "$OUT/ab.txt" 2>&1; echo "ab rc=$?"
tail -8 "$OUT/ab.txt"
T="tests/test_gpu_encode.py tests/test_encode_chunks.py tests/test_gpu_compress_file.py"
for v in fsst_encode_stage_pool128 fsst_encode_stage_pool64; do
  STAGE_VARIANT=$v timeout 40 python3 -m pytest -q -m gpu -p no:cacheprovider -p variant_plugin \
    -s $T > "$OUT/tests_$v.txt" 2>&1
  echo "$v tests rc=$? $(grep -m1 STAGE_KERNEL "$OUT/tests_$v.txt") $(tail -1 "$OUT/tests_$v.txt")"
  grep -E "^FAILED|^E " "$OUT/tests_$v.txt" | head -5
done
STAGE_VARIANT=fsst_encode_stage_pool128 timeout 60 compute-sanitizer --tool memcheck \
  --error-exitcode 9 python3 -m pytest -q -m gpu -p no:cacheprovider -p variant_plugin \
  tests/test_gpu_encode.py > "$OUT/memcheck.txt" 2>&1
echo "memcheck rc=$? $(grep 'ERROR SUMMARY' "$OUT/memcheck.txt" | tail -1)"
