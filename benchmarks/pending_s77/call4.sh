# session 77: the packed stage/compact pair's A/B and ncu of both pairs at 256 MiB; then the
# landing (.data/land.patch: the packed pair renamed, the v3 pair gone) applied and tested:
# memcheck of the encode tests, every GPU test
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
bash benchmarks/gpu_session.sh setup
export FSSTGPU_DBTEXT=$PWD/.data/dbtext PYTHONPATH=$PWD:/tmp/site
timeout 130 python3 -m benchmarks.pending_s77.packed_ab > "$OUT/ab.txt" 2>&1; echo "ab rc=$?"
tail -8 "$OUT/ab.txt"
timeout 70 ncu -k 'regex:fsst_encode_(stage|compact)' --section SpeedOfLight --section WarpStateStats \
  --section Occupancy --section MemoryWorkloadAnalysis \
  python3 -m benchmarks.pending_s77.packed_prof > "$OUT/ncu.txt" 2>&1
echo "ncu rc=$?"; grep -E "^  fsst_encode|Duration|L2 Cache Throughput|DRAM Throughput|Compute \(SM\) Thr|Achieved Occupancy" "$OUT/ncu.txt" | head -40
patch -p1 -s < .data/land.patch && echo "landing applied: $(grep -c _packed kernels/fsst_encode.cu) _packed left"
timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 python3 -m pytest -q -m gpu \
  -p no:cacheprovider tests/test_gpu_encode.py tests/test_encode_chunks.py > "$OUT/memcheck.txt" 2>&1
echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/memcheck.txt" | tail -1) $(tail -1 "$OUT/memcheck.txt")"
timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests > "$OUT/pytest_gpu.txt" 2>&1
echo "pytest -m gpu: $(tail -1 "$OUT/pytest_gpu.txt")"; grep -E "^FAILED" "$OUT/pytest_gpu.txt" | head
