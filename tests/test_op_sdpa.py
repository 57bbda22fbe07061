"""_scaled_dot_product_flash_attention_for_cpu against torch (both outputs,
their layouts), and compiled attention models against eager."""

from __future__ import annotations


import ml_dtypes
import numpy as np
import pytest

import aotishim
from aotishim import ShimError, shim

torch = pytest.importorskip("torch")
OP = "_scaled_dot_product_flash_attention_for_cpu"
CODES = {torch.float32: "float32", torch.bfloat16: "bfloat16", torch.float64: "float64"}


def to_np(t):
    t = t.detach().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


def as_shim(t):
    """The same view in aotishim over a copy of t's whole storage."""
    base = torch.empty(0, dtype=t.dtype).set_(t.untyped_storage())
    whole = shim.from_numpy(to_np(base).copy())
    return shim.reinterpret_tensor(whole, list(t.shape), list(t.stride()), t.storage_offset())


def run(q, k, v, mask=None, causal=False, scale=None, dropout=0.0):
    return shim.call_op(OP, as_shim(q), as_shim(k), as_shim(v), dropout, int(causal),
                        None if mask is None else as_shim(mask), scale, entry="cpu")


def check(q, k, v, mask=None, causal=False, scale=None, tol=2e-5):
    want_o, want_l = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
        q, k, v, is_causal=causal, attn_mask=mask, scale=scale)
    o, lse = run(q, k, v, mask, causal, scale)
    assert o.sizes == list(want_o.shape) and o.strides == list(want_o.stride())
    assert lse.sizes == list(want_l.shape) and lse.strides == list(want_l.stride())
    # logsumexp: float64 for float64 inputs, float32 for the others, as torch
    assert o.dtype == CODES[want_o.dtype] and lse.dtype == CODES[want_l.dtype]
    np.testing.assert_allclose(o.numpy().astype(np.float64), to_np(want_o).astype(np.float64),
                               rtol=tol, atol=tol)
    np.testing.assert_allclose(lse.numpy(), want_l.numpy(), rtol=max(tol, 1e-6), atol=max(tol, 1e-6))
    if mask is None:  # the public function agrees too
        ref = torch.nn.functional.scaled_dot_product_attention(
            q, k, v, is_causal=causal, scale=scale, enable_gqa=k.shape[1] != q.shape[1])
        np.testing.assert_allclose(o.numpy().astype(np.float64), to_np(ref).astype(np.float64),
                                   rtol=tol, atol=tol)


def qkv(B, H, L, S, E, Hkv=None, Ev=None, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    Hkv = Hkv or H
    return (torch.randn(B, H, L, E, generator=g).to(dtype),
            torch.randn(B, Hkv, S, E, generator=g).to(dtype),
            torch.randn(B, Hkv, S, Ev or E, generator=g).to(dtype))


@pytest.mark.parametrize("L,S", [(16, 16), (1, 7), (70, 200), (130, 65)])
@pytest.mark.parametrize("causal", [False, True])
def test_matches_torch(L, S, causal):
    check(*qkv(2, 3, L, S, 16), causal=causal)


def test_scale_gqa_and_value_dim():
    check(*qkv(1, 4, 33, 40, 8, Hkv=2), scale=0.3)
    check(*qkv(2, 6, 20, 20, 16, Hkv=3), causal=True)
    with pytest.raises(ShimError, match="inconsistent shapes"):  # torch refuses it too
        run(*qkv(1, 2, 9, 12, 8, Ev=5))


@pytest.mark.parametrize("layout", ["blhe", "lbhe", "sliced", "fused_qkv", "transposed_e"])
def test_views_and_output_layout(layout):
    g = torch.Generator().manual_seed(1)
    if layout == "blhe":
        q, k, v = (torch.randn(2, 20, 4, 16, generator=g).transpose(1, 2) for _ in range(3))
    elif layout == "lbhe":
        q, k, v = (torch.randn(20, 2, 4, 16, generator=g).permute(1, 2, 0, 3) for _ in range(3))
    elif layout == "fused_qkv":  # GPT-2: q, k, v split from one (B, L, 3 * H * E) projection
        q, k, v = (t.view(2, 20, 4, 16).transpose(1, 2)
                   for t in torch.randn(2, 20, 3 * 64, generator=g).split(64, dim=-1))
    elif layout == "sliced":
        q, k, v = (torch.randn(2, 4, 20, 32, generator=g)[..., 3:19] for _ in range(3))
    else:
        q, k, v = (torch.randn(2, 4, 16, 20, generator=g).transpose(2, 3) for _ in range(3))
    if layout == "transposed_e":
        # torch's own flash kernel misreads a head dim with a stride (its
        # math path agrees with us): compare values with contiguous inputs,
        # layouts with the views.
        for causal in (False, True):
            o, _ = run(q, k, v, causal=causal)
            want = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(
                q, k, v, is_causal=causal)[0]
            assert o.strides == list(want.stride())
            ref = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=causal)
            np.testing.assert_allclose(o.numpy(), ref.numpy(), rtol=2e-5, atol=2e-5)
        return
    check(q, k, v)
    check(q, k, v, causal=True)


