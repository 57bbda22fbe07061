"""transformers' Mixtral-style mixture of experts with its default experts
path, which (exported in float32) calls transformers' own custom op
``transformers::grouped_mm_fallback``: the model loads with a numpy
implementation registered and matches eager."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import aotishim  # noqa: E402
from aotishim import export  # noqa: E402

OP = "transformers::grouped_mm_fallback"


def grouped_mm(input, weight, offs):
    """(S, in) rows grouped by expert (offs: each group's end) times (E, in, out)."""
    out = np.zeros((input.shape[0], weight.shape[2]), input.dtype)
    start = 0
    for expert, end in enumerate(offs.tolist()):
        out[start:end] = input[start:end] @ weight[expert]
        start = end
    return out


class Logits(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, ids):
        return self.model(input_ids=ids, use_cache=False).logits


@pytest.fixture(scope="module")
def mixtral():
    try:  # transformers imports torchvision, whose CUDA-built extension may not load here
        from aotishim.zoo._torchvision import import_torchvision
        import_torchvision()
    except ImportError:
        pass
    from transformers import MixtralConfig, MixtralForCausalLM

    config = MixtralConfig(vocab_size=64, hidden_size=32, intermediate_size=48,
                           num_hidden_layers=1, num_attention_heads=4, num_key_value_heads=2,
                           num_local_experts=4, num_experts_per_tok=2, max_position_embeddings=64)
    torch.manual_seed(0)
    model = MixtralForCausalLM(config).eval()
    # the default path, the one that reaches the custom op
    assert model.config._experts_implementation == "grouped_mm"
    return Logits(model)


def test_mixtral_moe_matches_eager(mixtral, model_cache):
    ids = torch.randint(0, 64, (1, 8), generator=torch.Generator().manual_seed(0))
    so = export.compile_cached(mixtral, (ids,), model_cache, name="mixtral_moe")
    assert OP in so.with_suffix(".json").read_text()
    with pytest.raises(aotishim.ModelError, match=OP):
        aotishim.load(so)
    aotishim.register_custom_op(OP, grouped_mm)
    try:
        with aotishim.load(so) as model:
            for seed in range(3):
                ids = torch.randint(0, 64, (1, 8), generator=torch.Generator().manual_seed(seed))
                with torch.no_grad():
                    expected = mixtral(ids).numpy()
                (got,) = model(ids.numpy())
                assert got.dtype == expected.dtype and got.shape == expected.shape
                np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
        assert model.leaks == []
    finally:
        aotishim.unregister_custom_op(OP)
