"""Loading a .pt2 package: aotishim against torch's loader on the CPU.

Each module is compiled once, with aotishim's configuration
(``link_libtorch=False``, weights in a binary blob), into one ``.pt2``; both
runtimes load that same file. Every measurement is a fresh process:

* ``import``: importing the runtime (aotishim never imports torch)
* ``load``: ``aotishim.load(path)`` (also from the package's ``bytes``, and from
  the folder it was extracted into; and with ``mmap_weights=True`` from the
  path and the folder) against ``torch._inductor.aoti_load_package``
* ``load RSS``: resident memory the load added (VmRSS after minus before)
* ``peak RSS``: the process's VmHWM after loading and one run

torch's loader gets the package's library to resolve its ``aoti_torch_*``
imports against libtorch by importing torch with ``TORCH_USE_RTLD_GLOBAL=1``
(without it, dlopen fails with "undefined symbol: aoti_torch_dtype_float32").

Each side runs ``--repeat`` fresh processes; the table gives medians and
the ratios aotishim / torch (below 1: aotishim is faster or lighter).

    python benchmarks/load_vs_torch.py [--repeat 5] [--out results/load_vs_torch.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

WORKER = r"""
import json, os, sys, time
def status(key):
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith(key)) / 1024
kind, path, inputs_path = sys.argv[1], sys.argv[2], sys.argv[3]
import numpy as np
inputs = [a for a in np.load(inputs_path).values()]
t = time.perf_counter()
if kind.startswith("aotishim"):
    import aotishim
else:
    # The package's library imports the shim (link_libtorch=False): torch's
    # copy of it must be visible to libraries torch's loader dlopens.
    os.environ["TORCH_USE_RTLD_GLOBAL"] = "1"
    import torch
t_import = time.perf_counter() - t
source = open(path, "rb").read() if kind.startswith("aotishim bytes") else path
rss0 = status("VmRSS")
t = time.perf_counter()
if kind.startswith("aotishim"):
    model = aotishim.load(source, mmap_weights=kind.endswith("mmap"))
else:
    model = torch._inductor.aoti_load_package(path)
t_load = time.perf_counter() - t
rss1 = status("VmRSS")
if kind.startswith("aotishim"):
    outs = model(*inputs)
else:
    outs = model(*[torch.from_numpy(a) for a in inputs])
    outs = [o.detach().numpy() for o in (outs if isinstance(outs, (list, tuple)) else [outs])]
print(json.dumps({"import": t_import, "load": t_load, "load_rss_mb": rss1 - rss0,
                  "peak_rss_mb": status("VmHWM"),
                  "output": np.asarray(outs[0], dtype=np.float64).ravel()[:64].tolist()}))
"""


def models():
    import torch

    class MLP(torch.nn.Module):
        def __init__(self, widths):
            super().__init__()
            self.layers = torch.nn.ModuleList(
                torch.nn.Linear(a, b) for a, b in zip(widths, widths[1:]))

        def forward(self, x):
            for i, layer in enumerate(self.layers):
                x = layer(x)
                if i + 1 < len(self.layers):
                    x = torch.relu(x)
            return x

    torch.manual_seed(0)
    return {
        "mlp 512-1024-1024-256 (6 MiB of weights)":
            (MLP([512, 1024, 1024, 256]).eval(), (torch.randn(8, 512),)),
        "mlp 2048 x 5 layers (64 MiB of weights)":
            (MLP([2048] * 5).eval(), (torch.randn(8, 2048),)),
    }


def compile_package(name: str, module, args, workdir: Path) -> Path:
    import torch
    from aotishim import export

    slug = "".join(c if c.isalnum() else "_" for c in name.split("(")[0]).strip("_")
    package = workdir / f"{slug}.pt2"
    ep = torch.export.export(module, args)
    torch._inductor.aoti_compile_and_package(ep, package_path=str(package),
                                             inductor_configs=export.inductor_configs("cpu"))
    return package


def measure(kind: str, path: Path, inputs_path: Path, env: dict) -> dict:
    out = subprocess.run([sys.executable, "-c", WORKER, kind, str(path), str(inputs_path)],
                         capture_output=True, text=True, env=env, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{kind} worker failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", type=Path)
    ns = parser.parse_args()

    import numpy as np
    import torch

    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    metrics = ["import", "load", "load_rss_mb", "peak_rss_mb"]
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for name, (module, args) in models().items():
            package = compile_package(name, module, args, work)
            folder = work / (package.stem + "_extracted")
            with zipfile.ZipFile(package) as z:
                z.extractall(folder)
            inputs_path = work / "inputs.npz"
            np.savez(inputs_path, *[a.numpy() for a in args])
            with torch.no_grad():
                expected = module(*args).double().numpy().ravel()[:64]
            row = {"model": name, "package_mb": package.stat().st_size / 2**20}
            sides = {"aotishim": package, "aotishim bytes": package, "aotishim folder": folder,
                     "aotishim mmap": package, "aotishim folder mmap": folder,
                     "torch": package}
            for kind, path in sides.items():
                runs = [measure(kind, path, inputs_path, env) for _ in range(ns.repeat)]
                err = max(float(np.max(np.abs(np.asarray(r.pop("output")) - expected)))
                          for r in runs)
                row[kind] = {m: statistics.median(r[m] for r in runs) for m in metrics}
                row[kind]["max_abs_err"] = err
            results.append(row)

    kinds = [k for k in results[0] if k.startswith(("aotishim", "torch"))] if results else []
    print(f"\n{'model':42} {'metric':12} {'side':20} {'value':>10} {'/ torch':>8}")
    for row in results:
        for m in metrics:
            unit, scale = ("MiB", 1) if m.endswith("mb") else ("ms", 1e3)
            t = row["torch"][m]
            for kind in kinds:
                v = row[kind][m]
                ratio = f"{v / t:8.2f}" if t > 0 else "       -"
                print(f"{row['model']:42} {m:12} {kind:20} {v * scale:8.1f}{unit:>3} {ratio}")
        errs = ", ".join(f"{k} {row[k]['max_abs_err']:.1e}" for k in kinds)
        print(f"{row['model']:42} max abs error vs eager: {errs}")
    if ns.out:
        ns.out.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
