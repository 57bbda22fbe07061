"""torch's OpInfo samples as calls of aotishim's fallback ops.

Every fallback op with a kernel gets an adapter: it reads one OpInfo
SampleInput (torch's own test inputs for the public function the op serves)
and returns a ``Call``: the op's tensor inputs by name, how to pass them to
``shim.call_op`` in the shim's argument order, and torch's answer for the
same inputs (the aten op that AOTInductor's fallback stands for). A sample
the op cannot receive from generated code (an unbatched convolution, a
scalar ``values`` for searchsorted, dropout) gives ``None``.

``run_case`` then calls the op on a device with the inputs in one layout
(the sample's own, strided with NaN in the gaps, reversed memory order, at a
storage offset, channels-last) and lists every difference from torch:
dtypes, sizes, the strides of outputs the op allocates, values (floats with
torch's default tolerances, integers and indices exactly). A device other
than the cpu plugs in through ``device``: inputs are made there and the
op's ``aoti_torch_<device>_*`` entry is called.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import ml_dtypes
import numpy as np
import torch
from torch.testing import make_tensor
from torch.testing._internal.opinfo.core import SampleInput

from aotishim import shim
from aotishim._core import ShimError

# real dtypes the shim ABI carries; complex ones are taken by the ops whose
# adapters list them (COMPLEX_DTYPES)
SHIM_DTYPES = {torch.float32: "float32", torch.float64: "float64", torch.float16: "float16",
               torch.bfloat16: "bfloat16", torch.int64: "int64", torch.int32: "int32",
               torch.int16: "int16", torch.int8: "int8", torch.uint8: "uint8",
               torch.bool: "bool"}
COMPLEX_DTYPES = {torch.complex64: "complex64", torch.complex128: "complex128"}
RESULT_DTYPES = SHIM_DTYPES | COMPLEX_DTYPES
DTYPE_CODES = {torch.uint8: 0, torch.int8: 1, torch.int16: 2, torch.int32: 3, torch.int64: 4,
               torch.float16: 5, torch.float32: 6, torch.float64: 7, torch.bool: 11,
               torch.bfloat16: 15}
FLOATS = {torch.float32, torch.float64, torch.float16, torch.bfloat16}
INTS = {torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8}
LAYOUTS = ("sample", "gaps", "reversed", "offset", "channels_last")


@dataclass
class Call:
    op: str  # the fallback op
    inputs: dict[str, torch.Tensor | None]
    # shim argument list from the inputs as shim tensors (None stays None) and
    # the preallocated outputs of an _out op
    args: Callable[[dict, dict], list]
    # torch's outputs for the inputs as torch tensors (same names)
    reference: Callable[[dict], tuple]
    out: tuple[str, ...] = ()  # an _out op's outputs, preallocated like torch's
    # torch's values from packed copies of the inputs (its kernel misreads
    # some layouts that generated code never passes it); strides still from
    # the inputs as they lie
    packed_reference: bool = False
    # inputs torch's op only ever gets as packed copies (it misreads or
    # crashes on some views of them that AOTInductor never passes it)
    torch_packed: tuple[str, ...] = ()
    # ops whose index output (output 1) is any position of the chosen value
    # when it repeats (kthvalue, mode): the values the indices point at
    # (inputs, indices -> values) must equal output 0, instead of the indices
    # equalling torch's
    gather: Callable[[dict, torch.Tensor], torch.Tensor] | None = None
    # ops whose value output (output 0) may be any of several equally good
    # answers on cuda (mode among equally frequent values): (inputs, values)
    # -> a tensor that equally good answers share, compared there instead
    # of the values
    canonical: Callable[[dict, torch.Tensor], torch.Tensor] | None = None
    # ops whose float32 answer is ill-conditioned in its inputs (attention:
    # softmax of rounded scores): inputs -> the largest change of output 0
    # that rounding each input-derived intermediate to float32 can cause, to
    # first order, allowed beside torch's own error
    rounding_bound: Callable[[dict], float] | None = None


# ------------------------------------------------------------------ adapters


def _listify(v, n):
    return [int(x) for x in v] if isinstance(v, (tuple, list)) else [int(v)] * n


def _mm(s):
    return Call("mm_out", {"self": s.input, "mat2": s.args[0]},
                lambda t, o: [o["out"], t["self"], t["mat2"]],
                lambda t: (torch.mm(t["self"], t["mat2"]),), out=("out",))


def _bmm(s):
    return Call("bmm_out", {"self": s.input, "mat2": s.args[0]},
                lambda t, o: [o["out"], t["self"], t["mat2"]],
                lambda t: (torch.bmm(t["self"], t["mat2"]),), out=("out",))


def _addmm(s):
    beta, alpha = s.kwargs.get("beta", 1), s.kwargs.get("alpha", 1)
    return Call("addmm_out", {"self": s.input, "mat1": s.args[0], "mat2": s.args[1]},
                lambda t, o: [o["out"], t["self"], t["mat1"], t["mat2"], float(beta),
                              float(alpha)],
                lambda t: (torch.addmm(t["self"], t["mat1"], t["mat2"], beta=beta, alpha=alpha),),
                out=("out",))


def _baddbmm(s):
    beta, alpha = s.kwargs.get("beta", 1), s.kwargs.get("alpha", 1)
    return Call("baddbmm_out", {"self": s.input, "batch1": s.args[0], "batch2": s.args[1]},
                lambda t, o: [o["out"], t["self"], t["batch1"], t["batch2"], float(beta),
                              float(alpha)],
                lambda t: (torch.baddbmm(t["self"], t["batch1"], t["batch2"], beta=beta,
                                         alpha=alpha),), out=("out",))


def _addmv(s):
    beta, alpha = s.kwargs.get("beta", 1), s.kwargs.get("alpha", 1)
    return Call("addmv", {"self": s.input, "mat": s.args[0], "vec": s.args[1]},
                lambda t, o: [t["self"], t["mat"], t["vec"], float(beta), float(alpha)],
                lambda t: (torch.addmv(t["self"], t["mat"], t["vec"], beta=beta, alpha=alpha),))


def _addbmm(s):
    beta, alpha = s.kwargs.get("beta", 1), s.kwargs.get("alpha", 1)
    return Call("addbmm", {"self": s.input, "batch1": s.args[0], "batch2": s.args[1]},
                lambda t, o: [t["self"], t["batch1"], t["batch2"], float(beta), float(alpha)],
                lambda t: (torch.addbmm(t["self"], t["batch1"], t["batch2"], beta=beta,
                                        alpha=alpha),))


def _histc(s):
    a = dict(zip(["bins", "min", "max"], s.args)) | s.kwargs
    bins, lo, hi = a.get("bins", 100), a.get("min", 0), a.get("max", 0)
    return Call("histc", {"self": s.input}, lambda t, o: [t["self"], bins, float(lo), float(hi)],
                lambda t: (torch.histc(t["self"], bins, lo, hi),))


def _weight_int8pack_mm(s):
    return Call("_weight_int8pack_mm", {"self": s.input, "mat2": s.args[0], "scales": s.args[1]},
                lambda t, o: [t["self"], t["mat2"], t["scales"]],
                lambda t: (torch._weight_int8pack_mm(t["self"], t["mat2"], t["scales"]),),
                # torch's kernel refuses views with gaps, and reads bfloat16 at
                # a storage offset out of bounds (a crash); ours takes any
                # layout, and the output is fresh and packed whatever it is
                torch_packed=("self", "mat2", "scales"))


def _weight_int8pack_samples(dtype):
    """Hand cases (no OpInfo): (M, K) activations, (N, K) int8 weights, (N,)
    scales; K = 0 and M = 0 too. K is a multiple of 16: torch's kernel reads
    past the end of other rows (and crashes); tests/test_op_gemm_variants.py
    checks those sizes against a float64 answer."""
    g = torch.Generator().manual_seed(3)
    for m, n, k in [(5, 7, 64), (1, 32, 48), (17, 3, 16), (4, 6, 0), (0, 5, 32), (33, 65, 128)]:
        x = torch.randn(m, k, generator=g).to(dtype)
        w = torch.randint(-128, 128, (n, k), generator=g, dtype=torch.int8)
        scales = (torch.rand(n, generator=g) / 64).to(dtype)
        yield SampleInput(x, args=(w, scales))


def _embedding_bag(op_name):
    """F.embedding_bag's sample as the aten op it calls: 2-D input flattened
    into bags of equal length, a negative padding_idx counted from the end."""
    aten = getattr(torch.ops.aten, op_name)

    def adapt(s):
        weight, idx, kw = s.input, s.args[0], s.kwargs
        if kw.get("max_norm") is not None:
            return None  # renormalises weight in place first: not this op alone
        offsets, psw = kw.get("offsets"), kw.get("per_sample_weights")
        if idx.dim() == 2:
            offsets = torch.arange(0, idx.numel(), idx.shape[1], dtype=idx.dtype)
            idx = idx.reshape(-1)
            psw = None if psw is None else psw.reshape(-1)
        mode = {"sum": 0, "mean": 1, "max": 2}[kw.get("mode", "mean")]
        pad = kw.get("padding_idx")
        pad = -1 if pad is None else (pad + weight.shape[0] if pad < 0 else pad)
        last = bool(kw.get("include_last_offset", False))
        return Call(op_name, {"weight": weight, "indices": idx, "offsets": offsets,
                              "per_sample_weights": psw},
                    lambda t, o: [t["weight"], t["indices"], t["offsets"], 0, mode, 0,
                                  t["per_sample_weights"], int(last), pad],
                    lambda t: _bag_size_past_the_bags(
                        aten(t["weight"], t["indices"], t["offsets"], False, mode, False,
                             t["per_sample_weights"], last, pad), last),
                    # torch's kernel reads indices and offsets as if packed (a
                    # strided view gives wrong sums; AOTInductor passes them
                    # packed)
                    torch_packed=("indices", "offsets"))
    return adapt


def _bag_size_past_the_bags(outputs, last):
    """torch cuda's bag_size has one entry per offset, and its kernel leaves
    the one past the last bag (include_last_offset) unwritten: aotishim
    writes 0 there."""
    outputs = tuple(outputs)
    if last and outputs[0].device.type == "cuda" and outputs[2].numel() > outputs[0].shape[0]:
        bag_size = outputs[2].clone()
        bag_size[outputs[0].shape[0]:] = 0
        outputs = outputs[:2] + (bag_size,) + outputs[3:]
    return outputs


def _int_mm(s):
    return Call("_int_mm_out", {"self": s.input, "mat2": s.args[0]},
                lambda t, o: [o["out"], t["self"], t["mat2"]],
                lambda t: (torch._int_mm(t["self"], t["mat2"]),), out=("out",))


def _int_mm_samples(dtype):
    """Hand cases (no OpInfo): int8 (M, K) @ (K, N), extreme values included."""
    g = torch.Generator().manual_seed(5)
    for m, k, n in [(5, 7, 3), (1, 64, 32), (33, 130, 17), (4, 0, 6), (0, 5, 2)]:
        a = torch.randint(-128, 128, (m, k), generator=g, dtype=torch.int8)
        b = torch.randint(-128, 128, (k, n), generator=g, dtype=torch.int8)
        yield SampleInput(a, args=(b,))
    yield SampleInput(torch.full((2, 300), -128, dtype=torch.int8),
                      args=(torch.full((300, 2), -128, dtype=torch.int8),))


def _cumulative(name):
    def adapt(s):
        dim = s.args[0] if s.args else s.kwargs["dim"]
        dtype = s.kwargs.get("dtype")
        if dtype is not None and dtype not in DTYPE_CODES:
            return None
        fn = getattr(torch, name)
        return Call(name, {"self": s.input},
                    lambda t, o: [t["self"], dim, None if dtype is None else DTYPE_CODES[dtype]],
                    lambda t: (fn(t["self"], dim, dtype=dtype),))
    return adapt


def _topk(s):
    names = ["k", "dim", "largest", "sorted"]
    a = dict(zip(names, s.args)) | s.kwargs
    k, dim = a["k"], a.get("dim", -1)
    largest, sorted_ = a.get("largest", True), a.get("sorted", True)
    return Call("topk", {"self": s.input},
                lambda t, o: [t["self"], k, dim, int(largest), int(sorted_)],
                lambda t: tuple(torch.topk(t["self"], k, dim, largest, sorted_)))


def _sort(s):
    a = dict(zip(["dim", "descending"], s.args)) | s.kwargs
    dim, descending, stable = a.get("dim", -1), a.get("descending", False), a.get("stable")
    return Call("sort_stable", {"self": s.input},
                lambda t, o: [t["self"], None if stable is None else int(stable), dim,
                              int(descending)],
                lambda t: tuple(torch.sort(t["self"], dim=dim, descending=descending,
                                           stable=stable)))


def _sort_unstable(s):
    a = dict(zip(["dim", "descending"], s.args)) | s.kwargs
    if a.get("stable") is not None:
        return None  # sort.stable: the sort_stable entry
    dim, descending = a.get("dim", -1), a.get("descending", False)
    return Call("sort", {"self": s.input}, lambda t, o: [t["self"], dim, int(descending)],
                lambda t: tuple(torch.sort(t["self"], dim=dim, descending=descending)))


def _gather_along(dim, keepdim):
    """(inputs, indices) -> self's elements at `indices` along dim."""
    def gather(t, idx):
        x = t["self"]
        if x.dim() == 0:
            return x.clone()
        idx = idx if keepdim else idx.unsqueeze(dim)
        got = x.gather(dim, idx)
        return got if keepdim else got.squeeze(dim)
    return gather


