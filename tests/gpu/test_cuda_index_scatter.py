"""index.Tensor, index_put, masked_select, masked_scatter, repeat_interleave,
the scatter family (scatter_reduce, scatter, index_reduce) and
segment_reduce on cuda against torch cuda, beyond their OpInfo samples
(tests/test_opinfo.py runs those on cuda too): values, dtypes and output
strides in several layouts, many repeated indices (index_put's accumulation
rounds exactly as torch cuda's sorted-index kernels for each slice size;
the scatter reductions, where torch cuda's atomics round in no set order,
must be at least as close to the float64 answer as torch's), the last write
winning among repeated indices as in torch's deterministic mode, long
segments, and torch's errors for indices out of range, short sources and
bad repeats or lengths, after which the device still works."""

from __future__ import annotations

import contextlib

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

NUMERIC = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32,
           torch.int16, torch.int8, torch.uint8]
FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


@pytest.fixture(autouse=True)
def no_tf32():
    with tf32_off():
        yield


@contextlib.contextmanager
def torch_deterministic():
    """torch cuda's sorted kernels, where the last of repeated indices wins."""
    was = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(was)


def values(dtype, shape, seed=0, lo=-5, hi=5):
    g = torch.Generator(device="cuda").manual_seed(seed)
    if dtype.is_complex:
        return torch.randn(shape, dtype=dtype, generator=g, device="cuda")
    if dtype == torch.bool:
        return torch.rand(shape, generator=g, device="cuda") > 0.5
    if dtype.is_floating_point:
        return (torch.rand(shape, generator=g, device="cuda", dtype=torch.float64) * (hi - lo)
                + lo).to(dtype)
    return torch.randint(max(lo, 0) if dtype == torch.uint8 else lo, hi, shape, generator=g,
                         device="cuda").to(dtype)


def layout(t, how):
    """t's values in another memory layout: transposed, or a view with gaps."""
    if how == "transposed" and t.dim() >= 2:
        return t.transpose(0, -1).contiguous().transpose(0, -1)
    if how == "gaps" and t.dim() >= 1:
        buf = torch.zeros(t.shape[:-1] + (2 * t.shape[-1],), dtype=t.dtype, device="cuda")
        buf[..., ::2] = t
        return buf[..., ::2]
    return t


def opt(t):
    return None if t is None else borrow(t)


def check(h, want, exact=True, strides=True):
    """A result handle against torch's: dtype, sizes, strides, values."""
    assert h.dtype == str(want.dtype)[6:], (h.dtype, want.dtype)
    assert h.sizes == list(want.shape)
    if strides and want.numel() > 1:
        assert h.strides == list(want.stride()), "output strides differ from torch cuda's"
    got = to_torch(h)
    if exact:
        torch.testing.assert_close(got, want.cpu().contiguous(), rtol=0, atol=0, equal_nan=True)
    else:
        torch.testing.assert_close(got, want.cpu().contiguous(), equal_nan=True)
    return got


def error_of(got, want, exact):
    return ((got.double() - exact.double()).abs().nan_to_num(0).max().item(),
            (want.cpu().double() - exact.double()).abs().nan_to_num(0).max().item())


def device_still_works():
    x = torch.arange(6.0, device="cuda")
    check(shim.call_op("index_Tensor", borrow(x), [borrow(torch.tensor([5, 0], device="cuda"))],
                       entry="cuda"), x[[5, 0]])


# ---------------------------------------------------------------- index.Tensor

def _index_cases():
    m45 = torch.rand(4, 5, generator=torch.Generator().manual_seed(1)) > 0.5
    i = torch.tensor([3, 0, -1, 2])
    two_true = torch.zeros(5, 6, dtype=torch.bool)
    two_true[1, 2] = two_true[3, 4] = True
    return {
        "mask_all": lambda x: [x.ne(x.flatten()[0])],
        "mask_2d": lambda x: [m45.cuda()],
        "mask_last": lambda x: [None, None, torch.tensor([1, 0, 1, 1, 0, 1], dtype=torch.bool).cuda()],
        "int": lambda x: [i.cuda()],
        "int32_middle": lambda x: [None, i.to(torch.int32).cuda()],
        "adjacent_broadcast": lambda x: [i.cuda(), torch.tensor([[1], [4]]).cuda()],
        "apart": lambda x: [i[:3].cuda(), None, torch.tensor([5, 0, 1]).cuda()],
        "int_and_mask": lambda x: [torch.tensor([1, 0]).cuda(), two_true.cuda()],
        "empty": lambda x: [torch.zeros(4, dtype=torch.bool).cuda()],
    }


