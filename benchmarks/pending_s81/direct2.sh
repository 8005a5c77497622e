#!/usr/bin/env bash
# Session 81's fourth call: the direct file -> GPU reader's GPU tests, then raw_direct.py with
# its row (read_fsst_direct beside read_table_device and pyarrow's read + upload).
set -u
OUT=${OUT:-/tmp/out}
T0=$(date +%s)
bash benchmarks/gpu_session.sh setup > /dev/null || exit 1
export FSSTGPU_DBTEXT=$PWD/.data/dbtext PYTHONPATH=$PWD:/tmp/site
timeout 150 python3 -m pytest -q -x -m gpu -p no:cacheprovider tests/test_direct_reader.py \
  > "$OUT/pytest_direct.txt" 2>&1
echo "direct tests: $(tail -1 "$OUT/pytest_direct.txt") ($(( $(date +%s) - T0 )) s)"
grep -E "^(FAILED|ERROR)|Error|^E  " "$OUT/pytest_direct.txt" | head -40
timeout 240 python3 -X faulthandler -m benchmarks.raw_direct > "$OUT/raw_direct.txt" 2>&1
echo "raw_direct rc=$? ($(( $(date +%s) - T0 )) s)"; grep -v "host:" "$OUT/raw_direct.txt" | cut -c1-260
tail -5 "$OUT/raw_direct.txt" | grep -i error