def _kthvalue(s):
    a = dict(zip(["k", "dim", "keepdim"], s.args)) | s.kwargs
    k, dim, keepdim = a["k"], a.get("dim", -1), a.get("keepdim", False)
    return Call("kthvalue", {"self": s.input},
                lambda t, o: [t["self"], k, dim, int(keepdim)],
                lambda t: tuple(torch.kthvalue(t["self"], k, dim, keepdim)),
                gather=_gather_along(dim, keepdim))


def _count_along(dim, keepdim):
    """(inputs, values) -> how often each value occurs in its line of self."""
    def count(t, values):
        x = t["self"].cpu()
        if x.dim() == 0:
            return torch.ones_like(values, dtype=torch.int64)
        v = values if keepdim else values.unsqueeze(dim)
        same = (x == v) | (x.isnan() & v.isnan()) if x.is_floating_point() else x == v
        return same.sum(dim, keepdim=keepdim)
    return count


def _mode(s):
    a = dict(zip(["dim", "keepdim"], s.args)) | s.kwargs
    dim, keepdim = a.get("dim", -1), a.get("keepdim", False)
    return Call("mode", {"self": s.input}, lambda t, o: [t["self"], dim, int(keepdim)],
                lambda t: tuple(torch.mode(t["self"], dim, keepdim)),
                # torch's index among repeats of the mode is the last one in
                # small lines, not always in long ones
                gather=_gather_along(dim, keepdim),
                # which of equally frequent values is the mode: torch cuda's
                # reduction order decides, so any value as frequent as torch's
                canonical=_count_along(dim, keepdim))


def _median(name):
    def adapt(s):
        if s.args or s.kwargs:
            return None  # median.dim: not in the shim (a proxy-executor op)
        fn = getattr(torch, name)
        return Call(name, {"self": s.input}, lambda t, o: [t["self"]], lambda t: (fn(t["self"]),))
    return adapt


def _cumulative_extremum(name):
    def adapt(s):
        dim = s.args[0] if s.args else s.kwargs["dim"]
        fn = getattr(torch, name)
        return Call(name, {"self": s.input}, lambda t, o: [t["self"], dim],
                    lambda t: tuple(fn(t["self"], dim)))
    return adapt


def _logcumsumexp(s):
    dim = s.args[0] if s.args else s.kwargs["dim"]
    return Call("logcumsumexp", {"self": s.input}, lambda t, o: [t["self"], dim],
                lambda t: (torch.logcumsumexp(t["self"], dim),))


def _searchsorted(s):
    values = s.args[0] if s.args else s.kwargs.get("input")
    if not isinstance(values, torch.Tensor):
        return None  # searchsorted.Scalar: another op
    kw = s.kwargs
    out_int32, right, side = kw.get("out_int32", False), kw.get("right", False), kw.get("side")
    return Call("searchsorted_Tensor",
                {"sorted_sequence": s.input, "self": values, "sorter": kw.get("sorter")},
                lambda t, o: [t["sorted_sequence"], t["self"], int(out_int32), int(right), side,
                              t["sorter"]],
                lambda t: (torch.searchsorted(t["sorted_sequence"], t["self"],
                                              out_int32=out_int32, right=right, side=side,
                                              sorter=t["sorter"]),))


def _searchsorted_scalar(s):
    value = s.args[0] if s.args else s.kwargs.get("input")
    if isinstance(value, torch.Tensor):
        return None
    kw = s.kwargs
    out_int32, right, side = kw.get("out_int32", False), kw.get("right", False), kw.get("side")
    return Call("searchsorted_Scalar", {"sorted_sequence": s.input, "sorter": kw.get("sorter")},
                lambda t, o: [t["sorted_sequence"], float(value), int(out_int32), int(right), side,
                              t["sorter"]],
                lambda t: (torch.searchsorted(t["sorted_sequence"], value, out_int32=out_int32,
                                              right=right, side=side, sorter=t["sorter"]),))


def _searchsorted_scalar_samples(dtype):
    """The scalar-value samples of torch's searchsorted OpInfo (a few of its
    many), and integer sequences against fractional numbers."""
    from torch.testing._internal.common_methods_invocations import op_db
    op = next(o for o in op_db if o.name == "searchsorted")
    scalar = [s for s in op.sample_inputs("cpu", dtype)
              if not isinstance(s.args[0] if s.args else s.kwargs.get("input"), torch.Tensor)]
    yield from scalar[::4]
    seq = torch.tensor([0, 2, 2, 5, 9]).to(dtype)
    for v in (-1.0, 2.0, 2.5, 4.999, 9.0, 300.0):
        yield SampleInput(seq, args=(v,), kwargs={"right": True})
        yield SampleInput(seq, args=(v,), kwargs={"out_int32": True})


def _bucketize(s):
    boundaries = s.args[0]
    out_int32, right = s.kwargs.get("out_int32", False), s.kwargs.get("right", False)
    return Call("bucketize_Tensor", {"self": s.input, "boundaries": boundaries},
                lambda t, o: [t["self"], t["boundaries"], int(out_int32), int(right)],
                lambda t: (torch.bucketize(t["self"], t["boundaries"], out_int32=out_int32,
                                           right=right),))


def _nonzero_static(s):
    size, fill = s.kwargs["size"], s.kwargs.get("fill_value", -1)
    return Call("nonzero_static", {"self": s.input}, lambda t, o: [t["self"], size, fill],
                lambda t: (torch.nonzero_static(t["self"], size=size, fill_value=fill),))


def _repeat_interleave(s):
    return Call("repeat_interleave_Tensor", {"repeats": s.input},
                lambda t, o: [t["repeats"], s.kwargs.get("output_size")],
                lambda t: (torch.repeat_interleave(t["repeats"],
                                                   output_size=s.kwargs.get("output_size")),))


