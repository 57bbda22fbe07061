"""The model zoo on one GPU: aotishim against torch eager, torch.compile of the
same exported program, and torch's own AOTInductor runner.

For every model of :mod:`aotishim.zoo.real` (or ``--models a,b``):

1. compile, in ``--jobs`` worker processes at once, each model in a fresh
   one: export it on cuda:0 (TF32 off), compile the exported program for
   aotishim (``aotishim.export.compile_exported``: no libtorch, weights in a
   blob) and the usual way for torch's runner, save the program (for
   torch.compile), the input sets and eager's outputs, and run torch.compile
   once so its caches hold the compiled program. Everything is cached under
   ``--cache`` by model, torch version, GPU and the zoo's and exporter's
   source: a rerun on the same machine compiles nothing;
2. measure, one fresh process per side (aotishim, eager, torch.compile,
   torch's runner) that takes the models in turn. A crash or a timeout
   becomes that model's entry and the side goes on in a fresh process; a
   model that crashed there is run once more alone, and the row says what
   happened both times. Per model and side: load time, the largest error
   against eager over the input sets (relative to the output's scale:
   float32 passes at 1e-4, bfloat16 at 2e-2, integers must match), and the
   time per call with the inputs already on the device, from CUDA events
   around batches of calls (median over batches). aotishim takes torch
   tensors through DLPack and leaves its outputs on the device
   (``outputs="dlpack"``); its numpy-in, numpy-out time is shown too.

``--budget-s`` bounds the whole run: compiling stops in time to measure
what compiled, and the table always completes. Output: a markdown table
(stdout, ``--out``) and JSON (``--json``, rewritten as results arrive).

    python benchmarks/cuda_vs_torch.py --zoo [a,b] [--jobs 12] [--budget-s 480] [--out t.md] [--json r.json]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import hashlib
import json
import os
import queue
import signal
import shutil
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np

from zoo_arrays import load_sets, max_error, save_sets  # beside this file

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve()
# aotishim_graphs: aotishim with cuda_graphs=True; torch_compile_graphs:
# torch.compile's mode="reduce-overhead", torch's own CUDA graphs.
SIDES = ("aotishim", "aotishim_graphs", "eager", "torch_compile", "torch_compile_graphs",
         "torch_aoti")
TOLERANCE = {"float32": 1e-4, "bfloat16": 2e-2}
# Where everything runs. "cpu" (--device cpu) is a dry run of the whole
# pipeline on a machine without a GPU; workers get it from the parent.
DEVICE = os.environ.get("AOTISHIM_BENCH_DEVICE", "cuda:0")
ON_CUDA = DEVICE.startswith("cuda")
# Largest first, so the compile pool does not end on one long compile.
HEAVY_FIRST = ("vit_b_16", "hf_llama", "hf_gpt2", "hf_gpt2_bf16", "hf_bert", "resnet18",
               "resnet18_bf16", "mobilenet_v3_small", "vit_tiny", "tel_dynamic_seq",
               "nn_transformer_encoder_layer", "nn_transformer_encoder_layer_bf16")
# Speed targets: aotishim at most the faster of eager and torch.compile.
TARGETS = ("resnet18", "hf_gpt2", "hf_bert", "vit_tiny", "mlp_bf16",
           "nn_transformer_encoder_layer_bf16")


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def first_line(text: str, limit: int = 160) -> str:
    """The line of an error text worth a table cell: its last line."""
    lines = [line.strip() for line in str(text).strip().splitlines() if line.strip()]
    return (lines[-1] if lines else "")[:limit]


def crash_reason(log_text: str, limit: int = 160) -> str:
    """What a dead worker's stderr says: the last line naming an error or a
    fatal signal (faulthandler's frames follow it), else its last line."""
    lines = [line.strip() for line in log_text.strip().splitlines() if line.strip()]
    for line in reversed(lines):
        if any(word in line for word in ("Fatal Python error", "Error", "error:", "Aborted",
                                         "Segmentation", "Killed", "terminate called")):
            return line[:limit]
    return (lines[-1] if lines else "")[:limit]


# ---- torch helpers for the worker processes ----
def torch_no_tf32():
    import torch

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    return torch


def to_numpy(t) -> np.ndarray:
    import torch

    t = t.detach().contiguous().cpu()
    if t.dtype == torch.bfloat16:
        import ml_dtypes
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


def to_device(a: np.ndarray):
    import torch

    if a.dtype.name == "bfloat16":
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16).to(DEVICE)
    return torch.from_numpy(np.ascontiguousarray(a)).to(DEVICE)


