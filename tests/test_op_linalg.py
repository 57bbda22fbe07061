"""The LAPACK-backed linalg ops (cholesky_solve, cholesky_inverse,
triangular_solve, geqrf, ormqr, lu_unpack) and the matmul family
(_addmm_activation, _fused_rms_norm) beyond their OpInfo samples
(tests/test_opinfo.py): batch broadcasting, inputs with gaps and
transposes, output strides equal to torch's, torch's errors (a singular
factor for cholesky_inverse, bad pivots for lu_unpack), and compiled models
whose generated code calls these fallbacks, against eager."""

from __future__ import annotations

import pytest
import torch

from aotishim import shim
from aotishim._core import ShimError
from torch_views import to_shim, to_torch

A = torch.ops.aten
G = torch.Generator().manual_seed(0)


def _spd_factor(*batch, n, dtype=torch.float64, upper=False):
    x = torch.randn(*batch, n, n, generator=G, dtype=dtype)
    a = x @ x.mH + n * torch.eye(n, dtype=dtype)
    return torch.linalg.cholesky(a, upper=upper)


def _check(name, args, want, tol=1e-10):
    got = shim.call_op(name, *args, entry="cpu")
    got = list(got) if isinstance(got, tuple) else [got]
    want = list(want) if isinstance(want, (tuple, list)) else [want]
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == str(w.dtype)[6:], (name, g.dtype, w.dtype)
        assert g.sizes == list(w.shape), (name, g.sizes, w.shape)
        if w.numel() > 1:
            assert g.strides == list(w.stride()), (name, g.strides, w.stride())
        torch.testing.assert_close(to_torch(g), w.contiguous(), rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve_broadcasts_batches_and_reads_views(dtype, upper):
    factor = _spd_factor(3, 1, n=4, dtype=dtype, upper=upper)
    b = torch.randn(2, 6, 4, generator=G, dtype=dtype).transpose(-1, -2)[..., ::2]  # (2, 4, 3), gaps
    _check("cholesky_solve", [to_shim(b), to_shim(factor), int(upper)],
           torch.cholesky_solve(b, factor, upper))


@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_inverse_is_the_full_inverse(dtype, upper):
    factor = _spd_factor(2, n=5, dtype=dtype, upper=upper).transpose(0, 1)  # (5, 2, 5) view
    factor = factor.transpose(0, 1)
    _check("cholesky_inverse", [to_shim(factor), int(upper)], torch.cholesky_inverse(factor, upper))


def test_cholesky_inverse_of_a_singular_factor_fails_as_torch():
    f = torch.eye(3).repeat(2, 1, 1)
    f[1, 2, 2] = 0
    with pytest.raises(ShimError, match=r"\(Batch element 1\): The diagonal element 3 is zero"):
        shim.call_op("cholesky_inverse", to_shim(f), 0, entry="cpu")
    with pytest.raises(torch.linalg.LinAlgError, match="The diagonal element 3 is zero"):
        torch.cholesky_inverse(f)


@pytest.mark.parametrize("flags", [(1, 0, 0), (0, 0, 0), (1, 1, 0), (0, 1, 1)])
@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
def test_triangular_solve_both_outputs(flags, dtype):
    upper, transpose, unit = flags
    a = torch.randn(4, 4, generator=G, dtype=dtype) + 4 * torch.eye(4, dtype=dtype)
    b = torch.randn(3, 1, 4, 2, generator=G, dtype=dtype).expand(3, 2, 4, 2)
    _check("triangular_solve", [to_shim(b), to_shim(a.T), upper, transpose, unit],
           torch.triangular_solve(b, a.T, bool(upper), bool(transpose), bool(unit)))


def test_triangular_solve_with_a_zero_pivot_gives_torchs_inf_and_nan():
    a, b = torch.zeros(3, 3), torch.ones(3, 2)
    got = shim.call_op("triangular_solve", to_shim(b), to_shim(a), 1, 0, 0, entry="cpu")
    torch.testing.assert_close(to_torch(got[0]), torch.triangular_solve(b, a)[0], equal_nan=True)


@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (2, 3, 5, 5), (2, 0, 3)])
@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
def test_geqrf_then_ormqr_reproduce_the_input(shape, dtype):
    x = torch.randn(*shape, generator=G, dtype=dtype)
    got = shim.call_op("geqrf", to_shim(x), entry="cpu")
    a, tau = torch.geqrf(x)
    _check("geqrf", [to_shim(x)], (a, tau))
    # Q R == x, R from geqrf's upper triangle; Q^H x == R
    r = to_torch(got[0]).triu()[..., : min(shape[-2:]), :]
    m = shape[-2]
    eye = torch.eye(m, dtype=dtype).expand(*shape[:-2], m, m)
    for left, trans in ((True, False), (True, True), (False, False), (False, True)):
        other = eye.clone() if left else eye.mT.clone()
        _check("ormqr", [got[0], got[1], to_shim(other), int(left), int(trans)],
               torch.ormqr(a, tau, other, left, trans))
    q = torch.ormqr(a, tau, eye.clone())[..., : min(shape[-2:])]
    torch.testing.assert_close(q @ r, x)
    for t in got:
        shim.delete(t)


