"""Where the time of one device-resident ``Model.run`` goes, on cuda, for
models the zoo benchmark compiled (``cuda_vs_torch.py --zoo`` caches them).

Small models spend their call on the host, queueing work, so each variant
is timed by the host clock over batches of back-to-back calls ending in a
device-wide synchronize (median over batches, µs per call):

* ``exchange``: ``model.run(*torch_tensors, outputs="dlpack")``, inputs
  taken through torch's DLPack C exchange table;
* ``protocol``: the same tensors behind a wrapper that has only
  ``__dlpack__``/``__dlpack_device__`` (as a producer without the table,
  e.g. CuPy), so torch's Python ``__dlpack__(stream=)`` orders them;
* ``numpy``: numpy in, numpy out (two host copies and a wait);
* ``inputs``: taking the inputs alone (borrowed, then deleted);
* ``inputs+run``: taking the inputs and running on handles, outputs
  deleted unwrapped; less ``inputs``, the model's own run;
* ``eager``: the torch module the model was exported from.

Then, per model, the host time of each C entry point per run
(``aotishim.shim_profile``, in a child started with
``AOTISHIM_PROFILE_SHIMS=1``), the model's whole run among them.

(``AOTISHIM_BENCH_DEVICE=cpu``: a dry run on the cpu, as for the zoo benchmark.)

    python benchmarks/cuda_call_profile.py --cache DIR [--models mlp_bf16,hf_gpt2]
        [--batches 15] [--calls 300] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import cuda_zoo  # noqa: E402  (beside this file)
from zoo_arrays import load_sets  # noqa: E402


class ProtocolOnly:
    """A DLPack producer without a C exchange table, over a torch tensor."""

    def __init__(self, t) -> None:
        self.t = t

    def __dlpack__(self, **kwargs):
        return self.t.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()


def compile_model(cache: Path, name: str) -> Path:
    """The aotishim side alone of the zoo benchmark's compile, into `cache`."""
    torch = cuda_zoo.torch_no_tf32()
    from aotishim import export
    from aotishim._torch_fixes import torch_fixes
    from aotishim.zoo import real
    from zoo_arrays import save_sets

    directory = cache / f"{name}-profile"
    directory.mkdir(parents=True, exist_ok=True)
    zm = real.build(name)
    module = zm.module.to(cuda_zoo.DEVICE)
    sets = [tuple(x.to(cuda_zoo.DEVICE) for x in s) for s in zm.input_sets()]
    save_sets(directory / "inputs.npz", [[cuda_zoo.to_numpy(x) for x in s] for s in sets])
    with torch_fixes():  # as export.compile exports
        ep = torch.export.export(module, sets[0], dynamic_shapes=zm.dynamic_shapes)
    export.compile_exported(ep, directory, name="aotishim", device=cuda_zoo.DEVICE)
    return directory


def model_dir(cache: Path, name: str) -> Path | None:
    return cuda_zoo.cached_model_dir(cache, name, "aotishim.so")


