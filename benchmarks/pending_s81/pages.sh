#!/usr/bin/env bash
# Session 81's second call: benchmarks/raw_pages_gpu.py with the fsst pages cut at 1 MiB
# (pyarrow's default), 256, 64 and 32 KB: nvCOMP's batched zstd against the host's, file sizes.
set -u
OUT=${OUT:-/tmp/out}
bash benchmarks/gpu_session.sh setup > /dev/null || exit 1
export FSSTGPU_DBTEXT=$PWD/.data/dbtext PYTHONPATH=$PWD:/tmp/site
timeout 500 python3 -X faulthandler -m benchmarks.raw_pages_gpu \
  --page-bytes 0,262144,65536,32768 > "$OUT/raw_pages.txt" 2>&1
echo "raw_pages rc=$?"; grep -v "failed: TypeError" "$OUT/raw_pages.txt" | cut -c1-400
