"""mm / addmm / bmm against numpy (float64 reference).

Operands are views into larger numpy buffers that the shim tensors borrow, so
every case exercises storage offsets, padded and permuted strides, and lets the
test read out's memory directly: the result must land exactly inside out's
view and every other byte of the buffer must be untouched.
"""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from numpy.lib.stride_tricks import as_strided

import aotishim
from aotishim import shim

NP_DTYPES = {"float32": np.float32, "float64": np.float64, "bfloat16": ml_dtypes.bfloat16,
             "float16": np.float16}
BITS = {"float32": np.uint32, "float64": np.uint64, "bfloat16": np.uint16, "float16": np.uint16}
# Relative to sum(|alpha * a_ik * b_kj|) + |beta * self_ij|; bfloat16 and
# float16 are rounded once to 8 / 11 significant bits (2**-8, 2**-11) after
# float32 accumulation.
RTOL = {"float64": 1e-12, "float32": 2e-5, "bfloat16": 1e-2, "float16": 2e-3}

SETTINGS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)

# Entry points: device-generic C++ API and the exported aoti_torch_cpu_* shims.
MM = {"generic": shim.mm, "cpu": shim.cpu_mm_out}
BMM = {"generic": shim.bmm, "cpu": shim.cpu_bmm_out}
ADDMM = {"generic": shim.addmm, "cpu": shim.cpu_addmm_out}


def call_addmm(api, out, bias, a, b, beta, alpha):
    if api == "generic":
        shim.addmm(out, bias, a, b, beta=beta, alpha=alpha)
    else:
        shim.cpu_addmm_out(out, bias, a, b, beta, alpha)


def cpu_allocations() -> int:
    for d in aotishim.memory_stats()["devices"]:
        if d["device"] == "cpu":
            return d["allocations"]
    return 0


# ---------------------------------------------------------------- buffers


def extent(sizes, strides):
    if any(s == 0 for s in sizes):
        return 0
    return 1 + sum((s - 1) * st_ for s, st_ in zip(sizes, strides))


class View:
    """A shim view of a borrowed numpy buffer, plus the same view in numpy."""

    def __init__(self, buf: np.ndarray, base, dtype, sizes, strides, offset):
        self.buf, self.base, self.dtype = buf, base, dtype
        self.sizes, self.strides, self.offset = list(sizes), list(strides), offset
        self.t = shim.reinterpret_tensor(base, list(sizes), list(strides), offset)
        item = buf.itemsize
        self.np = as_strided(buf[offset:], tuple(sizes), tuple(s * item for s in strides))

    def f64(self):
        return self.np.astype(np.float64)

    def mask(self):
        """Positions of the buffer this view covers."""
        m = np.zeros(self.buf.shape, dtype=bool)
        mv = as_strided(m[self.offset :], tuple(self.sizes), tuple(self.strides))
        mv[...] = True
        return m


def make_view(rng, dtype, sizes, strides, offset, fill=None, tail=3) -> View:
    n = offset + extent(sizes, strides) + tail
    if fill is None:
        data = rng.standard_normal(n)
    else:
        data = np.full(n, fill)
    buf = data.astype(NP_DTYPES[dtype])
    base = shim.from_numpy(buf)  # borrowed: the shim reads and writes buf itself
    return View(buf, base, dtype, sizes, strides, offset)


@st.composite
def layout(draw, sizes, broadcast=False):
    """Strides and offset for a view of `sizes`: any dim order (transposes),
    padding, sometimes no unit stride at all, arbitrary strides on size-1 dims,
    and (inputs only) stride-0 broadcast dims."""
    ndim = len(sizes)
    order = draw(st.permutations(range(ndim)))  # order[-1] is the innermost dim
    running = draw(st.sampled_from([1, 1, 1, 2, 3]))
    strides = [0] * ndim
    for d in reversed(order):
        strides[d] = running
        running *= max(sizes[d], 1) + draw(st.integers(0, 2))
    for d in range(ndim):
        if sizes[d] == 1 and draw(st.booleans()):
            strides[d] = draw(st.integers(0, 40))
        elif broadcast and draw(st.integers(0, 9)) == 0:
            strides[d] = 0
    return strides, draw(st.integers(0, 7))


