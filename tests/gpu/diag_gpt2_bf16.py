"""Which part of the bfloat16 GPT-2 goes wrong on cuda: the zoo model is
compiled in variants (attention through SDPA as exported; each SDPA backend
forced while compiling; the non-SDPA "eager" attention), each run on
aotishim and compared with torch eager (default settings). Prints, per
variant, the error relative to the output's scale and the fallback shims the
model imports. Run from the repository root:
    python tests/gpu/diag_gpt2_bf16.py OUT_DIR"""
from __future__ import annotations

import concurrent.futures as cf
import json
import subprocess
import sys
from pathlib import Path

VARIANTS = ["as_exported", "efficient", "cudnn", "flash", "math", "eager_attention"]


def worker(variant: str, out_dir: Path) -> dict:
    import contextlib

    import numpy as np
    import torch
    from torch.nn.attention import SDPBackend, sdpa_kernel

    import aotishim
    from aotishim import _core, export
    from aotishim.zoo import real

    torch.backends.cuda.matmul.allow_tf32 = False
    zm = real.build("hf_gpt2_bf16")
    module = zm.module.cuda().eval()
    args = tuple(a.cuda() for a in zm.args)
    with torch.no_grad():
        want = module(*args).float().cpu().numpy()
    if variant == "eager_attention":
        for m in module.modules():
            if hasattr(m, "config"):
                m.config._attn_implementation = "eager"
    backend = {"efficient": SDPBackend.EFFICIENT_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
               "flash": SDPBackend.FLASH_ATTENTION, "math": SDPBackend.MATH}.get(variant)
    ctx = sdpa_kernel([backend]) if backend is not None else contextlib.nullcontext()
    r: dict = {"variant": variant}
    try:
        with ctx, torch.no_grad():
            torch_out = module(*args).float().cpu().numpy()
            so = export.compile(module, args, out_dir / variant, name="gpt2_bf16", device="cuda")
    except Exception as e:  # a backend that cannot take this problem
        r["compile_error"] = str(e).splitlines()[0][:200]
        return r
    scale = float(np.abs(want).max())
    r["torch_backend_err"] = float(np.abs(torch_out - want).max()) / scale
    r["shims"] = sorted(s for s in _core.inspect_library(str(so))["needed_shims"]
                        if s.startswith("aoti_torch_cuda_") and "stream" not in s
                        and "guard" not in s)
    with aotishim.load(so, device="cuda") as model:
        got = model.run(*[a.cpu().numpy() for a in args])[0]
    got = np.asarray(got, dtype=np.float32)
    r["aotishim_err"] = float(np.abs(got - want).max()) / scale
    return r


def main() -> None:
    if sys.argv[1] == "--worker":
        print(json.dumps(worker(sys.argv[2], Path(sys.argv[3]))))
        return
    out_dir = Path(sys.argv[1])
    out_dir.mkdir(parents=True, exist_ok=True)

    def one(v: str) -> dict:
        p = subprocess.run([sys.executable, __file__, "--worker", v, str(out_dir)],
                           capture_output=True, text=True, timeout=400)
        lines = p.stdout.strip().splitlines()
        if p.returncode != 0 or not lines:
            return {"variant": v, "crash": (p.stderr.strip().splitlines() or ["?"])[-1][:300]}
        return json.loads(lines[-1])

    with cf.ThreadPoolExecutor(len(VARIANTS)) as pool:
        for r in pool.map(one, VARIANTS):
            print("GPT2BF16", json.dumps(r), flush=True)


if __name__ == "__main__":
    main()
