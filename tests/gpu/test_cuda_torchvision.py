"""torchvision models beyond the zoo (cuda_models.TORCHVISION: Inception,
GoogLeNet, DenseNet, EfficientNet, ConvNeXt, RegNet, ResNeXt, Swin,
SqueezeNet, MobileNetV2, ShuffleNet, MNASNet, three segmentation and three
video models; Inception also with a dynamic batch, run at batch 2),
compiled for cuda and run by aotishim, against float64 (on the GPU:
cuDNN's float64 kernels), with TF32-off eager as the yardstick: aotishim
must be about as close as eager is. Each model runs from numpy twice on two inputs (the
second call reuses every plan the first made), from torch tensors through
DLPack with its output left on the device, and as a CUDA graph recorded on
one input and replayed on the other.
Every check prints a "TV" line."""

from __future__ import annotations

import time

import numpy as np
import pytest

import aotishim

pytestmark = pytest.mark.skipif("cuda:0" not in aotishim.devices(),
                                reason="no CUDA device in this process")
torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("torch cannot use CUDA here", allow_module_level=True)

from cuda_helpers import tf32_off  # noqa: E402

import cuda_models  # noqa: E402


@pytest.fixture(autouse=True)
def no_tf32():
    with tf32_off():
        yield


def rel(got, ref: "torch.Tensor") -> float:
    got = torch.as_tensor(np.asarray(got, dtype=np.float64)) if not isinstance(got, torch.Tensor) \
        else got.detach().double().cpu()
    return ((got - ref).norm() / ref.norm()).item()


CASES = [*((n, False) for n in cuda_models.TORCHVISION),
         *((n, True) for n in cuda_models.TORCHVISION_DYNAMIC)]


@pytest.mark.parametrize("name,dynamic", CASES,
                         ids=[f"{n}{'-dynamic_batch' if d else ''}" for n, d in CASES])
def test_torchvision_model_on_cuda_matches_float64(name, dynamic):
    module, shape, so = cuda_models.compile_torchvision(name, dynamic)
    inputs = [cuda_models.torchvision_input(shape, seed) for seed in (0, 1)]
    t0 = time.time()
    with torch.no_grad():
        module = module.cuda()
        eager = [module(x.cuda()) for x in inputs]
        module = module.double()  # float64 on the GPU: cuDNN's float64 kernels, no TF32
        refs = [module(x.double().cuda()).cpu() for x in inputs]
        eager = [rel(e, r) for e, r in zip(eager, refs)]
    bound = [max(4 * e, 2e-5) for e in eager]
    errors = {}
    with aotishim.load(so, device="cuda") as model:
        for i, x in enumerate(inputs):
            (y,) = model(x.numpy())
            errors[f"numpy input {i}"] = (rel(y, refs[i]), i)
        (y,) = model.run(inputs[1].cuda(), outputs="dlpack")
        errors["dlpack"] = (rel(torch.from_dlpack(y), refs[1]), 1)
    with aotishim.load(so, device="cuda", cuda_graphs=True) as model:
        model(inputs[0].numpy())  # recorded on this one, replayed on the next
        (y,) = model(inputs[1].numpy())
        errors["graph replay"] = (rel(y, refs[1]), 1)
    for path, (err, i) in errors.items():
        print(f"TV {name}{' dynamic batch' if dynamic else ''} {path}: error {err:.2e} (eager tf32-off {eager[i]:.2e})")
    print(f"TV {name} took {time.time() - t0:.0f} s")
    bad = {p: e for p, (e, i) in errors.items() if not e <= bound[i]}
    assert not bad, bad
