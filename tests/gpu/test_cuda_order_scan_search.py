"""Order statistics, scans and searches on cuda beyond their OpInfo samples
(tests/test_opinfo.py runs them on cuda too), against torch cuda:

- float16/bfloat16 cumsum/cumprod and logcumsumexp (every floating dtype),
  which torch cuda rounds at every step in its kernel's order: bit for bit
  along the innermost dim (blocked Sklansky scan, several chunks and chunk
  sizes) and along outer dims (left to right), within torch's own error for
  a tensor that is one line (CUB's scan, whose order across tiles varies);
- cummax/cummin: values and indices exactly (ties, NaN, -0.0, long lines);
- searchsorted/bucketize: sorters, N-D sequences, strided views, NaN,
  out_int32, side, a bad sorter refused with torch's message;
- kthvalue (values exactly, indices pointing at them), the whole-tensor
  median/nanmedian (NaN of either sign, sizes on both sides of torch's
  sort paths), and mode's choice among equally frequent values, which
  torch cuda makes by its kernel's reduction order for lines of up to 2048
  elements."""

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
from cuda_helpers import borrow, tf32_off  # noqa: E402
from torch_views import to_torch  # noqa: E402

FLOATS = [torch.float16, torch.bfloat16, torch.float32, torch.float64]
INTS = [torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64]
CODES = {torch.float16: 5, torch.float32: 6, torch.float64: 7, torch.bfloat16: 15}
BITS = {torch.float16: torch.int16, torch.bfloat16: torch.int16, torch.float32: torch.int32,
        torch.float64: torch.int64}


@pytest.fixture(autouse=True)
def no_tf32():
    with tf32_off():
        yield


def gen(seed):
    return torch.Generator(device="cuda").manual_seed(seed)


def check_layout(h, want):
    assert h.sizes == list(want.shape)
    assert h.dtype == str(want.dtype)[6:]
    if want.numel() > 1:
        assert h.strides == list(want.stride()), "output strides differ from torch cuda's"


def assert_bitwise(got: torch.Tensor, want: torch.Tensor):
    """Same NaN positions; every other element the same bits (so -0.0 is not 0.0)."""
    want = want.cpu().contiguous()
    assert got.dtype == want.dtype and got.shape == want.shape
    if not got.is_floating_point():
        assert torch.equal(got, want)
        return
    assert torch.equal(got.isnan(), want.isnan()), "NaN positions differ"
    keep = ~want.isnan()
    got_bits, want_bits = got.view(BITS[got.dtype])[keep], want.view(BITS[want.dtype])[keep]
    bad = (got_bits != want_bits).nonzero()
    assert bad.numel() == 0, (f"{bad.numel()} elements differ, first at {bad[0].tolist()}: "
                              f"{got[keep][bad[0]].tolist()} vs {want[keep][bad[0]].tolist()}")


def assert_as_close_as_torch(got, want, exact):
    """At most twice torch's own distance from the float64 answer, plus one
    rounding of the result's scale (a scan whose order varies run to run)."""
    want, exact = want.cpu(), exact.cpu()
    assert torch.equal(got.isnan(), want.isnan()), "NaN positions differ"
    ours = (got.double() - exact).abs().nan_to_num(0, posinf=0, neginf=0).max()
    theirs = (want.double() - exact).abs().nan_to_num(0, posinf=0, neginf=0).max()
    scale = exact.abs().nan_to_num(0, posinf=0, neginf=0).max()
    assert ours <= 2 * theirs + torch.finfo(want.dtype).eps * scale, (float(ours), float(theirs))


# ---------------------------------------------------------------- rounded scans

# (shape, dim, torch's path): the innermost ones cover one chunk (nx = 64),
# two chunks of 512 (nx = 256) and many short lines (nx = 16, chunks of 32)
ORDERED = [((9, 70), 1), ((3, 700), 1), ((2000, 40), 1), ((70, 9), 0), ((4, 5, 6), 1),
           ((5, 300), 0), ((4, 5, 6), 2)]
ONE_LINE = [((1000,), 0), ((1, 50), 1), ((20000,), 0), ((7, 1), 0)]


