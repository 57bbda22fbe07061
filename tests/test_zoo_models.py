"""Real architectures from aotishim.zoo.real, end to end on the CPU: compiled
by AOTInductor without libtorch, loaded, run on every input set, compared
with eager, closed with nothing left alive.

LOADABLE lists the zoo models whose fallback ops aotishim provides; as more
ops land, add their models here (benchmarks/coverage.py shows which load).
"""

from __future__ import annotations

import inspect

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import aotishim  # noqa: E402
from aotishim import export  # noqa: E402
from aotishim.zoo import real  # noqa: E402
from models import to_numpy  # noqa: E402

LOADABLE = ["mlp_static", "mlp_bf16", "nn_gru", "upsample", "where_masked_fill",
            # One of each family the fallback ops opened: convolution,
            # attention (vision, encoder, decoder, rotary), recurrent, index,
            # sort and data-dependent ops.
            "resnet18", "vit_tiny", "hf_bert", "hf_gpt2", "hf_llama", "nn_lstm",
            "nn_transformer_encoder_layer", "embedding_layernorm", "grid_sample",
            "index_gather_scatter", "cumsum", "topk_sort_argmax", "nonzero", "searchsorted",
            "conv_transpose2d",
            # The wider zoo: an encoder-decoder, a speech encoder (grouped
            # 1-D convolutions), channel shuffles with depthwise convolutions.
            "hf_t5", "hf_wav2vec2", "shufflenet_v2_x0_5"]

# Relative to the output's scale (its largest |value|): float32 BLAS summation
# order differs from torch's; bfloat16 rounds every intermediate.
TOLERANCE = {"float32": 1e-4, "bfloat16": 2e-2}


def _compile(zm: real.ZooModel, cache):
    if zm.dynamic_shapes is None:
        return export.compile_cached(zm.module, zm.args, cache, name=f"zoo_{zm.name}")
    if "dynamic_shapes" not in inspect.signature(export.compile_cached).parameters:
        pytest.skip(f"{zm.name} has dynamic shapes; export.compile_cached takes none")
    return export.compile_cached(zm.module, zm.args, cache, name=f"zoo_{zm.name}",
                                 dynamic_shapes=zm.dynamic_shapes)


def _assert_close(name: str, outputs, expected, dtype: str) -> None:
    assert len(outputs) == len(expected), (name, len(outputs), len(expected))
    for i, (got, want) in enumerate(zip(outputs, expected)):
        assert got.shape == want.shape and got.dtype == want.dtype, \
            (name, i, got.shape, got.dtype, want.shape, want.dtype)
        if not np.issubdtype(want.dtype, np.floating) and want.dtype.name != "bfloat16":
            np.testing.assert_array_equal(got, want, err_msg=f"{name} output {i}")
            continue
        g, w = got.astype(np.float64), want.astype(np.float64)
        finite = np.isfinite(w)
        np.testing.assert_array_equal(g[~finite], w[~finite], err_msg=f"{name} output {i}")
        scale = float(np.max(np.abs(w[finite]), initial=0.0)) or 1.0
        np.testing.assert_allclose(g[finite], w[finite], rtol=0, atol=TOLERANCE[dtype] * scale,
                                   err_msg=f"{name} output {i}")


@pytest.mark.parametrize("name", LOADABLE)
def test_zoo_model_matches_eager(name, model_cache):
    if not real.available(name):
        pytest.skip(f"{name} needs {real.REQUIRES[name]}")
    zm = real.build(name)
    so = _compile(zm, model_cache)
    with torch.no_grad():
        expected = [[to_numpy(o) for o in torch.utils._pytree.tree_leaves(zm.module(*x))]
                    for x in zm.input_sets()]

    model = aotishim.load(so)
    try:
        for x, want in zip(zm.input_sets(), expected):
            _assert_close(name, model.run(*(to_numpy(a) for a in x)), want, zm.dtype)
    finally:
        leaks = model.close()
    assert leaks == []
    assert aotishim.memory_stats()["live_tensors"] == 0


def test_zoo_registry_is_complete():
    """Every entry names a family and a dtype the tolerances know."""
    assert len(real.NAMES) == len(set(real.NAMES)) >= 34
    for name in real.NAMES:
        assert real.REQUIRES[name] in (None, "torchvision", "transformers"), name
    built = real.build("mlp_bf16")
    assert built.dtype == "bfloat16" and built.family == "nn"
    assert all(p.dtype == torch.bfloat16 for p in built.module.parameters())
    assert built.args[0].dtype == torch.bfloat16


def test_torchvision_imports_and_builds_a_model():
    """torchvision's models import even where its compiled extension cannot load."""
    import importlib.util

    if importlib.util.find_spec("torchvision") is None:
        pytest.skip("torchvision is not installed")
    zm = real.build("vit_tiny")
    with torch.no_grad():
        assert zm.module(*zm.args).shape == (1, 10)
