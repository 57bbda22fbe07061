"""Several GPUs in one process: a model per GPU, loaded, run, closed and
reloaded in any order, from several threads, each on its own device and
stream; the calling thread's current device is never changed by aotishim.
Skipped with fewer than two GPUs."""

from __future__ import annotations

import itertools
import threading

import numpy as np
import pytest

import aotishim
from aotishim import shim

pytestmark = pytest.mark.skipif("cuda:1" not in aotishim.devices(),
                                reason="needs two CUDA devices")
torch = pytest.importorskip("torch")
if torch.cuda.device_count() < 2:
    pytest.skip("torch sees fewer than two GPUs", allow_module_level=True)

import cuda_helpers as ch  # noqa: E402
import cuda_models  # noqa: E402
import models  # noqa: E402

TOL = dict(rtol=1e-4, atol=1e-5)
_memo: dict = {}


class Case:
    """The mlp compiled for cuda, with several inputs and their eager outputs
    on each device."""

    def __init__(self) -> None:
        c = cuda_models.compile_cuda("mlp")
        self.so = c.so
        module, _ = models.build("mlp")
        rng = np.random.default_rng(5)
        self.inputs = [c.inputs[0]] + [
            rng.standard_normal(c.inputs[0].shape).astype(np.float32) for _ in range(3)]
        self.expected = {}
        with torch.no_grad():
            torch.backends.cuda.matmul.allow_tf32 = False
            for d in (0, 1):
                m = module.to(f"cuda:{d}")
                self.expected[d] = [m(torch.from_numpy(x).to(f"cuda:{d}")).cpu().numpy()
                                    for x in self.inputs]

    def check(self, model, device: int, which: int = 0) -> None:
        (got,) = model.run(self.inputs[which])
        np.testing.assert_allclose(got, self.expected[device][which], **TOL)


def case() -> Case:
    if "mlp" not in _memo:
        _memo["mlp"] = Case()
    return _memo["mlp"]


def live_tensors() -> int:
    return aotishim.memory_stats()["live_tensors"]


class KeepsDevice:
    """Asserts every step leaves the calling thread's current device as it was."""

    def __init__(self, current: int) -> None:
        assert ch.cudart().cudaSetDevice(current) == 0
        self.current = current

    def __call__(self, step, *args, **kwargs):
        result = step(*args, **kwargs)
        assert ch.current_device() == self.current, step
        return result


@pytest.mark.parametrize("caller_device", [0, 1])
def test_model_on_cuda0_runs_after_one_is_loaded_on_cuda1(caller_device):
    """The sequence that broke: the cuda:0 model's next run failed with
    'invalid resource handle' (its event recorded on the other device's
    stream), then every run of either model."""
    c = case()
    keep = KeepsDevice(caller_device)
    base = live_tensors()
    a = keep(aotishim.load, c.so, device="cuda:0")
    keep(c.check, a, 0)
    b = keep(aotishim.load, c.so, device="cuda:1")
    for which in range(3):
        keep(c.check, a, 0, which)
        keep(c.check, b, 1, which)
    keep(a.close)
    keep(c.check, b, 1)
    keep(b.close)
    assert a.leaks == [] and b.leaks == []
    assert live_tensors() == base


@pytest.mark.parametrize("load_order,close_order", list(itertools.product(
    itertools.permutations((0, 1)), itertools.permutations((0, 1)))))
def test_load_close_reload_in_every_order(load_order, close_order):
    c = case()
    keep = KeepsDevice(load_order[1])  # the caller sits on some device meanwhile
    base = live_tensors()
    loaded: dict[int, aotishim.Model] = {}

    def run_all():
        for d, m in loaded.items():
            keep(c.check, m, d, d + 1)

    for d in load_order:
        loaded[d] = keep(aotishim.load, c.so, device=f"cuda:{d}")
        run_all()
    for d in close_order:
        keep(loaded.pop(d).close)
        run_all()
    assert live_tensors() == base
    for d in close_order:  # reload in the order they were closed
        loaded[d] = keep(aotishim.load, c.so, device=f"cuda:{d}")
        run_all()
    for d in load_order:
        model = loaded.pop(d)
        keep(model.close)
        assert model.leaks == []
        run_all()
    assert live_tensors() == base


