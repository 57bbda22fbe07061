"""index.Tensor, masked_scatter, bucketize, searchsorted.Scalar,
repeat_interleave and nonzero_static: the errors torch raises, and a
compiled model calling all of them against eager (values against torch on
OpInfo-style samples are in tests/test_opinfo.py)."""

from __future__ import annotations

import pytest
import torch

from aotishim import shim
from aotishim._core import ShimError
from torch_views import to_shim


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
