#!/usr/bin/env bash
# Runs this tree's GPU tests against the library built from another source
# tree (e.g. an earlier commit), to show a new test fails on the old code:
#   bash tests/gpu/run_tests_against.sh OTHER_TREE LOG tests/gpu/test_x.py ...
# OTHER_TREE is built with a plain CMake dev build (its libraries land in
# OTHER_TREE/python/aotishim; log in OTHER_TREE/build/dev.log) and put first
# on PYTHONPATH. ONLY_BUILD=1 stops after the build, NO_BUILD=1 skips it.
# Test models come from the shared cache (AOTISHIM_TEST_MODEL_CACHE).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OTHER=$(cd "$1" && pwd)
LOG=$2
shift 2
PY=${PYTHON:-python3}
export AOTISHIM_TEST_MODEL_CACHE=${AOTISHIM_TEST_MODEL_CACHE:-/tmp/aotishim-gpu-models}
if [ -z "${NO_BUILD:-}" ]; then
  mkdir -p "$OTHER/build"
  {
    cmake -S "$OTHER" -B "$OTHER/build/dev" -G Ninja -DPython_EXECUTABLE="$(command -v "$PY")" \
      -Dpybind11_DIR="$($PY -m pybind11 --cmakedir)" > "$OTHER/build/dev.log" 2>&1 &&
      cmake --build "$OTHER/build/dev" >> "$OTHER/build/dev.log" 2>&1
  } || { echo "build of $OTHER failed"; tail -30 "$OTHER/build/dev.log"; exit 1; }
  echo "built $OTHER"
fi
[ -n "${ONLY_BUILD:-}" ] && exit 0
cd "$ROOT"
PYTHONPATH="$OTHER/python" timeout "${TIMEOUT_TEST:-200}" $PY -m pytest "$@" -v \
  -p no:cacheprovider -rs > "$LOG" 2>&1
echo "against $OTHER: exit $?"
grep -E "^(FAILED|ERROR)|passed|failed" "$LOG" | tail -40
