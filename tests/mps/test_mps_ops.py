"""Convolution and the SDPA variant Inductor emits for Metal
(_scaled_dot_product_attention_math_for_mps) on real Metal: the cases the
sim tests check (tests/test_sim_ops.py), plus float16, plus models compiled
for mps that call both ops, against eager.

Runs wherever the build has the mps device: Apple's Metal (the macOS
workflow) and the host Metal on Linux (AOTISHIM_METAL_HOST, as .ci/run
builds); AOTISHIM_REQUIRE_MPS=1 turns a missing device into an error, as in
test_mps_device.py. The compiled models need torch with mps, which torch on
Linux does not have: there they are not collected (test_mps_device.py says
why, and what runs instead).
"""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import aotishim
from aotishim import ShimError, shim

torch = pytest.importorskip("torch")

from device_op_cases import (CONV_CASES, MATH_OP, TOL, check_conv, check_math_for_mps,  # noqa: E402
                             conv_inputs, on_device, qkv, to_np)

REQUIRED = os.environ.get("AOTISHIM_REQUIRE_MPS") == "1"
if REQUIRED and "mps" not in aotishim.devices():
    raise RuntimeError(f"AOTISHIM_REQUIRE_MPS=1 but aotishim.devices() is {aotishim.devices()}")
pytestmark = pytest.mark.skipif("mps" not in aotishim.devices(),
                                reason="no mps device (needs an Apple-platform build and a Metal GPU)")
DTYPES = ["float32", "float16", "bfloat16"]
MODEL_TESTS = torch.backends.mps.is_available() or (REQUIRED and sys.platform == "darwin")


# ---------------------------------------------------------------- convolution

@pytest.mark.parametrize("case", CONV_CASES, ids=range(len(CONV_CASES)))
@pytest.mark.parametrize("dtype", DTYPES)
def test_conv_matches_torch(case, dtype):
    check_conv("mps", case, "contiguous", "contiguous", dtype)


@pytest.mark.parametrize("layouts", [("channels_last", "contiguous"), ("offset", "channels_last"),
                                     ("transposed", "offset")])
@pytest.mark.parametrize("case", [CONV_CASES[1], CONV_CASES[2], CONV_CASES[6]], ids=["g", "dw", "t"])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_conv_views(case, layouts, dtype):
    check_conv("mps", case, *layouts, dtype)


def test_conv_without_bias_and_float64_refused():
    check_conv("mps", CONV_CASES[0], "contiguous", "contiguous", "float32", bias=False)
    x, w, _ = conv_inputs(CONV_CASES[0], "float32")
    x64 = shim.from_numpy(x.double().numpy(), copy=True, device="mps")
    w64 = shim.from_numpy(w.double().numpy(), copy=True, device="mps")
    with pytest.raises(ShimError, match="unsupported dtype float64 for convolution on mps"):
        shim.call_op("convolution", x64, w64, None, [1, 1], [1, 1], [1, 1], 0, [0, 0], 1)


# ---------------------------------------------------------------- attention

@pytest.mark.parametrize("L,S", [(16, 16), (1, 7), (37, 70), (70, 20)])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dtype", DTYPES)
def test_math_for_mps_matches_torch(L, S, causal, dtype):
    check_math_for_mps("mps", *qkv(2, 3, L, S, 16, dtype=dtype), dtype, causal=causal)


@pytest.mark.parametrize("E", [1, 33, 64, 128, 512])
def test_math_for_mps_head_dims(E):
    check_math_for_mps("mps", *qkv(1, 2, 9, 11, E), "float32", causal=True)


