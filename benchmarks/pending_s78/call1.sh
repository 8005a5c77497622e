#!/usr/bin/env bash
# Session 78's first device call: session 77's pending call (GPU suite on the tree, the pooled
# stage's A/B, tests and memcheck), then the to_host A/B (pinned downloads) and two probes of
# where small calls' host time goes (call_cost.py: a decode; encode_cost.py: compress_device).
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
# to_host's pinned downloads (pending until a GPU runs them): applied unless the tree has them
if patch -p1 -s -N --dry-run < benchmarks/pending_s78/to_host_pinned.patch > /dev/null 2>&1; then
  patch -p1 -s -N < benchmarks/pending_s78/to_host_pinned.patch && echo "to_host patch applied"
fi
bash benchmarks/pending_s77/next_call.sh
export FSSTGPU_DBTEXT=$PWD/.data/dbtext PYTHONPATH=$PWD:/tmp/site
for probe in to_host_ab call_cost encode_cost; do
  timeout 90 python3 -m benchmarks.pending_s78.$probe > "$OUT/$probe.txt" 2>&1
  echo "$probe rc=$?"; tail -14 "$OUT/$probe.txt"
done