dims = st.one_of(st.integers(0, 6), st.integers(0, 40))
dtypes = st.sampled_from(["float32", "float64", "bfloat16", "float16"])


def input_view(data, rng, dtype, sizes):
    strides, offset = data.draw(layout(sizes, broadcast=True))
    return make_view(rng, dtype, sizes, strides, offset)


def out_view(data, rng, dtype, sizes, fill=None):
    strides, offset = data.draw(layout(sizes))
    return make_view(rng, dtype, sizes, strides, offset, fill=fill)


def check_result(out: View, before: np.ndarray, ref, mag):
    got = out.f64()
    tol = RTOL[out.dtype] * mag + 1e-30
    bad = ~(np.abs(got - ref) <= tol)
    assert not bad.any(), (
        f"{int(bad.sum())} wrong elements; first got {got[bad][:3]}, want {ref[bad][:3]}"
    )
    # Bytes outside out's view are untouched.
    outside = ~out.mask()
    bits = BITS[out.dtype]
    assert np.array_equal(out.buf.view(bits)[outside], before.view(bits)[outside])


# ---------------------------------------------------------------- mm / bmm / addmm


@SETTINGS
@given(data=st.data(), dtype=dtypes, M=dims, K=dims, N=dims, api=st.sampled_from(["generic", "cpu"]))
def test_mm_matches_numpy(data, dtype, M, K, N, api):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    a = input_view(data, rng, dtype, [M, K])
    b = input_view(data, rng, dtype, [K, N])
    out = out_view(data, rng, dtype, [M, N], fill=np.nan)  # mm never reads out
    before = out.buf.copy()
    MM[api](out.t, a.t, b.t)
    check_result(out, before, a.f64() @ b.f64(), np.abs(a.f64()) @ np.abs(b.f64()))


@SETTINGS
@given(
    data=st.data(),
    dtype=dtypes,
    B=st.integers(0, 4),
    M=dims,
    K=dims,
    N=dims,
    api=st.sampled_from(["generic", "cpu"]),
)
def test_bmm_matches_numpy(data, dtype, B, M, K, N, api):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    a = input_view(data, rng, dtype, [B, M, K])
    b = input_view(data, rng, dtype, [B, K, N])
    out = out_view(data, rng, dtype, [B, M, N], fill=np.nan)
    before = out.buf.copy()
    BMM[api](out.t, a.t, b.t)
    check_result(out, before, a.f64() @ b.f64(), np.abs(a.f64()) @ np.abs(b.f64()))


def bias_shapes(M, N):
    return [[N], [1, N], [M, 1], [M, N], [], [1], [1, 1]]


@SETTINGS
@given(
    data=st.data(),
    dtype=dtypes,
    M=dims,
    K=dims,
    N=dims,
    shape_index=st.integers(0, 6),
    beta=st.sampled_from([0.0, 1.0, 0.5, -2.0]),
    alpha=st.sampled_from([1.0, 0.0, -1.5, 0.25]),
    api=st.sampled_from(["generic", "cpu"]),
)
def test_addmm_matches_numpy(data, dtype, M, K, N, shape_index, beta, alpha, api):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    bias_sizes = bias_shapes(M, N)[shape_index]
    a = input_view(data, rng, dtype, [M, K])
    b = input_view(data, rng, dtype, [K, N])
    # beta == 0: neither self nor out is read, so NaN in them must not show.
    bias_strides, bias_offset = data.draw(layout(bias_sizes, broadcast=True))
    bias = make_view(
        rng, dtype, bias_sizes, bias_strides, bias_offset, fill=np.nan if beta == 0 else None
    )
    out = out_view(data, rng, dtype, [M, N], fill=np.nan)
    before = out.buf.copy()
    call_addmm(api, out.t, bias.t, a.t, b.t, beta, alpha)
    prod = alpha * (a.f64() @ b.f64())
    mag = abs(alpha) * (np.abs(a.f64()) @ np.abs(b.f64()))
    if beta != 0:
        expanded = np.broadcast_to(bias.f64(), (M, N))
        prod = prod + beta * expanded
        mag = mag + np.abs(beta * expanded)
    check_result(out, before, prod, mag)


