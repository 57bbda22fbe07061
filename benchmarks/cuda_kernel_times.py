"""Device time against call time, per side, for models the zoo benchmark
compiled (``cuda_vs_torch.py --zoo`` caches them): is a model's call bound by
the GPU's kernels or by the host that queues them, and which kernels differ
between aotishim and torch?

Each side runs in a fresh process on the cached model's first input set:

* ``aotishim``: ``model.run(*torch_tensors, outputs="dlpack")``;
  ``aotishim:legacy`` and ``aotishim:heuristic`` the same with
  ``AOTISHIM_CUDNN_API=legacy`` / ``AOTISHIM_CUDNN_ALGO=heuristic``;
(``AOTISHIM_BENCH_DEVICE=cpu``: a dry run of the code path on the cpu.)

* ``eager``, ``torch_compile`` (of the saved exported program) and
  ``torch_aoti`` (torch's own runner of the same program).

Per side: the call's time by CUDA events (as the zoo table measures it),
then, under ``torch.profiler`` (CUPTI sees every kernel of the process,
cuDNN's and Triton's launched by aotishim included), the kernels' summed
device time per call, their count, and the kernels that take the most time.
``call - kernels`` is time the GPU waited for the host (one stream, so
kernels do not overlap).

    python benchmarks/cuda_kernel_times.py --cache DIR --models resnet18[,vit_tiny]
        [--sides aotishim,eager,torch_aoti] [--calls 50] [--top 8]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import cuda_zoo  # noqa: E402  (beside this file)
from zoo_arrays import load_sets  # noqa: E402

SIDES = ("aotishim", "aotishim:legacy", "aotishim:heuristic", "aotishim:graphs", "eager",
         "torch_compile", "torch_aoti")
ENV = {"aotishim:legacy": {"AOTISHIM_CUDNN_API": "legacy"},
       "aotishim:heuristic": {"AOTISHIM_CUDNN_ALGO": "heuristic"}}


def model_dir(cache: Path, name: str) -> Path | None:
    return cuda_zoo.cached_model_dir(cache, name, "inputs.npz")


def make_call(side: str, name: str, directory: Path):
    """The side's call on the first input set, ready to time."""
    torch = cuda_zoo.torch_no_tf32()
    xs = [cuda_zoo.to_device(a) for a in load_sets(directory / "inputs.npz")[0]]
    if side.startswith("aotishim"):
        import aotishim

        model = aotishim.load(directory / "aotishim.so", device=cuda_zoo.DEVICE,
                              cuda_graphs=side == "aotishim:graphs")
        return lambda: model.run(*xs, outputs="dlpack")
    if side == "eager":
        from aotishim.zoo import real

        module = real.build(name).module.to(cuda_zoo.DEVICE)
        return lambda: module(*xs)
    if side == "torch_compile":
        program = torch.compile(torch.export.load(str(directory / "program.pt2")).module())
        return lambda: program(*xs)
    if side == "torch_aoti":
        runner = torch._inductor.aoti_load_package(str(directory / "torch.pt2"))
        return lambda: runner(*xs)
    raise ValueError(f"unknown side {side!r}")


def child(side: str, name: str, directory: Path, calls: int, top: int) -> dict:
    torch = cuda_zoo.torch_no_tf32()
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    with torch.no_grad():
        call = make_call(side, name, directory)
        call_us = cuda_zoo.per_call_us(call)
        for _ in range(5):
            call()
        cuda_zoo.synchronize()
        # (A dry run on the cpu profiles torch's cpu ops instead: the code
        # path, not a meaningful figure.)
        activity, kind = ((ProfilerActivity.CUDA, DeviceType.CUDA) if cuda_zoo.ON_CUDA
                          else (ProfilerActivity.CPU, DeviceType.CPU))
        with profile(activities=[activity]) as prof:
            for _ in range(calls):
                call()
            cuda_zoo.synchronize()
    kernels = {}
    for e in prof.events():
        if e.device_type != kind:
            continue
        k = kernels.setdefault(e.name, [0, 0.0])
        k[0] += 1
        k[1] += e.device_time_total if cuda_zoo.ON_CUDA else e.cpu_time_total
    total = sum(t for _, t in kernels.values()) / calls
    count = sum(n for n, _ in kernels.values()) / calls
    ranked = sorted(kernels.items(), key=lambda kv: -kv[1][1])[:top]
    return {"side": side, "call_us": call_us, "kernel_us": total, "kernels": count,
            "top": [(n[:90], c / calls, t / calls) for n, (c, t) in ranked]}


def run_child(side: str, name: str, directory: Path, a) -> dict:
    env = dict(os.environ, **ENV.get(side, {}))
    cmd = [sys.executable, __file__, "--child", side, "--models", name, "--cache", str(a.cache),
           "--calls", str(a.calls), "--top", str(a.top)]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=a.timeout_s, env=env)
    except subprocess.TimeoutExpired:
        return {"side": side, "error": f"timed out after {a.timeout_s} s"}
    if done.returncode != 0:
        return {"side": side, "error": f"exit {done.returncode}: {done.stderr.strip()[-300:]}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cache", type=Path, required=True)
    p.add_argument("--models", default="resnet18")
    p.add_argument("--sides", default="aotishim,aotishim:legacy,eager,torch_aoti")
    p.add_argument("--calls", type=int, default=50)
    p.add_argument("--top", type=int, default=8)
    p.add_argument("--timeout-s", type=float, default=240)
    p.add_argument("--child", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    names = [n for n in a.models.split(",") if n]
    if a.child:
        print(json.dumps(child(a.child, names[0], model_dir(a.cache, names[0]), a.calls, a.top)))
        return 0
    sides = [s for s in a.sides.split(",") if s]
    unknown = sorted(set(sides) - set(SIDES))
    if unknown:
        p.error(f"unknown sides {unknown}: choose from {', '.join(SIDES)}")
    found = 0
    for name in names:
        directory = model_dir(a.cache, name)
        if directory is None:
            print(f"{name}: not compiled under {a.cache} (cuda_vs_torch.py --zoo compiles it)")
            continue
        found += 1
        print(f"\n== {name}: µs per call; `waits` = call - kernels (the GPU waiting for the host)")
        print("| side | call | kernels | waits | kernels/call |")
        print("|---|---:|---:|---:|---:|")
        results = [run_child(s, name, directory, a) for s in sides]
        for r in results:
            if "error" in r:
                print(f"| {r['side']} | {r['error']} ||||")
                continue
            print(f"| {r['side']} | {r['call_us']:.1f} | {r['kernel_us']:.1f} | "
                  f"{r['call_us'] - r['kernel_us']:.1f} | {r['kernels']:.1f} |")
        for r in results:
            if "error" in r:
                continue
            print(f"-- {name} {r['side']}: top kernels (calls/call, µs/call)")
            for n, c, t in r["top"]:
                print(f"   {t:8.1f} µs  x{c:.1f}  {n}")
        sys.stdout.flush()
    return 0 if found else 1


if __name__ == "__main__":
    sys.exit(main())
