"""Copies on cuda between every pair of dtypes (launch_copy's conversions)
against torch cuda's `dst.copy_(src)`, bit for bit: contiguous, transposed,
strided with gaps, at a storage offset and broadcast, with values that reach
each of c10::convert's rules (truncation into integers, uint8 through int64,
16-bit floats through float, complex to real by its real part, to bool by
either part, NaN and infinities where torch's result is defined). Then the
pointwise ops whose operands of another dtype than the result's were refused
before cuda copies converted them: now torch cuda's answers."""

from __future__ import annotations

import math

import pytest

import aotishim
from aotishim import shim

pytestmark = [pytest.mark.skipif("cuda:0" not in aotishim.devices(),
                                 reason="no CUDA device in this process"),
              # torch's copy_ warns of complex to real, which is tested here
              pytest.mark.filterwarnings("ignore:Casting complex values to real")]
torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("torch cannot use CUDA here", allow_module_level=True)

from cuda_helpers import borrow  # noqa: E402
from torch_views import to_torch  # noqa: E402

DTYPES = [torch.bool, torch.uint8, torch.uint16, torch.uint32, torch.uint64, torch.int8,
          torch.int16, torch.int32, torch.int64, torch.float16, torch.bfloat16, torch.float32,
          torch.float64, torch.complex64, torch.complex128]

ROWS, COLS = 6, 8  # every view below is ROWS x COLS

# Fractions and signs (truncation), values past the 8-, 16- and 32-bit
# ranges that fit wider integers, float16/bfloat16 rounding and overflow,
# subnormals, and the specials.
FLOATS = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 0.99, -0.99, 1.5, -1.5, 2.5, -2.5, 3.75, -7.25,
          100.9, -100.9, 127.6, -128.6, 200.3, 255.9, -255.9, 1000.7, -32768.5, 65504.0,
          70000.4, 2147483520.0, -2147483648.0, 4294967040.0, 9.2233715e18, -9.223372e18,
          1.8446743e19, 1e10, -1e10, 1e-3, 6e-8, 1e-40, 1e300, math.nan, math.inf, -math.inf,
          # above a float16 (bfloat16) tie only before rounding to float: torch goes
          # through float, so these round down
          1 + 2**-11 + 2**-40, 1 + 2**-9 + 2**-40]
INTS = [0, 1, -1, 2, -2, 7, -7, 100, -100, 127, -128, 128, -129, 255, 256, -256, 1000, -1000,
        32767, -32768, 65535, 65536, 2**24 + 1, -(2**24 + 1), 2**31 - 1, -2**31, 2**32 - 1,
        2**32, 2**53 + 1, 2**62 + 12345, -2**62 - 1, 2**63 - 1, -2**63, 2**63 + 5, 2**64 - 1,
        2**31 + 2**23 + 1]  # above a bfloat16 tie until rounded to float
BOOLS = [True, False, False, True, True]
# imaginary parts that alone make a bool true, NaN in either part, and
# real parts for each integer range
COMPLEXES = [complex(0, 0), complex(-0.0, 0), complex(0, 1), complex(0, -2.5), complex(1.5, -2),
             complex(-1.5, 3), complex(2.75, 0.5), complex(-7.25, -0.0), complex(100.9, 1e-3),
             complex(255.9, 7), complex(-255.9, -7), complex(1000.7, 2), complex(-32768.5, 4),
             complex(70000.4, -1), complex(2147483520.0, 1), complex(1e10, -1e10),
             complex(9.2233715e18, 3), complex(math.nan, 0), complex(0, math.nan),
             complex(math.inf, 1), complex(1, -math.inf), complex(1e300, 1e-300),
             complex(6e-8, 0), complex(1e-40, -1e-40), complex(1 + 2**-11 + 2**-40, -1)]


