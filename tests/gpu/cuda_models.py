"""Real AOTInductor models compiled for CUDA (torch on the GPU machine), with
their eager outputs, shared by the GPU tests and the precompile step."""

from __future__ import annotations

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # tests/models.py

import torch  # noqa: E402

import models  # noqa: E402
from aotishim import export  # noqa: E402

# (model name, dtype): the chunk models are the views-at-offsets cases.
CASES = [
    ("linear_chunk_last_dim", "float32"),
    ("linear_chunk_first_dim", "float32"),
    ("linear_chunk_last_dim", "bfloat16"),
    ("linear_chunk_first_dim", "bfloat16"),
    ("repeated_output", "float32"),
    ("constant_output", "float32"),
    ("alias_input", "float32"),
    ("mlp", "float32"),
    ("residual_norm", "float32"),
    ("batched_matmul", "float32"),
    ("softmax_head", "float32"),
]


def cache_dir() -> Path:
    path = Path(os.environ.get("AOTISHIM_TEST_MODEL_CACHE", HERE.parents[1] / "build" / "test-models")) / "cuda"
    path.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", str(path / "inductor"))
    return path


def compile_cuda(name: str, dtype: str = "float32") -> models.Compiled:
    """Compiles (or finds in the cache) `name` for cuda; eager outputs from torch on cuda."""
    module, inputs = models.build(name, getattr(torch, dtype))
    so = export.compile_cached(module, inputs, cache_dir(), name=f"{name}_{dtype}_cuda",
                               device="cuda")
    module = module.to("cuda")
    with torch.no_grad():
        expected = module(*[x.to("cuda") for x in inputs])
    if isinstance(expected, torch.Tensor):
        expected = (expected,)
    return models.Compiled(f"{name}_{dtype}_cuda", so,
                           tuple(models.to_numpy(x) for x in inputs),
                           tuple(models.to_numpy(e) for e in expected), dtype)


def _compile_one(case: tuple[str, str]) -> str:
    return str(compile_cuda(*case).so)


if __name__ == "__main__":
    # Compile every case in parallel processes so the tests find them cached.
    import multiprocessing as mp

    with mp.get_context("spawn").Pool(min(len(CASES), os.cpu_count() or 1)) as pool:
        for case, so in zip(CASES, pool.map(_compile_one, CASES)):
            print(f"{case[0]:24s} {case[1]:9s} {so}", flush=True)