def test_two_threads_each_running_a_model_on_its_own_gpu():
    """1,000 runs in all, interleaved across two threads and two GPUs, each
    result equal to eager; each thread's current device is left alone."""
    c = case()
    base = live_tensors()
    models_ = {d: aotishim.load(c.so, device=f"cuda:{d}") for d in (0, 1)}
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def worker(d: int) -> None:
        try:
            other = 1 - d
            assert ch.cudart().cudaSetDevice(other) == 0  # not the model's device
            start.wait()
            for i in range(500):
                c.check(models_[d], d, i % len(c.inputs))
                assert ch.current_device() == other
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(d,)) for d in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    for m in models_.values():
        m.close()
        assert m.leaks == []
    assert live_tensors() == base


@pytest.mark.parametrize("device", [0, 1])
def test_threads_sharing_one_model_on_one_gpu(device):
    c = case()
    base = live_tensors()
    model = aotishim.load(c.so, device=f"cuda:{device}")
    errors: list[BaseException] = []

    def worker(k: int) -> None:
        try:
            for i in range(50):
                c.check(model, device, (i + k) % len(c.inputs))
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    model.close()
    assert model.leaks == [] and live_tensors() == base


def test_cross_device_copies_and_products_keep_the_current_device():
    keep = KeepsDevice(1)
    rng = np.random.default_rng(9)
    a = rng.standard_normal((6, 8)).astype(np.float32)
    on0 = keep(shim.from_numpy, a, copy=True, device="cuda:0")
    on1 = keep(shim.empty_strided, [8, 6], None, "float32", "cuda:1")
    # A transposed view on cuda:1 filled from cuda:0.
    keep(shim.copy_, shim.reinterpret_tensor(on1, [6, 8], [1, 6], 0), on0)
    np.testing.assert_array_equal(keep(shim.to_numpy, on1), a.T)
    # Back to cuda:0 with a dtype change, into a view at an offset.
    wide = keep(shim.empty_strided, [2, 8, 6], None, "float64", "cuda:0")
    keep(shim.copy_, shim.reinterpret_tensor(wide, [8, 6], [6, 1], 48), on1)
    np.testing.assert_array_equal(keep(shim.to_numpy, wide)[1], a.T.astype(np.float64))
    # A product on each device.
    for dev, t in (("cuda:0", on0), ("cuda:1", keep(shim.from_numpy, a, copy=True,
                                                    device="cuda:1"))):
        out = keep(shim.empty_strided, [6, 6], None, "float32", dev)
        keep(shim.mm, out, t, shim.reinterpret_tensor(t, [8, 6], [1, 8], 0))
        np.testing.assert_allclose(keep(shim.to_numpy, out), a @ a.T, rtol=1e-5, atol=1e-5)
        shim.delete(out)
        shim.delete(t)
    # Operands on different devices are an error naming both, not a crash.
    x = keep(shim.from_numpy, a, copy=True, device="cuda:1")
    out = keep(shim.empty_strided, [6, 6], None, "float32", "cuda:0")
    with pytest.raises(aotishim.ShimError, match="different devices"):
        keep(shim.mm, out, x, shim.reinterpret_tensor(x, [8, 6], [1, 8], 0))
    for t in (on1, wide, x, out):
        shim.delete(t)


def test_outputs_live_on_the_models_device():
    c = case()
    for d in (0, 1):
        with aotishim.load(c.so, device=f"cuda:{d}") as model:
            (out,) = model.run_tensors(shim.from_numpy(c.inputs[2], copy=True, device=f"cuda:{d}"))
            assert out.device == f"cuda:{d}"
            np.testing.assert_allclose(shim.to_numpy(out), c.expected[d][2], **TOL)
            shim.delete(out)
