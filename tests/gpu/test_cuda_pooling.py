"""The pooling ops on cuda beyond their OpInfo samples (tests/test_opinfo.py
runs those on cuda too), against torch cuda: the index torch cuda picks
among equal maxima, NaN and windows holding only -inf (its channels-last
max_pool2d kernel starts those at index 0), average divisors, the adaptive
averages' division as each of torch cuda's kernels does it (the 2-D
channels-last one multiplies by the reciprocal rounded to the dtype),
fractional windows from the samples in float32 for the half types, output
layouts (max_unpool2d: contiguous on cuda whatever the input's), max_unpool's
duplicate and out-of-range indices, refused dtypes, and compiled cuda models
whose generated code calls these fallbacks."""

from __future__ import annotations

import sys
from pathlib import Path

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
from torch_views import same, to_torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import op_models  # noqa: E402

A = torch.ops.aten
FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]


@pytest.fixture(autouse=True)
def no_tf32():
    with tf32_off():
        yield


def call(op, *args):
    got = shim.call_op(op, *args, entry="cuda")
    return list(got) if isinstance(got, (list, tuple)) else [got]


def check(got, want, what=""):
    """Same sizes, strides, dtype and bitwise values (NaN equal to NaN)."""
    want = want if isinstance(want, (list, tuple)) else (want,)
    assert len(got) == len(want), what
    for g, w in zip(got, want):
        assert g.sizes == list(w.shape), (what, g.sizes, w.shape)
        assert g.strides == list(w.stride()), (what, g.strides, w.stride())
        assert g.dtype == str(w.dtype)[6:], (what, g.dtype, w.dtype)
        assert same(to_torch(g), w.cpu()), (what, to_torch(g), w.cpu())


def layout(x, name):
    if name == "contiguous":
        return x.contiguous()
    if name == "channels_last":
        return x.contiguous(memory_format=torch.channels_last if x.dim() == 4
                            else torch.channels_last_3d)
    if name == "gaps":  # every other element of the last dim, NaN between
        buf = torch.full(x.shape[:-1] + (2 * x.shape[-1],), float("nan"), dtype=x.dtype,
                         device=x.device)
        buf[..., ::2] = x
        return buf[..., ::2]
    assert name == "reversed"
    rev = list(range(x.dim()))[::-1]
    return x.permute(rev).contiguous().permute(rev)


LAYOUTS = ["contiguous", "channels_last", "gaps", "reversed"]