def integer_range(dtype):
    """The values a float may truncate to and convert to `dtype` defined:
    uint8 goes through int64 in torch (negative floats wrap)."""
    if dtype == torch.uint8:
        return -2**63, 2**63 - 1
    if dtype == torch.uint64:
        return 0, 2**64 - 1
    info = torch.iinfo(dtype)
    return info.min, info.max


def is_integer(dtype):
    return not dtype.is_floating_point and not dtype.is_complex and dtype != torch.bool


def source_values(src, dst):
    """ROWS * COLS values of dtype `src` (cpu), those whose conversion to `dst`
    C++ leaves undefined (a float truncating outside dst's range) made 0."""
    if src == torch.bool:
        t = torch.tensor(BOOLS)
    elif src.is_complex:
        t = torch.tensor(COMPLEXES, dtype=torch.complex128).to(src)
    elif src.is_floating_point:
        t = torch.tensor(FLOATS, dtype=torch.float64).to(src)
    else:
        lo, hi = integer_range(src) if src != torch.uint8 else (0, 255)
        kept = [v for v in INTS if lo <= v <= hi]
        # (uint64 past int64's range: from its bit pattern)
        t = torch.tensor([v - 2**64 if v >= 2**63 else v for v in kept], dtype=torch.int64)
        t = t.view(torch.uint64) if src == torch.uint64 else t.to(src)
    if is_integer(dst) and (src.is_floating_point or src.is_complex):
        lo, hi = integer_range(dst)
        real = (t.real if src.is_complex else t).double().tolist()
        keep = torch.tensor([math.isfinite(v) and lo <= math.trunc(v) <= hi for v in real])
        t = torch.where(keep, t, torch.zeros((), dtype=src))
    n = ROWS * COLS
    return t.repeat(n // t.numel() + 1)[:n]


def sentinel(dtype, shape):
    return torch.full(shape, 3, dtype=dtype, device="cuda")


def make_view(layout, dtype, values=None):
    """(base, view): a ROWS x COLS view of a fresh cuda base in `layout`,
    holding `values` (filled with a sentinel around it and when None)."""
    if layout == "contiguous":
        base = sentinel(dtype, (ROWS, COLS))
        view = base
    elif layout == "transposed":
        base = sentinel(dtype, (COLS, ROWS))
        view = base.t()
    elif layout == "gaps":  # strides (2 * (2 * COLS + 1), 2) at offset 1
        base = sentinel(dtype, (2 * ROWS, 2 * COLS + 1))
        view = base[::2, 1::2]
    elif layout == "offset":
        base = sentinel(dtype, (ROWS * COLS + 5,))
        view = base[5:].view(ROWS, COLS)
    elif layout == "broadcast":  # one row, stride 0 down the columns
        base = sentinel(dtype, (COLS,))
        if values is not None:
            base.copy_(values[:COLS].to("cuda"))
        return base, base.expand(ROWS, COLS)
    else:
        raise ValueError(layout)
    if values is not None:
        view.copy_(values.view(ROWS, COLS).to("cuda"))
    return base, view


def readable(t):
    """t on the cpu, complex as (real, imag) pairs, unsigned as the signed
    type of their width (which cpu comparisons take)."""
    t = t.cpu()
    if t.is_complex():
        return torch.view_as_real(t)
    signed = {torch.uint16: torch.int16, torch.uint32: torch.int32, torch.uint64: torch.int64}
    return t.view(signed.get(t.dtype, t.dtype))


def differences(got, want):
    """Where got and want differ: bit for bit, except that any NaN equals any
    (so -0.0 differs from 0.0)."""
    if not got.is_floating_point():
        return got != want
    size = {2: torch.int16, 4: torch.int32, 8: torch.int64}[got.element_size()]
    nan_got, nan_want = torch.isnan(got), torch.isnan(want)
    return (nan_got != nan_want) | (~nan_got & (got.view(size) != want.view(size)))


def assert_same(got, want, what):
    got, want = readable(got), readable(want)
    differs = differences(got, want)
    if differs.any():
        pairs = [(i, got[tuple(i)].item(), want[tuple(i)].item())
                 for i in differs.nonzero()[:6].tolist()]
        pytest.fail(f"{what}: {int(differs.sum())} elements differ from torch cuda's, "
                    f"(index, ours, torch's): {pairs}")


# (source layout, destination layout): each layout on either side at least
# once, and pairs whose strides do not merge into one run
LAYOUTS = [("contiguous", "contiguous"), ("transposed", "contiguous"),
           ("contiguous", "transposed"), ("gaps", "offset"), ("offset", "gaps"),
           ("broadcast", "transposed")]


def name(dtype):
    return str(dtype).replace("torch.", "")


@pytest.mark.parametrize("src_layout,dst_layout", LAYOUTS, ids=lambda v: v)
@pytest.mark.parametrize("dst_dtype", DTYPES, ids=name)
@pytest.mark.parametrize("src_dtype", DTYPES, ids=name)
def test_copy_converts_as_torch_cuda(src_dtype, dst_dtype, src_layout, dst_layout):
    values = source_values(src_dtype, dst_dtype)
    _, src = make_view(src_layout, src_dtype, values)
    want_base, want = make_view(dst_layout, dst_dtype)
    got_base, got = make_view(dst_layout, dst_dtype)
    try:
        want.copy_(src)
    except (RuntimeError, NotImplementedError) as e:
        pytest.skip(f"torch cuda does not copy {name(src_dtype)} to {name(dst_dtype)}: {e}")
    dst_handle = borrow(got)
    shim.copy_(dst_handle, borrow(src))
    aotishim.synchronize("cuda:0")
    # the destination keeps its geometry, and nothing outside it is written
    assert dst_handle.sizes == [ROWS, COLS]
    assert dst_handle.strides == list(got.stride())
    assert dst_handle.storage_offset == got.storage_offset()
    assert_same(got_base, want_base, f"{name(src_dtype)} -> {name(dst_dtype)}")


@pytest.mark.parametrize("dst_dtype", [torch.float32, torch.float16, torch.int32, torch.uint8,
                                       torch.int64, torch.complex64, torch.complex128],
                         ids=name)
def test_a_bool_byte_other_than_one_reads_as_true(dst_dtype):
    # torch loads a bool as its byte, nonzero true (c10::load)
    src = torch.tensor([0, 1, 2, 255, 0, 7], dtype=torch.uint8, device="cuda").view(torch.bool)
    want = torch.zeros(6, device="cuda").to(dst_dtype).copy_(src)
    got = torch.zeros(6, device="cuda").to(dst_dtype)
    shim.copy_(borrow(got), borrow(src))
    aotishim.synchronize("cuda:0")
    assert_same(got, want, f"bool bytes -> {name(dst_dtype)}")


@pytest.mark.parametrize("src_dtype,dst_dtype", [
    (torch.float32, torch.bfloat16), (torch.int64, torch.float64), (torch.float64, torch.uint8),
    (torch.complex128, torch.complex64), (torch.uint8, torch.float16), (torch.complex64, torch.bool),
], ids=lambda d: name(d))
def test_a_copy_longer_than_one_pass_of_the_grid(src_dtype, dst_dtype):
    # more elements than 65535 blocks of 256 threads cover at once, transposed
    g = torch.Generator(device="cuda").manual_seed(11)
    shape = (4099, 4100)
    if src_dtype.is_floating_point or src_dtype.is_complex:
        src = (torch.randn(shape, generator=g, device="cuda", dtype=src_dtype) * 300).t()
    else:
        src = torch.randint(0, 2**62 if src_dtype == torch.int64 else 256, shape, generator=g,
                            device="cuda", dtype=src_dtype).t()
    want = torch.empty(src.shape, device="cuda", dtype=dst_dtype).copy_(src)
    got = torch.empty(src.shape, device="cuda", dtype=dst_dtype)
    shim.copy_(borrow(got), borrow(src))
    aotishim.synchronize("cuda:0")
    assert_same(got, want, f"{name(src_dtype)} -> {name(dst_dtype)}")


# ---------------------------------------------------------------- ops the conversions opened


def operand(dtype, shape, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g, device="cuda") > 0.5
    if dtype.is_complex:
        return torch.randn(shape, generator=g, device="cuda", dtype=dtype) * 4
    if dtype.is_floating_point:
        return (torch.randn(shape, generator=g, device="cuda") * 40).to(dtype)
    lo, hi = (0, 256) if dtype == torch.uint8 else (-120, 120)
    t = torch.randint(lo, hi, shape, generator=g, device="cuda").to(dtype)
    if dtype == torch.int64:
        # values float32 and float16 round
        t.view(-1)[:3] = torch.tensor([2**40 + 1, -(2**53 + 3), 70001], device="cuda")
    return t


def check_result(handle, want, exact=True):
    assert handle.sizes == list(want.shape)
    assert handle.strides == list(want.stride()), "output strides differ from torch cuda's"
    got = to_torch(handle)
    assert got.dtype == want.dtype
    tol = {"rtol": 0, "atol": 0} if exact else {}
    torch.testing.assert_close(got, want.cpu().contiguous(), equal_nan=True, **tol)


# integer operands of floating and complex results, and integers of
# different widths (each operand converted to the result's dtype first)
MIXED = [(torch.int32, torch.float32), (torch.int64, torch.float16),
         (torch.uint8, torch.bfloat16), (torch.bool, torch.float64),
         (torch.float32, torch.int64), (torch.int16, torch.complex64),
         (torch.int64, torch.float32), (torch.float16, torch.float64),
         (torch.uint8, torch.int8), (torch.int32, torch.int64), (torch.bool, torch.int32)]


@pytest.mark.parametrize("da,db", MIXED, ids=name)
@pytest.mark.parametrize("alpha", [1.0, -2.5])
def test_add_and_mul_of_mixed_dtypes_are_torch_cudas(da, db, alpha):
    a = operand(da, (5, 6), 1).t()  # transposed, and b broadcast over it
    b = operand(db, (5,), 2)
    exact = not (da.is_complex or db.is_complex)
    want = torch.mul(a, b)
    check_result(shim.call_op("mul_Tensor", borrow(a), borrow(b), entry="cuda"), want, exact)
    if want.dtype.is_floating_point or want.dtype.is_complex:  # integral add takes no float alpha
        want = torch.ops.aten.add.Tensor(a, b, alpha=alpha)
        check_result(shim.call_op("add_Tensor", borrow(a), borrow(b), alpha, entry="cuda"),
                     want, exact)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int8, torch.uint8, torch.bool],
                         ids=name)
@pytest.mark.parametrize("other", [2.5, -0.5])
def test_scalar_ops_of_integer_tensors_are_torch_cudas(dtype, other):
    a = operand(dtype, (4, 7), 3)[:, 1:]  # strided; a float number makes the result float32
    want = torch.ops.aten.mul.Scalar(a, other)
    check_result(shim.call_op("mul_Scalar", borrow(a), other, entry="cuda"), want)
    want = torch.ops.aten.add.Scalar(a, other, alpha=1.0)
    check_result(shim.call_op("add_Scalar", borrow(a), other, 1.0, entry="cuda"), want)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int16, torch.int8,
                                   torch.uint8], ids=name)
def test_angle_and_pow_of_integers_are_torch_cudas(dtype):
    x = operand(dtype, (6, 5), 4).t()
    check_result(shim.call_op("angle", borrow(x), entry="cuda"), torch.angle(x))
    for exponent in (2.0, 3.0, 0.5, -1.0, 2.5):
        want = torch.ops.aten.pow.Tensor_Scalar(x, exponent)
        check_result(shim.call_op("pow_Tensor_Scalar", borrow(x), exponent, entry="cuda"), want,
                     exact=False)