def scan_input(op, dtype, shape, seed):
    x = torch.randn(shape, generator=gen(seed), device="cuda", dtype=torch.float64)
    if op == "cumprod":
        x = 1 + x / 64  # products that stay finite
    elif op == "logcumsumexp":
        x = 3 * x
    x = x.to(dtype)
    if x.dim() >= 2 and x.shape[-1] > 8:
        x[..., 0] = -0.0  # torch cuda's ordered paths start from +0.0 (sums: 0.0)
        if op == "logcumsumexp":
            x[0, ..., 1:4] = float("-inf")
            x[-1, ..., 5] = float("inf")
            if x.shape[0] > 2:
                x[1, ..., 7] = float("nan")
    return x


def scan_ops(dtype):
    ops = ["logcumsumexp"]
    if dtype in (torch.float16, torch.bfloat16):
        ops += ["cumsum", "cumprod"]
    return ops


def call_scan(op, x, dim, out_dtype=None):
    if op == "logcumsumexp":
        return shim.call_op(op, borrow(x), dim, entry="cuda")
    code = None if out_dtype is None else CODES[out_dtype]
    return shim.call_op(op, borrow(x), dim, code, entry="cuda")


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("shape,dim", ORDERED)
def test_rounded_scans_follow_torch_cudas_order_bit_for_bit(dtype, shape, dim):
    for op in scan_ops(dtype):
        x = scan_input(op, dtype, shape, 11)
        got = call_scan(op, x, dim)
        want = getattr(torch, op)(x, dim)
        check_layout(got, want)
        assert_bitwise(to_torch(got), want)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_rounded_scans_of_strided_views(dtype):
    for op in scan_ops(dtype):
        base = scan_input(op, dtype, (70, 2, 9), 12)
        x = base[:, 1, :].t()  # (9, 70), innermost dim strided in memory
        for dim in (1, 0):
            got = call_scan(op, x, dim)
            want = getattr(torch, op)(x, dim)
            check_layout(got, want)
            assert_bitwise(to_torch(got), want)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("shape,dim", ONE_LINE)
def test_rounded_scans_of_one_line(dtype, shape, dim):
    for op in scan_ops(dtype):
        x = scan_input(op, dtype, shape, 13)
        got = call_scan(op, x, dim)
        want = getattr(torch, op)(x, dim)
        check_layout(got, want)
        exact = getattr(torch, op)(x.double(), dim)
        assert_as_close_as_torch(to_torch(got), want, exact)


