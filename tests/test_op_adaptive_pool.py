"""_adaptive_avg_pool3d / adaptive_max_pool3d: NaN in a max window (torch
takes the last NaN), bad arguments, and a compiled model against eager
(OpInfo samples in all layouts are in tests/test_opinfo.py)."""

from __future__ import annotations

import pytest
import torch

from aotishim import shim
from aotishim._core import ShimError
from torch_views import same, to_shim, to_torch


def test_max_window_with_nan_and_ties():
    x = torch.tensor([1.0, 3.0, 3.0, float("nan"), 2.0, float("nan"), 3.0, 0.5]).view(1, 1, 2, 2, 2)
    for size in ([1, 1, 1], [2, 1, 1], [1, 2, 2], [2, 2, 2]):
        v, i = shim.call_op("adaptive_max_pool3d", to_shim(x), size, entry="cpu")
        want = torch.ops.aten.adaptive_max_pool3d(x, size)
        try:
            assert same(to_torch(v), want[0].contiguous()) and same(to_torch(i), want[1]), size
        finally:
            shim.delete(v)
            shim.delete(i)


def test_bad_arguments():
    with pytest.raises(ShimError, match="Expected 4D or 5D tensor"):
        shim.call_op("_adaptive_avg_pool3d", to_shim(torch.zeros(3, 4, 5)), [1, 1, 1], entry="cpu")
    with pytest.raises(ShimError, match="non-zero size for non-batch dimensions"):
        shim.call_op("_adaptive_avg_pool3d", to_shim(torch.zeros(1, 0, 2, 2, 2)), [1, 1, 1],
                     entry="cpu")
    with pytest.raises(ShimError, match="output_size.size\\(\\) must be 3"):
        shim.call_op("adaptive_max_pool3d", to_shim(torch.zeros(1, 2, 2, 2, 2)), [1, 1], entry="cpu")
    with pytest.raises(ShimError, match="int64 is not supported"):
        shim.call_op("adaptive_max_pool3d", to_shim(torch.zeros(1, 2, 2, 2, 2, dtype=torch.int64)),
                     [1, 1, 1], entry="cpu")


def test_compiled_adaptive_pool3d_matches_eager(model_cache):
    from op_models import AdaptivePool3d, check_model

    x = torch.randn(2, 3, 5, 7, 9, generator=torch.Generator().manual_seed(0))
    check_model(model_cache, "op_adaptive_pool3d", AdaptivePool3d(), (x,), rtol=1e-6, atol=1e-6)
