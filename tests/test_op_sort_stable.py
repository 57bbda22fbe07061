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
        # torch lays both outputs out in self's dimension order (self's own
        # strides when it is dense); generated code assumes that layout.
        assert v.sizes == list(x.shape) and v.strides == list(want.values.stride()), (
            x.stride(), v.strides, want.values.stride())
        assert i.strides == list(want.indices.stride())
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


def layouts():
    """Dense permutations, gaps, size-1 dims with odd strides, broadcasts."""
    gen = torch.Generator().manual_seed(5)
    base = torch.randn(4, 5, 6, generator=gen)
    yield base.permute(0, 2, 1)
    yield base.permute(2, 1, 0)
    yield torch.randn(5, 6, generator=gen).t()
    yield torch.randn(4, 5, 12, generator=gen)[:, :, ::2]
    yield torch.randn(4, 5, 12, generator=gen)[:, :, ::2].permute(2, 0, 1)
    yield torch.randn(4, 1, 6, generator=gen).permute(2, 1, 0)
    yield torch.randn(24, generator=gen).as_strided((4, 1, 6), (6, 100, 1))
    yield torch.randn(4, 1, 6, generator=gen).expand(4, 5, 6)
    yield torch.randn(2, 3, 4, 5, generator=gen).to(memory_format=torch.channels_last)
    yield torch.randn(100, generator=gen)[7:67].view(4, 15).t()


def test_sort_output_layout_follows_self():
    for x in layouts():
        for dim in range(x.dim()):
            check(x, 1, dim, False)
            check(x, None, dim, True)


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


def test_compiled_sort_of_permuted_view_matches_eager(model_cache):
    from op_models import SortPermuted, check_model

    x = torch.randn(3, 5, 7, generator=torch.Generator().manual_seed(0))
    check_model(model_cache, "op_sort_permuted", SortPermuted(), (x,), rtol=0, atol=0)
