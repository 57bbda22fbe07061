"""The CPU suite's compiled op models (tests/op_models.py and the models of
tests/test_op_*.py), compiled for cuda and run on aotishim against eager
cuda with TF32 off: each reaches cuda fallback kernels from real generated
code. Among them the models the cuda op coverage was asked for: a log-mel
STFT front end (`_fft_r2c`, abs, views), BLOOM's ALiBi scores (`baddbmm`),
order statistics, the index fallbacks, every scatter reduction, sorting,
searchsorted, nonzero, 3-D grid sampling, distances and nn.Bilinear (the
recommender, MoE expert counts, int8 products, pooling and FFT mixing have
their own tests)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import aotishim

pytestmark = pytest.mark.skipif("cuda:0" not in aotishim.devices(),
                                reason="no CUDA device in this process")
torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("torch cannot use CUDA here", allow_module_level=True)

import cuda_models  # noqa: E402
from aotishim import export  # noqa: E402
from cuda_helpers import tf32_off  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import op_models as M  # noqa: E402
from test_op_fft import LogMel  # noqa: E402


def _g(seed):
    return torch.Generator().manual_seed(seed)


def _order_statistics():
    x = torch.randn(6, 9, generator=_g(1))
    q = torch.randint(-3, 4, (5, 11), generator=_g(2))
    # one value fills 6 of each row's 11: mode has one answer (among equally
    # frequent values torch cuda's choice follows its reduction order)
    q[:, :6] = torch.arange(5)[:, None] - 2
    return (x, q)


def _index_fallbacks():
    x = torch.randn(6, 7, generator=_g(3))
    return (x, torch.randn(42, generator=_g(4)), torch.tensor([-1.0, 0.0, 0.5, 1.5]),
            torch.tensor([2, 0, 3, 1]))


def _scatter_reduce():
    x = torch.randn(6, 5, generator=_g(5))
    return (x, torch.randint(0, 6, (4, 5), generator=_g(6)), torch.randn(4, 5, generator=_g(7)))


CASES = {
    # name: (module factory, input factory, rtol, atol)
    "log_mel_stft": (LogMel, lambda: (torch.randn(2, 16000, generator=_g(8)),), 1e-4, 1e-4),
    # the ALiBi bias (batch * heads, 1, keys), broadcast over the queries
    "bloom_alibi_baddbmm": (M.AlibiScores, lambda: (torch.randn(8, 1, 12, generator=_g(9)),
                                                    torch.randn(8, 12, 64, generator=_g(10)),
                                                    torch.randn(8, 12, 64, generator=_g(11))),
                            1e-5, 1e-5),
    "addmv_addbmm": (M.AddmvAddbmm, lambda: (torch.randn(6, generator=_g(12)),
                                             torch.randn(6, 5, generator=_g(13)),
                                             torch.randn(5, generator=_g(14)),
                                             torch.randn(4, 7, generator=_g(15)),
                                             torch.randn(3, 4, 5, generator=_g(16)),
                                             torch.randn(3, 5, 7, generator=_g(17))), 1e-5, 1e-5),
    "order_statistics": (M.OrderStatistics, _order_statistics, 1e-6, 1e-6),
    "index_fallbacks": (M.IndexFallbacks, _index_fallbacks, 0, 0),
    "scatter_reduce": (M.ScatterReduceMean, _scatter_reduce, 1e-6, 1e-6),
    "topk_sort_argmax": (M.TopkSort, lambda: (torch.randn(4, 33, generator=_g(18)),), 0, 0),
    "sort_permuted": (M.SortPermuted, lambda: (torch.randint(0, 5, (3, 6, 40),
                                                             generator=_g(19)).float(),), 0, 0),
    "searchsorted": (M.Searchsorted, lambda: (torch.sort(torch.randn(50, generator=_g(20)))[0],
                                              torch.randn(16, generator=_g(21))), 0, 0),
    "searchsorted_right_2d": (M.SearchsortedRight2d,
                              lambda: (torch.randn(3, 20, generator=_g(22)),
                                       torch.randn(3, 7, generator=_g(23))), 0, 0),
    "nonzero": (M.Nonzero, lambda: (torch.randn(5, 7, generator=_g(24)),), 0, 0),
    "grid_sample_3d": (M.GridSample3d, lambda: (torch.randn(2, 3, 5, 6, 7, generator=_g(25)),
                                                torch.rand(2, 4, 3, 2, 3, generator=_g(26)) * 2
                                                - 1), 1e-5, 1e-5),
    "distances": (M.Distances, lambda: (torch.randn(2, 9, 6, generator=_g(27)),
                                        torch.randn(2, 11, 6, generator=_g(28))), 1e-5, 1e-5),
    "bilinear_head": (M.BilinearHead, lambda: (torch.randn(2, 3, 6, generator=_g(29)),
                                               torch.randn(2, 3, 5, generator=_g(30))), 1e-5,
                      1e-5),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_compiled_cuda_op_model_matches_eager(name):
    make, make_args, rtol, atol = CASES[name]
    torch.manual_seed(0)
    module = make().eval().cuda()
    args = tuple(a.cuda() for a in make_args())
    with tf32_off():
        so = export.compile_cached(module, args, cuda_models.cache_dir(), name=f"cuda_op_{name}",
                                   device="cuda")
        with torch.no_grad():
            want = module(*args)
    want = (want,) if isinstance(want, torch.Tensor) else tuple(want)
    with aotishim.load(so, device="cuda") as model:
        got = model.run(*args, outputs="dlpack")  # device-resident in and out
        assert len(got) == len(want)
        for i, (g, w) in enumerate(zip(got, want)):
            g = torch.from_dlpack(g)
            assert g.shape == w.shape and g.dtype == w.dtype, (name, i, g.shape, w.shape)
            torch.testing.assert_close(g, w, rtol=rtol, atol=atol, equal_nan=True,
                                       msg=lambda m: f"{name} output {i}: {m}")
        again = model.run(*[a.cpu().numpy() for a in args])  # host in and out
        for i, (g, w) in enumerate(zip(again, want)):
            np.testing.assert_allclose(g.astype(np.float64), w.cpu().double().numpy(), rtol=rtol,
                                       atol=atol, err_msg=f"{name} output {i} (numpy)")
    assert model.leaks == []
