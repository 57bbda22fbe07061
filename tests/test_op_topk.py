"""aoti_torch_cpu_topk against torch: values, int64 indices, ties and NaN
exactly as torch orders them, inputs as strided views at offsets."""

from __future__ import annotations

import pytest
import torch

from aotishim import shim
from aotishim._core import ShimError
from torch_views import same, to_shim, to_torch

DTYPES = [torch.float32, torch.bfloat16, torch.float64, torch.int64]


def layouts(shape, dtype, gen):
    """The same logical tensor as contiguous, transposed and offset/gapped views."""
    def fill(s):
        # Few distinct values: many ties, so tie order is checked too.
        x = torch.randint(-4, 5, s, generator=gen)
        return x.to(dtype) if dtype != torch.int64 else x
    yield fill(shape)
    if len(shape) >= 2:
        yield fill(shape[::-1]).transpose(0, -1) if len(shape) == 2 else fill(shape).transpose(0, 1)
        yield fill((shape[0] + 1,) + tuple(shape[1:-1]) + (shape[-1] * 2 + 1,))[1:, ..., 1::2]


def check(x, k, dim, largest, sorted_, entry="cpu"):
    v, i = shim.call_op("topk", to_shim(x), k, dim, int(largest), int(sorted_), entry=entry)
    want = torch.topk(x, k, dim, largest, sorted_)
    try:
        assert v.strides == list(want.values.stride()) and i.strides == list(want.indices.stride())
        assert same(to_torch(v), want.values)
        assert same(to_torch(i), want.indices)
    finally:
        shim.delete(v)
        shim.delete(i)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(8, 100), (3, 5, 7), (300,)])
def test_topk_matches_torch_with_ties(dtype, shape):
    gen = torch.Generator().manual_seed(1)
    for x in layouts(shape, dtype, gen):
        for dim in range(-x.dim(), x.dim()):
            n = x.shape[dim]
            for k in sorted({0, 1, 2, n // 3, n - 1, n} - {-1}):
                for largest in (True, False):
                    # sorted=False returns torch's selection order, which is checked too
                    for sorted_ in (True, False):
                        check(x, k, dim, largest, sorted_)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_topk_nan_is_largest(dtype):
    x = torch.tensor([[1.0, float("nan"), 3.0, 3.0, float("nan"), -1.0, 2.0, float("inf")]], dtype=dtype)
    x = x.repeat(3, 70)  # long rows take the partial-sort path for small k
    for k in (1, 2, 3, 5, x.shape[1]):
        for largest in (True, False):
            check(x, k, 1, largest, True)


def test_topk_zero_dim_and_empty():
    check(torch.tensor(2.5), 1, 0, True, True)
    check(torch.tensor(2.5), 0, -1, True, True)
    check(torch.zeros(0, 4), 2, 1, True, True)
    check(torch.zeros(3, 0), 0, 1, True, True)


def test_topk_device_generic_entry():
    check(torch.randn(4, 9), 3, 1, True, True, entry=None)


@pytest.mark.parametrize("k, dim, message", [
    (6, 1, "selected index k out of range"),
    (-1, 1, "selected index k out of range"),
    (1, 2, "dimension out of range"),
    (1, -3, "dimension out of range"),
])
def test_topk_errors(k, dim, message):
    t = to_shim(torch.randn(3, 5))
    with pytest.raises(ShimError, match=message):
        shim.call_op("topk", t, k, dim, 1, 1, entry="cpu")
    shim.delete(t)


def test_topk_rejects_bool():
    t = to_shim(torch.ones(4, dtype=torch.bool))
    with pytest.raises(ShimError, match="bool"):
        shim.call_op("topk", t, 1, 0, 1, 1)
    shim.delete(t)


def test_compiled_topk_sort_argmax_matches_eager(model_cache):
    from op_models import TopkSort, check_model

    x = torch.randn(8, 100, generator=torch.Generator().manual_seed(0))
    x[:, ::7] = x[:, :1]  # ties
    check_model(model_cache, "op_topk_sort_argmax", TopkSort(), (x,), rtol=0, atol=0)