@pytest.mark.parametrize("dtype", NUMERIC + [torch.bool, torch.complex64, torch.complex128])
@pytest.mark.parametrize("case", list(_index_cases()))
@pytest.mark.parametrize("how", ["contiguous", "transposed", "gaps"])
def test_index_is_torch_cudas(dtype, case, how):
    x = layout(values(dtype, (4, 5, 6), seed=3), how)
    indices = _index_cases()[case](x)
    want = torch.ops.aten.index.Tensor(x, indices)
    got = shim.call_op("index_Tensor", borrow(x), [opt(t) for t in indices], entry="cuda")
    check(got, want)


def test_index_out_of_range_is_refused():
    x = torch.zeros(5, 3, device="cuda")
    for idx, message in (([torch.tensor([1, 7])], "index 7 is out of bounds for dimension 0 with size 5"),
                         ([None, torch.tensor([[-4]])], "index -4 is out of bounds for dimension 1 with size 3")):
        with pytest.raises(ShimError, match=message):
            shim.call_op("index_Tensor", borrow(x), [opt(t if t is None else t.cuda()) for t in idx],
                         entry="cuda")
    device_still_works()


# ---------------------------------------------------------------- index_put

def _put_cases():
    g = torch.Generator().manual_seed(5)
    r = lambda hi, n: torch.randint(0, hi, (n,), generator=g)  # noqa: E731
    return {
        # (self shape, indices, values shape): slices of 1 element with many
        # repeats (torch's warp sums), 1 with few, 8 and 30 (sum, then add),
        # 64 (rounded at every addition), two dims, dims apart, a mask
        "slice1_warp": ((50,), [r(4, 1000)], (1000,)),
        "slice1_few": ((50,), [r(50, 60)], (60,)),
        "slice1_2d_index": ((9,), [r(9, 300).view(20, 15)], (20, 15)),
        "slice8": ((20, 8), [r(4, 300)], (300, 8)),
        "slice30": ((4, 5, 6), [torch.tensor([1, 3, 1, 1, -1])], (5, 5, 6)),
        "slice64": ((10, 64), [r(3, 100)], (100, 64)),
        "two_dims": ((6, 7, 5), [r(2, 40), r(3, 40)], (40, 5)),
        "middle_dim": ((4, 30, 3), [None, r(2, 70)], (4, 70, 3)),
        "apart": ((6, 5, 7), [r(2, 50), None, r(3, 50)], (50, 5)),
        "mask": ((4, 5, 6), [torch.rand(4, 5, generator=g) > 0.5], (1,)),
        "broadcast_values": ((8, 6), [r(3, 40)], (6,)),
    }


@pytest.mark.parametrize("dtype", NUMERIC + [torch.bool])
@pytest.mark.parametrize("case", list(_put_cases()))
def test_index_put_accumulate_is_torch_cudas_exactly(dtype, case):
    shape, indices, vshape = _put_cases()[case]
    x = values(dtype, shape, seed=7)
    v = values(dtype, vshape, seed=8)
    indices = [None if t is None else t.cuda() for t in indices]
    want = torch.ops.aten.index_put(x, indices, v, True)
    got = shim.call_op("index_put", borrow(x), [opt(t) for t in indices], borrow(v), 1, entry="cuda")
    check(got, want)  # torch cuda's sorted kernels are deterministic: bit for bit


@pytest.mark.parametrize("dtype", NUMERIC + [torch.bool, torch.complex64, torch.complex128])
@pytest.mark.parametrize("how", ["contiguous", "transposed", "gaps"])
def test_index_put_repeated_indices_last_write_wins(dtype, how):
    x = layout(values(dtype, (30, 4), seed=1), how)
    idx = torch.randint(0, 6, (200,), device="cuda", generator=torch.Generator(device="cuda").manual_seed(2))
    v = values(dtype, (200, 4), seed=3)
    with torch_deterministic():
        want = torch.ops.aten.index_put(x, [idx], v, False)
    got = shim.call_op("index_put", borrow(x), [borrow(idx)], borrow(v), 0, entry="cuda")
    check(got, want)