def _repeat_interleave_samples(dtype):
    """Hand cases (torch's OpInfo repeats an input; this overload only takes
    the repeats): zeros, one, long runs, an output_size."""
    g = torch.Generator().manual_seed(7)
    for r in ([2, 0, 3], [0, 0], [], [1], [5] * 40):
        yield SampleInput(torch.tensor(r, dtype=dtype))
    yield SampleInput(torch.randint(0, 4, (50,), generator=g, dtype=dtype))
    yield SampleInput(torch.tensor([1, 2, 3], dtype=dtype), kwargs={"output_size": 6})


def _index(s):
    (indices,) = s.args
    names = [None if t is None else f"index{k}" for k, t in enumerate(indices)]
    inputs = {"self": s.input} | {n: t for n, t in zip(names, indices) if n is not None}
    return Call("index_Tensor", inputs,
                lambda t, o: [t["self"], [None if n is None else t[n] for n in names]],
                lambda t: (torch.ops.aten.index.Tensor(
                    t["self"], [None if n is None else t[n] for n in names]),))


def _index_samples(dtype):
    """Hand cases (torch's OpInfo indexes with Python objects): masks over
    all or some dims, integer indices (int64 and int32, negative) in one
    dim, in adjacent dims, in dims apart (their dims go first), broadcast
    together, a mask with an integer index, an empty selection."""
    g = torch.Generator().manual_seed(11)
    x = make_tensor((4, 5, 6), dtype=dtype, device="cpu")
    x4 = make_tensor((2, 3, 4, 5), dtype=dtype, device="cpu")
    mask = torch.rand(4, 5, generator=g) > 0.5
    i = torch.tensor([3, 0, -1, 2])
    yield SampleInput(x, args=([x != x.flatten()[0]],))
    yield SampleInput(x, args=([mask],))
    yield SampleInput(x, args=([None, torch.rand(5, 6, generator=g) > 0.3],))
    yield SampleInput(x, args=([None, None, torch.rand(6, generator=g) > 0.5],))
    yield SampleInput(x, args=([i],))
    yield SampleInput(x, args=([None, i.to(torch.int32)],))
    yield SampleInput(x, args=([i, torch.tensor([[1], [4]])],))
    yield SampleInput(x, args=([i[:3], None, torch.tensor([5, 0, 1])],))
    yield SampleInput(x4, args=([None, torch.tensor([2, 0]), None, torch.tensor([[4], [1]])],))
    yield SampleInput(x4, args=([None, torch.tensor([1, 2]), torch.tensor([3, 0])],))
    yield SampleInput(x4, args=([torch.tensor([1, 0]), None, torch.rand(4, 5, generator=g) > 0.5],))
    yield SampleInput(x, args=([torch.zeros(4, dtype=torch.bool)],))


def _masked_scatter(s):
    mask, source = s.args
    return Call("masked_scatter", {"self": s.input, "mask": mask, "source": source},
                lambda t, o: [t["self"], t["mask"], t["source"]],
                lambda t: (torch.masked_scatter(t["self"], t["mask"], t["source"]),))


def _adaptive_pool3d(max_pool):
    def adapt(s):
        size = s.args[0] if s.args else s.kwargs["output_size"]
        size = _listify(size, 3)if not isinstance(size, (tuple, list)) else list(size)
        size = [s.input.shape[-3 + i] if v is None else int(v) for i, v in enumerate(size)]
        if max_pool:
            return Call("adaptive_max_pool3d", {"self": s.input}, lambda t, o: [t["self"], size],
                        lambda t: tuple(torch.ops.aten.adaptive_max_pool3d(t["self"], size)))
        return Call("_adaptive_avg_pool3d", {"self": s.input}, lambda t, o: [t["self"], size],
                    lambda t: (torch.ops.aten._adaptive_avg_pool3d(t["self"], size),))
    return adapt


def _nonzero(s):
    if s.kwargs.get("as_tuple"):
        return None
    return Call("nonzero", {"self": s.input}, lambda t, o: [t["self"]],
                lambda t: (torch.nonzero(t["self"]),))


def _masked_select(s):
    return Call("masked_select", {"self": s.input, "mask": s.args[0]},
                lambda t, o: [t["self"], t["mask"]],
                lambda t: (torch.masked_select(t["self"], t["mask"]),))


def _scatter_reduce(s):
    dim, index, src, reduce = s.args
    include_self = s.kwargs.get("include_self", True)
    return Call("scatter_reduce_two_out", {"self": s.input, "index": index, "src": src},
                lambda t, o: [o["out"], t["self"], dim, t["index"], t["src"], reduce,
                              int(include_self)],
                lambda t: (torch.scatter_reduce(t["self"], dim, t["index"], t["src"], reduce,
                                                include_self=include_self),),
                out=("out",))


def _conv(spatial, transposed):
    names = (["weight", "bias", "stride", "padding", "output_padding", "groups", "dilation"]
             if transposed else ["weight", "bias", "stride", "padding", "dilation", "groups"])

    def adapt(s):
        a = dict(zip(names, s.args)) | s.kwargs
        if s.input.dim() != spatial + 2 or isinstance(a.get("padding", 0), str):
            return None  # unbatched, or padding="same"/"valid": not aten.convolution's form
        stride = _listify(a.get("stride", 1), spatial)
        padding = _listify(a.get("padding", 0), spatial)
        dilation = _listify(a.get("dilation", 1), spatial)
        output_padding = _listify(a.get("output_padding", 0), spatial)
        groups = int(a.get("groups", 1))
        return Call("convolution", {"input": s.input, "weight": a["weight"], "bias": a.get("bias")},
                    lambda t, o: [t["input"], t["weight"], t["bias"], stride, padding, dilation,
                                  int(transposed), output_padding, groups],
                    lambda t: (torch.ops.aten.convolution(
                        t["input"], t["weight"], t["bias"], stride, padding, dilation, transposed,
                        output_padding, groups),))
    return adapt


def _sdpa(s):
    a = dict(zip(["attn_mask", "dropout_p", "is_causal"], s.args[2:])) | s.kwargs
    q, k, v = s.input, s.args[0], s.args[1]
    if a.get("dropout_p", 0.0) != 0.0 or q.dim() != 4:
        return None  # random, or not the 4-D (B, H, L, E) form the op takes
    causal, scale = bool(a.get("is_causal", False)), a.get("scale")
    return Call("_scaled_dot_product_flash_attention_for_cpu",
                {"query": q, "key": k, "value": v, "attn_mask": a.get("attn_mask")},
                lambda t, o: [t["query"], t["key"], t["value"], 0.0, int(causal), t["attn_mask"],
                              scale],
                lambda t: tuple(torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
                    t["query"], t["key"], t["value"], 0.0, causal, attn_mask=t["attn_mask"],
                    scale=scale)),
                # torch's kernel reads every head row as unit-stride: a query
                # with gaps gives it NaN (AOTInductor passes unit-stride rows)
                packed_reference=True,
                rounding_bound=lambda t: _attention_rounding_bound(t, scale))


def _attention_rounding_bound(t: dict, scale: float | None) -> float:
    """A float32 score scale * q.k is off by up to eps * scale * sum|q||k|;
    the weights move by as much (relative), so an output by that times
    max |v|, twice over (the weight that grows and the one that shrinks).
    Large scores with near ties make this exceed a rounding of the output
    (a correct kernel missed torch's answer by 1.3e-5 at scores near 32
    differing by 0.5), while a wrong score, mask or scale misses by far more."""
    q, k, v = (t[n].double() for n in ("query", "key", "value"))
    if q.numel() == 0 or k.numel() == 0:
        return 0.0
    s = abs(scale) if scale is not None else q.shape[-1] ** -0.5
    q_k = (q.abs() @ k.abs().transpose(-1, -2)).max() if k.shape[1] == q.shape[1] else \
        q.abs().max() * k.abs().max() * q.shape[-1]
    return float(2 * torch.finfo(torch.float32).eps * s * q_k * v.abs().max())


# ---- pooling, grid sampling, distances, _trilinear


def _pool_kwargs(s, names, defaults):
    """A sample's positional and keyword arguments by name, with F's defaults."""
    a = dict(defaults) | dict(zip(names, s.args)) | s.kwargs
    return a


def _pool_list(v, n):
    if v is None:
        return []
    return _listify(v, n)


def _adaptive_pool2d(max_pool):
    def adapt(s):
        size = s.args[0] if s.args else s.kwargs["output_size"]
        size = list(size) if isinstance(size, (tuple, list)) else [size, size]
        size = [s.input.shape[-2 + i] if v is None else int(v) for i, v in enumerate(size)]
        if max_pool:
            return Call("adaptive_max_pool2d", {"self": s.input}, lambda t, o: [t["self"], size],
                        lambda t: tuple(torch.ops.aten.adaptive_max_pool2d(t["self"], size)))
        return Call("_adaptive_avg_pool2d", {"self": s.input}, lambda t, o: [t["self"], size],
                    lambda t: (torch.ops.aten._adaptive_avg_pool2d(t["self"], size),))
    return adapt


def _avg_pool(n):
    aten = getattr(torch.ops.aten, f"avg_pool{n}d")

    def adapt(s):
        a = _pool_kwargs(s, ["kernel_size", "stride", "padding", "ceil_mode", "count_include_pad",
                             "divisor_override"],
                         {"stride": None, "padding": 0, "ceil_mode": False,
                          "count_include_pad": True, "divisor_override": None})
        k, st = _pool_list(a["kernel_size"], n), _pool_list(a["stride"], n)
        p = _pool_list(a["padding"], n)
        ceil, cip, div = bool(a["ceil_mode"]), bool(a["count_include_pad"]), a["divisor_override"]
        return Call(f"avg_pool{n}d", {"self": s.input},
                    lambda t, o: [t["self"], k, st, p, int(ceil), int(cip), div],
                    lambda t: (aten(t["self"], k, st, p, ceil, cip, div),))
    return adapt


