"""DLPack exchange on a cuda model: torch CUDA tensors and CuPy arrays in
without a copy, outputs out to torch and CuPy sharing memory, stream
ordering with the producer's and the consumer's streams, producers' memory
held until the model's queued work is done, memory freed when the last
holder drops it. Needs a CUDA device and torch with CUDA.

Every numeric check prints one line, "DLPACK <check>: max_abs_err=...
allowed=... scale=...", so a failing run explains itself (pytest -s)."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import aotishim
from aotishim import _core, export

pytestmark = pytest.mark.skipif("cuda:0" not in aotishim.devices(),
                                reason="no CUDA device in this process")
torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("torch cannot use CUDA here", allow_module_level=True)

import cuda_models  # noqa: E402

# GPU cycles of torch.cuda._sleep: tens of milliseconds on an H200, far
# longer than the host needs to queue what follows, so work that is not
# ordered after the sleeping stream runs first and shows as wrong numbers.
SLEEP_CYCLES = 200_000_000


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
        # Two distinct example tensors: given one tensor twice, torch.export
        # compiles a program that reads only the second (export.compile
        # refuses that now); the model then ignored x and every check with
        # x != y failed.
        args = tuple(torch.randn(64, 256, dtype=dtype, device="cuda") for _ in range(2))
        name = f"dlpack_xy_{str(dtype).split('.')[-1]}_cuda"
        so = export.compile_cached(module, args, cuda_models.cache_dir(), name=name, device="cuda")
        _memo[dtype] = (so, module)
    return _memo[dtype]


def cuda_allocations() -> int:
    return sum(d["allocations"] for d in aotishim.memory_stats()["devices"]
               if d["device"] == "cuda:0")


def eager(module, *args):
    with torch.no_grad():
        return module(*[a.clone() for a in args])


TOL = {torch.float32: 1e-4, torch.bfloat16: 2e-2}


def check(label: str, got, want, dtype=torch.float32) -> None:
    """got close to want, relative to want's scale (the zoo's tolerances);
    prints the error either way."""
    got = torch.as_tensor(got).to("cpu", torch.float64)
    want = want.detach().to("cpu", torch.float64)
    assert got.shape == want.shape, f"{label}: shape {tuple(got.shape)} vs {tuple(want.shape)}"
    err = float((got - want).abs().max()) if want.numel() else 0.0
    scale = max(float(want.abs().max()) if want.numel() else 0.0, 1.0)
    allowed = TOL[dtype] * scale
    print(f"DLPACK {label}: max_abs_err={err:.3g} allowed={allowed:.3g} scale={scale:.3g}",
          flush=True)
    assert err <= allowed, f"{label}: max error {err:.3g} > {allowed:.3g} (scale {scale:.3g})"


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_torch_cuda_round_trip(dtype):
    so, module = model_for(dtype)
    name = str(dtype).split(".")[-1]
    x = torch.randn(64, 256, dtype=dtype, device="cuda")
    y = torch.randn(64, 256, dtype=dtype, device="cuda")
    want = eager(module, x, y)
    with aotishim.load(so, device="cuda") as model:
        h = _core.borrow_dlpack(x.__dlpack__(stream=_core.device_stream("cuda")), "cuda")
        assert _core.tensor_info(h)["data_ptr"] == x.data_ptr()  # borrowed, not copied
        aotishim.shim.delete(h)
        outs = model.run(x, y, outputs="dlpack")
        assert outs[0].device.startswith("cuda")
        for i, (o, w) in enumerate(zip(outs, want)):
            t = torch.from_dlpack(o)  # the versioned protocol
            assert t.device.type == "cuda" and t.data_ptr() == o.data_ptr
            check(f"round_trip {name} output {i}", t, w, dtype)
            # The unversioned protocol, on the legacy default stream.
            u = torch.utils.dlpack.from_dlpack(o.__dlpack__(stream=1))
            assert u.data_ptr() == o.data_ptr
            check(f"round_trip {name} output {i} (unversioned)", u, w, dtype)
        # numpy out from cuda inputs: the default.
        got = model.run(x, y)
        for i, (g, w) in enumerate(zip(got, want)):
            check(f"round_trip {name} numpy output {i}", np.asarray(g, np.float32), w, dtype)
    assert model.leaks == []


def test_model_writes_callers_cuda_memory():
    so = export.compile_cached(AddOneInPlace().cuda(), (torch.zeros(3, 4, device="cuda"),),
                               cuda_models.cache_dir(), name="dlpack_inplace_cuda", device="cuda")
    with aotishim.load(so, device="cuda") as model:
        x = torch.arange(12, dtype=torch.float32, device="cuda").reshape(3, 4)
        (y,) = model.run(x, outputs="dlpack")
        expect = torch.arange(12, dtype=torch.float32, device="cuda").reshape(3, 4) + 1
        check("in_place input", x, expect)  # the model ran on the caller's memory
        check("in_place output", torch.from_dlpack(y), expect * 3)


def test_strided_offset_and_host_producers():
    so, module = model_for()
    big = torch.randn(80, 600, device="cuda")
    x = big[3:67, 10:522:2]  # offset and strided
    y = torch.randn(256, 64, device="cuda").t()  # a transpose
    want = eager(module, x, y)
    with aotishim.load(so, device="cuda") as model:
        outs = model.run(x, y, outputs="dlpack")
        for i, (o, w) in enumerate(zip(outs, want)):
            check(f"strided output {i}", torch.from_dlpack(o), w)
        # Host tensors for a cuda model are copied, as numpy arrays are.
        outs = model.run(x.cpu(), y.cpu().numpy(), outputs="dlpack")
        check("host producers output 0", torch.from_dlpack(outs[0]), want[0])


def test_wrong_device_or_dtype_refused():
    so, _ = model_for()
    with aotishim.load(so, device="cuda") as model:
        y = torch.randn(64, 256, device="cuda")
        with pytest.raises(aotishim.ModelInputError, match="dtype float64"):
            model.run(torch.randn(64, 256, device="cuda", dtype=torch.float64), y)
        if torch.cuda.device_count() > 1 and "cuda:1" in aotishim.devices():
            with pytest.raises(aotishim.ModelInputError, match="is on cuda:1, the model runs on"):
                model.run(torch.randn(64, 256, device="cuda:1"), y)


class ProtocolOnly:
    """A producer without DLPack's C exchange table (as CuPy is), over a
    torch tensor: only __dlpack__(stream=) can order its work."""

    def __init__(self, t) -> None:
        self.t = t

    def __dlpack__(self, **kwargs):
        return self.t.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()


@pytest.mark.parametrize("path", ["exchange_table", "protocol"])
def test_producer_side_stream_written_right_before_run(path):
    """The producer's writes are queued behind a long kernel on its side
    stream and the model is run at once: without ordering aotishim's stream
    after the producer's (its current stream from the C exchange table, or
    the wait DLPack's stream= asks for), the model reads the memory before
    it is written."""
    so, module = model_for()
    producer = torch.cuda.Stream()
    wrap = ProtocolOnly if path == "protocol" else (lambda t: t)
    with aotishim.load(so, device="cuda") as model:
        for step in range(3):
            with torch.cuda.stream(producer):
                x = torch.empty(64, 256, device="cuda")
                y = torch.empty(64, 256, device="cuda")
                torch.cuda._sleep(SLEEP_CYCLES)
                x.fill_(1.5 + step)
                y.normal_()
                outs = model.run(wrap(x), wrap(y), outputs="dlpack")
                want = eager(module, x, y)
            torch.cuda.synchronize()
            for i, (o, w) in enumerate(zip(outs, want)):
                check(f"producer_stream {path} step {step} output {i}", torch.from_dlpack(o), w)


def test_torch_cuda_inputs_taken_through_the_c_exchange_table():
    """torch's tensors carry DLPack's C exchange table: a cuda model takes
    them through it, never calling torch's Python __dlpack__, and holds
    torch's tensor while the borrowed view lives."""
    class Recording(torch.Tensor):
        calls = 0

        def __dlpack__(self, *args, **kwargs):
            Recording.calls += 1
            return super().__dlpack__(*args, **kwargs)

    so, module = model_for()
    base = torch.randn(256, 64, device="cuda")
    view = base.t().as_subclass(Recording)  # strided: packed on the device
    uses = view._use_count()
    handle, code, sizes, packed = _core.borrow_exchange_input(view, "cuda:0")
    try:
        info = _core.tensor_info(handle)
        assert info["data_ptr"] == base.data_ptr() and info["strides"] == [1, 64]
        assert sizes == (64, 256) and not packed
        assert view._use_count() > uses  # torch's tensor held while borrowed
    finally:
        aotishim.shim.delete(handle)
    aotishim.synchronize("cuda:0")  # releases what the device is done with
    assert view._use_count() == uses
    with aotishim.load(so, device="cuda") as model:
        for step in range(2):
            x = torch.randn(64, 256, device="cuda").as_subclass(Recording)
            y = torch.randn(64, 256, device="cuda")
            outs = model.run(view, x, outputs="dlpack")
            want = eager(module, view.as_subclass(torch.Tensor), x.as_subclass(torch.Tensor))
            for i, (o, w) in enumerate(zip(outs, want)):
                check(f"exchange_table step {step} output {i}", torch.from_dlpack(o), w)
            outs = model.run(x, y)  # numpy out
            want = eager(module, x.as_subclass(torch.Tensor), y)
            for i, (o, w) in enumerate(zip(outs, want)):
                check(f"exchange_table numpy step {step} output {i}", o, w)
    assert Recording.calls == 0


