# session 77's second GPU call: ncu of the staged and one-pass kernels at 256 MiB, the encode table
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
bash benchmarks/gpu_session.sh setup
export FSSTGPU_DBTEXT=$PWD/.data/dbtext PYTHONPATH=$PWD:/tmp/site
timeout 120 ncu -k 'regex:fsst_encode_(stage|compact|one_pass)' --section SpeedOfLight \
  --section WarpStateStats --section Occupancy --section MemoryWorkloadAnalysis \
  python3 -m benchmarks.pending_s77.onepass_prof > "$OUT/ncu.txt" 2>&1
echo "ncu rc=$?"; grep -E "^  fsst_encode|Duration|Issued Warp|L2 Cache Throughput|DRAM Throughput|Compute \(SM\) Thr|Achieved Occupancy|Theoretical Occ" "$OUT/ncu.txt" | head -40
timeout 300 python3 -m benchmarks.gpu_encode --json "$OUT/encode.json" > "$OUT/encode.txt" 2>&1
echo "encode rc=$?"; tail -30 "$OUT/encode.txt"
