"""The constants API (torch's runner names and semantics): load_constants,
extract_constants_map, swap_constant_buffer, free_inactive_constant_buffer,
and weights shared between models with user_managed=True."""

from __future__ import annotations

import gc
import shutil
import subprocess
import threading
from pathlib import Path

import numpy as np
import pytest
import torch

import aotishim
import models

CC = shutil.which("cc") or shutil.which("gcc")


def eager(module, inputs, weights=None):
    """The module's output on numpy inputs, with `weights` (FQN -> tensor) loaded first."""
    if weights is not None:
        state = dict(module.state_dict())
        state.update(weights)
        module.load_state_dict(state)
    with torch.no_grad():
        out = module(*(torch.from_numpy(np.ascontiguousarray(a)) for a in inputs))
    return models.to_numpy(out)


def scaled(model, module, factor: float) -> dict[str, torch.Tensor]:
    """The module's loadable weights times `factor`, by FQN."""
    state = module.state_dict()
    return {fqn: (state[fqn] * factor).contiguous() for fqn in model.get_constant_fqns()}


def as_numpy(weights: dict[str, torch.Tensor]) -> dict[str, np.ndarray]:
    return {k: v.numpy().copy() for k, v in weights.items()}


@pytest.fixture
def mlp(compiled):
    c = compiled("mlp")
    module, _ = models.build("mlp")
    return c, module


def test_fqns_and_extract_view_the_model_weights(mlp):
    c, module = mlp
    with aotishim.load(c.so) as m:
        fqns = m.get_constant_fqns()
        assert fqns == ["fc1.weight", "fc1.bias", "fc2.weight"]
        state = module.state_dict()
        extracted = m.extract_constants_map()
        assert sorted(extracted) == sorted(fqns)
        for fqn, array in extracted.items():
            assert array.dtype == np.float32 and array.shape == tuple(state[fqn].shape)
            np.testing.assert_array_equal(array, state[fqn].numpy())
        # Views, not copies: they point at the model's constants.
        assert {a.ctypes.data for a in extracted.values()} <= set(m.constant_data_ptrs)
        del extracted, array
        assert m.extract_constants_map(use_inactive=True) == {}


def test_load_constants_active_copies_and_runs_the_new_weights(mlp):
    c, module = mlp
    with aotishim.load(c.so) as m:
        np.testing.assert_allclose(m(*c.inputs)[0], c.expected[0], rtol=1e-5, atol=1e-5)
        new = scaled(m, module, -1.5)
        given = as_numpy(new)
        m.load_constants(given, check_full_update=True)
        for a in given.values():
            a[...] = 0  # a copy was taken: the caller's arrays are its own again
        want = eager(module, c.inputs, new)
        got = m(*c.inputs)[0]
        assert got.dtype == want.dtype and got.strides == want.strides
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
        # torch tensors through DLPack, non-contiguous ones included.
        transposed = {k: v.t().contiguous().t() if v.dim() == 2 else v for k, v in
                      scaled(m, module, 0.25).items()}
        assert not transposed["fc1.weight"].is_contiguous()
        m.load_constants(transposed)
        np.testing.assert_allclose(m(*c.inputs)[0], eager(module, c.inputs, transposed),
                                   rtol=1e-5, atol=1e-5)
        assert m.memory_stats["owned_bytes"] == sum(v.numel() * 4 for v in new.values())
    assert m.leaks == []


