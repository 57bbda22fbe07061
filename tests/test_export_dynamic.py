"""Models compiled with dynamic shapes (export.compile(dynamic_shapes=...)) and
data-dependent output sizes, run at many sizes and compared with eager."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest

import aotishim
from aotishim.model import spec_path

torch = pytest.importorskip("torch")


def rand(*shape: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def check_close(got, want) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, w.shape, g.dtype, w.dtype)
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("name", ["mlp", "bn_pool"])
def test_dynamic_batch_matches_eager(compiled_dynamic, name):
    c = compiled_dynamic(name)
    spec = json.loads(spec_path(c.so).read_text())
    ((sym, info),) = spec["symbols"].items()
    assert info["name"] == "batch" and info["min"] == 1 and info["max"] == 64
    assert spec["inputs"][0]["shape"][0] == sym
    feature_shape = tuple(spec["inputs"][0]["shape"][1:])
    with aotishim.load(c.so) as model:
        # Batch 1 is below what Inductor assumes (>= 2) but inside the
        # declared range: it must run, and give eager's numbers.
        for batch in (1, 2, 17, 64, 1):
            x = rand(batch, *feature_shape, seed=batch)
            check_close(model(x), c.eager(x))


def test_dynamic_batch_conv_net(compiled_dynamic):
    """Inductor narrows this program's batch to [.., 15] when it compiles the
    convolution (its own generated input check says so, beyond the exported
    range [1, 64]); within that range every batch matches eager, and beyond it
    the model's check refuses clearly instead of computing."""
    c = compiled_dynamic("conv_bn_pool")
    with aotishim.load(c.so) as model:
        for batch in (1, 2, 9, 15):
            x = rand(batch, 3, 8, 8, seed=batch)
            check_close(model(x), c.eager(x))
        with pytest.raises(aotishim.ModelError, match="dim value is too large at 0, expected to be <= 15"):
            model(rand(17, 3, 8, 8, seed=17))


def test_dynamic_sequence_matches_eager(compiled_dynamic):
    c = compiled_dynamic("sequence_norm")
    with aotishim.load(c.so) as model:
        for batch, seq in ((2, 5), (3, 33), (1, 1), (8, 64), (2, 7)):
            x = rand(batch, seq, 16, seed=seq)
            check_close(model(x), c.eager(x))


def test_transformer_encoder_layer_dynamic_sequence(compiled_dynamic):
    c = compiled_dynamic("encoder_layer")
    with aotishim.load(c.so) as model:
        for seq in (5, 33, 1, 64):
            x = rand(2, seq, 16, seed=seq)
            check_close(model(x), c.eager(x))


def test_out_of_range_sizes_are_refused_clearly(compiled_dynamic):
    c = compiled_dynamic("mlp")
    with aotishim.load(c.so) as model:
        sym = next(iter(model.spec.symbols))
        for batch in (0, 65):
            with pytest.raises(aotishim.ModelInputError) as e:
                model(np.zeros((batch, 8), np.float32))
            assert str(e.value) == (f"input 0 (x) dimension 0 has size {batch}; the model "
                                    f"accepts batch ({sym}) in [1, 64]")
        with pytest.raises(aotishim.ModelInputError, match=r"dimension 1 must be 8"):
            model(np.zeros((3, 9), np.float32))
        with pytest.raises(aotishim.ModelInputError, match=r"3 dimensions.*2 dimensions"):
            model(np.zeros((3, 8, 1), np.float32))
        x = rand(3, 8)
        check_close(model(x), c.eager(x))  # a refusal leaves the model usable


def test_generated_check_keeps_upper_bound_and_lets_one_through(compiled_dynamic):
    """run_tensors bypasses the spec: the model's own check runs alone. It
    still refuses sizes above the range, but no longer refuses 1, which
    Inductor's lower bound (2) would (export compiles with
    aot_inductor.check_lowerbound=False for symbolic inputs)."""
    from aotishim import shim

    c = compiled_dynamic("mlp")
    with aotishim.load(c.so) as model:
        x1 = rand(1, 8)
        (out,) = model.run_tensors(shim.from_numpy(x1, copy=True))
        try:
            check_close((shim.to_numpy(out),), c.eager(x1))
        finally:
            shim.delete(out)
        with pytest.raises(aotishim.ModelError, match="dim value is too large"):
            model.run_tensors(shim.from_numpy(np.zeros((65, 8), np.float32), copy=True))


def test_derived_dimension(compiled_dynamic):
    c = compiled_dynamic("paired_cat")
    spec = json.loads(spec_path(c.so).read_text())
    ((sym, info),) = spec["symbols"].items()
    assert (info["min"], info["max"]) == (2, 32)
    assert spec["inputs"][0]["shape"] == [sym, 3]
    assert spec["inputs"][1]["shape"] == [f"2*{sym}", 3]
    assert spec["outputs"][0]["shape"] == [f"3*{sym}", 3]
    assert {"expr": f"2*{sym}", "min": 4, "max": 64} in spec["relations"]
    with aotishim.load(c.so) as model:
        for d in (2, 5, 32):
            x, y = rand(d, 3, seed=d), rand(2 * d, 3, seed=d + 1)
            check_close(model(x, y), c.eager(x, y))
        with pytest.raises(aotishim.ModelInputError,
                           match=rf"input 1 \(y\) dimension 0 has size 7; the model expects "
                                 rf"2\*{sym} = 6 \(d \({sym}\) in \[2, 32\] = 3 from input 0"):
            model(rand(3, 3), rand(7, 3))
        with pytest.raises(aotishim.ModelInputError, match=r"size 1; the model accepts d"):
            model(rand(1, 3), rand(2, 3))