def test_index_put_errors():
    x = torch.zeros(5, device="cuda")
    with pytest.raises(ShimError, match="index -6 is out of bounds for dimension 0 with size 5"):
        shim.call_op("index_put", borrow(x), [borrow(torch.tensor([1, -6], device="cuda"))],
                     borrow(torch.ones(2, device="cuda")), 1, entry="cuda")
    assert torch.equal(x, torch.zeros(5, device="cuda"))  # self untouched (the result is a copy)
    z = torch.zeros(3, dtype=torch.complex64, device="cuda")
    with pytest.raises(ShimError, match="accumulating complex tensors is not supported"):
        shim.call_op("index_put", borrow(z), [borrow(torch.tensor([0], device="cuda"))],
                     borrow(torch.ones(1, dtype=torch.complex64, device="cuda")), 1, entry="cuda")
    device_still_works()


# ---------------------------------------------------------------- scatter family

def _scatter(self_, dim, index, src, reduce, include_self):
    out = torch.empty_like(self_)
    h = borrow(out)
    shim.call_op("scatter_reduce_two_out", h, borrow(self_), dim, borrow(index), borrow(src), reduce,
                 int(include_self), entry="cuda")
    return h


@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
@pytest.mark.parametrize("how", ["contiguous", "transposed"])
def test_scatter_reduce_with_many_repeats(dtype, reduce, include_self, how):
    lo, hi = (-5, 6)
    if reduce == "prod":
        lo, hi = (0.5, 1.5) if dtype.is_floating_point else (-2, 3)
    self_ = layout(values(dtype, (10, 6), seed=11, lo=lo, hi=hi), how)
    index = torch.randint(0, 10, (200, 6), device="cuda",
                          generator=torch.Generator(device="cuda").manual_seed(12))
    src = values(dtype, (210, 7), seed=13, lo=lo, hi=hi)  # larger than index
    if dtype.is_floating_point and reduce in ("amax", "amin"):
        src[3, 2] = float("nan")
    want = torch.scatter_reduce(self_, 0, index, src[:200, :6], reduce, include_self=include_self)
    got = _scatter(self_, 0, index, src, reduce, include_self)
    if not dtype.is_floating_point or reduce in ("amax", "amin"):
        check(got, want, strides=False)  # integers, max and min: exact
        return
    # torch cuda adds and multiplies with atomics in no set order (float16 and
    # bfloat16 rounding at every step); here in index order, in float: at
    # least as close to the float64 answer as torch's.
    exact = torch.scatter_reduce(self_.double(), 0, index, src[:200, :6].double(), reduce,
                                 include_self=include_self).cpu()
    ours, theirs = error_of(to_torch(got), want, exact)
    # a few roundings of the result's scale: float64 means of ~20 values
    # round their sum (up to 20 times the scale) and the division
    eps = 4 * torch.finfo(dtype).eps * exact.abs().max().item()
    assert ours <= 4 * theirs + eps, (ours, theirs)


@pytest.mark.parametrize("dtype", NUMERIC + [torch.bool])
def test_scatter_repeated_indices_last_write_wins(dtype):
    self_ = values(dtype, (8, 5), seed=1)
    index = torch.randint(0, 8, (40, 5), device="cuda",
                          generator=torch.Generator(device="cuda").manual_seed(2))
    src = values(dtype, (40, 5), seed=3)
    with torch_deterministic():
        want = torch.scatter(self_, 0, index, src)
    out = torch.empty_like(self_)
    h = borrow(out)
    shim.call_op("scatter_src_out", h, borrow(self_), 0, borrow(index), borrow(src), entry="cuda")
    check(h, want, strides=False)
    h2 = borrow(torch.empty_like(self_))
    shim.call_op("scatter_value_out", h2, borrow(self_), 1, borrow(index[:8] % 5), 1.0, entry="cuda")
    check(h2, torch.scatter(self_, 1, index[:8] % 5, 1.0), strides=False)


def test_scatter_out_of_range_leaves_out_as_self():
    self_ = torch.randn(4, 9, device="cuda")
    out = torch.zeros(4, 9, device="cuda")
    h = borrow(out)
    with pytest.raises(ShimError, match="index 9 is out of bounds for dimension 1 with size 9"):
        shim.call_op("scatter_reduce_two_out", h, borrow(self_), 1,
                     borrow(torch.tensor([[9]], device="cuda")), borrow(torch.ones(1, 1, device="cuda")),
                     "sum", 1, entry="cuda")
    assert torch.equal(to_torch(h), self_.cpu())
    with pytest.raises(ShimError, match="index -1 is out of bounds"):
        shim.call_op("scatter_src_out", h, borrow(self_), 0, borrow(torch.tensor([[-1]], device="cuda")),
                     borrow(torch.ones(1, 1, device="cuda")), entry="cuda")
    device_still_works()