@pytest.mark.parametrize("out_dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
def test_half_scans_convert_the_input_first(op, out_dtype):
    x = torch.randn(6, 50, generator=gen(14), device="cuda")
    if op == "cumprod":
        x = 1 + x / 64
    for src in (x, (x * 8).to(torch.int32), x.double()):
        got = call_scan(op, src, 1, out_dtype)
        want = getattr(torch, op)(src, 1, dtype=out_dtype)
        check_layout(got, want)
        assert_bitwise(to_torch(got), want)


def test_half_cumprod_overflow_and_zero_give_torchs_nan():
    # float16 partial products overflow to inf, and inf * 0 is NaN in torch cuda
    x = torch.full((3, 40), 9.0, device="cuda", dtype=torch.float16)
    x[:, 30] = 0
    got = call_scan("cumprod", x, 1)
    assert_bitwise(to_torch(got), torch.cumprod(x, 1))


def test_zero_dim_scans():
    for dtype in FLOATS:
        x = torch.tensor(-0.0, device="cuda", dtype=dtype)
        for op in scan_ops(dtype):
            got = call_scan(op, x, 0)
            want = getattr(torch, op)(x, 0)
            check_layout(got, want)
            assert_bitwise(to_torch(got), want)


# ---------------------------------------------------------------- cummax / cummin


def extremum_input(dtype, shape, seed):
    g = gen(seed)
    if dtype == torch.bool:
        return torch.rand(shape, generator=g, device="cuda") > 0.5
    x = torch.randint(0, 5, shape, generator=g, device="cuda")  # many ties
    if dtype.is_floating_point:
        x = x.to(dtype) - 2
        flat = x.view(-1)
        flat[::7] = -0.0
        flat[3::97] = float("nan")
        return x
    return x.to(dtype)


@pytest.mark.parametrize("op", ["cummax", "cummin"])
@pytest.mark.parametrize("dtype", FLOATS + INTS + [torch.bool], ids=str)
@pytest.mark.parametrize("shape,dim", [((9, 70), 1), ((70, 9), 0), ((4, 5, 6), 1),
                                       ((100000,), 0), ((3, 2000), 1), ((), 0)])
def test_cumulative_extrema_are_torch_cudas(op, dtype, shape, dim):
    x = extremum_input(dtype, shape, 21)
    values, indices = shim.call_op(op, borrow(x), dim, entry="cuda")
    want_values, want_indices = getattr(torch, op)(x, dim)
    check_layout(values, want_values)
    check_layout(indices, want_indices)
    assert_bitwise(to_torch(values), want_values)
    assert torch.equal(to_torch(indices), want_indices.cpu())


def test_cumulative_extrema_of_a_transposed_view():
    x = extremum_input(torch.float32, (40, 30), 22).t()
    for op in ("cummax", "cummin"):
        for dim in (0, 1):
            values, indices = shim.call_op(op, borrow(x), dim, entry="cuda")
            want_values, want_indices = getattr(torch, op)(x, dim)
            check_layout(values, want_values)
            assert_bitwise(to_torch(values), want_values)
            assert torch.equal(to_torch(indices), want_indices.cpu())


# ---------------------------------------------------------------- searchsorted / bucketize


def sorted_input(dtype, shape, seed):
    g = gen(seed)
    if dtype.is_floating_point:
        x = torch.randint(-20, 20, shape, generator=g, device="cuda").to(dtype) / 4
    else:
        lo = 0 if dtype == torch.uint8 else -50
        x = torch.randint(lo, 50, shape, generator=g, device="cuda").to(dtype)
    return x.sort(-1).values


@pytest.mark.parametrize("dtype", FLOATS + INTS, ids=str)
@pytest.mark.parametrize("right", [False, True])
@pytest.mark.parametrize("out_int32", [False, True])
def test_searchsorted_is_torch_cudas(dtype, right, out_int32):
    seq = sorted_input(dtype, (40,), 31)
    values = sorted_input(dtype, (6, 9), 32)[:, torch.randperm(9, device="cuda")]
    nd_seq = sorted_input(dtype, (6, 25), 33)
    for s in (seq, nd_seq, nd_seq.t().contiguous().t()):
        got = shim.call_op("searchsorted_Tensor", borrow(s), borrow(values), int(out_int32),
                           int(right), None, None, entry="cuda")
        want = torch.searchsorted(s, values, out_int32=out_int32, right=right)
        check_layout(got, want)
        assert torch.equal(to_torch(got), want.cpu())
    got = shim.call_op("bucketize_Tensor", borrow(values), borrow(seq), int(out_int32),
                       int(right), entry="cuda")
    want = torch.bucketize(values, seq, out_int32=out_int32, right=right)
    check_layout(got, want)
    assert torch.equal(to_torch(got), want.cpu())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64], ids=str)
@pytest.mark.parametrize("side", ["left", "right"])
def test_searchsorted_with_a_sorter(dtype, side):
    g = gen(34)
    seq = sorted_input(dtype, (4, 30), 35)
    seq = seq[:, torch.randperm(30, generator=g, device="cuda")]  # unsorted, sorter orders it
    sorter = seq.argsort(dim=-1, stable=True)
    values = sorted_input(dtype, (4, 11), 36)
    for sq, so in ((seq, sorter), (seq[1], sorter[1]),
                   (seq.t().contiguous().t(), sorter.t().contiguous().t())):
        vals = values if sq.dim() == 2 else values[0]
        got = shim.call_op("searchsorted_Tensor", borrow(sq), borrow(vals), 0, 0, side,
                           borrow(so), entry="cuda")
        want = torch.searchsorted(sq, vals, side=side, sorter=so)
        check_layout(got, want)
        assert torch.equal(to_torch(got), want.cpu())


def test_searchsorted_nan_lands_where_torch_puts_it():
    nan = float("nan")
    seq = torch.tensor([-1.0, 0.0, 0.0, 2.5, nan, nan], device="cuda")
    values = torch.tensor([[nan, -2.0, 0.0, -0.0, 2.5, 9.0, float("inf")]], device="cuda")
    for right in (0, 1):
        got = shim.call_op("searchsorted_Tensor", borrow(seq), borrow(values), 0, right, None,
                           None, entry="cuda")
        want = torch.searchsorted(seq, values, right=bool(right))
        assert torch.equal(to_torch(got), want.cpu())


