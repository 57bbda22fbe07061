"""Small torch models for the ``demo`` command and the tests (needs torch).

Each entry builds a module with fixed weights (seeded) and example inputs,
so a model compiled once can be cached and compared with eager later.
Together they reach the shims real models use: addmm (linear), mm, bmm,
views at storage offsets (chunk), reductions and pointwise kernels.
Real architectures (torchvision, transformers, torch.nn layers) are in
:mod:`aotishim.zoo.real`.
"""

from __future__ import annotations

from typing import Callable

import torch
from torch import nn

__all__ = ["MODELS", "build", "build_seeded"]


class MLP(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(8, 32)
        self.fc2 = nn.Linear(32, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc2(torch.relu(self.fc1(x)))


class LinearChunkLastDim(nn.Module):
    """A linear 7->16, split in two along the last dim; the second half (a
    view at storage offset 8) feeds a second linear."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(7, 16)
        self.fc2 = nn.Linear(8, 5)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        first, second = self.fc1(x).chunk(2, dim=-1)
        return self.fc2(second), first


class LinearChunkFirstDim(nn.Module):
    """As LinearChunkLastDim, split along the first dim (offset 6 rows)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(7, 16)
        self.fc2 = nn.Linear(16, 5)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        first, second = self.fc1(x).chunk(2, dim=0)
        return self.fc2(second), first


class ResidualNorm(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(12)
        self.fc = nn.Linear(12, 12)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc(self.norm(x))


class BatchedMatmul(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.randn(3, 8, 5))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(torch.bmm(x, self.weight))


class SoftmaxHead(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(6, 10, bias=False)
        self.scale = nn.Parameter(torch.rand(10) + 0.5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(self.proj(x) * self.scale, dim=-1)


# name -> (module class, example input shapes)
_SPECS: dict[str, tuple[Callable[[], nn.Module], list[tuple[int, ...]]]] = {
    "mlp": (MLP, [(5, 8)]),
    "linear_chunk_last_dim": (LinearChunkLastDim, [(12, 7)]),
    "linear_chunk_first_dim": (LinearChunkFirstDim, [(12, 7)]),
    "residual_norm": (ResidualNorm, [(4, 12)]),
    "batched_matmul": (BatchedMatmul, [(3, 4, 8)]),
    "softmax_head": (SoftmaxHead, [(5, 6)]),
}
MODELS: tuple[str, ...] = tuple(_SPECS)


def build(name: str, dtype: torch.dtype = torch.float32,
          seed: int = 0) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """The module ``name`` (eval mode, fixed weights) and example inputs."""
    if name not in _SPECS:
        raise KeyError(f"unknown model {name!r}; choose from {', '.join(MODELS)}")
    factory, shapes = _SPECS[name]
    return build_seeded(factory, shapes, dtype, seed)


def build_seeded(factory: Callable[[], nn.Module], shapes: list[tuple[int, ...]],
                 dtype: torch.dtype = torch.float32,
                 seed: int = 0) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """``factory()`` in eval mode and random inputs of ``shapes``, both in
    ``dtype`` and drawn from ``seed`` (torch's global generator is restored)."""
    generator_state = torch.random.get_rng_state()
    try:
        torch.manual_seed(seed)
        module = factory().eval().to(dtype)
        inputs = tuple(torch.randn(*s).to(dtype) for s in shapes)
    finally:
        torch.random.set_rng_state(generator_state)
    return module, inputs
