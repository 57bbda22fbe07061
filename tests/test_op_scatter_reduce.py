"""aoti_torch_cpu_scatter_reduce_two_out against torch: every reduction
with and without self (mean counts only what it reduces), float sums bit for
bit, NaN in amax/amin, integer mean's floor division, out aliasing self (in
place), strided views, and torch's errors with out left untouched."""

from __future__ import annotations

import pytest
import torch

from aotishim import shim
from aotishim._core import ShimError
from torch_views import same, to_shim, to_torch

REDUCE = ["sum", "prod", "mean", "amax", "amin"]


def check(self_, dim, index, src, reduce, include_self, entry="cpu"):
    want = torch.scatter_reduce(self_, dim, index, src, reduce, include_self=include_self)
    out = to_shim(torch.full_like(self_, 99))
    shim.call_op("scatter_reduce_two_out", out, to_shim(self_), dim, to_shim(index), to_shim(src),
                 reduce, int(include_self), entry=entry)
    got = to_torch(out)
    shim.delete(out)
    assert same(got, want), (reduce, include_self, got, want)


def data(dtype, gen, shape=(6, 5), index_shape=(4, 3), dim=0):
    if dtype.is_floating_point:
        self_ = torch.randn(shape, generator=gen).to(dtype)
        src = torch.randn((index_shape[0] + 1, index_shape[1] + 2), generator=gen).to(dtype)
    else:
        self_ = torch.randint(-9, 10, shape, generator=gen).to(dtype)
        src = torch.randint(-9, 10, (index_shape[0] + 1, index_shape[1] + 2), generator=gen).to(dtype)
    index = torch.randint(0, shape[dim], index_shape, generator=gen)  # repeats: several per slot
    return self_, index, src


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.float64])
@pytest.mark.parametrize("reduce", REDUCE)
@pytest.mark.parametrize("include_self", [True, False])
def test_scatter_reduce_matches_torch(dtype, reduce, include_self):
    gen = torch.Generator().manual_seed(6)
    for dim in (0, 1, -1):
        self_, index, src = data(dtype, gen, dim=dim)
        check(self_, dim, index, src, reduce, include_self)
        # The same values as strided views at offsets.
        check(self_.t().contiguous().t(), dim, index, src, reduce, include_self)
        big_src = torch.cat([src, src], 1)[:, src.shape[1]:]
        check(self_, dim, index, big_src, reduce, include_self)
        check(self_, dim, index.t().contiguous().t(), src, reduce, include_self)


def test_scatter_reduce_int32_index():
    gen = torch.Generator().manual_seed(7)
    self_, index, src = data(torch.float32, gen)
    check(self_, 0, index.int(), src, "sum", True)


def test_scatter_reduce_nan():
    nan = float("nan")
    self_ = torch.tensor([1.0, nan, 3.0, 4.0])
    index = torch.tensor([0, 1, 2, 2, 0])
    src = torch.tensor([nan, 5.0, 1.0, nan, 2.0])
    for reduce in REDUCE:
        for include_self in (True, False):
            check(self_, 0, index, src, reduce, include_self)


def test_scatter_reduce_integer_mean_floors():
    self_ = torch.tensor([-1, 2, 3, 4])
    index = torch.tensor([0, 0, 2, 1])
    src = torch.tensor([-2, -5, 1, 7])
    for include_self in (True, False):
        check(self_, 0, index, src, "mean", include_self)


def test_scatter_reduce_in_place_out_is_self():
    gen = torch.Generator().manual_seed(8)
    self_, index, src = data(torch.float32, gen)
    want = torch.scatter_reduce(self_, 0, index, src, "mean", include_self=False)
    t = to_shim(self_)
    shim.call_op("scatter_reduce_two_out", t, t, 0, to_shim(index), to_shim(src), "mean", 0)
    assert same(to_torch(t), want)


