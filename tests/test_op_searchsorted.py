"""aoti_torch_cpu_searchsorted_Tensor against torch: 1-D and N-D boundaries,
left/right and side, sorter, int32/int64 output, NaN, mixed dtypes, views,
and torch's errors."""

from __future__ import annotations

import pytest
import torch

from aotishim import shim
from aotishim._core import ShimError
from torch_views import same, to_shim, to_torch


def call(seq, values, out_int32=False, right=False, side=None, sorter=None, entry="cpu"):
    args = [to_shim(seq), to_shim(values), int(out_int32), int(right), side,
            None if sorter is None else to_shim(sorter)]
    return shim.call_op("searchsorted_Tensor", *args, entry=entry)


def check(seq, values, **kw):
    r = call(seq, values, **kw)
    want = torch.searchsorted(seq, values, **{k: v for k, v in kw.items() if k != "entry"})
    try:
        assert r.strides == list(want.contiguous().stride())
        assert same(to_torch(r), want), (to_torch(r), want)
    finally:
        shim.delete(r)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64])
@pytest.mark.parametrize("right", [False, True])
@pytest.mark.parametrize("out_int32", [False, True])
def test_searchsorted_1d(dtype, right, out_int32):
    gen = torch.Generator().manual_seed(3)
    seq = torch.sort(torch.randint(-5, 6, (40,), generator=gen)).values.to(dtype)  # duplicates
    values = torch.randint(-7, 8, (6, 9), generator=gen).to(dtype)
    check(seq, values, right=right, out_int32=out_int32)
    check(seq, values.t(), right=right, out_int32=out_int32)  # transposed values
    check(torch.cat([seq, seq])[40:], values[1:, ::2], right=right)  # offset sequence
    check(seq, values[2, 3], right=right)  # 0-d value


@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_nd_with_sorter(side):
    gen = torch.Generator().manual_seed(4)
    seq = torch.randint(-4, 5, (3, 4, 10), generator=gen).float()  # unsorted, ties
    sorter = torch.argsort(seq, dim=-1, stable=True)
    values = torch.randint(-5, 6, (3, 4, 7), generator=gen).float()
    check(seq, values, side=side, sorter=sorter)
    check(torch.sort(seq, dim=-1).values, values, side=side)
    check(torch.sort(seq, dim=-1).values.transpose(0, 1), values.transpose(0, 1), side=side)


def test_searchsorted_nan_and_inf():
    nan, inf = float("nan"), float("inf")
    seq = torch.tensor([-inf, -1.0, 0.0, 0.0, 2.0, inf, nan, nan])
    values = torch.tensor([nan, -inf, inf, 0.0, -0.0, 1.0, 5.0])
    for right in (False, True):
        check(seq, values, right=right)


def test_searchsorted_mixed_dtypes_promote():
    check(torch.tensor([1, 2, 3]), torch.tensor([2.5, 2.0, -1.0]))
    check(torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64), torch.tensor([2.0, 2.5]))
    check(torch.tensor([1.0, 2.0], dtype=torch.bfloat16), torch.tensor([1.5], dtype=torch.float16))


def test_searchsorted_empty():
    check(torch.tensor([1.0, 2.0]), torch.zeros(0, 3))
    check(torch.zeros(0), torch.tensor([1.0, -1.0]))


def test_searchsorted_device_generic_entry():
    check(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([2.0]), entry=None)


@pytest.mark.parametrize("kw, message", [
    (dict(side="left", right=True), "side and right can't be set to opposites"),
    (dict(side="middle"), "side can only be 'left' or 'right' but got middle"),
    (dict(sorter=torch.tensor([0, 1, 5])), "sorter index out of range"),
    (dict(sorter=torch.tensor([0, -1, 2])), "sorter index out of range"),
    (dict(sorter=torch.tensor([0, 1])), "boundary and sorter must have the same size"),
    (dict(sorter=torch.tensor([0, 1, 2], dtype=torch.int32)), "sorter must be a tensor of long dtype"),
])
def test_searchsorted_errors(kw, message):
    with pytest.raises(ShimError, match=message):
        call(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([2.0]), **kw)
    with pytest.raises(RuntimeError, match=message):  # torch says the same
        torch.searchsorted(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([2.0]), **kw)


@pytest.mark.parametrize("seq, values, message", [
    (torch.ones(2, 3), torch.ones(3, 2), "first N-1 dimensions of boundaries tensor and input value"),
    (torch.ones(2, 3), torch.tensor(1.0), "input value can be a scalar only when boundaries tensor dimension is 1"),
    (torch.tensor(1.0), torch.ones(2), "boundaries tensor should have positive dimension"),
])
def test_searchsorted_shape_errors(seq, values, message):
    with pytest.raises(ShimError, match=message):
        call(seq, values)


def test_compiled_searchsorted_matches_eager(model_cache):
    from op_models import Searchsorted, SearchsortedRight2d, check_model

    gen = torch.Generator().manual_seed(0)
    s = torch.sort(torch.randn(64, generator=gen)).values
    check_model(model_cache, "op_searchsorted", Searchsorted(), (s, torch.randn(16, generator=gen)),
                rtol=0, atol=0)
    s2 = torch.randint(-3, 4, (4, 12), generator=gen).float()
    v2 = torch.randint(-4, 5, (4, 5), generator=gen).float()
    check_model(model_cache, "op_searchsorted_right_2d", SearchsortedRight2d(), (s2, v2),
                rtol=0, atol=0)