def _max_pool(n):
    aten = getattr(torch.ops.aten, f"max_pool{n}d_with_indices")

    def adapt(s):
        a = _pool_kwargs(s, ["kernel_size", "stride", "padding", "dilation", "ceil_mode"],
                         {"stride": None, "padding": 0, "dilation": 1, "ceil_mode": False})
        k, st = _pool_list(a["kernel_size"], n), _pool_list(a["stride"], n)
        p, d, ceil = _pool_list(a["padding"], n), _pool_list(a["dilation"], n), bool(a["ceil_mode"])
        return Call(f"max_pool{n}d_with_indices", {"self": s.input},
                    lambda t, o: [t["self"], k, st, p, d, int(ceil)],
                    lambda t: tuple(aten(t["self"], k, st, p, d, ceil)))
    return adapt


def _fractional_max_pool(n):
    aten = getattr(torch.ops.aten, f"fractional_max_pool{n}d")

    def adapt(s):
        x = s.input
        k = _listify(s.args[0] if s.args else s.kwargs["kernel_size"], n)
        if s.kwargs.get("output_size") is not None:
            size = _listify(s.kwargs["output_size"], n)
        else:
            ratio = s.kwargs["output_ratio"]
            ratio = list(ratio) if isinstance(ratio, (tuple, list)) else [ratio] * n
            size = [int(x.shape[-n + i] * ratio[i]) for i in range(n)]
        samples = s.kwargs.get("_random_samples")
        if samples is None:  # the draw F would make, made here from a fixed seed
            batch = x.shape[0] if x.dim() == n + 2 else 1
            g = torch.Generator().manual_seed(11)
            samples = torch.rand(batch, x.shape[-n - 1], n, generator=g).to(x.dtype)
        return Call(f"fractional_max_pool{n}d", {"self": x, "random_samples": samples},
                    lambda t, o: [t["self"], k, size, t["random_samples"]],
                    lambda t: tuple(aten(t["self"], k, size, t["random_samples"])))
    return adapt


def _max_unpool(n):
    aten = getattr(torch.ops.aten, f"max_unpool{n}d")

    def adapt(s):
        kw = s.kwargs
        k = _listify(kw["kernel_size"], n)
        st = k if kw.get("stride") is None else _listify(kw["stride"], n)
        p = _listify(kw.get("padding", 0), n)
        if kw.get("output_size") is not None:
            size = [int(v) for v in list(kw["output_size"])[-n:]]
        else:
            size = [(s.input.shape[-n + i] - 1) * st[i] - 2 * p[i] + k[i] for i in range(n)]
        if n == 2:
            return Call("max_unpool2d", {"self": s.input, "indices": s.args[0]},
                        lambda t, o: [t["self"], t["indices"], size],
                        lambda t: (aten(t["self"], t["indices"], size),))
        return Call("max_unpool3d", {"self": s.input, "indices": s.args[0]},
                    lambda t, o: [t["self"], t["indices"], size, st, p],
                    lambda t: (aten(t["self"], t["indices"], size, st, p),))
    return adapt


def _grid_sample_3d(s):
    if s.input.dim() != 5:
        return None  # 4-D samples run grid_sampler_2d, which Inductor lowers itself
    kw = s.kwargs
    mode = {"bilinear": 0, "nearest": 1, "bicubic": 2}[kw.get("mode", "bilinear")]
    pad = {"zeros": 0, "border": 1, "reflection": 2}[kw.get("padding_mode", "zeros")]
    align = bool(kw.get("align_corners", False))
    return Call("grid_sampler_3d", {"input": s.input, "grid": s.args[0]},
                lambda t, o: [t["input"], t["grid"], mode, pad, int(align)],
                lambda t: (torch.ops.aten.grid_sampler_3d(t["input"], t["grid"], mode, pad,
                                                          align),))


_CDIST_MODES = {None: None, "use_mm_for_euclid_dist_if_necessary": 0,
                "use_mm_for_euclid_dist": 1, "donot_use_mm_for_euclid_dist": 2}


def _cdist(s):
    a = dict(zip(["x2", "p", "compute_mode"], s.args)) | s.kwargs
    p, mode = float(a.get("p", 2.0)), _CDIST_MODES[a.get("compute_mode")]
    return Call("_cdist_forward", {"x1": s.input, "x2": a["x2"]},
                lambda t, o: [t["x1"], t["x2"], p, mode],
                lambda t: (torch.ops.aten._cdist_forward(t["x1"], t["x2"], p, mode),))


def _pdist(s):
    p = float(s.args[0] if s.args else s.kwargs.get("p", 2.0))
    return Call("_pdist_forward", {"self": s.input}, lambda t, o: [t["self"], p],
                lambda t: (torch.ops.aten._pdist_forward(t["self"], p),))


def _bilinear(s):
    """F.bilinear as at::bilinear runs it: both inputs flattened to rows, then
    _trilinear with nn.Bilinear's expansions (the bias is added after)."""
    x1, x2, w = s.input, s.args[0], s.args[1]
    x1, x2 = x1.reshape(-1, x1.shape[-1]), x2.reshape(-1, x2.shape[-1])
    dims = ([1, 3], [0], [1, 2], [2, 3])
    return Call("_trilinear", {"i1": x1, "i2": w, "i3": x2},
                lambda t, o: [t["i1"], t["i2"], t["i3"], *dims, 1],
                lambda t: (torch.ops.aten._trilinear(t["i1"], t["i2"], t["i3"], *dims, 1),))


def _trilinear_samples(dtype):
    """Hand cases (the OpInfo reaches one pattern only): other expansions,
    summed and unsummed unroll dims, broadcast size-1 dims, empty sums."""
    g = torch.Generator().manual_seed(7)

    def r(*shape):
        return torch.randn(*shape, generator=g).to(dtype)
    # (i1, i2, i3, expand1, expand2, expand3, sumdim, unroll_dim)
    yield SampleInput(r(4, 3), args=(r(5, 3, 6), r(4, 6), [1, 3], [0], [1, 2], [2, 3], 2))
    yield SampleInput(r(4, 3), args=(r(5, 3, 6), r(4, 6), [1, 3], [0], [1, 2], [2, 3], 0))
    yield SampleInput(r(4, 3), args=(r(5, 3, 6), r(4, 6), [1, 3], [0], [1, 2], [], 1))
    yield SampleInput(r(2, 3, 4), args=(r(3, 4), r(2, 4), [], [0], [1], [1], 2))
    yield SampleInput(r(1, 3), args=(r(5, 3, 6), r(4, 6), [1, 3], [0], [1, 2], [2, 3], 1))
    yield SampleInput(r(4, 0), args=(r(5, 0, 6), r(4, 6), [1, 3], [0], [1, 2], [2, 3], 1))


def _trilinear_hand(s):
    args = [s.input, *s.args[:2]]
    dims = [list(d) for d in s.args[2:6]]
    unroll = s.args[6]
    return Call("_trilinear", {"i1": args[0], "i2": args[1], "i3": args[2]},
                lambda t, o: [t["i1"], t["i2"], t["i3"], *dims, unroll],
                lambda t: (torch.ops.aten._trilinear(t["i1"], t["i2"], t["i3"], *dims, unroll),))


def _angle(s):
    return Call("angle", {"self": s.input}, lambda t, o: [t["self"]],
                lambda t: (torch.angle(t["self"]),))


def _gcd(s):
    return Call("gcd", {"self": s.input, "other": s.args[0]},
                lambda t, o: [t["self"], t["other"]],
                lambda t: (torch.gcd(t["self"], t["other"]),))


def _pow_call(base, exponent):
    """base ** exponent as the shim op generated code calls: a number is a
    double (the ABI's Scalar), so torch's answer takes it as a float too."""
    if isinstance(base, torch.Tensor) and isinstance(exponent, torch.Tensor):
        return Call("pow_Tensor_Tensor", {"self": base, "exponent": exponent},
                    lambda t, o: [t["self"], t["exponent"]],
                    lambda t: (torch.ops.aten.pow.Tensor_Tensor(t["self"], t["exponent"]),))
    if isinstance(base, torch.Tensor):
        if isinstance(exponent, complex):
            return None
        e = float(exponent)
        return Call("pow_Tensor_Scalar", {"self": base}, lambda t, o: [t["self"], e],
                    lambda t: (torch.ops.aten.pow.Tensor_Scalar(t["self"], e),))
    if isinstance(base, complex):
        return None
    b = float(base)
    return Call("pow_Scalar", {"exponent": exponent}, lambda t, o: [b, t["exponent"]],
                lambda t: (torch.ops.aten.pow.Scalar(b, t["exponent"]),))


def _pow(s):
    return _pow_call(s.input, s.args[0])


def _rpow(s):
    return _pow_call(s.args[0], s.input)


def _hann_window(s):
    n, dtype = s.input, s.kwargs["dtype"]
    return Call("hann_window", {}, lambda t, o: [n, DTYPE_CODES[dtype], None, None, 0, None],
                lambda t: (torch.hann_window(n, dtype=dtype),))


def _hann_window_samples(dtype):
    for n in (0, 1, 2, 3, 8, 25, 400):
        yield SampleInput(n, kwargs={"dtype": dtype})


def _zerotensor(s):
    size, dtype = s.input, s.kwargs["dtype"]
    return Call("_efficientzerotensor", {},
                lambda t, o: [size, DTYPE_CODES[dtype], None, None, 0, None],
                lambda t: (torch.zeros(size, dtype=dtype),))


def _zerotensor_samples(dtype):
    for size in ([], [0], [3], [2, 5, 4], [1, 0, 3]):
        yield SampleInput(size, kwargs={"dtype": dtype})


def _cat(s):
    names = [f"t{k}" for k in range(len(s.input))]
    dim = s.kwargs.get("dim", s.args[0] if s.args else 0)
    return Call("cat", dict(zip(names, s.input)), lambda t, o: [[t[n] for n in names], dim],
                lambda t: (torch.cat([t[n] for n in names], dim),))