def test_scatter_reduce_out_overlapping_src():
    """out is a view of the same memory as src: computed aside, then written."""
    gen = torch.Generator().manual_seed(9)
    buf = torch.randn(10, 5, generator=gen)
    self_, index = buf[:6], torch.randint(0, 6, (4, 5), generator=gen)
    want = torch.scatter_reduce(buf[:6].clone(), 0, index, buf[2:7].clone(), "sum")
    base = to_shim(buf)
    out = shim.reinterpret_tensor(base, [6, 5], [5, 1], 0)
    src = shim.reinterpret_tensor(base, [5, 5], [5, 1], 10)
    shim.call_op("scatter_reduce_two_out", out, to_shim(self_), 0, to_shim(index), src, "sum", 1)
    assert same(to_torch(out), want)


def test_scatter_reduce_empty_index_copies_self():
    self_ = torch.randn(3, 4)
    check(self_, 0, torch.zeros(0, 4, dtype=torch.int64), torch.randn(2, 4), "prod", False)


def test_scatter_reduce_device_generic_entry():
    gen = torch.Generator().manual_seed(10)
    self_, index, src = data(torch.float32, gen)
    check(self_, 1, index % 5, src, "amax", False, entry=None)


@pytest.mark.parametrize("index, reduce, message", [
    (torch.tensor([[0], [9]]), "sum", "index 9 is out of bounds for dimension 0 with size 4"),
    (torch.tensor([[0], [-1]]), "sum", "index -1 is out of bounds for dimension 0 with size 4"),
    (torch.tensor([[0]]), "median", "reduce argument must be either sum, prod, mean, amax or amin, got median"),
    (torch.zeros(1, 3, dtype=torch.int64), "sum", "Expected index \\[1, 3\\] to be no larger than self"),
    (torch.tensor([[0.0]]), "sum", "index"),
    (torch.tensor([0]), "sum", "same number of dimensions"),
])
def test_scatter_reduce_errors_leave_out_untouched(index, reduce, message):
    self_ = torch.randn(4, 2)
    out_values = torch.full((4, 2), 5.0)
    out = to_shim(out_values)
    with pytest.raises(ShimError, match=message):
        shim.call_op("scatter_reduce_two_out", out, to_shim(self_), 0, to_shim(index),
                     to_shim(torch.randn(4, 2)), reduce, 1, entry="cpu")
    # Argument errors touch nothing; a bad index is found after out became
    # self's copy (as in torch) but before any element is reduced.
    assert same(to_torch(out), self_ if "out of bounds" in message else out_values)


def test_scatter_reduce_index_error_leaves_in_place_self_untouched():
    self_ = torch.randn(4, 2)
    t = to_shim(self_)
    with pytest.raises(ShimError, match="out of bounds"):
        shim.call_op("scatter_reduce_two_out", t, t, 0, to_shim(torch.tensor([[1, 0], [4, 0]])),
                     to_shim(torch.randn(2, 2)), "sum", 1)
    assert same(to_torch(t), self_)


def test_scatter_reduce_dtype_mismatch():
    with pytest.raises(ShimError, match="Expected self.dtype to be equal to src.dtype"):
        shim.call_op("scatter_reduce_two_out", to_shim(torch.zeros(3)), to_shim(torch.zeros(3)), 0,
                     to_shim(torch.tensor([0])), to_shim(torch.zeros(3, dtype=torch.float64)), "sum", 1)


def test_compiled_scatter_reduce_all_reductions_match_eager(model_cache):
    from op_models import ScatterReduceMean, check_model

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(6, 5, generator=gen)
    idx = torch.randint(0, 6, (4, 5), generator=gen)
    src = torch.randn(4, 5, generator=gen)
    check_model(model_cache, "op_scatter_reduce", ScatterReduceMean(), (x, idx, src), rtol=1e-6, atol=1e-6)


def test_compiled_index_gather_scatter_matches_eager(model_cache):
    from op_models import IndexOps, check_model

    g = torch.Generator().manual_seed(2)
    args = (torch.randn(32, 16, generator=g), torch.randint(0, 32, (10,), generator=g),
            torch.randint(0, 16, (32, 16), generator=g))
    check_model(model_cache, "op_index_gather_scatter", IndexOps(), args, rtol=0, atol=0)