def test_searchsorted_scalar_on_a_float_sequence():
    seq = torch.tensor([0.0, 2.0, 2.0, 5.0, 9.0], device="cuda")
    for v in (-1.0, 2.0, 2.5, 9.0, 300.0):
        for right in (0, 1):
            got = shim.call_op("searchsorted_Scalar", borrow(seq), v, 0, right, None, None,
                               entry="cuda")
            want = torch.searchsorted(seq, v, right=bool(right))
            check_layout(got, want)
            assert torch.equal(to_torch(got), want.cpu())


def test_searchsorted_refuses_a_sorter_out_of_range():
    seq = torch.tensor([3.0, 1.0, 2.0], device="cuda")
    bad = torch.tensor([1, 2, 3], device="cuda")
    values = torch.tensor([1.5], device="cuda")
    with pytest.raises(ShimError, match="sorter index out of range"):
        shim.call_op("searchsorted_Tensor", borrow(seq), borrow(values), 0, 0, None, borrow(bad),
                     entry="cuda")


def test_searchsorted_of_integers_against_a_number_is_torchs_or_refused():
    # the number meets an integer sequence in float32, through a conversion
    # cuda copies may not make: then an error, never a wrong answer
    seq = torch.tensor([0, 2, 5], device="cuda")
    try:
        got = shim.call_op("searchsorted_Scalar", borrow(seq), 2.5, 0, 0, None, None,
                           entry="cuda")
    except ShimError:
        return
    assert torch.equal(to_torch(got), torch.searchsorted(seq, 2.5).cpu())


# ---------------------------------------------------------------- kthvalue


def select_input(dtype, shape, seed, nan=True):
    g = gen(seed)
    if dtype.is_floating_point:
        x = (torch.randint(-6, 6, shape, generator=g, device="cuda").to(dtype) / 2)
        flat = x.view(-1)
        flat[1::5] = -0.0
        if nan:
            flat[2::17] = float("nan")
        return x
    lo = 0 if dtype == torch.uint8 else -6
    return torch.randint(lo, 6, shape, generator=g, device="cuda").to(dtype)


