"""sort / sort_stable, cumsum / cumprod and the pointwise ops (add, mul,
abs, polar) on cuda against torch cuda beyond their OpInfo samples
(tests/test_opinfo.py runs sort and the scans on cuda too): stable order of
ties, NaN and -0.0, long lines and many short ones, every dim, output
strides, dtype promotion, broadcasting and TensorIterator's output layouts."""

from __future__ import annotations

import pytest

import aotishim
from aotishim import shim

pytestmark = pytest.mark.skipif("cuda:0" not in aotishim.devices(),
                                reason="no CUDA device in this process")
torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("torch cannot use CUDA here", allow_module_level=True)

from aotishim._core import ShimError  # noqa: E402
from cuda_helpers import borrow  # noqa: E402
from torch_views import to_torch  # noqa: E402

DT = {name: getattr(torch, name) for name in
      ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
       "float64", "complex64", "complex128"]}


def values(dtype, shape, seed=0, device="cuda"):
    g = torch.Generator(device=device).manual_seed(seed)
    if dtype.is_complex:
        return torch.randn(shape, dtype=dtype, generator=g, device=device)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g, device=device) > 0.5
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g, device=device).to(dtype)
    lo = -100 if dtype != torch.uint8 else 0
    return torch.randint(lo, 100, shape, generator=g, device=device).to(dtype)


def check_result(h, want, exact=True):
    assert h.sizes == list(want.shape)
    assert h.strides == list(want.stride()), "output strides differ from torch cuda's"
    got = to_torch(h)
    assert got.dtype == want.dtype
    if exact:
        torch.testing.assert_close(got, want.cpu().contiguous(), rtol=0, atol=0, equal_nan=True)
    else:
        torch.testing.assert_close(got, want.cpu().contiguous(), equal_nan=True)


# ---------------------------------------------------------------- sort


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "int32",
                                   "int16", "int8", "uint8", "bool"])
@pytest.mark.parametrize("shape,dim", [((1000,), 0), ((7, 300), 1), ((300, 7), 0), ((4, 5, 6), 1),
                                       ((20000, 3), 1), ((), 0)])
@pytest.mark.parametrize("descending", [False, True])
def test_stable_sort_is_torchs(dtype, shape, dim, descending):
    x = values(DT[dtype], shape, 3)
    if DT[dtype].is_floating_point or DT[dtype] == torch.int64:
        x = (x * 2).round() if DT[dtype].is_floating_point else x % 5  # many ties
    if dtype == "bool":
        # refused: on torch's OpInfo samples bool ties came back in another order
        with pytest.raises(ShimError, match="sort of bool tensors is not supported yet"):
            shim.call_op("sort_stable", borrow(x), 1, dim, int(descending), entry="cuda")
        return
    v, i = shim.call_op("sort_stable", borrow(x), 1, dim, int(descending), entry="cuda")
    want_v, want_i = torch.sort(x, dim=dim, descending=descending, stable=True)
    check_result(v, want_v)
    check_result(i, want_i)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("descending", [False, True])
def test_sort_of_nan_and_signed_zeros(dtype, descending):
    x = torch.tensor([0.0, -0.0, float("nan"), 1.0, -float("nan"), -0.0, float("-inf"), 0.0,
                      float("inf"), -1.0], device="cuda").to(DT[dtype])
    # the NaNs' bits set here: a conversion to float16 or bfloat16 may change
    # the sign (x[2] a positive quiet NaN, x[4] the same with its sign bit set)
    width = 8 * x.element_size()
    quiet = {torch.float32: 0x7FC00000, torch.float64: 0x7FF8000000000000,
             torch.float16: 0x7E00, torch.bfloat16: 0x7FC0}[x.dtype]
    bits = x.view({32: torch.int32, 64: torch.int64, 16: torch.int16}[width])
    bits[2] = quiet
    bits[4] = quiet - (1 << (width - 1))  # the sign bit, as a signed integer
    # (by the bits: torch cuda's signbit of a float16 NaN reads False)
    assert torch.isnan(x[4]) and bits[4] < 0 and bits[2] > 0
    v, i = shim.call_op("sort_stable", borrow(x), 1, 0, int(descending), entry="cuda")
    want_v, want_i = torch.sort(x, descending=descending, stable=True)
    assert torch.equal(to_torch(i), want_i.cpu())
    got = to_torch(v)
    # each value keeps its own bits: -0.0 stays -0.0
    assert torch.equal(torch.signbit(got[~got.isnan()]), torch.signbit(want_v[~want_v.isnan()]).cpu())


@pytest.mark.parametrize("layout", ["transposed", "gaps", "offset", "channels_last"])
def test_sort_layouts_and_the_unstable_entry(layout):
    base = values(torch.float32, (2, 3, 8, 5), 4)
    x = {"transposed": base.transpose(1, 3), "gaps": base[..., ::2],
         "offset": base.flatten()[7:7 + 60].view(3, 4, 5),
         "channels_last": base.contiguous(memory_format=torch.channels_last)}[layout]
    for dim in range(x.dim()):
        v, i = shim.call_op("sort", borrow(x), dim, 0, entry="cuda")
        want_v, want_i = torch.sort(x, dim=dim)
        check_result(v, want_v)
        assert i.strides == list(want_i.stride())
        assert torch.equal(torch.gather(x.cpu(), dim, to_torch(i)), want_v.cpu())


