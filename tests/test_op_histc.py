"""aoti_torch_cpu_histc against torch beyond its OpInfo samples
(tests/test_opinfo.py): the data's own range, edges, NaN, errors, and a
compiled MoE-routing model that falls back to it."""

from __future__ import annotations

import pytest
import torch

from aotishim import shim
from aotishim._core import ShimError
from torch_views import to_shim, to_torch


def check(x, bins, lo, hi):
    got = shim.call_op("histc", to_shim(x), bins, float(lo), float(hi), entry="cpu")
    try:
        want = torch.histc(x, bins, lo, hi)
        assert got.sizes == [bins] and got.strides == [1] and got.dtype == str(x.dtype)[6:]
        assert torch.equal(to_torch(got), want), (to_torch(got), want)
    finally:
        shim.delete(got)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
def test_histc_matches_torch(dtype):
    g = torch.Generator().manual_seed(4)
    x = (torch.randn(1000, generator=g) * 3).to(dtype)
    check(x, 100, 0, 0)  # the data's own range
    check(x, 7, -2, 2.5)  # some elements outside
    check(torch.arange(11, dtype=dtype), 10, 0, 10)  # on every edge, max in the last bin
    check(torch.randint(0, 8, (500,), generator=g).to(dtype), 8, 0, 7)  # expert ids
    check(torch.full((5,), 3.0, dtype=dtype), 4, 0, 0)  # one value: [2, 4]
    check(torch.zeros(0, dtype=dtype), 5, 0, 0)  # empty: [-1, 1]
    check(torch.tensor([1.0, float("nan"), 2.0], dtype=dtype), 3, 0, 3)  # NaN not counted


def test_histc_errors():
    with pytest.raises(ShimError, match="bins must be > 0"):
        shim.call_op("histc", to_shim(torch.zeros(3)), 0, 0.0, 1.0, entry="cpu")
    with pytest.raises(ShimError, match="max must be larger than min"):
        shim.call_op("histc", to_shim(torch.zeros(3)), 4, 2.0, 1.0, entry="cpu")
    with pytest.raises(ShimError, match="must be floating point"):
        shim.call_op("histc", to_shim(torch.zeros(3, dtype=torch.int64)), 4, 0.0, 1.0, entry="cpu")
    with pytest.raises(ShimError, match="is not finite"):  # the data's range holds NaN
        shim.call_op("histc", to_shim(torch.tensor([1.0, float("nan")])), 4, 0.0, 0.0,
                     entry="cpu")
    with pytest.raises(ShimError, match="is not finite"):
        shim.call_op("histc", to_shim(torch.tensor([1.0])), 4, 0.0, float("inf"), entry="cpu")


def test_compiled_expert_counts_match_eager(model_cache):
    from op_models import ExpertCounts, check_model

    logits = torch.randn(64, 8, generator=torch.Generator().manual_seed(0))
    check_model(model_cache, "op_histc_expert_counts", ExpertCounts(), (logits,), rtol=0, atol=0)
