"""Which real models run on aotishim's CPU device, how exactly, and how fast.

For every model of :mod:`aotishim.zoo.real` (or ``--models a,b``):

1. export it with ``torch.export`` (its dynamic dims, if any) and compile the
   one exported program twice with AOTInductor: for aotishim (the configs of
   :func:`aotishim.export.inductor_configs`: no libtorch, weights in a blob)
   and the usual way for torch's own runner. Both are cached under
   ``--cache`` by model, torch version, device, thread count and the
   model's source. Inductor plans its kernels' parallel loops by torch's
   thread count at compile time (with one thread: no OpenMP at all) and
   picks some lowerings by it (a scatter-add becomes a fallback call only
   with several threads), so ``--threads`` applies to compiling too;
2. run it on aotishim in a fresh process: the shims it lacks (what
   ``python -m aotishim info`` lists), whether it loads, the largest error
   against eager over every input set, tensors left alive after close, and
   the median time per call;
3. time torch eager (this process) and torch's AOTInductor runner (a fresh
   process: once aotishim's shims are global, a libtorch-linked model loaded
   there could bind to them).

A failure at any step is recorded in that model's row; the table always
completes. Errors are relative to the output's scale (max |eager|): float32
passes at 1e-4, bfloat16 at 2e-2; integer outputs must match exactly.

    python benchmarks/coverage.py [--models a,b] [--repeat 50] [--out table.md] [--json r.json]
    python benchmarks/coverage.py --merge part1.json part2.json   # one table from several runs
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np

from zoo_arrays import load_sets, max_error, save_sets  # beside this file

ROOT = Path(__file__).resolve().parents[1]
# The source tree's package when it is built there (a development build),
# else the installed one.
SOURCE_PACKAGE = [str(ROOT / "python")] if any((ROOT / "python" / "aotishim").glob("_core*")) else []
TOLERANCE = {"float32": 1e-4, "bfloat16": 2e-2}
WORKER_TIMEOUT_S = 600


def median_ms(call, repeat: int, warmup_s: float = 0.2, min_s: float = 1.0,
              budget_s: float = 5.0, chunks: int = 5) -> float:
    """The quietest stretch's median time per call, in ms.

    Calls run for at least ``repeat`` calls and at least ``min_s`` (fewer,
    at least 3, once ``budget_s`` is spent: some models take seconds per call
    in eager bfloat16), after ``warmup_s`` of untimed calls (at least two).
    The calls are cut into ``chunks`` consecutive stretches and the lowest
    stretch median is the result. On this kind of VM a model's speed jumps
    between two levels for tenths of a second at a time (a one-thread
    0.25 ms decoder ran 0.41 ms for whole half-second windows, in either
    runtime), so a median over all calls measured the neighbours' share as
    much as the model; noise only ever adds time, so the quietest stretch is
    the model's own speed."""
    started = time.perf_counter()
    warm = 0
    while warm < 2 or time.perf_counter() - started < warmup_s:
        call()
        warm += 1
    started = time.perf_counter()
    times: list[float] = []
    while len(times) < 3 or (time.perf_counter() - started < budget_s
                             and (len(times) < repeat or time.perf_counter() - started < min_s)):
        t = time.perf_counter()
        call()
        times.append(time.perf_counter() - t)
    size = max(len(times) // chunks, 1)
    stretches = [times[i:i + size] for i in range(0, len(times) - size + 1, size)]
    return min(statistics.median(s) for s in stretches) * 1e3


# ---- workers: one fresh process per model and runtime ----
def worker_aotishim(so: Path, io: Path, repeat: int) -> dict:
    """Never imports torch: only aotishim and numpy."""
    import aotishim
    from aotishim import _core

    result: dict = {"missing": list(_core.inspect_library(str(so))["missing_shims"])}
    inputs, expected = load_sets(io / "inputs.npz"), load_sets(io / "expected.npz")
    try:
        model = aotishim.load(so)
    except aotishim.ShimError as e:
        result["load_error"] = str(e)
        return result
    try:
        result["loaded"] = True
        result["error"] = max(max_error(model.run(*x), e) for x, e in zip(inputs, expected))
        result["ms"] = median_ms(lambda: model.run(*inputs[0]), repeat)
    except aotishim.ShimError as e:
        result["run_error"] = str(e)
    finally:
        result["leaks"] = len(model.close())
        result["live_tensors"] = aotishim.memory_stats()["live_tensors"]
    return result


def worker_torch(pt2: Path, io: Path, repeat: int) -> dict:
    import torch

    def tensor(a: np.ndarray) -> torch.Tensor:
        if a.dtype.name == "bfloat16":
            return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
        return torch.from_numpy(a)

    inputs = [[tensor(a) for a in s] for s in load_sets(io / "inputs.npz")]
    expected = load_sets(io / "expected.npz")
    runner = torch._inductor.aoti_load_package(str(pt2))
    errors = []
    for x, e in zip(inputs, expected):
        outs = torch.utils._pytree.tree_leaves(runner(*x))
        errors.append(max_error([o.detach().float().numpy() for o in outs], e))
    return {"error": max(errors), "ms": median_ms(lambda: runner(*inputs[0]), repeat)}


def run_worker(kind: str, path: Path, io: Path, repeat: int, threads: int) -> dict:
    env = dict(os.environ, OMP_NUM_THREADS=str(threads), OPENBLAS_NUM_THREADS=str(threads),
               PYTHONPATH=os.pathsep.join(filter(None, [*SOURCE_PACKAGE,
                                                        os.environ.get("PYTHONPATH")])))
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", kind, str(path), str(io),
           str(repeat)]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, env=env,
                             timeout=WORKER_TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return {"crash": f"timed out after {WORKER_TIMEOUT_S} s"}
    lines = out.stdout.strip().splitlines()
    if out.returncode != 0 or not lines:
        tail = (out.stderr.strip().splitlines() or ["no output"])[-1]
        return {"crash": f"exit {out.returncode}: {tail}"}
    return json.loads(lines[-1])