@pytest.mark.parametrize("shape", [(5, 5), (3, 6), (6, 3), (2, 4, 4)])
@pytest.mark.parametrize("flags", [(1, 1), (1, 0), (0, 1)])
def test_lu_unpack_matches_torch(shape, flags):
    lu, piv = torch.linalg.lu_factor(torch.randn(*shape, generator=G, dtype=torch.float64))
    lu = lu.mT.contiguous().mT  # the row-major copy of lu_factor's column-major result
    _check("lu_unpack", [to_shim(lu), to_shim(piv), *flags], torch.lu_unpack(lu, piv, *map(bool, flags)))


def test_lu_unpack_refuses_bad_pivots():
    lu, piv = torch.linalg.lu_factor(torch.randn(3, 3, generator=G))
    with pytest.raises(ShimError, match="must be between 1 and LU.size"):
        shim.call_op("lu_unpack", to_shim(lu), to_shim(piv + 5), 1, 1, entry="cpu")
    with pytest.raises(ShimError, match="torch.int32"):
        shim.call_op("lu_unpack", to_shim(lu), to_shim(piv.long()), 1, 1, entry="cpu")
    with pytest.raises(ShimError, match="do not fit"):  # torch's kernel crashes here
        shim.call_op("lu_unpack", to_shim(lu), to_shim(torch.ones(2, 3, dtype=torch.int32)), 1, 1,
                     entry="cpu")


def test_linalg_errors_are_torchs():
    a, b = to_shim(torch.randn(3, 4)), to_shim(torch.randn(3, 2))
    sq = to_shim(torch.randn(3, 3))
    with pytest.raises(ShimError, match="A must be batches of square matrices, but they are 3 by 4"):
        shim.call_op("cholesky_solve", b, a, 0, entry="cpu")
    with pytest.raises(ShimError, match="each A matrix is 3 by 3 but each b matrix is 4 by 2"):
        shim.call_op("triangular_solve", to_shim(torch.randn(4, 2)), sq, 1, 0, 0, entry="cpu")
    with pytest.raises(ShimError, match="Expected b and A to have the same dtype"):
        shim.call_op("cholesky_solve", b, to_shim(torch.randn(3, 3, dtype=torch.float64)), 0,
                     entry="cpu")
    with pytest.raises(ShimError, match="unsupported dtype int32"):
        shim.call_op("geqrf", to_shim(torch.ones(3, 3, dtype=torch.int32)), entry="cpu")
    with pytest.raises(ShimError, match="must match the size of tensor b"):
        shim.call_op("cholesky_solve", to_shim(torch.randn(2, 3, 2)), to_shim(torch.randn(3, 3, 3)), 0,
                     entry="cpu")
    with pytest.raises(ShimError, match="torch.geqrf: input must have at least 2 dimensions"):
        shim.call_op("geqrf", to_shim(torch.randn(3)), entry="cpu")
    x, tau = torch.geqrf(torch.randn(5, 3))
    with pytest.raises(ShimError, match=r"other.shape\[-2\] must be equal to input.shape\[-2\]"):
        shim.call_op("ormqr", to_shim(x), to_shim(tau), to_shim(torch.randn(4, 4)), 1, 0, entry="cpu")
    with pytest.raises(ShimError, match=r"tau.shape\[-1\] must be equal to min"):
        shim.call_op("ormqr", to_shim(x), to_shim(torch.randn(4)), to_shim(torch.randn(5, 4)), 1, 0,
                     entry="cpu")
    with pytest.raises(ShimError, match="cholesky_inverse: The input tensor A must have at least 2"):
        shim.call_op("cholesky_inverse", to_shim(torch.randn(3)), 0, entry="cpu")


# ---------------------------------------------------------------- compiled models


class GaussianProcessHead(torch.nn.Module):
    """A GP posterior from a given Cholesky factor: the mean through
    cholesky_solve, the covariance's inverse through cholesky_inverse, a
    whitened residual through triangular_solve."""

    def forward(self, factor, k_star, y):
        alpha = torch.cholesky_solve(y, factor)
        mean = k_star.mT @ alpha
        precision = torch.cholesky_inverse(factor)
        white = torch.triangular_solve(y, factor, upper=False).solution
        return mean, precision.sum(-1), white * 2


class HouseholderProjection(torch.nn.Module):
    """Least squares through QR: Q^T b by geqrf and ormqr, then R's solve;
    and a matrix rebuilt from its LU factors by lu_unpack."""

    def forward(self, x, b, lu, pivots):
        a, tau = torch.geqrf(x)
        qtb = torch.ormqr(a, tau, b, left=True, transpose=True)
        r = a[..., : x.shape[-1], :].triu()
        sol = torch.triangular_solve(qtb[..., : x.shape[-1], :], r).solution
        p, l, u = torch.lu_unpack(lu, pivots)
        return sol, p @ l @ u




