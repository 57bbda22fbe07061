"""index.Tensor, masked_scatter, bucketize, searchsorted.Scalar,
repeat_interleave and nonzero_static: the errors torch raises, and a
compiled model calling all of them against eager (values against torch on
OpInfo-style samples are in tests/test_opinfo.py)."""

from __future__ import annotations

import pytest
import torch

from aotishim import shim
from aotishim._core import ShimError
from torch_views import to_shim, to_torch


def test_bad_indices_are_refused():
    x = to_shim(torch.zeros(3, 4))
    with pytest.raises(ShimError, match="index 3 is out of bounds for dimension 0 with size 3"):
        shim.call_op("index_Tensor", x, [to_shim(torch.tensor([0, 3]))], entry="cpu")
    with pytest.raises(ShimError, match="index -4 is out of bounds"):
        shim.call_op("index_Tensor", x, [to_shim(torch.tensor([-4]))], entry="cpu")
    with pytest.raises(ShimError, match="The shape of the mask \\[4\\] at index 0 does not match"):
        shim.call_op("index_Tensor", x, [to_shim(torch.ones(4, dtype=torch.bool))], entry="cpu")
    with pytest.raises(ShimError, match="too many indices for tensor of dimension 2"):
        i = to_shim(torch.tensor([0]))
        shim.call_op("index_Tensor", x, [i, i, i], entry="cpu")
    with pytest.raises(ShimError, match="could not be broadcast together"):
        shim.call_op("index_Tensor", x, [to_shim(torch.tensor([0, 1])),
                                         to_shim(torch.tensor([0, 1, 2]))], entry="cpu")
    with pytest.raises(ShimError, match="must be long, int, byte or bool"):
        shim.call_op("index_Tensor", x, [to_shim(torch.tensor([0.0]))], entry="cpu")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.int8,
                                   torch.bool, torch.complex64])
@pytest.mark.parametrize("case", ["rows", "middle", "broadcast_2d", "negative"])
@pytest.mark.parametrize("how", ["contiguous", "offset", "gaps", "transposed"])
def test_index_of_long_rows_is_torchs(dtype, case, how):
    """Lookups whose last dim is a plain run in self and out (the row-copy
    path) and, with gaps or a transposed self, the element-wise gather:
    values, sizes, strides and the range error equal torch's. (Which path
    ran is not observable here; both must give torch's answer.)"""
    g = torch.Generator().manual_seed(3)
    base = torch.randn(41 * 7 * 100 + 1, generator=g)
    base = (base > 0) if dtype == torch.bool else base.to(dtype)
    x = base[1:].view(41, 7, 100) if how == "offset" else base[:-1].view(41, 7, 100)
    if how == "gaps":
        x = torch.stack([x, x], -1)[..., 0]
    elif how == "transposed":
        x = x.transpose(0, 2).contiguous().transpose(0, 2)
    idx = torch.tensor([[3, 40, 0], [7, 7, 12]])
    indices = {"rows": [idx], "middle": [None, torch.tensor([6, 0, 2, 2])],
               "broadcast_2d": [idx, torch.tensor([[1], [5]])],
               "negative": [torch.tensor([-1, -41, 5])]}[case]
    want = torch.ops.aten.index.Tensor(x, indices)
    got = shim.call_op("index_Tensor", to_shim(x),
                       [None if t is None else to_shim(t) for t in indices], entry="cpu")
    assert got.sizes == list(want.shape) and got.strides == list(want.stride())
    assert torch.equal(to_torch(got), want)
    with pytest.raises(ShimError, match="index 41 is out of bounds for dimension 0 with size 41"):
        shim.call_op("index_Tensor", to_shim(x), [to_shim(torch.tensor([[0], [41]]))],
                     entry="cpu")


def test_masked_scatter_needs_enough_source():
    x = to_shim(torch.zeros(3, 4))
    with pytest.raises(ShimError, match="expected source to have at least 12 elements"):
        shim.call_op("masked_scatter", x, to_shim(torch.ones(3, 4, dtype=torch.bool)),
                     to_shim(torch.ones(5)), entry="cpu")
    with pytest.raises(ShimError, match="expected BoolTensor for mask"):
        shim.call_op("masked_scatter", x, to_shim(torch.ones(3, 4)), to_shim(torch.ones(12)),
                     entry="cpu")


def test_bucketize_repeat_interleave_nonzero_static_errors():
    with pytest.raises(ShimError, match="boundaries tensor must be 1 dimension, but got dim\\(2\\)"):
        shim.call_op("bucketize_Tensor", to_shim(torch.zeros(3)), to_shim(torch.zeros(2, 2)), 0, 0,
                     entry="cpu")
    with pytest.raises(ShimError, match="repeats can not be negative"):
        shim.call_op("repeat_interleave_Tensor", to_shim(torch.tensor([1, -1])), None, entry="cpu")
    with pytest.raises(ShimError, match="allocated size does not match"):
        shim.call_op("repeat_interleave_Tensor", to_shim(torch.tensor([1, 2])), 4, entry="cpu")
    with pytest.raises(ShimError, match="1D vector"):
        shim.call_op("repeat_interleave_Tensor", to_shim(torch.tensor([[1]])), None, entry="cpu")
    with pytest.raises(ShimError, match="'size' must be an non-negative integer"):
        shim.call_op("nonzero_static", to_shim(torch.ones(3)), -1, 0, entry="cpu")


def test_compiled_index_fallbacks_match_eager(model_cache):
    from op_models import IndexFallbacks, check_model

    g = torch.Generator().manual_seed(0)
    x = torch.randn(6, 7, generator=g)
    check_model(model_cache, "op_index_fallbacks", IndexFallbacks(),
                (x, torch.randn(42, generator=g), torch.tensor([-1.0, 0.0, 0.5, 1.5]),
                 torch.tensor([2, 0, 3, 1])), rtol=0, atol=0)
