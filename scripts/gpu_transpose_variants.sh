#!/usr/bin/env bash
# Transpose variants (helper H3d): GPU tests of every kernel (defaults and variants) against the
# NumPy twin, then the quick benchmark (defaults and variants side by side, % of copy).
# Usage on the device machine, from the repo root: bash scripts/gpu_transpose_variants.sh
# Logs under $OUT: transpose_tests.txt, transpose_bench.txt, transpose_bench.json.
set -o pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
source scripts/gpu_env.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,memory.used --format=csv | tee "$OUT/transpose_smi.txt"
timeout 120 $PY -m pytest -q -p no:cacheprovider -m gpu tests/test_transpose.py 2>&1 \
    | tail -60 | tee "$OUT/transpose_tests.txt"
echo "tests exit: ${PIPESTATUS[0]} (124 = timed out)" | tee -a "$OUT/transpose_tests.txt"
# The benchmark checks each variant against the default kernel on its 1 GiB input ("check"
# column) before timing it, so it is run even when a test failed; read the check column.
timeout 120 $PY -m fsstgpu.kernels.bench_transpose --quick --json "$OUT/transpose_bench.json" \
    2>&1 | tee "$OUT/transpose_bench.txt"
echo "bench exit: ${PIPESTATUS[0]} (124 = timed out)" | tee -a "$OUT/transpose_bench.txt"
