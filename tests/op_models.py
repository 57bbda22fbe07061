"""Small real models whose compiled code calls the index, sort and recurrent
fallback ops, and one check that runs a model through aotishim.load against
eager. Compiled once into the test-model cache (conftest's model_cache)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn
from torch.nn import functional as F

import aotishim
from aotishim import ModelError, export
from models import to_numpy


class TopkSort(nn.Module):
    def forward(self, x):
        v, i = torch.topk(x, 5, dim=-1)
        s, si = torch.sort(x, dim=-1, descending=True)
        return v, i, s, si, torch.argmax(x, dim=-1)


class SortPermuted(nn.Module):
    """A sort of a permuted view: the generated code checks that sort's
    outputs come back in the view's stride order, as torch gives them."""

    def forward(self, x):
        s, si = torch.sort(x.permute(0, 2, 1), dim=1, stable=True)
        return s * 2, si


class AlibiScores(nn.Module):
    """BLOOM's attention scores: the ALiBi bias plus scaled q k^T in one
    baddbmm (beta 1, alpha 1/sqrt(head_dim))."""

    def forward(self, alibi, q, k):
        scores = torch.baddbmm(alibi, q, k.transpose(1, 2), beta=1.0, alpha=0.125)
        return torch.softmax(scores, dim=-1)


class Int8WeightLinear(nn.Module):
    """A weight-only int8 linear: int8 weights, one scale per output channel."""

    def __init__(self, weight: torch.Tensor, scales: torch.Tensor):
        super().__init__()
        self.register_buffer("weight", weight)
        self.register_buffer("scales", scales)

    def forward(self, x):
        return torch._weight_int8pack_mm(x * 2, self.weight, self.scales) + 1


class ExpertCounts(nn.Module):
    """MoE routing statistics: tokens per expert, from the top-2 choices."""

    def forward(self, logits):
        chosen = torch.topk(logits, 2, dim=-1).indices
        return torch.histc(chosen.float(), bins=logits.shape[-1], min=0,
                           max=logits.shape[-1] - 1)


class Recommender(nn.Module):
    """Pooled sparse features (sum and mean bags) feeding a small MLP."""

    def __init__(self):
        super().__init__()
        self.items = nn.EmbeddingBag(100, 16, mode="sum")
        self.users = nn.EmbeddingBag(50, 16, mode="mean", padding_idx=0)
        self.mlp = nn.Linear(32, 1)

    def forward(self, item_ids, item_offsets, user_ids):
        pooled = torch.cat([self.items(item_ids, item_offsets), self.users(user_ids)], dim=1)
        return torch.sigmoid(self.mlp(pooled))


class AddmvAddbmm(nn.Module):
    """addbmm stays a fallback call (addmv Inductor decomposes itself)."""

    def forward(self, b, w, x, s, b1, b2):
        return torch.addmv(b, w, x, beta=0.5), torch.addbmm(s, b1, b2, alpha=2.0)


class Int8DynamicLinear(nn.Module):
    """Dynamic int8 quantization's core: int8 activations times int8 weights
    into int32, rescaled to float."""

    def __init__(self, weight: torch.Tensor):
        super().__init__()
        self.register_buffer("weight", weight)

    def forward(self, x):
        scale = x.abs().amax() / 127
        q = torch.clamp(torch.round(x / scale), -128, 127).to(torch.int8)
        return torch._int_mm(q, self.weight).float() * scale


class Searchsorted(nn.Module):
    def forward(self, s, v):
        return torch.searchsorted(s, v)


class SearchsortedRight2d(nn.Module):
    """N-D boundaries, side="right", int32 output, through a sorter."""

    def forward(self, s, v):
        order = torch.argsort(s, dim=-1)
        return torch.searchsorted(s, v, side="right", out_int32=True, sorter=order)


class Nonzero(nn.Module):
    def forward(self, x):
        return torch.nonzero(x > 0)


class OrderStatistics(nn.Module):
    """kthvalue, median, nanmedian, mode and the running extrema and
    log-sum-exp, each a fallback call. Where torch may pick any of equal
    elements, the model returns the elements its indices point at."""

    def forward(self, x, q):
        kv, ki = torch.kthvalue(x, 3, dim=1)
        mv, mi = torch.mode(q, dim=-1, keepdim=True)
        cmax, cmaxi = torch.cummax(x, dim=0)
        cmin, cmini = torch.cummin(q, dim=1)
        return (kv, x.gather(1, ki[:, None]), torch.median(x), torch.nanmedian(q.float()),
                mv, q.gather(-1, mi), cmax, cmaxi, cmin, cmini,
                torch.logcumsumexp(x * 4, dim=1))


class IndexFallbacks(nn.Module):
    """The index ops Inductor's CPU code calls as fallbacks: a boolean mask
    select, masked_scatter, bucketize, searchsorted with a number,
    repeat_interleave and nonzero_static."""

    def forward(self, x, src, bounds, repeats):
        picked = x[x > 0.5]
        scattered = x.masked_scatter(x < 0, src)
        buckets = torch.bucketize(x, bounds, right=True)
        where = torch.searchsorted(bounds, 0.25)
        rep = torch.repeat_interleave(repeats)
        fixed = torch.nonzero_static(x > 1.0, size=4, fill_value=-1)
        return picked * 2, scattered, buckets, where, rep, fixed


