"""aotishim.export's corrections of torch decompositions that compile wrong
programs (aotishim/_torch_fixes.py). The installed torch may already be
fixed, so its defect is reproduced here by wrapping its own decomposition the
way the old one behaved; nothing here compiles a model."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from torch._decomp import decompositions  # noqa: E402

from aotishim import _torch_fixes  # noqa: E402


@pytest.fixture
def lstm_layer_as_old_torch(monkeypatch):
    """torch's one-layer LSTM decomposition as torch had it before
    pytorch/pytorch#151200 was fixed: the final (h, c) keep the leading step
    dimension, (1, batch, hidden)."""
    current = decompositions.one_layer_lstm

    def old(inp, hidden, params, has_biases, reverse=False):
        out, (h, c) = current(inp, hidden, params, has_biases, reverse=reverse)
        keep = (lambda t: t.unsqueeze(0)) if h.dim() == 2 and h.shape[0] > 1 else (lambda t: t)
        return out, (keep(h), keep(c))

    monkeypatch.setattr(decompositions, "one_layer_lstm", old)
    monkeypatch.setattr(_torch_fixes, "_needed", {})  # probe this "torch" afresh
    yield old


def _lstm_program():
    torch.manual_seed(0)
    module = torch.nn.LSTM(8, 16, num_layers=2, batch_first=True).eval()
    x = torch.randn(3, 5, 8)
    ep = torch.export.export(module, (x,))
    return module, x, ep


def _decomposed_outputs(ep, x):
    # The generic decomposition, the one cuda and mps get (on the cpu oneDNN's
    # takes over unless it is off).
    with torch.backends.mkldnn.flags(enabled=False), torch.no_grad():
        out, (h, c) = ep.run_decompositions().module()(x)
    return out, h, c


def test_the_probe_agrees_with_the_decomposition(monkeypatch):
    """On the installed torch, whichever it is: the fix is applied exactly
    when a real LSTM program decomposes to final states of the wrong shape."""
    monkeypatch.setattr(_torch_fixes, "_needed", {})
    module, x, ep = _lstm_program()
    _, h, _ = _decomposed_outputs(ep, x)
    assert (_torch_fixes.applied() == ["lstm_hidden_shape"]) == (h.dim() == 4)


def test_the_probe_finds_the_old_decomposition(lstm_layer_as_old_torch):
    assert _torch_fixes.applied() == ["lstm_hidden_shape"]


def test_lstm_final_states_get_eagers_shape_and_values(lstm_layer_as_old_torch):
    module, x, ep = _lstm_program()
    with torch.no_grad():
        want_out, (want_h, want_c) = module(x)
    # Without the fix the program's h_n/c_n have the extra dim (what the
    # compiled model returned on cuda with torch 2.11).
    _, h, c = _decomposed_outputs(ep, x)
    assert tuple(h.shape) == tuple(c.shape) == (2, 1, 3, 16)
    with _torch_fixes.torch_fixes() as names:
        assert names == ["lstm_hidden_shape"]
        out, h, c = _decomposed_outputs(ep, x)
    assert decompositions.one_layer_lstm is lstm_layer_as_old_torch  # undone on exit
    assert tuple(h.shape) == tuple(want_h.shape) == (2, 3, 16)
    torch.testing.assert_close(out, want_out, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(h, want_h, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(c, want_c, rtol=1e-5, atol=1e-5)


def test_batch_of_one_is_left_alone(lstm_layer_as_old_torch):
    """With batch 1 the old decomposition's squeeze happened to give the
    right shape; the fix must not take another dim away."""
    torch.manual_seed(0)
    module = torch.nn.LSTM(4, 6).eval()
    x = torch.randn(5, 1, 4)
    ep = torch.export.export(module, (x,))
    with _torch_fixes.torch_fixes():
        out, h, c = _decomposed_outputs(ep, x)
    with torch.no_grad():
        want_out, (want_h, _) = module(x)
    assert tuple(h.shape) == tuple(want_h.shape) == (1, 1, 6)
    torch.testing.assert_close(h, want_h, rtol=1e-5, atol=1e-5)