def test_one_symbol_must_agree_across_inputs(compiled_dynamic):
    c = compiled_dynamic("shared_batch")
    with aotishim.load(c.so) as model:
        for batch in (1, 9):
            a, b = rand(batch, 5, seed=1), rand(batch, 5, seed=2)
            check_close(model(a, b), c.eager(a, b))
        with pytest.raises(aotishim.ModelInputError,
                           match=r"input 1 \(b\) dimension 0 has size 4, but input 0 \(a\) "
                                 r"dimension 0 has size 3; both are batch .* and must agree"):
            model(rand(3, 5), rand(4, 5))


@pytest.mark.parametrize("name", ["nonzero", "masked_select"])
def test_data_dependent_output_sizes(compiled_dynamic, name):
    c = compiled_dynamic(name)
    spec = json.loads(spec_path(c.so).read_text())
    assert spec["outputs"][0]["shape"][0] is None  # known only when the model has run
    with aotishim.load(c.so) as model:
        rng = np.random.default_rng(5)
        for density in (0.0, 0.03, 0.5, 1.0):
            # Values above 0.5 with probability `density`.
            x = np.where(rng.random((16, 8)) < density, 0.75, 0.25).astype(np.float32)
            x += rng.random((16, 8)).astype(np.float32) * 0.1
            got, want = model(x), c.eager(x)
            assert want[0].shape[0] == round(float(np.sum(x > 0.5)))
            check_close(got, want)


def test_cache_key_covers_dynamic_shapes():
    from torch.export import Dim

    import models
    from aotishim.export import _fingerprint

    module, args = models.zoo.build("mlp")

    def key(dynamic_shapes):
        return _fingerprint(module, args, "m", "cpu", dynamic_shapes)

    a, b = Dim("batch", min=1, max=64), Dim("batch", min=1, max=32)
    assert key(({0: a},)) == key(({0: Dim("batch", min=1, max=64)},))
    assert len({key(None), key(({0: a},)), key(({0: b},)), key(({1: a},)),
                key({"x": {0: a}})}) == 5
    # A derived dimension's repr omits its root's range: the key must not.
    d1, d2 = Dim("d", min=2, max=8), Dim("d", min=2, max=16)
    assert key(({0: 2 * d1},)) != key(({0: 2 * d2},))
    assert key(({0: 2 * d1},)) != key(({0: 2 * d1 + 1},))


def test_cache_key_covers_what_each_submodule_computes():
    """Two modules with the same class and weights that compute different
    things must not share a compiled model: before, the key hashed only the
    top-level class's source and the state dict, so torchvision's Inception
    with transform_input on and off, a model in train and in eval mode, or a
    rotary embedding's non-persistent inv_freq got one key and compile_cached
    handed back the other model."""
    import torch
    from aotishim.export import _fingerprint

    class Scaled(torch.nn.Module):
        def __init__(self, scale: float, flags=(1, 2)) -> None:
            super().__init__()
            self.scale = scale
            self.flags = flags
            self.norm = torch.nn.LayerNorm(4)
            self.register_buffer("inv_freq", torch.arange(4.0), persistent=False)

        def forward(self, x):
            return self.norm(x) * self.scale + self.inv_freq

    args = (torch.randn(2, 4),)

    def key(m):
        return _fingerprint(m, args, "m", "cpu")

    torch.manual_seed(0)
    base = Scaled(2.0).eval()
    same = copy.deepcopy(base)
    assert key(base) == key(same)
    variants = [Scaled(3.0).eval(), Scaled(2.0, flags=(1, 3)).eval(), copy.deepcopy(base).train()]
    variants[0].load_state_dict(base.state_dict())
    variants[1].load_state_dict(base.state_dict())
    eps = copy.deepcopy(base)
    eps.norm.eps = 1e-3
    freq = copy.deepcopy(base)
    freq.inv_freq.mul_(2)
    keys = {key(m) for m in [base, *variants, eps, freq]}
    assert len(keys) == 6


class Scale(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x) * 3


@pytest.mark.parametrize("kind", ["Dim", "Dim min=2", "Dim.AUTO", "Dim.DYNAMIC"])
def test_unbounded_dimension_compiles_and_runs(model_cache, kind):
    """Before: every one raised AttributeError: 'Infinity' object has no
    attribute '_mpf_' from export._bound (torch's int_oo has no int())."""
    from torch.export import Dim

    from aotishim import export

    dim = {"Dim": Dim("m"), "Dim min=2": Dim("m", min=2), "Dim.AUTO": Dim.AUTO,
           "Dim.DYNAMIC": Dim.DYNAMIC}[kind]
    example = torch.randn(4, 3)
    name = "unbounded_" + kind.replace(" min=2", "_min2").replace("Dim.", "")
    so = export.compile_cached(Scale(), (example,), model_cache, name=name,
                               dynamic_shapes=({0: dim},))
    spec = json.loads(spec_path(so).read_text())
    ((sym, info),) = spec["symbols"].items()
    assert info["max"] is None and info["min"] in (0, 2), info
    assert spec["inputs"][0]["shape"] == [sym, 3]
    with aotishim.load(so) as model:
        assert "inf]" in model.spec.symbols[sym].describe()
        for rows in (2, 5, 300):
            x = rand(rows, 3, seed=rows)
            (got,) = model.run(x)
            want = (torch.tanh(torch.from_numpy(x)) * 3).numpy()
            check_close([got], [want])