def ties_and_nan(shape, dtype, seed):
    g = torch.Generator(device="cuda").manual_seed(seed)
    x = torch.randint(-2, 3, shape, generator=g, device="cuda").float()
    x[torch.rand(shape, generator=g, device="cuda") < 0.1] = float("nan")
    return x.to(dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", LAYOUTS)
def test_max_pools_pick_torch_cudas_maximum_and_index(dtype, name):
    x2 = layout(ties_and_nan((2, 5, 9, 11), dtype, 1), name)
    for k, s, p, d, ceil in [([3, 2], [2, 1], [1, 1], [1, 2], 1), ([2], [], [0], [1], 0),
                             ([3], [3], [1], [2], 1), ([4, 3], [1, 2], [2, 0], [1, 1], 0)]:
        check(call("max_pool2d_with_indices", borrow(x2), k, s, p, d, ceil),
              A.max_pool2d_with_indices(x2, k, s, p, d, bool(ceil)), (k, s, p, d, ceil))
    x3 = layout(ties_and_nan((2, 3, 5, 6, 7), dtype, 2), name)
    for k, s, p, d, ceil in [([2, 3, 2], [1, 2, 1], [1, 1, 0], [2, 1, 1], 1),
                             ([3], [2], [1], [1], 0)]:
        check(call("max_pool3d_with_indices", borrow(x3), k, s, p, d, ceil),
              A.max_pool3d_with_indices(x3, k, s, p, d, bool(ceil)), (k, s, p, d, ceil))
    for size in ([1, 1], [3, 4], [9, 11], [12, 5]):
        check(call("adaptive_max_pool2d", borrow(x2), size), A.adaptive_max_pool2d(x2, size),
              size)
    for size in ([2, 3, 4], [5, 1, 9]):
        check(call("adaptive_max_pool3d", borrow(x3), size), A.adaptive_max_pool3d(x3, size),
              size)


@pytest.mark.parametrize("name", LAYOUTS)
def test_windows_of_only_minus_infinity(name):
    # torch cuda's channels-last max_pool2d kernel reports index 0 for them,
    # its other kernels the window's first cell
    x = torch.full((2, 8, 6, 6), float("-inf"), device="cuda")
    x[:, :, 4:, 4:] = 1.0
    x = layout(x, name)
    check(call("max_pool2d_with_indices", borrow(x), [2], [2], [1], [1], 0),
          A.max_pool2d_with_indices(x, [2], [2], [1], [1], False))
    x3 = layout(torch.full((1, 4, 4, 4, 4), float("-inf"), device="cuda"), name)
    check(call("max_pool3d_with_indices", borrow(x3), [2], [2], [1], [1], 0),
          A.max_pool3d_with_indices(x3, [2], [2], [1], [1], False))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", LAYOUTS)
def test_average_pools_divide_as_torch_cuda(dtype, name):
    g = torch.Generator(device="cuda").manual_seed(3)
    x2 = layout(torch.randn(2, 6, 9, 10, generator=g, device="cuda").to(dtype), name)
    for k, s, p, ceil, cip, div in [([3], [2], [1], 1, 0, None), ([2], [], [1], 0, 1, 3),
                                    ([3, 2], [2, 3], [1, 1], 1, 1, None),
                                    ([5, 4], [1], [2, 2], 0, 0, None)]:
        check(call("avg_pool2d", borrow(x2), k, s, p, ceil, cip, div),
              A.avg_pool2d(x2, k, s, p, bool(ceil), bool(cip), div), (k, s, p, ceil, cip, div))
    x3 = layout(torch.randn(2, 3, 6, 7, 8, generator=g, device="cuda").to(dtype), name)
    for k, s, p, ceil, cip, div in [([3], [2], [1], 1, 0, None), ([2, 3, 2], [2], [1], 0, 1, 7)]:
        check(call("avg_pool3d", borrow(x3), k, s, p, ceil, cip, div),
              A.avg_pool3d(x3, k, s, p, bool(ceil), bool(cip), div), (k, s, p, ceil, cip, div))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", LAYOUTS)
def test_adaptive_averages_divide_as_torch_cuda(dtype, name):
    g = torch.Generator(device="cuda").manual_seed(4)
    # windows of 3, 5, 7 cells and more: the reciprocal's rounding shows
    x2 = layout(torch.randn(2, 16, 15, 21, generator=g, device="cuda").to(dtype), name)
    for size in ([5, 3], [3, 7], [1, 1], [2, 4], [15, 21], [20, 30]):
        check(call("_adaptive_avg_pool2d", borrow(x2), size), A._adaptive_avg_pool2d(x2, size),
              size)
    # a window of 257 * 2 cells: its size is not a bfloat16
    big = layout(torch.randn(1, 16, 257, 2, generator=g, device="cuda").to(dtype), name)
    check(call("_adaptive_avg_pool2d", borrow(big), [1, 1]), A._adaptive_avg_pool2d(big, [1, 1]))
    x3 = layout(torch.randn(2, 3, 7, 6, 9, generator=g, device="cuda").to(dtype), name)
    for size in ([2, 4, 2], [1, 1, 1], [3, 5, 7]):
        check(call("_adaptive_avg_pool3d", borrow(x3), size), A._adaptive_avg_pool3d(x3, size),
              size)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", LAYOUTS)
def test_fractional_windows_are_torch_cudas(dtype, name):
    # many windows per dim, so the half types' start positions differ from
    # the ones computed in the dtype (torch cpu's)
    g = torch.Generator(device="cuda").manual_seed(5)
    x2 = layout(torch.randn(2, 3, 61, 73, generator=g, device="cuda").to(dtype), name)
    samples = torch.rand(3, 3, 2, generator=g, device="cuda").to(dtype)  # more rows than batch
    for k, size in (([2, 3], [37, 51]), ([3, 2], [20, 1]), ([1, 1], [61, 73])):
        check(call("fractional_max_pool2d", borrow(x2), k, size, borrow(samples)),
              A.fractional_max_pool2d(x2, k, size, samples), (k, size))
    x3 = layout(torch.randn(2, 2, 17, 19, 23, generator=g, device="cuda").to(dtype), name)
    samples = torch.rand(2, 2, 3, generator=g, device="cuda").to(dtype).transpose(0, 1)
    samples = samples.contiguous().transpose(0, 1)  # a strided samples tensor
    # (torch cuda wants output + pool - 1 < input in each dim, one less than
    # torch cpu allows)
    for k, size in (([2, 2, 3], [11, 13, 9]), ([3, 1, 2], [5, 18, 21])):
        check(call("fractional_max_pool3d", borrow(x3), k, size, borrow(samples)),
              A.fractional_max_pool3d(x3, k, size, samples), (k, size))


def test_unbatched_inputs():
    g = torch.Generator(device="cuda").manual_seed(6)
    x = torch.randn(4, 9, 8, generator=g, device="cuda")
    check(call("max_pool2d_with_indices", borrow(x), [3], [2], [1], [1], 1),
          A.max_pool2d_with_indices(x, [3], [2], [1], [1], True))
    check(call("avg_pool2d", borrow(x), [3], [2], [1], 1, 0, None),
          A.avg_pool2d(x, [3], [2], [1], True, False, None))
    check(call("_adaptive_avg_pool2d", borrow(x), [4, 3]), A._adaptive_avg_pool2d(x, [4, 3]))
    v = torch.randn(3, 5, 6, 7, generator=g, device="cuda")
    # channels innermost: torch lays the output out channels-last as well
    v_cl = v.unsqueeze(0).contiguous(memory_format=torch.channels_last_3d).squeeze(0)
    for t in (v, v_cl):
        check(call("max_pool3d_with_indices", borrow(t), [2], [2], [1], [1], 0),
              A.max_pool3d_with_indices(t, [2], [2], [1], [1], False))
        check(call("adaptive_max_pool3d", borrow(t), [2, 3, 4]),
              A.adaptive_max_pool3d(t, [2, 3, 4]))
        check(call("_adaptive_avg_pool3d", borrow(t), [2, 3, 4]),
              A._adaptive_avg_pool3d(t, [2, 3, 4]))
    samples = torch.rand(1, 3, 3, generator=g, device="cuda")
    check(call("fractional_max_pool3d", borrow(v), [2, 2, 2], [3, 4, 5], borrow(samples)),
          A.fractional_max_pool3d(v, [2, 2, 2], [3, 4, 5], samples))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("name", LAYOUTS)
def test_max_unpool_matches_torch_cuda(dtype, name):
    g = torch.Generator(device="cuda").manual_seed(7)
    x = torch.randn(2, 4, 8, 10, generator=g, device="cuda").to(dtype)
    for k, s in ((2, 2), (3, 1)):  # windows that overlap give repeated indices (same values)
        pooled, idx = A.max_pool2d_with_indices(x, [k], [s], [0], [1], False)
        pooled, idx = layout(pooled, name), layout(idx, name) if name != "gaps" else idx
        # torch cuda's output is contiguous even for a channels-last input
        check(call("max_unpool2d", borrow(pooled), borrow(idx), [8, 10]),
              A.max_unpool2d(pooled, idx, [8, 10]), (k, s))
    v = torch.randn(2, 3, 6, 4, 5, generator=g, device="cuda").to(dtype)
    pooled, idx = A.max_pool3d_with_indices(v, [2], [2], [0], [1], False)
    pooled = layout(pooled, name)
    check(call("max_unpool3d", borrow(pooled), borrow(idx), [6, 4, 5], [2, 2, 2], [0, 0, 0]),
          A.max_unpool3d(pooled, idx, [6, 4, 5], [2, 2, 2], [0, 0, 0]))


def test_max_unpool_repeated_index_takes_the_last_element():
    # torch gives no rule here (its cuda kernel lets the writes race, and on
    # an H100 torch cuda and torch cpu each kept another element): the last
    # element in the input's order wins, run after run
    x = torch.tensor([[[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]]], device="cuda")
    idx = torch.tensor([[[[0, 3], [0, 3]], [[2, 2], [1, 2]]]], device="cuda")
    want = torch.tensor([[[[3.0, 0.0], [0.0, 4.0]], [[0.0, 7.0], [8.0, 0.0]]]])
    for _ in range(3):
        got = call("max_unpool2d", borrow(x), borrow(idx), [2, 2])
        assert got[0].sizes == [1, 2, 2, 2] and got[0].strides == [8, 4, 2, 1]
        assert torch.equal(to_torch(got[0]), want)


@pytest.mark.parametrize("bad", [16, -1, 1 << 40])
def test_max_unpool_refuses_an_index_outside_the_output(bad):
    x = torch.randn(1, 2, 2, 2, device="cuda")
    idx = torch.tensor([[[[0, 5], [7, 9]], [[1, 2], [3, 4]]]], device="cuda")
    idx[0, 1, 1, 0] = bad
    idx[0, 1, 1, 1] = 99  # a later bad one: the first is reported
    with pytest.raises(ShimError, match=rf"Found an invalid max index: {bad} \(output volumes "
                                        r"are of size 4x4\)"):
        call("max_unpool2d", borrow(x), borrow(idx), [4, 4])
    v = torch.randn(1, 1, 2, 2, 2, device="cuda")
    vidx = torch.zeros(1, 1, 2, 2, 2, dtype=torch.int64, device="cuda")
    vidx[0, 0, 1, 1, 1] = bad
    with pytest.raises(ShimError, match=rf"invalid max index: {bad} \(output volumes are of "
                                        r"size 2x2x2\)"):
        call("max_unpool3d", borrow(v), borrow(vidx), [2, 2, 2], [1, 1, 1], [0, 0, 0])
    # the device is still usable afterwards
    idx[0, 1, 1] = torch.tensor([10, 11], device="cuda")
    check(call("max_unpool2d", borrow(x), borrow(idx), [4, 4]), A.max_unpool2d(x, idx, [4, 4]))


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8])
def test_integer_inputs_are_refused(dtype):
    x = torch.ones(1, 2, 4, 4, dtype=dtype, device="cuda")
    for op, args in [("max_pool2d_with_indices", ([2], [], [0], [1], 0)),
                     ("avg_pool2d", ([2], [], [0], 0, 1, None)),
                     ("adaptive_max_pool2d", ([2, 2],)), ("_adaptive_avg_pool2d", ([2, 2],))]:
        with pytest.raises(ShimError, match="is not supported"):
            call(op, borrow(x), *args)
    idx = torch.zeros(1, 2, 4, 4, dtype=torch.int64, device="cuda")
    with pytest.raises(ShimError, match="is not supported"):
        call("max_unpool2d", borrow(x), borrow(idx), [4, 4])


