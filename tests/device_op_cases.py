"""Convolution and the mps math SDPA variant on a non-cpu device (sim here,
mps on macOS) against CPU torch: the cases and checks both test files share.
Inputs are views as they lie on the device (offsets, channels-last, sliced,
transposed), placed there by a device copy so that the op's command must
order after it."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import torch

from aotishim import shim

NP = {"float32": np.float32, "float16": np.float16, "bfloat16": ml_dtypes.bfloat16}
TORCH = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
# float32 accumulation everywhere; the low-precision outputs round once.
TOL = {"float32": 2e-4, "float16": 2e-3, "bfloat16": 1.6e-2}


def to_np(t: torch.Tensor) -> np.ndarray:
    t = t.detach().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


def on_device(t: torch.Tensor, device: str) -> shim.Tensor:
    """t's view, over a device copy of its whole storage (the copy is a queued
    command on an asynchronous device)."""
    base = torch.empty(0, dtype=t.dtype).set_(t.untyped_storage())
    host = shim.from_numpy(to_np(base).copy())
    whole = shim.empty_strided([base.numel()], dtype=host.dtype, device=device)
    shim.copy_(whole, host)
    return shim.reinterpret_tensor(whole, list(t.shape), list(t.stride()), t.storage_offset())


def layout(t: torch.Tensor, kind: str, seed: int = 0) -> torch.Tensor:
    """The same values as t in another memory layout."""
    if kind == "contiguous":
        return t.contiguous()
    if kind == "channels_last":
        return t.contiguous(memory_format=torch.channels_last if t.dim() == 4
                            else torch.channels_last_3d) if t.dim() in (4, 5) else t.contiguous()
    if kind == "offset":  # a slice at an offset of a larger buffer, a strided last dim
        big = torch.zeros(t.numel() * 2 + 5, dtype=t.dtype)
        view = big[5:5 + 2 * t.numel()].view(*t.shape[:-1], t.shape[-1] * 2)[..., ::2]
        view.copy_(t)
        return view
    if kind == "transposed":  # stored with the last two dims swapped
        return t.transpose(-1, -2).contiguous().transpose(-1, -2)
    raise ValueError(kind)


def assert_close(got: shim.Tensor, want: torch.Tensor, dtype: str) -> None:
    assert got.sizes == list(want.shape)
    w = want.to(TORCH[dtype]).float().numpy().astype(np.float64)
    g = got.numpy().astype(np.float64)
    tol = TOL[dtype]
    np.testing.assert_allclose(g, w, rtol=tol, atol=tol * max(1.0, float(np.abs(w).max(initial=0))))


# ---------------------------------------------------------------- convolution

CONV_CASES = [
    # (x sizes, w sizes, stride, padding, dilation, transposed, output_padding, groups)
    ((2, 3, 9, 8), (4, 3, 3, 3), [1, 1], [1, 1], [1, 1], False, [0, 0], 1),
    ((1, 4, 11, 10), (6, 2, 3, 2), [2, 3], [1, 0], [2, 1], False, [0, 0], 2),   # groups, stride, dilation
    ((2, 6, 7, 7), (6, 1, 3, 3), [1, 1], [2, 2], [2, 2], False, [0, 0], 6),     # depthwise
    ((1, 3, 20), (5, 3, 4), [3], [2], [2], False, [0], 1),                      # 1-D
    ((1, 2, 5, 6, 4), (3, 2, 3, 2, 2), [1, 2, 1], [1, 0, 1], [1, 1, 2], False, [0, 0, 0], 1),  # 3-D
    ((1, 8, 6, 6), (8, 4, 4, 4), [2, 2], [1, 1], [1, 1], True, [0, 0], 1),      # ConvTranspose2d
    ((2, 4, 5, 6), (4, 3, 3, 3), [2, 3], [1, 0], [1, 1], True, [1, 2], 1),      # output_padding
    ((2, 6, 5, 5), (6, 2, 3, 3), [2, 2], [0, 1], [2, 1], True, [1, 0], 3),      # transposed groups
    ((1, 3, 9), (3, 2, 3), [2], [1], [1], True, [1], 1),                        # ConvTranspose1d
]


def conv_inputs(case, dtype: str, seed: int = 0):
    x_sizes, w_sizes = case[0], case[1]
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*x_sizes, generator=g).to(TORCH[dtype])
    w = torch.randn(*w_sizes, generator=g).to(TORCH[dtype])
    cout = w_sizes[1] * case[7] if case[5] else w_sizes[0]
    b = torch.randn(cout, generator=g).to(TORCH[dtype])
    return x, w, b


def conv_reference(x, w, b, case):
    _, _, stride, padding, dilation, transposed, output_padding, groups = case
    return torch.ops.aten.convolution(x.float(), w.float(), None if b is None else b.float(),
                                      stride, padding, dilation, transposed, output_padding, groups)


def check_conv(device: str, case, x_layout: str, w_layout: str, dtype: str, bias: bool = True):
    x, w, b = conv_inputs(case, dtype)
    x, w = layout(x, x_layout), layout(w, w_layout)
    b = layout(b, "offset") if bias else None
    _, _, stride, padding, dilation, transposed, output_padding, groups = case
    got = shim.call_op("convolution", on_device(x, device), on_device(w, device),
                       None if b is None else on_device(b, device), stride, padding, dilation,
                       int(transposed), output_padding, groups)
    assert got.device == f"{device}:0"
    # The output layout is the one the cpu entry gives (torch's).
    want_layout = torch.ops.aten.convolution(x.float(), w.float(), None, stride, padding,
                                             dilation, transposed, output_padding, groups)
    if x.dim() != 5:  # 3-D layouts also depend on torch's oneDNN heuristic; not this test's point
        assert got.strides == list(want_layout.stride())
    assert_close(got, conv_reference(x, w, b, case), dtype)


# ---------------------------------------------------------------- attention

MATH_OP = "_scaled_dot_product_attention_math_for_mps"


def qkv(B, H, L, S, E, Hkv=None, Ev=None, dtype="float32", seed=0):
    g = torch.Generator().manual_seed(seed)
    Hkv = Hkv or H
    t = TORCH[dtype]
    return (torch.randn(B, H, L, E, generator=g).to(t), torch.randn(B, Hkv, S, E, generator=g).to(t),
            torch.randn(B, Hkv, S, Ev or E, generator=g).to(t))


def check_math_for_mps(device: str, q, k, v, dtype: str, mask=None, causal=False, scale=None,
                       gqa=False):
    """Both outputs (attention, softmax weights) against torch's math SDPA
    (the same computation and outputs, on CPU, in float32)."""
    args = (on_device(q, device), on_device(k, device), on_device(v, device),
            None if mask is None else on_device(mask, device), 0.0, int(causal), None, scale)
    if gqa:
        out, attn = shim.call_op(MATH_OP + "_v2", *args, 1)
    else:
        out, attn = shim.call_op(MATH_OP, *args)
    fmask = mask if mask is None or mask.dtype == torch.bool else mask.float()
    want_out, want_attn = torch.ops.aten._scaled_dot_product_attention_math(
        q.float(), k.float(), v.float(), fmask, 0.0, causal, None, scale=scale, enable_gqa=gqa)
    B, H, L, _ = q.shape
    S, Ev = k.shape[2], v.shape[3]
    # torch's meta function: both outputs contiguous.
    assert out.strides == [H * L * Ev, L * Ev, Ev, 1] and attn.strides == [H * L * S, L * S, S, 1]
    assert out.dtype == dtype and attn.dtype == dtype
    assert_close(out, want_out, dtype)
    assert_close(attn, want_attn, dtype)
