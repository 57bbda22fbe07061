"""The mps device's Metal kernels (csrc/devices/mps/kernels/*.metal) run on
the host Metal (a build with AOTISHIM_METAL_HOST=ON: MSL compiled as C++ by
clang and dispatched with Metal's grid, threadgroup and SIMD-group
semantics), against torch eager on views as they lie in memory (offsets,
strides, permutations, channels-last), float32/float16/bfloat16; and the
runtime's own semantics: edge threadgroups, barriers, SIMD-group functions,
errors for a barrier not every thread reaches, compile errors, stores past a
buffer.

The parameter structs are the real ones (kernels/params.h) and the dispatch
shapes those of the device code (mps_device.cpp, mps_gemm.cpp, mps_conv.cpp,
mps_sdpa.cpp). Last, the mps device over the host Metal: fresh memory is
poisoned, also where a freed address comes back.
Skipped when the build has no host Metal; with AOTISHIM_REQUIRE_MPS=1 on
Linux a missing host Metal is an error (on macOS the host Metal is not built:
the real device runs there).
"""

from __future__ import annotations

import math
import os
import sys

import pytest

import aotishim._core as core

torch = pytest.importorskip("torch")

from device_op_cases import CONV_CASES, TOL, TORCH, conv_inputs, conv_reference, layout  # noqa: E402

hm = getattr(core, "host_metal", None)
if hm is None and os.environ.get("AOTISHIM_REQUIRE_MPS") == "1" and sys.platform.startswith("linux"):
    raise RuntimeError("AOTISHIM_REQUIRE_MPS=1 but this build has no host Metal "
                       "(build with -DAOTISHIM_METAL_HOST=ON)")
pytestmark = pytest.mark.skipif(hm is None, reason="built without AOTISHIM_METAL_HOST")

DTYPES = ["float32", "float16", "bfloat16"]
DT_CODE = {torch.uint8: 0, torch.int8: 1, torch.int16: 2, torch.int32: 3, torch.int64: 4,
           torch.float16: 5, torch.float32: 6, torch.float64: 7, torch.bool: 11, torch.bfloat16: 15}


@pytest.fixture(scope="module")
def lib():
    return hm.Library(hm.builtin_source())


# ---------------------------------------------------------------- buffers over views

def storage_of(t: torch.Tensor) -> torch.Tensor:
    return torch.empty(0, dtype=t.dtype).set_(t.untyped_storage())


def input_buffer(t: torch.Tensor, label: str):
    """t's whole storage in a buffer of exactly its size, bound at t's offset."""
    raw = storage_of(t).view(torch.uint8) if t.dtype != torch.bool else storage_of(t).view(torch.uint8)
    buf = hm.Buffer(max(1, raw.numel()), label)
    buf.write(raw.numpy())
    return (buf, t.storage_offset() * t.element_size())


class Output:
    """A fresh (poisoned) buffer for a view laid out like `like`; after the
    dispatch, the view's values, with a check that nothing else in the
    storage was written."""

    def __init__(self, like: torch.Tensor, label: str):
        self.like = like
        self.nbytes = like.untyped_storage().nbytes()
        self.buf = hm.Buffer(self.nbytes, label)

    @property
    def binding(self):
        return (self.buf, self.like.storage_offset() * self.like.element_size())

    def result(self) -> torch.Tensor:
        raw = torch.frombuffer(bytearray(self.buf.read()), dtype=torch.uint8)
        whole = raw.view(self.like.dtype)
        view = whole.as_strided(self.like.shape, self.like.stride(), self.like.storage_offset())
        # Bytes of the storage outside the view keep the poison.
        mark = torch.zeros(whole.numel(), dtype=torch.bool)
        mark.as_strided(self.like.shape, self.like.stride(), self.like.storage_offset()).fill_(True)
        outside = raw.view(-1, self.like.element_size())[~mark]
        assert bool((outside == 0xFF).all()), "the kernel wrote storage outside the output view"
        return view.clone()


def strided_like(shape, dtype, kind: str) -> torch.Tensor:
    """An uninitialised view of `shape` in a given layout: contiguous,
    permuted (dims reversed), padded (a slice of wider rows at an offset)."""
    if kind == "contiguous":
        return torch.empty(shape, dtype=dtype)
    if kind == "permuted":
        return torch.empty(tuple(reversed(shape)), dtype=dtype).permute(*reversed(range(len(shape))))
    if kind == "padded":
        big = torch.empty((*shape[:-1], shape[-1] + 3), dtype=dtype)
        flat = torch.empty(big.numel() + 7, dtype=dtype)
        return flat[7:].view(big.shape)[..., 1:1 + shape[-1]]
    raise ValueError(kind)


