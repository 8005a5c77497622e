#!/usr/bin/env bash
# The lead's combined GPU session. Stages, in the order given:
#   tests     every GPU test of the checkout (defaults and opt-in variants) against the CPU twins
#   memcheck  compute-sanitizer memcheck over a subset of the decode tests
#   bench     `fsstgpu bench --device gpu` on dbtext (1 GiB), with nvCOMP when .whl/ carries it
#   ktests    the GPU tests of the data-movement kernels only
#   kernels   `fsstgpu bench kernels` (the default data-movement kernels)
#   variants  the opt-in kernel variants side by side with the defaults
# Usage on the device machine, from the repo root: COMMIT=<sha> bash scripts/gpu_final.sh STAGE...
# Logs under $OUT.
set -o pipefail
source scripts/gpu_env.sh
if ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl >>"$OUT/pip.txt" 2>&1 \
        && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
echo "commit: ${COMMIT:-unknown}; $(date -u)" | tee -a "$OUT/final_meta.txt"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,memory.used --format=csv \
    | tee -a "$OUT/final_meta.txt"
CLI="$PY -m fsstgpu.cli.app"
for stage in "$@"; do
    t0=$SECONDS
    case $stage in
    tests)
        timeout 280 $PY -m pytest -q -p no:cacheprovider -m gpu -rfE tests/ 2>&1 \
            | tail -60 | tee "$OUT/final_tests.txt" ;;
    memcheck)
        timeout 90 compute-sanitizer --tool memcheck --error-exitcode 9 $PY -m pytest -q -x \
            -p no:cacheprovider -m gpu tests/test_gpu_decode.py -k "corrupt or tiny or huge" \
            2>&1 | tail -25 | tee "$OUT/final_memcheck.txt" ;;
    bench)
        timeout 240 $CLI bench --device gpu --no-nvcomp --json >"$OUT/final_bench_gpu.json" \
            2>"$OUT/final_bench_gpu.err"; echo "cli exit $?" >>"$OUT/final_bench_gpu.err"
        $PY -c "import json, sys
for r in json.load(open(sys.argv[1])):
    print(r['file'], '|', r['variant'], '|', r['ratio'], '|', r['GB/s'], '|', r['copy GB/s'])" \
            "$OUT/final_bench_gpu.json" 2>&1 | tee "$OUT/final_bench_gpu.txt" ;;
    nvcomp)
        # in a process of its own: a crash inside nvCOMP must not take other results with it
        PYTHONFAULTHANDLER=1 timeout 150 $PY - <<'PYEOF' 2>&1 | tail -40 | tee "$OUT/final_nvcomp.txt"
import json, os
import numpy as np
from fsstgpu.bench_gpu import _nvcomp_rows
from fsstgpu.datasets import dbtext_files
from fsstgpu.kernels._timing import copy_bandwidth
from nvidia import nvcomp
print("nvcomp", nvcomp.__version__, flush=True)
one = np.concatenate([np.frombuffer(p.read_bytes().replace(b"\n", b""), np.uint8)
                      for p in dbtext_files()])
data = np.tile(one, (1 << 30) // one.size + 1)[: 1 << 30]
rows = _nvcomp_rows(data, copy_bandwidth(1 << 30))
json.dump(rows, open(os.environ["OUT"] + "/final_nvcomp.json", "w"), indent=1, default=str)
for r in rows:
    print(r)
PYEOF
        ;;
    ktests)
        timeout 150 $PY -m pytest -q -p no:cacheprovider -m gpu -rfE tests/test_transpose.py \
            tests/test_rotate.py tests/test_bitshuffle.py tests/test_bitplane.py 2>&1 | tail -30 \
            | tee "$OUT/final_ktests.txt" ;;
    retest)
        timeout 120 $PY -m pytest -q -p no:cacheprovider -m gpu -rfE tests/ \
            -k "read_and_decompress or corrupt_buffers_raise or stream" 2>&1 | tail -15 \
            | tee "$OUT/final_retest.txt" ;;
    kernels)
        timeout ${KBENCH_SECONDS:-200} $CLI bench kernels --json >"$OUT/final_bench_kernels.json" \
            2>"$OUT/final_bench_kernels.err" ;;
    variants)
        timeout 110 $PY -m fsstgpu.kernels.bench_transpose --quick \
            --json "$OUT/final_transpose.json" 2>&1 | tail -40 | tee "$OUT/final_transpose.txt"
        timeout 120 $PY - <<'PYEOF' 2>&1 | tail -50 | tee "$OUT/final_variants.txt"
import json, os
from rich.console import Console
from fsstgpu.kernels._timing import copy_bandwidth
from fsstgpu.kernels.bench import format_kernel_bench
from fsstgpu.kernels.bench_rotate import bench_rotate_variants
from fsstgpu.kernels.bench_bitplane import bench_bitplane_variants
out = os.environ["OUT"]
copy_bps = copy_bandwidth(1 << 30)
print(f"copy (1 GiB, read + written): {copy_bps / 1e9:.0f} GB/s", flush=True)
rows = bench_rotate_variants(copy_bps=copy_bps, time_budget_s=45)
json.dump(rows, open(out + "/final_variants.json", "w"), indent=1)
rows += bench_bitplane_variants(copy_bps=copy_bps, time_budget_s=35)
json.dump(rows, open(out + "/final_variants.json", "w"), indent=1)
Console(width=170).print(format_kernel_bench([r for r in rows if "gbps" in r]))
for r in rows:
    if "gbps" not in r or r.get("verified") is False:
        print("NOT TIMED / NOT VERIFIED:", r)
PYEOF
        ;;
    *) echo "unknown stage $stage" ;;
    esac
    echo "stage $stage: exit ${PIPESTATUS[0]} (124 = timed out) in $((SECONDS - t0)) s" \
        | tee -a "$OUT/final_meta.txt"
done
