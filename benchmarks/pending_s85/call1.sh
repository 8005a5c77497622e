#!/usr/bin/env bash
# session 85 call 1 (lean: little device time left): the page tests, then the read profile
set -u
OUT=${OUT:-/tmp/out}
bash benchmarks/gpu_session.sh setup || exit 1
[ -d /tmp/site ] && export PYTHONPATH=/tmp/site
export FSSTGPU_DBTEXT=$PWD/.data/dbtext
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
cat $OUT/env.txt
timeout 75 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_prefix_rebuild.py tests/test_page_columns.py > "$OUT/pytest_pages.txt" 2>&1
echo "page tests: $(tail -1 "$OUT/pytest_pages.txt")"
grep -E "^(FAILED|ERROR)|^E  " "$OUT/pytest_pages.txt" | head -20
timeout 150 python3 -u benchmarks/pending_s85/profile_reads.py > "$OUT/profile_reads.txt" 2>&1
echo "profile rc=$?"; grep -E "^(==|bus|pyarrow|usual|page|read_page)" "$OUT/profile_reads.txt"
