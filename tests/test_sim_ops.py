"""Convolution and the mps math SDPA variant on the sim device (the cpu
kernels run as commands on its asynchronous stream): torch's numbers, views
as they lie, and the GPU's ordering rules (inputs produced by queued copies,
outputs read by the host or later commands; the hazard checker is on and the
scheduler reorders what it may)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import aotishim
from aotishim import ShimError, shim, sim

from _sim_common import sim_device  # noqa: F401  (fixture)
from device_op_cases import (CONV_CASES, MATH_OP, check_conv, check_math_for_mps, conv_inputs,
                             on_device, qkv)

pytestmark = pytest.mark.usefixtures("sim_device")
ORDERS = ["fifo", "reverse", "shuffle"]


# ---------------------------------------------------------------- convolution

@pytest.mark.parametrize("case", CONV_CASES, ids=range(len(CONV_CASES)))
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_conv_matches_torch(case, dtype):
    check_conv("sim", case, "contiguous", "contiguous", dtype)


@pytest.mark.parametrize("layouts", [("channels_last", "contiguous"), ("offset", "channels_last"),
                                     ("transposed", "offset")])
@pytest.mark.parametrize("case", [CONV_CASES[1], CONV_CASES[2], CONV_CASES[6]], ids=["g", "dw", "t"])
def test_conv_views(case, layouts):
    check_conv("sim", case, *layouts, "float32")


@pytest.mark.parametrize("order", ORDERS)
def test_conv_orders_with_queued_work(order):
    """The convolution's command reads inputs still being copied and its
    output is read by a later copy: under every schedule the result is right
    and the checker finds no hazard."""
    with sim.configured(order=order, seed=3):
        check_conv("sim", CONV_CASES[0], "offset", "contiguous", "float32")
        check_conv("sim", CONV_CASES[7], "channels_last", "contiguous", "float32", bias=False)
        x, w, _ = conv_inputs(CONV_CASES[0], "float32")
        out = shim.call_op("convolution", on_device(x, "sim"), on_device(w, "sim"), None,
                           [1, 1], [1, 1], [1, 1], 0, [0, 0], 1)
        later = shim.empty_strided(out.sizes, dtype="float32", device="sim")
        shim.copy_(later, out)
        want = torch.ops.aten.convolution(x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
        np.testing.assert_allclose(later.numpy(), want.numpy(), rtol=2e-4, atol=2e-4)


def test_conv_float16_is_refused_by_the_cpu_kernel():
    x, w, _ = conv_inputs(CONV_CASES[0], "float16")
    with pytest.raises(ShimError, match="unsupported dtype float16 for convolution on sim"):
        shim.call_op("convolution", on_device(x, "sim"), on_device(w, "sim"), None, [1, 1],
                     [1, 1], [1, 1], 0, [0, 0], 1)
    aotishim.synchronize("sim")


# ---------------------------------------------------------------- attention

@pytest.mark.parametrize("L,S", [(16, 16), (1, 7), (37, 70), (70, 20)])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float16"])
def test_math_for_mps_matches_torch(L, S, causal, dtype):
    check_math_for_mps("sim", *qkv(2, 3, L, S, 16, dtype=dtype), dtype, causal=causal)


def test_math_for_mps_masks_scale_value_dim():
    q, k, v = qkv(2, 2, 9, 12, 8, Ev=5)
    g = torch.Generator().manual_seed(4)
    keep = torch.rand(2, 1, 9, 12, generator=g) > 0.3
    keep[0, 0, 3] = False  # a row with every key masked: zeros, as torch's math gives
    additive = torch.zeros(keep.shape).masked_fill(~keep, float("-inf"))  # what torch passes
    check_math_for_mps("sim", q, k, v, "float32", mask=additive, scale=0.4)
    bias = torch.randn(9, 12, generator=g)  # broadcast over batch and heads
    check_math_for_mps("sim", q, k, v, "float32", mask=bias)
    check_math_for_mps("sim", q, k, v, "float32", mask=bias.to(torch.float16).expand(2, 2, 9, 12))
    with pytest.raises(ShimError, match="bool attn_mask is not supported"):
        shim.call_op(MATH_OP, on_device(q, "sim"), on_device(k, "sim"), on_device(v, "sim"),
                     on_device(keep, "sim"), 0.0, 0, None, None)


def test_math_for_mps_views():
    g = torch.Generator().manual_seed(5)
    qkv_fused = torch.randn(2, 11, 3, 4, 8, generator=g)  # (B, L, 3, H, E): a fused projection
    q, k, v = (qkv_fused[:, :, i].transpose(1, 2) for i in range(3))
    check_math_for_mps("sim", q, k, v, "float32", causal=True)
    q2 = torch.randn(2, 4, 8, 11, generator=g).transpose(-1, -2)  # head dim strided
    check_math_for_mps("sim", q2, k, v, "float32")


def test_math_for_mps_grouped_heads_need_enable_gqa():
    q, k, v = qkv(1, 4, 10, 13, 8, Hkv=2)
    check_math_for_mps("sim", q, k, v, "float32", gqa=True, causal=True)
    with pytest.raises(ShimError, match="grouped-query attention needs enable_gqa"):
        shim.call_op(MATH_OP, on_device(q, "sim"), on_device(k, "sim"), on_device(v, "sim"),
                     None, 0.0, 0, None, None)


def test_math_for_mps_errors():
    q, k, v = (on_device(t, "sim") for t in qkv(1, 2, 4, 4, 8))
    with pytest.raises(ShimError, match="dropout"):
        shim.call_op(MATH_OP, q, k, v, None, 0.1, 0, None, None)
    bad = on_device(torch.randn(1, 2, 4, 7), "sim")
    with pytest.raises(ShimError, match="inconsistent shapes"):
        shim.call_op(MATH_OP, q, bad, v, None, 0.0, 0, None, None)
    imask = on_device(torch.ones(4, 4, dtype=torch.int32), "sim")
    with pytest.raises(ShimError, match="attn_mask must be bool or floating"):
        shim.call_op(MATH_OP, q, k, v, imask, 0.0, 0, None, None)
    with pytest.raises(ShimError, match="runs on the mps device|is on sim"):
        shim.call_op(MATH_OP, q, k, v, None, 0.0, 0, None, None, entry="mps")


@pytest.mark.parametrize("order", ORDERS)
def test_math_for_mps_orders_with_queued_work(order):
    with sim.configured(order=order, seed=7):
        g = torch.Generator().manual_seed(8)
        mask = torch.randn(1, 2, 6, 9, generator=g)
        check_math_for_mps("sim", *qkv(1, 2, 6, 9, 8, seed=2), "float32", mask=mask)
        check_math_for_mps("sim", *qkv(1, 2, 6, 9, 8, seed=3), "float32", causal=True)