def _pad(s):
    a = dict(zip(["pad", "mode", "value"], s.args)) | s.kwargs
    pad, mode, value = [int(v) for v in a["pad"]], a.get("mode", "constant"), a.get("value")
    value = None if value is None else float(value)
    return Call("pad", {"self": s.input}, lambda t, o: [t["self"], pad, mode, value],
                lambda t: (torch.ops.aten.pad(t["self"], pad, mode, value),))


def _scatter(s):
    dim, index, src = s.args
    if "reduce" in s.kwargs:
        return None  # scatter's reduce forms are other ops (scatter.reduce_out)
    if isinstance(src, torch.Tensor):
        return Call("scatter_src_out", {"self": s.input, "index": index, "src": src},
                    lambda t, o: [o["out"], t["self"], dim, t["index"], t["src"]],
                    lambda t: (torch.scatter(t["self"], dim, t["index"], t["src"]),),
                    out=("out",))
    if isinstance(src, complex):
        return None
    v = float(src)
    return Call("scatter_value_out", {"self": s.input, "index": index},
                lambda t, o: [o["out"], t["self"], dim, t["index"], v],
                lambda t: (torch.scatter(t["self"], dim, t["index"], v),), out=("out",))


def _index_put(s):
    indices, values = s.args
    accumulate = bool(s.kwargs.get("accumulate", False))
    names = [None if t is None else f"index{k}" for k, t in enumerate(indices)]
    inputs = ({"self": s.input, "values": values}
              | {n: t for n, t in zip(names, indices) if n is not None})
    def reference(t):
        # repeated indices without accumulate: torch cuda's default kernel
        # leaves the winner to whichever thread writes last; its deterministic
        # one (and torch cpu) let the last in index order win, as ours does
        before = torch.are_deterministic_algorithms_enabled()
        torch.use_deterministic_algorithms(True)
        try:
            return (torch.ops.aten.index_put(
                t["self"], [None if n is None else t[n] for n in names], t["values"],
                accumulate),)
        finally:
            torch.use_deterministic_algorithms(before)
    return Call("index_put", inputs,
                lambda t, o: [t["self"], [None if n is None else t[n] for n in names],
                              t["values"], int(accumulate)], reference)


def _index_put_samples(dtype):
    """Hand cases beyond the OpInfo's four: repeated indices accumulated,
    negative and int32 indices, indices in dims apart (their dims first),
    broadcast values, a mask over two dims, an empty selection."""
    g = torch.Generator().manual_seed(13)
    x = make_tensor((4, 5, 6), dtype=dtype, device="cpu")
    def vals(*shape):
        return make_tensor(shape, dtype=dtype, device="cpu")
    rep = torch.tensor([1, 3, 1, 1, -1])
    for acc in (False, True):
        yield SampleInput(x, args=((rep,), vals(5, 5, 6)), kwargs={"accumulate": acc})
        yield SampleInput(x, args=((None, rep.to(torch.int32)), vals(6)), kwargs={"accumulate": acc})
        yield SampleInput(x, args=((torch.tensor([0, 2]), None, torch.tensor([[5], [1]])),
                                   vals(2, 2, 5)), kwargs={"accumulate": acc})
        yield SampleInput(x, args=((torch.rand(4, 5, generator=g) > 0.5,), vals(1)),
                          kwargs={"accumulate": acc})
        yield SampleInput(x, args=((torch.zeros(4, dtype=torch.bool),), vals(5, 6)),
                          kwargs={"accumulate": acc})


def _histogram(s):
    bins = s.args[0] if s.args else s.kwargs.get("bins", 100)
    if isinstance(bins, torch.Tensor):
        return None  # histogram.bins_tensor: another op
    rng, weight, density = s.kwargs.get("range"), s.kwargs.get("weight"), s.kwargs.get("density", False)
    rng = None if rng is None else [float(v) for v in rng]
    return Call("histogram_bin_ct", {"self": s.input, "weight": weight},
                lambda t, o: [t["self"], int(bins), rng, t["weight"], int(density)],
                lambda t: tuple(torch.ops.aten.histogram.bin_ct(
                    t["self"], int(bins), range=rng, weight=t["weight"], density=density)))


def _histogramdd(s):
    bins = s.args[0] if s.args else s.kwargs["bins"]
    d = s.input.shape[-1]
    if isinstance(bins, int):
        bins = [bins] * d
    if any(isinstance(b, torch.Tensor) for b in bins):
        return None  # bin edges given as tensors: another op
    bins = [int(b) for b in bins]
    rng, weight, density = s.kwargs.get("range"), s.kwargs.get("weight"), s.kwargs.get("density", False)
    rng = None if rng is None else [float(v) for v in rng]
    return Call("_histogramdd_from_bin_cts", {"self": s.input, "weight": weight},
                lambda t, o: [t["self"], bins, rng, t["weight"], int(density)],
                lambda t: (torch.ops.aten._histogramdd_from_bin_cts(
                    t["self"], bins, range=rng, weight=t["weight"], density=density),))


def _index_reduce(s):
    dim, index, source, reduce = s.args
    include_self = bool(s.kwargs.get("include_self", True))
    return Call("index_reduce", {"self": s.input, "index": index, "source": source},
                lambda t, o: [t["self"], dim, t["index"], t["source"], reduce, int(include_self)],
                lambda t: (torch.index_reduce(t["self"], dim, t["index"], t["source"], reduce,
                                              include_self=include_self),))


def _segment_reduce(s):
    (reduce,) = s.args
    kw = s.kwargs
    axis, unsafe, initial = kw.get("axis", 0), bool(kw.get("unsafe", False)), kw.get("initial")
    initial = None if initial is None else float(initial)
    return Call("segment_reduce",
                {"data": s.input, "lengths": kw.get("lengths"), "offsets": kw.get("offsets")},
                lambda t, o: [t["data"], reduce, t["lengths"], None, t["offsets"], axis,
                              int(unsafe), initial],
                lambda t: (torch.ops.aten.segment_reduce(
                    t["data"], reduce, lengths=t["lengths"], offsets=t["offsets"], axis=axis,
                    unsafe=unsafe, initial=initial),),
                # torch's kernel reads lengths and offsets as if packed
                torch_packed=("lengths", "offsets"))

@dataclass(frozen=True)
class Adapter:
    opinfo: str  # OpInfo name (or the op's, for hand cases)
    variant: str  # OpInfo variant_test_name
    adapt: Callable
    # dtypes the cpu kernel runs; torch's others must be refused with an error
    dtypes: frozenset
    # hand cases where torch has no OpInfo: dtype -> SampleInputs, and the
    # dtypes torch's op takes
    samples: Callable | None = None
    torch_dtypes: frozenset = frozenset()
    label: str = ""  # the test's name when several ops serve one OpInfo

    @property
    def name(self) -> str:
        return self.label or self.opinfo + (f".{self.variant}" if self.variant else "")


_FFT_OPS = {torch.ops.aten._fft_c2c.default: "_fft_c2c", torch.ops.aten._fft_r2c.default: "_fft_r2c",
            torch.ops.aten._fft_c2r.default: "_fft_c2r"}