def synchronize() -> None:
    import torch

    if ON_CUDA:
        torch.cuda.synchronize()


def leaves(out) -> list:
    import torch

    return [t for t in torch.utils._pytree.tree_leaves(out) if isinstance(t, torch.Tensor)]


def per_call_us(call, batches: int = 9, batch_ms: float = 20.0) -> float:
    """Device time per call: CUDA events on the current stream around
    batches of calls (enough calls for ~batch_ms each), median over batches.
    Work on aotishim's stream is inside: it is a blocking stream, ordered
    with the legacy default stream these events are recorded on. (On the
    cpu: the host's clock.)"""
    import torch

    for _ in range(3):
        call()
    if ON_CUDA:
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

        def batch(n: int) -> float:  # ms
            start.record()
            for _ in range(n):
                call()
            end.record()
            end.synchronize()
            return start.elapsed_time(end)
    else:
        def batch(n: int) -> float:
            started = time.perf_counter()
            for _ in range(n):
                call()
            return (time.perf_counter() - started) * 1e3
    synchronize()
    once_ms = max(batch(1), 1e-3)
    n = int(min(max(batch_ms / once_ms, 1), 500))
    return statistics.median(batch(n) * 1e3 / n for _ in range(batches))


def cached_model_dir(cache: Path, name: str, holding: str) -> Path | None:
    """The newest of `name`'s compile folders under `cache` that holds the
    file `holding` (folders are `<name>-<cache_key>`), or None."""
    found = sorted(cache.glob(f"{name}-*/{holding}"), key=lambda p: p.stat().st_mtime)
    return found[-1].parent if found else None


# ---- compile worker: one model, one fresh process ----
def worker_compile(name: str, directory: Path) -> dict:
    torch = torch_no_tf32()
    from aotishim import export
    from aotishim._torch_fixes import torch_fixes
    from aotishim.zoo import real

    result: dict = {"model": name}
    zm = real.build(name)
    result.update(family=zm.family, dtype=zm.dtype)
    module = zm.module.to(DEVICE)
    sets = [tuple(a.to(DEVICE) for a in s) for s in zm.input_sets()]
    with torch.no_grad():
        expected = [[to_numpy(t) for t in leaves(module(*s))] for s in sets]
    save_sets(directory / "inputs.npz", [[to_numpy(a) for a in s] for s in sets])
    save_sets(directory / "expected.npz", expected)

    started = time.perf_counter()
    try:
        # Exported as export.compile exports (with its corrections of torch's
        # decompositions, aotishim/_torch_fixes.py): one program for every side.
        with torch_fixes():
            ep = torch.export.export(module, sets[0], dynamic_shapes=zm.dynamic_shapes)
        torch.export.save(ep, str(directory / "program.pt2"))
    except Exception as e:  # noqa: BLE001 - recorded in the row
        result["export_error"] = f"{type(e).__name__}: {first_line(e)}"
        return result
    result["export_s"] = time.perf_counter() - started

    started = time.perf_counter()
    try:  # ep is on DEVICE already: compiled as it is
        export.compile_exported(ep, directory, name="aotishim", device=DEVICE)
        result["aotishim_compile_s"] = time.perf_counter() - started
    except Exception as e:  # noqa: BLE001
        result["aotishim_compile_error"] = f"{type(e).__name__}: {first_line(e)}"

    started = time.perf_counter()
    try:
        tmp = directory / "torch.tmp.pt2"
        torch._inductor.aoti_compile_and_package(ep, package_path=str(tmp))
        os.replace(tmp, directory / "torch.pt2")
        result["torch_aoti_compile_s"] = time.perf_counter() - started
    except Exception as e:  # noqa: BLE001
        result["torch_aoti_compile_error"] = f"{type(e).__name__}: {first_line(e)}"

    # torch.compile of the saved program, as the timing process will load
    # it: its graph and kernels land in Inductor's caches, so that process
    # compiles from them.
    started = time.perf_counter()
    try:
        program = torch.export.load(str(directory / "program.pt2")).module()
        with torch.no_grad():
            torch.compile(program)(*sets[0])
        result["torch_compile_warm_s"] = time.perf_counter() - started
    except Exception as e:  # noqa: BLE001
        result["torch_compile_warm_error"] = f"{type(e).__name__}: {first_line(e)}"
    return result


