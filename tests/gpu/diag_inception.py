"""Where torchvision's inception_v3 goes wrong on cuda: the whole model and
each of its top-level blocks compiled alone for cuda, each run by aotishim
on the input the block sees in the model, against float64 on the CPU, with
TF32-off eager beside it. Prints one "INCEPTION" line per piece.

    python tests/gpu/diag_inception.py OUT_DIR [--blocks a,b]
"""

from __future__ import annotations

import argparse
import copy
import os
import shutil
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
import torch

torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False


def build_model() -> torch.nn.Module:
    from aotishim.zoo._torchvision import import_torchvision
    torchvision = import_torchvision()
    torch.manual_seed(0)
    return torchvision.models.inception_v3(weights=None, aux_logits=False,
                                           init_weights=True).eval()


class Whole(torch.nn.Module):
    def __init__(self, m):
        super().__init__()
        self.m = m

    def forward(self, x):
        return self.m(x)


def pieces(model: torch.nn.Module, x: torch.Tensor) -> dict[str, tuple[torch.nn.Module, torch.Tensor]]:
    """Each top-level block with the input it sees in the model (float32, cpu)."""
    seen: dict[str, torch.Tensor] = {}
    hooks = []
    for name, child in model.named_children():
        if isinstance(child, torch.nn.Module) and name not in ("dropout", "fc", "avgpool"):
            hooks.append(child.register_forward_pre_hook(
                lambda mod, args, name=name: seen.__setitem__(name, args[0].detach().clone())))
    with torch.no_grad():
        model(x)
    for h in hooks:
        h.remove()
    out = {"whole": (Whole(model), x)}
    for name, child in model.named_children():
        if name in seen:
            out[name] = (child, seen[name])
    return out


def compile_one(args) -> tuple[str, str, float]:
    name, module, x, out_dir = args
    from aotishim import export
    t0 = time.time()
    so = export.compile(module.cuda(), (x.cuda(),), out_dir, name=name, device="cuda")
    return name, str(so), time.time() - t0


def rel(a: torch.Tensor, ref: torch.Tensor) -> float:
    return ((a.double() - ref).norm() / ref.norm()).item()


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("out")
    p.add_argument("--blocks", default="")
    p.add_argument("--jobs", type=int, default=6)
    a = p.parse_args()
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    model = build_model()
    x = torch.randn(1, 3, 299, 299, generator=torch.Generator().manual_seed(1))
    parts = pieces(model, x)
    if a.blocks:
        parts = {k: v for k, v in parts.items() if k in a.blocks.split(",")}
    jobs = [(n, copy.deepcopy(m), inp, str(out / "models")) for n, (m, inp) in parts.items()]
    ctx = torch.multiprocessing.get_context("spawn")
    compiled: dict[str, str] = {}
    with ProcessPoolExecutor(max_workers=a.jobs, mp_context=ctx) as pool:
        for name, so, secs in pool.map(compile_one, jobs):
            compiled[name] = so
            print(f"compiled {name} in {secs:.0f} s", flush=True)

    import aotishim
    torch.set_grad_enabled(False)
    for name, (module, inp) in parts.items():
        ref = copy.deepcopy(module).double()(inp.double()).detach()
        eager = copy.deepcopy(module).cuda()(inp.cuda()).detach().cpu()
        with aotishim.load(compiled[name], device="cuda") as m:
            (y,) = m(inp.numpy())
        got = torch.from_numpy(np.asarray(y, dtype=np.float64))
        print(f"INCEPTION {name}: aotishim {rel(got, ref):.2e}, eager tf32-off "
              f"{rel(eager, ref):.2e}, shape {tuple(ref.shape)}", flush=True)
    # The generated wrapper code of each piece, to read the strides it expects.
    cache = os.environ.get("TORCHINDUCTOR_CACHE_DIR")
    if cache:
        src = out / "wrappers"
        src.mkdir(exist_ok=True)
        for f in Path(cache).rglob("*.cpp"):
            if "aoti_torch_cuda_convolution" in f.read_text(errors="replace"):
                shutil.copy(f, src / f.name)
        shutil.make_archive(str(out / "wrappers"), "gztar", src)
    return 0


if __name__ == "__main__":
    sys.exit(main())
