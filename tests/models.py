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
from torch.export import Dim

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


class SharedBufferWeights(nn.Module):
    """Two layers whose weights are views into one buffer at storage offsets,
    the layout torch gives an RNN's parameters on cuda (flatten_parameters).
    The compiled code reinterprets each weight with offset 0, meaning "where
    the weight starts", not "where the buffer starts"."""

    def __init__(self) -> None:
        super().__init__()
        flat = torch.randn(2 * 8 * 6 + 5)
        # Parameters sharing flat's storage, at offsets 5 and 5 + 48.
        self.w1 = nn.Parameter(flat[5:53].view(8, 6))
        self.w2 = nn.Parameter(flat[53:].view(6, 8))

    def forward(self, x: torch.Tensor):
        return torch.tanh(x @ self.w1.t()) @ self.w2.t()


class TwoInputs(nn.Module):
    """Two inputs of one shape (a caller may pass one tensor for both)."""

    def forward(self, x: torch.Tensor, y: torch.Tensor):
        return x * 2 + y, x - y


class WideElementwise(nn.Module):
    """Large enough that Inductor splits its loop over OpenMP threads."""

    def forward(self, x: torch.Tensor):
        return torch.sin(x) * 3 + torch.cos(x)


class CacheUpdate(nn.Module):
    """Writes its first input in place, as a KV cache is updated: decays it,
    adds the new entries, and returns a reduction of the updated cache."""

    def forward(self, cache: torch.Tensor, new: torch.Tensor):
        cache.mul_(0.5).add_(new)
        return cache.sum(dim=1) * 2


_EXTRA = {
    "shared_buffer_weights": (SharedBufferWeights, [(3, 6)]),
    "repeated_output": (RepeatedOutput, [(3, 6)]),
    "constant_output": (ConstantOutput, [(3, 5)]),
    "alias_input": (AliasInput, [(4, 4)]),
    "two_inputs": (TwoInputs, [(4, 5), (4, 5)]),
    "wide_elementwise": (WideElementwise, [(256, 4096)]),
    "cache_update": (CacheUpdate, [(6, 8), (6, 8)]),
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


# ---- models with dynamic shapes (tests/test_export_dynamic.py) ----

class BnPoolNet(nn.Module):
    """Batch norm, pooling and a linear head over (batch, 4, 8, 8)."""

    def __init__(self) -> None:
        super().__init__()
        self.bn = nn.BatchNorm2d(4)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(4 * 4 * 4, 6)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.flatten(self.pool(torch.relu(self.bn(x))), 1))


class ConvBnPoolNet(nn.Module):
    """A small CNN: convolution, batch norm, pooling, linear head."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(8 * 4 * 4, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(torch.flatten(self.pool(torch.relu(self.bn(self.conv(x)))), 1))


class SequenceNorm(nn.Module):
    """Transformer-style position-wise block over (batch, seq, 16): linear,
    GELU, linear, residual and layer norm (no attention)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(16, 32)
        self.fc2 = nn.Linear(32, 16)
        self.norm = nn.LayerNorm(16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(x + self.fc2(torch.nn.functional.gelu(self.fc1(x))))


def _encoder_layer() -> nn.Module:
    return nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, batch_first=True)


class PairedCat(nn.Module):
    """x (d, 3) and y (2*d, 3), concatenated: a derived dimension."""

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.cat([x * 2, y], dim=0)


class SharedBatch(nn.Module):
    """Two inputs with one batch dimension (one symbol)."""

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return a * 3 + b


class NonZero(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nonzero(x > 0.5)


class MaskedSelect(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.masked_select(x, x > 0.5)


BATCH = Dim("batch", min=1, max=64)
SEQ = Dim("seq", min=1, max=64)
_D = Dim("d", min=2, max=32)

# name -> (module factory, example input shapes, dynamic_shapes for torch.export)
DYNAMIC = {
    "mlp": (zoo.MLP, [(5, 8)], ({0: BATCH},)),
    "bn_pool": (BnPoolNet, [(4, 4, 8, 8)], ({0: BATCH},)),
    "conv_bn_pool": (ConvBnPoolNet, [(4, 3, 8, 8)], ({0: BATCH},)),
    "sequence_norm": (SequenceNorm, [(2, 7, 16)], ({0: Dim("b", min=1, max=8), 1: SEQ},)),
    "encoder_layer": (_encoder_layer, [(2, 7, 16)], ({1: SEQ},)),
    "paired_cat": (PairedCat, [(3, 3), (6, 3)], ({0: _D}, {0: 2 * _D})),
    "shared_batch": (SharedBatch, [(4, 5), (4, 5)], ({0: BATCH}, {0: BATCH})),
    "nonzero": (NonZero, [(16, 8)], None),
    "masked_select": (MaskedSelect, [(16, 8)], None),
}


@dataclass
class CompiledDynamic:
    """A model compiled with dynamic shapes, and its eager module to compare with."""

    name: str
    so: Path
    module: nn.Module

    def eager(self, *arrays: np.ndarray) -> tuple[np.ndarray, ...]:
        with torch.no_grad():
            out = self.module(*(torch.from_numpy(np.ascontiguousarray(a)) for a in arrays))
        return tuple(to_numpy(o) for o in (out if isinstance(out, tuple) else (out,)))


def compile_dynamic(name: str, cache_dir: Path) -> CompiledDynamic:
    factory, shapes, dynamic_shapes = DYNAMIC[name]
    module, inputs = zoo.build_seeded(factory, shapes, seed=2)
    if name.startswith("bn") or name.startswith("conv"):
        # Non-trivial running statistics, so the normalisation is checked too.
        bn = module.bn
        g = torch.Generator().manual_seed(3)
        bn.running_mean.copy_(torch.randn(bn.num_features, generator=g))
        bn.running_var.copy_(torch.rand(bn.num_features, generator=g) + 0.5)
    so = export.compile_cached(module, inputs, cache_dir, name=f"dyn_{name}",
                               dynamic_shapes=dynamic_shapes)
    return CompiledDynamic(name, so, module)
