"""reshape, permute, slice_Tensor, squeeze_dim and narrow (views sharing
storage, torch's geometry and errors) and add/mul/abs (torch's type
promotion, broadcasting, values and output strides), against torch eager."""

from __future__ import annotations

import numpy as np
import pytest

import aotishim
from aotishim import shim

torch = pytest.importorskip("torch")
from torch_views import to_shim, to_torch  # noqa: E402

DT = {name: getattr(torch, name) for name in
      ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32",
       "float64", "complex64", "complex128"]}


def values(dtype, shape, seed=0):
    g = torch.Generator().manual_seed(seed)
    if dtype.is_complex:
        return torch.randn(shape, dtype=dtype, generator=g)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g) > 0.5
    if dtype.is_floating_point:
        return torch.randn(shape, generator=g).to(dtype)
    return torch.randint(-100 if dtype != torch.uint8 else 0, 100, shape, generator=g).to(dtype)


def check_view(h, want: torch.Tensor, base_h=None):
    info = aotishim._core.tensor_info(h.handle)
    assert info["sizes"] == list(want.shape)
    assert info["strides"] == list(want.stride())
    assert shim.get(h, "storage_offset") == want.storage_offset()
    torch.testing.assert_close(to_torch(h), want.contiguous(), rtol=0, atol=0)


def check_result(h, want: torch.Tensor, exact=True):
    info = aotishim._core.tensor_info(h.handle)
    assert info["sizes"] == list(want.shape)
    assert info["strides"] == list(want.stride()), "output strides differ from torch's"
    got = to_torch(h)
    assert got.dtype == want.dtype
    if exact:
        torch.testing.assert_close(got, want.contiguous(), rtol=0, atol=0, equal_nan=True)
    else:
        torch.testing.assert_close(got, want.contiguous(), equal_nan=True)


# ---- views ----

SOURCES = [
    lambda: torch.randn(4, 6),
    lambda: torch.randn(6, 8)[1:5, 2:8:2],
    lambda: torch.randn(2, 3, 4).permute(2, 0, 1),
    lambda: torch.randn(3, 1, 4)[:, :, 1:],
]


@pytest.mark.parametrize("make", SOURCES)
@pytest.mark.parametrize("shape", [[-1], [2, -1], [-1, 1, 2], [1, -1, 1]])
def test_reshape_views_where_torch_views_and_copies_where_it_copies(make, shape):
    src = make()
    if src.numel() % 2 and 2 in shape:
        pytest.skip("shape does not fit")
    h = to_shim(src)
    r = shim.call_op("reshape", h, shape)
    want = src.reshape(shape)
    shares = want.data_ptr() == src.data_ptr() or want._base is not None
    info = aotishim._core.tensor_info(r.handle)
    assert info["sizes"] == list(want.shape)
    assert info["strides"] == list(want.stride())
    torch.testing.assert_close(to_torch(r), want.contiguous(), rtol=0, atol=0)
    # A view shares memory with the source; a copy does not.
    same_memory = shim.get(r, "data_ptr") == shim.get(h, "data_ptr")
    assert same_memory == (want.data_ptr() == src.data_ptr())
    assert shares or not same_memory


def test_reshape_errors_are_torchs():
    h = to_shim(torch.randn(4, 6))
    for shape, message in [([5, -1], "shape '[5, -1]' is invalid for input of size 24"),
                           ([-1, -1], "only one dimension can be inferred"),
                           ([7], "shape '[7]' is invalid for input of size 24")]:
        with pytest.raises(RuntimeError, match=message.replace("[", r"\[").replace("]", r"\]")):
            torch.randn(4, 6).reshape(shape)
        with pytest.raises(aotishim.ShimError, match=message.replace("[", r"\[").replace("]", r"\]")):
            shim.call_op("reshape", h, shape)


