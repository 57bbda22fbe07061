"""Every convolution shape family torchvision's models use, in every layout
Inductor hands the cuda convolution, against torch on the same GPU: output
strides equal to torch's (compiled code reads the output by the strides
torch gives, without asking again) and values against float64 on the CPU
(TF32 off in torch, so its own error stays below ours).

Families: asymmetric kernels and padding (Inception's 1x7, 7x1, 1x3, 3x1),
strided 3x3 without padding on odd sizes, 1x1, a 7x7 stem, groups
(ResNeXt, RegNet), depthwise 3x3 and 5x5 (MobileNet, EfficientNet,
ConvNeXt's 7x7), dilation (segmentation heads), 3-D (video: 3x3x3, (1,3,3),
(3,1,1)), transposed (upsampling decoders; also with an output padding at
or past the stride, which cuDNN turns down) and 1-D (audio).
Layouts: contiguous, channels-last input, channels-last weight, both, an
input view at an offset inside a larger tensor, and an input whose memory
is permuted (neither contiguous nor channels-last)."""

from __future__ import annotations

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


@pytest.fixture(autouse=True)
def no_tf32():
    with tf32_off():
        yield


# name: (input, weight, stride, padding, dilation, transposed, output_padding, groups)
FAMILIES = {
    "1x7": ((2, 24, 17, 17), (32, 24, 1, 7), [1, 1], [0, 3], [1, 1], 0, [0, 0], 1),
    "7x1": ((2, 24, 17, 17), (32, 24, 7, 1), [1, 1], [3, 0], [1, 1], 0, [0, 0], 1),
    "1x3": ((2, 40, 8, 8), (48, 40, 1, 3), [1, 1], [0, 1], [1, 1], 0, [0, 0], 1),
    "3x1": ((2, 40, 8, 8), (48, 40, 3, 1), [1, 1], [1, 0], [1, 1], 0, [0, 0], 1),
    "3x3s2_odd": ((1, 32, 35, 35), (48, 32, 3, 3), [2, 2], [0, 0], [1, 1], 0, [0, 0], 1),
    "stem3x3s2": ((1, 3, 299, 299), (32, 3, 3, 3), [2, 2], [0, 0], [1, 1], 0, [0, 0], 1),
    "1x1": ((2, 64, 14, 14), (96, 64, 1, 1), [1, 1], [0, 0], [1, 1], 0, [0, 0], 1),
    "1x1s2": ((2, 64, 14, 14), (96, 64, 1, 1), [2, 2], [0, 0], [1, 1], 0, [0, 0], 1),
    "7x7s2": ((1, 3, 64, 64), (16, 3, 7, 7), [2, 2], [3, 3], [1, 1], 0, [0, 0], 1),
    "groups4": ((2, 32, 12, 12), (32, 8, 3, 3), [1, 1], [1, 1], [1, 1], 0, [0, 0], 4),
    "dw3x3": ((2, 32, 14, 14), (32, 1, 3, 3), [1, 1], [1, 1], [1, 1], 0, [0, 0], 32),
    "dw5x5s2": ((2, 40, 15, 15), (40, 1, 5, 5), [2, 2], [2, 2], [1, 1], 0, [0, 0], 40),
    "dw7x7": ((1, 48, 14, 14), (48, 1, 7, 7), [1, 1], [3, 3], [1, 1], 0, [0, 0], 48),
    "dilated": ((1, 32, 20, 20), (32, 32, 3, 3), [1, 1], [2, 2], [2, 2], 0, [0, 0], 1),
    "3d": ((1, 8, 6, 10, 10), (16, 8, 3, 3, 3), [1, 1, 1], [1, 1, 1], [1, 1, 1], 0, [0, 0, 0], 1),
    "3d_1x3x3": ((1, 8, 6, 10, 10), (16, 8, 1, 3, 3), [1, 2, 2], [0, 1, 1], [1, 1, 1], 0,
                 [0, 0, 0], 1),
    "3d_3x1x1": ((1, 8, 6, 10, 10), (16, 8, 3, 1, 1), [1, 1, 1], [1, 0, 0], [1, 1, 1], 0,
                 [0, 0, 0], 1),
    "transposed": ((2, 16, 9, 9), (16, 8, 4, 4), [2, 2], [1, 1], [1, 1], 1, [0, 0], 1),
    "transposed_op": ((2, 16, 9, 9), (16, 8, 3, 3), [2, 2], [1, 1], [1, 1], 1, [1, 1], 1),
    "1d": ((2, 16, 40), (24, 16, 5), [2], [2], [1], 0, [0], 1),
    # Output padding at or past the stride (legal below the dilation): cuDNN
    # turns these down, torch runs its own kernels.
    "transposed_op_past_stride": ((2, 8, 6, 6), (8, 4, 3, 3), [1, 1], [1, 1], [2, 2], 1,
                                  [1, 1], 1),
    "transposed_op_past_end": ((1, 6, 5, 7), (6, 4, 3, 2), [2, 1], [0, 0], [3, 3], 1, [2, 2], 2),
    "transposed_op_past_stride_3d": ((1, 4, 3, 4, 4), (4, 2, 2, 2, 2), [1, 1, 1], [0, 0, 0],
                                     [2, 2, 2], 1, [1, 1, 1], 1),
    "transposed_op_past_stride_1d": ((2, 4, 9), (4, 3, 3), [1], [1], [2], 1, [1], 1),
}
LAYOUTS = ["contiguous", "cl_input", "cl_weight", "cl_both", "offset", "permuted"]


