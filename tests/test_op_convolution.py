"""aten::convolution (aoti_torch_cpu_convolution) against torch.

Inputs and weights are views as torch and the shim both see them: contiguous,
channels-last, and views at storage offsets with padded channel strides, all
over one numpy buffer that both borrow. Each result is checked against a
float64 reference with an error bound from conv(|x|, |w|) + |b|, and its
strides against what torch eager returns for the same views (compiled code
relies on those strides). Compiled models (conv layers, ResNet-18,
MobileNetV3) run through aotishim.load against eager.
"""

from __future__ import annotations

import sys

import ml_dtypes
import numpy as np
import pytest

import aotishim
from aotishim import export, shim

torch = pytest.importorskip("torch")
nn = torch.nn

NP = {"float32": np.float32, "float64": np.float64, "bfloat16": ml_dtypes.bfloat16}
TORCH = {"float32": torch.float32, "float64": torch.float64, "bfloat16": torch.bfloat16}
# Relative to conv(|x|, |w|) + |b|: float32 sums of up to ~10^3 products;
# bfloat16 rounds once (2**-8) after float32 accumulation.
RTOL = {"float64": 1e-12, "float32": 3e-5, "bfloat16": 1e-2}


def live_tensors() -> int:
    return aotishim.memory_stats()["live_tensors"]


# ---------------------------------------------------------------- views

def make(sizes, layout, dtype, rng):
    """(shim tensor, torch tensor): one view of one buffer, in `layout`:
    "contiguous", "channels_last", or "offset" (a view at storage offset 3
    whose channel dim is padded to twice its size and whose rows are padded)."""
    sizes = list(sizes)
    nd = len(sizes)
    if layout == "contiguous":
        padded = sizes
        order = list(range(nd))
    elif layout == "channels_last":
        padded = sizes
        order = [0] + list(range(2, nd)) + [1]  # memory order, outermost first
    elif layout == "offset":
        padded = [sizes[0], 2 * sizes[1]] + sizes[2:-1] + [sizes[-1] + 1] if nd > 2 else sizes
        order = list(range(nd))
    else:
        raise ValueError(layout)
    strides = [0] * nd
    step = 1
    for d in reversed(order):
        strides[d] = step
        step *= max(padded[d], 1)
    offset = 3 if layout == "offset" else 0
    n = offset + step
    flat = rng.standard_normal(n).astype(NP[dtype])
    st = shim.reinterpret_tensor(shim.from_numpy(flat), sizes, strides, offset)
    base = torch.from_numpy(flat.view(np.uint16)).view(torch.bfloat16) if dtype == "bfloat16" \
        else torch.from_numpy(flat)
    tt = torch.as_strided(base, sizes, strides, offset)
    return st, tt, flat


def reference(x, w, b, stride, padding, dilation, transposed, output_padding, groups):
    """The float64 result and an elementwise bound on the rounding error scale."""
    args = (stride, padding, dilation, transposed, output_padding, groups)
    x64, w64 = x.double(), w.double()
    b64 = None if b is None else b.double()
    ref = torch.ops.aten.convolution(x64, w64, b64, *args)
    scale = torch.ops.aten.convolution(x64.abs(), w64.abs(), None if b is None else b64.abs(), *args)
    return ref.numpy(), scale.numpy()


def run_case(x_sizes, w_sizes, *, bias=True, stride, padding, dilation, transposed=False,
             output_padding=None, groups=1, x_layout="contiguous", w_layout="contiguous",
             dtype="float32", entry="cpu", seed=0):
    rng = np.random.default_rng(seed)
    spatial = len(x_sizes) - 2
    output_padding = output_padding or [0] * spatial
    xs, xt, _ = make(x_sizes, x_layout, dtype, rng)
    ws, wt, _ = make(w_sizes, w_layout, dtype, rng)
    cout = w_sizes[1] * groups if transposed else w_sizes[0]
    if bias:
        bs, bt, _ = make([cout], "contiguous", dtype, rng)
    else:
        bs = bt = None
    got = shim.call_op("convolution", xs, ws, bs, stride, padding, dilation, int(transposed),
                       output_padding, groups, entry=entry)
    eager = torch.ops.aten.convolution(xt, wt, bt, stride, padding, dilation, transposed,
                                       output_padding, groups)
    ref, scale = reference(xt, wt, bt, stride, padding, dilation, transposed, output_padding, groups)
    assert got.sizes == list(eager.shape)
    assert got.dtype == dtype
    # Compiled code reads the output by the strides torch eager gives it.
    assert got.strides == list(eager.stride()), (got.strides, eager.stride())
    assert got.storage_offset == 0
    values = got.numpy().astype(np.float64)
    err = np.abs(values - ref)
    bound = RTOL[dtype] * scale + 1e-30
    assert np.all(err <= bound), f"max error {err.max()} (bound at worst {bound[err > bound].min()})"
    shim.delete(got)