# ---- compiling (cached) ----
def cache_key(name: str) -> str:
    import torch

    from aotishim import export
    from aotishim.zoo import real

    h = hashlib.sha256()
    # Inductor plans parallel loops and some lowerings by torch's thread
    # count: models compiled for other counts differ.
    h.update(f"{name}|{torch.__version__}|cpu|{torch.get_num_threads()} threads|"
             f"{sorted(export.inductor_configs('cpu').items())}".encode())
    h.update(inspect.getsource(real._BUILDERS[name][0]).encode())
    return h.hexdigest()[:12]


class Compiler:
    """Exports a zoo model once, on first need, and compiles it for aotishim
    (``aotishim.so`` + blob, with the package kept for its generated source)
    or for torch's runner (``torch.pt2``); a file already there is reused."""

    def __init__(self, zm, directory: Path) -> None:
        self.zm, self.directory, self._ep = zm, directory, None
        self.seconds = 0.0

    def _exported(self):
        import torch

        if self._ep is None:
            self._ep = torch.export.export(self.zm.module, self.zm.args,
                                           dynamic_shapes=self.zm.dynamic_shapes)
        return self._ep

    def aotishim(self) -> Path:
        import torch

        from aotishim import export
        from aotishim.model import extract_package

        so = self.directory / "aotishim.so"
        if not so.exists():
            started = time.perf_counter()
            self.directory.mkdir(parents=True, exist_ok=True)
            package = torch._inductor.aoti_compile_and_package(
                self._exported(), package_path=str(self.directory / "aotishim.pt2"),
                inductor_configs=export.inductor_configs("cpu"))
            with zipfile.ZipFile(package) as archive:
                extract_package(archive, self.directory / "aotishim.tmp.so",
                                self.directory / "aotishim.weights.blob")
            os.replace(self.directory / "aotishim.tmp.so", so)  # last: it marks completion
            self.seconds += time.perf_counter() - started
        return so

    def torch(self) -> Path:
        import torch

        pt2 = self.directory / "torch.pt2"
        if not pt2.exists():
            started = time.perf_counter()
            tmp = self.directory / "torch.tmp.pt2"
            torch._inductor.aoti_compile_and_package(self._exported(), package_path=str(tmp))
            os.replace(tmp, pt2)
            self.seconds += time.perf_counter() - started
        return pt2


