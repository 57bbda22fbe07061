"""The SDPA fallback ops' table entries and their device-independent
validation (the cuda kernel is tested on a GPU in tests/gpu/test_cuda_ops.py).
Validation runs behind the device-generic entries, so cpu tensors reach it
here; a valid call then stops at the missing cpu kernel."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

import aotishim
from aotishim import shim

OPS = ["_scaled_dot_product_efficient_attention", "_scaled_dot_product_flash_attention",
       "_scaled_dot_product_cudnn_attention"]


def torch_declarations() -> str:
    torch = pytest.importorskip("torch")
    path = os.path.join(os.path.dirname(torch.__file__), "include", "torch", "csrc", "inductor",
                        "aoti_torch", "generated", "c_shim_cuda.h")
    return open(path).read()


def normalise(params: str) -> str:
    return re.sub(r"\s+", " ", params.strip().strip("()")).replace(" *", "*").replace("* ", "* ")


@pytest.mark.parametrize("name", OPS)
def test_signature_is_torchs(name):
    m = re.search(rf"aoti_torch_cuda_{name}\((.*?)\);", torch_declarations())
    assert m, f"torch declares no aoti_torch_cuda_{name}"
    op = shim.FALLBACK_OPS[name]
    ours = ", ".join(f"{p.ctype} {p.name}" for p in op.params)
    theirs = ", ".join(re.sub(r"\s*\*\s*", "* ", p.strip()).replace("* ", "*", 0)
                       for p in m.group(1).split(","))
    norm = lambda s: re.sub(r"\s*\*\s*", "* ", s)
    assert norm(ours) == norm(theirs)
    assert op.devices == ("cuda",)


def qkv(B=1, H=2, Lq=4, Lk=5, D=8, Dv=8, dtype=np.float32):
    rng = np.random.default_rng(0)
    mk = lambda *s: shim.from_numpy(rng.standard_normal(s).astype(dtype), copy=True)
    return mk(B, H, Lq, D), mk(B, H, Lk, D), mk(B, H, Lk, Dv)


def efficient(q, k, v, bias=None, dropout=0.0):
    return shim.call_op("_scaled_dot_product_efficient_attention", q, k, v, bias, 1, dropout, 0,
                        None)


def test_valid_call_reaches_the_device_kernel_slot():
    with pytest.raises(aotishim.ShimError, match="no attention kernel for cpu"):
        efficient(*qkv())


def test_scalar_outputs_are_returned_by_the_wrappers():
    op = shim.FALLBACK_OPS["_scaled_dot_product_flash_attention"]
    names = [p.name for p in op.user_params]
    assert "ret4" not in names and "ret5" not in names  # outputs, not arguments
    assert names == ["query", "key", "value", "dropout_p", "is_causal", "return_debug_mask",
                     "scale"]


def test_dropout_is_refused():
    with pytest.raises(aotishim.ShimError, match="dropout_p must be 0"):
        efficient(*qkv(), dropout=0.5)


def test_rank_and_shape_errors():
    q, k, v = qkv()
    flat = shim.from_numpy(np.zeros((4, 8), np.float32), copy=True)
    with pytest.raises(aotishim.ShimError, match="query must be 4-D"):
        efficient(flat, k, v)
    _, k2, _ = qkv(D=6)
    with pytest.raises(aotishim.ShimError, match="head dims differ"):
        efficient(q, k2, v)
    _, _, v2 = qkv(Lk=7)
    with pytest.raises(aotishim.ShimError, match="differ in heads or length"):
        efficient(q, k, v2)
    q3, _, _ = qkv(H=3)
    with pytest.raises(aotishim.ShimError, match="not a multiple"):
        efficient(q3, k, v)


def test_dtype_errors():
    q, k, v = qkv()
    q64, _, _ = qkv(dtype=np.float64)
    with pytest.raises(aotishim.ShimError, match="query is float32 but key is float64"):
        efficient(q, *qkv(dtype=np.float64)[1:2], v)
    with pytest.raises(aotishim.ShimError, match="unsupported dtype float64"):
        efficient(q64, *qkv(dtype=np.float64)[1:])


@pytest.mark.parametrize("shape", [(1, 2, 4, 5), (4, 5), (5,), (2, 1, 1), (1,)])
def test_bias_that_broadcasts_is_accepted(shape):
    bias = shim.from_numpy(np.zeros(shape, np.float32), copy=True)
    with pytest.raises(aotishim.ShimError, match="no attention kernel for cpu"):
        efficient(*qkv(), bias=bias)


@pytest.mark.parametrize("shape", [(4, 4), (3, 4, 5), (1, 1, 1, 4, 5)])
def test_bias_that_does_not_broadcast_is_refused(shape):
    bias = shim.from_numpy(np.zeros(shape, np.float32), copy=True)
    with pytest.raises(aotishim.ShimError, match="cannot be broadcast"):
        efficient(*qkv(), bias=bias)


def test_bias_dtype_must_match():
    bias = shim.from_numpy(np.zeros((4, 5), np.float64), copy=True)
    with pytest.raises(aotishim.ShimError, match="attn_bias is float64"):
        efficient(*qkv(), bias=bias)


def test_debug_mask_is_refused():
    q, k, v = qkv()
    with pytest.raises(aotishim.ShimError, match="return_debug_mask"):
        shim.call_op("_scaled_dot_product_flash_attention", q, k, v, 0.0, 0, 1, None)


def test_cpu_entry_does_not_exist():
    with pytest.raises(ValueError, match="no cpu entry point"):
        shim.call_op("_scaled_dot_product_efficient_attention", *qkv(), None, 1, 0.0, 0, None,
                     entry="cpu")