def test_bad_constants_are_refused_by_name_and_change_nothing(mlp):
    c, module = mlp
    with aotishim.load(c.so) as m:
        good = as_numpy(scaled(m, module, 2.0))
        before = m(*c.inputs)[0]
        cases = [
            ({"fc9.weight": good["fc1.weight"]}, "no constant 'fc9.weight'.*fc1.weight, fc1.bias"),
            ({**good, "fc1.bias": good["fc1.bias"].astype(np.float64)},
             "'fc1.bias'.*float32, got float64"),
            ({**good, "fc2.weight": good["fc2.weight"][:, :8]}, r"'fc2.weight'.*\[4, 32\], got \[4, 8\]"),
            ({"fc1.weight": good["fc1.weight"]}, "check_full_update.*fc1.bias, fc2.weight"),
        ]
        for mapping, message in cases:
            with pytest.raises(aotishim.ModelInputError, match=message):
                m.load_constants(mapping, check_full_update=True)
        with pytest.raises(aotishim.ModelInputError, match="'fc1.weight'.*strides"):
            m.load_constants({"fc1.weight": np.asfortranarray(good["fc1.weight"])},
                             user_managed=True)
        with pytest.raises(aotishim.ModelInputError, match="read-only"):
            ro = good["fc1.bias"].copy()
            ro.flags.writeable = False
            m.load_constants({"fc1.bias": ro}, user_managed=True)
        # A tensor on another device (the C++ check, which the API's handles reach).
        from aotishim import _core, shim

        elsewhere = shim.empty_strided([32], device="sim")
        try:
            with pytest.raises(_core.ShimInputError, match="'fc1.bias'.*lives on cpu, got .*sim"):
                m._core.load_constants({"fc1.bias": elsewhere.handle}, False, False, False)
        finally:
            shim.delete(elsewhere)
        with pytest.raises(aotishim.ModelInputError, match="mapping"):
            m.load_constants([("fc1.bias", good["fc1.bias"])])
        with pytest.raises(aotishim.ModelInputError, match="inactive constant buffer is empty"):
            m.swap_constant_buffer()
        np.testing.assert_array_equal(m(*c.inputs)[0], before)
    with pytest.raises(aotishim.ModelError, match="closed"):
        m.load_constants(good)


def test_inactive_buffer_swap_and_free_with_memory_accounted(mlp):
    c, module = mlp
    m = aotishim.load(c.so)
    nbytes = sum(a.nbytes for a in m.extract_constants_map().values())
    gc.collect()
    base = m.memory_stats["owned_bytes"]
    old = m(*c.inputs)[0]
    first = scaled(m, module, 3.0)
    # Only one constant given: an empty inactive buffer takes the rest from the active one.
    m.load_constants({"fc1.weight": first["fc1.weight"].numpy()}, use_inactive=True)
    assert m.memory_stats["owned_bytes"] == base + nbytes
    np.testing.assert_array_equal(m(*c.inputs)[0], old)  # still the active buffer
    inactive = m.extract_constants_map(use_inactive=True)
    np.testing.assert_array_equal(inactive["fc1.weight"], first["fc1.weight"].numpy())
    np.testing.assert_array_equal(inactive["fc2.weight"], module.state_dict()["fc2.weight"].numpy())
    with pytest.raises(aotishim.ModelError, match="inactive constant buffer is still viewed"):
        m.free_inactive_constant_buffer()
    del inactive
    m.swap_constant_buffer()
    np.testing.assert_allclose(m(*c.inputs)[0],
                               eager(module, c.inputs, {"fc1.weight": first["fc1.weight"]}),
                               rtol=1e-5, atol=1e-5)
    m.free_inactive_constant_buffer()  # the load-time weights (the container's own memory)
    assert m.extract_constants_map(use_inactive=True) == {}
    second = scaled(m, module, -0.5)
    m.load_constants(as_numpy(second), use_inactive=True)
    assert m.memory_stats["owned_bytes"] == base + 2 * nbytes
    m.swap_constant_buffer()
    m.free_inactive_constant_buffer()  # returns the first load's copies
    assert m.memory_stats["owned_bytes"] == base + nbytes
    np.testing.assert_allclose(m(*c.inputs)[0], eager(module, c.inputs, second),
                               rtol=1e-5, atol=1e-5)
    scope = m.scope
    assert m.close() == []
    assert all(s["id"] != scope for s in aotishim.memory_stats()["scopes"])


