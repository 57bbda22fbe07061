"""The cuda fallback ops against torch on the same GPU: the three SDPA
variants (shapes and layouts of every output, values, causal, bias,
strides and offsets, dtypes, errors) and convolution through cuDNN
(including a missing cuDNN). Inputs are torch CUDA tensors borrowed in place
(shim.from_blob over their storage, offset included), so the op reads the
very layout torch was given."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import tempfile

import numpy as np
import pytest

import aotishim
from aotishim import shim

pytestmark = pytest.mark.skipif("cuda:0" not in aotishim.devices(),
                                reason="no CUDA device in this process")
torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("torch cannot use CUDA here", allow_module_level=True)

from cuda_helpers import borrow, tf32_off  # noqa: E402

DTYPES = ["float32", "float16", "bfloat16"]
# Against float64 math: our kernel accumulates in float32; inputs are rounded.
TOL = {"float32": 2e-5, "float16": 2e-3, "bfloat16": 1.6e-2}


@pytest.fixture(autouse=True)
def no_tf32():
    with tf32_off():
        yield


def values(t: shim.Tensor) -> "torch.Tensor":
    """t's values as a float64 CPU torch tensor (waits for the device)."""
    a = shim.to_numpy(t)
    return torch.from_numpy(np.asarray(a, dtype=np.float64))


def reference(q, k, v, bias=None, causal=False, scale=None):
    """softmax(q k^T * scale + bias) v and its logsumexp, in float64 on the GPU."""
    q, k, v = q.double(), k.double(), v.double()
    if q.shape[1] != k.shape[1]:  # grouped heads
        rep = q.shape[1] // k.shape[1]
        k, v = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
    scale = 1.0 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ k.transpose(-1, -2) * scale
    if bias is not None:
        s = s + bias.double()
    if causal:
        L, S = s.shape[-2:]
        keep = torch.ones(L, S, dtype=torch.bool, device=s.device).tril()  # top-left
        s = s.masked_fill(~keep, float("-inf"))
    lse = torch.logsumexp(s, -1)
    return (torch.softmax(s, -1) @ v).cpu(), lse.cpu()