def expected_outputs(zm, directory: Path, repeat: int) -> float:
    """Writes the inputs and eager's outputs for every input set; returns eager's ms per call."""
    import torch

    def numpy(t: torch.Tensor) -> np.ndarray:
        t = t.detach().contiguous()
        if t.dtype == torch.bfloat16:
            import ml_dtypes
            return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
        return t.numpy()

    with torch.no_grad():
        expected = [[numpy(o) for o in torch.utils._pytree.tree_leaves(zm.module(*x))]
                    for x in zm.input_sets()]
        eager_ms = median_ms(lambda: zm.module(*zm.args), repeat)
    save_sets(directory / "inputs.npz", [[numpy(a) for a in x] for x in zm.input_sets()])
    save_sets(directory / "expected.npz", expected)
    return eager_ms


def measure(name: str, cache: Path, repeat: int, threads: int, torch_runner: str,
            rounds: int = 1) -> dict:
    """One model's row. ``torch_runner``: time torch's runner for "all"
    models, only those aotishim "loaded" (saves half the compiling), or "none".
    ``rounds`` > 1 times both sides again, alternating, and keeps each side's
    fastest median."""
    from aotishim.zoo import real

    row: dict = {"model": name, "cpu": cpu_model()}
    step = "build"
    try:
        zm = real.build(name)
        row.update(family=zm.family, dtype=zm.dtype)
        compiler = Compiler(zm, cache / f"{name}-{cache_key(name)}")
        step = "compile"
        so = compiler.aotishim()
        step = "eager"
        row["eager_ms"] = expected_outputs(zm, compiler.directory, repeat)
        row["aotishim"] = run_worker("aotishim", so, compiler.directory, repeat, threads)
        wanted = torch_runner == "all" or (torch_runner == "loaded" and (
            row["aotishim"].get("loaded") or (compiler.directory / "torch.pt2").exists()))
        if wanted:  # with "loaded", also where torch's package is already compiled
            step = "torch_compile"
            pt2 = compiler.torch()
            row["torch"] = run_worker("torch", pt2, compiler.directory, repeat, threads)
        # More rounds, the two sides alternating: each keeps its fastest
        # median (noise on a shared machine only ever adds time).
        for _ in range(rounds - 1):
            for side, path in (("aotishim", so), ("torch", compiler.directory / "torch.pt2")):
                if "ms" not in row.get(side, {}):
                    continue
                again = run_worker(side, path, compiler.directory, repeat, threads)
                if "ms" in again:
                    row[side].setdefault("ms_rounds", [row[side]["ms"]]).append(again["ms"])
                    row[side]["ms"] = min(row[side]["ms_rounds"])
        row["compile_s"] = compiler.seconds
    except Exception as e:  # noqa: BLE001 - one model's failure is one row
        message = (str(e).strip().splitlines() or [""])[0][:200]
        row[f"{step}_error"] = f"{type(e).__name__}: {message}"
    return row


def _zoo_names() -> tuple[str, ...]:
    sys.path[:0] = SOURCE_PACKAGE
    from aotishim.zoo import real

    return real.NAMES


# ---- the table ----
def _ms(value) -> str:
    return "" if value is None else f"{value:.3f}" if value < 10 else f"{value:.1f}"