def test_consumer_reads_at_once_on_its_own_stream():
    """aotishim's stream is kept busy before the run; a consumer on another
    stream takes the outputs and copies them at once, then waits for its own
    stream only. Without the wait __dlpack__(stream=consumer) adds, it copies
    memory the model has not written yet."""
    so, module = model_for()
    ours = torch.cuda.ExternalStream(_core.device_stream("cuda"))
    consumer = torch.cuda.Stream()
    with aotishim.load(so, device="cuda") as model:
        for step in range(3):
            x = torch.full((64, 256), 0.5 + step, device="cuda")
            y = torch.randn(64, 256, device="cuda")
            want = eager(module, x, y)
            torch.cuda.synchronize()
            with torch.cuda.stream(ours):
                torch.cuda._sleep(SLEEP_CYCLES)
            outs = model.run(x, y, outputs="dlpack")
            with torch.cuda.stream(consumer):
                copies = [torch.from_dlpack(o).clone() for o in outs]
            consumer.synchronize()
            for i, (c, w) in enumerate(zip(copies, want)):
                check(f"consumer_stream step {step} output {i}", c, w)
            torch.cuda.synchronize()


@pytest.mark.parametrize("layout", ["packed", "strided"])
def test_producer_memory_held_until_the_model_read_it(layout):
    """The caller drops its inputs right after the run and allocates on its
    own side stream. torch's caching allocator hands the freed block to that
    allocation at once, and its write is not ordered after aotishim's stream.
    The model's reads are queued behind a long kernel, so memory handed back
    when the model deleted its input handles was overwritten before it was
    read (wrong numbers); it is handed back once the model's work is done."""
    so, module = model_for()
    producer = torch.cuda.Stream()
    ours = torch.cuda.ExternalStream(_core.device_stream("cuda"))
    busy_steps = 0
    with aotishim.load(so, device="cuda") as model:
        # The first run waits for the device (lazy loading), so its inputs
        # may be reused at once, rightly: warm up before the checks.
        model.run(torch.randn(64, 256, device="cuda"), torch.randn(64, 256, device="cuda"))
        torch.cuda.synchronize()
        for step in range(3):
            with torch.cuda.stream(producer):
                if layout == "packed":
                    x = torch.randn(64, 256, device="cuda")
                    y = torch.randn(64, 256, device="cuda")
                else:  # packed by a copy on aotishim's stream, then let go
                    x = torch.randn(256, 64, device="cuda").t()
                    y = torch.randn(256, 64, device="cuda").t()
                want = eager(module, x, y)
                producer.synchronize()
                with torch.cuda.stream(ours):
                    torch.cuda._sleep(SLEEP_CYCLES)
                outs = model.run(x, y, outputs="dlpack")
                freed = {x.data_ptr(), y.data_ptr()}
                del x, y
                # Enough blocks of that size to take every free one (eager's
                # temporaries left some too), each written on this stream.
                z = [torch.empty(256 * 64, device="cuda").fill_(-1e4) for _ in range(16)]
                reused = sum(t.data_ptr() in freed for t in z)
                busy = not ours.query()  # the model's reads still queued
            torch.cuda.synchronize()
            print(f"DLPACK held_{layout} step {step}: {reused} of the 2 inputs' blocks reused "
                  "while the model's work was queued (0 expected)", flush=True)
            for i, (o, w) in enumerate(zip(outs, want)):
                check(f"held_{layout} step {step} output {i}", torch.from_dlpack(o), w)
            # Reuse is wrong only while the model's reads are still queued.
            if busy:
                busy_steps += 1
                assert reused == 0
            del z, outs
    assert busy_steps > 0, "the sleep never kept aotishim's stream busy: nothing was checked"


