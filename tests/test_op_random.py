"""The random family (aoti_torch_cpu_rand*, randn*, randint*, randperm,
normal_functional, uniform, exponential, bernoulli_*, native_dropout) and the
process-wide generator's seeding: shapes, dtypes, output strides as torch
gives them, ranges, statistics over many draws, determinism under
aotishim.manual_seed, argument errors, and compiled models that draw random
numbers (Inductor's own random kernels, seeded through randint_low_out, and
the fallback ops themselves).

Every draw here follows a fixed seed, so each statistic is one fixed number:
the bounds (about six standard errors, or a KS significance of 1e-6) hold
for these streams and could only fail for a broken distribution."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest
import torch

import aotishim
from aotishim import shim
from aotishim._core import ShimError
from torch_views import to_shim, to_torch

CODES = {torch.float32: 6, torch.float64: 7, torch.float16: 5, torch.bfloat16: 15,
         torch.complex64: 9, torch.complex128: 10, torch.int64: 4, torch.int32: 3,
         torch.int16: 2, torch.int8: 1, torch.uint8: 0, torch.bool: 11}
FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
N = 200_000
FACTORY_TAIL = (None, None, 0, None)  # layout, device, device_index_, pin_memory
LIKE_TAIL = (None, None, 0, None, None)  # ... and memory_format


def values(t: shim.Tensor) -> np.ndarray:
    return to_torch(t).to(torch.float64 if not t.dtype.startswith("complex") else torch.complex128).numpy()


def ks_distance(x: np.ndarray, cdf) -> float:
    x = np.sort(x.astype(np.float64).ravel())
    n = x.size
    f = cdf(x)
    return float(max(np.max(np.arange(1, n + 1) / n - f), np.max(f - np.arange(n) / n)))


def ks_bound(n: int, alpha: float = 1e-6) -> float:
    return math.sqrt(-0.5 * math.log(alpha / 2) / n)


def normal_cdf(x):
    return 0.5 * (1 + torch.special.erf(torch.from_numpy(x) / math.sqrt(2)).numpy())


def check_mean_var(x: np.ndarray, mean: float, var: float, sigmas: float = 6.0):
    n = x.size
    assert abs(x.mean() - mean) < sigmas * math.sqrt(var / n), (x.mean(), mean)
    # var of the sample variance is about 2 var^2 / n for normal-like tails;
    # a wider bound covers heavier ones (exponential: 8 var^2 / n)
    assert abs(x.var() - var) < sigmas * math.sqrt(8 * var**2 / n), (x.var(), var)


@pytest.fixture(autouse=True)
def _seeded():
    aotishim.manual_seed(1234)


# ---------------------------------------------------------------- uniform


@pytest.mark.parametrize("dtype", FLOATS)
def test_rand_shape_dtype_range_and_distribution(dtype):
    t = shim.call_op("rand", [N // 400, 20, 20], CODES[dtype], *FACTORY_TAIL, entry="cpu")
    assert t.sizes == [N // 400, 20, 20] and t.strides == [400, 20, 1]
    assert t.dtype == str(dtype)[6:]
    x = values(t).ravel()
    assert x.min() >= 0 and x.max() < 1  # never rounded up to 1, in bfloat16 too
    check_mean_var(x, 0.5, 1 / 12)
    if dtype in (torch.float32, torch.float64):
        assert ks_distance(x, lambda v: v) < ks_bound(x.size)
    # every value the dtype holds in [0, 1) with its significant bits is reachable
    steps = {torch.bfloat16: 2**8, torch.float16: 2**11}.get(dtype)
    if steps:
        assert np.all(np.round(x * steps) == x * steps)
        assert len(np.unique(x)) > steps * 0.9


def test_rand_defaults_to_float32_and_takes_complex():
    t = shim.call_op("rand", [4, 5], None, *FACTORY_TAIL, entry="cpu")
    assert t.dtype == "float32" and t.sizes == [4, 5]
    c = shim.call_op("rand", [N], CODES[torch.complex64], *FACTORY_TAIL, entry="cpu")
    z = values(c)
    assert c.dtype == "complex64"
    for part in (z.real, z.imag):
        assert part.min() >= 0 and part.max() < 1
        check_mean_var(part, 0.5, 1 / 12)
    assert abs(np.corrcoef(z.real, z.imag)[0, 1]) < 6 / math.sqrt(N)


def test_rand_of_no_elements_and_scalars():
    assert shim.call_op("rand", [0, 3], None, *FACTORY_TAIL, entry="cpu").sizes == [0, 3]
    s = shim.call_op("rand", [], None, *FACTORY_TAIL, entry="cpu")
    assert s.sizes == [] and 0 <= float(values(s)) < 1


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_uniform_range_and_distribution(dtype):
    self = to_shim(torch.empty(N // 100, 100, dtype=dtype))
    t = shim.call_op("uniform", self, -2.0, 3.0, None, entry="cpu")
    x = values(t).ravel()
    assert t.dtype == str(dtype)[6:] and t.sizes == [N // 100, 100]
    assert x.min() >= -2 and x.max() < 3
    check_mean_var(x, 0.5, 25 / 12)
    if dtype != torch.bfloat16:
        assert ks_distance(x, lambda v: (v + 2) / 5) < ks_bound(x.size)
    # a range of one point gives that point
    assert np.all(values(shim.call_op("uniform", self, 1.5, 1.5, None, entry="cpu")) == 1.5)


# ---------------------------------------------------------------- normal


@pytest.mark.parametrize("dtype", FLOATS)
def test_randn_distribution(dtype):
    t = shim.call_op("randn", [N], CODES[dtype], *FACTORY_TAIL, entry="cpu")
    x = values(t)
    assert t.dtype == str(dtype)[6:] and np.all(np.isfinite(x))
    check_mean_var(x, 0.0, 1.0)
    if dtype in (torch.float32, torch.float64):
        assert ks_distance(x, normal_cdf) < ks_bound(x.size)
    # odd and even positions are equally normal (both halves of each pair are used)
    check_mean_var(x[1::2], 0.0, 1.0)


def test_randn_complex_parts_each_have_half_the_variance():
    z = values(shim.call_op("randn", [N], CODES[torch.complex128], *FACTORY_TAIL, entry="cpu"))
    for part in (z.real, z.imag):
        check_mean_var(part, 0.0, 0.5)
    assert abs(np.mean(np.abs(z) ** 2) - 1.0) < 0.02


def test_normal_functional_mean_std_and_layout():
    base = torch.empty(300, 700).t()  # a transpose: the result keeps its layout
    t = shim.call_op("normal_functional", to_shim(base), 3.0, 2.0, None, entry="cpu")
    assert t.sizes == [700, 300] and t.strides == list(torch.ops.aten.normal_functional(base, 3.0, 2.0).stride())
    x = values(t).ravel()
    check_mean_var(x, 3.0, 4.0)
    assert ks_distance((x - 3) / 2, normal_cdf) < ks_bound(x.size)
    zero = values(shim.call_op("normal_functional", to_shim(base), -1.0, 0.0, None, entry="cpu"))
    assert np.all(zero == -1.0)


# ---------------------------------------------------------------- exponential


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_exponential_distribution(dtype):
    t = shim.call_op("exponential", to_shim(torch.empty(N, dtype=dtype)), 2.5, None, entry="cpu")
    x = values(t)
    assert x.min() > 0 and np.all(np.isfinite(x))
    check_mean_var(x, 1 / 2.5, 1 / 2.5**2)
    assert ks_distance(x, lambda v: 1 - np.exp(-2.5 * v)) < ks_bound(x.size)


# ---------------------------------------------------------------- integers


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int16, torch.int8,
                                   torch.uint8, torch.float32, torch.bfloat16])
def test_randint_low_is_uniform_over_the_range(dtype):
    low, high = (-5, 11) if dtype != torch.uint8 else (3, 19)
    t = shim.call_op("randint_low", low, high, [N], CODES[dtype], *FACTORY_TAIL, entry="cpu")
    assert t.dtype == str(dtype)[6:] and t.sizes == [N]
    x = values(t)
    assert np.all(x == np.round(x)) and x.min() == low and x.max() == high - 1
    counts = np.bincount((x - low).astype(np.int64), minlength=high - low)
    expected = N / (high - low)
    chi2 = float(np.sum((counts - expected) ** 2 / expected))
    assert chi2 < 60, chi2  # 15 degrees of freedom: p ~ 1e-7 at 60


def test_randint_defaults_bool_and_like_forms():
    t = shim.call_op("randint", 7, [1000], None, *FACTORY_TAIL, entry="cpu")
    assert t.dtype == "int64" and set(np.unique(values(t))) == set(range(7))
    b = shim.call_op("randint", 2, [1000], CODES[torch.bool], *FACTORY_TAIL, entry="cpu")
    assert b.dtype == "bool" and set(np.unique(values(b))) == {0, 1}
    base = torch.empty(20, 30, dtype=torch.float64)[:, ::2]  # not dense: torch's empty_like layout
    like = shim.call_op("randint_like", to_shim(base), 9, *((None,) + LIKE_TAIL), entry="cpu")
    assert like.dtype == "float64" and like.strides == list(torch.randint_like(base, 9).stride())
    assert set(np.unique(values(like))) == set(range(9))
    low = shim.call_op("randint_like_low_dtype", to_shim(base), -3, 2, CODES[torch.int32],
                       *LIKE_TAIL, entry="cpu")
    assert low.dtype == "int32" and set(np.unique(values(low))) == set(range(-3, 2))


def test_randint_low_out_over_the_whole_int64_range():
    """What generated code calls to seed its random kernels."""
    out = shim.empty_strided([N], None, "int64")
    assert shim.call_op("randint_low_out", out, -2**63, 2**63 - 1, [N], entry="cpu") is None
    x = to_torch(out).numpy()
    assert len(np.unique(x)) == N  # 64 random bits: no repeats in 2e5 draws
    assert abs(np.mean(x < 0) - 0.5) < 6 * 0.5 / math.sqrt(N)
    for bit in (0, 17, 40, 62):  # every bit is a fair coin
        assert abs(np.mean((x >> bit) & 1) - 0.5) < 6 * 0.5 / math.sqrt(N)
    with pytest.raises(ShimError, match="out is not resized"):
        shim.call_op("randint_low_out", out, 0, 10, [N + 1], entry="cpu")


def test_randint_errors():
    with pytest.raises(ShimError, match="to be less than 'to'"):
        shim.call_op("randint_low", 5, 5, [3], None, *FACTORY_TAIL, entry="cpu")
    with pytest.raises(ShimError, match="out of bounds for int8"):
        shim.call_op("randint_low", 0, 200, [3], CODES[torch.int8], *FACTORY_TAIL, entry="cpu")
    with pytest.raises(ShimError, match="out of bounds for uint8"):
        shim.call_op("randint_low", -1, 5, [3], CODES[torch.uint8], *FACTORY_TAIL, entry="cpu")
    with pytest.raises(ShimError, match="out of bounds for bfloat16"):
        shim.call_op("randint", 1000, [3], CODES[torch.bfloat16], *FACTORY_TAIL, entry="cpu")
    with pytest.raises(ShimError, match="negative dimension"):
        shim.call_op("randint", 10, [-1], None, *FACTORY_TAIL, entry="cpu")


# ---------------------------------------------------------------- randperm


@pytest.mark.parametrize("n", [0, 1, 2, 7, 1000])
def test_randperm_is_a_permutation(n):
    t = shim.call_op("randperm", n, None, *FACTORY_TAIL, entry="cpu")
    assert t.dtype == "int64" and t.sizes == [n]
    assert sorted(values(t).astype(np.int64).tolist()) == list(range(n))


def test_randperm_positions_are_uniform_and_dtypes():
    n, trials = 5, 6000
    firsts = np.array([int(values(shim.call_op("randperm", n, None, *FACTORY_TAIL, entry="cpu"))[0])
                       for _ in range(trials)])
    counts = np.bincount(firsts, minlength=n)
    chi2 = float(np.sum((counts - trials / n) ** 2 / (trials / n)))
    assert chi2 < 40, chi2  # 4 degrees of freedom: p ~ 4e-8 at 40
    f = shim.call_op("randperm", 50, CODES[torch.float32], *FACTORY_TAIL, entry="cpu")
    assert f.dtype == "float32" and sorted(values(f).tolist()) == list(range(50))
    with pytest.raises(ShimError, match="out of bounds for int8"):
        shim.call_op("randperm", 300, CODES[torch.int8], *FACTORY_TAIL, entry="cpu")
    with pytest.raises(ShimError, match="non-negative"):
        shim.call_op("randperm", -1, None, *FACTORY_TAIL, entry="cpu")


# ---------------------------------------------------------------- bernoulli


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int64, torch.uint8, torch.bool])
def test_bernoulli_float_in_place(dtype):
    buf = torch.full((N // 100, 200), 7, dtype=dtype)
    view = buf[:, ::2]  # gaps that must keep their 7s (True for bool)
    s = to_shim(view)
    assert shim.call_op("bernoulli__float", s, 0.3, None, entry="cpu") is None
    x = values(s)
    assert set(np.unique(x)) == {0, 1}
    assert abs(x.mean() - 0.3) < 6 * math.sqrt(0.3 * 0.7 / x.size)
    gaps = shim.reinterpret_tensor(s, [N // 100, 100], [200, 2], 1)
    assert np.all(values(gaps) == (1 if dtype == torch.bool else 7))
    for p in (0.0, 1.0):
        shim.call_op("bernoulli__float", s, p, None, entry="cpu")
        assert np.all(values(s) == p)


def test_bernoulli_tensor_broadcasts_p():
    self = to_shim(torch.empty(4, N // 4))
    p = torch.tensor([[0.0], [1.0], [0.25], [0.9]])  # one probability per row
    shim.call_op("bernoulli__Tensor", self, to_shim(p), None, entry="cpu")
    x = values(self)
    assert np.all(x[0] == 0) and np.all(x[1] == 1)
    for row, q in ((2, 0.25), (3, 0.9)):
        assert abs(x[row].mean() - q) < 6 * math.sqrt(q * (1 - q) / x[row].size)
    with pytest.raises(ShimError, match=r"every p must be in \[0, 1\]"):
        shim.call_op("bernoulli__Tensor", self, to_shim(torch.tensor([1.5])), None, entry="cpu")


def test_bernoulli_errors():
    with pytest.raises(ShimError, match=r"expects p to be in \[0, 1\]"):
        shim.call_op("bernoulli__float", to_shim(torch.empty(3)), 1.5, None, entry="cpu")
    expanded = to_shim(torch.empty(1).expand(4))
    with pytest.raises(ShimError):  # elements sharing memory
        shim.call_op("bernoulli__float", expanded, 0.5, None, entry="cpu")


# ---------------------------------------------------------------- dropout


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
@pytest.mark.parametrize("p", [0.0, 0.2, 0.5, 1.0])
def test_native_dropout_train(dtype, p):
    x = (torch.rand(400, 500, generator=torch.Generator().manual_seed(1)) + 0.5).to(dtype).t()
    out, mask = shim.call_op("native_dropout", to_shim(x), p, 1, entry="cpu")
    want_out, want_mask = torch.ops.aten.native_dropout(x, p, True)
    assert out.dtype == str(dtype)[6:] and mask.dtype == "bool"
    assert out.sizes == mask.sizes == [500, 400]
    assert out.strides == list(want_out.stride()) and mask.strides == list(want_mask.stride())
    m = to_torch(mask)
    kept = m.double().mean().item()
    assert abs(kept - (1 - p)) <= 6 * math.sqrt(p * (1 - p) / m.numel())
    scale = 0.0 if p == 1 else 1 / (1 - p)
    want = (x * m * scale).to(dtype)  # torch's input.mul(mask).mul_(scale)
    torch.testing.assert_close(to_torch(out), want.contiguous())


def test_native_dropout_eval_and_absent_train():
    x = torch.randn(30, 40).t()
    out, mask = shim.call_op("native_dropout", to_shim(x), 0.5, 0, entry="cpu")
    assert torch.equal(to_torch(out), x) and to_torch(mask).all()
    assert out.strides == list(x.stride())
    _, mask = shim.call_op("native_dropout", to_shim(x), 0.5, None, entry="cpu")  # train=None: training
    assert not to_torch(mask).all()
    with pytest.raises(ShimError, match="between 0 and 1"):
        shim.call_op("native_dropout", to_shim(x), 1.5, 1, entry="cpu")
    with pytest.raises(ShimError, match="not supported"):
        shim.call_op("native_dropout", to_shim(torch.ones(3, dtype=torch.int64)), 0.5, 1, entry="cpu")


# ---------------------------------------------------------------- layouts of *_like


@pytest.mark.parametrize("make", [lambda: torch.empty(6, 8), lambda: torch.empty(6, 8).t(),
                                  lambda: torch.empty(6, 16)[:, ::2],
                                  lambda: torch.empty(2, 3, 4, 5).to(memory_format=torch.channels_last)],
                         ids=["contiguous", "transposed", "gaps", "channels_last"])
@pytest.mark.parametrize("op", ["rand_like", "randn_like"])
def test_like_ops_lay_out_as_torch(op, make):
    base = make()
    t = shim.call_op(op, to_shim(base), *((None,) + LIKE_TAIL), entry="cpu")
    want = getattr(torch, op)(base)
    assert t.sizes == list(want.shape) and t.strides == list(want.stride()) and t.dtype == "float32"
    contiguous = shim.call_op(op, to_shim(base), None, None, None, 0, None, 0, entry="cpu")
    assert contiguous.strides == list(getattr(torch, op)(base, memory_format=torch.contiguous_format).stride())
    f64 = shim.call_op(op, to_shim(base), CODES[torch.float64], *LIKE_TAIL, entry="cpu")
    assert f64.dtype == "float64"


# ---------------------------------------------------------------- arguments


def test_factory_and_generator_arguments_are_checked():
    with pytest.raises(ShimError, match="explicit generators are not supported"):
        shim.call_op("rand_generator", [3], 12345, None, *FACTORY_TAIL, entry="cpu")
    t = shim.call_op("rand_generator", [3], None, None, *FACTORY_TAIL, entry="cpu")  # the default
    assert t.sizes == [3]
    with pytest.raises(ShimError, match="strided layout"):
        shim.call_op("rand", [3], None, 1, None, 0, None, entry="cpu")
    with pytest.raises(ShimError, match="pinned memory"):
        shim.call_op("randn", [3], None, None, None, 0, 1, entry="cpu")
    with pytest.raises(ShimError, match="runs on cpu"):
        shim.call_op("randn", [3], None, None, 1, 0, None, entry="cpu")
    with pytest.raises(ShimError, match="not supported"):
        shim.call_op("rand", [3], CODES[torch.int64], *FACTORY_TAIL, entry="cpu")
    with pytest.raises(ShimError, match="std >= 0.0"):
        shim.call_op("normal_functional", to_shim(torch.empty(3)), 0.0, -1.0, None, entry="cpu")
    with pytest.raises(ShimError, match=r"\[from, to\) range"):
        shim.call_op("uniform", to_shim(torch.empty(3)), 1.0, 0.0, None, entry="cpu")
    with pytest.raises(ShimError, match="lambda > 0.0"):
        shim.call_op("exponential", to_shim(torch.empty(3)), 0.0, None, entry="cpu")
    with pytest.raises(ShimError, match="not supported"):
        shim.call_op("uniform", to_shim(torch.empty(3, dtype=torch.int32)), 0.0, 1.0, None, entry="cpu")


def test_sim_device_has_no_random_kernel():
    x = shim.from_numpy(np.zeros(3, np.float32), copy=True, device="sim")
    with pytest.raises(ShimError, match="no random kernel for sim"):
        shim.call_op("rand_like", x, *((None,) + LIKE_TAIL))


# ---------------------------------------------------------------- seeding


def _draw_everything():
    out = shim.empty_strided([4], None, "int64")
    shim.call_op("randint_low_out", out, -2**63, 2**63 - 1, [4], entry="cpu")
    x = to_shim(torch.ones(50))
    b = to_shim(torch.empty(50))
    shim.call_op("bernoulli__float", b, 0.5, None, entry="cpu")
    results = [
        shim.call_op("rand", [50], None, *FACTORY_TAIL, entry="cpu"),
        shim.call_op("randn", [50], CODES[torch.float64], *FACTORY_TAIL, entry="cpu"),
        shim.call_op("randint", 1000, [50], None, *FACTORY_TAIL, entry="cpu"),
        shim.call_op("randperm", 50, None, *FACTORY_TAIL, entry="cpu"),
        shim.call_op("uniform", x, -1.0, 1.0, None, entry="cpu"),
        shim.call_op("normal_functional", x, 0.0, 1.0, None, entry="cpu"),
        shim.call_op("exponential", x, 1.0, None, entry="cpu"),
        *shim.call_op("native_dropout", x, 0.5, 1, entry="cpu"),
        out, b,
    ]
    return [to_torch(r).numpy().copy() for r in results]


def test_manual_seed_makes_draws_reproducible():
    aotishim.manual_seed(42)
    first = _draw_everything()
    second = _draw_everything()  # the stream goes on: new numbers
    aotishim.manual_seed(42)
    again = _draw_everything()
    aotishim.manual_seed(43)
    other = _draw_everything()
    for a, b, c, d in zip(first, again, second, other):
        np.testing.assert_array_equal(a, b)
        assert not np.array_equal(a, c) and not np.array_equal(a, d)
    assert aotishim.initial_seed() == 43
    aotishim.manual_seed(-1)  # as torch.manual_seed: modulo 2**64
    assert aotishim.initial_seed() == 2**64 - 1
    with pytest.raises(ValueError):
        aotishim.manual_seed(2**64)


def test_seed_draws_a_new_seed():
    s1 = aotishim.seed()
    assert aotishim.initial_seed() == s1
    s2 = aotishim.seed()
    assert s1 != s2


def test_a_fresh_process_starts_from_torchs_default_seed():
    code = ("import aotishim; from aotishim import shim; print(aotishim.initial_seed()); "
            "print(shim.call_op('randint', 2**40, [4], None, None, None, 0, None).numpy().tolist())")
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
            for _ in range(2)]
    assert runs[0] == runs[1]
    assert runs[0].splitlines()[0] == "67280421310721"


# ---------------------------------------------------------------- compiled models


class InductorRandom(torch.nn.Module):
    """Random numbers Inductor draws in its own kernels, seeded by one
    randint_low_out call per run."""

    def forward(self, x):
        noise = torch.rand_like(x)
        gauss = torch.randn(x.shape[0], 64)
        dropped = torch.nn.functional.dropout(x, 0.25, training=True)
        return x + noise, gauss, dropped


class FallbackRandom(torch.nn.Module):
    """Compiled with fallback_random: every draw is a call of a fallback op."""

    def forward(self, x):
        out, mask = torch.ops.aten.native_dropout(x, 0.5, True)
        return (torch.rand_like(x), torch.randn(256, 256), out, mask.float(),
                torch.randint(3, 10, (4096,)), torch.randperm(50),
                torch.empty_like(x).uniform_(-2, 3), torch.empty_like(x).normal_(1, 2),
                torch.empty_like(x).exponential_(4.0), torch.randn_like(x.t()),
                torch.randint_like(x, 0, 5), torch.empty_like(x).bernoulli_(0.3))


def _compile(model_cache, module, name, *, fallback_random=False):
    from aotishim import export

    x = torch.ones(256, 256)
    with torch._inductor.config.patch(fallback_random=fallback_random):
        return export.compile_cached(module, (x,), model_cache, name=name)


def _run(so, x):
    with aotishim.load(so) as model:
        return [o.astype(np.float64) for o in model(x)]


def test_compiled_model_with_inductor_random_kernels(model_cache):
    so = _compile(model_cache, InductorRandom(), "op_random_inductor")
    x = np.ones((256, 256), np.float32)
    aotishim.manual_seed(7)
    noisy, gauss, dropped = _run(so, x)
    assert noisy.shape == (256, 256) and gauss.shape == (256, 64)
    check_mean_var((noisy - 1).ravel(), 0.5, 1 / 12)
    assert (noisy - 1).min() >= 0 and (noisy - 1).max() < 1
    check_mean_var(gauss.ravel(), 0.0, 1.0)
    kept = dropped != 0
    assert np.all(dropped[kept] == np.float32(1 / 0.75))
    assert abs(kept.mean() - 0.75) < 6 * math.sqrt(0.75 * 0.25 / kept.size)
    # each run seeds the kernels anew from the generator; manual_seed repeats them
    second = _run(so, x)
    aotishim.manual_seed(7)
    again = _run(so, x)
    for a, b, c in zip([noisy, gauss, dropped], again, second):
        np.testing.assert_array_equal(a, b)
        assert not np.array_equal(a, c)


def test_compiled_model_calling_the_random_fallback_ops(model_cache):
    so = _compile(model_cache, FallbackRandom(), "op_random_fallback", fallback_random=True)
    x = np.ones((256, 256), np.float32)
    aotishim.manual_seed(11)
    (rand, randn, dropped, mask, ints, perm, unif, normal, expo, randn_t, ints_like,
     bern) = _run(so, x)
    check_mean_var(rand.ravel(), 0.5, 1 / 12)
    check_mean_var(randn.ravel(), 0.0, 1.0)
    assert np.all(dropped == 2 * mask) and abs(mask.mean() - 0.5) < 6 * 0.5 / 256
    assert ints.min() == 3 and ints.max() == 9
    assert sorted(perm.astype(int).tolist()) == list(range(50))
    assert unif.min() >= -2 and unif.max() < 3
    check_mean_var(unif.ravel(), 0.5, 25 / 12)
    check_mean_var(normal.ravel(), 1.0, 4.0)
    check_mean_var(expo.ravel(), 0.25, 1 / 16)
    check_mean_var(randn_t.ravel(), 0.0, 1.0)
    assert set(np.unique(ints_like)) == set(range(5))
    assert abs(bern.mean() - 0.3) < 6 * math.sqrt(0.21 / bern.size)
    aotishim.manual_seed(11)
    again = _run(so, x)
    for a, b in zip([rand, randn, dropped, mask, ints, perm, unif, normal, expo, randn_t, ints_like,
                     bern], again):
        np.testing.assert_array_equal(a, b)
