#!/usr/bin/env bash
# session 75 call 3 (a short budget): stage v2 / v3 A/B first, then their tests, memcheck, ncu
# (pending from session 75: cherry-pick this commit, write .data/commit.txt, carry [".data", ".whl"], run `bash benchmarks/pending_s75/call3.sh`)
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
{ date -u; cat .data/commit.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
python3 -m pip install -q --no-deps --no-build-isolation -e . > "$OUT/install.txt" 2>&1 || { tail -20 "$OUT/install.txt"; exit 1; }
[ -d .data/dbtext ] || tar -xJf .data/dbtext.tar.xz -C .data
export FSSTGPU_DBTEXT=$PWD/.data/dbtext PYTHONPATH=$PWD:$PWD/benchmarks/pending_s75
timeout 90 python3 benchmarks/pending_s75/stage_ab.py > "$OUT/stage_ab.txt" 2>&1; echo "ab rc=$?"; cat "$OUT/stage_ab.txt"
T="tests/test_gpu_encode.py tests/test_gpu_compress_file.py"
for v in fsst_encode_stage_v3 fsst_encode_stage_v2; do
  STAGE_VARIANT=$v timeout 45 python3 -m pytest -q -m gpu -p no:cacheprovider -p variant_plugin -s $T > "$OUT/tests_$v.txt" 2>&1
  echo "$v tests rc=$? $(grep STAGE_KERNEL "$OUT/tests_$v.txt" | head -1) $(tail -1 "$OUT/tests_$v.txt")"
  grep -E "^FAILED|Error" "$OUT/tests_$v.txt" | head -5
done
STAGE_VARIANT=fsst_encode_stage_v3 timeout 50 compute-sanitizer --tool memcheck --error-exitcode 9 python3 -m pytest -q -m gpu -p no:cacheprovider -p variant_plugin tests/test_gpu_encode.py > "$OUT/memcheck_v3.txt" 2>&1
echo "memcheck v3 rc=$? $(grep 'ERROR SUMMARY' "$OUT/memcheck_v3.txt" | tail -1) $(tail -1 "$OUT/memcheck_v3.txt")"
timeout 45 ncu -k 'regex:fsst_encode_stage' --section SpeedOfLight --section WarpStateStats --section SchedulerStats --metrics smsp__thread_inst_executed_per_inst_executed.ratio,smsp__inst_executed.sum python3 benchmarks/pending_s75/stage_prof.py fsst_encode_stage fsst_encode_stage_v2 fsst_encode_stage_v3 > "$OUT/ncu2.txt" 2>&1
echo "ncu rc=$?"; grep -E "^  fsst_encode_stage|Duration|thread_inst_executed_per|inst_executed.sum|Issued Warp|L2 Cache Throughput|Compute \(SM\) Thr" "$OUT/ncu2.txt" | head -40