def channels_last(t):
    if t.dim() == 3:
        return t.transpose(1, 2).contiguous().transpose(1, 2)
    return t.contiguous(memory_format=torch.channels_last if t.dim() == 4 else torch.channels_last_3d)


def laid_out(t, layout, role, g):
    """t's values in the layout the case asks of this operand."""
    if role == "input" and layout in ("cl_input", "cl_both"):
        return channels_last(t)
    if role == "weight" and layout in ("cl_weight", "cl_both"):
        return channels_last(t)
    if role == "input" and layout == "offset":  # a view inside a larger tensor, NaN around it
        big = torch.full([s + 2 for s in t.shape], float("nan"), device="cuda", dtype=t.dtype)
        view = big[tuple(slice(1, 1 + s) for s in t.shape)]
        view.copy_(t)
        return view
    if role == "input" and layout == "permuted":  # memory ordered (N, W, C, H, ...)
        order = [0] + list(range(t.dim() - 1, 1, -1)) + [1]
        return t.permute(order).contiguous().permute(np.argsort(order).tolist())
    return t


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("family", list(FAMILIES))
def test_family_matches_torch(family, layout, dtype):
    xs, ws, stride, padding, dilation, transposed, out_pad, groups = FAMILIES[family]
    dt = getattr(torch, dtype)
    g = torch.Generator(device="cuda").manual_seed(7)
    x = laid_out(torch.randn(xs, generator=g, device="cuda").to(dt), layout, "input", g)
    w = laid_out((torch.randn(ws, generator=g, device="cuda") / np.sqrt(np.prod(ws[1:]))).to(dt),
                 layout, "weight", g)
    cout = ws[1] * groups if transposed else ws[0]
    b = torch.randn(cout, generator=g, device="cuda").to(dt)
    out = shim.call_op("convolution", borrow(x), borrow(w), borrow(b), stride, padding, dilation,
                       transposed, out_pad, groups, entry="cuda")
    want = torch.ops.aten.convolution(x, w, b, stride, padding, dilation, bool(transposed),
                                      out_pad, groups)
    assert out.sizes == list(want.shape)
    assert list(out.strides) == list(want.stride()), \
        f"strides {out.strides}, torch's {want.stride()}"
    ref = torch.ops.aten.convolution(x.double().cpu(), w.double().cpu(), b.double().cpu(), stride,
                                     padding, dilation, bool(transposed), out_pad, groups)
    got = torch.from_numpy(np.asarray(shim.to_numpy(out), dtype=np.float64))
    scale = ref.abs().max().item()
    err = (got - ref).abs().max().item()
    torch_err = (want.double().cpu() - ref).abs().max().item()
    tol = 2e-5 if dtype == "float32" else 2e-2
    print(f"CONVFAM {family} {layout} {dtype}: max err {err / scale:.2e}, "
          f"torch's {torch_err / scale:.2e}")
    assert err <= max(tol * scale, 2 * torch_err), (err / scale, torch_err / scale)
