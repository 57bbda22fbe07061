"""Models that call torch.library custom ops (reached through the proxy
executor), shared by tests/test_custom_ops.py and the native test."""

from __future__ import annotations

from typing import List, Optional

import torch


@torch.library.custom_op("aotishim_test::scale_shift", mutates_args=())
def scale_shift(x: torch.Tensor, y: torch.Tensor, alpha: float, n: int, dims: List[int],
                bias: Optional[torch.Tensor] = None, negate: bool = False) -> torch.Tensor:
    out = x * alpha + y.flip(dims) + n
    if bias is not None:
        out = out + bias
    return -out if negate else out


@scale_shift.register_fake
def _(x, y, alpha, n, dims, bias=None, negate=False):
    return torch.empty_like(x)


@torch.library.custom_op("aotishim_test::split_stats", mutates_args=())
def split_stats(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    return x + 1, x.sum(0).to(torch.float64)


@split_stats.register_fake
def _(x):
    return torch.empty_like(x), x.new_empty(x.shape[1:], dtype=torch.float64)


class CustomOpNet(torch.nn.Module):
    """relu -> scale_shift (float, int, int list, None, keyword bool) ->
    split_stats (two outputs, one float64) -> sin, with a linear layer so the
    custom op's result is read by compiled kernels and a GEMM."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(5, 3)

    def forward(self, x: torch.Tensor, y: torch.Tensor):
        a = scale_shift(x.relu(), y, 2.5, 3, [1], None, negate=True)
        b, stats = split_stats(a)
        return self.fc(b.sin()), stats * 2


def example_inputs() -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    return torch.randn(4, 5, generator=g), torch.randn(4, 5, generator=g)
