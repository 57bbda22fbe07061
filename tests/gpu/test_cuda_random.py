"""The random family on cuda (aoti_torch_cuda_rand*, randn*, randint*,
randperm, normal_functional, uniform, exponential, bernoulli_*,
native_dropout and randint_low_out): shapes, dtypes and output strides as
torch cuda gives them, ranges, statistics over many draws, determinism under
aotishim.manual_seed (shared with the cpu ops: one process-wide generator),
argument errors, and compiled cuda models that draw random numbers
(Inductor's own kernels seeded through randint_low_out, and the fallback
ops themselves), also with cuda_graphs=True, where a random run is not
recorded.

Every draw follows a fixed seed, so each statistic is one fixed number: the
bounds (about six standard errors, or a KS significance of 1e-6) hold for
these streams and could only fail for a broken distribution."""

from __future__ import annotations

import math

import numpy as np
import pytest

import aotishim
from aotishim import shim

pytestmark = pytest.mark.skipif("cuda:0" not in aotishim.devices(),
                                reason="no CUDA device in this process")
torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("torch cannot use CUDA here", allow_module_level=True)

import cuda_models  # noqa: E402
from aotishim._core import ShimError  # noqa: E402
from torch_views import _numpy, to_torch  # noqa: E402

CODES = {torch.float32: 6, torch.float64: 7, torch.float16: 5, torch.bfloat16: 15,
         torch.complex64: 9, torch.complex128: 10, torch.int64: 4, torch.int32: 3,
         torch.int16: 2, torch.int8: 1, torch.uint8: 0, torch.bool: 11}
FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
N = 200_000
FACTORY_TAIL = (None, None, 0, None)  # layout, device, device_index_, pin_memory
LIKE_TAIL = (None, None, 0, None, None)  # ... and memory_format


def on_cuda(t: "torch.Tensor") -> shim.Tensor:
    """A cuda shim view with t's sizes, strides and offset over a copy of its storage."""
    storage = t.untyped_storage()
    n = storage.nbytes() // t.element_size()
    flat = torch.empty(0, dtype=t.dtype, device=t.device).set_(storage, 0, (n,), (1,)).cpu()
    base = shim.from_numpy(_numpy(flat), copy=True, device="cuda:0")
    view = shim.reinterpret_tensor(base, list(t.shape), list(t.stride()), t.storage_offset())
    shim.delete(base)
    return view


def values(t: shim.Tensor) -> np.ndarray:
    complex_ = t.dtype.startswith("complex")
    return to_torch(t).to(torch.complex128 if complex_ else torch.float64).numpy()


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
    assert abs(x.var() - var) < sigmas * math.sqrt(8 * var**2 / n), (x.var(), var)


def assert_on_cuda(t: shim.Tensor):
    assert shim.get(t, "device_type") == 1 and shim.get(t, "device_index") == 0


@pytest.fixture(autouse=True)
def _seeded():
    aotishim.manual_seed(1234)


# ---------------------------------------------------------------- uniform


