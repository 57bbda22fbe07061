#!/usr/bin/env bash
# Which library breaks a process that imports aotishim beside numpy and
# ml_dtypes: each loaded alone (ctypes) before ml_dtypes, in a child process,
# plus how the installed libraries link. Prints to stdout.
set -u
PY=${PYTHON:-python3}
cd /tmp
SITE=$($PY -c "import sysconfig; print(sysconfig.get_paths()['platlib'])")
PKG=$SITE/aotishim
echo "== toolchain"; echo "CC=${CC:-} CXX=${CXX:-}"; ls -l /usr/bin/g++* /usr/bin/gcc* 2>&1 | head -5
/opt/gcc/bin/g++ -dumpspecs 2>/dev/null | grep -n "static-libstdc\\|static-libgcc" | head -5
echo "== NEEDED"; for f in "$PKG"/*.so; do echo "$f"; readelf -d "$f" | grep NEEDED; done
echo "== exported libstdc++ symbols"; for f in "$PKG"/*.so; do
  echo "$f $(nm -D --defined-only "$f" | grep -c ' _ZNSt\\| _ZSt')"; done
step() { echo "== $1"; timeout 60 $PY -X faulthandler -c "$2" 2>&1 | tail -4; echo "rc=${PIPESTATUS[0]}"; }
step "ml_dtypes alone" "import numpy, ml_dtypes; print(ml_dtypes.finfo(ml_dtypes.float4_e2m1fn).max)"
step "openblas32 then ml_dtypes" "import ctypes; ctypes.CDLL('$SITE/scipy_openblas32/lib/libscipy_openblas.so'); import ml_dtypes; print('ok')"
step "libaotishim then ml_dtypes" "import ctypes; ctypes.CDLL('$PKG/libaotishim.so'); import ml_dtypes; print('ok')"
step "_core then ml_dtypes" "import sys; sys.path.insert(0, '$SITE'); import importlib.util as u; s = u.spec_from_file_location('aotishim._core', [p for p in __import__('glob').glob('$PKG/_core*.so')][0]); m = u.module_from_spec(s); s.loader.exec_module(m); import ml_dtypes; print('ok')"
step "plugin then ml_dtypes" "import ctypes; ctypes.CDLL('$PKG/libaotishim_cuda.so', mode=ctypes.RTLD_GLOBAL); import ml_dtypes; print('ok')"
