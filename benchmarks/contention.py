"""Time per call with the CPU contended: two CPU-bound processes beside the model.

For each model (zoo names, default the MLP and GPT-2) and each runtime
(aotishim; torch's AOTInductor runner with ``--torch``), ``--trials`` fresh
processes each:

1. load the model and time calls on a quiet machine (``--seconds`` of calls
   after a warm-up): the quiet time per call;
2. then, while this script runs ``--burners`` busy-looping processes, time
   calls again for as long: the contended time per call.

A row is one process: the contended time per call over the quiet one, as the
mean (a stall of a few calls shows) and as the median. On a machine with N
cores and N burners a runtime that shares the cores fairly runs at about 2x:
each of its threads gets half a core. A spinning OpenMP barrier (threads
waiting for a team member the scheduler has put off) shows as far more.

    python benchmarks/contention.py [--models mlp_static,hf_gpt2] [--trials 10] [--torch]
                                    [--json results/contention.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path


HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from zoo_arrays import load_sets  # noqa: E402  (beside this file)

ROOT = HERE.parent
SOURCE_PACKAGE = [str(ROOT / "python")] if any((ROOT / "python" / "aotishim").glob("_core*")) else []


def timed_calls(call, seconds: float) -> list[float]:
    """Per-call times (ms) of as many calls as fit in ``seconds`` (at least 5)."""
    times: list[float] = []
    end = time.perf_counter() + seconds
    while len(times) < 5 or time.perf_counter() < end:
        t = time.perf_counter()
        call()
        times.append((time.perf_counter() - t) * 1e3)
    return times


def summary(times: list[float]) -> dict:
    return {"calls": len(times), "mean_ms": statistics.fmean(times),
            "median_ms": statistics.median(times), "max_ms": max(times)}


# ---- the measuring process (fresh per trial) ----
def worker(kind: str, path: str, io: str, seconds: float) -> None:
    """Quiet timing, then a handshake on stdin/stdout, then contended timing."""
    inputs = load_sets(Path(io) / "inputs.npz")[0]
    if kind == "aotishim":
        import aotishim
        model = aotishim.load(path)
        call = lambda: model.run(*inputs)  # noqa: E731
    else:
        import torch
        runner = torch._inductor.aoti_load_package(path)
        tensors = [torch.from_numpy(a) for a in inputs]
        call = lambda: runner(*tensors)  # noqa: E731
    for _ in range(20):
        call()
    quiet = summary(timed_calls(call, seconds))
    print("quiet", flush=True)
    sys.stdin.readline()  # the burners are running
    contended = summary(timed_calls(call, seconds))
    print(json.dumps({"quiet": quiet, "contended": contended}), flush=True)


def burn() -> None:
    while True:
        pass


def one_trial(kind: str, path: Path, io: Path, burners: int, seconds: float, env: dict) -> dict:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", kind, str(path), str(io),
           str(seconds)]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
    burning: list[subprocess.Popen] = []
    try:
        if proc.stdout.readline().strip() != "quiet":
            proc.wait(timeout=60)
            return {"crash": f"exit {proc.returncode} before the quiet timing ended"}
        burning = [subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--burn"])
                   for _ in range(burners)]
        time.sleep(0.5)  # let the scheduler see them as CPU-bound
        proc.stdin.write("go\n")
        proc.stdin.flush()
        # A stalling runtime can take minutes for the contended window's first calls.
        line = proc.stdout.readline()
        proc.wait(timeout=600)
        if proc.returncode != 0 or not line:
            return {"crash": f"exit {proc.returncode}"}
        r = json.loads(line)
    finally:
        for b in burning:
            b.kill()
            b.wait()
        if proc.poll() is None:
            proc.kill()
    r["mean_ratio"] = r["contended"]["mean_ms"] / r["quiet"]["mean_ms"]
    r["median_ratio"] = r["contended"]["median_ms"] / r["quiet"]["median_ms"]
    return r


def prepare(name: str, cache: Path, want_torch: bool) -> tuple[Path, Path | None, Path]:
    """The compiled model for aotishim (and torch's runner), and its inputs (coverage.py's cache)."""
    from coverage import Compiler, cache_key, expected_outputs

    from aotishim.zoo import real

    zm = real.build(name)
    compiler = Compiler(zm, cache / f"{name}-{cache_key(name)}")
    so = compiler.aotishim()
    pt2 = compiler.torch() if want_torch else None
    if not (compiler.directory / "inputs.npz").exists():
        expected_outputs(zm, compiler.directory, repeat=3)
    return so, pt2, compiler.directory


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default="mlp_static,hf_gpt2")
    p.add_argument("--trials", type=int, default=10)
    p.add_argument("--burners", type=int, default=os.cpu_count() or 2)
    p.add_argument("--seconds", type=float, default=2.0, help="of calls per timing window")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    p.add_argument("--torch", action="store_true", help="also torch's AOTInductor runner")
    p.add_argument("--cache", type=Path, default=ROOT / "build" / "bench-zoo")
    p.add_argument("--json", type=Path)
    p.add_argument("--worker", nargs=4, help=argparse.SUPPRESS)
    p.add_argument("--burn", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.burn:
        burn()
    if args.worker:
        kind, path, io, seconds = args.worker
        worker(kind, path, io, float(seconds))
        return 0

    import torch
    torch.set_num_threads(args.threads)  # Inductor plans parallel loops by it
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads),
               PYTHONPATH=os.pathsep.join(filter(None, [*SOURCE_PACKAGE, os.environ.get("PYTHONPATH")])))
    rows = []
    for name in args.models.split(","):
        so, pt2, io = prepare(name, args.cache, args.torch)
        sides = [("aotishim", so)] + ([("torch", pt2)] if pt2 else [])
        for trial in range(args.trials):
            for kind, path in sides:
                r = one_trial(kind, path, io, args.burners, args.seconds, env)
                r.update(model=name, runtime=kind, trial=trial)
                rows.append(r)
                if "crash" in r:
                    print(f"{name:10s} {kind:8s} #{trial}: {r['crash']}", flush=True)
                else:
                    print(f"{name:10s} {kind:8s} #{trial}: quiet {r['quiet']['mean_ms']:.3f} ms, "
                          f"contended {r['contended']['mean_ms']:.3f} ms (mean {r['mean_ratio']:.2f}x, "
                          f"median {r['median_ratio']:.2f}x, worst call {r['contended']['max_ms']:.1f} ms)",
                          flush=True)
    print()
    print("| model | runtime | processes | contended / quiet, mean: worst | median of processes |")
    print("|---|---|---:|---:|---:|")
    for name in args.models.split(","):
        for kind in ("aotishim", "torch"):
            ratios = [r["mean_ratio"] for r in rows
                      if r["model"] == name and r["runtime"] == kind and "mean_ratio" in r]
            if ratios:
                print(f"| {name} | {kind} | {len(ratios)} | {max(ratios):.2f} | "
                      f"{statistics.median(ratios):.2f} |")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"machine": platform.processor() or platform.machine(),
                                         "cpus": os.cpu_count(), "threads": args.threads,
                                         "burners": args.burners, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
