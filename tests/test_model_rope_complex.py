"""Rotary position embeddings written with complex numbers, as the reference
Llama code writes them (view_as_complex, a multiply by freqs_cis,
view_as_real, flatten), compiled for the cpu and run on aotishim against
eager. Inductor does not generate code for complex arithmetic: it calls the
view_as_complex, reshape, mul_Tensor and view_as_real fallbacks."""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

import aotishim
from aotishim import export

torch = pytest.importorskip("torch")


def precompute_freqs_cis(dim: int, end: int, theta: float = 10000.0) -> torch.Tensor:
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = torch.arange(end, device=freqs.device)
    freqs = torch.outer(t, freqs).float()
    return torch.polar(torch.ones_like(freqs), freqs)


def reshape_for_broadcast(freqs_cis: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    ndim = x.ndim
    shape = [d if i == 1 or i == ndim - 1 else 1 for i, d in enumerate(x.shape)]
    return freqs_cis.view(*shape)


class Rope(torch.nn.Module):
    def __init__(self, head_dim: int, seq_len: int) -> None:
        super().__init__()
        self.register_buffer("freqs_cis", precompute_freqs_cis(head_dim, seq_len))

    def forward(self, xq: torch.Tensor, xk: torch.Tensor):
        xq_ = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
        xk_ = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
        freqs_cis = reshape_for_broadcast(self.freqs_cis, xq_)
        xq_out = torch.view_as_real(xq_ * freqs_cis).flatten(3)
        xk_out = torch.view_as_real(xk_ * freqs_cis).flatten(3)
        return xq_out.type_as(xq), xk_out.type_as(xk)


@pytest.fixture(scope="module")
def rope(model_cache):
    module = Rope(head_dim=16, seq_len=8).eval()
    args = (torch.randn(2, 8, 4, 16), torch.randn(2, 8, 2, 16))
    so = export.compile_cached(module, args, model_cache, name="rope_complex")
    with aotishim.load(so) as model:
        yield model, module, so


def test_rope_matches_eager(rope):
    model, module, _ = rope
    g = torch.Generator().manual_seed(11)
    xq, xk = torch.randn(2, 8, 4, 16, generator=g), torch.randn(2, 8, 2, 16, generator=g)
    with torch.no_grad():
        want_q, want_k = module(xq, xk)
    for _ in range(2):  # the second run reuses the loaded model
        got_q, got_k = model.run(xq.numpy(), xk.numpy())
        assert got_q.dtype == np.float32 and got_q.shape == (2, 8, 4, 16)
        # complex64 products in float32, as eager computes them
        np.testing.assert_allclose(got_q, want_q.numpy(), rtol=1e-6, atol=1e-6)
        np.testing.assert_allclose(got_k, want_k.numpy(), rtol=1e-6, atol=1e-6)


def test_rope_runs_through_the_complex_fallbacks(rope):
    _, _, so = rope
    if shutil.which("nm") is None:
        pytest.skip("nm is not installed")
    imported = subprocess.run(["nm", "-D", "--undefined-only", str(so)], capture_output=True,
                              text=True, check=True).stdout
    for shim_name in ["aoti_torch_cpu_view_as_complex", "aoti_torch_cpu_mul_Tensor",
                      "aoti_torch_cpu_view_as_real", "aoti_torch_cpu_reshape"]:
        assert shim_name in imported
