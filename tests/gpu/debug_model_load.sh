#!/usr/bin/env bash
# A crash while loading a CUDA model, on the GPU machine: build and install,
# compile one model (and keep its .pt2 to list what it packs), then load and
# run it under cuda-gdb for a native backtrace. Output to $OUT/debug.txt.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT"
OUT=${OUT:-$ROOT/gpu-out}
mkdir -p "$OUT"
PY=${PYTHON:-python3}
PHASES=build bash tests/gpu/run_on_h200.sh > /dev/null 2>&1 || echo "build step failed"
exec > "$OUT/debug.txt" 2>&1
cat "$OUT/env.txt"
export AOTISHIM_TEST_MODEL_CACHE=/tmp/dbg-models
$PY - <<'PY'
import sys, zipfile, torch
sys.path.insert(0, "tests/gpu")
import cuda_models
c = cuda_models.compile_cuda("linear_chunk_last_dim", "float32")
print("so:", c.so)
from aotishim import export, zoo
m, x = zoo.build("linear_chunk_last_dim")
ep = torch.export.export(m.cuda(), tuple(t.cuda() for t in x))
torch._inductor.aoti_compile_and_package(ep, package_path="/tmp/dbg.pt2",
                                         inductor_configs=dict(export.INDUCTOR_CONFIGS))
print("\n".join(zipfile.ZipFile("/tmp/dbg.pt2").namelist()))
PY
SO=$(ls /tmp/dbg-models/cuda/*.so | head -1)
echo "== strings mentioning cubin"; strings "$SO" | grep -i "cubin\|\.fatbin" | head -10
cd /tmp
cat > /tmp/load.py <<PY
import sys, numpy as np, aotishim
print("loading", flush=True)
m = aotishim.load("$SO", device="cuda")
print("loaded", m.input_names, flush=True)
print(m.run(np.random.rand(12, 7).astype(np.float32)), flush=True)
m.close()
print("closed", flush=True)
PY
echo "== plain run"; AOTISHIM_LOG=debug timeout 120 $PY -X faulthandler /tmp/load.py 2>&1 | tail -30
echo "== cuda-gdb"
timeout 200 cuda-gdb -batch -ex run -ex "bt 40" --args $PY /tmp/load.py 2>&1 | grep -v "^\[New Thread\|^\[Thread" | tail -60
