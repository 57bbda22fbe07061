"""aoti_torch_cpu_masked_select against torch: self and mask broadcast
together, the selected elements 1-D and contiguous in self's dtype, views
honoured, every dtype, clear errors."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from aotishim import shim
from aotishim._core import ShimError
from torch_views import same, to_shim, to_torch


def check(x, mask, entry="cpu"):
    xs, ms = to_shim(x), to_shim(mask)
    try:
        r = shim.call_op("masked_select", xs, ms, entry=entry)
    finally:
        shim.delete(xs)
        shim.delete(ms)
    want = torch.masked_select(x, mask)
    try:
        assert r.sizes == list(want.shape) and r.strides == list(want.stride()), (
            r.sizes, r.strides, want.shape, want.stride())
        assert same(to_torch(r), want)
    finally:
        shim.delete(r)


def random_mask(shape, seed, p=0.4):
    return torch.rand(shape, generator=torch.Generator().manual_seed(seed)) < p


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.float64,
                                   torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8,
                                   torch.bool])
def test_masked_select_matches_torch(dtype):
    gen = torch.Generator().manual_seed(3)
    x = (torch.randn(6, 7, 5, generator=gen) * 50).to(dtype)
    check(x, random_mask((6, 7, 5), 1))
    # Views: transposed, offset and strided inputs, for self and for mask.
    check(x.transpose(0, 2), random_mask((7, 5, 6), 2).transpose(0, 1))
    check(x[1:, ::2, 3:], random_mask((9, 8, 4), 3)[2:7, 1::2, 1:3])
    check(x[2, 3, 4], torch.tensor(True))  # 0-d
    check(x[2, 3, 4], torch.tensor(False))


def test_masked_select_broadcasts_self_and_mask():
    x = torch.randn(4, 1, 6, generator=torch.Generator().manual_seed(0))
    check(x, random_mask((3, 6), 4))                 # both stretched: (4, 3, 6)
    check(x, random_mask((6,), 5))                   # mask gains dimensions
    check(torch.randn(5), random_mask((2, 3, 5), 6))  # self gains dimensions
    check(torch.tensor(2.5), random_mask((3, 4), 7))  # 0-d self repeated
    check(x, torch.tensor(True))                      # 0-d mask selects all
    check(x.expand(4, 3, 6), random_mask((4, 3, 6), 8))  # stride-0 input


def test_masked_select_nothing_everything_and_empty():
    x = torch.randn(3, 4)
    check(x, torch.zeros(3, 4, dtype=torch.bool))
    check(x, torch.ones(3, 4, dtype=torch.bool))
    check(torch.randn(0, 4), torch.ones(4, dtype=torch.bool))
    check(torch.randn(3, 4), torch.ones(0, 1, 4, dtype=torch.bool))  # broadcast to (0, 3, 4)


def test_masked_select_keeps_nan_and_signed_zero_bits():
    x = torch.tensor([float("nan"), -0.0, 0.0, float("-inf"), 1.0])
    check(x, torch.tensor([True, True, False, True, True]))
    check(x.to(torch.bfloat16), torch.tensor([True, True, True, False, True]))


def test_masked_select_device_generic_entry():
    check(torch.arange(12.0).reshape(3, 4), random_mask((3, 4), 9), entry=None)


@pytest.mark.parametrize("mask_dtype", [np.uint8, np.float32, np.int64])
def test_masked_select_refuses_a_non_bool_mask(mask_dtype):
    x = shim.from_numpy(np.ones((2, 3), np.float32), copy=True)
    m = shim.from_numpy(np.ones((2, 3), mask_dtype), copy=True)
    try:
        with pytest.raises(ShimError, match="masked_select: mask must be bool, got"):
            shim.call_op("masked_select", x, m, entry="cpu")
    finally:
        shim.delete(x)
        shim.delete(m)


def test_masked_select_refuses_shapes_that_do_not_broadcast():
    x = shim.from_numpy(np.ones((3, 4), np.float32), copy=True)
    m = shim.from_numpy(np.ones((2, 4), np.bool_), copy=True)
    try:
        with pytest.raises(ShimError, match=r"self of sizes \[3, 4\] and mask of sizes \[2, 4\] "
                                            r"cannot be broadcast together \(dimension 0: 3 vs 2\)"):
            shim.call_op("masked_select", x, m, entry="cpu")
    finally:
        shim.delete(x)
        shim.delete(m)


def test_masked_select_has_no_sim_kernel_and_leaks_nothing():
    import aotishim

    before = aotishim.memory_stats()["live_tensors"]
    x = shim.from_numpy(np.ones((3, 4), np.float32), copy=True, device="sim")
    m = shim.from_numpy(np.ones((3, 4), np.bool_), copy=True, device="sim")
    with pytest.raises(ShimError, match="no masked_select kernel for sim:0"):
        shim.call_op("masked_select", x, m)
    shim.delete(x)
    shim.delete(m)
    aotishim.synchronize("sim")
    assert aotishim.memory_stats()["live_tensors"] == before


class MaskedSelect(torch.nn.Module):
    def forward(self, x, m):
        # mask broadcast along the batch dimension, as a fallback-op call.
        return torch.masked_select(x * 2.0, m) + 1.0


def test_compiled_masked_select_matches_eager(model_cache):
    from op_models import check_model

    gen = torch.Generator().manual_seed(0)
    check_model(model_cache, "op_masked_select", MaskedSelect(),
                (torch.randn(4, 8, 8, generator=gen), torch.rand(8, 8, generator=gen) < 0.3),
                rtol=0, atol=0)