# Large enough (M*N*K >= 2**18) that the cpu GEMM splits C into row or column
# blocks over its threads; blocks cut at odd places, transposed and padded
# operands, alpha and beta all have to land in the right block.
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.data(),
    dtype=st.sampled_from(["float32", "float64"]),
    M=st.integers(1, 300),
    K=st.integers(48, 160),
    N=st.integers(1, 300),
    beta=st.sampled_from([0.0, 1.0, -0.5]),
    alpha=st.sampled_from([1.0, 0.75]),
)
def test_large_addmm_split_over_threads_matches_numpy(data, dtype, M, K, N, beta, alpha):
    rng = np.random.default_rng(data.draw(st.integers(0, 2**32 - 1)))
    a = input_view(data, rng, dtype, [M, K])
    b = input_view(data, rng, dtype, [K, N])
    bias = make_view(rng, dtype, [M, N], [N, 1], 0)
    out = out_view(data, rng, dtype, [M, N], fill=np.nan)
    before = out.buf.copy()
    shim.addmm(out.t, bias.t, a.t, b.t, beta=beta, alpha=alpha)
    prod = alpha * (a.f64() @ b.f64()) + beta * bias.f64()
    mag = abs(alpha) * (np.abs(a.f64()) @ np.abs(b.f64())) + np.abs(beta * bias.f64())
    check_result(out, before, prod, mag)


@pytest.mark.parametrize("api", ["generic", "cpu"])
@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16"])
def test_addmm_in_place_self_is_out(api, dtype):
    # addmm_out(buf, buf, a, b): the bias is out itself, padded, at an offset.
    rng = np.random.default_rng(0)
    a = make_view(rng, dtype, [5, 4], [1, 5], 2)  # transposed
    b = make_view(rng, dtype, [4, 3], [3, 1], 1)
    out = make_view(rng, dtype, [5, 3], [8, 1], 5)  # rows 8 apart
    bias = out.f64().copy()
    before = out.buf.copy()
    call_addmm(api, out.t, out.t, a.t, b.t, 0.5, 2.0)
    ref = 0.5 * bias + 2.0 * (a.f64() @ b.f64())
    mag = np.abs(0.5 * bias) + 2.0 * (np.abs(a.f64()) @ np.abs(b.f64()))
    check_result(out, before, ref, mag)


# ---------------------------------------------------------------- views passed as they lie


@pytest.mark.parametrize("api", ["generic", "cpu"])
def test_out_view_in_cat_buffer_written_in_place(api):
    # Inductor's cat: mm_out(reinterpret_tensor(buf, {10, 3}, {8, 1}, 5), ...).
    # The result must appear in the caller's (borrowed) buffer at exactly
    # those positions, with the gaps between rows untouched.
    rng = np.random.default_rng(1)
    buf = np.full(5 + 80 + 4, 7.0, dtype=np.float32)
    base = shim.from_numpy(buf)
    out = View(buf, base, "float32", [10, 3], [8, 1], 5)
    a = make_view(rng, "float32", [10, 6], [6, 1], 0)
    b = make_view(rng, "float32", [6, 3], [1, 6], 0)  # transposed
    MM[api](out.t, a.t, b.t)
    grid = buf[5 : 5 + 80].reshape(10, 8)
    np.testing.assert_allclose(grid[:, :3], a.f64() @ b.f64(), rtol=1e-5, atol=1e-5)
    assert (grid[:, 3:] == 7.0).all()
    assert (buf[:5] == 7.0).all() and (buf[85:] == 7.0).all()


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16"])
def test_column_major_and_strided_out(dtype):
    rng = np.random.default_rng(2)
    a = make_view(rng, dtype, [7, 5], [5, 1], 0)
    b = make_view(rng, dtype, [5, 9], [9, 1], 0)
    ref = a.f64() @ b.f64()
    mag = np.abs(a.f64()) @ np.abs(b.f64())
    # column-major with padding; then no unit stride at all.
    for strides, offset in ([1, 10], 3), ([2, 20], 1), ([30, 3], 4):
        out = make_view(rng, dtype, [7, 9], strides, offset, fill=np.nan)
        before = out.buf.copy()
        shim.mm(out.t, a.t, b.t)
        check_result(out, before, ref, mag)