def make_qkv(B, H, Lq, Lk, D, Dv, dtype, layout="bhld", Hkv=None, seed=0):
    """q, k, v in a given memory layout: bhld (contiguous), blhd (a transpose
    of (B, L, H, D), what attention modules pass), or offset (a slice of a
    bigger buffer with padded rows: nonzero storage offset and strides)."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    Hkv = Hkv or H
    dt = getattr(torch, dtype)

    def one(h, L, d):
        if layout == "bhld":
            return torch.randn(B, h, L, d, generator=g, device="cuda").to(dt)
        if layout == "blhd":
            return torch.randn(B, L, h, d, generator=g, device="cuda").to(dt).transpose(1, 2)
        big = torch.randn(B + 1, h, L + 3, d + 5, generator=g, device="cuda").to(dt)
        return big[1:, :, 2:2 + L, 3:3 + d]

    return one(H, Lq, D), one(Hkv, Lk, D), one(Hkv, Lk, Dv)


def check_close(name, got, want, dtype):
    err = (got - want).abs().max().item() if want.numel() else 0.0
    scale = max(want.abs().max().item(), 1.0) if want.numel() else 1.0
    assert err <= TOL[dtype] * scale, f"{name}: max error {err:.3g} (scale {scale:.3g}, {dtype})"


def strides_of(t: shim.Tensor):
    return tuple(t.strides)


# ---------------------------------------------------------------- efficient

SHAPES = [  # B, H, Lq, Lk, D, Dv
    (2, 4, 16, 16, 32, 32),
    (1, 3, 50, 70, 64, 64),     # lengths not multiples of the tiles
    (2, 2, 33, 17, 128, 128),   # head dim 128, Lq > Lk
    (1, 2, 5, 300, 80, 48),     # Dv != D, long keys
    (1, 1, 1, 1, 8, 8),
    (1, 2, 40, 40, 256, 256),   # the largest head dim
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("causal", [False, True])
def test_efficient_matches_torch(shape, dtype, causal):
    B, H, Lq, Lk, D, Dv = shape
    q, k, v = make_qkv(B, H, Lq, Lk, D, Dv, dtype, layout="blhd")
    out, lse, seed, offset = shim.call_op("_scaled_dot_product_efficient_attention",
                                          borrow(q), borrow(k), borrow(v), None, 1, 0.0,
                                          int(causal), None, entry="cuda")
    want, want_lse = reference(q, k, v, causal=causal)
    # Layouts as torch's meta function gives them (what generated code assumes).
    pad = (Lq + 31) // 32 * 32
    assert out.sizes == [B, H, Lq, Dv] and strides_of(out) == (Lq * H * Dv, Dv, H * Dv, 1)
    assert lse.sizes == [B, H, pad] and lse.dtype == "float32"
    assert seed.sizes == [] and offset.sizes == [] and seed.dtype == "int64"
    check_close("out", values(out), want, dtype)
    got_lse = values(lse)
    check_close("logsumexp", got_lse[..., :Lq], want_lse, "float32" if dtype == "float32" else dtype)
    assert torch.isinf(got_lse[..., Lq:]).all(), "padding rows of logsumexp are +inf"
    # And torch's own kernel agrees on shapes and values where it runs.
    try:
        t_out, t_lse, t_seed, t_off = torch.ops.aten._scaled_dot_product_efficient_attention(
            q, k, v, None, True, 0.0, causal)
    except RuntimeError as e:  # torch's kernel has its own limits; ours is checked above
        print("torch's efficient kernel refused", shape, dtype, ":", str(e)[:200])
    else:
        assert tuple(t_out.shape) == tuple(out.sizes) and tuple(t_out.stride()) == strides_of(out)
        assert tuple(t_lse.shape) == tuple(lse.sizes)
        assert tuple(t_seed.shape) == () and t_seed.dtype == torch.int64
        check_close("out vs torch", values(out), t_out.double().cpu(), dtype)


def test_efficient_without_logsumexp_returns_an_empty_one():
    q, k, v = make_qkv(1, 2, 10, 10, 16, 16, "float32")
    out, lse, _, _ = shim.call_op("_scaled_dot_product_efficient_attention", borrow(q),
                                  borrow(k), borrow(v), None, 0, 0.0, 0, None, entry="cuda")
    assert lse.sizes == [1, 2, 0]
    check_close("out", values(out), reference(q, k, v)[0], "float32")


@pytest.mark.parametrize("bias_shape", [(2, 3, 20, 24), (1, 1, 20, 24), (20, 24), (24,),
                                        (2, 1, 1, 24), (3, 20, 1)])
@pytest.mark.parametrize("dtype", DTYPES)
def test_efficient_bias_broadcasts(bias_shape, dtype):
    q, k, v = make_qkv(2, 3, 20, 24, 32, 32, dtype)
    bias = torch.randn(bias_shape, device="cuda").to(getattr(torch, dtype))
    out, lse, _, _ = shim.call_op("_scaled_dot_product_efficient_attention", borrow(q),
                                  borrow(k), borrow(v), borrow(bias), 1, 0.0, 0, None,
                                  entry="cuda")
    want, want_lse = reference(q, k, v, bias=bias)
    check_close("out", values(out), want, dtype)
    check_close("logsumexp", values(lse)[..., :20], want_lse, dtype)


def test_efficient_mask_bias_with_minus_inf_and_causal():
    """A -inf additive mask (what a boolean mask becomes) combined with causal."""
    q, k, v = make_qkv(1, 2, 12, 12, 16, 16, "float32")
    mask = torch.zeros(12, 12, device="cuda")
    mask[:, 5:7] = float("-inf")
    out, _, _, _ = shim.call_op("_scaled_dot_product_efficient_attention", borrow(q), borrow(k),
                                borrow(v), borrow(mask), 1, 0.0, 1, None, entry="cuda")
    check_close("out", values(out), reference(q, k, v, bias=mask, causal=True)[0], "float32")


@pytest.mark.parametrize("layout", ["bhld", "blhd", "offset"])
@pytest.mark.parametrize("scale", [None, 0.3])
def test_efficient_strided_inputs_and_scale(layout, scale):
    q, k, v = make_qkv(2, 3, 37, 29, 40, 24, "float32", layout=layout)
    out, _, _, _ = shim.call_op("_scaled_dot_product_efficient_attention", borrow(q), borrow(k),
                                borrow(v), None, 1, 0.0, 0, scale, entry="cuda")
    check_close("out", values(out), reference(q, k, v, scale=scale)[0], "float32")


def test_grouped_heads():
    q, k, v = make_qkv(1, 6, 20, 20, 32, 32, "float32", Hkv=2)
    out, _, _, _ = shim.call_op("_scaled_dot_product_efficient_attention", borrow(q), borrow(k),
                                borrow(v), None, 1, 0.0, 0, None, entry="cuda")
    check_close("out", values(out), reference(q, k, v)[0], "float32")


# ---------------------------------------------------------------- flash

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("layout", ["bhld", "blhd"])
def test_flash_matches_torch(dtype, causal, layout):
    B, H, Lq, Lk, D = 2, 4, 45, 45, 64
    q, k, v = make_qkv(B, H, Lq, Lk, D, D, dtype, layout=layout)
    res = shim.call_op("_scaled_dot_product_flash_attention", borrow(q), borrow(k), borrow(v),
                       0.0, int(causal), 0, None, entry="cuda")
    out, lse, cum_q, cum_k, max_q, max_k, seed, offset, debug = res
    assert cum_q is None and cum_k is None
    assert (max_q, max_k) == (Lq, Lk)
    assert out.sizes == list(q.shape) and strides_of(out) == tuple(q.stride())  # empty_like(q)
    assert lse.sizes == [B, H, Lq] and lse.dtype == "float32"
    assert seed.sizes == [2] and offset.sizes == [] and debug.sizes == [0]
    want, want_lse = reference(q, k, v, causal=causal)
    check_close("out", values(out), want, dtype)
    check_close("logsumexp", values(lse), want_lse, dtype)
    if dtype != "float32":  # torch's flash kernel takes half and bfloat16 only
        t = torch.ops.aten._scaled_dot_product_flash_attention(q, k, v, 0.0, causal)
        # Lq == Lk here, so top-left and bottom-right causal masks agree.
        assert tuple(t[0].shape) == tuple(out.sizes) and tuple(t[0].stride()) == strides_of(out)
        assert tuple(t[1].shape) == tuple(lse.sizes)
        assert (t[4], t[5]) == (max_q, max_k)
        print("torch flash seed/offset:", t[6].shape, t[6].dtype, t[6].device,
              t[7].shape, t[7].dtype, "debug mask:", t[8].shape)
        check_close("out vs torch", values(out), t[0].double().cpu(), dtype)


def test_flash_needs_equal_head_dims():
    q, k, v = make_qkv(1, 1, 4, 4, 16, 8, "float16")
    with pytest.raises(aotishim.ShimError, match="value's head dim"):
        shim.call_op("_scaled_dot_product_flash_attention", borrow(q), borrow(k), borrow(v),
                     0.0, 0, 0, None, entry="cuda")


# ---------------------------------------------------------------- cudnn

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("with_bias", [False, True])
def test_cudnn_variant_matches_reference(dtype, causal, with_bias):
    B, H, Lq, Lk, D, Dv = 2, 3, 30, 30, 64, 64
    q, k, v = make_qkv(B, H, Lq, Lk, D, Dv, dtype, layout="blhd")
    bias = torch.randn(B, 1, Lq, Lk, device="cuda").to(getattr(torch, dtype)) if with_bias else None
    res = shim.call_op("_scaled_dot_product_cudnn_attention", borrow(q), borrow(k), borrow(v),
                       borrow(bias) if with_bias else None, 1, 0.0, int(causal), 0, None,
                       entry="cuda")
    out, lse, cum_q, cum_k, max_q, max_k, seed, offset, debug = res
    assert cum_q is None and cum_k is None and debug is None
    assert (max_q, max_k) == (Lq, Lk)
    # alloc_with_matching_layout: same shape as q, so empty_like(q).
    assert out.sizes == [B, H, Lq, Dv] and strides_of(out) == tuple(q.stride())
    assert lse.sizes == [B, H, Lq, 1] and lse.dtype == "float32"
    assert seed.sizes == [] and offset.sizes == []
    want, want_lse = reference(q, k, v, bias=bias, causal=causal)
    check_close("out", values(out), want, dtype)
    check_close("logsumexp", values(lse)[..., 0], want_lse, dtype)


def test_cudnn_variant_output_follows_query_dim_order_when_dv_differs():
    q, k, v = make_qkv(2, 3, 10, 12, 32, 16, "bfloat16", layout="blhd")
    out = shim.call_op("_scaled_dot_product_cudnn_attention", borrow(q), borrow(k), borrow(v),
                       None, 0, 0.0, 0, 0, None, entry="cuda")[0]
    # q's dim order is (b, l, h, d): out (2, 3, 10, 16) laid out as (2, 10, 3, 16).
    assert strides_of(out) == (10 * 3 * 16, 16, 3 * 16, 1)
    check_close("out", values(out), reference(q, k, v)[0], "bfloat16")


@pytest.mark.parametrize("variant", ["cudnn", "flash", "efficient"])
def test_outputs_of_a_fused_projection_slice_have_torchs_strides(variant):
    """q, k and v sliced from one (B, L, 3*H*D) projection, as GPT-2 makes
    them, are not dense: torch allocates the output dense in q's dimension
    order, and generated code reads it with those strides. A contiguous
    output read that way gave GPT-2 (bfloat16) wrong numbers."""
    B, L, H, D = 1, 16, 4, 16
    qkv = torch.randn(B, L, 3 * H * D, device="cuda", dtype=torch.bfloat16)
    q, k, v = (qkv[..., i * H * D:(i + 1) * H * D].view(B, L, H, D).transpose(1, 2)
               for i in range(3))
    assert not q.is_contiguous()
    if variant == "cudnn":
        bias = torch.zeros(B, 1, L, L, device="cuda", dtype=torch.bfloat16)
        ours = shim.call_op("_scaled_dot_product_cudnn_attention", borrow(q), borrow(k),
                            borrow(v), borrow(bias), 0, 0.0, 0, 0, None, entry="cuda")[0]
        meta = torch.ops.aten._scaled_dot_product_cudnn_attention(
            *(t.to("meta") for t in (q, k, v, bias)), False, 0.0, False, False)[0]
    elif variant == "flash":
        ours = shim.call_op("_scaled_dot_product_flash_attention", borrow(q), borrow(k),
                            borrow(v), 0.0, 1, 0, None, entry="cuda")[0]
        meta = torch.ops.aten._scaled_dot_product_flash_attention(
            *(t.to("meta") for t in (q, k, v)), 0.0, True, False)[0]
    else:
        ours = shim.call_op("_scaled_dot_product_efficient_attention", borrow(q), borrow(k),
                            borrow(v), None, 0, 0.0, 1, None, entry="cuda")[0]
        meta = torch.ops.aten._scaled_dot_product_efficient_attention(
            *(t.to("meta") for t in (q, k, v)), None, False, 0.0, True)[0]
    assert strides_of(ours) == tuple(meta.stride())
    check_close("out", values(ours), reference(q, k, v, causal=variant != "cudnn")[0],
                "bfloat16")


# ---------------------------------------------------------------- errors

def test_dropout_is_refused_clearly():
    q, k, v = make_qkv(1, 1, 4, 4, 8, 8, "float32")
    with pytest.raises(aotishim.ShimError, match="dropout_p must be 0"):
        shim.call_op("_scaled_dot_product_efficient_attention", borrow(q), borrow(k), borrow(v),
                     None, 1, 0.1, 0, None, entry="cuda")


def test_head_dim_beyond_the_kernel_is_refused():
    q, k, v = make_qkv(1, 1, 4, 4, 264, 264, "float32")
    with pytest.raises(aotishim.ShimError, match="head dims up to 256"):
        shim.call_op("_scaled_dot_product_efficient_attention", borrow(q), borrow(k), borrow(v),
                     None, 1, 0.0, 0, None, entry="cuda")


def test_cpu_tensors_are_refused_by_the_cuda_entry():
    q = shim.from_numpy(np.zeros((1, 1, 4, 8), np.float32))
    with pytest.raises(aotishim.ShimError, match="runs on the cuda device"):
        shim.call_op("_scaled_dot_product_efficient_attention", q, q, q, None, 1, 0.0, 0, None,
                     entry="cuda")


# ---------------------------------------------------------------- convolution

CONVS = [  # (input shape, weight shape, stride, padding, dilation, transposed, out_pad, groups)
    ((2, 3, 16, 16), (8, 3, 3, 3), [1, 1], [1, 1], [1, 1], 0, [0, 0], 1),
    ((1, 8, 15, 17), (8, 1, 3, 3), [2, 2], [1, 1], [1, 1], 0, [0, 0], 8),   # depthwise
    ((2, 4, 9, 9), (6, 2, 3, 2), [1, 2], [0, 1], [2, 1], 0, [0, 0], 2),     # groups, dilation
    ((2, 4, 20), (5, 4, 3), [2], [1], [1], 0, [0], 1),                     # conv1d
    ((1, 2, 5, 6, 7), (4, 2, 3, 3, 3), [1, 1, 1], [1, 1, 1], [1, 1, 1], 0, [0, 0, 0], 1),
    ((2, 6, 7, 7), (6, 4, 3, 3), [2, 2], [1, 1], [1, 1], 1, [1, 1], 1),     # transposed
    ((1, 4, 5, 5), (4, 3, 4, 4), [2, 2], [1, 1], [1, 1], 1, [0, 0], 2),     # transposed, groups
]


def run_conv(x, w, b, stride, padding, dilation, transposed, out_pad, groups):
    return shim.call_op("convolution", borrow(x), borrow(w), None if b is None else borrow(b),
                        stride, padding, dilation, transposed, out_pad, groups, entry="cuda")


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("with_bias", [False, True])
@pytest.mark.parametrize("case", CONVS, ids=lambda c: f"{c[0]}x{c[1]}{'T' if c[5] else ''}g{c[7]}")
def test_convolution_matches_torch(case, with_bias, dtype):
    xs, ws, stride, padding, dilation, transposed, out_pad, groups = case
    dt = getattr(torch, dtype)
    g = torch.Generator(device="cuda").manual_seed(1)
    x = torch.randn(xs, generator=g, device="cuda").to(dt)
    w = torch.randn(ws, generator=g, device="cuda").to(dt)
    cout = ws[1] * groups if transposed else ws[0]
    b = torch.randn(cout, generator=g, device="cuda").to(dt) if with_bias else None
    out = run_conv(x, w, b, stride, padding, dilation, transposed, out_pad, groups)
    want = torch.ops.aten.convolution(x, w, b, stride, padding, dilation, bool(transposed),
                                      out_pad, groups)
    assert out.sizes == list(want.shape)
    tol = 1e-4 if dtype == "float32" else 2e-2
    check = values(out)
    ref = want.double().cpu()
    err = (check - ref).abs().max().item()
    assert err <= tol * max(ref.abs().max().item(), 1.0), f"max error {err}"


@pytest.mark.parametrize("layout", ["channels_last", "offset_view", "transposed_weight"])
def test_convolution_input_layouts(layout):
    g = torch.Generator(device="cuda").manual_seed(2)
    x = torch.randn(2, 6, 11, 13, generator=g, device="cuda")
    w = torch.randn(8, 6, 3, 3, generator=g, device="cuda")
    if layout == "channels_last":
        x = x.to(memory_format=torch.channels_last)
        w = w.to(memory_format=torch.channels_last)
    elif layout == "offset_view":
        x = torch.randn(3, 8, 12, 15, generator=g, device="cuda")[1:, 1:7, 1:, 2:]
    else:
        w = torch.randn(3, 3, 6, 8, generator=g, device="cuda").permute(3, 2, 0, 1)
    out = run_conv(x, w, None, [1, 1], [1, 1], [1, 1], 0, [0, 0], 1)
    want = torch.ops.aten.convolution(x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    assert out.sizes == list(want.shape)
    print(layout, "aotishim strides", out.strides, "torch strides", want.stride())
    check_close("conv", values(out), want.double().cpu(), "float32")


# The output's layout is part of the result: compiled code reads it by the
# strides torch's cuDNN path gives (channels-last from channels-last operands,
# 1-D through the weight's (O, I, 1, K) view, not for float64, not for the
# transposed convolutions cuDNN turns down), never asking again.
LAYOUT_CASES = [  # (input, weight, stride, padding, dilation, transposed, output_padding, groups)
    ((2, 4, 12), (6, 4, 3), [1], [1], [1], 0, [0], 1),
    ((2, 6, 9, 9), (8, 3, 3, 3), [2, 1], [1, 0], [1, 1], 0, [0, 0], 2),
    ((1, 4, 5, 6, 7), (6, 4, 3, 3, 3), [1, 1, 1], [1, 1, 1], [1, 1, 1], 0, [0, 0, 0], 1),
    ((2, 4, 5, 6, 7), (6, 2, 3, 2, 3), [1, 2, 1], [1, 0, 1], [1, 1, 2], 0, [0, 0, 0], 2),
    ((2, 4, 5, 5, 5), (4, 3, 3, 3, 3), [2, 2, 2], [1, 1, 1], [1, 1, 1], 1, [1, 1, 1], 1),
    ((2, 4, 5, 5), (4, 3, 3, 3), [1, 1], [1, 1], [2, 2], 1, [1, 1], 1),  # output padding = stride
]


def channels_last(t):
    if t.dim() == 3:  # channels fastest
        return t.transpose(1, 2).contiguous().transpose(1, 2)
    return t.contiguous(memory_format=torch.channels_last if t.dim() == 4 else torch.channels_last_3d)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64"])
@pytest.mark.parametrize("layouts", ["cl_input", "cl_weight", "cl_both", "contiguous"])
@pytest.mark.parametrize("case", LAYOUT_CASES, ids=lambda c: f"{len(c[0]) - 2}d{'T' if c[5] else ''}{c[0]}")
def test_convolution_output_layout_is_torchs(case, layouts, dtype):
    xs, ws, stride, padding, dilation, transposed, out_pad, groups = case
    dt = getattr(torch, dtype)
    g = torch.Generator(device="cuda").manual_seed(3)
    x = torch.randn(xs, generator=g, device="cuda", dtype=torch.float64).to(dt)
    w = torch.randn(ws, generator=g, device="cuda", dtype=torch.float64).to(dt)
    if layouts in ("cl_input", "cl_both"):
        x = channels_last(x)
    if layouts in ("cl_weight", "cl_both"):
        w = channels_last(w)
    out = run_conv(x, w, None, stride, padding, dilation, transposed, out_pad, groups)
    want = torch.ops.aten.convolution(x, w, None, stride, padding, dilation, bool(transposed),
                                      out_pad, groups)
    assert out.sizes == list(want.shape)
    assert list(out.strides) == list(want.stride()), (out.strides, want.stride())
    check_close("conv", values(out), want.double().cpu(), dtype if dtype != "float64" else "float32")


def test_one_problem_on_many_buffers_reads_each_calls_own():
    """One convolution problem (one plan) on 10 inputs, in orders that hit,
    miss and evict the plan's kept variant packs (the pointer sets of its
    last 8 calls): every result must be of its own input. A pack looked up
    by the wrong pointers would read another call's input."""
    g = torch.Generator(device="cuda").manual_seed(3)
    xs = [torch.randn(1, 16, 10, 10, generator=g, device="cuda") for _ in range(10)]
    w = torch.randn(16, 16, 3, 3, generator=g, device="cuda")
    wants = [torch.ops.aten.convolution(x, w, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
             for x in xs]
    order = [*range(10), *reversed(range(10)), 0, 5, 0, 5, 9, 1, 9]
    for i in order:
        out = run_conv(xs[i], w, None, [1, 1], [1, 1], [1, 1], 0, [0, 0], 1)
        check_close(f"input {i}", values(out), wants[i].double().cpu(), "float32")


def test_missing_cudnn_is_a_clear_error_naming_the_place_tried():
    """In a fresh process with AOTISHIM_CUDNN_PATH at an empty folder: the
    backend loads and runs a matrix product, and only the convolution fails,
    naming the folder."""
    with tempfile.TemporaryDirectory() as empty:
        code = f"""
import numpy as np, aotishim
from aotishim import shim
a = shim.from_numpy(np.eye(3, dtype=np.float32), copy=True, device='cuda:0')
out = shim.empty_strided([3, 3], None, 'float32', 'cuda:0')
shim.mm(out, a, a)
assert np.array_equal(shim.to_numpy(out), np.eye(3))
x = shim.from_numpy(np.ones((1, 1, 4, 4), np.float32), copy=True, device='cuda:0')
w = shim.from_numpy(np.ones((1, 1, 3, 3), np.float32), copy=True, device='cuda:0')
try:
    shim.call_op('convolution', x, w, None, [1, 1], [0, 0], [1, 1], 0, [0, 0], 1, entry='cuda')
except aotishim.ShimError as e:
    print('ERROR:', e)
else:
    print('NO ERROR')
"""
        env = dict(os.environ, AOTISHIM_CUDNN_PATH=empty)
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                           timeout=120)
        assert r.returncode == 0, r.stderr
        assert "ERROR:" in r.stdout, r.stdout
        assert "cuDNN" in r.stdout and empty in r.stdout and "AOTISHIM_CUDNN_PATH" in r.stdout


