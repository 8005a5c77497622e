#!/usr/bin/env bash
# the pooled stage again: PoolSmem aligned to 16 (pools[k].window was 8-aligned for k odd at
# POOL 128: the copy-out's uint4 loads faulted), the plugin's import at configure time
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
bash benchmarks/gpu_session.sh setup
export FSSTGPU_DBTEXT=$PWD/.data/dbtext PYTHONPATH=$PWD:/tmp/site:$PWD/benchmarks/pending_s77
patch -p1 -s -N < benchmarks/pending_s77/pool_kernels.patch && echo "pool patch applied"
sed -i 's/^struct PoolSmem {/struct __align__(16) PoolSmem {/' kernels/fsst_encode.cu
grep -n "PoolSmem {" kernels/fsst_encode.cu
cat > benchmarks/pending_s77/variant_plugin.py <<'PY'
import os


def pytest_configure(config):
    variant = os.environ.get("STAGE_VARIANT")
    if variant:
        from fsstgpu.kernels import fsst_encode
        fsst_encode.STAGE_KERNEL = variant
        print("STAGE_KERNEL", fsst_encode.STAGE_KERNEL)
PY
timeout 150 python3 -m benchmarks.pending_s77.pool_ab > "$OUT/ab.txt" 2>&1; echo "ab rc=$?"
tail -8 "$OUT/ab.txt"
T="tests/test_gpu_encode.py tests/test_encode_chunks.py tests/test_gpu_compress_file.py"
for v in fsst_encode_stage_pool128 fsst_encode_stage_pool64; do
  STAGE_VARIANT=$v timeout 60 python3 -m pytest -q -m gpu -p no:cacheprovider -p variant_plugin \
    -s $T > "$OUT/tests_$v.txt" 2>&1
  echo "$v tests rc=$? $(grep -m1 STAGE_KERNEL "$OUT/tests_$v.txt") $(tail -1 "$OUT/tests_$v.txt")"
  grep -E "^FAILED|^E " "$OUT/tests_$v.txt" | head -5
done
STAGE_VARIANT=fsst_encode_stage_pool128 timeout 90 compute-sanitizer --tool memcheck \
  --error-exitcode 9 python3 -m pytest -q -m gpu -p no:cacheprovider -p variant_plugin \
  tests/test_gpu_encode.py > "$OUT/memcheck.txt" 2>&1
echo "memcheck rc=$? $(grep 'ERROR SUMMARY' "$OUT/memcheck.txt" | tail -1)"