@pytest.mark.parametrize("dtype", ["float32", "float64", "bfloat16", "float16"])
def test_out_overlapping_an_input(dtype):
    # out is a itself and also overlaps b: the result must be computed from
    # the inputs as they were. Large enough that a blocked BLAS writing into
    # a while still reading it would visibly corrupt the result.
    n = 600
    rng = np.random.default_rng(3)
    buf = rng.standard_normal(n * n + n * 300 + 8).astype(NP_DTYPES[dtype])
    base = shim.from_numpy(buf)
    a = View(buf, base, dtype, [n, n], [n, 1], 0)
    b = View(buf, base, dtype, [n, n], [1, n], n * 300)  # transposed, overlaps a
    a0, b0 = a.f64().copy(), b.f64().copy()
    before = buf.copy()
    allocations = cpu_allocations()
    shim.mm(a.t, a.t, b.t)
    assert cpu_allocations() == allocations  # the temporary is gone again
    got = as_strided(buf, (n, n), (n * buf.itemsize, buf.itemsize)).astype(np.float64)
    mag = np.abs(a0) @ np.abs(b0)
    assert np.all(np.abs(got - a0 @ b0) <= RTOL[dtype] * mag + 1e-30)
    bits = BITS[dtype]
    assert np.array_equal(buf[n * n :].view(bits), before[n * n :].view(bits))


@pytest.mark.parametrize("api", ["generic", "cpu"])
def test_addmm_in_place_out_is_self_and_mat1(api):
    # addmm_out(x, x, x, b): out is the bias and an operand at once.
    n = 520
    rng = np.random.default_rng(8)
    x = make_view(rng, "float64", [n, n], [n + 3, 1], 2)
    b = make_view(rng, "float64", [n, n], [n, 1], 0)
    x0 = x.f64().copy()
    before = x.buf.copy()
    call_addmm(api, x.t, x.t, x.t, b.t, 0.5, -1.0)
    ref = 0.5 * x0 - x0 @ b.f64()
    mag = np.abs(0.5 * x0) + np.abs(x0) @ np.abs(b.f64())
    check_result(x, before, ref, mag)


def test_addmm_bias_partially_overlapping_out():
    rng = np.random.default_rng(4)
    buf = rng.standard_normal(40).astype(np.float64)
    base = shim.from_numpy(buf)
    out = View(buf, base, "float64", [3, 4], [4, 1], 0)
    bias = View(buf, base, "float64", [4], [1], 6)  # inside out's second row
    a = make_view(rng, "float64", [3, 2], [2, 1], 0)
    b = make_view(rng, "float64", [2, 4], [4, 1], 0)
    bias0 = bias.f64().copy()
    shim.addmm(out.t, bias.t, a.t, b.t, beta=1.0, alpha=1.0)
    np.testing.assert_allclose(out.f64(), bias0[None, :] + a.f64() @ b.f64(), rtol=1e-12)


def test_broadcast_inputs_with_stride_zero():
    # Expanded inputs (stride 0) cannot be described to BLAS and are packed.
    rng = np.random.default_rng(5)
    row = make_view(rng, "float32", [6, 4], [0, 1], 2)  # one row repeated
    col = make_view(rng, "float32", [4, 5], [1, 0], 0)  # one column repeated
    out = make_view(rng, "float32", [6, 5], [5, 1], 0, fill=np.nan)
    shim.mm(out.t, row.t, col.t)
    np.testing.assert_allclose(out.f64(), row.f64() @ col.f64(), rtol=1e-5)


# ---------------------------------------------------------------- edge values


def test_k_zero_gives_beta_times_self():
    rng = np.random.default_rng(6)
    a = make_view(rng, "float32", [3, 0], [1, 1], 0)
    b = make_view(rng, "float32", [0, 4], [4, 1], 0)
    out = make_view(rng, "float32", [3, 4], [4, 1], 0, fill=np.nan)
    shim.mm(out.t, a.t, b.t)
    assert (out.np == 0).all()
    bias = make_view(rng, "float32", [4], [1], 0)
    shim.addmm(out.t, bias.t, a.t, b.t, beta=3.0, alpha=2.0)
    np.testing.assert_allclose(out.f64(), np.broadcast_to(3.0 * bias.f64(), (3, 4)), rtol=1e-6)
    out2 = make_view(rng, "float32", [3, 4], [4, 1], 0, fill=np.nan)
    shim.addmm(out2.t, bias.t, a.t, b.t, beta=0.0, alpha=2.0)
    assert (out2.np == 0).all()


