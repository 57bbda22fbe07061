#!/usr/bin/env bash
# The whole GPU check in one go, on a machine with an NVIDIA GPU, CUDA (nvcc),
# torch with CUDA, pybind11 and scikit-build-core: build and install aotishim
# with its cuda backend, compile the test models, run tests/gpu, run the zoo
# benchmark. Logs go to $OUT (default ./gpu-out); $OUT/summary.txt says what
# each phase did and where its log is.
#   PHASES="build models test bench" (default; also "loadbench": load
#   time and memory against torch's loader; "pair": the two-model
#   aotishim-vs-torch-runner comparison; "profile": where a run's host time
#   goes, PROFILE_MODELS=a,b of the bench's cache; "kernels": kernel against
#   call time per side, KERNEL_MODELS=a,b KERNEL_SIDES=..., KERNELS_S;
#   "opsbench": the cuda fallback ops one by one against torch eager,
#   cuda_ops.md/.json/.png, TIMEOUT_OPSBENCH)
#   TIMEOUT_<PHASE>=seconds
#   TEST_FILES="tests/gpu/x.py ..." TEST_K=expr: those tests first (a focused run)
#   TEST_GROUPS="device cublas_legacy models graphs multi dlpack constants ops newops torchvision zoo heuristic legacy" (default: all):
#   which groups of tests/gpu the test phase runs
#   A machine without internet access needs scipy-openblas32 (the CPU BLAS
#   the build links) and, for the tests, expecttest and pytest-xdist as
#   wheels in .whl/ at the repository root (pip download --no-deps
#   --python-version 3.12 --platform manylinux2014_x86_64 ...): the build
#   phase installs .whl/*.whl when scipy_openblas32 is missing.
#   TOTAL_S=540: the whole run's time; each phase gets what is left of it, and
#   the benchmark measures within what remains (its table always completes).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
OUT=${OUT:-$ROOT/gpu-out}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
PHASES=${PHASES:-build models test bench}
TEST_GROUPS=${TEST_GROUPS:-device cublas_legacy models graphs multi dlpack constants ops newops torchvision zoo heuristic legacy}
TOTAL_S=${TOTAL_S:-540}
export PYTHONUNBUFFERED=1
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
export AOTISHIM_TEST_MODEL_CACHE=${AOTISHIM_TEST_MODEL_CACHE:-/tmp/aotishim-gpu-models}
has() { [[ " $PHASES " == *" $1 "* ]]; }
group() { [[ " $TEST_GROUPS " == *" $1 "* ]]; }
status=0
# Seconds a step may take: its own limit, or what is left of TOTAL_S less a
# margin for the steps after it, whichever is smaller (at least 30).
cap() {
  local left=$((TOTAL_S - SECONDS - ${2:-20}))
  [ "$left" -lt "$1" ] && echo $((left > 30 ? left : 30)) || echo "$1"
}
note() { echo "[$(date -u +%H:%M:%S) +${SECONDS}s] $*" | tee -a "$OUT/summary.txt"; }
# Runs a step under `timeout`, noting how it ended (124: out of time).
step() {
  local name=$1 limit=$2; shift 2
  local t0=$SECONDS rc
  timeout "$limit" "$@"
  rc=$?
  if [ $rc -eq 0 ]; then note "$name: ok ($((SECONDS - t0)) s)"
  elif [ $rc -eq 124 ]; then note "$name: TIMED OUT after $limit s"; status=1
  else note "$name: FAILED (exit $rc, $((SECONDS - t0)) s)"; status=1; fi
  return $rc
}
: > "$OUT/summary.txt"
note "phases: $PHASES; time: ${TOTAL_S} s"

{
  date -u
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv
  nvcc --version | tail -2
  $PY -c "import sys, torch; print(sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.is_available())"
  $PY -c "import ml_dtypes, hypothesis, pytest, numpy; print('ml_dtypes', ml_dtypes.__version__, 'numpy', numpy.__version__)"
  $PY -c "import cupy; print('cupy', cupy.__version__)" || echo "no CuPy (its DLPack test is skipped)"
  echo "libcublas copies in site-packages:"
  $PY -c "import site; print('\n'.join(site.getsitepackages()))" | while read -r d; do
    find "$d" -name 'libcublas.so*' 2>/dev/null; done
} > "$OUT/env.txt" 2>&1