def table(rows: list[dict]) -> str:
    head = ["model", "family", "dtype", "compiles", "loads", "missing shims", "max err",
            "aotishim ms", "eager ms", "torch AOTI ms", "aotishim / torch AOTI"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * 3 + ":-:|:-:|---|" + "---:|" * 5]
    for r in rows:
        ours, theirs = r.get("aotishim", {}), r.get("torch", {})
        if "compile_error" in r:
            compiles, loads = f"no: {r['compile_error']}", ""
        elif "build_error" in r or "eager_error" in r:
            compiles = loads = ""
            ours = {"run_error": r.get("build_error") or "eager: " + r["eager_error"]}
        else:
            compiles = "yes"
            if ours.get("loaded"):
                loads = "yes"
            elif "crash" in ours:
                loads = f"crash: {ours['crash']}"
            else:
                loads = "no"
        missing = ", ".join(f"`{m}`" for m in ours.get("missing", []))
        if not ours.get("missing") and "load_error" in ours:
            missing = ours["load_error"].splitlines()[0]
        err = ""
        if "run_error" in ours:
            err = "run failed: " + ours["run_error"].splitlines()[0][:120]
        elif "error" in ours:
            tol = TOLERANCE.get(r.get("dtype", ""), 1e-4)
            err = f"{ours['error']:.1e}" + ("" if ours["error"] <= tol else " FAIL")
            if ours.get("leaks") or ours.get("live_tensors"):
                err += f" ({ours.get('leaks')} leaked, {ours.get('live_tensors')} live)"
        if "crash" in theirs:
            torch_ms = f"failed: {theirs['crash'][:80]}"
        elif "torch_compile_error" in r:
            torch_ms = f"compile failed: {r['torch_compile_error'][:80]}"
        else:
            torch_ms = _ms(theirs.get("ms"))
        ratio = (f"{ours['ms'] / theirs['ms']:.2f}" if ours.get("ms") and theirs.get("ms")
                 else "")
        spread = round_ratios(r)
        if ratio and len(spread) > 1:
            ratio += f" ({_ratio(min(spread))}-{_ratio(max(spread))})"
        lines.append("| " + " | ".join([
            r["model"], r.get("family", ""), r.get("dtype", ""), compiles, loads, missing, err,
            _ms(ours.get("ms")), _ms(r.get("eager_ms")), torch_ms, ratio]) + " |")
    return "\n".join(lines)


def _ratio(x: float) -> str:
    return f"{x:.2f}" if x >= 0.01 else f"{x:.0e}"  # a stalled round's ratio


def round_ratios(row: dict) -> list[float]:
    """aotishim / torch's runner in each alternating round: the spread is the
    noise estimate printed beside the ratio (both sides timed in turn, so a
    busy spell slows one round of each rather than one side)."""
    ours = row.get("aotishim", {}).get("ms_rounds", [])
    theirs = row.get("torch", {}).get("ms_rounds", [])
    return [a / b for a, b in zip(ours, theirs) if a and b]


def geometric_mean_ratio(rows: list[dict]) -> tuple[float, int] | None:
    ratios = [r["aotishim"]["ms"] / r["torch"]["ms"] for r in rows
              if r.get("aotishim", {}).get("ms") and r.get("torch", {}).get("ms")]
    if not ratios:
        return None
    return statistics.geometric_mean(ratios), len(ratios)


