"""The linalg ops (cholesky_solve, cholesky_inverse, triangular_solve, geqrf,
ormqr, lu_unpack) and _grouped_mm on cuda beyond their OpInfo samples
(tests/test_opinfo.py runs those on cuda too): batch broadcasting, views with
gaps and transposes, complex dtypes, both of triangular_solve's cuBLAS paths,
output strides equal to torch cuda's, torch cuda's behaviour where it differs
from torch cpu's (cholesky_inverse of a singular factor gives inf/NaN, no
error), bad lu_unpack pivots refused before anything is written, and
_grouped_mm in every operand layout against torch cuda (its bfloat16 grouped
kernel too), with strided offsets, empty groups and the errors it gives.

torch cuda is never called where its kernels assert on the device (bad
pivots, bfloat16 empty 2-D x 2-D groups): such an assert would end the
process's CUDA context."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import aotishim
from aotishim import shim

pytestmark = pytest.mark.skipif("cuda:0" not in aotishim.devices(),
                                reason="no CUDA device in this process")
torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("torch cannot use CUDA here", allow_module_level=True)

from aotishim._core import ShimError  # noqa: E402
from cuda_helpers import borrow, tf32_off  # noqa: E402
from torch_views import to_torch  # noqa: E402

LINALG = [torch.float32, torch.float64, torch.complex64, torch.complex128]
TOL = {torch.float32: 1e-4, torch.complex64: 1e-4, torch.float64: 1e-10,
       torch.complex128: 1e-10, torch.float16: 2e-3, torch.bfloat16: 2e-2}


@pytest.fixture(autouse=True)
def no_tf32():
    with tf32_off():
        yield


def gen(seed):
    return torch.Generator(device="cuda").manual_seed(seed)


def randn(g, *shape, dtype=torch.float64):
    if dtype.is_complex:
        return torch.randn(*shape, generator=g, device="cuda", dtype=dtype)
    return torch.randn(*shape, generator=g, device="cuda", dtype=torch.float64).to(dtype)


def spd_factor(g, *batch, n, dtype, upper):
    x = randn(g, *batch, n, n, dtype=dtype)
    eye = torch.eye(n, device="cuda", dtype=dtype)
    return torch.linalg.cholesky(x @ x.mH + n * eye, upper=upper)


def check(name, args, want, tol):
    """Our op against torch cuda's outputs: dtype, sizes, strides, values."""
    got = shim.call_op(name, *args, entry="cuda")
    got = list(got) if isinstance(got, tuple) else [got]
    want = list(want) if isinstance(want, (tuple, list)) else [want]
    assert len(got) == len(want)
    for i, (g_, w) in enumerate(zip(got, want)):
        assert g_.dtype == str(w.dtype)[6:], (name, i, g_.dtype, w.dtype)
        assert g_.sizes == list(w.shape), (name, i, g_.sizes, w.shape)
        if w.numel() > 1:
            assert g_.strides == list(w.stride()), (name, i, g_.strides, w.stride())
        torch.testing.assert_close(to_torch(g_), w.cpu().contiguous(), rtol=tol, atol=tol,
                                   equal_nan=True)
    return got


# ------------------------------------------------------------------ cholesky


@pytest.mark.parametrize("dtype", LINALG)
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_solve_broadcasts_batches_and_reads_views(dtype, upper):
    g = gen(1)
    factor = spd_factor(g, 3, 1, n=6, dtype=dtype, upper=upper)
    b = randn(g, 2, 10, 6, dtype=dtype).transpose(-1, -2)[..., ::2]  # (2, 6, 5), gaps
    check("cholesky_solve", [borrow(b), borrow(factor), int(upper)],
          torch.cholesky_solve(b, factor, upper), TOL[dtype])