@pytest.mark.parametrize("make", SOURCES)
def test_permute_slice_squeeze_narrow_are_torchs_views(make):
    src = make()
    h = to_shim(src)
    nd = src.dim()
    perm = list(range(nd))[::-1]
    check_view(shim.call_op("permute", h, perm), src.permute(perm))
    check_view(shim.call_op("permute", h, [-1] + list(range(nd - 1))), src.permute([-1] + list(range(nd - 1))))
    for dim, start, end, step in [(0, 1, None, 1), (-1, None, -1, 2), (1, -100, 100, 3),
                                  (0, 5, 2, 1), (nd - 1, -2, None, 1)]:
        want = torch.ops.aten.slice.Tensor(src, dim, start, end, step)
        check_view(shim.call_op("slice_Tensor", h, dim, start, end, step), want)
    for dim in range(-nd, nd):
        check_view(shim.call_op("squeeze_dim", h, dim), src.squeeze(dim))
    for dim, start, length in [(0, 1, 2), (-1, -2, 1), (1, 0, 0)]:
        check_view(shim.call_op("narrow", h, dim, start, length), src.narrow(dim, start, length))
    # views, not copies: writing one writes the base
    v = shim.call_op("narrow", h, 0, 1, 1)
    assert shim.get(v, "data_ptr") == shim.get(h, "data_ptr") + src.stride(0) * 4


@pytest.mark.parametrize("call,torch_call", [
    (lambda h: shim.call_op("permute", h, [0, 0]), lambda t: t.permute(0, 0)),
    (lambda h: shim.call_op("permute", h, [0]), lambda t: t.permute(0)),
    (lambda h: shim.call_op("permute", h, [0, 2]), lambda t: t.permute(0, 2)),
    (lambda h: shim.call_op("slice_Tensor", h, 0, 0, 2, 0), lambda t: torch.ops.aten.slice.Tensor(t, 0, 0, 2, 0)),
    (lambda h: shim.call_op("slice_Tensor", h, 2, 0, 2, 1), lambda t: torch.ops.aten.slice.Tensor(t, 2, 0, 2, 1)),
    (lambda h: shim.call_op("narrow", h, 0, 3, 2), lambda t: t.narrow(0, 3, 2)),
    (lambda h: shim.call_op("narrow", h, 0, -5, 1), lambda t: t.narrow(0, -5, 1)),
    (lambda h: shim.call_op("narrow", h, 1, 0, -1), lambda t: t.narrow(1, 0, -1)),
    (lambda h: shim.call_op("squeeze_dim", h, 2), lambda t: t.squeeze(2)),
])
def test_view_errors_are_torchs(call, torch_call):
    src = torch.randn(4, 6)
    with pytest.raises((RuntimeError, IndexError)) as theirs:
        torch_call(src)
    with pytest.raises(aotishim.ShimError) as ours:
        call(to_shim(src))
    first = str(theirs.value).split("\n")[0]
    first = first.replace("permute(sparse_coo): ", "")
    assert first.split(" (")[0].lower() in str(ours.value).lower()


# ---- pointwise ----

PAIRS = [
    ((3, 4), (3, 4)), ((3, 4), (4,)), ((3, 1), (1, 4)), ((2, 1, 4), (3, 1)), ((), (3, 2)),
    ((5,), ()),
]


@pytest.mark.parametrize("da,db", [("float32", "float32"), ("float32", "float64"),
                                   ("int64", "float16"), ("bfloat16", "float16"),
                                   ("int8", "uint8"), ("int32", "int64"), ("bool", "bool"),
                                   ("bool", "int16"), ("complex64", "float64"),
                                   ("complex64", "complex64"), ("int64", "complex128"),
                                   ("float16", "float16")])
