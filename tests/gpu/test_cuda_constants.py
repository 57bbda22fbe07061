"""The constants API on a cuda model (the GPU side of
tests/test_model_constants.py): load_constants from torch CUDA tensors
(DLPack) and from numpy, the inactive buffer loaded and swapped while other
threads run, two models sharing one copy of weights with user_managed=True
(counted once), extract_constants_map returning DeviceTensors, and errors
naming the FQN. Needs a CUDA device and torch with CUDA."""

from __future__ import annotations

import gc
import threading

import numpy as np
import pytest

import aotishim
from aotishim import _core, shim

pytestmark = pytest.mark.skipif("cuda:0" not in aotishim.devices(),
                                reason="no CUDA device in this process")
torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("torch cannot use CUDA here", allow_module_level=True)

import cuda_models  # noqa: E402
import models  # noqa: E402

# float32 products on cuda without TF32: within a few ulps of torch's.
TOL = dict(rtol=1e-5, atol=1e-5)


def eager(module, inputs, weights=None):
    """The cuda module's output (as numpy) on numpy inputs, with `weights` loaded first."""
    if weights is not None:
        state = dict(module.state_dict())
        state.update({k: torch.as_tensor(v).to("cuda") for k, v in weights.items()})
        module.load_state_dict(state)
    prev = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        with torch.no_grad():
            out = module(*(torch.from_numpy(np.ascontiguousarray(a)).cuda() for a in inputs))
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev
    return models.to_numpy(out)


def scaled(model, module, factor: float) -> dict:
    """The module's loadable weights times `factor`, as contiguous torch CUDA tensors."""
    state = module.state_dict()
    return {fqn: (state[fqn] * factor).contiguous() for fqn in model.get_constant_fqns()}


@pytest.fixture(scope="module")
def mlp():
    c = cuda_models.compile_cuda("mlp")
    module, _ = models.build("mlp")
    return c, module.to("cuda").eval()


def fresh(module):
    """A copy of the module, so a test's weight changes stay its own."""
    import copy

    return copy.deepcopy(module)


def test_extract_returns_device_tensors_viewing_the_model_weights(mlp):
    c, module = mlp
    with aotishim.load(c.so, device="cuda") as m:
        fqns = m.get_constant_fqns()
        assert fqns == ["fc1.weight", "fc1.bias", "fc2.weight"]
        views = m.extract_constants_map()
        assert sorted(views) == sorted(fqns)
        state = module.state_dict()
        for fqn, t in views.items():
            assert isinstance(t, aotishim.DeviceTensor)
            assert t.device == "cuda:0" and t.dtype == "float32"
            assert tuple(t.shape) == tuple(state[fqn].shape)
            got = torch.from_dlpack(t)
            assert got.device.type == "cuda"
            torch.testing.assert_close(got, state[fqn], rtol=0, atol=0)
        # Views, not copies: they point at the model's constants.
        assert {t.data_ptr for t in views.values()} <= set(m.constant_data_ptrs)
        with pytest.raises(aotishim.ModelError, match="still viewed"):
            m.close()
        del views, got, t
        gc.collect()
        assert m.extract_constants_map(use_inactive=True) == {}


def test_load_constants_from_torch_cuda_tensors_and_from_numpy(mlp):
    c, module = mlp
    module = fresh(module)
    with aotishim.load(c.so, device="cuda") as m:
        c.check(m(*c.inputs), **TOL)
        new = scaled(m, module, -1.5)
        m.load_constants(new, check_full_update=True)  # DLPack, on the model's device
        for t in new.values():
            t.zero_()  # a copy was taken: the caller's tensors are its own again
        torch.cuda.synchronize()
        want = eager(fresh(module), c.inputs, scaled(m, module, -1.5))
        got = m(*c.inputs)[0]
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_allclose(got, want, **TOL)
        # numpy arrays go to the device as copies.
        host = {k: (v * 0.25).cpu().numpy() for k, v in module.state_dict().items()
                if k in m.get_constant_fqns()}
        m.load_constants(host)
        np.testing.assert_allclose(m(*c.inputs)[0], eager(fresh(module), c.inputs, host), **TOL)
        # A torch tensor in host memory is copied as numpy is.
        cpu_torch = {k: torch.from_numpy(v * 2) for k, v in host.items()}
        m.load_constants(cpu_torch)
        np.testing.assert_allclose(m(*c.inputs)[0],
                                   eager(fresh(module), c.inputs, cpu_torch), **TOL)
        # Strided tensors are accepted, copied into the model's layout.
        t = scaled(m, module, 3.0)
        strided = {k: v.t().contiguous().t() if v.dim() == 2 else v for k, v in t.items()}
        m.load_constants(strided)
        np.testing.assert_allclose(m(*c.inputs)[0], eager(fresh(module), c.inputs, t), **TOL)
    assert m.leaks == []