# ---- measuring workers: one side, many models, one process ----
def measure_aotishim(directory: Path, graphs: bool = False) -> dict:
    torch = torch_no_tf32()
    import aotishim

    sets, expected = load_sets(directory / "inputs.npz"), load_sets(directory / "expected.npz")
    xs = [[to_device(a) for a in s] for s in sets]
    r: dict = {}
    started = time.perf_counter()
    try:
        model = aotishim.load(directory / "aotishim.so", device=DEVICE, cuda_graphs=graphs)
    except aotishim.ModelError as e:  # e.g. a shim aotishim lacks, named
        return {"load_error": first_line(e, 300)}
    r["load_ms"] = (time.perf_counter() - started) * 1e3
    try:
        started = time.perf_counter()
        model.run(*xs[0], outputs="dlpack")
        synchronize()
        r["first_run_ms"] = (time.perf_counter() - started) * 1e3
        errors = []
        for x, e in zip(xs, expected):
            outs = model.run(*x, outputs="dlpack")
            got = [None if o is None else to_numpy(torch.from_dlpack(o)) for o in outs]
            errors.append(max_error(got, e))
        r["error"] = max(errors)
        r["us"] = per_call_us(lambda: model.run(*xs[0], outputs="dlpack"))
        host = sets[0]
        times = []
        for _ in range(23):
            started = time.perf_counter()
            model.run(*host)
            times.append(time.perf_counter() - started)
        r["numpy_us"] = statistics.median(times[3:]) * 1e6
        if graphs:
            r["recorded"] = all(g["recorded"] for g in model.graphs)
            reasons = [g["reason"] for g in model.graphs if not g["recorded"]]
            if reasons:
                r["not_recorded"] = first_line(reasons[0], 200)
    finally:
        r["leaks"] = len(model.close())
    return r


def measure_eager(directory: Path, name: str) -> dict:
    torch = torch_no_tf32()
    from aotishim.zoo import real

    sets, expected = load_sets(directory / "inputs.npz"), load_sets(directory / "expected.npz")
    xs = [to_device(a) for a in sets[0]]
    module = real.build(name).module.to(DEVICE)
    with torch.no_grad():
        r = {"error": max_error([to_numpy(t) for t in leaves(module(*xs))], expected[0])}
        r["us"] = per_call_us(lambda: module(*xs))
    return r


def measure_torch_compile(directory: Path, mode: str | None = None) -> dict:
    torch = torch_no_tf32()

    sets, expected = load_sets(directory / "inputs.npz"), load_sets(directory / "expected.npz")
    xs = [to_device(a) for a in sets[0]]
    started = time.perf_counter()
    program = torch.compile(torch.export.load(str(directory / "program.pt2")).module(), mode=mode)
    with torch.no_grad():
        out = program(*xs)
        synchronize()
        r = {"load_ms": (time.perf_counter() - started) * 1e3,
             "error": max_error([to_numpy(t) for t in leaves(out)], expected[0])}
        r["us"] = per_call_us(lambda: program(*xs))
    torch._dynamo.reset()
    return r


