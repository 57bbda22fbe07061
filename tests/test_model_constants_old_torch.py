"""The constants API on models compiled by torch 2.11 or 2.12, whose
containers read out their constants only through the map-based
AOTInductorModelContainerExtractConstantsMap.

Needs an environment with such a torch: set AOTISHIM_TEST_OLD_TORCH_PYTHON
to its python (e.g. ~/.cache/aotishim-compat/venv-2.11.0/bin/python, made by
benchmarks/torch_compat.py). The model is compiled there once and kept under
AOTISHIM_TEST_MODEL_CACHE (or a temporary directory)."""

from __future__ import annotations

import gc
import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest
import torch

import aotishim

OLD_PYTHON = os.environ.get("AOTISHIM_TEST_OLD_TORCH_PYTHON")
pytestmark = pytest.mark.skipif(
    not OLD_PYTHON,
    reason="set AOTISHIM_TEST_OLD_TORCH_PYTHON to the python of an environment with torch 2.11 "
           "or 2.12 (and numpy, ml_dtypes) to test the constants API on its models")

PACKAGE = Path(__file__).resolve().parents[1] / "python"

COMPILE = r"""
import sys
import numpy as np
import torch
from aotishim import export

class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 16)
        self.fc2 = torch.nn.Linear(16, 4)
        self.register_buffer("scale", torch.linspace(0.5, 2.0, 4))

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x))) * self.scale

torch.manual_seed(0)
module = MLP().eval()
x = torch.randn(3, 8)
export.compile(module, (x,), sys.argv[1], name="mlp")
with torch.no_grad():
    y = module(x)
np.savez(sys.argv[1] + "/reference.npz", x=x.numpy(), y=y.numpy(),
         **{"state." + k: v.numpy() for k, v in module.state_dict().items()})
print(torch.__version__.split("+")[0])
"""


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(8, 16)
        self.fc2 = torch.nn.Linear(16, 4)
        self.register_buffer("scale", torch.linspace(0.5, 2.0, 4))

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x))) * self.scale


def defined_symbols(so: Path) -> set[str]:
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("needs nm to read the model's entry points")
    out = subprocess.run([nm, "-D", "--defined-only", str(so)], check=True, capture_output=True,
                         text=True).stdout
    return {line.split()[-1] for line in out.splitlines() if line.strip()}


@pytest.fixture(scope="module")
def old():
    version = subprocess.run([OLD_PYTHON, "-c", "import torch; print(torch.__version__)"],
                             check=True, capture_output=True, text=True).stdout.strip()
    sources = COMPILE + (PACKAGE / "aotishim" / "export.py").read_text()
    key = hashlib.sha256((version + sources).encode()).hexdigest()[:16]
    cache = os.environ.get("AOTISHIM_TEST_MODEL_CACHE") or tempfile.gettempdir()
    directory = Path(cache) / "old-torch" / f"mlp-{version.split('+')[0]}-{key}"
    if not (directory / "reference.npz").exists():
        directory.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, PYTHONPATH=str(PACKAGE))
        subprocess.run([OLD_PYTHON, "-c", COMPILE, str(directory)], check=True, env=env,
                       capture_output=True, timeout=1800)
    ref = np.load(directory / "reference.npz")
    state = {k[len("state."):]: torch.from_numpy(ref[k]) for k in ref.files
             if k.startswith("state.")}
    module = MLP().eval()
    module.load_state_dict(state)
    return directory / "mlp.so", module, ref["x"], ref["y"], version


def eager(module, x, weights=None):
    if weights:
        state = dict(module.state_dict())
        state.update({k: torch.as_tensor(v) for k, v in weights.items()})
        module = MLP().eval()
        module.load_state_dict(state)
    with torch.no_grad():
        return module(torch.from_numpy(x)).numpy()


def scaled(model, module, factor):
    state = module.state_dict()
    return {fqn: (state[fqn] * factor).numpy().copy() for fqn in model.get_constant_fqns()}


def test_the_model_has_only_the_map_based_extract(old):
    so, _, _, _, version = old
    assert version.startswith(("2.11", "2.12")), version
    symbols = defined_symbols(so)
    assert "AOTInductorModelContainerExtractConstantsMapEntries" not in symbols
    assert "AOTInductorModelContainerExtractConstantsMap" in symbols