@pytest.mark.parametrize("sa,sb", PAIRS)
def test_mul_tensor_matches_torch(da, db, sa, sb):
    a, b = values(DT[da], sa, 1), values(DT[db], sb, 2)
    # Complex products: torch's vectorized body is unfused, but its scalar tail
    # (the last elements, by CPU capability) is compiled with fused
    # multiply-adds, so single elements differ by an ulp; real types are exact.
    want = torch.mul(a, b)
    check_result(shim.call_op("mul_Tensor", to_shim(a), to_shim(b)), want,
                 exact=not want.dtype.is_complex)


@pytest.mark.parametrize("da,db", [("float32", "float32"), ("float32", "float64"),
                                   ("int64", "float16"), ("bfloat16", "float32"),
                                   ("complex64", "float32"), ("complex128", "complex64"),
                                   ("bool", "float32")])
@pytest.mark.parametrize("sa,sb", PAIRS)
@pytest.mark.parametrize("alpha", [1.0, -2.5])
def test_add_tensor_matches_torch(da, db, sa, sb, alpha):
    a, b = values(DT[da], sa, 3), values(DT[db], sb, 4)
    want = torch.ops.aten.add.Tensor(a, b, alpha=alpha)
    check_result(shim.call_op("add_Tensor", to_shim(a), to_shim(b), alpha), want, exact=alpha == 1.0)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int64", "int8",
                                   "bool", "complex64", "complex128", "uint8"])
@pytest.mark.parametrize("other", [2.0, -0.5, 1e10])
def test_scalar_ops_match_torch(dtype, other):
    a = values(DT[dtype], (3, 5), 5)[:, 1:]  # a strided input
    check_result(shim.call_op("mul_Scalar", to_shim(a), other), torch.ops.aten.mul.Scalar(a, other))
    want = torch.ops.aten.add.Scalar(a, other, alpha=1.0)
    check_result(shim.call_op("add_Scalar", to_shim(a), other, 1.0), want)


@pytest.mark.parametrize("make_a,make_b", [
    (lambda: torch.randn(4, 3).t(), lambda: torch.randn(4, 3).t()),          # agree: kept
    (lambda: torch.randn(4, 3).t(), lambda: torch.randn(3, 4)),              # disagree
    (lambda: torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last),
     lambda: torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last)),
    (lambda: torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last),
     lambda: torch.randn(3, 1, 1)),                                           # broadcast bias
    (lambda: torch.randn(5, 4).t()[:, None, :], lambda: torch.randn(4, 3, 5)),
    (lambda: torch.randn(8, 6)[::2, 1:4], lambda: torch.randn(3)),
    (lambda: torch.randn(3, 1, 4).permute(2, 1, 0), lambda: torch.randn(1)),
])
def test_output_strides_are_tensoriterators(make_a, make_b):
    a, b = make_a(), make_b()
    check_result(shim.call_op("mul_Tensor", to_shim(a), to_shim(b)), a * b)
    check_result(shim.call_op("add_Tensor", to_shim(a), to_shim(b), 1.0), a + b)
    check_result(shim.call_op("mul_Scalar", to_shim(a), 3.0), a * 3.0)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16", "int8", "int16",
                                   "int32", "int64", "uint8", "complex64", "complex128"])
def test_abs_matches_torch(dtype):
    a = values(DT[dtype], (4, 6), 6).t()
    if dtype.startswith("int"):
        a[0, 0] = torch.iinfo(DT[dtype]).min  # wraps, as torch's
    want = torch.abs(a)
    check_result(shim.call_op("abs", to_shim(a)), want, exact=not dtype.startswith("complex"))