def _fft(public: str):
    """torch.fft.<public> on a sample calls one of the _fft_* ops after its
    own preparation (padding or trimming to n, integers made float, the
    conjugation hfft applies): the first such call, recorded as torch makes
    it, is the case (the inputs generated code hands the fallback op)."""
    from torch.utils._python_dispatch import TorchDispatchMode

    fn = getattr(torch.fft, public.split(".", 1)[1])

    class Record(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.call = None

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if self.call is None and func in _FFT_OPS:
                self.call = (func, args)
            return func(*args, **(kwargs or {}))

    def adapt(s):
        rec = Record()
        with rec:
            fn(s.input, *s.args, **s.kwargs)
        if rec.call is None:
            return None
        func, (x, dims, norm, last) = rec.call
        x = x.resolve_conj().resolve_neg().clone()
        dims, norm, last = [int(d) for d in dims], int(norm), int(last)
        return Call(_FFT_OPS[func], {"self": x}, lambda t, o: [t["self"], dims, norm, last],
                    lambda t: (func(t["self"], dims, norm, last),))

    return adapt



def _cholesky_solve(s):
    upper = bool(s.kwargs.get("upper", False))
    return Call("cholesky_solve", {"self": s.input, "input2": s.args[0]},
                lambda t, o: [t["self"], t["input2"], int(upper)],
                lambda t: (torch.cholesky_solve(t["self"], t["input2"], upper),))


def _cholesky_inverse(s):
    upper = bool(s.kwargs.get("upper", False))
    return Call("cholesky_inverse", {"self": s.input}, lambda t, o: [t["self"], int(upper)],
                lambda t: (torch.cholesky_inverse(t["self"], upper),))


def _triangular_solve(s):
    kw = {k: bool(s.kwargs.get(k, d)) for k, d in
          (("upper", True), ("transpose", False), ("unitriangular", False))}
    return Call("triangular_solve", {"self": s.input, "A": s.args[0]},
                lambda t, o: [t["self"], t["A"], *[int(v) for v in kw.values()]],
                lambda t: tuple(torch.triangular_solve(t["self"], t["A"], **kw)))


def _geqrf(s):
    return Call("geqrf", {"self": s.input}, lambda t, o: [t["self"]],
                lambda t: tuple(torch.geqrf(t["self"])))


def _ormqr(s):
    left, transpose = bool(s.kwargs.get("left", True)), bool(s.kwargs.get("transpose", False))
    return Call("ormqr", {"self": s.input, "input2": s.args[0], "input3": s.args[1]},
                lambda t, o: [t["self"], t["input2"], t["input3"], int(left), int(transpose)],
                lambda t: (torch.ormqr(t["self"], t["input2"], t["input3"], left, transpose),))


def _lu_unpack(s):
    data, pivots = bool(s.kwargs.get("unpack_data", True)), bool(s.kwargs.get("unpack_pivots", True))
    return Call("lu_unpack", {"LU_data": s.input, "LU_pivots": s.args[0]},
                lambda t, o: [t["LU_data"], t["LU_pivots"], int(data), int(pivots)],
                lambda t: tuple(torch.lu_unpack(t["LU_data"], t["LU_pivots"], data, pivots)))


def _addmm_activation(use_gelu):
    def adapt(s):
        beta, alpha = s.kwargs.get("beta", 1), s.kwargs.get("alpha", 1)
        return Call("_addmm_activation", {"self": s.input, "mat1": s.args[0], "mat2": s.args[1]},
                    lambda t, o: [t["self"], t["mat1"], t["mat2"], float(beta), float(alpha),
                                  int(use_gelu)],
                    lambda t: _addmm_activation_reference(t, beta, alpha, use_gelu))
    return adapt


def _addmm_activation_reference(t, beta, alpha, use_gelu):
    if t["mat1"].is_cuda and t["mat1"].shape[1] == 0:
        # an empty product: torch cuda returns beta * self and skips the
        # activation (its early return); the op is act(beta * self + 0),
        # with torch cuda's gelu (the tanh form)
        out = torch.addmm(t["self"], t["mat1"], t["mat2"], beta=beta, alpha=alpha)
        return (torch.nn.functional.gelu(out, approximate="tanh") if use_gelu
                else torch.relu(out),)
    return (torch.ops.aten._addmm_activation(t["self"], t["mat1"], t["mat2"], beta=beta,
                                             alpha=alpha, use_gelu=use_gelu),)


def _fused_rms_norm(s):
    shape = [int(d) for d in (s.args[0] if isinstance(s.args[0], (tuple, list)) else [s.args[0]])]
    weight = s.args[1] if len(s.args) > 1 else s.kwargs.get("weight")
    eps = s.kwargs.get("eps")
    eps = None if eps is None else float(eps)
    return Call("_fused_rms_norm", {"input": s.input, "weight": weight},
                lambda t, o: [t["input"], shape, t["weight"], eps],
                lambda t: tuple(torch.ops.aten._fused_rms_norm(t["input"], shape, t["weight"], eps)))


def _grouped_mm(s):
    offs = s.kwargs.get("offs")
    return Call("_grouped_mm", {"self": s.input, "mat2": s.args[0], "offs": offs},
                lambda t, o: [t["self"], t["mat2"], t["offs"], None, None],
                lambda t: (torch._grouped_mm(t["self"], t["mat2"], t["offs"]),))


def _grouped_mm_samples(dtype):
    """Hand cases (no OpInfo): every operand-rank combination torch's CPU
    _grouped_mm takes, offsets covering the grouped dimension (empty groups
    included), row-major and column-major operands, N not a multiple of the
    16-byte row (torch pads out's rows)."""
    g = torch.Generator().manual_seed(6)

    def r(*shape):
        return torch.randn(*shape, generator=g).to(dtype)

    def o(*ends):
        return torch.tensor(ends, dtype=torch.int32)

    yield SampleInput(r(12, 16), args=(r(3, 16, 8),), kwargs={"offs": o(4, 4, 12)})
    yield SampleInput(r(10, 16), args=(r(2, 24, 16).mT,), kwargs={"offs": o(3, 10)})
    yield SampleInput(r(3, 6, 16), args=(r(16, 24),), kwargs={"offs": o(8, 16, 24)})
    yield SampleInput(r(3, 5, 16), args=(r(40, 16).mT,), kwargs={"offs": o(16, 16, 40)})
    yield SampleInput(r(6, 32), args=(r(32, 8),), kwargs={"offs": o(8, 16, 32)})
    if dtype != torch.bfloat16:  # torch cuda's bfloat16 kernel asserts on an empty 2-D x 2-D group
        yield SampleInput(r(6, 32), args=(r(32, 8),), kwargs={"offs": o(0, 32)})
    yield SampleInput(r(3, 6, 16), args=(r(3, 16, 8),))
    yield SampleInput(r(2, 16, 8).mT, args=(r(2, 5, 16).mT,))


_LINALG = frozenset({torch.float32, torch.float64, torch.complex64, torch.complex128})

_FFT_DTYPES = frozenset(INTS | {torch.bool, torch.float32, torch.float64} | set(COMPLEX_DTYPES))
_FLOAT3 = frozenset({torch.float32, torch.float64, torch.bfloat16})
_GEMM = frozenset({torch.float32, torch.float64, torch.bfloat16, torch.float16})
_NUMERIC = frozenset(FLOATS | INTS)
_REDUCED = frozenset({torch.bfloat16, torch.float16})

ADAPTERS = [
    Adapter("mm", "", _mm, _GEMM),
    Adapter("bmm", "", _bmm, _GEMM),
    Adapter("addmm", "", _addmm, _GEMM),
    Adapter("baddbmm", "", _baddbmm, _GEMM),
    Adapter("addmv", "", _addmv, _GEMM),
    Adapter("addbmm", "", _addbmm, _GEMM),
    Adapter("cumsum", "", _cumulative("cumsum"), _NUMERIC),
    Adapter("cumprod", "", _cumulative("cumprod"), _NUMERIC),
    Adapter("topk", "", _topk, _NUMERIC),
    Adapter("sort", "", _sort, _NUMERIC | {torch.bool}),
    Adapter("sort", "", _sort_unstable, _NUMERIC | {torch.bool}, label="sort.unstable"),
    Adapter("kthvalue", "", _kthvalue, _NUMERIC),
    Adapter("mode", "", _mode, _NUMERIC | {torch.bool}),
    *[Adapter(name, "", _median(name), _NUMERIC) for name in ("median", "nanmedian")],
    *[Adapter(name, "", _cumulative_extremum(name), _NUMERIC | {torch.bool})
      for name in ("cummax", "cummin")],
    Adapter("logcumsumexp", "", _logcumsumexp, frozenset(FLOATS)),
    Adapter("searchsorted", "", _searchsorted, _NUMERIC),
    Adapter("nonzero", "", _nonzero, _NUMERIC | {torch.bool}),
    Adapter("nonzero_static", "", _nonzero_static, _NUMERIC | {torch.bool}),
    Adapter("index_Tensor", "", _index, _NUMERIC | {torch.bool}, samples=_index_samples,
            torch_dtypes=_NUMERIC | {torch.bool}),
    Adapter("masked_scatter", "", _masked_scatter, _NUMERIC | {torch.bool}),
    Adapter("searchsorted_Scalar", "", _searchsorted_scalar, _NUMERIC,
            samples=_searchsorted_scalar_samples, torch_dtypes=_NUMERIC),
    Adapter("bucketize", "", _bucketize, _NUMERIC),
    Adapter("repeat_interleave_Tensor", "", _repeat_interleave,
            frozenset({torch.int32, torch.int64}), samples=_repeat_interleave_samples,
            torch_dtypes=frozenset({torch.int32, torch.int64})),
    Adapter("masked_select", "", _masked_select, _NUMERIC | {torch.bool}),
    *[Adapter("scatter_reduce", r, _scatter_reduce, _NUMERIC)
      for r in ("sum", "prod", "mean", "amax", "amin")],
    *[Adapter(f"nn.functional.conv{'_transpose' if tr else ''}{n}d", "", _conv(n, tr), _FLOAT3)
      for tr in (False, True) for n in (1, 2, 3)],
    Adapter("nn.functional.scaled_dot_product_attention", "", _sdpa,
            frozenset(FLOATS)),
    Adapter("histc", "", _histc, frozenset(FLOATS)),
    *[Adapter(f"fft.{name}", "", _fft(f"fft.{name}"), _FFT_DTYPES)
      for name in ("fft", "fftn", "ifft", "rfft", "rfftn", "irfft", "irfftn", "hfft")],

    Adapter("nn.functional.adaptive_avg_pool3d", "", _adaptive_pool3d(False), frozenset(FLOATS)),
    Adapter("nn.functional.adaptive_max_pool3d", "", _adaptive_pool3d(True), frozenset(FLOATS)),
    Adapter("_int_mm", "", _int_mm, frozenset({torch.int8}), samples=_int_mm_samples,
            torch_dtypes=frozenset({torch.int8})),
    *[Adapter("nn.functional.embedding_bag", "", _embedding_bag(name), frozenset(FLOATS),
              label=name) for name in ("_embedding_bag", "_embedding_bag_forward_only")],
    Adapter("_weight_int8pack_mm", "", _weight_int8pack_mm, _REDUCED | {torch.float32},
            samples=_weight_int8pack_samples, torch_dtypes=_REDUCED | {torch.float32}),
    # pooling, grid sampling, distances, _trilinear
    Adapter("nn.functional.adaptive_avg_pool2d", "", _adaptive_pool2d(False), frozenset(FLOATS)),
    Adapter("nn.functional.adaptive_max_pool2d", "", _adaptive_pool2d(True), frozenset(FLOATS)),
    *[Adapter(f"nn.functional.avg_pool{n}d", "", _avg_pool(n), frozenset(FLOATS)) for n in (2, 3)],
    *[Adapter(f"nn.functional.max_pool{n}d", "", _max_pool(n), frozenset(FLOATS)) for n in (2, 3)],
    *[Adapter(f"nn.functional.fractional_max_pool{n}d", "", _fractional_max_pool(n),
              frozenset(FLOATS)) for n in (2, 3)],
    *[Adapter(f"nn.functional.max_unpool{n}d", "", _max_unpool(n), frozenset(FLOATS))
      for n in (2, 3)],
    Adapter("nn.functional.grid_sample", "", _grid_sample_3d, frozenset(FLOATS)),
    Adapter("cdist", "", _cdist, frozenset({torch.float32, torch.float64})),
    Adapter("nn.functional.pdist", "", _pdist, frozenset({torch.float32, torch.float64})),
    Adapter("nn.functional.bilinear", "", _bilinear, frozenset(FLOATS)),
    Adapter("_trilinear", "", _trilinear_hand, frozenset(FLOATS), samples=_trilinear_samples,
            torch_dtypes=frozenset(FLOATS)),

    # linear algebra over LAPACK and the matmul family
    *[Adapter(name, "", fn, _LINALG) for name, fn in (
        ("cholesky_solve", _cholesky_solve), ("cholesky_inverse", _cholesky_inverse),
        ("triangular_solve", _triangular_solve), ("geqrf", _geqrf), ("ormqr", _ormqr),
        ("lu_unpack", _lu_unpack))],
    *[Adapter("addmm", "", _addmm_activation(gelu), _GEMM,
              label=f"_addmm_activation.{'gelu' if gelu else 'relu'}") for gelu in (False, True)],
    Adapter("nn.functional.rms_norm", "", _fused_rms_norm, frozenset(FLOATS)),
    Adapter("_grouped_mm", "", _grouped_mm, frozenset({torch.float32, torch.bfloat16, torch.float16}),
            samples=_grouped_mm_samples,
            torch_dtypes=frozenset({torch.float32, torch.bfloat16, torch.float16})),

    # pointwise, factories, cat, pad, scatter and index_put
    Adapter("angle", "", _angle, _NUMERIC | {torch.bool} | set(COMPLEX_DTYPES)),
    Adapter("gcd", "", _gcd, frozenset(INTS)),
    Adapter("pow", "", _pow, _NUMERIC | set(COMPLEX_DTYPES)),
    Adapter("__rpow__", "", _rpow, _NUMERIC | set(COMPLEX_DTYPES)),
    Adapter("hann_window", "", _hann_window, frozenset(FLOATS), samples=_hann_window_samples,
            torch_dtypes=frozenset(FLOATS)),
    Adapter("_efficientzerotensor", "", _zerotensor, _NUMERIC | {torch.bool},
            samples=_zerotensor_samples, torch_dtypes=_NUMERIC | {torch.bool}),
    Adapter("cat", "", _cat, _NUMERIC | {torch.bool} | set(COMPLEX_DTYPES)),
    *[Adapter("nn.functional.pad", v, _pad, _NUMERIC | {torch.bool} | set(COMPLEX_DTYPES))
      for v in ("constant", "reflect", "replicate", "replicate_negative", "circular")],
    Adapter("scatter", "", _scatter, _NUMERIC | {torch.bool}),
    Adapter("index_put", "", _index_put, _NUMERIC | {torch.bool}),
    Adapter("index_put", "", _index_put, _NUMERIC | {torch.bool}, samples=_index_put_samples,
            torch_dtypes=_NUMERIC | {torch.bool}, label="index_put.hand"),
    Adapter("histogram", "", _histogram, frozenset({torch.float32, torch.float64})),
    Adapter("histogramdd", "", _histogramdd, frozenset({torch.float32, torch.float64})),
    *[Adapter("index_reduce", r, _index_reduce, _NUMERIC) for r in ("prod", "mean", "amax", "amin")],
    *[Adapter("_segment_reduce", v, _segment_reduce, frozenset(FLOATS)) for v in ("lengths", "offsets")],
]

# The adapters whose ops have a cuda kernel, with the dtypes it runs (the
# others of torch's must be refused with an error); the OpInfo module runs
# these on cuda against torch cuda when a GPU is present.
CUDA_DTYPES = {
    "mm": _GEMM, "bmm": _GEMM, "addmm": _GEMM,
    "nonzero": _NUMERIC | {torch.bool},
    "histc": frozenset(FLOATS),
    # (_int_mm: its samples are made on the cpu; tests/gpu/test_cuda_int8_mm.py
    # checks the cuda kernel exactly in nine layouts)
    # float64 bags are refused on cuda (torch cuda's offset2bag differs there)
    "_embedding_bag": frozenset(FLOATS - {torch.float64}),
    "_embedding_bag_forward_only": frozenset(FLOATS - {torch.float64}),
    "_weight_int8pack_mm": _REDUCED | {torch.float32},
    "cumsum": _NUMERIC, "cumprod": _NUMERIC, "logcumsumexp": frozenset(FLOATS),
    "cummax": _NUMERIC | {torch.bool}, "cummin": _NUMERIC | {torch.bool},
    # (kthvalue and mode: torch cuda's index among equal elements is its
    # kernel's own; the adapters check the values the indices point at)
    "kthvalue": _NUMERIC, "mode": _NUMERIC | {torch.bool},
    "median": _NUMERIC, "nanmedian": _NUMERIC,
    "searchsorted": _NUMERIC, "bucketize": _NUMERIC,
    # (an integer sequence meets the number in float32, as integer inputs of
    # angle and of pow with a number do: cuda copies convert them)
    "searchsorted_Scalar": _NUMERIC,
    # (torch cuda has no float16/bfloat16 angle)
    **{f"nn.functional.pad.{v}": _NUMERIC | {torch.bool} | set(COMPLEX_DTYPES)
       for v in ("constant", "reflect", "replicate", "replicate_negative", "circular")},
    "angle": frozenset({torch.float32, torch.float64, torch.bool} | set(INTS) | set(COMPLEX_DTYPES)),
    "gcd": frozenset(INTS),
    "pow": _NUMERIC | set(COMPLEX_DTYPES),
    "__rpow__": _NUMERIC | set(COMPLEX_DTYPES),
    "hann_window": frozenset(FLOATS),
    "nn.functional.rms_norm": frozenset(FLOATS),
    "nn.functional.grid_sample": frozenset(FLOATS),
    "cdist": frozenset({torch.float32, torch.float64}),
    "nn.functional.pdist": frozenset({torch.float32, torch.float64}),
    "nn.functional.bilinear": frozenset(FLOATS), "_trilinear": frozenset(FLOATS),
    "_addmm_activation.relu": _GEMM, "_addmm_activation.gelu": _GEMM,
    # linalg over cuSOLVER and cuBLAS; lu_unpack by kernels of our own
    **{name: _LINALG for name in ("cholesky_solve", "cholesky_inverse", "triangular_solve",
                                  "geqrf", "ormqr", "lu_unpack")},
    "_grouped_mm": frozenset({torch.float32, torch.bfloat16, torch.float16}),
    # indexing, scatter and segment reductions
    "index_Tensor": _NUMERIC | {torch.bool}, "masked_scatter": _NUMERIC | {torch.bool},
    "masked_select": _NUMERIC | {torch.bool},
    "repeat_interleave_Tensor": frozenset({torch.int32, torch.int64}),
    **{f"scatter_reduce.{r}": _NUMERIC for r in ("sum", "prod", "mean", "amax", "amin")},
    "scatter": _NUMERIC | {torch.bool}, "index_put": _NUMERIC | {torch.bool},
    "index_put.hand": _NUMERIC | {torch.bool},
    **{f"index_reduce.{r}": _NUMERIC for r in ("prod", "mean", "amax", "amin")},
    **{f"_segment_reduce.{v}": frozenset(FLOATS) for v in ("lengths", "offsets")},
    # pooling
    **{f"nn.functional.{name}": frozenset(FLOATS) for name in (
        "avg_pool2d", "avg_pool3d", "max_pool2d", "max_pool3d",
        "adaptive_avg_pool2d", "adaptive_avg_pool3d", "adaptive_max_pool2d",
        "adaptive_max_pool3d", "fractional_max_pool2d", "fractional_max_pool3d",
        "max_unpool2d", "max_unpool3d")},
    # (not topk and the unstable sort: torch cuda's order among equal
    # elements is its kernel's own; tests/gpu checks them by the values their
    # indices point at)
    # (bool is refused on cuda: its tie order was not torch's)
    "sort": _NUMERIC,
    # the transforms reaching _fft_c2c and _fft_r2c (torch declares no cuda
    # _fft_c2r entry: irfft and hfft are tested through aotishim__fft_c2r)
    **{f"fft.{name}": _FFT_DTYPES for name in ("fft", "fftn", "ifft", "rfft", "rfftn")},
}


# ------------------------------------------------------------------ layouts


def _filler(dtype):
    if dtype in FLOATS or dtype in COMPLEX_DTYPES:
        return float("nan")
    if dtype == torch.bool:
        return True
    return torch.iinfo(dtype).max


def in_layout(t: torch.Tensor | None, layout: str) -> torch.Tensor | None:
    """t's values in another memory layout (None: the layout does not apply)."""
    if t is None or layout == "sample":
        return t
    if layout == "gaps":  # every other element of the last dim; NaN between
        if t.dim() == 0:
            return None
        buf = torch.full(t.shape[:-1] + (2 * t.shape[-1],), _filler(t.dtype), dtype=t.dtype)
        view = buf[..., ::2]
        view.copy_(t)
        return view
    if layout == "reversed":  # dims in memory in reverse order
        if t.dim() < 2:
            return None
        rev = list(range(t.dim()))[::-1]
        return t.permute(rev).contiguous().permute(rev)
    if layout == "offset":
        buf = torch.full((t.numel() + 3,), _filler(t.dtype), dtype=t.dtype)
        view = buf[3:].view(t.shape)
        view.copy_(t)
        return view
    if layout == "channels_last":
        if t.dim() == 4:
            return t.contiguous(memory_format=torch.channels_last)
        if t.dim() == 5:
            return t.contiguous(memory_format=torch.channels_last_3d)
        return None
    raise ValueError(layout)


# ------------------------------------------------------------------ shim side


def _numpy(t: torch.Tensor) -> np.ndarray:
    t = t.detach().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16).copy()
    return t.numpy().copy()