@pytest.mark.parametrize("dtype", NUMERIC)
@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce_is_torch_cudas(dtype, reduce, include_self):
    lo, hi = ((0.5, 1.5) if dtype.is_floating_point else (-2, 3)) if reduce == "prod" else (-5, 6)
    self_ = values(dtype, (7, 4, 3), seed=21, lo=lo, hi=hi)
    index = torch.randint(0, 4, (50,), device="cuda",
                          generator=torch.Generator(device="cuda").manual_seed(22))
    source = values(dtype, (7, 50, 3), seed=23, lo=lo, hi=hi)
    want = torch.index_reduce(self_, 1, index, source, reduce, include_self=include_self)
    got = shim.call_op("index_reduce", borrow(self_), 1, borrow(index), borrow(source), reduce,
                       int(include_self), entry="cuda")
    if not dtype.is_floating_point or reduce in ("amax", "amin"):
        check(got, want)
        return
    exact = torch.index_reduce(self_.double(), 1, index, source.double(), reduce,
                               include_self=include_self).cpu()
    assert got.strides == list(want.stride())
    ours, theirs = error_of(to_torch(got), want, exact)
    eps = torch.finfo(dtype).eps * exact.abs().max().item()
    assert ours <= 4 * theirs + eps, (ours, theirs)


# ---------------------------------------------------------------- masks

@pytest.mark.parametrize("dtype", NUMERIC + [torch.bool, torch.complex64, torch.complex128])
@pytest.mark.parametrize("shapes", [((5, 6, 7), (6, 1)), ((6, 1), (5, 6, 7)), ((1000, 1000), (1000, 1000)),
                                    ((3, 4), (3, 4)), ((), ())])
@pytest.mark.parametrize("how", ["contiguous", "transposed", "gaps"])
def test_masked_select_and_scatter_are_torch_cudas(dtype, shapes, how):
    sshape, mshape = shapes
    x = layout(values(dtype, sshape, seed=31), how)
    mask = layout(torch.rand(mshape, device="cuda",
                             generator=torch.Generator(device="cuda").manual_seed(32)) > 0.4, how)
    check(shim.call_op("masked_select", borrow(x), borrow(mask), entry="cuda"),
          torch.masked_select(x, mask))
    n = int(mask.expand(torch.broadcast_shapes(x.shape, mask.shape)).sum())
    source = layout(values(dtype, (n + 3, 2), seed=33), how)
    check(shim.call_op("masked_scatter", borrow(x), borrow(mask), borrow(source), entry="cuda"),
          torch.masked_scatter(x, mask, source))


def test_masks_selecting_nothing_and_short_sources():
    x = torch.randn(3, 4, device="cuda")
    none = torch.zeros(3, 4, dtype=torch.bool, device="cuda")
    check(shim.call_op("masked_select", borrow(x), borrow(none), entry="cuda"), x[none])
    check(shim.call_op("masked_scatter", borrow(x), borrow(none), borrow(torch.zeros(0, device="cuda")),
                       entry="cuda"), x.clone())
    with pytest.raises(ShimError, match="expected source to have at least 12 elements"):
        shim.call_op("masked_scatter", borrow(x), borrow(torch.ones(3, 4, dtype=torch.bool, device="cuda")),
                     borrow(torch.ones(5, device="cuda")), entry="cuda")
    device_still_works()


# ---------------------------------------------------------------- repeat_interleave

@pytest.mark.parametrize("dtype", [torch.int32, torch.int64])
def test_repeat_interleave_is_torch_cudas(dtype):
    g = torch.Generator(device="cuda").manual_seed(41)
    for r in ([2, 0, 3], [0, 0], [], [1], [5] * 40, [0, 100000, 3, 0, 7]):
        rep = torch.tensor(r, dtype=dtype, device="cuda")
        check(shim.call_op("repeat_interleave_Tensor", borrow(rep), None, entry="cuda"),
              torch.repeat_interleave(rep))
    rep = torch.randint(0, 9, (100000,), device="cuda", generator=g).to(dtype)[::2]  # strided
    check(shim.call_op("repeat_interleave_Tensor", borrow(rep), None, entry="cuda"),
          torch.repeat_interleave(rep))
    rep = torch.tensor([1, 2, 3], dtype=dtype, device="cuda")
    check(shim.call_op("repeat_interleave_Tensor", borrow(rep), 6, entry="cuda"),
          torch.repeat_interleave(rep, output_size=6))


