"""DLPack exchange on a cuda model: torch CUDA tensors and CuPy arrays in
without a copy, outputs out to torch and CuPy sharing memory, stream
ordering with the producer's and the consumer's streams, memory freed when
the last holder drops it. Needs a CUDA device and torch with CUDA."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import aotishim
from aotishim import _core, export

# DLPack exchange with cuda models is switched off (Model.run refuses it):
# on an H200, 5 of these tests saw wrong numbers. They stay, strictly
# expected to fail with that refusal, until the path is fixed and re-enabled.
pytestmark = [
    pytest.mark.skipif("cuda:0" not in aotishim.devices(), reason="no CUDA device in this process"),
    pytest.mark.xfail(raises=aotishim.ModelInputError, strict=True,
                      reason="DLPack exchange is enabled for cpu models only"),
]
torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("torch cannot use CUDA here", allow_module_level=True)

import cuda_models  # noqa: E402


class TwoInTwoOut(torch.nn.Module):
    def __init__(self, dtype=torch.float32) -> None:
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(256, 128, dtype=dtype))

    def forward(self, x, y):
        return x * 2 + y, torch.relu(x @ self.w)


class AddOneInPlace(torch.nn.Module):
    def forward(self, x):
        x.add_(1)
        return x * 3


_memo: dict = {}


def model_for(dtype=torch.float32):
    if dtype not in _memo:
        torch.manual_seed(0)
        module = TwoInTwoOut(dtype).eval().cuda()
        args = (torch.randn(64, 256, dtype=dtype, device="cuda"),) * 2
        name = f"dlpack_two_{str(dtype).split('.')[-1]}_cuda"
        so = export.compile_cached(module, args, cuda_models.cache_dir(), name=name, device="cuda")
        _memo[dtype] = (so, module)
    return _memo[dtype]


def cuda_allocations() -> int:
    return sum(d["allocations"] for d in aotishim.memory_stats()["devices"]
               if d["device"] == "cuda:0")


def eager(module, *args):
    with torch.no_grad():
        return module(*[a.clone() for a in args])


TOL = {torch.float32: dict(rtol=1e-4, atol=1e-4), torch.bfloat16: dict(rtol=2e-2, atol=2e-2)}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_torch_cuda_round_trip(dtype):
    so, module = model_for(dtype)
    x = torch.randn(64, 256, dtype=dtype, device="cuda")
    y = torch.randn(64, 256, dtype=dtype, device="cuda")
    want = eager(module, x, y)
    with aotishim.load(so, device="cuda") as model:
        h = _core.borrow_dlpack(x.__dlpack__(stream=_core.device_stream("cuda")), "cuda")
        assert _core.tensor_info(h)["data_ptr"] == x.data_ptr()
        aotishim.shim.delete(h)
        outs = model.run(x, y, outputs="dlpack")
        assert outs[0].device.startswith("cuda")
        for o, w in zip(outs, want):
            t = torch.from_dlpack(o)
            assert t.device.type == "cuda" and t.data_ptr() == o.data_ptr
            torch.testing.assert_close(t, w, **TOL[dtype])
        # numpy out from cuda inputs: the default.
        got = model.run(x, y)
        np.testing.assert_allclose(np.asarray(got[0], np.float32), want[0].float().cpu().numpy(),
                                   **TOL[dtype])
    assert model.leaks == []


def test_model_writes_callers_cuda_memory():
    so = export.compile_cached(AddOneInPlace().cuda(), (torch.zeros(3, 4, device="cuda"),),
                               cuda_models.cache_dir(), name="dlpack_inplace_cuda", device="cuda")
    with aotishim.load(so, device="cuda") as model:
        x = torch.arange(12, dtype=torch.float32, device="cuda").reshape(3, 4)
        (y,) = model.run(x, outputs="dlpack")
        expect = torch.arange(12, dtype=torch.float32, device="cuda").reshape(3, 4) + 1
        torch.testing.assert_close(x, expect)  # the model ran on the caller's memory
        torch.testing.assert_close(torch.from_dlpack(y), expect * 3)


def test_strided_offset_and_host_producers():
    so, module = model_for()
    big = torch.randn(80, 600, device="cuda")
    x = big[3:67, 10:522:2]
    y = torch.randn(256, 64, device="cuda").t()
    want = eager(module, x, y)
    with aotishim.load(so, device="cuda") as model:
        outs = model.run(x, y, outputs="dlpack")
        for o, w in zip(outs, want):
            torch.testing.assert_close(torch.from_dlpack(o), w, **TOL[torch.float32])
        # Host tensors for a cuda model are copied, as numpy arrays are.
        outs = model.run(x.cpu(), y.cpu().numpy(), outputs="dlpack")
        torch.testing.assert_close(torch.from_dlpack(outs[0]), want[0], **TOL[torch.float32])


def test_wrong_device_refused():
    so, _ = model_for()
    with aotishim.load(so, device="cuda") as model:
        y = torch.randn(64, 256, device="cuda")
        with pytest.raises(aotishim.ModelInputError, match="dtype float64"):
            model.run(torch.randn(64, 256, device="cuda", dtype=torch.float64), y)
        if torch.cuda.device_count() > 1 and "cuda:1" in aotishim.devices():
            with pytest.raises(aotishim.ModelInputError, match="is on cuda:1, the model runs on"):
                model.run(torch.randn(64, 256, device="cuda:1"), y)


def test_stream_ordering_producer_and_consumer():
    """The producer writes on a side stream, then exports with our stream;
    the consumer reads our output on another side stream. Long kernels before
    each hand-over make a missing wait visible as wrong numbers."""
    so, module = model_for()
    producer = torch.cuda.Stream()
    consumer = torch.cuda.Stream()
    with aotishim.load(so, device="cuda") as model:
        for _ in range(5):
            with torch.cuda.stream(producer):
                x = torch.zeros(64, 256, device="cuda")
                y = torch.zeros(64, 256, device="cuda")
                torch.cuda._sleep(50_000_000)  # ~tens of ms of GPU time before the writes
                x.fill_(1.5)
                y.fill_(-0.25)
                with torch.no_grad():
                    want = module(x, y)
                # Model.run passes its stream; torch makes it wait for `producer`.
                outs = model.run(x, y, outputs="dlpack")
            with torch.cuda.stream(consumer):
                got = [torch.from_dlpack(o) for o in outs]  # consumer waits for our stream
                copies = [g.clone() for g in got]
            consumer.synchronize()
            producer.synchronize()
            for c, w in zip(copies, want):
                torch.testing.assert_close(c, w, **TOL[torch.float32])


def test_memory_freed_when_last_holder_drops():
    so, _ = model_for()
    with aotishim.load(so, device="cuda") as model:
        x = torch.randn(64, 256, device="cuda")
        model.run(x, x, outputs="dlpack")  # warm up
        gc.collect()
        torch.cuda.synchronize()
        base_alloc, base_live = cuda_allocations(), aotishim.memory_stats()["live_tensors"]
        outs = model.run(x, x, outputs="dlpack")
        assert aotishim.memory_stats()["live_tensors"] == base_live
        t = torch.from_dlpack(outs[0])
        del outs
        gc.collect()
        assert cuda_allocations() >= base_alloc + 1  # t keeps its output
        float(t.sum())
        del t
        gc.collect()
        assert cuda_allocations() == base_alloc


def test_cupy_round_trip():
    cp = pytest.importorskip("cupy")
    so, module = model_for()
    x = cp.random.standard_normal((64, 256), dtype=cp.float32)
    y = cp.random.standard_normal((64, 256), dtype=cp.float32)
    want = eager(module, torch.from_dlpack(x), torch.from_dlpack(y))
    with aotishim.load(so, device="cuda") as model:
        h = _core.borrow_dlpack(x.__dlpack__(stream=1), "cuda")
        assert _core.tensor_info(h)["data_ptr"] == x.data.ptr
        aotishim.shim.delete(h)
        stream = cp.cuda.Stream(non_blocking=True)
        with stream:
            outs = model.run(x, y, outputs="dlpack")
            got = [cp.from_dlpack(o) for o in outs]
            assert got[0].data.ptr == outs[0].data_ptr
            host = [cp.asnumpy(g) for g in got]
        stream.synchronize()
        for h_, w in zip(host, want):
            np.testing.assert_allclose(h_, w.cpu().numpy(), rtol=1e-4, atol=1e-4)
        del got, outs
