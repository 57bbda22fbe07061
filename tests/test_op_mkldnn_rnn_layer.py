"""aoti_torch_cpu_mkldnn_rnn_layer (one LSTM layer and direction) against
torch's own op, and compiled nn.LSTM models (batch_first both ways,
bidirectional, 2 layers) against eager."""

from __future__ import annotations

import pytest
import torch

from aotishim import shim
from aotishim._core import ShimError
from torch_views import to_shim, to_torch

MODE_LSTM = 2


def layer_args(T=5, B=3, I=4, H=6, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    r = lambda *s: torch.randn(*s, generator=g).to(dtype)  # noqa: E731
    return dict(x=r(T, B, I), w_ih=r(4 * H, I), w_hh=r(4 * H, H), b_ih=r(4 * H), b_hh=r(4 * H),
                hx=r(1, B, H), cx=r(1, B, H), H=H)


def call(a, reverse=False, has_biases=True, batch_first=False, mode=MODE_LSTM, batch_sizes=(),
         entry="cpu", views=to_shim):
    outs = shim.call_op("mkldnn_rnn_layer", views(a["x"]), views(a["w_ih"]), views(a["w_hh"]),
                        views(a["b_ih"]), views(a["b_hh"]), views(a["hx"]), views(a["cx"]),
                        int(reverse), list(batch_sizes), mode, a["H"], 1, int(has_biases), 0,
                        int(batch_first), 0, entry=entry)
    result = [to_torch(t) for t in outs]
    shapes = [t.sizes for t in outs]
    for t in outs:
        shim.delete(t)
    return result, shapes


def eager(a, reverse=False, has_biases=True):
    return torch.ops.aten.mkldnn_rnn_layer(a["x"], a["w_ih"], a["w_hh"], a["b_ih"], a["b_hh"], a["hx"],
                                           a["cx"], reverse, [], MODE_LSTM, a["H"], 1, has_biases,
                                           False, False, False)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("has_biases", [True, False])
def test_lstm_layer_matches_torch(reverse, has_biases):
    a = layer_args()
    (out, hy, cy, ws), shapes = call(a, reverse, has_biases)
    want = eager(a, reverse, has_biases)
    assert shapes[:3] == [list(want[0].shape), list(want[1].shape), list(want[2].shape)]
    assert shapes[3] == [1]  # the workspace placeholder AOTInductor's code declares
    for got, w in zip((out, hy, cy), want[:3]):
        torch.testing.assert_close(got, w, rtol=1e-5, atol=1e-5)


def test_lstm_layer_strided_inputs():
    """Inputs as views: a batch_first tensor transposed to time-major, weights at offsets."""
    a = layer_args(T=4, B=2, I=3, H=5, seed=1)
    want = eager(a)
    strided = dict(a)
    strided["x"] = a["x"].transpose(0, 1).contiguous().transpose(0, 1)
    strided["w_ih"] = torch.cat([a["w_ih"], a["w_ih"]], 1)[:, a["w_ih"].shape[1]:]
    strided["w_hh"] = a["w_hh"].t().contiguous().t()
    strided["hx"] = torch.cat([a["hx"], a["hx"]], 0)[1:]
    (out, hy, cy, _), _ = call(strided)
    for got, w in zip((out, hy, cy), want[:3]):
        torch.testing.assert_close(got, w, rtol=1e-5, atol=1e-5)


def test_lstm_layer_bfloat16():
    # torch's own bfloat16 layer needs CPU bfloat16 instructions this machine
    # may lack: compare with its float32 layer on the same (bfloat16) values.
    a = layer_args(dtype=torch.bfloat16, seed=2)
    (out, hy, cy, _), _ = call(a)
    want = eager({k: v.float() if isinstance(v, torch.Tensor) else v for k, v in a.items()})
    for got, w in zip((out, hy, cy), want[:3]):
        assert got.dtype == torch.bfloat16
        torch.testing.assert_close(got.float(), w.float(), rtol=2e-2, atol=2e-2)


def test_lstm_layer_device_generic_entry():
    a = layer_args(seed=3)
    (out, _, _, _), _ = call(a, entry=None)
    torch.testing.assert_close(out, eager(a)[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kw, message", [
    (dict(mode=3), "only LSTM layers"),
    (dict(batch_sizes=[3, 3]), "packed sequences"),
    (dict(batch_first=True), "batch_first"),
])
def test_lstm_layer_unsupported_arguments(kw, message):
    with pytest.raises(ShimError, match=message):
        call(layer_args(), **kw)


def test_lstm_layer_shape_errors():
    a = layer_args()
    a["w_hh"] = a["w_hh"][:, :5]
    with pytest.raises(ShimError, match="weight1 \\(w_hh\\) has sizes"):
        call(a)
    a = layer_args()
    a["hx"] = torch.zeros(1, 2, 6)
    with pytest.raises(ShimError, match="hx_ has sizes"):
        call(a)


@pytest.mark.parametrize("batch_first, bidirectional, shape", [
    (True, False, (2, 10, 32)),   # the zoo's nn_lstm
    (False, True, (7, 3, 16)),    # bidirectional, 2 layers, time-major
    (True, True, (3, 7, 32)),
])
def test_compiled_lstm_matches_eager(model_cache, batch_first, bidirectional, shape):
    from op_models import Lstm, check_model

    torch.manual_seed(0)
    module = Lstm(batch_first, bidirectional)
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(1))
    name = f"op_lstm_bf{int(batch_first)}_bi{int(bidirectional)}"
    check_model(model_cache, name, module, (x,), rtol=1e-4, atol=1e-5)