def test_empty_results_touch_nothing():
    rng = np.random.default_rng(7)
    for m, k, n in [(0, 3, 4), (3, 4, 0), (0, 0, 0)]:
        a = make_view(rng, "float32", [m, k], [k, 1], 0)
        b = make_view(rng, "float32", [k, n], [n, 1], 0)
        out = make_view(rng, "float32", [m, n], [n, 1], 0)
        before = out.buf.copy()
        shim.mm(out.t, a.t, b.t)
        assert np.array_equal(out.buf, before)


def bf16(values):
    return np.array(values, dtype=ml_dtypes.bfloat16)


def bf16_mm(a_values, b_values):
    a = bf16(a_values)
    b = bf16(b_values)
    out = np.zeros((a.shape[0], b.shape[1]), dtype=ml_dtypes.bfloat16)
    shim.mm(shim.from_numpy(out), shim.from_numpy(a), shim.from_numpy(b))
    return out


def test_bfloat16_rounds_to_nearest_even_once():
    # 1 + 2**-8 lies halfway between bf16 neighbours 1 and 1 + 2**-7: even is 1.
    assert bf16_mm([[1.0, 1.0]], [[1.0], [2.0**-8]])[0, 0] == 1.0
    # 1 + 3 * 2**-8 lies halfway between 1 + 2**-7 and 1 + 2**-6: even rounds up
    # (truncation would give 1 + 2**-7).
    assert bf16_mm([[1.0, 1.0]], [[1.0], [3 * 2.0**-8]])[0, 0] == 1.0 + 2.0**-6
    # The sum is float32: 300 ones stay exact until the final rounding
    # (bf16 accumulation would stall at 256).
    total = bf16_mm([[1.0] * 300], [[1.0]] * 300)[0, 0]
    assert float(total) == 300.0


def test_bfloat16_keeps_nan_and_inf():
    out = bf16_mm([[np.nan, 1.0], [1.0, 1.0], [np.inf, 0.5]], [[1.0], [2.0]])
    assert math.isnan(float(out[0, 0]))
    assert float(out[1, 0]) == 3.0
    assert float(out[2, 0]) == math.inf


def test_beta_zero_ignores_nan_in_out_and_self():
    a = np.ones((2, 3), dtype=np.float32)
    b = np.ones((3, 2), dtype=np.float32)
    self_ = np.full((2, 2), np.nan, dtype=np.float32)
    out = np.full((2, 2), np.nan, dtype=np.float32)
    shim.cpu_addmm_out(
        shim.from_numpy(out), shim.from_numpy(self_), shim.from_numpy(a), shim.from_numpy(b),
        0.0, 1.0,
    )
    assert (out == 3.0).all()


# ---------------------------------------------------------------- errors


def t32(shape, dtype="float32"):
    return shim.empty_strided(list(shape), None, dtype=dtype)


@pytest.mark.parametrize("api", ["generic", "cpu"])
def test_dtype_mismatch(api):
    with pytest.raises(shim.ShimError, match="dtype mismatch.*mat2 is float64"):
        MM[api](t32([2, 2]), t32([2, 3]), t32([3, 2], "float64"))


@pytest.mark.parametrize("api", ["generic", "cpu"])
@pytest.mark.parametrize("dtype", ["int32", "int64", "bool"])
def test_unsupported_dtype(api, dtype):
    with pytest.raises(shim.ShimError, match=f"unsupported dtype {dtype}"):
        MM[api](t32([2, 2], dtype), t32([2, 3], dtype), t32([3, 2], dtype))


def test_inner_dims_must_agree():
    with pytest.raises(shim.ShimError, match=r"cannot be multiplied \(inner dimensions 3 and 4"):
        shim.cpu_mm_out(t32([2, 5]), t32([2, 3]), t32([4, 5]))
    with pytest.raises(shim.ShimError, match="inner dimensions 3 and 4"):
        shim.cpu_bmm_out(t32([1, 2, 5]), t32([1, 2, 3]), t32([1, 4, 5]))
    with pytest.raises(shim.ShimError, match="inner dimensions 3 and 4"):
        shim.cpu_addmm_out(t32([2, 5]), t32([5]), t32([2, 3]), t32([4, 5]), 1.0, 1.0)


