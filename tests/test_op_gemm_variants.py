"""The matrix products beyond mm/addmm/bmm against torch: baddbmm_out
(tests/test_opinfo.py runs torch's samples in every layout; here the
error paths and a compiled model that falls back to it)."""

from __future__ import annotations

import pytest
import torch

from aotishim import shim
from aotishim._core import ShimError
from torch_views import to_shim, to_torch


def baddbmm(out, self, b1, b2, beta, alpha):
    shim.call_op("baddbmm_out", out, self, b1, b2, beta, alpha, entry="cpu")


def test_baddbmm_beta_zero_ignores_nan_in_self():
    g = torch.Generator().manual_seed(1)
    b1, b2 = torch.randn(3, 4, 5, generator=g), torch.randn(3, 5, 6, generator=g)
    self = torch.full((3, 4, 6), float("nan"))
    out = shim.empty_strided([3, 4, 6], None, "float32")
    try:
        baddbmm(out, to_shim(self), to_shim(b1), to_shim(b2), 0.0, 2.0)
        want = torch.baddbmm(self, b1, b2, beta=0.0, alpha=2.0)
        torch.testing.assert_close(to_torch(out), want)
    finally:
        shim.delete(out)


@pytest.mark.parametrize("sizes,message", [
    (((3, 4, 6), (3, 4, 5), (2, 5, 6), (3, 4, 6)), "batch sizes differ"),
    (((3, 4, 6), (3, 4, 5), (3, 4, 6), (3, 4, 6)), "cannot be multiplied"),
    (((3, 4, 6), (3, 4, 5), (3, 5, 6), (3, 4, 7)), "out has sizes"),
    (((2, 4, 6), (3, 4, 5), (3, 5, 6), (3, 4, 6)), "cannot be broadcast"),
    (((3, 4, 6), (4, 5), (3, 5, 6), (3, 4, 6)), "batch1 must be 3-D"),
])
def test_baddbmm_shape_errors(sizes, message):
    self, b1, b2, out = (to_shim(torch.zeros(s)) for s in sizes)
    with pytest.raises(ShimError, match=message):
        baddbmm(out, self, b1, b2, 1.0, 1.0)


def test_baddbmm_dtype_errors():
    f, d = torch.zeros(2, 3, 3), torch.zeros(2, 3, 3, dtype=torch.float64)
    with pytest.raises(ShimError, match="dtype mismatch"):
        baddbmm(to_shim(f), to_shim(d), to_shim(f), to_shim(f), 1.0, 1.0)
    i = torch.zeros(2, 3, 3, dtype=torch.int64)
    with pytest.raises(ShimError, match="unsupported dtype int64"):
        baddbmm(to_shim(i), to_shim(i), to_shim(i), to_shim(i), 1.0, 1.0)


def test_compiled_alibi_scores_match_eager(model_cache):
    from op_models import AlibiScores, check_model

    g = torch.Generator().manual_seed(0)
    alibi = torch.randn(8, 1, 12, generator=g)  # (batch * heads, 1, keys), broadcast over queries
    q, k = torch.randn(8, 12, 64, generator=g), torch.randn(8, 12, 64, generator=g)
    check_model(model_cache, "op_baddbmm_alibi", AlibiScores(), (alibi, q, k),
                rtol=1e-5, atol=1e-6)


def int8pack(x, w, scales):
    return shim.call_op("_weight_int8pack_mm", to_shim(x), to_shim(w), to_shim(scales),
                        entry="cpu")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("m,n,k", [(3, 5, 1), (7, 9, 130), (2, 3, 8), (16, 64, 200),
                                   (1, 300, 4099), (64, 40, 77), (65, 40, 77)])
@pytest.mark.parametrize("weight", ["packed", "transposed"])
def test_weight_int8pack_mm_any_k_against_float64(dtype, m, n, k, weight):
    """K not a multiple of 16 (torch's own kernel reads out of bounds there):
    against the float64 product, rounded once into the dtype. Up to 64 rows
    with packed weight rows take the direct kernel (a long row, the vector
    loop's tail), more rows or another weight layout the BLAS gemm."""
    g = torch.Generator().manual_seed(m * n + k)
    x = torch.randn(m, k, generator=g).to(dtype)
    w = torch.randint(-128, 128, (n, k), generator=g, dtype=torch.int8)
    if weight == "transposed":
        w = w.t().contiguous().t()
    scales = (torch.rand(n, generator=g) / 64).to(dtype)
    out = int8pack(x, w, scales)
    try:
        assert out.sizes == [m, n] and out.strides == [n, 1] and out.dtype == str(dtype)[6:]
        exact = (x.double() @ w.double().t()) * scales.double()
        torch.testing.assert_close(to_torch(out).double(), exact.to(dtype).double(),
                                   rtol=torch.finfo(dtype).eps * 4, atol=1e-5 * k)
    finally:
        shim.delete(out)