def test_convolutions_run_on_the_graph_api():
    """Every case of CONVS, in float32 and bfloat16, runs on cuDNN's graph API
    (a plan whose call binds pointers and executes): with AOTISHIM_LOG=info
    each problem logs which API its plan is on, once, when the plan is made;
    all 2 x len(CONVS) must say the graph API and none the legacy one. The
    legacy API alone (AOTISHIM_CUDNN_API=legacy) runs test_convolution_*
    in run_on_h200.sh's "legacy" group."""
    code = f"""
import torch, aotishim
from aotishim import shim
for dtype in (torch.float32, torch.bfloat16):
    for xs, ws, stride, padding, dilation, transposed, out_pad, groups in {CONVS!r}:
        x = torch.randn(xs, device='cuda', dtype=dtype)
        w = torch.randn(ws, device='cuda', dtype=dtype)
        torch.cuda.synchronize()
        view = lambda t: shim.from_blob(t.data_ptr(), list(t.shape), list(t.stride()), 0,
                                        str(t.dtype)[6:], 'cuda:0')
        shim.call_op('convolution', view(x), view(w), None, stride, padding, dilation,
                     transposed, out_pad, groups, entry='cuda')
        torch.cuda.synchronize()
print('RAN')
"""
    env = dict(os.environ, AOTISHIM_LOG="info")
    env.pop("AOTISHIM_CUDNN_API", None)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0 and "RAN" in r.stdout, r.stderr[-3000:]
    fallbacks = [line for line in r.stderr.splitlines() if "legacy API runs it" in line]
    assert not fallbacks, "\n".join(fallbacks)
    graph_plans = [line for line in r.stderr.splitlines() if "graph-API plan" in line]
    assert len(graph_plans) == 2 * len(CONVS), r.stderr[-3000:]