class AdaptivePool3d(nn.Module):
    """Video-style adaptive pooling: both 3-D adaptive pools stay fallback calls."""

    def forward(self, x):
        avg = F.adaptive_avg_pool3d(x, (2, 3, 4))
        mx, idx = F.adaptive_max_pool3d(x * 2, (3, 2, 5), return_indices=True)
        return avg + 1, mx, idx


class IndexOps(nn.Module):
    def forward(self, x, idx, gidx):
        a = torch.index_select(x, 0, idx)
        b = torch.gather(x, 1, gidx)
        c = torch.zeros_like(x).scatter(1, gidx, b)
        d = torch.zeros(8, 16).scatter_add(0, gidx[:8] % 8, x[:8])
        return a, b, c, d


class ScatterReduceMean(nn.Module):
    """Every reduction with and without self, into a computed buffer."""

    def forward(self, x, idx, src):
        base = x * 2
        return tuple(base.scatter_reduce(0, idx, src, r, include_self=s)
                     for r in ("sum", "prod", "mean", "amax", "amin") for s in (True, False))


class Lstm(nn.Module):
    def __init__(self, batch_first: bool, bidirectional: bool, layers: int = 2):
        super().__init__()
        self.lstm = nn.LSTM(32 if batch_first else 16, 64 if batch_first else 24, num_layers=layers,
                            batch_first=batch_first, bidirectional=bidirectional)

    def forward(self, x):
        out, (h, c) = self.lstm(x)
        return out, h, c


class Pooling2d(nn.Module):
    """Pools Inductor leaves as fallback calls: adaptive pools with sizes that
    do not divide the input, average pools with windows over 25 cells (2-D
    with ceil mode and padding left out of the count, 3-D with a divisor),
    and an adaptive pool of a channels-last buffer, whose output layout the
    generated code relies on."""

    def forward(self, x, v):
        avg = F.adaptive_avg_pool2d(x, (3, 5))
        mx, idx = F.adaptive_max_pool2d(x * 2, (3, 4), return_indices=True)
        big = F.avg_pool2d(x, 7, stride=2, padding=3, ceil_mode=True, count_include_pad=False)
        vol = F.avg_pool3d(v, 3, stride=2, padding=1, divisor_override=7)
        cl = F.adaptive_avg_pool2d(x.contiguous(memory_format=torch.channels_last) + 1, (5, 3))
        return avg + 1, mx, idx, big * 3, vol, cl * 2


class GridSample3d(nn.Module):
    """Volumetric sampling (a spatial transformer's 3-D form): every mode."""

    def forward(self, v, grid):
        a = F.grid_sample(v, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
        b = F.grid_sample(v, grid * 1.5, mode="bilinear", padding_mode="border", align_corners=True)
        c = F.grid_sample(v, grid * 2, mode="nearest", padding_mode="reflection",
                          align_corners=False)
        return a, b, c


class Distances(nn.Module):
    """cdist (both sides at most 25 rows: the direct kernel) and pdist."""

    def forward(self, a, b):
        return torch.cdist(a, b), torch.cdist(a, b, p=1.0), torch.cdist(a, b, p=float("inf")), \
            F.pdist(a[0] * 2), F.pdist(a[1], p=3.0)


class BilinearHead(nn.Module):
    """nn.Bilinear (its _trilinear), batched over two leading dims."""

    def __init__(self):
        super().__init__()
        self.bil = nn.Bilinear(6, 5, 4)

    def forward(self, x1, x2):
        return torch.relu(self.bil(x1, x2))


def check_model(model_cache: Path, name: str, module: nn.Module, args: tuple, *,
                rtol: float = 1e-5, atol: float = 1e-5) -> float:
    """Compile (cached), load, run, compare every output with eager (shape,
    dtype, values) and close with no leaks; returns the max abs error."""
    module = module.eval()
    so = export.compile_cached(module, args, model_cache, name=name)
    with torch.no_grad():
        expected = module(*args)
    if isinstance(expected, torch.Tensor):
        expected = (expected,)
    try:
        model = aotishim.load(so)
    except ModelError as e:
        missing = str(e).rsplit(":", 1)[-1].strip()
        if missing == "aoti_torch_check":  # implemented separately
            pytest.skip(f"{name} also needs aoti_torch_check")
        raise
    worst = 0.0
    try:
        outputs = model.run(*[to_numpy(a) for a in args])
        assert len(outputs) == len(expected)
        for i, (got, want) in enumerate(zip(outputs, expected)):
            want = to_numpy(want)
            assert got.shape == want.shape, (name, i, got.shape, want.shape)
            assert got.dtype == want.dtype, (name, i, got.dtype, want.dtype)
            g, w = got.astype(np.float64), want.astype(np.float64)
            np.testing.assert_allclose(g, w, rtol=rtol, atol=atol, err_msg=f"{name} output {i}")
            worst = max(worst, float(np.max(np.abs(g - w))) if g.size else 0.0)
    finally:
        assert model.close() == []
    return worst