@pytest.mark.parametrize("out_shape", [[2, 4], [5, 2], [2, 5, 1], [10]])
def test_out_shape_must_be_exact(out_shape):
    with pytest.raises(shim.ShimError, match=r"out .*sizes|out must be 2-D"):
        shim.cpu_mm_out(t32(out_shape), t32([2, 3]), t32([3, 5]))


def test_out_shape_message():
    with pytest.raises(shim.ShimError, match=r"out has sizes \[2, 4\] but the result has sizes \[2, 5\]"):
        shim.mm(t32([2, 4]), t32([2, 3]), t32([3, 5]))


def test_wrong_rank():
    with pytest.raises(shim.ShimError, match="self must be 2-D, got a 3-D tensor"):
        shim.cpu_mm_out(t32([2, 5]), t32([1, 2, 3]), t32([3, 5]))
    with pytest.raises(shim.ShimError, match="mat2 must be 3-D, got a 2-D tensor"):
        shim.cpu_bmm_out(t32([1, 2, 5]), t32([1, 2, 3]), t32([3, 5]))
    with pytest.raises(shim.ShimError, match="mat1 must be 2-D"):
        shim.cpu_addmm_out(t32([2, 5]), t32([5]), t32([2]), t32([3, 5]), 1.0, 1.0)


def test_bmm_batch_sizes_must_agree():
    with pytest.raises(shim.ShimError, match="batch sizes differ: self has 2 matrices, mat2 has 3"):
        shim.bmm(t32([2, 2, 5]), t32([2, 2, 3]), t32([3, 3, 5]))


@pytest.mark.parametrize("bias_shape", [[3], [2, 1, 5], [3, 5], [2, 2]])
def test_addmm_bias_must_broadcast(bias_shape):
    # checked even when beta == 0 (self is then not read, but still must fit)
    with pytest.raises(shim.ShimError, match="self"):
        shim.addmm(t32([2, 5]), t32(bias_shape), t32([2, 3]), t32([3, 5]), beta=0.0)


def test_out_with_overlapping_elements_is_rejected():
    base = t32([16])
    out = shim.reinterpret_tensor(base, [2, 3], [0, 1], 0)  # both rows alias
    with pytest.raises(shim.ShimError, match="out's elements overlap"):
        shim.mm(out, t32([2, 4]), t32([4, 3]))


def test_cpu_shim_error_names_the_shim():
    with pytest.raises(shim.ShimError, match="^aoti_torch_cpu_mm_out: "):
        shim.cpu_mm_out(t32([2, 4]), t32([2, 3]), t32([3, 5]))
    with pytest.raises(shim.ShimError, match="^aoti_torch_cpu_addmm_out: "):
        shim.cpu_addmm_out(t32([2, 4]), t32([4]), t32([2, 3]), t32([3, 5]), 1.0, 1.0)
    with pytest.raises(shim.ShimError, match="^aoti_torch_cpu_bmm_out: "):
        shim.cpu_bmm_out(t32([1, 2, 4]), t32([1, 2, 3]), t32([1, 3, 5]))


@pytest.mark.parametrize("api", ["generic", "cpu"])
def test_deleted_handle(api):
    out, a, b = t32([2, 5]), t32([2, 3]), t32([3, 5])
    shim.delete(b)
    with pytest.raises(shim.ShimError, match="mat2 handle .* already deleted"):
        MM[api](out, a, b)


@pytest.mark.parametrize("api", ["generic", "cpu"])
def test_null_handle(api):
    with pytest.raises(shim.ShimError, match="out handle is null"):
        MM[api](0, t32([2, 3]), t32([3, 5]))


