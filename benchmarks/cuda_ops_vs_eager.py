"""aotishim's cuda fallback ops one by one against torch eager's same op, on
the same device-resident torch tensors: microseconds per call, their ratio
(aotishim / eager; below 1 aotishim is faster) and the largest difference
between the two results. The ops are those where a library (cuBLAS/cuBLASLt,
cuDNN, cuFFT, cuSOLVER, CUB) or a heavy kernel does the work, at model sizes.

Timing, per op and side: CUDA events on torch's current stream (the legacy
default stream) around N back-to-back calls after three warm-up calls, the
median over --batches batches, N chosen so a batch lasts about --batch-ms.
aotishim works on a blocking stream of its own, which CUDA orders with the
legacy default stream, so its work falls between the events.

Included in aotishim's time: the call through shim.call_op (its Python
wrapper and the ctypes conversion of the arguments, which generated code,
calling the same C entry point directly, does not pay), the op's checks and
any synchronisation it makes, allocating the outputs it creates and deleting
their handles after each call (shim.delete), and the kernels or library
calls. Eager's time includes its Python call into torch.ops.aten and the
dispatcher, and its caching allocator. Host time counts only where the host
is the bottleneck: calls to a long kernel queue ahead of the GPU.

Not included: lending the torch tensors to aotishim (shim.from_blob views,
made once per op; the tensors stay alive while the views are used), the
outputs of out= forms (preallocated once, with shim.empty_strided for
aotishim and torch.empty for eager's out= form, as generated code
preallocates them), the first calls (library loading, cuDNN's algorithm
search, cuFFT's plans, cuBLASLt's heuristics) and the correctness check.

Correctness: before timing, one call per side; each compared output's
max |aotishim - eager|, judged against a tolerance of the eager output's
dtype (float32 1e-4, bfloat16 2e-2, float16 2e-3, integers exact; linalg
float32 1e-3) times its scale (max(1, max |eager|)). sort's and topk's
indices are checked through the values they pick, since ties may come in
another order. A mismatch is flagged in its row and the op is still timed;
an op either side refuses, or that fails, is a row saying so.

GPU time (cuda only): the device time of the kernels, copies and fills
one call queues, from torch.profiler (CUPTI) over 10 calls per side. Where
the call time is well above it, the host is the bottleneck.

TF32 is off on both sides (aotishim never uses it); each side uses its own
defaults otherwise (cuDNN: torch's heuristics, aotishim's timed search).

    python benchmarks/cuda_ops_vs_eager.py [--ops mm_out,sort] [--budget-s 100] \\
        [--out ops.md] [--json ops.json] [--chart ops.png]
    python benchmarks/cuda_ops_vs_eager.py --device cpu --small --ops mm_out  # a dry run, no GPU
"""

from __future__ import annotations

import argparse
import faulthandler
import json
import math
import platform
import statistics
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

# Tolerances relative to the eager output's scale, by its dtype; absent: exact.
TOL = {"float32": 1e-4, "complex64": 1e-4, "float64": 1e-10, "complex128": 1e-10,
       "bfloat16": 2e-2, "float16": 2e-3}
LINALG_TOL = 1e-3  # float32 solves: a few roundings times the (small) condition number


@dataclass
class Case:
    ours: Callable[[], object]  # one aotishim call: what shim.call_op returns
    eager: Callable[[], object]  # the same op through torch
    out: object = None  # the preallocated output of an out= form (else ours() creates them)
    pick: tuple = (0,)  # outputs compared, by position in both results
    pairs: Callable | None = None  # or (ours, eager) outputs -> [(ours tensor, eager tensor)]
    tol: float | None = None


