"""aoti_torch_cpu_nonzero against torch: indices in row-major order, int64,
torch's (n, ndim) layout with strides (1, n), every dtype, views."""

from __future__ import annotations

import pytest
import torch

from aotishim import shim
from torch_views import same, to_shim, to_torch


def check(x, entry="cpu"):
    r = shim.call_op("nonzero", to_shim(x), entry=entry)
    want = torch.nonzero(x)
    try:
        assert r.sizes == list(want.shape) and r.dtype == "int64"
        assert r.strides == list(want.stride()), (r.strides, want.stride())
        assert same(to_torch(r), want)
    finally:
        shim.delete(r)


@pytest.mark.parametrize("dtype", [torch.bool, torch.float32, torch.bfloat16, torch.int64,
                                   torch.uint8, torch.float16])
def test_nonzero_matches_torch(dtype):
    gen = torch.Generator().manual_seed(5)
    x = torch.randint(-1, 2, (6, 7, 5), generator=gen).to(dtype)
    check(x)
    check(x.transpose(0, 2))
    check(x[1:, ::2, 3:])
    check(x.reshape(-1))
    check(x[2, 3, 4])  # 0-d


def test_nonzero_nan_and_negative_zero():
    check(torch.tensor([0.0, -0.0, float("nan"), 1e-30, float("-inf")]))
    check(torch.tensor([0.0, -0.0, float("nan")], dtype=torch.bfloat16))


def test_nonzero_none_and_all():
    check(torch.zeros(4, 4))
    check(torch.ones(3, 2))
    check(torch.zeros(0, 3))
    check(torch.tensor(0.0))
    check(torch.tensor(3.0))


def test_nonzero_device_generic_entry():
    check(torch.tensor([[0.0, 1.0], [2.0, 0.0]]), entry=None)


def test_compiled_nonzero_matches_eager(model_cache):
    from op_models import Nonzero, check_model

    check_model(model_cache, "op_nonzero", Nonzero(),
                (torch.randn(8, 8, generator=torch.Generator().manual_seed(0)),), rtol=0, atol=0)