def test_runs_during_update_and_swap_see_old_or_new_weights_never_a_mix(mlp):
    c, module = mlp
    sets = []
    with aotishim.load(c.so) as m:
        for factor in (1.0, -2.0, 0.5):
            w = scaled(m, module, factor)
            sets.append((as_numpy(w), eager(module, c.inputs, w)))
        # Every weight matters for the output: a mix would match neither set.
        x = c.inputs[0]
        stop = threading.Event()
        errors: list[str] = []
        counts = [0] * 4

        def runner(k):
            while not stop.is_set():
                got = m(x)[0]
                counts[k] += 1
                if not any(np.allclose(got, want, rtol=1e-5, atol=1e-5) for _, want in sets):
                    errors.append(f"a run matched no weight set: {got[0]}")
                    return

        threads = [threading.Thread(target=runner, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        try:
            for i in range(30):
                weights, _ = sets[(i + 1) % len(sets)]
                m.load_constants(weights, use_inactive=True, check_full_update=True)
                m.swap_constant_buffer()
                if i % 3 == 2:
                    m.free_inactive_constant_buffer()
        finally:
            stop.set()
            for t in threads:
                t.join()
        assert not errors, errors[:3]
        assert min(counts) > 0
        np.testing.assert_allclose(m(x)[0], sets[30 % len(sets)][1], rtol=1e-5, atol=1e-5)
    assert m.leaks == []


def test_two_models_share_one_copy_of_weights(mlp, compiled_dynamic):
    c, module = mlp
    dyn = compiled_dynamic("mlp")  # the same network compiled for a range of batches
    a = aotishim.load(c.so)
    b = aotishim.load(dyn.so)
    assert b.get_constant_fqns() == a.get_constant_fqns()
    shared = scaled(a, module, 1.75)
    a.load_constants(as_numpy(shared))
    a_bytes = a.memory_stats["owned_bytes"]
    b_bytes = b.memory_stats["owned_bytes"]
    b.load_constants(a.extract_constants_map(), user_managed=True, check_full_update=True)
    gc.collect()
    assert b.memory_stats["owned_bytes"] == b_bytes  # no copy: counted once, in a
    assert a.memory_stats["owned_bytes"] == a_bytes
    a_ptrs = {k: v.ctypes.data for k, v in a.extract_constants_map().items()}
    b_ptrs = {k: v.ctypes.data for k, v in b.extract_constants_map().items()}
    assert a_ptrs == b_ptrs
    gc.collect()
    # (fc2.bias is not among the FQNs: Inductor baked its 4 values into
    # each model's code, so b keeps its own.)
    np.testing.assert_allclose(a(*c.inputs)[0], eager(module, c.inputs, shared),
                               rtol=1e-5, atol=1e-5)
    want = eager(dyn.module, c.inputs, shared)
    np.testing.assert_allclose(b(*c.inputs)[0], want, rtol=1e-5, atol=1e-5)
    batch = np.random.default_rng(0).standard_normal((9, 8)).astype(np.float32)
    np.testing.assert_allclose(b(batch)[0], eager(dyn.module, [batch]), rtol=1e-5, atol=1e-5)
    # a replaces its weights: b keeps the memory it borrowed.
    a.load_constants(as_numpy(scaled(a, module, -1.0)))
    np.testing.assert_allclose(b(*c.inputs)[0], want, rtol=1e-5, atol=1e-5)
    # The owner cannot close under the borrower; the borrower closes freely.
    with pytest.raises(aotishim.ModelError, match="cannot close.*still viewed"):
        a.close()
    assert not a.closed
    assert b.close() == []
    assert a.close() == []
    assert aotishim.memory_stats()["live_tensors"] == 0


def test_borrower_closing_first_and_torch_memory_lent(mlp, compiled_dynamic):
    c, module = mlp
    dyn = compiled_dynamic("mlp")
    a = aotishim.load(c.so)
    b = aotishim.load(dyn.so)
    b.load_constants(a.extract_constants_map(), user_managed=True)
    gc.collect()
    assert b.close() == []
    assert a.close() == []
    # Memory a caller lends from torch: the model keeps it alive after the
    # caller drops it, and borrows it in place.
    with aotishim.load(c.so) as m:
        lent = scaled(m, module, 0.5)
        want = eager(module, c.inputs, lent)
        ptr = lent["fc1.weight"].data_ptr()
        m.load_constants(lent, user_managed=True)
        del lent
        gc.collect()
        assert m.extract_constants_map()["fc1.weight"].ctypes.data == ptr
        gc.collect()
        np.testing.assert_allclose(m(*c.inputs)[0], want, rtol=1e-5, atol=1e-5)
    assert m.leaks == []


FAKE_MODEL = r"""
#include <stddef.h>
#include <stdint.h>
typedef struct Opaque* Handle;
static int container;
int32_t AOTInductorModelContainerCreateWithDevice(Handle* h, size_t n, const char* d, const char* c) {
  *h = (Handle)&container; return 0;
}
int32_t AOTInductorModelContainerDelete(Handle h) { return 0; }
int32_t AOTInductorModelContainerRun(Handle h, void* i, size_t ni, void* o, size_t no, void* s,
                                     void* p) { return 0; }
int32_t AOTInductorModelContainerGetNumInputs(Handle h, size_t* n) { *n = 0; return 0; }
int32_t AOTInductorModelContainerGetNumOutputs(Handle h, size_t* n) { *n = 0; return 0; }
int32_t AOTInductorModelContainerGetInputName(Handle h, size_t i, const char** n) { return 1; }
int32_t AOTInductorModelContainerGetOutputName(Handle h, size_t i, const char** n) { return 1; }
"""


@pytest.mark.skipif(CC is None, reason="needs a C compiler")
def test_container_without_the_constants_api_is_a_clear_error(tmp_path):
    src = tmp_path / "old.c"
    so = tmp_path / "old.so"
    src.write_text(FAKE_MODEL)
    subprocess.run([CC, "-shared", "-fPIC", "-o", str(so), str(src)], check=True)
    with aotishim.load(so) as m:
        assert m.get_constant_fqns() == []
        with pytest.raises(aotishim.ModelError,
                           match="lacks AOTInductorModelContainerUpdateUserManagedConstantBufferPairs"):
            m.load_constants({})
        with pytest.raises(aotishim.ModelError, match="lacks AOTInductorModelContainerSwapConstantBuffer"):
            m.swap_constant_buffer()
        with pytest.raises(aotishim.ModelError, match="lacks .*ExtractConstantsMapEntries"):
            m.extract_constants_map()


CXX = shutil.which("c++") or shutil.which("g++")

# A container with only the map-based constants entry points (as older torch
# releases have them): one 2x2 float32 constant, internal name "fc_weight",
# FQN "fc.weight". Its extract keys by FQN; its user-managed update looks up
# by internal name, and fails on a map that names a constant it does not
# have, so a map keyed the wrong way cannot pass unnoticed.
MAP_ONLY_MODEL = r"""
#include <cstdint>
#include <string>
#include <unordered_map>
extern "C" {
typedef struct AtenTensorOpaque* AtenTensorHandle;
typedef struct Opaque* Handle;
int32_t aoti_torch_empty_strided(int64_t, const int64_t*, const int64_t*, int32_t, int32_t,
                                 int32_t, AtenTensorHandle*);
int32_t aoti_torch_new_tensor_handle(AtenTensorHandle, AtenTensorHandle*);
int32_t aoti_torch_delete_tensor_object(AtenTensorHandle);
int32_t aoti_torch_dtype_float32();
int32_t aoti_torch_device_type_cpu();
}
using Map = std::unordered_map<std::string, AtenTensorHandle>;
namespace {
struct Container {
  AtenTensorHandle own = nullptr;  // the load-time weights, the container's
  AtenTensorHandle buffers[2] = {nullptr, nullptr};
  int active = 0;
};
}
extern "C" {
int32_t AOTInductorModelContainerCreateWithDevice(Handle* h, size_t, const char*, const char*) {
  auto* c = new Container;
  const int64_t sizes[2] = {2, 2}, strides[2] = {2, 1};
  if (aoti_torch_empty_strided(2, sizes, strides, aoti_torch_dtype_float32(),
                               aoti_torch_device_type_cpu(), 0, &c->own) != 0) return 1;
  c->buffers[0] = c->own;
  *h = reinterpret_cast<Handle>(c);
  return 0;
}
int32_t AOTInductorModelContainerDelete(Handle h) {
  auto* c = reinterpret_cast<Container*>(h);
  aoti_torch_delete_tensor_object(c->own);
  delete c;
  return 0;
}
int32_t AOTInductorModelContainerRun(Handle, void*, size_t, void*, size_t, void*, void*) { return 0; }
int32_t AOTInductorModelContainerGetNumInputs(Handle, size_t* n) { *n = 0; return 0; }
int32_t AOTInductorModelContainerGetNumOutputs(Handle, size_t* n) { *n = 0; return 0; }
int32_t AOTInductorModelContainerGetInputName(Handle, size_t, const char**) { return 1; }
int32_t AOTInductorModelContainerGetOutputName(Handle, size_t, const char**) { return 1; }
int32_t AOTInductorModelContainerGetNumConstants(Handle, size_t* n) { *n = 1; return 0; }
int32_t AOTInductorModelContainerGetConstantName(Handle, size_t, const char** n) { *n = "fc_weight"; return 0; }
int32_t AOTInductorModelContainerGetConstantOriginalFQN(Handle, size_t, const char** n) { *n = "fc.weight"; return 0; }
int32_t AOTInductorModelContainerExtractConstantsMap(Handle h, void* map, bool use_inactive) {
  auto* c = reinterpret_cast<Container*>(h);
  AtenTensorHandle t = c->buffers[use_inactive ? 1 - c->active : c->active];
  if (t) static_cast<Map*>(map)->emplace("fc.weight", t);
  return 0;
}
int32_t AOTInductorModelContainerUpdateUserManagedConstantBuffer(Handle h, void* map,
                                                                 bool use_inactive, bool) {
  auto* c = reinterpret_cast<Container*>(h);
  auto* m = static_cast<Map*>(map);
  if (m->size() != 1) return 1;
  auto it = m->find("fc_weight");
  if (it == m->end()) return 1;
  AtenTensorHandle view = nullptr;
  if (aoti_torch_new_tensor_handle(it->second, &view) != 0) return 1;
  c->buffers[use_inactive ? 1 - c->active : c->active] = view;  // the caller deletes it
  return 0;
}
int32_t AOTInductorModelContainerSwapConstantBuffer(Handle h) {
  auto* c = reinterpret_cast<Container*>(h);
  c->active = 1 - c->active;
  return 0;
}
int32_t AOTInductorModelContainerFreeInactiveConstantBuffer(Handle h) { return 0; }
}
"""


@pytest.mark.skipif(CXX is None, reason="needs a C++ compiler")
def test_container_with_only_the_map_based_constants_api(tmp_path):
    """Before, such a model's constants were refused ("its container lacks
    AOTInductorModelContainerExtractConstantsMapEntries")."""
    src = tmp_path / "map_only.cpp"
    so = tmp_path / "map_only.so"
    src.write_text(MAP_ONLY_MODEL)
    subprocess.run([CXX, "-std=c++17", "-shared", "-fPIC", "-o", str(so), str(src)], check=True)
    with aotishim.load(so) as m:
        assert m.get_constant_fqns() == ["fc.weight"]
        assert list(m.extract_constants_map()) == ["fc.weight"]
        given = np.arange(4, dtype=np.float32).reshape(2, 2)
        m.load_constants({"fc.weight": given}, check_full_update=True)
        given[...] = -1  # copied
        np.testing.assert_array_equal(m.extract_constants_map()["fc.weight"],
                                      np.arange(4, dtype=np.float32).reshape(2, 2))
        lent = np.full((2, 2), 7, np.float32)
        m.load_constants({"fc.weight": lent}, user_managed=True, use_inactive=True)
        inactive = m.extract_constants_map(use_inactive=True)["fc.weight"]
        assert inactive.ctypes.data == lent.ctypes.data
        del inactive
        gc.collect()
        m.swap_constant_buffer()
        np.testing.assert_array_equal(m.extract_constants_map()["fc.weight"], lent)
        gc.collect()
        with pytest.raises(aotishim.ModelInputError, match="no constant 'fc_weight'"):
            m.load_constants({"fc_weight": given})
    assert m.leaks == []
