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
    python benchmarks/load_vs_torch.py --device cuda   # on a GPU machine

With ``--device cuda`` the modules are compiled for and loaded on the GPU
(the mmap sides are left out: they are for cpu models), and ``device`` is
the GPU memory in use after the load and one run above what it was once CUDA
was initialised in that process (``cudaMemGetInfo``: the whole GPU's, so
nothing else should run on it meanwhile).
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
import ctypes, json, os, sys, time
def status(key):
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith(key)) / 1024
kind, path, inputs_path, device = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
cuda = device.startswith("cuda")
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
def cudart():
    # The runtime aotishim's cuda plugin loaded (first), else any that loads.
    for mode in (os.RTLD_NOLOAD | os.RTLD_NOW, ctypes.DEFAULT_MODE):
        for lib in ("libcudart.so.13", "libcudart.so.12"):
            try:
                return ctypes.CDLL(lib, mode=mode)
            except OSError:
                pass
    raise OSError("no CUDA runtime could be loaded")
def device_used_mb():
    # The whole GPU's use (cudaMemGetInfo): the benchmark wants it to itself.
    if kind.startswith("aotishim"):
        free, total = ctypes.c_size_t(), ctypes.c_size_t()
        assert cudart().cudaMemGetInfo(ctypes.byref(free), ctypes.byref(total)) == 0
        return (total.value - free.value) / 2**20
    free, total = torch.cuda.mem_get_info()
    return (total - free) / 2**20
if cuda:
    # CUDA initialised before the baseline: the context is not the load's.
    if kind.startswith("aotishim"):
        aotishim.synchronize(device)
    else:
        torch.zeros(1, device=device)
        torch.cuda.synchronize()
    dev0 = device_used_mb()
source = open(path, "rb").read() if kind.startswith("aotishim bytes") else path
rss0 = status("VmRSS")
t = time.perf_counter()
if kind.startswith("aotishim"):
    model = aotishim.load(source, device=device, mmap_weights=kind.endswith("mmap"))
else:
    model = torch._inductor.aoti_load_package(path)
if cuda and not kind.startswith("aotishim"):
    torch.cuda.synchronize()
t_load = time.perf_counter() - t
rss1 = status("VmRSS")
dev1 = device_used_mb() if cuda else 0.0
if kind.startswith("aotishim"):
    outs = model(*inputs)
else:
    outs = model(*[torch.from_numpy(a).to(device) for a in inputs])
    outs = [o.detach().cpu().numpy() for o in (outs if isinstance(outs, (list, tuple)) else [outs])]
result = {"import": t_import, "load": t_load, "load_rss_mb": rss1 - rss0,
          "peak_rss_mb": status("VmHWM"),
          "output": np.asarray(outs[0], dtype=np.float64).ravel()[:64].tolist()}
if cuda:
    result["device_mb"] = max(dev1, device_used_mb()) - dev0
print(json.dumps(result))
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


def compile_package(name: str, module, args, workdir: Path, device: str) -> Path:
    import torch
    from aotishim import export

    slug = "".join(c if c.isalnum() else "_" for c in name.split("(")[0]).strip("_")
    package = workdir / f"{slug}.pt2"
    ep = torch.export.export(module.to(device), tuple(a.to(device) for a in args))
    torch._inductor.aoti_compile_and_package(ep, package_path=str(package),
                                             inductor_configs=export.inductor_configs(device))
    module.to("cpu")
    return package


def measure(kind: str, path: Path, inputs_path: Path, env: dict, device: str) -> dict:
    out = subprocess.run([sys.executable, "-c", WORKER, kind, str(path), str(inputs_path),
                          device], capture_output=True, text=True, env=env, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{kind} worker failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--device", default="cpu",
                        help="cpu (default) or cuda[:N]: compiled for and loaded on it; the "
                             "table adds the device memory the load and one run took")
    ns = parser.parse_args()

    import numpy as np
    import torch

    cuda = ns.device.startswith("cuda")
    if cuda:
        torch.backends.cuda.matmul.allow_tf32 = False  # eager's reference, as the models run
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    metrics = ["import", "load", "load_rss_mb", "peak_rss_mb"] + (["device_mb"] if cuda else [])
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for name, (module, args) in models().items():
            package = compile_package(name, module, args, work, ns.device)
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
            if cuda:  # mmap_weights is for cpu models: a cuda model uploads its weights
                sides = {k: v for k, v in sides.items() if not k.endswith("mmap")}
            for kind, path in sides.items():
                runs = [measure(kind, path, inputs_path, env, ns.device)
                        for _ in range(ns.repeat)]
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
            if row["torch"].get(m) is None:
                continue
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
