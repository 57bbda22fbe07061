"""Soak: many load / run / close cycles in one process, several threads at once.

Four ``.so`` models from :mod:`aotishim.zoo` take turns (``--cycles``
cycles), then a ``.pt2`` package of a fifth (``--pt2-cycles``). Each cycle
loads a model, runs it, checks the outputs against torch eager and closes it.
The process's resident memory, mappings (``/proc/self/maps`` lines), open
files (``/proc/self/fd``) and live tensors are taken at the start, after the
first 100 cycles of each phase and at the end of it. Targets: less than 5 MB
of growth after the first 100 cycles, the same number of mappings and open
files, no live tensors.

The models are compiled first (needs torch; cached in ``--cache``); the soak
itself runs in a fresh process that never imports torch.

    python benchmarks/soak.py [--cycles 5000] [--pt2-cycles 1000] [--threads 2]
                              [--out benchmarks/results/soak.json]

Exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SO_MODELS = ("mlp", "linear_chunk_last_dim", "residual_norm", "batched_matmul")
PT2_MODEL = "softmax_head"
RSS_GROWTH_LIMIT_MB = 5.0

WORKER = r"""
import gc, json, os, sys, threading
import numpy as np
import aotishim

plan = json.loads(sys.argv[1])
threads, checkpoint = plan["threads"], plan["checkpoint"]

def sample():
    gc.collect()
    with open("/proc/self/status") as f:
        rss_kb = next(int(l.split()[1]) for l in f if l.startswith("VmRSS:"))
    with open("/proc/self/maps") as f:
        maps = sum(1 for _ in f)
    return {"rss_mb": round(rss_kb / 1024, 2), "mappings": maps,
            "open_files": len(os.listdir("/proc/self/fd")),
            "live_tensors": aotishim.memory_stats()["live_tensors"]}

def load_case(case):
    data = np.load(case["data"])
    inputs = [data[k] for k in sorted(data) if k.startswith("in")]
    expected = [data[k] for k in sorted(data) if k.startswith("out")]
    return case["path"], inputs, expected

def cycles(cases, count):
    # `count` cycles shared by `threads` threads, each cycling through the cases.
    errors = []
    def work(start):
        for i in range(start, count, threads):
            path, inputs, expected = cases[i % len(cases)]
            try:
                with aotishim.load(path) as m:
                    outs = m.run(*inputs)
                for got, want in zip(outs, expected):
                    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
            except Exception as e:  # reported, never swallowed
                errors.append(f"{path}: {e!r}")
    ts = [threading.Thread(target=work, args=(k,)) for k in range(threads)]
    for t in ts: t.start()
    for t in ts: t.join()
    if errors:
        raise SystemExit(f"{len(errors)} failed cycles, first: {errors[0]}")

report = {"start": sample(), "phases": []}
for phase in plan["phases"]:
    cases = [load_case(c) for c in phase["cases"]]
    cycles(cases, checkpoint)
    after = sample()
    cycles(cases, phase["cycles"] - checkpoint)
    report["phases"].append({"name": phase["name"], "cycles": phase["cycles"],
                             "after_first": after, "end": sample()})
print(json.dumps(report))
"""


def prepare(cache: Path) -> list[dict]:
    """Compiles the models (cached) and returns the worker's phases."""
    import numpy as np
    import torch

    sys.path.insert(0, str(ROOT / "python"))
    from aotishim import export, zoo

    def compiled(name: str) -> tuple[Path, str]:
        module, inputs = zoo.build(name)
        so = export.compile_cached(module, inputs, cache, name=name)
        with torch.no_grad():
            outs = module(*inputs)
        outs = (outs,) if isinstance(outs, torch.Tensor) else outs
        data = cache / f"{so.stem}.npz"
        np.savez(data, **{f"in{i}": t.numpy() for i, t in enumerate(inputs)},
                 **{f"out{i}": t.detach().numpy() for i, t in enumerate(outs)})
        return so, str(data)

    so_cases = []
    for name in SO_MODELS:
        so, data = compiled(name)
        so_cases.append({"path": str(so), "data": data})
    so, data = compiled(PT2_MODEL)
    package = cache / f"{so.stem}.pt2"
    with zipfile.ZipFile(package, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(f"{PT2_MODEL}/archive_format", "pt2")
        z.write(so, f"{PT2_MODEL}/data/aotinductor/model/m.wrapper.so")
        z.write(so.with_name(so.stem + ".weights.blob"),
                f"{PT2_MODEL}/data/aotinductor/model/m.wrapper_weights.blob")
    return so_cases, [{"path": str(package), "data": data}]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=5000)
    parser.add_argument("--pt2-cycles", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--cache", type=Path, default=ROOT / "build" / "soak-models")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    checkpoint = 100
    if min(args.cycles, args.pt2_cycles) < checkpoint:
        parser.error(f"each phase needs at least {checkpoint} cycles")

    args.cache.mkdir(parents=True, exist_ok=True)
    so_cases, pt2_cases = prepare(args.cache)
    plan = {"threads": args.threads, "checkpoint": checkpoint, "phases": [
        {"name": f"{len(so_cases)} .so models", "cycles": args.cycles, "cases": so_cases},
        {"name": "1 .pt2 package", "cycles": args.pt2_cycles, "cases": pt2_cases}]}
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    done = subprocess.run([sys.executable, "-c", WORKER, json.dumps(plan)], env=env,
                          capture_output=True, text=True)
    if done.returncode != 0:
        print(done.stderr, file=sys.stderr)
        return 1
    report = json.loads(done.stdout.strip().splitlines()[-1])

    ok = True
    start = report["start"]
    print(f"start: {start}")
    for phase in report["phases"]:
        first, end = phase["after_first"], phase["end"]
        growth = end["rss_mb"] - first["rss_mb"]
        misses = [what for what, bad in (
            (f"RSS grew {growth:.2f} MB", growth >= RSS_GROWTH_LIMIT_MB),
            ("mappings changed", end["mappings"] != first["mappings"]),
            ("open files changed", end["open_files"] != first["open_files"]),
            (f"{end['live_tensors']} live tensors", end["live_tensors"] != 0)) if bad]
        ok = ok and not misses
        print(textwrap.dedent(f"""\
            {phase['name']}, {phase['cycles']} cycles, {args.threads} threads:
              after {checkpoint}: {first}
              end:       {end}
              RSS growth after the first {checkpoint}: {growth:+.2f} MB -> {'; '.join(misses) or 'ok'}"""))
    report.update(threads=args.threads, checkpoint=checkpoint, ok=ok)
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
