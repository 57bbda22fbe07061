"""pad, angle, gcd, pow, hann_window, _fused_rms_norm, grid_sampler_3d,
_trilinear, _cdist_forward, _pdist_forward and _addmm_activation on cuda,
beyond their OpInfo samples (tests/test_opinfo.py runs those on cuda too),
against torch cuda with TF32 off: values, dtypes, sizes and output strides,
on inputs the samples do not reach (pow's special exponents per dtype,
gcd's most negative values, NaN and infinite sampling coordinates, NaN in
an inf-norm, the matrix-product form of cdist, long normalized rows, gelu's
tanh form), and the errors for what cuda refuses."""

from __future__ import annotations

import math

import pytest

import aotishim
from aotishim import shim

pytestmark = pytest.mark.skipif("cuda:0" not in aotishim.devices(),
                                reason="no CUDA device in this process")
torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("torch cannot use CUDA here", allow_module_level=True)

from aotishim._core import ShimError  # noqa: E402
from cuda_helpers import borrow, tf32_off  # noqa: E402
from torch_views import to_torch  # noqa: E402

FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
COMPLEX = [torch.complex64, torch.complex128]
DTYPE_CODES = {torch.float16: 5, torch.float32: 6, torch.float64: 7, torch.bfloat16: 15}


@pytest.fixture(autouse=True)
def no_tf32():
    with tf32_off():
        yield


def check(got, want, rtol=None, atol=None, strides=True):
    """got (a shim tensor) against torch cuda's `want`: dtype, sizes, strides
    (of outputs the op made), values (NaN where torch has NaN)."""
    assert got.dtype == str(want.dtype)[6:], (got.dtype, want.dtype)
    assert got.sizes == list(want.shape), (got.sizes, list(want.shape))
    if strides and want.numel() > 1:
        assert got.strides == list(want.stride()), (got.strides, list(want.stride()))
    torch.testing.assert_close(to_torch(got), want.cpu(), rtol=rtol, atol=atol, equal_nan=True,
                               check_stride=False)


def randn(*shape, dtype=torch.float32, seed=0, scale=1.0):
    g = torch.Generator(device="cuda").manual_seed(seed)
    return (torch.randn(*shape, generator=g, device="cuda", dtype=torch.float64) * scale).to(dtype)


# ------------------------------------------------------------------ pow


# 2.0001 and -1.9999 round to 2 and -2 in float16 and bfloat16, where torch
# then squares; 0.1 rounds there too before pow.
EXPONENTS = [0.0, 1.0, 0.5, -0.5, -1.0, 2.0, 3.0, -2.0, 2.5, 0.1, -3.0, 2.0001, -1.9999, 7.0]


@pytest.mark.parametrize("dtype", FLOATS + COMPLEX)
@pytest.mark.parametrize("exponent", EXPONENTS)
def test_pow_tensor_scalar_special_exponents_are_torch_cudas(dtype, exponent):
    x = randn(6, 9, dtype=dtype, seed=1, scale=2.0)
    if not dtype.is_complex:
        x[0, :3] = torch.tensor([0.0, -0.0, float("nan")], dtype=dtype)
    x = x.t()  # a transposed view: the output takes its layout
    got = shim.call_op("pow_Tensor_Scalar", borrow(x), exponent, entry="cuda")
    check(got, torch.ops.aten.pow.Tensor_Scalar(x, exponent))


@pytest.mark.parametrize("dtype", FLOATS + COMPLEX)
def test_pow_tensor_tensor_is_torch_cudas(dtype):
    x = randn(5, 7, dtype=dtype, seed=2, scale=2.0)
    e = randn(7, dtype=dtype, seed=3)  # broadcast over the rows
    got = shim.call_op("pow_Tensor_Tensor", borrow(x), borrow(e), entry="cuda")
    check(got, torch.pow(x, e))