@pytest.mark.parametrize("shape", [(20, 30), (1, 30), (2, 1, 20, 30), (2, 4, 20, 30)])
def test_float_and_bool_masks(shape):
    q, k, v = qkv(2, 4, 20, 30, 8)
    g = torch.Generator().manual_seed(5)
    float_mask = torch.randn(*shape, generator=g)
    check(q, k, v, mask=float_mask)
    bool_mask = torch.rand(*shape, generator=g) > 0.3
    bool_mask[..., 0] = True  # no fully masked rows
    want = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=bool_mask)
    o, _ = run(q, k, v, bool_mask)
    np.testing.assert_allclose(o.numpy(), want.numpy(), rtol=2e-5, atol=2e-5)


def test_bfloat16_and_float64():
    check(*qkv(1, 2, 70, 140, 16, dtype=torch.bfloat16), tol=2e-2)
    check(*qkv(1, 2, 70, 140, 16, dtype=torch.bfloat16), causal=True, tol=2e-2)
    check(*qkv(1, 2, 30, 40, 16, dtype=torch.float64), tol=1e-10)


@pytest.mark.parametrize("dtype,tol", [(torch.bfloat16, 2e-2), (torch.float64, 1e-10),
                                       (torch.float32, 2e-5)])
def test_masks_in_the_query_dtype_and_as_views(dtype, tol):
    """The kernel reads a floating mask in its own dtype, row by row with the
    row's stride: a mask of each dtype, transposed (a strided row) and offset."""
    q, k, v = qkv(2, 3, 24, 40, 8, dtype=dtype, seed=3)
    g = torch.Generator().manual_seed(7)
    whole = torch.randn(2, 1, 45, 30, generator=g).to(dtype)
    transposed = whole[:, :, 2:42, 3:27].transpose(2, 3)  # (2, 1, 24, 40), row stride 30
    check(q, k, v, mask=transposed, tol=tol)
    check(q, k, v, mask=torch.randn(24, 40, generator=g).to(dtype), causal=True, tol=tol)


def reference(q, k, v, mask, causal, scale):
    """Attention in float64, with the kernel's conventions where torch's
    softmax has none: a row with every key masked gives zeros (logsumexp
    -inf), a NaN score makes its row NaN."""
    q, k, v, mask = (t.double() for t in (q, k, v, mask))
    s = q @ k.transpose(-2, -1) * scale + mask
    if causal:
        L, S = s.shape[-2:]
        s = s.masked_fill(torch.ones(L, S, dtype=torch.bool).triu(1), float("-inf"))
    lse = torch.logsumexp(s, -1)
    p = torch.exp(s - lse.unsqueeze(-1)).nan_to_num(nan=0.0)
    nan_rows = s.isnan().any(-1)
    out = (p @ v).masked_fill(nan_rows.unsqueeze(-1), float("nan"))
    return out, lse.masked_fill(nan_rows, float("nan"))


