"""What the OpInfo comparison (tests/test_opinfo.py) cannot check for the
misc ops: resize_, resize_as_ and set_ change the tensor behind a handle (and
a storage other handles share), compiled models that fall back to
index_reduce, segment_reduce and histogram_bin_ct against eager, and the ops
aotishim declines: a model needing one fails at load naming it and why."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import aotishim
from aotishim import shim
from aotishim._core import ShimError
from test_model_errors import fake_model, needs_cc
from torch_views import to_shim, to_torch


def _info(t):
    return shim.get(t, "sizes"), shim.get(t, "strides"), shim.get(t, "storage_offset")


# ---------------------------------------------------------------- resize_ / set_


def test_resize_grows_in_place_and_views_see_the_grown_storage():
    base = to_shim(torch.arange(6, dtype=torch.float32))
    view = shim.reinterpret_tensor(base, [3], [1], 2)  # elements 2, 3, 4
    try:
        shim.call_op("resize_", base, [4, 5], None, entry="cpu")
        assert _info(base) == ([4, 5], [5, 1], 0)
        assert shim.get(base, "storage_size") >= 20 * 4
        got = to_torch(base).flatten()
        assert torch.equal(got[:6], torch.arange(6, dtype=torch.float32))  # old bytes kept
        # the view shares the grown storage: a write through base reaches it
        shim.call_op("fill__Scalar", base, 7.0, entry="cpu")
        assert torch.equal(to_torch(view), torch.full((3,), 7.0))
        assert shim.get(view, "data_ptr") == shim.get(base, "data_ptr") + 2 * 4
    finally:
        shim.delete(view)
        shim.delete(base)


def test_resize_same_sizes_keeps_strides_and_memory_format_restrides():
    t = to_shim(torch.zeros(3, 4).t())  # (4, 3) with strides (1, 4)
    try:
        shim.call_op("resize_", t, [4, 3], None, entry="cpu")
        assert shim.get(t, "strides") == [1, 4]  # torch: same sizes change nothing
        shim.call_op("resize_", t, [4, 3], 0, entry="cpu")  # contiguous_format
        assert shim.get(t, "strides") == [3, 1]
        shim.call_op("resize_", t, [2, 3, 4, 5], 2, entry="cpu")  # channels_last
        assert shim.get(t, "strides") == list(torch.empty(2, 3, 4, 5).to(
            memory_format=torch.channels_last).stride())
    finally:
        shim.delete(t)


def test_resize_errors():
    t = to_shim(torch.zeros(3))
    borrowed = shim.from_numpy(np.zeros(3, np.float32))
    try:
        with pytest.raises(ShimError, match="negative dimension -1"):
            shim.call_op("resize_", t, [-1], None, entry="cpu")
        with pytest.raises(ShimError, match="not resizable"):
            shim.call_op("resize_", borrowed, [10], None, entry="cpu")
        assert shim.get(borrowed, "sizes") == [3]  # left as it was
        shim.call_op("resize_", borrowed, [2], None, entry="cpu")  # shrinking needs no memory
        assert shim.get(borrowed, "sizes") == [2]
        with pytest.raises(ShimError, match="rank 4"):
            shim.call_op("resize_", t, [3], 2, entry="cpu")
    finally:
        shim.delete(borrowed)
        shim.delete(t)


@pytest.mark.parametrize("fmt", [None, 0, 1, 2])
def test_resize_as_matches_torch(fmt):
    formats = {0: torch.contiguous_format, 1: torch.preserve_format, 2: torch.channels_last}
    template = torch.zeros(2, 3, 4, 5).to(memory_format=torch.channels_last)
    want = torch.zeros(7)
    kw = {} if fmt is None else {"memory_format": formats[fmt]}
    want.resize_as_(template, **kw)
    t, tmpl = to_shim(torch.zeros(7)), to_shim(template)
    try:
        shim.call_op("resize_as_", t, tmpl, fmt, entry="cpu")
        assert _info(t)[:2] == (list(want.shape), list(want.stride()))
    finally:
        shim.delete(t)
        shim.delete(tmpl)


def test_resize_on_opinfo_samples_matches_torch():
    from torch.testing._internal.common_methods_invocations import op_db

    op = next(o for o in op_db if o.name == "resize_")
    ran = 0
    for dtype in (torch.float32, torch.int64, torch.bool, torch.complex64):
        for s in op.sample_inputs("cpu", dtype):
            want = s.input.clone().resize_(s.args[0])
            t = to_shim(s.input)
            try:
                shim.call_op("resize_", t, list(s.args[0]), None, entry="cpu")
                assert _info(t)[:2] == (list(want.shape), list(want.stride()))
                n = min(want.numel(), s.input.numel())
                assert torch.equal(to_torch(t).flatten()[:n], s.input.flatten()[:n])
                ran += 1
            finally:
                shim.delete(t)
    assert ran > 0


def test_set_makes_the_handle_a_view_of_source_and_the_old_storage_lives_on():
    a = to_shim(torch.arange(4, dtype=torch.float32))
    a_view = shim.reinterpret_tensor(a, [2], [1], 1)
    src = to_shim(torch.arange(12, dtype=torch.float32).reshape(3, 4))
    src_view = shim.reinterpret_tensor(src, [2, 2], [1, 4], 5)
    try:
        shim.call_op("set__source_Tensor", a, src_view, entry="cpu")
        assert _info(a) == ([2, 2], [1, 4], 5)
        assert shim.get(a, "data_ptr") == shim.get(src_view, "data_ptr")
        assert torch.equal(to_torch(a), torch.tensor([[5.0, 9.0], [6.0, 10.0]]))
        # a's old storage stays alive and unchanged for the view still on it
        assert torch.equal(to_torch(a_view), torch.tensor([1.0, 2.0]))
        with pytest.raises(ShimError, match="Could not set tensor of type"):
            shim.call_op("set__source_Tensor", a, to_shim(torch.zeros(2, dtype=torch.float64)),
                         entry="cpu")
    finally:
        for t in (a, a_view, src, src_view):
            shim.delete(t)


# ---------------------------------------------------------------- compiled models


class IndexReduceAmax(torch.nn.Module):
    def forward(self, x, idx, src):
        return x.index_reduce(0, idx, src, "amax", include_self=False)


class SegmentSum(torch.nn.Module):
    def forward(self, data, lengths):
        return torch.segment_reduce(data, "mean", lengths=lengths, axis=0)


class WeightedHistogram(torch.nn.Module):
    def forward(self, x, w):
        hist, edges = torch.histogram(x, bins=5, range=(0.0, 1.0), weight=w)
        return hist, edges


def test_compiled_histogram_matches_eager(model_cache):
    from op_models import check_model

    g = torch.Generator().manual_seed(3)
    args = (torch.rand(50, generator=g) * 1.2 - 0.1, torch.rand(50, generator=g))
    check_model(model_cache, "op_histogram_weighted", WeightedHistogram(), args)


def test_compiled_index_reduce_matches_eager(model_cache):
    from op_models import check_model

    g = torch.Generator().manual_seed(1)
    args = (torch.randn(6, 3, generator=g), torch.tensor([0, 2, 2, 5]),
            torch.randn(4, 3, generator=g))
    check_model(model_cache, "op_index_reduce_amax", IndexReduceAmax(), args, rtol=0, atol=0)


def test_compiled_segment_reduce_matches_eager(model_cache):
    from op_models import check_model

    g = torch.Generator().manual_seed(2)
    args = (torch.randn(6, 3, generator=g), torch.tensor([2, 3, 1]))
    check_model(model_cache, "op_segment_reduce_mean", SegmentSum(), args)


# ---------------------------------------------------------------- declined ops


DECLINED = {
    "aoti_torch_cpu__fused_moving_avg_obs_fq_helper": "quantisation-aware training",
    "aoti_torch_cpu__fused_moving_avg_obs_fq_helper_functional": "quantisation-aware training",
    "aoti_torch_cpu__to_sparse": "sparse tensor",
    "aoti_torch_cpu_to_sparse": "sparse tensor",
    "aoti_torch_cuda__scaled_dot_product_fused_attention_overrideable": "out-of-tree backends",
}


@needs_cc
@pytest.mark.parametrize("shim_name", sorted(DECLINED))
def test_model_needing_a_declined_op_is_refused_naming_it_and_why(tmp_path, shim_name):
    so = fake_model(tmp_path, "declined", [shim_name, "aoti_torch_empty_strided"])
    with pytest.raises(aotishim.ModelError) as info:
        aotishim.load(so)
    message = str(info.value)
    assert f"{shim_name} is not supported: " in message
    assert DECLINED[shim_name] in message


@needs_cc
def test_declined_and_unknown_shims_together(tmp_path):
    so = fake_model(tmp_path, "both", ["aoti_torch_cpu_to_sparse", "aoti_torch_no_such_shim"])
    with pytest.raises(aotishim.ModelError) as info:
        aotishim.load(so)
    message = str(info.value)
    assert "2 shim function(s) that aotishim does not provide" in message
    assert "aoti_torch_no_such_shim" in message
    assert "aoti_torch_cpu_to_sparse is not supported: it makes a sparse tensor" in message
    assert "aoti_torch_no_such_shim is not supported" not in message
