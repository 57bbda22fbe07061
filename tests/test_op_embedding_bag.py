"""_embedding_bag / _embedding_bag_forward_only beyond torch's OpInfo samples
(tests/test_opinfo.py runs those, all four outputs): the offsets' and
indices' checks, argument errors, and a compiled recommender model."""

from __future__ import annotations

import pytest
import torch

from aotishim import shim
from aotishim._core import ShimError
from torch_views import to_shim


def call(op, weight, indices, offsets, mode=0, psw=None, last=0, pad=-1):
    return shim.call_op(op, to_shim(weight), to_shim(indices), to_shim(offsets), 0, mode, 0,
                        None if psw is None else to_shim(psw), last, pad, entry="cpu")


OPS = ["_embedding_bag", "_embedding_bag_forward_only"]
W = torch.randn(10, 3)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("indices,offsets,message", [
    ([1, 2, 3], [1, 2], "offsets\\[0\\] has to be 0"),
    ([1, 2, 3], [0, 2, 1], "offsets must be non-decreasing"),
    ([1, 2, 3], [0, 4], "offsets\\[-1\\] can not be greater than input's length 3"),
    ([1, 10, 3], [0], "index 1 of input takes value 10 which is not in the valid range \\[0, 10\\)"),
    ([1, -1, 3], [0], "takes value -1"),
])
def test_bad_offsets_and_indices(op, indices, offsets, message):
    with pytest.raises(ShimError, match=message):
        call(op, W, torch.tensor(indices), torch.tensor(offsets))


@pytest.mark.parametrize("op", OPS)
def test_argument_errors(op):
    idx, off = torch.tensor([1, 2]), torch.tensor([0])
    with pytest.raises(ShimError, match="per_sample_weights only supported with mode='sum'"):
        call(op, W, idx, off, mode=1, psw=torch.ones(2))
    with pytest.raises(ShimError, match="per_sample_weights must have weight's dtype"):
        call(op, W, idx, off, psw=torch.ones(2, dtype=torch.float64))
    with pytest.raises(ShimError, match="one weight per index"):
        call(op, W, idx, off, psw=torch.ones(3))
    with pytest.raises(ShimError, match="must be 1-D"):
        call(op, W, idx.view(1, 2), off)
    with pytest.raises(ShimError, match="int32 or int64"):
        call(op, W, idx.to(torch.int16), off)
    with pytest.raises(ShimError, match="weight must be float32"):
        call(op, W.long(), idx, off)
    with pytest.raises(ShimError, match="mode must be 0"):
        call(op, W, idx, off, mode=3)


@pytest.mark.parametrize("op", OPS)
def test_mixed_index_dtypes_promote_the_auxiliary_outputs(op):
    """int32 indices with int64 offsets: torch gives int64 auxiliary outputs."""
    idx, off = torch.tensor([1, 2, 4], dtype=torch.int32), torch.tensor([0, 1])
    got = call(op, W, idx, off, mode=2)
    want = getattr(torch.ops.aten, op)(W, idx, off, False, 2, False, None, False, -1)
    try:
        assert [g.dtype for g in got] == [str(w.dtype)[6:] for w in want]
    finally:
        for g in got:
            shim.delete(g)


def test_compiled_recommender_matches_eager(model_cache):
    from op_models import Recommender, check_model

    torch.manual_seed(0)
    items = torch.randint(0, 100, (40,))
    offsets = torch.tensor([0, 3, 10, 10, 25, 31])
    users = torch.randint(0, 50, (6, 4))
    check_model(model_cache, "op_embedding_bag_recommender", Recommender(),
                (items, offsets, users), rtol=1e-5, atol=1e-6)