# ---------------------------------------------------------------- topk, nonzero

@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int64"])
@pytest.mark.parametrize("largest", [1, 0])
@pytest.mark.parametrize("shape,k,dim", [((7, 50), 5, 1), ((7, 50), 3, 0), ((4, 6, 9), 4, -1),
                                         ((300,), 1, 0), ((3, 4), 0, 1)])
def test_topk_matches_torch(shape, k, dim, largest, dtype):
    g = torch.Generator(device="cuda").manual_seed(3)
    x = torch.randperm(int(np.prod(shape)), generator=g, device="cuda").reshape(shape)
    x = x.to(getattr(torch, dtype))  # distinct values: indices are unambiguous
    if dtype in ("float16", "bfloat16"):
        x = (torch.randn(shape, generator=g, device="cuda") * 3).to(getattr(torch, dtype))
    xt = x.transpose(0, -1) if x.dim() > 1 else x  # a strided view
    vals, idx = shim.call_op("topk", borrow(xt), k, dim, largest, 1, entry="cuda")
    want_v, want_i = torch.topk(xt, k, dim, bool(largest), True)
    assert vals.sizes == list(want_v.shape) and idx.dtype == "int64"
    got_v = torch.from_numpy(np.asarray(shim.to_numpy(vals), dtype=np.float64))
    got_i = torch.from_numpy(shim.to_numpy(idx))
    assert torch.equal(got_v, want_v.double().cpu())
    # Ties may pick other positions; the values there must be the same.
    picked = torch.gather(xt.double().cpu(), dim, got_i)
    assert torch.equal(picked, got_v)


