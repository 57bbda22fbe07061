"""_int_mm_out and _weight_int8pack_mm on cuda against torch: _int_mm's
int32 sums exactly equal to torch cuda's (and to int64 sums taken modulo
2^32), the weight-only int8 linear against the float64 product rounded once,
operands of any strides and offsets, errors, and a compiled cuda model with
an int8-weight linear against eager."""

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

import cuda_models  # noqa: E402
from aotishim._core import ShimError  # noqa: E402
from cuda_helpers import borrow, tf32_off  # noqa: E402
from torch_views import to_torch  # noqa: E402


@pytest.fixture(autouse=True)
def no_tf32():
    with tf32_off():
        yield


def layout(t: "torch.Tensor", how: str) -> "torch.Tensor":
    """t (on cuda) with the same values in another memory layout."""
    if how == "contiguous":
        return t.contiguous()
    if how == "transposed":  # column-major storage
        return t.t().contiguous().t()
    # a window of a bigger, garbage-filled buffer: offset and padded rows
    big = torch.full((t.shape[0] + 3, t.shape[1] + 5), 77, dtype=t.dtype, device=t.device)
    big[2:2 + t.shape[0], 1:1 + t.shape[1]] = t
    return big[2:2 + t.shape[0], 1:1 + t.shape[1]]


LAYOUTS = ["contiguous", "transposed", "offset"]


def exact_int_mm(a, b):
    """The int64 product reduced modulo 2^32 into int32 (what wrapping int32 sums give)."""
    wide = a.cpu().long() @ b.cpu().long()
    return ((wide + 2**31) % 2**32 - 2**31).int()


@pytest.mark.parametrize("m,k,n", [(1, 1, 1), (17, 32, 9), (64, 48, 80), (33, 1000, 7),
                                   (128, 256, 128), (5, 8, 1)])
@pytest.mark.parametrize("la", LAYOUTS)
@pytest.mark.parametrize("lb", LAYOUTS)
def test_int_mm_is_exact(m, k, n, la, lb):
    g = torch.Generator(device="cuda").manual_seed(m * 1000 + k + n)
    a = torch.randint(-128, 128, (m, k), generator=g, device="cuda", dtype=torch.int8)
    b = torch.randint(-128, 128, (k, n), generator=g, device="cuda", dtype=torch.int8)
    a, b = layout(a, la), layout(b, lb)
    out = shim.empty_strided([m, n], None, "int32", "cuda:0")
    shim.call_op("_int_mm_out", out, borrow(a), borrow(b), entry="cuda")
    got = to_torch(out)
    assert got.dtype == torch.int32 and out.strides == [n, 1]
    assert torch.equal(got, exact_int_mm(a, b))
    # torch's own cuda kernel (cuBLAS) takes only some shapes and layouts
    try:
        want = torch._int_mm(a, b).cpu()
    except RuntimeError:
        return
    assert torch.equal(got, want)


def test_int_mm_sums_wrap_in_32_bits():
    """-128 * -128 summed 140,000 times passes 2^31."""
    k = 140_000
    a = torch.full((2, k), -128, dtype=torch.int8, device="cuda")
    b = torch.full((k, 3), -128, dtype=torch.int8, device="cuda")
    out = shim.empty_strided([2, 3], None, "int32", "cuda:0")
    shim.call_op("_int_mm_out", out, borrow(a), borrow(b), entry="cuda")
    assert torch.equal(to_torch(out), exact_int_mm(a, b))


def test_int_mm_into_a_transposed_out_and_k_zero():
    g = torch.Generator(device="cuda").manual_seed(1)
    a = torch.randint(-128, 128, (5, 9), generator=g, dtype=torch.int8, device="cuda")
    b = torch.randint(-128, 128, (9, 4), generator=g, dtype=torch.int8, device="cuda")
    out = shim.empty_strided([5, 4], [1, 5], "int32", "cuda:0")
    shim.call_op("_int_mm_out", out, borrow(a), borrow(b), entry="cuda")
    assert torch.equal(to_torch(out), exact_int_mm(a, b))
    z = torch.full((3, 2), 9, dtype=torch.int32, device="cuda")
    shim.call_op("_int_mm_out", borrow(z), borrow(a[:3, :0]), borrow(b[:0, :2]), entry="cuda")
    torch.cuda.synchronize()
    assert torch.equal(z.cpu(), torch.zeros(3, 2, dtype=torch.int32))


def test_int_mm_errors():
    a = torch.zeros(2, 3, dtype=torch.int8, device="cuda")
    b = torch.zeros(3, 4, dtype=torch.int8, device="cuda")
    out = shim.empty_strided([2, 4], None, "int32", "cuda:0")
    with pytest.raises(ShimError, match="self and mat2 must be int8"):
        shim.call_op("_int_mm_out", out, borrow(a.to(torch.uint8)), borrow(b), entry="cuda")
    with pytest.raises(ShimError, match="needs to match mat2.size\\(0\\)"):
        shim.call_op("_int_mm_out", out, borrow(a), borrow(b[:2]), entry="cuda")
    cpu_b = shim.from_numpy(np.zeros((3, 4), np.int8), copy=True)
    with pytest.raises(ShimError, match="mat2 is on cpu, but this op runs on the cuda device"):
        shim.call_op("_int_mm_out", out, borrow(a), cpu_b, entry="cuda")