def test_math_for_mps_masks_scale_value_dim():
    q, k, v = qkv(2, 2, 9, 12, 8, Ev=5)
    g = torch.Generator().manual_seed(4)
    keep = torch.rand(2, 1, 9, 12, generator=g) > 0.3
    keep[0, 0, 3] = False  # a row with every key masked: zeros, as torch's math gives
    additive = torch.zeros(keep.shape).masked_fill(~keep, float("-inf"))  # what torch passes
    check_math_for_mps("mps", q, k, v, "float32", mask=additive, scale=0.4)
    bias = torch.randn(9, 12, generator=g)  # broadcast over batch and heads
    check_math_for_mps("mps", q, k, v, "float32", mask=bias)
    check_math_for_mps("mps", q, k, v, "float32", mask=bias.to(torch.float16).expand(2, 2, 9, 12))
    with pytest.raises(ShimError, match="bool attn_mask is not supported"):
        shim.call_op(MATH_OP, on_device(q, "mps"), on_device(k, "mps"), on_device(v, "mps"),
                     on_device(keep, "mps"), 0.0, 0, None, None)


def test_math_for_mps_views_and_gqa():
    g = torch.Generator().manual_seed(5)
    fused = torch.randn(2, 11, 3, 4, 8, generator=g)
    q, k, v = (fused[:, :, i].transpose(1, 2) for i in range(3))
    check_math_for_mps("mps", q, k, v, "float32", causal=True)
    check_math_for_mps("mps", *qkv(1, 4, 10, 13, 8, Hkv=2, dtype="float16"), "float16", gqa=True)


def test_math_for_mps_refusals():
    q, k, v = (on_device(t, "mps") for t in qkv(1, 2, 4, 4, 600))
    with pytest.raises(ShimError, match="head dims up to 512"):
        shim.call_op(MATH_OP, q, k, v, None, 0.0, 0, None, None)


# ---------------------------------------------------------------- compiled models

def _mps_torch():
    if not torch.backends.mps.is_available():
        if REQUIRED:
            pytest.fail("AOTISHIM_REQUIRE_MPS=1 but torch cannot use mps on this machine")
        pytest.skip("torch cannot use mps on this machine")


class ConvNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.dw = torch.nn.Conv2d(8, 8, 3, padding=2, dilation=2, groups=8)
        self.up = torch.nn.ConvTranspose2d(8, 4, 4, stride=2, padding=1)

    def forward(self, x):
        return self.up(torch.relu(self.dw(torch.relu(self.c1(x)))))


class Attention(torch.nn.Module):
    def __init__(self, causal: bool):
        super().__init__()
        self.causal = causal
        self.qkv = torch.nn.Linear(32, 96)

    def forward(self, x, mask):
        B, L, _ = x.shape
        q, k, v = self.qkv(x).view(B, L, 3, 4, 8).permute(2, 0, 3, 1, 4)
        if self.causal:
            return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def _compiled_model_matches_eager(tmp_path, name, dtype):
    _mps_torch()
    from aotishim import export

    torch.manual_seed(0)
    tdtype = getattr(torch, dtype)
    if name == "conv":
        module, args = ConvNet(), (torch.randn(2, 3, 16, 16),)
    else:
        module = Attention(name == "causal_attention")
        args = (torch.randn(2, 10, 32), torch.randn(10, 10))
    module = module.eval().to(tdtype)
    args = tuple(a.to(tdtype) for a in args)
    with torch.no_grad():
        expected = module.to("mps")(*(a.to("mps") for a in args)).cpu()
    so = export.compile(module, args, tmp_path, name=name, device="mps")
    with aotishim.load(so, device="mps") as model:
        (got,) = model(*(to_np(a) for a in args))
    t = TOL[dtype] * 5  # eager mps and our kernels sum in different orders
    np.testing.assert_allclose(np.asarray(got, np.float64), to_np(expected).astype(np.float64),
                               rtol=t, atol=t)


if MODEL_TESTS:
    test_compiled_model_matches_eager = pytest.mark.parametrize("dtype", ["float32", "float16"])(
        pytest.mark.parametrize("name", ["conv", "attention", "causal_attention"])(
            _compiled_model_matches_eager))
