"""DLPack exchange with a cuda model is refused clearly (it is enabled for cpu
models only), and the numpy path of the same model still works."""

from __future__ import annotations

import numpy as np
import pytest

import aotishim

pytestmark = pytest.mark.skipif("cuda:0" not in aotishim.devices(),
                                reason="no CUDA device in this process")
torch = pytest.importorskip("torch")

from test_cuda_dlpack import model_for  # noqa: E402


def test_cuda_model_refuses_dlpack_and_keeps_numpy():
    so, module = model_for(torch.float32)
    x = torch.randn(64, 256, device="cuda")
    with aotishim.load(so, device="cuda") as model:
        with pytest.raises(aotishim.ModelInputError, match="enabled for cpu models only"):
            model.run(x, x)
        with pytest.raises(aotishim.ModelInputError, match="enabled for cpu models only"):
            model.run(x.cpu().numpy(), x.cpu().numpy(), outputs="dlpack")
        a, b = model.run(x.cpu().numpy(), x.cpu().numpy())
        with torch.no_grad():
            want = module(x, x)
        np.testing.assert_allclose(a, want[0].cpu().numpy(), rtol=1e-4, atol=1e-4)
        np.testing.assert_allclose(b, want[1].cpu().numpy(), rtol=1e-4, atol=1e-4)