def test_topk_nan_is_largest():
    x = torch.tensor([1.0, float("nan"), 3.0, -float("nan"), 2.0], device="cuda")
    vals, idx = shim.call_op("topk", borrow(x), 3, 0, 1, 1, entry="cuda")
    got = shim.to_numpy(vals)
    assert np.isnan(got[:2]).all() and got[2] == 3.0


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "bool", "int32", "uint8"])
@pytest.mark.parametrize("shape", [(5, 7), (3, 4, 5), (1000,), (0, 3), ()])
def test_nonzero_matches_torch(shape, dtype):
    g = torch.Generator(device="cuda").manual_seed(4)
    x = (torch.rand(shape, generator=g, device="cuda") > 0.6)
    x = x if dtype == "bool" else (x * torch.randn(shape, generator=g, device="cuda")).to(getattr(torch, dtype))
    if x.dim() == 2:
        x = x.t()  # strided
    out = shim.call_op("nonzero", borrow(x), entry="cuda")
    want = torch.nonzero(x)
    assert out.sizes == list(want.shape)
    assert tuple(out.strides) == tuple(want.stride()) or want.numel() == 0, (out.strides, want.stride())
    assert np.array_equal(shim.to_numpy(out), want.cpu().numpy())


def test_nonzero_of_negative_zero_and_nan():
    x = torch.tensor([0.0, -0.0, float("nan"), 1.0], device="cuda")
    assert shim.to_numpy(shim.call_op("nonzero", borrow(x), entry="cuda")).ravel().tolist() == [2, 3]