@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64])
def test_integer_pow_wraps_as_torch_cudas(dtype):
    signed = dtype != torch.uint8
    base = torch.arange(-4 if signed else 0, 9, device="cuda").to(dtype)
    exp = torch.arange(-3 if signed else 0, 12, device="cuda").to(dtype)  # past the wrap
    x = base[:, None].expand(-1, exp.numel()).contiguous()
    y = exp[None, :].expand(base.numel(), -1).contiguous()
    got = shim.call_op("pow_Tensor_Tensor", borrow(x), borrow(y), entry="cuda")
    check(got, torch.pow(x, y), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", FLOATS + COMPLEX)
@pytest.mark.parametrize("base", [2.0, -1.5, 1.0, 0.0])
def test_pow_scalar_is_torch_cudas(dtype, base):
    e = randn(4, 6, dtype=dtype, seed=4)
    got = shim.call_op("pow_Scalar", base, borrow(e), entry="cuda")
    check(got, torch.ops.aten.pow.Scalar(base, e))


def test_pow_of_integers_to_a_number_is_torch_cudas():
    # the validation converts the integers to float32 first (once refused:
    # cuda copies had no such conversion)
    x = torch.arange(-3, 6, device="cuda")
    got = shim.call_op("pow_Tensor_Scalar", borrow(x), 2.5, entry="cuda")
    check(got, torch.pow(x, 2.5))


# ------------------------------------------------------------------ angle and gcd


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64] + COMPLEX)
def test_angle_is_torch_cudas(dtype):
    x = randn(4, 5, dtype=dtype, seed=5)
    if not dtype.is_complex:
        x[0, :4] = torch.tensor([0.0, -0.0, float("nan"), -float("inf")], dtype=dtype)
    else:
        x[0, :3] = torch.tensor([0, complex(-1, 0), complex(0, -2)], dtype=dtype)
    got = shim.call_op("angle", borrow(x), entry="cuda")
    check(got, torch.angle(x), rtol=0 if not dtype.is_complex else None,
          atol=0 if not dtype.is_complex else None)


def test_angle_of_integers_is_torch_cudas():
    x = torch.arange(-3, 3, device="cuda")
    check(shim.call_op("angle", borrow(x), entry="cuda"), torch.angle(x), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.int8, torch.uint8, torch.int16, torch.int32, torch.int64])
def test_gcd_is_torch_cudas_at_the_extremes(dtype):
    info = torch.iinfo(dtype)
    values = [0, 1, 6, 9, 12, 35, info.max, info.min]
    if info.min < 0:
        values += [-6, -9, -1]
    a = torch.tensor(values, device="cuda", dtype=dtype)
    x, y = a[:, None].expand(-1, len(values)), a[None, :].expand(len(values), -1)
    got = shim.call_op("gcd", borrow(x.contiguous()), borrow(y.contiguous()), entry="cuda")
    check(got, torch.gcd(x.contiguous(), y.contiguous()), rtol=0, atol=0)


def test_gcd_of_floats_is_refused():
    x = torch.ones(3, device="cuda")
    with pytest.raises(ShimError, match="not implemented for"):
        shim.call_op("gcd", borrow(x), borrow(x), entry="cuda")


# ------------------------------------------------------------------ pad


PADS = [
    ("constant", (1, 2, 0, 3), 4, 2.5),
    ("constant", (-1, 2, 1, -2, 0, 1), 4, None),
    ("reflect", (2, 1, 1, 2), 4, None),
    ("reflect", (1, 1, 2, 0, 1, 1), 5, None),
    ("replicate", (3, 0, -1, 2), 4, None),
    ("replicate", (1, 2, 0, 1, 2, 1), 5, None),
    ("circular", (2, 1, 1, 2), 4, None),
    ("circular", (-1, 2, 1, -1, 1, 1), 5, None),
]