@pytest.mark.parametrize("dtype", FLOATS + INTS, ids=str)
@pytest.mark.parametrize("shape,dim", [((9, 70), 1), ((70, 9), 0), ((4, 5, 6), 1),
                                       ((5000,), 0), ((3, 3000), -1)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_kthvalue_is_torch_cudas(dtype, shape, dim, keepdim):
    x = select_input(dtype, shape, 41)
    n = x.shape[dim]
    for k in sorted({1, 2, n // 3, (n + 1) // 2, n - 1, n}):
        values, indices = shim.call_op("kthvalue", borrow(x), k, dim, int(keepdim), entry="cuda")
        want_values, want_indices = torch.kthvalue(x, k, dim, keepdim)
        check_layout(values, want_values)
        check_layout(indices, want_indices)
        got_values = to_torch(values)
        assert_bitwise(got_values, want_values)
        # torch cuda's index is any position of the k-th value (its threads race)
        idx = to_torch(indices).cuda()
        pointed = x.gather(dim, idx if keepdim else idx.unsqueeze(dim))
        pointed = pointed if keepdim else pointed.squeeze(dim)
        assert torch.equal(pointed.cpu().nan_to_num(7.25), got_values.nan_to_num(7.25))


def test_kthvalue_and_mode_of_a_zero_dim_tensor():
    x = torch.tensor(2.5, device="cuda")
    values, indices = shim.call_op("kthvalue", borrow(x), 1, 0, 0, entry="cuda")
    assert to_torch(values).item() == 2.5 and to_torch(indices).item() == 0
    values, indices = shim.call_op("mode", borrow(x), 0, 1, entry="cuda")
    assert to_torch(values).item() == 2.5 and to_torch(indices).item() == 0


# ---------------------------------------------------------------- median / nanmedian


def negative_nan(dtype):
    """A one-element cuda tensor holding a NaN with its sign bit set."""
    bits = {torch.float16: -512, torch.bfloat16: -64, torch.float32: -4194304,
            torch.float64: -2251799813685248}[dtype]  # the sign bit and the quiet bit
    t = torch.tensor([bits], dtype=BITS[dtype]).view(dtype)
    assert t.isnan().all() and t.view(BITS[dtype]).item() < 0
    return t.cuda()


@pytest.mark.parametrize("op", ["median", "nanmedian"])
@pytest.mark.parametrize("dtype", FLOATS + INTS, ids=str)
@pytest.mark.parametrize("n", [1, 2, 7, 100, 128, 129, 1000, 5000])
def test_whole_tensor_medians_are_torch_cudas(op, dtype, n):
    x = select_input(dtype, (n,), 51 + n, nan=False)
    cases = [x, torch.stack([x, x], 1)[:, 1]]  # and a strided view
    if dtype.is_floating_point:
        some_nan = x.clone()
        some_nan[n // 2] = float("nan")
        cases += [some_nan, torch.full((n,), float("nan"), device="cuda", dtype=dtype)]
        if n > 1:
            # a NaN with its sign bit set: torch's sort puts it first from 129 elements on
            signed = x.clone()
            signed[:1].copy_(negative_nan(dtype))  # its bits, sign included
            cases.append(signed)
    for c in cases:
        got = shim.call_op(op, borrow(c), entry="cuda")
        want = getattr(torch, op)(c)
        check_layout(got, want)
        got_value, want_value = to_torch(got), want.cpu()
        if op == "median" and n <= 128 and c.isnan().any() and not want_value.isnan():
            # torch cuda's median of up to 128 elements (one block's sort)
            # misses a NaN whose sign bit is set (seen on the H200: -0.0 for
            # such a line); here median propagates every NaN, as torch documents
            assert got_value.isnan(), (c, got_value)
            continue
        assert torch.equal(got_value.isnan(), want_value.isnan()), (c, got_value, want_value)
        if not want_value.isnan():
            assert got_value.item() == want_value.item()


def test_median_of_a_multi_dim_view():
    x = select_input(torch.float32, (6, 7, 8), 52, nan=False).permute(2, 0, 1)
    for op in ("median", "nanmedian"):
        got = shim.call_op(op, borrow(x), entry="cuda")
        assert to_torch(got).item() == getattr(torch, op)(x).item()


# ---------------------------------------------------------------- mode


def tied_lines(n, rows, dtype, seed):
    """Lines of about n / 5 distinct values, so that several values are
    often equally the most frequent, at sorted positions that torch cuda's
    lane-by-lane reduction (lines of up to 2048) ranks in another order than
    their values."""
    k = max(2, n // 5)
    if dtype in (torch.uint8, torch.int8):
        k = min(k, 100)
    if dtype == torch.bool:
        k = 2
    x = torch.randint(0, k, (rows, n), generator=gen(seed), device="cuda")
    return x.bool() if dtype == torch.bool else x.to(dtype)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.uint8,
                                   torch.bool], ids=str)
@pytest.mark.parametrize("n", [5, 50, 64, 65, 100, 128, 200, 1024, 1500, 2048, 3000])
def test_mode_among_ties_is_a_most_frequent_value(dtype, n):
    # Among equally frequent values torch cuda's choice follows its kernel's
    # lane order (the H200 showed it differs from ours): the value must be
    # one of the most frequent, as often as torch's, and the index point at it.
    x = tied_lines(n, 12, dtype, 61 + n)
    for keepdim in (False, True):
        values, indices = shim.call_op("mode", borrow(x), 1, int(keepdim), entry="cuda")
        want_values, want_indices = torch.mode(x, 1, keepdim)
        check_layout(values, want_values)
        check_layout(indices, want_indices)
        got_values = to_torch(values)
        flat_got = got_values.reshape(-1).cuda()
        flat_want = want_values.reshape(-1)
        for r in range(x.shape[0]):
            assert (x[r] == flat_got[r]).sum() == (x[r] == flat_want[r]).sum(), r
        idx = to_torch(indices).cuda()
        pointed = x.gather(1, idx if keepdim else idx.unsqueeze(1))
        pointed = pointed if keepdim else pointed.squeeze(1)
        assert torch.equal(pointed.cpu(), got_values)


def test_mode_along_an_outer_dim_of_a_view():
    x = tied_lines(100, 6, torch.int32, 62).t()  # (100, 6), lines along dim 0
    values, indices = shim.call_op("mode", borrow(x), 0, 0, entry="cuda")
    want_values, _ = torch.mode(x, 0)
    check_layout(values, want_values)
    assert torch.equal(to_torch(values), want_values.cpu())
    assert torch.equal(x.gather(0, to_torch(indices).cuda().unsqueeze(0)).squeeze(0).cpu(),
                       to_torch(values))