def measure_torch_aoti(directory: Path) -> dict:
    torch = torch_no_tf32()

    sets, expected = load_sets(directory / "inputs.npz"), load_sets(directory / "expected.npz")
    xs = [[to_device(a) for a in s] for s in sets]
    started = time.perf_counter()
    runner = torch._inductor.aoti_load_package(str(directory / "torch.pt2"))
    r = {"load_ms": (time.perf_counter() - started) * 1e3}
    with torch.no_grad():
        r["error"] = max(max_error([to_numpy(t) for t in leaves(runner(*x))], e)
                         for x, e in zip(xs, expected))
        r["us"] = per_call_us(lambda: runner(*xs[0]))
    return r


def worker_measure(side: str, jobs: list[tuple[str, Path]]) -> None:
    """Prints {"start": name} before and {"done": name, "result": ...} after
    each model, so the parent knows which model a crash belongs to."""
    if side == "torch_aoti":
        # The runner's models expect the process to provide the C++ runtime
        # globally (aotishim's loader does this for its own models).
        import ctypes
        ctypes.CDLL("libstdc++.so.6", mode=ctypes.RTLD_GLOBAL)
    for name, directory in jobs:
        print(json.dumps({"start": name}), flush=True)
        try:
            if side == "aotishim":
                result = measure_aotishim(directory)
            elif side == "aotishim_graphs":
                result = measure_aotishim(directory, graphs=True)
            elif side == "eager":
                result = measure_eager(directory, name)
            elif side == "torch_compile":
                result = measure_torch_compile(directory)
            elif side == "torch_compile_graphs":
                result = measure_torch_compile(directory, mode="reduce-overhead")
            else:
                result = measure_torch_aoti(directory)
        except Exception as e:  # noqa: BLE001 - one model's failure is one entry
            result = {"run_error": f"{type(e).__name__}: {first_line(e)}"}
        try:
            import torch
            synchronize()
            if ON_CUDA:
                torch.cuda.empty_cache()
        except Exception as e:  # noqa: BLE001 - a failed device: say so on this model
            result.setdefault("run_error", f"after the run: {type(e).__name__}: {first_line(e)}")
        print(json.dumps({"done": name, "result": result}), flush=True)


# ---- parent: caching, the compile pool, the measuring sides ----
def cache_key(name: str) -> str:
    import torch

    from aotishim import _torch_fixes, export
    from aotishim.zoo import real

    h = hashlib.sha256()
    h.update(f"{name}|torch {torch.__version__}|{device_name()}|".encode())
    for source in (real.__file__, export.__file__, _torch_fixes.__file__, __file__):
        h.update(Path(source).read_bytes())
    return h.hexdigest()[:12]


def worker_env(extra: dict | None = None) -> dict:
    env = dict(os.environ)
    source = ROOT / "python"
    if any((source / "aotishim").glob("_core*")):  # a development build in the tree
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(source), env.get("PYTHONPATH")]))
    env.update(extra or {})
    return env