def test_repeat_interleave_errors():
    with pytest.raises(ShimError, match="repeats can not be negative"):
        shim.call_op("repeat_interleave_Tensor", borrow(torch.tensor([1, -1], device="cuda")), None,
                     entry="cuda")
    with pytest.raises(ShimError, match="allocated size does not match"):
        shim.call_op("repeat_interleave_Tensor", borrow(torch.tensor([1, 2], device="cuda")), 4,
                     entry="cuda")
    device_still_works()


# ---------------------------------------------------------------- segment_reduce

def _segments(lengths, offsets):
    if not offsets:
        return lengths
    zero = torch.zeros(lengths.shape[:-1] + (1,), dtype=lengths.dtype, device="cuda")
    return torch.cat([zero, lengths.cumsum(-1).to(lengths.dtype)], -1)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("reduce", ["max", "mean", "min", "sum", "prod"])
@pytest.mark.parametrize("offsets", [False, True])
@pytest.mark.parametrize("initial", [None, 2.0])
@pytest.mark.parametrize("index_dtype", [torch.int64, torch.int32])
def test_segment_reduce_is_torch_cudas(dtype, reduce, offsets, initial, index_dtype):
    g = torch.Generator(device="cuda").manual_seed(51)
    # several dimensions: torch cuda's own serial kernel, bit for bit
    data = values(dtype, (3, 40, 4), seed=52, lo=0.5, hi=1.5)
    data[0, 7, 1] = float("nan")
    lengths = torch.tensor([[5, 0, 20, 15], [40, 0, 0, 0], [1, 2, 3, 34]], device="cuda",
                           dtype=index_dtype)
    segs = _segments(lengths, offsets)
    kw = {"offsets": segs} if offsets else {"lengths": segs}
    want = torch.ops.aten.segment_reduce(data, reduce, axis=1, unsafe=False, initial=initial, **kw)
    got = shim.call_op("segment_reduce", borrow(data), reduce, None if offsets else borrow(segs),
                       None, borrow(segs) if offsets else None, 1, 0, initial, entry="cuda")
    check(got, want)
    # one dimension: CUB's segmented reduce, as torch cuda calls it
    lengths = torch.randint(0, 300, (60,), device="cuda", generator=g).to(index_dtype)
    lengths[5] = 0
    lengths[7] = 5000
    data = values(dtype, (int(lengths.sum()),), seed=53, lo=0.9, hi=1.1)
    segs = _segments(lengths, offsets)
    kw = {"offsets": segs} if offsets else {"lengths": segs}
    want = torch.ops.aten.segment_reduce(data, reduce, axis=0, unsafe=False, initial=initial, **kw)
    got = shim.call_op("segment_reduce", borrow(data), reduce, None if offsets else borrow(segs),
                       None, borrow(segs) if offsets else None, 0, 0, initial, entry="cuda")
    check(got, want, exact=False)


def test_segment_reduce_errors():
    data = torch.randn(40, device="cuda")
    for lengths, message in (([2, -1, 39], "lengths contains negative value"),
                             ([2, 3, 4], "Expected all rows of lengths along axis to sum")):
        with pytest.raises(ShimError, match=message):
            shim.call_op("segment_reduce", borrow(data), "sum",
                         borrow(torch.tensor(lengths, device="cuda")), None, None, 0, 0, None,
                         entry="cuda")
    with pytest.raises(ShimError, match="lies outside the axis of size 40"):
        shim.call_op("segment_reduce", borrow(data), "sum", None, None,
                     borrow(torch.tensor([0, 10, 41], device="cuda")), 0, 0, None, entry="cuda")
    with pytest.raises(ShimError, match="lies outside the axis"):  # unsafe still never reads past
        shim.call_op("segment_reduce", borrow(data), "sum",
                     borrow(torch.tensor([30, 30], device="cuda")), None, None, 0, 1, None,
                     entry="cuda")
    device_still_works()
