#!/usr/bin/env bash
# session 76 call 2: the GPU suite with the host-side changes (compress_device's fewer CuPy
# operations; a host column's layout on a worker while this thread copies the codes), their
# A/B (host_ab.py: the compress_device change by .data/host_change.patch reversed / applied,
# two processes each; the layout switch inside each process), then the decode sweep.
set -u
SECONDS=0
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
{ date -u; cat .data/commit.txt; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
python3 -m pip install -q --no-deps --no-build-isolation -e . > "$OUT/install.txt" 2>&1 || { tail -20 "$OUT/install.txt"; exit 1; }
[ -d .data/dbtext ] || tar -xJf .data/dbtext.tar.xz -C .data
export FSSTGPU_DBTEXT=$PWD/.data/dbtext PYTHONPATH=$PWD:/tmp/site
timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests > "$OUT/pytest_gpu.txt" 2>&1
echo "pytest -m gpu: $(tail -1 "$OUT/pytest_gpu.txt") ${SECONDS}s"; grep -E "^FAILED" "$OUT/pytest_gpu.txt" | head -8
for r in 1; do
  patch -s -R -p1 < .data/host_change.patch
  timeout 60 python3 benchmarks/pending_s76/host_ab.py base >> "$OUT/host_ab.txt" 2>&1
  patch -s -p1 < .data/host_change.patch
  timeout 60 python3 benchmarks/pending_s76/host_ab.py new >> "$OUT/host_ab.txt" 2>&1
  echo "ab round $r ${SECONDS}s"
done
cat "$OUT/host_ab.txt" | grep -v "^sweep" | tail -30
timeout $((440 - SECONDS)) python3 -m benchmarks.gpu_sizes --json "$OUT/sweep.json" --plot "$OUT/sweep.png" > "$OUT/sweep.txt" 2>&1
echo "sweep rc=$? ${SECONDS}s"; tail -45 "$OUT/sweep.txt"
