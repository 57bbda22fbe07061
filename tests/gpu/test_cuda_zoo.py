"""Real models that need the cuda fallback kernels (attention, convolution,
topk, nonzero), compiled by AOTInductor for cuda with link_libtorch=False,
loaded with aotishim and compared with eager torch on the same GPU (TF32 off
on both sides). The models come from aotishim.zoo.real."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import aotishim

pytestmark = pytest.mark.skipif("cuda:0" not in aotishim.devices(),
                                reason="no CUDA device in this process")
torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("torch cannot use CUDA here", allow_module_level=True)

from cuda_helpers import tf32_off  # noqa: E402
real = pytest.importorskip("aotishim.zoo.real", reason="the model zoo (aotishim.zoo.real) is not in this tree")

import cuda_models  # noqa: E402

# Compiled in the precompile step (cuda_models.py) when run through run_on_h200.sh.
NAMES = cuda_models.ZOO
TOL = {"float32": 1e-4, "bfloat16": 2e-2}


def to_numpy(x):
    x = x.detach().cpu()
    return x.float().numpy() if x.dtype == torch.bfloat16 else x.numpy()


def flat_outputs(out):
    if isinstance(out, torch.Tensor):
        return [out]
    if isinstance(out, dict) or hasattr(out, "to_tuple"):
        out = out.to_tuple() if hasattr(out, "to_tuple") else tuple(out.values())
    return [t for o in out for t in flat_outputs(o)]


@pytest.fixture(autouse=True)
def no_tf32():
    with tf32_off():
        yield


# Models whose runs must record as CUDA graphs with cuda_graphs=True (the
# speed targets' models among them); the others may fall back, with a reason.
RECORDED = {"resnet18", "resnet18_bf16", "hf_gpt2", "hf_bert", "vit_tiny", "mlp_bf16",
            "nn_transformer_encoder_layer_bf16", "mlp_dynamic_batch", "conv_dynamic_batch"}


@pytest.mark.parametrize("graphs", [False, True], ids=["plain", "cuda_graphs"])
@pytest.mark.parametrize("name", NAMES)
def test_zoo_model_on_cuda_matches_eager(name, graphs):
    if not real.available(name):
        pytest.skip(f"{name} needs a package that is not installed")
    zm, module, args, so = cuda_models.compile_zoo(name)
    input_sets = [args, *(tuple(a.to("cuda:0") for a in run) for run in zm.run_args)]
    with torch.no_grad():
        expected_sets = [[to_numpy(e) for e in flat_outputs(module(*inputs))]
                         for inputs in input_sets]
    # Which shims the program needs, for the log.
    print(name, "shims:", sorted(set(re.findall(rb"aoti_torch_cuda_\w+", Path(so).read_bytes()))))
    # With graphs, every set twice: the second run of a signature replays the
    # graph its first run recorded, on its own inputs' values.
    plan = [*zip(input_sets, expected_sets), (input_sets[0], expected_sets[0])]
    if graphs:
        plan = [step for pair in zip(plan, plan) for step in pair]
    with aotishim.load(so, device="cuda", cuda_graphs=graphs) as model:
        for inputs, expected in plan:
            # (the first set again at the end catches state left by the others)
            got = model.run(*_host_inputs(inputs))
            assert len(got) == len(expected)
            if [g.shape for g in got] != [w.shape for w in expected]:
                _shapes_as_torchs_own_compilation(zm, module, inputs, got, expected)
            for i, (g, w) in enumerate(zip(got, expected)):
                assert g.shape == w.shape, f"{name} output {i}: shape {g.shape} vs {w.shape}"
                if w.dtype.kind in "iub":
                    np.testing.assert_array_equal(g, w, err_msg=f"{name} output {i}")
                    continue
                g = np.asarray(g, dtype=np.float64)
                w = np.asarray(w, dtype=np.float64)
                scale = max(np.abs(w).max(initial=0.0), 1.0)
                err = np.abs(g - w).max(initial=0.0)
                print(f"ZOO {name} shape {tuple(w.shape)} output {i}: max error {err:.3g} "
                      f"(scale {scale:.3g})")
                assert err <= TOL[zm.dtype] * scale, f"{name} output {i}: max error {err:.3g} (scale {scale:.3g})"
        if graphs:
            print(f"GRAPHS {name}: {model.graphs}")
            if name in RECORDED:
                assert model.graphs and all(g["recorded"] and g["replays"] >= 2
                                            for g in model.graphs), model.graphs
    assert model.leaks == []


def _shapes_as_torchs_own_compilation(zm, module, inputs, got, expected):
    """Our output shapes differ from eager's: fails unless torch's own
    compilation of the same exported program (torch.compile of it, which runs
    the same Inductor lowering) returns exactly our shapes and values, in
    which case the program itself differs from eager and the test is an
    expected failure that names the shapes."""
    ep = torch.export.export(module, tuple(inputs), dynamic_shapes=zm.dynamic_shapes)
    with torch.no_grad():
        theirs = [to_numpy(t) for t in flat_outputs(torch.compile(ep.module())(*inputs))]
    ours_shapes = [g.shape for g in got]
    assert [t.shape for t in theirs] == ours_shapes, (
        f"{zm.name}: output shapes {ours_shapes}, eager's {[w.shape for w in expected]}, "
        f"torch.compile's of the exported program {[t.shape for t in theirs]}")
    for i, (g, t) in enumerate(zip(got, theirs)):
        scale = max(np.abs(t).max(initial=0.0), 1.0)
        err = np.abs(np.asarray(g, np.float64) - np.asarray(t, np.float64)).max(initial=0.0)
        assert err <= TOL[zm.dtype] * scale, f"{zm.name} output {i} against torch.compile: {err:.3g}"
    pytest.xfail(f"torch's own compilation of the exported {zm.name} returns shapes {ours_shapes} "
                 f"where eager returns {[w.shape for w in expected]}; aotishim matches torch's")


def _host_inputs(args):
    """Model inputs as numpy arrays (bfloat16 through ml_dtypes)."""
    import ml_dtypes
    out = []
    for a in args:
        a = a.detach().cpu()
        if a.dtype == torch.bfloat16:
            out.append(a.float().numpy().astype(ml_dtypes.bfloat16))
        else:
            out.append(a.numpy())
    return out