# ---------------------------------------------------------------- forward

# (x sizes, w sizes, stride, padding, dilation, groups)
CASES_2D = [
    ((2, 3, 11, 9), (5, 3, 3, 3), [1, 1], [1, 1], [1, 1], 1),
    ((1, 3, 20, 20), (8, 3, 7, 7), [2, 2], [3, 3], [1, 1], 1),       # ResNet stem
    ((2, 8, 7, 6), (4, 8, 1, 1), [1, 1], [0, 0], [1, 1], 1),         # 1x1: input read in place
    ((1, 8, 9, 9), (6, 8, 1, 1), [2, 2], [0, 0], [1, 1], 1),         # 1x1 stride 2 (downsample)
    ((2, 4, 10, 13), (6, 4, 3, 2), [2, 1], [0, 2], [2, 3], 1),       # asymmetric everything
    ((2, 6, 8, 8), (9, 2, 3, 3), [1, 2], [1, 1], [1, 1], 3),         # grouped
    ((2, 6, 9, 9), (6, 1, 3, 3), [2, 2], [1, 1], [1, 1], 6),         # depthwise
    ((1, 4, 12, 12), (8, 1, 5, 5), [1, 1], [2, 2], [2, 1], 4),       # depthwise, multiplier 2
    ((1, 1, 6, 7), (3, 1, 2, 2), [1, 1], [0, 0], [1, 1], 1),         # one input channel
    ((3, 4, 5, 5), (2, 4, 5, 5), [1, 1], [0, 0], [1, 1], 1),         # kernel = input
]


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64"])
@pytest.mark.parametrize("layouts", [("contiguous", "contiguous"), ("channels_last", "contiguous"),
                                     ("contiguous", "channels_last"),
                                     ("channels_last", "channels_last"), ("offset", "offset")])
@pytest.mark.parametrize("case", range(len(CASES_2D)))
def test_conv2d(case, layouts, dtype):
    x, w, stride, padding, dilation, groups = CASES_2D[case]
    run_case(x, w, stride=stride, padding=padding, dilation=dilation, groups=groups,
             x_layout=layouts[0], w_layout=layouts[1], dtype=dtype, bias=case % 3 != 2)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64"])
@pytest.mark.parametrize("case", [
    ((2, 8, 64), (16, 8, 3), [1], [1], [1], 1),
    ((2, 16, 64), (16, 16, 5), [2], [0], [1], 1),
    ((1, 6, 30), (6, 2, 4), [3], [2], [2], 3),
    ((1, 6, 30), (6, 1, 3), [1], [1], [1], 6),
])
# torch runs a 1-D convolution as 2-D on a contiguous copy of the input and a
# (O, I, 1, K) view of the weight: a weight with unit-stride channels makes
# the output channels-last, (C*L, 1, C), which compiled code then assumes.
@pytest.mark.parametrize("layouts", [("contiguous", "contiguous"), ("offset", "offset"),
                                     ("channels_last", "contiguous"),
                                     ("contiguous", "channels_last"),
                                     ("channels_last", "channels_last")])
def test_conv1d(case, layouts, dtype):
    x, w, stride, padding, dilation, groups = case
    run_case(x, w, stride=stride, padding=padding, dilation=dilation, groups=groups,
             x_layout=layouts[0], w_layout=layouts[1], dtype=dtype)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64"])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "offset"])
def test_conv3d(layout, dtype):
    run_case((2, 4, 5, 6, 7), (6, 2, 3, 2, 3), stride=[1, 2, 1], padding=[1, 0, 1],
             dilation=[1, 1, 2], groups=2, x_layout=layout, w_layout=layout, dtype=dtype)


