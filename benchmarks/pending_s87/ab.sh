#!/usr/bin/env bash
# Session 87's A/B call (carry [".data"]: .data/base holds b74712c's tree, git archive):
# b74712c in a venv of its own against this tree, alternated in separate processes, then the
# page GPU tests on this tree.
set -u
OUT=${OUT:-/tmp/out}
bash benchmarks/gpu_session.sh setup || exit 1
export FSSTGPU_DBTEXT=$PWD/.data/dbtext
HERE=$PWD
python3 -m venv --without-pip --system-site-packages /tmp/vbase
(cd .data/base && /tmp/vbase/bin/python -m pip install -q --no-deps --no-build-isolation -e . \
  > "$OUT/install_base.txt" 2>&1 || echo "base install failed") &   # (beside the tests)
BASE_INSTALL=$!
cat "$OUT/env.txt" | head -4
timeout 150 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_prefix_rebuild.py \
  tests/test_page_columns.py tests/test_page_decode.py tests/test_page_rows.py \
  tests/test_gpu_string_ends.py \
  tests/test_gpu_planned_decode.py > "$OUT/pytest_pages.txt" 2>&1
echo "GPU tests (pages, value decoders, checked decode): $(tail -1 "$OUT/pytest_pages.txt")"
grep -E "^(FAILED|ERROR)|^E  " "$OUT/pytest_pages.txt" | head -20
PYTHONPATH=$HERE timeout 120 python3 benchmarks/pending_s87/ab.py make /tmp/abfiles
wait $BASE_INSTALL; tail -3 "$OUT/install_base.txt"
for round in 1 2; do
  [ "$round" = 2 ] && [ "$SECONDS" -gt 330 ] && break  # (the call's device time is short)
  (cd .data/base && PYTHONPATH=$PWD timeout 90 /tmp/vbase/bin/python \
    $HERE/benchmarks/pending_s87/ab.py time /tmp/abfiles base) | tee -a "$OUT/ab.jsonl"
  PYTHONPATH=$HERE timeout 90 python3 benchmarks/pending_s87/ab.py time /tmp/abfiles new \
    | tee -a "$OUT/ab.jsonl"
done
[ "$SECONDS" -gt 400 ] && exit 0
PYTHONPATH=$HERE timeout 100 python3 -u benchmarks/pending_s87/page_parts.py > "$OUT/page_parts.txt" 2>&1
echo "parts rc=$?"; grep -E "^(one|==|  )" "$OUT/page_parts.txt"