class Env:
    """What a case builder needs: torch, random inputs on the device, shim
    views of torch tensors and preallocated outputs, freed by release()."""

    def __init__(self, torch, shim, device: str, shrink: int) -> None:
        self.torch, self.shim, self.device, self.s = torch, shim, device, shrink
        self.shim_device = "cuda:0" if device == "cuda" else "cpu"
        self.gen = torch.Generator(device=device).manual_seed(0)
        self.kept: list = []
        self.handles: list = []

    def call(self, name: str, *args):
        return self.shim.call_op(name, *args, entry=self.device)

    def lend(self, x):
        """A shim view of torch tensor x (same storage, offset, strides). x is
        kept alive until release(): a handle does not own torch's memory, and
        the caching allocator would hand it to the next tensor at once."""
        self.kept.append(x)
        h = self.shim.from_blob(x.untyped_storage().data_ptr(), list(x.shape), list(x.stride()),
                                x.storage_offset(), str(x.dtype).removeprefix("torch."),
                                self.shim_device)
        self.handles.append(h)
        return h

    def empty(self, sizes, dtype: str):
        h = self.shim.empty_strided(list(sizes), None, dtype, self.shim_device)
        self.handles.append(h)
        return h

    def shrunk(self, shape) -> list[int]:
        """shape with its large dimensions divided for --small."""
        return [d // self.s if d > 64 else d for d in shape]

    def randn(self, *shape, dtype="float32"):
        t = self.torch.randn(*shape, generator=self.gen, device=self.device)
        return t.to(getattr(self.torch, dtype))

    def randint(self, lo, hi, shape, dtype="int64"):
        return self.torch.randint(lo, hi, shape, generator=self.gen, device=self.device,
                                  dtype=getattr(self.torch, dtype))

    def release(self) -> str:
        """Frees this op's views and outputs; a failure (a CUDA error left by
        the op) is returned as a note, not raised."""
        handles, self.handles = self.handles, []
        try:
            if self.device == "cuda":  # nothing may still read what is freed here
                self.torch.cuda.synchronize()
            for h in handles:
                self.shim.delete(h)
            return ""
        except Exception as err:  # noqa: BLE001
            return f"release failed: {short(err)}"
        finally:
            self.kept.clear()


# ---- the cases: each builds its inputs once and returns both calls ----

def linear_gemm(e: Env, op: str, dtype: str) -> Case:
    """x @ W^T (+ bias) of an LLM's 4096-wide projection over 2048 tokens."""
    torch = e.torch
    m, k, n = 2048 // e.s, 4096 // e.s, 4096 // e.s
    x, wt = e.randn(m, k, dtype=dtype), e.randn(n, k, dtype=dtype).t()  # nn.Linear's weight
    out, out_t = e.empty([m, n], dtype), torch.empty(m, n, dtype=x.dtype, device=e.device)
    X, WT = e.lend(x), e.lend(wt)
    if op == "mm_out":
        return Case(lambda: e.call("mm_out", out, X, WT), lambda: torch.mm(x, wt, out=out_t), out)
    bias = e.randn(n, dtype=dtype).expand(m, n)  # as generated code passes it: stride 0 rows
    B = e.lend(bias)
    return Case(lambda: e.call("addmm_out", out, B, X, WT, 1.0, 1.0),
                lambda: torch.addmm(bias, x, wt, out=out_t), out)


def batched_gemm(e: Env, op: str, dtype: str) -> Case:
    torch = e.torch
    b, m, k, n = 8, 1024 // e.s, 1024 // e.s, 1024 // e.s
    x1, x2 = e.randn(b, m, k, dtype=dtype), e.randn(b, k, n, dtype=dtype)
    out, out_t = e.empty([b, m, n], dtype), torch.empty(b, m, n, dtype=x1.dtype, device=e.device)
    X1, X2 = e.lend(x1), e.lend(x2)
    if op == "bmm_out":
        return Case(lambda: e.call("bmm_out", out, X1, X2), lambda: torch.bmm(x1, x2, out=out_t),
                    out)
    base = e.randn(b, m, n, dtype=dtype)  # e.g. an attention bias
    S = e.lend(base)
    return Case(lambda: e.call("baddbmm_out", out, S, X1, X2, 1.0, 0.125),
                lambda: torch.baddbmm(base, x1, x2, beta=1.0, alpha=0.125, out=out_t), out)


def int_mm(e: Env) -> Case:
    torch = e.torch
    m, k, n = 2048 // e.s, 4096 // e.s, 4096 // e.s
    a, wt = e.randint(-128, 128, (m, k), "int8"), e.randint(-128, 128, (n, k), "int8").t()
    out, out_t = e.empty([m, n], "int32"), torch.empty(m, n, dtype=torch.int32, device=e.device)
    A, WT = e.lend(a), e.lend(wt)
    return Case(lambda: e.call("_int_mm_out", out, A, WT), lambda: torch._int_mm(a, wt, out=out_t),
                out)


def weight_int8pack_mm(e: Env, m: int) -> Case:
    """Weight-only int8 linear: m tokens (16: decoding, 1024: a prompt)."""
    torch = e.torch
    k, n = 4096 // e.s, 4096 // e.s
    x, w = e.randn(m, k, dtype="bfloat16"), e.randint(-128, 128, (n, k), "int8")
    scales = (torch.rand(n, generator=e.gen, device=e.device) / 64).to(torch.bfloat16)
    X, W, S = e.lend(x), e.lend(w), e.lend(scales)
    return Case(lambda: e.call("_weight_int8pack_mm", X, W, S),
                lambda: torch.ops.aten._weight_int8pack_mm(x, w, scales))


def convolution(e: Env, dtype: str) -> Case:
    """ResNet's 3x3 convolution over 64 channels at 56x56."""
    torch = e.torch
    x, w = e.randn(1, 64, 56, 56, dtype=dtype), e.randn(64, 64, 3, 3, dtype=dtype)
    b = e.randn(64, dtype=dtype)
    X, W, B = e.lend(x), e.lend(w), e.lend(b)
    return Case(lambda: e.call("convolution", X, W, B, [1, 1], [1, 1], [1, 1], 0, [0, 0], 1),
                lambda: torch.ops.aten.convolution(x, w, b, [1, 1], [1, 1], [1, 1], False,
                                                   [0, 0], 1))


def attention(e: Env, variant: str, dtype: str, heads: int, length: int, head_dim: int) -> Case:
    """Causal self-attention, q/k/v as attention modules pass them: (B, L, H, D)
    transposed to (B, H, L, D)."""
    aten = e.torch.ops.aten
    length //= e.s

    def qkv():
        return e.randn(4, length, heads, head_dim, dtype=dtype).transpose(1, 2)

    q, k, v = qkv(), qkv(), qkv()
    Q, K, V = e.lend(q), e.lend(k), e.lend(v)
    op = f"_scaled_dot_product_{variant}_attention"
    if variant == "flash":  # (out, logsumexp, ..., seed, offset, debug mask): compare the first two
        return Case(lambda: e.call(op, Q, K, V, 0.0, 1, 0, None),
                    lambda: aten._scaled_dot_product_flash_attention(q, k, v, 0.0, True, False),
                    pick=(0, 1))
    # efficient, without the logsumexp (as inference calls it)
    return Case(lambda: e.call(op, Q, K, V, None, 0, 0.0, 1, None),
                lambda: aten._scaled_dot_product_efficient_attention(q, k, v, None, False, 0.0,
                                                                     True))


def fft(e: Env, op: str) -> Case:
    """8 signals of 2^16 samples, transformed along their length."""
    torch = e.torch
    n = 65536 // e.s
    if op == "_fft_r2c":
        x = e.randn(8, n)
        X = e.lend(x)
        return Case(lambda: e.call("_fft_r2c", X, [1], 0, 1),
                    lambda: torch.ops.aten._fft_r2c(x, [1], 0, True))
    c = torch.randn(8, n, generator=e.gen, device=e.device, dtype=torch.complex64)
    C = e.lend(c)
    return Case(lambda: e.call("_fft_c2c", C, [1], 0, 1),
                lambda: torch.ops.aten._fft_c2c(c, [1], 0, True))


def picked_values(x):
    """sort/topk: the values, and the values the indices pick (ties may come
    in another order on the two sides, so indices are not compared as such)."""
    return lambda got, want: [(got[0], want[0]), (x.gather(-1, got[1]), want[0])]


def sort(e: Env, shape) -> Case:
    torch = e.torch
    x = e.randn(*e.shrunk(shape))
    X = e.lend(x)
    return Case(lambda: e.call("sort", X, -1, 0), lambda: torch.ops.aten.sort(x, -1, False),
                pairs=picked_values(x))


def topk(e: Env, shape, k: int) -> Case:
    torch = e.torch
    x = e.randn(*e.shrunk(shape))
    X = e.lend(x)
    return Case(lambda: e.call("topk", X, k, -1, 1, 1),
                lambda: torch.ops.aten.topk(x, k, -1, True, True), pairs=picked_values(x))


def cumsum(e: Env, shape) -> Case:
    torch = e.torch
    x = e.randn(*e.shrunk(shape))
    X = e.lend(x)
    return Case(lambda: e.call("cumsum", X, -1, None), lambda: torch.ops.aten.cumsum(x, -1))


def embedding_bag(e: Env) -> Case:
    """A recommender's sum-pooled lookups: 2048 bags of 40 rows of 128."""
    torch = e.torch
    rows, bags, per_bag = 100_000 // e.s, 2048 // e.s, 40
    w = e.randn(rows, 128)
    idx = e.randint(0, rows, (bags * per_bag,))
    offsets = torch.arange(0, bags * per_bag, per_bag, device=e.device)
    W, I, O = e.lend(w), e.lend(idx), e.lend(offsets)
    return Case(lambda: e.call("_embedding_bag", W, I, O, 0, 0, 0, None, 0, -1),
                lambda: torch.ops.aten._embedding_bag(w, idx, offsets, False, 0, False, None, False,
                                                      -1))


def histc(e: Env) -> Case:
    torch = e.torch
    x = e.randn((1 << 20) // e.s)
    X = e.lend(x)
    return Case(lambda: e.call("histc", X, 100, -4.0, 4.0),
                lambda: torch.ops.aten.histc(x, 100, -4.0, 4.0))


def index_tensor(e: Env) -> Case:
    """Token embedding lookup: 8192 rows of a 32000 x 4096 bfloat16 table."""
    torch = e.torch
    rows = 32000 // e.s
    x, idx = e.randn(rows, 4096 // e.s, dtype="bfloat16"), e.randint(0, rows, (8192 // e.s,))
    X, I = e.lend(x), e.lend(idx)
    return Case(lambda: e.call("index_Tensor", X, [I]),
                lambda: torch.ops.aten.index.Tensor(x, [idx]))


def index_put(e: Env) -> Case:
    """Rows accumulated into a table, repeated indices included (out of place:
    both sides copy the table on every call)."""
    torch = e.torch
    rows, n, d = 32000 // e.s, 16384 // e.s, 1024 // e.s
    x, idx, v = e.randn(rows, d), e.randint(0, rows, (n,)), e.randn(n, d)
    X, I, V = e.lend(x), e.lend(idx), e.lend(v)
    return Case(lambda: e.call("index_put", X, [I], V, 1),
                lambda: torch.ops.aten.index_put(x, [idx], v, True))


def scatter_reduce(e: Env) -> Case:
    """A graph network's message sum: 200k edges into 50k nodes, 64 features."""
    torch = e.torch
    nodes, edges, d = 50_000 // e.s, 200_000 // e.s, 64
    base, src = e.randn(nodes, d), e.randn(edges, d)
    index = e.randint(0, nodes, (edges, 1)).expand(edges, d).contiguous()
    out, out_t = e.empty([nodes, d], "float32"), torch.empty(nodes, d, device=e.device)
    S, I, SRC = e.lend(base), e.lend(index), e.lend(src)
    return Case(lambda: e.call("scatter_reduce_two_out", out, S, 0, I, SRC, "sum", 1),
                lambda: torch.ops.aten.scatter_reduce.two_out(base, 0, index, src, "sum",
                                                              include_self=True, out=out_t),
                out)


def cholesky_solve(e: Env) -> Case:
    """64 SPD systems of 256 with 32 right-hand sides, from their Cholesky factors."""
    torch = e.torch
    n = max(256 // e.s, 8)
    a = e.randn(64, n, n)
    factor = torch.linalg.cholesky(a @ a.mT + n * torch.eye(n, device=e.device))  # well conditioned
    b = e.randn(64, n, 32)
    F, B = e.lend(factor), e.lend(b)
    return Case(lambda: e.call("cholesky_solve", B, F, 0),
                lambda: torch.cholesky_solve(b, factor, False), tol=LINALG_TOL)


def triangular_solve(e: Env) -> Case:
    """4 upper-triangular systems of 1024 with 256 right-hand sides."""
    torch = e.torch
    n, r = 1024 // e.s, 256 // e.s
    a = e.randn(4, n, n) / n + 2 * torch.eye(n, device=e.device)  # diagonally dominant
    b = e.randn(4, n, r)
    A, B = e.lend(a), e.lend(b)
    return Case(lambda: e.call("triangular_solve", B, A, 1, 0, 0),
                lambda: torch.ops.aten.triangular_solve(b, a, True, False, False), tol=LINALG_TOL)


def grouped_mm(e: Env) -> Case:
    """A mixture of experts' first projection: 8192 tokens routed unevenly to 8
    experts of 4096 -> 1024 (group sizes multiples of 16, as torch's kernel needs)."""
    torch = e.torch
    tokens, k, n = 8192 // e.s, 4096 // e.s, 1024 // e.s
    unit = tokens // 16
    counts = [int(f * unit) for f in (1, 3, 1.5, 2.5, 2, 1.25, 2.75, 2)]  # 16 units in all
    offs = torch.tensor(counts, device=e.device).cumsum(0).to(torch.int32)
    x, w = e.randn(tokens, k, dtype="bfloat16"), e.randn(8, n, k, dtype="bfloat16").mT
    X, W, OFFS = e.lend(x), e.lend(w), e.lend(offs)
    return Case(lambda: e.call("_grouped_mm", X, W, OFFS, None, None),
                lambda: torch._grouped_mm(x, w, offs))


# Run in this order (the budget may stop before the last): (op, shape and dtype, builder).
CASES: list[tuple[str, str, Callable[[Env], Case]]] = [
    ("mm_out", "2048x4096 @ (4096x4096)^T, bfloat16",
     lambda e: linear_gemm(e, "mm_out", "bfloat16")),
    ("mm_out", "2048x4096 @ (4096x4096)^T, float32",
     lambda e: linear_gemm(e, "mm_out", "float32")),
    ("addmm_out", "bias + 2048x4096 @ (4096x4096)^T, bfloat16",
     lambda e: linear_gemm(e, "addmm_out", "bfloat16")),
    ("addmm_out", "bias + 2048x4096 @ (4096x4096)^T, float32",
     lambda e: linear_gemm(e, "addmm_out", "float32")),
    ("bmm_out", "8 x 1024x1024 @ 1024x1024, bfloat16",
     lambda e: batched_gemm(e, "bmm_out", "bfloat16")),
    ("bmm_out", "8 x 1024x1024 @ 1024x1024, float32",
     lambda e: batched_gemm(e, "bmm_out", "float32")),
    ("baddbmm_out", "8 x (1024x1024 + 1024x1024 @ 1024x1024), bfloat16",
     lambda e: batched_gemm(e, "baddbmm_out", "bfloat16")),
    ("_int_mm_out", "2048x4096 @ (4096x4096)^T, int8 -> int32", int_mm),
    ("_weight_int8pack_mm", "16x4096 @ int8 (4096x4096)^T * scales, bfloat16",
     lambda e: weight_int8pack_mm(e, 16)),
    ("_weight_int8pack_mm", "1024x4096 @ int8 (4096x4096)^T * scales, bfloat16",
     lambda e: weight_int8pack_mm(e, 1024 // e.s)),
    ("convolution", "1x64x56x56 * 64x64x3x3, pad 1, bias, float32",
     lambda e: convolution(e, "float32")),
    ("convolution", "1x64x56x56 * 64x64x3x3, pad 1, bias, bfloat16",
     lambda e: convolution(e, "bfloat16")),
    ("_scaled_dot_product_flash_attention", "B4 H32 L2048 D128 causal, bfloat16",
     lambda e: attention(e, "flash", "bfloat16", 32, 2048, 128)),
    ("_scaled_dot_product_efficient_attention", "B4 H32 L2048 D128 causal, bfloat16",
     lambda e: attention(e, "efficient", "bfloat16", 32, 2048, 128)),
    ("_scaled_dot_product_efficient_attention", "B4 H12 L512 D64 causal, float32",
     lambda e: attention(e, "efficient", "float32", 12, 512, 64)),
    ("_fft_r2c", "8 x 65536, float32, onesided", lambda e: fft(e, "_fft_r2c")),
    ("_fft_c2c", "8 x 65536, complex64, forward", lambda e: fft(e, "_fft_c2c")),
    ("sort", "1048576, float32", lambda e: sort(e, (1 << 20,))),
    ("sort", "64 x 32768 rows, float32", lambda e: sort(e, (64, 32768))),
    ("cumsum", "1048576, float32", lambda e: cumsum(e, (1 << 20,))),
    ("cumsum", "64 x 32768 rows, float32", lambda e: cumsum(e, (64, 32768))),
    ("topk", "k=50 of 64 x 32000 rows, float32", lambda e: topk(e, (64, 32000), 50)),
    ("topk", "k=1024 of 1048576, float32", lambda e: topk(e, (1 << 20,), 1024)),
    ("_embedding_bag", "sum of 2048 bags x 40 of 100000x128, float32", embedding_bag),
    ("histc", "1048576 into 100 bins, float32", histc),
    ("index_Tensor", "8192 rows of 32000x4096, bfloat16", index_tensor),
    ("index_put", "accumulate 16384 rows into 32000x1024, float32", index_put),
    ("scatter_reduce_two_out", "sum of 200000x64 into 50000x64, float32", scatter_reduce),
    ("cholesky_solve", "64 x 256x256, 32 rhs, float32", cholesky_solve),
    ("triangular_solve", "4 x 1024x1024 upper, 256 rhs, float32", triangular_solve),
    ("_grouped_mm", "8192x4096 @ 8 experts (1024x4096)^T, uneven groups, bfloat16", grouped_mm),
]


# ---- measuring ----

def short(err: BaseException, limit: int = 200) -> str:
    text = " ".join(str(err).split()) or type(err).__name__
    return text[:limit]


def release(result, shim) -> None:
    """Delete the tensor handles an op returned (None and numbers pass)."""
    for item in result if isinstance(result, tuple) else (result,):
        if isinstance(item, shim.Tensor):
            shim.delete(item)


def to_torch(h, torch, device: str):
    """A shim output's values as a torch tensor on `device` (packed)."""
    import numpy as np

    a = h.numpy()
    if a.dtype.name == "bfloat16":  # ml_dtypes' bfloat16, which torch does not take
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16).to(device)
    return torch.from_numpy(a).to(device)


def max_error(case: Case, got: list, want: list, torch) -> tuple[float, float, bool]:
    """(max |ours - eager|, the tolerance it is judged by, within it) over the
    compared outputs."""
    pairs = case.pairs(got, want) if case.pairs else [(got[i], want[i]) for i in case.pick]
    worst, worst_tol, ok = 0.0, 0.0, True
    for g, w in pairs:
        if tuple(g.shape) != tuple(w.shape) or g.dtype != w.dtype:
            raise ValueError(f"output {g.dtype}{list(g.shape)}, eager's {w.dtype}{list(w.shape)}")
        if w.numel() == 0:
            continue
        dtype = str(w.dtype).removeprefix("torch.")
        rel = case.tol if case.tol is not None else TOL.get(dtype, 0.0)
        wide = torch.complex128 if w.is_complex() else torch.float64
        g, w = g.to(wide), w.to(wide)
        err = float((g - w).abs().max())
        tol = rel * max(1.0, float(w.abs().max()))
        worst, worst_tol, ok = max(worst, err), max(worst_tol, tol), ok and err <= tol
    return worst, worst_tol, ok


def per_call_us(call, torch, on_cuda: bool, batches: int, batch_ms: float) -> float:
    """Median time per call over `batches` batches of back-to-back calls."""
    for _ in range(3):
        call()
    if on_cuda:
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

        def batch(n: int) -> float:  # ms
            start.record()
            for _ in range(n):
                call()
            end.record()
            end.synchronize()
            return start.elapsed_time(end)
    else:  # the dry run: cpu ops are done when the call returns
        def batch(n: int) -> float:
            t0 = time.perf_counter()
            for _ in range(n):
                call()
            return (time.perf_counter() - t0) * 1e3
    n = int(min(max(batch_ms / max(batch(1), 1e-3), 1), 1000))
    return statistics.median(batch(n) * 1e3 / n for _ in range(batches))


def device_us(call, torch, calls: int = 10) -> float | None:
    """GPU time per call: the kernels, copies and fills that `calls` calls
    queue, as CUPTI records them (torch.profiler sees every library's and
    aotishim's work in this process, not only torch's). Against the call
    time it tells host overhead (the call outlasting its work) from slow
    kernels. None where the profiler records nothing."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    call()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            call()
        torch.cuda.synchronize()
    total = 0.0
    for ev in prof.events():
        if ev.device_type == DeviceType.CUDA:
            total += getattr(ev, "device_time", None) or getattr(ev, "cuda_time", 0.0)
    return total / calls if total > 0 else None


def measure(e: Env, build: Callable[[Env], Case], a) -> dict:
    """One op: build its inputs, check both sides' results once, time each
    side that ran. Every failure becomes a note of the row."""
    torch, shim = e.torch, e.shim
    on_cuda = e.device == "cuda"
    row: dict = {}
    notes: list[str] = []
    try:
        case = build(e)
        if on_cuda:
            torch.cuda.synchronize()
    except Exception as err:  # noqa: BLE001 - the row says what happened
        return {"note": f"setup failed: {short(err)}"}

    got = want = None
    try:
        result = case.ours()
        outputs = case.out if case.out is not None else result
        got = [to_torch(o, torch, e.device) if isinstance(o, shim.Tensor) else o
               for o in (outputs if isinstance(outputs, tuple) else (outputs,))]
        if case.out is None:
            release(result, shim)
    except Exception as err:  # noqa: BLE001
        notes.append(f"aotishim: {short(err)}")
    try:
        want = case.eager()
        want = list(want) if isinstance(want, (tuple, list)) else [want]
    except Exception as err:  # noqa: BLE001
        notes.append(f"eager: {short(err)}")
    if got is not None and want is not None:
        try:
            err, tol, ok = max_error(case, got, want, torch)
            row.update(max_abs_err=err, tol=tol, match=ok)
            if not ok:
                notes.append(f"MISMATCH: max error {err:.2g} above the tolerance {tol:.2g}")
        except Exception as err:  # noqa: BLE001
            row["match"] = False
            notes.append(f"check failed: {short(err)}")
    ours_ran, eager_ran = got is not None, want is not None
    del got, want  # their memory back before timing

    def ours() -> None:
        result = case.ours()
        if case.out is None:
            release(result, shim)

    for side, call, ran in (("aotishim", ours, ours_ran), ("eager", case.eager, eager_ran)):
        if not ran:
            continue
        try:
            row[f"{side}_us"] = per_call_us(call, torch, on_cuda, a.batches, a.batch_ms)
            if on_cuda and a.device_time:
                row[f"{side}_device_us"] = device_us(call, torch)
        except Exception as err:  # noqa: BLE001
            notes.append(f"{side} timing: {short(err)}")
    if row.get("aotishim_us") and row.get("eager_us"):
        row["ratio"] = row["aotishim_us"] / row["eager_us"]
    if notes:
        row["note"] = "; ".join(notes)
    return row


# ---- reporting ----

def fmt_us(v) -> str:
    return "" if v is None else f"{v:.1f}" if v < 100 else f"{v:.0f}"


def fmt_row(r: dict) -> list[str]:
    err = r.get("max_abs_err")
    error = "" if err is None else f"{err:.1e}" + ("" if r.get("match") else " MISMATCH")
    ratio = r.get("ratio")
    ours_dev, eager_dev = r.get("aotishim_device_us"), r.get("eager_device_us")
    device = f"{fmt_us(ours_dev)} / {fmt_us(eager_dev)}" if ours_dev and eager_dev else ""
    return [r["op"], r["shape"], fmt_us(r.get("aotishim_us")), fmt_us(r.get("eager_us")),
            "" if ratio is None else f"{ratio:.2f}", device, error,
            r.get("note", "").replace("|", "\\|")]


def geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def markdown(rows: list[dict], head: str) -> str:
    lines = [head, "",
             "| op | shape, dtype | aotishim µs | eager µs | aotishim / eager "
             "| GPU µs, aotishim / eager | max error | note |",
             "|---|---|---:|---:|---:|---:|---:|---|"]
    lines += ["| " + " | ".join(fmt_row(r)) + " |" for r in rows]
    ratios = [r["ratio"] for r in rows if r.get("ratio")]
    if ratios:
        lines += ["", f"Geometric mean of aotishim / eager over the {len(ratios)} rows timed on "
                      f"both sides: {geomean(ratios):.2f}."]
    return "\n".join(lines) + "\n"


def chart(rows: list[dict], path: Path, title: str) -> str:
    """A PNG bar chart of the ratios; says why when there is none."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker
    except ImportError as err:
        return f"no chart: matplotlib does not import ({short(err)})"
    timed = [r for r in rows if r.get("ratio")]
    if not timed:
        return "no chart: no op was timed on both sides"
    ratios = [r["ratio"] for r in timed]
    fig, ax = plt.subplots(figsize=(max(6.0, 0.3 * len(timed) + 2), 7))
    ax.bar(range(len(timed)), ratios, color=["tab:green" if v <= 1 else "tab:red" for v in ratios])
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(matplotlib.ticker.LogLocator(base=10, subs=(1, 2, 5)))
    ax.yaxis.set_major_formatter(matplotlib.ticker.FormatStrFormatter("%g"))
    ax.yaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_ylabel("aotishim / eager, time per call (below 1: aotishim faster)", fontsize=9)
    ax.set_xticks(range(len(timed)))
    ax.set_xticklabels([f"{r['op'].removeprefix('_scaled_dot_product_')} ({r['shape']})"[:48]
                        for r in timed], rotation=65, ha="right", fontsize=7)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return f"wrote {path}"


def machine(torch, aotishim, a) -> str:
    if a.device == "cuda":
        sm = ".".join(map(str, torch.cuda.get_device_capability(0)))
        where = (f"{torch.cuda.get_device_name(0)} (sm {sm}), torch {torch.__version__} "
                 f"(CUDA {torch.version.cuda})")
    else:
        where = f"DRY RUN on the cpu ({platform.machine()}, host clock), torch {torch.__version__}"
    return (f"{time.strftime('%Y-%m-%d %H:%M')}, {where}, aotishim "
            f"{getattr(aotishim, '__version__', '?')}, python {platform.python_version()}")


def main(argv: list[str] | None = None) -> int:
    ops = dict.fromkeys(op for op, _, _ in CASES)
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                epilog="ops: " + ", ".join(ops))
    p.add_argument("--ops", help="comma-separated op names to measure (default: all, listed below)")
    p.add_argument("--budget-s", type=float, default=100.0,
                   help="no op is started after this many seconds; the rest are rows saying so")
    p.add_argument("--batches", type=int, default=7, help="timed batches per side (the median)")
    p.add_argument("--batch-ms", type=float, default=20.0, help="about how long one batch runs")
    p.add_argument("--json", type=Path, help="raw rows, rewritten after each op")
    p.add_argument("--out", type=Path, help="the markdown table, rewritten after each op")
    p.add_argument("--chart", type=Path, help="a PNG bar chart of the ratios (needs matplotlib)")
    p.add_argument("--device", choices=["cuda", "cpu"], default="cuda",
                   help="cpu: a dry run without a GPU (aotishim's cpu entries, the host's clock)")
    p.add_argument("--no-device-time", dest="device_time", action="store_false",
                   help="skip the GPU-time column (torch.profiler over 10 calls per side)")
    p.add_argument("--small", action="store_true",
                   help="the large dimensions divided by 8: a quick check of every call")
    a = p.parse_args(argv)
    wanted = set(a.ops.split(",")) if a.ops else set(ops)
    if wanted - set(ops):
        p.error(f"unknown op(s) {', '.join(sorted(wanted - set(ops)))}; known: {', '.join(ops)}")
    started = time.monotonic()
    faulthandler.enable()  # a crash in a kernel still says where it was

    import torch
    if a.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit(f"cuda_ops_vs_eager: no CUDA device here (torch {torch.__version__}: "
                         "torch.cuda.is_available() is False). Run it on a GPU machine, or pass "
                         "--device cpu for a dry run of the script.")
    import aotishim
    from aotishim import shim
    if a.device == "cuda" and "cuda:0" not in aotishim.devices():
        raise SystemExit(f"cuda_ops_vs_eager: aotishim has no cuda:0 (its devices: "
                         f"{aotishim.devices()}); is its cuda backend built and installed?")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False

    head = (f"aotishim's cuda fallback ops against torch eager: {machine(torch, aotishim, a)}. "
            f"µs per call on device-resident tensors: "
            f"{'CUDA events' if a.device == 'cuda' else 'the host clock'} around back-to-back "
            f"calls, median of {a.batches} batches of about {a.batch_ms:g} ms; aotishim's time "
            "includes its call through shim.call_op and deleting the handles it returns; TF32 off."
            + (" Large dimensions divided by 8 (--small)." if a.small else ""))
    e = Env(torch, shim, a.device, 8 if a.small else 1)
    rows: list[dict] = []
    for op, shape, build in CASES:
        if op not in wanted:
            continue
        row = {"op": op, "shape": shape}
        if time.monotonic() - started > a.budget_s:
            row["note"] = f"not measured: the {a.budget_s:g} s budget was spent"
        else:
            t0 = time.monotonic()
            row.update(measure(e, build, a))
            failed = e.release()
            if failed:
                row["note"] = "; ".join(filter(None, [row.get("note"), failed]))
            row["seconds"] = round(time.monotonic() - t0, 2)
        rows.append(row)
        cells = fmt_row(row)
        print(f"{op:40} {shape:56} {cells[2]:>8} {cells[3]:>8} {cells[4]:>10} {cells[5]:>15} "
              f"{cells[6]:>16} "
              f"{row.get('note', '')}", flush=True)
        if a.json:
            a.json.write_text(json.dumps({"machine": machine(torch, aotishim, a), "header": head,
                                          "rows": rows}, indent=1) + "\n")
        if a.out:
            a.out.write_text(markdown(rows, head))
    print()
    print(markdown(rows, head))
    if a.chart:
        title = "aotishim / torch eager per op\n" + textwrap.fill(machine(torch, aotishim, a), 90)
        print(chart(rows, a.chart, title))
    print(f"done in {time.monotonic() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
