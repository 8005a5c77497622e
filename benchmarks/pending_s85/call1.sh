#!/usr/bin/env bash
# session 85 call 1: the page tests at HEAD (d7f35cb / 03bdd49 never ran on a device), then
# where read_table_device's host time goes (cProfile)
set -u
OUT=${OUT:-/tmp/out}
bash benchmarks/gpu_session.sh setup || exit 1
[ -d /tmp/site ] && export PYTHONPATH=/tmp/site
export FSSTGPU_DBTEXT=$PWD/.data/dbtext
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
cat $OUT/env.txt
timeout 90 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_prefix_rebuild.py tests/test_page_columns.py > "$OUT/pytest_pages.txt" 2>&1
echo "page tests: $(tail -1 "$OUT/pytest_pages.txt")"
grep -E "^(FAILED|ERROR)|^E  " "$OUT/pytest_pages.txt" | head -20
timeout 300 python3 -u benchmarks/pending_s85/profile_reads.py > "$OUT/profile_reads.txt" 2>&1
echo "profile rc=$?"; grep -E "^(==|bus|pyarrow|usual|page)" "$OUT/profile_reads.txt"
