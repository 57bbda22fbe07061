"""_embedding_bag / _embedding_bag_forward_only and histc on cuda beyond
their OpInfo samples (tests/test_opinfo.py runs those on cuda too): all four
bag outputs against torch cuda's (shapes, dtypes, values), bad offsets and
indices refused with torch's messages before anything is written, histc's
data range, edges and NaN against torch cuda, and compiled cuda models (a
recommender, MoE expert counts) against eager."""

from __future__ import annotations

import sys
from pathlib import Path

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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import op_models  # noqa: E402

OPS = ["_embedding_bag", "_embedding_bag_forward_only"]


@pytest.fixture(autouse=True)
def no_tf32():
    with tf32_off():
        yield


def bag(op, weight, indices, offsets, mode=0, psw=None, last=0, pad=-1):
    return shim.call_op(op, borrow(weight), borrow(indices), borrow(offsets), 0, mode, 0,
                        None if psw is None else borrow(psw), last, pad, entry="cuda")


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("index_dtype", [torch.int32, torch.int64])
@pytest.mark.parametrize("pad", [-1, 3])
def test_embedding_bag_outputs_are_torch_cudas(op, mode, dtype, index_dtype, pad):
    g = torch.Generator(device="cuda").manual_seed(mode * 10 + pad)
    weight = torch.randn(20, 7, generator=g, device="cuda").to(dtype)
    indices = torch.randint(0, 20, (60,), generator=g, device="cuda").to(index_dtype)
    indices[::7] = 3  # some padding entries when pad == 3
    offsets = torch.tensor([0, 5, 5, 17, 40, 59], device="cuda", dtype=index_dtype)  # an empty bag
    if dtype == torch.float64:
        # refused: on torch's OpInfo samples torch cuda's offset2bag differed
        with pytest.raises(ShimError, match="float64 weights is not supported yet"):
            bag(op, weight, indices, offsets, mode=mode, pad=pad)
        return
    got = bag(op, weight, indices, offsets, mode=mode, pad=pad)
    want = getattr(torch.ops.aten, op)(weight, indices, offsets, False, mode, False, None, False,
                                       pad)
    for i, (g_, w) in enumerate(zip(got, want)):
        assert g_.dtype == str(w.dtype)[6:] and g_.sizes == list(w.shape), (i, g_, w.shape)
    out = to_torch(got[0])
    exact = getattr(torch.ops.aten, op)(weight.double(), indices, offsets, False, mode, False,
                                        None, False, pad)[0].cpu()
    tol = {torch.float32: 1e-6, torch.float64: 1e-12, torch.float16: 1e-3, torch.bfloat16: 8e-3}[dtype]
    torch.testing.assert_close(out.double(), exact, rtol=tol, atol=tol)
    assert torch.equal(to_torch(got[1]), want[1].cpu())  # offset2bag
    assert torch.equal(to_torch(got[2]), want[2].cpu())  # bag_size
    if mode == 2:
        assert torch.equal(to_torch(got[3]), want[3].cpu())  # max_indices, -1 for the empty bag