def assert_close(got: torch.Tensor, want: torch.Tensor, dtype: str):
    w = want.to(TORCH[dtype]).double()
    g = got.double()
    tol = TOL[dtype]
    torch.testing.assert_close(g, w, rtol=tol, atol=tol * max(1.0, float(w.abs().max())))


# ---------------------------------------------------------------- strided copy / conversions

def random_of(dtype, shape, gen):
    if dtype == torch.bool:
        return torch.rand(shape, generator=gen) > 0.5
    if dtype.is_floating_point:
        return (torch.randn(shape, generator=gen) * 30).to(dtype)
    lo = 0 if dtype == torch.uint8 else -100
    return torch.randint(lo, 100, shape, generator=gen).to(dtype)


COPY_PAIRS = [
    (torch.float32, torch.float32), (torch.float32, torch.float16), (torch.float32, torch.bfloat16),
    (torch.float16, torch.float32), (torch.bfloat16, torch.float32), (torch.float16, torch.bfloat16),
    (torch.float32, torch.int32), (torch.float16, torch.int64), (torch.bfloat16, torch.int16),
    (torch.int32, torch.float32), (torch.int64, torch.float16), (torch.int8, torch.bfloat16),
    (torch.int64, torch.int8), (torch.uint8, torch.int32), (torch.int16, torch.int64),
    (torch.float32, torch.bool), (torch.int32, torch.bool), (torch.bool, torch.float16),
    (torch.bool, torch.int64), (torch.int64, torch.int64), (torch.float16, torch.float16),
    (torch.uint8, torch.uint8), (torch.float64, torch.float64),  # float64: copied, never converted
]


@pytest.mark.parametrize("src_dtype,dst_dtype", COPY_PAIRS, ids=lambda d: str(d).replace("torch.", ""))
@pytest.mark.parametrize("layouts", [("permuted", "contiguous"), ("padded", "permuted")])
def test_copy_matches_torch(lib, src_dtype, dst_dtype, layouts):
    gen = torch.Generator().manual_seed(1)
    shape = (3, 5, 7)
    src = strided_like(shape, src_dtype, layouts[0])
    src.copy_(random_of(src_dtype, shape, gen))
    if src_dtype.is_floating_point and not dst_dtype.is_floating_point and dst_dtype != torch.bool:
        src.copy_(src.trunc() + 0.25 * torch.sign(src))  # away from integers: truncation shows
    if src_dtype.is_floating_point:
        src[0, 0, 0] = 0.0  # zero -> bool False
    dst_like = strided_like(shape, dst_dtype, layouts[1])
    out = Output(dst_like, "dst")
    p = hm.CopyParams()
    p.ndim = 3
    p.sizes = list(shape)
    p.dst_strides = list(dst_like.stride())
    p.src_strides = list(src.stride())
    p.dst_dtype = DT_CODE[dst_dtype]
    p.src_dtype = DT_CODE[src_dtype]
    dispatch_copy(lib, out, src, p)
    got = out.result()
    want = src.to(dst_dtype)
    assert got.dtype == want.dtype
    assert torch.equal(got, want), (got, want)


def dispatch_copy(lib, out, src, p):
    numel = math.prod(src.shape)
    # mps_device.cpp: one row of min(numel, maxTotalThreadsPerThreadgroup) threads per group.
    hm.dispatch_threads(lib.function("aotishim_copy"), [numel], [min(numel, hm.MAX_THREADS_PER_THREADGROUP)],
                        {0: out.binding, 1: input_buffer(src, "src"), 2: p.to_bytes()})


@pytest.mark.parametrize("shape,perm", [((2,) * 8, (7, 0, 6, 1, 5, 2, 4, 3)),  # the most dims CopyParams holds
                                        ((37, 41), (1, 0))])                   # 2 groups, the 2nd partial
def test_copy_many_dims_and_groups(lib, shape, perm):
    gen = torch.Generator().manual_seed(4)
    src = torch.randn(shape, generator=gen).permute(*perm)
    dst_like = strided_like(tuple(src.shape), torch.bfloat16, "padded")
    out = Output(dst_like, "dst")
    p = hm.CopyParams()
    p.ndim = src.dim()
    p.sizes = list(src.shape)
    p.dst_strides = list(dst_like.stride())
    p.src_strides = list(src.stride())
    p.dst_dtype, p.src_dtype = DT_CODE[torch.bfloat16], DT_CODE[torch.float32]
    dispatch_copy(lib, out, src, p)
    assert torch.equal(out.result(), src.to(torch.bfloat16))


# ---------------------------------------------------------------- GEMM