def test_c_abi_returns_codes_and_last_error():
    # The exported symbols themselves, as generated code calls them: an error
    # code, never an exception, and the message as the thread's last error.
    import ctypes
    import pathlib

    lib_path = next(pathlib.Path(aotishim.__file__).parent.glob("libaotishim.*"))
    lib = ctypes.CDLL(str(lib_path))
    vp = ctypes.c_void_p
    lib.aoti_torch_cpu_mm_out.argtypes = [vp, vp, vp]
    lib.aoti_torch_cpu_addmm_out.argtypes = [vp, vp, vp, vp, ctypes.c_double, ctypes.c_double]
    lib.aoti_torch_cpu_bmm_out.argtypes = [vp, vp, vp]
    lib.aotishim_last_error.restype = ctypes.c_char_p

    a_np = np.arange(6, dtype=np.float32).reshape(2, 3)
    b_np = np.arange(12, dtype=np.float32).reshape(3, 4)
    out_np = np.zeros((2, 4), dtype=np.float32)
    a, b, out = shim.from_numpy(a_np), shim.from_numpy(b_np), shim.from_numpy(out_np)
    assert lib.aoti_torch_cpu_mm_out(out.handle, a.handle, b.handle) == 0
    np.testing.assert_array_equal(out_np, a_np @ b_np)
    bias = shim.from_numpy(np.ones(4, dtype=np.float32))
    assert lib.aoti_torch_cpu_addmm_out(out.handle, bias.handle, a.handle, b.handle, 1.0, 2.0) == 0
    np.testing.assert_array_equal(out_np, 1.0 + 2.0 * (a_np @ b_np))

    shim.delete(b)
    assert lib.aoti_torch_cpu_mm_out(out.handle, a.handle, b.handle) == 1
    assert b"aoti_torch_cpu_mm_out" in lib.aotishim_last_error()
    assert b"mat2" in lib.aotishim_last_error()
    assert lib.aoti_torch_cpu_bmm_out(None, a.handle, a.handle) == 1
    assert lib.aotishim_last_error().startswith(b"aoti_torch_cpu_bmm_out: ")


def test_blas_integer_limit():
    # K = 2**31 through stride-0 inputs over one element each: no memory, but
    # more than the 32-bit BLAS integer can describe.
    k = 2**31
    a = shim.reinterpret_tensor(t32([1]), [1, k], [1, 0], 0)
    b = shim.reinterpret_tensor(t32([1]), [k, 1], [0, 1], 0)
    with pytest.raises(shim.ShimError, match="exceeds the BLAS integer limit"):
        shim.mm(t32([1, 1]), a, b)


# ---------------------------------------------------------------- other devices (sim)
# The ops layer is device-generic: on an asynchronous device every byte it
# moves must be a device command. sim records commands by name, which shows
# exactly what the op asked of the device.


@pytest.fixture
def sim():
    if "sim" not in aotishim.devices():
        pytest.skip("the sim device is not built")
    sim = pytest.importorskip("aotishim.sim")
    sim.configure()
    yield sim
    aotishim.synchronize("sim")


def on_sim(arr) -> shim.Tensor:
    return shim.from_numpy(np.ascontiguousarray(arr), copy=True, device="sim")


def commands_of(sim, fn) -> list[str]:
    """Names of the device commands fn records on sim, sorted."""
    aotishim.synchronize("sim")
    fn()
    assert sim.pending_commands() > 0
    aotishim.synchronize("sim")
    return sorted(entry.split(" ", 1)[1] for entry in sim.last_execution_order())


def test_sim_out_view_at_offset_is_bound_in_place(sim):
    rng = np.random.default_rng(10)
    a = rng.standard_normal((10, 6)).astype(np.float32)
    b = rng.standard_normal((6, 3)).astype(np.float32)
    buf = on_sim(np.full(89, 7.0, dtype=np.float32))
    out = shim.reinterpret_tensor(buf, [10, 3], [8, 1], 5)
    assert commands_of(sim, lambda: shim.mm(out, on_sim(a), on_sim(b))) == ["gemm"]
    got = shim.to_numpy(buf)
    grid = got[5:85].reshape(10, 8)
    np.testing.assert_allclose(grid[:, :3], a @ b, rtol=1e-5, atol=1e-5)
    assert (grid[:, 3:] == 7.0).all() and (got[:5] == 7.0).all() and (got[85:] == 7.0).all()