@pytest.mark.parametrize("dtype", LINALG)
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("batch", [(), (1,), (4,), (2, 3)])
def test_cholesky_inverse_matches_torch_cuda(dtype, upper, batch):
    factor = spd_factor(gen(2), *batch, n=5, dtype=dtype, upper=upper)
    view = factor.transpose(-1, -2).contiguous().transpose(-1, -2)  # column-major input
    check("cholesky_inverse", [borrow(view), int(upper)],
          torch.cholesky_inverse(view, upper), TOL[dtype])


def test_cholesky_inverse_of_a_singular_factor_gives_inf_not_an_error():
    # torch cpu raises ("The diagonal element 3 is zero"); torch cuda solves
    # against the identity and returns non-finite values, as we do.
    f = torch.eye(3, device="cuda").repeat(2, 1, 1)
    f[1, 2, 2] = 0
    want = torch.cholesky_inverse(f)
    got = to_torch(shim.call_op("cholesky_inverse", borrow(f), 0, entry="cuda"))
    assert not torch.isfinite(want[1]).all() and not torch.isfinite(got[1]).all()
    torch.testing.assert_close(got[0], want[0].cpu())


# ---------------------------------------------------------- triangular_solve


@pytest.mark.parametrize("flags", [(1, 0, 0), (0, 0, 0), (1, 1, 0), (0, 1, 1)])
@pytest.mark.parametrize("dtype", LINALG)
# (batch, n): cuBLAS's batched trsm, then torch cuda's loop of trsm calls
# (at most 8 matrices of at least 64 rows)
@pytest.mark.parametrize("batch,n", [((3, 2), 5), ((1,), 7), ((2,), 64), ((), 80)])
def test_triangular_solve_both_outputs_both_paths(flags, dtype, batch, n):
    upper, transpose, unit = flags
    g = gen(3)
    # well conditioned at every size: small off-diagonal elements
    eye = torch.eye(n, device="cuda", dtype=dtype)
    a = randn(g, *batch, n, n, dtype=dtype) / n ** 0.5 + 2 * eye
    b = randn(g, 1, n, 3, dtype=dtype).expand(*(batch or (1,)), n, 3)
    if not batch:
        b = b[0]
    a_t = a.mT  # a transposed view
    check("triangular_solve", [borrow(b), borrow(a_t), upper, transpose, unit],
          torch.triangular_solve(b, a_t, bool(upper), bool(transpose), bool(unit)),
          TOL[dtype])


def test_triangular_solve_with_a_zero_pivot_gives_inf_and_nan():
    a, b = torch.zeros(3, 3, device="cuda"), torch.ones(3, 2, device="cuda")
    got = shim.call_op("triangular_solve", borrow(b), borrow(a), 1, 0, 0, entry="cuda")
    want = torch.triangular_solve(b, a)[0]
    assert not torch.isfinite(to_torch(got[0])).all() and not torch.isfinite(want).all()


# -------------------------------------------------------------- geqrf, ormqr


@pytest.mark.parametrize("dtype", LINALG)
@pytest.mark.parametrize("shape", [(6, 4), (4, 6), (3, 5, 5), (2, 40, 3)])
def test_geqrf_matches_torch_cuda(dtype, shape):
    a = randn(gen(4), *shape, dtype=dtype).mT.contiguous().mT  # column-major
    check("geqrf", [borrow(a)], torch.geqrf(a), TOL[dtype])
    rows = randn(gen(5), *shape, dtype=dtype)  # row-major
    check("geqrf", [borrow(rows)], torch.geqrf(rows), TOL[dtype])


@pytest.mark.parametrize("dtype", LINALG)
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("transpose", [False, True])
def test_ormqr_matches_torch_cuda(dtype, left, transpose):
    g = gen(6)
    a = randn(g, 2, 6, 4, dtype=dtype)
    qr, tau = torch.geqrf(a)
    if left:  # a transposed view
        c = randn(g, 2, 5, 6, dtype=dtype).mT
    else:  # gaps between elements
        c = randn(g, 2, 5, 12, dtype=dtype)[..., ::2]
    check("ormqr", [borrow(qr), borrow(tau), borrow(c), int(left), int(transpose)],
          torch.ormqr(qr, tau, c, left, transpose), TOL[dtype])


