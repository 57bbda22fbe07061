"""The matrix products beyond mm/addmm/bmm against torch: baddbmm_out
(tests/test_opinfo.py runs torch's samples in every layout; here the
error paths and a compiled model that falls back to it)."""

from __future__ import annotations

import pytest
import torch

from aotishim import shim
from aotishim._core import ShimError
from torch_views import to_shim, to_torch


def baddbmm(out, self, b1, b2, beta, alpha):
    shim.call_op("baddbmm_out", out, self, b1, b2, beta, alpha, entry="cpu")


def test_baddbmm_beta_zero_ignores_nan_in_self():
    g = torch.Generator().manual_seed(1)
    b1, b2 = torch.randn(3, 4, 5, generator=g), torch.randn(3, 5, 6, generator=g)
    self = torch.full((3, 4, 6), float("nan"))
    out = shim.empty_strided([3, 4, 6], None, "float32")
    try:
        baddbmm(out, to_shim(self), to_shim(b1), to_shim(b2), 0.0, 2.0)
        want = torch.baddbmm(self, b1, b2, beta=0.0, alpha=2.0)
        torch.testing.assert_close(to_torch(out), want)
    finally:
        shim.delete(out)


@pytest.mark.parametrize("sizes,message", [
    (((3, 4, 6), (3, 4, 5), (2, 5, 6), (3, 4, 6)), "batch sizes differ"),
    (((3, 4, 6), (3, 4, 5), (3, 4, 6), (3, 4, 6)), "cannot be multiplied"),
    (((3, 4, 6), (3, 4, 5), (3, 5, 6), (3, 4, 7)), "out has sizes"),
    (((2, 4, 6), (3, 4, 5), (3, 5, 6), (3, 4, 6)), "cannot be broadcast"),
    (((3, 4, 6), (4, 5), (3, 5, 6), (3, 4, 6)), "batch1 must be 3-D"),
])
def test_baddbmm_shape_errors(sizes, message):
    self, b1, b2, out = (to_shim(torch.zeros(s)) for s in sizes)
    with pytest.raises(ShimError, match=message):
        baddbmm(out, self, b1, b2, 1.0, 1.0)


def test_baddbmm_dtype_errors():
    f, d = torch.zeros(2, 3, 3), torch.zeros(2, 3, 3, dtype=torch.float64)
    with pytest.raises(ShimError, match="dtype mismatch"):
        baddbmm(to_shim(f), to_shim(d), to_shim(f), to_shim(f), 1.0, 1.0)
    i = torch.zeros(2, 3, 3, dtype=torch.int64)
    with pytest.raises(ShimError, match="unsupported dtype int64"):
        baddbmm(to_shim(i), to_shim(i), to_shim(i), to_shim(i), 1.0, 1.0)


def test_compiled_alibi_scores_match_eager(model_cache):
    from op_models import AlibiScores, check_model

    g = torch.Generator().manual_seed(0)
    alibi = torch.randn(8, 1, 12, generator=g)  # (batch * heads, 1, keys), broadcast over queries
    q, k = torch.randn(8, 12, 64, generator=g), torch.randn(8, 12, 64, generator=g)
    check_model(model_cache, "op_baddbmm_alibi", AlibiScores(), (alibi, q, k),
                rtol=1e-5, atol=1e-6)
