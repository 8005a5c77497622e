#!/usr/bin/env bash
# GPU session for the H3c kernel variants (rotate "pipe"/"pipe14k", bitshuffle "flat", bit-plane
# codec "fused"): correctness tests first, then every variant benchmarked beside the default one.
# Usage on the device machine, from the repo root: bash scripts/gpu_kernels_variants.sh
# Logs under $OUT: variants_tests.txt, variants_bench.txt, variants_bench.json.
set -o pipefail
source scripts/gpu_env.sh
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,memory.used --format=csv | tee "$OUT/variants_smi.txt"
timeout 120 $PY -m pytest -q -p no:cacheprovider tests/test_rotate.py tests/test_bitplane.py \
    -k "variant or pipe" -m gpu 2>&1 | tee "$OUT/variants_tests.txt"
echo "tests exit status: $?" | tee -a "$OUT/variants_tests.txt"
timeout 150 $PY - <<'PYEOF' 2>&1 | tee "$OUT/variants_bench.txt"
import json, os
from rich.console import Console
from fsstgpu.kernels._timing import copy_bandwidth
from fsstgpu.kernels.bench import format_kernel_bench
from fsstgpu.kernels.bench_rotate import bench_rotate_variants
from fsstgpu.kernels.bench_bitplane import bench_bitplane_variants
out = os.environ.get("OUT", "/tmp")
copy_bps = copy_bandwidth(1 << 30)
print(f"copy (1 GiB, read + written): {copy_bps / 1e9:.0f} GB/s", flush=True)
rows = bench_rotate_variants(copy_bps=copy_bps, time_budget_s=60)
json.dump(rows, open(out + "/variants_bench.json", "w"), indent=1)
rows += bench_bitplane_variants(copy_bps=copy_bps, time_budget_s=50)
json.dump(rows, open(out + "/variants_bench.json", "w"), indent=1)
timed = [r for r in rows if "gbps" in r]
Console(width=170).print(format_kernel_bench(timed))
for r in rows:
    if "gbps" not in r or r.get("verified") is False:
        print("NOT TIMED / NOT VERIFIED:", r)
PYEOF
echo "bench exit status: $?" | tee -a "$OUT/variants_bench.txt"