def test_sort_refuses_complex():
    with pytest.raises(ShimError, match="cuda sort supports"):
        shim.call_op("sort", borrow(torch.ones(3, dtype=torch.complex64, device="cuda")), 0, 0,
                     entry="cuda")


# ---------------------------------------------------------------- cumsum / cumprod


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
@pytest.mark.parametrize("dtype,out_dtype", [("float32", None), ("float64", None),
                                             ("float16", None), ("bfloat16", None),
                                             ("int32", None), ("int8", None), ("bool", None),
                                             ("uint8", None), ("int64", None),
                                             ("float32", "float64"), ("int32", "float32"),
                                             ("float64", "float16"), ("int64", "int16")])
@pytest.mark.parametrize("shape,dim", [((1000,), 0), ((9, 70), 1), ((70, 9), 0),
                                       ((3, 4, 5), -2), ((), 0), ((2, 0, 3), 2)])
def test_cumulative_is_torchs(op, dtype, out_dtype, shape, dim):
    x = values(DT[dtype], shape, 5)
    if op == "cumprod" and DT[dtype].is_floating_point:
        x = 1 + x / 64  # products that stay finite
    elif op == "cumprod" and out_dtype is not None and DT[out_dtype].is_floating_point:
        # integers of up to 100 leave float32's range within 20 terms (and the
        # float64 reference's within 160, where the error bound means nothing):
        # +-1 with a 2 now and then keeps every product finite, and exact
        x = torch.where(x % 13 == 0, 2, torch.where(x % 2 == 0, 1, -1)).to(x.dtype)
    code = None if out_dtype is None else {"float64": 7, "float32": 6, "float16": 5,
                                           "int16": 2}[out_dtype]
    got = shim.call_op(op, borrow(x), dim, code, entry="cuda")
    want = getattr(torch, op)(x, dim, dtype=None if out_dtype is None else DT[out_dtype])
    exact = not want.dtype.is_floating_point
    if exact:
        check_result(got, want)
        return
    assert got.sizes == list(want.shape) and got.strides == list(want.stride())
    assert to_torch(got).dtype == want.dtype
    if want.dtype in (torch.float16, torch.bfloat16):
        # torch cuda rounds every partial result to the dtype, in its kernel's
        # order (tests/gpu/test_cuda_order_scan_search.py checks that bit for
        # bit): as close to the float64 answer as torch's, within a rounding
        if want.numel() > 0:
            xin = x.to(want.dtype).double()
            exact = getattr(torch, op)(xin, dim).cpu()
            ours = (to_torch(got).double() - exact).abs().max()
            theirs = (want.cpu().double() - exact).abs().max()
            assert ours <= 2 * theirs + torch.finfo(want.dtype).eps * exact.abs().max()
        return
    # against the float64 answer: one rounding into the dtype plus the
    # accumulation's (n terms of float32, or float64, rounding each partial)
    xin = x.to(want.dtype).double()  # the input converted first, as torch does
    exact = getattr(torch, op)(xin, dim).cpu()
    scale = getattr(torch, op)(xin.abs(), dim).cpu()
    n = x.shape[dim] if x.dim() else 1
    acc_eps = 2.0**-53 if want.dtype == torch.float64 else 2.0**-24
    bound = torch.finfo(want.dtype).eps * exact.abs() + (n + 1) * acc_eps * scale
    err = (to_torch(got).double() - exact).abs()
    assert torch.all(err <= bound), float((err - bound).max())


def test_cumsum_of_a_long_line_and_strided_input():
    x = values(torch.float32, (3, 2_000_000), 6)[:, ::2]
    got = shim.call_op("cumsum", borrow(x), 1, None, entry="cuda")
    exact = torch.cumsum(x.double(), 1)
    err = (to_torch(got).double() - exact.cpu()).abs().max().item()
    assert err < 2e-3, err  # a million float32 terms of |x| ~ 1
    assert got.strides == list(torch.cumsum(x, 1).stride())


def test_cumsum_integers_wrap():
    x = torch.full((3,), 2**62, dtype=torch.int64, device="cuda")
    check_result(shim.call_op("cumsum", borrow(x), 0, None, entry="cuda"), torch.cumsum(x, 0))


# ---------------------------------------------------------------- pointwise

PAIRS = [((3, 4), (3, 4)), ((3, 4), (4,)), ((3, 1), (1, 4)), ((2, 1, 4), (3, 1)), ((), (3, 2)),
         ((5,), ())]


@pytest.mark.parametrize("da,db", [("float32", "float32"), ("float32", "float64"),
                                   ("bfloat16", "float16"), ("int8", "int8"), ("int32", "int32"),
                                   ("int64", "int64"), ("bool", "bool"), ("uint8", "uint8"),
                                   ("complex64", "complex64"), ("float16", "float16"),
                                   ("complex128", "complex128")])