def _compiled(module, args, name):
    from aotishim import export

    module = module.to("cuda")
    args = tuple(a.to("cuda") for a in args)
    so = export.compile_cached(module, args, cuda_models.cache_dir(), name=name, device="cuda")
    with torch.no_grad():
        want = module(*args)
    with aotishim.load(so, device="cuda") as model:
        got = model.run(*[a.cpu().numpy() for a in args])
    assert model.leaks == []
    return got, (want,) if isinstance(want, torch.Tensor) else want


def test_compiled_cuda_pooling_models_match_eager():
    g = torch.Generator().manual_seed(0)
    x, v = torch.randn(2, 3, 17, 19, generator=g), torch.randn(1, 2, 9, 10, 11, generator=g)
    got, want = _compiled(op_models.Pooling2d(), (x, v), "cuda_pooling2d")
    for a, b in zip(got, want):
        torch.testing.assert_close(torch.from_numpy(a), b.cpu(), rtol=1e-5, atol=1e-6)
    got, want = _compiled(op_models.AdaptivePool3d(), (torch.randn(2, 3, 7, 9, 11, generator=g),),
                          "cuda_adaptive_pool3d")
    for a, b in zip(got, want):
        torch.testing.assert_close(torch.from_numpy(a), b.cpu(), rtol=1e-5, atol=1e-6)