@pytest.mark.parametrize("make,message", [
    (lambda: (torch.zeros(2, 4, dtype=torch.float64), torch.zeros(3, 4, dtype=torch.int8),
              torch.zeros(3, dtype=torch.float64)), "self must be float32, bfloat16 or float16"),
    (lambda: (torch.zeros(2, 4), torch.zeros(3, 4, dtype=torch.uint8), torch.zeros(3)),
     "mat2 must be int8"),
    (lambda: (torch.zeros(2, 4), torch.zeros(3, 4, dtype=torch.int8),
              torch.zeros(3, dtype=torch.bfloat16)), "scales must have self's dtype"),
    (lambda: (torch.zeros(2, 4), torch.zeros(3, 5, dtype=torch.int8), torch.zeros(3)),
     "differ in K"),
    (lambda: (torch.zeros(2, 4), torch.zeros(3, 4, dtype=torch.int8), torch.zeros(4)),
     "scales must be 1-D with 3 elements"),
    (lambda: (torch.zeros(1, 2, 4), torch.zeros(3, 4, dtype=torch.int8), torch.zeros(3)),
     "must be 2-D"),
])
def test_weight_int8pack_mm_errors(make, message):
    with pytest.raises(ShimError, match=message):
        int8pack(*make())


def test_compiled_int8_weight_linear_matches_eager(model_cache):
    from op_models import Int8WeightLinear, check_model

    g = torch.Generator().manual_seed(0)
    weight = torch.randint(-128, 128, (48, 64), generator=g, dtype=torch.int8)
    scales = torch.rand(48, generator=g) / 64
    x = torch.randn(5, 64, generator=g)
    check_model(model_cache, "op_weight_int8pack_mm", Int8WeightLinear(weight, scales), (x,),
                rtol=1e-5, atol=1e-5)


def test_addbmm_without_batches_is_beta_times_self():
    self = torch.randn(3, 4)
    got = shim.call_op("addbmm", to_shim(self), to_shim(torch.zeros(0, 3, 5)),
                       to_shim(torch.zeros(0, 5, 4)), 0.5, 2.0, entry="cpu")
    try:
        torch.testing.assert_close(to_torch(got), torch.addbmm(self, torch.zeros(0, 3, 5),
                                                               torch.zeros(0, 5, 4),
                                                               beta=0.5, alpha=2.0))
    finally:
        shim.delete(got)


@pytest.mark.parametrize("op,sizes", [("addmv", ((3,), (3, 4), (4,))),
                                      ("addbmm", ((3, 6), (2, 3, 4), (2, 4, 6)))])
def test_beta_zero_ignores_nan_in_self(op, sizes):
    g = torch.Generator().manual_seed(2)
    self = torch.full(sizes[0], float("nan"))
    a, b = torch.randn(sizes[1], generator=g), torch.randn(sizes[2], generator=g)
    got = shim.call_op(op, to_shim(self), to_shim(a), to_shim(b), 0.0, 1.5, entry="cpu")
    try:
        want = getattr(torch, op)(self, a, b, beta=0.0, alpha=1.5)
        assert got.strides == list(want.stride())
        torch.testing.assert_close(to_torch(got), want)
    finally:
        shim.delete(got)


@pytest.mark.parametrize("op,sizes,message", [
    ("addmv", ((3,), (3, 4), (5,)), "cannot be multiplied"),
    ("addmv", ((2,), (3, 4), (4,)), "cannot be broadcast"),
    ("addmv", ((3,), (3, 4), (4, 1)), "vec must be 1-D"),
    ("addbmm", ((3, 6), (2, 3, 4), (3, 4, 6)), "batch sizes differ"),
    ("addbmm", ((3, 6), (2, 3, 4), (2, 5, 6)), "cannot be multiplied"),
    ("addbmm", ((4, 6), (2, 3, 4), (2, 4, 6)), "cannot be broadcast"),
])
def test_addmv_addbmm_shape_errors(op, sizes, message):
    with pytest.raises(ShimError, match=message):
        shim.call_op(op, *(to_shim(torch.zeros(s)) for s in sizes), 1.0, 1.0, entry="cpu")