def to_device(t: torch.Tensor, device: str) -> shim.Tensor:
    """A shim view on `device` with t's sizes, strides and storage offset
    over a copy of t's whole storage (gaps included)."""
    storage = t.untyped_storage()
    n = storage.nbytes() // t.element_size()
    flat = torch.empty(0, dtype=t.dtype).set_(storage, 0, (n,), (1,))
    base = shim.from_numpy(_numpy(flat), copy=True, device=device)
    view = shim.reinterpret_tensor(base, list(t.shape), list(t.stride()), t.storage_offset())
    shim.delete(base)
    return view


def torch_on(t: torch.Tensor | None, device: str) -> torch.Tensor | None:
    """t's storage copied to torch's `device`, viewed with t's sizes, strides
    and offset (gaps included)."""
    if t is None or device == "cpu":
        return t
    storage = t.untyped_storage()
    n = storage.nbytes() // t.element_size()
    flat = torch.empty(0, dtype=t.dtype).set_(storage, 0, (n,), (1,)).to(device)
    return flat.as_strided(t.shape, t.stride(), t.storage_offset())


def from_device(t: shim.Tensor) -> torch.Tensor:
    a = shim.to_numpy(t)
    if a.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16)
    return torch.from_numpy(a.copy())


def _within_torch_error(got, want, exact, extra: float = 0.0) -> bool:
    """Is ours as close to the float64 answer as torch's own result?

    float16/bfloat16: at least as close (torch rounds intermediates in some
    kernels). float32 and complex64 (against complex128): within a few times torch's own error plus a float32
    rounding of the result's scale: a long sum's rounding depends on the BLAS
    and the machine (torch on MKL, ours on OpenBLAS), each missing the exact
    answer its own way; a wrong result misses by far more. `extra`: what the
    op's conditioning adds (Call.rounding_bound)."""
    wide = torch.complex128 if want.is_complex() else torch.float64
    exact = exact.to(wide)
    ours = (got.to(wide) - exact).abs().nan_to_num(0).max()
    theirs = (want.to(wide) - exact).abs().nan_to_num(0).max()
    if want.dtype in (torch.float32, torch.complex64):
        scale = exact.abs().nan_to_num(0).max()
        bound = 4 * theirs + 2 * torch.finfo(torch.float32).eps * scale + extra
    else:
        bound = theirs
    return bool(ours <= bound) and bool(torch.equal(got.isnan(), want.isnan()))