@pytest.mark.parametrize("dtype", FLOATS)
def test_rand_shape_dtype_range_and_distribution(dtype):
    t = shim.call_op("rand", [N // 400, 20, 20], CODES[dtype], *FACTORY_TAIL, entry="cuda")
    assert_on_cuda(t)
    want = torch.rand(N // 400, 20, 20, dtype=dtype, device="cuda")
    assert t.sizes == list(want.shape) and t.strides == list(want.stride())
    assert t.dtype == str(dtype)[6:]
    x = values(t).ravel()
    assert x.min() >= 0 and x.max() < 1
    check_mean_var(x, 0.5, 1 / 12)
    if dtype in (torch.float32, torch.float64):
        assert ks_distance(x, lambda v: v) < ks_bound(x.size)
    steps = {torch.bfloat16: 2**8, torch.float16: 2**11}.get(dtype)
    if steps:
        assert np.all(np.round(x * steps) == x * steps)
        assert len(np.unique(x)) > steps * 0.9
    # neighbours are independent (the counter is the element's position)
    assert abs(np.corrcoef(x[:-1], x[1:])[0, 1]) < 6 / math.sqrt(x.size)


def test_rand_complex_scalars_and_empty():
    c = shim.call_op("rand", [N], CODES[torch.complex64], *FACTORY_TAIL, entry="cuda")
    z = values(c)
    assert c.dtype == "complex64"
    for part in (z.real, z.imag):
        assert part.min() >= 0 and part.max() < 1
        check_mean_var(part, 0.5, 1 / 12)
    assert abs(np.corrcoef(z.real, z.imag)[0, 1]) < 6 / math.sqrt(N)
    assert shim.call_op("rand", [0, 3], None, *FACTORY_TAIL, entry="cuda").sizes == [0, 3]
    s = shim.call_op("rand", [], None, *FACTORY_TAIL, entry="cuda")
    assert s.sizes == [] and 0 <= float(values(s)) < 1


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
def test_uniform_range_and_distribution(dtype):
    self = on_cuda(torch.empty(N // 100, 100, dtype=dtype))
    t = shim.call_op("uniform", self, -2.0, 3.0, None, entry="cuda")
    assert_on_cuda(t)
    x = values(t).ravel()
    assert t.dtype == str(dtype)[6:] and t.sizes == [N // 100, 100]
    assert x.min() >= -2 and x.max() < 3  # never rounded up to the bound
    check_mean_var(x, 0.5, 25 / 12)
    if dtype in (torch.float32, torch.float64):
        assert ks_distance(x, lambda v: (v + 2) / 5) < ks_bound(x.size)
    assert np.all(values(shim.call_op("uniform", self, 1.5, 1.5, None, entry="cuda")) == 1.5)


def test_uniform_on_a_range_that_rounds_to_its_bound():
    """[0, 1 + 2^-9) in bfloat16: most draws near the top round up to the
    bound, and are drawn again."""
    self = on_cuda(torch.empty(N, dtype=torch.bfloat16))
    x = values(shim.call_op("uniform", self, 0.0, 1.0 + 2**-9, None, entry="cuda"))
    assert x.max() < 1.0 + 2**-9 and x.min() >= 0


# ---------------------------------------------------------------- normal


@pytest.mark.parametrize("dtype", FLOATS)
def test_randn_distribution(dtype):
    t = shim.call_op("randn", [N], CODES[dtype], *FACTORY_TAIL, entry="cuda")
    x = values(t)
    assert t.dtype == str(dtype)[6:] and np.all(np.isfinite(x))
    check_mean_var(x, 0.0, 1.0)
    if dtype in (torch.float32, torch.float64):
        assert ks_distance(x, normal_cdf) < ks_bound(x.size)
    check_mean_var(x[1::2], 0.0, 1.0)


def test_randn_complex_parts_each_have_half_the_variance():
    z = values(shim.call_op("randn", [N], CODES[torch.complex128], *FACTORY_TAIL, entry="cuda"))
    for part in (z.real, z.imag):
        check_mean_var(part, 0.0, 0.5)
        assert ks_distance(part * math.sqrt(2), normal_cdf) < ks_bound(part.size)
    assert abs(np.corrcoef(z.real, z.imag)[0, 1]) < 6 / math.sqrt(N)


def test_normal_functional_mean_std_and_layout():
    base = torch.empty(300, 700, device="cuda").t()  # a transpose: the result keeps its layout
    t = shim.call_op("normal_functional", on_cuda(base), 3.0, 2.0, None, entry="cuda")
    want = torch.ops.aten.normal_functional(base, 3.0, 2.0)
    assert t.sizes == list(want.shape) and t.strides == list(want.stride())
    x = values(t).ravel()
    check_mean_var(x, 3.0, 4.0)
    assert ks_distance((x - 3) / 2, normal_cdf) < ks_bound(x.size)
    zero = values(shim.call_op("normal_functional", on_cuda(base), -1.0, 0.0, None, entry="cuda"))
    assert np.all(zero == -1.0)


# ---------------------------------------------------------------- exponential


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_exponential_distribution(dtype):
    t = shim.call_op("exponential", on_cuda(torch.empty(N, dtype=dtype)), 2.5, None, entry="cuda")
    x = values(t)
    assert x.min() > 0 and np.all(np.isfinite(x))
    check_mean_var(x, 1 / 2.5, 1 / 2.5**2)
    assert ks_distance(x, lambda v: 1 - np.exp(-2.5 * v)) < ks_bound(x.size)


# ---------------------------------------------------------------- integers


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int16, torch.int8,
                                   torch.uint8, torch.float32, torch.bfloat16, torch.float16])
def test_randint_low_is_uniform_over_the_range(dtype):
    low, high = (-5, 11) if dtype != torch.uint8 else (3, 19)
    t = shim.call_op("randint_low", low, high, [N], CODES[dtype], *FACTORY_TAIL, entry="cuda")
    assert t.dtype == str(dtype)[6:] and t.sizes == [N]
    x = values(t)
    assert np.all(x == np.round(x)) and x.min() == low and x.max() == high - 1
    counts = np.bincount((x - low).astype(np.int64), minlength=high - low)
    expected = N / (high - low)
    chi2 = float(np.sum((counts - expected) ** 2 / expected))
    assert chi2 < 60, chi2  # 15 degrees of freedom: p ~ 1e-7 at 60


def test_randint_of_a_range_that_is_not_a_power_of_two_is_unbiased():
    """A range of 3 * 2^62: a plain modulo would draw the lowest third twice as often."""
    high = 3 * 2**62 - 2**63  # [-2^63, 2^62): 3 * 2^62 values
    t = shim.call_op("randint_low", -2**63, high, [N], None, *FACTORY_TAIL, entry="cuda")
    x = to_torch(t).numpy()
    assert x.min() >= -2**63 and x.max() < high
    thirds = np.bincount(((x.astype(object) + 2**63) // 2**62).astype(np.int64), minlength=3)
    chi2 = float(np.sum((thirds - N / 3) ** 2 / (N / 3)))
    assert chi2 < 35, thirds  # 2 degrees of freedom


def test_randint_defaults_bool_and_like_forms():
    t = shim.call_op("randint", 7, [1000], None, *FACTORY_TAIL, entry="cuda")
    assert t.dtype == "int64" and set(np.unique(values(t))) == set(range(7))
    b = shim.call_op("randint", 2, [1000], CODES[torch.bool], *FACTORY_TAIL, entry="cuda")
    assert b.dtype == "bool" and set(np.unique(values(b))) == {0, 1}
    base = torch.empty(20, 30, dtype=torch.float64, device="cuda")[:, ::2]  # not dense
    like = shim.call_op("randint_like", on_cuda(base), 9, *((None,) + LIKE_TAIL), entry="cuda")
    assert_on_cuda(like)
    assert like.dtype == "float64" and like.strides == list(torch.randint_like(base, 9).stride())
    assert set(np.unique(values(like))) == set(range(9))
    low = shim.call_op("randint_like_low_dtype", on_cuda(base), -3, 2, CODES[torch.int32],
                       *LIKE_TAIL, entry="cuda")
    assert low.dtype == "int32" and set(np.unique(values(low))) == set(range(-3, 2))


@pytest.mark.parametrize("layout", ["packed", "strided"])
def test_randint_low_out_over_the_whole_int64_range(layout):
    """What generated code calls to seed its random kernels."""
    if layout == "packed":
        out = shim.empty_strided([N], None, "int64", "cuda:0")
    else:  # every other element of a buffer whose gaps must keep their values
        buf = on_cuda(torch.full((2 * N,), 5, dtype=torch.int64))
        out = shim.reinterpret_tensor(buf, [N], [2], 0)
    assert shim.call_op("randint_low_out", out, -2**63, 2**63 - 1, [N], entry="cuda") is None
    x = to_torch(out).numpy()
    assert len(np.unique(x)) == N  # 64 random bits: no repeats in 2e5 draws
    assert abs(np.mean(x < 0) - 0.5) < 6 * 0.5 / math.sqrt(N)
    for bit in (0, 17, 31, 32, 40, 62):  # every bit is a fair coin, both words
        assert abs(np.mean((x >> bit) & 1) - 0.5) < 6 * 0.5 / math.sqrt(N)
    if layout == "strided":
        gaps = shim.reinterpret_tensor(buf, [N], [2], 1)
        assert np.all(to_torch(gaps).numpy() == 5)
    with pytest.raises(ShimError, match="out is not resized"):
        shim.call_op("randint_low_out", out, 0, 10, [N + 1], entry="cuda")


def test_randint_errors():
    with pytest.raises(ShimError, match="to be less than 'to'"):
        shim.call_op("randint_low", 5, 5, [3], None, *FACTORY_TAIL, entry="cuda")
    with pytest.raises(ShimError, match="out of bounds for int8"):
        shim.call_op("randint_low", 0, 200, [3], CODES[torch.int8], *FACTORY_TAIL, entry="cuda")
    with pytest.raises(ShimError, match="out of bounds for bfloat16"):
        shim.call_op("randint", 1000, [3], CODES[torch.bfloat16], *FACTORY_TAIL, entry="cuda")
    with pytest.raises(ShimError, match="negative dimension"):
        shim.call_op("randint", 10, [-1], None, *FACTORY_TAIL, entry="cuda")


# ---------------------------------------------------------------- randperm


@pytest.mark.parametrize("n", [0, 1, 2, 7, 1000, 100_000])
def test_randperm_is_a_permutation(n):
    t = shim.call_op("randperm", n, None, *FACTORY_TAIL, entry="cuda")
    assert_on_cuda(t)
    assert t.dtype == "int64" and t.sizes == [n]
    assert np.array_equal(np.sort(to_torch(t).numpy()), np.arange(n))


def test_randperm_positions_are_uniform_and_dtypes():
    n, trials = 5, 3000
    firsts = np.array([int(values(shim.call_op("randperm", n, None, *FACTORY_TAIL, entry="cuda"))[0])
                       for _ in range(trials)])
    counts = np.bincount(firsts, minlength=n)
    chi2 = float(np.sum((counts - trials / n) ** 2 / (trials / n)))
    assert chi2 < 40, chi2  # 4 degrees of freedom
    for dtype in (torch.float32, torch.int32, torch.int16, torch.bfloat16):
        f = shim.call_op("randperm", 50, CODES[dtype], *FACTORY_TAIL, entry="cuda")
        assert f.dtype == str(dtype)[6:] and sorted(values(f).tolist()) == list(range(50))
    with pytest.raises(ShimError, match="out of bounds for int8"):
        shim.call_op("randperm", 300, CODES[torch.int8], *FACTORY_TAIL, entry="cuda")


# ---------------------------------------------------------------- bernoulli


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16, torch.int64,
                                   torch.uint8, torch.bool])
def test_bernoulli_float_in_place(dtype):
    buf = torch.full((N // 100, 200), 7, dtype=dtype)
    s = on_cuda(buf[:, ::2])  # gaps that must keep their 7s (True for bool)
    assert shim.call_op("bernoulli__float", s, 0.3, None, entry="cuda") is None
    x = values(s)
    assert set(np.unique(x)) == {0, 1}
    assert abs(x.mean() - 0.3) < 6 * math.sqrt(0.3 * 0.7 / x.size)
    gaps = shim.reinterpret_tensor(s, [N // 100, 100], [200, 2], 1)
    assert np.all(values(gaps) == (1 if dtype == torch.bool else 7))
    for p in (0.0, 1.0):
        shim.call_op("bernoulli__float", s, p, None, entry="cuda")
        assert np.all(values(s) == p)


def test_bernoulli_tensor_broadcasts_p_and_checks_it():
    self = on_cuda(torch.empty(4, N // 4))
    p = torch.tensor([[0.0], [1.0], [0.25], [0.9]])  # one probability per row
    shim.call_op("bernoulli__Tensor", self, on_cuda(p), None, entry="cuda")
    x = values(self)
    assert np.all(x[0] == 0) and np.all(x[1] == 1)
    for row, q in ((2, 0.25), (3, 0.9)):
        assert abs(x[row].mean() - q) < 6 * math.sqrt(q * (1 - q) / x[row].size)
    before = values(self).copy()
    for bad in (1.5, float("nan"), -0.1):
        with pytest.raises(ShimError, match=r"every p must be in \[0, 1\]"):
            shim.call_op("bernoulli__Tensor", self, on_cuda(torch.tensor([bad])), None, entry="cuda")
    assert np.array_equal(values(self), before)  # refused before self is written


def test_bernoulli_errors():
    with pytest.raises(ShimError, match=r"expects p to be in \[0, 1\]"):
        shim.call_op("bernoulli__float", on_cuda(torch.empty(3)), 1.5, None, entry="cuda")
    expanded = shim.reinterpret_tensor(on_cuda(torch.empty(1)), [4], [0], 0)
    with pytest.raises(ShimError):  # elements sharing memory
        shim.call_op("bernoulli__float", expanded, 0.5, None, entry="cuda")


# ---------------------------------------------------------------- dropout


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16, torch.float16])
@pytest.mark.parametrize("p", [0.0, 0.2, 0.5, 1.0])
def test_native_dropout_train(dtype, p):
    x = (torch.rand(400, 500, generator=torch.Generator().manual_seed(1)) + 0.5).to(dtype)
    x = x.cuda().t()
    out, mask = shim.call_op("native_dropout", on_cuda(x), p, 1, entry="cuda")
    assert_on_cuda(out) and assert_on_cuda(mask)
    want_out, want_mask = torch.ops.aten.native_dropout(x, p, True)
    assert out.dtype == str(dtype)[6:] and mask.dtype == "bool"
    assert out.sizes == mask.sizes == [500, 400]
    assert out.strides == list(want_out.stride()) and mask.strides == list(want_mask.stride())
    m = to_torch(mask)
    kept = m.double().mean().item()
    assert abs(kept - (1 - p)) <= 6 * math.sqrt(p * (1 - p) / m.numel())
    scale = 0.0 if p == 1 else 1 / (1 - p)
    # torch cuda's own product with our mask: equal bit for bit
    want = (x * m.cuda() * scale).to(dtype).cpu()
    torch.testing.assert_close(to_torch(out), want.contiguous(), rtol=0, atol=0)


def test_native_dropout_eval_and_absent_train():
    x = torch.randn(30, 40, device="cuda").t()
    out, mask = shim.call_op("native_dropout", on_cuda(x), 0.5, 0, entry="cuda")
    assert torch.equal(to_torch(out), x.cpu()) and to_torch(mask).all()
    assert out.strides == list(x.stride())
    _, mask = shim.call_op("native_dropout", on_cuda(x), 0.5, None, entry="cuda")
    assert not to_torch(mask).all()
    with pytest.raises(ShimError, match="between 0 and 1"):
        shim.call_op("native_dropout", on_cuda(x), 1.5, 1, entry="cuda")
    with pytest.raises(ShimError, match="not supported"):
        shim.call_op("native_dropout", on_cuda(torch.ones(3, dtype=torch.int64)), 0.5, 1,
                     entry="cuda")


# ---------------------------------------------------------------- layouts of *_like


LAYOUTS = {
    "contiguous": lambda d: torch.empty(6, 8, device=d),
    "transposed": lambda d: torch.empty(6, 8, device=d).t(),
    "gaps": lambda d: torch.empty(6, 16, device=d)[:, ::2],
    "channels_last": lambda d: torch.empty(2, 3, 4, 5, device=d).to(memory_format=torch.channels_last),
}


@pytest.mark.parametrize("layout", list(LAYOUTS))
@pytest.mark.parametrize("op", ["rand_like", "randn_like"])
def test_like_ops_lay_out_as_torch(op, layout):
    base = LAYOUTS[layout]("cuda")
    t = shim.call_op(op, on_cuda(base), *((None,) + LIKE_TAIL), entry="cuda")
    assert_on_cuda(t)
    want = getattr(torch, op)(base)
    assert t.sizes == list(want.shape) and t.strides == list(want.stride()) and t.dtype == "float32"
    contiguous = shim.call_op(op, on_cuda(base), None, None, None, 0, None, 0, entry="cuda")
    assert contiguous.strides == list(getattr(torch, op)(base, memory_format=torch.contiguous_format).stride())
    f64 = shim.call_op(op, on_cuda(base), CODES[torch.float64], *LIKE_TAIL, entry="cuda")
    assert f64.dtype == "float64"
    x = values(f64)
    assert np.all(np.isfinite(x)) and len(np.unique(x)) == x.size


# ---------------------------------------------------------------- arguments


def test_factory_and_device_arguments_are_checked():
    with pytest.raises(ShimError, match="explicit generators are not supported"):
        shim.call_op("rand_generator", [3], 12345, None, *FACTORY_TAIL, entry="cuda")
    t = shim.call_op("rand_generator", [3], None, None, *FACTORY_TAIL, entry="cuda")
    assert t.sizes == [3]
    assert_on_cuda(t)
    with pytest.raises(ShimError, match="runs on cuda"):
        shim.call_op("randn", [3], None, None, 0, 0, None, entry="cuda")  # device cpu
    with pytest.raises(ShimError, match="not supported"):
        shim.call_op("rand", [3], CODES[torch.int64], *FACTORY_TAIL, entry="cuda")
    with pytest.raises(ShimError, match="std >= 0.0"):
        shim.call_op("normal_functional", on_cuda(torch.empty(3)), 0.0, -1.0, None, entry="cuda")
    with pytest.raises(ShimError, match="lambda > 0.0"):
        shim.call_op("exponential", on_cuda(torch.empty(3)), 0.0, None, entry="cuda")
    # the device-generic entry runs where the tensor is
    g = shim.call_op("rand_like", on_cuda(torch.empty(5)), *((None,) + LIKE_TAIL))
    assert_on_cuda(g)


# ---------------------------------------------------------------- seeding


def _draw_everything(entry="cuda"):
    dev = "cuda:0" if entry == "cuda" else "cpu"
    mk = on_cuda if entry == "cuda" else (lambda t: shim.from_numpy(t.numpy(), copy=True))
    out = shim.empty_strided([4], None, "int64", dev)
    shim.call_op("randint_low_out", out, -2**63, 2**63 - 1, [4], entry=entry)
    x = mk(torch.ones(50))
    b = mk(torch.empty(50))
    shim.call_op("bernoulli__float", b, 0.5, None, entry=entry)
    results = [
        shim.call_op("rand", [50], None, *FACTORY_TAIL, entry=entry),
        shim.call_op("randn", [50], CODES[torch.float64], *FACTORY_TAIL, entry=entry),
        shim.call_op("randint", 1000, [50], None, *FACTORY_TAIL, entry=entry),
        shim.call_op("randperm", 50, None, *FACTORY_TAIL, entry=entry),
        shim.call_op("uniform", x, -1.0, 1.0, None, entry=entry),
        shim.call_op("normal_functional", x, 0.0, 1.0, None, entry=entry),
        shim.call_op("exponential", x, 1.0, None, entry=entry),
        *shim.call_op("native_dropout", x, 0.5, 1, entry=entry),
        out, b,
    ]
    return [to_torch(r).numpy().copy() for r in results]


def test_manual_seed_makes_cuda_draws_reproducible():
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


def test_cpu_and_cuda_draws_share_one_generator():
    """A cpu draw between two cuda ones moves the cuda stream on."""
    aotishim.manual_seed(5)
    plain = [_draw_everything()[0], _draw_everything()[0]]
    aotishim.manual_seed(5)
    first = _draw_everything()[0]
    shim.call_op("rand", [3], None, *FACTORY_TAIL, entry="cpu")
    moved = _draw_everything()[0]
    np.testing.assert_array_equal(first, plain[0])
    assert not np.array_equal(moved, plain[1])


def test_numbers_do_not_depend_on_the_launch_shape():
    """Element i's draw depends on the key and i only: a prefix of a longer
    draw under the same seed is the shorter draw."""
    aotishim.manual_seed(9)
    short = values(shim.call_op("rand", [1000], None, *FACTORY_TAIL, entry="cuda"))
    aotishim.manual_seed(9)
    long = values(shim.call_op("rand", [3_000_000], None, *FACTORY_TAIL, entry="cuda"))
    np.testing.assert_array_equal(short, long[:1000])


# ---------------------------------------------------------------- compiled models


class InductorRandom(torch.nn.Module):
    """Random numbers Inductor draws in its own kernels, seeded by one
    randint_low_out call per run."""

    def forward(self, x):
        noise = torch.rand_like(x)
        gauss = torch.randn(x.shape[0], 64, device=x.device)
        dropped = torch.nn.functional.dropout(x, 0.25, training=True)
        return x + noise, gauss, dropped


class FallbackRandom(torch.nn.Module):
    """Compiled with fallback_random: every draw is a call of a fallback op."""

    def forward(self, x):
        out, mask = torch.ops.aten.native_dropout(x, 0.5, True)
        return (torch.rand_like(x), torch.randn(256, 256, device=x.device), out, mask.float(),
                torch.randint(3, 10, (4096,), device=x.device), torch.randperm(50, device=x.device),
                torch.empty_like(x).uniform_(-2, 3), torch.empty_like(x).normal_(1, 2),
                torch.empty_like(x).exponential_(4.0), torch.randn_like(x.t()),
                torch.randint_like(x, 0, 5), torch.empty_like(x).bernoulli_(0.3))


def _compile(module, name, *, fallback_random=False):
    from aotishim import export

    x = torch.ones(256, 256, device="cuda")
    with torch._inductor.config.patch(fallback_random=fallback_random):
        return export.compile_cached(module, (x,), cuda_models.cache_dir(), name=name,
                                     device="cuda")


def _run(model, x):
    return [o.astype(np.float64) for o in model.run(x)]


def _check_inductor_random(noisy, gauss, dropped):
    assert noisy.shape == (256, 256) and gauss.shape == (256, 64)
    check_mean_var((noisy - 1).ravel(), 0.5, 1 / 12)
    assert (noisy - 1).min() >= 0 and (noisy - 1).max() < 1
    check_mean_var(gauss.ravel(), 0.0, 1.0)
    kept = dropped != 0
    assert np.all(dropped[kept] == np.float32(1 / 0.75))
    assert abs(kept.mean() - 0.75) < 6 * math.sqrt(0.75 * 0.25 / kept.size)


def test_compiled_cuda_model_with_inductor_random_kernels():
    so = _compile(InductorRandom(), "cuda_random_inductor")
    x = np.ones((256, 256), np.float32)
    with aotishim.load(so, device="cuda") as model:
        aotishim.manual_seed(7)
        first = _run(model, x)
        _check_inductor_random(*first)
        second = _run(model, x)  # each run seeds the kernels anew
        aotishim.manual_seed(7)
        again = _run(model, x)
    for a, b, c in zip(first, again, second):
        np.testing.assert_array_equal(a, b)
        assert not np.array_equal(a, c)
    assert model.leaks == []


def test_compiled_cuda_model_with_random_is_not_recorded_as_a_graph():
    """Its replays would repeat one run's numbers: the run goes without a
    graph, says why, and draws anew each time."""
    so = _compile(InductorRandom(), "cuda_random_inductor")
    x = np.ones((256, 256), np.float32)
    with aotishim.load(so, device="cuda", cuda_graphs=True) as model:
        runs = [_run(model, x) for _ in range(3)]
        graphs = model.graphs
        assert len(graphs) == 1 and not graphs[0]["recorded"], graphs
        assert "random" in graphs[0]["reason"], graphs
    for r in runs:
        _check_inductor_random(*r)
    assert not np.array_equal(runs[1][0], runs[2][0])
    assert model.leaks == []


def test_compiled_cuda_model_calling_the_random_fallback_ops():
    so = _compile(FallbackRandom(), "cuda_random_fallback", fallback_random=True)
    x = np.ones((256, 256), np.float32)
    with aotishim.load(so, device="cuda") as model:
        aotishim.manual_seed(11)
        got = _run(model, x)
        aotishim.manual_seed(11)
        again = _run(model, x)
    (rand, randn, dropped, mask, ints, perm, unif, normal, expo, randn_t, ints_like, bern) = got
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
    for a, b in zip(got, again):
        np.testing.assert_array_equal(a, b)
    assert model.leaks == []