def test_sim_addmm_reads_self_only_when_beta_is_nonzero(sim):
    rng = np.random.default_rng(11)
    a = rng.standard_normal((4, 5)).astype(np.float32)
    b = rng.standard_normal((5, 3)).astype(np.float32)
    bias = rng.standard_normal(3).astype(np.float32)
    A, B, BIAS = on_sim(a), on_sim(b), on_sim(bias)
    out = shim.empty_strided([4, 3], None, dtype="float32", device="sim")

    assert commands_of(sim, lambda: shim.addmm(out, BIAS, A, B, beta=0.5)) == ["copy", "gemm"]
    np.testing.assert_allclose(shim.to_numpy(out), 0.5 * bias + a @ b, rtol=1e-5, atol=1e-5)

    assert commands_of(sim, lambda: shim.addmm(out, BIAS, A, B, beta=0.0)) == ["gemm"]
    np.testing.assert_allclose(shim.to_numpy(out), a @ b, rtol=1e-5, atol=1e-5)

    # self is out: already in place, nothing to copy.
    prev = shim.to_numpy(out)
    assert commands_of(sim, lambda: shim.addmm(out, out, A, B, beta=2.0)) == ["gemm"]
    np.testing.assert_allclose(shim.to_numpy(out), 2.0 * prev + a @ b, rtol=1e-5, atol=1e-5)


def test_sim_overlapping_out_goes_through_a_device_temporary(sim):
    rng = np.random.default_rng(12)
    x = rng.standard_normal((4, 4)).astype(np.float32)
    y = rng.standard_normal((4, 4)).astype(np.float32)
    X, Y = on_sim(x), on_sim(y)
    assert commands_of(sim, lambda: shim.mm(X, X, Y)) == ["copy", "gemm"]
    np.testing.assert_allclose(shim.to_numpy(X), x @ y, rtol=1e-5, atol=1e-5)


def test_cpu_shims_reject_other_devices(sim):
    a = on_sim(np.ones((2, 3), dtype=np.float32))
    b = on_sim(np.ones((3, 2), dtype=np.float32))
    out = shim.empty_strided([2, 2], None, dtype="float32", device="sim")
    with pytest.raises(shim.ShimError, match=r"^aoti_torch_cpu_mm_out: out is on sim.*runs on the cpu"):
        shim.cpu_mm_out(out, a, b)
    with pytest.raises(shim.ShimError, match=r"^aoti_torch_cpu_addmm_out: out is on sim"):
        shim.cpu_addmm_out(out, out, a, b, 1.0, 1.0)
    with pytest.raises(shim.ShimError, match=r"^aoti_torch_cpu_bmm_out: out is on sim"):
        shim.cpu_bmm_out(
            shim.reinterpret_tensor(out, [1, 2, 2], [4, 2, 1], 0),
            shim.reinterpret_tensor(a, [1, 2, 3], [6, 3, 1], 0),
            shim.reinterpret_tensor(b, [1, 3, 2], [6, 2, 1], 0),
        )


def test_generic_api_errors_are_raised_not_logged(capfd):
    # The device-generic C++ API only throws: the C shims that call it log an
    # error once with their own name; a Python caller gets the exception alone.
    for call in (lambda: shim.mm(t32([2, 2]), t32([2, 3]), t32([2, 2])),
                 lambda: shim.addmm(t32([2, 2]), t32([2]), t32([2, 3]), t32([2, 2])),
                 lambda: shim.bmm(t32([1, 2, 2]), t32([1, 2, 3]), t32([1, 2, 2]))):
        with pytest.raises(shim.ShimError) as err:
            call()
        assert not str(err.value).startswith(("mm_out", "addmm_out", "bmm_out")), err.value
    assert capfd.readouterr().err == ""
    with pytest.raises(shim.ShimError, match=r"^aoti_torch_cpu_mm_out: "):
        shim.cpu_mm_out(t32([2, 2]), t32([2, 3]), t32([2, 2]))
    logged = capfd.readouterr().err.strip().splitlines()
    assert len(logged) == 1 and logged[0].startswith("[aotishim error] aoti_torch_cpu_mm_out: ")
    assert "mm_out: mm_out" not in logged[0]


def test_operands_on_different_devices(sim):
    a = on_sim(np.ones((2, 3), dtype=np.float32))
    with pytest.raises(shim.ShimError, match="different devices: out is on cpu but self is on sim"):
        shim.mm(t32([2, 2]), a, t32([3, 2]))