@pytest.mark.parametrize("S", [1, 7, 15, 17, 33, 130, 200])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_softmax_rows_edge_scores(S, causal, dtype):
    """The rows' maximum and exponentials (vectorised where the CPU allows)
    on rows of any length, against float64: masked keys (-inf), whole rows
    masked, scores far below the row's maximum (exp underflows, through
    subnormals in float32), NaN, and a scale that spreads scores over tens."""
    L = 20
    q, k, v = qkv(1, 3, L, S, 16, seed=11)
    q, k, v = (t.to(dtype) for t in (q, k, v))
    g = torch.Generator().manual_seed(S)
    mask = torch.randn(1, 3, L, S, generator=g).to(dtype)
    mask[torch.rand(mask.shape, generator=g) < 0.3] = float("-inf")
    far = torch.rand(mask.shape, generator=g) < 0.2
    mask[far] = -torch.tensor([87.0, 95.0, 104.0, 150.0, 1e4], dtype=dtype)[
        torch.randint(0, 5, (int(far.sum()),), generator=g)]
    mask[0, 0, 3] = float("-inf")  # every key masked
    mask[0, 0, 13, :] = float("nan")  # every score NaN
    mask[0, 1, 12, :] = float("-inf")  # a NaN with no finite score before it: the
    mask[0, 1, 12, 0] = float("nan")  # row is NaN (it was once dropped as masked)
    if S > 1:  # NaN beside a finite score of its tile
        mask[0, 1, 5, 0], mask[0, 1, 5, S // 2] = 0.0, float("nan")
        # in the last tile's tail (or causally masked: no NaN)
        mask[0, 2, 7, S - 2], mask[0, 2, 7, S - 1] = 0.0, float("nan")
    mask[0, 2, 9, :] = -100.0  # every score far below 0: only the maximum's shift keeps them
    for scale in (0.25, 2.0):
        want_o, want_l = reference(q, k, v, mask, causal, scale)
        o, lse = run(q, k, v, mask, causal, scale)
        tol = 1e-10 if dtype == torch.float64 else 2e-5
        np.testing.assert_allclose(o.numpy(), want_o.numpy(), rtol=tol, atol=tol)
        np.testing.assert_allclose(lse.numpy(), want_l.numpy(), rtol=tol, atol=tol)


def test_errors():
    q, k, v = qkv(1, 2, 4, 4, 8)
    with pytest.raises(ShimError, match="dropout"):
        run(q, k, v, dropout=0.1)
    with pytest.raises(ShimError, match="heads, not a multiple"):
        run(*qkv(1, 3, 4, 4, 8, Hkv=2))
    with pytest.raises(ShimError, match="inconsistent shapes"):
        run(q, k[..., :4], v)
    with pytest.raises(ShimError, match="cannot broadcast"):
        run(q, k, v, torch.zeros(3, 4))


# ---- compiled models vs eager ----
MODELS = ["sdpa", "sdpa_causal", "nn_multihead_attention", "nn_transformer_encoder_layer",
          "nn_transformer_encoder_layer_bf16", "vit_tiny", "hf_bert", "hf_gpt2", "hf_llama"]


@pytest.mark.parametrize("name", MODELS)
def test_zoo_model_matches_eager(name, model_cache):
    from aotishim import export
    from aotishim.zoo import real

    if not real.available(name):
        pytest.skip(f"{name} needs torchvision or transformers")
    z = real.build(name)
    d = {"module": z.module, "args": z.args, "dtype": z.dtype}
    # The name test_zoo_models.py compiles it under: one compile for both.
    so = export.compile_cached(d["module"], d["args"], model_cache, name=f"zoo_{name}")
    with torch.no_grad():
        want = d["module"](*d["args"])
    want = (want,) if isinstance(want, torch.Tensor) else tuple(want)
    live = aotishim.memory_stats()["live_tensors"]
    missing = aotishim._core.inspect_library(str(so))["missing_shims"]
    if missing:
        pytest.skip(f"needs {', '.join(missing)}")
    with aotishim.load(so) as m:
        got = m(*(to_np(a) for a in d["args"]))
    assert m.leaks == [] and aotishim.memory_stats()["live_tensors"] == live
    bf16 = d["dtype"] == "bfloat16"
    for g_, w in zip(got, want):
        w = to_np(w).astype(np.float64)
        scale = max(float(np.abs(w).max()), 1e-6)
        err = float(np.abs(g_.astype(np.float64) - w).max()) / scale
        assert err <= (2e-2 if bf16 else 1e-4), (name, err)
