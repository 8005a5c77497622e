# session 77's first GPU call: the one-pass encode's A/B, then every GPU test, memcheck, sweep
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
bash benchmarks/gpu_session.sh setup
export FSSTGPU_DBTEXT=$PWD/.data/dbtext PYTHONPATH=$PWD:/tmp/site
timeout 150 python3 -m benchmarks.pending_s77.onepass_ab > "$OUT/ab.txt" 2>&1; echo "ab rc=$?"
cat "$OUT/ab.txt" | tail -12
timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests > "$OUT/pytest_gpu.txt" 2>&1
echo "pytest -m gpu: $(tail -1 "$OUT/pytest_gpu.txt")"
grep -E "^FAILED|Error" "$OUT/pytest_gpu.txt" | head -15
timeout 120 compute-sanitizer --tool memcheck --error-exitcode 9 python3 -m pytest -q -m gpu \
  -p no:cacheprovider tests/test_gpu_encode.py tests/test_encode_chunks.py > "$OUT/memcheck.txt" 2>&1
echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/memcheck.txt" | tail -1)"
timeout 100 python3 -m benchmarks.gpu_sizes --json "$OUT/sweep.json" > "$OUT/sweep.txt" 2>&1
echo "sweep rc=$?"; tail -16 "$OUT/sweep.txt"