TOL_EPS = {torch.float32: 4 * 2**-24, torch.bfloat16: 2**-7, torch.float16: 2**-10}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("m,n,k", [(3, 5, 1), (7, 9, 130), (2, 3, 8), (16, 64, 200),
                                   (70, 33, 4096)])
@pytest.mark.parametrize("lx", LAYOUTS)
@pytest.mark.parametrize("lw", ["contiguous", "offset"])
def test_weight_int8pack_mm_against_float64(dtype, m, n, k, lx, lw):
    g = torch.Generator(device="cuda").manual_seed(m * n + k)
    x = layout(torch.randn(m, k, generator=g, device="cuda").to(dtype), lx)
    w = layout(torch.randint(-128, 128, (n, k), generator=g, device="cuda", dtype=torch.int8), lw)
    scales = (torch.rand(n, generator=g, device="cuda") / 64).to(dtype)
    out = shim.call_op("_weight_int8pack_mm", borrow(x), borrow(w), borrow(scales), entry="cuda")
    assert out.sizes == [m, n] and out.strides == [n, 1] and out.dtype == str(dtype)[6:]
    exact = (x.double() @ w.double().t()) * scales.double()
    got = to_torch(out).double()
    # one rounding into the dtype, plus float32 accumulation of k terms (the
    # classic bound k * eps * sum |terms|); a wrong element is off by O(1)
    scale = ((x.double().abs() @ w.double().abs().t()) * scales.double()).cpu()
    err = (got - exact.cpu()).abs()
    bound = TOL_EPS[dtype] * exact.abs().cpu() + (k + 2) * 2**-24 * scale
    assert torch.all(err <= bound + 1e-30), float((err - bound).max())


def test_weight_int8pack_mm_errors():
    x = torch.zeros(2, 4, device="cuda")
    w = torch.zeros(3, 4, dtype=torch.int8, device="cuda")
    with pytest.raises(ShimError, match="self must be float32, bfloat16 or float16"):
        shim.call_op("_weight_int8pack_mm", borrow(x.double()), borrow(w),
                     borrow(torch.zeros(3, dtype=torch.float64, device="cuda")), entry="cuda")
    with pytest.raises(ShimError, match="scales must have self's dtype"):
        shim.call_op("_weight_int8pack_mm", borrow(x), borrow(w),
                     borrow(torch.zeros(3, dtype=torch.bfloat16, device="cuda")), entry="cuda")
    with pytest.raises(ShimError, match="differ in K"):
        shim.call_op("_weight_int8pack_mm", borrow(x), borrow(w[:, :3]),
                     borrow(torch.zeros(3, device="cuda")), entry="cuda")


class Int8WeightLinear(torch.nn.Module):
    def __init__(self, weight, scales):
        super().__init__()
        self.register_buffer("weight", weight)
        self.register_buffer("scales", scales)

    def forward(self, x):
        return torch.ops.aten._weight_int8pack_mm(x, self.weight, self.scales)


class IntMm(torch.nn.Module):
    def __init__(self, weight):
        super().__init__()
        self.register_buffer("weight", weight)

    def forward(self, x):
        return torch._int_mm(x, self.weight) + 1


def test_compiled_cuda_models_with_int8_products_match_eager():
    from aotishim import export

    g = torch.Generator(device="cuda").manual_seed(0)
    weight = torch.randint(-128, 128, (48, 64), generator=g, dtype=torch.int8, device="cuda")
    scales = torch.rand(48, generator=g, device="cuda") / 64
    x = torch.randn(5, 64, generator=g, device="cuda")
    module = Int8WeightLinear(weight, scales)
    so = export.compile_cached(module, (x,), cuda_models.cache_dir(), name="cuda_int8pack_linear",
                               device="cuda")
    with aotishim.load(so, device="cuda") as model:
        got, = model.run(x.cpu().numpy())
    exact = (x.double() @ weight.double().t()) * scales.double()
    np.testing.assert_allclose(got, exact.cpu().numpy(), rtol=1e-5, atol=1e-5)

    a = torch.randint(-128, 128, (32, 64), generator=g, dtype=torch.int8, device="cuda")
    b = torch.randint(-128, 128, (64, 32), generator=g, dtype=torch.int8, device="cuda")
    so = export.compile_cached(IntMm(b), (a,), cuda_models.cache_dir(), name="cuda_int_mm",
                               device="cuda")
    with aotishim.load(so, device="cuda") as model:
        got, = model.run(a.cpu().numpy())
    np.testing.assert_array_equal(got, (exact_int_mm(a, b) + 1).numpy())
