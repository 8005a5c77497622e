#!/usr/bin/env bash
# Session 81's third call: benchmarks/raw_direct.py (file -> pinned -> device lower bounds
# beside pyarrow and read_table_device), then the whole GPU suite on this tree.
set -u
OUT=${OUT:-/tmp/out}
T0=$(date +%s)
bash benchmarks/gpu_session.sh setup > /dev/null || exit 1
export FSSTGPU_DBTEXT=$PWD/.data/dbtext PYTHONPATH=$PWD:/tmp/site
timeout 240 python3 -X faulthandler -m benchmarks.raw_direct > "$OUT/raw_direct.txt" 2>&1
echo "raw_direct rc=$? ($(( $(date +%s) - T0 )) s)"; cat "$OUT/raw_direct.txt" | cut -c1-300
timeout 300 python3 -m pytest -q -m gpu -p no:cacheprovider tests > "$OUT/pytest_gpu.txt" 2>&1
echo "gpu suite: $(tail -1 "$OUT/pytest_gpu.txt") ($(( $(date +%s) - T0 )) s)"
grep -E "^(FAILED|ERROR)" "$OUT/pytest_gpu.txt" | head -20
