set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
bash benchmarks/gpu_session.sh setup
export FSSTGPU_DBTEXT=$PWD/.data/dbtext PYTHONPATH=$PWD:/tmp/site
timeout 150 python3 -m benchmarks.pending_s77.onepass_ab > "$OUT/ab.txt" 2>&1; echo "ab rc=$?"
tail -12 "$OUT/ab.txt"
