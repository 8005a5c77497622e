#!/usr/bin/env bash
# Session 87's short device call (carry [".data"]), for when little device time is left: the
# GPU tests of the paths this session changed, then this tree's read figures beside the
# yardstick in the same run (ab.py time ... new), then page_parts.py if time is left.
set -u
OUT=${OUT:-/tmp/out}
bash benchmarks/gpu_session.sh setup || exit 1
export FSSTGPU_DBTEXT=$PWD/.data/dbtext
HERE=$PWD
head -4 "$OUT/env.txt"; echo "setup done at ${SECONDS}s"
timeout 120 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_prefix_rebuild.py \
  tests/test_page_columns.py tests/test_page_decode.py tests/test_page_rows.py \
  tests/test_gpu_string_ends.py \
  > "$OUT/pytest_pages.txt" 2>&1
echo "GPU tests (pages, value decoders, checked decode): $(tail -1 "$OUT/pytest_pages.txt")"
grep -E "^(FAILED|ERROR)|^E  " "$OUT/pytest_pages.txt" | head -20
PYTHONPATH=$HERE timeout 100 python3 benchmarks/pending_s87/ab.py make /tmp/abfiles
echo "files at ${SECONDS}s"
PYTHONPATH=$HERE timeout 90 python3 benchmarks/pending_s87/ab.py time /tmp/abfiles new \
  | tee -a "$OUT/ab.jsonl"
[ "$SECONDS" -gt 330 ] && exit 0
PYTHONPATH=$HERE timeout 90 python3 -u benchmarks/pending_s87/page_parts.py > "$OUT/page_parts.txt" 2>&1
echo "parts rc=$? at ${SECONDS}s"; grep -E "^(one|==|  )" "$OUT/page_parts.txt"