@pytest.mark.parametrize("mode,pad,ndim,value", PADS)
@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "strided"])
def test_pad_is_torch_cudas_with_its_layout(mode, pad, ndim, value, layout):
    shape = (2, 3, 5, 6) if ndim == 4 else (2, 3, 4, 5, 6)
    x = randn(*shape, seed=6)
    if layout == "channels_last":
        x = x.contiguous(memory_format=torch.channels_last if ndim == 4
                         else torch.channels_last_3d)
    elif layout == "strided":
        x = randn(*shape[:-1], 2 * shape[-1], seed=6)[..., ::2]
    got = shim.call_op("pad", borrow(x), list(pad), mode, value, entry="cuda")
    # (torch cuda's reflect and replicate pads are contiguous for channels-last
    # input, unlike torch's cpu kernels: ops/pad.cpp must follow the device)
    check(got, torch.ops.aten.pad(x, list(pad), mode, value), rtol=0, atol=0)


@pytest.mark.parametrize("dtype", [torch.bool, torch.int8, torch.int64, torch.float16,
                                   torch.complex64, torch.complex128])
def test_constant_pad_moves_every_dtype(dtype):
    x = (randn(3, 4, 5, seed=7, dtype=torch.float64) * 3).to(dtype)
    got = shim.call_op("pad", borrow(x), [1, 2, 2, 0], "constant", 1.0, entry="cuda")
    check(got, torch.ops.aten.pad(x, [1, 2, 2, 0], "constant", 1.0), rtol=0, atol=0)


# ------------------------------------------------------------------ hann_window


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("n", [2, 3, 16, 1000, 4097])
def test_hann_window_is_torch_cudas(dtype, n):
    got = shim.call_op("hann_window", n, DTYPE_CODES[dtype], None, None, 0, None, entry="cuda")
    check(got, torch.hann_window(n, dtype=dtype, device="cuda"))


# ------------------------------------------------------------------ _fused_rms_norm


RMS_TOL = {torch.float32: (2e-6, 1e-6), torch.float64: (1e-12, 1e-12),
           torch.float16: (1e-3, 1e-3), torch.bfloat16: (1.6e-2, 1e-2)}


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,normalized", [((4, 4096), [4096]), ((3, 5, 7), [5, 7]),
                                              ((2, 3, 6), [6])])
@pytest.mark.parametrize("weighted", [False, True])
def test_fused_rms_norm_is_torch_cudas(dtype, shape, normalized, weighted):
    x = randn(*shape, dtype=dtype, seed=8, scale=3.0).transpose(0, -1).contiguous().transpose(0, -1)
    w = randn(*normalized, dtype=dtype, seed=9) if weighted else None
    got = shim.call_op("_fused_rms_norm", borrow(x), list(normalized),
                       None if w is None else borrow(w), None, entry="cuda")
    want = torch.ops.aten._fused_rms_norm(x, list(normalized), w, None)
    rtol, atol = RMS_TOL[dtype]
    check(got[0], want[0], rtol=rtol, atol=atol)
    check(got[1], want[1], rtol=rtol, atol=atol)


# ------------------------------------------------------------------ grid_sampler_3d


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("interpolation", [0, 1])
@pytest.mark.parametrize("padding", [0, 1, 2])
@pytest.mark.parametrize("align", [False, True])
def test_grid_sampler_3d_edges_are_torch_cudas(dtype, interpolation, padding, align):
    x = randn(2, 3, 4, 5, 6, dtype=dtype, seed=10)
    grid = randn(2, 3, 4, 5, 3, dtype=dtype, seed=11, scale=0.8)
    # NaN and infinite coordinates, far outside, on cell edges (halves for nearest)
    specials = [float("nan"), float("inf"), -float("inf"), 1e10, -3.0, 1.0, -1.0, 0.5, 0.25]
    grid.view(-1)[:len(specials)] = torch.tensor(specials, dtype=dtype)
    grid = grid.transpose(1, 3)  # a strided grid
    got = shim.call_op("grid_sampler_3d", borrow(x), borrow(grid), interpolation, padding,
                       int(align), entry="cuda")
    want = torch.ops.aten.grid_sampler_3d(x, grid, interpolation, padding, align)
    tol = {torch.float16: 2e-3, torch.bfloat16: 1.6e-2}.get(dtype)
    check(got, want, rtol=tol, atol=tol)