def _compare(i, got: shim.Tensor, want: torch.Tensor, value: torch.Tensor, check_strides: bool,
             exact: Callable, extra: float = 0.0) -> list[str]:
    """got against torch: dtype, sizes, strides (of outputs the op made) from
    `want`, values from `value`; `exact()`: the float64 answer."""
    if got.dtype != RESULT_DTYPES.get(want.dtype):
        return [f"output {i}: dtype {got.dtype}, torch {want.dtype}"]
    if got.sizes != list(want.shape):
        return [f"output {i}: sizes {got.sizes}, torch {list(want.shape)}"]
    problems = []
    if check_strides and want.numel() > 1 and got.strides != list(want.stride()):
        problems.append(f"output {i}: strides {got.strides}, torch {list(want.stride())}")
    values = from_device(got)
    try:
        torch.testing.assert_close(values, value.contiguous(), equal_nan=True, check_stride=False)
    except AssertionError as e:
        if not (want.dtype in (torch.float16, torch.bfloat16, torch.float32, torch.complex64)
                and _within_torch_error(values, value, exact()[i], extra)):
            problems.append(f"output {i}: values differ: {str(e).splitlines()[2:4]}")
    return problems


def _compare_canonical(got: shim.Tensor, want: torch.Tensor, canonical: Callable, inputs: dict,
                       check_strides: bool) -> list[str]:
    """A value output where several answers are equally good: dtype, sizes and
    strides as torch's, and canonical(inputs, values) equal to torch's."""
    if got.dtype != RESULT_DTYPES.get(want.dtype) or got.sizes != list(want.shape):
        return [f"output 0: {got.dtype} {got.sizes}, torch {want.dtype} {list(want.shape)}"]
    if check_strides and want.numel() > 1 and got.strides != list(want.stride()):
        return [f"output 0: strides {got.strides}, torch {list(want.stride())}"]
    try:
        torch.testing.assert_close(canonical(inputs, from_device(got)), canonical(inputs, want),
                                   rtol=0, atol=0, check_stride=False)
    except AssertionError as e:
        return [f"output 0: not an answer as good as torch's: {str(e).splitlines()[2:4]}"]
    return []


def _compare_gathered(got: shim.Tensor, want: torch.Tensor, values: torch.Tensor,
                      gather: Callable, inputs: dict) -> list[str]:
    """An index output where torch may pick any of equal elements: dtype,
    sizes and strides as torch's, and the elements it points at are torch's
    values."""
    if got.dtype != SHIM_DTYPES.get(want.dtype) or got.sizes != list(want.shape):
        return [f"output 1: {got.dtype} {got.sizes}, torch {want.dtype} {list(want.shape)}"]
    if want.numel() > 1 and got.strides != list(want.stride()):
        return [f"output 1: strides {got.strides}, torch {list(want.stride())}"]
    try:
        pointed = gather(inputs, from_device(got))
    except (RuntimeError, IndexError) as e:  # an index out of range
        return [f"output 1: indices unusable: {e}"]
    try:
        torch.testing.assert_close(pointed, values, equal_nan=True, rtol=0, atol=0,
                                   check_stride=False)
    except AssertionError as e:
        return [f"output 1: indices point at other values: {str(e).splitlines()[2:4]}"]
    return []


def _to_cpu(outputs: tuple) -> tuple:
    """torch's outputs on the cpu, each with the strides it had on its device."""
    return tuple(o if o is None or o.device.type == "cpu"
                 else torch.empty_strided(o.shape, o.stride(), dtype=o.dtype,
                                          device="cpu").copy_(o)
                 for o in outputs)


_WIDER = {torch.float16: torch.float64, torch.bfloat16: torch.float64,
          torch.complex64: torch.complex128}


def _upcast(inputs: dict) -> dict:
    return {n: t.to(_WIDER[t.dtype]) if t is not None and t.dtype in _WIDER else t
            for n, t in inputs.items()}


def _reference(call: Call, inputs: dict, tdev: str) -> tuple:
    """torch's outputs for `inputs` (on torch's `tdev`), on the cpu. A factory
    op (no tensor inputs: hann_window) makes its output on `tdev` too: torch
    cpu and torch cuda compute some of them differently (hann_window's step
    for float16/bfloat16)."""
    if any(t is not None for t in inputs.values()):
        return _to_cpu(call.reference(inputs))
    with torch.device(tdev):
        outputs = call.reference(inputs)
    return _to_cpu(outputs)


def run_case(call: Call, layout: str, device: str) -> list[str] | None:
    """Differences from torch for `call` with its inputs in `layout` on
    `device`; None when the layout does not apply or torch refuses the inputs."""
    inputs = {}
    for name, t in call.inputs.items():
        inputs[name] = in_layout(t, layout)
        if t is not None and inputs[name] is None:
            inputs[name] = t  # keep this input as it is
    if layout != "sample" and all(inputs[n] is call.inputs[n] for n in inputs):
        return None  # nothing to vary
    # fresh packed copies (contiguous() would keep a contiguous view's offset)
    packed = {n: None if t is None else t.clone(memory_format=torch.contiguous_format)
              for n, t in inputs.items()}
    # torch's answers on the device itself (cuda: torch cuda's kernels and
    # output layouts), as cpu tensors with the strides torch gave them
    tdev = device.split(":")[0]
    on_tdev = {n: torch_on(t, tdev) for n, t in inputs.items()}
    packed_tdev = {n: torch_on(t, tdev) for n, t in packed.items()}
    # factory references (hann_window, ...) make their tensors on the device
    # too: torch cpu and torch cuda round some of them differently
    try:
        want = _reference(call, {n: packed_tdev[n] if n in call.torch_packed else t
                                 for n, t in on_tdev.items()}, tdev)
    except (RuntimeError, ValueError, IndexError):
        return None  # torch refuses these inputs: no answer to compare with
    made = []
    try:
        shims = {n: None if t is None else to_device(t, device) for n, t in inputs.items()}
        made += [t for t in shims.values() if t is not None]
        outs = {}
        for n, w in zip(call.out, want):
            outs[n] = shim.empty_strided(list(w.shape), None, RESULT_DTYPES[w.dtype], device)
            made.append(outs[n])
        try:
            result = shim.call_op(call.op, *call.args(shims, outs), entry=tdev)
        except ShimError as e:
            return [f"refused: {e}"]
        if call.out:
            got = [outs[n] for n in call.out]
        else:
            got = list(result) if isinstance(result, tuple) else [result]
            made += [g for g in got if g is not None]
        value = _reference(call, packed_tdev, tdev) if call.packed_reference else want
        exact_from = packed_tdev if call.packed_reference else on_tdev
        problems = []
        for i in range(len(want)):
            # torch cpu's choice among equally good answers is a fixed rule
            # ours follows; torch cuda's follows its reduction order
            loose = call.canonical is not None and tdev == "cuda"
            if i == 1 and call.gather is not None:
                # the indices point at our values where those may be others
                # equally good, else at torch's
                chosen = from_device(got[0]) if loose else want[0]
                problems += _compare_gathered(got[1], want[1], chosen, call.gather, inputs)
                continue
            if i == 0 and loose:
                problems += _compare_canonical(got[0], want[0], call.canonical, inputs,
                                               not call.out)
                continue
            extra = call.rounding_bound(packed) if call.rounding_bound and i == 0 else 0.0
            problems += _compare(i, got[i], want[i], value[i], not call.out,
                                 lambda: _reference(call, _upcast(exact_from), tdev), extra)
        return problems
    finally:
        for t in made:
            shim.delete(t)

