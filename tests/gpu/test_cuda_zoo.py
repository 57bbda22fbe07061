"""Real models that need the cuda fallback kernels (attention, convolution,
topk, nonzero), compiled by AOTInductor for cuda with link_libtorch=False,
loaded with aotishim and compared with eager torch on the same GPU (TF32 off
on both sides). The models come from aotishim.zoo.real."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import aotishim

pytestmark = pytest.mark.skipif("cuda:0" not in aotishim.devices(),
                                reason="no CUDA device in this process")
torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("torch cannot use CUDA here", allow_module_level=True)
real = pytest.importorskip("aotishim.zoo.real", reason="the model zoo (aotishim.zoo.real) is not in this tree")

import cuda_models  # noqa: E402

# Compiled in the precompile step (cuda_models.py) when run through run_on_h200.sh.
NAMES = cuda_models.ZOO
TOL = {"float32": 1e-4, "bfloat16": 2e-2}


def to_numpy(x):
    x = x.detach().cpu()
    return x.float().numpy() if x.dtype == torch.bfloat16 else x.numpy()


def flat_outputs(out):
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, dict) or hasattr(out, "to_tuple"):
        out = out.to_tuple() if hasattr(out, "to_tuple") else tuple(out.values())
    return [t for o in out for t in flat_outputs(o)]


@pytest.fixture(autouse=True)
def no_tf32():
    old = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = old


@pytest.mark.parametrize("name", NAMES)
def test_zoo_model_on_cuda_matches_eager(name):
    if not real.available(name):
        pytest.skip(f"{name} needs a package that is not installed")
    zm, module, args, so = cuda_models.compile_zoo(name)
    with torch.no_grad():
        expected = [to_numpy(e) for e in flat_outputs(module(*args))]
    # Which shims the program needs, for the log.
    print(name, "shims:", sorted(set(re.findall(rb"aoti_torch_cuda_\w+", Path(so).read_bytes()))))
    inputs = _host_inputs(zm.args)
    with aotishim.load(so, device="cuda") as model:
        for _ in range(2):  # a second run catches state left by the first
            got = model.run(*inputs)
            assert len(got) == len(expected)
            for i, (g, w) in enumerate(zip(got, expected)):
                assert g.shape == w.shape, f"{name} output {i}: shape {g.shape} vs {w.shape}"
                if w.dtype.kind in "iub":
                    np.testing.assert_array_equal(g, w, err_msg=f"{name} output {i}")
                    continue
                g = np.asarray(g, dtype=np.float64)
                w = np.asarray(w, dtype=np.float64)
                scale = max(np.abs(w).max(initial=0.0), 1.0)
                err = np.abs(g - w).max(initial=0.0)
                assert err <= TOL[zm.dtype] * scale, f"{name} output {i}: max error {err:.3g} (scale {scale:.3g})"
    assert model.leaks == []


def _host_inputs(args):
    """Model inputs as numpy arrays (bfloat16 through ml_dtypes)."""
    import ml_dtypes
    out = []
    for a in args:
        a = a.detach().cpu()
        if a.dtype == torch.bfloat16:
            out.append(a.float().numpy().astype(ml_dtypes.bfloat16))
        else:
            out.append(a.numpy())
    return out