def test_compiled_gaussian_process_head_matches_eager(model_cache):
    from op_models import check_model

    factor = _spd_factor(2, n=6, dtype=torch.float32).contiguous()
    args = (factor, torch.randn(2, 6, 3, generator=G), torch.randn(2, 6, 2, generator=G))
    check_model(model_cache, "op_linalg_gp", GaussianProcessHead(), args, rtol=1e-4, atol=1e-4)


def test_compiled_householder_projection_matches_eager(model_cache):
    from op_models import check_model

    lu, piv = torch.linalg.lu_factor(torch.randn(2, 4, 4, generator=G))
    args = (torch.randn(2, 7, 4, generator=G), torch.randn(2, 7, 3, generator=G),
            lu.contiguous(), piv)
    check_model(model_cache, "op_linalg_qr", HouseholderProjection(), args, rtol=1e-4, atol=1e-4)


class GeluLinearRmsNorm(torch.nn.Module):
    """A gelu linear layer (Inductor keeps _addmm_activation as a fallback
    call) followed by an RMS norm (which Inductor computes in its own
    kernels)."""

    def forward(self, x, bias, weight, gain):
        h = A._addmm_activation(bias, x, weight, use_gelu=True)
        r = A._addmm_activation(bias, x, weight, beta=0.5, alpha=2.0)
        return A._fused_rms_norm(h, [h.shape[-1]], gain, 1e-6)[0], r


def test_compiled_addmm_activation_matches_eager(model_cache):
    from op_models import check_model

    args = (torch.randn(4, 8, generator=G), torch.randn(16, generator=G),
            torch.randn(8, 16, generator=G), torch.randn(16, generator=G))
    check_model(model_cache, "op_addmm_activation", GeluLinearRmsNorm(), args)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float64])
def test_fused_rms_norm_outputs_from_a_transposed_input(dtype):
    x = torch.randn(8, 3, 5, generator=G, dtype=dtype).transpose(0, 1)  # (3, 8, 5)
    w = torch.randn(8, 5, generator=G, dtype=dtype)[:, :]
    want = A._fused_rms_norm(x, [8, 5], w, None)
    tol = 1e-2 if dtype == torch.bfloat16 else 1e-5
    _check("_fused_rms_norm", [to_shim(x), [8, 5], to_shim(w), None], want, tol=tol)
    with pytest.raises(ShimError, match=r"expected input with shape \[\*, 4\]"):
        shim.call_op("_fused_rms_norm", to_shim(x), [4], None, None, entry="cpu")


def test_grouped_mm_errors_are_torchs():
    a, b3 = torch.randn(6, 8), torch.randn(3, 8, 4)
    offs = torch.tensor([2, 4, 6], dtype=torch.int32)

    def call(a, b, offs=None, out_dtype=None):
        return shim.call_op("_grouped_mm", to_shim(a), to_shim(b),
                            None if offs is None else to_shim(offs), None, out_dtype, entry="cpu")

    with pytest.raises(ShimError, match="Have to provide offsets if there is a 2d matrix"):
        call(a, b3)
    with pytest.raises(ShimError, match="Offsets have to be int32"):
        call(a, b3, offs.long())
    with pytest.raises(ShimError, match="offs has to be 1D"):
        call(a, b3, offs.view(3, 1))
    with pytest.raises(ShimError, match="matrix batch sizes have to match"):
        call(a, torch.randn(2, 8, 4), offs)
    with pytest.raises(ShimError, match="contraction dimension of mat_a and mat_b must match"):
        call(a, torch.randn(3, 7, 4), offs)
    with pytest.raises(ShimError, match="strides should be multiple of 16 bytes"):
        call(a, torch.randn(3, 8, 5), offs)
    with pytest.raises(ShimError, match="Expected mat_a to be Float32, BFloat16 or Float16"):
        call(a.double(), b3.double(), offs)
    with pytest.raises(ShimError, match="output dtype must match"):
        call(a, b3, offs, out_dtype=15)
    with pytest.raises(ShimError, match="offs must be non-decreasing and at most 6"):
        call(a, b3, torch.tensor([2, 4, 7], dtype=torch.int32))
    # a short last offset: torch leaves the remaining rows unwritten, here they are zero
    got = call(a, b3, torch.tensor([2, 4, 5], dtype=torch.int32))
    out = to_torch(got)
    assert got.strides == [4, 1]
    torch.testing.assert_close(out[:5], torch._grouped_mm(a, b3, torch.tensor([2, 4, 5], dtype=torch.int32))[:5])
    assert torch.equal(out[5:], torch.zeros(1, 4))


class Experts(torch.nn.Module):
    """A mixture-of-experts layer's expert matmul: tokens sorted by expert,
    one weight per expert (an expert with no tokens included)."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(4, 16, 8, generator=G, dtype=torch.bfloat16))

    def forward(self, x, offs):
        return torch._grouped_mm(x, self.w, offs).relu()


def test_compiled_grouped_mm_experts_match_eager(model_cache):
    from op_models import check_model

    args = (torch.randn(12, 16, generator=G, dtype=torch.bfloat16),
            torch.tensor([3, 6, 6, 12], dtype=torch.int32))
    check_model(model_cache, "op_grouped_mm_experts", Experts(), args, rtol=1e-2, atol=1e-2)
