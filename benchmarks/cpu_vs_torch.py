"""aotishim vs PyTorch's own AOTInductor runner on the CPU, side by side.

Each model is exported once and compiled twice: once for aotishim
(``link_libtorch=False``) and once the usual way for torch's runner
(``torch._inductor.aoti_load_package``). Every measurement runs in a fresh
process per runtime, so import cost and peak memory are the runtime's own:

* ``import+load``: wall time from process start of the measurement to a loaded model
* ``first run`` and ``median run`` (after warm-up) latency
* ``switch``: one load + run + close cycle (an app switching models)
* ``peak RSS``: the process's maximum resident set size

Ratios are aotishim / torch: below 1 means aotishim is faster or lighter.

    python benchmarks/cpu_vs_torch.py [--runs 200] [--out results.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORKER = r"""
import json, statistics, sys, time
t0 = time.perf_counter()
kind, path, inputs_path, runs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
import numpy as np
inputs = [a for a in np.load(inputs_path).values()]
if kind == "aotishim":
    import aotishim
    load = lambda: aotishim.load(path)
    call = lambda m: m.run(*inputs)
    close = lambda m: m.close()
    as_numpy = lambda outs: [np.asarray(o, dtype=np.float64) for o in outs]
else:
    import torch
    tin = [torch.from_numpy(a) for a in inputs]
    load = lambda: torch._inductor.aoti_load_package(path)
    call = lambda m: m(*tin)
    close = lambda m: None
    as_numpy = lambda outs: [o.detach().double().numpy() for o in (outs if isinstance(outs, (list, tuple)) else [outs])]
model = load()
t_load = time.perf_counter() - t0
t = time.perf_counter(); outs = call(model); first = time.perf_counter() - t
for _ in range(10):
    call(model)
times = []
for _ in range(runs):
    t = time.perf_counter(); call(model); times.append(time.perf_counter() - t)
close(model)
cycles = []
for _ in range(5):
    t = time.perf_counter(); m = load(); call(m); close(m); cycles.append(time.perf_counter() - t)
print(json.dumps({
    "import_load": t_load, "first": first,
    "median": statistics.median(times), "switch": statistics.median(cycles),
    # VmHWM, not ru_maxrss: the latter keeps the forking parent's peak across exec.
    "peak_rss_mb": next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM")) / 1024,
    "outputs": [o.tolist() for o in as_numpy(outs)],
}))
"""


def models():
    import torch

    class MLP(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.l1 = torch.nn.Linear(512, 1024)
            self.l2 = torch.nn.Linear(1024, 1024)
            self.l3 = torch.nn.Linear(1024, 256)

        def forward(self, x):
            return self.l3(torch.relu(self.l2(torch.relu(self.l1(x)))))

    class LinearChunk(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(7, 16)
            self.b = torch.nn.Linear(8, 5)

        def forward(self, x):
            first, second = self.a(x).chunk(2, dim=-1)
            return self.b(second) + first[:, :5]

    torch.manual_seed(0)
    return {
        "mlp 512-1024-1024-256, batch 32": (MLP().eval(), (torch.randn(32, 512),)),
        "linear-chunk 7-16-5, batch 12": (LinearChunk().eval(), (torch.randn(12, 7),)),
    }


def compile_pair(name, module, args, workdir: Path):
    import torch
    from aotishim import export

    slug = "".join(c if c.isalnum() else "_" for c in name.split(",")[0])
    ep = torch.export.export(module, args)  # one program, compiled for each runtime
    ours = export.compile_exported(ep, workdir / "aotishim", name=slug)
    (workdir / "torch").mkdir(parents=True, exist_ok=True)
    theirs = torch._inductor.aoti_compile_and_package(
        ep, package_path=str(workdir / "torch" / f"{slug}.pt2"))
    return ours, Path(theirs)


def measure(kind, path, inputs_path, runs, env):
    out = subprocess.run([sys.executable, "-c", WORKER, kind, str(path), str(inputs_path), str(runs)],
                         capture_output=True, text=True, env=env, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{kind} worker failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out", type=Path)
    ns = parser.parse_args()

    import numpy as np
    import torch

    env = dict(os.environ, OMP_NUM_THREADS=str(ns.threads), OPENBLAS_NUM_THREADS=str(ns.threads))
    torch.set_num_threads(ns.threads)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for name, (module, args) in models().items():
            ours, theirs = compile_pair(name, module, args, work)
            inputs_path = work / "inputs.npz"
            np.savez(inputs_path, *[a.numpy() for a in args])
            with torch.no_grad():
                expected = module(*args).double().numpy()
            row = {"model": name}
            for kind, path in (("aotishim", ours), ("torch", theirs)):
                r = measure(kind, path, inputs_path, ns.runs, env)
                r["max_abs_err"] = float(np.max(np.abs(np.asarray(r.pop("outputs")[0]) - expected)))
                row[kind] = r
            results.append(row)

    cols = ["import_load", "first", "median", "switch", "peak_rss_mb"]
    print(f"\n{'model':34} {'metric':12} {'aotishim':>12} {'torch':>12} {'aotishim/torch':>15}")
    for row in results:
        for c in cols:
            a, t = row["aotishim"][c], row["torch"][c]
            unit = "MB" if c == "peak_rss_mb" else "ms"
            scale = 1 if unit == "MB" else 1e3
            print(f"{row['model']:34} {c:12} {a * scale:10.3f}{unit} {t * scale:10.3f}{unit} {a / t:14.2f}")
        print(f"{row['model']:34} {'max err':12} {row['aotishim']['max_abs_err']:12.2e} "
              f"{row['torch']['max_abs_err']:12.2e}")
    if ns.out:
        ns.out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
