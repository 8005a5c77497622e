#!/usr/bin/env bash
# session 76 call 1: the stage kernel's v2/v3 (session 75) and v4 (length-sorted tiles) A/B,
# then the winner's landing's GPU tests and memcheck, a host profile of small calls, and the
# winner's encode table beside nvCOMP. .data holds pending.patch (cc15d70's
# diff + v4, applied here first) and land_88818bd / land_590890c / land_v4 .patch (landings).
set -u
SECONDS=0
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
{ date -u; cat .data/commit.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m pip install -q --no-deps --no-build-isolation -e . > "$OUT/install.txt" 2>&1 || { tail -20 "$OUT/install.txt"; exit 1; }
[ -d .data/dbtext ] || tar -xJf .data/dbtext.tar.xz -C .data
export FSSTGPU_DBTEXT=$PWD/.data/dbtext PYTHONPATH=$PWD:$PWD/benchmarks/pending_s75:/tmp/site
patch -s -p1 < .data/pending.patch || exit 1
timeout 130 python3 benchmarks/pending_s75/stage_ab.py > "$OUT/stage_ab.txt" 2>&1; echo "ab rc=$? ${SECONDS}s"; cat "$OUT/stage_ab.txt"
# winner: the variant with the best product of its best rate over the sizes, if 2% ahead of HEAD
WIN=$(python3 - "$OUT/stage_ab.txt" <<'PY'
import math, re, sys
best = {}
for line in open(sys.argv[1]):
    m = re.match(r"\s*(\d+) MiB (\S+)\s+(.*)", line)
    if m:
        rates = [float(x) for x in re.findall(r"([\d.]+) GB/s same=True", m.group(3))]
        if len(rates) == 2:
            best.setdefault(m.group(2), 0.0)
            best[m.group(2)] += math.log(max(rates))
        else:
            best[m.group(2)] = -1e9  # codes differ or no rate
base = best.get("fsst_encode_stage", 1e9)
cands = {"fsst_encode_stage_v2": "88818bd", "fsst_encode_stage_v3": "590890c",
         "fsst_encode_stage_v4": "v4"}
win = max(cands, key=lambda k: best.get(k, -1e9))
print(cands[win] if best.get(win, -1e9) > base + 3 * math.log(1.02) else "none")
PY
)
echo "winner landing: $WIN"
T="tests/test_gpu_encode.py tests/test_gpu_compress_file.py tests/test_gpu_host_checks.py tests/test_array_device.py tests/test_encode_chunks.py"
patch -s -R -p1 < .data/pending.patch || exit 1
if [ "$WIN" != none ]; then
  L=$WIN
  patch -s -p1 < .data/land_$L.patch || echo "patch $L failed"
  timeout 80 python3 -m pytest -q -m gpu -p no:cacheprovider $T > "$OUT/tests_$L.txt" 2>&1
  echo "$L tests rc=$? $(tail -1 "$OUT/tests_$L.txt") ${SECONDS}s"; grep -E "^FAILED" "$OUT/tests_$L.txt" | head -5
  timeout 70 compute-sanitizer --tool memcheck --error-exitcode 9 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_gpu_encode.py > "$OUT/memcheck_$L.txt" 2>&1
  echo "$L memcheck rc=$? $(grep 'ERROR SUMMARY' "$OUT/memcheck_$L.txt" | tail -1) $(tail -1 "$OUT/memcheck_$L.txt") ${SECONDS}s"
  patch -s -R -p1 < .data/land_$L.patch
fi
timeout 90 python3 benchmarks/pending_s76/prof_host.py > "$OUT/prof_host.txt" 2>&1; echo "prof rc=$? ${SECONDS}s"; grep "^====" "$OUT/prof_host.txt"
if [ "$WIN" != none ]; then
  patch -s -p1 < .data/land_$WIN.patch
  timeout $((585 - SECONDS)) python3 -m benchmarks.gpu_encode --json "$OUT/encode_$WIN.json" > "$OUT/encode_$WIN.txt" 2>&1
  echo "$WIN encode rc=$? ${SECONDS}s"; tail -30 "$OUT/encode_$WIN.txt"
fi
echo "done ${SECONDS}s"
