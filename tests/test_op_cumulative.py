"""cumsum / cumprod against torch: result dtypes (integers promote to int64),
the optional dtype, negative and 0-d dims, strided views, bfloat16, errors;
and a compiled model that calls both."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from aotishim import shim

torch = pytest.importorskip("torch")

OPS = {"cumsum": torch.cumsum, "cumprod": torch.cumprod}
TORCH_DTYPES = {"float32": torch.float32, "float64": torch.float64, "bfloat16": torch.bfloat16,
                "float16": torch.float16, "int64": torch.int64, "int32": torch.int32,
                "int8": torch.int8, "uint8": torch.uint8, "bool": torch.bool}
CODES = {"float32": 6, "float64": 7, "bfloat16": 15, "float16": 5, "int64": 4, "int32": 3}


def to_np(t):
    t = t.detach().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    return t.numpy()


def as_shim(t):
    """The same view in aotishim: t's whole storage borrowed, t's geometry on top."""
    base = torch.empty(t.untyped_storage().nbytes() // t.element_size(), dtype=t.dtype)
    base.set_(t.untyped_storage(), 0, (base.numel(),), (1,))
    whole = shim.from_numpy(to_np(base).copy())
    return shim.reinterpret_tensor(whole, list(t.shape), list(t.stride()), t.storage_offset())


def run(op, t, dim, dtype=None):
    ret = shim.call_op(op, as_shim(t), dim, None if dtype is None else CODES[dtype], entry="cpu")
    return ret


def sample(dtype, shape, gen):
    if dtype in ("int64", "int32", "int8", "uint8"):
        return torch.randint(0, 4, shape, generator=gen).to(TORCH_DTYPES[dtype])
    if dtype == "bool":
        return torch.rand(shape, generator=gen) > 0.5
    # near 1 so products stay finite
    return (1 + 0.1 * torch.randn(shape, generator=gen)).to(TORCH_DTYPES[dtype])


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16", "int64", "int32",
                                   "int8", "uint8", "bool"])
@pytest.mark.parametrize("dim", [0, 1, -1, 2])
def test_matches_torch(op, dtype, dim):
    gen = torch.Generator().manual_seed(hash((op, dtype, dim)) % 1000)
    x = sample(dtype, (5, 7, 9), gen)
    want = OPS[op](x, dim)
    got = run(op, x, dim)
    assert got.dtype == str(want.dtype).removeprefix("torch.")
    assert got.sizes == list(want.shape) and got.strides == list(want.stride())
    # Same roundings in the same order as torch's CPU kernel: exact.
    np.testing.assert_array_equal(got.numpy().astype(np.float64), to_np(want).astype(np.float64))


@pytest.mark.parametrize("op", sorted(OPS))
def test_long_bfloat16_sum_accumulates_in_float(op):
    x = torch.full((3000,), 1.0 if op == "cumsum" else 1.001, dtype=torch.bfloat16)
    got = run(op, x, 0).numpy().astype(np.float64)
    np.testing.assert_array_equal(got, to_np(OPS[op](x, 0)).astype(np.float64))
    if op == "cumsum":
        # a bfloat16 accumulator would stop at 256
        assert got[-1] == float(torch.tensor(3000.0).bfloat16())


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("view", ["transposed", "sliced", "offset", "expanded"])
def test_strided_views(op, view):
    gen = torch.Generator().manual_seed(7)
    base = sample("float32", (8, 12), gen)
    x = {"transposed": base.t(), "sliced": base[:, ::3], "offset": base[2:6, 5:],
         "expanded": base[1:2].expand(4, 12)}[view]
    for dim in (0, 1):
        want = OPS[op](x, dim)
        np.testing.assert_array_equal(run(op, x, dim).numpy(), want.numpy())


@pytest.mark.parametrize("op", sorted(OPS))
@pytest.mark.parametrize("src,dst", [("int64", "float32"), ("float32", "float64"),
                                     ("float32", "bfloat16"), ("float32", "int64"),
                                     ("int32", "int32"), ("bool", "float32")])
def test_dtype_argument(op, src, dst):
    x = sample(src, (4, 6), torch.Generator().manual_seed(3)) * (3 if src != "bool" else 1)
    if src == "float32":
        x = x * 1.7
    want = OPS[op](x, 1, dtype=TORCH_DTYPES[dst])
    got = run(op, x, 1, dst)
    assert got.dtype == dst
    np.testing.assert_array_equal(got.numpy().astype(np.float64), to_np(want).astype(np.float64))


@pytest.mark.parametrize("op", sorted(OPS))
def test_zero_dim_and_empty(op):
    x = torch.tensor(2.5)
    for dim in (0, -1):
        got = run(op, x, dim)
        assert got.sizes == [] and got.numpy() == 2.5
    e = torch.empty(3, 0, 4)
    got = run(op, e, 1)
    assert got.sizes == [3, 0, 4]
    assert run(op, torch.tensor(7), 0).numpy() == 7  # int64 0-d


@pytest.mark.parametrize("op", sorted(OPS))
def test_bad_dim_is_an_error(op):
    from aotishim import ShimError

    x = shim.from_numpy(np.zeros((2, 3), np.float32))
    with pytest.raises(ShimError, match=r"dimension 2 is out of range"):
        shim.call_op(op, x, 2, None, entry="cpu")
    with pytest.raises(ShimError, match=r"dimension -3 is out of range"):
        shim.call_op(op, x, -3, None, entry="cpu")
    z = shim.from_numpy(np.zeros((), np.float32))
    with pytest.raises(ShimError, match=r"dimension 1 is out of range"):
        shim.call_op(op, z, 1, None, entry="cpu")


def test_compiled_model_matches_eager(model_cache):
    import sys

    import aotishim
    from aotishim import export

    class Cumulative(torch.nn.Module):
        def forward(self, x, ids):
            return (torch.cumsum(x, dim=1), torch.cumprod(x * 0.1 + 1, dim=0),
                    torch.cumsum(ids, dim=-1), torch.cumsum(x.t(), 0).to(torch.bfloat16))

    gen = torch.Generator().manual_seed(4)
    args = (torch.randn(16, 64, generator=gen), torch.randint(0, 5, (3, 40), generator=gen))
    so = export.compile_cached(Cumulative(), args, model_cache, name="cumulative_ops")
    with torch.no_grad():
        want = Cumulative()(*args)
    with aotishim.load(so) as m:
        got = m(*(a.numpy() for a in args))
    assert len(got) == 4
    for g, w in zip(got, want):
        assert g.dtype == to_np(w).dtype
        np.testing.assert_allclose(g.astype(np.float64), to_np(w).astype(np.float64),
                                   rtol=1e-5, atol=1e-5)
