"""aoti_torch_cpu__fft_c2c / _fft_r2c / _fft_c2r against torch beyond their
OpInfo samples (tests/test_opinfo.py): every norm mode, onesided and
two-sided r2c, one and several dimensions in any order, both complex
dtypes, inputs that are transposed, permuted or have gaps, output strides
equal to torch's, errors; and compiled models: a log-mel spectrogram front
end (torch.stft, a mel matrix, log) and FNet's Fourier mixing, against eager."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import aotishim
from aotishim import ModelError, shim
from aotishim._core import ShimError
from torch_views import to_shim, to_torch

A = torch.ops.aten
DIMS = [[2], [1], [0], [1, 2], [2, 1], [0, 2], [0, 1, 2], [-1], [-2, -3]]


def _layouts(real: torch.dtype):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(4, 6, 10, generator=g, dtype=real)
    return {"contiguous": x, "permuted": torch.randn(10, 4, 6, generator=g, dtype=real).permute(1, 2, 0),
            "transposed": torch.randn(4, 10, 6, generator=g, dtype=real).transpose(1, 2),
            "gaps": torch.randn(4, 7, 20, generator=g, dtype=real)[:, 1:, ::2],
            "size1": torch.randn(4, 1, 10, generator=g, dtype=real).expand(4, 6, 10).contiguous()[:, :1]}


def _check(name, args, reference):
    """The op against torch's: dtype, sizes, strides, values (to the dtype's
    precision relative to the result's largest magnitude: an unnormalized
    transform's values grow with n). Cases torch's own kernel refuses (MKL
    rejects some size-1 transforms) are skipped."""
    try:
        want = reference()
    except RuntimeError:
        return
    got = shim.call_op(name, *args, entry="cpu")
    assert got.dtype == str(want.dtype)[6:]
    assert got.sizes == list(want.shape)
    assert got.strides == list(want.stride()), (name, got.strides, want.stride())
    tol = 1e-5 if want.dtype in (torch.float32, torch.complex64) else 1e-12
    scale = float(want.abs().max()) if want.numel() else 1.0
    torch.testing.assert_close(to_torch(got), want.contiguous(), rtol=tol, atol=tol * max(scale, 1.0))


@pytest.mark.parametrize("real", [torch.float32, torch.float64])
@pytest.mark.parametrize("norm", [0, 1, 2])
def test_fft_ops_match_torch(real, norm):
    cplx = torch.complex64 if real == torch.float32 else torch.complex128
    for layout, x in _layouts(real).items():
        c = torch.complex(x, x.flip(0)).to(cplx)
        if layout != "contiguous":  # the complex input in the same layout as x
            c = torch.empty_strided(x.shape, x.stride(), dtype=cplx).copy_(c)
        for dims in DIMS:
            if any(x.shape[d] < 1 for d in dims):
                continue
            for forward in (1, 0):
                _check("_fft_c2c", (to_shim(c), dims, norm, forward), lambda: A._fft_c2c(c, dims, norm, bool(forward)))
            for onesided in (1, 0):
                _check("_fft_r2c", (to_shim(x), dims, norm, onesided), lambda: A._fft_r2c(x, dims, norm, bool(onesided)))
            n = x.shape[dims[-1]]
            try:
                half = A._fft_r2c(x, dims, 0, True)
            except RuntimeError:
                continue
            for h in (half, half.transpose(0, 1).contiguous().transpose(0, 1)):
                _check("_fft_c2r", (to_shim(h), dims, norm, n), lambda: A._fft_c2r(h, dims, norm, n))


@pytest.mark.parametrize("n", [1, 2, 7, 8, 97])  # odd, even, prime (pocketfft's Bluestein)
def test_c2r_of_non_hermitian_input_and_lengths(n):
    g = torch.Generator().manual_seed(n)
    spec = torch.randn(3, n // 2 + 1, dtype=torch.complex128, generator=g)  # imag of DC kept
    _check("_fft_c2r", (to_shim(spec), [1], 2, n), lambda: A._fft_c2r(spec, [1], 2, n))
    spec2 = torch.randn(5, 3, n // 2 + 1, dtype=torch.complex64, generator=g)
    _check("_fft_c2r", (to_shim(spec2), [0, 2], 1, n), lambda: A._fft_c2r(spec2, [0, 2], 1, n))
    x = torch.randn(3, n, dtype=torch.float64, generator=g)
    _check("_fft_r2c", (to_shim(x), [1], 0, 1), lambda: A._fft_r2c(x, [1], 0, True))
    _check("_fft_r2c", (to_shim(x), [1], 0, 0), lambda: A._fft_r2c(x, [1], 0, False))


def test_round_trips_and_empty_inputs():
    x = torch.randn(8, 16, dtype=torch.float64)
    spec = shim.call_op("_fft_r2c", to_shim(x), [1], 0, 1, entry="cpu")
    back = shim.call_op("_fft_c2r", spec, [1], 2, 16, entry="cpu")
    torch.testing.assert_close(to_torch(back), x)
    e = shim.call_op("_fft_c2c", to_shim(torch.zeros(0, 16, dtype=torch.complex64)), [1], 0, 1,
                     entry="cpu")
    assert e.sizes == [0, 16] and e.dtype == "complex64"
    c = torch.randn(3, 4, dtype=torch.complex64)  # no dims: torch returns a copy
    got = shim.call_op("_fft_c2c", to_shim(c), [], 0, 1, entry="cpu")
    assert torch.equal(to_torch(got), c)


def test_fft_errors():
    c = to_shim(torch.zeros(4, 8, dtype=torch.complex64))
    r = to_shim(torch.zeros(4, 8))
    with pytest.raises(ShimError, match="self must be complex"):
        shim.call_op("_fft_c2c", r, [1], 0, 1, entry="cpu")
    with pytest.raises(ShimError, match="float32 or float64"):
        shim.call_op("_fft_r2c", c, [1], 0, 1, entry="cpu")
    with pytest.raises(ShimError, match="float32 or float64"):
        shim.call_op("_fft_r2c", to_shim(torch.zeros(4, dtype=torch.bfloat16)), [0], 0, 1, entry="cpu")
    with pytest.raises(ShimError, match="out of range"):
        shim.call_op("_fft_c2c", c, [2], 0, 1, entry="cpu")
    with pytest.raises(ShimError, match="more than once"):
        shim.call_op("_fft_c2c", c, [1, -1], 0, 1, entry="cpu")
    with pytest.raises(ShimError, match="normalization must be"):
        shim.call_op("_fft_c2c", c, [1], 3, 1, entry="cpu")
    with pytest.raises(ShimError, match="needs 3"):
        shim.call_op("_fft_c2r", c, [1], 0, 5, entry="cpu")
    with pytest.raises(ShimError, match="at least one"):
        shim.call_op("_fft_r2c", r, [], 0, 1, entry="cpu")


# ---------------------------------------------------------------- compiled models


def mel_matrix(n_freqs: int, n_mels: int, sample_rate: int) -> torch.Tensor:
    """HTK-style triangular mel filters, (n_freqs, n_mels)."""
    def hz_to_mel(f):
        return 2595.0 * np.log10(1.0 + f / 700.0)

    def mel_to_hz(m):
        return 700.0 * (10 ** (m / 2595.0) - 1.0)

    freqs = np.linspace(0, sample_rate / 2, n_freqs)
    pts = mel_to_hz(np.linspace(hz_to_mel(0.0), hz_to_mel(sample_rate / 2), n_mels + 2))
    lower = (freqs[:, None] - pts[None, :-2]) / (pts[1:-1] - pts[:-2])[None, :]
    upper = (pts[None, 2:] - freqs[:, None]) / (pts[2:] - pts[1:-1])[None, :]
    return torch.from_numpy(np.maximum(0, np.minimum(lower, upper)).astype(np.float32))


class LogMel(torch.nn.Module):
    """A speech model's front end: 25 ms Hann frames every 10 ms at 16 kHz,
    power spectrum, 64 mel bands, log."""

    def __init__(self, n_fft: int = 400, hop: int = 160, n_mels: int = 64, sample_rate: int = 16000):
        super().__init__()
        self.n_fft, self.hop = n_fft, hop
        self.register_buffer("window", torch.hann_window(n_fft))
        self.register_buffer("mel", mel_matrix(n_fft // 2 + 1, n_mels, sample_rate))

    def forward(self, wave):
        spec = torch.stft(wave, self.n_fft, self.hop, window=self.window, return_complex=True)
        power = spec.abs() ** 2
        return torch.log(torch.matmul(power.transpose(-1, -2), self.mel) + 1e-6)


class FourierMixing(torch.nn.Module):
    """FNet's token mixing: the real part of a 2-D FFT over sequence and
    hidden dims, then a residual layer norm."""

    def __init__(self):
        super().__init__()
        self.norm = torch.nn.LayerNorm(32)

    def forward(self, x):
        return self.norm(x + torch.fft.fft2(x, dim=(-2, -1)).real)


class Irfft(torch.nn.Module):
    def forward(self, x):
        return torch.fft.irfft(torch.fft.rfft(x) * 2)


def test_compiled_log_mel_front_end_matches_eager(model_cache):
    from op_models import check_model

    wave = torch.randn(2, 16000, generator=torch.Generator().manual_seed(0))
    check_model(model_cache, "op_fft_log_mel", LogMel(), (wave,), rtol=1e-4, atol=1e-4)


def test_compiled_fourier_mixing_matches_eager(model_cache):
    from op_models import check_model

    x = torch.randn(2, 16, 32, generator=torch.Generator().manual_seed(1))
    check_model(model_cache, "op_fft_fnet_mixing", FourierMixing(), (x,), rtol=1e-4, atol=1e-4)


def test_compiled_irfft_matches_eager(model_cache):
    """torch 2.13 compiles irfft's _fft_c2r into a call of its proxy executor
    (the op has no C shim) after a mul by a number made a tensor with
    aoti_torch_scalar_to_tensor_int64: both are aotishim's own, so the model
    loads without any registration and matches eager (it was refused at load,
    naming that shim, before)."""
    from op_models import check_model

    x = torch.randn(4, 16, generator=torch.Generator().manual_seed(2))
    check_model(model_cache, "op_fft_irfft", Irfft(), (x,), rtol=1e-5, atol=1e-5)


def test_a_registered_custom_op_takes_precedence_over_the_builtin_aten_one(model_cache):
    """A registration under the ATen op's name replaces aotishim's own
    implementation for models loaded afterwards (and only for those)."""
    from aotishim import export

    x = torch.randn(4, 16, generator=torch.Generator().manual_seed(3))
    so = export.compile_cached(Irfft(), (x,), model_cache, name="op_fft_irfft")
    seen = []

    def c2r(self, dim, normalization, last_dim_size):
        seen.append((list(dim), normalization, last_dim_size))
        return np.fft.irfft(self, n=last_dim_size, axis=dim[-1]).astype(np.float32)

    aotishim.register_custom_op("aten::_fft_c2r", c2r)
    try:
        with aotishim.load(so) as m:
            out = m.run(x.numpy())[0]
    finally:
        aotishim.unregister_custom_op("aten::_fft_c2r")
    assert seen == [([1], 2, 16)]
    np.testing.assert_allclose(out, Irfft()(x).numpy(), rtol=1e-5, atol=1e-5)
