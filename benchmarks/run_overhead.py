"""The fixed host cost of one ``Model.run`` on a tiny model, side by side
with torch's own AOTInductor runner.

The model (``x * 2 + y`` and ``x - y`` on two small tensors, no fallback
ops) does almost no work, so its time per call is the runtime's own
per-call path: input checks, borrowing or copying inputs, launching the
model, handing back outputs. One exported program is compiled twice, for
aotishim (``aotishim.export.compile_exported``) and the usual way for
``torch._inductor.aoti_load_package``; each side is measured in a fresh
process. Per call, median over batches of back-to-back calls, by wall clock
(on cuda each batch ends with a device-wide synchronize, so the time
covers the work queued on every stream):

* ``numpy -> numpy``: aotishim's ``model.run(*arrays)``;
* ``dlpack -> dlpack``: ``model.run(*torch_tensors, outputs="dlpack")``,
  inputs borrowed and outputs left on the device (for cuda, ordered with
  torch's current stream);
* ``dlpack -> numpy``: torch tensors in, numpy arrays out;
* torch's runner on the same torch tensors (``runner(*tensors)``).

    python benchmarks/run_overhead.py [--device cuda] [--batches 30] [--calls 200] [--json r.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

WORKER = r"""
import json, statistics, sys, time
side, path, inputs_path, device, batches, calls = sys.argv[1:7]
batches, calls = int(batches), int(calls)
import numpy as np
import torch
arrays = [a for a in np.load(inputs_path).values()]
tensors = [torch.from_numpy(a).to(device) for a in arrays]
cuda = device.startswith("cuda")

def per_call(fn):
    for _ in range(max(calls // 4, 10)):
        fn()
    if cuda:
        torch.cuda.synchronize()
    samples = []
    for _ in range(batches):
        t = time.perf_counter()
        for _ in range(calls):
            fn()
        if cuda:
            # Device-wide: aotishim queues its work on a stream of its own,
            # which events on torch's stream would not wait for.
            torch.cuda.synchronize()
        samples.append((time.perf_counter() - t) * 1e6 / calls)
    return statistics.median(samples)

def as_numpy(outs):
    return [np.asarray(torch.from_dlpack(o).cpu() if not isinstance(o, np.ndarray) else o,
                       dtype=np.float64).tolist() for o in outs]

result = {}
if side == "aotishim":
    import aotishim
    model = aotishim.load(path, device=device)
    result["numpy -> numpy"] = per_call(lambda: model.run(*arrays))
    result["dlpack -> dlpack"] = per_call(lambda: model.run(*tensors, outputs="dlpack"))
    result["dlpack -> numpy"] = per_call(lambda: model.run(*tensors))
    outputs = as_numpy(model.run(*tensors, outputs="dlpack"))
    model.close()
else:
    runner = torch._inductor.aoti_load_package(path)
    with torch.no_grad():
        result["torch runner"] = per_call(lambda: runner(*tensors))
        outs = runner(*tensors)
    outputs = [o.detach().cpu().double().tolist() for o in outs]
print(json.dumps({"us_per_call": result, "outputs": outputs}))
"""


def tiny_module():
    import torch

    class Tiny(torch.nn.Module):
        def forward(self, x, y):
            return x * 2 + y, x - y

    return Tiny()


def compile_pair(device: str, work: Path):
    import torch
    from aotishim import export

    torch.manual_seed(0)
    args = (torch.randn(8, 16, device=device), torch.randn(8, 16, device=device))
    ep = torch.export.export(tiny_module(), args)
    ours = export.compile_exported(ep, work / "aotishim", name="tiny", device=device)
    (work / "torch").mkdir(parents=True, exist_ok=True)
    theirs = torch._inductor.aoti_compile_and_package(ep, package_path=str(work / "torch" / "tiny.pt2"))
    return ours, Path(theirs), [a.cpu().numpy() for a in args]


def measure(side: str, path: Path, inputs: Path, device: str, batches: int, calls: int, env):
    out = subprocess.run([sys.executable, "-c", WORKER, side, str(path), str(inputs), device,
                          str(batches), str(calls)],
                         capture_output=True, text=True, env=env, check=False)
    if out.returncode != 0:
        how = (f"killed by signal {-out.returncode}" if out.returncode < 0
               else f"exit {out.returncode}")
        tail = out.stderr.strip().splitlines()[-3:]
        return {"failed": f"{how}" + (f": {' | '.join(tail)}" if tail else ", no message")}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu", help="cpu (default) or cuda[:N]")
    parser.add_argument("--batches", type=int, default=30)
    parser.add_argument("--calls", type=int, default=200, help="calls per timed batch")
    parser.add_argument("--threads", type=int, default=1,
                        help="OpenMP threads of both sides (a tiny model gains nothing from more)")
    parser.add_argument("--json", type=Path)
    ns = parser.parse_args()
    device = "cuda:0" if ns.device == "cuda" else ns.device

    import numpy as np

    env = dict(os.environ, OMP_NUM_THREADS=str(ns.threads))
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        ours, theirs, arrays = compile_pair(device, work)
        inputs = work / "inputs.npz"
        np.savez(inputs, *arrays)
        expected = [arrays[0] * 2 + arrays[1], arrays[0] - arrays[1]]
        rows, failures = {}, {}
        for side, path in (("aotishim", ours), ("torch", theirs)):
            # A side that crashes (torch's runner has, in a process on a GPU
            # machine) is reported, and the other side's figures still are.
            r = measure(side, path, inputs, device, ns.batches, ns.calls, env)
            if "failed" in r:
                failures[side] = r["failed"]
                continue
            for got, want in zip(r["outputs"], expected):
                err = float(np.max(np.abs(np.asarray(got) - want)))
                if err > 1e-5:
                    raise SystemExit(f"{side}: wrong outputs (max error {err:.3g})")
            rows.update(r["us_per_call"])

    torch_us = rows.get("torch runner")
    print(f"tiny model (x*2+y, x-y on 8x16 float32) on {device}, µs per call "
          f"(median of {ns.batches} batches of {ns.calls} calls)")
    print(f"{'path':28} {'µs/call':>9} {'/ torch runner':>15}")
    for name, us in rows.items():
        ratio = f"{us / torch_us:15.2f}" if torch_us else f"{'-':>15}"
        print(f"{name:28} {us:9.2f} {ratio}")
    for side, why in failures.items():
        print(f"{side}: worker failed ({why})")
    if ns.json:
        ns.json.write_text(json.dumps({"device": device, "us_per_call": rows,
                                       "failures": failures}, indent=2) + "\n")
    if failures:
        sys.exit(1)


if __name__ == "__main__":
    main()