@pytest.mark.parametrize("case", [
    # torch's CPU convolution returns channels-last 3-D output only where it
    # runs oneDNN, which it skips for some small float32 problems.
    ((1, 2, 3, 3, 3), (2, 2, 1, 1, 1)),
    ((1, 2, 4, 4, 4), (3, 2, 2, 2, 2)),
    ((1, 2, 4, 4, 4), (3, 2, 2, 4, 4)),
    ((1, 8, 12, 16, 16), (3, 8, 2, 2, 2)),
])
def test_conv3d_small_problems_keep_torch_layout(case):
    x, w = case
    run_case(x, w, stride=[1, 1, 1], padding=[0, 0, 0], dilation=[1, 1, 1],
             x_layout="channels_last", w_layout="contiguous")


# Output padding that reaches the stride (allowed below the dilation): torch's
# oneDNN turns the convolution down, so a 3-D one runs torch's own kernel and
# comes back contiguous even from channels-last operands; 1-D and 2-D ones
# stay channels-last.
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("spatial", [1, 2, 3])
def test_transposed_output_padding_past_the_stride_keeps_torch_layout(spatial, dtype):
    run_case((2, 4) + (5,) * spatial, (4, 3) + (3,) * spatial, stride=[1] * spatial,
             padding=[1] * spatial, dilation=[2] * spatial, transposed=True,
             output_padding=[1] * spatial, x_layout="channels_last", w_layout="channels_last",
             dtype=dtype)


def test_cpu_feature_checks_agree_with_torchs():
    """The 3-D layout rule asks whether torch's oneDNN takes bfloat16/float16
    on this CPU; our reading of the CPU must be torch's."""
    if not torch.backends.mkldnn.is_available():
        pytest.skip("this torch has no oneDNN to compare with")
    assert aotishim._core.cpu_features() == {
        "onednn_bfloat16": torch.ops.mkldnn._is_mkldnn_bf16_supported(),
        "onednn_float16": torch.ops.mkldnn._is_mkldnn_fp16_supported(),
    }


def test_device_generic_entry():
    run_case((1, 3, 8, 8), (4, 3, 3, 3), stride=[1, 1], padding=[1, 1], dilation=[1, 1],
             entry=None)


def test_list_of_one_value_applies_to_every_dim():
    run_case((1, 3, 9, 8), (4, 3, 3, 3), stride=[2], padding=[1], dilation=[1])


# ---------------------------------------------------------------- Winograd

# float32 3x3 convolutions with unit stride, >= 32 channels each side and
# >= 128 2x2 output tiles run Winograd's F(2x2, 3x3) on the CPU
# (winograd_conv.cpp). Odd output sizes leave half-filled edge tiles;
# channel counts that are not multiples of 4 take the transforms' scalar
# tails. These go through the conv op, in every layout it takes, and would
# pass on the direct path too (flipping one sign in any of the three
# transforms fails every case); tests/cpp/test_winograd_conv.cpp calls the
# path itself, and which shapes take it.
WINOGRAD_2D = [
    # (x sizes, w sizes, padding)
    ((1, 32, 24, 24), (32, 32, 3, 3), [1, 1]),   # 144 tiles
    ((2, 35, 15, 17), (37, 35, 3, 3), [1, 1]),   # 2 images of 8 x 9 tiles, channel tails
    ((1, 33, 26, 30), (34, 33, 3, 3), [0, 0]),   # no padding
    ((1, 32, 21, 23), (40, 32, 3, 3), [2, 0]),   # uneven padding, odd output
]


@pytest.mark.parametrize("layouts", [("contiguous", "contiguous"), ("channels_last", "channels_last"),
                                     ("channels_last", "contiguous"), ("offset", "offset")])
@pytest.mark.parametrize("case", range(len(WINOGRAD_2D)))
def test_winograd_3x3(case, layouts):
    x, w, padding = WINOGRAD_2D[case]
    run_case(x, w, stride=[1, 1], padding=padding, dilation=[1, 1], x_layout=layouts[0],
             w_layout=layouts[1], bias=case != 1, seed=case)


