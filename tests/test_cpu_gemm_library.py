"""Which library runs the cpu's float32 GEMMs (oneDNN where its OpenMP build
loads, else the BLAS), its errors, and the products through each against
float64."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import aotishim
from aotishim import shim
from aotishim._core import ShimError
from torch_views import to_shim, to_torch


def _onednn_wheel_installed() -> bool:
    try:
        importlib.metadata.version("onednn-cpu-gomp")
        return True
    except importlib.metadata.PackageNotFoundError:
        return False


def _onednn_expected() -> bool:
    """The wheel installs libdnnl.so.3 into the environment's lib/ folder,
    which aotishim finds from its own package folder when installed in the
    same environment; a build run from elsewhere names it in
    AOTISHIM_ONEDNN_PATH."""
    if not (_onednn_wheel_installed() and sys.platform == "linux"
            and platform.machine() == "x86_64"):
        return False
    beside = Path(aotishim.__file__).resolve().parents[3] / "libdnnl.so.3"
    return beside.exists() or bool(os.environ.get("AOTISHIM_ONEDNN_PATH"))


ONEDNN_EXPECTED = _onednn_expected()


@pytest.fixture
def gemm_library():
    """Restores the process's choice after a test changes it."""
    yield aotishim.set_cpu_gemm_library
    aotishim.set_cpu_gemm_library("auto")


def _libraries():
    libs = ["blas"]
    aotishim.set_cpu_gemm_library("auto")
    if aotishim.cpu_gemm_library().startswith("oneDNN"):
        libs.append("onednn")
    return libs


def test_auto_chooses_onednn_where_its_wheel_is_installed(gemm_library):
    gemm_library("auto")
    chosen = aotishim.cpu_gemm_library()
    if not ONEDNN_EXPECTED:
        pytest.skip(f"no onednn-cpu-gomp wheel beside this aotishim (auto chose {chosen!r})")
    assert chosen.startswith("oneDNN 3.") and "(OpenMP)" in chosen, chosen


def test_unknown_library_is_an_error_and_changes_nothing(gemm_library):
    gemm_library("blas")
    with pytest.raises(ShimError, match=r"unknown cpu GEMM library 'mkl'.*\"onednn\""):
        gemm_library("mkl")
    assert aotishim.cpu_gemm_library() == "blas"


def test_missing_onednn_names_every_place_tried():
    """A fresh process whose override names a missing file: auto falls back to
    the BLAS, and asking for oneDNN is an error naming that path."""
    code = (
        "import aotishim\n"
        "assert aotishim.cpu_gemm_library() == 'blas', aotishim.cpu_gemm_library()\n"
        "try:\n"
        "    aotishim.set_cpu_gemm_library('onednn')\n"
        "except aotishim.ShimError as e:\n"
        "    print(e)\n"
        "else:\n"
        "    raise SystemExit('no error')\n"
        "assert aotishim.cpu_gemm_library() == 'blas'\n")
    env = dict(os.environ, AOTISHIM_ONEDNN_PATH="/nonexistent/libdnnl.so.3")
    env.pop("AOTISHIM_CPU_GEMM", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    assert "oneDNN" in out.stdout and "AOTISHIM_ONEDNN_PATH" in out.stdout
    assert "/nonexistent/libdnnl.so.3:" in out.stdout, out.stdout


def test_required_onednn_from_the_environment_fails_the_gemm_clearly():
    """AOTISHIM_CPU_GEMM=onednn without oneDNN: the first float32 GEMM is a
    ShimError naming what was tried, not a silent fall back to the BLAS."""
    code = (
        "import numpy as np, aotishim\n"
        "from aotishim import shim\n"
        "a = shim.from_numpy(np.ones((4, 4), np.float32))\n"
        "out = shim.empty_strided([4, 4], None, 'float32')\n"
        "try:\n"
        "    shim.call_op('mm_out', out, a, a, entry='cpu')\n"
        "except aotishim.ShimError as e:\n"
        "    print(e)\n"
        "else:\n"
        "    raise SystemExit('no error')\n")
    env = dict(os.environ, AOTISHIM_ONEDNN_PATH="/nonexistent/", AOTISHIM_CPU_GEMM="onednn")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr + out.stdout
    assert "/nonexistent/libdnnl.so.3:" in out.stdout, out.stdout


@pytest.mark.parametrize("library", ["blas", "onednn"])
@pytest.mark.parametrize("a_layout", ["row", "column"])
@pytest.mark.parametrize("b_layout", ["row", "transposed"])
@pytest.mark.parametrize("beta", [0.0, 0.5])
@pytest.mark.parametrize("m,k,n", [(2, 7, 5), (16, 1000, 64), (33, 64, 1000), (64, 512, 520),
                                   (5, 0, 9)])
def test_products_match_float64(gemm_library, library, a_layout, b_layout, beta, m, k, n):
    """Every operand layout (a transposed operand is a view of a wider
    matrix: leading dimensions beyond the size), beta 0 over a NaN-filled
    output (never read) and beta 0.5, sizes on both sides of the split over
    threads, and k == 0 (beta * self)."""
    if library not in _libraries():
        pytest.skip("oneDNN is not loadable here")
    gemm_library(library)
    g = torch.Generator().manual_seed(m * 7 + k * 3 + n)
    a = (torch.randn(m, k + 3, generator=g)[:, 1:k + 1] if a_layout == "row"
         else torch.randn(k, m + 2, generator=g)[:, 1:m + 1].t())
    b = (torch.randn(k, n + 1, generator=g)[:, :n] if b_layout == "row"
         else torch.randn(n, k + 2, generator=g)[:, 2:].t())
    self = torch.randn(m, n, generator=g)
    out = shim.empty_strided([m, n], None, "float32")
    try:
        shim.call_op("fill__Scalar", out, float("nan"), entry="cpu")
        shim.call_op("addmm_out", out, to_shim(self), to_shim(a), to_shim(b), beta, 1.5,
                     entry="cpu")
        want = beta * self.double() + 1.5 * (a.double() @ b.double())
        torch.testing.assert_close(to_torch(out).double(), want, rtol=2e-5,
                                   atol=2e-5 * max(k, 1) ** 0.5)
    finally:
        shim.delete(out)


@pytest.mark.parametrize("library", ["blas", "onednn"])
def test_nan_and_inf_in_operands_propagate(gemm_library, library):
    if library not in _libraries():
        pytest.skip("oneDNN is not loadable here")
    gemm_library(library)
    a = torch.randn(8, 32)
    b = torch.randn(32, 24)
    a[3, 5] = float("nan")
    b[7, 11] = float("inf")
    out = shim.empty_strided([8, 24], None, "float32")
    try:
        shim.call_op("mm_out", out, to_shim(a), to_shim(b), entry="cpu")
        got, want = to_torch(out), a @ b
        assert torch.equal(got.isnan(), want.isnan())
        assert torch.equal(got.isinf(), want.isinf())
        finite = want.isfinite()
        torch.testing.assert_close(got[finite], want[finite], rtol=2e-5, atol=1e-4)
    finally:
        shim.delete(out)
