# Source on the GPU machine, from the repo root: installs fsstgpu (no deps, no network) and exports
# PY, the interpreter command to use. `python3 -P` keeps the checkout's root off sys.path: its raw
# fsstgpu/ folder lacks the subpackages that pyproject.toml maps in (kernels/, formats/, ...).
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
python3 -m pip install -q --no-deps --no-build-isolation -e . >"$OUT/pip.txt" 2>&1
PY="python3 -P"
if ! $PY -c "import fsstgpu.formats, fsstgpu.kernels" 2>>"$OUT/pip.txt"; then
    # Fallback: a package tree in /tmp that links the mapped subpackages into place.
    rm -rf /tmp/pkg && mkdir -p /tmp/pkg && cp -r fsstgpu /tmp/pkg/
    for d in kernels formats cli datasets; do ln -s "$PWD/$d" "/tmp/pkg/fsstgpu/$d"; done
    export PYTHONPATH=/tmp/pkg
fi
export PY
if [ -z "$FSSTGPU_DBTEXT" ] && [ -f .data/dbtext.tar.xz ]; then
    mkdir -p /tmp/db && tar xJf .data/dbtext.tar.xz -C /tmp/db && export FSSTGPU_DBTEXT=/tmp/db/dbtext
fi
$PY -c "import fsstgpu; print('fsstgpu from', fsstgpu.__file__, fsstgpu.backend_info())"
