#!/usr/bin/env bash
# session 85 call 2: every GPU test, then memcheck on the new kernel's and the page reader's tests
set -u
OUT=${OUT:-/tmp/out}
bash benchmarks/gpu_session.sh setup || exit 1
[ -d /tmp/site ] && export PYTHONPATH=/tmp/site
export FSSTGPU_DBTEXT=$PWD/.data/dbtext
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
cat $OUT/env.txt
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 python3 -m pytest -q -m gpu \
  -p no:cacheprovider tests/test_prefix_rebuild.py tests/test_page_columns.py > "$OUT/memcheck.txt" 2>&1
echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/memcheck.txt" | tail -1) $(tail -1 "$OUT/memcheck.txt")"
timeout 400 python3 -m pytest -q -m gpu -p no:cacheprovider tests > "$OUT/pytest_gpu.txt" 2>&1
echo "all gpu tests: $(tail -1 "$OUT/pytest_gpu.txt")"
grep -E "^(FAILED|ERROR)|^E  " "$OUT/pytest_gpu.txt" | head -30
