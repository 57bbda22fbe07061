"""Real AOTInductor CUDA models (aot_inductor.link_libtorch=False) loaded with
aotishim on cuda: equal to eager torch on the same GPU, destroyed and
reloaded. Needs a CUDA device and torch with CUDA."""

from __future__ import annotations

import numpy as np
import pytest

import aotishim

pytestmark = pytest.mark.skipif("cuda:0" not in aotishim.devices(),
                                reason="no CUDA device in this process")
torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("torch cannot use CUDA here", allow_module_level=True)

import cuda_models  # noqa: E402

TOL = {"float32": dict(rtol=1e-4, atol=1e-5), "bfloat16": dict(rtol=2e-2, atol=2e-2)}
_memo: dict = {}


def compiled(name: str, dtype: str = "float32"):
    if (name, dtype) not in _memo:
        _memo[(name, dtype)] = cuda_models.compile_cuda(name, dtype)
    return _memo[(name, dtype)]


def cuda_allocations() -> int:
    return sum(d["allocations"] for d in aotishim.memory_stats()["devices"]
               if d["device"] == "cuda:0")


def run_and_check(c, runs: int = 1) -> None:
    with aotishim.load(c.so, device="cuda") as model:
        assert model.device.startswith("cuda")
        for _ in range(runs):
            c.check(model.run(*c.inputs), **TOL[c.dtype])
    assert model.leaks == []


@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("name", ["linear_chunk_last_dim", "linear_chunk_first_dim"])
def test_chunk_models_equal_eager(name, dtype):
    run_and_check(compiled(name, dtype), runs=3)


@pytest.mark.parametrize("name", ["linear_chunk_last_dim", "linear_chunk_first_dim"])
def test_destroy_and_reload_ten_times(name):
    c = compiled(name, "float32")
    baseline = cuda_allocations()
    for _ in range(10):
        run_and_check(c)
    # Everything the models allocated through aotishim was freed on close.
    assert cuda_allocations() == baseline


def test_one_tensor_in_non_adjacent_output_slots():
    c = compiled("repeated_output")
    released = aotishim.memory_stats()["released_handles"]
    with aotishim.load(c.so, device="cuda") as model:
        for _ in range(3):
            out = model.run(*c.inputs)
            c.check(out, **TOL["float32"])
            np.testing.assert_array_equal(out[0], out[2])
    assert model.leaks == []
    assert aotishim.memory_stats()["released_handles"] > released


@pytest.mark.parametrize("name", ["constant_output", "alias_input"])
def test_outputs_that_are_constants_or_inputs(name):
    c = compiled(name)
    with aotishim.load(c.so, device="cuda") as model:
        for _ in range(2):  # a freed weight would show on the second run
            c.check(model.run(*c.inputs), **TOL["float32"])
    assert model.leaks == []


@pytest.mark.parametrize("name", ["mlp", "residual_norm", "batched_matmul", "softmax_head"])
def test_zoo_models_equal_eager(name):
    run_and_check(compiled(name), runs=2)


def test_models_alive_together_close_in_any_order():
    cs = [compiled("linear_chunk_last_dim"), compiled("linear_chunk_first_dim"),
          compiled("mlp")]
    loaded = [aotishim.load(c.so, device="cuda") for c in cs]
    try:
        loaded[1].close()
        for m, c in ((loaded[0], cs[0]), (loaded[2], cs[2])):
            c.check(m.run(*c.inputs), **TOL["float32"])
        loaded[0].close()
        cs[2].check(loaded[2].run(*cs[2].inputs), **TOL["float32"])
    finally:
        for m in loaded:
            m.close()


def test_model_file_stands_alone_without_inductor_cache(tmp_path):
    # Kernels are embedded in the .so: the model runs with Inductor's cache
    # (where its kernel files were written) out of the way, from another folder.
    import os
    import shutil

    c = compiled("linear_chunk_first_dim")
    so = tmp_path / "model.so"
    shutil.copy(c.so, so)
    shutil.copy(c.so.with_suffix(".weights.blob"), tmp_path / "model.weights.blob")
    cache = cuda_models.cache_dir() / "inductor"
    hidden = cache.with_name("inductor.hidden")
    os.rename(cache, hidden)
    try:
        with aotishim.load(so, device="cuda") as model:
            c.check(model.run(*c.inputs), **TOL["float32"])
    finally:
        os.rename(hidden, cache)


def test_model_runs_on_the_device_stream_not_the_legacy_default_stream():
    """A model's kernels go to aotishim's own stream, the one its copies,
    GEMMs and DLPack waits use. When the runner passed the model no stream
    they went to the legacy default stream, which waits for every blocking
    stream of the process: a long kernel on an unrelated stream held the run
    back until it finished (and stream_query below found it done)."""
    import ctypes

    import cuda_helpers as ch

    not_ready = 600  # cudaErrorNotReady
    c = compiled("mlp")
    other = ch.new_stream()  # blocking, like most streams other libraries make
    try:
        with aotishim.load(c.so, device="cuda") as model:
            c.check(model.run(*c.inputs), **TOL["float32"])  # handles, pool, first-run work
            with torch.cuda.stream(torch.cuda.ExternalStream(other)):
                torch.cuda._sleep(2_000_000_000)  # about a second
            got = model.run(*c.inputs)  # numpy out: returns once its stream is done
            busy = ch.cudart().cudaStreamQuery(ctypes.c_void_p(other))
            print(f"the unrelated stream when run returned: {'busy' if busy == not_ready else busy}")
            assert busy == not_ready, "the run waited for an unrelated stream's kernel"
            c.check(got, **TOL["float32"])
    finally:
        ch.sync_stream(other)
        ch.destroy_stream(other)
