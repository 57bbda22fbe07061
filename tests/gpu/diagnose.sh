#!/usr/bin/env bash
# Where a crash in the cuda backend comes from, on the GPU machine: build and
# install (like run_on_h200.sh), then load the backend step by step, with a
# cuda-gdb backtrace of the failing step. Output to $OUT/diagnose.txt.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
OUT=${OUT:-$ROOT/gpu-out}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
exec > "$OUT/diagnose.txt" 2>&1
PHASES=build bash tests/gpu/run_on_h200.sh > /dev/null 2>&1 || { echo "build failed"; tail -40 "$OUT/build.log"; }
cd /tmp
PKG=$($PY -c "import aotishim, os; print(os.path.dirname(aotishim.__file__))")
echo "== ldd"; ldd "$PKG/libaotishim_cuda.so"; ldd "$PKG/libaotishim.so"
echo "== readelf"; readelf -d "$PKG/libaotishim_cuda.so" | grep -i "path\|needed"
step() { echo "== $1"; shift; timeout 60 "$@"; echo "rc=$?"; }
step "import" $PY -c "import aotishim; print('ok')"
step "dlopen plugin alone" $PY -c "import ctypes, aotishim, os; ctypes.CDLL(os.path.join(os.path.dirname(aotishim.__file__), 'libaotishim_cuda.so'), mode=ctypes.RTLD_GLOBAL); print('ok')"
step "devices" $PY -X faulthandler -c "import aotishim; print(aotishim.devices())"
step "empty_strided" $PY -X faulthandler -c "from aotishim import shim; t = shim.empty_strided([4], None, 'float32', 'cuda:0'); print(t)"
echo "== cuda-gdb backtrace of devices()"
timeout 120 cuda-gdb -batch -ex run -ex bt -ex "info sharedlibrary" --args $PY -c "import aotishim; print(aotishim.devices())" 2>&1 | tail -80
echo "== LD_DEBUG=libs (tail)"
LD_DEBUG=libs timeout 60 $PY -c "import aotishim; aotishim.devices()" 2>&1 | grep -i "calling init\|cudart\|stdc\|aotishim" | tail -40
