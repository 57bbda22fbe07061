"""Custom ops in a cuda model, through the proxy executor, with Python
implementations: the tensors they receive are device tensors exported
through DLPack, and what they return (torch cuda tensors, or host arrays) is
copied onto the model's GPU. The compiled model (tests/custom_op_models.py's
CustomOpNet: two custom ops, float, int, int-list, None and keyword-bool
arguments, two results, one float64) against eager with TF32 off; wrong
results as clear errors with nothing leaked; runs from several threads."""

from __future__ import annotations

import sys
import threading
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
from aotishim import ModelError  # noqa: E402
from cuda_helpers import tf32_off  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import custom_op_models  # noqa: E402

SCALE_SHIFT = "aotishim_test::scale_shift"
SPLIT_STATS = "aotishim_test::split_stats"
DL_CUDA = 2


@pytest.fixture(autouse=True)
def no_tf32():
    with tf32_off():
        yield


def make_net():
    torch.manual_seed(0)
    return custom_op_models.CustomOpNet().eval().cuda()


@pytest.fixture(scope="module")
def net_so():
    args = tuple(a.cuda() for a in custom_op_models.example_inputs())
    return export.compile_cached(make_net(), args, cuda_models.cache_dir(),
                                 name="cuda_custom_op_net", device="cuda")


SEEN = []  # (op, DLPack device of each tensor argument)


def torch_scale_shift(x, y, alpha, n, dims, bias=None, negate=False):
    """torch's own op on the model's tensors, read through DLPack."""
    SEEN.append(("scale_shift", x.__dlpack_device__(), y.__dlpack_device__()))
    return custom_op_models.scale_shift(torch.from_dlpack(x), torch.from_dlpack(y), alpha, n,
                                        dims, None if bias is None else torch.from_dlpack(bias),
                                        negate)


def torch_split_stats(x):
    SEEN.append(("split_stats", x.__dlpack_device__()))
    return custom_op_models.split_stats(torch.from_dlpack(x))


def host_split_stats(x):
    """Host results for a cuda model: uploaded."""
    t = torch.from_dlpack(x).cpu()
    return (t + 1).numpy(), t.sum(0, dtype=torch.float64).numpy()


@pytest.fixture
def registered():
    SEEN.clear()
    aotishim.register_custom_op(SCALE_SHIFT, torch_scale_shift)
    aotishim.register_custom_op(SPLIT_STATS, torch_split_stats)
    yield
    aotishim.unregister_custom_op(SCALE_SHIFT)
    aotishim.unregister_custom_op(SPLIT_STATS)


def inputs(seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(4, 5, generator=g).cuda(), torch.randn(4, 5, generator=g).cuda()


def eager(x, y):
    with torch.no_grad():
        return [t.cpu() for t in make_net()(x, y)]


def check_matches(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want):
        g = torch.from_dlpack(g).cpu() if not isinstance(g, np.ndarray) else torch.from_numpy(g)
        assert g.dtype == w.dtype and g.shape == w.shape
        torch.testing.assert_close(g, w, rtol=1e-5, atol=1e-5)


def test_cuda_model_calls_python_custom_ops_on_device_tensors(net_so, registered):
    with aotishim.load(net_so, device="cuda") as model:
        for seed in range(3):
            x, y = inputs(seed)
            check_matches(model.run(x, y, outputs="dlpack"), eager(x, y))  # device-resident
            check_matches(model.run(x.cpu().numpy(), y.cpu().numpy()), eager(x, y))  # numpy
    assert model.leaks == []
    # every tensor argument reached the implementations on the GPU
    assert SEEN and all(dev == (DL_CUDA, 0) for call in SEEN for dev in call[1:])


def test_host_results_of_a_cuda_model_are_uploaded(net_so, registered):
    aotishim.register_custom_op(SPLIT_STATS, host_split_stats)
    with aotishim.load(net_so, device="cuda") as model:
        x, y = inputs(5)
        check_matches(model.run(x, y), eager(x, y))
    assert model.leaks == []


@pytest.mark.parametrize("bad,message", [
    (lambda x: (torch.from_dlpack(x) + 1, torch.zeros(5, device="cuda")),
     r"output 1 is float32\[5\]; the compiled model expects float64\[5\]"),
    (lambda x: (torch.zeros(3, 5, device="cuda"), torch.zeros(5, dtype=torch.float64,
                                                              device="cuda")),
     r"output 0 is float32\[3,5\]; the compiled model expects float32\[4,5\]"),
    (lambda x: torch.from_dlpack(x), r"returns 2 values"),
])
def test_wrong_device_results_are_clear_errors_and_leak_nothing(net_so, registered, bad, message):
    aotishim.register_custom_op(SPLIT_STATS, bad)
    with aotishim.load(net_so, device="cuda") as model:
        before = aotishim.memory_stats()["live_tensors"]
        x, y = inputs(1)
        with pytest.raises(ModelError, match=message):
            model.run(x, y)
        assert aotishim.memory_stats()["live_tensors"] == before
        aotishim.register_custom_op(SPLIT_STATS, torch_split_stats)
    assert model.leaks == []
    with aotishim.load(net_so, device="cuda") as model:  # usable again with a good one
        x, y = inputs(2)
        check_matches(model.run(x, y), eager(x, y))


def test_cuda_custom_op_model_runs_from_threads(net_so, registered):
    want = {seed: eager(*inputs(seed)) for seed in range(4)}
    errors = []
    with aotishim.load(net_so, device="cuda") as model:
        def worker(seed):
            try:
                x, y = inputs(seed)
                for _ in range(5):
                    check_matches(model.run(x, y, outputs="dlpack"), want[seed])
            except BaseException as e:  # noqa: BLE001 (reported below)
                errors.append(e)
        threads = [threading.Thread(target=worker, args=(s,)) for s in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert errors == []
    assert model.leaks == []