# Does the installed package import and find its devices beside numpy and
# ml_dtypes (in a child process, so a crash is a result, not the end)?
smoke() {
  (cd /tmp && timeout 120 $PY -X faulthandler -c \
    "import ml_dtypes, numpy, aotishim; print('smoke ok', aotishim.devices())") >> "$OUT/env.txt" 2>&1
}

build() {  # CMAKE_ARGS, CC, CXX, CUDAHOSTCXX choose the toolchain for an attempt
  echo "== build (CMAKE_ARGS='${CMAKE_ARGS:-}' CC='${CC:-}' CXX='${CXX:-}')" | tee -a "$OUT/env.txt"
  t0=$SECONDS
  rm -rf build/cp*
  if ! timeout "${TIMEOUT_BUILD:-300}" $PY -m pip install -v --no-build-isolation --no-deps \
      --force-reinstall . > "$OUT/build.log" 2>&1; then
    note "build: FAILED (build.log)"; tail -60 "$OUT/build.log"; exit 1
  fi
  echo "build+install: $((SECONDS - t0)) s" | tee -a "$OUT/env.txt"
}

# A bench-only run on a machine where aotishim is not installed builds first.
if has bench && ! has build && ! (cd /tmp && $PY -c "import aotishim" 2>/dev/null); then
  note "aotishim is not installed here: building first"
  PHASES="build $PHASES"
fi