def per_call_us(fn, batches: int, calls: int) -> float:
    for _ in range(max(calls // 4, 10)):
        fn()
    cuda_zoo.synchronize()
    samples = []
    for _ in range(batches):
        started = time.perf_counter()
        for _ in range(calls):
            fn()
        cuda_zoo.synchronize()
        samples.append((time.perf_counter() - started) * 1e6 / calls)
    return statistics.median(samples)


def measure(name: str, directory: Path, a) -> dict:
    torch = cuda_zoo.torch_no_tf32()
    import aotishim
    from aotishim import _core
    from aotishim.zoo import real

    host = load_sets(directory / "inputs.npz")[0]
    xs = [cuda_zoo.to_device(h) for h in host]
    wrapped = [ProtocolOnly(x) for x in xs]
    module = real.build(name).module.to(cuda_zoo.DEVICE)
    r: dict = {"model": name}
    with aotishim.load(directory / "aotishim.so", device=cuda_zoo.DEVICE) as model:
        core = model._core

        def take_inputs():
            return [model._input_handle(i, x, [], [])[0] for i, x in enumerate(xs)]

        def inputs_only():
            for h in take_inputs():
                _core.delete_tensor_object(h)

        def inputs_and_run():
            for h in core.run_handles(take_inputs()):
                if h:
                    _core.delete_tensor_object(h)

        variants = {
            "exchange": lambda: model.run(*xs, outputs="dlpack"),
            "protocol": lambda: model.run(*wrapped, outputs="dlpack"),
            "numpy": lambda: model.run(*host),
            "inputs": inputs_only,
            "inputs+run": inputs_and_run,
        }
        for label, fn in variants.items():
            r[label] = per_call_us(fn, a.batches, a.calls)
        # The zoo benchmark's own clock (CUDA events around batches) on the
        # exchange variant, in this process: compare with the host's.
        r["exchange_events"] = cuda_zoo.per_call_us(lambda: model.run(*xs, outputs="dlpack"))
        with torch.no_grad():
            r["eager"] = per_call_us(lambda: module(*xs), a.batches, a.calls)
        before = sum(d["commands"] for d in aotishim.memory_stats()["devices"])
        model.run(*xs, outputs="dlpack")
        cuda_zoo.synchronize()
        r["commands_per_call"] = sum(d["commands"] for d in aotishim.memory_stats()["devices"]) \
            - before
    r["run"] = r["inputs+run"] - r["inputs"]
    r["outputs"] = r["exchange"] - r["inputs+run"]
    return r


def shim_breakdown(name: str, directory: Path, calls: int) -> str:
    """Host time per C entry point per run (aotishim.shim_profile), over
    `calls` runs of the exchange variant in a child process started with
    AOTISHIM_PROFILE_SHIMS=1 (timing every entry costs a little itself)."""
    env = dict(os.environ, AOTISHIM_PROFILE_SHIMS="1")
    cmd = [sys.executable, __file__, "--shims-child", name, "--child-dir", str(directory),
           "--calls", str(calls)]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)
    if done.returncode != 0:
        return f"{name}: the profiling child failed (exit {done.returncode}): {done.stderr[-800:]}\n"
    return done.stdout


def shims_child(name: str, directory: Path, calls: int) -> None:
    cuda_zoo.torch_no_tf32()
    import aotishim

    xs = [cuda_zoo.to_device(h) for h in load_sets(directory / "inputs.npz")[0]]
    with aotishim.load(directory / "aotishim.so", device=cuda_zoo.DEVICE) as model:
        for _ in range(max(calls // 4, 10)):
            model.run(*xs, outputs="dlpack")
        cuda_zoo.synchronize()
        aotishim.shim_profile(reset=True)
        started = time.perf_counter()
        for _ in range(calls):
            model.run(*xs, outputs="dlpack")
        cuda_zoo.synchronize()
        wall = (time.perf_counter() - started) * 1e6 / calls
        rows = aotishim.shim_profile()
    print(f"== {name}: host time per run by entry point ({calls} runs, {wall:.1f} µs per run "
          "with every entry timed)")
    print("| entry point | calls/run | µs/run | µs/call |")
    print("|---|---:|---:|---:|")
    for r in rows:
        print(f"| {r['name']} | {r['calls'] / calls:.1f} | {r['seconds'] * 1e6 / calls:.2f} | "
              f"{r['seconds'] * 1e6 / max(r['calls'], 1):.2f} |")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cache", type=Path)
    p.add_argument("--models", default="mlp_bf16")
    p.add_argument("--batches", type=int, default=15)
    p.add_argument("--calls", type=int, default=300)
    p.add_argument("--json", type=Path)
    p.add_argument("--compile", action="store_true",
                   help="compile a model missing from --cache (the aotishim side only)")
    p.add_argument("--no-shims", action="store_true", help="skip the per-entry-point tables")
    p.add_argument("--shims-child", help=argparse.SUPPRESS)
    p.add_argument("--child-dir", type=Path, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.shims_child:
        shims_child(a.shims_child, a.child_dir, a.calls)
        return 0
    if a.cache is None:
        p.error("--cache is required")
    names = [n for n in a.models.split(",") if n]
    rows = []
    columns = ("exchange", "exchange_events", "protocol", "numpy", "inputs", "run", "outputs",
               "eager")
    print("| model | " + " | ".join(f"{c} µs" for c in columns) + " | commands/call |")
    print("|---|" + "---:|" * (len(columns) + 1))
    found = {}
    for name in names:
        directory = model_dir(a.cache, name)
        if directory is None and a.compile:
            directory = compile_model(a.cache, name)
        if directory is None:
            print(f"| {name} | not compiled under {a.cache} (cuda_vs_torch.py --zoo compiles it) |",
                  flush=True)
            continue
        found[name] = directory
        r = measure(name, directory, a)
        rows.append(r)
        print(f"| {name} | " + " | ".join(f"{r[c]:.1f}" for c in columns) +
              f" | {r['commands_per_call']} |", flush=True)
        if a.json:
            a.json.write_text(json.dumps(rows, indent=1))
    for name, directory in ([] if a.no_shims else found.items()):
        print(shim_breakdown(name, directory, a.calls * 3), flush=True)
    return 0 if found else 1


if __name__ == "__main__":
    sys.exit(main())
