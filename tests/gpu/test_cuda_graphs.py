"""Models loaded with cuda_graphs=True: each input signature's run is
recorded as a CUDA graph on its first call and replayed on later calls.
Checked against eager torch on fresh inputs every call (a replay that read
stale inputs, or handed out outputs the next replay rewrites, shows here),
with outputs that repeat one handle, alias an input or a constant, from
several threads and two models at once, and a model that cannot be recorded."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import aotishim

pytestmark = pytest.mark.skipif("cuda:0" not in aotishim.devices(),
                                reason="no CUDA device in this process")
torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("torch cannot use CUDA here", allow_module_level=True)

import cuda_models  # noqa: E402
import models  # noqa: E402

TOL = dict(rtol=1e-4, atol=1e-5)
_memo: dict = {}


def compiled(name: str):
    if name not in _memo:
        module, _ = models.build(name, torch.float32)
        _memo[name] = (cuda_models.compile_cuda(name, "float32"), module.to("cuda").eval())
    return _memo[name]


def fresh_inputs(c, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(x.shape).astype(x.dtype) for x in c.inputs]


def eager(module, inputs) -> list[np.ndarray]:
    with torch.no_grad():
        out = module(*[torch.from_numpy(x).to("cuda") for x in inputs])
    out = (out,) if isinstance(out, torch.Tensor) else out
    return [o.detach().cpu().numpy() for o in out]


def assert_close(got, want, what=""):
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want)):
        g = np.asarray(g.cpu() if hasattr(g, "cpu") else g)
        np.testing.assert_allclose(g, w, err_msg=f"{what} output {i}", **TOL)


def cuda_allocations() -> int:
    return sum(d["allocations"] for d in aotishim.memory_stats()["devices"]
               if d["device"] == "cuda:0")


@pytest.mark.parametrize("name", ["mlp", "residual_norm", "linear_chunk_first_dim",
                                  "repeated_output", "constant_output", "alias_input"])
def test_every_call_matches_eager_on_its_own_inputs(name):
    c, module = compiled(name)
    before = cuda_allocations()
    with aotishim.load(c.so, device="cuda", cuda_graphs=True) as model:
        for seed in range(5):
            x = fresh_inputs(c, seed)
            got = model.run(*x)
            assert_close(got, eager(module, x), f"{name} call {seed}")
        graphs = model.graphs
        print(name, graphs)
        assert len(graphs) == 1 and graphs[0]["recorded"], graphs
        assert graphs[0]["replays"] == 5
    assert model.leaks == []
    # The recording's inputs, outputs and graph memory went with the model.
    assert cuda_allocations() == before


def test_outputs_are_not_rewritten_by_the_next_replay():
    """Device-resident outputs of one call keep their values after later
    calls: the graph writes its outputs to fixed addresses, so a call must
    hand out copies, never the graph's own output tensors."""
    c, module = compiled("mlp")
    with aotishim.load(c.so, device="cuda", cuda_graphs=True) as model:
        kept = []
        for seed in range(4):
            x = fresh_inputs(c, seed)
            out = model.run(*x, outputs="dlpack")
            kept.append((x, [torch.from_dlpack(o) for o in out]))
        torch.cuda.synchronize()
        for seed, (x, outs) in enumerate(kept):
            assert_close(outs, eager(module, x), f"call {seed}, read after the last call")


def test_torch_inputs_through_dlpack_replay_with_their_values():
    c, module = compiled("residual_norm")
    with aotishim.load(c.so, device="cuda", cuda_graphs=True) as model:
        for seed in range(3):
            x = [torch.from_numpy(a).to("cuda") for a in fresh_inputs(c, seed)]
            got = model.run(*x, outputs="dlpack")
            want = eager(module, [a.cpu().numpy() for a in x])
            assert_close([torch.from_dlpack(g) for g in got], want, f"call {seed}")
            x[0].fill_(float("nan"))  # the caller reuses its input at once
        assert model.graphs[0]["replays"] == 3


def test_threads_share_one_model():
    c, module = compiled("mlp")
    inputs = [fresh_inputs(c, seed) for seed in range(8)]
    wants = [eager(module, x) for x in inputs]
    errors: list = []
    with aotishim.load(c.so, device="cuda", cuda_graphs=True) as model:
        model.run(*inputs[0])  # recorded before the threads start

        def worker(k: int) -> None:
            try:
                for _ in range(20):
                    assert_close(model.run(*inputs[k]), wants[k], f"thread {k}")
            except Exception as e:  # noqa: BLE001 - reported below
                errors.append(e)

        threads = [threading.Thread(target=worker, args=(k,)) for k in range(len(inputs))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    assert not errors, errors[0]


def test_two_models_interleaved_and_closed_in_turn():
    (c1, m1), (c2, m2) = compiled("mlp"), compiled("residual_norm")
    a = aotishim.load(c1.so, device="cuda", cuda_graphs=True)
    b = aotishim.load(c2.so, device="cuda", cuda_graphs=True)
    try:
        for seed in range(4):
            x1, x2 = fresh_inputs(c1, seed), fresh_inputs(c2, 100 + seed)
            assert_close(a.run(*x1), eager(m1, x1), "mlp")
            assert_close(b.run(*x2), eager(m2, x2), "residual_norm")
        a.close()
        x2 = fresh_inputs(c2, 7)
        assert_close(b.run(*x2), eager(m2, x2), "residual_norm after the other closed")
    finally:
        a.close()
        b.close()
    assert a.leaks == [] and b.leaks == []


def test_a_run_that_waits_for_the_gpu_is_not_recorded_and_still_right():
    """nonzero's output size is read on the host, which a recording cannot
    do: the signature runs without a graph, says why, and matches eager."""
    zm, module, args, so = cuda_models.compile_zoo("nonzero")
    with torch.no_grad():
        want = [t.cpu().numpy() for t in (module(*args),)]
    host = [a.cpu().numpy() for a in args]
    with aotishim.load(so, device="cuda", cuda_graphs=True) as model:
        for _ in range(3):
            got = model.run(*host)
            np.testing.assert_array_equal(got[0], want[0])
        graphs = model.graphs
        print(graphs)
        assert len(graphs) == 1 and not graphs[0]["recorded"], graphs
        assert "captur" in graphs[0]["reason"] or "record" in graphs[0]["reason"], graphs
    assert model.leaks == []


def test_the_same_model_without_graphs_is_unchanged():
    c, module = compiled("mlp")
    with aotishim.load(c.so, device="cuda") as model:
        assert_close(model.run(*c.inputs), eager(module, list(c.inputs)))
        assert model.graphs == []


def test_a_wrong_input_is_refused_and_takes_no_signature():
    """The first call of a signature runs the model plainly, with its input
    checks: a wrong shape is the model's error, and leaves no recording
    behind (16 wrong calls would otherwise use up every signature)."""
    from aotishim import shim

    c, module = compiled("mlp")
    with aotishim.load(c.so, device="cuda", cuda_graphs=True) as model:
        wrong = np.ones((c.inputs[0].shape[0], c.inputs[0].shape[1] + 1), np.float32)
        for _ in range(20):
            with pytest.raises(aotishim.ModelError):
                model.run_tensors(shim.from_numpy(wrong, copy=True, device="cuda:0"))
        assert model.graphs == []
        x = fresh_inputs(c, 3)
        assert_close(model.run(*x), eager(module, x))
        assert [g["recorded"] for g in model.graphs] == [True]
    assert model.leaks == []