if has build; then
  # The CPU BLAS wheel the build needs, carried as a wheel when missing there.
  if ! $PY -c "import scipy_openblas32" 2>/dev/null && ls .whl/*.whl >/dev/null 2>&1; then
    $PY -m pip install -q --no-index --no-deps .whl/*.whl >> "$OUT/env.txt" 2>&1
  fi
  build
  note "build: done ($SECONDS s in)"
  if ! smoke; then
    # Record why (diagnose.sh), then try the system compiler. (The machine's
    # default toolchain links libstdc++ statically; CMakeLists.txt keeps each
    # library's copy private, which made the default build import cleanly.)
    bash tests/gpu/diagnose.sh >> "$OUT/env.txt" 2>&1
    if [ -x /usr/bin/g++ ]; then
      export CC=/usr/bin/gcc CXX=/usr/bin/g++ CUDAHOSTCXX=/usr/bin/g++
      build
    fi
    smoke || { echo "SMOKE FAILED"; tail -40 "$OUT/env.txt"; exit 1; }
  fi
fi

# Import the installed package, never the source tree's python/ folder.
cd "$ROOT/tests"
{
  echo "== installed"
  $PY - <<'PY'
import os, aotishim, numpy as np
from aotishim import shim
d = os.path.dirname(aotishim.__file__)
print("package:", d, sorted(f for f in os.listdir(d) if f.endswith(".so")))
print("devices:", aotishim.devices())
# cuBLAS found on its own (beside the package or on the loader path)?
a = shim.from_numpy(np.eye(3, dtype=np.float32), copy=True, device="cuda:0")
out = shim.empty_strided([3, 3], None, "float32", "cuda:0")
shim.mm(out, a, a)
print("mm on cuda without AOTISHIM_CUBLAS_PATH:", np.array_equal(shim.to_numpy(out), np.eye(3)))
PY
} >> "$OUT/env.txt" 2>&1 || echo "cuBLAS discovery or device check FAILED (see env.txt)" | tee -a "$OUT/env.txt"
cd "$ROOT"

# Diagnostics that compile their own models: started now, in the background,
# so their compiles overlap the test models' (phase "diag").
if has diag; then
  note "diag: bfloat16 GPT-2 variants started in the background (diag_gpt2.txt)"
  (timeout "$(cap 420 60)" $PY tests/gpu/diag_gpt2_bf16.py "$OUT/diag_gpt2" \
     > "$OUT/diag_gpt2.txt" 2>&1; echo "exit $?" >> "$OUT/diag_gpt2.txt") &
  DIAG_PID=$!
fi

if has models; then
  # The test models and the zoo models of test_cuda_zoo.py, compiled in a
  # pool of processes so the tests find them cached.
  echo "== models" > "$OUT/models.log"
  step "models (compile, log models.log)" "$(cap "${TIMEOUT_MODELS:-300}" 200)" \
    $PY tests/gpu/cuda_models.py >> "$OUT/models.log" 2>&1
  note "models: $(grep -c FAILED "$OUT/models.log") compile(s) failed (models.log names them)"
  {
    echo "== undefined dynamic symbols of the compiled CUDA models (count of models needing each)"
    for so in "$AOTISHIM_TEST_MODEL_CACHE"/cuda/*.so; do
      nm -D --undefined-only "$so" | awk '{print $NF}' | sort -u; done | sort | uniq -c
    inc=$($PY -c "import torch, os; print(os.path.join(os.path.dirname(torch.__file__), 'include'))")
    echo "== their declarations in torch's headers ($inc)"
    for so in "$AOTISHIM_TEST_MODEL_CACHE"/cuda/*.so; do
      nm -D --undefined-only "$so" | awk '{print $NF}'; done | sort -u | grep '^aoti_' | while read -r s; do
      grep -rh -A4 "AOTITorchError $s(" "$inc/torch/csrc/inductor/aoti_torch/" 2>/dev/null | head -6
      echo "--"; done
    echo "== AOTI CUDA wrapper code: shim calls in one generated model"
    src=$(grep -rl "aoti_torch_cuda_addmm_out\|aoti_torch_get_current_cuda_stream" \
      "$AOTISHIM_TEST_MODEL_CACHE"/cuda/inductor --include='*.cpp' 2>/dev/null | head -1)
    echo "$src"
    [ -n "$src" ] && grep -n "aoti_torch_\|Guard\|cudaStream\|launchKernel\|cuLaunch" "$src" | head -80
  } >> "$OUT/models.log" 2>&1
fi

# One compiled model loaded and run in a child process.
model_smoke() {
  so=$(ls "$AOTISHIM_TEST_MODEL_CACHE"/cuda/linear_chunk_last_dim_float32_cuda-*.so 2>/dev/null | head -1)
  [ -n "$so" ] || return 0
  (cd /tmp && timeout 120 $PY -X faulthandler -c "
import numpy as np, aotishim
with aotishim.load('$so', device='cuda') as m:
    print('model smoke ok', [o.shape for o in m.run(np.ones((12, 7), np.float32))])
") >> "$OUT/env.txt" 2>&1
}

if has test; then
  if ! model_smoke; then
    echo "model smoke failed; retrying with libstdc++ preloaded" | tee -a "$OUT/env.txt"
    export LD_PRELOAD=$($PY -c "import ctypes.util; print(ctypes.util.find_library('stdc++') or '')")
    model_smoke || echo "model smoke failed again" | tee -a "$OUT/env.txt"
  fi
  # Each file's log in $OUT; -s keeps the DLPack checks' error lines, -rA
  # the captured output of every test.
  t() {  # t LOG TIMEOUT FILES...
    local log=$1 limit=$2; shift 2
    step "pytest $* (log $log)" "$(cap "$limit" 60)" $PY -m pytest "$@" -v -p no:cacheprovider \
      -rA > "$OUT/$log" 2>&1
    tail -3 "$OUT/$log"
  }
  echo "== tests/gpu ($TEST_GROUPS)"
  # TEST_FILES="a.py b.py" [TEST_K=expr]: those files first (a focused run).
  if [ -n "${TEST_FILES:-}" ]; then
    # shellcheck disable=SC2086
    t pytest_files.log "${TIMEOUT_TEST:-300}" $TEST_FILES ${TEST_K:+-k "$TEST_K"}
  fi
  group device && t pytest.log "${TIMEOUT_TEST:-200}" tests/gpu/test_cuda_device.py
  # The matrix products on cublasGemmStridedBatchedEx alone (cuBLASLt's fallback).
  group cublas_legacy && AOTISHIM_CUBLAS_API=legacy t pytest_cublas_legacy.log \
    "${TIMEOUT_TEST:-120}" tests/gpu/test_cuda_device.py -k "mm or addmm or bmm"
  group models && t pytest_models.log "${TIMEOUT_TEST:-200}" tests/gpu/test_cuda_models.py \
    tests/gpu/test_cuda_recurrent.py
  # Models recorded as CUDA graphs (cuda_graphs=True) against eager.
  group graphs && t pytest_graphs.log "${TIMEOUT_TEST:-200}" -s tests/gpu/test_cuda_graphs.py
  # Several GPUs in one process (skipped with one) and runtime errors.
  group multi && t pytest_multi.log "${TIMEOUT_TEST:-200}" tests/gpu/test_cuda_multi_gpu.py \
    tests/gpu/test_cuda_errors.py
  # DLPack exchange with torch and CuPy; every check prints "DLPACK ... max_abs_err".
  if group dlpack; then
    t pytest_dlpack.log "${TIMEOUT_TEST:-200}" -s tests/gpu/test_cuda_dlpack.py
    grep "^DLPACK" "$OUT/pytest_dlpack.log" > "$OUT/dlpack_errors.txt" || true
  fi
  # The constants API on a cuda model (load, swap, extract, shared weights),
  # pinned memory and the staged uploads.
  group constants && t pytest_constants.log "${TIMEOUT_TEST:-200}" tests/gpu/test_cuda_constants.py \
    tests/gpu/test_cuda_pinned.py
  # The fallback ops against torch (attention, convolution, topk, nonzero),
  # then the zoo models; every output's error is a "ZOO ..." line.
  group ops && t pytest_ops.log "${TIMEOUT_TEST:-200}" tests/gpu/test_cuda_ops.py \
    tests/gpu/test_cuda_conv_families.py
  # The random family, int8 products, bags and histc, FFT, sort, scans,
  # pointwise ops, padding, norms, distances, linalg, indexing and scatter,
  # order statistics and pooling on cuda, Python custom ops in a cuda model,
  # the CPU suite's compiled op models compiled for cuda, and the OpInfo
  # samples of every op with a cuda kernel.
  group newops && t pytest_newops.log "${TIMEOUT_TEST:-420}" tests/gpu/test_cuda_random.py \
    tests/gpu/test_cuda_int8_mm.py tests/gpu/test_cuda_bags_histc.py tests/gpu/test_cuda_fft.py \
    tests/gpu/test_cuda_sort_scan_pointwise.py tests/gpu/test_cuda_pad_pow_norm_distance.py \
    tests/gpu/test_cuda_linalg.py tests/gpu/test_cuda_index_scatter.py \
    tests/gpu/test_cuda_order_scan_search.py tests/gpu/test_cuda_pooling.py \
    tests/gpu/test_cuda_custom_ops.py tests/gpu/test_cuda_compiled_op_models.py \
    tests/gpu/test_cuda_conversions.py tests/test_opinfo.py -k cuda
  # torchvision models beyond the zoo against float64; every check prints a "TV" line.
  if group torchvision; then
    t pytest_torchvision.log "${TIMEOUT_TEST:-480}" -s tests/gpu/test_cuda_torchvision.py
    grep "^TV" "$OUT/pytest_torchvision.log" > "$OUT/torchvision_errors.txt" || true
  fi
  if group zoo; then
    # (ZOO_K: a pytest -k selection; the cpu-side test of export's torch
    # fixes runs here too, on this machine's torch.)
    t pytest_zoo.log "${TIMEOUT_ZOO:-480}" -s tests/gpu/test_cuda_zoo.py tests/test_torch_fixes.py \
      ${ZOO_K:+-k "$ZOO_K"}
    grep "^ZOO" "$OUT/pytest_zoo.log" > "$OUT/zoo_errors.txt" || true
  fi
  # The convolution with cuDNN's heuristics choosing (the default times them).
  group heuristic && AOTISHIM_CUDNN_ALGO=heuristic t pytest_conv_heuristic.log \
    "${TIMEOUT_TEST:-120}" \
    tests/gpu/test_cuda_ops.py -k convolution
  # The convolution on cuDNN's legacy API alone (its fallback when the graph
  # API offers no engine).
  group legacy && AOTISHIM_CUDNN_API=legacy t pytest_conv_legacy.log "${TIMEOUT_TEST:-120}" \
    tests/gpu/test_cuda_ops.py -k "convolution_matches or convolution_input"
fi

if has diag; then
  step "diag: DLPack input release (diag_dlpack.txt)" "$(cap 90 60)" \
    bash -c "cd tests/gpu && $PY diag_dlpack_release.py > '$OUT/diag_dlpack.txt' 2>&1"
  wait "$DIAG_PID"
  note "diag: bfloat16 GPT-2 variants done"
  grep -E "^GPT2BF16|^exit" "$OUT/diag_gpt2.txt" | tee -a "$OUT/summary.txt"
fi

if has loadbench; then
  # Load time and peak memory against torch's loader on the same packages.
  step "loadbench (load_vs_torch.txt)" "$(cap 240 30)" \
    bash -c "$PY benchmarks/load_vs_torch.py --device cuda --repeat 2 > '$OUT/load_vs_torch.txt' 2>&1"
  cat "$OUT/load_vs_torch.txt"
fi

if has overhead; then
  step "overhead (run_overhead.txt)" "$(cap 150 40)" \
    bash -c "$PY benchmarks/run_overhead.py --device cuda > '$OUT/run_overhead.txt' 2>&1"
  cat "$OUT/run_overhead.txt"
fi

if has convbench; then
  step "convbench (conv_cuda.txt)" "$(cap 120 60)" \
    bash -c "$PY benchmarks/conv_cuda.py > '$OUT/conv_cuda.txt' 2>&1"
  cat "$OUT/conv_cuda.txt"
fi

if has opsbench; then
  # aotishim's cuda fallback ops one by one against torch eager on the same
  # tensors (benchmarks/cuda_ops_vs_eager.py): µs per call, ratio, max error.
  # It starts no op after its budget, so the table completes within the cap.
  limit=$(cap "${TIMEOUT_OPSBENCH:-150}" 60)
  step "opsbench (table cuda_ops.md, log cuda_ops.log)" "$limit" \
    bash -c "$PY benchmarks/cuda_ops_vs_eager.py --budget-s $((limit > 100 ? limit - 50 : limit / 2)) \
      --out '$OUT/cuda_ops.md' --json '$OUT/cuda_ops.json' --chart '$OUT/cuda_ops.png' \
      > '$OUT/cuda_ops.log' 2>&1"
  tail -45 "$OUT/cuda_ops.log"
fi

if has bench; then
  # The zoo table: aotishim device-resident against torch eager, torch.compile
  # and torch's runner, per model (benchmarks/cuda_zoo.py). It compiles in a
  # pool, caches by model, torch and source, and stops compiling in time to
  # measure what compiled within the budget left; a rerun continues from the
  # cache. Kernels compiled for the zoo tests are reused through Inductor's cache.
  echo "== benchmark (zoo)"
  budget=$((TOTAL_S - SECONDS - 20 - $(has profile && echo "${PROFILE_S:-100}" || echo 0) \
    - $(has kernels && echo "${KERNELS_S:-150}" || echo 0)))
  [ "$budget" -lt 120 ] && budget=120
  note "bench: budget $budget s"
  step "bench zoo (table zoo.md, log bench.txt, workers zoo-logs/)" "$((budget + 60))" \
    env TORCHINDUCTOR_CACHE_DIR="$AOTISHIM_TEST_MODEL_CACHE/cuda/inductor" \
    $PY benchmarks/cuda_vs_torch.py --zoo ${ZOO_MODELS:-} --budget-s "$budget" \
    --cache "$AOTISHIM_TEST_MODEL_CACHE/zoo-bench" --logs "$OUT/zoo-logs" \
    --json "$OUT/zoo.json" --out "$OUT/zoo.md" > "$OUT/bench.txt" 2>&1
  tail -60 "$OUT/bench.txt"
fi

if has profile; then
  # Where a device-resident run's host time goes, on models the bench phase
  # compiled (its cache): per variant and per C entry point.
  step "profile (call_profile.txt)" "$(cap "${PROFILE_S:-100}" 5)" \
    $PY benchmarks/cuda_call_profile.py --cache "$AOTISHIM_TEST_MODEL_CACHE/zoo-bench" \
    --models "${PROFILE_MODELS:-mlp_bf16}" --json "$OUT/call_profile.json" \
    > "$OUT/call_profile.txt" 2>&1
  cat "$OUT/call_profile.txt"
fi

if has kernels; then
  # Kernel time against call time per side (benchmarks/cuda_kernel_times.py):
  # is a model GPU-bound or host-bound, and which kernels differ from torch's.
  step "kernels (kernel_times.txt)" "$(cap "${KERNELS_S:-150}" 5)" \
    $PY benchmarks/cuda_kernel_times.py --cache "$AOTISHIM_TEST_MODEL_CACHE/zoo-bench" \
    --models "${KERNEL_MODELS:-resnet18}" ${KERNEL_SIDES:+--sides "$KERNEL_SIDES"} \
    > "$OUT/kernel_times.txt" 2>&1
  cat "$OUT/kernel_times.txt"
fi

if has pair; then
  echo "== benchmark (two models, aotishim against torch's runner)"
  step "bench pair (log bench_pair.txt)" "$(cap "${TIMEOUT_PAIR:-300}" 10)" \
    $PY benchmarks/cuda_vs_torch.py --json "$OUT/bench_pair.json" > "$OUT/bench_pair.txt" 2>&1
  tail -30 "$OUT/bench_pair.txt"
fi
note "done: status $status"
exit $status