def kill_group(proc: subprocess.Popen) -> None:
    """Ends a worker and what it started (Inductor's compile workers, g++)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    proc.wait()


class Budget:
    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds

    def left(self) -> float:
        return self.end - time.monotonic()


def compile_all(names: list[str], cache: Path, a, budget: Budget, logs: Path) -> dict[str, dict]:
    """Compiles what is not cached, --jobs at a time; returns each model's
    compile record (from the cache or fresh)."""
    records: dict[str, dict] = {}
    todo = []
    for name in names:
        directory = cache / f"{name}-{cache_key(name)}"
        done = directory / "compile.json"
        if done.exists() and not a.recompile:
            records[name] = dict(json.loads(done.read_text()), cached=True, dir=str(directory))
        else:
            if directory.exists():
                shutil.rmtree(directory)
            directory.mkdir(parents=True)
            todo.append((name, directory))
    todo.sort(key=lambda item: (item[0] not in HEAVY_FIRST,
                                HEAVY_FIRST.index(item[0]) if item[0] in HEAVY_FIRST else 0))
    if todo:
        log(f"compiling {len(todo)} model(s), {a.jobs} at a time "
            f"({len(records)} cached); stop at {max(budget.left() - a.measure_reserve_s, 0):.0f} s")
    threads = max(1, (os.cpu_count() or 2) // max(a.jobs, 1))
    env = worker_env({"TORCHINDUCTOR_COMPILE_THREADS": str(threads), "OMP_NUM_THREADS": "1",
                      "PYTHONUNBUFFERED": "1"})

    def one(item: tuple[str, Path]) -> tuple[str, dict]:
        name, directory = item
        timeout = min(a.compile_timeout_s, budget.left() - a.measure_reserve_s)
        if timeout < 10:
            return name, {"compile_skipped": "time budget spent before it started"}
        started = time.monotonic()
        with open(logs / f"compile-{name}.log", "w") as err:
            proc = subprocess.Popen([sys.executable, "-X", "faulthandler", str(HERE), "--worker",
                                     "compile", name, str(directory)],
                                    stdout=subprocess.PIPE, stderr=err, text=True, env=env,
                                    start_new_session=True)
            try:
                stdout, _ = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                kill_group(proc)
                return name, {"compile_timeout": f"stopped after {timeout:.0f} s"}
        lines = stdout.strip().splitlines()
        if proc.returncode != 0 or not lines:
            tail = crash_reason((logs / f"compile-{name}.log").read_text(errors="replace"))
            return name, {"compile_crash": f"exit {proc.returncode}: {tail}"}
        record = json.loads(lines[-1])
        record["compile_wall_s"] = time.monotonic() - started
        (directory / "compile.json").write_text(json.dumps(record, indent=1))
        log(f"compiled {name} in {record['compile_wall_s']:.0f} s"
            + "".join(f"; {k}: {v}" for k, v in record.items() if k.endswith("_error")))
        return name, dict(record, dir=str(directory))

    with concurrent.futures.ThreadPoolExecutor(max_workers=max(a.jobs, 1)) as pool:
        for name, record in pool.map(one, todo):
            if "dir" not in record:
                log(f"{name}: {record}")
            records[name] = record
    return records


def run_side(side: str, jobs: list[tuple[str, Path]], a, budget: Budget, logs: Path,
             tag: str = "") -> dict[str, dict]:
    """Runs `side` over jobs in as few fresh processes as crashes allow."""
    results: dict[str, dict] = {}
    remaining = list(jobs)
    attempt = 0
    while remaining:
        if budget.left() < 5:
            for name, _ in remaining:
                results[name] = {"skipped": "time budget spent"}
            break
        attempt += 1
        err_path = logs / f"{side}{tag}-{attempt}.log"
        cmd = [sys.executable, "-X", "faulthandler", str(HERE), "--worker", side,
               *[f"{name}={directory}" for name, directory in remaining]]
        with open(err_path, "w") as err:
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, text=True,
                                    env=worker_env({"PYTHONUNBUFFERED": "1"}),
                                    start_new_session=True)
            lines: queue.Queue = queue.Queue()

            def pump() -> None:  # a thread: select() cannot see a text stream's buffer
                for line in proc.stdout:
                    lines.put(line)
                lines.put(None)

            threading.Thread(target=pump, daemon=True).start()
            current, deadline, killed = None, time.monotonic() + a.start_timeout_s, ""
            while True:
                wait = min(deadline - time.monotonic(), budget.left())
                try:
                    if wait <= 0:
                        raise queue.Empty
                    line = lines.get(timeout=wait)
                except queue.Empty:
                    killed = ("stopped: time budget spent" if budget.left() <= 0 else
                              f"timed out after {a.measure_timeout_s:.0f} s" if current else
                              "no answer from the worker")
                    kill_group(proc)
                    break
                if line is None:
                    break
                try:
                    event = json.loads(line)
                except json.JSONDecodeError:
                    continue  # something else printed on stdout
                if "start" in event:
                    current, deadline = event["start"], time.monotonic() + a.measure_timeout_s
                elif "done" in event:
                    results[event["done"]] = event["result"]
                    remaining = [j for j in remaining if j[0] != event["done"]]
                    current, deadline = None, time.monotonic() + a.measure_timeout_s
            code = proc.wait()
        if current is not None:
            tail = crash_reason(err_path.read_text(errors="replace"))
            why = killed or f"exit {code}"
            results[current] = {"crash": f"{why}: {tail}" if tail else why,
                                "log": err_path.name}
            remaining = [j for j in remaining if j[0] != current]
        elif remaining:  # died before starting a model: nothing else would start either
            tail = crash_reason(err_path.read_text(errors="replace"))
            for name, _ in remaining:
                results[name] = {"crash": f"worker failed to start ({killed or f'exit {code}'}): "
                                          f"{tail}", "log": err_path.name}
            break
    return results


def measure_all(records: dict[str, dict], a, budget: Budget, logs: Path,
                save) -> dict[str, dict[str, dict]]:
    by_side: dict[str, dict[str, dict]] = {side: {} for side in SIDES}
    for side in SIDES:
        need = {"aotishim": "aotishim.so", "aotishim_graphs": "aotishim.so",
                "torch_aoti": "torch.pt2", "torch_compile": "program.pt2",
                "torch_compile_graphs": "program.pt2", "eager": "expected.npz"}[side]
        jobs = [(name, Path(r["dir"])) for name, r in records.items()
                if "dir" in r and (Path(r["dir"]) / need).exists()]
        if not jobs:
            continue
        log(f"measuring {side} on {len(jobs)} model(s)")
        results = run_side(side, jobs, a, budget, logs)
        # A crash may come from what earlier models left in the process (torch's
        # runner has crashed after other AOTI models): once more, alone.
        for name, directory in jobs:
            first = results.get(name, {})
            if "crash" in first and budget.left() > a.measure_timeout_s:
                alone = run_side(side, [(name, directory)], a, budget, logs, tag=f"-{name}-alone")
                second = alone.get(name, {})
                if "crash" in second:
                    results[name] = dict(first, alone=f"crashed alone too: {second['crash']}")
                else:
                    results[name] = dict(second, note="crashed in the shared process "
                                                      f"({first['crash'][:100]}); alone: ok")
        by_side[side] = results
        save(by_side)
    return by_side


# ---- the table ----
def _us(value) -> str:
    if value is None:
        return ""
    return f"{value:.1f}" if value < 100 else f"{value:.0f}"


def cell(entry: dict | None, tol: float, show_error: bool = False) -> str:
    if entry is None:
        return ""
    for key in ("crash", "load_error", "run_error", "skipped"):
        if key in entry:
            return f"{key.replace('_', ' ')}: {first_line(entry[key], 90)}"
    text = _us(entry.get("us"))
    if show_error and entry.get("error", 0) > tol:
        text += f" (err {entry['error']:.1e} FAIL)"
    if "note" in entry:
        text += " *"
    return text


def rows_of(names, records, by_side) -> list[dict]:
    rows = []
    for name in names:
        rec = records.get(name, {})
        row = {"model": name, "family": rec.get("family", ""), "dtype": rec.get("dtype", ""),
               "compile": {k: v for k, v in rec.items() if k != "dir"}}
        for side in SIDES:
            if name in by_side.get(side, {}):
                row[side] = by_side[side][name]
        rows.append(row)
    return rows


def table(rows: list[dict]) -> str:
    head = ["model", "dtype", "compiles", "loads", "max err", "aotishim µs",
            "aotishim cuda_graphs µs", "eager µs", "torch.compile µs",
            "torch.compile reduce-overhead µs", "torch AOTI µs", "aotishim / best torch",
            "cuda_graphs / best torch", "numpy→numpy µs", "load ms (aotishim / torch AOTI)"]
    lines = ["| " + " | ".join(head) + " |", "|---|---|---|---|---:|" + "---:|" * 10]
    for r in rows:
        c, ours = r["compile"], r.get("aotishim", {})
        tol = TOLERANCE.get(r["dtype"], 1e-4)
        if "aotishim_compile_s" in c:
            compiles = "yes" + (" (cached)" if c.get("cached") else "")
        else:
            why = [c[k] for k in ("export_error", "aotishim_compile_error", "compile_timeout",
                                  "compile_crash", "compile_skipped") if k in c]
            compiles = "no: " + first_line(why[0] if why else "not compiled", 100)
        loads, err = "", ""
        if "load_ms" in ours:
            loads = "yes"
        elif ours:
            loads = "no: " + cell(ours, tol)
        if "error" in ours:
            err = f"{ours['error']:.1e}" + ("" if ours["error"] <= tol else " FAIL")
            if ours.get("leaks"):
                err += f" ({ours['leaks']} leaked)"
        elif "load_ms" in ours:
            err = cell(ours, tol)  # loaded, then the run failed
        best = [r.get(s, {}).get("us") for s in ("eager", "torch_compile")]
        best = min([b for b in best if b], default=None)
        ratio = f"{ours['us'] / best:.2f}" if ours.get("us") and best else ""
        graphs = r.get("aotishim_graphs", {})
        graphs_cell = cell(graphs, tol, True)
        if graphs.get("us") and not graphs.get("recorded", True):
            graphs_cell += " (not recorded)"
        graphs_ratio = f"{graphs['us'] / best:.2f}" if graphs.get("us") and best else ""
        torch_load = r.get("torch_aoti", {}).get("load_ms")
        load = (f"{ours['load_ms']:.0f}" if "load_ms" in ours else "–") + " / " + (
            f"{torch_load:.0f}" if torch_load else "–")
        lines.append("| " + " | ".join([
            r["model"], r["dtype"], compiles, loads, err, _us(ours.get("us")), graphs_cell,
            cell(r.get("eager"), tol), cell(r.get("torch_compile"), tol, True),
            cell(r.get("torch_compile_graphs"), tol, True), cell(r.get("torch_aoti"), tol, True),
            ratio, graphs_ratio, _us(ours.get("numpy_us")), load]) + " |")
    return "\n".join(lines)


def summary(rows: list[dict]) -> str:
    def ok(r):
        e = r.get("aotishim", {}).get("error")
        return e is not None and e <= TOLERANCE.get(r["dtype"], 1e-4)

    compiled = sum(1 for r in rows if "aotishim_compile_s" in r["compile"])
    loaded = sum(1 for r in rows if "load_ms" in r.get("aotishim", {}))
    lines = [f"{compiled}/{len(rows)} compile for aotishim, {loaded} load, "
             f"{sum(1 for r in rows if ok(r))} match eager."]
    for r in rows:
        if r["model"] in TARGETS:
            others = {s: r.get(s, {}).get("us") for s in ("eager", "torch_compile")}
            best = min([v for v in others.values() if v], default=None)
            for side in ("aotishim", "aotishim_graphs"):
                ours = r.get(side, {}).get("us")
                verdict = ("within target" if ours and best and ours <= best else
                           "over target" if ours and best else "not measured")
                lines.append(f"- target {r['model']}: {side} {_us(ours)} µs, eager "
                             f"{_us(others['eager'])}, torch.compile "
                             f"{_us(others['torch_compile'])}: {verdict}")
    notes = [(r["model"], s, r[s]["note"]) for r in rows for s in SIDES
             if isinstance(r.get(s), dict) and "note" in r[s]]
    for model, side, note in notes:
        lines.append(f"- * {model}, {side}: {note}")
    return "\n".join(lines)


def device_name() -> str:
    import platform

    import torch
    if ON_CUDA:
        return (f"{torch.cuda.get_device_name(0)} (sm {torch.cuda.get_device_capability(0)}, "
                f"CUDA {torch.version.cuda})")
    return f"cpu ({platform.machine()})"


def machine() -> str:
    import platform

    import torch
    return (f"{time.strftime('%Y-%m-%d')}, {device_name()}, {os.cpu_count()} cores, "
            f"torch {torch.__version__}, python {platform.python_version()}; "
            "TF32 off on every side")


def main(argv: list[str] | None = None) -> int:
    global DEVICE, ON_CUDA
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--worker"]:
        if argv[1] == "compile":
            print(json.dumps(worker_compile(argv[2], Path(argv[3]))), flush=True)
        else:
            jobs = [(item.split("=", 1)[0], Path(item.split("=", 1)[1])) for item in argv[2:]]
            worker_measure(argv[1], jobs)
        return 0

    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--zoo", nargs="?", const="", metavar="A,B",
                   help="the zoo mode of cuda_vs_torch.py, optionally with a subset")
    p.add_argument("--models", help="comma-separated subset (default: every zoo model)")
    p.add_argument("--jobs", type=int, default=min(12, max((os.cpu_count() or 2) * 3 // 4, 1)),
                   help="models compiled at once (each mostly one compiler process)")
    p.add_argument("--budget-s", type=float, default=480, help="the whole run's time")
    p.add_argument("--measure-reserve-s", type=float, default=200,
                   help="of the budget, kept for measuring (compiling stops before)")
    p.add_argument("--compile-timeout-s", type=float, default=300)
    p.add_argument("--measure-timeout-s", type=float, default=120)
    p.add_argument("--start-timeout-s", type=float, default=120,
                   help="a measuring process's start (importing torch, CUDA)")
    p.add_argument("--cache", type=Path, default=Path(os.environ.get(
        "AOTISHIM_BENCH_CACHE", ROOT / "build" / "cuda-zoo-bench")))
    p.add_argument("--recompile", action="store_true", help="ignore cached compiles")
    p.add_argument("--logs", type=Path, help="worker logs (default: CACHE/logs)")
    p.add_argument("--out", type=Path, help="also write the markdown table here")
    p.add_argument("--json", type=Path, help="results, rewritten as they arrive")
    p.add_argument("--device", default=DEVICE,
                   help="cuda:0; cpu runs the whole pipeline on the cpu (a dry run)")
    a = p.parse_args(argv)
    DEVICE, ON_CUDA = a.device, a.device.startswith("cuda")
    os.environ["AOTISHIM_BENCH_DEVICE"] = DEVICE  # the workers' device

    budget = Budget(a.budget_s)
    a.cache.mkdir(parents=True, exist_ok=True)
    logs = a.logs or a.cache / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    # One Inductor cache for every worker: torch's runner and torch.compile
    # reuse the kernels compiled for aotishim's model.
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(a.cache / "inductor"))
    if any((ROOT / "python" / "aotishim").glob("_core*")):
        sys.path.insert(0, str(ROOT / "python"))
    torch = torch_no_tf32()
    from aotishim.zoo import real

    if ON_CUDA and not torch.cuda.is_available():
        print("torch sees no CUDA device (--device cpu runs the pipeline on the cpu)",
              file=sys.stderr)
        return 2
    chosen = a.models or a.zoo
    names = chosen.split(",") if chosen else list(real.NAMES)
    unknown = [n for n in names if n not in real.NAMES]
    if unknown:
        print(f"unknown model(s) {unknown}; choose from {', '.join(real.NAMES)}", file=sys.stderr)
        return 2
    missing = [n for n in names if not real.available(n)]
    names = [n for n in names if n not in missing]
    header = machine()
    log(header)

    records = compile_all(names, a.cache, a, budget, logs)

    def save(by_side: dict) -> list[dict]:
        rows = rows_of(names, records, by_side)
        if a.json:
            a.json.write_text(json.dumps({"machine": header, "rows": rows,
                                          "not_installed": missing}, indent=1) + "\n")
        return rows

    save({})
    log(f"compiling done, {budget.left():.0f} s of the budget left")
    rows = save(measure_all(records, a, budget, logs, save))
    text = f"{header}\n\n{table(rows)}\n\n{summary(rows)}\n"
    if missing:
        text += f"\nNot run (a package they need is not installed): {', '.join(missing)}\n"
    print(text)
    if a.out:
        a.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
