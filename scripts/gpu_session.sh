#!/usr/bin/env bash
# One GPU session for the FSST decoder: correctness first (abort timing if wrong), then timing.
# Usage on the device machine: bash scripts/gpu_session.sh [quick|full|warp] ; logs under $OUT.
# warp: the GPU decode tests (all variants; timing goes on even if they fail, marked so), then
# the 1 GiB overall column only, old thread-per-split kernels against the warp kernels.
set -o pipefail
MODE=${1:-full}
source scripts/gpu_env.sh  # installs fsstgpu, exports PY and FSSTGPU_DBTEXT
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,memory.used --format=csv | tee "$OUT/smi.txt"
if [ "$MODE" = warp ]; then
    timeout 160 $PY -m pytest -q -p no:cacheprovider --durations=6 tests/test_gpu_decode.py 2>&1 \
        | tail -40 | tee "$OUT/tests.txt" || echo "GPU TESTS FAILED (timing below is unverified)"
    $PY - <<'PY' 2>&1 | tee "$OUT/bench.txt"
import json, os, sys
from rich.console import Console
from fsstgpu.bench_gpu import run_gpu_bench, format_gpu_bench
from fsstgpu.kernels.fsst_decode import VARIANTS, WARP_VARIANTS
rows = run_gpu_bench(target_bytes=1 << 30, per_file=False, ingest=False, nvcomp=False,
                     variants=("s16_smem_256", *sorted(WARP_VARIANTS)),
                     progress=lambda m: print("..", m, file=sys.stderr))
json.dump(rows, open(os.environ.get("OUT", "/tmp") + "/bench.json", "w"), indent=1)
Console(width=160).print(format_gpu_bench(rows))
PY
    if command -v compute-sanitizer >/dev/null; then  # every variant, out-of-bounds accesses
        timeout 80 compute-sanitizer --tool memcheck --error-exitcode 9 $PY -m pytest -q -x \
            -p no:cacheprovider tests/test_gpu_decode.py -k "tiny or many_tables or unaligned" \
            2>&1 | tail -8 | tee "$OUT/memcheck.txt"
    fi
    exit 0
fi
$PY -m pytest -q -x -p no:cacheprovider tests/test_gpu_decode.py 2>&1 | tee "$OUT/tests.txt" \
    || { echo "GPU TESTS FAILED: no timing"; exit 1; }
$PY - <<'PY' 2>&1 | tee "$OUT/bench.txt"
import json, os, sys
from rich.console import Console
from fsstgpu.bench_gpu import run_gpu_bench, format_gpu_bench
from fsstgpu.kernels.fsst_decode import VARIANTS, TIMING_ONLY
rows = run_gpu_bench(target_bytes=1 << 30, per_file_bytes=512 << 20,
                     variants=tuple(VARIANTS) + tuple(TIMING_ONLY),
                     split_sweep=(2048, 1024),
                     progress=lambda m: print("..", m, file=sys.stderr))
json.dump(rows, open(os.environ.get("OUT", "/tmp") + "/bench.json", "w"), indent=1)
Console(width=160).print(format_gpu_bench(rows))
PY
if [ "$MODE" = full ] && command -v compute-sanitizer >/dev/null; then
    timeout 60 compute-sanitizer --tool memcheck --error-exitcode 9 $PY -m pytest -q -x \
        -p no:cacheprovider tests/test_gpu_decode.py -k "corrupt_split or tiny or many_tables" \
        2>&1 | tail -25 | tee "$OUT/memcheck.txt"
fi
if [ "$MODE" = full ] && command -v ncu >/dev/null; then
    cat > /tmp/ncu_one.py <<'PY'
import fsstgpu
from fsstgpu.bench_gpu import _read_lines, _replicate, _concat
from fsstgpu.datasets import dbtext_files
from fsstgpu.device_array import DeviceCompressedStringArray, HostPrepared, decode_async
cs = [fsstgpu.compress(_read_lines(p)) for p in dbtext_files()]
col = _concat([_replicate(c, 1) for c in cs] * 8)
dev = DeviceCompressedStringArray(HostPrepared(col))
decode_async(dev).check()
PY
    timeout 100 ncu --clock-control none -k regex:fsst_decode_s16_smem_256 -c 1 \
        --section SpeedOfLight --section Occupancy --section WarpStateStats \
        --section SchedulerStats --section MemoryWorkloadAnalysis --section LaunchStats \
        $PY /tmp/ncu_one.py 2>&1 | tail -120 > "$OUT/ncu.txt"
    grep -E "Throughput|Issued|Eligible|Active Warps|Stall|Occupancy|Duration|L1|L2|DRAM" \
        "$OUT/ncu.txt" | head -40
fi
