"""aoti_torch_cpu_sort_stable against torch: values and int64 indices
bit for bit, stable and unstable (torch's own tie order), NaN placement,
strided views at offsets."""

from __future__ import annotations

import pytest
import torch

from aotishim import shim
from aotishim._core import ShimError
from torch_views import same, to_shim, to_torch


def check(x, stable, dim, descending, entry="cpu"):
    v, i = shim.call_op("sort_stable", to_shim(x), stable, dim, int(descending), entry=entry)
    kwargs = {} if stable is None else {"stable": bool(stable)}
    want = torch.sort(x, dim=dim, descending=descending, **kwargs)
    try:
        assert v.sizes == list(x.shape) and v.strides == list(want.values.contiguous().stride())
        assert same(to_torch(v), want.values)
        assert same(to_torch(i), want.indices), (x, to_torch(i), want.indices)
    finally:
        shim.delete(v)
        shim.delete(i)


def views(x):
    yield x
    yield x.transpose(0, -1)
    big = torch.cat([x, x], dim=-1)
    yield big[..., 1::2]
    yield big[..., x.shape[-1]:]  # at an offset


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64, torch.int64,
                                   torch.int32, torch.bool])
@pytest.mark.parametrize("stable", [None, 0, 1])
def test_sort_matches_torch_with_ties(dtype, stable):
    gen = torch.Generator().manual_seed(2)
    for shape in [(8, 100), (3, 40, 5), (50, 3)]:
        x = torch.randint(-3, 4, shape, generator=gen).to(dtype)
        for v in views(x):
            for dim in range(-v.dim(), v.dim()):
                for descending in (False, True):
                    check(v, stable, dim, descending)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_sort_nan_and_signed_zero(dtype):
    nan, inf = float("nan"), float("inf")
    x = torch.tensor([3.0, nan, -0.0, 0.0, -inf, nan, 1.0, inf, -0.0, 2.0] * 5, dtype=dtype)
    for descending in (False, True):
        for stable in (None, 1):
            check(x, stable, 0, descending)


def test_sort_zero_dim_and_empty():
    check(torch.tensor(1.5), None, 0, False)
    check(torch.zeros(0, 3), 1, 0, True)
    check(torch.zeros(2, 0), 1, 1, False)


def test_sort_device_generic_entry():
    check(torch.randn(5, 6), 1, 0, False, entry=None)


def test_sort_dim_out_of_range():
    t = to_shim(torch.randn(3, 4))
    with pytest.raises(ShimError, match="dimension out of range"):
        shim.call_op("sort_stable", t, None, 2, 0, entry="cpu")
    shim.delete(t)