@pytest.mark.parametrize("op", OPS)
def test_per_sample_weights_include_last_offset_and_strided_inputs(op):
    g = torch.Generator(device="cuda").manual_seed(2)
    weight = torch.randn(30, 9, generator=g, device="cuda").t().contiguous().t()  # column-major
    indices = torch.randint(0, 30, (80,), generator=g, device="cuda")[::2]  # a strided view
    psw = torch.rand(40, generator=g, device="cuda")
    offsets = torch.tensor([0, 4, 11, 25, 40], device="cuda")
    got = bag(op, weight, indices, offsets, mode=0, psw=psw, last=1)
    want = getattr(torch.ops.aten, op)(weight, indices.contiguous(), offsets, False, 0, False, psw,
                                       True, -1)
    assert got[0].sizes == [4, 9] and got[2].sizes == list(want[2].shape)
    torch.testing.assert_close(to_torch(got[0]), want[0].cpu(), rtol=1e-5, atol=1e-6)
    assert torch.equal(to_torch(got[1]), want[1].cpu())
    assert torch.equal(to_torch(got[2])[:4], want[2][:4].cpu())
    assert to_torch(got[2])[4:].eq(0).all()  # past the last bag (torch leaves it unwritten)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("indices,offsets,message", [
    ([1, 2, 3], [1, 2], "offsets\\[0\\] has to be 0"),
    ([1, 2, 3], [0, 2, 1], "offsets must be non-decreasing"),
    ([1, 2, 3], [0, 4], "offsets\\[-1\\] can not be greater than input's length 3"),
    ([1, 10, 3], [0], "index 1 of input takes value 10 which is not in the valid range \\[0, 10\\)"),
    ([1, -1, 3], [0], "takes value -1"),
])
def test_bad_offsets_and_indices_are_refused(op, indices, offsets, message):
    weight = torch.randn(10, 3, device="cuda")
    with pytest.raises(ShimError, match=message):
        bag(op, weight, torch.tensor(indices, device="cuda"), torch.tensor(offsets, device="cuda"))
    # the device is still usable afterwards
    got = bag(op, weight, torch.tensor([1, 2], device="cuda"), torch.tensor([0], device="cuda"))
    torch.testing.assert_close(to_torch(got[0]), (weight[1] + weight[2]).cpu()[None])


def check_histc(x, bins, lo, hi):
    got = shim.call_op("histc", borrow(x), bins, float(lo), float(hi), entry="cuda")
    want = torch.histc(x, bins, lo, hi)
    assert got.sizes == [bins] and got.strides == [1] and got.dtype == str(x.dtype)[6:]
    assert torch.equal(to_torch(got), want.cpu()), (to_torch(got), want)


# (torch cuda 2.11 has no float16/bfloat16 histc to compare with)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_histc_matches_torch_cuda(dtype):
    g = torch.Generator(device="cuda").manual_seed(4)
    x = (torch.randn(100_000, generator=g, device="cuda") * 3).to(dtype)
    check_histc(x, 100, 0, 0)  # the data's own range, reduced on the device
    check_histc(x, 7, -2, 2.5)  # counted per block in shared memory
    check_histc(x, 10_000, -6, 6)  # more bins than shared memory holds: global counters
    check_histc(x.view(100, 1000).t(), 13, -1, 1)  # a transposed view
    check_histc(torch.arange(11, device="cuda", dtype=dtype), 10, 0, 10)  # every edge
    check_histc(torch.full((5,), 3.0, device="cuda", dtype=dtype), 4, 0, 0)  # one value: [2, 4]
    check_histc(torch.zeros(0, device="cuda", dtype=dtype), 5, 0, 0)  # empty: [-1, 1]
    check_histc(torch.tensor([1.0, float("nan"), 2.0], device="cuda", dtype=dtype), 3, 0, 3)


def test_histc_errors():
    with pytest.raises(ShimError, match="is not finite"):  # the data's range holds NaN
        shim.call_op("histc", borrow(torch.tensor([1.0, float("nan")], device="cuda")), 4, 0.0,
                     0.0, entry="cuda")
    with pytest.raises(ShimError, match="is not finite"):
        shim.call_op("histc", borrow(torch.tensor([1.0], device="cuda")), 4, 0.0, float("inf"),
                     entry="cuda")
    with pytest.raises(ShimError, match="must be floating point"):
        shim.call_op("histc", borrow(torch.zeros(3, dtype=torch.int64, device="cuda")), 4, 0.0,
                     1.0, entry="cuda")


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


def test_compiled_cuda_recommender_matches_eager():
    torch.manual_seed(0)
    items = torch.randint(0, 100, (40,))
    offsets = torch.tensor([0, 3, 10, 10, 25, 31])
    users = torch.randint(0, 50, (6, 4))
    got, want = _compiled(op_models.Recommender(), (items, offsets, users), "cuda_recommender")
    np.testing.assert_allclose(got[0], want[0].cpu().numpy(), rtol=1e-5, atol=1e-6)


def test_compiled_cuda_expert_counts_match_eager():
    logits = torch.randn(64, 8, generator=torch.Generator().manual_seed(0))
    got, want = _compiled(op_models.ExpertCounts(), (logits,), "cuda_expert_counts")
    np.testing.assert_array_equal(got[0], want[0].cpu().numpy())