def test_compiled_addbmm_matches_eager(model_cache):
    from op_models import AddmvAddbmm, check_model

    g = torch.Generator().manual_seed(0)
    args = (torch.randn(8, generator=g), torch.randn(8, 16, generator=g),
            torch.randn(16, generator=g), torch.randn(8, 6, generator=g),
            torch.randn(3, 8, 5, generator=g), torch.randn(3, 5, 6, generator=g))
    check_model(model_cache, "op_addbmm", AddmvAddbmm(), args, rtol=1e-5, atol=1e-5)


def int_mm(out, a, b):
    shim.call_op("_int_mm_out", out, to_shim(a), to_shim(b), entry="cpu")


def test_int_mm_errors():
    a, b = torch.zeros(2, 3, dtype=torch.int8), torch.zeros(3, 4, dtype=torch.int8)
    out = to_shim(torch.zeros(2, 4, dtype=torch.int32))
    with pytest.raises(ShimError, match="self and mat2 must be int8"):
        int_mm(out, a.to(torch.uint8), b)
    with pytest.raises(ShimError, match="out must be int32"):
        int_mm(to_shim(torch.zeros(2, 4, dtype=torch.int64)), a, b)
    with pytest.raises(ShimError, match="needs to match mat2.size\\(0\\) but got 3 and 2"):
        int_mm(out, a, b[:2])
    with pytest.raises(ShimError, match="out has sizes"):
        int_mm(to_shim(torch.zeros(2, 5, dtype=torch.int32)), a, b)
    with pytest.raises(ShimError, match="must be 2-D"):
        int_mm(out, a[None], b)
    with pytest.raises(ShimError, match="overlap"):
        int_mm(to_shim(torch.zeros(1, dtype=torch.int32).expand(2, 4)), a, b)


def test_int_mm_into_a_transposed_out():
    g = torch.Generator().manual_seed(1)
    a = torch.randint(-128, 128, (5, 9), generator=g, dtype=torch.int8)
    b = torch.randint(-128, 128, (9, 4), generator=g, dtype=torch.int8)
    out = shim.empty_strided([5, 4], [1, 5], "int32")
    try:
        int_mm(out, a, b)
        assert torch.equal(to_torch(out), torch._int_mm(a, b))
    finally:
        shim.delete(out)


def test_compiled_int8_dynamic_linear_matches_eager(model_cache):
    from op_models import Int8DynamicLinear, check_model

    g = torch.Generator().manual_seed(0)
    weight = torch.randint(-128, 128, (64, 32), generator=g, dtype=torch.int8)
    x = torch.randn(24, 64, generator=g)
    check_model(model_cache, "op_int_mm", Int8DynamicLinear(weight), (x,), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("a_layout", ["row", "column"])
@pytest.mark.parametrize("b_layout", ["row", "transposed"])
@pytest.mark.parametrize("beta", [0.0, 0.5])
@pytest.mark.parametrize("k,n", [(7, 5), (300, 700), (1024, 1030)])
def test_single_row_products_match_float64(dtype, a_layout, b_layout, beta, k, n):
    """One row of output (a decoder's token) runs as a matrix-vector product
    split over column blocks: every operand layout, beta 0 over a NaN-filled
    output (not read) and beta 0.5 (read and scaled), sizes above the split
    and scratch-block thresholds."""
    g = torch.Generator().manual_seed(k + n)
    # op(A) is 1 x k: a row, or a column of a wider matrix read transposed
    a = (torch.randn(1, k, generator=g, dtype=dtype) if a_layout == "row"
         else torch.randn(k, 3, generator=g, dtype=dtype)[:, 1:2].t())
    # op(B) is k x n: row-major, or the transpose of an n x k matrix (a linear weight)
    b = (torch.randn(k, n, generator=g, dtype=dtype) if b_layout == "row"
         else torch.randn(n, k, generator=g, dtype=dtype).t())
    self = torch.randn(1, n, generator=g, dtype=dtype)
    out = shim.empty_strided([1, n], None, str(dtype).split(".")[1])
    try:
        shim.call_op("fill__Scalar", out, float("nan"), entry="cpu")
        shim.call_op("addmm_out", out, to_shim(self), to_shim(a), to_shim(b), beta, 1.5,
                     entry="cpu")
        want = beta * self.double() + 1.5 * (a.double() @ b.double())
        tol = 2e-5 if dtype == torch.float32 else 1e-12
        torch.testing.assert_close(to_torch(out).double(), want, rtol=tol, atol=tol * k ** 0.5)
    finally:
        shim.delete(out)
