#!/usr/bin/env bash
# One device call's worth of GPU checks and measurements, for a session's first GPU call
# (the device tool's machine: Python 3.12, CuPy, no network; results under $OUT).
#
# Here, before the call (the machine cannot reach the network or ../shared):
#   mkdir -p .data && cp ../shared/datasets/dbtext.tar.xz .data/
#   git describe --always --dirty > .data/commit.txt   (what env.txt names)
#   nvCOMP 6.0.0.12 wheels into .whl/ (the device tool's README: `pip download` of
#   nvidia-nvcomp-cu13 and nvidia-libnvcomp-cu13 for Python 3.12, manylinux x86_64)
# then run it with carry [".data", ".whl"], one call a part (a call may run 600 s at most):
#   bash benchmarks/gpu_session.sh tests   # every GPU test, then memcheck on the kernels' tests
#   bash benchmarks/gpu_session.sh bench   # the decode sweep and the encode table
#   bash benchmarks/gpu_session.sh setup   # only the install and env.txt (for a probe's script)
#
# What it leaves in $OUT: pytest_gpu.txt (every GPU test), memcheck.txt (compute-sanitizer on
# the kernels' own tests), sweep.json / sweep.png / sweep.txt (the decode size sweep beside
# nvCOMP), encode.json / encode.txt (the GPU encode beside the CPU encoder and nvCOMP's
# compressors), and env.txt (device, driver, commit).
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
{
  # the commit as written here before the call: the device's own git may name an older one
  # (the tool copies the working tree; its .git was seen naming the session's first HEAD)
  date -u
  cat .data/commit.txt 2>/dev/null || git rev-parse HEAD 2>/dev/null
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader; python3 -V
} > "$OUT/env.txt" 2>&1

if ls .whl/*.whl > /dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
python3 -m pip install -q --no-deps --no-build-isolation -e . > "$OUT/install.txt" 2>&1 \
  || { echo "install failed"; tail -20 "$OUT/install.txt"; exit 1; }
if [ -f .data/dbtext.tar.xz ] && [ ! -d .data/dbtext ]; then
  tar -xJf .data/dbtext.tar.xz -C .data
fi
export FSSTGPU_DBTEXT=$PWD/.data/dbtext
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}

[ "${1:-tests}" = setup ] && exit 0   # (a probe's script: installed, nothing run)

if [ "${1:-tests}" = tests ]; then
  timeout 360 python3 -m pytest -q -m gpu -p no:cacheprovider tests > "$OUT/pytest_gpu.txt" 2>&1
  echo "pytest -m gpu: $(tail -1 "$OUT/pytest_gpu.txt")"

  # memcheck on the encode's, the string-end check's and the host checks' GPU tests
  timeout 200 compute-sanitizer --tool memcheck --error-exitcode 9 python3 -m pytest -q -m gpu \
    -p no:cacheprovider tests/test_gpu_encode.py tests/test_gpu_string_ends.py \
    tests/test_gpu_host_checks.py > "$OUT/memcheck.txt" 2>&1
  echo "memcheck rc=$? $(grep -E 'ERROR SUMMARY' "$OUT/memcheck.txt" | tail -1)"

  exit 0
fi

timeout 300 python3 -m benchmarks.gpu_sizes --json "$OUT/sweep.json" --plot "$OUT/sweep.png" \
  > "$OUT/sweep.txt" 2>&1
echo "sweep rc=$?"
timeout 260 python3 -m benchmarks.gpu_encode --json "$OUT/encode.json" > "$OUT/encode.txt" 2>&1
echo "encode rc=$?"