def test_fqns_and_extract_view_the_weights(old):
    so, module, x, y, _ = old
    state = module.state_dict()
    with aotishim.load(so) as m:
        np.testing.assert_allclose(m(x)[0], y, rtol=1e-5, atol=1e-6)
        fqns = m.get_constant_fqns()
        assert set(fqns) >= {"fc1.weight", "fc1.bias", "fc2.weight"}
        assert set(fqns) <= set(state)
        extracted = m.extract_constants_map()
        assert sorted(extracted) == sorted(fqns)
        for fqn, array in extracted.items():
            assert array.dtype == np.float32
            np.testing.assert_array_equal(array, state[fqn].numpy())
        assert {a.ctypes.data for a in extracted.values()} <= set(m.constant_data_ptrs)
        del extracted, array
        assert m.extract_constants_map(use_inactive=True) == {}
    assert m.leaks == []


def test_load_active_and_refusals(old):
    so, module, x, y, _ = old
    with aotishim.load(so) as m:
        new = scaled(m, module, -1.5)
        m.load_constants(new, check_full_update=True)
        for a in new.values():
            a[...] = 0  # copied: the caller's arrays are free again
        want = eager(module, x, scaled(m, module, -1.5))
        got = m(x)[0]
        assert got.dtype == want.dtype and got.shape == want.shape and got.strides == want.strides
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        assert not np.allclose(got, y)
        with pytest.raises(aotishim.ModelInputError, match="no constant 'fc9.weight'"):
            m.load_constants({"fc9.weight": new["fc1.weight"]})
        with pytest.raises(aotishim.ModelInputError, match="check_full_update"):
            m.load_constants({"fc1.weight": new["fc1.weight"]}, check_full_update=True)
        np.testing.assert_allclose(m(x)[0], want, rtol=1e-5, atol=1e-6)
    assert m.leaks == []


def test_inactive_swap_and_free(old):
    so, module, x, y, _ = old
    m = aotishim.load(so)
    first = scaled(m, module, 3.0)
    m.load_constants({"fc1.weight": first["fc1.weight"]}, use_inactive=True)
    np.testing.assert_allclose(m(x)[0], y, rtol=1e-5, atol=1e-6)  # still the active buffer
    inactive = m.extract_constants_map(use_inactive=True)
    np.testing.assert_array_equal(inactive["fc1.weight"], first["fc1.weight"])
    np.testing.assert_array_equal(inactive["fc2.weight"], module.state_dict()["fc2.weight"].numpy())
    del inactive
    gc.collect()
    m.swap_constant_buffer()
    np.testing.assert_allclose(m(x)[0], eager(module, x, {"fc1.weight": first["fc1.weight"]}),
                               rtol=1e-5, atol=1e-6)
    m.free_inactive_constant_buffer()
    assert m.extract_constants_map(use_inactive=True) == {}
    second = scaled(m, module, -0.5)
    m.load_constants(second, use_inactive=True, check_full_update=True)
    m.swap_constant_buffer()
    m.free_inactive_constant_buffer()
    np.testing.assert_allclose(m(x)[0], eager(module, x, second), rtol=1e-5, atol=1e-6)
    assert m.close() == []


def test_user_managed_sharing_between_two_loads(old):
    so, module, x, _, _ = old
    a = aotishim.load(so)
    b = aotishim.load(so)
    shared = scaled(a, module, 1.75)
    a.load_constants(shared)
    b.load_constants(a.extract_constants_map(), user_managed=True, check_full_update=True)
    gc.collect()
    a_ptrs = {k: v.ctypes.data for k, v in a.extract_constants_map().items()}
    b_ptrs = {k: v.ctypes.data for k, v in b.extract_constants_map().items()}
    assert a_ptrs == b_ptrs
    gc.collect()
    want = eager(module, x, shared)
    np.testing.assert_allclose(a(x)[0], want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(b(x)[0], want, rtol=1e-5, atol=1e-6)
    a.load_constants(scaled(a, module, -1.0))  # b keeps the memory it borrowed
    np.testing.assert_allclose(b(x)[0], want, rtol=1e-5, atol=1e-6)
    with pytest.raises(aotishim.ModelError, match="cannot close.*still viewed"):
        a.close()
    assert b.close() == []
    assert a.close() == []
    assert aotishim.memory_stats()["live_tensors"] == 0


def test_mmap_weights_borrow_the_blob(old):
    so, module, x, y, _ = old
    with aotishim.load(so, mmap_weights=True) as m:
        stats = m.memory_stats
        assert stats["mapped_bytes"] > 0 and stats["owned_bytes"] == 0
        np.testing.assert_allclose(m(x)[0], y, rtol=1e-5, atol=1e-6)
        state = module.state_dict()
        extracted = m.extract_constants_map()
        assert extracted
        for fqn, array in extracted.items():
            np.testing.assert_array_equal(array, state[fqn].numpy())
        del extracted, array
        gc.collect()
    assert m.leaks == []
