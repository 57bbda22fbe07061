"""Corrections for decompositions of the installed torch that compile wrong
programs, applied only while :mod:`aotishim.export` compiles, and only where
a probe shows the installed torch has the defect (a fixed torch is left
alone).

``lstm_hidden_shape``: in torch before the fix of pytorch/pytorch#151200,
the generic LSTM decomposition (used on cuda and mps, and on the cpu when
oneDNN is off) returns each layer's final (h, c) with the extra leading
step dimension it adds while iterating, so a compiled ``nn.LSTM`` returns
``h_n``/``c_n`` of shape (layers, 1, batch, hidden) where eager returns
(layers, batch, hidden). The values are right; the shape is not.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

import torch

__all__ = ["applied", "torch_fixes"]


def _lstm_layer_keeps_step_dim() -> bool:
    """Does torch's one-layer LSTM decomposition return hidden states with
    the step dimension it added (batch 2: (1, 2, 1) instead of (2, 1))?"""
    from torch._decomp import decompositions

    layer = getattr(decompositions, "one_layer_lstm", None)
    if layer is None:
        return False
    batch, hidden = 2, 1
    inp = torch.zeros(3, batch, 1)  # (steps, batch, input)
    h0 = torch.zeros(batch, hidden)
    params = [torch.zeros(4 * hidden, 1), torch.zeros(4 * hidden, hidden)]
    try:
        with torch.no_grad():
            _, (h, c) = layer(inp, (h0, h0.clone()), params, False)
    except Exception:  # noqa: BLE001 - another signature: not the torch this fixes
        return False
    return tuple(h.shape) == (1, batch, hidden) and tuple(c.shape) == (1, batch, hidden)


def _lstm_layer_without_step_dim(layer):
    def fixed(inp, hidden, params, has_biases, reverse=False):
        out, (h, c) = layer(inp, hidden, params, has_biases, reverse=reverse)
        # The decomposition's own temporary step dim, always of size 1.
        return out, (h.squeeze(0) if h.dim() == 3 else h, c.squeeze(0) if c.dim() == 3 else c)

    return fixed


def _patch_lstm_layer():
    from torch._decomp import decompositions

    original = decompositions.one_layer_lstm
    decompositions.one_layer_lstm = _lstm_layer_without_step_dim(original)

    def undo():
        decompositions.one_layer_lstm = original

    return undo


# name -> (probe: does the installed torch need it, patch: applies it, returns its undo)
_FIXES = {"lstm_hidden_shape": (_lstm_layer_keeps_step_dim, _patch_lstm_layer)}
_needed: dict[str, bool] = {}


def applied() -> list[str]:
    """The fixes the installed torch needs (probed once per process)."""
    for name, (probe, _) in _FIXES.items():
        if name not in _needed:
            _needed[name] = probe()
    return [name for name in _FIXES if _needed[name]]


@contextlib.contextmanager
def torch_fixes() -> Iterator[list[str]]:
    """Apply the fixes the installed torch needs for the duration; yields
    their names."""
    names = applied()
    undo = [_FIXES[name][1]() for name in names]
    try:
        yield names
    finally:
        for u in reversed(undo):
            u()
