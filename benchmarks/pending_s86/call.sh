#!/usr/bin/env bash
# Session 86's device call: the page reader's GPU tests, then where read_page_columns' time goes
# (benchmarks/pending_s86/page_steps.py). Carry [".data", ".whl"].
set -u
OUT=${OUT:-/tmp/out}
bash benchmarks/gpu_session.sh setup || exit 1
[ -d /tmp/site ] && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
export FSSTGPU_DBTEXT=$PWD/.data/dbtext
timeout 90 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_prefix_rebuild.py \
  tests/test_page_columns.py > "$OUT/pytest_pages.txt" 2>&1
echo "page tests: $(tail -1 "$OUT/pytest_pages.txt")"
grep -E "^(FAILED|ERROR)|^E  " "$OUT/pytest_pages.txt" | head -20
timeout 300 python3 -u benchmarks/pending_s86/page_steps.py > "$OUT/page_steps.txt" 2>&1
echo "rc=$?"; grep -E "^(round|  sums)" "$OUT/page_steps.txt"