# ------------------------------------------------------------------ lu_unpack


@pytest.mark.parametrize("dtype", LINALG)
@pytest.mark.parametrize("shape", [(5, 5), (2, 6, 4), (2, 3, 4, 7)])
@pytest.mark.parametrize("flags", [(1, 1), (1, 0), (0, 1)])
def test_lu_unpack_matches_torch_cuda(dtype, shape, flags):
    data, pivots = flags
    lu, piv = torch.linalg.lu_factor(randn(gen(7), *shape, dtype=dtype))
    lu_view = lu.contiguous()  # row-major (lu_factor's own is column-major)
    piv_view = torch.stack([piv, piv], -1)[..., 0]  # strided pivots
    want = torch.lu_unpack(lu_view, piv, bool(data), bool(pivots))
    got = shim.call_op("lu_unpack", borrow(lu_view), borrow(piv_view), data, pivots,
                       entry="cuda")
    for g_, w in zip(got, want):
        assert g_.dtype == str(w.dtype)[6:] and g_.sizes == list(w.shape)
        if w.numel() > 1:
            assert g_.strides == list(w.stride())
        assert torch.equal(to_torch(g_), w.cpu().contiguous())  # values only move


def test_lu_unpack_refuses_bad_pivots_before_writing():
    # (torch cuda asserts on the device here, so it is not called)
    lu = torch.randn(2, 4, 4, device="cuda")
    piv = torch.tensor([[1, 2, 3, 4], [2, 5, 3, 4]], device="cuda", dtype=torch.int32)
    with pytest.raises(ShimError, match="pivots passed to lu_unpack must be between 1 and"):
        shim.call_op("lu_unpack", borrow(lu), borrow(piv), 1, 1, entry="cuda")
    piv[1, 1] = 0
    with pytest.raises(ShimError, match="pivots passed to lu_unpack must be between 1 and"):
        shim.call_op("lu_unpack", borrow(lu), borrow(piv), 0, 1, entry="cuda")
    # without the permutation the pivots are not read
    got = shim.call_op("lu_unpack", borrow(lu), borrow(piv), 1, 0, entry="cuda")
    assert got[0].sizes == [0]


# ----------------------------------------------------------------- _grouped_mm

GROUPED = [torch.float32, torch.float16, torch.bfloat16]


def grouped(a, b, offs):
    return shim.call_op("_grouped_mm", borrow(a), borrow(b),
                        None if offs is None else borrow(offs), None, None, entry="cuda")


def offsets(*ends):
    return torch.tensor(ends, device="cuda", dtype=torch.int32)


def grouped_cases(dtype):
    """Operand layouts torch cuda's grouped kernels all take (sizes and
    group lengths multiples of 16 elements, as its bfloat16 kernel needs)."""
    g = gen(8)

    def r(*shape):
        return randn(g, *shape, dtype=torch.float32).to(dtype)

    return {
        "2d3d": (r(64, 32), r(4, 32, 48), offsets(16, 24, 48, 64)),
        "2d3d_b_columns": (r(64, 32), r(4, 48, 32).mT, offsets(16, 32, 48, 64)),
        "2d3d_a_columns": (r(32, 64).mT, r(4, 32, 48), offsets(16, 32, 48, 64)),
        "3d2d": (r(3, 24, 32), r(32, 64), offsets(16, 32, 64)),
        "3d2d_b_columns": (r(3, 24, 32), r(64, 32).mT, offsets(16, 48, 64)),
        "2d2d": (r(24, 64), r(64, 40), offsets(16, 48, 64)),
        "2d2d_columns": (r(64, 24).mT, r(40, 64).mT, offsets(32, 48, 64)),
        "3d3d": (r(3, 24, 32), r(3, 32, 40), None),
        "3d3d_columns": (r(3, 32, 24).mT, r(3, 40, 32).mT, None),
    }