# ------------------------------------------------------------------ distances


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 3.0, 0.5, math.inf])
@pytest.mark.parametrize("rows", [7, 40])
@pytest.mark.parametrize("mode", [None, 1, 2])
def test_cdist_is_torch_cudas(dtype, p, rows, mode):
    x1 = randn(2, 1, rows, 300, dtype=dtype, seed=12)  # batch (2, 1) against (1, 3)
    x2 = randn(1, 3, 9, 300, dtype=dtype, seed=13).transpose(-1, -2).contiguous().transpose(-1, -2)
    x1[0, 0, 0, 5] = float("nan")  # ignored by torch cuda's inf-norm
    got = shim.call_op("_cdist_forward", borrow(x1), borrow(x2), p, mode, entry="cuda")
    want = torch.ops.aten._cdist_forward(x1, x2, p, mode)
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    check(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 2.5, math.inf])
def test_pdist_is_torch_cudas(dtype, p):
    x = randn(31, 700, dtype=dtype, seed=14)
    x[3, 7] = float("nan")
    got = shim.call_op("_pdist_forward", borrow(x), p, entry="cuda")
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    check(got, torch.ops.aten._pdist_forward(x, p), rtol=tol, atol=tol)


def test_cdist_of_half_is_refused():
    x = torch.ones(3, 4, device="cuda", dtype=torch.float16)
    with pytest.raises(ShimError, match="not implemented"):
        shim.call_op("_cdist_forward", borrow(x), borrow(x), 2.0, None, entry="cuda")


# ------------------------------------------------------------------ _addmm_activation, _trilinear


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("gelu", [False, True])
@pytest.mark.parametrize("bias", ["vector", "matrix"])
def test_addmm_activation_is_torch_cudas(dtype, gelu, bias):
    mat1, mat2 = randn(33, 64, dtype=dtype, seed=15), randn(64, 17, dtype=dtype, seed=16)
    self = randn(17, dtype=dtype, seed=17) if bias == "vector" else randn(33, 17, dtype=dtype,
                                                                          seed=17)
    got = shim.call_op("_addmm_activation", borrow(self), borrow(mat1), borrow(mat2), 1.0, 1.0,
                       int(gelu), entry="cuda")
    want = torch.ops.aten._addmm_activation(self, mat1, mat2, beta=1.0, alpha=1.0, use_gelu=gelu)
    tol = {torch.float32: 2e-5, torch.float64: 1e-12, torch.float16: 2e-3,
           torch.bfloat16: 2e-2}[dtype]
    if dtype == torch.float64 and gelu:
        # torch cuda's float64 gelu here is 1e-9 from the exact tanh form (seen
        # on the H200; torch cpu's is the erf form, 5e-4 away): ours must be
        # the tanh form of the float64 product to 1e-12, torch cuda's to 1e-9
        exact = torch.nn.functional.gelu(torch.addmm(self.cpu(), mat1.cpu(), mat2.cpu()),
                                         approximate="tanh")
        torch.testing.assert_close(to_torch(got), exact, rtol=1e-12, atol=1e-12)
        tol = 1e-9
    check(got, want, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", FLOATS)
def test_bilinear_trilinear_is_torch_cudas(dtype):
    x1, w, x2 = (randn(16, 20, dtype=dtype, seed=18), randn(8, 20, 12, dtype=dtype, seed=19),
                 randn(16, 12, dtype=dtype, seed=20))
    dims = ([1, 3], [0], [1, 2], [2, 3])
    got = shim.call_op("_trilinear", borrow(x1), borrow(w.transpose(1, 2).contiguous()
                                                       .transpose(1, 2)), borrow(x2), *dims, 1,
                       entry="cuda")
    want = torch.ops.aten._trilinear(x1, w, x2, *dims, 1)
    tol = {torch.float32: 1e-5, torch.float64: 1e-12, torch.float16: 1e-2,
           torch.bfloat16: 5e-2}[dtype]
    check(got, want, rtol=tol, atol=tol)
