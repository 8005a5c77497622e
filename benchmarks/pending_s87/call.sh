#!/usr/bin/env bash
# Session 87's device call: the page reader's GPU tests (sessions 86-87's changes), its read
# profile beside the yardstick (profile_reads.py) and where read_page_columns' time goes
# (page_steps.py). Carry [".data", ".whl"].
set -u
OUT=${OUT:-/tmp/out}
bash benchmarks/gpu_session.sh setup || exit 1
[ -d /tmp/site ] && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
export FSSTGPU_DBTEXT=$PWD/.data/dbtext
cat "$OUT/env.txt" 2>/dev/null | head -5
timeout 90 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_prefix_rebuild.py \
  tests/test_page_columns.py > "$OUT/pytest_pages.txt" 2>&1
echo "page tests: $(tail -1 "$OUT/pytest_pages.txt")"
grep -E "^(FAILED|ERROR)|^E  " "$OUT/pytest_pages.txt" | head -20
timeout 200 python3 -u benchmarks/pending_s87/profile_reads.py > "$OUT/profile_reads.txt" 2>&1
echo "profile rc=$?"; grep -E "^(==|bus|pyarrow|usual|planning|page|read_page)" "$OUT/profile_reads.txt"
timeout 150 python3 -u benchmarks/pending_s87/page_steps.py > "$OUT/page_steps.txt" 2>&1
echo "steps rc=$?"; grep -E "^(round|  sums)" "$OUT/page_steps.txt"
timeout 150 python3 -u benchmarks/pending_s87/page_parts.py > "$OUT/page_parts.txt" 2>&1
echo "parts rc=$?"; grep -E "^(one|==|  )" "$OUT/page_parts.txt"