@pytest.mark.parametrize("sa,sb", PAIRS)
def test_mul_tensor_is_torchs(da, db, sa, sb):
    a, b = values(DT[da], sa, 1), values(DT[db], sb, 2)
    want = torch.mul(a, b)
    check_result(shim.call_op("mul_Tensor", borrow(a), borrow(b)), want,
                 exact=not want.dtype.is_complex)


@pytest.mark.parametrize("da,db", [("float32", "float32"), ("float32", "float64"),
                                   ("bfloat16", "float32"), ("float16", "float16"),
                                   ("complex64", "complex64"), ("float64", "float64")])
@pytest.mark.parametrize("sa,sb", PAIRS)
@pytest.mark.parametrize("alpha", [1.0, -2.5])
def test_add_tensor_is_torchs(da, db, sa, sb, alpha):
    a, b = values(DT[da], sa, 3), values(DT[db], sb, 4)
    want = torch.ops.aten.add.Tensor(a, b, alpha=alpha)
    check_result(shim.call_op("add_Tensor", borrow(a), borrow(b), alpha), want,
                 exact=not want.dtype.is_complex)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "complex64",
                                   "complex128"])
@pytest.mark.parametrize("other", [2.0, -0.5, 1e10])
def test_scalar_ops_are_torchs(dtype, other):
    a = values(DT[dtype], (3, 5), 5)[:, 1:]  # a strided input
    want = torch.ops.aten.mul.Scalar(a, other)
    check_result(shim.call_op("mul_Scalar", borrow(a), other), want,
                 exact=not want.dtype.is_complex)
    want = torch.ops.aten.add.Scalar(a, other, alpha=1.0)
    check_result(shim.call_op("add_Scalar", borrow(a), other, 1.0), want)


@pytest.mark.parametrize("make_a,make_b", [
    (lambda: torch.randn(4, 3, device="cuda").t(), lambda: torch.randn(4, 3, device="cuda").t()),
    (lambda: torch.randn(4, 3, device="cuda").t(), lambda: torch.randn(3, 4, device="cuda")),
    (lambda: torch.randn(2, 3, 4, 5, device="cuda").to(memory_format=torch.channels_last),
     lambda: torch.randn(3, 1, 1, device="cuda")),
    (lambda: torch.randn(5, 4, device="cuda").t()[:, None, :], lambda: torch.randn(4, 3, 5, device="cuda")),
    (lambda: torch.randn(8, 6, device="cuda")[::2, 1:4], lambda: torch.randn(3, device="cuda")),
])
def test_output_strides_are_tensoriterators(make_a, make_b):
    a, b = make_a(), make_b()
    check_result(shim.call_op("mul_Tensor", borrow(a), borrow(b)), a * b)
    check_result(shim.call_op("add_Tensor", borrow(a), borrow(b), 1.0), a + b)
    check_result(shim.call_op("mul_Scalar", borrow(a), 3.0), a * 3.0)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int8", "int16",
                                   "int32", "int64", "uint8", "complex64", "complex128"])
def test_abs_is_torchs(dtype):
    a = values(DT[dtype], (4, 6), 6).t()
    if dtype.startswith("int"):
        a[0, 0] = torch.iinfo(DT[dtype]).min  # wraps, as torch's
    want = torch.abs(a)
    check_result(shim.call_op("abs", borrow(a)), want, exact=not dtype.startswith("complex"))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_polar_is_torchs(dtype):
    magnitude = values(DT[dtype], (3, 4), 7).abs()
    angle = values(DT[dtype], (4,), 8) * 3
    check_result(shim.call_op("polar", borrow(magnitude), borrow(angle)),
                 torch.polar(magnitude, angle), exact=False)


def test_mixed_integer_and_float_operands_are_torch_cudas():
    """An integer operand cast to a floating result (once refused: cuda
    copies had no such conversion) types and rounds as torch cuda."""
    a, b = values(torch.int64, (3,), 1), values(torch.float32, (3,), 2)
    check_result(shim.call_op("mul_Tensor", borrow(a), borrow(b)), a * b)
    check_result(shim.call_op("mul_Scalar", borrow(a), 2.0), a * 2.0)  # float32, as torch types it


@pytest.mark.parametrize("dtype", ["int64", "int32", "int8", "uint8", "int16"])
def test_integer_products_wrap_as_torchs(dtype):
    info = torch.iinfo(DT[dtype])
    a = torch.tensor([info.max, info.min, info.max // 3 + 7, -1 if info.min < 0 else 200],
                     dtype=DT[dtype], device="cuda")
    b = torch.tensor([info.max, 3, 5, info.min], dtype=DT[dtype], device="cuda")
    check_result(shim.call_op("mul_Tensor", borrow(a), borrow(b)), a * b)
    check_result(shim.call_op("abs", borrow(a)), torch.abs(a))
