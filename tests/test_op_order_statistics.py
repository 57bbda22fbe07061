"""kthvalue, median, nanmedian, mode, cummax / cummin and logcumsumexp
against torch on the cases torch's OpInfo samples leave out: NaN and
infinities, ties (cummax's latest index, mode's smallest value), empty and
0-d tensors, bad arguments; and a compiled model using all of them."""

from __future__ import annotations

import pytest
import torch

from aotishim import shim
from aotishim._core import ShimError
from torch_views import same, to_shim, to_torch

nan, inf = float("nan"), float("inf")


def call(op, x, *args):
    out = shim.call_op(op, to_shim(x), *args, entry="cpu")
    outs = out if isinstance(out, tuple) else (out,)
    try:
        return [(to_torch(o), o.strides) for o in outs]
    finally:
        for o in outs:
            shim.delete(o)


def test_kthvalue_orders_nan_last():
    x = torch.tensor([[1.0, nan, 0.0, 3.0], [nan, nan, -inf, 2.0]])
    for k in range(1, 5):
        (v, _), (i, _) = call("kthvalue", x, k, 1, 0)
        want = torch.kthvalue(x, k, 1)
        assert same(v, want.values), (k, v, want.values)
        assert same(x.gather(1, i[:, None])[:, 0], want.values)


def test_median_propagates_nan_and_nanmedian_skips_it():
    for x in [torch.tensor([2.0, nan, 1.0]), torch.tensor([[3.0, 1.0], [2.0, 4.0]]),
              torch.tensor([nan, nan]), torch.tensor([nan, 1.0, nan, 5.0, 3.0]),
              torch.tensor(7.0), torch.tensor([-inf, inf, 0.0, 0.0])]:
        for op in ("median", "nanmedian"):
            [(v, _)] = call(op, x)
            assert same(v, getattr(torch, op)(x)), (op, x, v)
    for x in [torch.zeros(0), torch.zeros(0, 3, dtype=torch.bfloat16)]:
        [(v, _)] = call("median", x)
        assert same(v, torch.median(x))


def test_median_of_an_empty_integer_tensor_is_refused():
    # torch returns an arbitrary number here
    with pytest.raises(ShimError, match="median of an empty int64 tensor"):
        call("median", torch.zeros(0, dtype=torch.int64))


def test_mode_picks_the_smallest_of_equally_frequent_values():
    x = torch.tensor([[1, 3, 3, 2, 2, 5, 1], [4, 4, 4, 0, 0, 0, 9]])
    (v, _), (i, _) = call("mode", x, 1, 0)
    want = torch.mode(x, 1)
    assert same(v, want.values) and same(i, want.indices), (v, i, want)


def test_cummax_cummin_ties_take_the_latest_index_and_nan_sticks():
    for x in [torch.tensor([1.0, 3.0, 3.0, nan, 2.0, nan, 5.0]),
              torch.tensor([0.0, -0.0, 0.0, -inf, inf, inf]),
              torch.tensor([[2, 2, 1], [1, 3, 3]], dtype=torch.int16),
              torch.tensor([True, False, True, True])]:
        for op in ("cummax", "cummin"):
            (v, _), (i, _) = call(op, x, -1)
            want = getattr(torch, op)(x, -1)
            assert same(v, want.values) and same(i, want.indices), (op, x, v, i, want)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_logcumsumexp_infinities_and_nan(dtype):
    x = torch.tensor([-inf, -inf, 1.0, inf, 2.0, nan, 3.0, 80.0, -80.0], dtype=dtype)
    [(v, _)] = call("logcumsumexp", x, 0)
    assert same(v, torch.logcumsumexp(x, 0)), (v, torch.logcumsumexp(x, 0))
    x = torch.tensor([inf, -inf, 1.0], dtype=dtype)
    [(v, _)] = call("logcumsumexp", x, 0)
    assert same(v, torch.logcumsumexp(x, 0))


def test_empty_lines_and_bad_arguments():
    (v, s), (i, _) = call("kthvalue", torch.zeros(2, 0), 1, 0, 0)
    assert v.shape == (0,) and i.shape == (0,)
    with pytest.raises(ShimError, match="selected number k out of range"):
        call("kthvalue", torch.zeros(3, 2), 3, 1, 0)
    with pytest.raises(ShimError, match="Expected reduction dim 0 to have non-zero size"):
        call("mode", torch.zeros(0, 3), 0, 0)
    with pytest.raises(ShimError, match="dimension out of range"):
        call("cummax", torch.zeros(3), 1)
    with pytest.raises(ShimError, match="logcumsumexp: int64 is not supported"):
        call("logcumsumexp", torch.zeros(3, dtype=torch.int64), 0)
    with pytest.raises(ShimError, match="kthvalue: bool tensors are not supported"):
        call("kthvalue", torch.zeros(3, dtype=torch.bool), 1, 0, 0)


def test_compiled_order_statistics_match_eager(model_cache):
    from op_models import OrderStatistics, check_model

    g = torch.Generator().manual_seed(0)
    x = torch.randn(6, 9, generator=g)
    q = torch.randint(-3, 4, (5, 11), generator=g)
    check_model(model_cache, "op_order_statistics", OrderStatistics(), (x, q), rtol=1e-6, atol=1e-6)