def test_input_memory_returned_after_the_work():
    """Inputs borrowed for a run go back to torch once the device has done
    the work (aotishim.synchronize releases what is due)."""
    so, _ = model_for()
    with aotishim.load(so, device="cuda") as model:
        model.run(torch.randn(64, 256, device="cuda"), torch.randn(64, 256, device="cuda"))
        aotishim.synchronize("cuda")
        gc.collect()
        torch.cuda.synchronize()
        base = torch.cuda.memory_allocated()
        x = torch.randn(64, 256, device="cuda")
        y = torch.randn(256, 64, device="cuda").t()
        outs = model.run(x, y, outputs="dlpack")
        del x, y, outs
        aotishim.synchronize("cuda")
        gc.collect()
        print(f"DLPACK input_memory: torch holds {torch.cuda.memory_allocated() - base} bytes "
              "more than before the run (0 expected)", flush=True)
        assert torch.cuda.memory_allocated() == base


def test_output_memory_freed_when_last_holder_drops():
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
        assert _core.tensor_info(h)["data_ptr"] == x.data.ptr  # borrowed, not copied
        aotishim.shim.delete(h)
        stream = cp.cuda.Stream(non_blocking=True)
        with stream:
            outs = model.run(x, y, outputs="dlpack")
            got = [cp.from_dlpack(o) for o in outs]
            assert [g.data.ptr for g in got] == [o.data_ptr for o in outs]
            host = [cp.asnumpy(g) for g in got]
        stream.synchronize()
        for i, (h_, w) in enumerate(zip(host, want)):
            check(f"cupy output {i}", h_, w)
        # The memory lives while CuPy holds it, and goes when it lets go.
        gc.collect()
        base = cuda_allocations()
        del outs
        gc.collect()
        assert cuda_allocations() == base  # got still holds both outputs
        check("cupy output 0 after the DeviceTensor is gone", cp.asnumpy(got[0]), want[0])
        n = len(got)
        del got
        gc.collect()
        assert cuda_allocations() == base - n