def test_bad_constants_are_refused_by_name_and_change_nothing(mlp):
    c, module = mlp
    with aotishim.load(c.so, device="cuda") as m:
        good = scaled(m, module, 2.0)
        before = m(*c.inputs)[0]
        cases = [
            ({"fc9.weight": good["fc1.weight"]}, "no constant 'fc9.weight'.*fc1.weight, fc1.bias"),
            ({**good, "fc1.bias": good["fc1.bias"].double()}, "'fc1.bias'.*float32, got float64"),
            ({**good, "fc2.weight": good["fc2.weight"][:, :8].contiguous()},
             r"'fc2.weight'.*\[4, 32\], got \[4, 8\]"),
            ({"fc1.weight": good["fc1.weight"]}, "check_full_update.*fc1.bias, fc2.weight"),
        ]
        for mapping, message in cases:
            with pytest.raises(aotishim.ModelInputError, match=message):
                m.load_constants(mapping, check_full_update=True)
        with pytest.raises(aotishim.ModelInputError, match="'fc1.weight'.*strides"):
            m.load_constants({"fc1.weight": good["fc1.weight"].t().contiguous().t()},
                             user_managed=True)
        with pytest.raises(aotishim.ModelInputError, match="user_managed borrows memory on the"):
            m.load_constants({"fc1.bias": good["fc1.bias"].cpu().numpy()}, user_managed=True)
        # A tensor on another device (the C++ check, which the API's handles reach).
        elsewhere = shim.empty_strided([32], device="sim")
        try:
            with pytest.raises(_core.ShimInputError,
                               match="'fc1.bias'.*lives on cuda.*got a tensor on sim"):
                m._core.load_constants({"fc1.bias": elsewhere.handle}, False, False, False)
        finally:
            shim.delete(elsewhere)
        if torch.cuda.device_count() > 1:
            other = good["fc1.bias"].to("cuda:1")
            with pytest.raises(aotishim.ModelInputError, match="'fc1.bias'"):
                m.load_constants({"fc1.bias": other})
        with pytest.raises(aotishim.ModelInputError, match="inactive constant buffer is empty"):
            m.swap_constant_buffer()
        np.testing.assert_array_equal(m(*c.inputs)[0], before)


def test_inactive_buffer_swap_and_free_with_memory_accounted(mlp):
    c, module = mlp
    m = aotishim.load(c.so, device="cuda")
    views = m.extract_constants_map()
    nbytes = sum(int(np.prod(t.shape)) * 4 for t in views.values())
    del views
    gc.collect()
    base = m.memory_stats["owned_bytes"]
    old = m(*c.inputs)[0]
    first = scaled(m, module, 3.0)
    m.load_constants({"fc1.weight": first["fc1.weight"]}, use_inactive=True)
    assert m.memory_stats["owned_bytes"] == base + nbytes
    np.testing.assert_array_equal(m(*c.inputs)[0], old)  # still the active buffer
    inactive = m.extract_constants_map(use_inactive=True)
    torch.testing.assert_close(torch.from_dlpack(inactive["fc1.weight"]), first["fc1.weight"])
    torch.testing.assert_close(torch.from_dlpack(inactive["fc2.weight"]),
                               module.state_dict()["fc2.weight"])
    with pytest.raises(aotishim.ModelError, match="inactive constant buffer is still viewed"):
        m.free_inactive_constant_buffer()
    del inactive
    gc.collect()
    m.swap_constant_buffer()
    np.testing.assert_allclose(m(*c.inputs)[0],
                               eager(fresh(module), c.inputs, {"fc1.weight": first["fc1.weight"]}),
                               **TOL)
    m.free_inactive_constant_buffer()
    assert m.extract_constants_map(use_inactive=True) == {}
    second = scaled(m, module, -0.5)
    m.load_constants(second, use_inactive=True)
    assert m.memory_stats["owned_bytes"] == base + 2 * nbytes
    m.swap_constant_buffer()
    m.free_inactive_constant_buffer()
    assert m.memory_stats["owned_bytes"] == base + nbytes
    np.testing.assert_allclose(m(*c.inputs)[0], eager(fresh(module), c.inputs, second), **TOL)
    scope = m.scope
    assert m.close() == []
    assert all(s["id"] != scope for s in aotishim.memory_stats()["scopes"])


