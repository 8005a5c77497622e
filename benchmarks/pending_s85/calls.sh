#!/usr/bin/env bash
# Session 85's device calls, not yet run (no device machine started that session), one a call:
#   bash benchmarks/pending_s85/calls.sh pages   # the page tests, then the read profile
#   bash benchmarks/pending_s85/calls.sh all     # memcheck on those tests, then every GPU test
# (carry [".data", ".whl"]: dbtext.tar.xz and the nvCOMP wheels, as gpu_session.sh says)
set -u
OUT=${OUT:-/tmp/out}
bash benchmarks/gpu_session.sh setup || exit 1
[ -d /tmp/site ] && export PYTHONPATH=/tmp/site
export FSSTGPU_DBTEXT=$PWD/.data/dbtext
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
cat $OUT/env.txt
PAGES="tests/test_prefix_rebuild.py tests/test_page_columns.py"
if [ "${1:-pages}" = pages ]; then
  timeout 75 python3 -m pytest -q -m gpu -p no:cacheprovider $PAGES > "$OUT/pytest_pages.txt" 2>&1
  echo "page tests: $(tail -1 "$OUT/pytest_pages.txt")"
  grep -E "^(FAILED|ERROR)|^E  " "$OUT/pytest_pages.txt" | head -20
  timeout 150 python3 -u benchmarks/pending_s85/profile_reads.py > "$OUT/profile_reads.txt" 2>&1
  echo "profile rc=$?"; grep -E "^(==|bus|pyarrow|usual|planning|page|read_page)" "$OUT/profile_reads.txt"
  exit 0
fi
timeout 150 compute-sanitizer --tool memcheck --error-exitcode 9 python3 -m pytest -q -m gpu \
  -p no:cacheprovider $PAGES > "$OUT/memcheck.txt" 2>&1
echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/memcheck.txt" | tail -1)"
timeout 400 python3 -m pytest -q -m gpu -p no:cacheprovider tests > "$OUT/pytest_gpu.txt" 2>&1
echo "all gpu tests: $(tail -1 "$OUT/pytest_gpu.txt")"
grep -E "^(FAILED|ERROR)|^E  " "$OUT/pytest_gpu.txt" | head -30