@pytest.mark.parametrize("dtype", GROUPED)
@pytest.mark.parametrize("case", list(grouped_cases(torch.float32)))
def test_grouped_mm_matches_torch_cuda(dtype, case):
    a, b, offs = grouped_cases(dtype)[case]
    want = torch._grouped_mm(a, b, offs)
    got = grouped(a, b, offs)
    assert got.dtype == str(dtype)[6:] and got.sizes == list(want.shape)
    assert got.strides == list(want.stride())  # rows padded to 16 bytes
    torch.testing.assert_close(to_torch(got).double(), want.cpu().double(), rtol=TOL[dtype],
                               atol=TOL[dtype] * 8)


@pytest.mark.parametrize("dtype", GROUPED)
def test_grouped_mm_reads_strided_offsets_and_leaves_rows_past_the_last(dtype):
    a, b, _ = grouped_cases(dtype)["2d3d"]
    offs = offsets(16, 0, 32, 0, 40, 0, 48, 0)[::2]  # 48 < 64 rows: the rest unwritten
    want = torch._grouped_mm(a, b, offs.contiguous())
    got = to_torch(grouped(a, b, offs))
    torch.testing.assert_close(got[:48].double(), want[:48].cpu().double(), rtol=TOL[dtype],
                               atol=TOL[dtype] * 8)


@pytest.mark.parametrize("dtype", GROUPED)
def test_grouped_mm_empty_group_of_2d_operands_is_zero(dtype):
    g = gen(9)
    a = randn(g, 24, 64, dtype=torch.float32).to(dtype)
    b = randn(g, 64, 40, dtype=torch.float32).to(dtype)
    offs = offsets(0, 32, 32, 64)
    got = to_torch(grouped(a, b, offs)).double()
    exact = torch.stack([torch.zeros(24, 40, dtype=torch.float64, device="cuda"),
                         a[:, :32].double() @ b[:32].double(),
                         torch.zeros(24, 40, dtype=torch.float64, device="cuda"),
                         a[:, 32:].double() @ b[32:].double()]).cpu()
    assert torch.equal(got[0], exact[0]) and torch.equal(got[2], exact[2])
    torch.testing.assert_close(got, exact, rtol=TOL[dtype], atol=TOL[dtype] * 8)
    if dtype != torch.bfloat16:  # torch cuda's bfloat16 kernel asserts on empty K groups
        torch.testing.assert_close(got, torch._grouped_mm(a, b, offs).cpu().double(),
                                   rtol=TOL[dtype], atol=TOL[dtype] * 8)


def test_grouped_mm_errors():
    a, b, offs = grouped_cases(torch.float32)["2d3d"]
    with pytest.raises(ShimError, match="offs must be non-decreasing"):
        grouped(a, b, offsets(16, 8, 48, 64))
    with pytest.raises(ShimError, match="offs must be non-decreasing and at most 64"):
        grouped(a, b, offsets(16, 32, 48, 65))
    # a view one element in: strides fine, the pointer off torch's 16 bytes
    shifted = torch.zeros(64 * 32 + 1, device="cuda")[1:].view(64, 32)
    with pytest.raises(RuntimeError, match="aligned to 16 bytes"):
        torch._grouped_mm(shifted, b, offs)
    with pytest.raises(ShimError, match="aligned to 16 bytes"):
        grouped(shifted, b, offs)


def test_a_missing_cusolver_is_an_error_naming_where_it_looked(tmp_path):
    code = ("import aotishim, numpy as np\n"
            "from aotishim import shim\n"
            "x = shim.from_numpy(np.eye(3), copy=True, device='cuda')\n"
            "try:\n"
            "    shim.call_op('geqrf', x, entry='cuda')\n"
            "except Exception as e:\n"
            "    print(e)\n")
    missing = tmp_path / "nowhere"
    env = dict(os.environ, AOTISHIM_CUSOLVER_PATH=str(missing))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert "cuSOLVER is needed" in out.stdout and str(missing) in out.stdout, out