@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("beta", [0.0, 0.5])
def test_gemm_matches_torch(lib, dtype, beta):
    gen = torch.Generator().manual_seed(2)
    t = TORCH[dtype]
    B, M, N, K = 2, 9, 45, 37  # N: a full and a partial group of 32 columns
    a = torch.randn(B, K, M, generator=gen).to(t).transpose(1, 2)  # (B, M, K), column-major rows
    b = strided_like((B, K, N), t, "padded")
    b.copy_(torch.randn(B, K, N, generator=gen))
    out_like = strided_like((B, M, N), t, "permuted")
    out = Output(out_like, "out")
    init = torch.randn(B, M, N, generator=gen).to(t)
    if beta != 0.0:
        out.buf.write(storage_of(out_like.copy_(init)).view(torch.uint8).numpy())
    p = hm.GemmParams()
    p.batch, p.m, p.n, p.k = B, M, N, K
    p.out_strides = list(out_like.stride())
    p.a_strides = list(a.stride())
    p.b_strides = list(b.stride())
    p.alpha = 1.5
    p.beta = beta
    # mps_gemm.cpp: threadExecutionWidth (32) columns by as many rows as fit in 1024 threads.
    width = min(32, N)
    height = max(1, min(hm.MAX_THREADS_PER_THREADGROUP // width, M))
    hm.dispatch_threads(lib.function(f"aotishim_gemm_{dtype}"), [N, M, B], [width, height, 1],
                        {0: out.binding, 1: input_buffer(a, "a"), 2: input_buffer(b, "b"), 3: p.to_bytes()})
    want = 1.5 * torch.bmm(a.double(), b.double())
    if beta != 0.0:
        want = want + beta * init.double()
        got = torch.frombuffer(bytearray(out.buf.read()), dtype=torch.uint8).view(t).as_strided(
            out_like.shape, out_like.stride(), out_like.storage_offset())
    else:
        got = out.result()
    assert_close(got, want, dtype)


# ---------------------------------------------------------------- convolution

def conv_params(x, w, out, bias, case):
    _, _, stride, padding, dilation, transposed, _, groups = case
    spatial = x.dim() - 2
    lead = 3 - spatial
    p = hm.ConvParams()
    p.n, p.cin, p.cout, p.groups = x.shape[0], x.shape[1], out.shape[1], groups
    in_size, out_size, k_size = [1, 1, 1], [1, 1, 1], [1, 1, 1]
    st, pad, dil = [1, 1, 1], [0, 0, 0], [1, 1, 1]
    xs, ws, os_ = [0] * 5, [0] * 5, [0] * 5
    for i in range(2):
        xs[i], ws[i], os_[i] = x.stride(i), w.stride(i), out.stride(i)
    for d in range(spatial):
        at = lead + d
        in_size[at], out_size[at], k_size[at] = x.shape[2 + d], out.shape[2 + d], w.shape[2 + d]
        st[at], pad[at], dil[at] = stride[d], padding[d], dilation[d]
        xs[2 + at], ws[2 + at], os_[2 + at] = x.stride(2 + d), w.stride(2 + d), out.stride(2 + d)
    p.in_size, p.out_size, p.k_size = in_size, out_size, k_size
    p.stride, p.pad, p.dil = st, pad, dil
    p.in_strides, p.w_strides, p.out_strides = xs, ws, os_
    p.transposed = int(transposed)
    p.has_bias = int(bias is not None)
    p.bias_stride = bias.stride(0) if bias is not None else 0
    return p


def run_conv(lib, case, dtype, x_layout, out_layout, bias=True):
    x, w, b = conv_inputs(case, dtype)
    x = layout(x, x_layout)
    w = layout(w, "offset" if x_layout == "offset" else "contiguous")
    b = layout(b, "offset") if bias else None
    want = conv_reference(x, w, b, case)
    out_like = torch.empty(want.shape, dtype=TORCH[dtype])
    if out_layout == "channels_last" and want.dim() in (4, 5):
        out_like = layout(out_like, "channels_last")
    out = Output(out_like, "convolution output")
    p = conv_params(x, w, out_like, b, case)
    per_image = math.prod(p.out_size)
    width = min(32, per_image)
    height = max(1, min(1024 // width, p.cout))
    scratch = hm.Buffer(16, "scratch")
    hm.dispatch_threads(lib.function(f"aotishim_conv_{dtype}"), [per_image, p.cout, p.n], [width, height, 1],
                        {0: out.binding, 1: input_buffer(x, "input"), 2: input_buffer(w, "weight"),
                         3: input_buffer(b, "bias") if b is not None else scratch, 4: p.to_bytes()})
    assert_close(out.result(), want, dtype)


@pytest.mark.parametrize("case", CONV_CASES, ids=range(len(CONV_CASES)))
@pytest.mark.parametrize("dtype", DTYPES)
def test_conv_matches_torch(lib, case, dtype):
    run_conv(lib, case, dtype, "contiguous", "contiguous")


@pytest.mark.parametrize("case", [c for c in CONV_CASES if len(c[0]) in (4, 5)],
                         ids=lambda c: f"{len(c[0]) - 2}d{'T' if c[5] else ''}g{c[7]}")
@pytest.mark.parametrize("layouts", [("channels_last", "channels_last"), ("offset", "contiguous"),
                                     ("transposed", "channels_last")])
def test_conv_views_match_torch(lib, case, layouts):
    run_conv(lib, case, "float32", *layouts)


def test_conv_without_bias_matches_torch(lib):
    run_conv(lib, CONV_CASES[1], "float16", "channels_last", "contiguous", bias=False)


# ---------------------------------------------------------------- attention

def run_sdpa(lib, dtype, B, H, L, S, E, Ev=None, Hkv=None, causal=False, mask=None, probs=True,
             scale=None, q_layout="contiguous"):
    gen = torch.Generator().manual_seed(3)
    t = TORCH[dtype]
    Ev = Ev or E
    Hkv = Hkv or H
    q = torch.randn(B, H, L, E, generator=gen).to(t)
    if q_layout == "permuted":  # (B, L, H, E) storage, as a projection's output lies
        q = q.transpose(1, 2).contiguous().transpose(1, 2)
    k = strided_like((B, Hkv, S, E), t, "padded")
    k.copy_(torch.randn(B, Hkv, S, E, generator=gen))
    v = strided_like((B, Hkv, S, Ev), t, "permuted")
    v.copy_(torch.randn(B, Hkv, S, Ev, generator=gen))
    out_like = torch.empty(B, H, L, Ev, dtype=t)
    out = Output(out_like, "attention output")
    lse = Output(torch.empty(B, H, L, dtype=torch.float32), "logsumexp")
    pr = Output(torch.empty(B, H, L, S, dtype=t), "attention weights") if probs else None
    p = hm.SdpaParams()
    p.b, p.h, p.hkv, p.l, p.s, p.e, p.ev = B, H, Hkv, L, S, E, Ev
    p.q_strides, p.k_strides, p.v_strides = list(q.stride()), list(k.stride()), list(v.stride())
    p.out_strides = list(out_like.stride())
    p.lse_strides = list(lse.like.stride())
    p.probs_strides = list(pr.like.stride()) if probs else [0, 0, 0, 0]
    p.scale = scale if scale is not None else 1.0 / math.sqrt(E)
    p.causal = int(causal)
    p.has_mask = int(mask is not None)
    p.mask_dtype = DT_CODE[mask.dtype] if mask is not None else 0
    p.mask_strides = list(mask.stride()) if mask is not None else [0, 0, 0, 0]
    p.has_probs = int(probs)
    scratch = hm.Buffer(16, "scratch")
    rows = hm.SDPA_ROWS
    hm.dispatch_threadgroups(
        lib.function(f"aotishim_sdpa_{dtype}"), [(L + rows - 1) // rows, H, B], [hm.SDPA_LANES, rows, 1],
        {0: out.binding, 1: lse.binding, 2: pr.binding if probs else scratch, 3: input_buffer(q, "query"),
         4: input_buffer(k, "key"), 5: input_buffer(v, "value"),
         6: input_buffer(mask, "attn_mask") if mask is not None else scratch, 7: p.to_bytes()})
    # Reference: float64 math on the same (rounded) inputs.
    qd, kd, vd = q.double(), k.double(), v.double()
    rep = H // Hkv
    kd, vd = kd.repeat_interleave(rep, 1), vd.repeat_interleave(rep, 1)
    scores = qd @ kd.transpose(-1, -2) * p.scale
    keep = torch.ones(L, S, dtype=torch.bool)
    if causal:
        keep = keep.tril()
    if mask is not None and mask.dtype == torch.bool:
        keep = keep & mask
    elif mask is not None:
        scores = scores + mask.double()
    scores = scores.masked_fill(~keep, -math.inf)
    want_lse = torch.logsumexp(scores, -1)
    weights = torch.softmax(scores, -1).nan_to_num(0.0)  # a row with every key masked: zeros
    want = weights @ vd
    assert_close(out.result(), want, dtype)
    got_lse = lse.result()
    finite = want_lse.isfinite()
    assert torch.equal(got_lse.isfinite(), finite)
    torch.testing.assert_close(got_lse.double()[finite], want_lse[finite], rtol=1e-3, atol=1e-3)
    if probs:
        assert_close(pr.result(), weights, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_sdpa_matches_torch(lib, dtype):
    run_sdpa(lib, dtype, B=2, H=2, L=11, S=13, E=40, Ev=24, q_layout="permuted")


@pytest.mark.parametrize("L,S", [(9, 9), (5, 12), (12, 5)])
def test_sdpa_causal_matches_torch(lib, L, S):
    run_sdpa(lib, "float32", B=1, H=2, L=L, S=S, E=16, causal=True)


@pytest.mark.parametrize("dtype", DTYPES)
def test_sdpa_grouped_heads_match_torch(lib, dtype):
    run_sdpa(lib, dtype, B=1, H=6, Hkv=2, L=10, S=7, E=33, causal=True, scale=0.3)


def test_sdpa_bool_mask_matches_torch(lib):
    gen = torch.Generator().manual_seed(5)
    base = torch.rand(1, 1, 9, 10, generator=gen) > 0.4
    base[..., 0] = True
    mask = base.expand(2, 3, 9, 10)  # broadcast strides
    run_sdpa(lib, "float16", B=2, H=3, L=9, S=10, E=8, mask=mask)


def test_sdpa_fully_masked_row_is_zero(lib):
    mask = torch.ones(1, 1, 4, 6, dtype=torch.bool)
    mask[0, 0, 2] = False
    run_sdpa(lib, "float32", B=1, H=1, L=4, S=6, E=8, mask=mask)


@pytest.mark.parametrize("dtype", DTYPES)
def test_sdpa_additive_mask_matches_torch(lib, dtype):
    gen = torch.Generator().manual_seed(6)
    mask = torch.randn(1, 2, 1, 12, generator=gen).to(TORCH[dtype]).expand(3, 2, 8, 12)
    run_sdpa(lib, dtype, B=3, H=2, L=8, S=12, E=64, mask=mask, causal=True)


def test_sdpa_without_weights_matches_torch(lib):
    run_sdpa(lib, "bfloat16", B=1, H=2, L=17, S=20, E=96, probs=False)


# ---------------------------------------------------------------- the runtime's semantics

RUNTIME_KERNELS = r"""
#include <metal_stdlib>
using namespace metal;

struct Dims { uint n; };

// Every position attribute of every thread, at its linear grid index.
kernel void positions(device uint* out [[buffer(0)]],
                      constant Dims& d [[buffer(1)]],
                      uint2 gid [[thread_position_in_grid]],
                      uint2 tg [[threadgroup_position_in_grid]],
                      uint2 local [[thread_position_in_threadgroup]],
                      uint2 size [[threads_per_threadgroup]],
                      uint2 asked [[dispatch_threads_per_threadgroup]],
                      uint2 grid [[threads_per_grid]],
                      uint index [[thread_index_in_threadgroup]]) {
  device uint* o = out + (gid.y * grid.x + gid.x) * 11;
  o[0] = gid.x; o[1] = gid.y; o[2] = tg.x; o[3] = tg.y; o[4] = local.x; o[5] = local.y;
  o[6] = size.x; o[7] = size.y; o[8] = asked.x; o[9] = asked.y; o[10] = index;
}

// A threadgroup sum through threadgroup memory: all must write before any reads.
kernel void group_sum(device float* out [[buffer(0)]],
                      device const float* in [[buffer(1)]],
                      threadgroup float* scratch [[threadgroup(0)]],
                      uint gid [[thread_position_in_grid]],
                      uint tid [[thread_index_in_threadgroup]],
                      uint size [[threads_per_threadgroup]],
                      uint group [[threadgroup_position_in_grid]]) {
  threadgroup float local[1024];
  local[tid] = in[gid];
  scratch[tid] = 2.0f * in[gid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  float total = 0.0f;
  float doubled = 0.0f;
  for (uint i = 0; i < size; ++i) {
    total += local[(tid + i) % size];
    doubled += scratch[(tid + i) % size];
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  local[tid] = 0.0f;  // would corrupt a slower thread's sum without the barrier
  out[gid * 2] = total;
  out[gid * 2 + 1] = doubled;
}

kernel void simd_functions(device float* out [[buffer(0)]],
                           uint gid [[thread_position_in_grid]],
                           uint lane [[thread_index_in_simdgroup]],
                           uint sg [[simdgroup_index_in_threadgroup]]) {
  const float v = float(gid + 1);
  device float* o = out + gid * 6;
  o[0] = simd_sum(v);
  o[1] = simd_max(v);
  o[2] = simd_shuffle_down(v, ushort(3));
  o[3] = simd_prefix_exclusive_sum(v);
  o[4] = simd_broadcast(v, ushort(5));
  o[5] = float(sg * 100 + lane);
}

kernel void uneven_barrier(device float* out [[buffer(0)]],
                           uint tid [[thread_index_in_threadgroup]]) {
  if (tid % 2 == 1) return;
  threadgroup_barrier(mem_flags::mem_device);
  out[tid] = 1.0f;
}

kernel void diverged_simd(device float* out [[buffer(0)]],
                          uint lane [[thread_index_in_simdgroup]]) {
  out[lane] = lane < 4 ? simd_sum(1.0f) : simd_max(1.0f);
}

// Stores one element past the n it is given.
kernel void one_past(device float* out [[buffer(0)]],
                     constant Dims& d [[buffer(1)]],
                     uint gid [[thread_position_in_grid]]) {
  out[gid + 1] = 1.0f;
}

template <typename T>
kernel void scale(device T* out [[buffer(0)]], device const T* in [[buffer(1)]],
                  uint gid [[thread_position_in_grid]]) {
  out[gid] = in[gid] * T(3);
}
template [[host_name("scale_half")]] kernel void scale<half>(
    device half* out [[buffer(0)]], device const half* in [[buffer(1)]],
    uint gid [[thread_position_in_grid]]);
"""


@pytest.fixture(scope="module")
def rt():
    return hm.Library(RUNTIME_KERNELS)


def buf_of(values, dtype=torch.float32, label="buffer"):
    t = torch.as_tensor(values, dtype=dtype)
    b = hm.Buffer(t.numel() * t.element_size(), label)
    b.write(t.view(torch.uint8).numpy())
    return b


def read(buf, dtype=torch.float32):
    return torch.frombuffer(bytearray(buf.read()), dtype=dtype)


def test_signatures_are_read(rt):
    assert sorted(rt.function_names) == sorted(
        ["positions", "group_sum", "simd_functions", "uneven_barrier", "diverged_simd", "one_past",
         "scale_half"])
    assert rt.function("group_sum").params[:3] == [
        ("buffer", 0, "out", "buffer(0)"), ("buffer", 1, "in", "buffer(1)"),
        ("threadgroup", 0, "scratch", "threadgroup(0)")]
    with pytest.raises(RuntimeError, match=r"no kernel named 'nope' \(it has: .*group_sum"):
        rt.function("nope")


def test_edge_threadgroups_are_smaller(rt):
    W, H, gw, gh = 10, 7, 4, 3
    out = hm.Buffer(W * H * 11 * 4, "out")
    hm.dispatch_threads(rt.function("positions"), [W, H], [gw, gh], {0: out, 1: buf_of([0], torch.int32)})
    got = read(out, torch.int32).view(H, W, 11)
    for y in range(H):
        for x in range(W):
            tx, ty = x // gw, y // gh
            sx, sy = min(gw, W - tx * gw), min(gh, H - ty * gh)  # the edge groups' real size
            lx, ly = x % gw, y % gh
            assert got[y, x].tolist() == [x, y, tx, ty, lx, ly, sx, sy, gw, gh, ly * sx + lx]


def test_dispatch_threadgroups_runs_whole_groups(rt):
    out = hm.Buffer(8 * 6 * 11 * 4, "out")
    hm.dispatch_threadgroups(rt.function("positions"), [2, 3], [4, 2], {0: out, 1: buf_of([0], torch.int32)})
    got = read(out, torch.int32).view(6, 8, 11)
    assert (got[..., 6] == 4).all() and (got[..., 7] == 2).all()


def test_barrier_waits_for_the_group(rt):
    n, group = 200, 64  # a partial last group of 8
    values = torch.arange(n, dtype=torch.float32)
    out = hm.Buffer(n * 2 * 4, "out")
    hm.dispatch_threads(rt.function("group_sum"), [n], [group], {0: out, 1: buf_of(values)},
                        threadgroup_memory={0: group * 4})
    got = read(out).view(n, 2)
    for g0 in range(0, n, group):
        s = float(values[g0:g0 + group].sum())
        assert torch.equal(got[g0:g0 + group, 0], torch.full((min(group, n - g0),), s))
        assert torch.equal(got[g0:g0 + group, 1], torch.full((min(group, n - g0),), 2 * s))


def test_simd_group_functions(rt):
    n = 48  # one full SIMD group and one of 16 lanes
    out = hm.Buffer(n * 6 * 4, "out")
    hm.dispatch_threads(rt.function("simd_functions"), [n], [n], {0: out})
    got = read(out).view(n, 6)
    for i in range(n):
        first, last = (0, 32) if i < 32 else (32, 48)
        vals = [float(j + 1) for j in range(first, last)]
        lane = i - first
        assert got[i, 0] == sum(vals)
        assert got[i, 1] == max(vals)
        if lane + 3 >= 32:
            assert got[i, 2] == vals[lane]  # no source lane: keeps its own value
        elif first + lane + 3 < last:
            assert got[i, 2] == vals[lane + 3]
        # (a source lane outside a partial SIMD group is undefined in Metal)
        assert got[i, 3] == sum(vals[:lane])
        assert got[i, 4] == vals[5]
        assert got[i, 5] == (i // 32) * 100 + lane


def test_barrier_not_reached_by_all_is_an_error(rt):
    out = hm.Buffer(64 * 4, "out")
    with pytest.raises(RuntimeError, match=r"uneven_barrier.*threadgroup_barrier.*not reached by all 64 threads"
                                           r".*32 returned without it \(threads 1, 3, 5"):
        hm.dispatch_threads(rt.function("uneven_barrier"), [64], [64], {0: out})


def test_diverged_simd_group_is_an_error(rt):
    out = hm.Buffer(32 * 4, "out")
    with pytest.raises(RuntimeError, match=r"SIMD group 0 diverged: lane 0 called simd_sum while lane 4 "
                                           r"called simd_max"):
        hm.dispatch_threads(rt.function("diverged_simd"), [32], [32], {0: out})


def test_store_one_past_the_buffer_is_caught(rt):
    out = hm.Buffer(16 * 4, "planted output")
    with pytest.raises(RuntimeError, match=r"kernel 'one_past' wrote outside buffer 'planted output' "
                                           r"\(64 bytes, bound at index 0 as 'out', offset 0\): "
                                           r"bytes \[64, 68\) past its end"):
        hm.dispatch_threads(rt.function("one_past"), [16], [16], {0: out, 1: buf_of([16], torch.int32)})
    # The same 15-element view at the end of a larger buffer: its one-past store is the buffer's.
    view = hm.Buffer(4 * 4 + 15 * 4, "view storage")
    with pytest.raises(RuntimeError, match=r"'view storage'.*offset 16\): bytes \[76, 80\) past its end"):
        hm.dispatch_threads(rt.function("one_past"), [15], [15], {0: (view, 16), 1: buf_of([15], torch.int32)})
    # Within bounds nothing is reported, and untouched memory stays poisoned.
    ok = hm.Buffer(17 * 4, "fits")
    hm.dispatch_threads(rt.function("one_past"), [16], [16], {0: ok, 1: buf_of([16], torch.int32)})
    raw = read(ok)
    assert math.isnan(float(raw[0])) and (raw[1:] == 1.0).all()


def test_template_instances_by_host_name(rt):
    x = torch.randn(40).to(torch.float16)
    out = hm.Buffer(80, "out")
    hm.dispatch_threads(rt.function("scale_half"), [40], [16], {0: out, 1: buf_of(x, torch.float16)})
    assert torch.equal(read(out, torch.float16), x * 3)


def test_dispatch_limits(rt):
    out = hm.Buffer(4096 * 4, "out")
    with pytest.raises(RuntimeError, match=r"threadgroup of 33 x 32 x 1 threads; Metal allows 1 to 1024"):
        hm.dispatch_threads(rt.function("uneven_barrier"), [33 * 32], [33, 32], {0: out})
    with pytest.raises(RuntimeError, match=r"buffer index 1 \(parameter 'in'\) is not bound"):
        hm.dispatch_threads(rt.function("group_sum"), [4], [4], {0: out}, threadgroup_memory={0: 16})
    with pytest.raises(RuntimeError, match=r"threadgroup memory index 0 \(parameter 'scratch'\) has no length"):
        hm.dispatch_threads(rt.function("group_sum"), [4], [4], {0: out, 1: out})


def test_compile_error_carries_clang_text(tmp_path, monkeypatch):
    monkeypatch.setenv("AOTISHIM_METAL_HOST_CACHE", str(tmp_path))
    src = "kernel void broken(device float* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n" \
          "  out[i] = not_declared_anywhere;\n}\n"
    with pytest.raises(RuntimeError, match=r"(?s)compiling the Metal source as C\+\+ failed.*"
                                           r"error: use of undeclared identifier 'not_declared_anywhere'"):
        hm.Library(src)


def test_unsupported_signature_is_an_error():
    with pytest.raises(RuntimeError, match=r"unsupported kernel parameter attribute \[\[stage_in\]\]"):
        hm.Library("kernel void k(float4 v [[stage_in]]) {}")


def test_second_compile_is_a_cache_hit(tmp_path, monkeypatch):
    monkeypatch.setenv("AOTISHIM_METAL_HOST_CACHE", str(tmp_path))
    src = ("kernel void add_seven(device int* out [[buffer(0)]], uint i [[thread_position_in_grid]]) {"
           " out[i] += 7; }")
    first = hm.Library(src)
    second = hm.Library(src)
    assert not first.from_cache and second.from_cache and first.path == second.path
    assert first.path.startswith(str(tmp_path))
    out = buf_of([1, 2, 3], torch.int32)
    hm.dispatch_threads(second.function("add_seven"), [3], [3], {0: out})
    assert read(out, torch.int32).tolist() == [8, 9, 10]


def test_missing_compiler_names_every_place_tried(monkeypatch, tmp_path):
    monkeypatch.setenv("AOTISHIM_METAL_HOST_CXX", str(tmp_path / "no-such-clang"))
    with pytest.raises(RuntimeError, match=r"AOTISHIM_METAL_HOST_CXX='.*no-such-clang' is not an executable"):
        hm.Library("kernel void k(device int* o [[buffer(0)]]) {}")
    monkeypatch.delenv("AOTISHIM_METAL_HOST_CXX")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(RuntimeError, match=r"(?s)no C\+\+ compiler for Metal sources; tried:.*"
                                           r"AOTISHIM_METAL_HOST_CXX \(unset\).*clang\+\+-30 \.\.\. clang\+\+-14 "
                                           r"and clang\+\+ in every PATH directory \(" + str(tmp_path)):
        hm.compiler()


# ---------------------------------------------------------------- the mps device over it

def test_fresh_mps_memory_is_poisoned_also_at_a_reused_address():
    """Every new mps allocation on the host Metal reads as all-one bytes (NaN
    in every floating dtype), so a kernel or a model reading memory nobody
    wrote shows; a freed block that comes back (same size, last freed first)
    is poisoned again, not left with the previous tensor's values."""
    import numpy as np

    import aotishim
    from aotishim import shim

    assert "mps" in aotishim.devices()
    first = shim.from_numpy(np.arange(64, dtype=np.float32), copy=True, device="mps")
    address = first.data_ptr
    shim.delete(first)
    again = shim.empty_strided([64], None, dtype="float32", device="mps")
    assert again.data_ptr == address  # the freed block came back
    raw = shim.to_numpy(again)
    assert np.isnan(raw).all()
    assert (raw.view(np.uint32) == 0xFFFFFFFF).all()
    shim.delete(again)



OUT_OF_BOUNDS_SOURCE = b"""
#include <metal_stdlib>
using namespace metal;
kernel void store_past_the_end(device float* out_ptr0 [[buffer(0)]],
                               uint xindex [[thread_position_in_grid]]) {
  out_ptr0[xindex + 4] = 1.0f;
}
"""


def test_a_failed_command_buffer_is_raised_at_the_next_host_read():
    """A kernel that stores past its buffer: the host Metal's guard check
    fails the command buffer on the worker thread; the device keeps the
    error and raises it at the next host read (once), as it does for a GPU
    error on Apple's Metal."""
    import ctypes
    import pathlib

    import numpy as np

    import aotishim
    from aotishim import shim

    lib_path = pathlib.Path(aotishim.__file__).resolve().parent / "libaotishim.so"
    C = ctypes.CDLL(str(lib_path), mode=ctypes.RTLD_GLOBAL)
    VP = ctypes.c_void_p
    callback_t = ctypes.CFUNCTYPE(None, VP, VP)
    for name, args in {"create_shader_library": [ctypes.c_char_p, ctypes.POINTER(VP)],
                       "delete_shader_library": [VP],
                       "get_kernel_function": [VP, ctypes.c_char_p, ctypes.POINTER(VP)],
                       "start_encoding": [VP], "set_arg_tensor": [VP, ctypes.c_uint, VP],
                       "dispatch_single": [VP, ctypes.c_uint64],
                       "run_command_block": [VP, callback_t, VP]}.items():
        fn = getattr(C, "aoti_torch_mps_" + name)
        fn.argtypes, fn.restype = args, ctypes.c_int32

    lib, fn = VP(), VP()
    assert C.aoti_torch_mps_create_shader_library(OUT_OF_BOUNDS_SOURCE, ctypes.byref(lib)) == 0
    assert C.aoti_torch_mps_get_kernel_function(lib, b"store_past_the_end", ctypes.byref(fn)) == 0
    out = shim.from_numpy(np.zeros(8, np.float32), copy=True, device="mps")

    @callback_t
    def body(handle, _user):
        C.aoti_torch_mps_start_encoding(VP(handle))
        C.aoti_torch_mps_set_arg_tensor(VP(handle), 0, VP(out.handle))
        C.aoti_torch_mps_dispatch_single(VP(handle), 8)

    try:
        assert C.aoti_torch_mps_run_command_block(fn, body, None) == 0  # encoded fine
        with pytest.raises(shim.ShimError, match="failed: .*wrote outside buffer.*past its end"):
            shim.to_numpy(out)
        aotishim.synchronize("mps")  # raised once
        np.testing.assert_array_equal(shim.to_numpy(out)[:4], np.zeros(4, np.float32))
    finally:
        shim.delete(out)
        assert C.aoti_torch_mps_delete_shader_library(lib) == 0