def summary(rows: list[dict]) -> str:
    loaded = [r for r in rows if r.get("aotishim", {}).get("loaded")]
    counts: dict[str, list[str]] = {}
    for r in rows:
        for m in r.get("aotishim", {}).get("missing", []):
            counts.setdefault(m, []).append(r["model"])
    lines = [f"{len(loaded)}/{len(rows)} models load; "
             f"{sum(1 for r in rows if 'compile_error' not in r)}/{len(rows)} compile."]
    gm = geometric_mean_ratio(rows)
    if gm:
        worst = max(rows, key=lambda r: (r.get("aotishim", {}).get("ms") or 0)
                    / (r.get("torch", {}).get("ms") or float("inf")))
        lines.append(f"aotishim / torch AOTI: geometric mean {gm[0]:.2f} over {gm[1]} models; "
                     f"largest {worst['aotishim']['ms'] / worst['torch']['ms']:.2f} "
                     f"({worst['model']}). In brackets: the ratio's range over the rounds.")
    for m, models in sorted(counts.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        lines.append(f"- `{m}`: {len(models)} ({', '.join(models)})")
    return "\n".join(lines)


def cpu_model() -> str:
    """The CPU's name and its widest vector units: a VM of the same size may
    land on another host (an AMD EPYC with AVX2, an Intel Xeon with AVX-512
    and AMX), where both BLAS libraries pick other kernels."""
    cpu = platform.processor() or platform.machine()
    flags: set[str] = set()
    try:
        lines = open("/proc/cpuinfo").read().splitlines()
        cpu = next(line.split(":", 1)[1].strip() for line in lines if line.startswith("model name"))
        flags = set(next(line.split(":", 1)[1].split() for line in lines
                         if line.startswith("flags")))
    except (OSError, StopIteration):
        pass
    units = [u for u, f in (("AVX2", "avx2"), ("AVX-512", "avx512f"), ("AMX", "amx_tile"))
             if f in flags]
    return f"{cpu} ({', '.join(units)})" if units else cpu


def machine() -> str:
    cpu = cpu_model()
    import torch
    return (f"{time.strftime('%Y-%m-%d')}, {cpu}, {os.cpu_count()} cores, "
            f"torch {torch.__version__}, python {platform.python_version()}")


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        kind, path, io, repeat = sys.argv[2], Path(sys.argv[3]), Path(sys.argv[4]), int(sys.argv[5])
        result = (worker_aotishim if kind == "aotishim" else worker_torch)(path, io, repeat)
        print(json.dumps(result))
        return 0

    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", help="comma-separated subset (default: every zoo model)")
    parser.add_argument("--repeat", type=int, default=50, help="timed calls per runtime")
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--rounds", type=int, default=1,
                        help="time both sides this many times, alternating; keep each side's "
                             "fastest median (default 1)")
    parser.add_argument("--cache", type=Path, default=ROOT / "build" / "zoo-models")
    parser.add_argument("--out", type=Path, help="also write the markdown table here")
    parser.add_argument("--json", type=Path, help="raw results")
    parser.add_argument("--torch-runner", choices=("all", "loaded", "none"), default="all",
                        help="which models torch's own runner times: all, those that load "
                             "on aotishim (half the compiling), or none")
    parser.add_argument("--merge", nargs="+", type=Path, metavar="JSON",
                        help="only print the table of earlier --json results (runs nothing)")
    ns = parser.parse_args()

    if ns.merge:
        # A model measured in several runs: the last one listed counts.
        by_model = {row["model"]: row for path in ns.merge for row in json.loads(path.read_text())}
        order = {name: i for i, name in enumerate(_zoo_names())}
        rows = sorted(by_model.values(), key=lambda r: order.get(r["model"], len(order)))
        text = table(rows) + "\n\n" + summary(rows) + "\n"
        print(text)
        if ns.out:
            ns.out.write_text(text)
        return 0
    sys.path[:0] = SOURCE_PACKAGE
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(ns.cache / "inductor"))
    import torch

    from aotishim.zoo import real

    torch.set_num_threads(ns.threads)
    names = ns.models.split(",") if ns.models else list(real.NAMES)
    unknown = [n for n in names if n not in real.NAMES]
    if unknown:
        print(f"unknown model(s) {unknown}; choose from {', '.join(real.NAMES)}", file=sys.stderr)
        return 2
    rows = []
    for name in names:
        started = time.perf_counter()
        row = measure(name, ns.cache, ns.repeat, ns.threads, ns.torch_runner, ns.rounds)
        rows.append(row)
        print(f"{name}: {time.perf_counter() - started:.0f} s {json.dumps(row)}",
              file=sys.stderr, flush=True)
        if ns.json:  # after every model: a stopped run keeps what it measured
            ns.json.write_text(json.dumps(rows, indent=1))
    rounds = f", fastest of {ns.rounds} alternating rounds" if ns.rounds > 1 else ""
    text = f"{machine()}, {ns.threads} threads, median of {ns.repeat} calls{rounds}\n\n"
    text += table(rows) + "\n\n" + summary(rows) + "\n"
    print(text)
    if ns.out:
        ns.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
