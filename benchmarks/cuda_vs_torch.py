"""One model, two runners, side by side on one GPU: aotishim (the model compiled
with aot_inductor.link_libtorch=False, run without libtorch) against torch's
own AOTInductor runner (torch._inductor.aoti_load_package).

Each side runs in a fresh process so load time and memory are its own:
load time (median of reloads after a first load), per-run latency (median over
many synchronized runs after warm-up, numpy in -> numpy out on both sides; the
torch side also timed device-to-device), peak device memory (cudaMemGetInfo
above the process's CUDA context baseline) and peak host RSS. Prints a table
with ratios and writes JSON.

    python benchmarks/cuda_vs_torch.py [--runs 300] [--json out.json]

``--zoo [a,b]`` measures the model zoo instead (benchmarks/cuda_zoo.py):
aotishim device-resident, torch eager, torch.compile and torch's runner,
with compile and load status and the error against eager per model.

    python benchmarks/cuda_vs_torch.py --zoo [--models a,b] [--jobs 8] [--budget-s 480] \
        [--out table.md] [--json zoo.json]
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np


# ---- measurement helpers shared by both children ----

def device_used_bytes() -> int:
    cudart = ctypes.CDLL("libcudart.so.13")
    free, total = ctypes.c_size_t(), ctypes.c_size_t()
    assert cudart.cudaMemGetInfo(ctypes.byref(free), ctypes.byref(total)) == 0
    return total.value - free.value


def rss_peak_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def timed_runs(fn, runs: int, warmup: int) -> list[float]:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


# ---- children ----

def load_inputs(args) -> list[np.ndarray]:
    """Inputs are stored as float32 (.npy has no bfloat16); the aotishim side
    casts them to the model's dtype, the torch side casts on the device."""
    xs = [np.load(p) for p in args.inputs]
    if args.dtype == "bfloat16" and args.child == "aotishim":
        import ml_dtypes
        xs = [x.astype(ml_dtypes.bfloat16) for x in xs]
    return xs


def child_aotishim(args) -> dict:
    import aotishim
    from aotishim import shim

    t0 = time.perf_counter()
    shim.delete(shim.empty_strided([1], None, "float32", "cuda:0"))  # CUDA context, plugin
    init_s = time.perf_counter() - t0
    base = device_used_bytes()
    peak = base
    inputs = load_inputs(args)

    t0 = time.perf_counter()
    model = aotishim.load(args.model, device="cuda")
    first_load = time.perf_counter() - t0
    peak = max(peak, device_used_bytes())
    outputs = model.run(*inputs)
    model.close()
    loads = []
    for _ in range(args.reloads):
        t0 = time.perf_counter()
        m = aotishim.load(args.model, device="cuda")
        loads.append(time.perf_counter() - t0)
        m.close()
    model = aotishim.load(args.model, device="cuda")
    times = timed_runs(lambda: model.run(*inputs), args.runs, args.warmup)
    peak = max(peak, device_used_bytes())
    model.close()
    np.savez(args.outputs, *[np.asarray(o, dtype=np.float32) for o in outputs])
    return {"init_s": init_s, "first_load_s": first_load, "load_s": statistics.median(loads),
            "run_host_s": statistics.median(times), "run_host_p90_s": float(np.percentile(times, 90)),
            "device_peak_bytes": peak - base, "host_rss_peak_bytes": rss_peak_bytes()}


def child_torch(args) -> dict:
    # The model links the C++ runtime statically on toolchains like the GPU
    # machine's and expects the process to provide a global one; aotishim's
    # runner does this itself, so the torch side gets the same.
    ctypes.CDLL("libstdc++.so.6", mode=ctypes.RTLD_GLOBAL)
    import torch

    t0 = time.perf_counter()
    torch.zeros(1, device="cuda")
    torch.cuda.synchronize()
    init_s = time.perf_counter() - t0
    base = device_used_bytes()
    peak = base
    inputs = load_inputs(args)
    tdtype = getattr(torch, args.dtype)

    t0 = time.perf_counter()
    model = torch._inductor.aoti_load_package(args.model)
    first_load = time.perf_counter() - t0
    peak = max(peak, device_used_bytes())

    def run_host():
        xs = [torch.from_numpy(x).to("cuda").to(tdtype) for x in inputs]
        out = model(*xs)
        return [o.float().cpu().numpy() for o in (out if isinstance(out, (list, tuple)) else [out])]

    outputs = run_host()
    del model
    loads = []
    for _ in range(args.reloads):
        t0 = time.perf_counter()
        m = torch._inductor.aoti_load_package(args.model)
        loads.append(time.perf_counter() - t0)
        del m
    model = torch._inductor.aoti_load_package(args.model)
    times = timed_runs(run_host, args.runs, args.warmup)
    xs = [torch.from_numpy(x).to("cuda").to(tdtype) for x in inputs]

    def run_device():
        model(*xs)
        torch.cuda.synchronize()

    dev_times = timed_runs(run_device, args.runs, args.warmup)
    peak = max(peak, device_used_bytes())
    np.savez(args.outputs, *[np.asarray(o, dtype=np.float32) for o in outputs])
    return {"init_s": init_s, "first_load_s": first_load, "load_s": statistics.median(loads),
            "run_host_s": statistics.median(times), "run_host_p90_s": float(np.percentile(times, 90)),
            "run_device_s": statistics.median(dev_times),
            "device_peak_bytes": peak - base, "host_rss_peak_bytes": rss_peak_bytes(),
            "torch_max_allocated_bytes": torch.cuda.max_memory_allocated()}


# ---- parent: compile, run both children, compare ----