@pytest.mark.parametrize("where", ["input", "weight"])
@pytest.mark.parametrize("value", [np.inf, -np.inf, np.nan])
def test_winograd_non_finite_values_match_the_direct_sum(where, value):
    """Winograd's transforms add and subtract neighbouring inputs, so one
    infinity would give inf - inf = NaN in outputs where the direct sum (and
    torch) gives +-inf; such a call must run the direct convolution."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1, 32, 24, 24)).astype(np.float32)
    w = rng.standard_normal((32, 32, 3, 3)).astype(np.float32)
    if where == "input":
        x[0, 5, 10, 11] = value
    else:
        w[7, 3, 1, 1] = value
    got = shim.call_op("convolution", shim.from_numpy(x), shim.from_numpy(w), None, [1, 1], [1, 1],
                       [1, 1], 0, [0, 0], 1, entry="cpu")
    values = got.numpy()
    shim.delete(got)
    expected = torch.nn.functional.conv2d(torch.from_numpy(x).double(),
                                          torch.from_numpy(w).double(), padding=1).numpy()
    assert np.array_equal(np.isnan(values), np.isnan(expected))
    def infinities(a):
        return np.where(np.isinf(a), np.sign(a), 0)
    assert np.array_equal(infinities(values), infinities(expected))
    finite = np.isfinite(expected)
    assert finite.any() and np.allclose(values[finite], expected[finite], rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------- transposed

@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64"])
@pytest.mark.parametrize("case", [
    # (x, w, stride, padding, dilation, output_padding, groups)
    ((1, 8, 16, 16), (8, 4, 4, 4), [2, 2], [1, 1], [1, 1], [0, 0], 1),  # the zoo's ConvTranspose2d
    ((2, 4, 5, 6), (4, 3, 3, 3), [2, 3], [1, 0], [1, 1], [1, 2], 1),    # output_padding
    ((2, 6, 5, 5), (6, 2, 3, 3), [2, 2], [0, 1], [2, 1], [1, 0], 3),    # groups, dilation
    ((1, 4, 4, 4), (4, 1, 3, 3), [1, 1], [1, 1], [1, 1], [0, 0], 4),    # depthwise
])
@pytest.mark.parametrize("layouts", [("contiguous", "contiguous"), ("channels_last", "contiguous"),
                                     ("offset", "channels_last")])
def test_conv_transpose2d(case, layouts, dtype):
    x, w, stride, padding, dilation, output_padding, groups = case
    run_case(x, w, stride=stride, padding=padding, dilation=dilation, transposed=True,
             output_padding=output_padding, groups=groups, x_layout=layouts[0],
             w_layout=layouts[1], dtype=dtype)


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_conv_transpose1d_and_3d(dtype):
    run_case((2, 4, 9), (4, 3, 3), stride=[2], padding=[1], dilation=[1], transposed=True,
             output_padding=[1], dtype=dtype, x_layout="offset")
    run_case((1, 2, 3, 4, 3), (2, 3, 2, 3, 2), stride=[2, 1, 2], padding=[0, 1, 0],
             dilation=[1, 1, 2], transposed=True, output_padding=[1, 0, 1], dtype=dtype)


def test_empty_batch():
    x = shim.from_numpy(np.zeros((0, 3, 5, 5), np.float32))
    w = shim.from_numpy(np.ones((4, 3, 3, 3), np.float32))
    out = shim.call_op("convolution", x, w, None, [1, 1], [0, 0], [1, 1], 0, [0, 0], 1, entry="cpu")
    assert out.sizes == [0, 4, 3, 3]


# ---------------------------------------------------------------- errors

def _t(shape, dtype=np.float32):
    return shim.from_numpy(np.ones(shape, dtype))


ERRORS = [
    # (description, x, w, b, stride, padding, dilation, transposed, output_padding, groups, message)
    ("channel mismatch", (1, 4, 8, 8), (5, 3, 3, 3), None, [1, 1], [0, 0], [1, 1], 0, [0, 0], 1,
     "to have 3 channels, but got 4 channels"),
    ("groups do not divide Cout", (1, 4, 8, 8), (5, 2, 3, 3), None, [1, 1], [0, 0], [1, 1], 0,
     [0, 0], 2, "expected weight to be divisible by 2"),
    ("zero groups", (1, 4, 8, 8), (4, 4, 3, 3), None, [1, 1], [0, 0], [1, 1], 0, [0, 0], 0,
     "non-positive groups"),
    ("negative padding", (1, 3, 8, 8), (4, 3, 3, 3), None, [1, 1], [-1, 0], [1, 1], 0, [0, 0], 1,
     "negative padding"),
    ("zero stride", (1, 3, 8, 8), (4, 3, 3, 3), None, [0, 1], [0, 0], [1, 1], 0, [0, 0], 1,
     "non-positive stride"),
    ("zero dilation", (1, 3, 8, 8), (4, 3, 3, 3), None, [1, 1], [0, 0], [0, 1], 0, [0, 0], 1,
     "dilation should be greater than zero"),
    ("stride list length", (1, 3, 8, 8), (4, 3, 3, 3), None, [1, 1, 1], [0, 0], [1, 1], 0, [0, 0],
     1, "expected stride to be a single integer value or a list of 2 values"),
    ("padding list length", (1, 3, 8, 8), (4, 3, 3, 3), None, [1, 1], [], [1, 1], 0, [0, 0], 1,
     "expected padding to be a single integer value or a list of 2 values"),
    ("kernel larger than input", (1, 3, 2, 8), (4, 3, 3, 3), None, [1, 1], [0, 0], [1, 1], 0,
     [0, 0], 1, "kernel size can't be greater than the actual input size"),
    ("bias size", (1, 3, 8, 8), (4, 3, 3, 3), (5,), [1, 1], [0, 0], [1, 1], 0, [0, 0], 1,
     "expected bias to be 1-dimensional with 4 elements"),
    ("weight rank", (1, 3, 8, 8), (4, 3, 3), None, [1, 1], [0, 0], [1, 1], 0, [0, 0], 1,
     "expected 4-dimensional weight"),
    ("no input channels", (1, 0, 5, 5), (4, 0, 3, 3), None, [1, 1], [0, 0], [1, 1], 0, [0, 0], 1,
     "has no channels"),
    ("unbatched input", (3, 8), (4, 3, 3), None, [1], [0], [1], 0, [0], 1,
     "1-D, 2-D and 3-D convolutions of batched input"),
    ("output padding", (1, 4, 5, 5), (4, 2, 3, 3), None, [2, 2], [0, 0], [1, 1], 1, [2, 0], 1,
     "output padding must be smaller than either stride or dilation"),
    ("transposed channels", (1, 3, 5, 5), (4, 2, 3, 3), None, [1, 1], [0, 0], [1, 1], 1, [0, 0], 1,
     "to have 4 channels, but got 3 channels"),
    ("transposed output too small", (1, 4, 1, 1), (4, 2, 1, 1), None, [1, 1], [1, 1], [1, 1], 1,
     [0, 0], 1, "too small"),
]


@pytest.mark.parametrize("case", ERRORS, ids=[e[0] for e in ERRORS])
def test_errors(case):
    _, x, w, b, stride, padding, dilation, transposed, output_padding, groups, message = case
    xs, ws = _t(x), _t(w)
    bs = None if b is None else _t(b)
    before = live_tensors()
    with pytest.raises(aotishim.ShimError, match=message.replace("(", r"\(").replace("[", r"\[")):
        shim.call_op("convolution", xs, ws, bs, stride, padding, dilation, transposed,
                     output_padding, groups, entry="cpu")
    assert live_tensors() == before  # nothing made, nothing lost


def test_dtype_errors():
    x, w = _t((1, 3, 8, 8)), _t((4, 3, 3, 3), np.float64)
    with pytest.raises(aotishim.ShimError, match="dtype mismatch: input is float32 but weight is float64"):
        shim.call_op("convolution", x, w, None, [1, 1], [0, 0], [1, 1], 0, [0, 0], 1, entry="cpu")
    # The refusal names what the cpu kernel runs: no float16 there.
    for dtype in (np.int32, np.int64, np.float16):
        x, w = _t((1, 3, 8, 8), dtype), _t((4, 3, 3, 3), dtype)
        name = np.dtype(dtype).name
        with pytest.raises(aotishim.ShimError) as err:
            shim.call_op("convolution", x, w, None, [1, 1], [0, 0], [1, 1], 0, [0, 0], 1,
                         entry="cpu")
        assert (f"unsupported dtype {name} for convolution on cpu "
                "(its kernel supports float32, float64 and bfloat16)") in str(err.value)


def test_cpu_entry_refuses_sim_tensors():
    # (sim runs convolution through the device-generic entry: tests/test_sim_ops.py)
    x = shim.from_numpy(np.ones((1, 3, 8, 8), np.float32), copy=True, device="sim")
    w = shim.from_numpy(np.ones((4, 3, 3, 3), np.float32), copy=True, device="sim")
    before = live_tensors()
    with pytest.raises(aotishim.ShimError, match="runs on the cpu device"):
        shim.call_op("convolution", x, w, None, [1, 1], [0, 0], [1, 1], 0, [0, 0], 1, entry="cpu")
    assert live_tensors() == before


# ---------------------------------------------------------------- compiled models

def _torchvision():
    """torchvision, importable with a CPU-only torch: the PyPI wheel's
    compiled ops may fail to load there, and two of its fake-op
    registrations then need the op schemas defined first."""
    try:
        import torchvision
        return torchvision
    except ImportError:
        pytest.skip("torchvision is not installed")
    except RuntimeError:
        for name in [m for m in sys.modules if m == "torchvision" or m.startswith("torchvision.")]:
            del sys.modules[name]
        lib = torch.library.Library("torchvision", "DEF")
        lib.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        lib.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
        _torchvision.keep = lib  # the definitions live as long as the library object
        import torchvision
        return torchvision


def _conv1d():
    return nn.Sequential(nn.Conv1d(8, 16, 3, padding=1), nn.ReLU(), nn.Conv1d(16, 16, 5, stride=2),
                         nn.GELU()), (torch.randn(2, 8, 64),)


def _conv2d_bn_pool():
    m = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Conv2d(16, 32, 3, stride=2), nn.BatchNorm2d(32), nn.ReLU(),
                      nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))
    return m, (torch.randn(2, 3, 32, 32),)


def _conv_transpose2d():
    return nn.Sequential(nn.ConvTranspose2d(8, 4, 4, stride=2, padding=1), nn.Tanh()), \
        (torch.randn(1, 8, 16, 16),)


def _conv3d():
    return nn.Sequential(nn.Conv3d(4, 8, 3, padding=1), nn.ReLU(), nn.Conv3d(8, 8, 3, stride=2),
                         nn.AdaptiveAvgPool3d(1), nn.Flatten()), (torch.randn(2, 4, 8, 8, 8),)


def _resnet18():
    return _torchvision().models.resnet18(weights=None), (torch.randn(1, 3, 112, 112),)


def _mobilenet_v3_small():
    return _torchvision().models.mobilenet_v3_small(weights=None), (torch.randn(1, 3, 112, 112),)


MODELS = {
    "conv1d": (_conv1d, "float32"),
    "conv2d_bn_pool": (_conv2d_bn_pool, "float32"),
    "conv2d_bf16": (_conv2d_bn_pool, "bfloat16"),
    "conv_transpose2d": (_conv_transpose2d, "float32"),
    "conv3d": (_conv3d, "float32"),
    "conv3d_bf16": (_conv3d, "bfloat16"),
    "resnet18": (_resnet18, "float32"),
    "mobilenet_v3_small": (_mobilenet_v3_small, "float32"),
}


def to_numpy(t):
    t = t.detach().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


@pytest.mark.parametrize("name", list(MODELS))
def test_compiled_model_matches_eager(name, model_cache):
    build, dtype = MODELS[name]
    torch.manual_seed(0)
    module, args = build()
    module = module.eval().to(TORCH[dtype])
    args = tuple(a.to(TORCH[dtype]) for a in args)
    so = export.compile_cached(module, args, model_cache, name="conv_" + name)
    with torch.no_grad():
        want = to_numpy(module(*args)).astype(np.float64)
    before = live_tensors()
    with aotishim.load(so) as m:
        for _ in range(2):  # a second run reuses the loaded weights
            (got,) = m(*[to_numpy(a) for a in args])
            assert got.shape == want.shape
            err = np.abs(got.astype(np.float64) - want).max()
            scale = max(np.abs(want).max(), 1e-6)
            # float32: 1e-4 of the output's scale; bfloat16: 2e-2.
            assert err <= (2e-2 if dtype == "bfloat16" else 1e-4) * scale, (name, err, scale)
    assert live_tensors() == before