@pytest.mark.parametrize("call,message", [
    (lambda: shim.call_op("mul_Tensor", to_shim(torch.randn(3, 4)), to_shim(torch.randn(5))),
     r"The size of tensor a \(4\) must match the size of tensor b \(5\) at non-singleton dimension 1"),
    (lambda: shim.call_op("add_Tensor", to_shim(torch.arange(3)), to_shim(torch.arange(3)), 1.0),
     "For integral input tensors, argument alpha must not be a floating point number."),
    (lambda: shim.call_op("add_Tensor", to_shim(torch.ones(2, dtype=torch.bool)),
                          to_shim(torch.ones(2, dtype=torch.bool)), 1.0),
     "For integral input tensors, argument alpha must not be a floating point number."),
    (lambda: shim.call_op("abs", to_shim(torch.ones(2, dtype=torch.bool))),
     "\"abs_cpu\" not implemented for 'Bool'"),
    (lambda: shim.call_op("mul_Tensor", to_shim(torch.ones(2, dtype=torch.uint16)),
                          to_shim(torch.ones(2, dtype=torch.int8))),
     "Promotion for uint16, uint32, uint64 types is not supported, attempted to promote UInt16 and Char"),
])
def test_pointwise_errors_are_torchs(call, message):
    with pytest.raises(aotishim.ShimError, match=message):
        call()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("sa,sb", [((3, 4), (3, 4)), ((3, 1), (4,)), ((), (2, 3))])
def test_polar_matches_torch(dtype, sa, sb):
    magnitude = values(DT[dtype], sa, 7).abs()
    angle = values(DT[dtype], sb, 8) * 3
    want = torch.polar(magnitude, angle)
    # cos/sin are libm's here and SLEEF's in torch: within an ulp or two
    check_result(shim.call_op("polar", to_shim(magnitude), to_shim(angle)), want, exact=False)


@pytest.mark.parametrize("a_dtype,b_dtype,message", [
    ("int32", "int32", "Expected both inputs to be Float or Double tensors but got Int and Int"),
    ("float32", "float64", "Expected object of scalar type Float but got scalar type Double"),
])
def test_polar_errors_are_torchs(a_dtype, b_dtype, message):
    with pytest.raises(aotishim.ShimError, match=message):
        shim.call_op("polar", to_shim(values(DT[a_dtype], (2,))), to_shim(values(DT[b_dtype], (2,))))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "int32", "int8", "uint8",
                                   "bool", "complex64", "float64"])
@pytest.mark.parametrize("value", [2.7, -1.5, 0.0])
def test_fill_scalar_writes_torchs_cast_in_place(dtype, value):
    if dtype == "uint8" and value < 0:
        pytest.skip("torch refuses it (test_fill_scalar_refuses_what_torch_cannot_convert)")
    base = values(DT[dtype], (4, 6), 9)
    h = to_shim(base)
    view = shim.call_op("slice_Tensor", h, 1, 1, 5, 2)  # a strided view of it
    shim.call_op("fill__Scalar", view, value)
    want = base.clone()
    want[:, 1:5:2].fill_(value)
    torch.testing.assert_close(to_torch(h), want, rtol=0, atol=0)


@pytest.mark.parametrize("dtype,value", [("uint8", -0.5), ("uint8", 255.9), ("int8", -128.9),
                                         ("float16", 70000.0), ("int32", float("nan")),
                                         ("float32", 1e300), ("int64", 9.3e18)])
def test_fill_scalar_refuses_what_torch_cannot_convert(dtype, value):
    with pytest.raises(RuntimeError) as theirs:
        torch.zeros(2, dtype=DT[dtype]).fill_(value)
    with pytest.raises(aotishim.ShimError) as ours:
        shim.call_op("fill__Scalar", to_shim(torch.zeros(2, dtype=DT[dtype])), value)
    assert str(theirs.value).split("\n")[0] in str(ours.value)


@pytest.mark.parametrize("dtype,value", [("float16", float("inf")), ("float16", float("nan")),
                                         ("bool", 5.0), ("uint8", 255.0), ("int8", -128.0)])
def test_fill_scalar_edges_torch_accepts(dtype, value):
    h = to_shim(torch.zeros(3, dtype=DT[dtype]))
    shim.call_op("fill__Scalar", h, value)
    want = torch.zeros(3, dtype=DT[dtype]).fill_(value)
    torch.testing.assert_close(to_torch(h), want, rtol=0, atol=0, equal_nan=True)