def benchmark_models():
    import torch
    from torch import nn

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
    import models

    class WideMLP(nn.Module):
        """GEMM-heavy: two linears (1024 -> 4096 -> 1024) with a GELU, batch 64."""

        def __init__(self) -> None:
            super().__init__()
            self.fc1 = nn.Linear(1024, 4096)
            self.fc2 = nn.Linear(4096, 1024)

        def forward(self, x):
            return self.fc2(torch.nn.functional.gelu(self.fc1(x)))

    torch.manual_seed(0)
    chunk, chunk_in = models.build("linear_chunk_last_dim", torch.float32)
    wide = WideMLP().eval()
    return [("linear_chunk_last_dim", chunk, chunk_in),
            ("wide_mlp_bf16", wide.to(torch.bfloat16), (torch.randn(64, 1024).to(torch.bfloat16),))]


def compile_both(name, module, inputs, work: Path) -> tuple[Path, Path]:
    import torch
    from aotishim import export

    so = export.compile(module, inputs, work / "aotishim", name=name, device="cuda")
    ep = torch.export.export(module.to("cuda"), tuple(x.to("cuda") for x in inputs))
    pt2 = work / "torch" / f"{name}.pt2"
    pt2.parent.mkdir(parents=True, exist_ok=True)
    torch._inductor.aoti_compile_and_package(ep, package_path=str(pt2))
    return so, pt2


def run_child(side: str, model: Path, inputs: list[Path], outputs: Path, dtype: str, a) -> dict:
    cmd = [sys.executable, "-X", "faulthandler", __file__, "--child", side, "--model", str(model), "--outputs",
           str(outputs), "--runs", str(a.runs), "--warmup", str(a.warmup), "--reloads",
           str(a.reloads), "--dtype", dtype, "--inputs", *map(str, inputs)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError(f"{side} child failed (exit {r.returncode}):\n{r.stdout}\n{r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main() -> int:
    if any(arg == "--zoo" or arg.startswith("--zoo=") for arg in sys.argv[1:]):
        import cuda_zoo  # beside this file

        return cuda_zoo.main(sys.argv[1:])
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=300)
    p.add_argument("--warmup", type=int, default=30)
    p.add_argument("--reloads", type=int, default=5)
    p.add_argument("--json", type=Path)
    p.add_argument("--child", choices=["aotishim", "torch"])
    p.add_argument("--model")
    p.add_argument("--outputs")
    p.add_argument("--inputs", nargs="*", default=[])
    p.add_argument("--dtype", default="float32")
    a = p.parse_args()
    if a.child:
        result = child_aotishim(a) if a.child == "aotishim" else child_torch(a)
        print(json.dumps(result))
        return 0

    import torch

    results = []
    with tempfile.TemporaryDirectory(prefix="aotishim-bench-") as tmp:
        work = Path(tmp)
        for name, module, inputs in benchmark_models():
            so, pt2 = compile_both(name, module, inputs, work)
            in_paths = []
            for i, x in enumerate(inputs):
                path = work / f"{name}_in{i}.npy"
                arr = x.cpu()
                np.save(path, arr.float().numpy() if arr.dtype == torch.bfloat16 else arr.numpy())
                in_paths.append(path)
            dtype = str(inputs[0].dtype).removeprefix("torch.")
            ours = run_child("aotishim", so, in_paths, work / f"{name}_ours.npz", dtype, a)
            theirs = run_child("torch", pt2, in_paths, work / f"{name}_torch.npz", dtype, a)
            o, t = np.load(work / f"{name}_ours.npz"), np.load(work / f"{name}_torch.npz")
            max_diff = max(float(np.max(np.abs(o[k] - t[k]))) for k in o.files)
            results.append({"model": name, "aotishim": ours, "torch": theirs,
                            "max_abs_diff": max_diff})

    def ms(s):
        return f"{s * 1e3:8.3f}"

    def mib(b):
        return f"{b / 2**20:8.1f}"

    print(f"GPU: {torch.cuda.get_device_name(0)}  torch {torch.__version__}  runs={a.runs}")
    print(f"{'model':22s} {'metric':26s} {'aotishim':>10s} {'torch':>10s} {'ratio':>7s}")
    for r in results:
        o, t = r["aotishim"], r["torch"]
        rows = [("load (ms, median)", ms(o["load_s"]), ms(t["load_s"]), o["load_s"] / t["load_s"]),
                ("first load (ms)", ms(o["first_load_s"]), ms(t["first_load_s"]),
                 o["first_load_s"] / t["first_load_s"]),
                ("run numpy->numpy (ms)", ms(o["run_host_s"]), ms(t["run_host_s"]),
                 o["run_host_s"] / t["run_host_s"]),
                ("run p90 (ms)", ms(o["run_host_p90_s"]), ms(t["run_host_p90_s"]),
                 o["run_host_p90_s"] / t["run_host_p90_s"]),
                ("torch run on device (ms)", "", ms(t["run_device_s"]), float("nan")),
                ("device mem peak (MiB)", mib(o["device_peak_bytes"]), mib(t["device_peak_bytes"]),
                 o["device_peak_bytes"] / max(t["device_peak_bytes"], 1)),
                ("host RSS peak (MiB)", mib(o["host_rss_peak_bytes"]), mib(t["host_rss_peak_bytes"]),
                 o["host_rss_peak_bytes"] / t["host_rss_peak_bytes"])]
        for metric, x, y, ratio in rows:
            print(f"{r['model']:22s} {metric:26s} {x:>10s} {y:>10s} {ratio:7.2f}")
        print(f"{r['model']:22s} {'max |aotishim - torch|':26s} {r['max_abs_diff']:10.3g}")
    if a.json:
        a.json.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
