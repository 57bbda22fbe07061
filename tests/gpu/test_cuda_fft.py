"""_fft_c2c / _fft_r2c on cuda (aoti_torch_cuda_*) and _fft_c2r (its
device-generic entry) over cuFFT, against torch cuda: every norm mode,
onesided and two-sided r2c, one and several dimensions in any order, both
complex dtypes, inputs transposed, permuted, with gaps or misaligned, output strides
equal to torch cuda's, round trips; a missing cuFFT is an error naming every
place tried; and a compiled cuda model (FNet's Fourier mixing) against eager."""

from __future__ import annotations

import os
import subprocess
import sys

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
from cuda_helpers import borrow  # noqa: E402
from torch_views import to_torch  # noqa: E402

A = torch.ops.aten
DIMS = [[2], [1], [0], [1, 2], [2, 1], [0, 2], [0, 1, 2], [2, 0, 1], [-1], [-2, -3]]


def _layouts(real):
    g = torch.Generator(device="cuda").manual_seed(0)

    def randn(*shape):
        return torch.randn(*shape, generator=g, device="cuda", dtype=real)

    return {"contiguous": randn(4, 6, 10), "permuted": randn(10, 4, 6).permute(1, 2, 0),
            "transposed": randn(4, 10, 6).transpose(1, 2), "gaps": randn(4, 7, 20)[:, 1:, ::2],
            # data not aligned as a complex: torch cuda's r2c reads a dense copy
            "misaligned": randn(241)[1:].view(4, 6, 10)}


def _check(name, args, reference, entry="cuda"):
    try:
        want = reference()
    except RuntimeError:
        return
    got = shim.call_op(name, *args, entry=entry)
    assert got.dtype == str(want.dtype)[6:]
    assert got.sizes == list(want.shape)
    assert got.strides == list(want.stride()), (name, got.strides, want.stride())
    tol = 2e-5 if want.dtype in (torch.float32, torch.complex64) else 1e-12
    scale = float(want.abs().max()) if want.numel() else 1.0
    torch.testing.assert_close(to_torch(got), want.cpu().contiguous(), rtol=tol,
                               atol=tol * max(scale, 1.0))


@pytest.mark.parametrize("real", [torch.float32, torch.float64])
@pytest.mark.parametrize("norm", [0, 1, 2])
def test_fft_ops_match_torch_cuda(real, norm):
    cplx = torch.complex64 if real == torch.float32 else torch.complex128
    for layout, x in _layouts(real).items():
        c = torch.complex(x, x.flip(0)).to(cplx)
        if layout != "contiguous":  # the complex input in the same layout as x
            c = torch.empty_strided(x.shape, x.stride(), dtype=cplx, device="cuda").copy_(c)
        for dims in DIMS:
            for forward in (1, 0):
                _check("_fft_c2c", (borrow(c), dims, norm, forward),
                       lambda: A._fft_c2c(c, dims, norm, bool(forward)))
            for onesided in (1, 0):
                _check("_fft_r2c", (borrow(x), dims, norm, onesided),
                       lambda: A._fft_r2c(x, dims, norm, bool(onesided)))
            n = x.shape[dims[-1]]
            try:
                half = A._fft_r2c(x, dims, 0, True)
            except RuntimeError as e:  # torch cuda's own internal assert on some layouts
                assert "INTERNAL ASSERT FAILED" in str(e)
                continue
            for h in (half, half.transpose(0, 1).contiguous().transpose(0, 1)):
                _check("_fft_c2r", (borrow(h), dims, norm, n), lambda: A._fft_c2r(h, dims, norm, n),
                       entry=None)


@pytest.mark.parametrize("n", [1, 2, 7, 8, 97, 1024, 4097])
def test_lengths_and_round_trips(n):
    g = torch.Generator(device="cuda").manual_seed(n)
    x = torch.randn(3, n, dtype=torch.float64, generator=g, device="cuda")
    _check("_fft_r2c", (borrow(x), [1], 0, 1), lambda: A._fft_r2c(x, [1], 0, True))
    _check("_fft_r2c", (borrow(x), [1], 0, 0), lambda: A._fft_r2c(x, [1], 0, False))
    spec = shim.call_op("_fft_r2c", borrow(x), [1], 0, 1, entry="cuda")
    back = shim.call_op("_fft_c2r", spec, [1], 2, n)
    torch.testing.assert_close(to_torch(back), x.cpu())
    c = torch.randn(5, n, dtype=torch.complex64, generator=g, device="cuda")
    fwd = shim.call_op("_fft_c2c", borrow(c), [1], 0, 1, entry="cuda")
    inv = shim.call_op("_fft_c2c", fwd, [1], 2, 0, entry="cuda")
    torch.testing.assert_close(to_torch(inv), c.cpu(), rtol=1e-5, atol=1e-5 * max(1, n ** 0.5))


def test_empty_and_no_dims():
    e = shim.call_op("_fft_c2c", borrow(torch.zeros(0, 16, dtype=torch.complex64, device="cuda")),
                     [1], 0, 1, entry="cuda")
    assert e.sizes == [0, 16] and e.dtype == "complex64"
    c = torch.randn(3, 4, dtype=torch.complex128, device="cuda")
    got = shim.call_op("_fft_c2c", borrow(c), [], 0, 1, entry="cuda")
    assert torch.equal(to_torch(got), c.cpu())


def test_missing_cufft_is_a_clear_error_naming_the_place_tried():
    code = """
import numpy as np, aotishim
from aotishim import shim
x = shim.from_numpy(np.ones((4, 8), np.complex64), copy=True, device='cuda:0')
try:
    shim.call_op('_fft_c2c', x, [1], 0, 1, entry='cuda')
except aotishim.ShimError as e:
    print('ERROR', e)
"""
    env = dict(os.environ, AOTISHIM_CUFFT_PATH="/nonexistent/libcufft.so.12")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=120)
    assert "ERROR" in out.stdout, out.stdout + out.stderr
    assert "cuFFT" in out.stdout and "/nonexistent/libcufft.so.12" in out.stdout, out.stdout


class FourierMixing(torch.nn.Module):
    """FNet's token mixing: the real part of a 2-D FFT over (sequence, hidden)."""

    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(32)

    def forward(self, x):
        return self.norm(x + torch.fft.fft2(x).real)


def test_compiled_cuda_fourier_mixing_matches_eager():
    from aotishim import export

    x = torch.randn(2, 16, 32, generator=torch.Generator().manual_seed(0)).cuda()
    module = FourierMixing().cuda()
    so = export.compile_cached(module, (x,), cuda_models.cache_dir(), name="cuda_fnet_mixing",
                               device="cuda")
    with torch.no_grad():
        want = module(x).cpu().numpy()
    with aotishim.load(so, device="cuda") as model:
        got, = model.run(x.cpu().numpy())
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert model.leaks == []
