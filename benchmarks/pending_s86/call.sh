#!/usr/bin/env bash
# Session 86's device call: where read_page_columns' time goes (benchmarks/pending_s86/
# page_steps.py). Carry [".data", ".whl"].
set -u
OUT=${OUT:-/tmp/out}
bash benchmarks/gpu_session.sh setup || exit 1
[ -d /tmp/site ] && export PYTHONPATH=/tmp/site
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
timeout 300 python3 -u benchmarks/pending_s86/page_steps.py > "$OUT/page_steps.txt" 2>&1
echo "rc=$?"; grep -E "^(round|  sums)" "$OUT/page_steps.txt"