def test_runs_during_update_and_swap_see_old_or_new_weights_never_a_mix(mlp):
    c, module = mlp
    sets = []
    with aotishim.load(c.so, device="cuda") as m:
        for factor in (1.0, -2.0, 0.5):
            w = scaled(m, module, factor)
            sets.append((w, eager(fresh(module), c.inputs, w)))
        x = c.inputs[0]
        stop = threading.Event()
        errors: list[str] = []
        counts = [0] * 4

        def runner(k):
            while not stop.is_set():
                got = m(x)[0]
                counts[k] += 1
                if not any(np.allclose(got, want, **TOL) for _, want in sets):
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
        np.testing.assert_allclose(m(x)[0], sets[30 % len(sets)][1], **TOL)
    assert m.leaks == []


def test_two_models_share_one_copy_of_weights_counted_once(mlp):
    c, module = mlp
    a = aotishim.load(c.so, device="cuda")
    b = aotishim.load(c.so, device="cuda")
    shared = scaled(a, module, 1.75)
    a.load_constants(shared)
    a_bytes = a.memory_stats["owned_bytes"]
    b_bytes = b.memory_stats["owned_bytes"]
    b.load_constants(a.extract_constants_map(), user_managed=True, check_full_update=True)
    gc.collect()
    assert b.memory_stats["owned_bytes"] == b_bytes  # no copy: counted once, in a
    assert a.memory_stats["owned_bytes"] == a_bytes
    a_ptrs = {k: v.data_ptr for k, v in a.extract_constants_map().items()}
    b_ptrs = {k: v.data_ptr for k, v in b.extract_constants_map().items()}
    gc.collect()
    assert a_ptrs == b_ptrs
    want = eager(fresh(module), c.inputs, shared)
    np.testing.assert_allclose(a(*c.inputs)[0], want, **TOL)
    np.testing.assert_allclose(b(*c.inputs)[0], want, **TOL)
    # a replaces its weights: b keeps the memory it borrowed.
    a.load_constants(scaled(a, module, -1.0))
    np.testing.assert_allclose(b(*c.inputs)[0], want, **TOL)
    with pytest.raises(aotishim.ModelError, match="cannot close.*still viewed"):
        a.close()
    assert b.close() == []
    assert a.close() == []


def test_torch_memory_lent_with_user_managed_outlives_the_caller(mlp):
    c, module = mlp
    with aotishim.load(c.so, device="cuda") as m:
        lent = scaled(m, module, 0.5)
        want = eager(fresh(module), c.inputs, lent)
        ptr = lent["fc1.weight"].data_ptr()
        m.load_constants(lent, user_managed=True)
        del lent
        gc.collect()
        torch.cuda.empty_cache()  # torch may not reuse memory the model still holds
        views = m.extract_constants_map()
        assert views["fc1.weight"].data_ptr == ptr
        del views
        gc.collect()
        np.testing.assert_allclose(m(*c.inputs)[0], want, **TOL)
    assert m.leaks == []


def test_mmap_weights_is_refused_on_cuda(mlp):
    c, _ = mlp
    with pytest.raises(aotishim.ModelError, match="mmap_weights applies to cpu models"):
        aotishim.load(c.so, device="cuda", mmap_weights=True)
