"""Models for the runner tests, compiled once per cache and compared with eager.

The six seed models come from :mod:`aotishim.zoo` (shared with ``demo``);
the rest exercise output-handle corner cases. Everything is compiled with
:func:`aotishim.export.compile_cached`, so a rerun with the same torch
version and sources loads from the cache instead of compiling.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import ml_dtypes
import numpy as np
import torch
from torch import nn

from aotishim import export, zoo

SEED_MODELS = zoo.MODELS


class RepeatedOutput(nn.Module):
    """Returns one tensor in slots 0 and 2 (AOTInductor: output_handles[2] = output_handles[0])."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(6, 4)

    def forward(self, x: torch.Tensor):
        y = self.fc(x)
        return y.detach(), x + 1, y.detach()


class ConstantOutput(nn.Module):
    """Returns its own parameter: deleting that output must not free the weight."""

    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(3, 5))

    def forward(self, x: torch.Tensor):
        return self.weight, x * self.weight


class AliasInput(nn.Module):
    """Returns its input unchanged beside a computed output."""

    def forward(self, x: torch.Tensor):
        return x, torch.sin(x) * 2


class TwoInputs(nn.Module):
    """Two inputs of one shape (a caller may pass one tensor for both)."""

    def forward(self, x: torch.Tensor, y: torch.Tensor):
        return x * 2 + y, x - y


class WideElementwise(nn.Module):
    """Large enough that Inductor splits its loop over OpenMP threads."""

    def forward(self, x: torch.Tensor):
        return torch.sin(x) * 3 + torch.cos(x)


_EXTRA = {
    "repeated_output": (RepeatedOutput, [(3, 6)]),
    "constant_output": (ConstantOutput, [(3, 5)]),
    "alias_input": (AliasInput, [(4, 4)]),
    "two_inputs": (TwoInputs, [(4, 5), (4, 5)]),
    "wide_elementwise": (WideElementwise, [(256, 4096)]),
}


def to_numpy(t: torch.Tensor) -> np.ndarray:
    t = t.detach().cpu().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


@dataclass
class Compiled:
    """A compiled model with its inputs and eager outputs (as numpy)."""

    name: str
    so: Path
    inputs: tuple[np.ndarray, ...]
    expected: tuple[np.ndarray, ...]
    dtype: str

    def check(self, outputs, *, rtol: float | None = None, atol: float | None = None) -> float:
        """Asserts outputs match eager; returns the max abs error."""
        if rtol is None:
            rtol, atol = (2e-2, 2e-2) if self.dtype == "bfloat16" else (1e-5, 1e-5)
        assert len(outputs) == len(self.expected), (len(outputs), len(self.expected))
        worst = 0.0
        for i, (got, want) in enumerate(zip(outputs, self.expected)):
            assert got.shape == want.shape, (self.name, i, got.shape, want.shape)
            assert got.dtype == want.dtype, (self.name, i, got.dtype, want.dtype)
            g, w = got.astype(np.float64), want.astype(np.float64)
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=f"{self.name} output {i}")
            worst = max(worst, float(np.max(np.abs(g - w))) if g.size else 0.0)
        return worst


def build(name: str, dtype: torch.dtype = torch.float32) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    if name in _EXTRA:
        factory, shapes = _EXTRA[name]
        return zoo.build_seeded(factory, shapes, dtype, seed=1)
    return zoo.build(name, dtype)


def compile_model(name: str, cache_dir: Path, dtype: torch.dtype = torch.float32) -> Compiled:
    module, inputs = build(name, dtype)
    suffix = "" if dtype == torch.float32 else "_" + str(dtype).removeprefix("torch.")
    so = export.compile_cached(module, inputs, cache_dir, name=name + suffix)
    with torch.no_grad():
        expected = module(*inputs)
    if isinstance(expected, torch.Tensor):
        expected = (expected,)
    return Compiled(name + suffix, so, tuple(to_numpy(x) for x in inputs),
                    tuple(to_numpy(e) for e in expected), str(dtype).removeprefix("torch."))
