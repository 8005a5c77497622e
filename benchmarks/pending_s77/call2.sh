# session 77's second GPU call: the one-pass A/B, the encode tests, ncu of both ways at 256 MiB,
# the encode table
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
bash benchmarks/gpu_session.sh setup
export FSSTGPU_DBTEXT=$PWD/.data/dbtext PYTHONPATH=$PWD:/tmp/site
timeout 150 python3 -m benchmarks.pending_s77.onepass_ab > "$OUT/ab.txt" 2>&1; echo "ab rc=$?"
tail -12 "$OUT/ab.txt"
timeout 60 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_encode.py \
  tests/test_encode_chunks.py tests/test_gpu_compress_file.py > "$OUT/pytest_enc.txt" 2>&1
echo "encode tests: $(tail -1 "$OUT/pytest_enc.txt")"; grep -E "^FAILED|^E " "$OUT/pytest_enc.txt" | head
timeout 90 ncu -k 'regex:fsst_encode_(stage|compact|one_pass)' --section SpeedOfLight \
  --section WarpStateStats --section Occupancy --section MemoryWorkloadAnalysis \
  python3 -m benchmarks.pending_s77.onepass_prof > "$OUT/ncu.txt" 2>&1
echo "ncu rc=$?"; grep -E "^  fsst_encode|Duration|Issued Warp|L2 Cache Throughput|DRAM Throughput|Compute \(SM\) Thr|Achieved Occupancy|Theoretical Occ" "$OUT/ncu.txt" | head -40
timeout 200 python3 -m benchmarks.gpu_encode --json "$OUT/encode.json" > "$OUT/encode.txt" 2>&1
echo "encode rc=$?"; tail -30 "$OUT/encode.txt"
